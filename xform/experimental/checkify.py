"""``xform.experimental.checkify``: functionalized run-time checks (JAX's
``jax.experimental.checkify``).

``checkify(f, errors=...)`` returns a function computing ``(error, f(*args))``: the
``check`` calls in ``f`` (and, with ``errors=``, automatic NaN / division-by-zero /
out-of-bounds checks) no longer raise but set the returned ``Error``, whose ``get()``
is the first failure's message (or ``None``) and whose ``throw()`` raises it.  The
result composes with ``jit``, ``vmap``, ``grad`` and the control-flow primitives.
See docs/checkify.md.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from xform._src.interpreters import core as _core
from xform._src.interpreters import tree_util as _tu
from xform._src.interpreters.checkify import trace_and_checkify as _trace_and_checkify
from xform._src.primitives import checkify as _ck
from xform._src.primitives import elementwise as _ew

Error = _ck.Error
JaxRuntimeError = _ck.JaxRuntimeError
ErrorCategory = type  # an error class such as the members of ``nan_checks``
init_error = _ck.init_error

user_checks = frozenset({_ck.FailedCheckError})
nan_checks = frozenset({_ck.NaNError})
index_checks = frozenset({_ck.OOBError})
div_checks = frozenset({_ck.DivisionByZeroError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks

__all__ = ["Error", "ErrorCategory", "JaxRuntimeError", "all_checks", "automatic_checks",
           "check", "check_error", "checkify", "debug_check", "div_checks", "float_checks",
           "index_checks", "init_error", "nan_checks", "user_checks"]


def checkify(f: Callable, errors: frozenset = user_checks) -> Callable:
    """Functionalize the ``check`` calls in ``f`` and add the run-time checks ``errors``
    selects (``user_checks`` by default; ``nan_checks``, ``div_checks``, ``index_checks``
    and their unions ``float_checks``, ``automatic_checks``, ``all_checks``).

    The returned function takes ``f``'s arguments and returns ``(error, out)``:
    ``error.get()`` is the message of the first error that happened, or ``None``.
    As in JAX, ``f`` is staged: its array arguments are data (Python control flow on
    them is not allowed) and its other arguments are static.
    """
    enabled = frozenset(errors)

    @functools.wraps(f)
    def checked_fun(*args, **kwargs):
        leaves, in_tree = _tu.tree_flatten((args, kwargs))

        def flat_f(*leaves):
            a, k = _tu.tree_unflatten(in_tree, list(leaves))
            return f(*a, **k)
        error, outs, tree = _trace_and_checkify(flat_f, leaves, enabled, _ck.init_error)
        return error, _tu.tree_unflatten(tree, outs)
    return checked_fun


def _is_scalar_pred(pred) -> bool:
    if isinstance(pred, bool):
        return True
    if isinstance(pred, (_core.Array, _core.Tracer)):
        a = _core.get_aval(pred)
        return a.shape == () and a.dtype == np.dtype(bool)
    return False


def _check(pred, msg, debug, *fmt_args, **fmt_kwargs):
    if not _is_scalar_pred(pred):
        name = "debug_check" if debug else "check"
        raise TypeError(f"{name} takes a scalar pred as argument, got {pred}")
    for arg in _tu.tree_leaves((fmt_args, fmt_kwargs)):
        if not isinstance(arg, (_core.Array, _core.Tracer, np.ndarray)):
            raise TypeError("Formatting arguments to checkify.check need to be PyTrees of "
                            f"arrays, but got {arg!r} of type {type(arg)}.")
    new_error = _ck.FailedCheckError(None, msg, *fmt_args, **fmt_kwargs)
    failed = _ew.bitwise_not(_core.Array(np.bool_(pred)) if isinstance(pred, bool) else pred)
    error = _ck.assert_func(_ck.init_error, failed, new_error)
    _ck.check_error_value(error, debug=debug)


def check(pred, msg: str, *fmt_args, debug: bool = False, **fmt_kwargs) -> None:
    """Add an error with message ``msg`` (a format string over ``fmt_args`` /
    ``fmt_kwargs``, which may be traced arrays) if ``pred`` is False.

    Outside ``checkify`` it raises ``JaxRuntimeError`` at once when ``pred`` is False
    and cannot be staged (``jit`` of a function calling it fails to compile with a
    message saying to use ``checkify``); under ``checkify`` it sets the returned error.
    ``debug=True`` makes it a ``debug_check``.
    """
    _check(pred, msg, debug, *fmt_args, **fmt_kwargs)


def debug_check(pred, msg: str, *fmt_args, **fmt_kwargs) -> None:
    """A ``check`` that runs only under ``checkify`` and is a no-op otherwise."""
    _check(pred, msg, True, *fmt_args, **fmt_kwargs)


def check_error(error: Error) -> None:
    """Raise ``error`` if it represents a failure (``error.throw()``), in a way that
    ``checkify`` can functionalize again."""
    if not isinstance(error, Error):
        raise TypeError("check_error takes an Error as argument, "
                        f"got type {type(error)} instead.")
    _ck.check_error_value(error, debug=False)

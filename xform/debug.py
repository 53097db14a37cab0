"""``xform.debug.print`` and ``xform.debug.callback``: host callbacks that survive staging.

``debug_callback`` is an *effectful* primitive with no outputs: eagerly it
calls the Python function now; staged (under ``jit``) it stays in the program
(dead-code elimination keeps effectful equations, CSE never merges them) and
runs when the program runs.

What works where:

* eager, ``grad``/``jvp``/``vjp`` (the callback sees primal values, once),
  ``vmap`` (called once per batch element, in order, like JAX's unvectorized
  callbacks), and inside ``jit`` at any nesting depth;
* under ``jit`` the callback is an XLA custom call back into Python (jaxlib's
  FFI python-callback target; the primitive is in ``primitives/callbacks.py``): the program stays
  one compiled executable and the callback runs when it executes.  Like JAX's
  unordered callbacks, XLA may reorder independent callbacks.
"""
from __future__ import annotations

import string

from xform._src.interpreters import core
from xform._src.primitives.callbacks import DebugCallback, debug_callback_p
from xform._src.primitives.debug_print import FormatChecker, debug_print_p
from xform._ad_api import as_value
from xform._src.interpreters import errors
from xform.sharding._api import visualize_array_sharding as _v, visualize_sharding
from xform.tree_util import tree_flatten
from xform._debugger import breakpoint  # noqa: A004
from xform import sharding as S
import xform.numpy as xnp
import logging
import numpy as np

__all__ = ["print", "log", "callback", "debug_callback_p", "visualize_array_sharding",
           "visualize_sharding", "inspect_array_sharding", "breakpoint"]

_print = print

def callback(callback, *args, ordered: bool = False, partitioned: bool = False, **kwargs):
    """Call ``callback(*args, **kwargs)`` with concrete arrays, eagerly or when the staged
    program runs.  Returns None."""
    if not callable(callback):
        raise TypeError(f"debug.callback: expected a callable, got {callback!r}")
    leaves, tree = tree_flatten((args, kwargs))
    leaves = [as_value(x) for x in leaves]
    debug_callback_p.bind(*leaves, callback=DebugCallback(callback, tree), ordered=bool(ordered))
    return None


def print(fmt=None, *args, ordered: bool = False, partitioned: bool = False,  # noqa: A001
          skip_format_check: bool = False, _use_logging: bool = False, **kwargs):
    """Print ``fmt.format(*args, **kwargs)`` with the arrays' values (works under jit).

    Staged as JAX's ``debug_print`` primitive.  Also the two-call form
    ``debug.print(ordered=True)(fmt, *args, **kwargs)``."""

    def _debug_print(fmt, *c_args, **c_kwargs):
        if not isinstance(fmt, str):
            raise TypeError(f"debug.print: the format must be a str, got {type(fmt).__name__}")
        if not skip_format_check:
            FormatChecker().format(fmt, *c_args, **c_kwargs)
        has_placeholders = False
        if fmt:
            _, field_name, *_ = next(iter(string.Formatter().parse(fmt)))
            has_placeholders = field_name is not None
        leaves, in_tree = tree_flatten((c_args, c_kwargs))
        static_args, dyn = [], []
        for i, leaf in enumerate(leaves):
            if _is_array_leaf(leaf):
                dyn.append(leaf if isinstance(leaf, (core.Tracer, core.Array, bool, int, float,
                                                     complex)) else as_value(leaf))
            else:
                static_args.append((i, leaf))
        record = None
        if _use_logging:
            f = _user_frame()
            record = logging.getLogger("xform").makeRecord(
                "xform", logging.INFO, f.f_code.co_filename if f else "(unknown file)",
                f.f_lineno if f else 0, "", (), None)
        debug_print_p.bind(*dyn, fmt=fmt, has_placeholders=has_placeholders, in_tree=in_tree,
                           logging_record=record,
                           np_printoptions=tuple(np.get_printoptions().items()),
                           ordered=bool(ordered), partitioned=bool(partitioned),
                           static_args=tuple(static_args))

    if fmt is not None:
        _debug_print(fmt, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError("debug_print received unexpected arguments in the two-call form:"
                        f" {args=} {kwargs=}")
    return _debug_print


def _is_array_leaf(x):
    if isinstance(x, (core.Tracer, core.Array, bool, int, float, complex)):
        return True
    return isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in "biufc"


def _user_frame():
    return errors.user_frame(3)


def visualize_array_sharding(arr, **kwargs):
    """Print which devices hold which block of a 1-D or 2-D array."""
    return _v(arr, **kwargs)


def log(fmt=None, *args, ordered: bool = False, partitioned: bool = False,
        skip_format_check: bool = False, _use_logging: bool = True, **kwargs):
    """``debug.print`` through Python's ``logging`` (level INFO, logger ``xform``) instead
    of stdout, as JAX's ``jax.debug.log``: eagerly and when the staged program runs."""
    return print(fmt, *args, ordered=ordered, partitioned=partitioned,
                 skip_format_check=skip_format_check, _use_logging=_use_logging, **kwargs)


def _staged_sharding(x):
    """The sharding a staged value will have: its type's sharding when a mesh is in
    context, else replicated over the devices the program runs on."""
    import xform  # deferred: import cycle
    t = xform.typeof(x).sharding
    mesh = getattr(t, "mesh", None)
    if mesh is not None and getattr(mesh, "shape_tuple", ()) and hasattr(mesh, "devices"):
        return t
    devs = xform.devices()
    if len(devs) == 1:
        return S.SingleDeviceSharding(devs[0])
    return S.NamedSharding(S.Mesh(np.array(devs), ("d",)), S.PartitionSpec())


def inspect_array_sharding(value, *, callback):
    """Call ``callback`` with the sharding of each array in ``value`` (a pytree).  On
    concrete arrays that is their ``.sharding``; under ``jit`` it is called once, when
    the function is traced, with the sharding the staged value gets (as JAX calls it
    once per compilation).  Returns None."""
    if not callable(callback):
        raise TypeError(f"inspect_array_sharding: callback must be callable, got {callback!r}")
    leaves, _ = tree_flatten(value)
    for leaf in leaves:
        if isinstance(leaf, core.Tracer):
            callback(_staged_sharding(leaf))
        elif hasattr(leaf, "sharding"):
            callback(leaf.sharding)
        else:
            callback(xnp.asarray(leaf).sharding)

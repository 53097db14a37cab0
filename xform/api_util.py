"""``xform.api_util``: JAX's ``jax.api_util`` helpers for libraries that build their own
transformations on ``xform.extend.linear_util`` wrapped functions.

``flatten_fun(f, in_tree)`` wraps a function of pytrees as a function of flat leaves
(returning flat leaves; the output tree is read from the returned thunk after a call),
``flatten_fun_nokwargs`` the same for positional arguments only, and ``debug_info``
describes a traced function for messages and printed programs.
"""
from __future__ import annotations

import inspect

from xform._src.interpreters import ir as _ir
from xform._src.interpreters import tree_util as _tu
from xform.extend import linear_util as _lu
from xform._src.interpreters import core

__all__ = ["debug_info", "flatten_fun", "flatten_fun_nokwargs", "shaped_abstractify"]


def _flatten_fun(f, store, in_tree, *flat_args):
    args, kwargs = _tu.tree_unflatten(in_tree, flat_args)
    ans = f(*args, **kwargs)
    flat, out_tree = _tu.tree_flatten(ans)
    store.store(out_tree)
    return flat


def _flatten_fun_nokwargs(f, store, in_tree, *flat_args):
    args = _tu.tree_unflatten(in_tree, flat_args)
    ans = f(*args)
    flat, out_tree = _tu.tree_flatten(ans)
    store.store(out_tree)
    return flat


_flatten = _lu.transformation_with_aux2(_flatten_fun)
_flatten_nokw = _lu.transformation_with_aux2(_flatten_fun_nokwargs)


def flatten_fun(f, in_tree):
    """``(wrapped, out_tree_thunk)``: ``wrapped.call_wrapped(*leaves)`` unflattens the
    leaves to ``(args, kwargs)`` with ``in_tree``, calls ``f`` and returns the output's
    leaves; ``out_tree_thunk()`` is the output's tree structure."""
    return _flatten(_wrap(f), in_tree)


def flatten_fun_nokwargs(f, in_tree):
    """As ``flatten_fun`` with ``in_tree`` the structure of the positional args tuple."""
    return _flatten_nokw(_wrap(f), in_tree)


def _wrap(f):
    return f if isinstance(f, _lu.WrappedFun) else _lu.wrap_init(f)


class DebugInfo(_ir.DebugInfo):
    """What a traced function is: what traced it, its name and source, its arguments'
    names (JAX's ``DebugInfo`` fields)."""

    __slots__ = ("traced_for", "func_src_info", "arg_names", "result_paths")

    def __init__(self, traced_for, func_src_info, arg_names, result_paths=None):
        name = func_src_info.split(" ", 1)[0] if func_src_info else "<unknown>"
        super().__init__(name)
        self.traced_for = traced_for
        self.func_src_info = func_src_info
        self.arg_names = arg_names
        self.result_paths = result_paths


def debug_info(traced_for, fun, args, kwargs, *, static_argnums=(), static_argnames=(),
               result_paths_thunk=None, sourceinfo=None, signature=None) -> DebugInfo:
    """A description of ``fun`` traced for ``traced_for`` with ``args``/``kwargs``."""
    name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or str(fun)
    if sourceinfo is None:
        try:
            code = inspect.unwrap(fun).__code__
            sourceinfo = f"{name} at {code.co_filename}:{code.co_firstlineno}"
        except (AttributeError, TypeError, ValueError):
            sourceinfo = name
    try:
        sig = signature or inspect.signature(fun)
        bound = sig.bind(*args, **kwargs)
        names = []
        for k, v in bound.arguments.items():
            leaves = _tu.tree_leaves(v)
            names.extend([k] * len(leaves))
        arg_names = tuple(names)
    except (TypeError, ValueError):
        arg_names = None
    return DebugInfo(traced_for, sourceinfo, arg_names, result_paths_thunk)


def shaped_abstractify(x):
    """The abstract value (``ShapedArray``) of an array-like."""
    return core.get_aval(x)

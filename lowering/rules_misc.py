"""Lowering rules: ``clz``, ``reduce_precision``, ``copy``, ``optimization_barrier``,
``composite``."""
from __future__ import annotations

from xform._src.primitives.misc import (approx_top_k_p, clz_p, composite_p, copy_p,
                                       optimization_barrier_p, reduce_precision_p)
from xform._src.lowering.mlir import register
from xform._src.interpreters import dtypes
from xform._src.interpreters.tree_util import tree_unflatten
import numpy as np
from xform._src.interpreters import core, staging
from xform._src.primitives.misc import _atk_decomposed


@register(clz_p)
def _clz(ctx, eqn, x):
    return [ctx.op1("stablehlo.count_leading_zeros", [x], ctx.out_avals[0])]


@register(reduce_precision_p)
def _reduce_precision(ctx, eqn, x):
    p = eqn.params
    return [ctx.op1("stablehlo.reduce_precision", [x], ctx.out_avals[0],
                    f"exponent_bits = {int(p['exponent_bits'])} : i32, "
                    f"mantissa_bits = {int(p['mantissa_bits'])} : i32")]


@register(approx_top_k_p)
def _approx_top_k(ctx, eqn, x):
    # JAX's CPU/GPU fallback: the exact top-k (the decomposition the impl runs)
    from xform._src.lowering.mlir import lower_subjaxpr  # deferred: keeps `import xform` light
    with core.set_current_trace(core.EVAL_TRACE):
        closed = staging.trace_to_closed_jaxpr(
            lambda v: _atk_decomposed(v, **eqn.params), [ctx.in_avals[0]],
            name="approx_top_k")
    return lower_subjaxpr(ctx, closed, [x])


@register(copy_p)
def _copy(ctx, eqn, x):
    return [x]


@register(optimization_barrier_p)
def _optimization_barrier(ctx, eqn, *xs):
    return ctx.op("stablehlo.optimization_barrier", list(xs), list(ctx.out_avals))


def _attribute(v) -> str:
    """A composite attribute's MLIR text (JAX's ``mlir.ir_attribute``): Python bool/int/
    float as i1/i64/f64, NumPy scalars and arrays as dense elements (scalars as typed
    numbers), dtypes as types, strings, sequences as arrays, dicts as dictionaries."""
    from xform._src.lowering.mlir import _quote, dense_literal, element_type, tensor_type  # deferred: keeps `import xform` light
    v = getattr(v, "val", v)                           # HashableArray

    def scalar(x):
        x = np.asarray(x)
        et = element_type(x.dtype)
        if x.dtype == np.bool_:
            return "true" if x else "false"
        if x.dtype.kind in "iu":
            return f"{int(x)} : {et}"
        if x.dtype.kind == "f" or dtypes.is_float(x.dtype):
            f = float(x)
            if np.isfinite(f):
                return f"{f:.17e} : {et}"
            bits = x.view(f"u{x.dtype.itemsize}")
            return f"0x{int(bits):0{2 * x.dtype.itemsize}X} : {et}"
        raise TypeError(f"Unsupported scalar attribute type: {type(x)}")

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return scalar(np.int64(v))
    if isinstance(v, float):
        return scalar(np.float64(v))
    if isinstance(v, (str, bytes)):
        return _quote(v.decode() if isinstance(v, bytes) else v)
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        return element_type(np.dtype(v))
    if isinstance(v, np.generic):
        return scalar(v)
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            return scalar(v)
        return f"dense<{dense_literal(v)}> : {tensor_type(v.shape, v.dtype)}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_attribute(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_attribute(x) for x in v) + "]"
    raise TypeError(f"No attribute handler defined for type: {type(v)}")


@register(composite_p)
def _composite(ctx, eqn, *args):
    """``stablehlo.composite "name"`` whose decomposition is a private function named
    after the composite (emitted once per program)."""
    from xform._src.lowering.mlir import _function_text, _quote, aval_type  # deferred: keeps `import xform` light
    p = eqn.params
    mod, closed = ctx.module, p["jaxpr"]
    key = ("composite", id(closed.jaxpr), p["name"])
    sym = mod.func_names.get(key)
    if sym is None:
        sym = mod.fresh_symbol(p["name"], keep=".$")
        if not (sym[:1].isalpha() or sym[:1] == "_"):
            sym = mod.fresh_symbol("_" + sym, keep=".$")
        mod.func_names[key] = sym
        mod._keepalive.append(closed)
        mod.functions.append(_function_text(mod, sym, closed, "private"))
    attrs = []
    for k, leaves, tree in p["attributes"]:
        v = tree_unflatten(tree, [getattr(x, "val", x) for x in leaves])
        if v is not None:
            attrs.append(f"{k} = {_attribute(v)}")
    text = f"name = {_quote(p['name'])}"
    if attrs:
        text += ", composite_attributes = {" + ", ".join(attrs) + "}"
    text += f", decomposition = @{sym}, version = {int(p['version'])} : i32"
    return ctx.op("stablehlo.composite", list(args), [aval_type(a) for a in ctx.out_avals],
                  text)

"""Lowering rules: ``sort`` (variadic, lexicographic on the first ``num_keys``
operands) and ``top_k``.

Float keys are compared in a total order after canonicalising -0.0 to 0.0 and
every NaN to one positive NaN, so NaNs sort last and a stable sort keeps
equal keys in input order -- NumPy's semantics (and JAX's).
"""
from __future__ import annotations

import numpy as np

from xform._src.primitives.sorting import sort_p, top_k_p
from xform._src.lowering.mlir import i64_array, is_complex, is_float, register, tensor_type


def _float_key(c, x, dtype):
    st = tensor_type((), dtype)
    zero = c.constant(np.zeros((), dtype))
    nan = c.constant(np.array(np.nan).astype(dtype))
    x = c.select(c.compare(x, zero, "EQ", dtype), zero, x)
    return c.select(c.compare(x, x, "NE", dtype), nan, x), st


def _keys(c, x, dtype):
    """[(key, dtype, compare type)] for one operand's scalar."""
    if is_complex(dtype):
        part = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        st = tensor_type((), part)
        re = c.op1("stablehlo.real", [x], st)
        im = c.op1("stablehlo.imag", [x], st)
        return [(_float_key(c, re, part)[0], part, "TOTALORDER"),
                (_float_key(c, im, part)[0], part, "TOTALORDER")]
    if is_float(dtype):
        return [(_float_key(c, x, dtype)[0], dtype, "TOTALORDER")]
    return [(x, dtype, None)]


def _lt_comparator(c, dtypes, num_keys, args):
    """Lexicographic less-than over the key operands (args are x0, y0, x1, y1, ...)."""
    xs, ys = [], []
    for k in range(num_keys):
        xs += _keys(c, args[2 * k], dtypes[k])
        ys += _keys(c, args[2 * k + 1], dtypes[k])
    sb = tensor_type((), np.bool_)
    result = None
    for (xk, dt, ct), (yk, _, _) in reversed(list(zip(xs, ys))):
        lt = c.compare(xk, yk, "LT", dt, ct)
        if result is None:
            result = lt
        else:
            eq = c.compare(xk, yk, "EQ", dt, ct)
            result = c.op1("stablehlo.or", [lt, c.op1("stablehlo.and", [eq, result], sb)], sb)
    return [result]


@register(sort_p)
def _sort(ctx, eqn, *operands):
    p = eqn.params
    dimension = int(p["dimension"])
    num_keys = int(p.get("num_keys", 1))
    dtypes = [a.dtype for a in ctx.in_avals]
    arg_types = []
    for d in dtypes:
        arg_types += [tensor_type((), d)] * 2
    region = ctx.region(arg_types, lambda c, *args: _lt_comparator(c, dtypes, num_keys, args))
    stable = "true" if p.get("is_stable", True) else "false"
    return ctx.op("stablehlo.sort", list(operands), ctx.out_avals,
                  f"dimension = {dimension} : i64, is_stable = {stable}", [region])


@register(top_k_p)
def _top_k(ctx, eqn, x, *dyn):
    """``chlo.top_k`` works on the last axis: transpose ``axis`` there and back."""
    aval = ctx.in_avals[0]
    k = int(eqn.params["k"])
    axis = int(eqn.params.get("axis", -1)) % max(aval.ndim, 1)
    vals, idxs = ctx.out_avals
    perm = None
    if aval.ndim and axis != aval.ndim - 1:
        perm = list(range(aval.ndim))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        x = ctx.op1("stablehlo.transpose", [x], aval.update(shape=[aval.shape[i] for i in perm]),
                    f"permutation = {i64_array(perm)}")
        vals = vals.update(shape=[vals.shape[i] for i in perm])
        idxs = idxs.update(shape=[idxs.shape[i] for i in perm])
    i32 = idxs.update(dtype=np.int32)
    v, i = ctx.op("chlo.top_k", [x], [vals, i32], f"k = {k} : i64")
    i = ctx.convert(i, idxs.dtype)
    if perm is not None:
        v, i = (ctx.op1("stablehlo.transpose", [r], a.update(shape=[a.shape[j] for j in perm]),
                        f"permutation = {i64_array(perm)}")
                for r, a in ((v, vals), (i, idxs)))
    return [v, i]

"""Lowering rules: reductions (``stablehlo.reduce``), arg-reductions, cumulative ops.

A reduction is a ``stablehlo.reduce`` whose region applies the monoid's
binary op to scalars, started from the monoid's identity.  Cumulative
reductions are ``stablehlo.reduce_window`` with a window spanning the whole
axis, padded on the leading side (trailing side for ``reverse``).
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters.dtypes import finfo

from xform._src.primitives.reductions import (
    argmax_p, argmin_p, cumlogsumexp_p, cummax_p, cummin_p, cumprod_p, cumsum_p, reduce_and_p,
    reduce_max_p, reduce_min_p, reduce_or_p, reduce_prod_p, reduce_sum_p, reduce_xor_p)
from xform._src.lowering.mlir import compare_type, i64_array, is_complex, is_float, register, tensor_type


def _lowest(dtype):
    if is_complex(dtype):      # JAX: -inf (+0j); complex max/min compare lexicographically
        return np.array(-np.inf).astype(dtype)
    if is_float(dtype):
        with np.errstate(invalid="ignore", over="ignore"):
            inf = np.array(np.inf).astype(dtype)
        return -inf if np.isinf(inf.astype(np.float32)) else finfo(dtype).min
    if dtype == np.bool_:
        return False
    return np.iinfo(dtype).min


def _highest(dtype):
    if is_complex(dtype):
        return np.array(np.inf).astype(dtype)
    if is_float(dtype):
        with np.errstate(invalid="ignore", over="ignore"):
            inf = np.array(np.inf).astype(dtype)
        return inf if np.isinf(inf.astype(np.float32)) else finfo(dtype).max
    if dtype == np.bool_:
        return True
    return np.iinfo(dtype).max


def _all_ones(dtype):
    return True if dtype == np.bool_ else np.array(-1).astype(dtype)


# name -> (op applied in the region, identity(dtype))
_MONOIDS = {
    reduce_sum_p: ("stablehlo.add", lambda d: 0),
    reduce_prod_p: ("stablehlo.multiply", lambda d: 1),
    reduce_max_p: ("stablehlo.maximum", _lowest),
    reduce_min_p: ("stablehlo.minimum", _highest),
    reduce_and_p: ("stablehlo.and", _all_ones),
    reduce_or_p: ("stablehlo.or", lambda d: 0),
    reduce_xor_p: ("stablehlo.xor", lambda d: 0),
}


def _scalar(dtype):
    return tensor_type((), dtype)


def _reduce_rule(op, identity):
    inits = {}      # dtype -> (identity value, scalar type)

    def rule(ctx, eqn, x):
        dtype = ctx.in_avals[0].dtype
        it = inits.get(dtype)
        if it is None:
            it = inits[dtype] = (np.asarray(identity(dtype)).astype(dtype), _scalar(dtype))
        init = ctx.constant(it[0])
        st = it[1]
        region = ctx.binary_region(op, st)
        return [ctx.op1("stablehlo.reduce", [x, init], ctx.out_avals[0],
                        f"dimensions = {i64_array(eqn.params['axes'])}", [region])]
    return rule


for _name, (_op, _ident) in _MONOIDS.items():
    register(_name)(_reduce_rule(_op, _ident))


def _argminmax_rule(direction, identity):
    """Variadic reduce over (value, index): NaN wins, then the extreme value, ties -> first."""
    def rule(ctx, eqn, x):
        aval = ctx.in_avals[0]
        axis, = eqn.params["axes"]
        idx_dtype = ctx.out_avals[0].dtype
        iota = ctx.op1("stablehlo.iota", [], aval.update(dtype=idx_dtype),
                       f"iota_dimension = {int(axis)} : i64")
        v0 = ctx.constant(np.asarray(identity(aval.dtype)).astype(aval.dtype))
        i0 = ctx.constant(np.zeros((), idx_dtype))
        sv, si, sb = _scalar(aval.dtype), _scalar(idx_dtype), _scalar(np.bool_)

        def body(c, av, ai, bv, bi):
            def orr(p, q):
                return c.op1("stablehlo.or", [p, q], sb)

            def andd(p, q):
                return c.op1("stablehlo.and", [p, q], sb)
            better = c.compare(av, bv, direction, aval.dtype)
            equal = c.compare(av, bv, "EQ", aval.dtype)
            if is_float(aval.dtype):
                a_nan = c.compare(av, av, "NE", aval.dtype)
                b_nan = c.compare(bv, bv, "NE", aval.dtype)
                not_b_nan = c.op1("stablehlo.not", [b_nan], sb)
                better = orr(andd(a_nan, not_b_nan), andd(better, not_b_nan))
                equal = orr(equal, andd(a_nan, b_nan))
            first = c.compare(ai, bi, "LT", idx_dtype)
            pick_a = orr(better, andd(equal, first))
            return [c.select(pick_a, av, bv), c.select(pick_a, ai, bi)]

        region = ctx.region([sv, si, sv, si], body)
        outs = ctx.op("stablehlo.reduce", [x, iota, v0, i0],
                      [ctx.out_avals[0].update(dtype=aval.dtype), ctx.out_avals[0]],
                      f"dimensions = {i64_array((axis,))}", [region])
        return [outs[1]]
    return rule


register(argmax_p)(_argminmax_rule("GT", _lowest))
register(argmin_p)(_argminmax_rule("LT", _highest))


def _logaddexp(c, a, b, st, dtype):
    """log(exp(a) + exp(b)) without overflow; inf/nan cases via a + b as JAX does."""
    m = c.op1("stablehlo.maximum", [a, b], st)
    d = c.op1("stablehlo.subtract", [a, b], st)
    ad = c.op1("stablehlo.abs", [d], st)
    e = c.op1("stablehlo.exponential", [c.op1("stablehlo.negate", [ad], st)], st)
    r = c.op1("stablehlo.add", [m, c.op1("stablehlo.log_plus_one", [e], st)], st)
    isnan = c.compare(d, d, "NE", dtype)
    return c.select(isnan, c.op1("stablehlo.add", [a, b], st), r)


_CUMULATIVE = {
    cumsum_p: (lambda c, a, b, st, d: c.op1("stablehlo.add", [a, b], st), lambda d: 0),
    cumprod_p: (lambda c, a, b, st, d: c.op1("stablehlo.multiply", [a, b], st), lambda d: 1),
    cummax_p: (lambda c, a, b, st, d: c.op1("stablehlo.maximum", [a, b], st), _lowest),
    cummin_p: (lambda c, a, b, st, d: c.op1("stablehlo.minimum", [a, b], st), _highest),
    cumlogsumexp_p: (_logaddexp, lambda d: -np.inf),
}


def _cumulative_rule(combine, identity):
    def rule(ctx, eqn, x):
        aval = ctx.in_avals[0]
        axis = int(eqn.params["axis"])
        reverse = bool(eqn.params.get("reverse", False))
        n = aval.shape[axis]
        st = _scalar(aval.dtype)
        init = ctx.constant(np.asarray(identity(aval.dtype)).astype(aval.dtype))
        window = [1] * aval.ndim
        window[axis] = max(n, 1)
        pad = [[0, 0] for _ in range(aval.ndim)]
        pad[axis] = [0, max(n - 1, 0)] if reverse else [max(n - 1, 0), 0]
        pad_txt = "[" + ", ".join(f"[{lo}, {hi}]" for lo, hi in pad) + "]"
        region = ctx.region([st, st], lambda c, a, b: [combine(c, a, b, st, aval.dtype)])
        return [ctx.op1("stablehlo.reduce_window", [x, init], ctx.out_avals[0],
                        f"window_dimensions = {i64_array(window)}, "
                        f"padding = dense<{pad_txt}> : tensor<{aval.ndim}x2xi64>", [region])]
    return rule


for _name, (_comb, _ident) in _CUMULATIVE.items():
    register(_name)(_cumulative_rule(_comb, _ident))

__all__ = ["compare_type", "is_complex"]

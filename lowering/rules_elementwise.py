"""Lowering rules: elementwise arithmetic, transcendental, comparison, logical, casts.

Most are one StableHLO/CHLO op of the same type as the output; the table
below says which.  Rules with dtype-dependent semantics (sign of unsigned,
bool conversions, integer_pow, select_n with n cases) are written out.
"""
from __future__ import annotations

import numpy as np

from xform._src.primitives.elementwise import (
    abs_p, acos_p, acosh_p, add_any_p, add_p, and_p, asin_p, asinh_p, atan2_p, atan_p, atanh_p,
    bitcast_convert_type_p, cbrt_p, ceil_p, clamp_p, complex_p, conj_p, convert_element_type_p,
    cos_p, cosh_p, digamma_p, div_p, eq_p, erf_inv_p, erf_p, erfc_p, exp2_p, exp_p, expm1_p,
    floor_p, ge_p, gt_p, imag_p, integer_pow_p, is_finite_p, le_p, lgamma_p, log1p_p, log_p,
    logistic_p, lt_p, max_p, min_p, mul_p, ne_p, neg_p, nextafter_p, not_p, or_p,
    population_count_p, pow_p, real_p, rem_p, round_p, rsqrt_p, select_n_p, shift_left_p,
    shift_right_arithmetic_p, shift_right_logical_p, sign_p, sin_p, sinh_p, sqrt_p, square_p,
    stop_gradient_p, sub_p, tan_p, tanh_p, xor_p)
from xform._src.primitives.remat import name_p
from xform._src.lowering.mlir import compare_type, is_complex, is_float, register

# primitive name -> op emitted with all operands, result type = output aval
_SAME_TYPE_OPS = {
    add_p: "stablehlo.add", add_any_p: "stablehlo.add", sub_p: "stablehlo.subtract",
    mul_p: "stablehlo.multiply", div_p: "stablehlo.divide", rem_p: "stablehlo.remainder",
    max_p: "stablehlo.maximum", min_p: "stablehlo.minimum",
    neg_p: "stablehlo.negate", floor_p: "stablehlo.floor", ceil_p: "stablehlo.ceil",
    exp_p: "stablehlo.exponential", log_p: "stablehlo.log", log1p_p: "stablehlo.log_plus_one",
    expm1_p: "stablehlo.exponential_minus_one", tanh_p: "stablehlo.tanh",
    sin_p: "stablehlo.sine", cos_p: "stablehlo.cosine", tan_p: "stablehlo.tan",
    asin_p: "chlo.asin", acos_p: "chlo.acos", atan_p: "chlo.atan",
    atan2_p: "stablehlo.atan2",
    sinh_p: "chlo.sinh", cosh_p: "chlo.cosh", asinh_p: "chlo.asinh", acosh_p: "chlo.acosh",
    atanh_p: "chlo.atanh",
    sqrt_p: "stablehlo.sqrt", rsqrt_p: "stablehlo.rsqrt", cbrt_p: "stablehlo.cbrt",
    erf_p: "chlo.erf", erfc_p: "chlo.erfc", erf_inv_p: "chlo.erf_inv",
    lgamma_p: "chlo.lgamma", digamma_p: "chlo.digamma", nextafter_p: "chlo.next_after",
    and_p: "stablehlo.and", or_p: "stablehlo.or", xor_p: "stablehlo.xor", not_p: "stablehlo.not",
    shift_left_p: "stablehlo.shift_left",
    shift_right_arithmetic_p: "stablehlo.shift_right_arithmetic",
    shift_right_logical_p: "stablehlo.shift_right_logical",
    population_count_p: "stablehlo.popcnt",
    is_finite_p: "stablehlo.is_finite",
    real_p: "stablehlo.real", imag_p: "stablehlo.imag", complex_p: "stablehlo.complex",
}


def _simple(op_name):
    def rule(ctx, eqn, *xs):
        return [ctx.op1(op_name, list(xs), ctx.out_avals[0])]
    return rule


for _name, _op in _SAME_TYPE_OPS.items():
    register(_name)(_simple(_op))


@register(mul_p)
def _mul(ctx, eqn, x, y):
    out = ctx.out_avals[0]
    if eqn.params.get("out_dtype") is not None:   # multiply in out_dtype (JAX's convert)
        x, y = ctx.convert(x, out.dtype), ctx.convert(y, out.dtype)
    return [ctx.op1("stablehlo.multiply", [x, y], out)]


@register(stop_gradient_p, name_p)
def _identity(ctx, eqn, *xs):
    return list(xs)


@register(abs_p)
def _abs(ctx, eqn, x):
    if np.dtype(ctx.in_avals[0].dtype).kind in "ub":
        return [x]
    return [ctx.op1("stablehlo.abs", [x], ctx.out_avals[0])]


@register(sign_p)
def _sign(ctx, eqn, x):
    aval = ctx.in_avals[0]
    if aval.dtype.kind in "ub":
        zero = ctx.full_like(0, aval)
        return [ctx.select(ctx.compare(x, zero, "EQ", aval.dtype), zero, ctx.full_like(1, aval))]
    return [ctx.op1("stablehlo.sign", [x], ctx.out_avals[0])]


@register(round_p)
def _round(ctx, eqn, x):
    method = int(eqn.params.get("rounding_method", 0))
    op = "stablehlo.round_nearest_afz" if method == 0 else "stablehlo.round_nearest_even"
    return [ctx.op1(op, [x], ctx.out_avals[0])]


@register(exp2_p)
def _exp2(ctx, eqn, x):
    aval = ctx.in_avals[0]
    log2 = ctx.full_like(np.log(2), aval)
    return [ctx.op1("stablehlo.exponential", [ctx.op1("stablehlo.multiply", [log2, x], aval)],
                    aval)]


@register(logistic_p)
def _logistic(ctx, eqn, x):
    """1 / (1 + exp(-x)) spelled out, as JAX lowers it (XLA's own logistic expansion
    rounds 16-bit floats differently)."""
    aval = ctx.out_avals[0]
    e = ctx.op1("stablehlo.exponential", [ctx.op1("stablehlo.negate", [x], aval)], aval)
    one = ctx.full_like(1, aval)
    return [ctx.op1("stablehlo.divide", [one, ctx.op1("stablehlo.add", [one, e], aval)], aval)]


@register(pow_p)
def _pow(ctx, eqn, x, y):
    """Float/complex base with a float or integer exponent (converted, as XLA needs)."""
    out = ctx.out_avals[0]
    return [ctx.op1("stablehlo.power", [x, ctx.convert(y, out.dtype)], out)]


@register(square_p)
def _square(ctx, eqn, x):
    return [ctx.op1("stablehlo.multiply", [x, x], ctx.out_avals[0])]


@register(integer_pow_p)
def _integer_pow(ctx, eqn, x):
    """x**y by repeated squaring (y a static int); negative y -> 1 / x**|y|."""
    y = int(eqn.params["y"])
    aval = ctx.out_avals[0]
    n, acc = abs(y), None
    while n > 0:
        if n & 1:
            acc = x if acc is None else ctx.op1("stablehlo.multiply", [acc, x], aval)
        n >>= 1
        if n:
            x = ctx.op1("stablehlo.multiply", [x, x], aval)
    if acc is None:
        return [ctx.full_like(1, aval)]
    if y < 0:
        acc = ctx.op1("stablehlo.divide", [ctx.full_like(1, aval), acc], aval)
    return [acc]


_DIRECTIONS = {eq_p: "EQ", ne_p: "NE", lt_p: "LT", le_p: "LE", gt_p: "GT", ge_p: "GE"}


def _compare_rule(direction):
    def rule(ctx, eqn, x, y):
        return [ctx.compare(x, y, direction, ctx.in_avals[0].dtype)]
    return rule


for _name, _dir in _DIRECTIONS.items():
    register(_name)(_compare_rule(_dir))


@register(select_n_p)
def _select_n(ctx, eqn, which, *cases):
    """cases[which]: a bool predicate picks between two; an int index bisects."""
    if len(cases) == 1:
        return [cases[0]]
    wdtype = ctx.in_avals[0].dtype
    out = ctx.out_avals[0]

    def build(lo, hi):  # select among cases[lo:hi]
        if hi - lo == 1:
            return cases[lo]
        mid = (lo + hi) // 2
        if wdtype == np.bool_:   # True picks cases[1]
            return ctx.op1("stablehlo.select", [which, build(mid, hi), build(lo, mid)], out)
        pred = ctx.compare(which, ctx.full_like(mid, ctx.in_avals[0]), "LT", wdtype)
        return ctx.op1("stablehlo.select", [pred, build(lo, mid), build(mid, hi)], out)

    return [build(0, len(cases))]


@register(clamp_p)
def _clamp(ctx, eqn, lo, x, hi):
    return [ctx.op1("stablehlo.clamp", [lo, x, hi], ctx.out_avals[0])]


@register(conj_p)
def _conj(ctx, eqn, x):
    aval = ctx.in_avals[0]
    if not is_complex(aval.dtype):
        return [ctx.convert(x, ctx.out_avals[0].dtype)]
    part = np.float32 if aval.dtype == np.complex64 else np.float64
    pa = aval.update(dtype=part)
    re = ctx.op1("stablehlo.real", [x], pa)
    im = ctx.op1("stablehlo.negate", [ctx.op1("stablehlo.imag", [x], pa)], pa)
    return [ctx.op1("stablehlo.complex", [re, im], ctx.out_avals[0])]


@register(convert_element_type_p)
def _convert_element_type(ctx, eqn, x):
    """As XLA, except: to bool is ``x != 0``; complex -> real takes the real part."""
    src, dst = ctx.in_avals[0], ctx.out_avals[0]
    if src.dtype == dst.dtype:
        return [x]
    if is_complex(src.dtype) and not is_complex(dst.dtype):
        part = np.float32 if src.dtype == np.complex64 else np.float64
        x = ctx.op1("stablehlo.real", [x], src.update(dtype=part))
        src = src.update(dtype=part)
    if dst.dtype == np.bool_:
        if src.dtype == np.bool_:
            return [x]
        return [ctx.compare(x, ctx.full_like(0, src), "NE", src.dtype)]
    return [ctx.convert(x, dst.dtype)]


@register(bitcast_convert_type_p)
def _bitcast_convert_type(ctx, eqn, x):
    return [ctx.op1("stablehlo.bitcast_convert", [x], ctx.out_avals[0])]


__all__ = ["compare_type", "is_float"]

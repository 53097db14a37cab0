"""Lowering rules: elementwise arithmetic, transcendental, comparison, logical, casts.

Most are one StableHLO/CHLO op of the same type as the output; the table
below says which.  Rules with dtype-dependent semantics (sign of unsigned,
bool conversions, integer_pow, select_n with n cases) are written out.
"""
from __future__ import annotations

import numpy as np

from xform._src.lowering.mlir import compare_type, is_complex, is_float, register

# primitive name -> op emitted with all operands, result type = output aval
_SAME_TYPE_OPS = {
    "add": "stablehlo.add", "add_any": "stablehlo.add", "sub": "stablehlo.subtract",
    "mul": "stablehlo.multiply", "div": "stablehlo.divide", "rem": "stablehlo.remainder",
    "max": "stablehlo.maximum", "min": "stablehlo.minimum",
    "neg": "stablehlo.negate", "floor": "stablehlo.floor", "ceil": "stablehlo.ceil",
    "exp": "stablehlo.exponential", "log": "stablehlo.log", "log1p": "stablehlo.log_plus_one",
    "expm1": "stablehlo.exponential_minus_one", "tanh": "stablehlo.tanh",
    "logistic": "stablehlo.logistic",
    "sin": "stablehlo.sine", "cos": "stablehlo.cosine", "tan": "stablehlo.tan",
    "asin": "chlo.asin", "acos": "chlo.acos", "atan": "chlo.atan",
    "atan2": "stablehlo.atan2",
    "sinh": "chlo.sinh", "cosh": "chlo.cosh", "asinh": "chlo.asinh", "acosh": "chlo.acosh",
    "atanh": "chlo.atanh",
    "sqrt": "stablehlo.sqrt", "rsqrt": "stablehlo.rsqrt", "cbrt": "stablehlo.cbrt",
    "erf": "chlo.erf", "erfc": "chlo.erfc", "erf_inv": "chlo.erf_inv",
    "lgamma": "chlo.lgamma", "digamma": "chlo.digamma", "nextafter": "chlo.next_after",
    "and": "stablehlo.and", "or": "stablehlo.or", "xor": "stablehlo.xor", "not": "stablehlo.not",
    "shift_left": "stablehlo.shift_left",
    "shift_right_arithmetic": "stablehlo.shift_right_arithmetic",
    "shift_right_logical": "stablehlo.shift_right_logical",
    "population_count": "stablehlo.popcnt",
    "is_finite": "stablehlo.is_finite",
    "real": "stablehlo.real", "imag": "stablehlo.imag", "complex": "stablehlo.complex",
}


def _simple(op_name):
    def rule(ctx, eqn, *xs):
        return [ctx.op1(op_name, list(xs), ctx.out_avals[0])]
    return rule


for _name, _op in _SAME_TYPE_OPS.items():
    register(_name)(_simple(_op))


@register("stop_gradient", "copy", "copy_p", "name")
def _identity(ctx, eqn, *xs):
    return list(xs)


@register("abs")
def _abs(ctx, eqn, x):
    if np.dtype(ctx.in_avals[0].dtype).kind in "ub":
        return [x]
    return [ctx.op1("stablehlo.abs", [x], ctx.out_avals[0])]


@register("sign")
def _sign(ctx, eqn, x):
    aval = ctx.in_avals[0]
    if aval.dtype.kind in "ub":
        zero = ctx.full_like(0, aval)
        return [ctx.select(ctx.compare(x, zero, "EQ", aval.dtype), zero, ctx.full_like(1, aval))]
    return [ctx.op1("stablehlo.sign", [x], ctx.out_avals[0])]


@register("round")
def _round(ctx, eqn, x):
    method = int(eqn.params.get("rounding_method", 0))
    op = "stablehlo.round_nearest_afz" if method == 0 else "stablehlo.round_nearest_even"
    return [ctx.op1(op, [x], ctx.out_avals[0])]


@register("exp2")
def _exp2(ctx, eqn, x):
    aval = ctx.in_avals[0]
    log2 = ctx.full_like(np.log(2), aval)
    return [ctx.op1("stablehlo.exponential", [ctx.op1("stablehlo.multiply", [log2, x], aval)],
                    aval)]


@register("pow")
def _pow(ctx, eqn, x, y):
    """Float/complex base with a float or integer exponent (converted, as XLA needs)."""
    out = ctx.out_avals[0]
    return [ctx.op1("stablehlo.power", [x, ctx.convert(y, out.dtype)], out)]


@register("square")
def _square(ctx, eqn, x):
    return [ctx.op1("stablehlo.multiply", [x, x], ctx.out_avals[0])]


@register("integer_pow")
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


_DIRECTIONS = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}


def _compare_rule(direction):
    def rule(ctx, eqn, x, y):
        return [ctx.compare(x, y, direction, ctx.in_avals[0].dtype)]
    return rule


for _name, _dir in _DIRECTIONS.items():
    register(_name)(_compare_rule(_dir))


@register("select_n")
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


@register("clamp")
def _clamp(ctx, eqn, lo, x, hi):
    return [ctx.op1("stablehlo.clamp", [lo, x, hi], ctx.out_avals[0])]


@register("conj")
def _conj(ctx, eqn, x):
    aval = ctx.in_avals[0]
    if not is_complex(aval.dtype):
        return [ctx.convert(x, ctx.out_avals[0].dtype)]
    part = np.float32 if aval.dtype == np.complex64 else np.float64
    pa = aval.update(dtype=part)
    re = ctx.op1("stablehlo.real", [x], pa)
    im = ctx.op1("stablehlo.negate", [ctx.op1("stablehlo.imag", [x], pa)], pa)
    return [ctx.op1("stablehlo.complex", [re, im], ctx.out_avals[0])]


@register("convert_element_type")
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


@register("bitcast_convert_type")
def _bitcast_convert_type(ctx, eqn, x):
    return [ctx.op1("stablehlo.bitcast_convert", [x], ctx.out_avals[0])]


__all__ = ["compare_type", "is_float"]

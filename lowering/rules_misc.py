"""Lowering rules: ``clz``, ``reduce_precision``, ``optimization_barrier``."""
from __future__ import annotations

from xform._src.primitives.misc import clz_p, optimization_barrier_p, reduce_precision_p
from xform._src.lowering.mlir import register


@register(clz_p)
def _clz(ctx, eqn, x):
    return [ctx.op1("stablehlo.count_leading_zeros", [x], ctx.out_avals[0])]


@register(reduce_precision_p)
def _reduce_precision(ctx, eqn, x):
    p = eqn.params
    return [ctx.op1("stablehlo.reduce_precision", [x], ctx.out_avals[0],
                    f"exponent_bits = {int(p['exponent_bits'])} : i32, "
                    f"mantissa_bits = {int(p['mantissa_bits'])} : i32")]


@register(optimization_barrier_p)
def _optimization_barrier(ctx, eqn, *xs):
    return ctx.op("stablehlo.optimization_barrier", list(xs), list(ctx.out_avals))

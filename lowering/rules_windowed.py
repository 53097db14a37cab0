"""Lowering rules: windowed reductions (``stablehlo.reduce_window``), the max-pool gradient
pair (``select_and_gather_add`` as a variadic reduce_window over (operand, tangent);
``select_and_scatter_add`` as ``stablehlo.select_and_scatter``) and generic ``reduce``.
"""
from __future__ import annotations

import numpy as np

from xform._src.primitives.windowed import (
    reduce_p, reduce_window_max_p, reduce_window_min_p, reduce_window_p, reduce_window_sum_p,
    select_and_gather_add_p, select_and_scatter_add_p)
from xform._src.lowering.mlir import i64_array, lower_subjaxpr, register, tensor_type
from xform._src.lowering.rules_reductions import _highest, _lowest


def _pad_attr(padding):
    n = len(padding)
    if not n:
        return "dense<> : tensor<0x2xi64>"
    return ("dense<[" + ", ".join(f"[{int(lo)}, {int(hi)}]" for lo, hi in padding)
            + f"]> : tensor<{n}x2xi64>")


def _window_attrs(p):
    nd = len(p["window_dimensions"])
    return (f"base_dilations = {i64_array(p.get('base_dilation', (1,) * nd))}, "
            f"padding = {_pad_attr(p['padding'])}, "
            f"window_dilations = {i64_array(p.get('window_dilation', (1,) * nd))}, "
            f"window_dimensions = {i64_array(p['window_dimensions'])}, "
            f"window_strides = {i64_array(p['window_strides'])}")


def _scalar(dtype):
    return tensor_type((), dtype)


_MONOIDS = {reduce_window_sum_p: ("stablehlo.add", lambda d: 0),
            reduce_window_max_p: ("stablehlo.maximum", _lowest),
            reduce_window_min_p: ("stablehlo.minimum", _highest)}


def _monoid_rule(op, identity):
    def rule(ctx, eqn, x):
        dt = ctx.in_avals[0].dtype
        init = ctx.constant(np.asarray(identity(dt)).astype(dt))
        st = _scalar(dt)
        region = ctx.region([st, st], lambda c, a, b: [c.op1(op, [a, b], st)])
        return [ctx.op1("stablehlo.reduce_window", [x, init], ctx.out_avals[0],
                        _window_attrs(eqn.params), [region])]
    return rule


for _n, (_op, _id) in _MONOIDS.items():
    register(_n)(_monoid_rule(_op, _id))


def _sel_identity(select_prim, dt):
    return _lowest(dt) if select_prim == "ge" else _highest(dt)


@register(select_and_gather_add_p)
def _select_and_gather_add(ctx, eqn, t, x):
    p = eqn.params
    dt = ctx.in_avals[0].dtype
    direction = "GE" if p["select_prim"] == "ge" else "LE"
    st = _scalar(dt)
    x0 = ctx.constant(np.asarray(_sel_identity(p["select_prim"], dt)).astype(dt))
    t0 = ctx.constant(np.zeros((), dt))

    def body(c, ax, at, bx, bt):
        pick_a = c.compare(ax, bx, direction, dt)
        return [c.select(pick_a, ax, bx), c.select(pick_a, at, bt)]
    region = ctx.region([st, st, st, st], body)
    out = ctx.out_avals[0]
    res = ctx.op("stablehlo.reduce_window", [x, t, x0, t0], [out, out], _window_attrs(p),
                 [region])
    return [res[1]]


@register(select_and_scatter_add_p)
def _select_and_scatter_add(ctx, eqn, source, x):
    p = eqn.params
    xa = ctx.in_avals[1]
    dt = xa.dtype
    direction = "GE" if p["select_prim"] == "ge" else "LE"
    st = _scalar(dt)
    pads = p["padding"]
    # Pad the operand with the select identity explicitly (XLA:CPU's select_and_scatter
    # padding is unreliable), scatter, then cut the padding back off.
    pos = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
    padded_shape = [d + lo + hi for d, (lo, hi) in zip(xa.shape, pos)]
    ident = ctx.constant(np.asarray(_sel_identity(p["select_prim"], dt)).astype(dt))
    if any(lo or hi for lo, hi in pos):
        x = ctx.op1("stablehlo.pad", [x, ident], tensor_type(padded_shape, dt),
                    f"edge_padding_low = {i64_array([lo for lo, _ in pos])}, "
                    f"edge_padding_high = {i64_array([hi for _, hi in pos])}, "
                    f"interior_padding = {i64_array([0] * len(pos))}")
    # negative padding: crop the (padded) operand
    crop = [(max(-lo, 0), max(-hi, 0)) for lo, hi in pads]
    cropped_shape = [d - a - b for d, (a, b) in zip(padded_shape, crop)]
    if any(a or b for a, b in crop):
        x = ctx.op1("stablehlo.slice", [x], tensor_type(cropped_shape, dt),
                    f"start_indices = {i64_array([a for a, _ in crop])}, "
                    f"limit_indices = {i64_array([d - b for d, (_, b) in zip(padded_shape, crop)])}, "
                    f"strides = {i64_array([1] * len(crop))}")
    zero = ctx.constant(np.zeros((), dt))
    select = ctx.region([st, st], lambda c, a, b: [c.compare(a, b, direction, dt)])
    scatter = ctx.region([st, st], lambda c, a, b: [c.op1("stablehlo.add", [a, b], st)])
    nd = len(cropped_shape)
    out = ctx.op1("stablehlo.select_and_scatter", [x, source, zero],
                  tensor_type(cropped_shape, dt),
                  f"padding = {_pad_attr([(0, 0)] * nd)}, "
                  f"window_dimensions = {i64_array(p['window_dimensions'])}, "
                  f"window_strides = {i64_array(p['window_strides'])}", [select, scatter])
    # back to the operand's coordinates: drop the low/high padding, re-add cropped parts
    res = ctx.op1("stablehlo.pad", [out, zero], tensor_type(
        [c + a + b for c, (a, b) in zip(cropped_shape, crop)], dt),
        f"edge_padding_low = {i64_array([a for a, _ in crop])}, "
        f"edge_padding_high = {i64_array([b for _, b in crop])}, "
        f"interior_padding = {i64_array([0] * nd)}") if any(a or b for a, b in crop) else out
    if any(lo or hi for lo, hi in pos):
        res = ctx.op1("stablehlo.slice", [res], ctx.out_avals[0],
                      f"start_indices = {i64_array([lo for lo, _ in pos])}, "
                      f"limit_indices = {i64_array([lo + d for d, (lo, _) in zip(xa.shape, pos)])}, "
                      f"strides = {i64_array([1] * nd)}")
    return [res]


def _generic_region(ctx, closed, dtypes_):
    sts = [_scalar(d) for d in dtypes_]
    n = len(sts)
    return ctx.region(sts + sts, lambda c, *args: lower_subjaxpr(c, closed, list(args)))


@register(reduce_window_p)
def _reduce_window(ctx, eqn, *args):
    n = len(args) // 2
    dts = [a.dtype for a in ctx.in_avals[:n]]
    region = _generic_region(ctx, eqn.params["jaxpr"], dts)
    return ctx.op("stablehlo.reduce_window", list(args), list(ctx.out_avals),
                  _window_attrs(eqn.params), [region])


@register(reduce_p)
def _reduce(ctx, eqn, *args):
    n = len(args) // 2
    dts = [a.dtype for a in ctx.in_avals[:n]]
    region = _generic_region(ctx, eqn.params["jaxpr"], dts)
    return ctx.op("stablehlo.reduce", list(args), list(ctx.out_avals),
                  f"dimensions = {i64_array(eqn.params['dimensions'])}", [region])

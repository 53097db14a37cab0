"""Lowering rules for structured control flow: ``cond``, ``while``, ``scan``.

* ``cond``  -> ``stablehlo.case`` (one region per branch; regions capture the
  operands from the enclosing scope, which StableHLO allows).
* ``while`` -> ``stablehlo.while`` over the carry; constants are captured.
* ``scan``  -> ``stablehlo.while`` over ``(i, carry, ys buffers)``: each iteration
  reads ``xs[i]`` with ``dynamic_slice``, runs the body inline and writes ``ys[i]``
  with ``dynamic_update_slice`` (``i`` counts down for ``reverse``); ``unroll``
  copies the body per trip.
"""
from __future__ import annotations

import numpy as np

from xform._src.primitives.control_flow import cond_p, scan_p, while_p
from xform._src.lowering.mlir import aval_type, i64_array, lower_subjaxpr, register, tensor_type

_I32 = tensor_type((), np.int32)
_BOOL = tensor_type((), np.bool_)


@register(cond_p)
def _cond(ctx, eqn, index, *ops):
    branches = eqn.params["branches"]
    out_types = [aval_type(a) for a in ctx.out_avals]
    regions = [ctx.region([], lambda c, b=b: lower_subjaxpr(c, b, list(ops))) for b in branches]
    return ctx.op("stablehlo.case", [index], out_types, "", regions)


@register(while_p)
def _while(ctx, eqn, *args):
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cc, bc, carry = list(args[:nc]), list(args[nc:nc + nb]), list(args[nc + nb:])
    types = [ctx.types[c] for c in carry]
    cond_r = ctx.region(types, lambda c, *xs: lower_subjaxpr(c, p["cond_jaxpr"], cc + list(xs)))
    body_r = ctx.region(types, lambda c, *xs: lower_subjaxpr(c, p["body_jaxpr"], bc + list(xs)))
    return ctx.op("stablehlo.while", carry, types, "", [cond_r, body_r])


@register(scan_p)
def _scan(ctx, eqn, *args):
    """``unroll=u`` runs ``u`` body copies per loop trip; the ``length % u`` leftover
    iterations follow the loop as straight-line code (``unroll=True`` or 0: no loop)."""
    p = eqn.params
    length, reverse = int(p["length"]), bool(p["reverse"])
    unroll = p.get("unroll", 1)
    # (``unroll=0`` unrolls the whole loop, as JAX documents and does; ``False`` is 1.)
    full = unroll is True or (unroll is not False and unroll == 0)
    u = max(length, 1) if full else max(1, min(int(unroll), max(length, 1)))
    nc, nca = p["num_consts"], p["num_carry"]
    jaxpr = p["jaxpr"]
    consts, carry, xs = list(args[:nc]), list(args[nc:nc + nca]), list(args[nc + nca:])
    y_avals = ctx.out_avals[nca:]
    x_avals = ctx.in_avals[nc + nca:]

    def step(c, i, cs, ys):
        """One iteration at counter ``i`` (an i32 SSA name): (i + 1, carry, ys buffers)."""
        pos = i
        if reverse:
            pos = c.op1("stablehlo.subtract", [c.constant(np.int32(length - 1)), i], _I32)
        zero = c.constant(np.int32(0))
        x_slices = []
        for x, a in zip(xs, x_avals):
            sl = c.op1("stablehlo.dynamic_slice", [x, pos] + [zero] * (a.ndim - 1),
                       tensor_type((1,) + a.shape[1:], a.dtype),
                       f"slice_sizes = {i64_array((1,) + a.shape[1:])}")
            x_slices.append(c.op1("stablehlo.reshape", [sl], tensor_type(a.shape[1:], a.dtype)))
        outs = lower_subjaxpr(c, jaxpr, consts + list(cs) + x_slices)
        new_c, new_y = outs[:nca], outs[nca:]
        new_ys = []
        for buf, y, a in zip(ys, new_y, y_avals):
            upd = c.op1("stablehlo.reshape", [y], tensor_type((1,) + a.shape[1:], a.dtype))
            new_ys.append(c.op1("stablehlo.dynamic_update_slice",
                                [buf, upd, pos] + [zero] * (a.ndim - 1), aval_type(a)))
        one = c.constant(np.int32(1))
        return c.op1("stablehlo.add", [i, one], _I32), new_c, new_ys

    i = ctx.constant(np.int32(0))
    cs, ys = carry, [ctx.full_like(0, a) for a in y_avals]
    trips = length // u
    if trips > (1 if u > 1 else 0):
        state = [i] + cs + ys
        types = [ctx.types[x] for x in state]
        stop = trips * u

        def cond_body(c, i, *rest):
            return [c.compare(i, c.constant(np.int32(stop)), "LT", np.int32)]

        def loop_body(c, i, *rest):
            cs, ys = list(rest[:nca]), list(rest[nca:])
            for _ in range(u):
                i, cs, ys = step(c, i, cs, ys)
            return [i] + cs + ys

        outs = ctx.op("stablehlo.while", state, types, "",
                      [ctx.region(types, cond_body), ctx.region(types, loop_body)])
        i, cs, ys = outs[0], outs[1:1 + nca], outs[1 + nca:]
        remaining = length - stop
    else:
        remaining = length
    for _ in range(remaining):
        i, cs, ys = step(ctx, i, cs, ys)
    return list(cs) + list(ys)

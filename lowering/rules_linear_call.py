"""Lowering of ``linear_call``: the callee program, inlined (its transpose was applied,
if needed, before lowering)."""
from __future__ import annotations

from xform._src.lowering.mlir import lower_subjaxpr, register
from xform._src.primitives.linear_call import linear_call_p


@register(linear_call_p)
def _linear_call(ctx, eqn, *args):
    p = eqn.params
    nc, nt = p["num_callee_consts"], p["num_transpose_consts"]
    return lower_subjaxpr(ctx, p["callee"], list(args[:nc]) + list(args[nc + nt:]))

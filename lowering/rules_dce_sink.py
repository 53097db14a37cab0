"""Lowering of ``dce_sink``: no operation (its operand is computed by the program)."""
from __future__ import annotations

from xform._src.lowering.mlir import register
from xform._src.primitives.dce_sink import dce_sink_p


@register(dce_sink_p)
def _dce_sink(ctx, eqn, x):
    return []

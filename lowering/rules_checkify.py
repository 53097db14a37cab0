"""Lowering rule: ``check``.

A ``check`` that reaches XLA was staged without being functionalized by ``checkify``:
as JAX (without its experimental XLA run-time errors), lowering it fails with the
error telling the user to wrap the function in ``checkify.checkify``.  A
``debug_check`` lowers to nothing.
"""
from __future__ import annotations

from xform._src.lowering.mlir import register
from xform._src.primitives.checkify import FUNCTIONALIZATION_ERROR, check_p


@register(check_p)
def _check(ctx, eqn, *args):
    if eqn.params["debug"]:
        return []
    raise ValueError(FUNCTIONALIZATION_ERROR)

"""Lowering rules: special-function primitives (primitives/special.py).

polygamma, zeta and bessel_i1e are single CHLO ops (decomposed by XLA).  The
incomplete gamma family, bessel_i0e and the regularized incomplete beta have no
CHLO op: their algorithms (``primitives.special.EXPANSIONS``, written with lax
functions) are staged for the equation's operand types and inlined here, as
JAX's ``lower_fun`` does.
"""
from __future__ import annotations

from xform._src.primitives.special import (
    bessel_i0e_p, bessel_i1e_p, igamma_grad_a_p, igamma_p, igammac_p, polygamma_p,
    regularized_incomplete_beta_p, zeta_p)
from xform._src.lowering.mlir import lower_subjaxpr, register
from xform._src.interpreters import staging
from xform._src.interpreters.ir import ClosedJaxpr
from xform._src.primitives.special import EXPANSIONS

_CHLO = {polygamma_p: "chlo.polygamma", zeta_p: "chlo.zeta", bessel_i1e_p: "chlo.bessel_i1e"}


def _chlo(op_name):
    def rule(ctx, eqn, *xs):
        return [ctx.op1(op_name, list(xs), ctx.out_avals[0])]
    return rule


for _name, _op in _CHLO.items():
    register(_name)(_chlo(_op))

_STAGED: dict = {}   # (name, in avals) -> ClosedJaxpr


def _expansion(name):
    def rule(ctx, eqn, *xs):
        avals = tuple(a.strip_weak_type() if hasattr(a, "strip_weak_type") else a
                      for a in ctx.in_avals)
        key = (name, avals)
        closed = _STAGED.get(key)
        if closed is None:
            fn = EXPANSIONS[name]
            jaxpr, consts = staging.trace_to_jaxpr(lambda *a: [fn(*a)], list(avals),
                                                   name=name)
            closed = _STAGED[key] = ClosedJaxpr(jaxpr, consts)
        return lower_subjaxpr(ctx, closed, list(xs))
    return rule


for _prim in (igamma_p, igammac_p, igamma_grad_a_p, bessel_i0e_p,
              regularized_incomplete_beta_p):
    register(_prim)(_expansion(_prim.name))

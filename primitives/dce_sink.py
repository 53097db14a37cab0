"""``dce_sink``: consume values so dead-code elimination keeps what computes them (JAX's
``lax.dce_sink``).  It has no results; being effectful, it is never removed, so neither
are the equations producing its operand.

* impl: nothing.  Lowering: nothing (the values are already computed by then).
* JVP: the sink on the primal (tangents need no sinking; the result is empty).
* transpose: contributes no cotangent (nothing depends on the sink).
* batching: the sink on the batched value.
"""
from __future__ import annotations

from xform._src.interpreters import ad, batching
from xform._src.interpreters.core import Primitive
from xform._src.interpreters.tree_util import tree_leaves
from xform._src.primitives.structural import as_operand

__all__ = ["dce_sink", "dce_sink_p"]

dce_sink_p = Primitive("dce_sink", multiple_results=True)
dce_sink_p.effectful = True
dce_sink_p.impl_takes_arrays = True
dce_sink_p.def_impl(lambda x, *, prevent_mlir_dce: [])
dce_sink_p.def_abstract_eval(lambda x, *, prevent_mlir_dce: [])


def _jvp(primals, tangents, *, prevent_mlir_dce):
    dce_sink_p.bind(*primals, prevent_mlir_dce=prevent_mlir_dce)
    return [], []


ad.jvp_rules[dce_sink_p] = _jvp
ad.transpose_rules[dce_sink_p] = lambda cts, x, *, prevent_mlir_dce: [None]
batching.batch_rules[dce_sink_p] = (
    lambda axis_data, vals, dims, *, prevent_mlir_dce:
    (dce_sink_p.bind(*vals, prevent_mlir_dce=prevent_mlir_dce), []))


def dce_sink(val, *, prevent_mlir_dce=False):
    """Keep every array of the pytree ``val`` alive against dead-code elimination.
    Returns None."""
    for leaf in tree_leaves(val):
        dce_sink_p.bind(as_operand(leaf), prevent_mlir_dce=bool(prevent_mlir_dce))

"""``call_exported``: call a serialized StableHLO function (``xform.export``'s artifacts).

The primitive is generic over its ``exported`` param, which knows its own calling
convention: ``exported.call_abstract_eval(in_avals)`` checks the arguments and gives the
result types (refining shape-polymorphic modules), ``exported.call_eager(args)`` runs it
now.  Under ``jit`` the module is inlined into the program (its lowering rule is in
``lowering/export_mlir.py``).  Its VJP comes from the export's own VJP export
(``xform.export.call``); under ``vmap`` it is a loop over the batch (JAX has no batching
rule for it).
"""
from __future__ import annotations

from xform._src.interpreters import batching
from xform._src.interpreters.core import Primitive
from xform._src.primitives._rules import moveaxis
from xform._src.primitives.control_flow import map as _lax_map

__all__: list = []

call_exported_p = Primitive("call_exported", multiple_results=True)
call_exported_p.missing_rules["jvp"] = (
    "an exported function is differentiated through the VJP it was exported with "
    "(xform.export.call), not by a JVP rule")
call_exported_p.impl_takes_arrays = True
call_exported_p.def_abstract_eval(
    lambda *in_avals, exported: exported.call_abstract_eval(in_avals))
call_exported_p.def_impl(lambda *args, exported: exported.call_eager(args))


def _call_batch(axis_data, vals, dims, *, exported):
    batched = [moveaxis(v, d, 0) if d is not None else v for v, d in zip(vals, dims)]
    which = [d is not None for d in dims]

    def one(xs):
        it = iter(xs)
        full = [next(it) if w else v for v, w in zip(batched, which)]
        return list(call_exported_p.bind(*full, exported=exported))
    outs = _lax_map(one, [v for v, w in zip(batched, which) if w])
    return list(outs), [0] * len(outs)


batching.batch_rules[call_exported_p] = _call_batch

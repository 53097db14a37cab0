"""``linear_call``: a function declared linear in some arguments, with a user-supplied
transpose (JAX's ``custom_derivatives.linear_call``).

The primitive carries two const-free programs: ``callee(res, lin) -> out`` and
``transpose(res, ct_out) -> ct_lin``; their hoisted constants lead the arguments
(``num_callee_consts`` then ``num_transpose_consts``), followed by ``num_res`` residuals
and the linear arguments.

* impl / lowering: the callee, inlined.
* JVP: linear in ``lin``, so the tangent is the same call on the tangents (residuals and
  constants are not differentiated, as in JAX).
* transpose: the same primitive with callee and transpose (and their constants) swapped,
  applied to the cotangents -- so transposing twice gives back the callee.
* batching: both programs batched with every argument's axis at 0.
"""
from __future__ import annotations

from xform._src.interpreters import ad, batching, core, ir
from xform._src.interpreters.ad import Zero
from xform._src.interpreters.core import Primitive
from xform._src.interpreters.ir import eval_jaxpr
from xform._src.primitives._rules import bdim_at_front
from xform._src.primitives.custom import hoist_consts

__all__: list = []

linear_call_p = Primitive("linear_call", multiple_results=True)
linear_call_p.impl_takes_arrays = True


def _split(args, nc, nt, nr):
    return (list(args[:nc]), list(args[nc:nc + nt]), list(args[nc + nt:nc + nt + nr]),
            list(args[nc + nt + nr:]))


def _impl(*args, callee, transpose, num_callee_consts, num_transpose_consts, num_res):
    cc, _, res, lin = _split(args, num_callee_consts, num_transpose_consts, num_res)
    return eval_jaxpr(callee.jaxpr, callee.consts, *cc, *res, *lin)


linear_call_p.def_impl(_impl)
linear_call_p.def_abstract_eval(lambda *avals, callee, **_: list(callee.out_avals))


def _jvp(primals, tangents, **params):
    n = params["num_callee_consts"] + params["num_transpose_consts"] + params["num_res"]
    if any(type(t) is not Zero for t in tangents[:n]):
        raise TypeError("linear_call: residual_args (and values the functions close over) "
                        "are not differentiated; pass what varies as a linear argument or "
                        "wrap it in lax.stop_gradient")
    out = linear_call_p.bind(*primals, **params)
    lin_t = tangents[n:]
    if all(type(t) is Zero for t in lin_t):
        return out, [Zero(ad.tangent_aval(core.get_aval(v))) for v in out]
    lin_t = [ad.instantiate(t) for t in lin_t]
    return out, linear_call_p.bind(*primals[:n], *lin_t, **params)


def _transpose(cts, *args, callee, transpose, num_callee_consts, num_transpose_consts,
               num_res):
    cc, tc, res, lin = _split(args, num_callee_consts, num_transpose_consts, num_res)
    if any(ad.is_undefined_primal(v) for v in cc + tc + res):
        raise TypeError("linear_call is linear only in linear_args: residual_args cannot be "
                        "transposed")
    cts = [ad.instantiate(c) for c in cts]
    ct_lin = linear_call_p.bind(*tc, *cc, *res, *cts, callee=transpose, transpose=callee,
                                num_callee_consts=num_transpose_consts,
                                num_transpose_consts=num_callee_consts, num_res=num_res)
    return [None] * (num_callee_consts + num_transpose_consts + num_res) + list(ct_lin)


def _batch(axis_data, vals, dims, *, callee, transpose, num_callee_consts,
           num_transpose_consts, num_res):
    vals = [bdim_at_front(v, d, axis_data.size) for v, d in zip(vals, dims)]
    cc, tc, res, lin = _split(vals, num_callee_consts, num_transpose_consts, num_res)
    bc, _ = batching.batch_jaxpr(callee, axis_data, [0] * len(callee.in_avals),
                                 [0] * len(callee.out_avals))
    bt, _ = batching.batch_jaxpr(transpose, axis_data, [0] * len(transpose.in_avals),
                                 [0] * len(transpose.out_avals))
    bc, kc = hoist_consts(bc.jaxpr, bc.consts)
    bt, kt = hoist_consts(bt.jaxpr, bt.consts)
    outs = linear_call_p.bind(*kc, *cc, *kt, *tc, *res, *lin, callee=bc, transpose=bt,
                              num_callee_consts=len(kc) + len(cc),
                              num_transpose_consts=len(kt) + len(tc), num_res=num_res)
    return outs, [0] * len(outs)


ad.jvp_rules[linear_call_p] = _jvp
ad.transpose_rules[linear_call_p] = _transpose
batching.batch_rules[linear_call_p] = _batch

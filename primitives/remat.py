"""Gradient checkpointing (``remat``) and the ``name`` primitive policies can see.

``remat`` carries a const-free program.  Its rules:

* eager: evaluate the program;
* JVP: differentiate the program, still under ``remat`` (so a later
  linearization can still choose what to save);
* partial evaluation (the point): when linearizing, the program is split into
  a *known* part, run now, which outputs only the residuals the ``policy``
  allows to be saved, and an *unknown* part, recorded in the linear program as
  another ``remat``, which first **recomputes** every other primal value it
  needs from those residuals and then does the tangent work;
* transpose: the known inputs of that recorded ``remat`` are residuals, so the
  backward pass evaluates its recomputation forward and transposes the rest;
* batching: batch the program.

``name`` is the identity with a ``name`` param (``checkpoint_name``); policies
such as ``save_only_these_names`` look for it.
"""
from __future__ import annotations

from interpreters import ad, batching, core
from interpreters import jaxpr_transforms as jt
from interpreters.ad import Zero
from interpreters.core import Primitive
from interpreters.ir import eval_jaxpr
from primitives._rules import defvectorized
from primitives.custom import hoist_consts, trace_flat

__all__: list = []

# ----------------------------------------------------------------- name

name_p = Primitive("name")
name_p.def_impl(lambda x, *, name: x)
name_p.def_abstract_eval(lambda x, *, name: x)
ad.jvp_rules[name_p] = lambda primals, tangents, *, name: (
    name_p.bind(primals[0], name=name), tangents[0])
defvectorized(name_p)

# ----------------------------------------------------------------- remat

remat_p = Primitive("checkpoint", multiple_results=True)
remat_p.impl_takes_arrays = True


def _nothing_saveable(*_, **__):
    return False


@remat_p.def_impl
def _remat_impl(*args, jaxpr, prevent_cse, differentiated, policy):
    return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


remat_p.def_abstract_eval(lambda *avals, jaxpr, **_: list(jaxpr.out_avals))


def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
    n = len(primals)
    nz = [type(t) is not Zero for t in tangents]
    zeros = [None if m else t for t, m in zip(tangents, nz)]
    out_nz = []

    def jvp_program(*xs):
        it = iter(xs[n:])
        ts = [next(it) if z is None else z for z in zeros]
        po, to = ad.jvp_flat(lambda *a: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *a),
                             list(xs[:n]), ts)
        out_nz[:] = [type(t) is not Zero for t in to]
        return list(po) + [t for t in to if type(t) is not Zero]

    live = [t for t in tangents if type(t) is not Zero]
    in_avals = [core.get_aval(p) for p in primals] + [t.aval for t in live]
    closed, consts = trace_flat(jvp_program, in_avals, name="remat_jvp")
    outs = remat_p.bind(*consts, *primals, *live, jaxpr=closed, prevent_cse=prevent_cse,
                        differentiated=differentiated, policy=policy)
    m = len(jaxpr.out_avals)
    it = iter(outs[m:])
    touts = [next(it) if k else Zero(ad.tangent_aval(a))
             for k, a in zip(out_nz, jaxpr.out_avals)]
    return outs[:m], touts


ad.jvp_rules[remat_p] = _remat_jvp


def _remat_partial_eval(trace, args, params):
    """Split the program with the generic ``partial_eval_jaxpr`` under the policy (every
    higher-order equation inside is split by its own rule, applying the same policy to
    its sub-programs).  Known part: evaluated now (inline, under the parent trace),
    producing the primal outputs and the residuals the policy allows.  Unknown part:
    recorded in the linear program as a ``remat`` that first recomputes every other
    known value it needs, then does the tangent work."""
    policy = params["policy"] or _nothing_saveable
    unknown_in = [trace.is_unknown(a) for a in args]
    known, unknown, out_unknown, res_avals, res_fwd = jt.partial_eval_jaxpr(
        params["jaxpr"], unknown_in, False, policy=policy)
    known_args = [a for a, u in zip(args, unknown_in) if not u]
    with core.set_current_trace(trace.parent):
        kvals = eval_jaxpr(known.jaxpr, known.consts, *known_args)
    nk = len(kvals) - len(res_avals)
    known_outs, res = kvals[:nk], kvals[nk:]
    jt.note_residuals([r for r, f in zip(res, res_fwd) if f is None])  # not forwarded inputs
    atoms = [trace.to_atom(r) for r in res] + \
        [trace.to_atom(a) for a, u in zip(args, unknown_in) if u]
    tracers = trace.add_eqn(remat_p, atoms, list(unknown.out_avals),
                            dict(params, jaxpr=unknown, differentiated=True))
    unk_vals = iter(tracers)
    known_vals = iter(known_outs)
    return [next(unk_vals) if u else next(known_vals) for u in out_unknown]


ad.partial_eval_rules[remat_p] = _remat_partial_eval


def _remat_transpose(cts, *args, jaxpr, prevent_cse, differentiated, policy):
    """The backward program, itself under ``remat``: its recomputation stays inside a
    checkpoint boundary when staged (so a compiler cannot merge it with the forward)."""
    lin = [ad.is_undefined_primal(a) for a in args]
    known = [a for a, m in zip(args, lin) if not m]
    live_cts = [c for c in cts if type(c) is not Zero]
    ct_zero = [c if type(c) is Zero else None for c in cts]
    nonzero = []

    def bwd(*xs):
        ks, cs = iter(xs[:len(known)]), iter(xs[len(known):])
        full = [a if m else next(ks) for a, m in zip(args, lin)]
        full_cts = [z if z is not None else next(cs) for z in ct_zero]
        res = ad.backward_pass_partial(jaxpr.jaxpr, jaxpr.consts, full, full_cts)
        res = [r for r, m in zip(res, lin) if m]
        nonzero[:] = [type(r) is not Zero for r in res]
        return [r for r in res if type(r) is not Zero]

    in_avals = [core.get_aval(a) for a in known] + [core.get_aval(c) for c in live_cts]
    closed, consts = trace_flat(bwd, in_avals, name="remat_transpose")
    outs = iter(remat_p.bind(*consts, *known, *live_cts, jaxpr=closed, prevent_cse=prevent_cse,
                             differentiated=True, policy=policy))
    nz = iter(nonzero)
    return [(next(outs) if next(nz) else Zero(ad.tangent_aval(a.aval))) if m else None
            for a, m in zip(args, lin)]


ad.transpose_rules[remat_p] = _remat_transpose


def _remat_batch(axis_data, vals, dims, *, jaxpr, prevent_cse, differentiated, policy):
    new, out_dims = batching.batch_jaxpr(jaxpr, axis_data, list(dims))
    closed, consts = hoist_consts(new.jaxpr, new.consts)
    outs = remat_p.bind(*consts, *vals, jaxpr=closed, prevent_cse=prevent_cse,
                        differentiated=differentiated, policy=policy)
    return outs, out_dims


batching.batch_rules[remat_p] = _remat_batch

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
from interpreters.ad import Zero
from interpreters.core import Primitive
from interpreters.ir import ClosedJaxpr, Jaxpr, Literal, Var, eval_jaxpr
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


def _dce(eqns, outvars):
    """The equations (in order) needed to compute ``outvars``."""
    live = {v for v in outvars if isinstance(v, Var)}
    kept = []
    for e in reversed(eqns):
        if any(v in live for v in e.outvars) or getattr(e.primitive, "effectful", False):
            kept.append(e)
            live.update(a for a in e.invars if isinstance(a, Var))
    kept.reverse()
    return kept


def _pe_jaxpr(jaxpr, unknown_in, policy):
    """Split ``jaxpr`` given which inputs are unknown (tangents) under ``policy``.

    Returns ``(jaxpr_known, jaxpr_unknown, out_unknown, saved)``:
      * ``jaxpr_known``: known inputs -> known outputs + residuals computed by equations;
      * ``jaxpr_unknown``: ``saved`` + unknown inputs -> unknown outputs; it first
        recomputes every known value it needs that the policy did not let us save;
      * ``saved``: the residual variables (known inputs or known equation outputs).
    A nested ``remat`` with mixed inputs is split the same way, recursively, with
    its own policy.
    """
    unk = {v for v, u in zip(jaxpr.invars, unknown_in) if u}
    known_eqns, unk_eqns = [], []
    for e in jaxpr.eqns:
        ins_unk = [isinstance(a, Var) and a in unk for a in e.invars]
        if not any(ins_unk):
            known_eqns.append(e)
        elif e.primitive is remat_p and not all(ins_unk):
            ek, eu = _split_remat_eqn(e, ins_unk)
            known_eqns.append(ek)
            unk_eqns.append(eu)
            unk.update(eu.outvars)
        else:
            unk.update(e.outvars)
            unk_eqns.append(e)
    out_unknown = [isinstance(v, Var) and v in unk for v in jaxpr.outvars]
    unk_outs = [v for v, u in zip(jaxpr.outvars, out_unknown) if u]
    unk_eqns = _dce(unk_eqns, unk_outs)

    # Which known values the unknown side needs, and whether each is saved or
    # recomputed.  The checkpointed function's own inputs are always available.
    producer = {v: e for e in known_eqns for v in e.outvars}
    needed = [a for e in unk_eqns for a in e.invars if isinstance(a, Var) and a not in unk]
    saved, recompute, seen = [], set(), set()
    while needed:
        v = needed.pop()
        if v in seen:
            continue
        seen.add(v)
        e = producer.get(v)
        if e is None or policy(e.primitive, *[a.aval for a in e.invars], **e.params):
            saved.append(v)
        else:
            recompute.add(id(e))
            needed.extend(a for a in e.invars if isinstance(a, Var))
    invar_pos = {v: i for i, v in enumerate(jaxpr.invars)}
    saved.sort(key=lambda v: (v not in invar_pos, invar_pos.get(v, 0), v.id))

    known_invars = [v for v, u in zip(jaxpr.invars, unknown_in) if not u]
    known_outs = [v for v, u in zip(jaxpr.outvars, out_unknown) if not u]
    k_outvars = known_outs + [v for v in saved if v not in invar_pos]
    jaxpr_known = Jaxpr([], known_invars, k_outvars, _dce(known_eqns, k_outvars))
    unk_invars = [v for v, u in zip(jaxpr.invars, unknown_in) if u]
    rec_eqns = [e for e in known_eqns if id(e) in recompute]
    jaxpr_unknown = Jaxpr([], saved + unk_invars, unk_outs, rec_eqns + unk_eqns)
    return jaxpr_known, jaxpr_unknown, out_unknown, saved


def _split_remat_eqn(e, ins_unk):
    """A nested remat equation with mixed inputs -> (known eqn, unknown eqn)."""
    inner = e.params["jaxpr"].jaxpr
    jk, ju, out_unk, saved = _pe_jaxpr(inner, ins_unk, e.params["policy"] or _nothing_saveable)
    to_outer = dict(zip(inner.invars, e.invars))
    n_known_out = sum(not u for u in out_unk)
    new_res = [Var(v.aval) for v in jk.outvars[n_known_out:]]
    to_outer.update(zip(jk.outvars[n_known_out:], new_res))
    known_out = [o for o, u in zip(e.outvars, out_unk) if not u]
    ek = e.replace(invars=[a for a, u in zip(e.invars, ins_unk) if not u],
                   outvars=known_out + new_res,
                   params=dict(e.params, jaxpr=ClosedJaxpr(jk, [])))
    eu = e.replace(invars=[to_outer[v] for v in saved] +
                   [a for a, u in zip(e.invars, ins_unk) if u],
                   outvars=[o for o, u in zip(e.outvars, out_unk) if u],
                   params=dict(e.params, jaxpr=ClosedJaxpr(ju, []), differentiated=True))
    return ek, eu


def _remat_partial_eval(trace, args, params):
    """Known part: evaluated now (inline, under the parent trace), producing the
    primal outputs and the residuals the policy allows.  Unknown part: recorded in
    the linear program as a ``remat`` that recomputes the rest, then does the tangent
    work."""
    policy = params["policy"] or _nothing_saveable
    unknown_in = [trace.is_unknown(a) for a in args]
    jk, ju, out_unknown, saved = _pe_jaxpr(params["jaxpr"].jaxpr, unknown_in, policy)
    known_args = [a for a, u in zip(args, unknown_in) if not u]
    with core.set_current_trace(trace.parent):
        kvals = eval_jaxpr(jk, [], *known_args)
    env = dict(zip(jk.invars, known_args))
    env.update(zip(jk.outvars, kvals))
    atoms = [trace.to_atom(env[v]) for v in saved] + \
        [trace.to_atom(a) for a, u in zip(args, unknown_in) if u]
    tracers = trace.add_eqn(remat_p, atoms, [v.aval for v in ju.outvars],
                            dict(params, jaxpr=ClosedJaxpr(ju, []), differentiated=True))
    unk_vals = iter(tracers)
    known_vals = iter(kvals)
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

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


def _remat_partial_eval(trace, args, params):
    """Split into a known part (run now, saving what the policy allows) and an unknown
    part recorded in the linear program (recomputing the rest, then the tangents)."""
    jaxpr = params["jaxpr"].jaxpr
    policy = params["policy"] or _nothing_saveable
    unknown_in = [trace.is_unknown(a) for a in args]
    unk = {v for v, u in zip(jaxpr.invars, unknown_in) if u}
    known_eqns, unk_eqns = [], []
    for e in jaxpr.eqns:
        if any(isinstance(a, Var) and a in unk for a in e.invars):
            unk.update(e.outvars)
            unk_eqns.append(e)
        else:
            known_eqns.append(e)
    unk_outs = [v for v in jaxpr.outvars if isinstance(v, Var) and v in unk]
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

    # Known part: run now (under the parent trace) as a remat of its own.
    known_invars = [v for v, u in zip(jaxpr.invars, unknown_in) if not u]
    known_args = [a for a, u in zip(args, unknown_in) if not u]
    known_outs = [v for v in jaxpr.outvars if not (isinstance(v, Var) and v in unk)]
    res_from_eqns = [v for v in saved if v not in invar_pos]
    k_outvars = known_outs + res_from_eqns
    k_eqns = _dce(known_eqns, k_outvars)
    env = dict(zip(known_invars, known_args))
    if k_eqns:
        kjaxpr = Jaxpr([], known_invars, k_outvars, k_eqns)
        with core.set_current_trace(trace.parent):
            vals = remat_p.bind(*known_args, **dict(params, jaxpr=ClosedJaxpr(kjaxpr, [])))
    else:
        vals = [a.val if isinstance(a, Literal) else env[a] for a in k_outvars]
    env.update(zip(k_outvars, vals))

    # Unknown part: residuals + unknown inputs -> recompute, then tangent work.
    unk_invars = [v for v, u in zip(jaxpr.invars, unknown_in) if u]
    rec_eqns = [e for e in known_eqns if id(e) in recompute]
    ujaxpr = Jaxpr([], saved + unk_invars, unk_outs, rec_eqns + unk_eqns)
    atoms = [trace.to_atom(env[v]) for v in saved] + \
        [trace.to_atom(a) for a, u in zip(args, unknown_in) if u]
    tracers = trace.add_eqn(remat_p, atoms, [v.aval for v in unk_outs],
                            dict(params, jaxpr=ClosedJaxpr(ujaxpr, []), differentiated=True))
    unk_env = dict(zip(unk_outs, tracers))
    out = []
    for v in jaxpr.outvars:
        if isinstance(v, Literal):
            out.append(v.val)
        elif v in unk_env:
            out.append(unk_env[v])
        else:
            out.append(env[v])
    return out


ad.partial_eval_rules[remat_p] = _remat_partial_eval


def _remat_transpose(cts, *args, jaxpr, prevent_cse, differentiated, policy):
    return ad.backward_pass_partial(jaxpr.jaxpr, jaxpr.consts, list(args), list(cts))


ad.transpose_rules[remat_p] = _remat_transpose


def _remat_batch(axis_data, vals, dims, *, jaxpr, prevent_cse, differentiated, policy):
    new, out_dims = batching.batch_jaxpr(jaxpr, axis_data, list(dims))
    closed, consts = hoist_consts(new.jaxpr, new.consts)
    outs = remat_p.bind(*consts, *vals, jaxpr=closed, prevent_cse=prevent_cse,
                        differentiated=differentiated, policy=policy)
    return outs, out_dims


batching.batch_rules[remat_p] = _remat_batch

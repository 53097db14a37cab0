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

from xform._src.interpreters import ad, batching, core, dtypes, ir, passes
from xform._src.interpreters import jaxpr_transforms as jt
from xform._src.interpreters.ad import Zero
from xform._src.interpreters.core import Primitive, ShapedArray
from xform._src.interpreters.ir import ClosedJaxpr, Eqn, Jaxpr, Var, eval_jaxpr
from xform._src.primitives._rules import defvectorized
from xform._src.primitives.custom import hoist_consts, trace_flat
from xform._src.primitives.misc import reduce_precision_p

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
remat_p.pp_name = "remat2"   # JAX prints checkpoint equations as remat2
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
    its sub-programs).  Known part: producing the primal outputs and the residuals the
    policy allows.  Unknown part: recorded in the linear program as a ``remat`` that
    first recomputes every other known value it needs, then does the tangent work.

    The recorded ``remat`` takes its operands in JAX's order (``remat_partial_eval``
    over ``partial_eval_jaxpr_custom``): first the *computed* residuals (saved
    intermediates), in the order the staged program first reads them; then the
    program's own inputs it reads -- known (primal) and unknown alike -- in the order of
    the program's inputs.  Inputs it does not read are not passed.

    Where the known part goes depends on whether an enclosing ``checkpoint`` is being
    split (as in JAX, where the outermost split is ``remat_partial_eval`` and everything
    inside it is split by ``partial_eval_jaxpr_custom``'s rules):

    * outermost: the known part is evaluated now, inline (under the parent trace), and
      its floating-point residuals that it also reads go through ``reduce_precision`` to
      their own format (see ``_insert_reduce_precision``);
    * inside an enclosing split (``call_partial_eval_custom_rule`` for ``remat2``): the
      split applies the *enclosing* policy (this checkpoint's own is not consulted, as
      JAX's rule passes its ``saveable`` down), and the known part stays a checkpoint: a
      ``remat`` equation (this equation's params, ``differentiated`` unchanged) computing
      the known outputs and the residuals, which the enclosing split always saves.  No
      rounding there (the enclosing checkpoint rounds its own residuals)."""
    nested = jt.current_policy() is not None
    policy = None if nested else (params["policy"] or _nothing_saveable)
    unknown_in = [trace.is_unknown(a) for a in args]
    known, unknown, out_unknown, res_avals, res_fwd = jt.partial_eval_jaxpr(
        params["jaxpr"], unknown_in, False, policy=policy)
    nres = len(res_avals)
    nk = len(known.jaxpr.outvars) - nres
    key = (id(known), id(unknown), tuple(unknown_in), nested)
    hit = _layout_memo.get(key)
    if hit is None:
        kjaxpr, ujaxpr, n_computed, in_used = _jax_operand_order(
            known.jaxpr, unknown.jaxpr, nk, res_fwd, unknown_in)
        if not nested:
            kjaxpr = _insert_reduce_precision(kjaxpr, n_computed)
        kept = None
        if nested and kjaxpr.eqns:
            # the known remat's program: const-free, reading only the inputs it uses
            kjaxpr, kept = passes.dce_jaxpr(kjaxpr, prune_invars=True)
            kjaxpr = ClosedJaxpr(Jaxpr([], list(kjaxpr.constvars) + list(kjaxpr.invars),
                                       kjaxpr.outvars, kjaxpr.eqns, kjaxpr.debug_info), [])
        hit = (kjaxpr, ClosedJaxpr(ujaxpr, []), in_used, kept)
        if jt._cacheable(known):    # (the split is memoised on the same condition)
            _layout_memo.put(key, (known, unknown), hit)
    kjaxpr, uclosed, in_used, kept = hit
    known_args = [a for a, u in zip(args, unknown_in) if not u]
    with core.set_current_trace(trace.parent):
        if kept is None:
            kvals = eval_jaxpr(kjaxpr, known.consts, *known_args)
        else:
            kargs = [a for a, k in zip(known_args, kept) if k]
            kvals = remat_p.bind(*known.consts, *kargs, jaxpr=kjaxpr,
                                 prevent_cse=params["prevent_cse"],
                                 differentiated=params["differentiated"],
                                 policy=params["policy"])
    known_outs, res = kvals[:nk], kvals[nk:]
    jt.note_residuals(res)   # computed here (inputs are passed as themselves)
    atoms = [trace.to_atom(r) for r in res] + \
        [trace.to_atom(a) for a, used in zip(args, in_used) if used]
    tracers = trace.add_eqn(remat_p, atoms, list(unknown.out_avals),
                            dict(params, jaxpr=uclosed, differentiated=True))
    if kept is not None:
        jt.recompute_after(known_outs, tracers)
    unk_vals = iter(tracers)
    known_vals = iter(known_outs)
    return [next(unk_vals) if u else next(known_vals) for u in out_unknown]


ad.partial_eval_rules[remat_p] = _remat_partial_eval


def _remat_inline(eqn):
    """The equations of a ``remat`` equation's program computing its outputs from its
    operands (fresh inner variables): what an enclosing split's recomputation copies
    instead of the whole known checkpoint (``jt.recompute_inline_rules``).  ``None``
    (copy it whole) when an output is not computed by an equation of the program."""
    closed = eqn.params["jaxpr"]
    j = closed.jaxpr
    if closed.consts or j.constvars:
        return None
    produced = {v for e in j.eqns for v in e.outvars}
    if not all(isinstance(v, Var) and v in produced for v in j.outvars) or \
            len(set(j.outvars)) != len(j.outvars):
        return None
    env = dict(zip(j.invars, eqn.invars))
    env.update(zip(j.outvars, eqn.outvars))

    def sub(a):
        return env.get(a, a) if isinstance(a, Var) else a
    out = []
    for e in j.eqns:
        outs = []
        for v in e.outvars:
            if v not in env:
                env[v] = Var(v.aval)
            outs.append(env[v])
        out.append(e.replace(invars=[sub(a) for a in e.invars], outvars=outs,
                             params=_mark_differentiated(e)))
    return out


def _mark_differentiated(eqn):
    """The params of an equation of a recomputed known checkpoint, as JAX has it there:
    every checkpoint nested in it (in any sub-program) is the known half of a *staged*
    (``differentiated=True``) equation, so ``differentiated=True``."""
    params = passes._map_subjaxprs(eqn.params, _mark_program)
    if eqn.primitive is remat_p:
        params = dict(params, differentiated=True)
    return params


def _mark_program(p):
    closed = isinstance(p, ClosedJaxpr)
    j = p.jaxpr if closed else p
    eqns = []
    for e in j.eqns:
        params = _mark_differentiated(e)
        same = all(params.get(k) is v for k, v in e.params.items())
        eqns.append(e if same else e.replace(params=params))
    if all(a is b for a, b in zip(eqns, j.eqns)):
        return p                        # no checkpoint inside: the same program
    new = Jaxpr(j.constvars, j.invars, j.outvars, eqns, j.debug_info)
    return ClosedJaxpr(new, p.consts) if closed else new


jt.recompute_inline_rules[remat_p] = _remat_inline


def _remat_dce(eqn, used_outputs):
    """Prune the program's unused outputs and then its unused operands (JAX's
    ``remat_dce``): the known checkpoint an enclosing split keeps returns only what the
    enclosing known program reads."""
    closed = eqn.params["jaxpr"]
    inner, used_inputs = passes.dce_jaxpr(closed.jaxpr, used_outputs, prune_invars=True)
    if not any(used_outputs) and not passes.has_effects(inner):
        return None, [False] * len(eqn.invars)
    new_eqn = eqn.replace(
        invars=[a for a, u in zip(eqn.invars, used_inputs) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
        params=dict(eqn.params, jaxpr=passes.prune_consts(inner, closed.consts)))
    return new_eqn, used_inputs


passes.call_dce_rules[remat_p] = _remat_dce
_layout_memo = jt.Memo()


def _jax_operand_order(kjaxpr, ujaxpr, nk, res_fwd, unknown_in):
    """Re-lay a split (``kjaxpr``: known inputs -> [known outputs, residuals];
    ``ujaxpr``: [residuals, unknown inputs] -> unknown outputs) into JAX's remat layout.

    Residuals that are just known inputs (``res_fwd``) stop being residuals and become
    inputs again; the same known value saved twice is passed once; unread residuals and
    inputs are dropped.  Returns ``(kjaxpr', ujaxpr', n_computed, in_used)``: the known
    program outputs [known outputs, computed residuals], the unknown one takes [computed
    residuals in first-read order, the inputs it reads in input order]; ``in_used[i]``:
    the unknown program reads input ``i``."""
    nres = len(res_fwd)
    res_vars = ujaxpr.invars[:nres]
    unk_vars = iter(ujaxpr.invars[nres:])
    res_atoms = kjaxpr.outvars[nk:]
    # where each residual binder's value comes from
    rep = {}                                    # residual binder -> representative binder
    computed_rep = {}                           # known atom -> first binder
    input_rep = {}                              # known input index -> first binder
    for rv, atom, f in zip(res_vars, res_atoms, res_fwd):
        if f is not None:
            rep[rv] = input_rep.setdefault(f, rv)
        elif isinstance(atom, Var):
            rep[rv] = computed_rep.setdefault(atom, rv)
        else:
            rep[rv] = rv
    order, seen = [], set()

    def read(a):
        if isinstance(a, Var):
            a = rep.get(a, a)
            if a not in seen:
                seen.add(a)
                order.append(a)
        return a

    eqns = [e.replace(invars=[read(a) if isinstance(a, Var) else a for a in e.invars])
            for e in ujaxpr.eqns]
    outvars = [read(a) if isinstance(a, Var) else a for a in ujaxpr.outvars]
    forwarded = set(input_rep.values())
    atom_of = {rv: atom for rv, atom in zip(res_vars, res_atoms)}
    computed = [v for v in order if v in atom_of and v not in forwarded]
    invars, in_used, kin = list(computed), [], 0
    for u in unknown_in:
        if u:
            v = next(unk_vars)
        else:
            v = input_rep.get(kin)
            kin += 1
        used = v is not None and v in seen
        in_used.append(used)
        if used:
            invars.append(v)
    new_u = Jaxpr([], invars, outvars, eqns, ujaxpr.debug_info)
    new_k = Jaxpr(kjaxpr.constvars, kjaxpr.invars,
                  kjaxpr.outvars[:nk] + [atom_of[v] for v in computed], kjaxpr.eqns,
                  kjaxpr.debug_info)
    new_k, _ = passes.dce_jaxpr(new_k)
    return new_k, new_u, len(computed), in_used


def _insert_reduce_precision(jaxpr, nres):
    """Round each real floating-point residual that the known program itself goes on
    using to its own format: ``v = reduce_precision[exponent_bits=e mantissa_bits=m] v'``
    right after the equation computing it (JAX's ``_insert_reduce_precision``, jax PR
    #22244).  XLA may keep a value in excess precision where it feeds further computation
    (e.g. bf16 arithmetic carried out in f32 inside a fusion) but must round what it
    stores; without the explicit rounding, the forward pass could continue from a more
    precise value than the residual the backward pass recomputes from.  Rounding it once,
    and reading the rounded value both in the forward pass and as the residual, makes the
    two agree.  Residuals no known equation reads are only stored (always rounded), so
    they are left alone.  (JAX also applies it to complex residuals, where its own
    ``reduce_precision`` raises TypeError; complex ones are skipped here.)"""
    res = jaxpr.outvars[len(jaxpr.outvars) - nres:]
    read = {a for e in jaxpr.eqns for a in e.invars if isinstance(a, Var)}
    producer = {v: e for e in jaxpr.eqns for v in e.outvars}
    rounds = {}                                 # residual var -> params
    for v in res:
        if not isinstance(v, Var) or v in rounds or v not in read or v not in producer:
            continue
        aval = v.aval
        if not isinstance(aval, ShapedArray) or not dtypes.is_float(aval.dtype):
            continue
        fi = dtypes.finfo(aval.dtype)
        p = dict(exponent_bits=int(fi.nexp), mantissa_bits=int(fi.nmant))
        e = producer[v]
        if e.primitive is reduce_precision_p and e.params == p:
            continue
        rounds[v] = p
    if not rounds:
        return jaxpr
    eqns = []
    for e in jaxpr.eqns:
        hits = [v for v in e.outvars if v in rounds]
        if not hits:
            eqns.append(e)
            continue
        raw = {v: Var(v.aval) for v in hits}
        eqns.append(e.replace(outvars=[raw.get(v, v) for v in e.outvars]))
        eqns.extend(Eqn(reduce_precision_p, [raw[v]], [v], rounds[v], e.source_info)
                    for v in hits)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns, jaxpr.debug_info)


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

"""Program-to-program transformations for higher-order primitives (cond, while, scan, ...).

Each takes a ``ClosedJaxpr`` and returns new ``ClosedJaxpr``s built by evaluating
the program under a transformation inside ``trace_to_jaxpr`` -- the same
interpreters users run, so a primitive's rules never duplicate them:

* ``jvp_jaxpr``:          (primals, nonzero tangents) -> (primals out, nonzero tangents out)
* ``partial_eval_jaxpr``: split into a known program (known inputs -> known outputs +
                          residuals) and an unknown one (residuals + unknown inputs ->
                          unknown outputs)
* ``transpose_jaxpr``:    (non-linear inputs, output cotangents) -> linear inputs' cotangents
* ``batch_jaxpr``:        ``batching.batch_jaxpr`` (re-exported)

The programs returned may hold constants (concrete arrays made while tracing, never
tracers: the input program is evaluated on fresh inputs only).  ``permute`` and
``hoist`` are small structural helpers.  Results are memoised on the program's
identity and the masks, so a loop over ``grad(f)`` re-uses them.
"""
from __future__ import annotations

import collections
import contextlib
import threading

from xform._src.interpreters import ad, core
from xform._src.interpreters.ad import Zero
from xform._src.interpreters.batching import batch_jaxpr  # noqa: F401  (re-exported)
from xform._src.interpreters.ir import ClosedJaxpr, Jaxpr, Var, eval_jaxpr
from xform._src.interpreters.staging import StagingTrace, convert_constvars_to_invars, trace_to_jaxpr
from xform._src.interpreters import passes
from xform._src.interpreters.ir import Literal
from xform._src.interpreters.staging import StagingTracer


class Memo:
    """LRU keyed on (id(program), ...) that keeps ``keep`` (the program) alive, so the ids
    in live keys are never reused.  Values that close over tracers belong to one trace
    and are returned without being stored."""

    def __init__(self, maxsize=512):
        self.d = collections.OrderedDict()
        self.maxsize = maxsize

    def get(self, key):
        v = self.d.get(key)
        if v is None:
            return None
        self.d.move_to_end(key)
        return v[1]

    def put(self, key, keep, value):
        if not _cacheable(value):
            return value
        self.d[key] = (keep, value)
        if len(self.d) > self.maxsize:
            self.d.popitem(last=False)
        return value

    def clear(self):
        self.d.clear()


def _cacheable(value):
    """Programs closing over tracers belong to one trace and must not be memoised."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, ClosedJaxpr):
            if any(isinstance(c, core.Tracer) for c in v.consts):
                return False
        elif isinstance(v, (tuple, list)):
            stack.extend(v)
    return True


def _closed(jaxpr, consts):
    return ClosedJaxpr(jaxpr, consts)


def hoist(closed: ClosedJaxpr):
    """(program with constants) -> (const-free program taking them first, the constants)."""
    return ClosedJaxpr(convert_constvars_to_invars(closed.jaxpr), []), list(closed.consts)


def permute(closed: ClosedJaxpr, in_order=None, out_order=None) -> ClosedJaxpr:
    """Reorder inputs/outputs: new input k is old input ``in_order[k]`` (same for outputs)."""
    j = closed.jaxpr
    invars = j.invars if in_order is None else [j.invars[i] for i in in_order]
    outvars = j.outvars if out_order is None else [j.outvars[i] for i in out_order]
    return ClosedJaxpr(Jaxpr(j.constvars, invars, outvars, j.eqns, j.debug_info), closed.consts)


def with_extra_inputs(closed: ClosedJaxpr, avals, at: int) -> ClosedJaxpr:
    """The same program taking (and ignoring) extra inputs of ``avals`` at position ``at``."""
    j = closed.jaxpr
    extra = [Var(a) for a in avals]
    invars = list(j.invars[:at]) + extra + list(j.invars[at:])
    return ClosedJaxpr(Jaxpr(j.constvars, invars, j.outvars, j.eqns, j.debug_info), closed.consts)


def _fun(closed):
    return lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs)


# ----------------------------------------------------------------- JVP

_jvp_memo = Memo()


def jvp_jaxpr(closed: ClosedJaxpr, nonzeros, instantiate):
    """JVP of a program.  ``nonzeros[i]``: input i has a (non-symbolic-zero) tangent;
    ``instantiate`` (bool or one per output): return a tangent for that output even
    if it is zero.  Non-differentiable (int/bool) inputs and outputs never carry one.

    Returns ``(jvp program, out_nonzeros)``; the program maps
    ``[*primals, *nonzero tangents] -> [*primals_out, *nonzero tangents_out]``.
    """
    in_avals = closed.in_avals
    nonzeros = tuple(bool(n) and ad.is_differentiable(a) for n, a in zip(nonzeros, in_avals))
    if isinstance(instantiate, bool):
        instantiate = (instantiate,) * len(closed.out_avals)
    instantiate = tuple(bool(i) for i in instantiate)
    key = (id(closed), nonzeros, instantiate)
    hit = _jvp_memo.get(key)
    if hit is not None:
        return hit
    n = len(in_avals)
    out_nz = []

    def fun(*xs):
        it = iter(xs[n:])
        ts = [next(it) if nz else Zero(ad.tangent_aval(a)) for a, nz in zip(in_avals, nonzeros)]
        po, to = ad.jvp_flat(_fun(closed), list(xs[:n]), ts)
        outs_t = []
        for p, t, inst in zip(po, to, instantiate):
            diff = ad.is_differentiable(core.get_aval(p))
            if not diff or (type(t) is Zero and not inst):
                outs_t.append(None)
            else:
                outs_t.append(ad.instantiate(t) if type(t) is Zero else t)
        out_nz[:] = [t is not None for t in outs_t]
        return list(po) + [t for t in outs_t if t is not None]

    avals = list(in_avals) + [ad.tangent_aval(a) for a, nz in zip(in_avals, nonzeros) if nz]
    jaxpr, consts = trace_to_jaxpr(fun, avals, name="jvp")
    return _jvp_memo.put(key, closed, (_closed(jaxpr, consts), tuple(out_nz)))


# ----------------------------------------------------------------- partial evaluation

_pe_memo = Memo()


class _PolicyState(threading.local):
    """The rematerialisation policy of the innermost ``partial_eval_jaxpr`` split that is
    running (``None``: save every residual), and the residual values that splits of
    nested sub-programs produced under it (already chosen by the policy: kept saved),
    and where a recomputation of a nested split's known values goes (``recompute_after``)."""

    def __init__(self):
        self.policy = None
        self.chosen = None
        self.after = None


_policy_state = _PolicyState()


# What a policy may answer besides True/False, with JAX's names: ``Recompute`` (do not
# save), ``Saveable`` (save), ``Offloadable(src, dst)`` (save in another memory; xform
# has one memory space per device, so the value is saved where it is).
class RecomputeType:
    def __repr__(self):
        return "Recompute"


class SaveableType:
    def __repr__(self):
        return "Saveable"


Recompute = RecomputeType()
Saveable = SaveableType()


class Offloadable(__import__("typing").NamedTuple):
    src: str
    dst: str


def policy_saves(answer) -> bool:
    """A policy's answer as save (True) or recompute (False)."""
    if isinstance(answer, RecomputeType):
        return False
    if isinstance(answer, (SaveableType, Offloadable)):
        return True
    return bool(answer)


def current_policy():
    """The remat policy sub-program splits must apply (``None`` outside ``checkpoint``)."""
    return _policy_state.policy


@contextlib.contextmanager
def _policy_scope(policy):
    st = _policy_state
    prev = st.policy, st.chosen, st.after
    st.policy, st.chosen = policy, (set() if policy is not None else None)
    st.after = {} if policy is not None else None
    try:
        yield st.chosen
    finally:
        st.policy, st.chosen, st.after = prev


def no_policy():
    """A scope in which no remat policy applies (a fresh ``linearize``)."""
    return _policy_scope(None)


def note_residuals(vals):
    """Called by partial-evaluation rules of higher-order primitives for the residuals
    their known part outputs: under a policy they were chosen by it (inside the
    sub-program), so the enclosing split saves them rather than recomputing the
    whole known equation (as JAX's ``partial_eval_jaxpr_custom`` rules do)."""
    chosen = _policy_state.chosen
    if chosen is None:
        return
    for v in vals:
        if isinstance(v, StagingTracer):
            chosen.add(v._var)


def recompute_after(known_vals, staged_vals):
    """Called by a partial-evaluation rule that keeps its known half whole in the known
    program (``known_vals``: its outputs) and records its staged half (``staged_vals``):
    where the enclosing split's unknown program recomputes one of those known values, the
    recomputation goes right after the staged half.  (In JAX those values are outputs of
    the staged half, so the unknown program reads the nested split's residuals -- in
    their order -- before anything recomputed from them.)"""
    after = _policy_state.after
    if after is None:
        return
    ids = [v._var.id for v in staged_vals if isinstance(v, StagingTracer)]
    if not ids:
        return
    key = max(ids) + 0.5
    for v in known_vals:
        if isinstance(v, StagingTracer):
            after[v._var] = key


def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns, instantiate, policy=None):
    """Split a program by which inputs are unknown (depend on tangents).

    Evaluates it with an ``ad.LinearizeTrace`` nested in a ``StagingTrace``: operations
    on known values are recorded by the outer (known program), the rest by the inner
    (unknown program); known values the unknown part uses become residuals.
    Higher-order equations are split by their own ``ad.partial_eval_rules``, which call
    this function on their sub-programs.
    ``instantiate`` (bool or per output) forces an output into the unknown program.

    ``policy`` (a ``checkpoint`` policy ``policy(prim, *in_avals, **params) -> bool``;
    default: the enclosing split's, if any) chooses which residuals are saved: a
    residual computed by an equation the policy does not allow to be saved is instead
    *recomputed* at the start of the unknown program from saved values and the known
    inputs (which are always available).  Sub-program splits made while this one runs
    apply the same policy.

    Returns ``(known, unknown, out_unknowns, res_avals, res_fwd)``:
      known:   [known inputs] -> [known outputs, residuals]
      unknown: [residuals, unknown inputs] -> [unknown outputs]
      res_fwd[k]: index among the known inputs when residual k is just that input
                  (callers may pass the input instead of saving it), else None.
    """
    if policy is None:
        policy = _policy_state.policy
    in_avals = closed.in_avals
    unknowns = tuple(bool(u) for u in unknowns)
    if isinstance(instantiate, bool):
        instantiate = (instantiate,) * len(closed.out_avals)
    instantiate = tuple(bool(i) for i in instantiate)
    key = (id(closed), unknowns, instantiate, policy)
    hit = _pe_memo.get(key)
    if hit is not None:
        return hit
    known_trace = StagingTrace(core.current_trace(), name="known")
    kin = [known_trace.new_arg(a) for a, u in zip(in_avals, unknowns) if not u]
    lin = ad.LinearizeTrace(known_trace, name="unknown")
    uin = [lin.new_arg(a) for a, u in zip(in_avals, unknowns) if u]
    kit, uit = iter(kin), iter(uin)
    args = [next(uit) if u else next(kit) for u in unknowns]
    try:
        with _policy_scope(policy) as chosen:
            after = _policy_state.after
            with core.running(lin):
                outs = eval_jaxpr(closed.jaxpr, closed.consts, *args)
            out_uk = tuple(lin.is_unknown(o) or inst for o, inst in zip(outs, instantiate))
            ujaxpr, residuals = lin.to_jaxpr([o for o, u in zip(outs, out_uk) if u])
            known_outs = [o for o, u in zip(outs, out_uk) if not u]
            kjaxpr, kconsts = known_trace.to_jaxpr(known_outs + list(residuals))
    finally:
        lin.invalidate()
        known_trace.invalidate()
    unknown = Jaxpr([], list(ujaxpr.constvars) + list(ujaxpr.invars), ujaxpr.outvars,
                    ujaxpr.eqns, ujaxpr.debug_info)
    const_res = _input_independent(kjaxpr, kjaxpr.outvars[len(known_outs):])
    if policy is not None or const_res:
        kjaxpr, unknown = _rematerialize(kjaxpr, unknown, len(known_outs), len(residuals),
                                         policy or _save_all, chosen or set(), const_res,
                                         after or {})
    nres = len(kjaxpr.outvars) - len(known_outs)
    kpos = {v: i for i, v in enumerate(kjaxpr.invars)}
    res_fwd = tuple(kpos.get(r) if isinstance(r, Var) else None
                    for r in kjaxpr.outvars[len(known_outs):])
    res_avals = tuple(v.aval for v in unknown.invars[:nres])
    out = (_closed(kjaxpr, kconsts), ClosedJaxpr(unknown, []), out_uk, res_avals, res_fwd)
    return _pe_memo.put(key, closed, out)


def _save_all(*_, **__):
    return True


def _input_independent(kjaxpr, residuals) -> frozenset:
    """Residuals (and what they are computed from) that depend on no input of the known
    program: values built from literals alone, like ``broadcast_in_dim 1.1``.  Saving
    them would store a constant per loop iteration; the unknown program recomputes them
    instead (they cost nothing to rebuild and XLA folds them)."""
    indep = set()
    for e in kjaxpr.eqns:
        if (e.outvars and not passes.eqn_effectful(e)
                and all(type(a) is Literal or a in indep for a in e.invars)
                and not any(isinstance(v, ClosedJaxpr) for v in e.params.values())):
            indep.update(e.outvars)
    if not any(isinstance(r, Var) and r in indep for r in residuals):
        return frozenset()
    return frozenset(indep)


# prim -> fn(eqn) -> [Eqn] or None.  A known equation that holds its own program (the
# known half of a nested ``checkpoint``, kept whole in the known program as JAX's
# ``partial_eval_jaxpr_custom`` keeps it) is not copied whole when the unknown program
# must recompute one of its outputs: the rule returns equations computing the same
# ``eqn.outvars`` from ``eqn.invars`` (its program inlined, fresh inner variables), which
# the recomputation copies one by one like any other known equation.  (JAX gets those
# outputs from the staged half of the split, which its transpose evaluates inline.)
recompute_inline_rules: dict = {}


def _inline_for_recompute(eqns, after):
    """``[(key, equation)]``: ``eqns`` with the equations that have a
    ``recompute_inline_rules`` entry replaced by their inlined bodies, keyed (for
    ``_interleave``) on the original equation, so they go where it was traced -- or
    right after its staged half (``after``, see ``recompute_after``)."""
    out = []
    for e in eqns:
        rule = recompute_inline_rules.get(e.primitive)
        body = rule(e) if rule is not None else None
        if body is None:
            out.append((e, e))
        else:
            key = next((after[v] for v in e.outvars if v in after), e)
            out.extend((key, b) for b in body)
    return out


def _inline_in_subprograms(eqn):
    """A recomputed copy of a known equation holding programs (a scan, cond, jit, ...):
    the kept-whole known checkpoints inside them are inlined too.  (JAX recomputes the
    staged half of such an equation, whose transpose splits it again with that
    primitive's own partial evaluation, where a nested checkpoint's known part is
    evaluated inline.)"""
    if not recompute_inline_rules or not any(True for _ in passes._subjaxprs(eqn.params)):
        return eqn

    def program(p):
        closed = isinstance(p, ClosedJaxpr)
        j = p.jaxpr if closed else p
        eqns = [_inline_in_subprograms(e) for _, e in _inline_for_recompute(j.eqns, {})]
        if len(eqns) == len(j.eqns) and all(a is b for a, b in zip(eqns, j.eqns)):
            return p                    # nothing inside: the same program (memos hold)
        new = Jaxpr(j.constvars, j.invars, j.outvars, eqns, j.debug_info)
        return ClosedJaxpr(new, p.consts) if closed else new
    params = passes._map_subjaxprs(eqn.params, program)
    if all(params[k] is v for k, v in eqn.params.items()):
        return eqn
    return eqn.replace(params=params)


def _rematerialize(kjaxpr, ujaxpr, n_known_outs, nres, policy, chosen, recompute_vars=(),
                   after=None):
    """Apply a checkpoint policy to a split.

    ``kjaxpr``: known inputs -> [known outputs, residuals]; ``ujaxpr``: [residuals,
    unknown inputs] -> unknown outputs.  A residual is *saved* when it is a known input
    or constant, a residual chosen by a nested split, an effectful equation's output,
    or the output of an equation the policy allows; otherwise (and always for
    ``recompute_vars``, values computed from literals alone) its equation is copied
    (with fresh variables) to the front of the unknown program, recursively (an equation
    with a ``recompute_inline_rules`` entry is looked through: its inlined equations are
    the producers).  Returns the new pair, the known program now returning [known
    outputs, saved values].
    """
    flat = _inline_for_recompute(kjaxpr.eqns, after or {})
    producer = {v: e for _, e in flat for v in e.outvars}
    free = set(kjaxpr.invars) | set(kjaxpr.constvars)
    res_atoms = kjaxpr.outvars[n_known_outs:]
    saved, saved_set, recompute, seen = [], set(), set(), set()
    stack = [a for a in reversed(res_atoms) if isinstance(a, Var)]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        e = producer.get(v)
        if v not in recompute_vars and (
                v in free or v in chosen or passes.eqn_effectful(e)
                or policy_saves(policy(e.primitive, *[a.aval for a in e.invars],
                                       **e.params))):
            saved.append(v)
            saved_set.add(v)
        else:
            recompute.add(id(e))
            stack.extend(a for a in reversed(e.invars) if isinstance(a, Var))
    if not recompute:
        return kjaxpr, ujaxpr
    # Unknown program: [saved, unknown inputs] -> recomputation + the unknown equations.
    env = {v: Var(v.aval) for v in saved}

    def sub(a):
        return a if type(a) is Literal else env.get(a, a)
    rec = []
    for key, e in flat:
        if id(e) in recompute:
            ins = [sub(a) for a in e.invars]
            outs = [Var(o.aval) for o in e.outvars]
            env.update(zip(e.outvars, outs))
            copy = e.replace(invars=ins, outvars=outs)
            rec.append((key, copy if key is not e else _inline_in_subprograms(copy)))
    uenv = {uv: sub(r) for uv, r in zip(ujaxpr.invars[:nres], res_atoms)}

    def usub(a):
        return a if type(a) is Literal else uenv.get(a, a)
    unk = [(e, e.replace(invars=[usub(a) for a in e.invars])) for e in ujaxpr.eqns]
    eqns = _interleave(rec, unk)
    unknown = Jaxpr([], [env[v] for v in saved] + list(ujaxpr.invars[nres:]),
                    [usub(a) for a in ujaxpr.outvars], eqns, ujaxpr.debug_info)
    known = Jaxpr(kjaxpr.constvars, kjaxpr.invars, kjaxpr.outvars[:n_known_outs] + saved,
                  kjaxpr.eqns, kjaxpr.debug_info)
    known, _ = passes.dce_jaxpr(known)
    return known, unknown


def _interleave(rec, unk):
    """The recomputed known equations and the unknown ones, each list already in the order
    the split traced them, merged into that one traced order (as JAX's
    ``partial_eval_jaxpr_custom`` stages them: every equation in program order).  Variables
    are numbered as they are created and an equation's outputs are created when it is
    recorded, so the (original) outputs' numbers order the two lists; a recomputed value
    is always recorded before the unknown equations that read it, so the merge is a valid
    program order.  Items are ``(original equation, equation to emit)``, or ``(position,
    equation to emit)`` with an explicit position (``recompute_after``)."""
    def keyed(items):
        out, last = [], -1
        for orig, new in items:
            if isinstance(orig, (int, float)):      # an explicit position
                out.append((orig, new))
                continue
            ids = [v.id for v in orig.outvars]
            last = min(ids) if ids else last
            out.append((last, new))
        return out
    a, b = keyed(rec), keyed(unk)
    merged, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        if j == len(b) or (i < len(a) and a[i][0] <= b[j][0]):
            merged.append(a[i][1])
            i += 1
        else:
            merged.append(b[j][1])
            j += 1
    return merged


# ----------------------------------------------------------------- transposition

_transpose_memo = Memo()


def transpose_jaxpr(closed: ClosedJaxpr, linear):
    """Transpose a program linear in the inputs marked by ``linear``.

    Returns a program ``[*non-linear inputs, *cotangents of all outputs] ->
    [*cotangents of the linear inputs]`` (zeros instantiated, so every branch of
    a cond has the same signature).
    """
    linear = tuple(bool(x) for x in linear)
    key = (id(closed), linear)
    hit = _transpose_memo.get(key)
    if hit is not None:
        return hit
    in_avals = closed.in_avals
    known_avals = [a for a, lin in zip(in_avals, linear) if not lin]
    ct_avals = [ad.tangent_aval(a) for a in closed.out_avals]
    nk = len(known_avals)

    def fun(*xs):
        kit = iter(xs[:nk])
        args = [ad.UndefinedPrimal(a) if lin else next(kit) for a, lin in zip(in_avals, linear)]
        cts = ad.backward_pass_partial(closed.jaxpr, closed.consts, args, list(xs[nk:]))
        return [ad.instantiate(c if c is not None else Zero(ad.tangent_aval(a)))
                for c, a, lin in zip(cts, in_avals, linear) if lin]

    jaxpr, consts = trace_to_jaxpr(fun, known_avals + ct_avals, name="transpose")
    return _transpose_memo.put(key, closed, _closed(jaxpr, consts))

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

from interpreters import ad, core
from interpreters.ad import Zero
from interpreters.batching import batch_jaxpr  # noqa: F401  (re-exported)
from interpreters.ir import ClosedJaxpr, Jaxpr, Var, eval_jaxpr
from interpreters.staging import StagingTrace, convert_constvars_to_invars, trace_to_jaxpr


class _Memo:
    """LRU keyed on (id(program), masks) that keeps the program alive (ids stay unique)."""

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

_jvp_memo = _Memo()


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

_pe_memo = _Memo()


def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns, instantiate):
    """Split a program by which inputs are unknown (depend on tangents).

    Evaluates it with an ``ad.LinearizeTrace`` nested in a ``StagingTrace``: operations
    on known values are recorded by the outer (known program), the rest by the inner
    (unknown program); known values the unknown part uses become residuals.
    ``instantiate`` (bool or per output) forces an output into the unknown program.

    Returns ``(known, unknown, out_unknowns, res_avals, res_fwd)``:
      known:   [known inputs] -> [known outputs, residuals]
      unknown: [residuals, unknown inputs] -> [unknown outputs]
      res_fwd[k]: index among the known inputs when residual k is just that input
                  (callers may pass the input instead of saving it), else None.
    """
    in_avals = closed.in_avals
    unknowns = tuple(bool(u) for u in unknowns)
    if isinstance(instantiate, bool):
        instantiate = (instantiate,) * len(closed.out_avals)
    instantiate = tuple(bool(i) for i in instantiate)
    key = (id(closed), unknowns, instantiate)
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
        with core.running(lin):
            outs = eval_jaxpr(closed.jaxpr, closed.consts, *args)
        out_uk = tuple(lin.is_unknown(o) or inst for o, inst in zip(outs, instantiate))
        ujaxpr, residuals = lin.to_jaxpr([o for o, u in zip(outs, out_uk) if u])
        known_outs = [o for o, u in zip(outs, out_uk) if not u]
        kjaxpr, kconsts = known_trace.to_jaxpr(known_outs + list(residuals))
    finally:
        lin.invalidate()
        known_trace.invalidate()
    kpos = {t.var: i for i, t in enumerate(kin)}
    res_fwd = tuple(kpos.get(r.var) if isinstance(r, core.Tracer) and r._trace is known_trace
                    else None for r in residuals)
    res_avals = tuple(v.aval for v in ujaxpr.constvars)
    unknown = ClosedJaxpr(convert_constvars_to_invars(ujaxpr), [])
    out = (_closed(kjaxpr, kconsts), unknown, out_uk, res_avals, res_fwd)
    return _pe_memo.put(key, closed, out)


# ----------------------------------------------------------------- transposition

_transpose_memo = _Memo()


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

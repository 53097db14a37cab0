"""Program-to-program passes over the IR: forwarding, CSE and dead-code elimination.

Every pass returns a new program (equations are never mutated) with the same
interface (invars/outvars types) unless asked to prune it, and recurses into
the programs held by higher-order equations.  ``simplify`` runs them in the
order that helps most: forwarding exposes common subexpressions and dead
equations, CSE exposes dead equations, DCE removes them.

* **Forwarding**: an equation that returns its input unchanged (a cast to the
  same dtype, a reshape to the same shape, a jit call that passes an input
  through, ...) is replaced by that input.
* **CSE**: two equations with the same primitive, params and inputs compute
  the same thing; keep the first.  Never for effectful primitives, random
  primitives or equations asking for ``prevent_cse``.
* **DCE**: drop equations whose outputs nobody reads, except effectful ones
  (``Primitive.effectful``, also inside sub-programs: a jit calling
  ``debug.print`` is kept).  Call-like primitives (jit) register a rule in
  ``call_dce_rules`` to also prune their program's unused outputs and inputs.

This layer knows no particular primitive: ``call_dce_rules`` and
``forwarding_rules`` are filled by ``primitives/``; the table of trivially
forwardable primitives is keyed by name with a condition on params.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters.ir import ClosedJaxpr, DropVar, Jaxpr, Literal, Var, count_eqns  # noqa: F401
from xform._src.interpreters import core
from xform._src.interpreters.ir import eqn_holds_programs, holds_programs

# prim -> f(eqn, used_outputs) -> (new eqn or None, used_inputs)
call_dce_rules: dict = {}
# prim -> f(eqn) -> [atom or None per output]: outputs equal to one of the inputs
forwarding_rules: dict = {}



def identity_when_same_type(pred):
    """A forwarding rule for a one-operand primitive that is the identity whenever its
    output type equals its input type and ``pred(params)`` holds (a convert to the same
    dtype, a transpose by the identity permutation, a reduction over no axes, ...)."""
    def rule(eqn):
        if len(eqn.invars) != 1 or len(eqn.outvars) != 1:
            return None
        a, v = eqn.invars[0], eqn.outvars[0]
        if a.aval == v.aval and pred(eqn.params):
            return [a]
        return None
    return rule



# ----------------------------------------------------------------- effects


def eqn_effectful(eqn) -> bool:
    if getattr(eqn.primitive, "effectful", False):
        return True
    params = eqn.params
    if params.get("has_side_effect", False) is True:   # per call (an FFI call's param)
        return True
    return eqn_holds_programs(eqn) and any(has_effects(j) for j in _subjaxprs(params))


def has_effects(jaxpr) -> bool:
    jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    return any(eqn_effectful(e) for e in jaxpr.eqns)


def _subjaxprs(params):
    for v in params.values():
        if isinstance(v, (ClosedJaxpr, Jaxpr)):
            yield v
        elif isinstance(v, (tuple, list)):
            for x in v:
                if isinstance(x, (ClosedJaxpr, Jaxpr)):
                    yield x


def _map_subjaxprs(params, fn):
    """Params with every held program replaced by ``fn(program)`` (same interface)."""
    if not holds_programs(params):
        return params
    new = None
    for k, v in params.items():
        if isinstance(v, (ClosedJaxpr, Jaxpr)):
            nv = fn(v)
        elif isinstance(v, tuple) and any(isinstance(x, (ClosedJaxpr, Jaxpr)) for x in v):
            nv = tuple(fn(x) if isinstance(x, (ClosedJaxpr, Jaxpr)) else x for x in v)
        else:
            continue
        if new is None:
            new = dict(params)
        new[k] = nv
    return params if new is None else new


def _on_program(fn):
    """Lift a Jaxpr -> Jaxpr pass to ClosedJaxpr/Jaxpr values."""
    def go(p):
        if isinstance(p, ClosedJaxpr):
            return ClosedJaxpr(fn(p.jaxpr), p.consts)
        return fn(p)
    return go


def _subst(a, env):
    if type(a) is Literal:
        return a
    return env.get(a, a)


def _substituted(eqn, env, on_program):
    """``eqn`` with its inputs renamed by ``env`` and its held programs mapped by
    ``on_program``; the same object when neither changes anything."""
    invars = eqn.invars
    if env:
        new = [a if type(a) is Literal else env.get(a, a) for a in invars]
        if any(x is not y for x, y in zip(new, invars)):
            invars = new
    params = _map_subjaxprs(eqn.params, on_program) if eqn_holds_programs(eqn) else eqn.params
    if invars is eqn.invars and params is eqn.params:
        return eqn
    return eqn.replace(invars=invars, params=params)


# ----------------------------------------------------------------- DCE


def dce_jaxpr(jaxpr: Jaxpr, used_outputs=None, prune_invars: bool = False):
    """Remove dead equations.  Returns ``(new_jaxpr, used_inputs)``.

    ``used_outputs``: which outputs to keep (default all; dropped ones are
    removed from ``outvars``).  ``prune_invars``: also drop unused inputs
    (``used_inputs`` says which were kept).  Constant variables are kept; see
    ``dce_closed`` to prune those with their values.
    """
    if used_outputs is None:
        used_outputs = [True] * len(jaxpr.outvars)
    outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
    live = {v for v in outvars if isinstance(v, Var)}
    kept = []
    rules = call_dce_rules
    on_program = _on_program(lambda j: dce_jaxpr(j)[0])
    for eqn in reversed(jaxpr.eqns):
        outs = eqn.outvars
        if len(outs) == 1:
            v = outs[0]
            used = [v in live and type(v) is not DropVar]
        else:
            used = [(not isinstance(v, DropVar)) and v in live for v in outs]
        rule = rules.get(eqn.primitive)
        if rule is not None:
            new, used_in = rule(eqn, used)
            if new is None:
                continue
            live.update(a for a, u in zip(eqn.invars, used_in) if u and isinstance(a, Var))
            kept.append(new)
            continue
        if not any(used) and not eqn_effectful(eqn):
            continue
        if eqn_holds_programs(eqn):
            params = _map_subjaxprs(eqn.params, on_program)
            kept.append(eqn if params is eqn.params else eqn.replace(params=params))
        else:
            kept.append(eqn)
        for a in eqn.invars:
            if type(a) is not Literal:
                live.add(a)
    kept.reverse()
    if prune_invars:
        used_inputs = [v in live for v in jaxpr.invars]
        invars = [v for v, u in zip(jaxpr.invars, used_inputs) if u]
    else:
        used_inputs = [True] * len(jaxpr.invars)
        invars = jaxpr.invars
    return Jaxpr(jaxpr.constvars, invars, outvars, kept, jaxpr.debug_info), used_inputs


def prune_consts(jaxpr: Jaxpr, consts) -> ClosedJaxpr:
    """Drop constant variables (and their values) that nothing reads."""
    if not jaxpr.constvars:
        return ClosedJaxpr(jaxpr, consts)
    used = set()
    for e in jaxpr.eqns:
        used.update(a for a in e.invars if isinstance(a, Var))
    used.update(a for a in jaxpr.outvars if isinstance(a, Var))
    keep = [v in used for v in jaxpr.constvars]
    if all(keep):
        return ClosedJaxpr(jaxpr, consts)
    return ClosedJaxpr(Jaxpr([v for v, k in zip(jaxpr.constvars, keep) if k], jaxpr.invars,
                             jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info),
                       [c for c, k in zip(consts, keep) if k])


def dce_closed(closed: ClosedJaxpr, used_outputs=None) -> ClosedJaxpr:
    """DCE a closed program keeping its inputs (its interface)."""
    jaxpr, _ = dce_jaxpr(closed.jaxpr, used_outputs)
    return prune_consts(jaxpr, closed.consts)


# ----------------------------------------------------------------- forwarding


def _forwarded(eqn):
    rule = forwarding_rules.get(eqn.primitive)
    return rule(eqn) if rule is not None else None


def forward_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """Replace outputs of trivial equations by the inputs they equal."""
    env = {}
    eqns = []
    sub = _on_program(forward_jaxpr)
    rules = forwarding_rules
    for eqn in jaxpr.eqns:
        eqn = _substituted(eqn, env, sub)
        rule = rules.get(eqn.primitive)
        fwd = rule(eqn) if rule is not None else None
        if fwd is not None and not eqn_effectful(eqn):
            for v, a in zip(eqn.outvars, fwd):
                if a is not None and a.aval == v.aval:
                    env[v] = a
            if all(v in env or isinstance(v, DropVar) for v in eqn.outvars):
                continue   # fully forwarded: DCE would drop it anyway
        eqns.append(eqn)
    outvars = [_subst(a, env) for a in jaxpr.outvars]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, eqns, jaxpr.debug_info)


# ----------------------------------------------------------------- CSE


def _cse_ok(eqn) -> bool:
    prim = eqn.primitive
    params = eqn.params
    if (prim.effectful or not prim.cse or params.get("prevent_cse", False)
            or params.get("has_side_effect", False) is True):
        return False
    return not (eqn_holds_programs(eqn) and any(has_effects(j) for j in _subjaxprs(params)))


def _atom_key(a):
    if type(a) is Literal:
        v = np.asarray(a.val)
        return ("lit", a.aval, v.tobytes())
    return a


def _eqn_key(eqn):
    try:
        params = eqn.params
        key = (eqn.primitive,
               tuple([a if type(a) is not Literal else _atom_key(a) for a in eqn.invars]),
               tuple(sorted(params.items())) if len(params) > 1 else tuple(params.items()))
        hash(key)
        return key
    except TypeError:
        return None


def cse_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """Merge equations with equal primitive, params and inputs."""
    env = {}
    seen = {}
    eqns = []
    sub = _on_program(cse_jaxpr)
    for eqn in jaxpr.eqns:
        eqn = _substituted(eqn, env, sub)
        if _cse_ok(eqn):
            key = _eqn_key(eqn)
            if key is not None:
                prev = seen.get(key)
                if prev is not None and all(p.aval == v.aval for p, v in zip(prev, eqn.outvars)):
                    for v, p in zip(eqn.outvars, prev):
                        env[v] = p
                    continue
                seen[key] = eqn.outvars
        eqns.append(eqn)
    outvars = [_subst(a, env) for a in jaxpr.outvars]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, eqns, jaxpr.debug_info)


# ----------------------------------------------------------------- all together


def simplify_jaxpr(jaxpr: Jaxpr, max_rounds: int = 3) -> Jaxpr:
    """forward -> CSE -> DCE until the equation count stops shrinking."""
    n = count_eqns(jaxpr)
    for _ in range(max_rounds):
        jaxpr = dce_jaxpr(cse_jaxpr(forward_jaxpr(jaxpr)))[0]
        m = count_eqns(jaxpr)
        if m >= n:
            break
        n = m
    return jaxpr


def simplify(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``simplify_jaxpr`` on a closed program (same interface; dead constants dropped)."""
    with core.gc_paused():
        return prune_consts(simplify_jaxpr(closed.jaxpr), closed.consts)

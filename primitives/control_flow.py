"""Structured control flow: ``cond`` (and ``switch``), ``while`` and ``scan`` primitives.

Each holds its sub-programs as ``ClosedJaxpr`` params (JAX's names and layouts):

* ``cond``   operands ``(index, *ops)``; ``branches``: one program per branch,
             each ``ops -> outs`` with identical types.
* ``while``  operands ``(*cond_consts, *body_consts, *carry)``; ``cond_jaxpr``
             ``(cond_consts, carry) -> bool[]``, ``body_jaxpr`` ``(body_consts, carry) -> carry``.
* ``scan``   operands ``(*consts, *carry, *xs)``; ``jaxpr`` ``(consts, carry, x) ->
             (carry, y)``, iterated ``length`` times over the leading axis of ``xs``
             (backwards with ``reverse``), stacking the ``y``s.

The user-facing functions trace Python callables into programs whose constants
(closed-over arrays, including tracers of outer transformations) are hoisted into
leading operands, so every trace sees what a body depends on.  Every rule is
program-to-program (``interpreters.jaxpr_transforms``):

* eager: evaluate the traced sub-programs (types were checked when tracing);
* JVP: JVP the sub-programs; for loops iterate to the fixpoint of which carries
  have nonzero tangents;
* partial evaluation (grad): split sub-programs into known and unknown parts;
  scan's known loop saves per-iteration residuals as stacked outputs which the
  unknown loop consumes (memory linear in ``length``); ``while`` cannot be
  reverse-differentiated (unknown trip count) and says so;
* transpose: cond transposes each branch; scan runs a reverse scan of the
  transposed body, accumulating the constants' cotangents in its carry;
* batching: batch the sub-programs; a batched predicate turns cond into a select
  of every branch's results and makes while run until every lane is done, the
  finished lanes keeping their values.
"""
from __future__ import annotations

import functools
import inspect
import operator
import weakref

import numpy as np

from xform._src.interpreters import ad, batching, core, dtypes, errors, ir, passes
from xform._src.interpreters import jaxpr_transforms as jt
from xform._src.interpreters.ad import Zero
from xform._src.interpreters.core import Array, Primitive, ShapedArray, Tracer
from xform._src.interpreters.ir import ClosedJaxpr, Jaxpr, Var, eval_jaxpr
from xform._src.interpreters.staging import StagingTrace, trace_to_jaxpr
from xform._src.primitives import elementwise as ew
from xform._src.primitives import structural as st
from xform._src.primitives._rules import bdim_at_front, moveaxis
from xform._src.primitives.custom import check_forward_evaluable
from xform._src.primitives import jit as _jit
from xform._src.interpreters.config import config
from xform._src.interpreters import tree_util
from xform._src.interpreters import refs as _refs
from xform._src.interpreters import hijax as _hj
from xform._src.primitives import reductions as red

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map", "associative_scan"]


def _tu():
    return tree_util


def _split(xs, *sizes):
    out, i = [], 0
    for n in sizes:
        out.append(list(xs[i:i + n]))
        i += n
    out.append(list(xs[i:]))
    return out


def _avals_str(avals):
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def _eval(closed, *args):
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


# ================================================================ cond

cond_p = Primitive("cond", multiple_results=True)
cond_p.impl_takes_arrays = True


def _cond_impl(index, *ops, branches):
    check_forward_evaluable(*branches)
    i = int(np.clip(int(np.asarray(index._value if isinstance(index, Array) else index)),
                    0, len(branches) - 1))
    outs = _eval(branches[i], *ops)
    return [o if isinstance(o, Array) else Array(np.asarray(o), a.weak_type)
            for o, a in zip(outs, _cond_abstract(core.get_aval(index),
                                                 *[core.get_aval(o) for o in ops],
                                                 branches=branches))]


def _cond_abstract(index, *ops, branches):
    if index.shape != () or index.dtype != np.int32:
        raise TypeError(f"cond: the branch index must be an int32 scalar, got {index.str_short()}")
    for i, b in enumerate(branches):
        if len(b.in_avals) != len(ops) or not all(
                core.same_type(a, o) for a, o in zip(b.in_avals, ops)):
            raise TypeError(f"cond: branch {i} takes {_avals_str(b.in_avals)} but the operands "
                            f"are {_avals_str(ops)}")
    outs = branches[0].out_avals
    for i, b in enumerate(branches[1:], 1):
        if len(b.out_avals) != len(outs) or not all(
                core.same_type(a, o) for a, o in zip(b.out_avals, outs)):
            raise TypeError(f"cond: branch {i} returns {_avals_str(b.out_avals)} but branch 0 "
                            f"returns {_avals_str(outs)}")
    # as JAX: the outputs have branch 0's types, weak types included (branches may
    # differ only in weak type; cond's branch 0 is its false branch). equinox's error_if
    # is cond(pred, <callback with a strong result>, lambda: x): x keeps its weak type
    return list(outs)


cond_p.def_impl(_cond_impl)
cond_p.def_abstract_eval(_cond_abstract)


def _cond_jvp(primals, tangents, *, branches):
    index, ops = primals[0], primals[1:]
    nz = [type(t) is not Zero and ad.is_differentiable(core.get_aval(p))
          for p, t in zip(ops, tangents[1:])]
    out_nz = [False] * len(branches[0].out_avals)
    for b in branches:
        _, onz = jt.jvp_jaxpr(b, nz, False)
        out_nz = [a or c for a, c in zip(out_nz, onz)]
    new = tuple(jt.jvp_jaxpr(b, nz, out_nz)[0] for b in branches)
    out_nz = jt.jvp_jaxpr(branches[0], nz, out_nz)[1]
    live = [t for t, n in zip(tangents[1:], nz) if n]
    outs = cond_p.bind(index, *ops, *live, branches=new)
    m = len(branches[0].out_avals)
    it = iter(outs[m:])
    return outs[:m], [next(it) if n else Zero(ad.tangent_aval(a))
                      for n, a in zip(out_nz, branches[0].out_avals)]


ad.jvp_rules[cond_p] = _cond_jvp


def _cond_partial_eval(trace, args, params):
    branches = params["branches"]
    index, ops = args[0], args[1:]
    if trace.is_unknown(index):     # nothing to split: the whole cond is unknown
        return StagingTrace.process_primitive(trace, cond_p, args, params)
    unknowns = [trace.is_unknown(a) for a in ops]
    nout = len(branches[0].out_avals)
    out_uk = [False] * nout
    for b in branches:
        out_uk = [a or c for a, c in zip(out_uk, jt.partial_eval_jaxpr(b, unknowns, False)[2])]
    parts = [jt.partial_eval_jaxpr(b, unknowns, out_uk) for b in branches]
    # Residuals that are just known operands are passed to the unknown cond as they are;
    # only the others are computed by the known cond (one slot per branch, zeros in the
    # other branches' slots).
    computed = [[k for k, f in enumerate(p[4]) if f is None] for p in parts]
    res_avals = [[p[3][k] for k in c] for p, c in zip(parts, computed)]
    all_res, slots_of = _merge_residual_slots(res_avals)
    known_ops = [a for a, u in zip(ops, unknowns) if not u]
    known_avals = [core.get_aval(a) for a in known_ops]
    nk_ops = len(known_ops)

    def known_branch(i):
        def f(*xs):
            outs = _eval(parts[i][0], *xs)
            k = len(outs) - len(parts[i][3])
            res = [None] * len(all_res)
            for slot, m in zip(slots_of[i], computed[i]):
                res[slot] = outs[k + m]
            return outs[:k] + [ad.zeros_like_aval(a) if r is None else r
                               for r, a in zip(res, all_res)]
        return f
    kbranches, kconsts = _branches_from_funs([known_branch(i) for i in range(len(branches))],
                                             known_avals)
    with core.set_current_trace(trace.parent):
        kvals = cond_p.bind(index, *kconsts, *known_ops, branches=kbranches)
    nk = nout - sum(out_uk)
    known_outs, res_vals = kvals[:nk], kvals[nk:]
    # Every slot holds a residual a branch computed (chosen by the policy); operands a
    # branch just forwards are not slots (they are left to the enclosing split).
    jt.note_residuals(res_vals)

    # Unknown cond over (all residual slots, known operands, unknown operands): branch i
    # reads its own slots and the operands it forwards.
    def unknown_branch(i):
        def f(*xs):
            slots = iter([xs[s] for s in slots_of[i]])
            kops = xs[len(all_res):len(all_res) + nk_ops]
            res = [next(slots) if fw is None else kops[fw] for fw in parts[i][4]]
            return _eval(parts[i][1], *res, *xs[len(all_res) + nk_ops:])
        return f
    unknown_avals = all_res + known_avals + [core.get_aval(a) for a, u in zip(ops, unknowns)
                                             if u]
    ubranches, uconsts = _branches_from_funs(
        [unknown_branch(i) for i in range(len(branches))], unknown_avals)
    u_args = ([index] + uconsts + list(res_vals) + known_ops
              + [a for a, u in zip(ops, unknowns) if u])
    out_avals = _cond_abstract(*[core.get_aval(a) for a in u_args], branches=ubranches)
    tracers = trace.add_eqn(cond_p, [trace.to_atom(a) for a in u_args], out_avals,
                            dict(branches=ubranches))
    kit, uit = iter(known_outs), iter(tracers)
    return [next(uit) if u else next(kit) for u in out_uk]


ad.partial_eval_rules[cond_p] = _cond_partial_eval


def _merge_residual_slots(res_avals):
    """Residual slots shared by the branches (as JAX): a branch's n-th residual of a given
    type takes the n-th slot of that type, so branches whose residuals overlap in type
    (``sin`` and ``cos`` both save an f32[]) reuse slots instead of each adding its own.
    Returns (slot types, per branch the slot of each of its residuals)."""
    slot_of, all_res, slots_of = {}, [], []
    for avals in res_avals:
        seen, mine = {}, []
        for a in avals:
            key = (a, seen.get(a, 0))
            seen[a] = key[1] + 1
            if key not in slot_of:
                slot_of[key] = len(all_res)
                all_res.append(a)
            mine.append(slot_of[key])
        slots_of.append(mine)
    return all_res, slots_of


def _cond_transpose(cts, index, *ops, branches):
    if ad.is_undefined_primal(index):
        raise ValueError("cond: cannot transpose with respect to the branch index")
    linear = [ad.is_undefined_primal(a) for a in ops]
    known = [a for a in ops if not ad.is_undefined_primal(a)]
    cts = [ad.instantiate(c) for c in cts]
    tbranches = [jt.transpose_jaxpr(b, linear) for b in branches]
    known_avals = [core.get_aval(a) for a in known] + [core.get_aval(c) for c in cts]
    tb, tconsts = _branches_from_funs([(lambda tj: lambda *xs: _eval(tj, *xs))(t)
                                       for t in tbranches], known_avals)
    outs = iter(cond_p.bind(index, *tconsts, *known, *cts, branches=tb))
    return [None] + [next(outs) if lin else None for lin in linear]


ad.transpose_rules[cond_p] = _cond_transpose


def _cond_batch(axis_data, vals, dims, *, branches):
    index, ops = vals[0], vals[1:]
    idim, odims = dims[0], list(dims[1:])
    size = axis_data.size
    if idim is not None:
        # A predicate per example: run every branch on every example and select the
        # results.  Branch i sees an example's operands through ``stop_gradient`` where
        # that example takes another branch, so reverse mode sends no cotangent through
        # a branch an example does not take: a branch that is singular where it is not
        # taken (``sqrt`` at 0 behind ``x < eps``) gives 0, not 0 * inf = NaN (as JAX).
        index = bdim_at_front(index, idim, size)
        ops = [bdim_at_front(o, d, size) for o, d in zip(ops, odims)]
        results = []
        for i, b in enumerate(branches):
            bj, _ = batching.batch_jaxpr(b, axis_data, [0] * len(ops), [0] * len(b.out_avals))
            taken = ew.eq_p.bind(index, Array(np.asarray(i, core.get_aval(index).dtype)))
            results.append(_eval(bj, *[_select_taken(taken, o) for o in ops]))
        outs = []
        for k in range(len(branches[0].out_avals)):
            cases = [r[k] for r in results]
            shape = core.get_aval(cases[0]).shape
            which = index if len(shape) == 1 else st.broadcast_in_dim_p.bind(
                index, shape=shape, broadcast_dimensions=(0,))
            outs.append(ew.select_n_p.bind(which, *cases))
        return outs, [0] * len(outs)
    out_b = [False] * len(branches[0].out_avals)
    for b in branches:
        _, od = batching.batch_jaxpr(b, axis_data, odims)
        out_b = [x or d is not None for x, d in zip(out_b, od)]
    want = [0 if x else None for x in out_b]
    new = tuple(batching.batch_jaxpr(b, axis_data, odims, want)[0] for b in branches)
    new, consts = _hoist_branches(new)
    return cond_p.bind(index, *consts, *ops, branches=new), want


batching.batch_rules[cond_p] = _cond_batch


def _select_taken(taken, x):
    """``x`` where ``taken`` (one flag per example, axis 0), ``stop_gradient(x)`` elsewhere."""
    shape = core.get_aval(x).shape
    which = taken if len(shape) == 1 else st.broadcast_in_dim_p.bind(
        taken, shape=shape, broadcast_dimensions=(0,))
    return ew.select_n_p.bind(which, ew.stop_gradient_p.bind(x), x)


# ----------------------------------------------------------------- building branches


def _hoist_branches(closed_list):
    """Branch programs with constants -> const-free branches over (all consts, operands)."""
    hoisted = [jt.hoist(c) for c in closed_list]
    all_consts = [c for _, cs in hoisted for c in cs]
    out, start = [], 0
    for h, cs in hoisted:
        before = [core.get_aval(c) for c in all_consts[:start]]
        after = [core.get_aval(c) for c in all_consts[start + len(cs):]]
        j = jt.with_extra_inputs(h, before, 0)
        j = jt.with_extra_inputs(j, after, len(before) + len(cs))
        out.append(j)
        start += len(cs)
    return tuple(out), all_consts


def _branches_from_funs(funs, in_avals):
    closed = [ClosedJaxpr(*trace_to_jaxpr(f, in_avals, name="cond")) for f in funs]
    return _hoist_branches(closed)


# ================================================================ eager loops run compiled

# An eager while/scan on concrete values runs as one compiled program, as in JAX (where
# applying a loop primitive outside ``jit`` dispatches it compiled): its body is not
# interpreted op by op once per iteration (thousands of iterations of an optimiser
# step in ``fori_loop`` would take minutes), and its numerics are XLA's, as under
# ``jit``.  The interpreter remains for what cannot run compiled: tracer operands,
# arrays committed to a device, ``disable_jit``, debug_nans/infs (re-run op by op) and
# bodies with no lowering.
_compiled_loops = jt.Memo(maxsize=256)
_NOT_COMPILED = "not compiled"


def _compiled_loop(prim, args, params):
    """``prim``'s outputs on ``args`` from its compiled one-equation program, or None
    where it must be interpreted."""
    if _jit.compiler is None or config.jax_disable_jit or core._debug_checks_on:
        return None
    for a in args:
        if isinstance(a, Tracer) or (type(a) is Array and (a._committed or a._deleted)):
            return None
    try:
        avals = tuple(core.get_aval(a) for a in args)
    except TypeError:
        return None
    programs = tuple(v for v in params.values() if isinstance(v, ClosedJaxpr))
    key = (prim, tuple(sorted((k, id(v) if isinstance(v, ClosedJaxpr) else v)
                              for k, v in params.items())), avals)
    try:
        prog = _compiled_loops.get(key)
    except TypeError:   # an unhashable param
        return None
    if prog is None:
        def fun(*xs):
            return list(prim.bind(*xs, **params))
        with core.set_current_trace(core.EVAL_TRACE):
            closed = ClosedJaxpr(*trace_to_jaxpr(fun, avals, name=prim.name))
        prog = _jit.compile_program(closed, name=prim.name)
        if isinstance(prog, _jit.EagerProgram):   # would interpret (and re-enter here)
            prog = _NOT_COMPILED
        _compiled_loops.put(key, programs, prog)
    if prog is _NOT_COMPILED:
        return None
    return list(prog(*args))


# ================================================================ while

while_p = Primitive("while", multiple_results=True)
while_p.impl_takes_arrays = True


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    check_forward_evaluable(cond_jaxpr, body_jaxpr)
    outs = _compiled_loop(while_p, args, dict(
        cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=cond_nconsts,
        body_nconsts=body_nconsts))
    if outs is not None:
        return outs
    cc, bc, carry = _split(args, cond_nconsts, body_nconsts)
    while bool(np.asarray(_value(_eval(cond_jaxpr, *cc, *carry)[0]))):
        carry = _eval(body_jaxpr, *bc, *carry)
    return [c if isinstance(c, Array) else Array(np.asarray(c), core.get_aval(c).weak_type)
            for c in carry]


def _value(x):
    return x._value if isinstance(x, Array) else x


def _while_abstract(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, carry = _split(avals, cond_nconsts, body_nconsts)
    pred = cond_jaxpr.out_avals
    if len(pred) != 1 or pred[0].shape != () or pred[0].dtype != np.bool_:
        raise TypeError(f"while: cond_jaxpr must return one bool scalar, got {_avals_str(pred)}")
    _check_types("while: cond_jaxpr inputs", cond_jaxpr.in_avals, cc + carry)
    _check_types("while: body_jaxpr inputs", body_jaxpr.in_avals, bc + carry)
    _check_types("while: body_jaxpr outputs", body_jaxpr.out_avals, carry)
    return [a.update(weak_type=a.weak_type and b.weak_type)
            for a, b in zip(carry, body_jaxpr.out_avals)]


def _check_types(what, expected, got):
    if len(expected) != len(got) or not all(core.same_type(a, b) for a, b in zip(expected, got)):
        raise TypeError(f"{what}: expected {_avals_str(expected)}, got {_avals_str(got)}")


while_p.def_impl(_while_impl)
while_p.def_abstract_eval(_while_abstract)


def _carry_fixpoint(step, init):
    """Least fixpoint of ``mask -> mask | step(mask)`` over per-carry booleans."""
    mask = list(init)
    while True:
        new = [a or b for a, b in zip(mask, step(mask))]
        if new == mask:
            return mask
        mask = new


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, carry = _split(primals, cond_nconsts, body_nconsts)
    _, bct, ct = _split(tangents, cond_nconsts, body_nconsts)
    diff = lambda p, t: type(t) is not Zero and ad.is_differentiable(core.get_aval(p))  # noqa
    bc_nz = [diff(p, t) for p, t in zip(bc, bct)]
    nc = len(carry)
    carry_nz = _carry_fixpoint(
        lambda m: jt.jvp_jaxpr(body_jaxpr, bc_nz + m, False)[1],
        [diff(p, t) for p, t in zip(carry, ct)])
    body, out_nz = jt.jvp_jaxpr(body_jaxpr, bc_nz + carry_nz, carry_nz)
    nb, nbt, nct = len(bc), sum(bc_nz), sum(carry_nz)
    # [bc, carry, bc_t, carry_t] -> [bc, bc_t, carry, carry_t]
    order = (list(range(nb)) + list(range(nb + nc, nb + nc + nbt))
             + list(range(nb, nb + nc)) + list(range(nb + nc + nbt, nb + nc + nbt + nct)))
    body = jt.permute(body, order)
    t_avals = [ad.tangent_aval(core.get_aval(p)) for p, n in zip(carry, carry_nz) if n]
    cond = jt.with_extra_inputs(cond_jaxpr, t_avals, len(cond_jaxpr.in_avals))
    live_bct = [t for t, n in zip(bct, bc_nz) if n]
    live_ct = [ad.instantiate(t) for t, n in zip(ct, carry_nz) if n]
    outs = while_p.bind(*cc, *bc, *live_bct, *carry, *live_ct, cond_jaxpr=cond, body_jaxpr=body,
                        cond_nconsts=cond_nconsts, body_nconsts=nb + nbt)
    it = iter(outs[nc:])
    return outs[:nc], [next(it) if n else Zero(ad.tangent_aval(core.get_aval(p)))
                       for n, p in zip(carry_nz, carry)]


ad.jvp_rules[while_p] = _while_jvp


_WHILE_REVERSE_MSG = (
    "Reverse-mode differentiation does not work for lax.while_loop (its trip count is "
    "only known at run time, so its residuals cannot be stored). Use lax.fori_loop "
    "with static (Python int) bounds or lax.scan, which are reverse-differentiable, or give "
    "the loop a static bound on its trip count, lax.while_loop(cond_fun, body_fun, init, "
    "max_steps=N), which makes it reverse-differentiable (xform's extension; add "
    "checkpoint='sqrt' for O(sqrt(N)) memory); forward mode (xform.jvp, xform.linearize) "
    "works for any while_loop.")


def _while_partial_eval(trace, args, params):
    """Linearize of a loop: the known carries are computed now by a loop over the known
    part of the body; the unknown (tangent) carries are computed in the linear program
    by the whole loop, which recomputes the known carries alongside (the trip count is
    only known by running it).  That loop can be evaluated (linearize, jvp of it) but
    not transposed: reverse mode stops at its transpose rule."""
    cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]
    cond_nconsts, body_nconsts = params["cond_nconsts"], params["body_nconsts"]
    cc, bc, carry = _split(args, cond_nconsts, body_nconsts)
    cc_uk = [trace.is_unknown(a) for a in cc]
    bc_uk = [trace.is_unknown(a) for a in bc]
    carry_uk = _carry_fixpoint(
        lambda m: jt.partial_eval_jaxpr(body_jaxpr, bc_uk + m, False)[2],
        [trace.is_unknown(a) for a in carry])
    whole = lambda: StagingTrace.process_primitive(trace, while_p, args, params)  # noqa
    if any(cc_uk) or all(carry_uk) or jt.partial_eval_jaxpr(
            cond_jaxpr, cc_uk + carry_uk, False)[2][0]:
        return whole()      # nothing known can be computed separately
    # Known loop: the known carries, iterated by the known part of the body.
    bknown = jt.partial_eval_jaxpr(body_jaxpr, bc_uk + carry_uk, carry_uk)[0]
    nkc = sum(not u for u in carry_uk)
    bknown = passes.dce_closed(bknown, [True] * nkc + [False] * (len(bknown.out_avals) - nkc))
    cknown = jt.partial_eval_jaxpr(cond_jaxpr, cc_uk + carry_uk, False)[0]
    cknown = passes.dce_closed(cknown, [True] + [False] * (len(cknown.out_avals) - 1))
    bj, bconsts = jt.hoist(bknown)
    cj, cconsts = jt.hoist(cknown)
    kbc = [a for a, u in zip(bc, bc_uk) if not u]
    kcarry = [a for a, u in zip(carry, carry_uk) if not u]
    with core.set_current_trace(trace.parent):
        kouts = while_p.bind(*cconsts, *cc, *bconsts, *kbc, *kcarry, cond_jaxpr=cj,
                             body_jaxpr=bj, cond_nconsts=len(cconsts) + len(cc),
                             body_nconsts=len(bconsts) + len(kbc))
    uouts = whole()
    kit = iter(kouts)
    return [u if uk else next(kit) for u, uk in zip(uouts, carry_uk)]


ad.partial_eval_rules[while_p] = _while_partial_eval


def _while_transpose(cts, *args, **params):
    raise ValueError(_WHILE_REVERSE_MSG)


ad.transpose_rules[while_p] = _while_transpose


def _while_batch(axis_data, vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    size = axis_data.size
    cc, bc, carry = _split(vals, cond_nconsts, body_nconsts)
    ccd, bcd, cd = _split(dims, cond_nconsts, body_nconsts)
    carry_b = _carry_fixpoint(
        lambda m: [d is not None for d in batching.batch_jaxpr(
            body_jaxpr, axis_data, bcd + [0 if b else None for b in m])[1]],
        [d is not None for d in cd])
    _, (pred_d,) = batching.batch_jaxpr(cond_jaxpr, axis_data,
                                        ccd + [0 if b else None for b in carry_b])
    if pred_d is not None:          # a predicate per lane: every carry becomes batched
        carry_b = [True] * len(carry)
    cdims = [0 if b else None for b in carry_b]
    carry = [bdim_at_front(c, d, size) if b else c for c, d, b in zip(carry, cd, carry_b)]
    bj, _ = batching.batch_jaxpr(body_jaxpr, axis_data, bcd + cdims, cdims)
    cj, _ = batching.batch_jaxpr(cond_jaxpr, axis_data, ccd + cdims,
                                 [None if pred_d is None else 0])
    if pred_d is None:
        bj, bconsts = jt.hoist(bj)
        cj, cconsts = jt.hoist(cj)
        outs = while_p.bind(*cconsts, *cc, *bconsts, *bc, *carry, cond_jaxpr=cj, body_jaxpr=bj,
                            cond_nconsts=len(cconsts) + len(cc),
                            body_nconsts=len(bconsts) + len(bc))
        return outs, cdims
    # Batched predicate: loop while any lane runs; finished lanes keep their carry.
    nc = len(cc)
    carry_avals = [core.get_aval(c) for c in carry]

    def cond_fun(*xs):
        pred = _eval(cj, *xs)[0]
        return [red.reduce_or_p.bind(pred, axes=(0,))]

    def body_fun(*xs):
        ccs, bcs, cs = _split(xs, nc, len(bc))
        pred = _eval(cj, *ccs, *cs)[0]
        new = _eval(bj, *bcs, *cs)
        outs = []
        for o, c in zip(new, cs):
            shape = core.get_aval(o).shape
            which = pred if len(shape) == 1 else st.broadcast_in_dim_p.bind(
                pred, shape=shape, broadcast_dimensions=(0,))
            outs.append(ew.select_n_p.bind(which, c, o))
        return outs
    cc_avals = [core.get_aval(c) for c in cc]
    bc_avals = [core.get_aval(c) for c in bc]
    cjx, cconsts = jt.hoist(ClosedJaxpr(*trace_to_jaxpr(cond_fun, cc_avals + carry_avals)))
    batched_predicate_conds.put((id(cjx),), cjx, True)
    bjx, bconsts = jt.hoist(ClosedJaxpr(*trace_to_jaxpr(body_fun, cc_avals + bc_avals
                                                        + carry_avals)))
    outs = while_p.bind(*cconsts, *cc, *bconsts, *cc, *bc, *carry, cond_jaxpr=cjx,
                        body_jaxpr=bjx, cond_nconsts=len(cconsts) + nc,
                        body_nconsts=len(bconsts) + nc + len(bc))
    return outs, [0] * len(outs)


batching.batch_rules[while_p] = _while_batch

# The condition programs of while loops whose predicate was batched (their body also runs
# for lanes that have finished): checkify refuses checks inside them, as JAX does.
batched_predicate_conds = jt.Memo(maxsize=512)


# ================================================================ scan

scan_p = Primitive("scan", multiple_results=True)
ir.pp_rules[scan_p] = ir.pp_with_defaults(drop=("linear",))
scan_p.impl_takes_arrays = True


def _index_leading(x, i):
    if isinstance(x, Array):
        return Array(np.asarray(x._value)[i], x.weak_type)
    return np.asarray(x)[i]


def _scan_impl(*args, reverse, length, jaxpr, num_consts, num_carry, linear, unroll):
    if length > 1:
        outs = _compiled_loop(scan_p, args, dict(
            reverse=reverse, length=length, jaxpr=jaxpr, num_consts=num_consts,
            num_carry=num_carry, linear=linear, unroll=unroll))
        if outs is not None:
            return outs
    consts, carry, xs = _split(args, num_consts, num_carry)
    out_avals = _scan_abstract(*[core.get_aval(a) for a in args], reverse=reverse, length=length,
                               jaxpr=jaxpr, num_consts=num_consts, num_carry=num_carry,
                               linear=linear, unroll=unroll)
    ys = []
    for k in range(length):
        i = length - 1 - k if reverse else k
        outs = _eval(jaxpr, *consts, *carry, *[_index_leading(x, i) for x in xs])
        carry, y = outs[:num_carry], outs[num_carry:]
        ys.append([np.asarray(_value(v)) for v in y])
    if reverse:
        ys.reverse()
    y_avals = out_avals[num_carry:]

    def np_dtype(dt):   # typed PRNG keys are held as NumPy structured values
        return dt.struct if isinstance(dt, dtypes.ExtendedDType) else dt
    stacked = [Array(np.stack([y[j] for y in ys]).astype(np_dtype(a.dtype)) if ys
                     else np.zeros(a.shape, np_dtype(a.dtype)), a.weak_type)
               for j, a in enumerate(y_avals)]
    carry = [c if isinstance(c, Array) else Array(np.asarray(c, np_dtype(a.dtype)), a.weak_type)
             for c, a in zip(carry, out_avals)]
    return carry + stacked


def _scan_abstract(*avals, reverse, length, jaxpr, num_consts, num_carry, linear, unroll):
    consts, carry, xs = _split(avals, num_consts, num_carry)
    for x in xs:
        if not x.shape or x.shape[0] != length:
            raise TypeError(f"scan: scanned operand {x.str_short()} must have leading "
                            f"dimension length={length}")
    x_avals = [x.update(shape=x.shape[1:]) for x in xs]
    _check_types("scan: jaxpr inputs", jaxpr.in_avals, consts + carry + x_avals)
    outs = jaxpr.out_avals
    _check_types("scan: jaxpr carry outputs", outs[:num_carry], carry)
    return ([a.update(weak_type=a.weak_type and b.weak_type)
             for a, b in zip(carry, outs[:num_carry])]
            + [y.update(shape=(length,) + y.shape) for y in outs[num_carry:]])


scan_p.def_impl(_scan_impl)
scan_p.def_abstract_eval(_scan_abstract)


def _scan_bind(consts, carry, xs, jaxpr, *, reverse, length, unroll):
    """Bind scan with a (possibly const-holding) body; its constants are hoisted."""
    jaxpr, hc = jt.hoist(jaxpr)
    args = list(hc) + list(consts) + list(carry) + list(xs)
    return scan_p.bind(*args, reverse=reverse, length=length, jaxpr=jaxpr,
                       num_consts=len(hc) + len(consts), num_carry=len(carry),
                       linear=(False,) * len(args), unroll=unroll)


def _scan_jvp(primals, tangents, *, reverse, length, jaxpr, num_consts, num_carry, linear,
              unroll):
    consts, carry, xs = _split(primals, num_consts, num_carry)
    ct, cat, xt = _split(tangents, num_consts, num_carry)
    diff = lambda p, t: type(t) is not Zero and ad.is_differentiable(core.get_aval(p))  # noqa
    c_nz = [diff(p, t) for p, t in zip(consts, ct)]
    x_nz = [diff(p, t) for p, t in zip(xs, xt)]
    ny = len(jaxpr.out_avals) - num_carry
    carry_nz = _carry_fixpoint(
        lambda m: jt.jvp_jaxpr(jaxpr, c_nz + m + x_nz, False)[1][:num_carry],
        [diff(p, t) for p, t in zip(carry, cat)])
    body, out_nz = jt.jvp_jaxpr(jaxpr, c_nz + carry_nz + x_nz, carry_nz + [False] * ny)
    y_nz = list(out_nz[num_carry:])
    nc, nca, nx = num_consts, num_carry, len(xs)
    n = nc + nca + nx
    tc, tca, tx = sum(c_nz), sum(carry_nz), sum(x_nz)
    rng = lambda a, b: list(range(a, b))  # noqa: E731
    in_order = (rng(0, nc) + rng(n, n + tc) + rng(nc, nc + nca) + rng(n + tc, n + tc + tca)
                + rng(nc + nca, n) + rng(n + tc + tca, n + tc + tca + tx))
    m = nca + ny
    out_order = rng(0, nca) + rng(m, m + tca) + rng(nca, m) + rng(m + tca, m + tca + sum(y_nz))
    body = jt.permute(body, in_order, out_order)
    live = lambda ts, nz: [ad.instantiate(t) for t, z in zip(ts, nz) if z]  # noqa: E731
    outs = _scan_bind(consts + live(ct, c_nz), carry + live(cat, carry_nz),
                      xs + live(xt, x_nz), body, reverse=reverse, length=length, unroll=unroll)
    carry_out, carry_t, ys, ys_t = _split(outs, nca, tca, ny)
    it = iter(carry_t)
    ts_carry = [next(it) if z else Zero(ad.tangent_aval(core.get_aval(p)))
                for z, p in zip(carry_nz, carry_out)]
    it = iter(ys_t)
    ts_y = [next(it) if z else Zero(ad.tangent_aval(core.get_aval(p)))
            for z, p in zip(y_nz, ys)]
    return carry_out + ys, ts_carry + ts_y


ad.jvp_rules[scan_p] = _scan_jvp


def _scan_partial_eval(trace, args, params):
    jaxpr, nc, nca = params["jaxpr"], params["num_consts"], params["num_carry"]
    length, reverse, unroll = params["length"], params["reverse"], params["unroll"]
    consts, carry, xs = _split(args, nc, nca)
    c_uk = [trace.is_unknown(a) for a in consts]
    x_uk = [trace.is_unknown(a) for a in xs]
    ny = len(jaxpr.out_avals) - nca
    carry_uk = _carry_fixpoint(
        lambda m: jt.partial_eval_jaxpr(jaxpr, c_uk + m + x_uk, False)[2][:nca],
        [trace.is_unknown(a) for a in carry])
    known, unknown, out_uk, res_avals, res_fwd = jt.partial_eval_jaxpr(
        jaxpr, c_uk + carry_uk + x_uk, carry_uk + [False] * ny)
    kc = [a for a, u in zip(consts, c_uk) if not u]
    kca = [a for a, u in zip(carry, carry_uk) if not u]
    kx = [a for a, u in zip(xs, x_uk) if not u]
    # Residuals that are known consts or known xs are passed as they are; the rest are
    # saved per iteration as extra (stacked) outputs of the known scan.
    kind = []
    for f in res_fwd:
        if f is not None and f < len(kc):
            kind.append(("const", f))
        elif f is not None and f >= len(kc) + len(kca):
            kind.append(("xs", f - len(kc) - len(kca)))
        else:
            kind.append(("stack", f))   # f: a known carry index (loop-variant input) or None
    n_kout = len(known.out_avals) - len(res_avals)
    kj = known.jaxpr
    keep = list(range(n_kout)) + [n_kout + k for k, (t, _) in enumerate(kind) if t == "stack"]
    known = ClosedJaxpr(Jaxpr(kj.constvars, kj.invars, [kj.outvars[i] for i in keep], kj.eqns),
                        known.consts)
    with core.set_current_trace(trace.parent):
        kouts = _scan_bind(kc, kca, kx, known, reverse=reverse, length=length, unroll=unroll)
    nkca = len(kca)
    n_ky = n_kout - nkca
    kcarry, kys, stacked = kouts[:nkca], kouts[nkca:nkca + n_ky], kouts[nkca + n_ky:]
    # Under a remat policy, residuals the body's split computed were chosen by the policy
    # and stay saved; stacked *carries* were not (the body saves its inputs by default),
    # so the enclosing split applies the policy to this scan equation for them: under
    # nothing_saveable the whole known scan is recomputed in the backward pass, as in JAX.
    stack_fwd = [f for t, f in kind if t == "stack"]
    jt.note_residuals([r for r, f in zip(stacked, stack_fwd) if f is None])

    # Unknown scan: consts = [forwarded const residuals, unknown consts],
    # carry = unknown carry, xs = [unknown xs, forwarded xs residuals, stacked residuals].
    nres = len(res_avals)
    uc_idx = [k for k, (t, _) in enumerate(kind) if t == "const"]
    ux_idx = [k for k, (t, _) in enumerate(kind) if t == "xs"]
    us_idx = [k for k, (t, _) in enumerate(kind) if t == "stack"]
    n_uc, n_uca, n_ux = sum(c_uk), sum(carry_uk), sum(x_uk)
    in_order = (uc_idx + [nres + i for i in range(n_uc)]
                + [nres + n_uc + i for i in range(n_uca)]
                + [nres + n_uc + n_uca + i for i in range(n_ux)] + ux_idx + us_idx)
    unknown = jt.permute(unknown, in_order)
    uconsts = [kc[kind[k][1]] for k in uc_idx] + [a for a, u in zip(consts, c_uk) if u]
    ucarry = [a for a, u in zip(carry, carry_uk) if u]
    uxs = ([a for a, u in zip(xs, x_uk) if u] + [kx[kind[k][1]] for k in ux_idx]
           + list(stacked))
    uj, hc = jt.hoist(unknown)
    u_args = list(hc) + uconsts + ucarry + uxs
    new_params = dict(params, jaxpr=uj, num_consts=len(hc) + len(uconsts), num_carry=n_uca,
                      linear=(False,) * len(u_args))
    out_avals = _scan_abstract(*[core.get_aval(a) for a in u_args], **new_params)
    tracers = trace.add_eqn(scan_p, [trace.to_atom(a) for a in u_args], out_avals, new_params)
    known_outs = iter(kcarry + kys)
    uit = iter(tracers)
    return [next(uit) if u else next(known_outs) for u in out_uk]


ad.partial_eval_rules[scan_p] = _scan_partial_eval


def _scan_transpose(cts, *args, reverse, length, jaxpr, num_consts, num_carry, linear, unroll):
    consts, carry, xs = _split(args, num_consts, num_carry)
    c_lin = [ad.is_undefined_primal(a) for a in consts]
    x_lin = [ad.is_undefined_primal(a) for a in xs]
    # A known carry of a linear scan can only be a (materialised) zero tangent: treat it
    # as linear and drop its cotangent.
    carry_known = [not ad.is_undefined_primal(a) for a in carry]
    ck = [a for a, lin in zip(consts, c_lin) if not lin]
    xk = [a for a, lin in zip(xs, x_lin) if not lin]
    cts = [ad.instantiate(c) for c in cts]
    ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
    ct_c0 = [ad.zeros_like_aval(ad.tangent_aval(a.aval)) for a, lin in zip(consts, c_lin) if lin]
    body_avals = jaxpr.in_avals
    c_avals, ca_avals, x_avals = _split(body_avals, num_consts, num_carry)
    nck, nlc, nxk = len(ck), len(ct_c0), len(xk)

    def body_t(*vals):
        kc, acc, ctc, kx, cty = _split(vals, nck, nlc, num_carry, nxk)
        kci, kxi = iter(kc), iter(kx)
        bargs = ([ad.UndefinedPrimal(a) if lin else next(kci) for a, lin in zip(c_avals, c_lin)]
                 + [ad.UndefinedPrimal(a) for a in ca_avals]
                 + [ad.UndefinedPrimal(a) if lin else next(kxi)
                    for a, lin in zip(x_avals, x_lin)])
        res = ad.backward_pass_partial(jaxpr.jaxpr, jaxpr.consts, bargs, list(ctc) + list(cty))
        res = [ad.instantiate(r if r is not None else Zero(ad.tangent_aval(a)))
               for r, a in zip(res, body_avals)]
        rc, rca, rx = _split(res, num_consts, num_carry)
        new_acc = [ad.add_tangents(a, r) for a, r in zip(acc, [r for r, lin in zip(rc, c_lin)
                                                                if lin])]
        return new_acc + rca + [r for r, lin in zip(rx, x_lin) if lin]

    in_avals = ([core.get_aval(a) for a in ck] + [core.get_aval(a) for a in ct_c0]
                + [core.get_aval(c) for c in ct_carry] + [x.update(shape=x.shape[1:]) for x in
                                                         (core.get_aval(a) for a in xk)]
                + [core.get_aval(c).update(shape=core.get_aval(c).shape[1:]) for c in ct_ys])
    tj = ClosedJaxpr(*trace_to_jaxpr(body_t, in_avals, name="scan_transpose"))
    outs = _scan_bind(ck, ct_c0 + ct_carry, xk + ct_ys, tj, reverse=not reverse, length=length,
                      unroll=unroll)
    acc, ct_init, ct_xs = _split(outs, nlc, num_carry)
    acc_it, xs_it = iter(acc), iter(ct_xs)
    ct_init = [None if k else c for c, k in zip(ct_init, carry_known)]
    return ([next(acc_it) if lin else None for lin in c_lin] + ct_init
            + [next(xs_it) if lin else None for lin in x_lin])


ad.transpose_rules[scan_p] = _scan_transpose


def _scan_batch(axis_data, vals, dims, *, reverse, length, jaxpr, num_consts, num_carry,
                linear, unroll):
    size = axis_data.size
    consts, carry, xs = _split(vals, num_consts, num_carry)
    cd, cad, xd = _split(dims, num_consts, num_carry)
    xs = [x if d is None else moveaxis(x, d, 1) for x, d in zip(xs, xd)]
    x_in = [None if d is None else 0 for d in xd]
    ny = len(jaxpr.out_avals) - num_carry
    carry_b = _carry_fixpoint(
        lambda m: [d is not None for d in batching.batch_jaxpr(
            jaxpr, axis_data, cd + [0 if b else None for b in m] + x_in)[1][:num_carry]],
        [d is not None for d in cad])
    cdims = [0 if b else None for b in carry_b]
    _, od = batching.batch_jaxpr(jaxpr, axis_data, cd + cdims + x_in)
    ydims = [None if d is None else 0 for d in od[num_carry:]]
    bj, _ = batching.batch_jaxpr(jaxpr, axis_data, cd + cdims + x_in, cdims + ydims)
    carry = [bdim_at_front(c, d, size) if b else c for c, d, b in zip(carry, cad, carry_b)]
    outs = _scan_bind(consts, carry, xs, bj, reverse=reverse, length=length, unroll=unroll)
    return outs, cdims + [None if d is None else 1 for d in ydims[:ny]]


batching.batch_rules[scan_p] = _scan_batch


# ================================================================ user-facing functions


# Programs traced from user functions outside any transformation, per function (held
# weakly) and (input structure, avals, role, options): as JAX caches its traces of
# control-flow bodies, calling ``lax.scan(f, ...)`` / ``while_loop`` / ``switch`` again
# with the same function and argument types reuses the program (the function's Python
# side effects run once, and values it closes over are those of the first trace).
# Under a transformation the enclosing trace differs on every call, so nothing is kept.
_body_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_CACHE_OPTIONS = ("jax_enable_x64", "jax_numpy_rank_promotion", "jax_numpy_dtype_promotion",
                  "jax_default_matmul_precision", "jax_debug_nans", "jax_debug_infs",
                  "jax_disable_jit")


def _trace(fun, in_tree, in_avals, what):
    """Trace ``fun(*unflatten(in_tree, args))`` into (const-free program, consts, out_tree)."""
    if core.current_trace() is not core.EVAL_TRACE:
        return _trace_now(fun, in_tree, in_avals, what)
    key = (in_tree, tuple(in_avals), what, tuple(config.read(o) for o in _CACHE_OPTIONS))
    try:
        per_fun = _body_cache.get(fun)
        if per_fun is None:
            per_fun = _body_cache[fun] = {}
        hit = per_fun.get(key)
    except TypeError:           # not weakly referable or not hashable: trace every time
        return _trace_now(fun, in_tree, in_avals, what)
    if hit is None:
        hit = per_fun[key] = _trace_now(fun, in_tree, in_avals, what)
    return hit


def _trace_now(fun, in_tree, in_avals, what):
    tu = _tu()
    tree_box = []

    def flat(*args):
        res = fun(*tu.tree_unflatten(in_tree, list(args)))
        leaves, tree = tu.tree_flatten(res)
        tree_box.append(tree)
        for leaf in leaves:
            if not _is_arraylike(leaf):
                raise TypeError(f"{what} returned a value of type {type(leaf).__name__} "
                                f"({leaf!r}); its outputs must be arrays (or pytrees of arrays)")
        return leaves
    jaxpr, consts = trace_to_jaxpr(flat, in_avals, name=what)
    closed, hc = jt.hoist(ClosedJaxpr(jaxpr, consts))
    return closed, hc, tree_box[0]


def _is_arraylike(x):
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex))


def _flatten_args(tree, what):
    tu = _tu()
    leaves, treedef = tu.tree_flatten(tree)
    for leaf in leaves:
        if not _is_arraylike(leaf):
            raise TypeError(f"{what}: {leaf!r} of type {type(leaf).__name__} is not a valid "
                            "array; use arrays, Python scalars or pytrees of them")
    return [_as_array(x) for x in leaves], treedef


def _as_array(x):
    """Python scalars and NumPy values become Arrays (keeping JAX's weak typing)."""
    if isinstance(x, (Array, Tracer)):
        return x
    a = core.get_aval(x)
    return Array(np.asarray(x, a.dtype), a.weak_type)


def _paths(tree):
    tu = _tu()
    return [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(tree)[0]]


def _typematch(a, b):
    return a.shape == b.shape and a.dtype == b.dtype


# ----------------------------------------------------------------- cond / switch


def _shown(x):
    """A value as JAX's cond/switch messages show it (a tracer by its type)."""
    return core.get_aval(x).str_short() if isinstance(x, Tracer) else x


def _branch_index(x, n):
    """``switch``'s index clamped to ``[0, n)`` as int32 (JAX's checks and wording)."""
    if not _is_arraylike(x):
        if isinstance(x, (list, tuple)):
            raise TypeError(f"lax.switch: Branch index must be scalar, got {x} of shape "
                            f"{np.shape(x)}. The index must be one integer scalar.")
        raise TypeError(f"lax.switch: Index type must be an integer, got {x}. The index must "
                        "be an integer scalar (a Python int or an integer array).")
    a = core.get_aval(x)
    if a.shape != ():
        raise TypeError(f"lax.switch: Branch index must be scalar, got {_shown(x)} of shape "
                        f"{a.shape}. To pick a branch per element, vmap the switch.")
    if a.dtype == np.bool_:
        return ew.convert_element_type(x, np.int32)
    if not dtypes.is_integer(a.dtype):
        raise TypeError(f"lax.switch: Index type must be an integer, got {_shown(x)} as "
                        f"{a.dtype.name}. Convert it with .astype(int) (or use lax.cond for a "
                        "boolean choice).")
    x = ew.convert_element_type(x, np.int32)
    return ew.clamp(np.int32(0), x, np.int32(n - 1))


class _NoOperand:
    __slots__ = ()

    def __repr__(self):
        return "<no operand>"


_no_operand = _NoOperand()


def cond(pred, true_fun, false_fun, *operands, operand=_no_operand):
    """``true_fun(*operands) if pred else false_fun(*operands)``, staged as one ``cond``.

    Both branches are traced (their outputs must have identical types); only the
    taken one runs.  Under ``vmap`` with a batched ``pred`` both run and the
    results are selected.
    """
    if operand is not _no_operand:
        if operands:
            raise TypeError("lax.cond: if the 'operand' keyword is passed then no positional "
                            "operands can be passed")
        operands = (operand,)
    if not (callable(true_fun) and callable(false_fun)):
        # the older per-branch form: cond(pred, true_operand, true_fun, false_operand,
        # false_fun), each branch applied to its own operand
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]) and \
                operand is _no_operand:
            x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
            return cond(pred, lambda xt, _: f_true(xt), lambda _, xf: f_false(xf),
                        x_true, x_false)
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    if pred is None:
        raise TypeError("lax.cond: cond predicate is None; pred must be a boolean (or "
                        "number) scalar.")
    if isinstance(pred, (str, bytes, list, tuple)):
        raise TypeError(f"lax.cond: Pred must be a scalar, got {pred} of type {type(pred)}; "
                        "pred must be a boolean (or number) scalar.")
    if not _is_arraylike(pred):
        raise TypeError(f"lax.cond: Pred type must be either boolean or number, got {pred}.")
    pa = core.get_aval(pred)
    if pa.shape != ():
        raise TypeError(f"lax.cond: Pred must be a scalar, got {_shown(pred)} of shape "
                        f"{pa.shape}. To choose per element use jnp.where (or vmap the "
                        "cond); to test all/any elements reduce with .all()/.any().")
    if pa.dtype != np.bool_:
        if not (dtypes.is_integer(pa.dtype) or pa.dtype.kind == "f"):
            raise TypeError(f"lax.cond: Pred type must be either boolean or number, got "
                            f"{pa.dtype.name}.")
        pred = ew.ne_p.bind(pred, np.zeros((), pa.dtype)) if not isinstance(
            pred, (bool, int, float)) else bool(pred)
    index = ew.convert_element_type(pred, np.int32)
    return _switch(index, [false_fun, true_fun], operands, ("false_fun", "true_fun"), "cond",
                   check_order=(1, 0))


def switch(index, branches, *operands, operand=_no_operand):
    """``branches[clamp(index, 0, len(branches) - 1)](*operands)``, staged as one ``cond``."""
    if operand is not _no_operand:
        if operands:
            raise TypeError("lax.switch: if the 'operand' keyword is passed then no positional "
                            "operands can be passed")
        operands = (operand,)
    branches = list(branches)
    if not branches:
        raise ValueError("lax.switch: Empty branch sequence: branches must be a non-empty "
                         "sequence of callables")
    for i, b in enumerate(branches):
        if not callable(b):
            raise TypeError(f"lax.switch: branches argument should be a sequence of "
                            f"callables. branches[{i}] is not callable ({b!r}).")
    idx = _branch_index(index, len(branches))
    if len(branches) == 1:
        return branches[0](*operands)
    return _switch(idx, branches, operands,
                   ("branch 0",) + tuple(f"branch{i}" for i in range(1, len(branches))),
                   "switch")


def _fun_sourceinfo(fun):
    """``name at file:line`` of a branch function (as JAX's messages name it)."""
    while isinstance(fun, functools.partial) or hasattr(fun, "_scoped_fun"):
        fun = fun.func if isinstance(fun, functools.partial) else fun._scoped_fun()
    try:
        fun = inspect.unwrap(fun)
        code = fun.__code__
        return f"{fun.__name__} at {code.co_filename}:{code.co_firstlineno}"
    except (AttributeError, ValueError):
        return getattr(fun, "__name__", None) or type(fun).__name__


def _aval_words(a):
    """``float32[2,3]``: an aval as JAX's branch messages print it."""
    return f"{np.dtype(a.dtype).name}[{','.join(str(d) for d in a.shape)}]" \
        if hasattr(a, "shape") else str(a)


def _check_branch_outputs(what, name1, name2, f1, f2, t1, t2):
    """JAX's errors for branches whose outputs differ in structure or in type."""
    (j1, _, tree1), (j2, _, tree2) = t1, t2
    where = f"{name1} is {_fun_sourceinfo(f1)}\n{name2} is {_fun_sourceinfo(f2)}\n\n"
    if tree1 != tree2:
        diffs = [f"{name1} output{f' at path {p}' if p else ''} is a {a} but "
                 f"{name2} output{f' at path {p}' if p else ''} is a {b}, so {why}"
                 for p, a, b, why in _structure_differences(tree1, tree2)]
        if not diffs:
            diffs = [f"{name1} output is {tree1} but {name2} output is {tree2}, so their "
                     "structures differ"]
        raise TypeError(
            f"{what} branch outputs must have the same pytree structure, but they differ:\n\n"
            f"{where}{_listed(diffs, capitalize=False)}({name1} output: {tree1}; {name2} "
            f"output: {tree2})\n\nRevise {name1} and/or {name2} so that they have the same "
            "pytree structure.")
    if all(_typematch(a, b) for a, b in zip(j1.out_avals, j2.out_avals)):
        return
    try:
        paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(
            tree_util.tree_unflatten(tree1, list(range(len(j1.out_avals)))))[0]]
    except Exception:      # a custom node that cannot be rebuilt around indices
        paths = [""] * len(j1.out_avals)
    diffs = []
    for p, a1, a2 in zip(paths, j1.out_avals, j2.out_avals):
        if _typematch(a1, a2):
            continue
        why = [w for w, bad in (("the dtypes do not match", a1.dtype != a2.dtype),
                                ("the shapes do not match", a1.shape != a2.shape)) if bad]
        diffs.append(f"the output of {name1}{f' at path {p}' if p else ''} has type "
                     f"{_aval_words(a1)} but the corresponding output of {name2} has type "
                     f"{_aval_words(a2)}" + (", so " + ", and ".join(why) if why else ""))
    differences = (f"{diffs[0][0].upper()}{diffs[0][1:]}.\n" if len(diffs) == 1 else
                   "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n")
    raise TypeError(f"{what} branches must have equal output types but they differ.\n\n"
                    f"{where}{differences}\nRevise {name1} and/or {name2} so that all output "
                    "types match.")


def _switch_plain(index, funs, operands, names, what, check_order=None):
    tu = _tu()
    leaves, in_tree = _flatten_args(operands, f"lax.{what} operands")
    avals = [core.get_aval(x) for x in leaves]
    # as JAX: a branch function given several times is traced once
    by_id = {}
    traced = []
    for f, n in zip(funs, names):
        t = by_id.get(id(f))
        if t is None:
            t = by_id[id(f)] = _trace(f, in_tree, avals, f"lax.{what} {n}")
        traced.append(t)
    first, *rest = check_order or range(len(funs))
    for k in rest:
        _check_branch_outputs(what, names[first], names[k], funs[first], funs[k],
                              traced[first], traced[k])
    t0 = traced[0]
    # As JAX: constants closed over by several branches are passed once (by identity),
    # every branch takes all of them, and an output that every branch forwards from the
    # same input is taken from that input instead of being a cond output.
    all_consts, const_pos = [], {}
    for _, cs, _ in traced:
        for c in cs:
            if id(c) not in const_pos:
                const_pos[id(c)] = len(all_consts)
                all_consts.append(c)
    const_avals = [core.get_aval(c) for c in all_consts]
    branches = []
    for j, cs, _ in traced:
        mine = {const_pos[id(c)]: v for c, v in zip(cs, j.jaxpr.invars)}
        invars = [mine.get(k) or Var(a) for k, a in enumerate(const_avals)]
        invars += j.jaxpr.invars[len(cs):]
        branches.append(ClosedJaxpr(Jaxpr([], invars, j.jaxpr.outvars, j.jaxpr.eqns,
                                          j.jaxpr.debug_info), j.consts))
    fwds = []
    for b in branches:
        pos = {v: i for i, v in enumerate(b.jaxpr.invars)}
        fwds.append([pos.get(v) if type(v) is Var else None for v in b.jaxpr.outvars])
    in_fwd = [f[0] if f[0] is not None and len(set(f)) == 1 else None for f in zip(*fwds)]
    if any(f is not None for f in in_fwd):
        branches = [ClosedJaxpr(Jaxpr([], b.jaxpr.invars,
                                      [v for v, f in zip(b.jaxpr.outvars, in_fwd) if f is None],
                                      b.jaxpr.eqns, b.jaxpr.debug_info), b.consts)
                    for b in branches]
    outs = iter(cond_p.bind(index, *all_consts, *leaves, branches=tuple(branches)))
    all_inputs = all_consts + leaves
    outs = [next(outs) if f is None else all_inputs[f] for f in in_fwd]
    return tu.tree_unflatten(t0[2], outs)


# ----------------------------------------------------------------- loops: carries


def _carry_name(fun, pos=0):
    try:
        return list(inspect.signature(fun).parameters)[pos]
    except (ValueError, TypeError, IndexError):
        return "carry"


def _trace_loop_body(fun, in_tree, carry_avals, extra_avals, what, carry_out, name):
    """Trace a loop body whose carry must keep its type.  Weak-typed initial carries are
    promoted to the dtype the body produces (JAX's rule); any other mismatch raises a
    TypeError naming the carry component.  Returns (program, consts, out_tree, carry avals)."""
    for _ in range(2):
        j, consts, out_tree = _trace(fun, in_tree, carry_avals + extra_avals, what)
        outs = carry_out(out_tree, j.out_avals)
        if outs is None:
            return j, consts, out_tree, carry_avals
        tree_out, out_avals = outs
        new, bad = [], []
        for k, (a, b) in enumerate(zip(carry_avals, out_avals)):
            if _typematch(a, b):
                # as JAX (core.typematch ignores weak types): the carry keeps the initial
                # value's weak type in the body even if the body returns a strong value
                new.append(a)
            elif a.shape == b.shape and a.weak_type:
                # JAX's rule: promote the weak initial carry with the body's output type;
                # if the body still disagrees on the next trace, that is an error
                # (a weak float carry does not become the int the body returns).
                new.append(b.update(dtype=dtypes.result_type(a, b), weak_type=False))
            else:
                bad.append(k)
                new.append(a)
        if bad:
            raise TypeError(_carry_mismatch(what.removesuffix("_fun"), name, bad, carry_avals,
                                            out_avals))
        if new == carry_avals:
            return j, consts, out_tree, carry_avals
        carry_avals = new
    return j, consts, out_tree, carry_avals


_carry_paths: list = []


def _carry_component(name, path):
    """``the input carry c`` / ``the input carry component c[1]`` (JAX's words)."""
    return f"the input carry component {name}{path}" if path else f"the input carry {name}"


def _listed(diffs, capitalize=True):
    """One difference as a sentence, several as a bulleted list (JAX's layout)."""
    if len(diffs) == 1:
        return f"{diffs[0][0].upper() if capitalize else diffs[0][0]}{diffs[0][1:]}.\n"
    return "".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


def _carry_mismatch(what, name, bad, in_avals, out_avals):
    """JAX's message for a loop body whose carry output types differ from its input's."""
    paths = _carry_paths[-1] if _carry_paths else [""] * len(in_avals)
    diffs = []
    for k in bad:
        a, b = in_avals[k], out_avals[k]
        why = [w for w, differ in (("the dtypes do not match", a.dtype != b.dtype),
                                   ("the shapes do not match", a.shape != b.shape)) if differ]
        diffs.append(f"{_carry_component(name, paths[k])} has type {_aval_words(a)} but the "
                     f"corresponding output carry component has type {_aval_words(b)}"
                     + (", so " + ", and ".join(why) if why else ""))
    return (f"{what} function carry input and carry output must have equal types, but "
            f"they differ:\n\n{_listed(diffs)}\nRevise the function so that all output types "
            "match the corresponding input types (e.g. cast with .astype, or initialise the "
            "carry with the dtype and shape the body returns).")


class _LeafType:
    """A carry leaf's type inside a rebuilt carry (for structure messages)."""
    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return _aval_words(self.aval)


def _structure_differences(tree1, tree2):
    """(path as text, what the first has, what the second has, why) for each place two
    pytree structures differ (``tree_util.equality_errors`` on placeholder trees); empty
    where a custom node cannot be rebuilt around placeholders."""
    tu = _tu()
    try:
        t1 = tu.tree_unflatten(tree1, [_LeafType(None)] * tree1.num_leaves)
        t2 = tu.tree_unflatten(tree2, [_LeafType(None)] * tree2.num_leaves)
        return [(tu.keystr(p) if p else "", a, b, why)
                for p, a, b, why in tu.equality_errors(t1, t2)]
    except Exception:
        return []


def _carry_structure_mismatch(what, name, in_tree, out_tree):
    """JAX's message for a loop body whose carry output has another pytree structure
    than its input: each place the two differ, named by the carry parameter's name."""
    diffs = [f"{_carry_component(name, p)} is a {a} but the corresponding "
             f"component of the carry output is a {b}, so {why}"
             for p, a, b, why in _structure_differences(in_tree, out_tree)]
    differences = (_listed(diffs) if diffs else
                   f"the input tree structure is:\n{in_tree}\nthe output tree structure "
                   f"is:\n{out_tree}\n")
    return TypeError(
        f"{what} function carry input and carry output must have the same pytree structure, "
        f"but they differ:\n\n{differences}\nRevise the function so that the carry output "
        f"has the same pytree structure as the carry input (input {in_tree}, output "
        f"{out_tree}).")


def _cast_carry(leaves, avals):
    return [x if _typematch(core.get_aval(x), a) else ew.convert_element_type(x, a.dtype)
            for x, a in zip(leaves, avals)]


# Read-only carries.  A carry the body returns unchanged (the very variable it took) is
# loop-invariant: as JAX does, it is passed to the loop as a constant instead (scan: at
# the front of the constants; while: a body constant, when the cond does not read it), and
# the loop's output for it is the initial value.  Besides saving a copy per trip, this
# keeps such a carry unbatched under vmap with a batched predicate (a loop in a cond
# branch, flax's read-only parameters), so ``out_axes=None`` works for it.  A scanned
# output that is a scanned input as it is (``ys = xs``) is taken from the input.
_moved_programs: dict = {}    # (id(program), layout) -> (program, rewritten program)


def _memo_program(j, layout, build):
    """``build()``, remembered per (program, layout): loops keep one rewritten program per
    traced body, so the caches keyed on programs (eager loops' compiled kernels) hit."""
    key = (id(j), layout)
    hit = _moved_programs.get(key)
    if hit is None or hit[0] is not j:
        if len(_moved_programs) > 4096:
            _moved_programs.clear()
        hit = _moved_programs[key] = (j, build())
    return hit[1]


def _forwarded_carries(jaxpr, nconsts, ncarry):
    """Per carry: whether the body returns its input carry unchanged."""
    ins = jaxpr.invars[nconsts:nconsts + ncarry]
    return [o is i for i, o in zip(ins, jaxpr.outvars[:ncarry])]


def _rewrite(j, invars, outvars):
    jp = j.jaxpr
    return ClosedJaxpr(Jaxpr(jp.constvars, invars, outvars, jp.eqns, jp.debug_info), j.consts)


def _scan_forwarding(j, nconsts, ncarry):
    """(program, carries moved to constants, ys taken from xs (index into xs or None))."""
    jp = j.jaxpr
    move = _forwarded_carries(jp, nconsts, ncarry)
    xs_pos = {v: k for k, v in enumerate(jp.invars[nconsts + ncarry:])}
    ys_fwd = [xs_pos.get(v) if type(v) is Var else None for v in jp.outvars[ncarry:]]
    if not any(move) and all(f is None for f in ys_fwd):
        return j, move, ys_fwd

    def build():
        carries = jp.invars[nconsts:nconsts + ncarry]
        invars = ([v for v, m in zip(carries, move) if m] + jp.invars[:nconsts]
                  + [v for v, m in zip(carries, move) if not m] + jp.invars[nconsts + ncarry:])
        outvars = ([v for v, m in zip(jp.outvars[:ncarry], move) if not m]
                   + [v for v, f in zip(jp.outvars[ncarry:], ys_fwd) if f is None])
        return _rewrite(j, invars, outvars)
    return _memo_program(j, ("scan", nconsts, ncarry), build), move, ys_fwd


def _while_forwarding(cj, cnconsts, body, bnconsts, ncarry):
    """(cond program, body program, carries moved to body constants)."""
    fwd = _forwarded_carries(body.jaxpr, bnconsts, ncarry)
    if not any(fwd):
        return cj, body, fwd
    read = {v for e in cj.jaxpr.eqns for v in e.invars if type(v) is Var}
    read.update(v for v in cj.jaxpr.outvars if type(v) is Var)
    c_carries = cj.jaxpr.invars[cnconsts:]
    move = [f and v not in read for f, v in zip(fwd, c_carries)]
    if not any(move):
        return cj, body, move
    key = ("while", cnconsts, bnconsts, ncarry, tuple(move))
    new_cj = _memo_program(cj, key, lambda: _rewrite(
        cj, cj.jaxpr.invars[:cnconsts] + [v for v, m in zip(c_carries, move) if not m],
        cj.jaxpr.outvars))

    def build_body():
        jp = body.jaxpr
        carries = jp.invars[bnconsts:]
        return _rewrite(body, [v for v, m in zip(carries, move) if m] + jp.invars[:bnconsts]
                        + [v for v, m in zip(carries, move) if not m],
                        [v for v, m in zip(jp.outvars, move) if not m])
    return new_cj, _memo_program(body, key, build_body), move


def _merge_moved(move, outs, moved):
    """Loop outputs in carry order: a moved carry's output is its initial value."""
    outs, moved = iter(outs), iter(moved)
    return [next(moved) if m else next(outs) for m in move]


# ----------------------------------------------------------------- while_loop


def _while_plain(cond_fun, body_fun, init_val, *, max_steps=None, checkpoint=None):
    """``while cond_fun(val): val = body_fun(val)`` as one ``while`` primitive.

    Forward-differentiable (jvp, linearize) and batchable.  Like JAX's, it is not
    reverse-differentiable -- unless ``max_steps`` (a static int) bounds the trip count:
    then the loop runs as one bounded loop of ``max_steps`` trips whose trips after
    ``cond_fun`` turns false skip ``body_fun`` (a ``cond``), and ``grad``/``vjp`` work.
    The loop stops after ``max_steps`` trips even if ``cond_fun`` is still true.
    ``checkpoint`` (with ``max_steps``) trades compute for memory in reverse mode:
    ``None`` stores every trip's residuals (O(max_steps) memory); ``"sqrt"`` splits the
    trips into ~sqrt(max_steps) fixed segments, stores only each segment's carry and
    recomputes a segment during the backward pass (O(sqrt(max_steps)) memory, about one
    extra forward pass of compute); an int ``k`` uses segments of ``k`` trips.
    """
    if max_steps is None and checkpoint is not None:
        raise ValueError("lax.while_loop: checkpoint= needs max_steps= (a static bound on "
                         "the trip count)")
    if not (callable(cond_fun) and callable(body_fun)):
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
    tu = _tu()
    leaves, tree = _flatten_args(init_val, "lax.while_loop init_val")
    in_tree = tu.tree_structure((init_val,))
    avals = [core.get_aval(x) for x in leaves]
    name = _carry_name(body_fun)

    def check_out(out_tree, out_avals):
        if out_tree != tree:
            raise _carry_structure_mismatch("lax.while_loop body", name, tree, out_tree)
        return out_tree, out_avals

    _carry_paths.append(_paths(init_val))
    try:
        body, bconsts, _, avals = _trace_loop_body(body_fun, in_tree, avals, [],
                                                   "lax.while_loop body_fun", check_out, name)
    finally:
        _carry_paths.pop()
    cj, cconsts, ctree = _trace(cond_fun, in_tree, avals, "lax.while_loop cond_fun")
    pred = cj.out_avals
    if not _tu().treedef_is_leaf(ctree):
        raise TypeError(f"lax.while_loop: cond_fun must return a boolean scalar, but got "
                        f"pytree {ctree}. Return one bool[] (e.g. combine the conditions "
                        "with &, or reduce with .all()/.any()).")
    if len(pred) != 1 or pred[0].shape != () or pred[0].dtype != np.bool_:
        got = ", ".join(repr(a) for a in pred) or "nothing"
        raise TypeError(f"lax.while_loop: cond_fun must return a boolean scalar, but got "
                        f"output type(s) [{got}]. Reduce it with .all()/.any() or compare "
                        "to get a bool[].")
    leaves = _cast_carry(leaves, avals)
    if max_steps is not None:
        from xform._src.primitives.bounded_while import bounded_while  # deferred: import cycle
        return bounded_while(cond_fun, body_fun, tu.tree_unflatten(tree, leaves), max_steps,
                             checkpoint)
    cj, body, move = _while_forwarding(cj, len(cconsts), body, len(bconsts), len(leaves))
    moved = [x for x, m in zip(leaves, move) if m]
    bconsts = moved + list(bconsts)
    outs = while_p.bind(*cconsts, *bconsts, *[x for x, m in zip(leaves, move) if not m],
                        cond_jaxpr=cj, body_jaxpr=body,
                        cond_nconsts=len(cconsts), body_nconsts=len(bconsts))
    return tu.tree_unflatten(tree, _merge_moved(move, outs, moved))


# ----------------------------------------------------------------- scan


def _concrete_scan_arg(x, name, expects, hint):
    """``x`` as a concrete value (a traced ``length``/``unroll`` whose value is known is
    fine); JAX's ConcretizationTypeError for one only known when the program runs."""
    if isinstance(x, Array):
        return x._value
    if not isinstance(x, Tracer):
        return x
    v = x.to_concrete_value()
    if v is None:
        raise errors.ConcretizationTypeError(
            x, f"the `{name}` argument of lax.scan",
            suggestion=f"The `{name}` argument to `scan` expects a concrete {expects} value. "
                       f"{hint}")
    return np.asarray(v)


def _scan_plain(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    """``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns
    ``(final carry, stacked ys)``.  Reverse-differentiable: the forward loop saves
    per-iteration residuals (memory linear in ``length``)."""
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")
    tu = _tu()
    x_leaves, x_tree = _flatten_args(xs, "lax.scan xs")
    if length is not None:
        length = _concrete_scan_arg(length, "length", "`int`", "For scan-like iteration "
                                    "with a dynamic length, use `while_loop` or `fori_loop`.")
        try:
            length = operator.index(length)
        except TypeError:
            raise TypeError(f"lax.scan: length argument should be an int, got {length!r}") \
                from None
        if length < 0:
            raise ValueError(f"lax.scan: length must be non-negative, got {length}")
    x_avals = [core.get_aval(x) for x in x_leaves]
    scalars = [(p, x) for p, x, a in zip(_paths(xs), x_leaves, x_avals) if a.ndim == 0]
    if scalars:
        vals = ", ".join(str(x) if not isinstance(x, Tracer) else x.aval.str_short()
                         for _, x in scalars)
        where = ", ".join(f"xs{p}" for p, _ in scalars)
        raise ValueError(f"lax.scan: scan got value with no leading axis to scan over: "
                         f"{vals}. ({where}: shape (); every leaf of xs needs a leading "
                         "axis to scan over.)")
    sizes = sorted({a.shape[0] for a in x_avals})
    if len(sizes) > 1:
        detail = ", ".join(f"xs{p}: {a.shape[0]}" for p, a in zip(_paths(xs), x_avals))
        raise ValueError(f"lax.scan: scan got values with different leading axis sizes: "
                         f"{', '.join(str(a.shape[0]) for a in x_avals)}. ({detail}; all "
                         "leaves of xs must have the same leading size.)")
    if length is None:
        if not sizes:
            raise ValueError("lax.scan: scan got no values to scan over and `length` not "
                             "provided. (xs is empty or None: pass length=.)")
        length = sizes[0]
    elif sizes and sizes[0] != length:
        # (JAX's exact message: its test compares it literally)
        raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                         f"leading axis sizes {[a.shape[0] for a in x_avals]}.")
    unroll = _concrete_scan_arg(unroll, "unroll", "`int` or `bool`", "Pass a Python int or "
                                "bool (mark it static under jit).")
    if isinstance(unroll, (np.ndarray, np.generic)) and unroll.shape == ():
        unroll = unroll.item()
    if not isinstance(unroll, bool):
        try:
            unroll = operator.index(unroll)
        except TypeError:
            raise ValueError(f"lax.scan: `unroll` must be a `bool` or a non-negative `int`. "
                             f"Got {unroll!r}.") from None
        if unroll < 0:
            raise ValueError(f"lax.scan: `unroll` must be a `bool` or a non-negative `int`. "
                             f"Got {unroll}.")
    if isinstance(unroll, bool):
        unroll = max(length, 1) if unroll else 1
    c_leaves, c_tree = _flatten_args(init, "lax.scan init")
    c_avals = [core.get_aval(c) for c in c_leaves]
    slice_avals = [a.update(shape=a.shape[1:]) for a in x_avals]
    in_tree = tu.tree_structure((init, xs))
    name = _carry_name(f)
    ybox = []

    def check_out(out_tree, out_avals):
        try:
            carry_tree, y_tree = tu.treedef_children(out_tree)
            if len(tu.treedef_children(out_tree)) != 2:
                raise ValueError
        except (ValueError, TypeError, IndexError):
            try:
                got = tu.tree_unflatten(out_tree, [_LeafType(a) for a in out_avals])
            except Exception:
                got = out_tree
            raise TypeError(f"lax.scan: scan body output must be a pair, got {got}. The body "
                            "f must return (new carry, y).") from None
        if carry_tree != c_tree:
            raise _carry_structure_mismatch("lax.scan: scan body", name, c_tree, carry_tree)
        ybox[:] = [y_tree]
        return carry_tree, out_avals[:len(c_avals)]

    _carry_paths.append(_paths(init))
    try:
        j, consts, out_tree, c_avals = _trace_loop_body(
            f, in_tree, c_avals, slice_avals, "lax.scan body", check_out,
            name)
    finally:
        _carry_paths.pop()
    c_leaves = _cast_carry(c_leaves, c_avals)
    j, move, ys_fwd = _scan_forwarding(j, len(consts), len(c_leaves))
    moved = [x for x, m in zip(c_leaves, move) if m]
    consts = moved + list(consts)
    carry = [x for x, m in zip(c_leaves, move) if not m]
    outs = scan_p.bind(*consts, *carry, *x_leaves, reverse=bool(reverse), length=length,
                       jaxpr=j, num_consts=len(consts), num_carry=len(carry),
                       linear=(False,) * (len(consts) + len(carry) + len(x_leaves)),
                       unroll=int(unroll))
    carry_out = tu.tree_unflatten(c_tree, _merge_moved(move, outs[:len(carry)], moved))
    ys = iter(outs[len(carry):])
    ys = [next(ys) if f is None else x_leaves[f] for f in ys_fwd]
    return carry_out, tu.tree_unflatten(ybox[0], ys)


# ----------------------------------------------------------------- fori_loop


def _static_int(x):
    """The Python int of a concrete bound (a float one truncated, as JAX's ``int(lower)``),
    or None if it is only known traced."""
    if isinstance(x, (bool, np.bool_)):
        return None
    if isinstance(x, (int, float, np.integer, np.floating)):
        return int(x)
    if isinstance(x, Array):
        return int(x._value) if x.shape == () else None
    if isinstance(x, Tracer):
        v = x.to_concrete_value()
        return None if v is None or np.shape(v) != () else int(v)
    return None


_fori_steps: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _fori_scan_step(body_fun, dt):
    """The scan body of ``fori_loop(.., body_fun, ..)``: one function per ``body_fun`` (and
    index dtype), so that the scan's trace cache recognises the loop (as JAX's)."""
    def make(get_fun):
        def step(loop_carry, _):     # (JAX's name for the carry in its messages)
            i, x = loop_carry
            # the step's 1 is made here, under the body's trace, so that it is staged as
            # the literal ``1`` (JAX's ``i + 1``), not as a constant closed over
            one = Array(np.asarray(1, dt), True)
            return (ew.add_p.bind(i, one), get_fun()(i, x)), None
        return step
    try:
        per_fun = _fori_steps.get(body_fun)
        if per_fun is None:
            per_fun = _fori_steps[body_fun] = {}
    except TypeError:
        return make(lambda: body_fun)
    step = per_fun.get(dt)
    if step is None:   # (held weakly: the cache must not keep body_fun alive)
        step = per_fun[dt] = make(weakref.ref(body_fun))
    return step


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """``for i in range(lower, upper): val = body_fun(i, val)``.

    With concrete bounds it is a ``scan`` (reverse-differentiable), otherwise a
    ``while_loop`` (forward-differentiable only).
    """
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    la, ua = (core.get_aval(b) if _is_arraylike(b) else None for b in (lower, upper))
    for nm, a, b in (("lower", la, lower), ("upper", ua, upper)):
        # (As JAX: a float bound is allowed; concrete bounds are truncated to ints, traced
        # ones count in their own dtype.)
        if a is None or a.shape != () or a.dtype == np.bool_ or not (
                dtypes.is_integer(a.dtype) or dtypes.issubdtype(a.dtype, np.floating)):
            got = a.str_short() if a is not None else f"{b!r} of type {type(b).__name__}"
            raise TypeError(f"lax.fori_loop: {nm} must be an integer or real scalar, got {got}")
    if la.dtype != ua.dtype and not (la.weak_type != ua.weak_type and all(
            dtypes.issubdtype(a.dtype, np.signedinteger) for a in (la, ua))):
        raise TypeError(f"lax.fori_loop: lower and upper arguments to fori_loop must have "
                        f"equal types, got {la.dtype.name} and {ua.dtype.name}. Cast one of "
                        "them (or pass a Python int, which takes the other's integer type).")
    # (As JAX: equal dtypes count in that dtype, weak or not -- two weakly typed float
    # bounds of a jitted function count in float32; otherwise the strong bound's dtype.)
    dt = la.dtype if (la.dtype == ua.dtype or not la.weak_type) else ua.dtype
    lo_s, up_s = _static_int(lower), _static_int(upper)
    if lo_s is not None and up_s is not None:
        n = max(up_s - lo_s, 0)
        # As in JAX, concrete bounds are taken as Python ints: the index is a weakly
        # typed default-int scalar (and stays weak in the loop).
        dt_i = dtypes.canonicalize_dtype(np.int64)
        lower_a = Array(np.asarray(lo_s, dt_i), True)
        step = _fori_scan_step(body_fun, dt_i)
        if unroll is None:
            unroll = 1
        (_, out), _ = scan(step, (lower_a, init_val), None, length=n, unroll=unroll)
        return out
    if unroll not in (None, 1, False):
        raise ValueError("lax.fori_loop: Can only use `unroll` in `fori_loop` if the loop "
                         "bounds are statically known. Pass concrete lower and upper bounds "
                         "(under jit, mark them static) or drop `unroll`.")
    # As JAX: only a bound of another dtype (a weak one) is converted.
    if la.dtype != dt:
        lower = ew.convert_element_type(lower, dt)
    if ua.dtype != dt:
        upper = ew.convert_element_type(upper, dt)
    weak = core.get_aval(lower).weak_type

    def cond_fun(c):
        i, u, _ = c
        return ew.lt_p.bind(i, u)

    def body(c):
        i, u, x = c
        one = Array(np.asarray(1, dt), weak)   # made in the body's trace: a literal
        return ew.add_p.bind(i, one), u, body_fun(i, x)
    return while_loop(cond_fun, body, (lower, upper, init_val))[2]


# ----------------------------------------------------------------- map


def map(f, xs, *, batch_size=None):  # noqa: A001  (JAX's name)
    """``stack([f(x) for x in xs])`` as a scan; with ``batch_size``, ``f`` is vmapped over
    chunks of that many elements (and once over the remainder)."""
    tu = _tu()
    if batch_size is None:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]
    batch_size = operator.index(batch_size)
    if batch_size <= 0:
        raise ValueError(f"lax.map: batch_size must be positive, got {batch_size}")
    leaves, tree = _flatten_args(xs, "lax.map xs")
    if not leaves:
        raise ValueError("lax.map: xs has no arrays to map over")
    n = core.get_aval(leaves[0]).shape[0]
    nb, rem = divmod(n, batch_size)

    def vmapped(chunk_leaves, size):
        outs_tree = []

        def g(*ls):
            o = f(tu.tree_unflatten(tree, list(ls)))
            ol, ot = tu.tree_flatten(o)
            outs_tree[:] = [ot]
            return ol
        outs, _ = batching.batch_flat(g, batching.AxisData(size), chunk_leaves,
                                      [0] * len(chunk_leaves), lambda k: [0] * k)
        return outs, outs_tree[0]

    main = [st.reshape(st.slice_in_dim(x, 0, nb * batch_size, axis=0),
                       (nb, batch_size) + core.get_aval(x).shape[1:]) for x in leaves]
    otree = []

    def body(_, chunk):
        outs, t = vmapped(list(chunk), batch_size)
        otree[:] = [t]
        return (), outs
    _, ys = scan(body, (), main) if nb else ((), None)
    pieces = []
    if nb:
        pieces.append([st.reshape(y, (nb * batch_size,) + core.get_aval(y).shape[2:]) for y in ys])
    if rem:
        tail = [st.slice_in_dim(x, nb * batch_size, n, axis=0) for x in leaves]
        outs, t = vmapped(tail, rem)
        otree[:] = [t]
        pieces.append(outs)
    if len(pieces) == 1:
        flat = pieces[0]
    else:
        flat = [st.concatenate([a, b], 0) for a, b in zip(*pieces)]
    return tu.tree_unflatten(otree[0], flat)


# ----------------------------------------------------------------- associative_scan


def associative_scan(fn, elems, reverse=False, axis=0):
    """Inclusive prefix combination of ``elems`` along ``axis`` with the associative
    ``fn`` (Blelloch-style: O(log n) depth of ``fn`` calls on halved slices)."""
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    tu = _tu()
    leaves, tree = _flatten_args(elems, "lax.associative_scan elems")
    if not leaves:
        return elems
    avals = [core.get_aval(x) for x in leaves]
    nd = avals[0].ndim
    if nd == 0:
        raise ValueError("lax.associative_scan: elems must have at least one axis")
    ax = axis + nd if axis < 0 else axis
    if not 0 <= ax < nd:
        raise ValueError(f"lax.associative_scan: axis {axis} is out of bounds for arrays of "
                         f"rank {nd}")
    n = avals[0].shape[ax]
    for a in avals:
        if a.ndim <= ax or a.shape[ax] != n:
            raise ValueError("lax.associative_scan: every leaf of elems must have the same "
                             f"size along axis {axis}, got shapes "
                             + ", ".join(str(b.shape) for b in avals))
    if reverse:
        leaves = [st.rev(x, (ax,)) for x in leaves]

    def combine(a, b):
        out = fn(tu.tree_unflatten(tree, a), tu.tree_unflatten(tree, b))
        ol, ot = tu.tree_flatten(out)
        if ot != tree:
            raise TypeError(f"lax.associative_scan: fn must return the structure of elems "
                            f"{tree}, got {ot}")
        return ol

    def sl(x, start, stop, step=1):
        return st.slice_in_dim(x, start, stop, step, axis=ax)

    def interleave(a, b):
        """[a0, b0, a1, b1, ...] along ax; len(a) == len(b) or len(b) + 1."""
        na, nb = core.get_aval(a).shape[ax], core.get_aval(b).shape[ax]
        head = sl(a, 0, nb) if na != nb else a
        shape = core.get_aval(head).shape
        ex = lambda v: st.expand_dims(v, (ax + 1,))  # noqa: E731
        both = st.concatenate([ex(head), ex(b)], ax + 1)
        merged = st.reshape(both, shape[:ax] + (2 * nb,) + shape[ax + 1:])
        return merged if na == nb else st.concatenate([merged, sl(a, nb, na)], ax)

    def rec(xs):
        k = core.get_aval(xs[0]).shape[ax]
        if k < 2:
            return xs
        reduced = combine([sl(x, 0, k - 1, 2) for x in xs], [sl(x, 1, k, 2) for x in xs])
        odd = rec(reduced)
        if k % 2 == 0:
            even = combine([sl(o, 0, core.get_aval(o).shape[ax] - 1) for o in odd],
                           [sl(x, 2, k, 2) for x in xs])
        else:
            even = combine(odd, [sl(x, 2, k, 2) for x in xs])
        even = [st.concatenate([sl(x, 0, 1), e], ax) for x, e in zip(xs, even)]
        return [interleave(e, o) for e, o in zip(even, odd)]

    out = rec(list(leaves))
    if reverse:
        out = [st.rev(x, (ax,)) for x in out]
    return tu.tree_unflatten(tree, out)


# --- array references in loop and cond bodies ------------------------------------------
# A body that reads or writes references of its caller (interpreters/refs.py) is traced
# once to find them; then it is traced again with their values threaded through the
# construct: as extra carries of a loop, as extra operands and results of every branch
# of a cond.  After the primitive runs the final values are written back at the
# caller's level.  Bodies that touch no reference run unchanged.


class _BodyRefs(Exception):
    def __init__(self, refs):
        super().__init__("internal: a loop or cond body touched outer array references")
        self.refs = refs


def _no_returned_refs(out, what):
    for o in tree_util.tree_flatten(out)[0]:
        if isinstance(o, _refs.Ref):
            kind = "cond" if what in ("cond", "switch") else what
            raise ValueError(
                f"the body of {what} traced for {kind} returned a mutable array reference "
                f"of type {_refs.ref_error(o)}, but mutable array references cannot be "
                "returned from the bodies of higher-order primitives; return its value "
                "(ref[...]) instead")


def _scoped(f, what, known=(), vals=None, written=None, touched=None):
    """``f`` run in a reference scope: returns (its output, final values of ``known``);
    raises ``_BodyRefs`` naming references it touched beyond ``known``; adds the ids of
    the references it wrote to ``written``."""
    def run(*args):
        with _refs.Scope(what, preset=zip(known, vals if vals is not None else ())) as sc:
            out = f(*args)
        if touched is not None:
            touched.update((id(r), r) for r in sc.touched() if id(r) in sc.used)
        new = [r for r in sc.touched() if not any(r is k for k in known)]
        if new:
            raise _BodyRefs(new)
        _no_returned_refs(out, what)
        if written is not None:
            written.update(id(r) for r in known if sc.final(r) is not sc.inputs[id(r)])
        return out, [sc.final(r) for r in known]
    return run


_scoped_plain_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _scoped_plain(f, what, role=None):
    """``f`` run in a reference scope, for a body expected to touch no outer reference
    (``_BodyRefs`` if it does): one wrapper per function and role, so the body trace
    cache (``_body_cache``) still recognises the function on the next call."""
    try:     # the carry's name in JAX's carry-mismatch messages comes from f's signature
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        sig = None

    def make(get_f):
        def run(*args):
            return _scoped(get_f(), what)(*args)[0]
        if sig is not None:
            run.__signature__ = sig
        run._scoped_fun = get_f     # (messages name f's source line, not this wrapper's)
        return run
    key = (what, role)
    try:
        per = _scoped_plain_cache.get(f)
        if per is None:
            per = _scoped_plain_cache[f] = {}
    except TypeError:           # not weakly referable or not hashable
        return make(lambda: f)
    w = per.get(key)
    if w is None:    # (held weakly: the cache must not keep f alive)
        w = per[key] = make(weakref.ref(f))
    return w


def _keep_type(v, like):
    """A reference's value threaded through a construct has the reference's type, which
    is never weak (as a JAX reference's aval)."""
    a, b = core.get_aval(v), core.get_aval(like)
    if a.weak_type or a.dtype != b.dtype:
        v = ew.convert_element_type_p.bind(v, new_dtype=b.dtype, weak_type=False)
    return v


def _read_strong(r, what):
    v = _refs.read(r, what)
    if core.get_aval(v).weak_type:
        v = ew.convert_element_type_p.bind(v, new_dtype=core.get_aval(v).dtype,
                                           weak_type=False)
    return v


def _add_known(known, refs):
    for r in refs:
        if not any(r is k for k in known):
            known.append(r)


def _check_ref_args(leaves, what):
    for x in leaves:
        if isinstance(x, _refs.Ref):
            raise TypeError(f"lax.{what}: a mutable array reference of type "
                            f"{_refs.ref_error(x)} cannot be passed as a carry, operand or "
                            "scanned value; close over it in the body instead")


def _param_names(f, n):
    try:
        ps = [p for p in inspect.signature(f).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        ps = []
    return [ps[i].name if i < len(ps) else f"args[{i}]" for i in range(n)]


def _closed_over_refs(f):
    """The references among ``f``'s closure cells (nonlocals it closes over)."""
    out = []
    for c in getattr(f, "__closure__", None) or ():
        try:
            v = c.cell_contents
        except ValueError:
            continue
        if isinstance(v, _refs.Ref):
            out.append(v)
    return out


def _ref_operands(fun_names, funs, args, names, what):
    """Array references passed as operands (or carries) of a cond or scan: JAX's checks
    (no reference twice, none both passed and closed over); returns their positions in
    the flattened operands.  The references themselves reach the bodies (their effects
    are threaded like those of references the bodies close over)."""
    paths = tree_util.tree_flatten_with_path(tuple(args))[0]
    seen, pos = {}, []
    for i, (path, x) in enumerate(paths):
        if not isinstance(x, _refs.Ref):
            continue
        k = path[0].idx if path and hasattr(path[0], "idx") else 0
        nm = names[k] + tree_util.keystr(tuple(path[1:])) if k < len(names) else f"#{i}"
        if id(x) in seen:
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                f"function, but when tracing {fun_names} for {what} the mutable array "
                f"reference of type {_refs.ref_error(x)} appeared at both {seen[id(x)]} "
                f"and {nm}.")
        seen[id(x)] = nm
        for f in funs:
            if any(x is r for r in _closed_over_refs(f)):
                raise ValueError(
                    f"when tracing {fun_names} for {what}, a mutable array reference of type "
                    f"{_refs.ref_error(x)} was both closed over and passed as the argument "
                    f"{nm}")
        pos.append(i)
    return pos


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    """JAX's ``lax.scan``: ``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``;
    the body may read and write array references it closes over."""
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")
    init_leaves, init_tree = tree_util.tree_flatten(init)
    if any(isinstance(x, _refs.Ref) for x in init_leaves):
        return _scan_ref_carry(f, init, init_leaves, init_tree, xs, length, reverse, unroll,
                               _split_transpose)
    known = []
    while True:
        try:
            if not known:
                return _scan_plain(_scoped_plain(f, "scan"), init, xs, length, reverse,
                                   unroll, _split_transpose)
            init_vals = [_read_strong(r, "scan") for r in known]

            written = set()

            def body(carry, x, _known=tuple(known), _init=init_vals):
                c, rv = carry
                out, finals = _scoped(f, "scan", _known, rv, written)(c, x)
                if not (isinstance(out, tuple) and len(out) == 2):
                    return out, None     # (scan's own error about the body's output)
                c2, y = out
                return (c2, [_keep_type(v, i) for v, i in zip(finals, _init)]), y
            (c, rv), ys = _scan_plain(body, (init, init_vals), xs, length, reverse, unroll,
                                      _split_transpose)
        except _BodyRefs as e:
            _add_known(known, e.refs)
            continue
        for r, v in zip(known, rv):
            if id(r) in written:
                _refs.write(r, v, "scan")
        return c, ys


def while_loop(cond_fun, body_fun, init_val, *, max_steps=None, checkpoint=None):
    """JAX's ``lax.while_loop``; its functions may use array references they close
    over (``cond_fun`` may only read them)."""
    if not (callable(cond_fun) and callable(body_fun)):
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
    leaves, tree = tree_util.tree_flatten(init_val)
    if _hj.has_hi(leaves):
        return _hi_while(cond_fun, body_fun, leaves, tree, max_steps, checkpoint)
    known = []
    while True:
        try:
            if not known:
                return _while_plain(_scoped_plain(cond_fun, "while_loop", "cond"),
                                    _scoped_plain(body_fun, "while_loop", "body"),
                                    init_val, max_steps=max_steps, checkpoint=checkpoint)
            init_vals = [_read_strong(r, "while_loop") for r in known]
            kt = tuple(known)
            written = set()
            in_cond, in_body = set(), set()

            def cond2(carry):
                v, rv = carry
                return _scoped(cond_fun, "while_loop", kt, rv, written, in_cond)(v)[0]

            def body2(carry):
                v, rv = carry
                out, finals = _scoped(body_fun, "while_loop", kt, rv, written, in_body)(v)
                return out, [_keep_type(x, i) for x, i in zip(finals, init_vals)]
            v, rv = _while_plain(cond2, body2, (init_val, init_vals), max_steps=max_steps,
                                 checkpoint=checkpoint)
        except _BodyRefs as e:
            _add_known(known, e.refs)
            continue
        both = in_cond & in_body
        if both:
            r = next(iter(both))[1]
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                "function, but when tracing while_loop for jit the mutable array reference "
                f"of type {_refs.ref_error(r)} appeared at both args[0] and args[1] (cond_fun "
                "and body_fun both close over it); use it in one of them only, or carry its "
                "value")
        for r, x in zip(known, rv):
            if id(r) in written:
                _refs.write(r, x, "while_loop")
        return v


def _hi_while(cond_fun, body_fun, leaves, tree, max_steps, checkpoint):
    """A while_loop whose carry holds immutable high-level values: carried as their
    arrays, raised again for each function (their types may not change)."""
    lo, layout = _hj.lower_operands(leaves, "lax.while_loop init_val")
    if any(s is not None and s[0] == "mut" for s in layout):
        raise TypeError("lax.while_loop: a mutable high-level value (a Box, a hijax "
                        "variable) cannot be a loop carry; close over it instead")

    def lo_cond(c):
        return cond_fun(tree.unflatten(_hj.raise_operands(c, layout)))

    def lo_body(c):
        out = body_fun(tree.unflatten(_hj.raise_operands(c, layout)))
        o_leaves, o_tree = tree_util.tree_flatten(out)
        o_lo, o_layout = _hj.lower_operands(o_leaves, "lax.while_loop body_fun output")
        if o_tree != tree or o_layout != layout:
            raise TypeError("lax.while_loop: body_fun output and input must have identical "
                            f"types: the carry is {tree} with high-level types "
                            f"{[s[1] for s in layout if s]}, body_fun returned {o_tree} "
                            f"with {[s[1] for s in o_layout if s]}")
        return o_lo

    out = while_loop(lo_cond, lo_body, lo, max_steps=max_steps, checkpoint=checkpoint)
    return tree.unflatten(_hj.raise_operands(out, layout))


def _hi_switch(index, funs, leaves, tree, names, what, check_order):
    """cond/switch with high-level operands: immutable ones travel as their arrays,
    mutable ones are passed through (each branch uses them as closed over)."""
    lo, layout = _hj.lower_operands(leaves, f"lax.{what} operands")

    def wrap(f):
        def g(*lo_ops):
            return f(*tree.unflatten(_hj.raise_operands(lo_ops, layout)))
        g.__name__ = getattr(f, "__name__", what)
        return g
    outs = _switch(index, [wrap(f) for f in funs], tuple(lo), names, what, check_order)
    o_leaves = tree_util.tree_leaves(outs)
    if _hj.has_hi(o_leaves):
        raise TypeError(f"lax.{what}: a branch returned a high-level value; return arrays "
                        "(high-level results of cond are not implemented by xform)")
    return outs


def _switch(index, funs, operands, names, what, check_order=None):
    leaves, tree = tree_util.tree_flatten(tuple(operands))
    if _hj.has_hi(leaves):
        return _hi_switch(index, funs, leaves, tree, names, what, check_order)
    if any(isinstance(x, _refs.Ref) for x in leaves):
        f0 = funs[-1] if what == "cond" else funs[0]
        nm = getattr(f0, "__name__", what)
        pos = _ref_operands(nm, funs, operands, _param_names(f0, len(operands)), what)
        refs = {i: leaves[i] for i in pos}
        rest = [x for i, x in enumerate(leaves) if i not in refs]

        def through(f):
            def g(*ops):
                it = iter(ops)
                full = [refs[i] if i in refs else next(it) for i in range(len(leaves))]
                return f(*tree_util.tree_unflatten(tree, full))
            return g
        wrapped = {}
        fs = [wrapped.setdefault(id(f), through(f)) for f in funs]
        return _switch(index, fs, tuple(rest), names, what, check_order)
    known = []
    while True:
        try:
            if not known:
                wrapped = {}
                fs = [wrapped.setdefault(id(f), _scoped_plain(f, what)) for f in funs]
                return _switch_plain(index, fs, operands, names, what, check_order)
            vals = [_read_strong(r, what) for r in known]
            kt = tuple(known)
            wrapped = {}
            written = set()

            def mk(f):
                def branch(rv, *ops):
                    out, finals = _scoped(f, what, kt, rv, written)(*ops)
                    return out, [_keep_type(x, i) for x, i in zip(finals, vals)]
                return branch
            fs = [wrapped.setdefault(id(f), mk(f)) for f in funs]
            out, rv = _switch_plain(index, fs, (vals,) + tuple(operands), names, what,
                                    check_order)
        except _BodyRefs as e:
            _add_known(known, e.refs)
            continue
        for r, x in zip(known, rv):
            if id(r) in written:
                _refs.write(r, x, what)
        return out


def _scan_ref_carry(f, init, leaves, tree, xs, length, reverse, unroll, split):
    """A scan whose carry holds array references: each iteration's body gets the same
    references (they must come back unchanged in the new carry); their effects are
    threaded like those of references the body closes over."""
    nm = getattr(f, "__name__", "scan")
    pos = _ref_operands(nm, [f], (init,), _param_names(f, 1), "scan")
    refs = {i: leaves[i] for i in pos}
    pname = _param_names(f, 1)[0]
    paths = tree_util.tree_flatten_with_path(init)[0]
    names = {i: pname + tree_util.keystr(paths[i][0]) for i in pos}
    rest = [x for i, x in enumerate(leaves) if i not in refs]

    def body(c, x):
        it = iter(c)
        full = [refs[i] if i in refs else next(it) for i in range(len(leaves))]
        out = f(tree_util.tree_unflatten(tree, full), x)
        if not (isinstance(out, tuple) and len(out) == 2):
            return out
        for path, o in tree_util.tree_flatten_with_path(out)[0]:
            if isinstance(o, _refs.Ref):      # (as JAX: even the carry's own reference)
                origin = next((f"\n\nThe returned mutable array was passed in as the "
                               f"argument {names[i]}." for i, r in refs.items() if r is o), "")
                raise ValueError(
                    f"function {nm} traced for scan returned a mutable array reference of "
                    f"type {_refs.ref_error(o)} at output tree path "
                    f"result{tree_util.keystr(path)}, but mutable array references cannot "
                    f"be returned.{origin}")
        return out     # (a carry without its references: scan's own type error)
    c, ys = scan(body, rest, xs, length, reverse, unroll, split)
    it = iter(c)
    full = [refs[i] if i in refs else next(it) for i in range(len(leaves))]
    return tree_util.tree_unflatten(tree, full), ys

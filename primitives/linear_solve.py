"""``custom_linear_solve``: a linear solve with user-supplied solvers (JAX's ``linear_solve``).

The primitive carries four const-free programs (``jaxprs``: matvec, vecmat,
solve, transpose_solve; vecmat/transpose_solve may be None) whose hoisted
constants lead the arguments, grouped by ``const_lengths``, followed by the
flat right-hand side ``b``.  Its value is ``solve(b)``; its derivatives are
those of ``x = A^-1 b`` whatever ``solve`` does internally:

* JVP: ``dx = A^-1 (db - dA x)`` -- one more solve; ``dA x`` is the JVP of
  matvec with respect to its constants at ``x``.
* transpose (linear in ``b``): ``ct_b = A^-T ct_x`` -- the same primitive with
  matvec<->vecmat and solve<->transpose_solve swapped.
* batching: every program batched with its arguments' axes at 0.
* lowering: the solve program, inlined.
"""
from __future__ import annotations

from typing import NamedTuple

from xform._src.interpreters import ad, batching, core
from xform._src.interpreters.ad import Zero
from xform._src.interpreters.core import Primitive
from xform._src.interpreters.ir import eval_jaxpr
from xform._src.primitives._rules import bdim_at_front
from xform._src.primitives.custom import hoist_consts
from xform._src.primitives import elementwise

__all__: list = []


class LinearSolveTuple(NamedTuple):
    matvec: object
    vecmat: object
    solve: object
    transpose_solve: object

    def transpose(self):
        return type(self)(self.vecmat, self.matvec, self.transpose_solve, self.solve)


linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)
linear_solve_p.impl_takes_arrays = True


def _split(args, const_lengths):
    out, i = [], 0
    for n in const_lengths:
        out.append(list(args[i:i + n]))
        i += n
    return LinearSolveTuple(*out), list(args[i:])


def _run(closed, args):
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


def _impl(*args, const_lengths, jaxprs):
    jaxprs = LinearSolveTuple(*jaxprs)   # params may come back as plain tuples
    params, b = _split(args, const_lengths)
    return _run(jaxprs.solve, params.solve + b)


linear_solve_p.def_impl(_impl)
linear_solve_p.def_abstract_eval(lambda *avals, const_lengths, jaxprs:
                                 list(jaxprs[2].out_avals))


def _jvp(primals, tangents, *, const_lengths, jaxprs):
    jaxprs = LinearSolveTuple(*jaxprs)
    x = linear_solve_p.bind(*primals, const_lengths=const_lengths, jaxprs=jaxprs)
    params, _ = _split(primals, const_lengths)
    params_dot, b_dot = _split(tangents, const_lengths)
    nb = len(b_dot)
    rhs = b_dot
    if any(type(t) is not Zero for t in params_dot.matvec):
        zeros = [Zero(ad.tangent_aval(core.get_aval(v))) for v in x]
        _, mv_dot = ad.jvp_flat(lambda *a: _run(jaxprs.matvec, a), params.matvec + list(x),
                                list(params_dot.matvec) + zeros)
        rhs = [ad.add_tangents(b, _neg(m)) if type(b) is not Zero else _neg(m)
               if type(m) is not Zero else b for b, m in zip(b_dot, mv_dot)]
    if all(type(r) is Zero for r in rhs):
        return x, [Zero(ad.tangent_aval(core.get_aval(v))) for v in x]
    rhs = [ad.instantiate(r) for r in rhs]
    x_dot = linear_solve_p.bind(*primals[:len(primals) - nb], *rhs,
                                const_lengths=const_lengths, jaxprs=jaxprs)
    return x, x_dot


def _neg(t):
    if type(t) is Zero:
        return t
    return elementwise.neg_p.bind(t)


def _transpose(cts, *args, const_lengths, jaxprs):
    jaxprs = LinearSolveTuple(*jaxprs)
    if jaxprs.transpose_solve is None:
        raise TypeError("transpose_solve required for backwards mode automatic "
                        "differentiation of custom_linear_solve")
    params, b = _split(args, const_lengths)
    if any(ad.is_undefined_primal(v) for vs in params for v in vs):
        raise ValueError("custom_linear_solve is linear only in b: its matvec/solve "
                         "constants cannot be transposed")
    cts = [ad.instantiate(c) if type(c) is Zero else c for c in cts]
    flat = [v for vs in params.transpose() for v in vs]
    ct_b = linear_solve_p.bind(*flat, *cts, const_lengths=tuple(LinearSolveTuple(
        *const_lengths).transpose()), jaxprs=jaxprs.transpose())
    return [None] * sum(const_lengths) + list(ct_b)


def _batch(axis_data, vals, dims, *, const_lengths, jaxprs):
    vals = [bdim_at_front(v, d, axis_data.size) for v, d in zip(vals, dims)]
    params, b = _split(vals, const_lengths)
    new_params, new_jaxprs = [], []
    for group, closed in zip(params, jaxprs):
        if closed is None:
            new_params.append(group)
            new_jaxprs.append(None)
            continue
        batched, _ = batching.batch_jaxpr(closed, axis_data, [0] * len(closed.in_avals),
                                          [0] * len(closed.out_avals))
        hoisted, consts = hoist_consts(batched.jaxpr, batched.consts)
        new_params.append(list(consts) + group)
        new_jaxprs.append(hoisted)
    flat = [v for g in new_params for v in g]
    outs = linear_solve_p.bind(*flat, *b, const_lengths=tuple(len(g) for g in new_params),
                               jaxprs=LinearSolveTuple(*new_jaxprs))
    return outs, [0] * len(outs)


ad.jvp_rules[linear_solve_p] = _jvp
ad.transpose_rules[linear_solve_p] = _transpose
batching.batch_rules[linear_solve_p] = _batch

"""``xform.lax.custom_linear_solve`` and ``xform.lax.custom_root`` (implicit differentiation).

``custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False)``
computes ``solve(matvec, b)`` and differentiates it as ``A^-1 b`` (see
``primitives/linear_solve.py``).  ``custom_root(f, initial_guess, solve,
tangent_solve)`` computes ``solve(f, initial_guess)`` and differentiates the
root by the implicit function theorem: ``du = -(df/du)^-1 (df/dp dp)`` with
``tangent_solve(linearized f, rhs)``; only the constants ``f`` closes over
(its parameters) carry derivatives, as in JAX.
"""
from __future__ import annotations

from xform._src.interpreters import core
from xform._src.interpreters import tree_util as tu
from xform._src.interpreters.ir import eval_jaxpr
from xform._src.interpreters.jaxpr_transforms import transpose_jaxpr
from xform._src.primitives.custom import trace_flat
from xform._src.primitives.linear_solve import LinearSolveTuple, linear_solve_p
from xform._src.primitives.structural import as_operand

__all__ = ["custom_linear_solve", "custom_root"]


def _avals(leaves):
    return [core.get_aval(x) for x in leaves]


def _flat_fun(fun, in_tree, out_check=None, name="function"):
    """fun(pytree) -> pytree as a flat function; records the output tree."""
    store = {}

    def flat(*xs):
        out = fun(tu.tree_unflatten(in_tree, list(xs)))
        leaves, tree = tu.tree_flatten(out)
        store["tree"] = tree
        return leaves
    return flat, store


def _check_tree(what, got, want):
    if got != want:
        raise TypeError(f"custom_linear_solve: {what} must return a pytree with the structure "
                        f"of b ({want}), got {got}")


def _as_arrays(leaves):
    return [as_operand(x) for x in leaves]


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric: bool = False,
                        has_aux: bool = False):
    """Solve ``matvec(x) == b`` with ``solve(matvec, b)``, differentiated implicitly."""
    b_leaves, b_tree = tu.tree_flatten(b)
    b_leaves = _as_arrays(b_leaves)
    avals = _avals(b_leaves)

    def traced(fn, what):
        flat, store = _flat_fun(fn, b_tree)
        closed, consts = trace_flat(flat, avals, name=what)
        _check_tree(what, store["tree"], b_tree)
        return closed, consts

    matvec_c, matvec_k = traced(matvec, "matvec")

    aux = None
    if has_aux:   # aux values are passed through, not differentiated (as JAX); computing
        # them costs one extra call of solve outside the primitive
        import xform  # deferred: import cycle
        aux = tu.tree_map(xform.lax.stop_gradient, solve(matvec, b)[1])
        user_solve = solve
        solve = lambda mv, x: user_solve(mv, x)[0]  # noqa: E731
    solve_c, solve_k = traced(lambda x: solve(matvec, x), "solve")

    if symmetric:
        vecmat_c, vecmat_k = matvec_c, matvec_k
        tsolve_c, tsolve_k = solve_c, solve_k
    else:
        # vecmat: the transpose of matvec (linear in x; its constants are known)
        nk = len(matvec_k)
        t = transpose_jaxpr(matvec_c, [False] * nk + [True] * len(b_leaves))
        vecmat_c, vecmat_k = t, list(matvec_k)

        def vecmat(y):
            ys = tu.tree_leaves(y)
            return tu.tree_unflatten(b_tree, eval_jaxpr(t.jaxpr, t.consts, *matvec_k, *ys))
        if transpose_solve is None:
            tsolve_c, tsolve_k = None, []
        else:
            ts = transpose_solve if not has_aux else (
                lambda mv, x: transpose_solve(mv, x)[0])
            tsolve_c, tsolve_k = traced(lambda x: ts(vecmat, x), "transpose_solve")
    jaxprs = LinearSolveTuple(matvec_c, vecmat_c, solve_c, tsolve_c)
    const_lengths = (len(matvec_k), len(vecmat_k), len(solve_k), len(tsolve_k))
    outs = linear_solve_p.bind(*matvec_k, *vecmat_k, *solve_k, *tsolve_k, *b_leaves,
                               const_lengths=const_lengths, jaxprs=jaxprs)
    x = tu.tree_unflatten(b_tree, outs)
    return (x, aux) if has_aux else x


def custom_root(f, initial_guess, solve, tangent_solve, has_aux: bool = False):
    """Root of ``f`` from ``solve(f, initial_guess)``, differentiated implicitly."""
    import xform  # deferred: import cycle
    g_leaves, g_tree = tu.tree_flatten(initial_guess)
    g_leaves = _as_arrays(g_leaves)
    avals = _avals(g_leaves)

    f_flat, f_store = _flat_fun(f, g_tree)
    f_c, f_k = trace_flat(f_flat, avals, name="f")
    if f_store["tree"] != g_tree:
        raise TypeError(f"custom_root: f must return a pytree with the structure of "
                        f"initial_guess ({g_tree}), got {f_store['tree']}")
    s_flat, s_store = _flat_fun(lambda x: solve(f, x), g_tree)
    s_c, s_k = trace_flat(s_flat, avals, name="solve")
    out_tree = s_store["tree"]
    n = len(g_leaves)

    def f_at(params, xs):
        return eval_jaxpr(f_c.jaxpr, f_c.consts, *params, *xs)

    @xform.custom_jvp
    def root(f_params, s_params, guess):
        return eval_jaxpr(s_c.jaxpr, s_c.consts, *s_params, *guess)

    @root.defjvp
    def root_jvp(primals, tangents):
        f_params, s_params, guess = primals
        f_dot = tangents[0]
        sol = root(f_params, s_params, guess)
        solution, aux = list(sol[:n]), list(sol[n:])
        _, rhs = xform.jvp(lambda *p: f_at(list(p), solution), tuple(f_params), tuple(f_dot))
        _, f_jvp = xform.linearize(lambda *u: f_at(list(f_params), list(u)), *solution)

        def lin(t):
            out = f_jvp(*tu.tree_leaves(t))
            return tu.tree_unflatten(g_tree, list(out) if isinstance(out, (list, tuple))
                                     else [out])
        sol_dot = tangent_solve(lin, tu.tree_unflatten(g_tree, list(rhs)))
        sol_dot = [-t for t in tu.tree_leaves(sol_dot)]
        from xform import numpy as xnp  # deferred: import cycle
        return sol, sol_dot + [xnp.zeros_like(a) for a in aux]

    outs = root(list(f_k), list(s_k), list(g_leaves))
    return tu.tree_unflatten(out_tree, list(outs))

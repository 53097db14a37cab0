"""``xform.custom_derivatives``: JAX's module of the same name."""
from xform._custom_derivatives import (CustomVJPPrimal, SymbolicZero, closure_convert,  # noqa
                                       custom_gradient, custom_jvp, custom_vjp,
                                       custom_vjp_primal_tree_values)
from xform import numpy as jnp
from xform._src.interpreters import ad, core
from xform.tree_util import tree_map

from xform._src.primitives.custom import custom_jvp_call_p, custom_vjp_call_p  # noqa: F401
from xform._src.interpreters import tree_util as tu
from xform._src.primitives.custom import trace_flat
from xform._src.primitives.linear_call import linear_call_p
from xform._src.primitives.structural import as_operand
import numpy as np

__all__ = ["CustomVJPPrimal", "SymbolicZero", "closure_convert", "custom_gradient", "custom_jvp", "custom_vjp",
           "custom_jvp_call_p", "custom_vjp_call_p", "custom_vjp_primal_tree_values",
           "zero_from_primal", "linear_call"]


def zero_from_primal(val, symbolic_zeros=False):
    """Zero tangents shaped like ``val`` (float0 for integer leaves)."""


    def z(x):
        aval = core.get_aval(x)
        t = ad.tangent_aval(aval)
        if symbolic_zeros:
            return SymbolicZero(t)
        if t.dtype == ad.float0:
            return np.zeros(t.shape, ad.float0)
        return jnp.zeros(t.shape, t.dtype)
    return tree_map(z, val)


def linear_call(fun, fun_transpose, residual_args, linear_args):
    """``fun(residual_args, linear_args)``, with ``fun`` declared linear in
    ``linear_args`` and ``fun_transpose(residual_args, cotangents)`` as its transpose:
    reverse-mode differentiation (and ``linear_transpose``) use ``fun_transpose``
    instead of transposing ``fun``.  Residuals are not differentiated."""
    res_leaves, res_tree = tu.tree_flatten(residual_args)
    lin_leaves, lin_tree = tu.tree_flatten(linear_args)
    res_leaves = [as_operand(x) for x in res_leaves]
    lin_leaves = [as_operand(x) for x in lin_leaves]
    nr = len(res_leaves)
    store = {}

    def f_flat(*xs):
        out = fun(tu.tree_unflatten(res_tree, list(xs[:nr])),
                  tu.tree_unflatten(lin_tree, list(xs[nr:])))
        leaves, store["out"] = tu.tree_flatten(out)
        return [as_operand(v) for v in leaves]
    res_avals = [core.get_aval(x) for x in res_leaves]
    lin_avals = [core.get_aval(x) for x in lin_leaves]
    callee, kc = trace_flat(f_flat, res_avals + lin_avals, name="linear_call")
    out_tree = store["out"]

    def t_flat(*xs):
        ct = fun_transpose(tu.tree_unflatten(res_tree, list(xs[:nr])),
                           tu.tree_unflatten(out_tree, list(xs[nr:])))
        leaves, tree = tu.tree_flatten(ct)
        if tree != lin_tree:
            raise TypeError("linear_call: fun_transpose must return a pytree with the "
                            f"structure of linear_args ({lin_tree}), got {tree}")
        return [as_operand(v) for v in leaves]
    transpose, kt = trace_flat(t_flat, res_avals + list(callee.out_avals),
                               name="linear_call_transpose")
    for got, want in zip(transpose.out_avals, lin_avals):
        if (got.shape, got.dtype) != (want.shape, want.dtype):
            raise TypeError("linear_call: fun_transpose must return cotangents with the "
                            f"shapes and dtypes of linear_args: got {got.shape} {got.dtype} "
                            f"for {want.shape} {want.dtype}")
    outs = linear_call_p.bind(*kc, *kt, *res_leaves, *lin_leaves, callee=callee,
                              transpose=transpose, num_callee_consts=len(kc),
                              num_transpose_consts=len(kt), num_res=nr)
    return tu.tree_unflatten(out_tree, outs)

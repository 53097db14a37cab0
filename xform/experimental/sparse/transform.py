"""``sparsify``: run a function written for dense arrays on BCOO arguments (JAX's
``jax.experimental.sparse.sparsify``, its jaxpr-interpreter form).

The function is traced with dense stand-ins of the sparse arguments; the program is then
evaluated with BCOO values flowing through it: an equation none of whose inputs is sparse
is bound as usual, one with a sparse input uses the sparse rule of its primitive (the
``bcoo_*`` functions), and a primitive without a sparse rule raises NotImplementedError
naming it.  Rules: dot_general (one sparse operand), transpose, reduce_sum,
multiplication and division by dense values, sparse+sparse and sparse+dense addition,
sparse-sparse subtraction and multiplication, zero-preserving unary operations (``neg``,
``abs``, ``sin``, ``sqrt``, ``log1p``, ``tanh``, ``convert_element_type``, positive
``integer_pow`` ...), reshape/squeeze (no batch or dense dimensions), nested ``jit`` and
``sparse.todense``.
"""
from __future__ import annotations

import functools

import numpy as np

import xform
from xform import tree_util
from xform._src.interpreters.ir import Literal
from xform.experimental.sparse import api as _api
from xform.experimental.sparse import bcoo as _b
from xform.experimental.sparse.bcoo import BCOO
from xform.extend.core import primitives as P

__all__ = ["sparsify"]


def _is_sparse(x):
    return isinstance(x, BCOO)


def _unique(x):
    return x if x.unique_indices else _b.bcoo_sum_duplicates(x, nse=x.nse)


def _with_data(x, data):
    return BCOO((data, x.indices), shape=x.shape, indices_sorted=x.indices_sorted,
                unique_indices=x.unique_indices)


def _unary(prim, linear):
    def rule(x, **params):
        if not linear:
            x = _unique(x)
        return _with_data(x, prim.bind(x.data, **params))
    return rule


def _integer_pow(x, *, y):
    if y <= 0:
        raise NotImplementedError(
            f"sparse rule for integer_pow with non-positive exponent {y} is not implemented "
            "because it would result in dense output. If this is your intent, use "
            "sparse.todense() to convert your argument to a dense array.")
    return _unary(P.integer_pow_p, False)(x, y=y)


def _mul(x, y):
    if _is_sparse(x) and _is_sparse(y):
        if x is y and x.unique_indices:
            return _with_data(x, x.data * y.data)
        return _b.bcoo_multiply_sparse(x, y)
    if _is_sparse(y):
        x, y = y, x
    return x * y


def _div(x, y):
    if _is_sparse(y):
        raise NotImplementedError(
            "Division by a sparse array is not implemented because it would result in dense "
            "output. If this is your intent, use sparse.todense() to convert your arguments "
            "to a dense array.")
    return x / y


def _add(x, y):
    if _is_sparse(x) and _is_sparse(y) and x is y:
        return _with_data(x, x.data + y.data)
    return x + y if _is_sparse(x) else y + x


def _sub(x, y):
    if not (_is_sparse(x) and _is_sparse(y)):
        raise NotImplementedError("Subtraction between sparse and dense array.")
    if x is y:
        return _with_data(x, x.data - y.data)
    return x - y


def _dot_general(lhs, rhs, *, dimension_numbers, preferred_element_type=None, **_):
    return _b.bcoo_dot_general(lhs, rhs, dimension_numbers=dimension_numbers,
                               preferred_element_type=preferred_element_type)


def _reduce_sum(x, *, axes, **_):
    out = _b.bcoo_reduce_sum(x, axes=axes)
    return out.data.sum() if out.shape == () else out


def _transpose(x, *, permutation):
    return _b.bcoo_transpose(x, permutation=permutation)


def _reshape(x, *, new_sizes, dimensions=None, **_):
    return _b.bcoo_reshape(x, new_sizes=new_sizes, dimensions=dimensions)


def _squeeze(x, *, dimensions):
    dims = {d % x.ndim for d in dimensions}
    return _b.bcoo_reshape(x, new_sizes=tuple(s for i, s in enumerate(x.shape)
                                              if i not in dims))


def _jit(*args, jaxpr, name=None, **_):
    if name == "_sparse_todense":
        return [a.todense() if _is_sparse(a) else a for a in args]
    return _eval_sparse(jaxpr.jaxpr, jaxpr.consts, list(args))


_MULTIPLE = {P.jit_p}


@functools.lru_cache(None)
def _rules():
    rules = {
        P.mul_p: _mul, P.div_p: _div, P.add_p: _add, P.sub_p: _sub,
        P.dot_general_p: _dot_general, P.reduce_sum_p: _reduce_sum,
        P.transpose_p: _transpose, P.reshape_p: _reshape, P.squeeze_p: _squeeze,
        P.integer_pow_p: _integer_pow, P.jit_p: _jit,
    }
    for name in ("abs", "asin", "asinh", "atan", "atanh", "bessel_i1e", "expm1", "log1p",
                 "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh",
                 "convert_element_type"):
        prim = getattr(P, name + "_p", None)
        if prim is not None:
            rules[prim] = _unary(prim, False)
    for name in ("conj", "imag", "neg", "real"):
        prim = getattr(P, name + "_p", None)
        if prim is not None:
            rules[prim] = _unary(prim, True)
    return rules


def _eval_sparse(jaxpr, consts, args):
    env = {}

    def read(a):
        return a.value if type(a) is Literal else env[a]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    rules = _rules()
    for eqn in jaxpr.eqns:
        invals = [read(a) for a in eqn.invars]
        prim = eqn.primitive
        if any(_is_sparse(v) for v in invals):
            rule = rules.get(prim)
            if rule is None:
                raise NotImplementedError(
                    f"sparse rule for {prim.name} is not implemented (xform's sparsify has "
                    "rules for dot_general, transpose, reduce_sum, mul, div, add, sub, "
                    "reshape, squeeze, jit and zero-preserving unary operations); use "
                    ".todense() on its sparse operand.")
            outs = rule(*invals, **eqn.params)
        else:
            outs = prim.bind(*invals, **eqn.params)
        if not prim.multiple_results:
            outs = [outs]
        for v, o in zip(eqn.outvars, outs):
            env[v] = o
    return [read(a) for a in jaxpr.outvars]


def _standin(x):
    if _is_sparse(x):
        return xform.ShapeDtypeStruct(x.shape, x.dtype)
    return x


def sparsify(f, use_tracer=False):
    """A version of ``f`` (written for dense arrays) that accepts BCOO arguments and
    computes with them without densifying; results may be BCOO arrays."""
    if use_tracer:
        raise NotImplementedError("sparsify(use_tracer=True) is not supported by xform; "
                                  "use the default (jaxpr interpreter) form.")

    @functools.wraps(f)
    def wrapped(*args, **params):
        leaves, in_tree = tree_util.tree_flatten(args, is_leaf=_is_sparse)
        is_arr = [_is_sparse(x) or isinstance(x, (xform.Array, np.ndarray, np.generic))
                  or hasattr(x, "aval") for x in leaves]
        arrays = [x for x, a in zip(leaves, is_arr) if a]
        out_tree = []

        def flat_fun(*arrs):
            it = iter(arrs)
            full = [next(it) if a else x for x, a in zip(leaves, is_arr)]
            out = f(*tree_util.tree_unflatten(in_tree, full), **params)
            flat, tree = tree_util.tree_flatten(out)
            out_tree.append(tree)
            return flat

        _api._SPARSIFY_TRACING.depth = getattr(_api._SPARSIFY_TRACING, "depth", 0) + 1
        try:
            closed = xform.make_jaxpr(flat_fun)(*[_standin(x) for x in arrays])
        finally:
            _api._SPARSIFY_TRACING.depth -= 1
        outs = _eval_sparse(closed.jaxpr, closed.consts, arrays)
        return tree_util.tree_unflatten(out_tree[0], outs)
    return wrapped

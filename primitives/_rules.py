"""Small helpers that keep each primitive's rules to a line or two.

A primitive module registers, in one block per primitive:
  * ``prim.def_abstract_eval(f)``  shape/dtype rule: avals -> aval
  * ``prim.def_impl(f)``           NumPy reference (the specification XLA must match)
  * a JVP rule        (``defjvp`` / ``deflinear`` / ``ad.jvp_rules[prim] = ...``)
  * a transpose rule  for linear primitives (``ad.transpose_rules[prim] = ...``)
  * a batching rule   (``defvectorized`` / ``defbroadcasting`` / ``batching.batch_rules[prim]``)
"""
from __future__ import annotations

import numpy as np

from interpreters import ad, batching, core
from interpreters.ad import Zero
from interpreters.core import Primitive, ShapedArray

# ----------------------------------------------------------------- avals


def aval_of(x) -> ShapedArray:
    return core.get_aval(x)


def elementwise_aval(name, *avals, out_dtype=None, allow_weak=True):
    """Shape/dtype rule of an n-ary elementwise op: equal shapes and dtypes."""
    a0 = avals[0]
    for a in avals[1:]:
        if a.shape != a0.shape:
            raise TypeError(f"{name} requires arguments of equal shapes, got "
                            + ", ".join(x.str_short() for x in avals))
        if a.dtype != a0.dtype:
            raise TypeError(f"{name} requires arguments of equal dtypes, got "
                            + ", ".join(x.str_short() for x in avals))
    weak = allow_weak and all(a.weak_type for a in avals)
    return ShapedArray(a0.shape, a0.dtype if out_dtype is None else out_dtype,
                       weak and out_dtype is None)


# ----------------------------------------------------------------- structural helpers
# (implemented with primitives from primitives.structural, imported lazily)


def _s():
    from primitives import structural
    return structural


def moveaxis(x, src: int, dst: int):
    if src == dst:
        return x
    nd = core.get_aval(x).ndim
    perm = [i for i in range(nd) if i != src]
    perm.insert(dst, src)
    return _s().transpose_p.bind(x, permutation=tuple(perm))


def broadcast_batched(x, size: int, axis: int):
    """Insert a new axis of length ``size`` at ``axis`` (materialising a batch dim)."""
    a = core.get_aval(x)
    shape = a.shape[:axis] + (size,) + a.shape[axis:]
    dims = tuple(i if i < axis else i + 1 for i in range(a.ndim))
    return _s().broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)


def bdim_at_front(x, d, size):
    """Value with its batch axis at position 0 (materialised if unbatched)."""
    if d is None:
        return broadcast_batched(x, size, 0)
    return moveaxis(x, d, 0)


def zeros_like_aval(aval: ShapedArray):
    if core.current_trace() is core.EVAL_TRACE:
        return core.Array(np.zeros(aval.shape, aval.dtype))
    return _s().broadcast_in_dim_p.bind(np.zeros((), aval.dtype), shape=aval.shape,
                                        broadcast_dimensions=())


def add_tangents(x, y):
    from primitives import elementwise
    return elementwise.add_any_p.bind(x, y)


ad.zeros_like_aval = zeros_like_aval
ad.add_tangents = add_tangents
batching.moveaxis = moveaxis
batching.broadcast_batched = broadcast_batched

# ----------------------------------------------------------------- JVP helpers


def defjvp(prim: Primitive, *tangent_fns):
    """JVP = sum over args of ``tangent_fns[i](t_i, *primals, **params)``; ``None`` entries
    mean the output does not depend on that argument differentiably."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        acc = None
        for fn, t in zip(tangent_fns, tangents):
            if fn is None or type(t) is Zero:
                continue
            contrib = fn(t, *primals, **params)
            acc = contrib if acc is None else ad.add_tangents(acc, contrib)
        if acc is None:
            acc = Zero.from_primal(out)
        return out, acc
    ad.jvp_rules[prim] = rule
    return rule


def defjvp2(prim: Primitive, *tangent_fns):
    """Like ``defjvp`` but each fn also receives the primal output: ``fn(t, ans, *primals)``."""
    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        acc = None
        for fn, t in zip(tangent_fns, tangents):
            if fn is None or type(t) is Zero:
                continue
            contrib = fn(t, ans, *primals, **params)
            acc = contrib if acc is None else ad.add_tangents(acc, contrib)
        if acc is None:
            acc = Zero.from_primal(ans)
        return ans, acc
    ad.jvp_rules[prim] = rule
    return rule


def defjvp_zero(prim: Primitive):
    """Piecewise-constant or non-differentiable output: tangent is a symbolic zero."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if prim.multiple_results:
            return out, [Zero.from_primal(o) for o in out]
        return out, Zero.from_primal(out)
    ad.jvp_rules[prim] = rule
    return rule


def deflinear(prim: Primitive, transpose_fn):
    """A primitive linear in its (single array) first argument.

    JVP applies the primitive to the tangent; ``transpose_fn(ct, *args, **params)``
    returns the cotangent list.
    """
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        t = tangents[0]
        if type(t) is Zero:
            return out, Zero.from_primal(out)
        return out, prim.bind(t, *primals[1:], **params)
    ad.jvp_rules[prim] = jvp
    ad.transpose_rules[prim] = transpose_fn


# ----------------------------------------------------------------- batching helpers


def defvectorized(prim: Primitive):
    """Unary elementwise (or any op acting independently on each element)."""
    def rule(axis_data, vals, dims, **params):
        return prim.bind(*vals, **params), dims[0]
    batching.batch_rules[prim] = rule


def defbroadcasting(prim: Primitive):
    """n-ary elementwise on equal shapes: line the batch axes up at the front."""
    def rule(axis_data, vals, dims, **params):
        first = next(d for d in dims if d is not None)
        if all(d == first for d in dims):
            return prim.bind(*vals, **params), first
        vals = [bdim_at_front(v, d, axis_data.size) for v, d in zip(vals, dims)]
        return prim.bind(*vals, **params), 0
    batching.batch_rules[prim] = rule

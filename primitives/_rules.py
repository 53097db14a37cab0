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


# Primitives whose operands may mix rank-0 arrays with arrays of one common shape (JAX's
# lax n-ary elementwise ops: "implicit scalar broadcasting").  Lowering broadcasts the
# rank-0 operands (StableHLO wants equal shapes); batching keeps unbatched ones rank 0.
scalar_broadcasting: set = set()


def nary_shape(name, avals):
    """The result shape of an n-ary elementwise op: the common shape of the operands
    that are not rank 0 (rank-0 operands broadcast implicitly, as in JAX's lax)."""
    shape = None
    for a in avals:
        s = a.shape
        if not s:
            continue
        if shape is None:
            shape = s
        elif s != shape:
            raise TypeError(f"{name} requires arguments of equal shapes (or rank 0, which "
                            "broadcasts), got " + ", ".join(x.str_short() for x in avals)
                            + ". Broadcast explicitly (lax.broadcast_in_dim) or use "
                            "xform.numpy, which broadcasts.")
    return () if shape is None else shape


def elementwise_aval(name, *avals, out_dtype=None, allow_weak=True, scalars=True):
    """Shape/dtype rule of an n-ary elementwise op: equal dtypes; equal shapes, except
    that rank-0 operands broadcast (``scalars=False``: shapes must be equal)."""
    a0 = avals[0]
    for a in avals[1:]:
        if a.dtype != a0.dtype:
            raise TypeError(f"{name} requires arguments of equal dtypes, got "
                            + ", ".join(x.str_short() for x in avals))
    if scalars:
        shape = nary_shape(name, avals)
    else:
        shape = a0.shape
        for a in avals[1:]:
            if a.shape != shape:
                raise TypeError(f"{name} requires arguments of equal shapes, got "
                                + ", ".join(x.str_short() for x in avals))
    weak = allow_weak and all(a.weak_type for a in avals)
    return ShapedArray(shape, a0.dtype if out_dtype is None else out_dtype,
                       weak and out_dtype is None)


def unbroadcast(aval, ct):
    """The cotangent of an operand with ``aval`` from a cotangent ``ct`` of the
    (implicitly broadcast) result: summed to rank 0 for a rank-0 operand."""
    if ct is None or type(ct) is Zero:
        return ct
    cs = core.get_aval(ct).shape
    if cs == aval.shape:
        return ct
    if aval.shape:
        raise TypeError(f"cannot unbroadcast a cotangent of shape {cs} to {aval.str_short()}")
    from primitives.reductions import reduce_sum_p
    return reduce_sum_p.bind(ct, axes=tuple(range(len(cs))))


def broadcast_scalar(x, shape):
    """``x`` (rank 0, or already of ``shape``) broadcast to ``shape``."""
    a = core.get_aval(x)
    if a.shape == tuple(shape):
        return x
    if a.shape:
        raise TypeError(f"cannot broadcast {a.str_short()} to shape {tuple(shape)}")
    return _s().broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=())


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
    """n-ary elementwise with implicit rank-0 broadcasting (JAX's lax n-ary ops).

    When every operand that is not an unbatched scalar has the same shape and batch
    axis, the primitive applies as is (unbatched rank-0 operands broadcast
    implicitly).  Otherwise the batch axes move to the front; an unbatched rank-0
    operand stays rank 0, an unbatched array gets a batch axis, and a batched
    per-example scalar (shape ``[B]``) is spread over the per-example shape.
    """
    scalar_broadcasting.add(prim)

    def rule(axis_data, vals, dims, **params):
        first = shape = None
        agree = True
        for v, d in zip(vals, dims):
            s = core.get_aval(v).shape
            if d is None and not s:
                continue
            if first is None and shape is None:
                first, shape = d, s
            elif d != first or s != shape:
                agree = False
                break
        if agree and first is not None:
            return prim.bind(*vals, **params), first
        size = axis_data.size
        ex = ()
        for v, d in zip(vals, dims):
            s = core.get_aval(v).shape
            s = s if d is None else s[:d] + s[d + 1:]
            if s:
                ex = s
                break
        out = []
        for v, d in zip(vals, dims):
            nd = core.get_aval(v).ndim
            if d is None and nd == 0:
                out.append(v)
                continue
            v = bdim_at_front(v, d, size)
            if ex and nd - (d is not None) == 0:
                v = _s().broadcast_in_dim_p.bind(v, shape=(size,) + ex, broadcast_dimensions=(0,))
            out.append(v)
        return prim.bind(*out, **params), 0
    batching.batch_rules[prim] = rule

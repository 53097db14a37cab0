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

from xform._src.interpreters import ad, batching, core
from xform._src.interpreters.ad import Zero
from xform._src.interpreters.core import Primitive, ShapedArray

# ----------------------------------------------------------------- avals


# Primitives whose operands may mix rank-0 arrays with arrays of one common shape (JAX's
# lax n-ary elementwise ops: "implicit scalar broadcasting").  Lowering broadcasts the
# rank-0 operands (StableHLO wants equal shapes); batching keeps unbatched ones rank 0.
scalar_broadcasting: set = set()


def nary_shape(name, avals):
    """The result shape of an n-ary elementwise op (JAX's lax broadcasting shape rule):
    rank-0 operands broadcast implicitly; the others must have equal ranks, and in each
    dimension their sizes must be equal or 1 (a size-1 dimension broadcasts)."""
    shapes = [a.shape for a in avals if a.shape]
    if not shapes:
        return ()
    s0 = shapes[0]
    if all(s == s0 for s in shapes):
        return s0
    if len({len(s) for s in shapes}) != 1:
        raise TypeError(f"{name}: arrays must have the same number of dimensions (or rank 0, "
                        "which broadcasts), got " + ", ".join(x.str_short() for x in avals)
                        + ". Broadcast explicitly (lax.broadcast_in_dim) or use "
                        "xform.numpy, which broadcasts.")
    out = []
    for ds in zip(*shapes):
        big = {d for d in ds if d != 1}
        if len(big) > 1:
            raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                            + ", ".join(str(tuple(s)) for s in shapes) + " (operands "
                            + ", ".join(x.str_short() for x in avals) + ": arrays of equal rank need "
                            "equal shapes up to size-1 dimensions, which broadcast).")
        out.append(big.pop() if big else 1)
    return tuple(out)


def elementwise_aval(name, *avals, out_dtype=None, allow_weak=True, scalars=True):
    """Shape/dtype rule of an n-ary elementwise op: equal dtypes; equal shapes, except
    that rank-0 operands broadcast (``scalars=False``: shapes must be equal)."""
    a0 = avals[0]
    if len(avals) == 1:        # the common unary case, without the n-ary loops
        return ShapedArray(a0.shape, a0.dtype if out_dtype is None else out_dtype,
                           allow_weak and a0.weak_type and out_dtype is None)
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
    (implicitly broadcast) result: summed to rank 0 for a rank-0 operand; for an operand
    of equal rank, summed over the dimensions where it has size 1 and the result not
    (then reshaped to keep them, as JAX's ``_unbroadcast``)."""
    if ct is None or type(ct) is Zero:
        return ct
    cs = core.get_aval(ct).shape
    if cs == aval.shape:
        return ct
    from xform._src.primitives.reductions import reduce_sum_p  # deferred: import cycle
    if not aval.shape:
        return reduce_sum_p.bind(ct, axes=tuple(range(len(cs))))
    if len(cs) != aval.ndim or any(a != c and a != 1 for a, c in zip(aval.shape, cs)):
        raise TypeError(f"cannot unbroadcast a cotangent of shape {cs} to {aval.str_short()}")
    dims = tuple(i for i, (a, c) in enumerate(zip(aval.shape, cs)) if a != c)
    summed = reduce_sum_p.bind(ct, axes=dims)
    return _s().reshape_p.bind(summed, new_sizes=tuple(aval.shape), dimensions=None)


def broadcast_scalar(x, shape):
    """``x`` (rank 0, of ``shape``, or of equal rank with size-1 dimensions where ``shape``
    has others) broadcast to ``shape`` (JAX's ``_maybe_broadcast``: the size-1 dimensions
    are reshaped away, then ``broadcast_in_dim``)."""
    a = core.get_aval(x)
    shape = tuple(shape)
    if a.shape == shape:
        return x
    if not a.shape:
        return _s().broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=())
    if a.ndim != len(shape) or any(d != s and d != 1 for d, s in zip(a.shape, shape)):
        raise TypeError(f"cannot broadcast {a.str_short()} to shape {shape}")
    keep = tuple(i for i, (d, s) in enumerate(zip(a.shape, shape)) if d == s)
    x = _s().reshape_p.bind(x, new_sizes=tuple(a.shape[i] for i in keep), dimensions=None)
    return _s().broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=keep)


# ----------------------------------------------------------------- structural helpers
# (implemented with primitives from primitives.structural, imported lazily)


def _s():
    from xform._src.primitives import structural  # deferred: import cycle
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
    from xform._src.primitives import elementwise  # deferred: import cycle
    return elementwise.add_any_p.bind(x, y)


ad.zeros_like_aval = zeros_like_aval
ad.add_tangents = add_tangents
batching.moveaxis = moveaxis
batching.broadcast_batched = broadcast_batched

# ----------------------------------------------------------------- JVP helpers


def _to_out_shape(t, out_aval):
    """A JVP term of an implicitly broadcasting op, broadcast to the result's shape (a
    term built from one operand's tangent alone keeps that operand's shape)."""
    if type(t) is Zero or core.get_aval(t).shape == out_aval.shape:
        return t
    return broadcast_scalar(t, out_aval.shape)


def defjvp(prim: Primitive, *tangent_fns):
    """JVP = sum over args of ``tangent_fns[i](t_i, *primals, **params)``; ``None`` entries
    mean the output does not depend on that argument differentiably."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        out_aval = core.get_aval(out)
        acc = None
        for fn, t in zip(tangent_fns, tangents):
            if fn is None or type(t) is Zero:
                continue
            contrib = fn(t, *primals, **params)
            if prim in scalar_broadcasting:   # a tangent of an operand's shape
                contrib = _to_out_shape(contrib, out_aval)
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
        out_aval = core.get_aval(ans)
        acc = None
        for fn, t in zip(tangent_fns, tangents):
            if fn is None or type(t) is Zero:
                continue
            contrib = fn(t, ans, *primals, **params)
            if prim in scalar_broadcasting:   # a tangent of an operand's shape
                contrib = _to_out_shape(contrib, out_aval)
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
            if d is None:
                # an unbatched array: a size-1 batch axis (implicit broadcasting spreads it)
                v = _s().broadcast_in_dim_p.bind(
                    v, shape=(1,) + core.get_aval(v).shape,
                    broadcast_dimensions=tuple(range(1, nd + 1)))
            else:
                v = moveaxis(v, d, 0)
            if ex and nd - (d is not None) == 0:
                # a batched per-example scalar: size-1 per-example dims
                v = _s().broadcast_in_dim_p.bind(v, shape=(size,) + (1,) * len(ex),
                                                 broadcast_dimensions=(0,))
            out.append(v)
        return prim.bind(*out, **params), 0
    batching.batch_rules[prim] = rule

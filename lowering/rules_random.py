"""Lowering rules: random-number primitives (Threefry-2x32 as integer StableHLO ops).

The hash is uint32 ``add`` / ``xor`` / ``shift_left`` / ``shift_right_logical``
/ ``or`` ops (a rotation is two shifts and an or) in a 5-trip ``while`` loop; no
host callback.  Operands are first broadcast to the output shape (NumPy
broadcasting, trailing dimensions aligned).
"""
from __future__ import annotations

import numpy as np

from xform._src.primitives.prng import random_clone_p, random_unwrap_p, random_wrap_p
from xform._src.primitives.random import rng_bit_generator_p, rng_uniform_p, threefry2x32_p
from xform._src.lowering.mlir import i64_array, register, tensor_type

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA
_U32 = np.dtype(np.uint32)


@register(threefry2x32_p)
def _threefry2x32(ctx, eqn, k1, k2, x1, x2):
    """Rolled form (as JAX's CPU lowering): the initial key injection, then a
    ``stablehlo.while`` of 5 trips, each 4 rounds (rotation amounts chosen by the
    trip's parity) plus one key injection, with the key schedule rotating in the
    carry.  A straight-line 20-round expression lets XLA fuse everything into one
    loop whose elemental code recomputes shared subexpressions, which is far slower."""
    out = tuple(ctx.out_avals[0].shape)
    ty = tensor_type(out, _U32)
    sty = tensor_type((), _U32)
    bty = tensor_type((), np.bool_)

    def bcast_to(c, x, from_shape, to_shape):
        if tuple(from_shape) == tuple(to_shape):
            return x
        off = len(to_shape) - len(from_shape)
        return c.op1("stablehlo.broadcast_in_dim", [x], tensor_type(to_shape, _U32),
                     f"broadcast_dimensions = {i64_array(range(off, len(to_shape)))}")

    # The key schedule stays at the key words' own (broadcast) shape -- usually a scalar --
    # and is broadcast where it is added, so the loop carries no full-size key tensors.
    ka, kb = ctx.in_avals[0], ctx.in_avals[1]
    kshape = tuple(np.broadcast_shapes(ka.shape, kb.shape))
    kty = tensor_type(kshape, _U32)
    k1 = bcast_to(ctx, k1, ka.shape, kshape)
    k2 = bcast_to(ctx, k2, kb.shape, kshape)
    x1 = bcast_to(ctx, x1, ctx.in_avals[2].shape, out)
    x2 = bcast_to(ctx, x2, ctx.in_avals[3].shape, out)
    ks2 = ctx.op1("stablehlo.xor", [ctx.op1("stablehlo.xor", [k1, k2], kty),
                                    ctx.constant(np.uint32(_PARITY), shape=kshape)], kty)
    a = ctx.op1("stablehlo.add", [x1, bcast_to(ctx, k1, kshape, out)], ty)
    b = ctx.op1("stablehlo.add", [x2, bcast_to(ctx, k2, kshape, out)], ty)
    i0 = ctx.constant(np.uint32(0))
    # carry: trip counter, x pair, rotated key schedule (ks1, ks2, ks0)
    state = [i0, a, b, k2, ks2, k1]
    types = [sty, ty, ty, kty, kty, kty]

    def cond_body(c, i, *rest):
        return [c.op1("stablehlo.compare", [i, c.constant(np.uint32(5))], bty,
                      "comparison_direction = #stablehlo<comparison_direction LT>, "
                      "compare_type = #stablehlo<comparison_type UNSIGNED>")]

    def loop_body(c, i, a, b, ka, kb, kc):
        odd = c.op1("stablehlo.compare",
                    [c.op1("stablehlo.and", [i, c.constant(np.uint32(1))], sty),
                     c.constant(np.uint32(0))], bty,
                    "comparison_direction = #stablehlo<comparison_direction NE>, "
                    "compare_type = #stablehlo<comparison_type UNSIGNED>")
        for j in range(4):
            r = c.op1("stablehlo.select", [odd, c.constant(np.uint32(_ROTATIONS[1][j])),
                                           c.constant(np.uint32(_ROTATIONS[0][j]))], sty)
            rb = c.op1("stablehlo.broadcast_in_dim", [r], ty, "broadcast_dimensions = array<i64>")
            rr = c.op1("stablehlo.broadcast_in_dim",
                       [c.op1("stablehlo.subtract", [c.constant(np.uint32(32)), r], sty)], ty,
                       "broadcast_dimensions = array<i64>")
            a = c.op1("stablehlo.add", [a, b], ty)
            rot = c.op1("stablehlo.or", [c.op1("stablehlo.shift_left", [b, rb], ty),
                                         c.op1("stablehlo.shift_right_logical", [b, rr], ty)], ty)
            b = c.op1("stablehlo.xor", [a, rot], ty)
        i1 = c.op1("stablehlo.add", [i, c.constant(np.uint32(1))], sty)
        a = c.op1("stablehlo.add", [a, bcast_to(c, ka, kshape, out)], ty)
        kbi = c.op1("stablehlo.add", [kb, c.op1("stablehlo.broadcast_in_dim", [i1], kty,
                                                "broadcast_dimensions = array<i64>")], kty)
        b = c.op1("stablehlo.add", [b, bcast_to(c, kbi, kshape, out)], ty)
        return [i1, a, b, kb, kc, ka]

    outs = ctx.op("stablehlo.while", state, types, "",
                  [ctx.region(types, cond_body), ctx.region(types, loop_body)])
    return [outs[1], outs[2]]


@register(random_wrap_p, random_unwrap_p, random_clone_p)
def _key_cast(ctx, eqn, x):
    """Free casts between typed keys and their uint32[..., 2] words (programs are
    physicalized before lowering, so both sides are the same tensor)."""
    return [x]


_ALG = {0: "PHILOX", 1: "THREE_FRY", 2: "PHILOX"}   # RNG_DEFAULT is PHILOX on CPU


@register(rng_bit_generator_p)
def _rng_bit_generator(ctx, eqn, key):
    p = eqn.params
    kaval = ctx.in_avals[0]
    u64 = np.dtype(np.uint64)
    st = tensor_type((2,), u64)
    k = key
    if kaval.dtype == _U32:
        k = ctx.op1("stablehlo.reshape", [key], tensor_type((2, 2), _U32))
        k = ctx.op1("stablehlo.bitcast_convert", [k], st)
    alg = _ALG[int(p["algorithm"])] if int(p["algorithm"]) != 0 or ctx.module.platform == "cpu" \
        else "DEFAULT"
    new, bits = ctx.op("stablehlo.rng_bit_generator", [k], [st, ctx.out_avals[1]],
                       f"rng_algorithm = #stablehlo<rng_algorithm {alg}>")
    if kaval.dtype == _U32:
        new = ctx.op1("stablehlo.bitcast_convert", [new], tensor_type((2, 2), _U32))
        new = ctx.op1("stablehlo.reshape", [new], ctx.out_avals[0])
    return [new, bits]


@register(rng_uniform_p)
def _rng_uniform(ctx, eqn, a, b):
    shape = ctx.constant(np.asarray(ctx.out_avals[0].shape, np.int64))
    return [ctx.op1("stablehlo.rng", [a, b, shape], ctx.out_avals[0],
                    "rng_distribution = #stablehlo<rng_distribution UNIFORM>")]

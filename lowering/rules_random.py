"""Lowering rules: random-number primitives (Threefry-2x32 as integer StableHLO ops).

The hash is unrolled into uint32 ``add`` / ``xor`` / ``shift_left`` /
``shift_right_logical`` / ``or`` ops (a rotation is two shifts and an or); no
host callback.  Operands are first broadcast to the output shape (NumPy
broadcasting, trailing dimensions aligned).
"""
from __future__ import annotations

import numpy as np

from lowering.mlir import i64_array, register, tensor_type

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA
_U32 = np.dtype(np.uint32)


@register("threefry2x32")
def _threefry2x32(ctx, eqn, k1, k2, x1, x2):
    out = tuple(ctx.out_avals[0].shape)
    ty = tensor_type(out, _U32)

    def bcast(x, aval):
        if tuple(aval.shape) == out:
            return x
        off = len(out) - len(aval.shape)
        return ctx.op1("stablehlo.broadcast_in_dim", [x], ty,
                       f"broadcast_dimensions = {i64_array(range(off, len(out)))}")

    k1, k2, x1, x2 = (bcast(v, a) for v, a in zip((k1, k2, x1, x2), ctx.in_avals))
    consts = {}

    def c(v):
        if v not in consts:
            consts[v] = ctx.constant(np.uint32(v), shape=out)
        return consts[v]

    def add(a, b):
        return ctx.op1("stablehlo.add", [a, b], ty)

    def xor(a, b):
        return ctx.op1("stablehlo.xor", [a, b], ty)

    def rotl(x, d):
        hi = ctx.op1("stablehlo.shift_left", [x, c(d)], ty)
        lo = ctx.op1("stablehlo.shift_right_logical", [x, c(32 - d)], ty)
        return ctx.op1("stablehlo.or", [hi, lo], ty)

    ks = (k1, k2, xor(xor(k1, k2), c(_PARITY)))
    a, b = add(x1, ks[0]), add(x2, ks[1])
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            a = add(a, b)
            b = xor(a, rotl(b, r))
        a = add(a, ks[(i + 1) % 3])
        b = add(add(b, ks[(i + 2) % 3]), c(i + 1))
    return [a, b]


@register("random_wrap", "random_unwrap", "random_clone")
def _key_cast(ctx, eqn, x):
    """Free casts between typed keys and their uint32[..., 2] words (programs are
    physicalized before lowering, so both sides are the same tensor)."""
    return [x]

"""Random-number primitives: the Threefry-2x32 counter-based hash.

``threefry2x32(k1, k2, x1, x2) -> (y1, y2)`` applies the 20-round Threefry-2x32
block cipher (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
SC'11) keyed by ``(k1, k2)`` to the counter pairs ``(x1, x2)``, elementwise
with NumPy broadcasting of the four uint32 operands.  The reference below is
the specification: uint32 additions wrap, rotations are 32-bit rotations, and
the key schedule injects ``ks[(i+1) % 3], ks[(i+2) % 3] + i + 1`` after each
group of four rounds (rotation constants alternate between (13, 15, 26, 6)
and (17, 29, 16, 24)).  The output is an integer function of integer inputs:
no JVP (integer outputs have float0 tangents), batching broadcasts.
"""
from __future__ import annotations

import numpy as np

from interpreters import ad, batching, core
from interpreters.core import Primitive, ShapedArray
from primitives._rules import bdim_at_front, defjvp_zero

__all__ = ["threefry2x32"]

_U32 = np.dtype(np.uint32)
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
KS_PARITY = 0x1BD11BDA


def _broadcast_shapes(name, avals):
    try:
        return tuple(np.broadcast_shapes(*(a.shape for a in avals)))
    except ValueError:
        raise TypeError(f"{name}: operand shapes "
                        f"{', '.join(a.str_short() for a in avals)} do not broadcast") from None


# ================================================================ threefry2x32

threefry2x32_p = Primitive("threefry2x32", multiple_results=True)


@threefry2x32_p.def_abstract_eval
def _threefry_abstract_eval(k1, k2, x1, x2):
    avals = (k1, k2, x1, x2)
    if any(a.dtype != _U32 for a in avals):
        raise TypeError("threefry2x32 requires uint32 operands (key words k1, k2 and counters "
                        "x1, x2), got " + ", ".join(a.str_short() for a in avals))
    shape = _broadcast_shapes("threefry2x32", avals)
    return [ShapedArray(shape, _U32), ShapedArray(shape, _U32)]


def _rotl(x, d):
    return (x << np.uint32(d)) | (x >> np.uint32(32 - d))


def threefry2x32_reference(k1, k2, x1, x2):
    """NumPy Threefry-2x32 (20 rounds) on broadcast uint32 arrays -> (y1, y2)."""
    k1, k2, x1, x2 = np.broadcast_arrays(*(np.asarray(v, _U32) for v in (k1, k2, x1, x2)))
    ks = (k1, k2, k1 ^ k2 ^ np.uint32(KS_PARITY))
    with np.errstate(over="ignore"):
        a = x1 + ks[0]
        b = x2 + ks[1]
        for i in range(5):
            for r in ROTATIONS[i % 2]:
                a = a + b
                b = _rotl(b, r)
                b = a ^ b
            a = a + ks[(i + 1) % 3]
            b = b + ks[(i + 2) % 3] + np.uint32(i + 1)
    return [np.asarray(a, _U32), np.asarray(b, _U32)]


threefry2x32_p.def_impl(threefry2x32_reference)
defjvp_zero(threefry2x32_p)


def _threefry_batch(axis_data, vals, dims):
    from primitives import structural
    size = axis_data.size
    avals = [core.get_aval(v) for v in vals]
    logical = [a.shape if d is None else a.shape[:d] + a.shape[d + 1:]
               for a, d in zip(avals, dims)]
    out = tuple(np.broadcast_shapes(*logical))
    full = []
    for v, d, shp in zip(vals, dims, logical):
        if d is not None:
            v = bdim_at_front(v, d, size)
        off = len(out) - len(shp)
        bdims = ((0,) if d is not None else ()) + tuple(1 + off + i for i in range(len(shp)))
        v = structural.broadcast_in_dim_p.bind(v, shape=(size,) + out,
                                               broadcast_dimensions=bdims)
        full.append(v)
    return threefry2x32_p.bind(*full), [0, 0]


batching.batch_rules[threefry2x32_p] = _threefry_batch


def threefry2x32(k1, k2, x1, x2):
    """Threefry-2x32 hash of the counters ``(x1, x2)`` under key ``(k1, k2)``."""
    return threefry2x32_p.bind(k1, k2, x1, x2)

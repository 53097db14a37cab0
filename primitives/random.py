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

from xform._src.interpreters import ad, batching, core
from xform._src.interpreters.core import Primitive, ShapedArray
from xform._src.primitives._rules import bdim_at_front, defjvp_zero
from xform._src.interpreters import dtypes as D
from xform._src.primitives import structural

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


# ================================================================ rng_bit_generator
# XLA's stateless RngBitGenerator (lax.rng_bit_generator): the reference follows XLA's
# expansion (xla/hlo/builder/lib/prng.cc): the state is uint64[n]; state[0] is the key,
# the rest the counter.  THREE_FRY hashes the counters (state[1] + row-major index) with
# Threefry-2x32 over half the elements, PHILOX runs Philox-4x32-10 on a 128-bit counter.
# RNG_DEFAULT is PHILOX on CPU.

import enum as _enum  # noqa: E402


class RandomAlgorithm(_enum.IntEnum):
    """Which PRNG algorithm ``rng_bit_generator`` uses (JAX's names)."""
    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self):
        return self.name


_U64 = np.dtype(np.uint64)
_BITS_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32), _U64)


def _lo32(x):
    return (np.asarray(x, _U64) & np.uint64(0xFFFFFFFF)).astype(_U32)


def _hi32(x):
    return (np.asarray(x, _U64) >> np.uint64(32)).astype(_U32)


def _join64(lo, hi):
    return np.asarray(lo, _U64) | (np.asarray(hi, _U64) << np.uint64(32))


def _split_shape_halves(shape):
    """XLA's SplitShapeIntoHalves: (half shape, split dim, concat dim)."""
    if not shape:
        return (1,), 0, 0
    split = next((i for i, d in enumerate(shape) if d % 2 == 0), None)
    if split is None:
        split = max(range(len(shape)), key=lambda i: (shape[i], -i))
    half = list(shape)
    half[split] = -(-shape[split] // 2)
    half.insert(split + 1, 1)
    return tuple(half), split, split + 1


def _threefry_bits32(key, state, shape):
    half, split, cdim = _split_shape_halves(shape)
    n = int(np.prod(half, dtype=np.int64))
    with np.errstate(over="ignore"):
        inputs = (np.uint64(state) + np.arange(n, dtype=_U64)).reshape(half)
        new_state = np.uint64(state) + np.uint64(n)
    o0, o1 = threefry2x32_reference(_lo32(key), _hi32(key), _lo32(inputs), _hi32(inputs))
    if not shape:
        return o0.reshape(()), new_state
    out = np.concatenate([o0, o1], axis=cdim)
    dims = list(shape)
    dims[split] = dims[split] + dims[split] % 2
    out = out.reshape(dims)
    return out[tuple(slice(0, d) for d in shape)], new_state


def _threefry_bits64(key, state, shape):
    n = int(np.prod(shape, dtype=np.int64))
    with np.errstate(over="ignore"):
        inputs = (np.uint64(state) + np.arange(n, dtype=_U64)).reshape(shape)
        new_state = np.uint64(state) + np.uint64(n)
    o0, o1 = threefry2x32_reference(_lo32(key), _hi32(key), _lo32(inputs), _hi32(inputs))
    return _join64(o0, o1), new_state


_PHILOX_W = (np.uint32(0x9E3779B9), np.uint32(0xBB67AE85))
_PHILOX_M = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))


def _philox4x32(x, key):
    x = [np.asarray(v, _U32) for v in x]
    k0, k1 = np.uint32(key[0]), np.uint32(key[1])
    with np.errstate(over="ignore"):
        for _ in range(10):
            p0 = x[0].astype(_U64) * _PHILOX_M[0]
            p1 = x[2].astype(_U64) * _PHILOX_M[1]
            x = [_hi32(p1) ^ x[1] ^ k0, _lo32(p1), _hi32(p0) ^ x[3] ^ k1, _lo32(p0)]
            k0, k1 = k0 + _PHILOX_W[0], k1 + _PHILOX_W[1]
    return x


def _philox_blocks(key, lo, hi, num_elems):
    nv4 = -(-num_elems // 4)
    with np.errstate(over="ignore"):
        i = np.arange(nv4, dtype=_U64)
        new_lo = np.uint64(lo) + i
        new_hi = np.where(new_lo < np.uint64(lo), np.uint64(hi) + np.uint64(1), np.uint64(hi))
        state = [_lo32(new_lo), _hi32(new_lo), _lo32(new_hi), _hi32(new_hi)]
        end_lo = np.uint64(lo) + np.uint64(nv4)
        end_hi = np.uint64(hi) + np.uint64(1) if end_lo < np.uint64(lo) else np.uint64(hi)
    return _philox4x32(state, (_lo32(key), _hi32(key))), (end_lo, end_hi)


def _philox_bits(key, lo, hi, shape, width):
    n = int(np.prod(shape, dtype=np.int64))
    if width == 64:
        b, new = _philox_blocks(key, lo, hi, 2 * n)
        words = np.stack([_join64(b[0], b[1]), _join64(b[2], b[3])], axis=1).reshape(-1)
    else:
        b, new = _philox_blocks(key, lo, hi, n)
        words = np.stack(b, axis=1).reshape(-1)
    return words[:n].reshape(shape), new


def rng_bit_generator_reference(key, *, shape, dtype, algorithm):
    """(new key, bits) of XLA's RngBitGenerator (key: uint32[4] or uint64[2])."""
    key = np.asarray(key)
    u32_key = key.dtype == _U32
    state = key.reshape(-1, 2).astype(_U64) if u32_key else key.astype(_U64)
    if u32_key:
        state = _join64(state[:, 0], state[:, 1])
    dtype = np.dtype(dtype)
    width = dtype.itemsize * 8
    alg = RandomAlgorithm(algorithm)
    k = state[0]
    if alg == RandomAlgorithm.RNG_THREE_FRY:
        if width == 64:
            bits, s1 = _threefry_bits64(k, state[1], shape)
        else:
            bits, s1 = _threefry_bits32(k, state[1], shape)
        new_state = np.array([k, s1], _U64)
    else:   # PHILOX (XLA's CPU default)
        if state.shape[0] >= 3:
            lo, hi = state[1], state[2]
        else:
            lo, hi = state[1], state[0]
        bits, (nlo, nhi) = _philox_bits(k, lo, hi, shape, 64 if width == 64 else 32)
        new_state = np.array([k, nlo, nhi][:max(2, state.shape[0])], _U64) \
            if state.shape[0] >= 3 else np.array([k, nlo], _U64)
    bits = np.asarray(bits).astype(dtype)
    if u32_key:
        new_key = np.stack([_lo32(new_state), _hi32(new_state)], axis=1).reshape(key.shape)
    else:
        new_key = new_state.reshape(key.shape)
    return [new_key.astype(key.dtype), bits.reshape(shape)]


rng_bit_generator_p = Primitive("rng_bit_generator", multiple_results=True)
rng_bit_generator_p.cse = False


@rng_bit_generator_p.def_abstract_eval
def _rbg_abstract(key, *, shape, dtype, algorithm):
    if not ((key.dtype == _U32 and key.shape == (4,)) or (key.dtype == _U64 and key.shape == (2,))):
        raise TypeError("rng_bit_generator: key must be uint32[4] or uint64[2], got "
                        f"{key.str_short()}")
    if np.dtype(dtype) not in _BITS_DTYPES:
        raise TypeError(f"rng_bit_generator: unsupported dtype {np.dtype(dtype)}")
    return [ShapedArray(key.shape, key.dtype), ShapedArray(tuple(shape), np.dtype(dtype))]


rng_bit_generator_p.def_impl(rng_bit_generator_reference)
defjvp_zero(rng_bit_generator_p)


def _rbg_batch(axis_data, vals, dims, **params):
    # As JAX's rule: RngBitGenerator is not vectorizable per key, so the batch draws one
    # (batch, *shape) block from the *first* key, and only that key advances (JAX
    # documents rbg keys as not vmap-consistent; unsafe_rbg relies on this).
    (key,), (d,) = vals, dims
    key = bdim_at_front(key, d, axis_data.size)
    ka = core.get_aval(key)
    k0 = structural.slice_p.bind(key, start_indices=(0,) * ka.ndim,
                                 limit_indices=(1,) + tuple(ka.shape[1:]), strides=None)
    k0 = structural.reshape_p.bind(k0, new_sizes=tuple(ka.shape[1:]), dimensions=None)
    shape = (axis_data.size,) + tuple(params["shape"])
    nk, bits = rng_bit_generator_p.bind(k0, **dict(params, shape=shape))
    nk = structural.reshape_p.bind(nk, new_sizes=(1,) + tuple(ka.shape[1:]), dimensions=None)
    zero = np.zeros((), np.int32)
    keys = structural.dynamic_update_slice_p.bind(key, nk, *(zero,) * ka.ndim)
    return [keys, bits], [0, 0]


batching.batch_rules[rng_bit_generator_p] = _rbg_batch


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT):
    """Stateless random bits from XLA's RngBitGenerator: ``(new_key, bits)``."""
    shape = tuple(int(d) for d in shape)
    dtype = D.canonicalize_dtype(dtype)
    if np.dtype(dtype) not in _BITS_DTYPES:
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}")
    return tuple(rng_bit_generator_p.bind(key, shape=shape, dtype=np.dtype(dtype),
                                          algorithm=RandomAlgorithm(algorithm)))


__all__ += ["rng_bit_generator", "RandomAlgorithm"]


# ================================================================ rng_uniform
# XLA's stateful Rng(UNIFORM): values in [a, b) from an implementation-defined
# generator state (XLA's is internal to the compiled program), so there are no bits to
# reproduce; the reference draws from a process-wide NumPy generator with the same
# contract (shape, dtype, range).  No JVP (as JAX: not differentiable) and no batching
# rule is needed beyond broadcasting the scalar bounds, which must be unbatched.

_rng_uniform_state = np.random.default_rng(0)

rng_uniform_p = Primitive("rng_uniform")
rng_uniform_p.missing_rules["jvp"] = (
    "it draws from XLA's random state; JAX defines no derivative for it either")
rng_uniform_p.cse = False
rng_uniform_p.effectful = True


@rng_uniform_p.def_abstract_eval
def _rng_uniform_abstract(a, b, *, shape):
    if a.dtype != b.dtype:
        raise ValueError(f"Arguments to rng_uniform must have identical dtypes, got "
                         f"{a.dtype} and {b.dtype}.")
    if a.shape != () or b.shape != ():
        raise ValueError(f"Arguments to rng_uniform must be scalars; got shapes {a.shape} "
                         f"and {b.shape}.")
    return ShapedArray(tuple(shape), a.dtype, a.weak_type and b.weak_type)


def _rng_uniform_impl(a, b, *, shape):
    a, b = np.asarray(a), np.asarray(b)
    dt = a.dtype
    if dt.kind in "iu":
        return _rng_uniform_state.integers(int(a), max(int(b), int(a) + 1), size=shape,
                                           dtype=dt, endpoint=False)
    u = _rng_uniform_state.random(size=shape)
    out = (a.astype(np.float64) + u * (b.astype(np.float64) - a.astype(np.float64))).astype(dt)
    return np.minimum(np.maximum(out, a), np.nextafter(b, a)) if b > a else out


rng_uniform_p.def_impl(_rng_uniform_impl)


def _rng_uniform_batch(axis_data, vals, dims, *, shape):
    if any(d is not None for d in dims):
        raise NotImplementedError("rng_uniform: batched bounds are not supported (as JAX)")
    return rng_uniform_p.bind(*vals, shape=(axis_data.size,) + tuple(shape)), 0


batching.batch_rules[rng_uniform_p] = _rng_uniform_batch


def rng_uniform(a, b, shape):
    """Stateful uniform values in ``[a, b)`` (XLA's Rng; implementation-defined bits)."""
    _rng_uniform_abstract(core.get_aval(a), core.get_aval(b), shape=tuple(shape))
    return rng_uniform_p.bind(a, b, shape=tuple(int(d) for d in shape))


__all__ += ["rng_uniform"]

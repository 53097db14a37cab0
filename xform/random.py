"""``xform.random``: JAX's counter-based PRNG (Threefry-2x32), bit for bit.

Keys are either raw ``uint32[..., 2]`` arrays (``PRNGKey``) or typed key
arrays of the extended dtype ``key<fry>`` (``key``); both derive the same
words.  Every derivation follows JAX 0.10.2 (``jax._src.random``), including
the two bit-derivation schemes selected by ``jax_threefry_partitionable``
(default True).  Samplers are jitted like JAX's, so eager calls run the same
XLA program class as under ``jit`` and give the same bits as JAX; the
partitionable flag is part of every cache key.

Internally every sampler works on the raw key words ``uint32[2]``; the public
functions accept either kind of key (``_key_words``) and return the kind they
were given (``_rewrap``).
"""
from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence
from functools import partial

import numpy as np

from interpreters import core
from interpreters import dtypes as D
from interpreters.config import config
from primitives import prng as _prng
from primitives.random import threefry2x32_p

__all__ = [
    "PRNGKey", "key", "split", "fold_in", "bits", "uniform", "normal", "key_data",
    "wrap_key_data", "key_impl", "clone", "randint", "bernoulli", "categorical", "choice",
    "permutation", "truncated_normal", "gamma", "loggamma", "beta", "dirichlet",
    "exponential", "laplace", "logistic", "gumbel", "poisson", "binomial", "multinomial",
    "geometric", "cauchy", "t", "chisquare", "f", "pareto", "weibull_min", "rayleigh",
    "wald", "lognormal", "maxwell", "double_sided_maxwell", "rademacher", "triangular",
    "generalized_normal", "multivariate_normal", "orthogonal", "ball", "key_dtype",
    "threefry_2x32", "threefry2x32_p", "PRNGKeyArray", "KeyArray",
]

_U32 = np.dtype(np.uint32)
_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
         64: np.dtype(np.uint64)}


def _x():
    import xform
    return xform


def _lax():
    from xform import lax
    return lax


def _jnp():
    from xform import numpy as jnp
    return jnp


# ----------------------------------------------------------------- jitted internals


def _rjit(*static_argnums):
    """``jit`` whose cache also keys on ``jax_threefry_partitionable`` (a hidden last
    static argument), so flipping the flag retraces as JAX's config-aware cache does."""
    def deco(fn):
        n = fn.__code__.co_argcount
        jitted = []

        def with_mode(*args):
            return fn(*args[:n])

        with_mode.__name__ = fn.__name__
        with_mode.__qualname__ = fn.__qualname__

        def call(*args):
            if not jitted:
                jitted.append(_x().jit(with_mode, static_argnums=tuple(static_argnums) + (n,)))
            if len(args) != n:
                raise TypeError(f"{fn.__name__} takes {n} arguments, got {len(args)}")
            return jitted[0](*args, bool(config.read("jax_threefry_partitionable")))
        call.__name__ = fn.__name__
        call.__wrapped__ = fn
        return call
    return deco


def _partitionable() -> bool:
    return bool(config.read("jax_threefry_partitionable"))


def threefry_2x32(keypair, count):
    """Threefry-2x32 hash of a uint32 ``count`` array (any shape) under ``keypair``:
    the flat counts are split in two halves (zero-padded to even length) that form
    the counter pairs, as JAX's ``threefry_2x32``."""
    lax, jnp = _lax(), _jnp()
    key1, key2 = keypair[0], keypair[1]
    count = jnp.asarray(count)
    if count.dtype != _U32 or jnp.asarray(key1).dtype != _U32:
        raise TypeError("threefry_2x32 requires uint32 arguments, got "
                        f"{[jnp.asarray(key1).dtype, jnp.asarray(key2).dtype, count.dtype]}")
    flat = lax.reshape(count, (count.size,))
    odd = flat.shape[0] % 2
    if odd:
        flat = lax.concatenate([flat, np.zeros((1,), _U32)], 0)
    half = flat.shape[0] // 2
    x0 = lax.slice(flat, (0,), (half,))
    x1 = lax.slice(flat, (half,), (2 * half,))
    y0, y1 = threefry2x32_p.bind(key1, key2, x0, x1)
    out = lax.concatenate([y0, y1], 0)
    if odd:
        out = lax.slice(out, (0,), (out.shape[0] - 1,))
    return lax.reshape(out, count.shape)


def _iota_2x32(shape):
    """(hi, lo) uint32 words of the row-major uint64 iota of ``shape``."""
    lax = _lax()
    size = math.prod(shape)
    if size >= 2 ** 32:
        raise NotImplementedError(f"random bits array of size {size} >= 2**32 elements")
    hi = lax.full(shape, 0, _U32)
    lo = lax.reshape(lax.iota(_U32, size), shape) if shape else lax.full((), 0, _U32)
    return hi, lo


def _seed_words(seed):
    """uint32[2] key of an integer scalar seed: (high word, low word) of its bits."""
    lax = _lax()
    dt = seed.dtype
    if dt.itemsize == 8:
        hi = lax.convert_element_type(lax.shift_right_logical(seed, np.array(32, dt)), _U32)
    else:
        hi = lax.full((), 0, _U32)
    lo = lax.convert_element_type(seed, _U32) if dt.itemsize <= 4 else \
        lax.convert_element_type(lax.bitwise_and(seed, np.array(0xFFFFFFFF, dt)), _U32)
    return lax.concatenate([lax.reshape(hi, (1,)), lax.reshape(lo, (1,))], 0)


def _split_raw(k, shape):
    lax, jnp = _lax(), _jnp()
    shape = tuple(shape)
    if _partitionable():
        hi, lo = _iota_2x32(shape)
        b1, b2 = threefry2x32_p.bind(k[0], k[1], hi, lo)
        return jnp.stack([b1, b2], axis=len(shape))
    num = math.prod(shape)
    counts = lax.iota(_U32, num * 2)
    return lax.reshape(threefry_2x32(k, counts), (*shape, 2))


def _fold_in_raw(k, data):
    lax = _lax()
    d = lax.convert_element_type(data, _U32)
    return threefry_2x32(k, _seed_words(d))


def _bits_raw(k, bit_width, shape):
    lax = _lax()
    shape = tuple(shape)
    dtype = _UINT[bit_width]
    if _partitionable():
        hi, lo = _iota_2x32(shape)
        b1, b2 = threefry2x32_p.bind(k[0], k[1], hi, lo)
        if bit_width == 64:
            bh = lax.convert_element_type(b1, dtype)
            bl = lax.convert_element_type(b2, dtype)
            return lax.bitwise_or(lax.shift_left(bh, np.array(32, dtype)), bl)
        x = lax.bitwise_xor(b1, b2)
        return x if bit_width == 32 else lax.convert_element_type(x, dtype)
    size = math.prod(shape)
    max_count, r = divmod(bit_width * size, 32)
    if r:
        max_count += 1
    nblocks, rem = divmod(max_count, 2 ** 32 - 1)
    if nblocks:
        raise NotImplementedError("random bits of more than 2**32 words with "
                                  "jax_threefry_partitionable=False")
    bits = threefry_2x32(k, lax.iota(_U32, rem))
    if bit_width == 64:
        half = bits.shape[0] // 2
        b0 = lax.convert_element_type(lax.slice(bits, (0,), (half,)), dtype)
        b1 = lax.convert_element_type(lax.slice(bits, (half,), (2 * half,)), dtype)
        bits = lax.bitwise_or(lax.shift_left(b0, np.array(32, dtype)), b1)
    elif bit_width in (8, 16):
        n = 32 // bit_width
        shifts = np.arange(n, dtype=np.uint32).reshape(n, 1) * np.uint32(bit_width)
        b = lax.broadcast_in_dim(bits, (n, bits.shape[0]), (1,))
        b = lax.bitwise_and(np.array(np.iinfo(dtype).max, _U32),
                            lax.shift_right_logical(b, lax.broadcast_in_dim(
                                shifts, (n, bits.shape[0]), (0, 1))))
        b = lax.reshape(lax.transpose(b, (1, 0)), (max_count * n,))
        bits = lax.slice(lax.convert_element_type(b, dtype), (0,), (size,))
    return lax.reshape(bits, shape)


@_rjit(1)
def _split_j(k, shape):
    return _split_raw(k, shape)


@_rjit()
def _fold_in_j(k, data):
    return _fold_in_raw(k, data)


@_rjit(1, 2)
def _bits_j(k, bit_width, shape):
    return _bits_raw(k, bit_width, shape)


@_rjit()
def _seed_j(seed):
    return _seed_words(seed)


# ----------------------------------------------------------------- keys: checking and kinds


def _is_typed(x) -> bool:
    return isinstance(getattr(x, "dtype", None), _prng.KeyTy)


def _check_raw_key_data(data, what="key"):
    if not all(hasattr(data, a) for a in ("ndim", "shape", "dtype")):
        raise TypeError("xform encountered invalid PRNG key data: expected key_data to have "
                        f"ndim, shape, and dtype attributes. Got {data!r}")
    if data.ndim < 1:
        raise TypeError("xform encountered invalid PRNG key data: expected key_data.ndim >= 1; "
                        f"got ndim={data.ndim} for {what} of shape {tuple(data.shape)}")
    if tuple(data.shape[-1:]) != (2,):
        raise TypeError("xform encountered invalid PRNG key data: expected key_data.shape to "
                        f"end with (2,); got shape={tuple(data.shape)} for impl=threefry2x32 "
                        f"({what})")
    if np.dtype(data.dtype) != _U32:
        raise TypeError("xform encountered invalid PRNG key data: expected key_data.dtype = "
                        f"uint32; got dtype={data.dtype} ({what} of shape {tuple(data.shape)})")


def _arraylike(x) -> bool:
    return isinstance(x, (core.Array, core.Tracer, np.ndarray, np.generic)) or \
        (hasattr(x, "__array__") and hasattr(x, "shape"))


def _key_words(name, key, allow_batched=False):
    """(raw uint32[..., 2] words, was_typed) of a key argument, checked as JAX does."""
    if _is_typed(key):
        data, typed = _prng.random_unwrap(key), True
        shape = key.shape
    elif _arraylike(key):
        if isinstance(key, (np.ndarray, np.generic)):
            key = np.asarray(key)
        _check_raw_key_data(key, f"argument `key` of {name}")
        data, typed = key, False
        shape = tuple(key.shape[:-1])
        legacy = config.read("jax_legacy_prng_key")
        msg = ("Legacy uint32 key array passed as key to xform.random function. Please create "
               "keys using xform.random.key(). If use of a raw key array was intended, set "
               'jax_legacy_prng_key="allow".')
        if legacy == "error":
            raise ValueError(msg)
        if legacy == "warn":
            warnings.warn(msg, stacklevel=3)
    else:
        raise TypeError(f"unexpected PRNG key type {type(key)}")
    if not allow_batched and len(shape):
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{tuple(shape)} != (). Use jax.vmap for batching.")
    return data, typed


def _rewrap(typed, words):
    return _prng.random_wrap(words) if typed else words


# ----------------------------------------------------------------- key constructors


def _seed_array(ctor, seed):
    jnp = _jnp()
    if _is_typed(seed):
        raise TypeError(f"{ctor} accepts a scalar seed, but was given a PRNG key.")
    if np.ndim(seed):
        raise TypeError(f"{ctor} accepts a scalar seed, but was given an array of shape "
                        f"{np.shape(seed)} != (). Use jax.vmap for batching")
    if isinstance(seed, bool):
        seed = int(seed)
    if isinstance(seed, int):
        # As JAX: Python ints go through int64 first (so hashes work without x64),
        # then to the canonical integer type (which wraps them to 32 bits without x64).
        if not -2 ** 63 <= seed < 2 ** 64:
            raise OverflowError(f"Python int {seed} too large to convert to int64")
        s = np.array(seed if seed < 2 ** 63 else seed - 2 ** 64, np.int64)
        if not config.read("jax_enable_x64"):
            s = s.astype(np.int32)
        return jnp.asarray(s)
    arr = jnp.asarray(seed)
    if not D.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r} of dtype {arr.dtype}")
    return arr


def _resolve_impl(impl):
    if impl is None:
        impl = config.read("jax_default_prng_impl")
    if isinstance(impl, _prng.KeyTy):
        impl = impl.impl_name
    if impl != "threefry2x32":
        raise ValueError(f"unrecognized PRNG implementation {impl!r}; xform implements "
                         "'threefry2x32'")
    return impl


def PRNGKey(seed, *, impl=None):
    """A legacy raw key: ``uint32[2]`` words of an integer seed (as ``jax.random.PRNGKey``)."""
    _resolve_impl(impl)
    return _seed_j(_seed_array("PRNGKey", seed))


def key(seed, *, impl=None, dtype=None):
    """A typed key: a scalar array of dtype ``key<fry>`` (as ``jax.random.key``)."""
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "xform.random.key")
        impl = dtype
    _resolve_impl(impl)
    return _prng.random_wrap(_seed_j(_seed_array("key", seed)))


def key_dtype(impl=None):
    _resolve_impl(impl)
    return _prng.KEY_DTYPE


def key_data(keys):
    """The ``uint32[..., 2]`` words of a key array (raw keys are returned as they are)."""
    data, _ = _key_words("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    """Typed keys over ``uint32[..., 2]`` words."""
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "xform.random.wrap_key_data")
        impl = dtype
    _resolve_impl(impl)
    if _is_typed(key_bits_array):
        raise TypeError("wrap_key_data: expected uint32 key data, got a typed key array of "
                        f"dtype {key_bits_array.dtype}")
    if isinstance(key_bits_array, (np.ndarray, np.generic, list, tuple)):
        key_bits_array = _jnp().asarray(np.asarray(key_bits_array))
    _check_raw_key_data(key_bits_array, "argument `key_bits_array` of wrap_key_data")
    return _prng.random_wrap(key_bits_array)


def key_impl(keys):
    _key_words("key_impl", keys, allow_batched=True)
    return "threefry2x32"


def clone(key):
    """A copy of ``key`` (key reuse checking is not implemented, so this is identity)."""
    if _is_typed(key):
        return _prng.random_clone(key)
    return key


# ----------------------------------------------------------------- split, fold_in, bits


def _split_shape(num):
    if isinstance(num, Sequence):
        shape = tuple(num)
    else:
        shape = (num,)
    out = []
    for d in shape:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            try:
                d = operator.index(d)
            except TypeError:
                raise TypeError(f"split: num must be an integer or a tuple of integers, got "
                                f"{num!r} of type {type(num).__name__}") from None
        if d < 0:
            raise ValueError(f"split: num must be non-negative, got {num!r}")
        out.append(int(d))
    return tuple(out)


def split(key, num=2):
    """Split a key into ``num`` (an int or a shape) new keys along new leading axes."""
    words, typed = _key_words("split", key)
    return _rewrap(typed, _split_j(words, _split_shape(num)))


def fold_in(key, data):
    """A new key that is a deterministic function of ``key`` and the integer ``data``."""
    words, typed = _key_words("fold_in", key)
    if np.ndim(data):
        raise TypeError("fold_in accepts a scalar, but was given an array of "
                        f"shape {np.shape(data)} != (). Use jax.vmap for batching.")
    if isinstance(data, (int, np.integer)) and not isinstance(data, bool):
        d = np.asarray(int(data) % 2 ** 32, np.uint32) if int(data) < 2 ** 32 else None
        if d is None:
            raise OverflowError(f"Python int {data} too large to convert to uint32")
        if int(data) < 0:
            raise OverflowError(f"Python integer {data} out of bounds for uint32")
        data = d
    return _rewrap(typed, _fold_in_j(words, data))


def _canon_dtype(dtype, default):
    dt = default if dtype is None else dtype
    try:
        return D.canonicalize_dtype(dt)
    except TypeError:
        raise TypeError(f"Cannot interpret {dtype!r} as a data type") from None


def _canon_shape(shape, name="shape"):
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        out = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, "
                        f"got {shape!r}.") from None
    if any(d < 0 for d in out):
        raise ValueError(f"'{name}' elements must be non-negative, got {out}")
    return out


def bits(key, shape=(), dtype=None):
    """Uniform random bits as unsigned integers of ``dtype`` (default uint32, uint64 with x64)."""
    words, _ = _key_words("bits", key)
    dtype = D.default_uint_dtype() if dtype is None else _canon_dtype(dtype, None)
    if not D.issubdtype(dtype, np.unsignedinteger):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
    return _bits_j(words, dtype.itemsize * 8, _canon_shape(shape))


def _check_shape(name, shape, *param_shapes):
    if param_shapes:
        try:
            shape_ = tuple(np.broadcast_shapes(shape, *param_shapes))
        except ValueError:
            raise ValueError(f"{name}: parameter shapes {param_shapes} are incompatible with "
                             f"shape argument {shape}") from None
        if shape != shape_:
            raise ValueError(
                f"{name} parameter shapes must be broadcast-compatible with shape argument, and "
                "the result of broadcasting the shapes must equal the shape argument, but got "
                f"result {shape_} for shape argument {shape}.")


def _check_broadcast_shapes(name, shape, *args):
    arg_shapes = [np.shape(a) for a in args]
    if shape is None:
        return tuple(np.broadcast_shapes(*arg_shapes)) if arg_shapes else ()
    shape = _canon_shape(shape)
    _check_shape(name, shape, *arg_shapes)
    return shape


def _float_dtype(name, dtype, what="a float"):
    dt = _canon_dtype(dtype, float)
    if not D.issubdtype(dt, np.floating):
        raise ValueError(f"dtype argument to `{name}` must be {what} dtype, got {dt}")
    return dt


def _safe_cast_check(name, dtype, *args):
    for a in args:
        if isinstance(a, (bool, int, float)) or isinstance(a, complex):
            if isinstance(a, complex) and not D.issubdtype(dtype, np.complexfloating):
                raise D.TypePromotionError(f"In arguments to {name}, cannot safely cast "
                                           f"argument of type complex to {dtype}")
            continue
        adt = np.dtype(getattr(a, "dtype", np.asarray(a).dtype))
        if adt.kind == "c" and not D.issubdtype(dtype, np.complexfloating):
            raise D.TypePromotionError(f"In arguments to {name}, cannot safely cast argument "
                                       f"of type {adt} to {dtype}")


# ----------------------------------------------------------------- uniform / normal


def _uniform_raw(k, shape, dtype, minval, maxval):
    lax = _lax()
    minval = lax.broadcast_to_rank(lax.convert_element_type(minval, dtype), len(shape))
    maxval = lax.broadcast_to_rank(lax.convert_element_type(maxval, dtype), len(shape))
    fi = D.finfo(dtype)
    nbits, nmant = fi.bits, fi.nmant
    if nbits not in (8, 16, 32, 64):
        raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}.")
    rng_bits = 8 if nmant < 8 else nbits
    b = _bits_raw(k, rng_bits, shape)
    udt = _UINT[nbits]
    if rng_bits != nbits:
        b = lax.convert_element_type(b, udt)
    fb = lax.shift_right_logical(b, np.array(rng_bits - nmant, udt))
    fb = lax.bitwise_or(fb, np.array(1.0, dtype).view(udt))
    floats = lax.sub(lax.bitcast_convert_type(fb, dtype), np.array(1.0, dtype))
    return lax.max(minval, lax.reshape(
        lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval), shape))


@_rjit(3, 4)
def _uniform_j(k, minval, maxval, shape, dtype):
    return _uniform_raw(k, shape, dtype, minval, maxval)


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in ``[minval, maxval)``."""
    words, _ = _key_words("uniform", key)
    dtype = _float_dtype("uniform", dtype)
    return _uniform_j(words, minval, maxval, _canon_shape(shape), dtype)


def _normal_real_raw(k, shape, dtype):
    lax = _lax()
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype)
    u = _uniform_raw(k, shape, dtype, lo, np.array(1.0, dtype))
    return lax.mul(np.array(np.sqrt(2), dtype), lax.erf_inv(u))


def _normal_raw(k, shape, dtype):
    lax = _lax()
    if D.issubdtype(dtype, np.complexfloating):
        rdt = np.array(0, dtype).real.dtype
        ks = _split_raw(k, (2,))
        re = lax.convert_element_type(_normal_real_raw(ks[0], shape, rdt), dtype)
        im = lax.convert_element_type(_normal_real_raw(ks[1], shape, rdt), dtype)
        return (re + 1j * im) / np.array(np.sqrt(2), dtype)
    return _normal_real_raw(k, shape, dtype)


@_rjit(1, 2)
def _normal_j(k, shape, dtype):
    return _normal_raw(k, shape, dtype)


def normal(key, shape=(), dtype=None):
    """Standard normal samples (complex dtypes: unit-variance complex normal)."""
    words, _ = _key_words("normal", key)
    dtype = _canon_dtype(dtype, float)
    if not D.issubdtype(dtype, np.inexact):
        raise ValueError(f"dtype argument to `normal` must be a float or complex dtype, "
                         f"got {dtype}")
    return _normal_j(words, _canon_shape(shape), dtype)

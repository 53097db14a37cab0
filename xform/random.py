"""``xform.random``: JAX's counter-based PRNG (Threefry-2x32), bit for bit.

Keys are either raw ``uint32[..., 2]`` arrays (``PRNGKey``) or typed key
arrays of the extended dtype ``key<fry>`` (``key``); both derive the same
words.  Every derivation follows JAX 0.10.2 (``jax._src.random``), including
the two bit-derivation schemes selected by ``jax_threefry_partitionable``
(default True).  Samplers are jitted like JAX's, so eager calls run the same
XLA program class as under ``jit`` and give the same bits as JAX; the
partitionable flag is part of every cache key.

Internally every sampler works on the raw key words ``uint32[*key_shape]``
(``uint32[2]`` for threefry2x32); the public functions accept either kind of key
(``_key_words``, which also selects the PRNG implementation the raw-word functions
use: threefry2x32, rbg, unsafe_rbg or a user-defined ``PRNGImpl``) and return the
kind they were given (``_rewrap``).
"""
from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence
from functools import partial

import numpy as np

from xform._src.interpreters import core
from xform._src.interpreters import dtypes as D
from xform._src.interpreters.config import config
from xform._src.primitives import prng as _prng
from xform._src.primitives.random import threefry2x32_p
from xform import lax
from xform import numpy as jnp

__all__ = [
    "PRNGKey", "key", "split", "fold_in", "bits", "uniform", "normal", "key_data",
    "wrap_key_data", "key_impl", "clone", "randint", "bernoulli", "categorical", "choice",
    "permutation", "truncated_normal", "gamma", "loggamma", "beta", "dirichlet",
    "exponential", "laplace", "logistic", "gumbel", "poisson", "binomial", "multinomial",
    "geometric", "cauchy", "t", "chisquare", "f", "pareto", "weibull_min", "rayleigh",
    "wald", "lognormal", "maxwell", "double_sided_maxwell", "rademacher", "triangular",
    "generalized_normal", "multivariate_normal", "orthogonal", "ball", "key_dtype",
]

_U32 = np.dtype(np.uint32)
_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
         64: np.dtype(np.uint64)}


def _x():
    import xform  # deferred: import cycle
    return xform


def _lax():
    return lax


def _jnp():
    return jnp


# ----------------------------------------------------------------- jitted internals


# The PRNG implementation the raw-word functions below work with: set from the key by
# ``_key_words`` (each public function's entry) and by ``_rjit`` while it traces (a
# jitted body always sees the implementation of its cache entry).
_IMPL = [_prng.THREEFRY]


def _cur():
    return _IMPL[0]


def _rjit(*static_argnums):
    """``jit`` with static arguments, keyed also on ``jax_threefry_partitionable`` and on
    the PRNG implementation (``_IMPL``) of the key words it is given.

    Each (static values, flag) gets its own jitted closure over the dynamic
    arguments only, so repeated eager calls take jit's positional-array fast path
    (JAX's config-aware cache behaves the same: flipping the flag retraces).
    """
    def deco(fn):
        n = fn.__code__.co_argcount
        statics_idx = tuple(static_argnums)
        dyn_idx = tuple(i for i in range(n) if i not in statics_idx)
        cache: dict = {}

        def make(statics, impl):
            def body(*dyn):
                full = [None] * n
                for i, v in zip(statics_idx, statics):
                    full[i] = v
                for i, v in zip(dyn_idx, dyn):
                    full[i] = v
                prev = _IMPL[0]
                _IMPL[0] = impl
                try:
                    return fn(*full)
                finally:
                    _IMPL[0] = prev
            body.__name__ = fn.__name__
            body.__qualname__ = fn.__qualname__
            return _x().jit(body)

        def call(*args):
            if len(args) != n:
                raise TypeError(f"{fn.__name__} takes {n} arguments, got {len(args)}")
            statics = tuple(args[i] for i in statics_idx)
            impl = _IMPL[0]
            key = (statics, bool(config.read("jax_threefry_partitionable")), impl)
            try:
                j = cache.get(key)
            except TypeError:
                raise ValueError(f"{fn.__name__}: static arguments must be hashable, got "
                                 f"{statics!r}") from None
            if j is None:
                if len(cache) > 256:
                    cache.clear()
                j = cache[key] = make(statics, impl)
            return j(*[args[i] for i in dyn_idx])
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


def _tf_seed(seed):
    """uint32[2] threefry key of an integer scalar seed: (high word, low word) of its bits."""
    lax = _lax()
    dt = seed.dtype
    if dt.itemsize == 8:
        hi = lax.convert_element_type(lax.shift_right_logical(seed, np.array(32, dt)), _U32)
    else:
        hi = lax.full((), 0, _U32)
    lo = lax.convert_element_type(seed, _U32) if dt.itemsize <= 4 else \
        lax.convert_element_type(lax.bitwise_and(seed, np.array(0xFFFFFFFF, dt)), _U32)
    return lax.concatenate([lax.reshape(hi, (1,)), lax.reshape(lo, (1,))], 0)


def _tf_split(k, shape):
    lax, jnp = _lax(), _jnp()
    shape = tuple(shape)
    if _partitionable():
        hi, lo = _iota_2x32(shape)
        b1, b2 = threefry2x32_p.bind(k[0], k[1], hi, lo)
        return jnp.stack([b1, b2], axis=len(shape))
    num = math.prod(shape)
    counts = lax.iota(_U32, num * 2)
    return lax.reshape(threefry_2x32(k, counts), (*shape, 2))


def _tf_fold_in(k, data):
    lax = _lax()
    d = lax.convert_element_type(data, _U32)
    return threefry_2x32(k, _tf_seed(d))


def _tf_bits(k, bit_width, shape):
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


# ----------------------------------------------------------------- rbg and unsafe_rbg
# JAX's rbg keys are two threefry keys (uint32[4]): split and fold_in work on each half
# with threefry, random bits come from XLA's RngBitGenerator (lax.rng_bit_generator, the
# platform's default algorithm).  unsafe_rbg also splits and folds with RngBitGenerator.


def _rbg_seed(seed):
    half = _tf_seed(seed)
    return _lax().concatenate([half, half], 0)


def _halves(k):
    lax = _lax()
    return lax.slice_in_dim(k, 0, 2, axis=k.ndim - 1), lax.slice_in_dim(k, 2, 4, axis=k.ndim - 1)


def _rbg_split(k, shape):
    shape = tuple(shape)
    a, b = _halves(k)
    out = _jnp().stack([_tf_split(a, shape), _tf_split(b, shape)], axis=len(shape))
    return _lax().reshape(out, (*shape, 4))


def _rbg_fold_in(k, data):
    a, b = _halves(k)
    return _lax().concatenate([_tf_fold_in(a, data), _tf_fold_in(b, data)], 0)


def _rbg_bits(k, bit_width, shape):
    if bit_width not in _UINT:
        raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
    _, b = _lax().rng_bit_generator(k, tuple(shape), dtype=_UINT[bit_width])
    return b


def _urbg_split(k, shape):
    lax = _lax()
    shape = tuple(shape)
    num = math.prod(shape)
    # ten rows of RngBitGenerator output per new key, the first of each kept
    _, rows = lax.rng_bit_generator(k, (10 * num, 4), dtype=_U32)
    return lax.reshape(lax.slice_in_dim(rows, 0, 10 * num, stride=10), (*shape, 4))


def _urbg_fold_in(k, data):
    lax = _lax()
    _, rows = lax.rng_bit_generator(_rbg_seed(data), (10, 4), dtype=_U32)
    return lax.bitwise_xor(k, lax.index_in_dim(rows, 9, keepdims=False))


_RAW = {
    "threefry2x32": (_tf_seed, _tf_split, _tf_bits, _tf_fold_in),
    "rbg": (_rbg_seed, _rbg_split, _rbg_bits, _rbg_fold_in),
    "unsafe_rbg": (_rbg_seed, _urbg_split, _rbg_bits, _urbg_fold_in),
}
for _n, _fns in _RAW.items():
    for _op, _f in zip(("seed", "split", "random_bits", "fold_in"), _fns):
        _prng.builtin_ops[(_n, _op)] = _f
del _n, _fns, _op, _f


def _raw_fns(impl):
    if _prng.prngs.get(impl.name) is impl:
        return _RAW[impl.name]
    return None


def _user_key_data(impl, out, op, shape):
    """The key data a user-defined implementation's ``op`` returned, checked."""
    out = _jnp().asarray(out)
    want = tuple(shape) + tuple(impl.key_shape)
    if tuple(out.shape) != want or out.dtype != _U32:
        raise TypeError(f"PRNG implementation {impl.name!r}: {op} must return uint32 key data "
                        f"of shape {want}, got {out.dtype}{list(out.shape)}")
    return out


def _call_user(fn, *args):
    """A user-defined implementation's function; xform.random calls it makes (on keys of
    other implementations) must not change the implementation of the caller's key."""
    prev = _IMPL[0]
    try:
        return fn(*args)
    finally:
        _IMPL[0] = prev


def _seed_words(seed):
    impl = _cur()
    fns = _raw_fns(impl)
    if fns is not None:
        return fns[0](seed)
    return _user_key_data(impl, _call_user(impl.seed, seed), "seed", ())


def _split_raw(k, shape):
    impl = _cur()
    fns = _raw_fns(impl)
    if fns is not None:
        return fns[1](k, shape)
    return _user_key_data(impl, _call_user(impl.split, k, tuple(shape)), "split", shape)


def _fold_in_raw(k, data):
    impl = _cur()
    fns = _raw_fns(impl)
    if fns is not None:
        return fns[3](k, data)
    d = _lax().convert_element_type(data, _U32)
    return _user_key_data(impl, _call_user(impl.fold_in, k, d), "fold_in", ())


def _bits_raw(k, bit_width, shape):
    impl = _cur()
    fns = _raw_fns(impl)
    if fns is not None:
        return fns[2](k, bit_width, shape)
    return _jnp().asarray(_call_user(impl.random_bits, k, bit_width, tuple(shape)))


def _key_ndim():
    """Number of trailing key-data axes of the current implementation's words."""
    return len(_cur().key_shape)


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


def _check_raw_key_data(data, what="key", impl=None):
    impl = _default_impl() if impl is None else impl
    ks = tuple(impl.key_shape)
    if not all(hasattr(data, a) for a in ("ndim", "shape", "dtype")):
        raise TypeError("xform encountered invalid PRNG key data: expected key_data to have "
                        f"ndim, shape, and dtype attributes. Got {data!r}")
    if data.ndim < 1:
        raise TypeError("xform encountered invalid PRNG key data: expected key_data.ndim >= 1; "
                        f"got ndim={data.ndim} for {what} of shape {tuple(data.shape)}")
    if tuple(data.shape[len(data.shape) - len(ks):]) != ks or data.ndim < len(ks):
        raise TypeError("xform encountered invalid PRNG key data: expected key_data.shape to "
                        f"end with {ks}; got shape={tuple(data.shape)} for impl={impl.name} "
                        f"({what})")
    if np.dtype(data.dtype) != _U32:
        raise TypeError("xform encountered invalid PRNG key data: expected key_data.dtype = "
                        f"uint32; got dtype={data.dtype} ({what} of shape {tuple(data.shape)})")


def _arraylike(x) -> bool:
    return isinstance(x, (core.Array, core.Tracer, np.ndarray, np.generic)) or \
        (hasattr(x, "__array__") and hasattr(x, "shape"))


def _key_words(name, key, allow_batched=False):
    """(raw uint32[..., *key_shape] words, was_typed) of a key argument, checked as JAX
    does; sets the implementation the raw-word functions use (``_IMPL``) to the key's
    (a raw key's is the default implementation, ``jax_default_prng_impl``)."""
    if _is_typed(key):
        impl = key.dtype.impl
        if type(key) is core.Array and core.current_trace() is core.EVAL_TRACE:
            data = core.Array(_prng.to_words(key._value))   # the cast, without a bind
        else:
            data = _prng.random_unwrap(key)
        typed = True
        shape = key.shape
    elif _arraylike(key):
        impl = _default_impl()
        if isinstance(key, (np.ndarray, np.generic)):
            key = np.asarray(key)
        _check_raw_key_data(key, f"argument `key` of {name}", impl)
        data, typed = key, False
        shape = tuple(key.shape[:key.ndim - len(impl.key_shape)])
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
    _IMPL[0] = impl
    return data, typed


def _wrap(words, impl):
    if type(words) is core.Array and core.current_trace() is core.EVAL_TRACE:
        # the cast, without a bind
        return core.Array(_prng.to_struct(words._value, _prng.KeyTy(impl)))
    return _prng.random_wrap(words, impl)


def _rewrap(typed, words):
    if not typed and not config.read("jax_enable_custom_prng"):
        return words
    return _wrap(words, _cur())


# ----------------------------------------------------------------- implementations


class PRNGSpec:
    """Names a PRNG implementation (what ``key_impl`` returns for one that is not
    registered by name, and what ``xform.extend.random.define_prng_impl`` makes)."""

    __slots__ = ("_impl",)

    def __init__(self, impl):
        self._impl = impl

    def __repr__(self):
        return f"PRNGSpec({self._impl.name!r})"

    def __str__(self):
        return str(self._impl)

    def __hash__(self):
        return hash(self._impl)

    def __eq__(self, other):
        return isinstance(other, PRNGSpec) and self._impl == other._impl


def _default_impl():
    name = config.read("jax_default_prng_impl")
    impl = _prng.prngs.get(name)
    if impl is None:
        raise ValueError(f"unrecognized PRNG implementation {name!r} in "
                         f"jax_default_prng_impl; xform implements "
                         f"{', '.join(map(repr, _prng.prngs))}")
    return impl


def _resolve_impl(impl):
    """A ``PRNGImpl`` from what ``impl=`` accepts: None (the default), a name, a
    ``PRNGSpec``, a ``PRNGImpl`` or a key dtype."""
    if impl is None:
        return _default_impl()
    if isinstance(impl, _prng.PRNGImpl):
        return impl
    if isinstance(impl, PRNGSpec):
        return impl._impl
    if isinstance(impl, _prng.KeyTy):
        return impl.impl
    if isinstance(impl, str):
        if impl in _prng.prngs:
            return _prng.prngs[impl]
        keys_fmt = ", ".join(f'"{k}"' for k in _prng.prngs)
        raise ValueError(f'unrecognized PRNG implementation "{impl}". Did you mean one of: '
                         f"{keys_fmt}?")
    raise TypeError(f"unrecognized type {type(impl)} for specifying PRNG implementation.")


def _builtin(impl) -> bool:
    return _prng.prngs.get(impl.name) is impl


def _seed_key_words(ctor, seed, impl):
    """The key data of ``seed`` under ``impl`` (a built-in one's jitted, a user-defined
    one's ``seed`` called directly, as JAX calls it)."""
    arr = _seed_array(ctor, seed)
    _IMPL[0] = impl
    if _builtin(impl):
        return _seed_j(arr)
    return _seed_words(arr)


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
        if not -2 ** 63 <= seed < 2 ** 63:
            raise OverflowError(f"Python int {seed} too large to convert to int64 (a seed "
                                "must fit in int64)")
        s = np.array(seed, np.int64)
        if not config.read("jax_enable_x64"):
            s = s.astype(np.int32)
        return jnp.asarray(s)
    arr = jnp.asarray(seed)
    if not D.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r} of dtype {arr.dtype}")
    return arr


def PRNGKey(seed, *, impl=None):
    """A legacy raw key: the ``uint32[*key_shape]`` words of an integer seed (as
    ``jax.random.PRNGKey``; ``uint32[2]`` for the default threefry2x32)."""
    impl = _resolve_impl(impl)
    words = _seed_key_words("PRNGKey", seed, impl)
    if config.read("jax_enable_custom_prng"):
        return _wrap(words, impl)
    return words


def key(seed, *, impl=None, dtype=None):
    """A typed key: a scalar array of dtype ``key<TAG>`` (as ``jax.random.key``)."""
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "xform.random.key")
        impl = dtype
    impl = _resolve_impl(impl)
    return _prng.random_wrap(_seed_key_words("key", seed, impl), impl)


def key_dtype(impl=None):
    return _prng.KeyTy(_resolve_impl(impl))


def key_data(keys):
    """The ``uint32[..., *key_shape]`` words of a key array (raw keys are returned as
    they are)."""
    data, _ = _key_words("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    """Typed keys over ``uint32[..., *key_shape]`` words."""
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "xform.random.wrap_key_data")
        impl = dtype
    impl = _resolve_impl(impl)
    if _is_typed(key_bits_array):
        raise TypeError("wrap_key_data: expected uint32 key data, got a typed key array of "
                        f"dtype {key_bits_array.dtype}")
    if isinstance(key_bits_array, (np.ndarray, np.generic, list, tuple)):
        key_bits_array = _jnp().asarray(np.asarray(key_bits_array))
    _check_raw_key_data(key_bits_array, "argument `key_bits_array` of wrap_key_data", impl)
    return _prng.random_wrap(key_bits_array, impl)


def key_impl(keys):
    """The implementation of a key array: its name for a built-in one, else a
    ``PRNGSpec``."""
    _key_words("key_impl", keys, allow_batched=True)
    impl = _cur()
    return impl.name if _builtin(impl) else PRNGSpec(impl)


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
    shape = _split_shape(num)
    # a user-defined implementation's split is called as JAX calls it (not cached)
    out = _split_j(words, shape) if _builtin(_cur()) else _split_raw(words, shape)
    return _rewrap(typed, out)


def fold_in(key, data):
    """A new key that is a deterministic function of ``key`` and the integer ``data``."""
    words, typed = _key_words("fold_in", key)
    if np.ndim(data):
        raise TypeError("fold_in accepts a scalar, but was given an array of "
                        f"shape {np.shape(data)} != (). Use jax.vmap for batching.")
    if isinstance(data, np.integer):
        data = np.asarray(data).astype(np.uint32)   # NumPy integers wrap, as jnp.asarray
    elif isinstance(data, int) and not isinstance(data, bool):
        d = np.asarray(int(data) % 2 ** 32, np.uint32) if int(data) < 2 ** 32 else None
        if d is None:
            raise OverflowError(f"Python int {data} too large to convert to uint32")
        if int(data) < 0:
            raise OverflowError(f"Python integer {data} out of bounds for uint32")
        data = d
    if not _builtin(_cur()):
        return _rewrap(typed, _fold_in_raw(words, _jnp().asarray(data)))
    return _rewrap(typed, _fold_in_j(words, data))


def _canon_dtype(dtype, default, stacklevel=3):
    dt = default if dtype is None else dtype
    try:
        out = D.canonicalize_dtype(dt)
    except TypeError:
        raise TypeError(f"Cannot interpret {dtype!r} as a data type") from None
    if dtype is not None and dtype not in (int, float, complex) and np.dtype(dtype) != out:
        warnings.warn(f"Explicitly requested dtype {np.dtype(dtype)} is not available, and "
                      f"will be truncated to dtype {out}. To enable more dtypes, set the "
                      "jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell "
                      "environment variable.", UserWarning, stacklevel=stacklevel)
    return out


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
    if not _builtin(_cur()):
        return _bits_raw(words, dtype.itemsize * 8, _canon_shape(shape))
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


def _float_dtype(name, dtype, what="a float", stacklevel=4):
    dt = _canon_dtype(dtype, float, stacklevel=stacklevel)
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


def _float_sampler_call(name, jitted, key, params, shape, dtype):
    """The common front of the float samplers with broadcastable parameters: check the key,
    the dtype, the shape against the parameters' shapes and the parameters' castability,
    then call the jitted body ``jitted(words, *params, shape, dtype)``."""
    words, _ = _key_words(name, key)
    dtype = _float_dtype(name, dtype, stacklevel=5)
    shape = _check_broadcast_shapes(name, shape, *params)
    _safe_cast_check(name, dtype, *params)
    return jitted(words, *params, shape, dtype)


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


# ----------------------------------------------------------------- integers


def _convert_and_clip_integer(val, dtype):
    jnp = _jnp()
    lo = max(D.iinfo(dtype).min, D.iinfo(val.dtype).min)
    hi = min(D.iinfo(dtype).max, D.iinfo(val.dtype).max)
    return jnp.clip(val, np.array(lo, val.dtype), np.array(hi, val.dtype)).astype(dtype)


@_rjit(3, 4)
def _randint_j(k, minval, maxval, shape, dtype):
    lax, jnp = _lax(), _jnp()
    _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
    minval = jnp.asarray(minval)
    maxval = jnp.asarray(maxval)
    if not D.issubdtype(minval.dtype, np.integer):
        minval = minval.astype(int)
    if not D.issubdtype(maxval.dtype, np.integer):
        maxval = maxval.astype(int)
    maxval_out_of_range = lax.gt(maxval, _convert_and_clip_integer(
        jnp.array(D.iinfo(dtype).max, dtype), maxval.dtype))
    minval = lax.broadcast_to_rank(_convert_and_clip_integer(minval, dtype), len(shape))
    maxval = lax.broadcast_to_rank(_convert_and_clip_integer(maxval, dtype), len(shape))
    nbits = D.iinfo(dtype).bits
    ks = _split_raw(k, (2,))
    higher, lower = _bits_raw(ks[0], nbits, shape), _bits_raw(ks[1], nbits, shape)
    udt = _UINT[nbits]
    span = lax.convert_element_type(maxval - minval, udt)
    span = lax.select(maxval <= minval, lax.full_like(span, 1), span)
    span = lax.select(maxval_out_of_range & (maxval > minval),
                      lax.add(span, np.array(1, udt)), span)
    mult = lax.rem(np.array(2 ** (nbits // 2), udt), span)
    mult = lax.rem(lax.mul(mult, mult), span)
    off = lax.add(lax.mul(lax.rem(higher, span), mult), lax.rem(lower, span))
    off = lax.rem(off, span)
    return lax.add(minval, lax.convert_element_type(off, dtype))


def randint(key, shape, minval, maxval, dtype=int):
    """Uniform integers in ``[minval, maxval)``."""
    jnp = _jnp()
    words, _ = _key_words("randint", key)
    dtype = _canon_dtype(dtype, int)
    shape = _canon_shape(shape)
    if not D.issubdtype(dtype, np.integer):
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    for nm, v in (("minval", minval), ("maxval", maxval)):
        vd = np.dtype(getattr(v, "dtype", None) or np.asarray(v).dtype)
        if not (D.issubdtype(vd, np.integer) or D.issubdtype(vd, np.floating)
                or vd == np.bool_):
            raise TypeError(f"randint: {nm} must be an integer or float array, got dtype {vd}")
    info = D.iinfo(dtype)
    samp = dtype
    if info.bits < 32:
        samp = np.dtype(np.int32)
        minval = jnp.asarray(minval).astype("int32").clip(int(info.min), int(info.max))
        maxval = jnp.asarray(maxval).astype("int32").clip(int(info.min), int(info.max) + 1)
    return _randint_j(words, minval, maxval, shape, samp).astype(dtype)


# ----------------------------------------------------------------- permutations, choice


def _shuffle_raw(k, x, axis):
    lax = _lax()
    uint32max = np.iinfo(np.uint32).max
    num_rounds = int(np.ceil(3 * np.log(max(1, x.size)) / np.log(uint32max)))
    for _ in range(num_rounds):
        ks = _split_raw(k, (2,))
        k, sub = ks[0], ks[1]
        sort_keys = _bits_raw(sub, 32, x.shape)
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


@_rjit(2)
def _shuffle_j(k, x, axis):
    return _shuffle_raw(k, x, axis)


@_rjit(2)
def _permutation_j(k, x, axis):
    jnp = _jnp()
    ind = _shuffle_raw(k, jnp.arange(x.shape[axis]), 0)
    return jnp.take(x, ind, axis, unique_indices=True)


def _canon_axis(axis, ndim, name):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``range(x)`` (int) or of ``x`` along ``axis``."""
    jnp = _jnp()
    words, _ = _key_words("permutation", key)
    if isinstance(x, (list, tuple)):
        x = jnp.asarray(x)
    axis = _canon_axis(axis, np.ndim(x) or 1, "permutation")
    if not np.ndim(x):
        if not D.issubdtype(D.dtype_of(x), np.integer):
            raise TypeError("x must be an integer or at least 1-dimensional")
        r = int(core.concrete_or_error(x, "argument x of xform.random.permutation()"))
        return _shuffle_j(words, jnp.arange(r), axis)
    x = jnp.asarray(x)
    if independent or x.ndim == 1:
        return _shuffle_j(words, x, axis)
    return _permutation_j(words, x, axis)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Random samples from ``a`` (an int n means ``arange(n)``)."""
    jnp, lax = _jnp(), _lax()
    words, typed = _key_words("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of xform.random.choice must be a sequence, got {shape}")
    arr = jnp.asarray(a)
    if arr.ndim == 0:
        n_inputs = int(core.concrete_or_error(a, "The error occurred in xform.random.choice()"))
    else:
        axis = _canon_axis(axis, arr.ndim, "choice")
        n_inputs = arr.shape[axis]
    shape = tuple(shape)
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                         f"{n_inputs}) when 'replace=False'")
    key = _rewrap(typed, words)
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
        else:
            slices = (slice(None),) * axis + (slice(n_draws),)
            result = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)[slices]
    else:
        p_arr = jnp.asarray(p)
        if not D.issubdtype(p_arr.dtype, np.inexact):
            p_arr = p_arr.astype(D.to_inexact_dtype(p_arr.dtype))
        if p_arr.shape != (n_inputs,):
            raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                             f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
        if replace:
            p_cuml = jnp.cumsum(p_arr)
            r = p_cuml[-1] * (1 - uniform(key, shape, dtype=p_cuml.dtype))
            ind = jnp.sum(p_cuml < r[..., None], axis=-1).astype(int)   # searchsorted(left)
        else:
            g = gumbel(key, (n_inputs,), dtype=p_arr.dtype, mode=mode) + jnp.log(p_arr)
            ind = lax.top_k(g, k=n_draws)[1].astype(int)
        result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
    return result.reshape(shape if arr.ndim == 0 else
                          arr.shape[0:axis] + tuple(shape) + arr.shape[axis + 1:])


# ----------------------------------------------------------------- continuous samplers


@_rjit(3, 4)
def _truncated_normal_j(k, lower, upper, shape, dtype):
    lax, jnp = _lax(), _jnp()
    if shape is None:
        shape = tuple(np.broadcast_shapes(np.shape(lower), np.shape(upper)))
    else:
        _check_shape("truncated_normal", shape, np.shape(lower), np.shape(upper))
    sqrt2 = np.array(np.sqrt(2), dtype)
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    a = lax.erf(lower / sqrt2)
    b = lax.erf(upper / sqrt2)
    u = _uniform_raw(k, shape, dtype, a, b)
    out = sqrt2 * lax.erf_inv(u)
    return jnp.clip(out, lax.nextafter(lax.stop_gradient(lower), np.array(np.inf, dtype)),
                    lax.nextafter(lax.stop_gradient(upper), np.array(-np.inf, dtype)))


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    words, _ = _key_words("truncated_normal", key)
    if shape is not None:
        shape = _canon_shape(shape)
    dtype = _float_dtype("truncated_normal", dtype, "a float")
    return _truncated_normal_j(words, lower, upper, shape, dtype)


@_rjit(2, 3)
def _bernoulli_j(k, p, shape, mode):
    lax = _lax()
    if shape is None:
        shape = np.shape(p)
    else:
        _check_shape("bernoulli", shape, np.shape(p))
    dtype = p.dtype
    if mode == "high":
        u = _uniform_raw(k, (2, *shape), dtype, 0.0, 1.0)
        u1, u2 = u[0], u[1]
        u2 = u2 * np.array(2 ** (-D.finfo(dtype).nmant), dtype)
        return u2 < p - u1
    return _uniform_raw(k, tuple(shape), dtype, 0.0, 1.0) < p


def bernoulli(key, p=0.5, shape=None, mode="low"):
    lax = _lax()
    if shape is not None:
        shape = _canon_shape(shape)
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    words, _ = _key_words("bernoulli", key)
    dtype = D.dtype_of(p)
    if not D.issubdtype(dtype, np.floating):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
    p = lax.convert_element_type(p, dtype)
    return _bernoulli_j(words, p, shape, mode)


def _simple_sampler(name, body, float_only=True):
    @_rjit(1, 2)
    def impl(k, shape, dtype):
        return body(k, shape, dtype)
    impl.__name__ = f"_{name}_j"

    def sampler(key, shape=(), dtype=None):
        words, _ = _key_words(name, key)
        dtype = _float_dtype(name, dtype)
        return impl(words, _canon_shape(shape), dtype)
    sampler.__name__ = sampler.__qualname__ = name
    sampler.__doc__ = f"Samples of the standard {name} distribution (as ``jax.random.{name}``)."
    return sampler


def _exponential_raw(k, shape, dtype):
    lax = _lax()
    u = _uniform_raw(k, shape, dtype, 0.0, 1.0)
    return lax.neg(lax.log1p(lax.neg(u)))


def _cauchy_raw(k, shape, dtype):
    lax = _lax()
    u = _uniform_raw(k, shape, dtype, D.finfo(dtype).eps, 1.0)
    return lax.tan(lax.mul(np.array(np.pi, dtype), lax.sub(u, np.array(0.5, dtype))))


def _laplace_raw(k, shape, dtype):
    lax = _lax()
    u = _uniform_raw(k, shape, dtype, -1.0 + D.finfo(dtype).epsneg, 1.0)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def _logistic_raw(k, shape, dtype):
    lax = _lax()
    x = _uniform_raw(k, shape, dtype, D.finfo(dtype).tiny, 1.0)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


exponential = _simple_sampler("exponential", _exponential_raw)
cauchy = _simple_sampler("cauchy", _cauchy_raw)
laplace = _simple_sampler("laplace", _laplace_raw)
logistic = _simple_sampler("logistic", _logistic_raw)


def _clz32(x):
    """Count of leading zero bits of uint32 ``x`` (32 for 0), with integer ops only."""
    lax = _lax()
    for s in (1, 2, 4, 8, 16):
        x = lax.bitwise_or(x, lax.shift_right_logical(x, np.array(s, _U32)))
    return lax.population_count(lax.bitwise_not(x))


def _safe_int_to_float(bits):
    """uint32 pairs (hi, lo) -> float32 in (0, 1] keeping low bits (JAX's algorithm)."""
    lax, jnp = _lax(), _jnp()
    fi = D.finfo(np.float32)
    hiclz, loclz = _clz32(bits[0]), _clz32(bits[1])
    hi, lo = bits[0], bits[1]
    mantissa = lax.bitwise_or(
        lax.shift_left(hi, hiclz),
        jnp.where(hiclz == 32, lax.shift_left(lo, loclz),
                  lax.shift_right_logical(lo, np.uint32(fi.bits) - hiclz)))
    mantissa = lax.shift_right_logical(mantissa, np.array(fi.bits - fi.nmant - 1, _U32))
    mantissa = lax.bitwise_and(mantissa, np.array((1 << fi.nmant) - 1, _U32))
    exp = lax.shift_left(np.uint32(-fi.minexp) - jnp.where(hiclz == 32, 32 + loclz, hiclz),
                         np.array(fi.nmant, _U32))
    exp = lax.bitwise_and(exp, np.array((1 << (fi.bits - 2)) - (1 << (fi.nmant - 1)), _U32))
    return lax.bitcast_convert_type(lax.bitwise_or(exp, mantissa), np.float32)


def _gumbel_raw(k, shape, dtype, mode):
    jnp, lax = _jnp(), _lax()
    info = D.finfo(dtype)
    if dtype == np.float32 and mode == "highest":
        shape = tuple(shape)
        b = _bits_raw(k, 32, (2,) + shape)
        neg = lax.bitwise_not(b)
        lo_bits = neg[1]
        neg = neg + jnp.stack([(lo_bits == np.uint32(0xFFFFFFFF)).astype(_U32),
                               jnp.ones_like(lo_bits)])
        flip = b[0] < np.uint32(1 << 31)
        x = _safe_int_to_float(jnp.where(flip, b, neg))
        return jnp.where(flip, -jnp.log(-jnp.log1p(-x)), -jnp.log(-jnp.log(x)))
    if mode in ("high", "highest"):
        u = _uniform_raw(k, (2,) + tuple(shape), dtype, 0.0, 1.0)
        high, low = u[0], u[1]
        x = jnp.where(high >= 0.5, high,
                      high + np.array(2 ** (-info.nmant), dtype) * low + np.array(info.tiny, dtype))
        return -jnp.log(-jnp.log1p(-x))
    return -jnp.log(-jnp.log(_uniform_raw(k, shape, dtype, info.tiny, 1.0)))


@_rjit(1, 2, 3)
def _gumbel_j(k, shape, dtype, mode):
    return _gumbel_raw(k, shape, dtype, mode)


def gumbel(key, shape=(), dtype=None, mode=None):
    words, _ = _key_words("gumbel", key)
    dtype = _float_dtype("gumbel", dtype)
    shape = _canon_shape(shape)
    if mode is None:
        mode = "low"
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    return _gumbel_j(words, shape, dtype, mode)


@_rjit(2, 3, 4, 5, 6)
def _categorical_j(k, logits, shape, batch_shape, axis, replace, mode):
    jnp, lax = _jnp(), _lax()
    shape_prefix = shape[:len(shape) - len(batch_shape)]
    nd = logits.ndim
    if replace:
        if axis >= 0:
            axis -= nd
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis % nd, logits.shape[axis])
        g = _gumbel_raw(k, (*shape_prefix, *logits_shape), logits.dtype, mode)
        return jnp.argmax(g + lax.expand_dims(logits, tuple(range(len(shape_prefix)))),
                          axis=axis)
    logits = logits + _gumbel_raw(k, logits.shape, logits.dtype, mode)
    kk = math.prod(shape_prefix)
    if kk > logits.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({kk}) cannot exceed number "
                         f"of categories ({logits.shape[axis]}).")
    _, indices = lax.top_k(jnp.moveaxis(logits, axis, -1), kk)
    dims = (indices.ndim - 1, *range(indices.ndim - 1))
    return lax.reshape(indices, shape, dims)


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    jnp = _jnp()
    words, _ = _key_words("categorical", key)
    logits = jnp.asarray(logits)
    axis = operator.index(axis)
    if not -logits.ndim <= axis < logits.ndim:
        raise IndexError(f"categorical: axis {axis} is out of bounds for logits of shape "
                         f"{logits.shape}")
    batch_shape = tuple(np.delete(logits.shape, axis))
    if shape is None:
        shape = batch_shape
    else:
        shape = _canon_shape(shape)
        _check_shape("categorical", shape, batch_shape)
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    return _categorical_j(words, logits, shape, batch_shape, axis, bool(replace), mode)


# ----------------------------------------------------------------- gamma family


def _gamma_one(k, alpha, log_space):
    lax = _lax()
    dtype = alpha.dtype
    c_ = lambda v: np.array(v, dtype)   # noqa: E731
    zero, one, two, minus_one = c_(0), c_(1), c_(2), c_(-1)
    one_over_two, one_over_three, squeeze = c_(0.5), c_(1.0 / 3.0), c_(0.0331)
    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, one_over_three)
    c = lax.div(one_over_three, lax.sqrt(d))

    def cond_fn(kXVU):
        _, X, V, U = kXVU
        return lax.bitwise_and(
            lax.ge(U, lax.sub(one, lax.mul(squeeze, lax.mul(X, X)))),
            lax.ge(lax.log(U), lax.add(lax.mul(X, one_over_two),
                                       lax.mul(d, lax.add(lax.sub(one, V), lax.log(V))))))

    def body_fn(kXVU):
        def next_kxv(kxv):
            kk = kxv[0]
            ks = _split_raw(kk, (2,))
            kk, sub = ks[0], ks[1]
            x = _normal_raw(sub, (), dtype)
            v = lax.add(one, lax.mul(x, c))
            return kk, x, v
        kk = kXVU[0]
        ks = _split_raw(kk, (3,))
        kk, x_key, U_key = ks[0], ks[1], ks[2]
        _, x, v = lax.while_loop(lambda kxv: lax.le(kxv[2], zero), next_kxv,
                                 (x_key, zero, minus_one))
        X = lax.mul(x, x)
        V = lax.mul(lax.mul(v, v), v)
        U = _uniform_raw(U_key, (), dtype, 0.0, 1.0)
        return kk, X, V, U

    ks = _split_raw(k, (2,))
    k, sub = ks[0], ks[1]
    _, _, V, _ = lax.while_loop(cond_fn, body_fn, (k, zero, one, two))
    if log_space:
        log_samples = lax.neg(_exponential_raw(sub, (), dtype))
        log_boost = lax.select(boost_mask | (log_samples == 0), zero,
                               lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
    samples = one - _uniform_raw(sub, (), dtype, 0.0, 1.0)
    boost = lax.select(boost_mask, one, lax.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, V), boost)


def _gamma_flat(k, a, log_space):
    """Samples for every element of ``a`` given key words ``k`` of shape
    ``batch + key_shape`` and ``a`` of shape ``batch + rest``: each key splits into one
    subkey per element of ``rest``, and one flat vmapped rejection sampler (Marsaglia
    and Tsang) runs over all of them, as JAX's ``random_gamma`` does. Keeping the
    loop flat when vmap adds key batch dimensions is what keeps vmapped samples
    bit-identical to JAX's: XLA vectorizes a (12,) loop differently from a (3, 4) one."""
    jnp, lax = _jnp(), _lax()
    shape = a.shape
    ks = tuple(_cur().key_shape)
    nb = k.ndim - len(ks)
    n = math.prod(shape[nb:])
    if nb == 0:
        keys = _split_raw(k, (n,))
    else:
        keys = _x().vmap(lambda kk: _split_raw(kk, (n,)))(
            lax.reshape(k, (math.prod(k.shape[:nb]),) + ks))
    keys = lax.reshape(keys, (math.prod(shape),) + ks)
    alphas = lax.reshape(a, (math.prod(shape),))
    if _cur() is _prng.THREEFRY:
        samples = _x().vmap(lambda kk, al: _gamma_one(kk, al, log_space))(keys, alphas)
    else:   # as JAX: other implementations' bits need not vectorize, one at a time
        samples = lax.map(lambda ka: _gamma_one(ka[0], ka[1], log_space), (keys, alphas))
    return jnp.reshape(samples, shape)


_gamma_impl_cache: dict = {}


def _gamma_impl(k, a, log_space):
    """``_gamma_flat`` under a vmap rule that moves the batch dimension of the keys
    and of ``a`` to the front and samples them in one flat loop (JAX's batching rule
    for ``random_gamma``) instead of batching the loop."""
    fn = _gamma_impl_cache.get((log_space, _cur()))
    if fn is None:
        from xform.custom_batching import custom_vmap  # deferred: import cycle

        @custom_vmap
        def fn(k, a):
            return _gamma_flat(k, a, log_space)

        @fn.def_vmap
        def _rule(axis_size, in_batched, k, a):
            kb, ab = in_batched
            jnp = _jnp()
            if not kb:
                k = jnp.broadcast_to(k, (axis_size, *k.shape))
            if not ab:
                a = jnp.broadcast_to(a, (axis_size, *a.shape))
            return fn(k, a), True

        _gamma_impl_cache[(log_space, _cur())] = fn
    return fn(k, a)


@_rjit(2, 3, 4)
def _gamma_j(k, a, shape, dtype, log_space):
    lax, jnp = _lax(), _jnp()
    if shape is None:
        shape = np.shape(a)
    else:
        _check_shape("gamma", shape, np.shape(a))
    a = lax.convert_element_type(a, dtype)
    if np.shape(a) != tuple(shape):
        a = jnp.broadcast_to(a, shape)
    return _gamma_sample(k, a, log_space)


def _gamma_sample(k, a, log_space):
    return _gamma_vjp_wrapped(log_space)(k, a)


_gamma_wrapped_cache: dict = {}


def _gamma_vjp_wrapped(log_space):
    """``(key words, a) -> samples`` with JAX's implicit-reparameterization derivative
    w.r.t. ``a`` (``random_gamma_grad``) as a custom JVP."""
    fn = _gamma_wrapped_cache.get((log_space, _cur()))
    if fn is not None:
        return fn
    x = _x()

    @x.custom_jvp
    def g(k, a):
        return _gamma_impl(k, a, log_space)

    @g.defjvp
    def g_jvp(primals, tangents):
        k, a = primals
        _, ta = tangents
        ans = g(k, a)
        return ans, ta * _gamma_grad(ans, a, log_space)

    _gamma_wrapped_cache[(log_space, _cur())] = g
    return g


def _gamma_grad(sample, a, log_space):
    lax = _lax()
    if log_space:
        s = lax.exp(sample)
        s = lax.select(s == 0, lax.full_like(s, D.finfo(s.dtype).tiny), s)
        return _random_gamma_grad(a, s) / s
    return _random_gamma_grad(a, sample)


def _random_gamma_grad(a, x):
    """d x / d a of a Gamma(a, 1) sample ``x`` (implicit reparameterization): the
    ``lax.random_gamma_grad`` primitive, as JAX's gamma uses."""
    return _lax().random_gamma_grad(a, x)


def gamma(key, a, shape=None, dtype=None):
    """Gamma(a, 1) samples; differentiable in ``a`` (implicit reparameterization)."""
    words, _ = _key_words("gamma", key)
    dtype = _float_dtype("gamma", dtype)
    if shape is not None:
        shape = _canon_shape(shape)
    return _gamma_j(words, a, shape, dtype, False)


def loggamma(key, a, shape=None, dtype=None):
    """log of Gamma(a, 1) samples, accurate for small ``a``."""
    words, _ = _key_words("loggamma", key)
    dtype = _float_dtype("gamma", dtype)
    if shape is not None:
        shape = _canon_shape(shape)
    return _gamma_j(words, a, shape, dtype, True)


@_rjit(3, 4)
def _beta_j(k, a, b, shape, dtype):
    lax, jnp = _lax(), _jnp()
    a = lax.convert_element_type(a, dtype)
    b = lax.convert_element_type(b, dtype)
    ks = _split_raw(k, (2,))
    a = jnp.broadcast_to(a, shape)
    b = jnp.broadcast_to(b, shape)
    lga = _gamma_j.__wrapped__(ks[0], a, shape, dtype, True)
    lgb = _gamma_j.__wrapped__(ks[1], b, shape, dtype, True)
    log_max = lax.max(lga, lgb)
    ga = jnp.exp(lga - log_max)
    gb = jnp.exp(lgb - log_max)
    return ga / (ga + gb)


def beta(key, a, b, shape=None, dtype=None):
    words, _ = _key_words("beta", key)
    dtype = _float_dtype("beta", dtype)
    _safe_cast_check("beta", dtype, a, b)
    shape = _check_broadcast_shapes("beta", shape, a, b)
    return _beta_j(words, a, b, shape, dtype)


@_rjit(2, 3)
def _dirichlet_j(k, alpha, shape, dtype):
    lax, jnp = _lax(), _jnp()
    alpha = lax.convert_element_type(alpha, dtype)
    lg = _gamma_j.__wrapped__(k, alpha, tuple(shape) + np.shape(alpha)[-1:], dtype, True)
    # softmax along the last axis, as jax.nn.softmax
    m = jnp.max(lg, axis=-1, keepdims=True)
    unnorm = jnp.exp(lg - lax.stop_gradient(m))
    return unnorm / jnp.sum(unnorm, axis=-1, keepdims=True)


def dirichlet(key, alpha, shape=None, dtype=None):
    words, _ = _key_words("dirichlet", key)
    dtype = _float_dtype("dirichlet", dtype)
    if not np.ndim(alpha) >= 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {np.ndim(alpha)}")
    if shape is None:
        shape = np.shape(alpha)[:-1]
    else:
        shape = _canon_shape(shape)
        _check_shape("dirichlet", shape, np.shape(alpha)[:-1])
    return _dirichlet_j(words, alpha, tuple(shape), dtype)


# ----------------------------------------------------------------- derived samplers


@_rjit(2, 3)
def _pareto_j(k, b, shape, dtype):
    lax = _lax()
    b = lax.convert_element_type(b, dtype)
    e = _exponential_raw(k, shape, dtype)
    return lax.exp(e / b)


def pareto(key, b, shape=None, dtype=None):
    return _float_sampler_call("pareto", _pareto_j, key, (b,), shape, dtype)


@_rjit(2, 3)
def _t_j(k, df, shape, dtype):
    lax, jnp = _lax(), _jnp()
    df = lax.convert_element_type(df, dtype)
    ks = _split_raw(k, (2,))
    n = _normal_raw(ks[0], shape, dtype)
    half_df = lax.div(df, np.array(2, dtype))
    g = _gamma_j.__wrapped__(ks[1], half_df, shape, dtype, False)
    return n * jnp.sqrt(half_df / g)


def t(key, df, shape=None, dtype=None):
    return _float_sampler_call("t", _t_j, key, (df,), shape, dtype)


def _chisquare_raw(k, df, shape, dtype):
    lax, jnp = _lax(), _jnp()
    df = lax.convert_element_type(df, dtype)
    two = np.array(2, dtype)
    half_df = lax.div(df, two)
    log_g = _gamma_j.__wrapped__(k, half_df, shape, dtype, True)
    return lax.mul(jnp.exp(log_g), two)


@_rjit(2, 3)
def _chisquare_j(k, df, shape, dtype):
    return _chisquare_raw(k, df, shape, dtype)


def chisquare(key, df, shape=None, dtype=None):
    return _float_sampler_call("chisquare", _chisquare_j, key, (df,), shape, dtype)


@_rjit(3, 4)
def _f_j(k, dfnum, dfden, shape, dtype):
    lax = _lax()
    dfden = lax.convert_element_type(dfden, dtype)
    dfnum = lax.convert_element_type(dfnum, dtype)
    ks = _split_raw(k, (2,))
    chi2_dfn = _chisquare_raw(ks[1], dfnum, shape, dtype)
    chi2_dfd = _chisquare_raw(ks[0], dfden, shape, dtype)
    return lax.div(lax.div(chi2_dfn, dfnum), lax.div(chi2_dfd, dfden))


def f(key, dfnum, dfden, shape=None, dtype=None):
    return _float_sampler_call("f", _f_j, key, (dfnum, dfden), shape, dtype)


def _rademacher_raw(k, shape, dtype):
    b = (_uniform_raw(k, shape, D.default_float_dtype(), 0.0, 1.0)
         < np.array(0.5, D.default_float_dtype())).astype(dtype)
    return (2 * b - 1).astype(dtype)


@_rjit(1, 2)
def _rademacher_j(k, shape, dtype):
    return _rademacher_raw(k, shape, dtype)


def rademacher(key, shape=(), dtype=int):
    """Random signs: -1 or +1 with equal probability."""
    words, _ = _key_words("rademacher", key)
    dtype = _canon_dtype(dtype, int)
    return _rademacher_j(words, _canon_shape(shape), dtype)


def _maxwell_raw(k, shape, dtype):
    jnp = _jnp()
    x = _normal_raw(k, tuple(shape) + (3,), dtype)
    return jnp.sqrt(jnp.sum(x * x, axis=-1))   # jnp.linalg.norm's formula


maxwell = _simple_sampler("maxwell", _maxwell_raw)


@_rjit(3, 4)
def _double_sided_maxwell_j(k, loc, scale, shape, dtype):
    params_shapes = tuple(np.broadcast_shapes(np.shape(loc), np.shape(scale)))
    if not shape:
        shape = params_shapes
    shape = tuple(shape) + params_shapes
    ks = _split_raw(k, (2,))
    m = _maxwell_raw(ks[0], shape, dtype)
    s = _rademacher_raw(ks[1], shape, dtype)
    return s * m * scale + loc


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    words, _ = _key_words("double_sided_maxwell", key)
    dtype = _float_dtype("double_sided_maxwell", dtype)
    return _double_sided_maxwell_j(words, loc, scale, _canon_shape(shape), dtype)


@_rjit(3, 4)
def _weibull_min_j(k, scale, concentration, shape, dtype):
    jnp = _jnp()
    u = _uniform_raw(k, shape, dtype, 0, 1)
    return jnp.power(-jnp.log1p(-u), 1.0 / concentration) * scale


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    words, _ = _key_words("weibull_min", key)
    dtype = _float_dtype("weibull_min", dtype)
    return _weibull_min_j(words, scale, concentration, _canon_shape(shape), dtype)


@_rjit(2, 3)
def _rayleigh_j(k, scale, shape, dtype):
    lax, jnp = _lax(), _jnp()
    u = _uniform_raw(k, shape, dtype, 0.0, 1.0)
    scale = jnp.broadcast_to(jnp.asarray(scale).astype(dtype), shape)
    return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), np.array(-2, dtype))))


def rayleigh(key, scale, shape=None, dtype=None):
    return _float_sampler_call("rayleigh", _rayleigh_j, key, (scale,), shape, dtype)


@_rjit(2, 3)
def _wald_j(k, mean, shape, dtype):
    lax, jnp = _lax(), _jnp()
    ks = _split_raw(k, (2,))
    mean = jnp.broadcast_to(jnp.asarray(mean).astype(dtype), shape)
    v = _normal_raw(ks[0], shape, dtype)
    z = _uniform_raw(ks[1], shape, dtype, 0.0, 1.0)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


def wald(key, mean, shape=None, dtype=None):
    return _float_sampler_call("wald", _wald_j, key, (mean,), shape, dtype)


@_rjit(2, 3)
def _geometric_j(k, p, shape, dtype):
    lax, jnp = _lax(), _jnp()
    p = jnp.asarray(p)
    if not D.issubdtype(p.dtype, np.inexact):
        p = p.astype(D.to_inexact_dtype(p.dtype))
    u = _uniform_raw(k, shape, p.dtype, 0.0, 1.0)
    u = jnp.where(u == 0, 1, u)
    log_u = lax.log(u)
    l1p = jnp.broadcast_to(lax.log1p(-p), shape)
    g = lax.floor(lax.div(log_u, l1p)) + 1
    return g.astype(dtype)


def geometric(key, p, shape=None, dtype=None):
    words, _ = _key_words("geometric", key)
    dtype = _canon_dtype(dtype, int)
    if not D.issubdtype(dtype, np.integer):
        raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dtype}")
    shape = _check_broadcast_shapes("geometric", shape, p)
    return _geometric_j(words, p, shape, dtype)


@_rjit(4, 5)
def _triangular_j(k, left, mode, right, shape, dtype):
    lax, jnp = _lax(), _jnp()
    left = jnp.broadcast_to(lax.convert_element_type(left, dtype), shape)
    right = jnp.broadcast_to(lax.convert_element_type(right, dtype), shape)
    mode = jnp.broadcast_to(lax.convert_element_type(mode, dtype), shape)
    fc = (mode - left) / (right - left)
    u = _uniform_raw(k, shape, dtype, 0.0, 1.0)
    out1 = left + lax.sqrt(u * (right - left) * (mode - left))
    out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
    return lax.select(u < fc, out1, out2)


def triangular(key, left, mode, right, shape=None, dtype=None):
    return _float_sampler_call("triangular", _triangular_j, key, (left, mode, right),
                               shape, dtype)


@_rjit(2, 3)
def _lognormal_j(k, sigma, shape, dtype):
    lax = _lax()
    sigma = lax.convert_element_type(sigma, dtype)
    return lax.exp(_normal_raw(k, shape, dtype) * sigma)


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
    words, _ = _key_words("lognormal", key)
    dtype = _canon_dtype(dtype, float)
    if not D.issubdtype(dtype, np.inexact):
        raise ValueError(f"dtype argument to `lognormal` must be a float or complex dtype, "
                         f"got {dtype}")
    shape = _check_broadcast_shapes("lognormal", shape, sigma)
    _safe_cast_check("lognormal", dtype, sigma)
    return _lognormal_j(words, sigma, shape, dtype)


def _generalized_normal_raw(k, p, shape, dtype):
    ks = _split_raw(k, (2,))
    g = _gamma_j.__wrapped__(ks[0], 1 / p, shape, dtype, False)
    r = _rademacher_raw(ks[1], shape, dtype)
    return r * g ** (1 / p)


@_rjit(2, 3)
def _generalized_normal_j(k, p, shape, dtype):
    return _generalized_normal_raw(k, p, shape, dtype)


def generalized_normal(key, p, shape=(), dtype=None):
    shape = _canon_shape(shape)
    words, _ = _key_words("generalized_normal", key)
    dtype = _canon_dtype(dtype, float)
    return _generalized_normal_j(words, p, shape, dtype)


@_rjit(2, 3, 4)
def _ball_j(k, p, d, shape, dtype):
    jnp = _jnp()
    ks = _split_raw(k, (2,))
    g = _generalized_normal_raw(ks[0], p, (*shape, d), dtype)
    e = _exponential_raw(ks[1], shape, dtype)
    return g / (((jnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]


def ball(key, d, p=2, shape=(), dtype=None):
    """Uniform samples from the unit ``p``-norm ball in ``d`` dimensions."""
    shape = _canon_shape(shape)
    words, _ = _key_words("ball", key)
    dtype = _canon_dtype(dtype, float)
    d = operator.index(d)
    return _ball_j(words, p, d, shape, dtype)


# ----------------------------------------------------------------- discrete: poisson & co


@_rjit(2, 3, 4)
def _poisson_knuth(k, lam, shape, dtype, max_iters):
    lax, jnp = _lax(), _jnp()

    def body_fn(carry):
        i, kk, rng, log_prod = carry
        ks = _split_raw(rng, (2,))
        rng, sub = ks[0], ks[1]
        kk = lax.select(log_prod > -lam, kk + 1, kk)
        u = _uniform_raw(sub, shape, np.dtype(np.float32), 0.0, 1.0)
        return i + 1, kk, rng, log_prod + jnp.log(u)

    def cond_fn(carry):
        i, log_prod = carry[0], carry[3]
        return (log_prod > -lam).any() & (i < max_iters)
    k_init = lax.full_like(lam, 0, dtype, shape)
    log_rate_init = lax.full_like(lam, 0, np.float32, shape)
    kk = lax.while_loop(cond_fn, body_fn, (0, k_init, k, log_rate_init))[1]
    return (kk - 1).astype(dtype)


@_rjit(2, 3, 4)
def _poisson_rejection(k, lam, shape, dtype, max_iters):
    lax = _lax()
    log_lam = lax.log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body_fn(carry):
        i, k_out, accepted, key = carry
        ks = _split_raw(key, (3,))
        key, s0, s1 = ks[0], ks[1], ks[2]
        u = _uniform_raw(s0, shape, lam.dtype, 0.0, 1.0) - 0.5
        v = _uniform_raw(s1, shape, lam.dtype, 0.0, 1.0)
        u_shifted = 0.5 - abs(u)
        kk = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        tt = -lam + kk * log_lam - lax.lgamma(kk + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (kk < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept2 = s <= tt
        accept = accept1 | (~reject & accept2)
        k_out = lax.select(accept, kk, k_out)
        accepted = accepted | accept
        return i + 1, k_out, accepted, key

    def cond_fn(carry):
        i, k_out, accepted, key = carry
        return (~accepted).any() & (i < max_iters)
    k_init = lax.full_like(lam, -1, lam.dtype, shape)
    accepted = lax.full_like(lam, False, np.dtype(bool), shape)
    kk = lax.while_loop(cond_fn, body_fn, (0, k_init, accepted, k))[1]
    return kk.astype(dtype)


@_rjit(2, 3)
def _poisson_j(k, lam, shape, dtype):
    lax, jnp = _lax(), _jnp()
    use_knuth = (lam != lam) | (lam < 10)
    lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
    lam_rej = lax.select(use_knuth, lax.full_like(lam, 100000.0), lam)
    max_iters = dtype.type(D.iinfo(dtype).max)
    result = lax.select(use_knuth,
                        _poisson_knuth.__wrapped__(k, lam_knuth, shape, dtype, max_iters),
                        _poisson_rejection.__wrapped__(k, lam_rej, shape, dtype, max_iters))
    return lax.select(lam == 0, jnp.zeros_like(result), result)


def poisson(key, lam, shape=None, dtype=None):
    lax, jnp = _lax(), _jnp()
    words, _ = _key_words("poisson", key)
    if _cur() is not _prng.THREEFRY:
        # JAX's own limit (its sampler is written for threefry's vectorizable bits)
        raise NotImplementedError("`poisson` is only implemented for the threefry2x32 RNG, "
                                  f"not {_cur()}")
    dtype = _canon_dtype(dtype, int)
    shape = _canon_shape(shape) if shape is not None else np.shape(lam)
    lam = jnp.broadcast_to(lam, shape)
    lam = lax.convert_element_type(lam, np.float32)
    return _poisson_j(words, lam, tuple(shape), dtype)


_STIRLING_TAIL = np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                           0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                           0.0118967099458917, 0.010411265261972, 0.00925546218271273,
                           0.00833056343336287])


def _stirling_approx_tail(k):
    lax, jnp = _lax(), _jnp()
    vals = jnp.array(_STIRLING_TAIL, dtype=k.dtype)
    use_tail = k <= 9
    k = lax.clamp(np.array(0.0, k.dtype), k, np.array(9.0, k.dtype))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    k = jnp.floor(k)
    return lax.select(use_tail, vals[jnp.asarray(k, dtype="int32")], approx)


def _binomial_inversion(k, count, prob, shape, dtype, max_iters):
    lax, jnp = _lax(), _jnp()
    log1minusprob = jnp.log1p(-prob)

    def body_fn(carry):
        i, num_geom, geom_sum, key = carry
        ks = _split_raw(key, (2,))
        sub, key = ks[0], ks[1]
        num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = _uniform_raw(sub, shape, prob.dtype, 0.0, 1.0)
        geom = jnp.ceil(jnp.log(u) / log1minusprob)
        return i + 1, num_geom_out, geom_sum + geom, key

    def cond_fn(carry):
        i, geom_sum = carry[0], carry[2]
        return (geom_sum <= count).any() & (i < max_iters)
    init = (0, lax.full_like(prob, 0, prob.dtype, shape), lax.full_like(prob, 0, prob.dtype, shape),
            k)
    kk = lax.while_loop(cond_fn, body_fn, init)[1]
    return (kk - 1).astype(dtype)


def _btrs(k, count, prob, shape, dtype, max_iters):
    lax, jnp = _lax(), _jnp()
    stddev = jnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((count + 1) * prob)

    def body_fn(carry):
        i, k_out, accepted, key = carry
        ks = _split_raw(key, (3,))
        key, s0, s1 = ks[0], ks[1], ks[2]
        u = _uniform_raw(s0, shape, prob.dtype, 0.0, 1.0)
        v = _uniform_raw(s1, shape, prob.dtype, 0.0, 1.0)
        u = u - 0.5
        us = 0.5 - jnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        kk = jnp.floor((2 * a / us + b) * u + c)
        reject = (kk < 0) | (kk > count)
        v = jnp.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * jnp.log((count - m + 1) / (count - kk + 1))
              + (kk + 0.5) * jnp.log(r * (count - kk + 1) / (kk + 1))
              + _stirling_approx_tail(m) + _stirling_approx_tail(count - m)
              - _stirling_approx_tail(kk) - _stirling_approx_tail(count - kk))
        accept2 = v <= ub
        accept = accept1 | (~reject & accept2)
        k_out = lax.select(accept, kk, k_out)
        return i + 1, k_out, accepted | accept, key

    def cond_fn(carry):
        i, accepted = carry[0], carry[2]
        return (~accepted).any() & (i < max_iters)
    init = (0, lax.full_like(prob, -1, prob.dtype, shape), jnp.full(shape, False, bool), k)
    return lax.while_loop(cond_fn, body_fn, init)[1].astype(dtype)


@_rjit(3, 4)
def _binomial_j(k, count, prob, shape, dtype):
    lax, jnp = _lax(), _jnp()
    if shape is None:
        shape = tuple(np.broadcast_shapes(np.shape(count), np.shape(prob)))
    else:
        _check_shape("binomial", shape, np.shape(count), np.shape(prob))
    prob = jnp.asarray(prob)
    if not D.issubdtype(prob.dtype, np.inexact):
        prob = prob.astype(D.to_inexact_dtype(prob.dtype))
    count = lax.convert_element_type(count, prob.dtype)
    count = jnp.broadcast_to(count, shape)
    prob = jnp.broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = (count != count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_is_nan = q != q
    q_l_0 = q < 0.0
    q = lax.select(q_is_nan | q_l_0, lax.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = jnp.floor(count)
    count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
    count_btrs = lax.select(use_inversion, lax.full_like(count, 10000.0), count)
    q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
    max_iters = dtype.type(D.finfo(dtype).max)
    samples = lax.select(use_inversion,
                         _binomial_inversion(k, count_inv, q, shape, dtype, max_iters),
                         _btrs(k, count_btrs, q_btrs, shape, dtype, max_iters))
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = lax.select(invalid, jnp.full_like(samples, np.nan, dtype), samples)
    samples = lax.select(count_inf & ~invalid, jnp.full_like(samples, np.inf, dtype), samples)
    return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                      count.astype(dtype) - samples)


def binomial(key, n, p, shape=None, dtype=None):
    words, _ = _key_words("binomial", key)
    dtype = _float_dtype("binomial", dtype)
    if shape is not None:
        shape = _canon_shape(shape)
    return _binomial_j(words, n, p, shape, dtype)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Counts of ``n`` draws over the categories of ``p`` (last axis)."""
    lax, jnp = _lax(), _jnp()
    words, typed = _key_words("multinomial", key)
    n = jnp.asarray(n)
    p = jnp.asarray(p)
    dt = D.result_type(n, p)
    if not D.issubdtype(dt, np.inexact):
        dt = D.to_inexact_dtype(dt)
    n, p = n.astype(dt), p.astype(dt)
    if shape is None:
        shape = p.shape
    shape = tuple(shape)
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.broadcast_to(p, shape)
    out_dtype = _float_dtype("multinomial", dtype)

    def body(remainder, ratio_key):
        ratio, kk = ratio_key
        count = binomial(kk, remainder, jnp.clip(ratio, 0, 1), dtype=remainder.dtype)
        return remainder - count, count
    p = jnp.moveaxis(p, -1, 0)
    remaining = jnp.flip(jnp.cumsum(jnp.flip(p, 0), 0), 0)
    ratios = p / jnp.where(remaining == 0, 1, remaining)
    keys = _rewrap(typed, _split_j(words, (ratios.shape[0],)))
    _, counts = lax.scan(body, n, (ratios, keys), unroll=unroll)
    return jnp.moveaxis(counts, 0, -1).astype(out_dtype)


# ----------------------------------------------------------------- linear-algebra samplers


def _linalg(name):
    return getattr(_jnp().linalg, name)


@_rjit(3, 4, 5)
def _multivariate_normal_j(k, mean, cov, shape, dtype, method):
    jnp = _jnp()
    if not np.ndim(mean) >= 1:
        raise ValueError("multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                         f"{np.ndim(mean)}")
    if not np.ndim(cov) >= 2:
        raise ValueError("multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                         f"{np.ndim(cov)}")
    n = mean.shape[-1]
    if np.shape(cov)[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but "
                         f"got cov.shape == {np.shape(cov)}.")
    if shape is None:
        shape = tuple(np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
    else:
        _check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
    if method == "svd":
        u, s, _ = _linalg("svd")(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = _linalg("eigh")(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = _linalg("cholesky")(cov)
    z = _normal_raw(k, tuple(shape) + mean.shape[-1:], dtype)
    return mean + jnp.einsum("...ij,...j->...i", factor, z)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    jnp = _jnp()
    words, _ = _key_words("multivariate_normal", key)
    mean, cov = jnp.asarray(mean), jnp.asarray(cov)
    dt = D.result_type(mean, cov)
    if not D.issubdtype(dt, np.inexact):
        dt = D.to_inexact_dtype(dt)
    mean, cov = mean.astype(dt), cov.astype(dt)
    if method not in {"svd", "eigh", "cholesky"}:
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    dtype = mean.dtype if dtype is None else _canon_dtype(dtype, float)
    if not D.issubdtype(dtype, np.floating):
        raise ValueError(f"dtype argument to `multivariate_normal` must be a float dtype, "
                         f"got {dtype}")
    if shape is not None:
        shape = _canon_shape(shape)
    return _multivariate_normal_j(words, mean, cov, shape, dtype, method)


@_rjit(1, 2, 3, 4)
def _orthogonal_j(k, n, m, shape, dtype):
    jnp = _jnp()
    z = _normal_raw(k, (*shape, max(n, m), min(n, m)), dtype)
    q, r = _linalg("qr")(z)
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * jnp.expand_dims(jnp.sign(d), -2)
    return jnp.swapaxes(x, -1, -2) if n < m else x


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """Uniformly (Haar) distributed orthogonal matrices of shape ``(*shape, n, m)``."""
    shape = _canon_shape(shape)
    words, _ = _key_words("orthogonal", key)
    dtype = _canon_dtype(dtype, float)
    n = operator.index(core.concrete_or_error(n, "The error occurred in xform.random.orthogonal()"))
    m = n if m is None else operator.index(
        core.concrete_or_error(m, "The error occurred in xform.random.orthogonal()"))
    return _orthogonal_j(words, n, m, shape, dtype)



def _keys_equal(a, b, negate=False):
    """``a == b`` / ``a != b`` of typed key arrays: elementwise over keys (all words equal)."""
    jnp = _jnp()
    if not (_is_typed(a) and _is_typed(b)):
        raise TypeError("equal does not accept dtypes "
                        f"{getattr(a, 'dtype', type(a).__name__)}, "
                        f"{getattr(b, 'dtype', type(b).__name__)}: typed PRNG keys compare "
                        "only with typed PRNG keys")
    if a.dtype != b.dtype:
        raise TypeError(f"equal does not accept key arrays of different implementations: "
                        f"{a.dtype}, {b.dtype}")
    wa, wb = _prng.random_unwrap(a), _prng.random_unwrap(b)
    axes = tuple(range(-len(a.dtype.key_shape), 0))
    if negate:
        return jnp.any(wa != wb, axis=axes)
    return jnp.all(wa == wb, axis=axes)


# ----------------------------------------------------------------- out_sharding
# JAX's samplers take ``out_sharding=`` (see ``xform._out_sharding``).
from xform._out_sharding import with_out_sharding as _with_out_sharding  # noqa: E402

for _name in ("ball", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare",
              "dirichlet", "exponential", "f", "gamma", "generalized_normal", "geometric",
              "gumbel", "laplace", "loggamma", "logistic", "lognormal", "maxwell",
              "multivariate_normal", "normal", "orthogonal", "pareto", "permutation",
              "poisson", "rademacher", "randint", "rayleigh", "t", "triangular",
              "truncated_normal", "uniform", "wald"):
    globals()[_name] = _with_out_sharding(globals()[_name])
del _name

"""sort / sort_key_val / top_k / argsort vs jax.lax (NaNs last, -0.0 == 0.0, ties
stable), JVPs vs finite differences, the dot-product test of their
linearizations, and Python-loop batching."""
import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, strategies as st

from prim_testutil import (BF16, batch_args, check_batch, check_jvp, check_transpose,
                           check_vs_jax, examples, rand, x64_enabled)
from xform import lax

seeds = st.integers(0, 2**32 - 1)
DTYPES = [np.float32, np.float16, BF16, np.int32, np.bool_, np.float64]


def rshape(rng, lo=0):
    return tuple(int(rng.integers(lo, 5)) for _ in range(int(rng.integers(1, 4))))


def spiky(rng, shape, dtype):
    """Random values with many ties, and for floats NaNs, infs and signed zeros."""
    x = rand(rng, shape, dtype, -2, 3)
    if np.dtype(dtype).kind == "f" or np.dtype(dtype) == BF16:
        special = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf], np.float32)
        mask = rng.random(shape) < 0.3
        x = np.where(mask, special[rng.integers(0, 6, shape)].astype(x.dtype), x)
    return np.asarray(x)


# Default run: 5 draws; the slow step runs 15 (the _exhaustive twin).
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@examples(5)
@given(seed=seeds)
def test_sort_vs_jax(dtype, seed):
    _test_sort_vs_jax(dtype, seed)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@examples(15)
@given(seed=seeds)
def test_sort_vs_jax_exhaustive(dtype, seed):
    _test_sort_vs_jax(dtype, seed)


def _test_sort_vs_jax(dtype, seed):
    rng = np.random.default_rng(seed)
    shape = rshape(rng)
    dim = int(rng.integers(-len(shape), len(shape)))
    x = spiky(rng, shape, dtype)
    ctx = lambda: x64_enabled() if np.dtype(dtype).itemsize == 8 else contextlib.nullcontext()
    with ctx():
        check_vs_jax(lambda a: lax.sort(a, dim), lambda a: jax.lax.sort(a, dim), [x])
    # multi-operand: keys of this dtype, a second key and a payload; stable ties
    y = rand(rng, shape, np.int32, 0, 2)
    z = rand(rng, shape, np.float32)
    nk = int(rng.integers(1, 3))
    with ctx():
        check_vs_jax(lambda *a: lax.sort(a, dim, True, nk),
                     lambda *a: jax.lax.sort(a, dimension=dim, is_stable=True, num_keys=nk),
                     [x, y, z])


@examples(15)
@given(seed=seeds)
def test_sort_key_val_and_argsort_vs_jax(seed):
    rng = np.random.default_rng(seed)
    shape = rshape(rng)
    x, v = spiky(rng, shape, np.float32), rand(rng, shape, np.int32)
    check_vs_jax(lax.sort_key_val, jax.lax.sort_key_val, [x, v])
    check_vs_jax(lambda a: lax.argsort(a, 0), lambda a: jnp.argsort(a, axis=0, stable=True), [x])
    check_vs_jax(lambda a: lax.argsort(a, -1, descending=True),
                 lambda a: jnp.argsort(a, axis=-1, stable=True, descending=True), [x])


def test_sort_complex_vs_jax():
    rng = np.random.default_rng(0)
    re = rng.integers(-2, 2, 12).astype(np.float32)
    im = rng.integers(-2, 2, 12).astype(np.float32)
    re[3], im[5] = np.nan, np.nan
    x = (re + 1j * im).astype(np.complex64)
    check_vs_jax(lambda a: lax.sort(a), lambda a: jax.lax.sort(a), [x])


# Default run: 5 draws; the slow step runs 15 (the _exhaustive twin).
@pytest.mark.parametrize("dtype", DTYPES[:-1] + [np.uint8], ids=lambda d: np.dtype(d).name)
@examples(5)
@given(seed=seeds)
def test_top_k_vs_jax(dtype, seed):
    _test_top_k_vs_jax(dtype, seed)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES[:-1] + [np.uint8], ids=lambda d: np.dtype(d).name)
@examples(15)
@given(seed=seeds)
def test_top_k_vs_jax_exhaustive(dtype, seed):
    _test_top_k_vs_jax(dtype, seed)


def _test_top_k_vs_jax(dtype, seed):
    rng = np.random.default_rng(seed)
    shape = rshape(rng)
    axis = int(rng.integers(-len(shape), len(shape)))
    k = int(rng.integers(0, shape[axis] + 1))
    x = spiky(rng, shape, dtype) if dtype != np.uint8 else rand(rng, shape, dtype, 0, 4)
    with x64_enabled() if np.dtype(dtype).itemsize == 8 else contextlib.nullcontext():
        check_vs_jax(lambda a: lax.top_k(a, k, axis=axis),
                     lambda a: jax.lax.top_k(a, k, axis=axis), [x])


@examples(20)
@given(seed=seeds)
def test_sort_jvp_and_transpose(seed):
    rng = np.random.default_rng(seed)
    shape = rshape(rng)
    dim = int(rng.integers(0, len(shape)))
    nk = int(rng.integers(1, 3))
    with x64_enabled():
        x, y = rng.standard_normal(shape), rng.standard_normal(shape)
        f = lambda a, b: lax.sort((a, b), dim, True, nk)
        check_jvp(f, [x, y], rng, rtol=1e-6, atol=1e-8)
        check_transpose(f, [x, y], rng)
        check_transpose(lambda a: lax.sort(a, dim), [x], rng)


@examples(20)
@given(seed=seeds)
def test_top_k_jvp_and_transpose(seed):
    rng = np.random.default_rng(seed)
    shape = rshape(rng)
    axis = int(rng.integers(0, len(shape)))
    k = int(rng.integers(0, shape[axis] + 1))
    with x64_enabled():
        x = rng.standard_normal(shape)
        f = lambda a: lax.top_k(a, k, axis=axis)[0]
        check_jvp(f, [x], rng, rtol=1e-6, atol=1e-8)
        check_transpose(f, [x], rng)


def test_sort_jvp_with_ties_matches_jax():
    x = np.array([[2., 1., 2., 1.], [0., -0., 3., 0.]], np.float32)
    t = np.arange(8, dtype=np.float32).reshape(2, 4)
    from xform._src.interpreters import ad, core
    _, (to,) = ad.jvp_flat(lambda a: [lax.sort(a, 1)], [core.Array(x)], [core.Array(t)])
    ref = jax.jvp(lambda a: jax.lax.sort(a, dimension=1), (x,), (t,))[1]
    np.testing.assert_array_equal(np.asarray(to), np.asarray(ref))


@examples(20)
@given(seed=seeds)
def test_sort_batching(seed):
    rng = np.random.default_rng(seed)
    shape = rshape(rng)
    dim = int(rng.integers(0, len(shape)))
    nk = int(rng.integers(1, 3))
    size = int(rng.integers(1, 4))
    args, dims = batch_args(rng, [shape, shape], np.float32, size)
    check_batch(lambda a, b: lax.sort((a, b), dim, True, nk), args, dims, size)


@examples(20)
@given(seed=seeds)
def test_top_k_batching(seed):
    rng = np.random.default_rng(seed)
    shape = rshape(rng)
    axis = int(rng.integers(0, len(shape)))
    k = int(rng.integers(0, shape[axis] + 1))
    size = int(rng.integers(1, 4))
    args, dims = batch_args(rng, [shape], np.float32, size)
    check_batch(lambda a: lax.top_k(a, k, axis=axis), args, dims, size)


ERRORS = [
    (lambda: lax.sort(np.zeros(())), ValueError, "0-d"),
    (lambda: lax.sort((np.zeros((2,)), np.zeros((3,)))), TypeError, r"f32\[2\], f32\[3\]"),
    (lambda: lax.sort(np.zeros((2,)), 1), ValueError, "out of bounds"),
    (lambda: lax.sort((np.zeros((2,)),), num_keys=2), ValueError, "num_keys"),
    (lambda: lax.top_k(np.zeros((3,)), 4), ValueError, "no larger"),
    (lambda: lax.top_k(np.zeros((3,)), -1), ValueError, "nonnegative"),
    (lambda: lax.top_k(np.zeros(()), 1), TypeError, ">= 1 dimension"),
    (lambda: lax.top_k(np.zeros((3,), np.complex64), 1), ValueError, "complex"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS)
def test_errors(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn()

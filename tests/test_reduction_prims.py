"""Reductions and cumulative reductions vs jax.lax (incl. size-0 axes -> identity),
finite differences, dot-product tests of their linearizations, tie/zero
conventions vs jax.jvp, and Python-loop batching."""
import contextlib

import jax
import numpy as np
import pytest
from hypothesis import given, strategies as st

from xform._src.interpreters import ad, core
from prim_testutil import (BF16, batch_args, check_batch, check_jvp, check_transpose,
                           check_vs_jax, examples, rand, x64_enabled)
from xform import lax

seeds = st.integers(0, 2**32 - 1)
NUM = [np.float32, np.float16, BF16, np.int32, np.float64, np.int64]
INTBOOL = [np.int32, np.bool_, np.int64]


def rshape(rng, lo=0, rank=None):
    rank = int(rng.integers(0, 4)) if rank is None else rank
    return tuple(int(rng.integers(lo, 4)) for _ in range(rank))


def raxes(rng, nd):
    return tuple(int(a) for a in rng.permutation(nd)[:int(rng.integers(0, nd + 1))])


REDUCERS = {"reduce_sum": NUM, "reduce_max": NUM + [np.bool_], "reduce_min": NUM + [np.bool_],
            "reduce_prod": NUM, "reduce_and": INTBOOL, "reduce_or": INTBOOL,
            "reduce_xor": INTBOOL}
CUMS = {"cumsum": NUM, "cumprod": NUM, "cummax": NUM, "cummin": NUM,
        "cumlogsumexp": [np.float32, np.float16, BF16, np.float64]}


def _maybe_x64(dtype):
    return x64_enabled() if np.dtype(dtype).itemsize == 8 else contextlib.nullcontext()


def _tol(name, dtype):
    if np.dtype(dtype) in (np.dtype(np.float16), BF16) and name in ("reduce_sum", "cumsum",
                                                                     "reduce_prod", "cumprod",
                                                                     "cumlogsumexp"):
        return dict(rtol=2e-2, atol=5e-2)
    if name in ("reduce_sum", "cumsum", "reduce_prod", "cumprod", "cumlogsumexp") and \
            np.dtype(dtype) == np.float32:
        return dict(rtol=1e-5, atol=1e-4)
    return {}


# Default run: 3 draws; the slow step runs 6 (the _exhaustive twin).
@pytest.mark.parametrize("name,dtype", [(n, d) for n, ds in REDUCERS.items() for d in ds],
                         ids=str)
@examples(3)
@given(seed=seeds)
def test_reduce_vs_jax(name, dtype, seed):
    _test_reduce_vs_jax(name, dtype, seed)


@pytest.mark.slow
@pytest.mark.parametrize("name,dtype", [(n, d) for n, ds in REDUCERS.items() for d in ds],
                         ids=str)
@examples(6)
@given(seed=seeds)
def test_reduce_vs_jax_exhaustive(name, dtype, seed):
    _test_reduce_vs_jax(name, dtype, seed)


def _test_reduce_vs_jax(name, dtype, seed):
    rng = np.random.default_rng(seed)
    shape = rshape(rng)
    axes = raxes(rng, len(shape))
    x = rand(rng, shape, dtype, -2, 3)
    with _maybe_x64(dtype):
        check_vs_jax(lambda x: getattr(lax, name)(x, axes),
                     lambda x: getattr(jax.lax, name)(x, axes), [x], **_tol(name, dtype))


@pytest.mark.parametrize("name,dtype", [(n, d) for n, ds in CUMS.items() for d in ds], ids=str)
@examples(5)
@given(seed=seeds)
def test_cumulative_vs_jax(name, dtype, seed):
    rng = np.random.default_rng(seed)
    shape = rshape(rng, rank=int(rng.integers(1, 4)))
    axis = int(rng.integers(-len(shape), len(shape)))
    rev = bool(rng.random() < 0.5)
    x = rand(rng, shape, dtype, -2, 3)
    if name == "cumprod" and np.dtype(dtype).kind == "f":
        x = x / 2 + np.asarray(np.sign(x), x.dtype)  # keep products in range
    with _maybe_x64(dtype):
        check_vs_jax(lambda x: getattr(lax, name)(x, axis, rev),
                     lambda x: getattr(jax.lax, name)(x, axis % len(shape), rev), [x],
                     **_tol(name, dtype))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.int32, np.bool_],
                         ids=lambda d: np.dtype(d).name)
@examples(6)
@given(seed=seeds)
def test_argminmax_vs_jax(name, dtype, seed):
    rng = np.random.default_rng(seed)
    shape = rshape(rng, lo=1, rank=int(rng.integers(1, 4)))
    axis = int(rng.integers(0, len(shape)))
    x = rand(rng, shape, dtype, -2, 2)     # many ties: first index wins
    if np.dtype(dtype).kind == "f" and rng.random() < 0.5:
        x.flat[int(rng.integers(0, x.size))] = np.nan
    idt = np.int32 if rng.random() < 0.5 else np.uint8
    check_vs_jax(lambda x: getattr(lax, name)(x, axis, idt),
                 lambda x: getattr(jax.lax, name)(x, axis, idt), [x])


def test_empty_reductions_identity():
    for name in REDUCERS:
        for dt in REDUCERS[name]:
            if np.dtype(dt).itemsize == 8:
                continue
            x = np.zeros((0, 3), dt)
            check_vs_jax(lambda x: getattr(lax, name)(x, (0,)),
                         lambda x: getattr(jax.lax, name)(x, (0,)), [x])


def test_int32_sum_stays_int32():
    x = np.full((4,), 2**30, np.int32)
    out = lax.reduce_sum(x, (0,))
    assert out.dtype == np.int32
    assert int(out) == int(jax.lax.reduce_sum(x, (0,)))


DIFF = ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"]
CDIFF = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]


@pytest.mark.parametrize("name", DIFF + CDIFF)
@examples(15)
@given(seed=seeds)
def test_jvp_and_linearization_transpose(name, seed):
    rng = np.random.default_rng(seed)
    with x64_enabled():
        if name in CDIFF:
            shape = rshape(rng, rank=int(rng.integers(1, 4)))
            axis, rev = int(rng.integers(0, len(shape))), bool(rng.random() < 0.5)
            f = lambda x: getattr(lax, name)(x, axis, rev)
        else:
            # max/min over nothing: JAX's tangent is 0/0 = NaN, so keep the reduced axes nonempty
            shape = rshape(rng, lo=1 if name in ("reduce_max", "reduce_min") else 0)
            axes = raxes(rng, len(shape))
            f = lambda x: getattr(lax, name)(x, axes)
        x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)
        check_jvp(f, [x], rng, rtol=1e-5, atol=1e-6)
        check_transpose(f, [x], rng)


def _jax_jvp(fn, x, t):
    return np.asarray(jax.jvp(fn, (x,), (t,))[1])


def _our_jvp(fn, x, t):
    _, (to,) = ad.jvp_flat(lambda a: [fn(a)], [core.Array(x)], [core.Array(t)])
    return np.asarray(ad.instantiate(to))


@pytest.mark.parametrize("make", [
    lambda l: (lambda x: l.reduce_max(x, (1,))),
    lambda l: (lambda x: l.reduce_min(x, (0, 1))),
    lambda l: (lambda x: l.reduce_prod(x, (1,))),
    lambda l: (lambda x: l.reduce_prod(x, (0,))),
    lambda l: (lambda x: l.cumprod(x, 1)),
    lambda l: (lambda x: l.cumprod(x, 1, True)),
])
def test_ties_and_zeros_match_jax(make):
    """Ties share the tangent equally (JAX's rule); products with zeros are exact."""
    rng = np.random.default_rng(1)
    x = np.array([[1., 3., 3., 0.], [0., 0., 2., -1.], [2., 2., 2., 2.]], np.float32)
    t = rng.standard_normal(x.shape).astype(np.float32)
    np.testing.assert_allclose(_our_jvp(make(lax), x, t), _jax_jvp(make(jax.lax), x, t),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cumulative_chooser_jvp_no_ties(name):
    rng = np.random.default_rng(2)
    x = rng.permutation(24).reshape(4, 6).astype(np.float32)
    t = rng.standard_normal(x.shape).astype(np.float32)
    for axis, rev in [(0, False), (1, True), (1, False)]:
        f = lambda l: (lambda a: getattr(l, name)(a, axis, rev))
        np.testing.assert_allclose(_our_jvp(f(lax), x, t), _jax_jvp(f(jax.lax), x, t),
                                   rtol=1e-6)


@pytest.mark.parametrize("name", list(REDUCERS) + list(CUMS) + ["argmax", "argmin"])
@examples(10)
@given(seed=seeds)
def test_batching(name, seed):
    rng = np.random.default_rng(seed)
    dt = np.int32 if name in ("reduce_and", "reduce_or", "reduce_xor") else np.float32
    size = int(rng.integers(1, 4))
    if name in CUMS:
        shape = rshape(rng, rank=int(rng.integers(1, 4)))
        axis, rev = int(rng.integers(0, len(shape))), bool(rng.random() < 0.5)
        f = lambda x: getattr(lax, name)(x, axis, rev)
    elif name in ("argmax", "argmin"):
        shape = rshape(rng, lo=1, rank=int(rng.integers(1, 4)))
        axis = int(rng.integers(0, len(shape)))
        f = lambda x: getattr(lax, name)(x, axis, np.int32)
    else:
        shape = rshape(rng)
        axes = raxes(rng, len(shape))
        f = lambda x: getattr(lax, name)(x, axes)
    args, dims = batch_args(rng, [shape], dt, size)
    check_batch(f, args, dims, size, rtol=1e-6 if dt == np.float32 else 0)


ERRORS = [
    (lambda: lax.reduce_sum(np.zeros((2, 3)), (2,)), ValueError, "out of bounds"),
    (lambda: lax.reduce_sum(np.zeros((2, 3)), (0, 0)), ValueError, "duplicate"),
    (lambda: lax.reduce_sum(np.zeros((2,), bool), (0,)), TypeError, "bool"),
    (lambda: lax.reduce_and(np.zeros((2,), np.float32), (0,)), TypeError, r"f32\[2\]"),
    (lambda: lax.argmax(np.zeros((0, 3)), 0, np.int32), ValueError, "non-empty"),
    (lambda: lax.argmax(np.zeros((2, 3)), 0, np.float32), TypeError, "index_dtype"),
    (lambda: lax.cumsum(np.zeros(()), 0), ValueError, "at least one dimension"),
    (lambda: lax.cumlogsumexp(np.zeros((3,), np.int32), 0), TypeError, "floating"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS)
def test_errors(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn()

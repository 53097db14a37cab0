"""Structural primitives vs jax.lax, finite differences, dot-product tests and
Python-loop batching, over random shapes (incl. 0-d and size-0) and dtypes."""
import contextlib

import jax
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from xform._src.interpreters import core
from prim_testutil import (BF16, assert_close, batch_args, check_batch, check_jvp,
                           check_transpose, check_vs_jax, examples, rand, vmap_local,
                           x64_enabled)
from xform import lax

DTYPES = [np.float32, np.float16, BF16, np.int32, np.bool_, np.float64, np.int64]
seeds = st.integers(0, 2**32 - 1)


def rshape(rng, rank=None, lo=0, hi=4):
    rank = int(rng.integers(0, 4)) if rank is None else rank
    return tuple(int(rng.integers(lo, hi)) for _ in range(rank))


# Each case: rng -> (ours(*args), theirs(*args), arg shapes, differentiable arg indices,
#                    extra non-float args appended after the float ones)
def case_broadcast_in_dim(rng):
    out = rshape(rng, int(rng.integers(0, 4)))
    k = int(rng.integers(0, len(out) + 1))
    bd = tuple(sorted(rng.choice(len(out), size=k, replace=False).tolist())) if k else ()
    shape = tuple(out[b] if rng.random() < 0.7 else 1 for b in bd)
    return (lambda x: lax.broadcast_in_dim(x, out, bd),
            lambda x: jax.lax.broadcast_in_dim(x, out, bd), [shape])


def case_reshape(rng):
    shape = rshape(rng, lo=1)
    n = int(np.prod(shape))
    new = [n]
    if n > 1 and rng.random() < 0.7:
        f = [d for d in range(1, n + 1) if n % d == 0]
        a = int(rng.choice(f))
        new = [a, n // a]
    new = tuple(new) + ((1,) if rng.random() < 0.3 else ())
    dims = tuple(rng.permutation(len(shape)).tolist()) if rng.random() < 0.4 else None
    return (lambda x: lax.reshape(x, new, dims), lambda x: jax.lax.reshape(x, new, dims), [shape])


def case_transpose(rng):
    shape = rshape(rng)
    perm = tuple(rng.permutation(len(shape)).tolist())
    return (lambda x: lax.transpose(x, perm), lambda x: jax.lax.transpose(x, perm), [shape])


def case_squeeze(rng):
    shape = tuple(1 if rng.random() < 0.5 else int(rng.integers(0, 4))
                  for _ in range(int(rng.integers(0, 4))))
    ones = [i for i, d in enumerate(shape) if d == 1]
    dims = tuple(i - len(shape) if rng.random() < 0.3 else i for i in ones if rng.random() < 0.7)
    return (lambda x: lax.squeeze(x, dims), lambda x: jax.lax.squeeze(x, dims), [shape])


def case_expand_dims(rng):
    shape = rshape(rng)
    nd = len(shape) + int(rng.integers(1, 3))
    dims = tuple(sorted(rng.choice(nd, size=nd - len(shape), replace=False).tolist()))
    return (lambda x: lax.expand_dims(x, dims), lambda x: jax.lax.expand_dims(x, dims), [shape])


def case_rev(rng):
    shape = rshape(rng)
    dims = tuple(i for i in range(len(shape)) if rng.random() < 0.5)
    return (lambda x: lax.rev(x, dims), lambda x: jax.lax.rev(x, dims), [shape])


def case_concatenate(rng):
    shape = rshape(rng, int(rng.integers(1, 4)))
    dim = int(rng.integers(0, len(shape)))
    shapes = []
    for _ in range(int(rng.integers(1, 4))):
        s = list(shape)
        s[dim] = int(rng.integers(0, 4))
        shapes.append(tuple(s))
    return (lambda *xs: lax.concatenate(xs, dim), lambda *xs: jax.lax.concatenate(xs, dim),
            shapes)


def case_pad(rng):
    shape = rshape(rng)
    cfg = []
    for d in shape:
        it = int(rng.integers(0, 3))
        core_len = d + max(d - 1, 0) * it
        lo = int(rng.integers(-min(core_len, 2), 3))
        hi = int(rng.integers(-min(core_len + lo, 2) if core_len + lo > 0 else 0, 3))
        cfg.append((lo, hi, it))
    cfg = tuple(cfg)
    return (lambda x, v: lax.pad(x, v, cfg), lambda x, v: jax.lax.pad(x, v, cfg), [shape, ()])


def case_slice(rng):
    shape = rshape(rng)
    starts, limits, strides = [], [], []
    for d in shape:
        s = int(rng.integers(0, d + 1))
        l = int(rng.integers(s, d + 1))
        starts.append(s)
        limits.append(l)
        strides.append(int(rng.integers(1, 4)))
    strides = None if rng.random() < 0.3 else tuple(strides)
    return (lambda x: lax.slice(x, starts, limits, strides),
            lambda x: jax.lax.slice(x, starts, limits, strides), [shape])


def _rand_idx(rng, shape):
    return [int(rng.integers(-d - 2, d + 3)) for d in shape]


def case_dynamic_slice(rng):
    shape = rshape(rng)
    sizes = tuple(int(rng.integers(0, d + 1)) for d in shape)
    idx = _rand_idx(rng, shape)
    ia = [np.int32(i) for i in idx]
    return (lambda x: lax.dynamic_slice(x, [core.Array(i) for i in ia], sizes),
            lambda x: jax.lax.dynamic_slice(x, ia, sizes), [shape])


def case_dynamic_update_slice(rng):
    shape = rshape(rng)
    ushape = tuple(int(rng.integers(0, d + 1)) for d in shape)
    idx = _rand_idx(rng, shape)
    return (lambda x, u: lax.dynamic_update_slice(x, u, idx),
            lambda x, u: jax.lax.dynamic_update_slice(x, u, idx), [shape, ushape])


CASES = [case_broadcast_in_dim, case_reshape, case_transpose, case_squeeze, case_expand_dims,
         case_rev, case_concatenate, case_pad, case_slice, case_dynamic_slice,
         case_dynamic_update_slice]


# Every case x dtype on 3 random draws in the default run; 8 draws each in the slow step.
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__[5:])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@examples(3)
@given(seed=seeds)
def test_vs_jax(case, dtype, seed):
    _check_vs_jax(case, dtype, seed)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__[5:])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@examples(8)
@given(seed=seeds)
def test_vs_jax_exhaustive(case, dtype, seed):
    _check_vs_jax(case, dtype, seed)


def _check_vs_jax(case, dtype, seed):
    rng = np.random.default_rng(seed)
    ours, theirs, shapes = case(rng)
    with x64_enabled() if np.dtype(dtype).itemsize == 8 else contextlib.nullcontext():
        args = [rand(rng, s, dtype) for s in shapes]
        check_vs_jax(ours, theirs, args)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__[5:])
@examples(15)
@given(seed=seeds)
def test_jvp_and_transpose(case, seed):
    rng = np.random.default_rng(seed)
    ours, _, shapes = case(rng)
    with x64_enabled():
        args = [rand(rng, s, np.float64) for s in shapes]
        check_jvp(ours, args, rng)
        check_transpose(ours, args, rng)
        if len(args) > 1:     # each operand alone (the other closed over)
            for i in range(len(args)):
                check_transpose(ours, args, rng, lin=[i])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__[5:])
@examples(15)
@given(seed=seeds)
def test_batching(case, seed):
    rng = np.random.default_rng(seed)
    ours, _, shapes = case(rng)
    size = int(rng.integers(1, 4))
    args, dims = batch_args(rng, shapes, np.float32, size)
    check_batch(ours, args, dims, size)


# --- dynamic indices that are themselves traced / batched ------------------------------

# Default run: 8 draws; the slow step runs the profile's default (the _exhaustive twin).
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_], ids=lambda d: d.__name__)
@settings(max_examples=8)
@given(seed=seeds)
def test_dynamic_slice_batched_indices(dtype, seed):
    _test_dynamic_slice_batched_indices(dtype, seed)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_], ids=lambda d: d.__name__)
@given(seed=seeds)
def test_dynamic_slice_batched_indices_exhaustive(dtype, seed):
    _test_dynamic_slice_batched_indices(dtype, seed)


def _test_dynamic_slice_batched_indices(dtype, seed):
    rng = np.random.default_rng(seed)
    shape = rshape(rng, int(rng.integers(1, 4)), lo=1)
    sizes = tuple(int(rng.integers(0, d + 1)) for d in shape)
    size = int(rng.integers(1, 4))
    x = rand(rng, (size,) + shape, dtype)
    idx = [rng.integers(-d - 1, d + 2, size=size).astype(np.int32) for d in shape]
    bidx = [i if rng.random() < 0.6 else i[0] for i in idx]
    dims = [0] + [0 if np.ndim(i) else None for i in bidx]
    check_batch(lambda x, *i: lax.dynamic_slice(x, i, sizes), [x] + bidx, dims, size)
    # and vs JAX
    for b in range(size):
        ours = lax.dynamic_slice(x[b], [core.Array(np.int32(np.atleast_1d(i)[b % np.size(i)]))
                                        for i in bidx], sizes)
        ref = jax.lax.dynamic_slice(x[b], [np.atleast_1d(i)[b % np.size(i)] for i in bidx], sizes)
        assert_close(ours, np.asarray(ref))


@given(seed=seeds)
def test_dynamic_update_slice_batched_indices(seed):
    rng = np.random.default_rng(seed)
    shape = rshape(rng, int(rng.integers(1, 4)), lo=1)
    ushape = tuple(int(rng.integers(0, d + 1)) for d in shape)
    size = int(rng.integers(1, 4))
    x = rand(rng, (size,) + shape, np.float32)
    u = rand(rng, ushape, np.float32)
    idx = [rng.integers(-d - 1, d + 2, size=size).astype(np.int32) for d in shape]
    check_batch(lambda x, u, *i: lax.dynamic_update_slice(x, u, i), [x, u] + idx,
                [0, None] + [0] * len(idx), size)


@examples(10)
@given(seed=seeds)
def test_jvp_and_transpose_under_batched_indices(seed):
    """vmap of (JVP, VJP) of dynamic_slice with per-example indices: the transposed
    program binds dynamic_update_slice with batched indices."""
    from xform._src.interpreters import ad
    rng = np.random.default_rng(seed)
    shape = rshape(rng, int(rng.integers(1, 3)), lo=1)
    sizes = tuple(int(rng.integers(0, d + 1)) for d in shape)
    size = int(rng.integers(1, 4))
    idx = [rng.integers(-d - 1, d + 2, size=size).astype(np.int32) for d in shape]
    x, t = rand(rng, (size,) + shape, np.float32), rand(rng, (size,) + shape, np.float32)
    c = rand(rng, (size,) + sizes, np.float32)

    def f(x, t, c, *i):
        g = lambda a: [lax.dynamic_slice(a, i, sizes)]
        _, (tout,) = ad.jvp_flat(g, [x], [t])
        _, lf = ad.linearize_flat(g, [x])
        (ct,) = lf.transpose([c])
        return [tout, ct]
    check_batch(f, [x, t, c] + idx, [0, 0, 0] + [0] * len(idx), size)


def test_traced_negative_index_wraps():
    x = np.arange(10, dtype=np.float32)
    f = lambda i: lax.dynamic_slice(x, [i], (3,))
    out = check_batch(f, [np.array([-3, -1, 0, 20], np.int32)], [0], 4)  # noqa: F841
    got = [np.asarray(lax.dynamic_slice(x, [core.Array(np.int32(i))], (3,)))
           for i in (-3, -1, 0, 20)]
    ref = [np.asarray(jax.lax.dynamic_slice(x, [np.int32(i)], (3,))) for i in (-3, -1, 0, 20)]
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)


def test_array_of_start_indices():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    idx = np.array([[1, -2], [3, 4], [-9, 0]], np.int32)
    ref = [np.asarray(jax.lax.dynamic_slice(x, i, (2, 2))) for i in idx]
    for i, r in zip(idx, ref):
        np.testing.assert_array_equal(lax.dynamic_slice(x, core.Array(i), (2, 2)), r)
    (got,) = vmap_local(lambda i: lax.dynamic_slice(x, i, (2, 2)), [idx], [0], 3)
    np.testing.assert_array_equal(got, np.stack(ref))


# --- constructors -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float16, BF16])
def test_iota_and_full(dtype):
    for shape, dim in [((3,), 0), ((2, 4), 1), ((0, 3), 0), ((2, 0, 3), 2)]:
        assert_close(lax.broadcasted_iota(dtype, shape, dim),
                     np.asarray(jax.lax.broadcasted_iota(dtype, shape, dim)))
    assert_close(lax.iota(dtype, 5), np.asarray(jax.lax.iota(dtype, 5)))
    for fill in (2, 1.5, True):
        for dt in (None, dtype):
            o, r = lax.full((2, 3), fill, dt), jax.lax.full((2, 3), fill, dt)
            assert_close(o, np.asarray(r))
            assert o.weak_type == r.weak_type, (fill, dt)
    x = np.ones((2, 3), dtype)
    assert_close(lax.full_like(x, 7), np.asarray(jax.lax.full_like(x, 7)))
    assert_close(lax.full_like(x, 7, np.int32, (4,)),
                 np.asarray(jax.lax.full_like(x, 7, np.int32, (4,))))


def test_helpers_vs_jax():
    rng = np.random.default_rng(0)
    x = rand(rng, (4, 5, 3), np.float32)
    u = rand(rng, (4, 2, 3), np.float32)
    pairs = [
        (lambda l: l.slice_in_dim(x, 1, 4, 2, axis=1)),
        (lambda l: l.slice_in_dim(x, -3, None, axis=0)),
        (lambda l: l.index_in_dim(x, -1, axis=2, keepdims=False)),
        (lambda l: l.index_in_dim(x, 2, axis=1)),
        (lambda l: l.dynamic_slice_in_dim(x, 3, 2, axis=1)),
        (lambda l: l.dynamic_index_in_dim(x, -2, axis=0, keepdims=False)),
        (lambda l: l.dynamic_update_slice_in_dim(x, u, 4, axis=1)),
        (lambda l: l.dynamic_update_index_in_dim(x, u[:, 0], 1, axis=1)),
        (lambda l: l.broadcast(x, (2,))),
        (lambda l: l.broadcast_to_rank(x[0], 4)),
        (lambda l: l.split(x, (1, 0, 4), axis=1)[2]),
        (lambda l: l.split(x, (3, 1), axis=0)[0]),
    ]
    for p in pairs:
        assert_close(p(lax), np.asarray(p(jax.lax)))


def test_weak_types_follow_jax():
    o = lax.broadcast_in_dim(lax.full((), 1.0), (2,), ())
    assert o.weak_type
    o = lax.pad(lax.full((2,), 1.0), 0.0, ((1, 1, 0),))
    r = jax.lax.pad(jax.lax.full((2,), 1.0), 0.0, ((1, 1, 0),))
    assert o.weak_type == r.weak_type
    ds = lax.dynamic_slice(lax.full((4,), 1.0), [1], (2,))
    assert ds.weak_type == jax.lax.dynamic_slice(jax.lax.full((4,), 1.0), [1], (2,)).weak_type


# --- errors -----------------------------------------------------------------------------

ERRORS = [
    (lambda: lax.reshape(np.zeros((2, 3)), (4,)), TypeError, r"f32\[2,3\] \(6 elements\)"),
    (lambda: lax.concatenate([np.zeros((2, 3)), np.zeros((2, 4))], 0), TypeError,
     r"\(2, 3\) and \(2, 4\) differ outside dimension 0"),
    (lambda: lax.concatenate([np.zeros((2, 3)), np.zeros((2, 3), np.int32)], 0), TypeError,
     "dtypes"),
    (lambda: lax.broadcast_in_dim(np.zeros((2,)), (3,), (0,)), TypeError,
     r"got operand of shape \(2,\), target broadcast shape \(3,\)"),
    (lambda: lax.transpose(np.zeros((2, 3)), (0, 0)), TypeError, "permutation"),
    (lambda: lax.squeeze(np.zeros((2, 3)), (0,)), ValueError,
     "cannot select an axis to squeeze out which has size not equal to one"),
    (lambda: lax.slice(np.zeros((4,)), (1,), (5,)), TypeError, "limit"),
    (lambda: lax.pad(np.zeros((2,)), 0.0, ((-3, 0, 0),)), ValueError,
     "Dimension size after padding is not at least 0"),
    (lambda: lax.pad(np.zeros((2,)), 0.0, ((0, 0, -1),)), ValueError, "interior"),
    (lambda: lax.dynamic_slice(np.zeros((4,)), (1,), (5,)), TypeError, "slice_sizes"),
    (lambda: lax.dynamic_slice(np.zeros((4,)), (1, 2), (1,)), ValueError, "rank"),
    (lambda: lax.dynamic_update_slice(np.zeros((4,)), np.zeros((5,), np.float32), (0,)),
     TypeError, "fit"),
    (lambda: lax.broadcasted_iota(np.int32, (2, 3), 2), ValueError, "out of bounds"),
    (lambda: lax.rev(np.zeros((2,)), (1,)), ValueError, "rev"),
    (lambda: lax.expand_dims(np.zeros((2,)), (3,)), ValueError, "out of bounds"),
    (lambda: lax.full((2,), np.zeros(3)), TypeError, "scalar"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS)
def test_errors(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn()

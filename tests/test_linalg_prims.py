"""dot_general on random dimension numbers: vs jax.lax, bilinear JVP vs finite
differences, the dot-product test for both transpose rules, and batching (both
operands batched -> dot batch dim; one batched -> free dim) vs a Python loop."""
import contextlib

import jax
import numpy as np
import pytest
from hypothesis import given, strategies as st

from xform._src.interpreters import batching, core
from xform._src.primitives import dot_general as linalg
from prim_testutil import (BF16, assert_close, batch_args, check_batch, check_jvp,
                           check_transpose, check_vs_jax, examples, rand, x64_enabled)
from xform import lax

seeds = st.integers(0, 2**32 - 1)


def random_dnums(rng):
    """Random shapes and dimension numbers (batch/contract/free dims in random positions)."""
    nb, nc = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    nlf, nrf = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    bsz = [int(rng.integers(0, 4)) for _ in range(nb)]
    csz = [int(rng.integers(0, 4)) for _ in range(nc)]
    lperm = rng.permutation(nb + nc + nlf)
    rperm = rng.permutation(nb + nc + nrf)
    lshape = [0] * (nb + nc + nlf)
    rshape = [0] * (nb + nc + nrf)
    lb, lc = tuple(int(i) for i in lperm[:nb]), tuple(int(i) for i in lperm[nb:nb + nc])
    rb, rc = tuple(int(i) for i in rperm[:nb]), tuple(int(i) for i in rperm[nb:nb + nc])
    for i, s in zip(lb, bsz):
        lshape[i] = s
    for i, s in zip(rb, bsz):
        rshape[i] = s
    for i, s in zip(lc, csz):
        lshape[i] = s
    for i, s in zip(rc, csz):
        rshape[i] = s
    for i in lperm[nb + nc:]:
        lshape[i] = int(rng.integers(0, 4))
    for i in rperm[nb + nc:]:
        rshape[i] = int(rng.integers(0, 4))
    return tuple(lshape), tuple(rshape), ((lc, rc), (lb, rb))


DTYPES = [np.float32, np.float16, BF16, np.int32, np.bool_, np.float64, np.int64]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@examples(15)
@given(seed=seeds)
def test_vs_jax(dtype, seed):
    rng = np.random.default_rng(seed)
    ls, rs, dn = random_dnums(rng)
    x, y = rand(rng, ls, dtype), rand(rng, rs, dtype)
    tol = {}
    if np.dtype(dtype) in (np.dtype(np.float16), BF16):
        tol = dict(rtol=3e-2, atol=1e-1)
    with x64_enabled() if np.dtype(dtype).itemsize == 8 else contextlib.nullcontext():
        check_vs_jax(lambda a, b: lax.dot_general(a, b, dn),
                     lambda a, b: jax.lax.dot_general(a, b, dn), [x, y], **tol)


@pytest.mark.parametrize("pet", [np.float32, np.int32])
def test_preferred_element_type_and_mixed(pet):
    rng = np.random.default_rng(0)
    src = np.float16 if pet == np.float32 else np.int8
    x, y = rand(rng, (3, 4), src), rand(rng, (4, 2), src)
    dn = (((1,), (0,)), ((), ()))
    check_vs_jax(lambda a, b: lax.dot_general(a, b, dn, preferred_element_type=pet),
                 lambda a, b: jax.lax.dot_general(a, b, dn, preferred_element_type=pet), [x, y],
                 rtol=1e-3, atol=1e-3)
    # mixed input dtypes: the more precise one wins (XLA's rule)
    z = rand(rng, (4, 2), np.float32)
    check_vs_jax(lambda a, b: lax.dot_general(a, b, dn),
                 lambda a, b: jax.lax.dot_general(a, b, dn),
                 [x.astype(np.float16), z], rtol=1e-3, atol=1e-3)


@examples(40)
@given(seed=seeds)
def test_jvp_and_transposes(seed):
    rng = np.random.default_rng(seed)
    ls, rs, dn = random_dnums(rng)
    with x64_enabled():
        x, y = rng.standard_normal(ls), rng.standard_normal(rs)
        f = lambda a, b: lax.dot_general(a, b, dn)
        check_jvp(f, [x, y], rng, rtol=1e-6, atol=1e-8)
        check_transpose(f, [x, y], rng, lin=[0])   # transpose w.r.t. lhs
        check_transpose(f, [x, y], rng, lin=[1])   # transpose w.r.t. rhs
        check_transpose(f, [x, y], rng)            # bilinear linearization


@examples(40)
@given(seed=seeds)
def test_batching(seed):
    rng = np.random.default_rng(seed)
    ls, rs, dn = random_dnums(rng)
    size = int(rng.integers(1, 4))
    args, dims = batch_args(rng, [ls, rs], np.float32, size)
    if rng.random() < 0.3 and dims[1] is not None:      # lhs unbatched too
        args[0], dims[0] = rand(rng, ls, np.float32), None
    check_batch(lambda a, b: lax.dot_general(a, b, dn), args, dims, size, rtol=1e-5)


def test_batching_emits_single_dot_general():
    """Both operands batched: one dot_general with an extra batch dim, no per-example loop."""
    calls = []
    orig = batching.batch_rules[linalg.dot_general_p]

    def spy(axis_data, vals, dims, **params):
        out = orig(axis_data, vals, dims, **params)
        calls.append(params["dimension_numbers"])
        return out
    from prim_testutil import vmap_local
    batching.batch_rules[linalg.dot_general_p] = spy
    try:
        x, y = np.ones((5, 2, 3), np.float32), np.ones((3, 5, 4), np.float32)
        (out,) = vmap_local(lambda a, b: lax.dot(a, b), [x, y], [0, 1], 5)
    finally:
        batching.batch_rules[linalg.dot_general_p] = orig
    assert out.shape == (5, 2, 4)
    assert calls == [(((1,), (0,)), ((), ()))]


def test_dot_and_batch_matmul_vs_jax():
    rng = np.random.default_rng(0)
    for ls, rs in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4))]:
        x, y = rand(rng, ls, np.float32), rand(rng, rs, np.float32)
        check_vs_jax(lax.dot, jax.lax.dot, [x, y])
    x, y = rand(rng, (2, 5, 3, 4), np.float32), rand(rng, (2, 5, 4, 6), np.float32)
    check_vs_jax(lax.batch_matmul, jax.lax.batch_matmul, [x, y])
    out = lax.dot(x[0, 0], y[0, 0], precision=lax.Precision.HIGHEST)
    assert_close(out, np.asarray(jax.lax.dot(x[0, 0], y[0, 0])))


def test_weak_type():
    a = lax.dot_general(core.Array(np.ones((2,), np.float32), True),
                        core.Array(np.ones((2,), np.float32), True), (((0,), (0,)), ((), ())))
    assert a.weak_type


ERRORS = [
    (lambda: lax.dot_general(np.ones((2, 3)), np.ones((4, 2)), (((1,), (0,)), ((), ()))),
     TypeError, r"size 3.*size 4"),
    (lambda: lax.dot_general(np.ones((2, 3)), np.ones((3, 2)), (((1,), (2,)), ((), ()))),
     TypeError, "out of range"),
    (lambda: lax.dot_general(np.ones((2, 3)), np.ones((3, 2)), (((1,), (0,)), ((1,), (1,)))),
     TypeError, "distinct"),
    (lambda: lax.dot_general(np.ones((2, 3)), np.ones((3, 2)), (((1,), ()), ((), ()))),
     TypeError, "equally many"),
    (lambda: lax.dot_general(np.ones((2, 3), np.int32), np.ones((3, 2), np.int32),
                             (((1,), (0,)), ((), ())), preferred_element_type=np.int8),
     TypeError, "narrower"),
    (lambda: lax.dot_general(np.ones((2, 3)), np.ones((3, 2)), ((1, 0),)), TypeError,
     "dimension_numbers"),
    (lambda: lax.dot(np.ones((2, 3, 4)), np.ones((4,))), TypeError, "dimension_numbers"),
    (lambda: lax.batch_matmul(np.ones((2, 3)), np.ones((2, 3, 4))), ValueError, "same ndim"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS)
def test_errors(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn()

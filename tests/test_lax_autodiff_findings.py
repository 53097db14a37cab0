"""Derivatives found wrong or missing by running JAX's own ``lax_autodiff_test.py``
against xform (tools/jax_tests), each compared with real JAX or finite differences."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xform
import xform.numpy as xnp
from xform import lax
from xform.testing import check_grads


# ---------------------------------------------------------------- x ** n, traced integer n

@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("x", [0.0, 1.5, -2.0])
def test_power_with_traced_integer_exponent_differentiable_at_zero(x, n):
    # jnp.power binds pow with the integer exponent unpromoted, so d/dx x**0 is 0 at x = 0
    def f(lib):
        return lib.jit(lambda x, n: x ** n)
    assert float(xform.grad(f(xform))(x, n)) == pytest.approx(float(jax.grad(f(jax))(x, n)))
    if x != 0.0:   # at 0 JAX's second derivative is NaN for n = 0, 1 (x ** -1 at 0 times 0)
        g2 = float(xform.grad(xform.grad(f(xform)))(x, n))
        assert g2 == pytest.approx(float(jax.grad(jax.grad(f(jax)))(x, n)))


@pytest.mark.parametrize("base, exp", [
    (2.0, np.arange(3, dtype=np.int32)),
    (np.ones(3, np.float32), np.arange(3, dtype=np.int32)),
    (np.ones((2, 1), np.float32), np.arange(3, dtype=np.int8)),
    (np.float32(2), np.arange(3, dtype=np.uint8)),
])
def test_power_inexact_base_integer_exponent_matches_jax(base, exp):
    got = xnp.power(base, xnp.asarray(exp))
    want = jnp.power(base, jnp.asarray(exp))
    assert (got.dtype, got.weak_type, got.shape) == (want.dtype, want.weak_type, want.shape)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))
    jp = xform.make_jaxpr(xnp.power)(base, exp).eqns[-1].primitive.name
    assert jp == jax.make_jaxpr(jnp.power)(base, exp).eqns[-1].primitive.name == "pow"


@settings(max_examples=25, deadline=None)
@given(st.floats(-3, 3).filter(lambda v: abs(v) > 0.05), st.integers(-3, 4))
def test_power_integer_exponent_gradients_by_finite_differences(x, n):
    check_grads(lambda x: xnp.power(x, xnp.asarray(np.int32(n))), (np.float32(x),), order=2,
                modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)


# ---------------------------------------------------------------- lax.reduce, general computation

_REDUCE_CASES = [((3, 4, 5), ()), ((3, 4, 5), (0,)), ((3, 4, 5), (1, 2)), ((3, 4, 5), (0, 2)),
                 ((3, 4, 5), (0, 1, 2)), ((3, 1), (1,)), ((3, 0, 5), (1,)), ((7,), (0,))]


def _pair_reduce(lib, dims):
    inits = (np.float32(0), np.float32(1))
    return lambda xs, ys: lib.lax.reduce((xs, ys), inits,
                                         lambda a, b: (a[0] + b[0], a[1] * b[1]), dims)


@pytest.mark.parametrize("shape, dims", _REDUCE_CASES)
def test_reduce_of_a_pair_differentiates_in_every_mode(shape, dims):
    rng = np.random.RandomState(0)
    ops = (rng.randn(*shape).astype(np.float32), rng.randn(*shape).astype(np.float32))
    check_grads(_pair_reduce(xform, dims), ops, 2, ["fwd", "rev"], 1e-2, 1e-2)

    def loss(lib):
        red = _pair_reduce(lib, dims)
        return lambda a, b: sum((o * o).sum() for o in red(a, b))
    got = xform.jit(xform.grad(loss(xform), argnums=(0, 1)))(*ops)
    want = jax.grad(loss(jax), argnums=(0, 1))(*ops)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-4, atol=1e-5)


def _logaddexp(a, b):
    m = lax.max(a, b)
    return m + lax.log1p(lax.exp(-lax.abs(a - b)))


@settings(max_examples=6, deadline=None)     # each example compiles JAX's side afresh
@given(st.integers(1, 9), st.integers(1, 4), st.sampled_from([(0,), (1,), (0, 1)]))
def test_reduce_with_a_nonlinear_computation_matches_logsumexp(m, k, dims):
    # logaddexp is associative and commutative: its reduce is logsumexp, whose derivatives
    # JAX computes independently
    x = np.random.RandomState(m * 10 + k).randn(m, k).astype(np.float32)
    f = lambda x: lax.reduce(x, np.float32(-np.inf), _logaddexp, dims)  # noqa: E731
    g = lambda x: jax.scipy.special.logsumexp(x, axis=dims)  # noqa: E731
    np.testing.assert_allclose(np.asarray(f(x)), np.asarray(g(x)), rtol=1e-5, atol=1e-5)
    ct = np.asarray(np.random.RandomState(1).randn(*np.asarray(g(x)).shape), np.float32)
    got = xform.vjp(f, x)[1](ct)[0]
    want = jax.vjp(g, x)[1](ct)[0]
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)
    h = lambda lib, fn: lib.grad(lambda x: (lib.grad(lambda x: fn(x).sum())(x) ** 2).sum())  # noqa
    np.testing.assert_allclose(np.asarray(h(xform, f)(x)), np.asarray(h(jax, g)(x)),
                               rtol=1e-3, atol=1e-4)


def test_reduce_differentiates_in_its_initial_value():
    # reduce(x, c, mul) folds c in once: d/dc = prod(x) (JAX refuses nonzero init tangents)
    x = np.array([[1.5, -0.5, 2.0], [0.25, 1.0, -3.0]], np.float32)
    f = lambda x, c: lax.reduce(x, c, lax.mul, (1,))  # noqa: E731
    check_grads(f, (x, np.float32(1.3)), order=2, atol=1e-2, rtol=1e-2)
    np.testing.assert_allclose(np.asarray(xform.grad(lambda c: f(x, c).sum())(np.float32(2.0))),
                               np.prod(x, axis=1).sum(), rtol=1e-6)


# ---------------------------------------------------------------- gather of bfloat16, filled

@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_gather_fill_or_drop_of_low_precision_floats_matches_jax(dtype):
    # ml_dtypes' bfloat16 has NumPy kind "V", like the structured words of typed PRNG keys
    import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy)
    x = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5).astype(dtype)
    dn = dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))

    def f(lib, x, idx=np.array([[0], [2], [7], [-1]], np.int32)):   # two out of bounds
        return lib.lax.gather(x, idx, lib.lax.GatherDimensionNumbers(**dn), (1, 4),
                              mode=lib.lax.GatherScatterMode.FILL_OR_DROP)
    got, want = f(xform, x), f(jax, x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got).astype(np.float32),
                                  np.asarray(want).astype(np.float32))
    ct = np.ones(want.shape, dtype)
    gx = xform.vjp(lambda x: f(xform, x), x)[1](ct)[0]
    gj = jax.vjp(lambda x: f(jax, x), x)[1](ct)[0]
    np.testing.assert_array_equal(np.asarray(gx).astype(np.float32),
                                  np.asarray(gj).astype(np.float32))
    # (the filled rows are NaN, so finite differences only through in-bounds indices)
    check_grads(lambda x: f(xform, x, np.array([[2], [0], [2]], np.int32)), (x,), order=2,
                eps=1.0)


# ---------------------------------------------------------------- lax.mul(out_dtype=)

_OUT_DTYPE_CASES = [(np.float16, np.float32, np.float32), (np.float32, np.float16, np.float16),
                    (np.float32, np.float32, np.float16), ("bfloat16", np.float32, np.float32)]


@pytest.mark.parametrize("lhs, rhs, out", _OUT_DTYPE_CASES)
def test_mul_out_dtype_values_and_gradients_match_jax(lhs, rhs, out):
    import ml_dtypes  # noqa: F401  (bfloat16 by name)
    rng = np.random.RandomState(0)
    x = rng.randn(3, 4).astype(lhs)
    y = rng.randn(3, 4).astype(rhs)

    def f(lib):
        return lambda x, y: lib.lax.mul(x, y, out_dtype=out)
    for fx in (f(xform), xform.jit(f(xform))):
        got, want = fx(x, y), f(jax)(x, y)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32))
    ct = rng.randn(3, 4).astype(out)
    gx = xform.vjp(f(xform), x, y)[1](ct)
    gj = jax.vjp(f(jax), x, y)[1](ct)
    for a, b in zip(gx, gj):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b, np.float32),
                                   rtol=1e-2, atol=1e-2)
    if out == np.float32:   # (central differences of a float16 output are noise)
        check_grads(f(xform), (x, y), 2, ["fwd", "rev"], 0.15, 0.15)
    # batching: a loop over the rows
    vm = xform.vmap(f(xform))(x, y)
    np.testing.assert_array_equal(np.asarray(vm), np.stack([np.asarray(f(xform)(a, b))
                                                            for a, b in zip(x, y)]))


def test_mul_out_dtype_errors_and_scalars():
    with pytest.raises(TypeError, match="same dtypes"):
        lax.mul(np.float32(1), np.float16(2))
    assert lax.mul(2.0, np.float16(3), out_dtype=np.float32).dtype == np.float32
    assert jax.lax.mul(2.0, np.float16(3), out_dtype=np.float32).dtype == np.float32


# ---------------------------------------------------------------- copy (jnp.copy, jnp.array)

@pytest.mark.parametrize("fn", ["copy", "array", "array_int", "grad_copy"])
def test_copy_equations_match_jax(fn):
    import re
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    def f(lib):
        n = lib.numpy
        return {"copy": lambda x: n.copy(x), "array": lambda x: n.array(x) * 2,
                "array_int": lambda x: n.array(x, dtype=n.int32),
                "grad_copy": lib.grad(lambda x: (n.copy(x) ** 2).sum())}[fn]

    def text(lib):
        return re.sub(r"\s+", " ", str(lib.make_jaxpr(f(lib))(x)))
    assert text(xform) == text(jax)
    want = np.asarray(f(jax)(x))
    np.testing.assert_array_equal(np.asarray(f(xform)(x)), want)
    np.testing.assert_array_equal(np.asarray(xform.jit(f(xform))(x)), want)
    np.testing.assert_array_equal(np.asarray(xform.vmap(f(xform))(x)),
                                  np.asarray(jax.vmap(f(jax))(x)))
    assert xform.lax.copy_p.name == jax.lax.copy_p.name == "copy"


# ---------------------------------------------------------------- approx_top_k_p

@pytest.mark.parametrize("largest, k, dim", [(True, 3, -1), (False, 2, 0), (True, 1, 1),
                                             (False, 4, -1)])
def test_approx_top_k_primitive_matches_jax(largest, k, dim):
    import re
    x = np.random.RandomState(k).permutation(36).reshape(4, 9).astype(np.float32) - 17

    def f(lib):
        fn = lib.lax.approx_max_k if largest else lib.lax.approx_min_k
        return lambda x: fn(x, k, reduction_dimension=dim)

    def text(lib, g):
        return re.sub(r"\s+", " ", str(lib.make_jaxpr(g)(x)))
    assert text(xform, f(xform)) == text(jax, f(jax))
    for got, want in ((f(xform)(x), f(jax)(x)), (xform.jit(f(xform))(x), f(jax)(x)),
                      (xform.vmap(f(xform))(np.stack([x, -x])),
                       jax.vmap(f(jax))(np.stack([x, -x])))):
        for a, b in zip(got, want):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    loss = lambda lib: lambda x: (f(lib)(x)[0] ** 2).sum()  # noqa: E731
    np.testing.assert_allclose(np.asarray(xform.grad(loss(xform))(x)),
                               np.asarray(jax.grad(loss(jax))(x)))
    check_grads(lambda x: f(xform)(x)[0], (x / 7,), order=2, modes=["fwd", "rev"])
    assert xform.lax.approx_top_k_p.name == jax.lax.approx_top_k_p.name

"""The special-function primitives (primitives/special.py): values against JAX's lax
(eager = scipy reference, jit = the CHLO op or the staged expansion), JVPs against finite
differences and JAX, batching against a Python loop and jax.vmap, error cases."""
import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import xform
from xform import lax
from tests.prim_testutil import check_batch, check_jvp, examples, x64_enabled

F32 = np.float32


def _pos(rng, n, lo=0.1, hi=10.0, dt=F32):
    return rng.uniform(lo, hi, n).astype(dt)


CASES = {   # name -> (xform fn, jax fn, argument generator)
    "igamma": (lax.igamma, jax.lax.igamma, lambda r, n, dt: [_pos(r, n, dt=dt), _pos(r, n, dt=dt)]),
    "igammac": (lax.igammac, jax.lax.igammac,
                lambda r, n, dt: [_pos(r, n, dt=dt), _pos(r, n, dt=dt)]),
    "igamma_grad_a": (lax.igamma_grad_a, jax.lax.igamma_grad_a,
                      lambda r, n, dt: [_pos(r, n, 0.5, dt=dt), _pos(r, n, dt=dt)]),
    "random_gamma_grad": (lax.random_gamma_grad, jax.lax.random_gamma_grad,
                          lambda r, n, dt: [_pos(r, n, 0.5, dt=dt), _pos(r, n, dt=dt)]),
    "polygamma": (lax.polygamma, jax.lax.polygamma,
                  lambda r, n, dt: [r.integers(0, 4, n).astype(dt), _pos(r, n, dt=dt)]),
    "zeta": (lax.zeta, jax.lax.zeta, lambda r, n, dt: [_pos(r, n, 1.1, 6, dt), _pos(r, n, dt=dt)]),
    "bessel_i0e": (lax.bessel_i0e, jax.lax.bessel_i0e,
                   lambda r, n, dt: [r.uniform(-20, 20, n).astype(dt)]),
    "bessel_i1e": (lax.bessel_i1e, jax.lax.bessel_i1e,
                   lambda r, n, dt: [r.uniform(-20, 20, n).astype(dt)]),
    "betainc": (lax.betainc, jax.lax.betainc,
                lambda r, n, dt: [_pos(r, n, dt=dt), _pos(r, n, dt=dt),
                                  r.uniform(0.01, 0.99, n).astype(dt)]),
}
# float32: XLA's f32 algorithms (ours staged identically) vs the float64 scipy reference
RTOL = {"igamma": 2e-4, "igammac": 2e-4, "igamma_grad_a": 2e-4, "random_gamma_grad": 2e-4,
        "polygamma": 1e-4, "zeta": 1e-4, "bessel_i0e": 1e-5, "bessel_i1e": 1e-5,
        "betainc": 2e-4}


JITTED = {name: xform.jit(c[0]) for name, c in CASES.items()}
JAX_JITTED = {name: jax.jit(c[1]) for name, c in CASES.items()}


@pytest.mark.parametrize("name", sorted(CASES))
@examples(3)
@given(seed=st.integers(0, 2**31 - 1))
def test_values_vs_jax(name, seed):
    ours, theirs, gen = CASES[name]
    args = gen(np.random.default_rng(seed), 6, F32)   # one shape: one compilation
    want = np.asarray(JAX_JITTED[name](*args))
    eager = np.asarray(ours(*args)) if name != "random_gamma_grad" else None
    jitted = np.asarray(JITTED[name](*args))
    if eager is None:   # a function (no primitive): eager runs the same lax program
        eager = jitted
    assert eager.dtype == jitted.dtype == want.dtype == np.float32
    np.testing.assert_allclose(eager, want, rtol=RTOL[name], atol=1e-6)
    # the staged expansions are JAX's algorithms: XLA's results agree to rounding
    np.testing.assert_allclose(jitted, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", [pytest.param("igamma", marks=pytest.mark.slow),
                                  pytest.param("igammac", marks=pytest.mark.slow),
                                  "betainc", "bessel_i0e", "zeta"])
def test_float64_and_float16(name):
    ours, theirs, gen = CASES[name]
    with x64_enabled():
        args = gen(np.random.default_rng(1), 5, np.float64)
        np.testing.assert_allclose(np.asarray(xform.jit(ours)(*args)), np.asarray(theirs(*args)),
                                   rtol=1e-12)
        np.testing.assert_allclose(np.asarray(ours(*args)), np.asarray(theirs(*args)),
                                   rtol=1e-9)
    args = [a.astype(np.float16) for a in gen(np.random.default_rng(2), 5, F32)]
    got = xform.jit(ours)(*args)
    assert got.dtype == np.float16
    np.testing.assert_allclose(np.asarray(got, F32), np.asarray(theirs(*args), F32), rtol=2e-3)


EDGE = {
    "igamma": [np.float32([0, 1, -1, 2, np.nan, 0, np.inf, np.inf, np.inf, np.inf]),
               np.float32([0, 0, 1, -1, 1, 2, np.inf, 0.5, 2, 0])],
    "igammac": [np.float32([0, 1, -1, 2, np.nan, 0, 3, np.inf, np.inf, np.inf]),
                np.float32([0, 0, 1, -1, 1, 2, np.inf, 0.5, 2, 0])],
    "igamma_grad_a": [np.float32([np.inf, np.inf, 2, 0, 1, -1]),
                      np.float32([0, 0.5, np.inf, 1, 0, 1])],
    "betainc": [np.float32([0, 1, 1, -1, 0, np.inf, 2]), np.float32([1, 0, 1, 1, 0, 2, np.inf]),
                np.float32([0.5, 0.5, 1.5, 0.5, 0.5, 0.5, 0.3])],
    "bessel_i0e": [np.float32([0, np.inf, -np.inf, np.nan, -0.0])],
    "bessel_i1e": [np.float32([0, np.inf, -np.inf, np.nan, -0.0])],
}


@pytest.mark.parametrize("name", sorted(EDGE))
def test_domain_edges_vs_jax(name):
    ours, theirs, _ = CASES[name]
    args = EDGE[name]
    want = np.asarray(theirs(*args))
    np.testing.assert_allclose(np.asarray(xform.jit(ours)(*args)), want, rtol=1e-6,
                               equal_nan=True)
    np.testing.assert_allclose(np.asarray(ours(*args)), want, rtol=1e-5, equal_nan=True)


JVPS = {   # name -> (fn, args (float64), differentiated args)
    "igamma": (lax.igamma, [np.array([0.7, 2.0, 5.0]), np.array([0.5, 3.0, 2.0])], [0, 1]),
    "igammac": (lax.igammac, [np.array([0.7, 2.0, 5.0]), np.array([0.5, 3.0, 2.0])], [0, 1]),
    "polygamma": (lax.polygamma, [np.array([0.0, 1.0, 2.0]), np.array([0.5, 3.0, 2.0])], [1]),
    "digamma": (lax.digamma, [np.array([0.5, 3.0, 7.0])], [0]),
    "bessel_i0e": (lax.bessel_i0e, [np.array([-3.0, 0.5, 9.0])], [0]),
    "bessel_i1e": (lax.bessel_i1e, [np.array([-3.0, 0.5, 9.0])], [0]),
    "betainc": (lax.betainc, [np.array([0.7, 2.0]), np.array([1.5, 3.0]), np.array([0.3, 0.6])],
                [2]),
}


@pytest.mark.parametrize("name", sorted(JVPS))
def test_jvp_finite_differences(name):
    f, args, diff = JVPS[name]
    with x64_enabled():
        check_jvp(f, args, np.random.default_rng(0), eps=1e-6, rtol=1e-5, atol=1e-7, diff=diff)


@pytest.mark.parametrize("name", ["igamma", "igammac", "bessel_i0e", "bessel_i1e", "betainc",
                                  "digamma"])
def test_grad_vs_jax(name):
    f, args, diff = JVPS[name]
    theirs = {"digamma": jax.lax.digamma}.get(name) or CASES[name][1]
    args = [a.astype(F32) for a in args]
    i = diff[-1]

    def g(m, *xs):
        return lambda v: m(*xs[:i], v, *xs[i + 1:]).sum()
    np.testing.assert_allclose(np.asarray(xform.grad(g(f, *args))(args[i])),
                               np.asarray(jax.grad(g(theirs, *args))(args[i])), rtol=2e-4)


def test_unsupported_derivatives_raise_like_jax():
    with pytest.raises(ValueError, match="with respect to a and b"):
        xform.grad(lambda a: lax.betainc(a, 2.0, 0.5))(1.0)
    with pytest.raises(ValueError, match="with respect to m"):
        xform.grad(lambda m: lax.polygamma(m, 2.0))(1.0)


def _batched(name):
    ours, theirs, gen = CASES[name]
    rng = np.random.default_rng(3)
    args = [np.stack(z) for z in zip(*[gen(rng, 3, F32) for _ in range(4)])]   # (4, 3) each
    dims = [0] + [1 if i % 2 else None for i in range(1, len(args))]
    args = [a if d == 0 else (a[0] if d is None else a.T.copy()) for a, d in zip(args, dims)]
    return ours, theirs, args, dims


@pytest.mark.parametrize("name", sorted(set(CASES) - {"random_gamma_grad"}))
def test_batching_vs_loop(name):
    ours, _, args, dims = _batched(name)
    check_batch(ours, args, dims, 4, rtol=1e-6)


_SLOW_JIT = {"igammac", "igamma_grad_a", "random_gamma_grad", "polygamma", "bessel_i0e"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW_JIT
                                  else n for n in sorted(CASES)])
def test_batching_under_jit_vs_jax(name):
    ours, theirs, args, dims = _batched(name)
    want = jax.vmap(theirs, in_axes=dims)(*args)
    np.testing.assert_allclose(np.asarray(xform.vmap(xform.jit(ours), in_axes=dims)(*args)),
                               np.asarray(want), rtol=1e-5, atol=1e-7)


def test_dtype_errors():
    with pytest.raises(TypeError, match="igamma"):
        lax.igamma(np.int32(1), np.int32(2))
    with pytest.raises(TypeError, match="same dtypes"):
        lax.zeta(np.float32(2), np.float16(1))
    with pytest.raises(TypeError):
        lax.betainc(np.float32([1, 2]), np.float32([1, 2, 3]), np.float32([0.5, 0.5]))

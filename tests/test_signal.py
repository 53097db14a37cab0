"""jnp.convolve / jnp.correlate and xform.scipy.signal against real JAX."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.signal as jsig
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import xform
import xform.numpy as xnp
import xform.scipy.signal as xsig
from prim_testutil import examples


def _close(a, b, tol=1e-4):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, float(np.abs(b).max())))


def _arr(rng, shape, kind):
    if kind == "int":
        return rng.integers(-4, 5, shape).astype(np.int32)
    x = rng.standard_normal(shape).astype(np.float32)
    return (x + 1j * rng.standard_normal(shape)).astype(np.complex64) if kind == "complex" else x


@examples(12)
@given(n=st.integers(1, 9), m=st.integers(1, 9), mode=st.sampled_from(["full", "same", "valid"]),
       kinds=st.sampled_from([("float", "float"), ("int", "float"), ("float", "complex"),
                              ("int", "int")]), seed=st.integers(0, 2**31 - 1))
def test_numpy_convolve_correlate(n, m, mode, kinds, seed):
    rng = np.random.default_rng(seed)
    a, v = _arr(rng, (n,), kinds[0]), _arr(rng, (m,), kinds[1])
    for name in ("convolve", "correlate"):
        _close(getattr(xnp, name)(a, v, mode), getattr(jnp, name)(a, v, mode))


def test_numpy_convolve_jit_grad_and_errors():
    rng = np.random.default_rng(0)
    a, v = _arr(rng, (8,), "float"), _arr(rng, (3,), "float")
    f = lambda a, v, np_: np_.sum(np_.sin(np_.convolve(a, v, "same")))
    _close(xform.jit(xform.grad(lambda a, v: f(a, v, xnp), (0, 1)))(a, v)[1],
           jax.grad(lambda a, v: f(a, v, jnp), (0, 1))(a, v)[1])
    ac, vc = _arr(rng, (8,), "complex"), _arr(rng, (3,), "complex")
    _close(xform.jit(lambda a, v: xnp.correlate(a, v, "full"))(ac, vc),
           jnp.correlate(ac, vc, "full"))
    _close(xnp.convolve(a, v, preferred_element_type=np.float32),
           jnp.convolve(a, v, preferred_element_type=np.float32))
    for bad in [(a[None], v, "full"), (a, v, "nope"), (a[:0], v, "full")]:
        with pytest.raises(ValueError):
            jnp.convolve(*bad)
        with pytest.raises(ValueError):
            xnp.convolve(*bad)


# Default run: one draw per mode; the slow step runs 10 draws (test_scipy_signal_nd_exhaustive).
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@examples(1)
@given(rank=st.integers(1, 3), swap=st.booleans(), cplx=st.booleans(),
       seed=st.integers(0, 2**31 - 1))
def test_scipy_signal_nd(rank, mode, swap, cplx, seed):
    _test_scipy_signal_nd(rank, mode, swap, cplx, seed)


@pytest.mark.slow
@examples(10)
@given(rank=st.integers(1, 3), mode=st.sampled_from(["full", "same", "valid"]),
       swap=st.booleans(), cplx=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_scipy_signal_nd_exhaustive(rank, mode, swap, cplx, seed):
    _test_scipy_signal_nd(rank, mode, swap, cplx, seed)


def _test_scipy_signal_nd(rank, mode, swap, cplx, seed):
    rng = np.random.default_rng(seed)
    big = tuple(int(rng.integers(2, 6)) for _ in range(rank))
    small = tuple(int(rng.integers(1, b + 1)) for b in big)
    x, y = _arr(rng, big, "complex" if cplx else "float"), _arr(rng, small, "float")
    if swap:
        x, y = y, x
    for name in ("convolve", "correlate"):
        _close(getattr(xsig, name)(x, y, mode), getattr(jsig, name)(x, y, mode))
    if rank == 2:
        for name in ("convolve2d", "correlate2d"):
            _close(getattr(xsig, name)(x, y, mode), getattr(jsig, name)(x, y, mode))


def test_scipy_signal_errors():
    x = np.ones((4, 5), np.float32)
    for f in (xsig.convolve2d, xsig.correlate2d):
        with pytest.raises(NotImplementedError):
            f(x, x, boundary="wrap")
        with pytest.raises(ValueError):
            f(x[0], x[0])
    with pytest.raises(ValueError):
        xsig.convolve(x, np.ones((5, 4)))
    with pytest.raises(ValueError):
        xsig.convolve(x, x, method="magic")


# Default run: one draw per mode; the slow step runs 8 draws
# (test_fftconvolve_and_method_fft_exhaustive).
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@examples(1)
@given(rank=st.integers(1, 3), cplx=st.booleans(), use_axes=st.booleans(),
       seed=st.integers(0, 2**31 - 1))
def test_fftconvolve_and_method_fft(rank, mode, cplx, use_axes, seed):
    _test_fftconvolve_and_method_fft(rank, mode, cplx, use_axes, seed)


@pytest.mark.slow
@examples(8)
@given(rank=st.integers(1, 3), mode=st.sampled_from(["full", "same", "valid"]),
       cplx=st.booleans(), use_axes=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_fftconvolve_and_method_fft_exhaustive(rank, mode, cplx, use_axes, seed):
    _test_fftconvolve_and_method_fft(rank, mode, cplx, use_axes, seed)


def _test_fftconvolve_and_method_fft(rank, mode, cplx, use_axes, seed):
    rng = np.random.default_rng(seed)
    big = tuple(int(rng.integers(2, 7)) for _ in range(rank))
    small = tuple(int(rng.integers(1, b + 1)) for b in big)
    x, y = _arr(rng, big, "complex" if cplx else "float"), _arr(rng, small, "float")
    axes = None
    if use_axes:
        axes = (rank - 1,)
        y = _arr(rng, big[:-1] + small[-1:], "float")
    _close(xsig.fftconvolve(x, y, mode, axes), jsig.fftconvolve(x, y, mode, axes), 1e-4)
    if axes is None:
        _close(xsig.convolve(x, y, mode, method="fft"), jsig.convolve(x, y, mode, method="fft"),
               1e-4)

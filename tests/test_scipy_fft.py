"""xform.scipy.fft (dct, dctn, idct, idctn) against jax.scipy.fft and scipy.fft, with
jit, grad (checked against JAX and finite differences) and vmap (against a loop)."""
import numpy as np
import pytest
import scipy.fft as sfft

import jax
import jax.scipy.fft as jfft

import xform
import xform.scipy.fft as xfft

rng = np.random.default_rng(0)
TOL = dict(rtol=2e-4, atol=2e-4)


def test_names_match_jax():
    assert sorted(n for n in dir(jfft) if not n.startswith("_")) == sorted(xfft.__all__)


@pytest.mark.parametrize("fname", ["dct", "idct"])
@pytest.mark.parametrize("shape,axis", [((7,), -1), ((4, 6), 0), ((3, 5), 1), ((1,), 0),
                                        ((2, 3, 8), 1), ((2, 4), -2)])
@pytest.mark.parametrize("n", [None, 3, 9])
@pytest.mark.parametrize("norm", [None, "backward", "ortho"])
def test_1d_matches_jax_and_scipy(fname, shape, axis, n, norm):
    x = rng.normal(size=shape).astype(np.float32)
    got = getattr(xfft, fname)(x, n=n, axis=axis, norm=norm)
    want = getattr(jfft, fname)(x, n=n, axis=axis, norm=norm)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), **TOL)
    np.testing.assert_allclose(np.asarray(got), getattr(sfft, fname)(
        x.astype(np.float64), n=n, axis=axis, norm=norm), **TOL)


@pytest.mark.parametrize("fname", ["dctn", "idctn"])
@pytest.mark.parametrize("s,axes", [(None, None), ([2, 6], None), (None, (0, 2)), ([3], [1]),
                                    (None, [-1]), ([4, 2, 3], None)])
@pytest.mark.parametrize("norm", [None, "ortho"])
def test_nd_matches_jax_and_scipy(fname, s, axes, norm):
    x = rng.normal(size=(3, 4, 5)).astype(np.float32)
    got = getattr(xfft, fname)(x, s=s, axes=axes, norm=norm)
    want = getattr(jfft, fname)(x, s=s, axes=axes, norm=norm)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), **TOL)
    np.testing.assert_allclose(np.asarray(got), getattr(sfft, fname)(
        x.astype(np.float64), s=s, axes=axes, norm=norm), **TOL)


@pytest.mark.parametrize("dtype", ["int32", "bool", "complex64", "float16"])
def test_dtypes_match_jax(dtype):
    x = (rng.normal(size=(6,)) * 3).astype(dtype) if dtype != "complex64" else \
        (rng.normal(size=(6,)) + 1j * rng.normal(size=(6,))).astype(dtype)
    for f in ("dct", "idct", "dctn", "idctn"):
        got, want = getattr(xfft, f)(x), getattr(jfft, f)(x)
        assert got.dtype == want.dtype, f
        tol = dict(rtol=2e-2, atol=2e-2) if dtype == "float16" else TOL
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), **tol)


def test_round_trip_and_errors():
    x = rng.normal(size=(5, 6)).astype(np.float32)
    for norm in (None, "ortho"):
        np.testing.assert_allclose(np.asarray(xfft.idctn(xfft.dctn(x, norm=norm), norm=norm)),
                                   x, **TOL)
    for t in (1, 3, 4):
        with pytest.raises(NotImplementedError, match="Only DCT type 2"):
            xfft.dct(x, type=t)
        with pytest.raises(NotImplementedError, match="Only DCT type 2"):
            jfft.dct(x, type=t)
    with pytest.raises(ValueError, match="norm='forward' is not implemented"):
        xfft.dct(x, norm="forward")
    with pytest.raises(ValueError, match="at most x.ndim"):
        xfft.dctn(x, s=[1, 2, 3])
    with pytest.raises(TypeError, match="requires ndarray"):
        xfft.dct([1.0, 2.0])


@pytest.mark.parametrize("fname,kw", [("dct", {}), ("dct", {"norm": "ortho", "n": 7}),
                                      ("idct", {}), ("idct", {"norm": "ortho", "n": 4}),
                                      ("dctn", {}), ("idctn", {"norm": "ortho"})])
def test_grad_jit_vmap(fname, kw):
    x = rng.normal(size=(3, 5)).astype(np.float32)
    w = rng.normal(size=np.shape(getattr(jfft, fname)(x, **kw))).astype(np.float32)
    xf = lambda v: (getattr(xfft, fname)(v, **kw) * w).sum()  # noqa: E731
    jf = lambda v: (getattr(jfft, fname)(v, **kw) * w).sum()  # noqa: E731
    g = np.asarray(xform.jit(xform.grad(xf))(x))
    np.testing.assert_allclose(g, np.asarray(jax.grad(jf)(x)), **TOL)
    # finite differences (the transform is linear: exact up to rounding)
    e = np.zeros_like(x)
    e[1, 2] = 1.0
    fd = (float(xf(x + e)) - float(xf(x - e))) / 2
    np.testing.assert_allclose(g[1, 2], fd, rtol=1e-3, atol=1e-3)
    # vmap over a new leading axis equals a loop
    xs = rng.normal(size=(4, 3, 5)).astype(np.float32)
    f = lambda v: getattr(xfft, fname)(v, **kw)  # noqa: E731
    got = np.asarray(xform.vmap(f)(xs))
    np.testing.assert_allclose(got, np.stack([np.asarray(f(v)) for v in xs]), **TOL)
    # jvp equals the transform of the tangent (linearity)
    _, t = xform.jvp(f, (x,), (xs[0],))
    np.testing.assert_allclose(np.asarray(t), np.asarray(f(xs[0])), **TOL)

"""xform.scipy.integrate / ndimage / interpolate / cluster against jax.scipy, and the names
of jax.scipy's submodules that xform lacks."""
import jax
import jax.scipy as JS
import jax.scipy.cluster.vq
import jax.scipy.integrate
import jax.scipy.interpolate
import jax.scipy.ndimage
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import xform
import xform.scipy as XS
from tests.prim_testutil import examples

F32 = np.float32


def _close(o, t, rtol=1e-5, atol=1e-6, exact=False):
    if isinstance(t, tuple):
        for a, b in zip(o, t):
            _close(a, b, rtol, atol, exact)
        return
    o, t = np.asarray(o), np.asarray(t)
    assert o.shape == t.shape and o.dtype == t.dtype, (o.shape, t.shape, o.dtype, t.dtype)
    if exact:
        np.testing.assert_array_equal(o, t)
    else:
        np.testing.assert_allclose(o, t, rtol=rtol, atol=atol, equal_nan=True)


def test_trapezoid():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(3, 5)).astype(F32)
    x = np.sort(rng.uniform(0, 4, 5)).astype(F32)
    _close(XS.integrate.trapezoid(y, x), JS.integrate.trapezoid(y, x))
    _close(XS.integrate.trapezoid(y, dx=0.5, axis=0), JS.integrate.trapezoid(y, dx=0.5, axis=0))
    _close(xform.grad(lambda v: XS.integrate.trapezoid(v, x).sum())(y),
           jax.grad(lambda v: JS.integrate.trapezoid(v, x).sum())(y))


MODES = ["constant", "nearest", "wrap", "mirror", "reflect"]


@examples(4)
@given(seed=st.integers(0, 2**31 - 1), order=st.sampled_from([0, 1]),
       mode=st.sampled_from(MODES), ndim=st.integers(1, 3),
       dtype=st.sampled_from([np.float32, np.int32]))
def test_map_coordinates_vs_jax(seed, order, mode, ndim, dtype):
    rng = np.random.default_rng(seed)
    shape = tuple(rng.integers(2, 5, ndim))
    img = (rng.normal(size=shape) * 10).astype(dtype)
    coords = [rng.uniform(-2, s + 2, 6).astype(F32) for s in shape]
    _close(XS.ndimage.map_coordinates(img, coords, order, mode=mode, cval=1.5),
           JS.ndimage.map_coordinates(img, coords, order, mode=mode, cval=1.5),
           exact=dtype == np.int32)


def test_map_coordinates_grad_jit_and_errors():
    img = np.arange(12, dtype=F32).reshape(3, 4)
    c = [F32([0.5, 1.7]), F32([2.2, -0.3])]
    _close(xform.jit(lambda i: XS.ndimage.map_coordinates(i, c, 1))(img),
           JS.ndimage.map_coordinates(img, c, 1))
    _close(xform.grad(lambda i: XS.ndimage.map_coordinates(i, c, 1, "nearest").sum())(img),
           jax.grad(lambda i: JS.ndimage.map_coordinates(i, c, 1, "nearest").sum())(img))
    with pytest.raises(ValueError, match="length input.ndim"):
        XS.ndimage.map_coordinates(img, c[:1], 1)
    with pytest.raises(NotImplementedError, match="order"):
        XS.ndimage.map_coordinates(img, c, 3)
    with pytest.raises(NotImplementedError, match="mode"):
        XS.ndimage.map_coordinates(img, c, 1, mode="grid-wrap")


@pytest.mark.parametrize("method", ["linear", "nearest"])
@pytest.mark.parametrize("fill", [np.nan, None, 0.5])
def test_regular_grid_interpolator(method, fill):
    rng = np.random.default_rng(1)
    grid = (np.linspace(0, 1, 4).astype(F32), np.sort(rng.uniform(-1, 2, 5)).astype(F32))
    vals = rng.normal(size=(4, 5, 2)).astype(F32)
    xi = rng.uniform(-0.3, 1.6, (6, 2)).astype(F32)
    ours = XS.interpolate.RegularGridInterpolator(grid, vals, method=method, fill_value=fill)
    theirs = JS.interpolate.RegularGridInterpolator(grid, vals, method=method, fill_value=fill)
    _close(ours(xi), theirs(xi))
    _close(ours((xi[:, 0], xi[:, 1])), theirs((xi[:, 0], xi[:, 1])))
    other = "nearest" if method == "linear" else "linear"
    _close(ours(xi, method=other), theirs(xi, method=other))


def test_regular_grid_interpolator_pytree_grad_errors():
    grid = (np.linspace(0, 1, 3).astype(F32),)
    vals = F32([1.0, 3.0, 2.0])
    interp = XS.interpolate.RegularGridInterpolator(grid, vals)
    _close(xform.jit(lambda f, x: f(x))(interp, F32([0.25, 0.8])),
           JS.interpolate.RegularGridInterpolator(grid, vals)(F32([0.25, 0.8])))
    _close(xform.grad(lambda x: interp(x).sum())(F32([0.25, 0.8])),
           jax.grad(lambda x: JS.interpolate.RegularGridInterpolator(grid, vals)(x).sum())(
               F32([0.25, 0.8])))
    with pytest.raises(ValueError, match="not defined"):
        XS.interpolate.RegularGridInterpolator(grid, vals, method="cubic")
    with pytest.raises(NotImplementedError, match="bounds_error"):
        XS.interpolate.RegularGridInterpolator(grid, vals, bounds_error=True)
    with pytest.raises(ValueError, match="point arrays"):
        XS.interpolate.RegularGridInterpolator(grid * 2, vals)


def test_vq():
    rng = np.random.default_rng(2)
    obs = rng.normal(size=(7, 3)).astype(F32)
    cb = rng.normal(size=(4, 3)).astype(F32)
    _close(XS.cluster.vq.vq(obs, cb), JS.cluster.vq.vq(obs, cb))
    _close(XS.cluster.vq.vq(obs[:, 0], cb[:, 0]), JS.cluster.vq.vq(obs[:, 0], cb[:, 0]))
    _close(xform.jit(XS.cluster.vq.vq)(obs, cb), JS.cluster.vq.vq(obs, cb))
    with pytest.raises(ValueError, match="same rank"):
        XS.cluster.vq.vq(obs, cb[:, 0])


def _public(mod):
    return {n for n in dir(mod) if not n.startswith("_")}


@pytest.mark.parametrize("sub", ["integrate", "ndimage", "interpolate", "cluster",
                                 "cluster.vq", "special", "stats"])
def test_no_jax_scipy_name_is_missing(sub):
    import importlib
    theirs = importlib.import_module(f"jax.scipy.{sub}")
    ours = importlib.import_module(f"xform.scipy.{sub}")
    assert sorted(_public(theirs) - _public(ours)) == []

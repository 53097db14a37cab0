"""xform.image compared with jax.image on the same inputs (values, dtypes, gradients)."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp
import xform
import xform.numpy as xnp

METHODS = ["nearest", "linear", "cubic", "cubic-pytorch", "lanczos3", "lanczos5", "area"]
SHAPES = [(2, 14, 5, 3), (2, 3, 20, 3), (2, 7, 9, 3), (2, 1, 2, 3)]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("antialias", [True, False])
def test_resize_matches_jax(method, antialias):
    x = np.random.RandomState(0).randn(2, 7, 9, 3).astype(np.float32)
    for shape in SHAPES:
        got = xform.image.resize(x, shape, method, antialias=antialias)
        want = jax.image.resize(x, shape, method, antialias=antialias)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5,
                                   err_msg=str(shape))


def test_resize_dtypes_and_enum():
    xi = np.arange(12, dtype=np.int32).reshape(3, 4)
    for m in ("nearest", xform.image.ResizeMethod.LINEAR):
        jm = m if isinstance(m, str) else jax.image.ResizeMethod.LINEAR
        got, want = xform.image.resize(xi, (5, 7), m), jax.image.resize(xi, (5, 7), jm)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    xh = xi.astype(np.float16)
    got, want = xform.image.resize(xh, (2, 3), "cubic"), jax.image.resize(xh, (2, 3), "cubic")
    assert got.dtype == want.dtype == np.float16
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                               rtol=1e-3)
    assert [m.name for m in xform.image.ResizeMethod] == [m.name for m in jax.image.ResizeMethod]
    assert xform.image.ResizeMethod.from_string("bilinear") is xform.image.ResizeMethod.LINEAR
    with pytest.raises(ValueError, match="Unknown resize method"):
        xform.image.resize(xi, (5, 7), "bogus")
    with pytest.raises(ValueError, match="shape must have length"):
        xform.image.resize(xi, (5,), "linear")


@pytest.mark.parametrize("method", ["linear", "cubic", "lanczos3", "area", "cubic-pytorch"])
@pytest.mark.parametrize("antialias", [True, False])
def test_scale_and_translate_matches_jax(method, antialias):
    x = np.random.RandomState(1).randn(6, 8, 2).astype(np.float32)
    args = ((9, 5, 2), (0, 1), np.array([1.7, 0.6], np.float32),
            np.array([-0.4, 1.3], np.float32), method)
    got = xform.image.scale_and_translate(x, *args, antialias=antialias)
    want = jax.image.scale_and_translate(x, *args, antialias=antialias)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="Nearest"):
        xform.image.scale_and_translate(x, *args[:4], "nearest")


def test_grad_jit_vmap_match_jax():
    x = np.random.RandomState(2).randn(5, 6).astype(np.float32)
    scale = np.array([1.3, 0.7], np.float32)
    trans = np.array([0.2, -0.5], np.float32)

    def loss(mod, np_):
        def f(img, s, t):
            y = mod.image.scale_and_translate(img, (7, 4), (0, 1), s, t, "cubic")
            return np_.sum(np_.sin(y))
        return f
    gx = xform.grad(loss(xform, xnp), argnums=(0, 1, 2))(x, scale, trans)
    gj = jax.grad(loss(jax, jnp), argnums=(0, 1, 2))(x, scale, trans)
    for a, b in zip(gx, gj):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)

    xb = np.random.RandomState(3).randn(3, 5, 6).astype(np.float32)
    f = xform.jit(xform.vmap(lambda im: xform.image.resize(im, (9, 4), "lanczos3")))
    want = jax.vmap(lambda im: jax.image.resize(im, (9, 4), "lanczos3"))(xb)
    np.testing.assert_allclose(np.asarray(f(xb)), np.asarray(want), rtol=1e-5, atol=1e-5)
    g = xform.grad(lambda im: xform.image.resize(im, (3, 9), "linear").sum())(x)
    h = jax.grad(lambda im: jax.image.resize(im, (3, 9), "linear").sum())(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=1e-5, atol=1e-6)

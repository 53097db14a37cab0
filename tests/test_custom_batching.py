"""xform.custom_batching (custom_vmap, sequential_vmap) against JAX: the user's rule runs
under vmap, JVPs of custom_vmap functions batch through it (with primals and tangents
batched differently), and gradients flow through it (where JAX has none)."""
import jax
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform import custom_batching as xcb


def _make(lib, cb, np_):
    @cb.custom_vmap
    def f(x, y):
        return np_.sin(x) * y

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        xb, yb = in_batched
        out = np_.sin(x) * y          # the same function, batched by broadcasting
        return out, xb or yb
    return f


def _pair():
    return _make(xform, xcb, xnp), _make(jax, jax.custom_batching, jax.numpy)


X = np.linspace(-1.0, 1.0, 12).reshape(4, 3).astype(np.float32)
Y = np.linspace(0.5, 2.0, 12).reshape(4, 3).astype(np.float32)


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0), (1, 1)])
def test_vmap_uses_the_rule_like_jax(in_axes):
    fx, fj = _pair()
    y = Y[0] if in_axes[1] is None else Y
    x = X[0] if in_axes[0] is None else X
    ours = xform.vmap(fx, in_axes=in_axes)(x, y)
    ref = jax.vmap(fj, in_axes=in_axes)(x, y)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-6)


@pytest.mark.parametrize("batch_primal,batch_tangent", [(True, True), (True, False),
                                                         (False, True)])
def test_vmap_of_jvp_with_differently_batched_primals_and_tangents(batch_primal,
                                                                   batch_tangent):
    fx, fj = _pair()

    def jvp_of(lib, f):
        return lambda x, t: lib.jvp(lambda a: f(a, Y[0]), (x,), (t,))
    in_axes = (0 if batch_primal else None, 0 if batch_tangent else None)
    x = X if batch_primal else X[0]
    t = Y if batch_tangent else Y[1]
    ours = xform.vmap(jvp_of(xform, fx), in_axes=in_axes)(x, t)
    ref = jax.vmap(jvp_of(jax, fj), in_axes=in_axes)(x, t)
    for o, r in zip(ours, ref):
        np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=1e-6)


def test_grad_and_vmap_of_grad_equal_the_plain_functions():
    # JAX's custom_vmap has no reverse mode (its linearization fails); xform's transposes
    # the JVP, so the gradient is that of the same function without the custom rule.
    fx, _ = _pair()
    gx = xform.grad(lambda x: fx(x, Y[0]).sum())
    gj = jax.grad(lambda x: (jax.numpy.sin(x) * Y[0]).sum())
    np.testing.assert_allclose(np.asarray(gx(X[0])), np.asarray(gj(X[0])), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(xform.vmap(gx)(X)), np.asarray(jax.vmap(gj)(X)),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(xform.jit(xform.vmap(gx))(X)),
                               np.asarray(jax.vmap(gj)(X)), rtol=1e-6)


def test_sequential_vmap_matches_a_loop():
    f = xcb.sequential_vmap(lambda x: xnp.cumsum(x) * 2.0)
    ours = xform.vmap(f)(X)
    loop = np.stack([np.cumsum(r) * 2.0 for r in X])
    np.testing.assert_allclose(np.asarray(ours), loop, rtol=1e-6)

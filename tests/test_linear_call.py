"""custom_derivatives.linear_call against JAX's (values, JVP, transpose, grad, vmap)."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax.custom_derivatives import linear_call as jlc
import xform
import xform.numpy as xnp
from xform.custom_derivatives import linear_call as xlc


def _f(lc):
    # fun_transpose is deliberately not fun's true transpose, so its use is observable
    def f(r, x):
        return lc(lambda r, v: {"y": r["s"] * v[0] + v[1]},
                  lambda r, ct: (2.0 * r["s"] * ct["y"], 3.0 * ct["y"]), r, x)
    return f


R = {"s": np.float32(1.5)}
X = (np.arange(1.0, 4.0, dtype=np.float32), np.ones(3, np.float32))


def _close(a, b):
    for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-6)


def test_value_jvp_grad_transpose_match_jax():
    fx, fj = _f(xlc), _f(jlc)
    _close(fx(R, X), fj(R, X))
    _close(xform.jit(fx)(R, X), fj(R, X))
    _close(xform.jvp(lambda x: fx(R, x), (X,), (X,)), jax.jvp(lambda x: fj(R, x), (X,), (X,)))
    loss_x = lambda x: (fx(R, x)["y"] ** 2).sum()  # noqa: E731
    loss_j = lambda x: (fj(R, x)["y"] ** 2).sum()  # noqa: E731
    _close(xform.grad(loss_x)(X), jax.grad(loss_j)(X))
    _close(xform.jit(xform.grad(loss_x))(X), jax.grad(loss_j)(X))
    ct = {"y": np.array([1.0, -2.0, 0.5], np.float32)}
    tx = xform.linear_transpose(lambda x: fx(R, x), X)(ct)
    tj = jax.linear_transpose(lambda x: fj(R, x), X)(ct)
    _close(tx, tj)
    # transposing the transpose gives the callee back
    tx1 = xform.linear_transpose(lambda x: fx(R, x), X)
    tj1 = jax.linear_transpose(lambda x: fj(R, x), X)
    ttx = xform.linear_transpose(lambda c: tx1(c)[0], ct)(X)
    ttj = jax.linear_transpose(lambda c: tj1(c)[0], ct)(X)
    _close(ttx, ttj)


def test_vmap_matches_loop():
    fx = _f(xlc)
    xs = (np.arange(6.0, dtype=np.float32).reshape(2, 3), np.ones((2, 3), np.float32))
    rs = {"s": np.array([1.0, -2.0], np.float32)}
    got = xform.vmap(fx)(rs, xs)["y"]
    g = xform.vmap(xform.grad(lambda r, x: fx(r, x)["y"].sum(), argnums=1))(rs, xs)
    for i in range(2):
        r_i, x_i = {"s": rs["s"][i]}, (xs[0][i], xs[1][i])
        np.testing.assert_allclose(np.asarray(got[i]), np.asarray(fx(r_i, x_i)["y"]))
        want = xform.grad(lambda x: fx(r_i, x)["y"].sum())(x_i)
        _close((g[0][i], g[1][i]), want)


def test_closures_and_errors():
    w = xnp.asarray(np.float32(4.0))
    f = lambda x: xlc(lambda r, v: v * w, lambda r, ct: ct * w, None, x)  # noqa: E731
    np.testing.assert_allclose(np.asarray(xform.grad(lambda x: f(x).sum())(X[0])), 4.0)
    with pytest.raises(TypeError, match="not differentiated"):
        xform.grad(lambda s: _f(xlc)({"s": s}, X)["y"].sum())(np.float32(1.0))
    with pytest.raises(TypeError, match="structure of linear_args"):
        xlc(lambda r, v: v, lambda r, ct: (ct, ct), None, X[0])
    with pytest.raises(TypeError, match="shapes and dtypes"):
        xlc(lambda r, v: v.sum(), lambda r, ct: ct, None, X[0])

"""The demo's second model: the CNN's loss/gradients equal JAX's on the same parameters, and
it trains on digits to >= 0.95 test accuracy under jit(value_and_grad)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import xform
from xform import demo_cnn


def _jax_loss(params, x, y):
    for name in ("conv1", "conv2"):
        w, b = params[name]
        x = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=demo_cnn.DN)
        x = jax.lax.reduce_window(jax.nn.relu(x + b), -jnp.inf, jax.lax.max, (1, 2, 2, 1),
                                  (1, 2, 2, 1), "VALID")
    w, b = params["dense"]
    logits = x.reshape(x.shape[0], -1) @ w + b
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * jax.nn.one_hot(y, 10), axis=-1))


def test_cnn_gradients_match_jax():
    (xtr, ytr), _ = demo_cnn.load_digits_images()
    params = demo_cnn.init_cnn(0)
    np_params = jax.tree_util.tree_map(np.asarray, {k: tuple(v) for k, v in params.items()})
    x, y = xtr[:64], ytr[:64]
    loss, grads = xform.jit(xform.value_and_grad(demo_cnn.cnn_loss))(params, x, y)
    jloss, jgrads = jax.value_and_grad(_jax_loss)(np_params, x, y)
    np.testing.assert_allclose(float(loss), float(jloss), rtol=1e-5)
    for k in np_params:
        for g, jg in zip(grads[k], jgrads[k]):
            np.testing.assert_allclose(np.asarray(g), np.asarray(jg), rtol=1e-4, atol=1e-5)


def test_cnn_trains_to_95_percent():
    _, acc = demo_cnn.train(epochs=8, verbose=False)
    assert acc >= 0.95, acc


def test_cnn_per_example_gradients_match_jax():
    """jit(vmap(grad)) through conv (batch folded into feature groups) and max pooling
    (batched select_and_scatter_add)."""
    (xtr, ytr), _ = demo_cnn.load_digits_images()
    params = demo_cnn.init_cnn(1)
    np_params = {k: tuple(map(np.asarray, v)) for k, v in params.items()}
    x, y = xtr[:8], ytr[:8]
    pe = xform.jit(xform.vmap(xform.grad(lambda q, a, b: demo_cnn.cnn_loss(q, a[None], b[None])),
                              in_axes=(None, 0, 0)))(params, x, y)
    jpe = jax.vmap(jax.grad(lambda q, a, b: _jax_loss(q, a[None], b[None])),
                   in_axes=(None, 0, 0))(np_params, x, y)
    for k in np_params:
        for g, jg in zip(pe[k], jpe[k]):
            np.testing.assert_allclose(np.asarray(g), np.asarray(jg), rtol=1e-4, atol=1e-5)

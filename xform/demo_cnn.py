"""The demo's optional second model: a small CNN (conv-relu-maxpool x2, dense) trained on
scikit-learn's 8x8 digits under ``jit(value_and_grad)``.

Run with ``python -m xform.demo --cnn`` (or ``python -m xform.demo_cnn``).  Layers are
written with ``lax.conv_general_dilated`` (NHWC / HWIO) and max pooling with
``lax.reduce_window`` exactly as Flax and ``jax.example_libraries.stax`` write them, so
the same code runs under ``import jax``.  Parameters are initialised with NumPy's RNG.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import xform
import xform.lax as lax
import xform.numpy as xnp
from xform import nn

DN = ("NHWC", "HWIO", "NHWC")


def load_digits_images(seed=0):
    from xform.demo import load_digits_split  # deferred: keeps `import xform` light
    (xtr, ytr), (xte, yte) = load_digits_split(seed)
    return (xtr.reshape(-1, 8, 8, 1), ytr), (xte.reshape(-1, 8, 8, 1), yte)


def init_cnn(seed=0, c1=16, c2=32):
    rng = np.random.default_rng(seed)

    def he(shape, fan_in):
        return xnp.asarray(rng.normal(0.0, np.sqrt(2.0 / fan_in), shape).astype(np.float32))
    return {"conv1": (he((3, 3, 1, c1), 9), xnp.zeros(c1, xnp.float32)),
            "conv2": (he((3, 3, c1, c2), 9 * c1), xnp.zeros(c2, xnp.float32)),
            "dense": (he((2 * 2 * c2, 10), 4 * c2), xnp.zeros(10, xnp.float32))}


def max_pool(x, size=2):
    return lax.reduce_window(x, -xnp.inf, lax.max, (1, size, size, 1), (1, size, size, 1),
                             "VALID")


def cnn_predict(params, x):
    for name in ("conv1", "conv2"):
        w, b = params[name]
        x = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN)
        x = max_pool(nn.relu(x + b))
    w, b = params["dense"]
    return x.reshape(x.shape[0], -1) @ w + b


def cnn_loss(params, x, y):
    logp = nn.log_softmax(cnn_predict(params, x))
    return -xnp.mean(xnp.sum(logp * nn.one_hot(y, 10), axis=-1))


def make_step(lr=0.05, momentum=0.9):
    value_and_grad = xform.value_and_grad(cnn_loss)

    @xform.jit
    def step(params, velocity, x, y):
        loss, grads = value_and_grad(params, x, y)
        velocity = xform.tree_util.tree_map(lambda v, g: momentum * v + g, velocity, grads)
        params = xform.tree_util.tree_map(lambda p, v: p - lr * v, params, velocity)
        return loss, params, velocity
    return step


def accuracy(params, x, y):
    return float(xnp.mean(xnp.argmax(xform.jit(cnn_predict)(params, x), axis=-1) == y))


def train(epochs=8, batch=64, lr=0.05, seed=0, verbose=True):
    (xtr, ytr), (xte, yte) = load_digits_images()
    params = init_cnn(seed)
    velocity = xform.tree_util.tree_map(xnp.zeros_like, params)
    step = make_step(lr)
    rng = np.random.default_rng(seed + 1)
    n_batches = len(xtr) // batch
    t0 = time.perf_counter()
    for epoch in range(epochs):
        order = rng.permutation(len(xtr))
        total = 0.0
        for i in range(n_batches):
            idx = order[i * batch:(i + 1) * batch]
            loss, params, velocity = step(params, velocity, xtr[idx], ytr[idx])
            total += float(loss)
        if verbose and (epoch % 5 == 0 or epoch == epochs - 1):
            print(f"epoch {epoch:3d}  loss {total / n_batches:.4f}  test accuracy "
                  f"{accuracy(params, xte, yte):.3f}")
    acc = accuracy(params, xte, yte)
    if verbose:
        print(f"trained in {time.perf_counter() - t0:.2f} s")
    return params, acc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    args, _ = ap.parse_known_args(argv)
    print("digits as 8x8x1 images: CNN conv3x3(16)-relu-maxpool-conv3x3(32)-relu-maxpool-"
          "dense(10), jit(value_and_grad) + SGD with momentum")
    _, acc = train(args.epochs, args.batch, args.lr)
    if acc < 0.95:
        raise SystemExit(f"CNN demo failed to learn: test accuracy {acc:.3f}")
    return acc


if __name__ == "__main__":
    main()

"""The main demo: a small MLP trained on scikit-learn's digits with ``value_and_grad``.

Run with ``python -m xform.demo``.  The training step is ``jit``-compiled when
``xform.jit`` is available and runs eagerly otherwise (``--eager`` forces it).
``--cnn`` trains the optional second model instead: a small CNN (``xform.demo_cnn``).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import xform
import xform.numpy as xnp
from xform import nn
import sys


def load_digits_split(seed=0):
    from sklearn.datasets import load_digits  # deferred: keeps `import xform` light
    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    n_train = int(0.8 * len(x))
    return (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])


def init_params(sizes, seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        w = rng.normal(0.0, np.sqrt(2.0 / n_in), (n_in, n_out)).astype(np.float32)
        params.append((xnp.asarray(w), xnp.zeros(n_out, xnp.float32)))
    return params


def predict(params, x):
    for w, b in params[:-1]:
        x = nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss_fn(params, x, y):
    logp = nn.log_softmax(predict(params, x))
    return -xnp.mean(xnp.sum(logp * nn.one_hot(y, 10), axis=-1))


def sgd(params, grads, lr):
    return xform.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--eager", action="store_true", help="do not jit the training step")
    ap.add_argument("--cnn", action="store_true",
                    help="train the second model: a conv-relu-maxpool CNN (xform.demo_cnn)")
    args, rest = ap.parse_known_args(argv)
    if args.cnn:
        from xform import demo_cnn  # deferred: keeps `import xform` light
        return demo_cnn.main([a for a in (sys.argv[1:] if argv is None else argv)
                              if a != "--cnn"])
    if rest:
        ap.error(f"unrecognized arguments: {' '.join(rest)}")

    (xtr, ytr), (xte, yte) = load_digits_split()
    params = init_params([64, 128, 64, 10])
    value_and_grad = xform.value_and_grad(loss_fn)
    use_jit = hasattr(xform, "jit") and not args.eager
    if use_jit:
        @xform.jit
        def step(params, x, y):
            loss, grads = value_and_grad(params, x, y)
            return loss, sgd(params, grads, args.lr)
    else:
        def step(params, x, y):
            loss, grads = value_and_grad(params, x, y)
            return loss, sgd(params, grads, args.lr)

    print(f"digits: {len(xtr)} train / {len(xte)} test images, MLP 64-128-64-10, "
          f"{'jit-compiled' if use_jit else 'eager'} value_and_grad + SGD")
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    n_batches = len(xtr) // args.batch
    for epoch in range(args.epochs):
        order = rng.permutation(len(xtr))
        total = 0.0
        for i in range(n_batches):
            idx = order[i * args.batch:(i + 1) * args.batch]
            loss, params = step(params, xtr[idx], ytr[idx])
            total += float(loss)
        if epoch % 5 == 0 or epoch == args.epochs - 1:
            acc = float(xnp.mean(xnp.argmax(predict(params, xte), axis=-1) == yte))
            print(f"epoch {epoch:3d}  loss {total / n_batches:.4f}  test accuracy {acc:.3f}")
    print(f"trained in {time.perf_counter() - t0:.2f} s")
    acc = float(xnp.mean(xnp.argmax(predict(params, xte), axis=-1) == yte))
    if acc < 0.9:
        raise SystemExit(f"demo failed to learn: test accuracy {acc:.3f}")
    return acc


if __name__ == "__main__":
    main()

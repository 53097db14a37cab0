"""xform.example_libraries (optimizers, stax) against jax.example_libraries, and JAX's
two MNIST examples (examples/mnist_classifier.py, mnist_classifier_fromscratch.py)
with their logic unchanged, on scikit-learn's digits: only the imports differ."""
import itertools
import pickle

import numpy as np
import numpy.random as npr
import pytest

import jax
import jax.numpy as jnp
import xform
import xform.numpy as xnp
from jax.example_libraries import optimizers as jopt
from jax.example_libraries import stax as jstax
from xform.example_libraries import optimizers as xopt
from xform.example_libraries import stax as xstax

JAX = dict(jax=jax, jnp=jnp, stax=jstax, optimizers=jopt, random=jax.random,
           logsumexp=jax.scipy.special.logsumexp)
XF = dict(jax=xform, jnp=xnp, stax=xstax, optimizers=xopt, random=xform.random,
          logsumexp=xform.scipy.special.logsumexp)


def _leaves_close(a, b, rtol=1e-5, atol=1e-6):
    la, lb = jax.tree.leaves(a), xform.tree.leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=rtol, atol=atol)


# ----------------------------------------------------------------- optimizers

OPTS = [("sgd", (0.1,)), ("momentum", (0.1, 0.9)), ("nesterov", (0.1, 0.9)),
        ("adagrad", (0.1,)), ("rmsprop", (0.05,)), ("rmsprop_momentum", (0.05,)),
        ("adam", (0.05,)), ("adamax", (0.05,))]


@pytest.mark.parametrize("name,args", OPTS)
def test_optimizers_match_jax(name, args):
    params = {"a": np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2),
              "b": [np.arange(3.0, dtype=np.float32)]}
    results = []
    for m in (JAX, XF):
        init, update, get_params = getattr(m["optimizers"], name)(*args)
        np_ = m["jnp"]
        loss = lambda p: sum(np_.sum(np_.sin(l) * l) for l in m["jax"].tree.leaves(p))  # noqa
        step = m["jax"].jit(lambda i, s: update(i, m["jax"].grad(loss)(get_params(s)), s))
        s = init(params)
        for i in range(6):
            s = step(i, s)
        results.append(get_params(s))
    _leaves_close(*results)


def test_sm3_schedules_and_utilities():
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    outs = []
    for m in (JAX, XF):
        o = m["optimizers"]
        init, update, get_params = o.sm3(o.exponential_decay(0.1, 2, 0.5))
        s = init(x)
        for i in range(4):
            s = update(i, m["jnp"].cos(get_params(s)), s)
        outs.append(get_params(s))
    _leaves_close(*outs)
    for sched in (("constant", (0.3,)), ("exponential_decay", (0.1, 3, 0.5)),
                  ("inverse_time_decay", (0.1, 3, 0.5)),
                  ("inverse_time_decay", (0.1, 3, 0.5, True)),
                  ("polynomial_decay", (0.1, 5, 0.01, 2.0)),
                  ("piecewise_constant", ([2, 5], [0.1, 0.01, 0.001]))):
        fj, fx = getattr(jopt, sched[0])(*sched[1]), getattr(xopt, sched[0])(*sched[1])
        for i in range(8):
            np.testing.assert_allclose(float(fx(i)), float(fj(i)), rtol=1e-6)
    with pytest.raises(ValueError):
        xopt.piecewise_constant([1, 2], [0.1])
    g = {"w": np.full((2, 2), 3.0, np.float32), "b": np.full(2, 4.0, np.float32)}
    np.testing.assert_allclose(float(xopt.l2_norm(g)), float(jopt.l2_norm(g)), rtol=1e-6)
    _leaves_close(jopt.clip_grads(g, 1.0), xopt.clip_grads(g, 1.0))
    _leaves_close(jopt.clip_grads(g, 100.0), xopt.clip_grads(g, 100.0))
    # unpack / pack round trip (e.g. through pickle)
    init, update, get_params = xopt.adam(0.1)
    s = update(0, g, init(g))
    s2 = xopt.pack_optimizer_state(pickle.loads(pickle.dumps(xopt.unpack_optimizer_state(s))))
    for a, b in zip(xform.tree.leaves(s), xform.tree.leaves(s2)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert s2.tree_def == s.tree_def and s2.subtree_defs == s.subtree_defs
    with pytest.raises(TypeError):
        update(1, [1.0], s)


# ----------------------------------------------------------------- stax


def _net(s):
    return s.serial(s.Conv(4, (3, 3), padding="SAME"), s.BatchNorm(), s.Relu,
                    s.MaxPool((2, 2), (2, 2)), s.AvgPool((2, 2), padding="SAME"),
                    s.SumPool((1, 1)), s.FanOut(2), s.parallel(s.Identity, s.Tanh),
                    s.FanInSum, s.ConvTranspose(3, (2, 2), (2, 2)),
                    s.FanOut(2), s.parallel(s.Elu, s.Gelu), s.FanInConcat(-1),
                    s.Flatten, s.Dense(10), s.Dropout(0.9), s.LogSoftmax)


def test_stax_small_network_matches_jax():
    x = np.random.RandomState(1).randn(3, 6, 6, 2).astype(np.float32)
    outs = []
    for m in (JAX, XF):
        s = m["stax"]
        init, apply = s.serial(s.Conv(3, (2, 2)), s.BatchNorm(), s.Relu, s.MaxPool((2, 2)),
                               s.Flatten, s.Dense(4), s.LogSoftmax)
        shape, params = init(m["random"].PRNGKey(5), (-1, 6, 6, 2))
        outs.append((shape, params, apply(params, x)))
    assert repr(outs[1][0]) == repr(outs[0][0])   # (0, 4): JAX's MaxPool turns -1 into 0
    _leaves_close(outs[0][1], outs[1][1], rtol=0, atol=0)     # same keys: same parameters
    np.testing.assert_allclose(np.asarray(outs[1][2]), np.asarray(outs[0][2]), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.slow
def test_stax_network_matches_jax():
    x = np.random.RandomState(0).randn(2, 8, 8, 1).astype(np.float32)
    outs = []
    for m in (JAX, XF):
        init, apply = _net(m["stax"])
        shape, params = init(m["random"].PRNGKey(0), (2, 8, 8, 1))
        y = m["jax"].jit(lambda p, x, k: apply(p, x, rng=k))(params, x, m["random"].PRNGKey(3))
        outs.append((shape, params, y))
    assert tuple(outs[1][0]) == tuple(int(d) for d in outs[0][0])
    _leaves_close(outs[0][1], outs[1][1], rtol=0, atol=0)     # same keys: same parameters
    np.testing.assert_allclose(np.asarray(outs[1][2]), np.asarray(outs[0][2]), rtol=1e-5,
                               atol=1e-5)
    with pytest.raises(ValueError, match="PRNG key"):
        xstax.Dropout(0.5)[1]((), np.ones(3))


# ----------------------------------------------------------------- the MNIST examples


def _digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    images = (d.data / 16.0).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[d.target]
    return images[:1500], labels[:1500], images[1500:], labels[1500:]


def mnist_classifier(m, num_epochs):
    """JAX's examples/mnist_classifier.py (stax + optimizers.momentum), names from ``m``."""
    jit, grad, random = m["jax"].jit, m["jax"].grad, m["random"]
    jnp_, optimizers, stax = m["jnp"], m["optimizers"], m["stax"]
    Dense, Relu, LogSoftmax = stax.Dense, stax.Relu, stax.LogSoftmax

    def loss(params, batch):
        inputs, targets = batch
        preds = predict(params, inputs)
        return -jnp_.mean(jnp_.sum(preds * targets, axis=1))

    def accuracy(params, batch):
        inputs, targets = batch
        target_class = jnp_.argmax(targets, axis=1)
        predicted_class = jnp_.argmax(predict(params, inputs), axis=1)
        return jnp_.mean(predicted_class == target_class)

    init_random_params, predict = stax.serial(
        Dense(1024), Relu, Dense(1024), Relu, Dense(10), LogSoftmax)

    rng = random.key(0)
    step_size = 0.001
    batch_size = 128
    momentum_mass = 0.9
    train_images, train_labels, test_images, test_labels = _digits()
    num_train = train_images.shape[0]
    num_complete_batches, leftover = divmod(num_train, batch_size)
    num_batches = num_complete_batches + bool(leftover)

    def data_stream():
        rng = npr.RandomState(0)
        while True:
            perm = rng.permutation(num_train)
            for i in range(num_batches):
                batch_idx = perm[i * batch_size:(i + 1) * batch_size]
                yield train_images[batch_idx], train_labels[batch_idx]
    batches = data_stream()

    opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=momentum_mass)

    @jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, grad(loss)(params, batch), opt_state)

    _, init_params = init_random_params(rng, (-1, 8 * 8))
    opt_state = opt_init(init_params)
    itercount = itertools.count()
    history = []
    for epoch in range(num_epochs):
        for _ in range(num_batches):
            opt_state = update(next(itercount), opt_state, next(batches))
        params = get_params(opt_state)
        history.append((float(loss(params, (train_images, train_labels))),
                        float(accuracy(params, (train_images, train_labels))),
                        float(accuracy(params, (test_images, test_labels)))))
    return history


def mnist_classifier_fromscratch(m, num_epochs):
    """JAX's examples/mnist_classifier_fromscratch.py, names from ``m``."""
    jit, grad, jnp_, logsumexp = m["jax"].jit, m["jax"].grad, m["jnp"], m["logsumexp"]

    def init_random_params(scale, layer_sizes, rng=npr.RandomState(0)):
        return [(scale * rng.randn(m_, n), scale * rng.randn(n))
                for m_, n, in zip(layer_sizes[:-1], layer_sizes[1:])]

    def predict(params, inputs):
        activations = inputs
        for w, b in params[:-1]:
            outputs = jnp_.dot(activations, w) + b
            activations = jnp_.tanh(outputs)
        final_w, final_b = params[-1]
        logits = jnp_.dot(activations, final_w) + final_b
        return logits - logsumexp(logits, axis=1, keepdims=True)

    def loss(params, batch):
        inputs, targets = batch
        preds = predict(params, inputs)
        return -jnp_.mean(jnp_.sum(preds * targets, axis=1))

    def accuracy(params, batch):
        inputs, targets = batch
        target_class = jnp_.argmax(targets, axis=1)
        predicted_class = jnp_.argmax(predict(params, inputs), axis=1)
        return jnp_.mean(predicted_class == target_class)

    layer_sizes = [64, 1024, 1024, 10]
    param_scale = 0.1
    step_size = 0.001
    batch_size = 128
    train_images, train_labels, test_images, test_labels = _digits()
    num_train = train_images.shape[0]
    num_complete_batches, leftover = divmod(num_train, batch_size)
    num_batches = num_complete_batches + bool(leftover)

    def data_stream():
        rng = npr.RandomState(0)
        while True:
            perm = rng.permutation(num_train)
            for i in range(num_batches):
                batch_idx = perm[i * batch_size:(i + 1) * batch_size]
                yield train_images[batch_idx], train_labels[batch_idx]
    batches = data_stream()

    @jit
    def update(params, batch):
        grads = grad(loss)(params, batch)
        return [(w - step_size * dw, b - step_size * db)
                for (w, b), (dw, db) in zip(params, grads)]

    params = init_random_params(param_scale, layer_sizes)
    history = []
    for epoch in range(num_epochs):
        for _ in range(num_batches):
            params = update(params, next(batches))
        history.append((float(loss(params, (train_images, train_labels))),
                        float(accuracy(params, (train_images, train_labels))),
                        float(accuracy(params, (test_images, test_labels)))))
    return history


@pytest.mark.parametrize("example,epochs", [
    (mnist_classifier_fromscratch, 1),
    pytest.param(mnist_classifier, 1, marks=pytest.mark.slow),   # stax: covered fast above
    pytest.param(mnist_classifier, 10, marks=pytest.mark.slow),
    pytest.param(mnist_classifier_fromscratch, 10, marks=pytest.mark.slow)])
def test_mnist_examples_same_losses_as_jax(example, epochs):
    want = example(JAX, epochs)
    got = example(XF, epochs)
    np.testing.assert_allclose([h[0] for h in got], [h[0] for h in want], rtol=1e-4)
    np.testing.assert_allclose([h[1:] for h in got], [h[1:] for h in want], atol=2e-3)
    assert got[-1][0] < got[0][0] or epochs == 1

"""optax on a small MLP for 20 jitted steps, written against JAX's public API only.

Imported by tests/test_optax.py twice: with the real JAX (in the test process)
and with ``import jax`` aliased to xform (``xform.compat.alias_jax``, in a subprocess:
``python tests/_optax_cases.py OUT.npz``).  Both runs write the same arrays.
"""
import sys

import numpy as np

STEPS = 20


def data():
    rng = np.random.RandomState(0)
    params = {"w1": (rng.randn(8, 16) * 0.3).astype(np.float32),
              "b1": np.zeros(16, np.float32),
              "w2": (rng.randn(16, 3) * 0.3).astype(np.float32),
              "b2": np.zeros(3, np.float32)}
    x = rng.randn(32, 8).astype(np.float32)
    y = rng.randint(0, 3, 32).astype(np.int32)
    t = rng.randn(32, 3).astype(np.float32)
    return params, x, y, t


def cases(optax, jnp):
    sched = optax.warmup_cosine_decay_schedule(0.0, 1e-2, 5, 20, 1e-4)
    return {
        "sgd_momentum": (optax.sgd(0.1, momentum=0.9), "xent"),
        "sgd_nesterov": (optax.sgd(0.05, momentum=0.9, nesterov=True), "xent"),
        "adam": (optax.adam(1e-2), "xent"),
        "adamw": (optax.adamw(1e-2, weight_decay=1e-2), "xent"),
        "adagrad": (optax.adagrad(1e-1), "xent"),
        "rmsprop": (optax.rmsprop(1e-2, momentum=0.5), "xent"),
        "lamb": (optax.lamb(1e-2), "xent"),
        "yogi": (optax.yogi(1e-2), "xent"),
        "adafactor": (optax.adafactor(1e-2), "xent"),
        "chain_clip_adam": (optax.chain(optax.clip_by_global_norm(0.5), optax.adam(1e-2)),
                            "xent"),
        "adam_warmup_cosine": (optax.adam(sched), "xent"),
        "sgd_exp_decay": (optax.sgd(optax.exponential_decay(0.1, 5, 0.5)), "xent"),
        "multisteps_adam": (optax.MultiSteps(optax.adam(1e-2), every_k_schedule=3), "xent"),
        "apply_if_finite": (optax.apply_if_finite(optax.sgd(0.1), max_consecutive_errors=3),
                            "xent_nan"),
        "adam_l2": (optax.adam(1e-2), "l2"),
        "adam_huber": (optax.adam(1e-2), "huber"),
        "adam_sigmoid_bce": (optax.adam(1e-2), "bce"),
        "adam_logistic_onehot": (optax.adam(1e-2), "xent_onehot"),
        # beyond the common set
        "noisy_sgd": (optax.noisy_sgd(1e-2, key=0), "xent"),      # xform.random == JAX's bits
        "lion": (optax.lion(1e-3), "xent"),
        "nadam": (optax.nadam(1e-2), "xent"),
        "radam": (optax.radam(1e-2), "xent"),
        "adabelief": (optax.adabelief(1e-2), "xent"),
        "amsgrad": (optax.amsgrad(1e-2), "xent"),
        "multi_transform": (optax.multi_transform(
            {"a": optax.adam(1e-2), "b": optax.sgd(1e-2)},
            lambda p: {k: "a" if k.startswith("w") else "b" for k in p}), "xent"),
        "inject_hyperparams": (optax.inject_hyperparams(optax.adam)(learning_rate=1e-2),
                               "xent"),
        "schedule_free_adamw": (optax.contrib.schedule_free_adamw(1e-2), "xent"),
        "zero_nans_sgd": (optax.chain(optax.zero_nans(), optax.sgd(0.1)), "xent"),
    }


def run(jax, optax, names=None):
    jnp = jax.numpy
    params0, x, y, t = data()

    def predict(p, x):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return h @ p["w2"] + p["b2"]

    def loss_for(kind):
        def loss(p, x, y, t, step):
            out = predict(p, x)
            if kind in ("xent", "xent_nan"):
                v = optax.softmax_cross_entropy_with_integer_labels(out, y).mean()
                if kind == "xent_nan":       # non-finite gradients at steps 5 and 6
                    v = v * jnp.where((step == 5) | (step == 6), jnp.nan, 1.0)
                return v
            if kind == "xent_onehot":
                return optax.softmax_cross_entropy(out, jax.nn.one_hot(y, 3)).mean()
            if kind == "l2":
                return optax.l2_loss(out, t).mean()
            if kind == "huber":
                return optax.huber_loss(out, t, delta=0.5).mean()
            if kind == "bce":
                return optax.sigmoid_binary_cross_entropy(out, (t > 0).astype(out.dtype)).mean()
            raise ValueError(kind)
        return loss

    results = {}
    for name, (opt, kind) in cases(optax, jnp).items():
        if names and name not in names:
            continue
        loss = loss_for(kind)

        @jax.jit
        def step(p, s, i):
            v, g = jax.value_and_grad(loss)(p, x, y, t, i)
            u, s = opt.update(g, s, p)
            return optax.apply_updates(p, u), s, v

        p = jax.tree.map(jnp.asarray, params0)
        s = opt.init(p)
        losses = []
        for i in range(STEPS):
            p, s, v = step(p, s, i)
            losses.append(float(v))
        for k in sorted(p):
            results[f"{name}/{k}"] = np.asarray(p[k])
        results[f"{name}/losses"] = np.asarray(losses, np.float32)
    return results


if __name__ == "__main__":
    import xform
    xform.compat.alias_jax()
    import jax
    import optax
    assert getattr(jax, "__xform_alias__", False)
    np.savez(sys.argv[1], **run(jax, optax, sys.argv[2:] or None))

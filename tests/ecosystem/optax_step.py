"""optax's README usage: an Adam training loop of a linear model."""
import jax
import jax.numpy as jnp
import optax

from _report import report

key = jax.random.key(0)
kx, kw = jax.random.split(key)
x = jax.random.normal(kx, (32, 4))
w_true = jnp.arange(4.0)
y = x @ w_true
params = {"w": jnp.zeros(4), "b": jnp.zeros(())}


def loss(p):
    return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)


opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(0.1))
state = opt.init(params)


@jax.jit
def step(p, s):
    l, g = jax.value_and_grad(loss)(p)
    u, s = opt.update(g, s, p)
    return optax.apply_updates(p, u), s, l


losses = []
for _ in range(20):
    params, state, l = step(params, state)
    losses.append(l)
report(losses=jnp.stack(losses), w=params["w"], b=params["b"])

"""haiku's README usage: hk.transform of an MLP, init/apply, grad, an SGD step."""
import haiku as hk
import jax
import jax.numpy as jnp

from _report import report


def forward(x):
    mlp = hk.nets.MLP([16, 8, 2])
    return mlp(x)


f = hk.without_apply_rng(hk.transform(forward))
x = jax.random.normal(jax.random.PRNGKey(0), (8, 5))
params = f.init(jax.random.PRNGKey(42), x)


def loss_fn(p):
    return jnp.mean(f.apply(p, x) ** 2)


@jax.jit
def update(p):
    loss, g = jax.value_and_grad(loss_fn)(p)
    return jax.tree_util.tree_map(lambda a, b: a - 0.05 * b, p, g), loss


losses = []
for _ in range(5):
    params, loss = update(params)
    losses.append(loss)
report(losses=jnp.stack(losses), out=f.apply(params, x), w=params["mlp/~/linear_0"]["w"])

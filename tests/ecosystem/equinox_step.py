"""equinox's README usage: a Module, filter_jit, filter_value_and_grad, an SGD step."""
import equinox as eqx
import jax
import jax.numpy as jnp

from _report import report


class Linear(eqx.Module):
    weight: jax.Array
    bias: jax.Array

    def __init__(self, in_size, out_size, key):
        wkey, bkey = jax.random.split(key)
        self.weight = jax.random.normal(wkey, (out_size, in_size))
        self.bias = jax.random.normal(bkey, (out_size,))

    def __call__(self, x):
        return self.weight @ x + self.bias


@eqx.filter_jit
@eqx.filter_value_and_grad
def loss_fn(model, x, y):
    pred_y = jax.vmap(model)(x)
    return jnp.mean((y - pred_y) ** 2)


k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
model = Linear(2, 3, key=k1)
x = jax.random.normal(k2, (100, 2))
y = jax.random.normal(k3, (100, 3))
losses = []
for _ in range(5):
    loss, grads = loss_fn(model, x, y)
    model = jax.tree_util.tree_map(lambda m, g: m - 0.1 * g, model, grads)
    losses.append(loss)
mlp = eqx.nn.MLP(2, 3, width_size=8, depth=2, key=k1)
report(losses=jnp.stack(losses), weight=model.weight, bias=model.bias,
       mlp=jax.vmap(mlp)(x))

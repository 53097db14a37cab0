"""flax.nnx's README usage: a Module with Linear/BatchNorm/Dropout, nnx.Optimizer, a
jitted training step."""
import jax
import jax.numpy as jnp
import optax
from flax import nnx

from _report import report


class Model(nnx.Module):
    def __init__(self, din, dmid, dout, rngs: nnx.Rngs):
        self.linear = nnx.Linear(din, dmid, rngs=rngs)
        self.bn = nnx.BatchNorm(dmid, rngs=rngs)
        self.linear_out = nnx.Linear(dmid, dout, rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.bn(self.linear(x)))
        return self.linear_out(x)


model = Model(2, 16, 3, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


x = jax.random.normal(jax.random.key(1), (16, 2))
y = jax.random.normal(jax.random.key(2), (16, 3))
losses = [train_step(model, optimizer, x, y) for _ in range(5)]
model.eval()
report(losses=jnp.stack(losses), out=model(x), kernel=model.linear.kernel[...])

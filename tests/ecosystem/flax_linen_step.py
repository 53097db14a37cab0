"""flax.linen's README usage: an MLP with nn.compact, init/apply, an optax step."""
from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from _report import report


class MLP(nn.Module):
    features: Sequence[int]

    @nn.compact
    def __call__(self, x):
        for feat in self.features[:-1]:
            x = nn.relu(nn.Dense(feat)(x))
        x = nn.LayerNorm()(x)
        return nn.Dense(self.features[-1])(x)


model = MLP([12, 8, 4])
x = jax.random.uniform(jax.random.key(0), (4, 10))
params = model.init(jax.random.key(1), x)
tx = optax.sgd(0.05)
state = tx.init(params)


@jax.jit
def step(params, state):
    loss, g = jax.value_and_grad(lambda p: jnp.mean(model.apply(p, x) ** 2))(params)
    u, state = tx.update(g, state)
    return optax.apply_updates(params, u), state, loss


losses = []
for _ in range(5):
    params, state, loss = step(params, state)
    losses.append(loss)
report(losses=jnp.stack(losses), out=model.apply(params, x),
       kernel=params["params"]["Dense_0"]["kernel"])

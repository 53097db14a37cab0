"""flax.nnx's transforms and functional API as its docs use them: nnx.Rngs streams,
split/merge/state/update, nnx.grad, nnx.vmap over an ensemble created with split_rngs,
nnx.scan over stacked layers, nnx.cond, nnx.remat, nnx.jit with Dropout in train mode."""
import jax
import jax.numpy as jnp
from flax import nnx

from _report import report

rngs = nnx.Rngs(0, dropout=1)
r_default, r_dropout = rngs.params(), rngs.dropout()
r_normal = rngs.params.normal((3,))


class MLP(nnx.Module):
    def __init__(self, din, dout, rngs):
        self.linear = nnx.Linear(din, dout, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)
        self.count = nnx.Variable(jnp.array(0))

    def __call__(self, x):
        self.count[...] += 1
        return self.dropout(nnx.gelu(self.linear(x)))


x = jax.random.normal(jax.random.key(3), (4, 3))
model = MLP(3, 5, rngs=nnx.Rngs(0, dropout=1))

# split / merge / state / update
graphdef, params, rest = nnx.split(model, nnx.Param, ...)
doubled = jax.tree.map(lambda p: 2 * p, params)
model2 = nnx.merge(graphdef, doubled, rest)
model2.eval()
out_merged = model2(x)
state = nnx.state(model, nnx.Param)
nnx.update(model, jax.tree.map(lambda p: p + 1, state))
n_params = sum(p.size for p in jax.tree.leaves(nnx.state(model, nnx.Param)))

# nnx.grad with respect to Params
model.eval()
grads = nnx.grad(lambda m: jnp.sum(m(x) ** 2))(model)


# nnx.jit with Dropout in train mode (rng state advances in place), and a counter
@nnx.jit
def apply(m, x):
    return m(x)


model.train()
drop1, drop2 = apply(model, x), apply(model, x)


# nnx.vmap: an ensemble created with split rngs, applied over its axis
@nnx.split_rngs(splits=4)
@nnx.vmap(in_axes=(0,), out_axes=0)
def make_ensemble(rngs):
    return nnx.Linear(3, 2, rngs=rngs)


ensemble = make_ensemble(nnx.Rngs(7))


@nnx.vmap(in_axes=(0, None), out_axes=0)
def ens_apply(m, x):
    return m(x)


ens_out = ens_apply(ensemble, x)


# nnx.scan over stacked layers
class Block(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 3, rngs=rngs)

    def __call__(self, x):
        return nnx.tanh(self.linear(x))


@nnx.split_rngs(splits=3)
@nnx.vmap(in_axes=(0,), out_axes=0)
def make_stack(rngs):
    return Block(rngs)


stack = make_stack(nnx.Rngs(11))


@nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
def run_stack(block, h):
    return block(h)


scan_out = run_stack(stack, x)
scan_grads = nnx.grad(lambda s: jnp.sum(run_stack(s, x)))(stack)

# nnx.cond and nnx.remat
lin = nnx.Linear(3, 3, rngs=nnx.Rngs(5))
cond_out = nnx.cond(jnp.sum(x) > 0, lambda m, v: m(v), lambda m, v: -m(v), lin, x)
remat_grads = nnx.grad(lambda m: jnp.sum(nnx.remat(lambda m, v: m(v))(m, x) ** 2))(lin)

report(
    r_default=jax.random.key_data(r_default), r_dropout=jax.random.key_data(r_dropout),
    r_normal=r_normal, out_merged=out_merged, n_params=n_params,
    grad_kernel=grads.linear.kernel[...], grad_bias=grads.linear.bias[...],
    drop1=drop1, drop2=drop2, count=model.count[...],
    ens_out=ens_out, ens_kernel=ensemble.kernel[...],
    scan_out=scan_out, scan_grad=scan_grads.linear.kernel[...],
    cond_out=cond_out, remat_grad=remat_grads.kernel[...],
)

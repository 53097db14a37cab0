"""chex's README usage: dataclasses as pytrees, shape/tree assertions, chexify."""
import chex
import jax
import jax.numpy as jnp

from _report import report


@chex.dataclass
class Params:
    w: chex.Array
    b: chex.Array


p = Params(w=jnp.ones((3, 2)), b=jnp.zeros(2))
chex.assert_shape(p.w, (3, 2))
chex.assert_rank([p.w, p.b], [2, 1])
chex.assert_type(p.w, float)
chex.assert_trees_all_close(p, Params(w=jnp.ones((3, 2)), b=jnp.zeros(2)))
doubled = jax.tree_util.tree_map(lambda a: 2 * a, p)
try:
    chex.assert_shape(p.b, (3,))
    raised = 0.0
except AssertionError:
    raised = 1.0


@jax.jit
def f(params, x):
    chex.assert_equal_shape([params.b, x])
    return jnp.sum(params.w @ x + 1)


out = f(p, jnp.arange(2.0))
chexified = chex.chexify(lambda x: jnp.sqrt(x))(jnp.arange(3.0))
chex.block_until_chexify_assertions_complete()
report(w=doubled.w, raised=raised, out=out, chexified=chexified)

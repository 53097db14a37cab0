"""jaxtyping's README usage: array annotations checked at run time by beartype through
``jaxtyped(typechecker=...)``, shape variables bound across arguments, jit and vmap of
annotated functions, and the errors a mismatch raises."""
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray, PyTree, jaxtyped

from _report import report

from beartype import beartype as typechecker


@jaxtyped(typechecker=typechecker)
def matrix_multiply(x: Float[Array, "dim1 dim2"],
                    y: Float[Array, "dim2 dim3"]) -> Float[Array, "dim1 dim3"]:
    return x @ y


@jaxtyped(typechecker=typechecker)
def batch_outer(x: Float[Array, "*batch n"], y: Float[Array, "*batch m"]
                ) -> Float[Array, "*batch n m"]:
    return x[..., :, None] * y[..., None, :]


@jaxtyped(typechecker=typechecker)
def sample(key: PRNGKeyArray, n: int) -> Float[Array, " {n}"]:
    return jax.random.normal(key, (n,))


x = jnp.arange(6.0).reshape(2, 3)
y = jnp.ones((3, 4))
mm = matrix_multiply(x, y)
mm_jit = jax.jit(matrix_multiply)(x, y)
bo = batch_outer(jnp.ones((5, 2)), jnp.arange(15.0).reshape(5, 3))
bo_vmap = jax.vmap(batch_outer)(jnp.ones((5, 2)), jnp.arange(15.0).reshape(5, 3))
s = sample(jax.random.key(0), 4)

errors = []
for bad in (lambda: matrix_multiply(x, jnp.ones((2, 4))),          # dim2 mismatch
            lambda: matrix_multiply(jnp.ones(3), y),                # rank
            lambda: matrix_multiply(jnp.ones((2, 3), jnp.int32), y),  # dtype
            lambda: jax.jit(matrix_multiply)(x, jnp.ones((4, 4))),
            lambda: sample(jax.random.key(0), 3.5)):
    try:
        bad()
        errors.append(0)
    except Exception:     # jaxtyping's TypeCheckError
        errors.append(1)

checks = [isinstance(mm, Float[Array, "2 4"]), isinstance(mm, Int[Array, "2 4"]),
          isinstance(jnp.zeros((2, 3)), Float[Array, "_ 3"]),
          isinstance(jnp.zeros((2, 3), jnp.int32), Int[Array, "..."]),
          isinstance({"a": jnp.zeros(2)}, PyTree[Float[Array, "2"]]),
          isinstance(jax.random.key(1), PRNGKeyArray)]
report(mm=mm, mm_jit=mm_jit, bo=bo, bo_vmap=bo_vmap, s=s, errors=jnp.array(errors),
       checks=jnp.array(checks))

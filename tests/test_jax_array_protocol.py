"""Objects with ``__jax_array__`` (flax.nnx's Variables are the common case: a pytree
node that stands for the array it holds) given to ``numpy`` functions, operators, ``lax``
and transformations, each compared with JAX 0.10.2 in the same process: the ``numpy``
functions, ``Array``'s operators and ``lax.convert_element_type`` convert them; ``lax``
operations and abstractification (``jit``'s arguments, ``typeof``) raise JAX's
``ValueError``."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform import lax as xlax


class Boxed:
    """Stands for ``value`` through ``__jax_array__``; registered as a pytree in both
    libraries (as nnx's Variable is), so it crosses jit/vmap/grad as its leaf."""

    def __init__(self, value):
        self.value = value

    def __jax_array__(self):
        return self.value


class Opaque:
    """Has ``__jax_array__`` but is no pytree."""

    def __init__(self, value):
        self.value = value

    def __jax_array__(self):
        return self.value


for _lib in (jax, xform):
    _lib.tree_util.register_pytree_node(Boxed, lambda b: ((b.value,), None),
                                        lambda _, c: Boxed(c[0]))

X = np.array([0.5, -1.0, 2.0], np.float32)
M = np.arange(6, dtype=np.float32).reshape(2, 3)

# name -> f(numpy module, boxed array); each runs with jax.numpy and xform.numpy
CASES = {
    "sin": lambda n, b: n.sin(b),
    "tanh": lambda n, b: n.tanh(b),
    "square": lambda n, b: n.square(b),
    "isfinite": lambda n, b: n.isfinite(b),
    "add_scalar": lambda n, b: n.add(b, 1),
    "add_both": lambda n, b: n.add(b, b),
    "maximum": lambda n, b: n.maximum(b, 0.75),
    "where": lambda n, b: n.where(True, b, 0),
    "clip": lambda n, b: n.clip(b, 0, 1),
    "sum": lambda n, b: n.sum(b),
    "mean": lambda n, b: n.mean(b),
    "any": lambda n, b: n.any(b),
    "cumsum": lambda n, b: n.cumsum(b),
    "dot": lambda n, b: n.dot(b, b),
    "matmul": lambda n, b: n.matmul(b, b),
    "outer": lambda n, b: n.outer(b, b),
    "einsum": lambda n, b: n.einsum("i,i", b, b),
    "norm": lambda n, b: n.linalg.norm(b),
    "take": lambda n, b: n.take(b, 1),
    "reshape": lambda n, b: n.reshape(b, (3, 1)),
    "transpose": lambda n, b: n.transpose(b),
    "expand_dims": lambda n, b: n.expand_dims(b, 0),
    "concatenate": lambda n, b: n.concatenate([b, b]),
    "stack": lambda n, b: n.stack([b, b]),
    "pad": lambda n, b: n.pad(b, 1),
    "asarray": lambda n, b: n.asarray(b),
    "array_of_list": lambda n, b: n.array([b, b]),
    "zeros_like": lambda n, b: n.zeros_like(b),
    "full_like": lambda n, b: n.full_like(b, 2),
    "astype": lambda n, b: n.astype(b, n.int32),
    "allclose": lambda n, b: n.allclose(b, b),
    "linspace": lambda n, b: n.linspace(0, Boxed(n.float32(1)), 3),
    "shape": lambda n, b: np.asarray(n.shape(b)),
    "ndim": lambda n, b: np.asarray(n.ndim(b)),
    "size": lambda n, b: np.asarray(n.size(b)),
    "iscomplexobj": lambda n, b: np.asarray(n.iscomplexobj(b)),
    "array_add_op": lambda n, b: n.asarray(X) + b,
    "array_mul_op": lambda n, b: n.asarray(X) * b,
    "array_eq_op": lambda n, b: n.asarray(X) == b,
    "array_rsub_op": lambda n, b: n.asarray(X).__rsub__(b),
    "at_set": lambda n, b: n.zeros(3).at[0].set(Boxed(n.float32(1))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_numpy_functions_convert_jax_array_objects_as_jax(name):
    f = CASES[name]
    want = f(jnp, Boxed(jnp.asarray(X)))
    got = f(xnp, Boxed(xnp.asarray(X)))
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


@pytest.mark.parametrize("name", ["sin", "sum", "dot", "concatenate", "where"])
@pytest.mark.parametrize("transform", ["jit", "vmap", "grad_of_sum"])
def test_jax_array_pytree_through_transformations_as_jax(name, transform):
    f = CASES[name]

    def run(lib, n):
        g = lambda b: f(n, b)
        if transform == "jit":
            return lib.jit(g)(Boxed(n.asarray(X)))
        if transform == "vmap":
            return lib.vmap(g)(Boxed(n.asarray(M)))
        out = lib.grad(lambda b: n.sum(g(b)))(Boxed(n.asarray(X)))
        return out.value     # the gradient is a Boxed, as the argument is

    want, got = run(jax, jnp), run(xform, xnp)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_convert_element_type_converts_jax_array_objects_as_jax():
    want = jax.lax.convert_element_type(Opaque(jnp.asarray(X)), jnp.int32)
    got = xlax.convert_element_type(Opaque(xnp.asarray(X)), xnp.int32)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("op", [
    lambda l, b: l.lax.sin(b),
    lambda l, b: l.lax.add(b, b),
    lambda l, b: l.lax.add(b, 1.0),
    lambda l, b: l.lax.reduce_max(b, (0,)),
    lambda l, b: l.typeof(b),
    lambda l, b: l.jit(lambda a: a)(b),
], ids=["lax.sin", "lax.add", "lax.add_scalar", "lax.reduce_max", "typeof", "jit_argument"])
def test_lax_and_abstractification_refuse_jax_array_objects_as_jax(op):
    with pytest.raises(ValueError, match="Triggering __jax_array__"):
        op(jax, Opaque(jnp.asarray(X)))
    with pytest.raises(ValueError, match="Triggering __jax_array__"):
        op(xform, Opaque(xnp.asarray(X)))


def test_operator_defers_to_objects_without_jax_array():
    class Other:
        def __radd__(self, a):
            return "radd"

    assert jnp.asarray(X) + Other() == "radd"
    assert xnp.asarray(X) + Other() == "radd"

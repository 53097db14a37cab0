"""Behaviours found by running flax.nnx's own test suite on xform
(tools/library_tests/run.py flax), each written in plain xform API and compared with
real JAX in the same process."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp


class _Box:
    """A pytree node around one array (as an nnx Variable is)."""

    def __init__(self, v):
        self.v = v


for _lib in (jax, xform):
    _lib.tree_util.register_pytree_node(_Box, lambda b: ((b.v,), None),
                                        lambda _, c: _Box(c[0]))


def _custom_vjp_grads(lib, n, bwd_out):
    @lib.custom_vjp
    def f(d, y):
        return (n.sum(d["a"].v * 2.0) + n.sum(d["b"][0].v * d["b"][1].v)) * y

    def fwd(d, y):
        return f(d, y), (d, y)

    def bwd(res, g):
        return bwd_out(n, g)

    f.defvjp(fwd, bwd)
    d = {"a": _Box(n.arange(3.0)), "b": (_Box(n.ones(2)), _Box(n.ones(2)))}
    return lib.grad(f, argnums=(0, 1))(d, 2.0)


@pytest.mark.parametrize("bwd_out", [
    # a plain array where the argument holds a node around one array; None for a subtree
    lambda n, g: ({"a": g * 3.0 * n.ones(3), "b": None}, g * 5.0),
    lambda n, g: ({"a": g * n.ones(3), "b": (g * n.ones(2), None)}, None),
    lambda n, g: ({"a": _Box(g * n.ones(3)), "b": (None, _Box(g * n.ones(2)))}, g),
], ids=["array_for_node", "partial_none", "full_structure"])
def test_custom_vjp_bwd_output_may_be_a_pytree_prefix_as_jax(bwd_out):
    want = _custom_vjp_grads(jax, jnp, bwd_out)
    got = _custom_vjp_grads(xform, xnp, bwd_out)
    assert str(xform.tree_util.tree_structure(got)) == str(jax.tree_util.tree_structure(want))
    for g, w in zip(xform.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w))


def test_custom_vjp_bwd_output_that_is_no_prefix_raises_as_jax():
    bad = lambda n, g: ({"a": g, "b": (g, g, g)}, g)
    with pytest.raises(TypeError, match="same container"):
        _custom_vjp_grads(jax, jnp, bad)
    with pytest.raises(TypeError, match="same container"):
        _custom_vjp_grads(xform, xnp, bad)

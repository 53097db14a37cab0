"""``out_sharding=`` of the ``random`` samplers, against JAX: every sampler takes it
(flax.nnx's Dropout passes ``typeof(x).sharding``), the values do not depend on it, and
a concrete sharding lays the result out."""
import inspect

import jax
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform.sharding import Mesh, NamedSharding, PartitionSpec as P

JAX_SAMPLERS = sorted(
    n for n in dir(jax.random) if not n.startswith("_") and callable(getattr(jax.random, n))
    and "out_sharding" in inspect.signature(getattr(jax.random, n)).parameters)


def test_every_jax_sampler_with_out_sharding_takes_it():
    assert len(JAX_SAMPLERS) > 25
    for n in JAX_SAMPLERS:
        xp = inspect.signature(getattr(xform.random, n)).parameters
        jp = inspect.signature(getattr(jax.random, n)).parameters
        assert list(xp) == list(jp), n
        assert xp["out_sharding"].kind == jp["out_sharding"].kind, n
        assert xp["out_sharding"].default is None, n


@pytest.mark.parametrize("name,args", [
    ("normal", ((4, 3),)), ("uniform", ((4, 3),)), ("bernoulli", (0.3, (4, 3))),
    ("randint", ((4, 3), 0, 10)), ("gumbel", ((4, 3),)), ("bits", ((4, 3),))])
def test_typeof_sharding_outside_a_mesh_changes_nothing(name, args):
    x = xnp.ones((4, 3))
    want = getattr(jax.random, name)(jax.random.key(0), *args,
                                     out_sharding=jax.typeof(jax.numpy.ones((4, 3))).sharding)
    got = getattr(xform.random, name)(xform.random.key(0), *args,
                                      out_sharding=xform.typeof(x).sharding)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # and the same under jit (flax calls it inside nnx.jit)
    got_j = xform.jit(lambda k, x: getattr(xform.random, name)(
        k, *args, out_sharding=xform.typeof(x).sharding))(xform.random.key(0), x)
    np.testing.assert_array_equal(np.asarray(got_j), np.asarray(want))


def test_concrete_sharding_lays_out_the_result():
    mesh = Mesh(np.array(xform.devices()[:1]), ("x",))
    s = NamedSharding(mesh, P("x"))
    got = xform.random.normal(xform.random.key(1), (4,), out_sharding=s)
    np.testing.assert_array_equal(np.asarray(got),
                                  np.asarray(jax.random.normal(jax.random.key(1), (4,))))
    assert got.sharding == s

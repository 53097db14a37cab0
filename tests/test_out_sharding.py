"""``out_sharding=`` of the ``random`` samplers and ``numpy`` functions, against JAX:
every function of JAX's that has it takes it (flax.nnx's Dropout and Einsum pass
``typeof(x).sharding``), the values do not depend on it, and a concrete sharding lays
the result out.  Also: ``jnp.equal``/``array_equal`` of typed PRNG keys (nnx's tests)."""
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


JNP_WITH = sorted(
    n for n in dir(jax.numpy) if not n.startswith("_") and callable(getattr(jax.numpy, n))
    and not isinstance(getattr(jax.numpy, n), type)
    and "out_sharding" in inspect.signature(getattr(jax.numpy, n)).parameters)


def test_every_jnp_function_with_out_sharding_takes_it():
    assert len(JNP_WITH) >= 20
    for n in JNP_WITH:
        xp = inspect.signature(getattr(xnp, n)).parameters
        assert "out_sharding" in xp and xp["out_sharding"].default is None, n
        assert xp["out_sharding"].kind is inspect.Parameter.KEYWORD_ONLY, n


@pytest.mark.parametrize("name,args", [
    ("einsum", ("ab,bc->ac", np.ones((2, 3), np.float32), np.arange(6.0, dtype=np.float32).reshape(3, 2))),
    ("zeros", ((2, 3),)), ("full", ((2,), 3.0)), ("arange", (5,)),
    ("reshape", (np.arange(6.0), (2, 3))), ("dot", (np.ones(3), np.arange(3.0)))])
def test_jnp_out_sharding_outside_a_mesh_changes_nothing(name, args):
    want = getattr(jax.numpy, name)(*args, out_sharding=jax.typeof(jax.numpy.ones(2)).sharding)
    got = getattr(xnp, name)(*args, out_sharding=xform.typeof(xnp.ones(2)).sharding)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_jnp_concrete_out_sharding():
    mesh = Mesh(np.array(xform.devices()[:1]), ("x",))
    s = NamedSharding(mesh, P("x"))
    got = xnp.zeros((4,), out_sharding=s)
    assert got.sharding == s
    np.testing.assert_array_equal(np.asarray(got), np.zeros(4, np.float32))


def test_equal_of_typed_keys_as_jax():
    jk, xk = jax.random.key(0), xform.random.key(0)
    js, xs = jax.random.split(jk, 3), xform.random.split(xk, 3)
    for f in ("equal", "not_equal"):
        np.testing.assert_array_equal(np.asarray(getattr(xnp, f)(xs, xk)),
                                      np.asarray(getattr(jax.numpy, f)(js, jk)))
    assert bool(xnp.array_equal(xs, xs)) == bool(jax.numpy.array_equal(js, js))
    assert bool(xnp.array_equal(xk, xform.random.key(1))) == bool(
        jax.numpy.array_equal(jk, jax.random.key(1)))
    assert bool(xnp.array_equal(xs[0], xs)) == bool(jax.numpy.array_equal(js[0], js))

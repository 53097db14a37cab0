"""Behaviours found by running JAX libraries' own test suites (equinox, haiku) on xform
(tools/library_tests/run.py), each compared with real JAX in the same process."""
import functools

import jax
import numpy as np
import pytest

import xform

TRANSFORMS = ["jit", "grad", "vmap", "value_and_grad", "jacfwd", "jacrev", "hessian",
              "checkpoint"]


class _CallableObject:
    """A callable whose ``__name__`` is None (as an equinox Module instance's is)."""
    __name__ = None
    weight = 2.0

    def __call__(self, x):
        return (self.weight * x ** 2).sum()


def _plain(x):
    """doc of _plain"""
    return (x ** 3).sum()


def _walk(f):
    chain = []
    while hasattr(f, "__wrapped__"):
        f = f.__wrapped__
        chain.append(f)
    return chain


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("fun", [_plain, _CallableObject(), functools.partial(_plain)],
                         ids=["function", "object", "partial"])
def test_transformed_callable_wraps_like_jax(name, fun):
    got, want = getattr(xform, name)(fun), getattr(jax, name)(fun)
    # code walking __wrapped__ (equinox's check for transformed callables stored on a
    # Module) reaches the original callable
    assert [w is fun for w in _walk(got)][-1:] == [w is fun for w in _walk(want)][-1:]
    if name != "jit":      # (JAX rewrites some docstrings; jit is a C++ object)
        for attr in ("__name__", "__qualname__", "__module__"):
            assert getattr(got, attr, None) == getattr(want, attr, None), attr
    x = np.arange(3.0, dtype=np.float32)
    for g, w in zip(jax.tree.leaves(got(x)), jax.tree.leaves(want(x))):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def test_dtypes_bfloat16_is_the_scalar_type():
    # equinox's tests build scalars with jax.dtypes.bfloat16(1)
    assert xform.dtypes.bfloat16 is jax.dtypes.bfloat16
    z = xform.dtypes.bfloat16(1)
    assert type(z) is type(jax.dtypes.bfloat16(1)) and float(z) == 1.0
    assert np.dtype(xform.dtypes.bfloat16) == np.dtype(jax.dtypes.bfloat16)
    assert xform.numpy.zeros(2, xform.dtypes.bfloat16).dtype == jax.numpy.zeros(
        2, jax.dtypes.bfloat16).dtype


@pytest.mark.parametrize("make", ["host", "device"])
def test_copy_of_device_array_survives_donating_the_copy(make):
    # equinox's test_jit donates jnp.copy(a) and then reads a
    def run(lib):
        a = lib.numpy.arange(6.0).reshape(2, 3)
        if make == "device":
            a = lib.jit(lambda x: x * 2)(a)      # held on the device only
        b = lib.numpy.copy(a)
        assert b is not a
        out = lib.jit(lambda x: x + 1, donate_argnums=0)(b)
        return np.asarray(a), np.asarray(out), a.is_deleted()
    for g, w in zip(run(xform), run(jax)):
        np.testing.assert_array_equal(g, w)

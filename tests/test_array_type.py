"""``xform.Array`` as a type, against ``jax.Array``: the interface it declares, unbound
calls, and ``isinstance`` for concrete arrays, tracers and spec'd mocks."""
from unittest import mock

import numpy as np

import jax
import jax.numpy as jnp

import xform
import xform.numpy as xnp


def test_declares_jax_arrays_interface():
    private_runtime = {"__numpy_dtype__", "__weakref__", "_multi_slice", "_split"}
    assert set(dir(jax.Array)) - set(dir(xform.Array)) <= private_runtime


def test_unbound_calls_delegate_to_the_array():
    # (JAX's abstract type raises NotImplementedError here; xform delegates, which gives
    # the bound method's result)
    v = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    x = xnp.asarray(v)
    for name, args in [("sum", ()), ("__getitem__", (1,)), ("reshape", (3, 2)),
                       ("__add__", (1.0,)), ("astype", (np.int32,))]:
        got = getattr(xform.Array, name)(x, *args)
        want = getattr(jnp.asarray(v), name)(*args)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert xform.Array.shape.__get__(x) == (2, 3)


def test_isinstance_like_jax():
    for lib, np_ in ((xform, xnp), (jax, jnp)):
        m = mock.Mock(spec=lib.Array, shape=(2,), __getitem__=lambda s, i: i)
        assert isinstance(m, lib.Array) and m[1] == 1 and m.shape == (2,)
        assert not isinstance(np.ones(2), lib.Array)
        assert isinstance(np_.ones(2), lib.Array)
        seen = []
        lib.jit(lambda a: seen.append(isinstance(a, lib.Array)) or a)(np_.ones(2))
        assert seen == [True]

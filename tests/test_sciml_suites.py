"""Behaviours found by running diffrax's, optimistix's and blackjax's own test suites on
xform (tools/library_tests/run.py), each compared with real JAX."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp


# ----------------------------------------------------- device_get inside a transformation

@pytest.mark.parametrize("mod", ["jax", "xform"])
def test_device_get_of_traced_values_returns_them_like_jax(mod):
    # chex's ``without_device`` variant calls device_get on a function's arguments, and
    # blackjax's implicit-midpoint integrator calls such a function inside a jit trace
    m, np_ = (jax, jnp) if mod == "jax" else (xform, xnp)
    seen = {}

    def f(x):
        got = m.device_get({"a": x, "b": 2.0})
        seen["same"] = got["a"] is x
        return got["a"] * 2

    out = m.jit(f)(np_.arange(3.0))
    assert seen["same"]
    np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0, 4.0])


def test_device_get_leaves_like_jax():
    tree = {"arr": np.arange(3), "np32": np.float32(1.5), "py": 1.5, "i": 3, "s": "x"}
    want = jax.device_get(tree)
    got = xform.device_get(tree)
    for k in tree:
        assert type(got[k]) is type(want[k]), k
        np.testing.assert_array_equal(got[k], want[k])
    x = xnp.arange(4.0)
    got = xform.device_get([x, (x,)])
    assert type(got[0]) is np.ndarray and type(got[1][0]) is np.ndarray

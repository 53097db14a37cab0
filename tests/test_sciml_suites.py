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


# --------------------------------------- cond/switch outputs take branch 0's weak types

def _cond_weak_types(m, np_):
    w = lambda t: np_.where(t < 1, 1, -1)                     # weak int
    s = lambda t: np_.where(t < 1, 1, -1).astype(np_.int32)   # strong int
    t0 = np_.asarray(0.0)
    lax = m.lax
    cases = {
        "true strong, false weak": lambda t: lax.cond(t > 5, lambda: s(t), lambda: w(t)),
        "true weak, false strong": lambda t: lax.cond(t > 5, lambda: w(t), lambda: s(t)),
        "switch weak first": lambda t: lax.switch(0, [lambda: w(t), lambda: s(t)]),
        "switch strong first": lambda t: lax.switch(1, [lambda: s(t), lambda: w(t)]),
    }
    out = {}
    for name, f in cases.items():
        out[name] = m.jit(f)(t0).weak_type
    return out


def test_cond_outputs_weak_type_like_jax():
    # diffrax's Solution.interpolation.direction passes through equinox's error_if
    # (cond(pred, <callback with a strong result>, lambda: x)); JAX keeps x weakly typed
    # (branch 0, cond's false branch, gives the types), and diffrax's strict-promotion
    # tests then multiply it by float64 times
    assert _cond_weak_types(xform, xnp) == _cond_weak_types(jax, jnp)

"""jnp.pad's value-dependent modes (odd reflection, linear_ramp, statistics, empty,
callables) against real JAX, eager and under jit, plus their gradients."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import xform
import xform.numpy as xnp

MODES = [("reflect", {"reflect_type": "odd"}), ("symmetric", {"reflect_type": "odd"}),
         ("linear_ramp", {}), ("linear_ramp", {"end_values": (2, -3)}),
         ("maximum", {}), ("minimum", {"stat_length": 2}), ("mean", {}),
         ("median", {"stat_length": (1, 3)}), ("mean", {"stat_length": ((1, 2), (3, 1))}),
         ("empty", {}), ("reflect", {}), ("symmetric", {}), ("edge", {}), ("wrap", {})]


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(MODES), st.sampled_from([(5,), (3, 4), (1, 3), (2, 1)]),
       st.sampled_from([2, (1, 7), 9, ((0, 3), (2, 0))]),
       st.sampled_from([np.float32, np.int32]), st.booleans(), st.integers(0, 2 ** 31 - 1))
def test_pad_modes_match_jax(mode_kw, shape, pw, dt, under_jit, seed):
    mode, kw = mode_kw
    if isinstance(pw, tuple) and isinstance(pw[0], tuple) and len(shape) != 2:
        pw = pw[0]
    sl = kw.get("stat_length")
    if isinstance(sl, tuple) and isinstance(sl[0], tuple) and len(shape) != 2:
        kw = {"stat_length": kw["stat_length"][0]}
    x = (np.random.default_rng(seed).standard_normal(shape) * 10).astype(dt)
    want = jnp.pad(x, pw, mode=mode, **kw)
    f = lambda a: xnp.pad(a, pw, mode=mode, **kw)
    got = xform.jit(f)(x) if under_jit else f(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    # An integer linear ramp floors float32 values; where one lands within an ulp of an
    # integer the result depends on XLA's contraction of s*(1-t) + e*t, so allow 1.
    atol = 1 if (mode == "linear_ramp" and dt == np.int32) else 1e-5
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=atol)


def test_pad_callable_mode_matches_jax():
    def fill(row, width, axis, kwargs):
        row = row.at[:width[0]].set(kwargs.get("v", 1))
        return row.at[row.shape[0] - width[1]:].set(-axis - 1)
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    want = jnp.pad(x, ((1, 2), (2, 1)), fill, v=5)
    np.testing.assert_array_equal(xnp.pad(x, ((1, 2), (2, 1)), fill, v=5), want)
    np.testing.assert_array_equal(
        xform.jit(lambda a: xnp.pad(a, ((1, 2), (2, 1)), fill, v=5))(x), want)


@pytest.mark.parametrize("mode,kw", [("reflect", {"reflect_type": "odd"}), ("linear_ramp", {}),
                                     ("mean", {"stat_length": 2}), ("maximum", {})])
def test_pad_mode_gradients_match_jax(mode, kw):
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    w = np.random.default_rng(2).standard_normal((8, 9)).astype(np.float32)
    want = jax.grad(lambda a: jnp.sum(jnp.pad(a, (2, 3), mode=mode, **kw) * w))(x)
    got = xform.grad(lambda a: xnp.sum(xnp.pad(a, (2, 3), mode=mode, **kw) * w))(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,kw,exc,msg", [
    ("bogus", {}, ValueError, "Unimplemented padding mode"),
    ("maximum", {"stat_length": 0}, ValueError, "stat_length of 0"),
    ("reflect", {"reflect_type": "sideways"}, ValueError, "reflect_type"),
    ("edge", {"end_values": 1}, ValueError, "unsupported keyword"),
])
def test_pad_mode_errors(mode, kw, exc, msg):
    with pytest.raises(exc, match=msg):
        xnp.pad(np.ones((2, 3), np.float32), 1, mode=mode, **kw)

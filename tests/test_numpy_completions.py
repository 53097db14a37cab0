"""NumPy-API completions against real JAX: jnp.pad's value-dependent modes (odd reflection,
linear_ramp, statistics, empty, callables) eager, under jit and differentiated; einsum's
contraction paths, einsum_path and the interleaved operand form."""
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


# Default run: 8 draws; the slow step runs 25 (the _exhaustive twin).
@settings(max_examples=8, deadline=None)
@given(st.sampled_from(MODES), st.sampled_from([(5,), (3, 4), (1, 3), (2, 1)]),
       st.sampled_from([2, (1, 7), 9, ((0, 3), (2, 0))]),
       st.sampled_from([np.float32, np.int32]), st.booleans(), st.integers(0, 2 ** 31 - 1))
def test_pad_modes_match_jax(mode_kw, shape, pw, dt, under_jit, seed):
    _test_pad_modes_match_jax(mode_kw, shape, pw, dt, under_jit, seed)


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.sampled_from(MODES), st.sampled_from([(5,), (3, 4), (1, 3), (2, 1)]),
       st.sampled_from([2, (1, 7), 9, ((0, 3), (2, 0))]),
       st.sampled_from([np.float32, np.int32]), st.booleans(), st.integers(0, 2 ** 31 - 1))
def test_pad_modes_match_jax_exhaustive(mode_kw, shape, pw, dt, under_jit, seed):
    _test_pad_modes_match_jax(mode_kw, shape, pw, dt, under_jit, seed)


def _test_pad_modes_match_jax(mode_kw, shape, pw, dt, under_jit, seed):
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
    ("bogus", {}, NotImplementedError, "Unimplemented padding mode"),   # JAX's class
    ("maximum", {"stat_length": 0}, ValueError, "stat_length of 0"),
    ("reflect", {"reflect_type": "sideways"}, ValueError, "reflect_type"),
    ("edge", {"end_values": 1}, ValueError, "unsupported keyword"),
])
def test_pad_mode_errors(mode, kw, exc, msg):
    with pytest.raises(exc, match=msg):
        xnp.pad(np.ones((2, 3), np.float32), 1, mode=mode, **kw)


# ----------------------------------------------------------------- einsum paths (same file:
# both are NumPy-API completions checked against JAX)

_EINSUM_CASES = [("ij,jk,kl->il", [(2, 30), (30, 40), (40, 3)]),
                 ("ij,jk,kl,lm->im", [(2, 30), (30, 40), (40, 3), (3, 5)]),
                 ("bij,bjk,bkl", [(4, 2, 6), (4, 6, 7), (4, 7, 3)]),
                 ("ij,jk,kl,lm,mi->", [(2, 3), (3, 4), (4, 5), (5, 6), (6, 2)]),
                 ("ij,ij->", [(3, 4), (3, 4)]), ("ii->i", [(3, 3)])]


@pytest.mark.parametrize("spec,shapes", _EINSUM_CASES)
@pytest.mark.parametrize("optimize", ["auto", "greedy", "optimal", False, True])
def test_einsum_paths_and_values_match_jax(spec, shapes, optimize):
    rng = np.random.default_rng(0)
    ops = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    path, text = xnp.einsum_path(spec, *ops, optimize=optimize)
    if len(shapes) <= 4 and optimize is not True:   # opt_einsum's exact algorithms
        assert path == jnp.einsum_path(spec, *ops, optimize=optimize)[0]
    assert "Complete contraction" in text
    want = jnp.einsum(spec, *ops, optimize=optimize)
    np.testing.assert_allclose(xnp.einsum(spec, *ops, optimize=optimize), want,
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(xform.jit(lambda *a: xnp.einsum(spec, *a, optimize=path))(*ops),
                               want, rtol=1e-4, atol=1e-4)


def test_einsum_interleaved_form_and_path_errors():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((3, 4))
    np.testing.assert_allclose(xnp.einsum(a, [0, 1], b, [1, 2], [0, 2]),
                               jnp.einsum(a, [0, 1], b, [1, 2], [0, 2]), rtol=1e-5)
    np.testing.assert_allclose(xnp.einsum(a, [Ellipsis, 1], b[:, 0], [1]),
                               jnp.einsum(a, [Ellipsis, 1], b[:, 0], [1]), rtol=1e-5)
    with pytest.raises(ValueError, match="explicit path"):
        xnp.einsum("ij,jk,kl", a, b, b.T, optimize=[(0, 1)])
    with pytest.raises(ValueError, match="unknown optimize"):
        xnp.einsum("ij,jk,kl", a, b, b.T, optimize="fastest")
    with pytest.raises(TypeError, match="subscripts string"):
        xnp.einsum(a, "ij")

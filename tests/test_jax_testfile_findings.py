"""Behaviours found by running JAX's own jax.numpy / lax test files against xform
(tools/jax_tests), each compared with real JAX."""
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp


def test_parse_flags_with_absl_is_public_config_api(monkeypatch):
    # JAX's test files call jax.config.parse_flags_with_absl() at import.
    assert callable(jax.config.parse_flags_with_absl)
    monkeypatch.setattr(sys, "argv", ["prog", "-q", "--other=1",
                                      "--jax_numpy_rank_promotion=raise",
                                      "--jax_enable_checks"])
    old_rank = xform.config.jax_numpy_rank_promotion
    old_checks = xform.config.jax_enable_checks
    try:
        xform.config.parse_flags_with_absl()
        assert xform.config.jax_numpy_rank_promotion == "raise"
        assert xform.config.jax_enable_checks is True
    finally:
        xform.config.update("jax_numpy_rank_promotion", old_rank)
        xform.config.update("jax_enable_checks", old_checks)


def test_parse_flags_with_absl_without_jax_flags_changes_nothing(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["prog", "-q", "tests/x.py"])
    before = dict(xform.config._values)
    xform.config.parse_flags_with_absl()
    assert dict(xform.config._values) == before


def _jnp_ufunc_names(mod):
    return sorted(n for n in dir(mod) if isinstance(getattr(mod, n), mod.ufunc))


def test_the_same_functions_are_ufunc_objects_as_in_jax():
    assert _jnp_ufunc_names(xnp) == _jnp_ufunc_names(jnp)
    for name in _jnp_ufunc_names(jnp):
        x, j = getattr(xnp, name), getattr(jnp, name)
        assert (x.nin, x.nout, x.nargs, x.__name__) == (j.nin, j.nout, j.nargs, j.__name__)
        assert type(x.identity) is type(j.identity) and x.identity == j.identity


@pytest.mark.parametrize("attr", ["nargs", "nin", "nout", "identity", "_func"])
def test_ufunc_attributes_are_read_only(attr):
    for u in (xnp.add, xnp.negative, xnp.frompyfunc(lambda a, b: a * b, 2, 1, identity=1)):
        getattr(u, attr)
        with pytest.raises(AttributeError):
            setattr(u, attr, None)


def test_ufunc_objects_compute_like_jax():
    a = np.arange(12.0).reshape(3, 4)
    b = np.linspace(-1, 1, 4)
    for name in ("add", "multiply", "maximum", "minimum", "subtract", "logaddexp"):
        x, j = getattr(xnp, name), getattr(jnp, name)
        np.testing.assert_allclose(x(a, b), j(a, b), rtol=1e-6)
        np.testing.assert_allclose(x.outer(b, b), j.outer(b, b), rtol=1e-6)
        np.testing.assert_allclose(x.reduce(a, axis=1), j.reduce(a, axis=1), rtol=1e-6)
        np.testing.assert_allclose(x.accumulate(a, axis=0), j.accumulate(a, axis=0),
                                   rtol=1e-6)
        np.testing.assert_allclose(xform.jit(x)(a, b), j(a, b), rtol=1e-6)
    np.testing.assert_array_equal(xnp.negative.at(np.arange(3.0), 1, inplace=False),
                                  jnp.negative.at(np.arange(3.0), 1, inplace=False))
    with pytest.raises(ValueError):
        xnp.negative.reduce(np.arange(3.0))
    with pytest.raises(ValueError):
        jnp.negative.reduce(np.arange(3.0))

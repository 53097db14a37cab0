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

"""JAX's top-level option context managers (threefry_partitionable, default_prng_impl,
...): each sets its option for the block, as JAX's do, or refuses what xform lacks."""
import numpy as np
import pytest

import jax
import xform

NAMES = ["default_prng_impl", "enable_custom_prng", "legacy_prng_key",
         "threefry_partitionable", "debug_key_reuse", "allow_f16_reductions",
         "array_garbage_collection_guard", "jax2tf_associative_scan_reductions",
         "softmax_custom_jvp", "no_execution", "thread_guard"]


@pytest.mark.parametrize("name", NAMES)
def test_default_value_round_trips(name):
    option = name if name.startswith("jax2tf") else "jax_" + name
    before = xform.config.read(option)
    with getattr(xform, name)(before):
        assert xform.config.read(option) == before
    assert xform.config.read(option) == before
    assert getattr(xform, name).__name__ == name


def test_threefry_partitionable_changes_bits_as_in_jax():
    for flag in (False, True):
        with xform.threefry_partitionable(flag):
            assert xform.config.jax_threefry_partitionable is flag
            got = xform.random.bits(xform.random.key(3), (5,))
        with jax.threefry_partitionable(flag):
            want = jax.random.bits(jax.random.key(3), (5,))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert xform.config.jax_threefry_partitionable == jax.config.jax_threefry_partitionable


def test_unsupported_values_refuse_and_restore():
    with pytest.raises(NotImplementedError, match="jax_debug_key_reuse"):
        with xform.debug_key_reuse(True):
            pass
    assert xform.config.read("jax_debug_key_reuse") is False
    with xform.legacy_prng_key("error"):
        assert xform.config.read("jax_legacy_prng_key") == "error"
    assert xform.config.read("jax_legacy_prng_key") == "allow"

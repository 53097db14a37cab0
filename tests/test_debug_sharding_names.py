"""debug.inspect_array_sharding / visualize_sharding / breakpoint, against JAX."""
import io
import sys

import numpy as np
import pytest

import jax
import jax.numpy as jnp
import xform
import xform.numpy as xnp


def test_inspect_array_sharding_eager_and_jit():
    seen, jseen = [], []
    x = xnp.arange(6.0)
    xform.debug.inspect_array_sharding({"a": x, "b": [x]}, callback=seen.append)
    assert seen == [x.sharding, x.sharding]
    jax.debug.inspect_array_sharding(jnp.arange(6.0), callback=jseen.append)
    assert type(seen[0]).__name__ == type(jseen[0]).__name__ == "SingleDeviceSharding"
    seen.clear()
    f = xform.jit(lambda v: (xform.debug.inspect_array_sharding(v, callback=seen.append),
                             v * 2)[1])
    np.testing.assert_allclose(np.asarray(f(x)), 2 * np.arange(6.0))
    f(x)                                  # cached: not called again (once per compilation)
    assert len(seen) == 1
    assert seen[0].device_set == x.sharding.device_set and seen[0].is_fully_replicated
    with pytest.raises(TypeError, match="callable"):
        xform.debug.inspect_array_sharding(x, callback=None)


def test_visualize_sharding_text(capsys):
    x = xnp.arange(6.0)
    xform.debug.visualize_sharding((4, 6), x.sharding)
    out = capsys.readouterr().out
    assert "CPU 0" in out and out.count("+") == 4
    xform.debug.visualize_array_sharding(x)
    assert capsys.readouterr().out == out.replace("(4, 6)", "")
    with pytest.raises(ValueError, match="1-D and 2-D"):
        xform.debug.visualize_sharding((2, 2, 2), x.sharding)
    with pytest.raises(TypeError, match="Sharding"):
        xform.debug.visualize_sharding((2,), "not a sharding")

"""numpy.fromfile / fromiter: deliberately refused, as in JAX (reading is a side effect)."""
import io

import numpy as np
import pytest

import jax.numpy as jnp
import xform.numpy as xnp


@pytest.mark.parametrize("name,arg", [("fromfile", io.BytesIO(b"\0" * 8)),
                                      ("fromiter", iter([1.0, 2.0]))])
def test_refused_like_jax(name, arg):
    with pytest.raises(NotImplementedError, match=f"{name}.*non-pure") as got:
        getattr(xnp, name)(arg, np.float32)
    with pytest.raises(NotImplementedError, match=f"{name}.*non-pure"):
        getattr(jnp, name)(arg, np.float32)
    assert f"np.{name}" in str(got.value)
    if name == "fromiter":
        assert next(arg) == 1.0          # the iterable was not consumed

"""xform.dlpack: zero-copy exchange with NumPy and JAX on CPU, and its aliasing semantics."""
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform import dlpack


def _ptr(a):
    return np.asarray(a).__array_interface__["data"][0]


def test_numpy_to_xform_aliases_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = dlpack.from_dlpack(a)
    assert isinstance(x, xform.Array) and x.shape == (2, 3) and x.dtype == np.float32
    assert np.shares_memory(np.asarray(x), a)
    a[0, 0] = 99.0                      # the producer's writes show through (no copy)
    assert float(x[0, 0]) == 99.0
    np.testing.assert_array_equal(xnp.sum(x), a.sum())
    c = dlpack.from_dlpack(a, copy=True)
    a[0, 1] = -5.0
    assert float(c[0, 1]) == 1.0 and not np.shares_memory(np.asarray(c), a)


def test_xform_to_numpy_views_the_array():
    x = xnp.arange(8.0, dtype=xnp.float32) * 2
    n = np.from_dlpack(x)
    assert x.__dlpack_device__() == (1, 0)
    assert _ptr(n) == _ptr(x)
    np.testing.assert_array_equal(n, np.arange(8.0) * 2)


def test_jit_output_to_jax_shares_the_device_buffer():
    y = xform.jit(lambda v: v * 3 + 1)(np.ones((2, 2), np.float32))
    j = jax.dlpack.from_dlpack(y)
    assert j.unsafe_buffer_pointer() == y._buf.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(j), np.full((2, 2), 4.0))


def test_jax_to_xform_zero_copy_and_bfloat16():
    j = jnp.arange(5.0)
    x = dlpack.from_dlpack(j)
    assert _ptr(x) == j.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(x + 1), np.arange(5.0) + 1)
    jb = jnp.linspace(0, 1, 4, dtype=jnp.bfloat16)   # NumPy's importer lacks bfloat16
    xb = dlpack.from_dlpack(jb)
    assert xb.dtype == ml_dtypes.bfloat16
    assert _ptr(xb) == jb.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(xb), np.asarray(jb))
    # round trip back to JAX
    np.testing.assert_array_equal(np.asarray(jax.dlpack.from_dlpack(xb)), np.asarray(jb))


def test_errors():
    with pytest.raises(TypeError, match="__dlpack__"):
        dlpack.from_dlpack([1, 2, 3])
    x = xnp.ones(3)
    with pytest.raises(BufferError):
        x.__dlpack__(stream=5)


def test_is_supported_dtype_matches_jax():
    import jax
    import jax.numpy as jnp
    import ml_dtypes
    import xform.dlpack as xd
    for dt in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
               np.uint32, np.uint64, np.float16, np.float32, np.float64, np.complex64,
               np.complex128, ml_dtypes.bfloat16, ml_dtypes.int4, ml_dtypes.float8_e4m3fn,
               ml_dtypes.float8_e5m2, jnp.float32, "float32", np.dtype("int8")):
        assert xd.is_supported_dtype(dt) == jax.dlpack.is_supported_dtype(dt), dt


def test_to_dlpack_gives_a_capsule_of_the_array():
    """The legacy capsule API: ``to_dlpack(x)`` is ``x.__dlpack__()``."""
    import ctypes
    x = xform.numpy.arange(6.0).reshape(2, 3)
    cap = xform.dlpack.to_dlpack(x)
    assert type(cap).__name__ == "PyCapsule"
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    assert name(cap) in (b"dltensor", b"dltensor_versioned")
    with pytest.raises(TypeError, match="expected an xform Array"):
        xform.dlpack.to_dlpack(np.ones(3))

"""DLPack exchange: ``from_dlpack(x)`` and ``Array.__dlpack__`` / ``__dlpack_device__``.

On CPU the exchange is zero-copy in both directions, as in JAX: an Array made
by ``from_dlpack(numpy_array)`` views the NumPy array's memory (writes to the
NumPy array show through, so don't mutate a producer you handed over), and a
consumer of ``Array.__dlpack__`` (``numpy.from_dlpack``,
``jax.dlpack.from_dlpack``, ``torch.from_dlpack``) views the Array's memory:
its device buffer when it has one, else its host NumPy storage.  Pass
``copy=True`` to get independent memory.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters.core import Array
from xform._src import lowering
from xform._src.interpreters.dtypes import canonicalize_dtype

__all__ = ["from_dlpack", "to_dlpack", "is_supported_dtype"]

_DLPACK_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                  "uint64", "float16", "bfloat16", "float32", "float64", "complex64",
                  "complex128")


def is_supported_dtype(dtype) -> bool:
    """Whether arrays of ``dtype`` can be exchanged through DLPack (JAX's set: bool,
    8- to 64-bit integers, float16/bfloat16/float32/float64, complex64/complex128)."""
    if dtype is None:
        raise TypeError("is_supported_dtype: dtype must not be None")
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = getattr(dtype, "name", str(dtype))
    return name in _DLPACK_DTYPES

_kDLCPU = 1




def to_dlpack(x, stream=None, src_device=None, dl_device=None, max_version=None, copy=None):
    """A DLPack capsule of ``x`` (legacy API; prefer passing the array to the consumer's
    ``from_dlpack``)."""
    if not isinstance(x, Array):
        raise TypeError(f"to_dlpack: expected an xform Array, got {type(x).__name__}")
    return x.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)


def from_dlpack(external_array, device=None, copy=None):
    """An xform Array viewing ``external_array``'s memory (any ``__dlpack__`` producer).

    ``copy=True`` copies; ``copy=False`` raises if a copy would be needed;
    ``device``: place the result there (a copy if it is another device).
    """
    if not hasattr(external_array, "__dlpack__") or \
            not hasattr(external_array, "__dlpack_device__"):
        raise TypeError("The array passed to from_dlpack must have __dlpack__ and "
                        "__dlpack_device__ methods.")
    if isinstance(external_array, Array):
        out = Array(np.array(external_array._value), external_array.weak_type) if copy \
            else external_array
        return _place(out, device)
    dl_type, _ = external_array.__dlpack_device__()
    if int(dl_type) == _kDLCPU:
        try:
            host = np.from_dlpack(external_array, copy=copy)
        except (BufferError, TypeError, RuntimeError):
            host = None           # a dtype NumPy's importer lacks (bfloat16, ...)
        if host is not None:
            return _place(Array(_canonical(host)), device)
    from xform._src.lowering.export_dlpack import buffer_from_dlpack  # deferred: keeps `import xform` light
    buf = buffer_from_dlpack(external_array, copy=copy)
    return _place(Array._from_buf(buf), device)


def _canonical(a):
    dt = canonicalize_dtype(a.dtype)
    return a if dt == a.dtype else a.astype(dt)


def _place(x, device):
    if device is None:
        return x
    return lowering.device_put(x, device)

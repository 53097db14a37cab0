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

from xform._src.interpreters.core import Array, Tracer

__all__ = ["from_dlpack", "to_dlpack"]

_kDLCPU = 1


def _array_dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    if isinstance(self, Tracer):
        raise TypeError("__dlpack__ of a traced array: tracers hold no memory")
    if self._deleted:
        raise RuntimeError("__dlpack__ of a deleted (donated) Array")
    kw = {}
    if max_version is not None:
        kw["max_version"] = max_version
    if dl_device is not None:
        kw["dl_device"] = dl_device
    if copy is not None:
        kw["copy"] = copy
    if self._buf is not None:
        if not hasattr(type(self._buf), "__dlpack__"):   # JAX's ArrayImpl methods not loaded
            from xform._src.lowering.runtime import buffer_dlpack
            return buffer_dlpack(self._buf, stream, max_version, dl_device, copy)
        return self._buf.__dlpack__(stream=stream, **kw)
    if stream is not None and stream != -1:
        raise BufferError(f"__dlpack__: stream={stream!r} is not supported for CPU arrays; "
                          "pass stream=None")
    return self._npy.__dlpack__(**kw)


def _array_dlpack_device(self):
    if self._buf is not None:
        if not hasattr(type(self._buf), "__dlpack_device__"):   # own runtime: a CPU buffer
            return (_kDLCPU, 0)
        return self._buf.__dlpack_device__()
    return (_kDLCPU, 0)


Array.__dlpack__ = _array_dlpack
Array.__dlpack_device__ = _array_dlpack_device


def to_dlpack(x, stream=None, src_device=None, dl_device=None, max_version=None, copy=None):
    """A DLPack capsule of ``x`` (legacy API; prefer passing the array to the consumer's
    ``from_dlpack``)."""
    if not isinstance(x, Array):
        raise TypeError(f"to_dlpack: expected an xform Array, got {type(x).__name__}")
    return _array_dlpack(x, stream=stream, max_version=max_version, dl_device=dl_device,
                         copy=copy)


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
    from xform._src.lowering.export_dlpack import buffer_from_dlpack
    buf = buffer_from_dlpack(external_array, copy=copy)
    return _place(Array._from_buf(buf), device)


def _canonical(a):
    from xform._src.interpreters.dtypes import canonicalize_dtype
    dt = canonicalize_dtype(a.dtype)
    return a if dt == a.dtype else a.astype(dt)


def _place(x, device):
    if device is None:
        return x
    from xform._src import lowering
    return lowering.device_put(x, device)

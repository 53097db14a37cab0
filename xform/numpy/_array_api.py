"""The Python Array API standard's metadata for ``xform.numpy``.

``__array_api_version__`` (the revision of the standard implemented, JAX's),
``__array_namespace_info__()`` (capabilities, devices, default and supported dtypes)
and ``Array.__array_namespace__`` / ``Array.to_device``.  The standard:
https://data-apis.org/array-api/latest/API_specification/inspection.html
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import dtypes as _dtypes
from xform._devices import device_put
from xform._devices import devices

__array_api_version__ = "2024.12"

# The kinds of the standard's ``isdtype`` / ``dtypes(kind=)``, each with the names of
# the standard's dtypes it contains (the 64-bit ones exist only with x64 enabled).
_KIND_NAMES = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "integral": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
    "numeric": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float32", "float64", "complex64", "complex128"),
}
_X64_ONLY = frozenset({"int64", "uint64", "float64", "complex128"})


def _check_api_version(api_version):
    if api_version is not None and api_version != __array_api_version__:
        raise ValueError(f"api_version={api_version!r} is not available; available "
                         f"versions are: {[__array_api_version__]}")


def array_namespace(self, *, api_version=None):
    """``Array.__array_namespace__``: the ``xform.numpy`` module."""
    _check_api_version(api_version)
    import xform.numpy  # deferred: import cycle
    return xform.numpy


def to_device(self, device, *, stream=None):
    """``Array.to_device``: a copy of the array placed on ``device`` (a device or a
    sharding), as ``xform.device_put(self, device)``."""
    if stream is not None:
        raise NotImplementedError(
            "the stream argument of Array.to_device() is not supported: pass stream=None")
    return device_put(self, device)


class ArrayNamespaceInfo:
    """What ``xform.numpy.__array_namespace_info__()`` returns: the inspection API of
    the Array API standard."""

    _capabilities = {
        "boolean indexing": False,        # not inside transformations
        "data-dependent shapes": False,   # not inside transformations
        "max dimensions": 64,             # XLA's limit
    }

    def capabilities(self):
        return dict(self._capabilities)

    def default_device(self):
        # Arrays are uncommitted by default: placement is left to the runtime.
        return None

    def devices(self):
        return [None, *devices()]

    def default_dtypes(self, *, device=None):
        # The defaults do not depend on the device.
        del device
        return {
            "real floating": _dtypes.default_float_dtype(),
            "complex floating": _dtypes.default_complex_dtype(),
            "integral": _dtypes.default_int_dtype(),
            "indexing": _dtypes.default_int_dtype(),
        }

    def dtypes(self, *, device=None, kind=None):
        """The supported dtypes of ``kind`` (a kind name, a tuple of them, or None
        for every numeric dtype and bool), as a dict from name to ``np.dtype``."""
        del device
        if kind is None:
            kinds = ("bool", "numeric")
        elif isinstance(kind, tuple):
            kinds = kind
        else:
            kinds = (kind,)
        x64 = _dtypes.default_float_dtype() == np.float64
        out = {}
        for k in kinds:
            if not isinstance(k, str) or k not in _KIND_NAMES:
                raise KeyError(f"dtypes(kind={kind!r}): unknown kind {k!r}; expected one of "
                               f"{list(_KIND_NAMES)} or a tuple of them")
            for name in _KIND_NAMES[k]:
                if x64 or name not in _X64_ONLY:
                    out[name] = np.dtype(name)
        return out


def __array_namespace_info__():
    return ArrayNamespaceInfo()

"""``xform.dtypes``: JAX's ``jax.dtypes`` (dtype canonicalisation, promotion, float0)."""
from __future__ import annotations

import numpy as np

from interpreters import dtypes as _d
from interpreters.dtypes import (TypePromotionError, bfloat16, canonicalize_dtype,  # noqa: F401
                                 finfo, float0, iinfo, result_type)

__all__ = ["TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo",
           "float0", "iinfo", "issubdtype", "itemsize_bits", "prng_key", "result_type",
           "scalar_type_of"]


class extended(np.generic):
    """Abstract scalar type of JAX's *extended* dtypes (e.g. typed PRNG keys).  No NumPy
    dtype is a subtype: ``issubdtype(np.float32, extended)`` is False."""


class prng_key(extended):
    """Abstract scalar type of typed PRNG key dtypes (``jax.dtypes.prng_key``)."""


def _is_extended_abstract(t):
    return isinstance(t, type) and issubclass(t, extended)


def issubdtype(a, b) -> bool:
    """``np.issubdtype`` with JAX's extras: bfloat16/float8 are ``np.floating``; the
    abstract ``extended``/``prng_key`` contain only extended dtypes (key dtypes carry
    ``_xform_extended = 'prng_key'``)."""
    if _is_extended_abstract(b):
        kind = getattr(a, "_xform_extended", None) or getattr(getattr(a, "dtype", None),
                                                               "_xform_extended", None)
        if kind is None:
            return _is_extended_abstract(a) and issubclass(a, b)
        return b is extended or (b is prng_key and kind == "prng_key")
    if _is_extended_abstract(a) or getattr(a, "_xform_extended", None):
        return False
    return _d.issubdtype(a, b)


def itemsize_bits(dtype) -> int:
    """Bits per element of ``dtype`` (bool: 8, the physical layout)."""
    if dtype is None:
        raise ValueError("itemsize_bits: dtype cannot be None")
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return 8
    if _d.issubdtype(dt, np.integer):
        return iinfo(dt).bits
    if _d.issubdtype(dt, np.floating):
        return finfo(dt).bits
    if _d.issubdtype(dt, np.complexfloating):
        return 2 * finfo(dt).bits
    raise ValueError(f"itemsize_bits: unexpected dtype {dt}")


def scalar_type_of(x) -> type:
    """The Python scalar type (bool/int/float/complex) of a value's dtype."""
    dt = _d.dtype_of(x) if not isinstance(x, np.dtype) else x
    if dt == np.bool_:
        return bool
    if _d.issubdtype(dt, np.integer):
        return int
    if _d.issubdtype(dt, np.floating):
        return float
    if _d.issubdtype(dt, np.complexfloating):
        return complex
    raise TypeError(f"scalar_type_of: invalid scalar value {x!r} (dtype {dt})")

"""``xform.dtypes``: JAX's ``jax.dtypes`` (dtype canonicalisation, promotion, float0)."""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import dtypes as _d
from xform._src.interpreters.dtypes import (TypePromotionError, canonicalize_dtype,  # noqa: F401
                                 finfo, float0, iinfo, result_type)

__all__ = ["TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo",
           "float0", "iinfo", "issubdtype", "itemsize_bits", "prng_key", "result_type",
           "scalar_type_of"]


from xform._src.interpreters.dtypes import extended, prng_key  # noqa: E402,F401


def _is_extended_abstract(t):
    return isinstance(t, type) and issubclass(t, extended)


def _extended_kind(a):
    """'prng_key' / 'extended' for extended dtypes (typed PRNG keys), else None."""
    dt = a if _d.is_extended(a) else getattr(a, "dtype", None)
    if not _d.is_extended(dt):
        return None
    return "prng_key" if getattr(dt, "impl_name", None) is not None else "extended"


def issubdtype(a, b) -> bool:
    """``np.issubdtype`` with JAX's extras: bfloat16/float8 are ``np.floating``; the
    abstract ``extended``/``prng_key`` contain exactly the extended dtypes (typed PRNG
    key dtypes such as ``key<fry>`` are ``prng_key``s)."""
    kind = _extended_kind(a)
    if kind is not None:
        if _d.is_extended(b):
            return a == b or getattr(a, "dtype", None) == b
        return b is extended or (b is prng_key and kind == "prng_key")
    if _is_extended_abstract(b):
        return _is_extended_abstract(a) and issubclass(a, b)
    if _is_extended_abstract(a) or _d.is_extended(b):
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


def __getattr__(name):
    if name == "bfloat16":       # ml_dtypes' scalar type (as JAX's: callable, a
        return _d.bfloat16.type  # dtype's .type); imported on first use (~0.5 s)
    raise AttributeError(f"module 'xform.dtypes' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"bfloat16"})

"""Stand-in for ``jax._src.dtypes``, from the library's public ``jax.dtypes`` /
``jax.numpy`` plus NumPy and ml_dtypes."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from . import Internal

bfloat16 = ml_dtypes.bfloat16
float8_e4m3fn = ml_dtypes.float8_e4m3fn
float8_e4m3fnuz = ml_dtypes.float8_e4m3fnuz
float8_e5m2 = ml_dtypes.float8_e5m2
float8_e5m2fnuz = ml_dtypes.float8_e5m2fnuz
float8_e4m3b11fnuz = ml_dtypes.float8_e4m3b11fnuz
float8_e3m4 = getattr(ml_dtypes, "float8_e3m4", None)
float8_e4m3 = getattr(ml_dtypes, "float8_e4m3", None)
float8_e8m0fnu = getattr(ml_dtypes, "float8_e8m0fnu", None)
float4_e2m1fn = getattr(ml_dtypes, "float4_e2m1fn", None)
int2, int4, uint2, uint4 = (getattr(ml_dtypes, n, None) for n in ("int2", "int4", "uint2",
                                                                    "uint4"))
_float8_dtypes = [np.dtype(t) for t in (float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz,
                                        float8_e5m2, float8_e5m2fnuz, float8_e3m4,
                                        float8_e4m3, float8_e8m0fnu) if t is not None]
_custom_float_dtypes = [np.dtype(bfloat16)] + _float8_dtypes + (
    [np.dtype(float4_e2m1fn)] if float4_e2m1fn is not None else [])
_intn_dtypes = [np.dtype(t) for t in (int2, int4, uint2, uint4) if t is not None]

python_scalar_types_to_dtypes = {bool: np.dtype(bool), int: np.dtype(np.int64),
                                 float: np.dtype(np.float64),
                                 complex: np.dtype(np.complex128)}


def _jax():
    import jax
    return jax


def x64_enabled() -> bool:
    return bool(_jax().config.jax_enable_x64)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    public = getattr(_jax().dtypes, name, None)     # float0, ExtendedDType, extended, ...
    if public is not None:
        return public
    return Internal(f"jax._src.dtypes.{name}")


_NARROW = {np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.uint64): np.dtype(np.uint32),
           np.dtype(np.float64): np.dtype(np.float32),
           np.dtype(np.complex128): np.dtype(np.complex64)}


def canonicalize_dtype(dtype, allow_extended_dtype=False):
    """The dtype the library computes in: 64-bit types narrowed without x64."""
    if allow_extended_dtype and _jax().dtypes.issubdtype(dtype, _jax().dtypes.extended):
        return dtype
    dt = np.dtype(dtype)
    return dt if x64_enabled() else _NARROW.get(dt, dt)


def issubdtype(a, b):
    return _jax().dtypes.issubdtype(a, b)


def dtype(x, *, canonicalize=False):
    dt = _jax().numpy.dtype(x) if not isinstance(x, type) or x not in (
        int, float, complex, bool) else python_scalar_types_to_dtypes[x]
    return canonicalize_dtype(dt) if canonicalize else dt


def finfo(dt):
    return _jax().numpy.finfo(dt)


def iinfo(dt):
    return _jax().numpy.iinfo(dt)


def result_type(*args, return_weak_type_flag=False):
    out = _jax().numpy.result_type(*args)
    if return_weak_type_flag:
        return out, all(is_weakly_typed(a) for a in args)
    return out


def is_weakly_typed(x) -> bool:
    """Python scalars are weakly typed; arrays carry a ``weak_type`` flag."""
    if type(x) in python_scalar_types_to_dtypes:
        return True
    return bool(getattr(x, "weak_type", False))


def itemsize_bits(dt) -> int:
    dt = np.dtype(dt)
    if dt in _intn_dtypes:          # int2, int4, uint2, uint4
        return int(dt.name[-1])
    if float4_e2m1fn is not None and dt == np.dtype(float4_e2m1fn):
        return 4
    return dt.itemsize * 8


def default_int_dtype():
    return np.dtype(np.int64 if x64_enabled() else np.int32)


def default_uint_dtype():
    return np.dtype(np.uint64 if x64_enabled() else np.uint32)


def default_float_dtype():
    return np.dtype(np.float64 if x64_enabled() else np.float32)


def default_complex_dtype():
    return np.dtype(np.complex128 if x64_enabled() else np.complex64)


default_types = {"b": lambda: np.dtype(bool), "i": default_int_dtype, "u": default_uint_dtype,
                 "f": default_float_dtype, "c": default_complex_dtype}


def to_inexact_dtype(dt):
    """Integers and bools to the default float; inexact dtypes unchanged."""
    dt = np.dtype(dt)
    if issubdtype(dt, np.inexact):
        return dt
    return default_float_dtype()


def to_complex_dtype(dt):
    dt = np.dtype(dt)
    if issubdtype(dt, np.complexfloating):
        return dt
    if dt == np.dtype(np.float64):
        return np.dtype(np.complex128)
    return default_complex_dtype() if not issubdtype(dt, np.floating) else np.dtype(
        np.complex64)


def to_numeric_dtype(dt):
    dt = np.dtype(dt)
    return np.dtype(np.int32 if not x64_enabled() else np.int64) if dt == np.dtype(bool) \
        else dt


def supports_inf(dt) -> bool:
    dt = np.dtype(dt)
    if not issubdtype(dt, np.inexact):
        return False
    return bool(np.isinf(np.array(np.inf).astype(dt)))


def register_canonicalize_value_handler(typ, handler):
    """JAX-internal registration that lax_test.py calls at import for its custom-array
    tests (which need further internals and fail for both libraries): a no-op here."""

"""``xform.numpy``: the NumPy API of JAX (same names and semantics) on xform's primitives.

Implicit NumPy broadcasting and JAX type promotion (Python scalars are weak,
x64 off canonicalises to 32 bits).  The implementation is split by theme:

  _util        argument conversion, promotion, broadcasting, axes
  _creation    asarray, zeros, arange, eye, ..., and the callable scalar types
  _ufuncs      elementwise functions
  _reductions  sum, mean, var, argmax, cumsum, nan*, ...
  _shape       reshape, transpose, concatenate, split, pad, roll, sort, take, ...
  _indexing    x[idx] and x.at[idx]
  _linalg      dot, matmul, einsum, tensordot, diagonal, norm
"""
from __future__ import annotations

import sys as _sys
import types as _types

import numpy as _np

from xform._src.interpreters import dtypes as _dtypes
from xform._src.interpreters.core import Array
from xform.numpy import _util
from xform.numpy._creation import *  # noqa: F401,F403
from xform.numpy._creation import __all__ as _c_all
from xform.numpy._indexing import argwhere, flatnonzero, nonzero  # noqa: F401
from xform.numpy._linalg import *  # noqa: F401,F403
from xform.numpy._linalg import __all__ as _l_all
from xform.numpy._reductions import *  # noqa: F401,F403
from xform.numpy._reductions import __all__ as _r_all
from xform.numpy._shape import *  # noqa: F401,F403
from xform.numpy._shape import __all__ as _s_all
from xform.numpy._ufuncs import *  # noqa: F401,F403
from xform.numpy._ufuncs import __all__ as _u_all
from xform.numpy import _linalg, _ufuncs as _F, _reductions as _R

from xform._array_type import Array as ndarray  # noqa: E402  (isinstance: concrete or traced)
from xform.numpy._signal import convolve, correlate  # noqa: F401,E402
from xform.numpy import fft  # noqa: F401,E402
from xform.numpy._array_api import (  # noqa: F401,E402
    __array_api_version__, __array_namespace_info__)
from xform.numpy import _creation
import warnings as _warnings

# constants
pi = _np.pi
e = _np.e
euler_gamma = _np.euler_gamma
inf = _np.inf
nan = _np.nan
newaxis = None

# NumPy's abstract scalar hierarchy (for issubdtype), as JAX re-exports it
generic, number, inexact, floating, complexfloating = (
    _np.generic, _np.number, _np.inexact, _np.floating, _np.complexfloating)
integer, signedinteger, unsignedinteger = _np.integer, _np.signedinteger, _np.unsignedinteger
character, flexible = _np.character, _np.flexible

# dtype utilities
dtype = _np.dtype
finfo = _dtypes.finfo
iinfo = _dtypes.iinfo
issubdtype = _dtypes.issubdtype
promote_types = _dtypes.promote_types


def result_type(*args):
    """``jnp.result_type``: the canonical dtype of an operation on ``args``."""
    return _dtypes.result_type(*args)


def can_cast(from_, to, casting="safe"):
    f = from_.dtype if hasattr(from_, "dtype") else _np.dtype(from_)
    return bool(_np.can_cast(f, _np.dtype(to), casting))


_ISDTYPE_KINDS = {"bool": _np.bool_, "signed integer": _np.signedinteger,
                  "unsigned integer": _np.unsignedinteger, "integral": _np.integer,
                  "real floating": _np.floating, "complex floating": _np.complexfloating,
                  "numeric": _np.number}


def isdtype(dtype, kind):
    """Whether ``dtype`` is of ``kind``: a kind name ('bool', 'signed integer',
    'unsigned integer', 'integral', 'real floating', 'complex floating', 'numeric'),
    a dtype (equality), or a tuple of these (any of them)."""
    dt = _dtypes._np_dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str) and k in _ISDTYPE_KINDS:
            if _dtypes.issubdtype(dt, _ISDTYPE_KINDS[k]) and not (
                    k == "numeric" and dt == _np.bool_):
                return True
            continue
        try:
            kdt = _dtypes._np_dtype(k)
        except TypeError:
            if isinstance(k, str):
                raise ValueError(f"isdtype: unrecognized kind={k!r}; expected one of "
                                 f"{list(_ISDTYPE_KINDS)} or a dtype name") from None
            raise TypeError(f"isdtype: kind must be a dtype, a kind name or a tuple of "
                            f"them; got kind={k!r}") from None
        if kdt == dt:
            return True
    return False


# comparisons of whole arrays


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b|, with infinities equal only to themselves."""
    x, y = _util.promote_args_lax("isclose", a, b)
    if _dtypes.is_extended(x.dtype):        # typed keys: equality
        return _F.equal(x, y)
    (x, y) = _util.promote_args_inexact_lax("isclose", x, y)   # integers compare as floats
    rt = _util.to_array(rtol, x.dtype, True) if x.dtype.kind != "c" else \
        _util.to_array(rtol, _F.real(x).dtype, True)
    at = _util.to_array(atol, rt.dtype, True)
    in_range = _F.less_equal(_F.absolute(_F.subtract(x, y)),
                             _F.add(at, _F.multiply(rt, _F.absolute(y))))
    out = _F.logical_or(_F.equal(x, y), _F.logical_and(_F.isfinite(y), in_range))
    if equal_nan:
        out = _F.logical_or(out, _F.logical_and(_F.isnan(x), _F.isnan(y)))
    return out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return _R.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    x, y = asarray(a1), asarray(a2)  # noqa: F405
    if x.shape != y.shape:
        return asarray(False)  # noqa: F405
    eq = _F.equal(x, y)
    if equal_nan:
        eq = _F.logical_or(eq, _F.logical_and(_F.isnan(x), _F.isnan(y)))
    return _R.all(eq)


def array_equiv(a1, a2):
    x, y = asarray(a1), asarray(a2)  # noqa: F405
    if _util.broadcast_shapes_or_none(x.shape, y.shape) is None:
        return asarray(False)  # noqa: F405
    return _R.all(_F.equal(x, y))


def astype(x, dtype, /, *, copy=False, device=None):
    """Cast to ``dtype`` (the result is never weakly typed)."""
    x = _util.ensure_arraylike("astype", x)
    dt = _util.canonical_dtype(dtype)
    a = _util.to_array(x)
    if dt is None:
        dt = _dtypes.default_float_dtype()
    if a.dtype.kind == "c" and dt.kind != "c":
        if dt != _dtypes.bool_:
            _warnings.warn("Casting from complex to real dtypes will soon raise a ValueError. "
                          "Please first use jnp.real or jnp.imag to take the real/imaginary "
                          "component of your input.", DeprecationWarning, stacklevel=2)
            a = _F.real(a)
        else:            # nonzero, as JAX (real or imaginary part)
            return _F.not_equal(a, _util.to_array(0, a.dtype, False))
    if dt == _dtypes.bool_ and a.dtype != _dtypes.bool_:
        return _F.not_equal(a, _util.to_array(0, a.dtype, False))
    return _util.to_array(a, dt, False)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    a = _util.to_array(x)
    if a.dtype.kind not in "fc" and not _dtypes.is_bfloat16(a.dtype):
        return a
    info = _dtypes.finfo(a.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = _F.where(_F.isnan(a), _util.to_array(nan, a.dtype), a)
    out = _F.where(_F.isposinf(out), _util.to_array(posinf, a.dtype), out)
    return _F.where(_F.isneginf(out), _util.to_array(neginf, a.dtype), out)


# the linalg namespace (``xnp.linalg.norm``)
linalg = _types.ModuleType("xform.numpy.linalg", "Linear algebra (norm, vector/matrix norms).")
for _n in ("norm", "vector_norm", "matrix_norm", "vecdot", "matmul", "tensordot", "trace",
           "diagonal", "cross", "outer"):
    setattr(linalg, _n, getattr(_linalg, _n))
linalg.matrix_transpose = matrix_transpose  # noqa: F405
from xform.numpy import _linalg_decomp as _ld  # noqa: E402  (all of jnp.linalg)
for _n in _ld.LINALG_NAMES:
    setattr(linalg, _n, getattr(_ld, _n))
_sys.modules.setdefault("xform.numpy.linalg", linalg)

__all__ = sorted(set(_c_all + _l_all + _r_all + _s_all + _u_all + [
    "ndarray", "pi", "e", "euler_gamma", "inf", "nan", "newaxis", "dtype", "finfo", "iinfo",
    "issubdtype", "promote_types", "result_type", "can_cast", "isdtype", "isclose", "allclose",
    "array_equal", "array_equiv", "astype", "nan_to_num", "linalg", "nonzero", "argwhere",
    "flatnonzero", "generic", "number", "inexact", "floating", "complexfloating", "integer",
    "signedinteger", "unsignedinteger"]))
del _n

# ---- the rest of jax.numpy : new modules, listed in _EXTRA_MODULES
from xform.numpy import _extra as _extra  # noqa: E402
for _n in _extra.__all__:
    globals()[_n] = getattr(_extra, _n)
__all__ = sorted(set(__all__) | set(_extra.__all__))
__all__ = sorted(set(__all__) | {"convolve", "correlate", "fft"})


# ml_dtypes' scalar types (bfloat16, float8_*, int4, ...): made on first access, so that
# ``import xform`` does not import ml_dtypes (~0.5 s).
from xform.numpy import _dtype_names as _dtype_names  # noqa: E402

_creation_lazy = ("bfloat16", "float8_e4m3fn", "float8_e5m2")
_LAZY_DTYPE_NAMES = frozenset(_creation_lazy) | frozenset(_dtype_names._NAMES)
__all__ = sorted(set(__all__) | _LAZY_DTYPE_NAMES)


# NumPy names JAX 0.10.2 no longer has (AttributeError with JAX's message)
_REMOVED = {
    "fix": "jax.numpy.fix was deprecated in JAX v0.9.0, and will be removed in JAX v0.10.0. "
           "Use jax.numpy.trunc instead.",
    "row_stack": "module 'jax.numpy' has no attribute 'row_stack' (use vstack)",
}


def __getattr__(name):
    if name in _REMOVED:
        raise AttributeError(_REMOVED[name])
    if name in _LAZY_DTYPE_NAMES:
        value = getattr(_creation if name in _creation_lazy else _dtype_names, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'xform.numpy' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _LAZY_DTYPE_NAMES)


# ---- jnp functions that JAX wraps in jit: nested jit equations when staged
from xform.numpy import _jitted as _jitted  # noqa: E402
_jitted.install(_sys.modules[__name__])
_jitted.install(_sys.modules[__name__], _jitted.INLINE_TABLE)
_jitted.install_impl()
_jitted.install(linalg, _jitted.LINALG_INLINE_TABLE, inline=True)

# ---- the functions that are jnp.ufunc objects in JAX (jnp.add, jnp.multiply, ...)
from xform.numpy import _ufunc_methods as _ufunc_methods  # noqa: E402
_ufunc_methods.install_ufunc_objects(_sys.modules[__name__])

# ---- JAX's out_sharding= keyword (see xform._out_sharding)
from xform._out_sharding import with_out_sharding as _with_out_sharding  # noqa: E402

for _name in ("arange", "array", "asarray", "bincount", "broadcast_to", "dot", "einsum",
              "empty", "full", "full_like", "matmul", "ones", "ones_like", "percentile",
              "ravel", "repeat", "reshape", "tensordot", "zeros", "zeros_like"):
    globals()[_name] = _with_out_sharding(globals()[_name])
del _name

for _name in _REMOVED:
    globals().pop(_name, None)
__all__ = [n for n in __all__ if n not in _REMOVED]
del _name

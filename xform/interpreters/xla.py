"""``xform.interpreters.xla``: what JAX 0.10.2 still has in ``jax.interpreters.xla``.

``canonicalize_dtype_handlers`` (Python type -> function returning the value with its
dtype canonicalized: 64-bit types become 32-bit ones unless x64 is on), and
``apply_primitive`` (bind a primitive eagerly, outside every transformation).  Libraries
register their array-like types in the handler table at import time
(tensorflow_probability's JAX substrate copies the ``numpy.ndarray`` entry for its
``Variable``); xform canonicalizes NumPy values itself and gives registered types their
abstract values through ``jax.core.pytype_aval_mappings``.  ``Backend`` (an XLA client)
is not provided: xform's runtime devices are in ``xform.devices()``.
"""
from __future__ import annotations

import numpy as _np

from xform._src.interpreters import core as _core
from xform._src.interpreters import dtypes as _dtypes

__all__ = ["apply_primitive", "canonicalize_dtype_handlers"]


def _canonicalize_ndarray(x):
    return _np.asarray(x, _dtypes.canonicalize_dtype(_np.result_type(x)))


def _keep(x):
    return x


def _canonicalize_scalar(x):
    return _np.asarray(x, _dtypes.dtype_of(x))


canonicalize_dtype_handlers: dict = {_np.ndarray: _canonicalize_ndarray,
                                     _core.Array: _keep}
for _t in set(_np.sctypeDict.values()):
    canonicalize_dtype_handlers[_t] = _canonicalize_ndarray
for _t in (int, float, complex, bool):
    canonicalize_dtype_handlers[_t] = _canonicalize_scalar
del _t


def apply_primitive(prim, *args, **params):
    """``prim`` bound to ``args`` eagerly (outside every transformation)."""
    with _core.set_current_trace(_core.EVAL_TRACE):
        return prim.bind(*args, **params)


def __getattr__(name):
    raise AttributeError(
        f"module 'jax.interpreters.xla' (aliased to xform) has no attribute {name!r}: "
        "xform serves canonicalize_dtype_handlers and apply_primitive (JAX's Backend is "
        "an XLA client; xform's devices are in xform.devices())")

"""``xform.interpreters.xla``: JAX 0.10.2's ``jax.interpreters.xla`` names.

``canonicalize_dtype_handlers`` maps a Python type to the function that turns one of its
values into a canonical-dtype NumPy value (JAX's ``dtypes.canonicalize_value_handlers``);
libraries register their own array types by copying the entry of ``np.ndarray``
(TensorFlow Probability's JAX substrate does, for its ``NumpyVariable``).  xform's
argument handling accepts NumPy arrays and their subclasses directly, so the table
serves such registrations and ``canonicalize``.  ``apply_primitive`` binds a primitive
eagerly; ``Backend`` is jaxlib's client class.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import core as _core
from xform._src.interpreters.dtypes import canonicalize_dtype as _canonicalize_dtype

__all__ = ["Backend", "apply_primitive", "canonicalize_dtype_handlers"]


def _canonical_numpy(x):
    x = np.asarray(x)
    dt = _canonicalize_dtype(x.dtype)
    return x if x.dtype == dt else x.astype(dt)


def _canonical_scalar(x):
    return np.asarray(x, _core.get_aval(x).dtype)


canonicalize_dtype_handlers: dict = {t: _canonical_scalar for t in (int, float, complex, bool)}
canonicalize_dtype_handlers.update(
    {t: _canonical_numpy for t in (np.ndarray, *{np.dtype(c).type for c in "?bBhHiIlLqQefdgFDG"})})
canonicalize_dtype_handlers[_core.Array] = lambda x: x


def canonicalize(x):
    """``x`` with its dtype canonicalized, through the handler of its type."""
    handler = canonicalize_dtype_handlers.get(type(x))
    if handler is None:
        raise TypeError(f"No canonicalize_dtype handler for type {type(x).__name__}: "
                        "register one in jax.interpreters.xla.canonicalize_dtype_handlers")
    return handler(x)


def apply_primitive(prim, *args, **params):
    """Bind ``prim`` to ``args`` eagerly (outside every transformation)."""
    with _core.set_current_trace(_core.EVAL_TRACE):
        return prim.bind(*args, **params)


def __getattr__(name):
    if name == "Backend":   # jaxlib loads lazily (import xform stays light)
        from jaxlib import _jax
        return _jax.Client
    raise AttributeError(
        f"module 'jax.interpreters.xla' (aliased to xform) has no attribute {name!r}")

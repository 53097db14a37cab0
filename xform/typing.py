"""``xform.typing``: annotation types (``jax.typing``)."""
from typing import Any, Union

import numpy as _np

from xform._array_type import Array as _Array

__all__ = ["ArrayLike", "DTypeLike"]

# Anything xform.numpy accepts as an array: Arrays/tracers, NumPy arrays and scalars,
# Python scalars.
ArrayLike = Union[_Array, _np.ndarray, _np.bool_, _np.number, bool, int, float, complex]

# Anything that names a dtype: a str ('float32'), a type (np.float32, float), a dtype,
# or an object with a .dtype.
DTypeLike = Union[str, type[Any], _np.dtype, Any]

"""``jax._src.dtypes`` under the alias: ``xform.dtypes`` plus the few internal names
libraries use (``ExtendedDType``, ``DType``, ``supports_inf``)."""
from __future__ import annotations

import numpy as _np

from xform._src.interpreters.dtypes import ExtendedDType  # noqa: F401
from xform.dtypes import *  # noqa: F401,F403
from xform.dtypes import TypePromotionError, canonicalize_dtype, extended, finfo  # noqa: F401

DType = _np.dtype


def supports_inf(dtype) -> bool:
    """Whether the floating dtype has infinities (the float8 ``fn`` formats do not)."""
    dtype = _np.dtype(dtype)
    if dtype.kind not in "fc" and "float" not in dtype.name:
        return False
    with _np.errstate(over="ignore"):
        return bool(_np.isinf(finfo(dtype).max * _np.array(2, dtype)))

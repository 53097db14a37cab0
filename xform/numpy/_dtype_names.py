"""The narrow dtype names of ``jax.numpy`` (int1/2/4, uint1/2/4, float4/6/8 variants) and
the Array-API alias ``bool``, as callable scalar types like ``xnp.float32``."""
from __future__ import annotations

import ml_dtypes

from xform.numpy._creation import _scalar_type, bool_

bool = bool_  # noqa: A001  (the Array API name, as jnp.bool)

_NAMES = ("int1", "uint1", "int2", "uint2", "int4", "uint4", "float4_e2m1fn", "float6_e2m3fn",
          "float6_e3m2fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
          "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")

__all__ = ["bool"]
for _n in _NAMES:
    if hasattr(ml_dtypes, _n):
        globals()[_n] = _scalar_type(_n, getattr(ml_dtypes, _n))
        __all__.append(_n)
del _n

"""The narrow dtype names of ``jax.numpy`` (int1/2/4, uint1/2/4, float4/6/8 variants) and
the Array-API alias ``bool``, as callable scalar types like ``xnp.float32``.

The narrow ones are ml_dtypes' types, made on first access (``__getattr__``; importing
ml_dtypes costs ~0.5 s, which ``import xform`` does not pay); ``xform.numpy`` lists them
in its ``__all__`` and forwards its own ``__getattr__`` here."""
from __future__ import annotations

from xform.numpy._creation import _scalar_type, bool_

bool = bool_  # noqa: A001  (the Array API name, as jnp.bool)

_NAMES = ("int1", "uint1", "int2", "uint2", "int4", "uint4", "float4_e2m1fn", "float6_e2m3fn",
          "float6_e3m2fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
          "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")

__all__ = ["bool"]


def __getattr__(name):
    if name in _NAMES:
        import ml_dtypes  # deferred: keeps `import xform` light
        t = getattr(ml_dtypes, name, None)
        if t is not None:
            value = globals()[name] = _scalar_type(name, t)
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

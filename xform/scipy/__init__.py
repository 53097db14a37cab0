"""``xform.scipy``: the parts of ``jax.scipy`` xform provides (``special``)."""
from xform.scipy import special  # noqa: F401
from xform.scipy import linalg  # noqa: F401,E402  (h-linalg13)

__all__ = ["special"]

"""``xform.scipy.integrate``: ``trapezoid`` (``jax.scipy.integrate``)."""
from __future__ import annotations
from xform import numpy as xnp

__all__ = ["trapezoid"]


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integrate ``y`` along ``axis`` by the trapezoidal rule (sample points ``x`` or a
    constant spacing ``dx``)."""
    return xnp.trapezoid(y, x, dx, axis)

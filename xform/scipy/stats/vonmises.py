"""``xform.scipy.stats.vonmises``: the von Mises distribution (``jax.scipy.stats.vonmises``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401
from xform import lax

__all__ = ['logpdf', 'pdf']

def logpdf(x, kappa):
    x, kappa = promote("vonmises.logpdf", x, kappa)
    val = kappa * (xnp.cos(x) - 1) - xnp.log(2 * np.pi * lax.bessel_i0e(kappa))
    return xnp.where(kappa > const(kappa, 0), val, np.nan)


def pdf(x, kappa):
    return xnp.exp(logpdf(x, kappa))

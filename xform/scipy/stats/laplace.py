"""``xform.scipy.stats.laplace``: the Laplace distribution (``jax.scipy.stats.laplace``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpdf', 'pdf', 'cdf']

def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("laplace.logpdf", x, loc, scale)
    return -(xnp.abs(x - loc) / scale + xnp.log(const(x, 2) * scale))


def pdf(x, loc=0, scale=1):
    return xnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote("laplace.cdf", x, loc, scale)
    half, one = const(x, 0.5), const(x, 1)
    d = (x - loc) / scale
    return xnp.where(d <= 0, half * xnp.exp(d), one - half * xnp.exp(-d))

"""``xform.scipy.stats.gennorm``: the generalized normal distribution (``jax.scipy.stats.gennorm``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401
from xform import lax

__all__ = ['logpdf', 'pdf', 'cdf']

def logpdf(x, beta):
    x, beta = promote("gennorm.logpdf", x, beta)
    return xnp.log(0.5 * beta) - special.gammaln(1 / beta) - xnp.abs(x) ** beta


def cdf(x, beta):
    x, beta = promote("gennorm.cdf", x, beta)
    return 0.5 * (1 + xnp.sign(x) * lax.igamma(1 / beta, xnp.abs(x) ** beta))


def pdf(x, beta):
    return xnp.exp(logpdf(x, beta))

"""``xform.scipy.stats.expon``: the exponential distribution (``jax.scipy.stats.expon``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpdf', 'pdf', 'cdf', 'logcdf', 'sf', 'logsf', 'ppf']

def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("expon.logpdf", x, loc, scale)
    log_probs = -((x - loc) / scale + xnp.log(scale))
    return xnp.where(x < loc, -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
    return xnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote("expon.cdf", x, loc, scale)
    nz = (loc - x) / scale
    return xnp.where(x < loc, xnp.zeros_like(nz), -xnp.expm1(nz))


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote("expon.sf", x, loc, scale)
    nz = (loc - x) / scale
    return xnp.where(x < loc, xnp.zeros_like(nz), nz)


def sf(x, loc=0, scale=1):
    return xnp.exp(logsf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    return xnp.log1p(-sf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote("expon.ppf", q, loc, scale)
    return xnp.where(xnp.isnan(q) | (q < 0) | (q > 1), np.nan, loc - scale * xnp.log1p(-q))

"""``xform.scipy.stats.gumbel_r``: the right-skewed Gumbel distribution (``jax.scipy.stats.gumbel_r``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpdf', 'pdf', 'logcdf', 'cdf', 'ppf', 'sf', 'logsf']

def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_r.logpdf", x, loc, scale)
    z = (x - loc) / scale
    out = special.xlogy(-1, scale) + -(z + xnp.exp(-z))
    return xnp.where(scale > 0, out, np.nan)


def pdf(x, loc=0, scale=1):
    return xnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_r.logcdf", x, loc, scale)
    z = (x - loc) / scale
    return xnp.where(scale > 0, -xnp.exp(-z), np.nan)


def cdf(x, loc=0, scale=1):
    return xnp.exp(logcdf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
    ok = (p > 0) & (p < 1)
    q = loc - scale * xnp.log(special.xlogy(-1, p))
    return xnp.where(ok, q, np.nan)


def sf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_r.sf", x, loc, scale)
    nz = (loc - x) / scale
    return xnp.where(scale > 0, const(x, 1) - xnp.exp(-xnp.exp(nz)), np.nan)


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_r.logsf", x, loc, scale)
    from xform.nn import log1mexp  # deferred: import cycle
    nz = (loc - x) / scale
    return xnp.where(scale > 0, log1mexp(xnp.exp(nz)), np.nan)

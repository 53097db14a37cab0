"""``xform.scipy.stats.pareto``: the Pareto distribution (``jax.scipy.stats.pareto``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpdf', 'pdf', 'cdf', 'logcdf', 'logsf', 'sf', 'ppf']

def logpdf(x, b, loc=0, scale=1):
    x, b, loc, scale = promote("pareto.logpdf", x, b, loc, scale)
    one = const(x, 1)
    z = (x - loc) / scale
    log_probs = -(xnp.log(scale / b) + (b + one) * xnp.log(z))
    return xnp.where(x < loc + scale, -np.inf, log_probs)


def pdf(x, b, loc=0, scale=1):
    return xnp.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    x, b, loc, scale = promote("pareto.cdf", x, b, loc, scale)
    z = (x - loc) / scale
    return xnp.where(x < loc + scale, const(x, 0), const(x, 1) - xnp.power(z, -b))


def logcdf(x, b, loc=0, scale=1):
    x, b, loc, scale = promote("pareto.logcdf", x, b, loc, scale)
    z = (x - loc) / scale
    return xnp.where(x < loc + scale, -np.inf, xnp.log1p(-xnp.power(z, -b)))


def logsf(x, b, loc=0, scale=1):
    x, b, loc, scale = promote("pareto.logsf", x, b, loc, scale)
    z = (x - loc) / scale
    return xnp.where(x < loc + scale, const(x, 0), -(b * xnp.log(z)))


def sf(x, b, loc=0, scale=1):
    return xnp.exp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
    q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
    one = const(q, 1)
    val = loc + scale * xnp.power(one - q, -(one / b))
    return xnp.where(xnp.isnan(q) | (q < 0) | (q > 1), np.nan, val)

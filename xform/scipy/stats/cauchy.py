"""``xform.scipy.stats.cauchy``: the Cauchy distribution (``jax.scipy.stats.cauchy``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpdf', 'pdf', 'cdf', 'logcdf', 'sf', 'logsf', 'isf', 'ppf']

def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("cauchy.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return -(xnp.log(const(x, np.pi) * scale) + xnp.log1p(z * z))


def pdf(x, loc=0, scale=1):
    return xnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote("cauchy.cdf", x, loc, scale)
    z = (x - loc) / scale
    return const(x, 0.5) + (const(x, 1.0) / const(x, np.pi)) * xnp.arctan(z)


def logcdf(x, loc=0, scale=1):
    return xnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    x, loc, scale = promote("cauchy.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote("cauchy.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def isf(q, loc=0, scale=1):
    q, loc, scale = promote("cauchy.isf", q, loc, scale)
    return xnp.tan(const(q, np.pi / 2) - const(q, np.pi) * q) * scale + loc


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote("cauchy.ppf", q, loc, scale)
    return xnp.tan(const(q, np.pi) * q - const(q, np.pi / 2)) * scale + loc

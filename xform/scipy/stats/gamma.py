"""``xform.scipy.stats.gamma``: the gamma distribution (``jax.scipy.stats.gamma``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpdf', 'pdf', 'cdf', 'logcdf', 'sf', 'logsf']

def logpdf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
    ok = x >= loc
    one = const(x, 1)
    y = xnp.where(ok, (x - loc) / scale, one)
    log_linear = special.xlogy(a - one, y) - y
    shape_terms = special.gammaln(a) + xnp.log(scale)
    return xnp.where(ok, log_linear - shape_terms, -np.inf)


def pdf(x, a, loc=0, scale=1):
    return xnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote("gamma.cdf", x, a, loc, scale)
    return special.gammainc(a, xnp.clip((x - loc) / scale, const(x, 0), const(x, np.inf)))


def logcdf(x, a, loc=0, scale=1):
    return xnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote("gamma.sf", x, a, loc, scale)
    y = (x - loc) / scale
    return xnp.where(y < 0, 1, special.gammaincc(a, y))


def logsf(x, a, loc=0, scale=1):
    return xnp.log(sf(x, a, loc, scale))

"""``xform.scipy.stats.chi2``: the chi-squared distribution (``jax.scipy.stats.chi2``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpdf', 'pdf', 'cdf', 'logcdf', 'sf', 'logsf']

def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
    one, two = const(x, 1), const(x, 2)
    y = (x - loc) / scale
    half = df / two
    kernel = (half - one) * xnp.log(y) - y / two
    nrml = -(special.gammaln(half) + xnp.log(two) * df / two)
    log_probs = nrml - xnp.log(scale) + kernel
    return xnp.where(x < loc, -np.inf, log_probs)


def pdf(x, df, loc=0, scale=1):
    return xnp.exp(logpdf(x, df, loc, scale))


def _y(x, loc, scale):
    return xnp.clip((x - loc) / (scale * const(scale, 2)), const(x, 0), const(x, np.inf))


def cdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("chi2.cdf", x, df, loc, scale)
    return special.gammainc(df / const(scale, 2), _y(x, loc, scale))


def logcdf(x, df, loc=0, scale=1):
    return xnp.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("chi2.sf", x, df, loc, scale)
    return special.gammaincc(df / const(scale, 2), _y(x, loc, scale))


def logsf(x, df, loc=0, scale=1):
    return xnp.log(sf(x, df, loc, scale))

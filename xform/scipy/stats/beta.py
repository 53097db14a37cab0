"""``xform.scipy.stats.beta``: the beta distribution (``jax.scipy.stats.beta``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpdf', 'pdf', 'cdf', 'logcdf', 'sf', 'logsf']

def logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
    one = const(x, 1)
    shape_term = -special.betaln(a, b)
    y = (x - loc) / scale
    log_linear = special.xlogy(a - one, y) + special.xlog1py(b - one, -y)
    log_probs = shape_term + log_linear - xnp.log(scale)
    result = xnp.where((x > loc + scale) | (x < loc), -np.inf, log_probs)
    return xnp.where((a <= 0) | (b <= 0) | (scale <= 0), np.nan, result)


def pdf(x, a, b, loc=0, scale=1):
    return xnp.exp(logpdf(x, a, b, loc, scale))


def _unit(x, loc, scale):
    return xnp.clip((x - loc) / scale, const(x, 0), const(x, 1))


def cdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("beta.cdf", x, a, b, loc, scale)
    return special.betainc(a, b, _unit(x, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    return xnp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("beta.sf", x, a, b, loc, scale)
    return special.betainc(b, a, 1 - _unit(x, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    return xnp.log(sf(x, a, b, loc, scale))

"""``xform.scipy.stats.truncnorm``: the truncated normal distribution (``jax.scipy.stats.truncnorm``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401
from xform.scipy.stats import norm

__all__ = ['logpdf', 'pdf', 'logsf', 'sf', 'logcdf', 'cdf']

def _log_diff(x, y):
    return special.logsumexp(xnp.stack([x, y]), b=xnp.stack([xnp.ones_like(x), -xnp.ones_like(y)]),
                             axis=0)


def _log_gauss_mass(a, b):
    a, b = xnp.broadcast_arrays(xnp.asarray(a), xnp.asarray(b))
    left = b <= 0
    right = a > 0
    central = ~(left | right)
    a_tail = xnp.where(right, -b, a)
    b_tail = xnp.where(right, -a, b)
    tail = _log_diff(special.log_ndtr(b_tail), special.log_ndtr(a_tail))
    mid = xnp.log1p(-special.ndtr(a) - special.ndtr(-b))
    return xnp.where(central, mid, tail)


def logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale)
    val = norm.logpdf(x, loc, scale) - _log_gauss_mass(a, b)
    z = (x - loc) / scale
    val = xnp.where((z < a) | (z > b), -np.inf, val)
    return xnp.where(a >= b, np.nan, val)


def pdf(x, a, b, loc=0, scale=1):
    return xnp.exp(logpdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale)
    return logcdf(-x, -b, -a, -loc, scale)


def sf(x, a, b, loc=0, scale=1):
    return xnp.exp(logsf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("truncnorm.logcdf", x, a, b, loc, scale)
    x, a, b = xnp.broadcast_arrays(x, a, b)
    x = (x - loc) / scale
    lgm_ab = _log_gauss_mass(a, b)
    lcdf = _log_gauss_mass(a, x) - lgm_ab
    lsf = _log_gauss_mass(x, b) - lgm_ab
    out = select([x >= b, x <= a, lcdf > -0.1, x > a],
                 [const(x, 0), const(x, -np.inf), xnp.log1p(-xnp.exp(lsf)), lcdf],
                 xnp.zeros_like(x))
    return xnp.where(a >= b, np.nan, out)


def cdf(x, a, b, loc=0, scale=1):
    return xnp.exp(logcdf(x, a, b, loc, scale))

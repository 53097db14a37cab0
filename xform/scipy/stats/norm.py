"""``xform.scipy.stats.norm``: the normal distribution (``jax.scipy.stats.norm``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401
from xform._src.interpreters import dtypes

__all__ = ['logpdf', 'pdf', 'cdf', 'logcdf', 'ppf', 'logsf', 'sf', 'isf']

def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("norm.logpdf", x, loc, scale)
    s2 = xnp.square(scale)
    log_normalizer = xnp.log(const(x, 2 * np.pi) * s2)
    quadratic = xnp.square(x - loc) / s2
    return (log_normalizer + quadratic) / const(x, -2)


def pdf(x, loc=0, scale=1):
    return xnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote("norm.cdf", x, loc, scale)
    return special.ndtr((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
    x, loc, scale = promote("norm.logcdf", x, loc, scale)
    return special.log_ndtr((x - loc) / scale)


def ppf(q, loc=0, scale=1):
    q = xnp.asarray(q)
    out = special.ndtri(q) * scale + loc
    return xnp.asarray(out, dtypes.canonicalize_dtype(float) if hasattr(
        dtypes, "canonicalize_dtype") else float)


def logsf(x, loc=0, scale=1):
    x, loc, scale = promote("norm.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def sf(x, loc=0, scale=1):
    x, loc, scale = promote("norm.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def isf(q, loc=0, scale=1):
    q = xnp.asarray(q)
    return ppf(const(q, 1) - q, loc, scale)

"""``xform.scipy.stats.logistic``: the logistic distribution (``jax.scipy.stats.logistic``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpdf', 'pdf', 'ppf', 'sf', 'isf', 'cdf']

def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.logpdf", x, loc, scale)
    x = (x - loc) / scale
    h = x / const(x, 2)
    return -const(x, 2) * xnp.logaddexp(h, -h) - xnp.log(scale)


def pdf(x, loc=0, scale=1):
    return xnp.exp(logpdf(x, loc, scale))


def ppf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.ppf", x, loc, scale)
    return special.logit(x) * scale + loc


def sf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.sf", x, loc, scale)
    return special.expit(-((x - loc) / scale))


def isf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.isf", x, loc, scale)
    return -special.logit(x) * scale + loc


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.cdf", x, loc, scale)
    return special.expit((x - loc) / scale)

"""``xform.scipy.stats.uniform``: the uniform distribution (``jax.scipy.stats.uniform``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpdf', 'pdf', 'cdf', 'ppf']

def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("uniform.logpdf", x, loc, scale)
    log_probs = -xnp.log(scale)
    return xnp.where((x > loc + scale) | (x < loc), -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
    return xnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = promote("uniform.cdf", x, loc, scale)
    zero, one = xnp.array(0, x.dtype), xnp.array(1, x.dtype)
    conds = [x < loc, x > loc + scale, (x >= loc) & (x <= loc + scale)]
    return select(conds, [zero, one, (x - loc) / scale], xnp.zeros_like(x - loc + scale))


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote("uniform.ppf", q, loc, scale)
    return xnp.where(xnp.isnan(q) | (q < 0) | (q > 1), np.nan, loc + scale * q)

"""``xform.scipy.stats.bernoulli``: the Bernoulli distribution (``jax.scipy.stats.bernoulli``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpmf', 'pmf', 'cdf', 'ppf']

def logpmf(k, p, loc=0):
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    x = k - loc
    log_probs = special.xlogy(x, p) + special.xlog1py(const(k, 1) - x, -p)
    return xnp.where((x < 0) | (x > 1), -np.inf, log_probs)


def pmf(k, p, loc=0):
    return xnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    k, p = promote("bernoulli.cdf", k, p)
    zero, one = const(k, 0), const(k, 1)
    conds = [xnp.isnan(k) | xnp.isnan(p) | (p < zero) | (p > one), k < zero,
             (k >= zero) & (k < one), k >= one]
    return select(conds, [const(k, np.nan), zero, one - p, one], xnp.zeros_like(k + p))


def ppf(q, p):
    q, p = promote("bernoulli.ppf", q, p)
    zero, one = const(q, 0), const(q, 1)
    bad = xnp.isnan(q) | xnp.isnan(p) | (p < zero) | (p > one) | (q < zero) | (q > one)
    return xnp.where(bad, np.nan, xnp.where(q <= one - p, zero, one))

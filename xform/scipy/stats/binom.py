"""``xform.scipy.stats.binom``: the binomial distribution (``jax.scipy.stats.binom``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpmf', 'pmf']

def logpmf(k, n, p, loc=0):
    k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
    y = k - loc
    zero = const(y, 0)
    comb_term = special.gammaln(n + 1) - (special.gammaln(y + 1) + special.gammaln(n - y + 1))
    log_linear = special.xlogy(y, p) + special.xlog1py(n - y, -p)
    log_probs = comb_term + log_linear
    log_probs = xnp.where(((y == zero) & (n == zero)) | (log_linear == zero), 0.0, log_probs)
    return xnp.where((k >= loc) & (k < loc + n + 1), log_probs, -np.inf)


def pmf(k, n, p, loc=0):
    return xnp.exp(logpmf(k, n, p, loc))

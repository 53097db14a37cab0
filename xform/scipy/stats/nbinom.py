"""``xform.scipy.stats.nbinom``: the negative binomial distribution (``jax.scipy.stats.nbinom``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpmf', 'pmf']

def logpmf(k, n, p, loc=0):
    k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
    one = const(k, 1)
    y = k - loc
    comb = special.gammaln(y + n) - special.gammaln(n) - special.gammaln(y + one)
    log_linear = special.xlogy(n, p) + special.xlogy(y, one - p)
    return xnp.where(k < loc, -np.inf, comb + log_linear)


def pmf(k, n, p, loc=0):
    return xnp.exp(logpmf(k, n, p, loc))

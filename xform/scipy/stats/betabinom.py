"""``xform.scipy.stats.betabinom``: the beta-binomial distribution (``jax.scipy.stats.betabinom``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpmf', 'pmf']

def logpmf(k, n, a, b, loc=0):
    k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
    y = xnp.floor(k) - loc
    one, zero = const(y, 1), const(y, 0)
    combiln = -(xnp.log1p(n) + special.betaln(n - y + one, y + one))
    beta_lns = special.betaln(y + a, n - y + b) - special.betaln(a, b)
    log_probs = combiln + beta_lns
    log_probs = xnp.where((y == zero) & (n == zero), 0.0, log_probs)
    log_probs = xnp.where((y < -loc) | (y > n) | (y + a <= zero), -np.inf, log_probs)
    return xnp.where((n < zero) | (a <= zero) | (b <= zero), np.nan, log_probs)


def pmf(k, n, a, b, loc=0):
    return xnp.exp(logpmf(k, n, a, b, loc))

"""``xform.scipy.stats.poisson``: the Poisson distribution (``jax.scipy.stats.poisson``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401
from xform.numpy import _util as U

__all__ = ['logpmf', 'pmf', 'cdf', 'entropy']

def logpmf(k, mu, loc=0):
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    x = k - loc
    log_probs = special.xlogy(x, mu) - special.gammaln(x + 1) - mu
    return xnp.where((x < 0) | (xnp.round(k) != k), -np.inf, log_probs)


def pmf(k, mu, loc=0):
    return xnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    x = k - loc
    p = special.gammaincc(xnp.floor(1 + x), mu)
    return xnp.where(x < 0, const(k, 0), p)


def _entropy_sum(mu, max_k, upper):
    k = xnp.arange(max_k, dtype=mu.dtype)[:, None]
    probs = pmf(k, mu, 0)
    mask = k < xnp.ceil(upper).astype(k.dtype)[None, :]
    return xnp.sum(special.entr(xnp.where(mask, probs, 0.0)), axis=0)


def entropy(mu, loc=0):
    """Entropy of Poisson(mu): explicit sums below mu = 100, the asymptotic series above."""
    U.check_arraylike("poisson.entropy", mu, loc)
    mu, loc = U.promote_dtypes_inexact(U.to_array(mu), U.to_array(loc))
    shape = np.broadcast_shapes(mu.shape, loc.shape)
    m = xnp.ravel(mu)
    small = _entropy_sum(m, 35, m + 20)
    medium = _entropy_sum(m, 250, m + 10 * xnp.sqrt(m) + 20)
    large = 0.5 * xnp.log(2 * np.pi * np.e * m) - 1.0 / (12 * m)
    res = xnp.where(m == 0, xnp.zeros_like(m),
                    xnp.where(m < 10, small, xnp.where(m < 100, medium, large)))
    return xnp.broadcast_to(xnp.reshape(res, mu.shape), shape)

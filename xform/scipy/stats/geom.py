"""``xform.scipy.stats.geom``: the geometric distribution (``jax.scipy.stats.geom``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpmf', 'pmf']

def logpmf(k, p, loc=0):
    k, p, loc = promote("geom.logpmf", k, p, loc)
    x = k - loc
    log_probs = special.xlog1py(x - const(k, 1), -p) + xnp.log(p)
    return xnp.where(x <= 0, -np.inf, log_probs)


def pmf(k, p, loc=0):
    return xnp.exp(logpmf(k, p, loc))

"""``xform.scipy.stats.wrapcauchy``: the wrapped Cauchy distribution (``jax.scipy.stats.wrapcauchy``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpdf', 'pdf']

def logpdf(x, c):
    x, c = promote("wrapcauchy.logpdf", x, c)
    inner = xnp.where((x >= const(x, 0)) & (x <= const(x, np.pi * 2)),
                      xnp.log(1 - c * c) - xnp.log(2 * np.pi)
                      - xnp.log(1 + c * c - 2 * c * xnp.cos(x)), -np.inf)
    return xnp.where((c > const(c, 0)) & (c < const(c, 1)), inner, np.nan)


def pdf(x, c):
    return xnp.exp(logpdf(x, c))

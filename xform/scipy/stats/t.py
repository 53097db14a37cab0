"""``xform.scipy.stats.t``: Student's t distribution (``jax.scipy.stats.t``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401

__all__ = ['logpdf', 'pdf']

def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
    two = const(x, 2)
    z = (x - loc) / scale
    half = df / two
    half_plus = half + const(x, 0.5)
    norm_const = scale * scale * const(x, np.pi)
    norm_tmp = xnp.log(norm_const * df) / two
    normalize = special.gammaln(half) + norm_tmp - special.gammaln(half_plus)
    return -(normalize + half_plus * xnp.log1p(z * z / df))


def pdf(x, df, loc=0, scale=1):
    return xnp.exp(logpdf(x, df, loc, scale))

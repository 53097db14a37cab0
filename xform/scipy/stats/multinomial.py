"""``xform.scipy.stats.multinomial``: the multinomial distribution (``jax.scipy.stats.multinomial``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401
from xform._src.interpreters import dtypes
from xform.numpy import _util as U

__all__ = ['logpmf', 'pmf']

def logpmf(x, n, p):
    (p,) = promote("multinomial.logpmf", p)
    U.check_arraylike("multinomial.logpmf", x, n)
    x, n = U.promote_dtypes_numeric(U.to_array(x), U.to_array(n))
    if not dtypes.issubdtype(x.dtype, np.integer):
        raise ValueError(f"x and n must be of integer type; got x.dtype={x.dtype}, "
                         f"n.dtype={n.dtype}")
    x = x.astype(p.dtype)
    n = n.astype(p.dtype)
    logprobs = special.gammaln(n + 1) + xnp.sum(special.xlogy(x, p) - special.gammaln(x + 1),
                                                axis=-1)
    return xnp.where(xnp.equal(xnp.sum(x), n), logprobs, -np.inf)


def pmf(x, n, p):
    return xnp.exp(logpmf(x, n, p))

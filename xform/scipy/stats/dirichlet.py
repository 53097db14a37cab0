"""``xform.scipy.stats.dirichlet``: the Dirichlet distribution (``jax.scipy.stats.dirichlet``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401
from xform.numpy import _util as U

__all__ = ['logpdf', 'pdf']

def _is_simplex(x):
    return xnp.all(x > 0, axis=0) & (xnp.abs(xnp.sum(x, axis=0) - 1) < 1e-6)


def logpdf(x, alpha):
    x, alpha = _promote_only(x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError("`x` must have either the same number of entries as `alpha` or one "
                         f"entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
    one = const(x, 1)
    if x.shape[0] != alpha.shape[0]:
        x = xnp.concatenate([x, one - x.sum(0, keepdims=True)], axis=0)
    normalize = xnp.sum(special.gammaln(alpha)) - special.gammaln(xnp.sum(alpha))
    if x.ndim > 1:
        alpha = alpha.reshape(alpha.shape + (1,) * (x.ndim - 1))
    log_probs = xnp.sum(special.xlogy(alpha - one, x), axis=0) - normalize
    return xnp.where(_is_simplex(x), log_probs, -np.inf)


def _promote_only(x, alpha):
    U.check_arraylike("dirichlet.logpdf", x, alpha)
    return U.promote_dtypes_inexact(U.to_array(x), U.to_array(alpha))


def pdf(x, alpha):
    return xnp.exp(logpdf(x, alpha))

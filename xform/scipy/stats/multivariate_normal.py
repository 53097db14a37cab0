"""``xform.scipy.stats.multivariate_normal``: the multivariate normal distribution (``jax.scipy.stats.multivariate_normal``'s functions)."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.scipy import special
from xform.scipy.stats._common import const, promote, select  # noqa: F401
from xform import lax
from xform.numpy import _util as U

__all__ = ['logpdf', 'pdf']

def logpdf(x, mean, cov, allow_singular=None):
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf is not "
                                  "supported (as in JAX); leave it None.")
    U.check_arraylike("multivariate_normal.logpdf", x, mean, cov)
    x, mean, cov = U.promote_dtypes_inexact(U.to_array(x), U.to_array(mean), U.to_array(cov))
    if not mean.shape:
        return (-1 / 2 * xnp.square(x - mean) / cov
                - 1 / 2 * (xnp.log(2 * np.pi) + xnp.log(cov)))
    n = mean.shape[-1]
    if not np.shape(cov):
        y = x - mean
        return (-1 / 2 * xnp.einsum("...i,...i->...", y, y) / cov
                - n / 2 * (xnp.log(2 * np.pi) + xnp.log(cov)))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes: mean "
                         f"{mean.shape}, cov {cov.shape} (cov must end in ({n}, {n}))")
    L = lax.linalg.cholesky(cov)
    solve = xnp.vectorize(
        lambda l, b: lax.linalg.triangular_solve(l, b, lower=True, transpose_a=True),
        signature="(n,n),(n)->(n)")
    y = solve(L, x - mean)
    return (-1 / 2 * xnp.einsum("...i,...i->...", y, y) - n / 2 * xnp.log(2 * np.pi)
            - xnp.log(xnp.diagonal(L, axis1=-1, axis2=-2)).sum(-1))


def pdf(x, mean, cov):
    return xnp.exp(logpdf(x, mean, cov))

"""``gaussian_kde``: Gaussian kernel density estimation (``jax.scipy.stats.gaussian_kde``)."""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import dtypes
from xform._src.interpreters.tree_util import register_pytree_node_class
from xform import numpy as xnp
from xform.numpy import _util as U
from xform.scipy import special
from xform import random
from xform._vmap import vmap
from xform.scipy import linalg

__all__ = ["gaussian_kde"]


@register_pytree_node_class
class gaussian_kde:
    """A Gaussian KDE of ``dataset`` (d, n) with Scott's / Silverman's / a given bandwidth;
    a pytree (usable inside jit/vmap), immutable after construction."""

    __slots__ = ("neff", "dataset", "weights", "covariance", "inv_cov")

    def __init__(self, dataset, bw_method=None, weights=None):
        U.check_arraylike("gaussian_kde", dataset)
        dataset = xnp.atleast_2d(dataset)
        if dtypes.issubdtype(dataset.dtype, np.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        d, n = dataset.shape
        if weights is not None:
            U.check_arraylike("gaussian_kde", weights)
            dataset, weights = U.promote_dtypes_inexact(dataset, U.to_array(weights))
            weights = xnp.atleast_1d(weights)
            weights = weights / xnp.sum(weights)
            if weights.ndim != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if len(weights) != n:
                raise ValueError("`weights` input should be of length n")
        else:
            (dataset,) = U.promote_dtypes_inexact(dataset)
            weights = xnp.full(n, 1.0 / n, dtype=dataset.dtype)
        self._set("dataset", dataset)
        self._set("weights", weights)
        neff = self._set("neff", 1 / xnp.sum(weights ** 2))
        bw_method = "scott" if bw_method is None else bw_method
        if isinstance(bw_method, str) and bw_method == "scott":
            factor = xnp.power(neff, -1.0 / (d + 4))
        elif isinstance(bw_method, str) and bw_method == "silverman":
            factor = xnp.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif np.isscalar(bw_method) and not isinstance(bw_method, str) or \
                (hasattr(bw_method, "shape") and np.ndim(bw_method) == 0):
            factor = bw_method
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a "
                             "callable.")
        cov = xnp.atleast_2d(xnp.cov(dataset, rowvar=1, bias=False, aweights=weights))
        inv = xnp.linalg.inv(cov)
        self._set("covariance", cov * factor ** 2)
        self._set("inv_cov", inv / factor ** 2)

    def _set(self, name, value):
        object.__setattr__(self, name, value)
        return value

    def __setattr__(self, name, value):
        raise AttributeError(f"gaussian_kde is immutable: cannot set {name!r}")

    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        kde = cls.__new__(cls)
        for name, v in zip(cls.__slots__, children):
            kde._set(name, v)
        return kde

    @property
    def d(self):
        return self.dataset.shape[0]

    @property
    def n(self):
        return self.dataset.shape[1]

    def evaluate(self, points):
        U.check_arraylike("evaluate", points)
        points = self._reshape_points(points)
        return _kernel_eval(False, self.dataset.T, self.weights[:, None], points.T,
                            self.inv_cov)[:, 0]

    def __call__(self, points):
        return self.evaluate(points)

    def pdf(self, x):
        return self.evaluate(x)

    def logpdf(self, x):
        U.check_arraylike("logpdf", x)
        x = self._reshape_points(x)
        return _kernel_eval(True, self.dataset.T, self.weights[:, None], x.T, self.inv_cov)[:, 0]

    def integrate_gaussian(self, mean, cov):
        mean = xnp.atleast_1d(xnp.squeeze(mean))
        cov = xnp.atleast_2d(cov)
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        chol = linalg.cho_factor(self.covariance + cov)
        norm = 1.0 / (xnp.sqrt(2 * np.pi) ** self.d * xnp.prod(xnp.diag(chol[0])))
        return _kernel_convolve(chol, norm, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low, high):
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = xnp.squeeze(xnp.sqrt(self.covariance))
        low = xnp.squeeze((low - self.dataset) / sigma)
        high = xnp.squeeze((high - self.dataset) / sigma)
        return xnp.sum(self.weights * (special.ndtr(high) - special.ndtr(low)))

    def integrate_kde(self, other):
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        chol = linalg.cho_factor(self.covariance + other.covariance)
        norm = 1.0 / (xnp.sqrt(2 * np.pi) ** self.d * xnp.prod(xnp.diag(chol[0])))
        sm, lg = (self, other) if self.n < other.n else (other, self)
        res = vmap(lambda m: _kernel_convolve(chol, norm, lg.dataset, lg.weights, m),
                   in_axes=1)(sm.dataset)
        return xnp.sum(res * sm.weights)

    def resample(self, key, shape=()):
        ind_key, eps_key = random.split(key)
        ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
        eps = random.multivariate_normal(eps_key, xnp.zeros(self.d, self.covariance.dtype),
                                         self.covariance, shape=shape,
                                         dtype=self.dataset.dtype).T
        return self.dataset[:, ind] + eps

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        raise NotImplementedError("only 1D box integrations are supported (as in JAX); use "
                                  "`integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        raise NotImplementedError("dynamically changing the bandwidth method is not supported "
                                  "(as in JAX); build a new gaussian_kde")

    def _reshape_points(self, points):
        points = xnp.asarray(points)
        if dtypes.issubdtype(points.dtype, np.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        points = xnp.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                points = xnp.reshape(points, (self.d, 1))
            else:
                raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points


def _kernel_convolve(chol, norm, target, weights, mean):
    diff = target - mean[:, None]
    alpha = linalg.cho_solve(chol, diff)
    arg = 0.5 * xnp.sum(diff * alpha, axis=0)
    return norm * xnp.sum(xnp.exp(-arg) * weights)


def _kernel_eval(in_log, points, values, xi, precision):
    points, values, xi, precision = U.promote_dtypes_inexact(points, values, xi, precision)
    d = points.shape[1]
    if xi.shape[1] != d:
        raise ValueError("points and xi must have same trailing dim")
    if precision.shape != (d, d):
        raise ValueError("precision matrix must match data dims")
    whitening = linalg.cholesky(precision, lower=True)
    points = xnp.dot(points, whitening)
    xi = xnp.dot(xi, whitening)
    log_norm = xnp.sum(xnp.log(xnp.diag(whitening))) - 0.5 * d * xnp.log(2 * np.pi)
    # (m, n) kernel matrix: points i of xi against dataset points j
    sq = xnp.sum(xnp.square(xi[:, None, :] - points[None, :, :]), axis=-1)
    arg = log_norm - 0.5 * sq
    if in_log:
        return special.logsumexp(xnp.log(values[None, :, :]) + arg[:, :, None], axis=1)
    return xnp.sum(values[None, :, :] * xnp.exp(arg)[:, :, None], axis=1)

"""``xform.scipy.interpolate``: ``RegularGridInterpolator`` (linear / nearest on a
rectilinear grid; a pytree), as ``jax.scipy.interpolate``."""
from __future__ import annotations

import itertools

import numpy as np

from xform._src.interpreters import dtypes
from xform._src.interpreters.tree_util import register_pytree_node
from xform import numpy as xnp
from xform.numpy import _util as U

__all__ = ["RegularGridInterpolator"]


def _ndim_coords_from_arrays(points, ndim=None):
    if isinstance(points, tuple) and len(points) == 1:
        points = points[0]
    if isinstance(points, tuple):
        p = xnp.broadcast_arrays(*points)
        for other in p[1:]:
            if other.shape != p[0].shape:
                raise ValueError("coordinate arrays do not have the same shape")
        return xnp.stack(p, axis=-1).astype(dtypes.default_float_dtype())
    U.check_arraylike("_ndim_coords_from_arrays", points)
    points = xnp.asarray(points)
    if points.ndim == 1:
        points = points.reshape(-1, 1) if ndim is None else points.reshape(-1, ndim)
    return points


class RegularGridInterpolator:
    """Interpolate ``values`` given on the grid ``points`` (one increasing 1-D array per
    axis); outside the grid: ``fill_value`` (None: extrapolate)."""

    def __init__(self, points, values, method="linear", bounds_error=False,
                 fill_value=np.nan):
        if method not in ("linear", "nearest"):
            raise ValueError(f"method {method!r} is not defined")
        self.method = method
        self.bounds_error = bounds_error
        if bounds_error:
            raise NotImplementedError("`bounds_error` takes no effect under JIT (as in JAX); "
                                      "use bounds_error=False")
        U.check_arraylike("RegularGridInterpolator", values)
        values = xnp.asarray(values)
        if len(points) > values.ndim:
            raise ValueError(f"there are {len(points)} point arrays, but values has "
                             f"{values.ndim} dimensions")
        (values,) = U.promote_dtypes_inexact(values)
        if fill_value is not None:
            U.check_arraylike("RegularGridInterpolator", fill_value)
            fill_value = xnp.asarray(fill_value)
            if not np.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError("fill_value must be either 'None' or of a type compatible "
                                 "with values")
        self.fill_value = fill_value
        U.check_arraylike("RegularGridInterpolator", *points)
        self.grid = tuple(xnp.asarray(p) for p in points)
        self.values = values

    def __call__(self, xi, method=None):
        method = self.method if method is None else method
        if method not in ("linear", "nearest"):
            raise ValueError(f"method {method!r} is not defined")
        ndim = len(self.grid)
        xi = _ndim_coords_from_arrays(xi, ndim=ndim)
        if xi.shape[-1] != ndim:
            raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, "
                             f"but this RegularGridInterpolator has dimension {ndim}")
        shape = xi.shape
        xi = xi.reshape(-1, shape[-1])
        indices, dists, oob = self._find_indices(xi.T)
        if method == "linear":
            result = self._evaluate_linear(indices, dists)
        else:
            result = self._evaluate_nearest(indices, dists)
        if self.fill_value is not None:
            bc = result.shape[:1] + (1,) * (result.ndim - 1)
            result = xnp.where(oob.reshape(bc), self.fill_value, result)
        return result.reshape(shape[:-1] + self.values.shape[ndim:])

    def _evaluate_linear(self, indices, dists):
        vslice = (slice(None),) + (None,) * (self.values.ndim - len(indices))
        out = xnp.asarray(0.0)
        for edge in itertools.product(*[[i, i + 1] for i in indices]):
            weight = xnp.asarray(1.0)
            for ei, i, yi in zip(edge, indices, dists):
                weight = weight * xnp.where(ei == i, 1 - yi, yi)
            out = out + self.values[edge] * weight[vslice]
        return out

    def _evaluate_nearest(self, indices, dists):
        idx = [xnp.where(yi <= 0.5, i, i + 1) for i, yi in zip(indices, dists)]
        return self.values[tuple(idx)]

    def _find_indices(self, xi):
        indices, dists = [], []
        oob = xnp.zeros((xi.shape[1],), dtype=bool)
        for x, g in zip(xi, self.grid):
            i = xnp.searchsorted(g, x) - 1
            i = xnp.where(i < 0, 0, i)
            i = xnp.where(i > g.size - 2, g.size - 2, i)
            indices.append(i)
            dists.append((x - g[i]) / (g[i + 1] - g[i]))
            oob = oob | (x < g[0]) | (x > g[-1])
        return indices, dists, oob


register_pytree_node(
    RegularGridInterpolator,
    lambda obj: ((obj.grid, obj.values, obj.fill_value), (obj.method, obj.bounds_error)),
    lambda aux, children: RegularGridInterpolator(*children[:2], *aux, *children[2:]))

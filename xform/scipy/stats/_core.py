"""``mode``, ``rankdata`` and ``sem`` (``jax.scipy.stats``'s functions)."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from xform._src.interpreters import dtypes
from xform import numpy as xnp
from xform.numpy import _util as U
from xform import lax
from xform._vmap import vmap

__all__ = ["mode", "rankdata", "sem", "ModeResult"]


class ModeResult(NamedTuple):
    mode: object
    count: object


def _nan_policy(name, nan_policy):
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                         "{'propagate', 'omit', 'raise'}")
    if nan_policy == "omit":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented "
                                  f"in {name} (as in JAX)")
    if nan_policy == "raise":
        raise NotImplementedError(f"In order to best JIT compile `{name}`, we cannot know "
                                  "whether `x` contains nans. Please check if nans exist in `x` "
                                  f"outside of the `{name}` function.")


def _default_float():
    return dtypes.canonicalize_dtype(np.float64) if hasattr(dtypes, "canonicalize_dtype") \
        else np.dtype(np.float32)


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """The most frequent value along ``axis`` (the smallest among ties) and its count."""
    U.check_arraylike("mode", a)
    x = xnp.atleast_1d(a)
    _nan_policy("mode", nan_policy)
    if axis is not None:
        axis = U.canonicalize_axis(axis, x.ndim)
    shape = x.shape
    if keepdims:
        out_shape = tuple(1 for _ in shape) if axis is None else \
            tuple(1 if i == axis else s for i, s in enumerate(shape))
    else:
        out_shape = () if axis is None else tuple(s for i, s in enumerate(shape) if i != axis)
    if axis is None:
        axis = 0
        x = x.ravel()
    x = xnp.moveaxis(x, axis, 0)
    x = x.reshape(x.shape[0], math.prod(x.shape[1:]))
    if x.shape[0] == 0:
        f = _default_float()
        vals = xnp.full((x.shape[1],), np.nan, f)
        counts = xnp.zeros((x.shape[1],), f)
    else:

        def one(col):
            vals, counts = xnp.unique(col, return_counts=True, size=col.size)
            return vals[xnp.argmax(counts)], counts.max()
        vals, counts = vmap(one, in_axes=1)(x)
    return ModeResult(vals.reshape(out_shape), counts.reshape(out_shape))


def _invert_permutation(i):
    return xnp.empty_like(i).at[i].set(xnp.arange(i.size, dtype=i.dtype))


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """Ranks of the data (1-based), ties by ``method``: average/min/max/dense/ordinal; all
    NaN if any element is NaN."""
    U.check_arraylike("rankdata", a)
    _nan_policy("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    if axis is not None:
        return xnp.apply_along_axis(rankdata, axis, a, method)
    a = xnp.ravel(xnp.asarray(a))
    out = _default_float()

    def ranks(a):
        arr, sorter = lax.sort_key_val(a, xnp.arange(a.size))
        inv = _invert_permutation(sorter)
        if method == "ordinal":
            return (inv + 1).astype(out)
        obs = xnp.concatenate([xnp.array([True]), arr[1:] != arr[:-1]])
        dense = obs.cumsum()[inv]
        if method == "dense":
            return dense.astype(out)
        count = xnp.nonzero(obs, size=arr.size + 1, fill_value=obs.size)[0].astype(out)
        if method == "max":
            return count[dense]
        if method == "min":
            return count[dense - 1] + 1
        return 0.5 * (count[dense] + count[dense - 1] + 1)
    return lax.cond(xnp.any(xnp.isnan(a)), lambda a: xnp.full_like(a, np.nan, out), ranks, a)


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """Standard error of the mean: std(ddof) / sqrt(n)."""
    U.check_arraylike("sem", a)
    (b,) = U.promote_args_inexact("sem", a)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        return b.std(axis, ddof=ddof, keepdims=keepdims) / xnp.sqrt(size).astype(b.dtype)
    if nan_policy == "omit":
        count = (~xnp.isnan(b)).sum(axis, keepdims=keepdims)
        return xnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims) / \
            xnp.sqrt(count).astype(b.dtype)
    raise ValueError(f"{nan_policy} is not supported")

"""Index helpers: indices, ix_, mgrid/ogrid, r_/c_/s_/index_exp, tril/triu/diag indices,
fill_diagonal, mask_indices, ravel_multi_index/unravel_index, and a traced ``nonzero``
with a static ``size`` (the building block of every data-dependent shape under jit).
"""
from __future__ import annotations

import operator

import numpy as np

from xform._src.interpreters import core, dtypes
from xform._src.interpreters.config import config
from xform._src.interpreters.core import ArrayOps, Tracer
from xform.numpy import _shape as S
from xform.numpy import _ufuncs as F
from xform.numpy import _util as U
from xform.numpy._util import lax
from xform.numpy._creation import arange, array, linspace, meshgrid, ones


def _int_dt():
    return dtypes.default_int_dtype()


def _static(x, what):
    if isinstance(x, ArrayOps):
        x = core.concrete_or_error(x, f"{what} must be a static value")
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {x!r}") from None


# ----------------------------------------------------------------- nonzero with static size


def nonzero_sized(mask, size, fill_value=None):
    """Indices (per dimension) of the True entries of ``mask``, padded/cut to ``size``.

    Works on traced masks: a stable sort of ``~mask`` puts the True positions first
    in order, so no value-dependent shape is needed.
    """
    m = U.to_array(mask)
    if m.dtype != dtypes.bool_:
        m = F.not_equal(m, U.to_array(0, m.dtype, False))
    shape = m.shape
    idt = _int_dt()
    flat = lax.reshape(m, (int(np.prod(shape, dtype=np.int64)),))
    n = flat.shape[0]
    key = U.to_array(F.logical_not(flat), np.int32, False)
    iota = lax.iota(idt, n)
    _, order = lax.sort((key, iota), dimension=0, is_stable=True, num_keys=1)
    count = lax.reduce_sum(U.to_array(flat, idt, False), (0,))
    if size <= n:
        order = lax.slice(order, (0,), (size,))
    else:
        order = lax.pad(order, U.to_array(0, idt, False), ((0, size - n, 0),))
    valid = F.less(lax.iota(idt, size), count)
    out = []
    rem = order
    coords = []
    for d in reversed(shape):
        d = max(d, 1)
        coords.append(F.remainder(rem, U.to_array(d, idt, False)))
        rem = F.floor_divide(rem, U.to_array(d, idt, False))
    coords = coords[::-1]
    fills = fill_value if isinstance(fill_value, (tuple, list)) else \
        (fill_value,) * len(shape)
    if len(fills) != len(shape):
        raise ValueError(f"fill_value must be a scalar or a tuple of length {len(shape)}; "
                         f"got {fill_value}")
    for c, fv in zip(coords, fills):
        fvv = U.to_array(0 if fv is None else fv, idt, False)
        out.append(F.where(valid, c, fvv))
    return tuple(out)


# ----------------------------------------------------------------- grids


def indices(dimensions, dtype=None, sparse=False):
    """An array (or sparse tuple) of index grids for ``dimensions``."""
    dims = tuple(_static(d, "indices: dimensions") for d in dimensions)
    dt = U.canonical_dtype(dtype) or _int_dt()
    N = len(dims)
    out = []
    for i, d in enumerate(dims):
        shp = tuple(d if j == i else 1 for j in range(N)) if sparse else dims
        out.append(lax.broadcasted_iota(dt, shp, i))
    if sparse:
        return tuple(out)
    if not out:
        return U.to_array(np.zeros((0,), dt))
    return S.stack(out, 0)


def ix_(*args):
    """Open-mesh index arrays from 1-D sequences (booleans become their nonzero positions)."""
    from xform.numpy._indexing import nonzero  # deferred: import cycle
    n = len(args)
    out = []
    for i, a in enumerate(args):
        a = U.ensure_arraylike("ix_", a)
        x = U.to_array(a)
        if x.ndim != 1:
            raise ValueError(f"Arguments to xform.numpy.ix_ must be 1-dimensional, got shape "
                             f"{x.shape}")
        if x.dtype == dtypes.bool_:
            (x,) = nonzero(x)
        out.append(lax.reshape(x, tuple(x.shape[0] if j == i else 1 for j in range(n))))
    return tuple(out)


def _grid_1d(s, name):
    def conc(v, what):
        if isinstance(v, ArrayOps):
            v = core.concrete_or_error(v, f"slice {what} of jnp.{name}")
            v = np.asarray(v).item()
        return v
    start = conc(s.start, "start") or 0
    stop = conc(s.stop, "stop")
    step = conc(s.step, "step") or 1
    if np.iscomplex(step):
        return linspace(start, stop, int(abs(step)))
    return arange(start, stop, step)


class _Mgrid:
    """``mgrid[a:b:s, ...]``: a dense index grid (complex step = number of points)."""

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_1d(key, "mgrid")
        if not key:
            return arange(0)
        parts = [_grid_1d(k, "mgrid") for k in key]
        with config.override("jax_numpy_dtype_promotion", "standard"):   # as JAX
            parts = U.promote_dtypes(*parts)
        grids = meshgrid(*parts, indexing="ij", sparse=False)
        if not grids:
            return arange(0)
        return S.stack(grids, 0)


class _Ogrid:
    """``ogrid[a:b:s, ...]``: an open (sparse) index grid."""

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_1d(key, "ogrid")
        if not key:
            return []
        parts = [_grid_1d(k, "ogrid") for k in key]
        with config.override("jax_numpy_dtype_promotion", "standard"):   # as JAX
            parts = U.promote_dtypes(*parts)
        return meshgrid(*parts, indexing="ij", sparse=True)


mgrid = _Mgrid()
ogrid = _Ogrid()


class _AxisConcat:
    axis = 0
    ndmin = 1
    trans1d = -1
    op_name = "r_"

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d, matrix = self.axis, self.ndmin, self.trans1d, -1
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive == "r":
                matrix = 0
            elif directive == "c":
                matrix = 1
            else:
                vec = directive.split(",")
                defaults = [axis, ndmin, trans1d, matrix]
                vec = vec + [str(v) for v in defaults[len(vec):]] if len(vec) < 4 else \
                    vec[:3] + [str(matrix)]
                try:
                    axis, ndmin, trans1d, matrix = map(int, vec)
                except ValueError:
                    raise ValueError(f"could not understand directive {directive!r}") from None
        out = []
        for it in items:
            if isinstance(it, slice):
                obj = _grid_1d(it, self.op_name)
                item_nd = 0
            elif isinstance(it, str):
                raise ValueError("string directive must be placed at the beginning")
            else:
                obj = array(it, copy=False)
                item_nd = obj.ndim
            obj = array(obj, copy=False, ndmin=ndmin)
            if trans1d != -1 and ndmin - item_nd > 0:
                perm = tuple(range(ndmin))
                k = ndmin - abs(ndmin + trans1d + 1) % ndmin
                obj = S.transpose(obj, perm[k:] + perm[:k])
            out.append(obj)
        res = S.concatenate(tuple(out), axis=axis)
        if matrix != -1 and res.ndim == 1:
            res = S.expand_dims(res, matrix)
        return res

    def __len__(self):
        return 0


class _RClass(_AxisConcat):
    """``r_[...]``: concatenate slices, scalars and arrays along the first axis."""


class _CClass(_AxisConcat):
    """``c_[...]``: concatenate along the last axis (1-D inputs become columns)."""
    axis = -1
    ndmin = 2
    trans1d = 0
    op_name = "c_"


r_ = _RClass()
c_ = _CClass()
s_ = np.s_
index_exp = np.index_exp


# ----------------------------------------------------------------- triangles and diagonals


def _host_indices(t):
    idt = _int_dt()
    return tuple(U.to_array(np.asarray(a, idt)) for a in t)


def tril_indices(n, k=0, m=None):
    """Row and column indices of the lower triangle of an (n, m) array."""
    n = _static(n, "tril_indices: n")
    k = _static(k, "tril_indices: k")
    m = n if m is None else _static(m, "tril_indices: m")
    return _host_indices(np.tril_indices(n, k, m))


def triu_indices(n, k=0, m=None):
    """Row and column indices of the upper triangle of an (n, m) array."""
    n = _static(n, "triu_indices: n")
    k = _static(k, "triu_indices: k")
    m = n if m is None else _static(m, "triu_indices: m")
    return _host_indices(np.triu_indices(n, k, m))


def _from(name, arr):
    arr = U.ensure_arraylike(name, arr)
    s = U.shape_of(arr) if not isinstance(arr, ArrayOps) else arr.shape
    if len(s) != 2:
        raise ValueError(f"{name} requires a 2-dimensional input, got shape {tuple(s)}")
    return s


def tril_indices_from(arr, k=0):
    n, m = _from("tril_indices_from", arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr, k=0):
    n, m = _from("triu_indices_from", arr)
    return triu_indices(n, k, m)


def diag_indices(n, ndim=2):
    """Indices of the main diagonal of an ``ndim``-dimensional (n, ..., n) array."""
    n = _static(n, "diag_indices: n")
    ndim = _static(ndim, "diag_indices: ndim")
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    return (lax.iota(_int_dt(), n),) * ndim


def diag_indices_from(arr):
    arr = U.ensure_arraylike("diag_indices_from", arr)
    s = arr.shape if isinstance(arr, ArrayOps) else U.shape_of(arr)
    if len(s) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(s)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(s[0], len(s))


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """A copy of ``a`` with its main diagonal set to ``val`` (needs ``inplace=False``)."""
    if inplace:
        raise NotImplementedError("xform arrays are immutable: call fill_diagonal with "
                                  "inplace=False and use the returned array")
    if wrap:
        raise NotImplementedError("fill_diagonal: wrap=True is not supported, use wrap=False")
    a, val = U.ensure_arraylike("fill_diagonal", a, val)
    x, v = U.to_array(a), U.to_array(val)
    if x.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if x.ndim > 2 and len(set(x.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    n = min(x.shape)
    idx = diag_indices(n, x.ndim)
    if v.ndim:
        flat = S.ravel(v)
        if flat.shape[0] == 0:
            return x
        reps = -(-n // flat.shape[0])
        v = lax.slice(S.tile(flat, reps), (0,), (n,))
    return x.at[idx].set(v)


def mask_indices(n, mask_func, k=0, *, size=None):
    """Indices where ``mask_func(ones((n, n)), k)`` is non-zero."""
    from xform.numpy._indexing import nonzero  # deferred: import cycle
    n = _static(n, "mask_indices: n")
    i, j = nonzero(mask_func(ones((n, n)), k), size=size)
    return i, j


# ----------------------------------------------------------------- flat <-> multi index


def ravel_multi_index(multi_index, dims, mode="raise", order="C", *, dtype=None):
    """Flat indices from a tuple of coordinate arrays (of ``dtype`` when given)."""
    return _ravel_multi_index(multi_index, dims, mode, order, dtype)


def _ravel_multi_index(multi_index, dims, mode="raise", order="C", dtype=None):
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: len(multi_index)={len(multi_index)} != "
                         f"len(dims)={len(dims)}")
    dims = tuple(_static(d, "ravel_multi_index: dims") for d in dims)
    U.check_arraylike("ravel_multi_index", *multi_index)
    idx = [U.to_array(i) for i in multi_index]
    if dtype is not None:
        dt = U.canonical_dtype(dtype)
        if dt.kind not in "iu":
            raise ValueError(f"dtype={dt} is not an integer type.")
    else:
        dt, _ = U.result_dtype(0, *idx)     # (a weak int, as JAX's result_type(int, ...))
        if dt.kind not in "iu":
            dt = _int_dt()
    for i in idx:
        if i.dtype.kind not in "iu":
            raise TypeError("only int indices permitted")
    if mode == "raise":
        for i, d in zip(idx, dims):
            v = i.to_concrete_value() if isinstance(i, ArrayOps) else None
            if v is None:
                raise core.errors.ConcretizationTypeError(
                    i, "ravel_multi_index with mode='raise' on a traced index. The error "
                    "occurred because ravel_multi_index was jit-compiled with "
                    "mode='raise'. Use mode='wrap' or mode='clip' instead.")
            v = np.asarray(v)
            if np.any((v < 0) | (v >= d)):
                raise ValueError("invalid entry in coordinates array")
    elif mode == "clip":
        idx = [F.clip(i, 0, d - 1) for i, d in zip(idx, dims)]
    elif mode == "wrap":
        idx = [F.remainder(i, d) for i, d in zip(idx, dims)]
    elif mode != "ignore":
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or "
                         "'ignore'.")
    if order == "C":
        strides = np.cumprod((1,) + dims[1:][::-1])[::-1]
    elif order == "F":
        strides = np.cumprod((1,) + dims[:-1])
    else:
        raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
    out = U.to_array(0, dt, False)
    for i, s in zip(idx, strides):
        out = F.add(out, F.multiply(U.to_array(i, dt, False), U.to_array(int(s), dt, True)))
    return out


def unravel_index(indices, shape):
    """Coordinate arrays from flat indices; out-of-range indices are clipped."""
    indices = U.ensure_arraylike("unravel_index", indices)
    x = U.to_array(indices)
    try:
        shape = list(shape)
    except TypeError:
        shape = [shape]
    if builtins_any(np.ndim(s) != 0 for s in shape):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
    # traced sizes are allowed (the divisions are then dynamic), as in JAX
    shape = [s if isinstance(s, Tracer) and s.to_concrete_value() is None else
             _static(s, "unravel_index: shape") for s in shape]
    out = [None] * len(shape)
    for i in reversed(range(len(shape))):
        s = shape[i]
        x, out[i] = F.divmod(x, s)
    hi = F.greater(x, U.to_array(0, x.dtype, x.weak_type))
    lo = F.less(x, U.to_array(-1, x.dtype, x.weak_type)) if x.dtype.kind != "u" else None
    res = []
    for s, o in zip(shape, out):
        r = o if lo is None else F.where(lo, U.to_array(0, o.dtype, o.weak_type), o)
        top = F.subtract(s, U.to_array(1, o.dtype, True)) if isinstance(s, Tracer) else \
            U.to_array(s - 1, o.dtype, o.weak_type)
        res.append(F.where(hi, top, r))
    return tuple(res)


def builtins_any(it):
    for v in it:
        if v:
            return True
    return False


__all__ = ["indices", "ix_", "mgrid", "ogrid", "r_", "c_", "s_", "index_exp", "tril_indices",
           "triu_indices", "tril_indices_from", "triu_indices_from", "diag_indices",
           "diag_indices_from", "fill_diagonal", "mask_indices", "ravel_multi_index",
           "unravel_index"]

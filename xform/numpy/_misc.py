"""The rest of ``jax.numpy``'s array functions: insert/delete/resize, put/place/
put_along_axis, extract/compress/choose/select/piecewise, block/unstack/rollaxis,
trim_zeros, matvec/vecmat, packbits/unpackbits, apply_along_axis/apply_over_axes,
vectorize, ufunc/frompyfunc, fromfunction/fromstring, load/save and NumPy re-exports.

All are compositions of existing primitives and transformations (``vmap`` for
vectorize / apply_along_axis, ``scan`` / ``fori_loop`` for generic ufunc methods).
"""
from __future__ import annotations

import builtins
import operator
import re

import numpy as np

from xform._src.interpreters import core, dtypes
from xform._src.interpreters.core import ArrayOps
from xform.numpy import _shape as S
from xform.numpy import _ufuncs as F
from xform.numpy import _util as U
from xform.numpy._util import lax
from xform._src.primitives.control_flow import fori_loop
from xform._src.primitives.control_flow import scan
from xform._vmap import vmap
from xform.dlpack import from_dlpack as _from_dlpack
from xform.numpy._creation import asarray
from xform.numpy._creation import zeros
from xform.numpy._index_tricks import indices
from xform.numpy._index_tricks import nonzero_sized
from xform.numpy._index_tricks import unravel_index
from xform.numpy._linalg import matmul
from xform.numpy._reductions import cumsum
from xform.numpy._util import check_arraylike, ensure_arraylike  # noqa: F401
from xform._src.interpreters.config import config
from xform.numpy._indexing import getitem
import warnings

# ----------------------------------------------------------------- NumPy re-exports

ComplexWarning = np.exceptions.ComplexWarning
def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """``numpy.array_repr`` of an array-like (converted first, so misuse is a TypeError)."""
    return np.array_repr(np.asarray(_as_array_like("array_repr", arr)), max_line_width,
                         precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    return np.array_str(np.asarray(_as_array_like("array_str", a)), max_line_width,
                        precision, suppress_small)


def _as_array_like(name, x):
    x = ensure_arraylike(name, x)
    return x
iterable = np.iterable
object_ = np.object_
save = np.save
savez = np.savez
printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions


def _arr(name, x):
    x = U.ensure_arraylike(name, x)
    return U.to_array(x)


def _int():
    return dtypes.default_int_dtype()


def _concrete_np(x, what):
    if isinstance(x, ArrayOps):
        v = x.to_concrete_value()
        if v is None:
            raise core.errors.ConcretizationTypeError(x, what)
        return np.asarray(v)
    return np.asarray(x)


# ----------------------------------------------------------------- I/O and construction


def load(file, *args, **kwargs):
    """``numpy.load``, with arrays converted to xform arrays."""
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray):
        if out.dtype == np.dtype("V2"):
            # np.save writes bfloat16 (which NumPy does not know) as 2-byte voids: read
            # them back as bfloat16, as JAX does (np.save files only, not np.savez)
            import ml_dtypes     # deferred: import xform does not load ml_dtypes
            out = out.view(ml_dtypes.bfloat16)
        try:
            return asarray(out)
        except (TypeError, AssertionError):    # a dtype arrays cannot have: as NumPy's
            return out
    return out


def from_dlpack(x, /, *, device=None, copy=None):
    """An Array from any ``__dlpack__`` producer (``xform.dlpack.from_dlpack``)."""
    return _from_dlpack(x, device=device, copy=copy)


def fromstring(string, dtype=float, count=-1, *, sep):
    """An array from the numbers in a text string (``sep`` is required, as in NumPy 2)."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """``function(*coordinate_grids)`` over a grid of ``shape``."""
    shape = U.canonical_shape(shape)
    dt = U.canonical_dtype(dtype)
    grids = indices(shape, dtype=dt, sparse=False) if shape else ()
    args = tuple(lax.index_in_dim(grids, i, 0, False) for i in range(len(shape)))
    return function(*args, **kwargs)


# ----------------------------------------------------------------- structure


def rollaxis(a, axis, start=0):
    """Roll ``axis`` backwards until it lies before position ``start``."""
    x = _arr("rollaxis", a)
    n = x.ndim
    axis = U.canonicalize_axis(axis, n)
    start = operator.index(start)
    if not -n <= start <= n:
        raise ValueError(f"start={start} must satisfy {-n} <= start <= {n}")
    if start < 0:
        start += n
    if start > axis:
        start -= 1
    return S.moveaxis(x, axis, start)


def unstack(x, /, *, axis=0):
    """Split ``x`` along ``axis`` into a tuple of arrays with that axis removed."""
    a = _arr("unstack", x)
    if a.ndim == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was "
                         "passed.")
    ax = U.canonicalize_axis(axis, a.ndim)
    return tuple(lax.index_in_dim(a, i, ax, False) for i in range(a.shape[ax]))


def _block_depth(x, path=()):
    if isinstance(x, list):
        if not x:
            raise ValueError(f"List at arrays{''.join(f'[{i}]' for i in path)} cannot be "
                             "empty")
        depths = {_block_depth(e, path + (i,)) for i, e in enumerate(x)}
        if len(depths) != 1:
            raise ValueError("List depths are mismatched. All lists in block must have the "
                             "same depth.")
        return 1 + depths.pop()
    if isinstance(x, tuple):
        raise TypeError("block: tuples are not allowed in the nested list structure; use lists")
    return 0


def block(arrays):
    """Assemble an array from nested lists of blocks (innermost list: last axis)."""
    depth = _block_depth(arrays)
    leaves = []

    def collect(x):
        if isinstance(x, list):
            for e in x:
                collect(e)
        else:
            leaves.append(U.to_array(x) if not isinstance(x, ArrayOps) else x)
    collect(arrays)
    nd = builtins.max([depth] + [a.ndim for a in leaves])

    def rec(x, d):
        if not isinstance(x, list):
            a = U.to_array(x)
            return lax.reshape(a, (1,) * (nd - a.ndim) + a.shape) if a.ndim < nd else a
        parts = [rec(e, d + 1) for e in x]
        return S.concatenate(parts, axis=-(depth - d))
    return rec(arrays, 0)


def resize(a, new_shape):
    """A new array of ``new_shape`` filled by repeating the flattened ``a``."""
    x = _arr("resize", a)
    shape = U.canonical_shape(new_shape, "new_shape")
    n = int(np.prod(shape, dtype=np.int64))
    flat = S.ravel(x)
    if flat.shape[0] == 0 or n == 0:
        return zeros(shape, x.dtype)
    reps = -(-n // flat.shape[0])
    flat = S.tile(flat, reps) if reps > 1 else flat
    return lax.reshape(lax.slice(flat, (0,), (n,)), shape)


def trim_zeros(filt, trim="fb", axis=None):
    """Strip leading (``'f'``) and/or trailing (``'b'``) zeros along ``axis`` (default:
    every axis; a slab counts as zero when all its entries are), as NumPy 2.2+."""
    x = _arr("trim_zeros", filt)
    v = _concrete_np(x, "trim_zeros: the output shape depends on the values of filt. "
                        "Error arose in the `filt` argument of trim_zeros()")
    if axis is None:
        axes = set(range(x.ndim))
    else:
        axes = {U.canonicalize_axis(a, x.ndim)
                for a in (axis if isinstance(axis, (tuple, list)) else (axis,))}
    if not isinstance(trim, str):
        raise TypeError(f"trim_zeros: trim must be a string of 'f' and/or 'b', got {trim!r}")
    t = trim.lower()
    if not axes or ("f" not in t and "b" not in t):
        return x
    starts, limits = [], []
    for ax in range(x.ndim):
        n = x.shape[ax]
        if ax not in axes:
            starts.append(0), limits.append(n)
            continue
        mask = np.any(v != 0, axis=tuple(i for i in range(x.ndim) if i != ax))
        nz = np.flatnonzero(mask)
        if not nz.size:
            starts.append(0), limits.append(0)
            continue
        a = int(nz[0]) if "f" in t else 0
        b = int(nz[-1]) + 1 if "b" in t else n
        starts.append(a), limits.append(builtins.max(a, b))
    return lax.slice(x, tuple(starts), tuple(limits))


# ----------------------------------------------------------------- selection


def select(condlist, choicelist, default=0):
    """Elementwise: the choice of the first true condition, else ``default``."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"list of cases must be same length as list of conditions; got "
                         f"{len(condlist)} and {len(choicelist)}")
    if len(condlist) == 0:
        raise ValueError("condlist must be non-empty")
    U.check_arraylike("select", *condlist, *choicelist, default)
    conds = [U.to_array(c) for c in condlist]
    for c in conds:
        if c.dtype != dtypes.bool_:
            raise TypeError(f"condlist must be boolean arrays, got dtype {c.dtype}")
    choices = U.promote_dtypes(U.to_array(default), *[U.to_array(c) for c in choicelist])
    U.broadcast_shapes(*[c.shape for c in conds], *[c.shape for c in choices])
    out = choices[0]
    for c, v in zip(reversed(conds), reversed(choices[1:])):
        out = F.where(c, v, out)
    return out


def choose(a, choices, out=None, mode="raise"):
    """``choices[a[i]][i]`` with broadcasting (modes ``raise``/``wrap``/``clip``)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to xform.numpy.choose is not supported.")
    U.check_arraylike("choose", a, *choices)
    idx = U.to_array(a)
    if idx.dtype.kind not in "iu":
        raise ValueError("`a` array must be integer typed")
    n = len(choices)
    if mode == "raise":
        v = idx.to_concrete_value()
        if v is None:
            raise core.errors.ConcretizationTypeError(
                idx, "choose with mode='raise' on a traced index; use mode='wrap' or "
                "mode='clip' under jit")
        v = np.asarray(v)
        if np.any((v < 0) | (v >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        idx = F.remainder(idx, U.to_array(n, idx.dtype, False))
    elif mode == "clip":
        idx = F.clip(idx, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    ch = U.promote_dtypes(*[U.to_array(c) for c in choices])
    shape = U.broadcast_shapes(idx.shape, *[c.shape for c in ch], name="choose")
    idx = U.broadcast_to_shape(idx, shape)
    outv = U.broadcast_to_shape(ch[0], shape)
    for k in range(1, n):
        outv = F.where(F.equal(idx, U.to_array(k, idx.dtype, False)),
                       U.broadcast_to_shape(ch[k], shape), outv)
    return outv


def piecewise(x, condlist, funclist, *args, **kw):
    """Apply ``funclist[i]`` where ``condlist[i]`` holds (an extra function: otherwise)."""
    xx = _arr("piecewise", x)
    if isinstance(condlist, (ArrayOps, np.ndarray)) and np.ndim(condlist) == xx.ndim or \
            isinstance(condlist, (bool, np.bool_)):
        condlist = [condlist]
    conds = [U.to_array(c) for c in condlist]
    nc, nf = len(conds), len(funclist)
    if nf == nc + 1:
        other = funclist[-1]
        funclist = funclist[:-1]
        anyc = conds[0]
        for c in conds[1:]:
            anyc = F.logical_or(anyc, c)
        conds = conds + [F.logical_not(anyc)]
        funclist = list(funclist) + [other]
    elif nf != nc:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are "
                         f"expected; got {nf}")
    out = U.broadcast_to_shape(U.to_array(0, xx.dtype, False), xx.shape)
    for c, f in zip(conds, funclist):
        c = U.broadcast_to_shape(c if c.dtype == dtypes.bool_ else
                                 F.not_equal(c, U.to_array(0, c.dtype, False)), xx.shape)
        val = f(xx, *args, **kw) if callable(f) else f
        val = U.broadcast_to_shape(U.to_array(U.to_array(val), xx.dtype, False), xx.shape)
        out = F.where(c, val, out)
    return out


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """Slices of ``a`` along ``axis`` where ``condition`` (1-D) is true."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to xform.numpy.compress is not "
                                  "supported.")
    condition, a = U.ensure_arraylike("compress", condition, a)
    c = U.to_array(condition)
    x = U.to_array(a)
    if c.ndim != 1:
        raise ValueError("condition must be a 1D array")
    c = c if c.dtype == dtypes.bool_ else F.not_equal(c, U.to_array(0, c.dtype, False))
    if axis is None:
        x, ax = S.ravel(x), 0
    else:
        ax = U.canonicalize_axis(axis, x.ndim)
    x = S.moveaxis(x, ax, 0)
    n = x.shape[0]
    if c.shape[0] > n:
        extra = lax.slice(c, (n,), (c.shape[0],))
        ev = extra.to_concrete_value()
        if ev is None or np.any(np.asarray(ev)):
            raise ValueError(f"condition contains entries that are out of bounds "
                             f"(len(condition)={c.shape[0]} > {n})")
        c = lax.slice(c, (0,), (n,))
    elif c.shape[0] < n:
        x = lax.slice_in_dim(x, 0, c.shape[0], 1, 0)
    if size is not None and not 0 <= U.static_int(size, "compress: size") <= x.shape[0]:
        raise ValueError(f"size must be positive and not greater than the size of the array "
                         f"axis; got size={size} for a.shape[axis]={x.shape[0]}")
    if size is None:
        v = _concrete_np(c, "compress: the output shape depends on the values of condition; "
                         "pass a static size= to use it under jit")
        size = int(v.sum())
        (ind,) = _nz(c, size)
        res = S.take(x, ind, axis=0, mode="clip") if size else \
            lax.slice_in_dim(x, 0, 0, 1, 0)
    else:
        size = U.static_int(size, "compress: size")
        (ind,) = _nz(c, size)
        res = S.take(x, ind, axis=0, mode="clip") if x.shape[0] else \
            U.broadcast_to_shape(U.to_array(fill_value, x.dtype, False), (size,) + x.shape[1:])
        cnt = lax.reduce_sum(U.to_array(c, _int(), False), (0,))
        valid = F.less(lax.iota(_int(), size), cnt)
        valid = lax.broadcast_in_dim(valid, res.shape, (0,))
        res = F.where(valid, res, U.to_array(fill_value, x.dtype, False))
    return S.moveaxis(res, 0, ax)


def _nz(mask, size):
    return nonzero_sized(mask, size)


def extract(condition, arr, *, size=None, fill_value=0):
    """The entries of ``arr`` (flattened) where ``condition`` is true."""
    condition, arr = U.ensure_arraylike("extract", condition, arr)
    return compress(S.ravel(U.to_array(condition)), S.ravel(U.to_array(arr)), size=size,
                    fill_value=fill_value)


def _no_inplace(name, inplace):
    if inplace:
        raise ValueError(f"xform.numpy.{name} cannot modify arrays in-place, because xform "
                         f"arrays are immutable. Pass inplace=False to return a new array.")


def place(arr, mask, vals, *, inplace=True):
    """A copy of ``arr`` with the entries where ``mask`` holds set from ``vals`` (cycled)."""
    _no_inplace("place", inplace)
    arr, mask, vals = U.ensure_arraylike("place", arr, mask, vals)
    x, m, v = U.to_array(arr), U.to_array(mask), U.to_array(vals)
    if m.shape != x.shape:
        raise ValueError(f"place: mask shape {m.shape} must match arr shape {x.shape}")
    m = m if m.dtype == dtypes.bool_ else F.not_equal(m, U.to_array(0, m.dtype, False))
    flat_m = S.ravel(m)
    flat_v = S.ravel(v)
    if flat_v.shape[0] == 0:
        return x
    pos = F.subtract(cumsum(U.to_array(flat_m, _int(), False)), U.to_array(1, _int(), False))
    pos = F.remainder(F.maximum(pos, U.to_array(0, _int(), False)),
                      U.to_array(flat_v.shape[0], _int(), False))
    taken = S.take(U.to_array(flat_v, x.dtype, False), pos, mode="clip")
    return lax.reshape(F.where(flat_m, taken, S.ravel(x)), x.shape)


def put(a, ind, v, mode=None, *, inplace=True):
    """A copy of ``a`` with flat positions ``ind`` set to ``v`` (cycled)."""
    _no_inplace("put", inplace)
    a, ind, v = U.ensure_arraylike("put", a, ind, v)
    x = U.to_array(a)
    i = S.ravel(U.to_array(ind))
    vv = S.ravel(U.to_array(v))
    if i.shape[0] == 0 or vv.shape[0] == 0:
        return x
    if vv.shape[0] != i.shape[0]:
        vv = resize(vv, (i.shape[0],))
    n = x.size
    if x.size == 0:
        return x
    if mode is None:   # JAX: out-of-range flat indices clip as in unravel_index
        (i,) = unravel_index(i, (n,))
    elif mode == "clip":
        i = F.clip(i, 0, n - 1)
    elif mode == "wrap":
        i = F.remainder(i, U.to_array(n, i.dtype, False))
    elif mode == "raise":
        iv = _concrete_np(i, "put with mode='raise' on traced indices; use 'clip' or 'wrap'")
        if np.any((iv < -n) | (iv >= n)):
            raise IndexError(f"put: index out of range for array of size {n}")
        i = F.where(F.less(i, U.to_array(0, i.dtype, False)),
                    F.add(i, U.to_array(n, i.dtype, False)), i)
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    return lax.reshape(S.ravel(x).at[i].set(vv), x.shape)


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    """A copy of ``arr`` with ``values`` written at ``indices`` along ``axis``."""
    _no_inplace("put_along_axis", inplace)
    arr, indices, values = U.ensure_arraylike("put_along_axis", arr, indices, values)
    x, idx, v = U.to_array(arr), U.to_array(indices), U.to_array(values)
    if axis is None:
        x2, ax = S.ravel(x), 0
        if idx.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
    else:
        x2, ax = x, U.canonicalize_axis(axis, x.ndim)
        if idx.ndim != x.ndim:
            raise ValueError("`indices` and `arr` must have the same number of dimensions")
    n = x2.shape[ax]
    idx = F.where(F.less(idx, U.to_array(0, idx.dtype, False)),
                  F.add(idx, U.to_array(n, idx.dtype, False)), idx)
    shp = tuple(idx.shape[i] if i == ax else
                (builtins.max(idx.shape[i], x2.shape[i]) if idx.shape[i] != 1 else x2.shape[i])
                for i in range(x2.ndim))
    idx = S.broadcast_to(idx, shp)
    grids = []
    for d in range(x2.ndim):
        grids.append(idx if d == ax else lax.broadcasted_iota(idx.dtype, shp, d))
    out = x2.at[tuple(grids)].set(S.broadcast_to(v, shp))
    return lax.reshape(out, x.shape) if axis is None else out


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """A copy of ``arr`` without the entries ``obj`` (int, slice or indices) along ``axis``."""
    x = _arr("delete", arr)
    if axis is None:
        x, ax = S.ravel(x), 0
    else:
        ax = U.canonicalize_axis(axis, x.ndim)
    n = x.shape[ax]
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_)):
        o = U.canonicalize_axis(int(obj), n, "obj")   # ValueError when out of range, as JAX
        return S.concatenate([lax.slice_in_dim(x, 0, o, 1, ax),
                              lax.slice_in_dim(x, o + 1, n, 1, ax)], axis=ax)
    if isinstance(obj, slice):
        keep = np.ones(n, bool)
        keep[np.arange(n)[obj]] = False
        return S.take(x, np.flatnonzero(keep), axis=ax) if keep.any() or n == 0 else \
            lax.slice_in_dim(x, 0, 0, 1, ax)
    obj = U.ensure_arraylike("delete", obj)
    o = U.to_array(obj)
    ov = o.to_concrete_value()
    if ov is None:
        if not assume_unique_indices:
            raise core.errors.ConcretizationTypeError(
                o, "delete with traced indices: the output size depends on them; pass "
                "assume_unique_indices=True (indices must then be unique and in range)")
        if o.dtype.kind not in "iu":
            raise ValueError("delete(..., assume_unique_indices=True) requires integer indices")
        o = S.ravel(o)
        o = F.where(F.less(o, U.to_array(0, o.dtype, False)),
                    F.add(o, U.to_array(n, o.dtype, False)), o)
        m = o.shape[0]
        pos = lax.iota(_int(), n - m)
        # output slot j takes input j + #(deleted indices <= shifted position)
        so = S.sort(U.to_array(o, _int(), False))
        src = pos
        for k in range(m):
            sk = lax.index_in_dim(so, k, 0, False)
            src = F.where(F.greater_equal(src, sk), F.add(src, U.to_array(1, _int(), False)),
                          src)
        return S.take(x, src, axis=ax, mode="clip")
    ov = np.asarray(ov)
    if ov.dtype == np.bool_:
        if ov.shape != (n,):
            raise ValueError(f"boolean array argument obj to delete must be one dimensional "
                             f"and match the axis length of {n}")
        keep = ~ov
    else:
        if ov.dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        ov = ov.ravel()
        if np.any((ov < -n) | (ov >= n)):
            bad = ov[(ov < -n) | (ov >= n)][0]
            raise IndexError(f"index {bad} is out of bounds for axis {ax} with size {n}")
        keep = np.ones(n, bool)
        keep[ov % n if n else ov] = False
    ids = np.flatnonzero(keep)
    if ids.size == 0:
        return lax.slice_in_dim(x, 0, 0, 1, ax)
    return S.take(x, ids, axis=ax)


def insert(arr, obj, values, axis=None):
    """A copy of ``arr`` with ``values`` inserted before index/indices ``obj`` along ``axis``."""
    x = _arr("insert", arr)
    values = U.ensure_arraylike("insert", values)
    v = U.to_array(values)
    if axis is None:
        x, ax = S.ravel(x), 0
    else:
        ax = U.canonicalize_axis(axis, x.ndim)
    n = x.shape[ax]
    if isinstance(obj, slice):
        o = np.arange(*obj.indices(n))
        scalar = False
    else:
        obj = U.ensure_arraylike("insert", obj)
        o = _concrete_np(obj, "insert: the output shape depends on obj; obj must be static")
        scalar = o.ndim == 0
        if o.dtype == np.bool_:
            raise ValueError("insert: boolean obj is not supported; use integer indices")
        o = o.ravel().astype(np.int64)
    if np.any((o < -n) | (o > n)):
        bad = o[(o < -n) | (o > n)][0]
        raise IndexError(f"index {bad} is out of bounds for axis {ax} with size {n}")
    o = np.where(o < 0, o + n, o)
    v = U.to_array(v, x.dtype, False)
    if scalar:   # NumPy: values get ndmin=arr.ndim, then their first axis moves to ``axis``
        if v.ndim < x.ndim:
            v = lax.reshape(v, (1,) * (x.ndim - v.ndim) + v.shape)
        vv = S.moveaxis(v, 0, ax)
        tgt = list(x.shape)
        tgt[ax] = vv.shape[ax]
        vv = S.broadcast_to(vv, tuple(tgt))
        pos = int(o[0])
        return S.concatenate([lax.slice_in_dim(x, 0, pos, 1, ax), vv,
                              lax.slice_in_dim(x, pos, n, 1, ax)], axis=ax)
    m = o.shape[0]
    tgt = list(x.shape)
    tgt[ax] = m
    vb = S.broadcast_to(v, tuple(tgt))
    # stable placement: new items go before the original item at the same index
    order = np.argsort(o, kind="stable")
    o_sorted = o[order]
    new_pos = o_sorted + np.arange(m)
    total = n + m
    is_new = np.zeros(total, bool)
    is_new[new_pos] = True
    src_old = np.cumsum(~is_new) - 1
    src_new = np.empty(total, np.int64)
    src_new[new_pos] = order
    combined = S.concatenate([x, vb], axis=ax)
    src = np.where(is_new, n + src_new, src_old)
    return S.take(combined, src, axis=ax)


# ----------------------------------------------------------------- products


def matvec(x1, x2, /):
    """Batched matrix-vector product: (..., m, n) @ (..., n) -> (..., m)."""
    a, b = _arr("matvec", x1), _arr("matvec", x2)
    if a.ndim < 2 or b.ndim < 1:
        raise ValueError(f"matvec requires x1.ndim >= 2 and x2.ndim >= 1; got shapes "
                         f"{a.shape} and {b.shape}")
    return S.squeeze(matmul(a, S.expand_dims(b, -1)), -1)


def vecmat(x1, x2, /):
    """Batched vector-matrix product: conj(x1) (..., n) @ (..., n, m) -> (..., m)."""
    a, b = _arr("vecmat", x1), _arr("vecmat", x2)
    if a.ndim < 1 or b.ndim < 2:
        raise ValueError(f"vecmat requires x1.ndim >= 1 and x2.ndim >= 2; got shapes "
                         f"{a.shape} and {b.shape}")
    return S.squeeze(matmul(S.expand_dims(lax.conj(a) if a.dtype.kind == "c" else a, -2), b), -2)


# ----------------------------------------------------------------- bits


def packbits(a, axis=None, bitorder="big"):
    """Pack (truthy) elements into bits of uint8, 8 per byte, zero-padded."""
    x = _arr("packbits", a)
    if x.dtype.kind not in "iub" or dtypes.is_bfloat16(x.dtype):
        raise TypeError("Expected an input array of integer or boolean data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    bits = U.to_array(F.not_equal(x, U.to_array(0, x.dtype, False)), np.uint8, False)
    if axis is None:
        bits, ax = S.ravel(bits), 0
    else:
        ax = U.canonicalize_axis(axis, bits.ndim)
    bits = S.moveaxis(bits, ax, -1)
    n = bits.shape[-1]
    pad = (-n) % 8
    if pad:
        cfg = [(0, 0, 0)] * (bits.ndim - 1) + [(0, pad, 0)]
        bits = lax.pad(bits, U.to_array(0, np.uint8, False), cfg)
    m = (n + pad) // 8
    bits = lax.reshape(bits, bits.shape[:-1] + (m, 8))
    shifts = np.arange(8, dtype=np.uint8)
    if bitorder == "big":
        shifts = shifts[::-1].copy()
    shifted = lax.shift_left(bits, U.broadcast_to_shape(U.to_array(shifts), bits.shape))
    packed = lax.reduce_sum(shifted, (bits.ndim - 1,))   # disjoint bits: sum == or
    return S.moveaxis(packed, -1, ax)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """Unpack uint8 bytes into their bits (0/1 uint8)."""
    x = _arr("unpackbits", a)
    if x.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    shifts = np.arange(8, dtype=np.uint8)
    if bitorder == "big":
        shifts = shifts[::-1].copy()
    xe = S.expand_dims(x, -1)
    shp = x.shape + (8,)
    bits = F.bitwise_and(lax.shift_right_logical(U.broadcast_to_shape(xe, shp),
                                                   U.broadcast_to_shape(U.to_array(shifts),
                                                                        shp)),
                         U.to_array(1, np.uint8, False))
    if axis is None:
        bits, ax = S.ravel(bits), 0
    else:
        ax = U.canonicalize_axis(axis, x.ndim)
        bits = lax.reshape(S.moveaxis(bits, ax, -2),
                             tuple(d for i, d in enumerate(x.shape) if i != ax) +
                             (x.shape[ax] * 8,))
        bits = S.moveaxis(bits, -1, ax)
    if count is not None:
        count = U.static_int(count, "unpackbits: count")
        n = bits.shape[ax]
        if count <= n:
            bits = lax.slice_in_dim(bits, 0, builtins.max(count, 0) if count >= 0 else
                                      n + count, 1, ax)
        else:
            cfg = [(0, 0, 0)] * bits.ndim
            cfg[ax] = (0, count - n, 0)
            bits = lax.pad(bits, U.to_array(0, np.uint8, False), cfg)
    return bits


# ----------------------------------------------------------------- functional


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``func1d`` applied to every 1-D slice of ``arr`` along ``axis`` (via vmap)."""
    x = _arr("apply_along_axis", arr)
    nd = x.ndim
    ax = U.canonicalize_axis(axis, nd)

    def f(v):
        return func1d(v, *args, **kwargs)
    for i in range(1, nd - ax):
        f = vmap(f, in_axes=i, out_axes=-1)
    for _ in range(ax):
        f = vmap(f, in_axes=0, out_axes=0)
    return f(x)


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` for each axis in turn, keeping the number of dimensions."""
    x = _arr("apply_over_axes", a)
    for axis in axes:
        b = func(x, axis)
        if b.ndim == x.ndim:
            x = b
        elif b.ndim == x.ndim - 1:
            x = S.expand_dims(b, axis)
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return x


_DIM = r"\w+"
_CORE = rf"(?:{_DIM}(?:,{_DIM})*)?"
_ARG = rf"\({_CORE}\)"
_ARGLIST = rf"{_ARG}(?:,{_ARG})*"
_SIG = rf"^{_ARGLIST}->{_ARGLIST}$"


def _parse_signature(sig):
    s = sig.replace(" ", "")
    if not re.match(_SIG, s):
        raise ValueError(f"not a valid gufunc signature: {sig}")
    ins, outs = s.split("->")
    parse = lambda part: [tuple(re.findall(_DIM, g)) for g in re.findall(_ARG, part)]  # noqa
    return parse(ins), parse(outs)


def _check_vectorize_rank_promotion(arrs, cores, signature):
    """JAX: with jax_numpy_rank_promotion 'warn'/'raise', non-scalar operands whose loop
    ranks differ warn/raise (rank promotion of the loop dimensions)."""
    mode = config.jax_numpy_rank_promotion
    if mode == "allow":
        return
    ranks = {a.ndim - len(c) for a, c in zip(arrs, cores) if a.ndim != 0}
    if len(ranks) > 1:
        msg = (f"operands with shapes {[a.shape for a in arrs]} require rank promotion for "
               f"jnp.vectorize function with signature {signature}. Set the "
               "jax_numpy_rank_promotion config option to 'allow' to disable this message; "
               "for more information, see "
               "https://docs.jax.dev/en/latest/rank_promotion_warning.html.")
        if mode == "raise":
            raise ValueError(msg)
        warnings.warn(msg)


class vectorize:
    """``numpy.vectorize`` via ``vmap``: loop dimensions broadcast, core dimensions from
    ``signature`` (e.g. ``'(n),(n)->()'``) are passed whole to ``pyfunc``."""

    def __init__(self, pyfunc, *, excluded=frozenset(), signature=None):
        self.pyfunc = pyfunc
        self.excluded = set(excluded)
        self.signature = signature
        if any(not isinstance(e, (int, str)) for e in self.excluded):
            raise TypeError("jax.numpy.vectorize can only exclude integer or string "
                            f"arguments, but excluded={excluded!r}")
        if any(isinstance(e, int) and e < 0 for e in self.excluded):
            raise ValueError(f"excluded={excluded!r} contains negative numbers")
        self.__doc__ = getattr(pyfunc, "__doc__", None)
        self.__name__ = getattr(pyfunc, "__name__", "vectorized")
        self.__wrapped__ = pyfunc

    def __call__(self, *args, **kwargs):
        excluded = self.excluded
        static = {i: a for i, a in enumerate(args) if i in excluded}
        skw = {k: v for k, v in kwargs.items() if k in excluded}
        dkw = {k: v for k, v in kwargs.items() if k not in excluded}
        dyn = [a for i, a in enumerate(args) if i not in excluded]
        none_pos = {i for i, a in enumerate(dyn) if a is None}
        if self.signature is not None:
            in_core, out_core = _parse_signature(self.signature)
            if len(in_core) != len(dyn):
                raise TypeError(f"wrong number of positional arguments: expected "
                                f"{len(in_core)}, got {len(dyn)}")
        else:
            in_core, out_core = [()] * len(dyn), None
        if none_pos:
            if any(in_core[i] != () for i in none_pos):
                raise ValueError(f"Cannot pass None at locations {none_pos} with "
                                 f"signature={self.signature!r}")
        pyfunc = self.pyfunc
        ndyn = len(dyn)

        def call(*dargs):
            it = iter(dargs)
            full, di = [], 0
            for i in range(len(args)):
                if i in static:
                    full.append(static[i])
                else:
                    full.append(None if di in none_pos else next(it))
                    di += 1
            return pyfunc(*full, **skw, **dkw)

        arrs = [U.to_array(U.to_array(a) if not isinstance(a, (list, tuple)) else
                           np.asarray(a)) for i, a in enumerate(dyn) if i not in none_pos]
        cores = [c for i, c in enumerate(in_core) if i not in none_pos]
        sizes = {}
        loops = []
        for a, c in zip(arrs, cores):
            if a.ndim < len(c):
                raise ValueError(f"input with shape {a.shape} does not have enough dimensions "
                                 f"for its core dimensions {c} (signature {self.signature})")
            for d, s in zip(c, a.shape[a.ndim - len(c):]):
                if sizes.setdefault(d, s) != s:
                    raise ValueError(f"inconsistent size for core dimension {d!r}: {s} vs "
                                     f"{sizes[d]} (signature {self.signature})")
            loops.append(a.shape[:a.ndim - len(c)])
        _check_vectorize_rank_promotion(arrs, cores, self.signature)
        bshape = U.broadcast_shapes(*loops, name="vectorize") if loops else ()
        arrs = [U.broadcast_to_shape(a, bshape + a.shape[a.ndim - len(c):])
                for a, c in zip(arrs, cores)]

        def checked(*xs):
            out = call(*xs)
            if out_core is not None:
                outs = out if isinstance(out, tuple) else (out,)
                if len(out_core) > 1 and not isinstance(out, tuple):
                    raise TypeError("output must be a tuple when multiple outputs are expected")
                if len(outs) != len(out_core):
                    raise TypeError(f"wrong number of output arguments: expected "
                                    f"{len(out_core)}, got {len(outs)}")
                for o, c in zip(outs, out_core):
                    shp = np.shape(o)
                    if len(shp) != len(c):
                        raise ValueError(f"output shape {shp} does not match core dimensions "
                                         f"{c} (signature {self.signature})")
                    for d, s in zip(c, shp):
                        if sizes.setdefault(d, s) != s:
                            raise ValueError(f"inconsistent size for core dimension {d!r}: "
                                             f"{s} vs {sizes[d]}")
            return out

        f = checked
        for _ in range(len(bshape)):
            f = vmap(f)
        del ndyn
        return f(*arrs)


class ufunc:
    """A universal function built from a Python scalar function (``jnp.ufunc``).

    ``__call__`` vectorizes ``func``; ``outer``, ``reduce``, ``accumulate``, ``at`` and
    ``reduceat`` are generic (scan / fori_loop based) unless faster versions are given.
    """

    def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None,
                 call=None, reduce=None, accumulate=None, at=None, reduceat=None):
        nin = operator.index(nin)
        self.__dict__.update(
            __name__=name or getattr(func, "__name__", "ufunc"), _func=func, nin=nin,
            nout=operator.index(nout),
            nargs=nin if nargs is None else operator.index(nargs), identity=identity,
            _call=call or vectorize(func), _reduce=reduce, _accumulate=accumulate, _at=at,
            _reduceat=reduceat)
        if getattr(func, "__doc__", None):
            self.__dict__["__doc__"] = func.__doc__

    def __setattr__(self, name, value):
        # read-only like JAX's ufunc objects (jnp.add.nin = 3 raises)
        raise AttributeError(f"ufunc attribute {name!r} is read-only")

    def __delattr__(self, name):
        raise AttributeError(f"ufunc attribute {name!r} is read-only")

    def __repr__(self):
        return f"<xform.numpy.ufunc '{self.__name__}'>"

    def __hash__(self):
        return hash((self._func, self.__name__, self.identity, self.nin, self.nout))

    def __eq__(self, other):
        return isinstance(other, ufunc) and (self._func, self.__name__, self.identity,
                                             self.nin, self.nout) == \
            (other._func, other.__name__, other.identity, other.nin, other.nout)

    def __call__(self, *args, out=None, where=None):
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} positional arguments but "
                            f"{len(args)} were given")
        if len(args) > 1:
            U.check_rank_promotion(self.__name__, [np.shape(a) for a in args])
        return self._call(*args)

    def _binary_check(self, method):
        if self.nin != 2:
            raise ValueError(f"{method} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{method} only supported for functions returning a single value")

    def outer(self, A, B, /, **kwargs):
        if self.nin != 2:
            raise ValueError("outer only supported for binary ufuncs")
        a, b = _arr("outer", A), _arr("outer", B)
        # both operands brought to the full rank: an outer product is no rank promotion
        a2 = lax.reshape(a, a.shape + (1,) * b.ndim)
        b2 = lax.reshape(b, (1,) * a.ndim + b.shape)
        return self(a2, b2, **kwargs)

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
               where=None):
        self._binary_check("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        if self._reduce is not None and where is None:
            return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial)
        x = _arr(f"{self.__name__}.reduce", a)
        if dtype is not None:
            x = U.to_array(x, U.canonical_dtype(dtype), False)
        axes = U.canonicalize_axes(axis, x.ndim)
        mask = None
        if where is not None:
            if self.identity is None and initial is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                                 "identity, so to use a where mask one has to specify "
                                 "'initial'.")
            mask = U.broadcast_to_shape(U.to_array(where), x.shape)
        if initial is None:
            initial = self.identity
        shape0 = x.shape
        keep = [i for i in range(x.ndim) if i not in axes]
        merged = (int(np.prod([shape0[i] for i in axes], dtype=np.int64)),) + \
            tuple(shape0[i] for i in keep)
        x = lax.reshape(S.transpose(x, tuple(axes) + tuple(keep)), merged)
        if mask is not None:   # masked-out entries are skipped (the carry passes through)
            mask = lax.reshape(S.transpose(mask, tuple(axes) + tuple(keep)), merged)
        x = self._reduce_axis(x, 0, initial, mask)
        if keepdims:
            x = lax.reshape(x, tuple(1 if i in axes else d for i, d in enumerate(shape0)))
        return x

    def _reduce_axis(self, x, ax, initial, mask=None):
        x = S.moveaxis(x, ax, 0)
        n = x.shape[0]
        if initial is None:
            if n == 0:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 "which has no identity")
            carry = lax.index_in_dim(x, 0, 0, False)
            rest = lax.slice_in_dim(x, 1, n, 1, 0)
        else:
            carry = U.broadcast_to_shape(U.to_array(initial, x.dtype, False), x.shape[1:])
            rest = x
        if rest.shape[0] == 0:
            return carry
        fn = self._call
        if mask is None:
            def body(c, v):
                return U.to_array(U.to_array(fn(c, v)), c.dtype, False), None
            carry, _ = scan(body, carry, rest)
        else:
            def body(c, vm):
                v, m = vm
                return F.where(m, U.to_array(U.to_array(fn(c, v)), c.dtype, False), c), None
            carry, _ = scan(body, carry, (rest, mask))
        return carry

    def accumulate(self, a, axis=0, dtype=None, out=None):
        self._binary_check("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        if self._accumulate is not None:
            return self._accumulate(a, axis=axis, dtype=dtype)
        x = _arr(f"{self.__name__}.accumulate", a)
        if dtype is not None:
            x = U.to_array(x, U.canonical_dtype(dtype), False)
        ax = U.canonicalize_axis(axis, x.ndim)
        x = S.moveaxis(x, ax, 0)
        n = x.shape[0]
        if n == 0:
            return S.moveaxis(x, 0, ax)
        first = lax.index_in_dim(x, 0, 0, False)
        fn = self._call

        def body(c, v):
            nc = U.to_array(U.to_array(fn(c, v)), c.dtype, False)
            return nc, nc
        _, ys = scan(body, first, lax.slice_in_dim(x, 1, n, 1, 0))
        res = S.concatenate([S.expand_dims(first, 0), ys], axis=0)
        return S.moveaxis(res, 0, ax)

    def at(self, a, indices, b=None, /, *, inplace=True):
        if inplace:
            raise NotImplementedError("xform.numpy.ufunc.at: in-place updates are impossible "
                                      "on immutable arrays; pass inplace=False")
        if self._at is not None:
            return self._at(a, indices, b)
        x = _arr(f"{self.__name__}.at", a)
        n = x.size
        pos = S.ravel(lax.reshape(lax.iota(_int(), n), x.shape)[indices])
        flat = S.ravel(x)
        fn = self._call
        if b is None:
            if self.nin != 1:
                raise ValueError("second argument to at must be provided for binary ufuncs")

            def body(i, f):
                p = lax.dynamic_index_in_dim(pos, i, 0, False)
                v = lax.dynamic_index_in_dim(f, p, 0, False)
                return lax.dynamic_update_index_in_dim(
                    f, U.to_array(U.to_array(fn(v)), f.dtype, False), p, 0)
        else:
            bb = S.ravel(S.broadcast_to(U.to_array(b), x[indices].shape))

            def body(i, f):
                p = lax.dynamic_index_in_dim(pos, i, 0, False)
                v = lax.dynamic_index_in_dim(f, p, 0, False)
                w = lax.dynamic_index_in_dim(bb, i, 0, False)
                return lax.dynamic_update_index_in_dim(
                    f, U.to_array(U.to_array(fn(v, w)), f.dtype, False), p, 0)
        flat = fori_loop(0, pos.shape[0], body, flat)
        return lax.reshape(flat, x.shape)

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        self._binary_check("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        if self._reduceat is not None:
            return self._reduceat(a, indices, axis=axis, dtype=dtype)
        x = _arr(f"{self.__name__}.reduceat", a)
        if dtype is not None:
            x = U.to_array(x, U.canonical_dtype(dtype), False)
        if x.ndim == 0:
            raise ValueError(f"reduceat: a must have 1 or more dimension, got {x.shape=}")
        ax = U.canonicalize_axis(axis, x.ndim)
        indices = U.ensure_arraylike(f"{self.__name__}.reduceat", indices)
        idx = U.to_array(indices)
        if idx.ndim != 1:
            raise ValueError(f"reduceat: indices must be one-dimensional, got {idx.shape=}")
        n = x.shape[ax]
        sel = (slice(None),) * ax
        # out[k] starts as x[idx[k]]; element i is folded into every out[k] whose segment
        # idx[k] < i < idx[k+1] holds it (a segment with idx[k] >= idx[k+1] is x[idx[k]]),
        # so traced indices work
        out = getitem(x, sel + (idx,))
        bounds = S.concatenate([U.to_array(idx, idx.dtype, False),
                                U.to_array(np.array([n]), idx.dtype, False)])
        shape = [1] * out.ndim
        shape[ax] = idx.shape[0]
        lo = lax.reshape(bounds[:-1], tuple(shape))
        hi = lax.reshape(bounds[1:], tuple(shape))
        fn = self._call

        def body(i, acc):
            xi = S.expand_dims(lax.dynamic_index_in_dim(x, i, ax, False), ax)
            new = U.to_array(U.to_array(fn(acc, xi)), acc.dtype, False)
            ii = U.to_array(i, idx.dtype, False)
            inside = F.logical_and(F.greater(ii, lo), F.less(ii, hi))
            return F.where(inside, new, acc)
        return fori_loop(0, n, body, out)


def frompyfunc(func, /, nin, nout, *, identity=None):
    """A ``ufunc`` from a Python function of ``nin`` inputs and ``nout`` outputs."""
    return ufunc(func, nin, nout, identity=identity)


__all__ = ["ComplexWarning", "array_repr", "array_str", "iterable", "object_", "save", "savez",
           "printoptions", "get_printoptions", "set_printoptions", "load", "fromstring", "from_dlpack",
           "fromfunction", "rollaxis", "unstack", "block", "resize", "trim_zeros", "select",
           "choose", "piecewise", "compress", "extract", "place", "put", "put_along_axis",
           "delete", "insert", "matvec", "vecmat", "packbits", "unpackbits",
           "apply_along_axis", "apply_over_axes", "vectorize", "ufunc", "frompyfunc"]


def _impure(name, what):
    def f(*args, **kwargs):
        raise NotImplementedError(
            f"jnp.{name}() is not implemented because it may be non-pure and thus unsafe "
            f"for use with JIT and other transformations (it consumes the {what}). Read "
            f"it with NumPy outside the transformed function: "
            f"xform.numpy.asarray(np.{name}(...)).")
    f.__name__ = name
    f.__doc__ = (f"Deliberately not implemented, as in JAX: reading a {what} is a side "
                 f"effect. Use ``xform.numpy.asarray(np.{name}(...))`` outside transformed "
                 "functions.")
    return f


fromfile = _impure("fromfile", "file object")
fromiter = _impure("fromiter", "iterable object")
__all__ += ["fromfile", "fromiter"]

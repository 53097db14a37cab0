"""Set operations: unique (and unique_all/counts/inverse/values), union1d, intersect1d,
setdiff1d, setxor1d, isin.

Data-dependent sizes: without ``size=`` the input must be concrete (a
``ConcretizationTypeError`` under jit, as in JAX); with a static ``size=`` every
function is a fixed-shape program (sort, masks, a sort-based compaction) padded
with ``fill_value``, so it jits, batches and differentiates (w.r.t. values).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from xform._src.interpreters import core, dtypes
from xform._src.interpreters.core import ArrayOps
from xform.numpy import _shape as S
from xform.numpy import _ufuncs as F
from xform.numpy import _util as U
from xform.numpy._index_tricks import nonzero_sized
from xform.numpy._sorting_extra import _total_eq, search
from xform.numpy._util import lax
from xform.numpy._reductions import cumsum
from xform.numpy._reductions import min as _min

_HINT = ("To make xform.numpy.{name}() compatible with jit and other transformations, pass "
         "a static size= argument, which determines the output size.")


def _concrete(name, *xs):
    for x in xs:
        if isinstance(x, ArrayOps) and x.to_concrete_value() is None:
            raise core.errors.ConcretizationTypeError(
                x, f"The error arose in xform.numpy.{name}(): the result shape depends on the "
                f"values. " + _HINT.format(name=name))


def _static_size(name, size):
    if size is None:
        return None
    return U.static_int(size, f"{name}: size")


def _int():
    return dtypes.default_int_dtype()


def _arange(n, dt=None):
    return lax.iota(dt or _int(), n)


def _count(mask):
    return lax.reduce_sum(U.to_array(mask, _int(), False), (0,))


def _concrete_count(mask):
    return int(np.asarray(mask.to_concrete_value()).sum())


def _take0(x, idx):
    """x[idx] along axis 0 for in-range traced/host indices."""
    return S.take(x, idx, axis=0, mode="clip")


# ----------------------------------------------------------------- sorted unique core


def _sorted_mask(x, equal_nan):
    """Sort ``x`` (n, ...) along axis 0 lexicographically; mask of first-of-run rows."""
    n = x.shape[0]
    rest = x.shape[1:]
    m = int(np.prod(rest, dtype=np.int64))
    idt = _int()
    if x.dtype.kind == "c" or x.dtype.kind == "f" or dtypes.is_bfloat16(x.dtype):
        if equal_nan:   # canonical NaN so all NaNs sort together
            x = F.where(F.isnan(x), U.to_array(np.nan, x.dtype, False), x)
    if m == 0 or n == 0:
        perm = _arange(n, idt)
        aux = x
    else:
        flat = lax.reshape(x, (n, m))
        cols = tuple(lax.index_in_dim(flat, j, 1, False) for j in range(m))
        out = lax.sort(cols + (_arange(n, idt),), dimension=0, is_stable=True, num_keys=m)
        perm = out[-1]
        aux = _take0(x, perm) if x.ndim > 1 else out[0]
    if n == 0:
        return aux, U.to_array(np.zeros(0, bool)), perm
    if m == 0:
        mask = F.equal(_arange(n), U.to_array(0, idt, False))
        return aux, mask, perm
    a1 = lax.slice_in_dim(aux, 1, n, 1, 0)
    a0 = lax.slice_in_dim(aux, 0, n - 1, 1, 0)
    if equal_nan:
        neq = F.logical_not(_total_eq(a1, a0))
    else:
        neq = F.not_equal(a1, a0)
    if neq.ndim > 1:
        neq = lax.reduce_or(neq, tuple(range(1, neq.ndim)))
    mask = S.concatenate([U.to_array(np.ones(1, bool)), neq])
    return aux, mask, perm


def _unique(x, axis, return_index, return_inverse, return_counts, equal_nan, size,
            fill_value, return_true_size=False):
    ax = U.canonicalize_axis(axis, x.ndim)
    n = x.shape[ax]
    if n == 0 and size and fill_value is None:
        raise ValueError("xform.numpy.unique: for zero-sized input with nonzero size argument, "
                         "fill_value must be specified")
    aux, mask, perm = _sorted_mask(S.moveaxis(x, ax, 0), equal_nan)
    if size is None:
        size = _concrete_count(mask) if n else 0
        sized = False
    else:
        sized = True
    idt = _int()
    if n:
        (ind,) = nonzero_sized(mask, size)
        result = _take0(aux, ind)
    else:
        ind = U.to_array(np.zeros(size, idt))
        result = aux if not sized else \
            U.broadcast_to_shape(U.to_array(fill_value if fill_value is not None else 0,
                                            aux.dtype, False), (size,) + aux.shape[1:])
    nu = _count(mask)
    if sized and fill_value is not None and n:
        valid = F.less(_arange(size), nu)
        valid = lax.broadcast_in_dim(valid, result.shape, (0,))
        result = F.where(valid, result, U.to_array(fill_value, result.dtype, False))
    ret = (S.moveaxis(result, 0, ax),)
    if return_index:
        ret += (_take0(perm, ind) if n else perm,)
    if return_inverse:
        if n:
            grp = F.subtract(U.to_array(cumsum(mask), idt, False), U.to_array(1, idt, False))
            inv = U.to_array(np.zeros(n, idt)).at[perm].set(grp)
        else:
            inv = U.to_array(np.zeros(0, idt))
        ret += (inv,)
    if return_counts:
        if n:
            (pos,) = nonzero_sized(mask, size + 1, fill_value=n)
            cnt = F.subtract(lax.slice_in_dim(pos, 1, size + 1, 1, 0),
                             lax.slice_in_dim(pos, 0, size, 1, 0))
        else:
            cnt = U.to_array(np.zeros(size, idt))
        ret += (cnt,)
    if return_true_size:
        ret += (nu,)
    return ret[0] if len(ret) == 1 else ret


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
    """Sorted unique values (and first indices, inverse, counts) of ``ar``."""
    ar = U.ensure_arraylike("unique", ar)
    x = U.to_array(ar)
    size = _static_size("unique", size)
    if size is None:
        _concrete("unique", x)
    shape = x.shape
    if axis is None:
        x, ax = S.ravel(x), 0
    else:
        ax = U.canonicalize_axis(axis, x.ndim)
    res = _unique(x, ax, return_index, return_inverse, return_counts, equal_nan, size,
                  fill_value)
    if return_inverse and axis is None:
        k = 2 if return_index else 1
        res = res[:k] + (lax.reshape(res[k], shape),) + res[k + 1:]
    return res


class _UniqueAllResult(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class _UniqueCountsResult(NamedTuple):
    values: object
    counts: object


class _UniqueInverseResult(NamedTuple):
    values: object
    inverse_indices: object


def unique_all(x, /, *, size=None, fill_value=None):
    """``unique`` with indices, inverse and counts (NaNs are distinct)."""
    v, i, inv, c = unique(x, True, True, True, equal_nan=False, size=size,
                          fill_value=fill_value)
    return _UniqueAllResult(v, i, inv, c)


def unique_counts(x, /, *, size=None, fill_value=None):
    v, c = unique(x, return_counts=True, equal_nan=False, size=size, fill_value=fill_value)
    return _UniqueCountsResult(v, c)


def unique_inverse(x, /, *, size=None, fill_value=None):
    v, inv = unique(x, return_inverse=True, equal_nan=False, size=size, fill_value=fill_value)
    return _UniqueInverseResult(v, inv)


def unique_values(x, /, *, size=None, fill_value=None):
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


# ----------------------------------------------------------------- membership


def _in1d(a, b, invert, method="auto"):
    """Membership of each entry of flat ``a`` in flat ``b`` (promoted, same dtype)."""
    if method not in ("auto", "compare_all", "binary_search", "sort"):
        raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', "
                         "'binary_search', 'sort', and 'auto'")
    if a.shape[0] == 0 or b.shape[0] == 0:
        return U.to_array(np.full(a.shape, bool(invert)))
    if method == "compare_all" or (method == "auto" and a.shape[0] * b.shape[0] <= 1 << 20):
        eq = F.equal(lax.broadcast_in_dim(a, (a.shape[0], b.shape[0]), (0,)),
                     lax.broadcast_in_dim(b, (a.shape[0], b.shape[0]), (1,)))
        hit = lax.reduce_or(eq, (1,))
    else:
        sb = S.sort(b)
        pos = search(sb, a, "left", np.dtype(np.int32))
        hit = F.equal(S.take(sb, pos, mode="clip"), a)
    return F.logical_not(hit) if invert else hit


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Boolean array of ``element``'s shape: is each entry in ``test_elements``?"""
    element, test_elements = U.ensure_arraylike("isin", element, test_elements)
    x, t = U.promote_dtypes(U.to_array(element), U.to_array(test_elements))
    out = _in1d(S.ravel(x), S.ravel(t), invert, method)
    return lax.reshape(out, x.shape)


# ----------------------------------------------------------------- set operations


def _flat_pair(name, ar1, ar2):
    ar1, ar2 = U.ensure_arraylike(name, ar1, ar2)
    a, b = U.promote_dtypes(U.to_array(ar1), U.to_array(ar2))
    return S.ravel(a), S.ravel(b)


def _compact(vals, keep, size, fill):
    """``vals[keep]`` (order kept) padded to ``size`` with ``fill`` (or min/0 rule)."""
    n = vals.shape[0]
    cnt = _count(keep)
    if size is None:
        size = _concrete_count(keep)
    if n == 0:
        return U.broadcast_to_shape(U.to_array(0 if fill is None else fill, vals.dtype, False),
                                    (size,))
    (ind,) = nonzero_sized(keep, size)
    out = _take0(vals, ind)
    valid = F.less(_arange(size), cnt)
    if fill is None:   # JAX's default: the smallest result value (0 when empty)
        z = U.to_array(0, vals.dtype, False)
        masked = F.where(valid, out, U.to_array(_big(vals.dtype), vals.dtype, False))
        smallest = _min(masked) if size else z
        fill = F.where(F.greater(cnt, U.to_array(0, cnt.dtype, False)), smallest, z)
    return F.where(valid, out, U.to_array(fill, vals.dtype, False))


def _big(dt):
    if dt == dtypes.bool_:
        return True
    if dt.kind in "iu":
        return dtypes.iinfo(dt).max
    if dt.kind == "c":
        return complex(np.inf, np.inf)
    return np.inf


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """Sorted unique values present in either array."""
    ar1, ar2 = U.ensure_arraylike("union1d", ar1, ar2)
    size = _static_size("union1d", size)
    if size is None:
        _concrete("union1d", ar1, ar2)
    a, b = _flat_pair("union1d", ar1, ar2)
    return unique(S.concatenate([a, b]), size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """Sorted unique values of ``ar1`` that are not in ``ar2``."""
    size = _static_size("setdiff1d", size)
    if size is None:
        _concrete("setdiff1d", ar1)
    ar1, ar2 = U.ensure_arraylike("setdiff1d", ar1, ar2)
    # JAX: the result keeps ar1's dtype (ar2 is only compared against)
    a, b = S.ravel(U.to_array(ar1)), S.ravel(U.to_array(ar2))
    fill = 0 if fill_value is None else fill_value
    if a.shape[0] == 0:
        return U.broadcast_to_shape(U.to_array(fill, a.dtype, False), (size or 0,))
    if assume_unique:
        vals, keep = a, U.to_array(np.ones(a.shape, bool))
    else:
        vals, keep, _ = _sorted_mask(a, True)
    keep = F.logical_and(keep, _in1d(vals, b, invert=True))
    return _compact(vals, keep, size, fill)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
    """Sorted unique values present in both arrays (optionally their first indices)."""
    size = _static_size("intersect1d", size)
    if size is None:
        _concrete("intersect1d", ar1, ar2)
    a, b = _flat_pair("intersect1d", ar1, ar2)
    na, nb = a.shape[0], b.shape[0]
    if na == 0 or nb == 0:
        vals, keep, perm = a, U.to_array(np.zeros(na, bool)), _arange(na)
    else:
        vals, keep, perm = _sorted_mask(a, True)
        if assume_unique:
            keep = U.to_array(np.ones(na, bool))
        keep = F.logical_and(keep, _in1d(vals, b, invert=False))
    out = _compact(vals, keep, size, fill_value)
    if not return_indices:
        return out
    n_out = out.shape[0]
    cnt = _count(keep)
    valid = F.less(_arange(n_out), cnt)
    if na == 0 or nb == 0:
        e = U.to_array(np.zeros(n_out, _int()))
        return out, F.where(valid, e, U.to_array(na, _int(), False)), \
            F.where(valid, e, U.to_array(nb, _int(), False))
    (ind,) = nonzero_sized(keep, n_out)
    i1 = _take0(perm, ind)
    sb, pb = lax.sort((b, _arange(nb)), dimension=0, is_stable=True, num_keys=1)
    pos = search(sb, out, "left", _int())
    i2 = S.take(pb, pos, mode="clip")
    i1 = F.where(valid, i1, U.to_array(na, i1.dtype, False))
    i2 = F.where(valid, i2, U.to_array(nb, i2.dtype, False))
    return out, i1, i2


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """Sorted unique values present in exactly one of the arrays."""
    size = _static_size("setxor1d", size)
    if size is None:
        _concrete("setxor1d", ar1, ar2)
    a, b = _flat_pair("setxor1d", ar1, ar2)
    if assume_unique:
        # JAX: the values that occur exactly once in the sorted concatenation
        vals = S.sort(S.concatenate([a, b]))
        n = vals.shape[0]
        if n == 0:
            return U.broadcast_to_shape(U.to_array(0 if fill_value is None else fill_value,
                                                   a.dtype, False), (size or 0,))
        differs = F.not_equal(vals[1:], vals[:-1])
        edge = U.to_array(np.ones((1,), bool))
        flag = S.concatenate([edge, differs, edge])
        return _compact(vals, F.logical_and(flag[1:], flag[:-1]), size, fill_value)
    parts, keeps = [], []
    for x, y in ((a, b), (b, a)):
        if x.shape[0] == 0:
            continue
        if assume_unique:
            v, k = x, U.to_array(np.ones(x.shape, bool))
        else:
            v, k, _ = _sorted_mask(x, True)
        parts.append(v)
        keeps.append(F.logical_and(k, _in1d(v, y, invert=True)) if y.shape[0] else k)
    if not parts:
        return U.broadcast_to_shape(U.to_array(0 if fill_value is None else fill_value,
                                               a.dtype, False), (size or 0,))
    vals = S.concatenate(parts) if len(parts) > 1 else parts[0]
    keep = S.concatenate(keeps) if len(keeps) > 1 else keeps[0]
    drop = U.to_array(F.logical_not(keep), np.int32, False)
    drop, vals = lax.sort((drop, vals), dimension=0, is_stable=True, num_keys=2)
    keep = F.equal(drop, U.to_array(0, np.int32, False))
    return _compact(vals, keep, size, fill_value)


__all__ = ["unique", "unique_all", "unique_counts", "unique_inverse", "unique_values", "isin",
           "union1d", "setdiff1d", "intersect1d", "setxor1d"]

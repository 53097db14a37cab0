"""Searching and partial sorting: searchsorted, digitize, lexsort, partition,
argpartition, sort_complex.

``searchsorted`` is a branch-free binary search (ceil(log2(n+1)) gathers) under
NumPy's total order (NaN last), so it traces, batches and jits like any other code.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import core, dtypes
from xform.numpy import _shape as S
from xform.numpy import _ufuncs as F
from xform.numpy import _util as U
from xform.numpy._util import lax


def _idx_dtype(n):
    return np.dtype(np.int32) if n < 2 ** 31 - 1 else dtypes.default_int_dtype()


def _isnan(x):
    if x.dtype.kind in "fc" or dtypes.is_bfloat16(x.dtype):
        return F.isnan(x)
    return None


def total_lt(x, y):
    """``x < y`` in NumPy's sort order (NaN after everything; complex lexicographic)."""
    if x.dtype.kind == "c":
        xr, xi, yr, yi = F.real(x), F.imag(x), F.real(y), F.imag(y)
        return F.logical_or(total_lt(xr, yr),
                            F.logical_and(_total_eq(xr, yr), total_lt(xi, yi)))
    lt = F.less(x, y)
    nx, ny = _isnan(x), _isnan(y)
    if nx is None:
        return lt
    return F.logical_or(lt, F.logical_and(F.logical_not(nx), ny))


def _total_eq(x, y):
    eq = F.equal(x, y)
    nx, ny = _isnan(x), _isnan(y)
    if nx is None:
        return eq
    return F.logical_or(eq, F.logical_and(nx, ny))


_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Insertion indices of ``v`` into the sorted 1-D array ``a``."""
    a, v = U.ensure_arraylike("searchsorted", a, v)
    if sorter is not None:
        sorter = U.ensure_arraylike("searchsorted", sorter)
    if side not in ("left", "right"):
        raise ValueError(f"{side!r} is an invalid value for keyword 'side'. Expected one of "
                         "['left', 'right'].")
    if method not in _METHODS:
        raise ValueError(f"method={method!r} not recognized; expected one of {_METHODS}")
    x, q = U.to_array(a), U.to_array(v)
    if x.ndim != 1:
        raise ValueError("a should be 1-dimensional")
    x, q = U.promote_dtypes(x, q)
    if sorter is not None:
        x = S.take(x, sorter)
    n = x.shape[0]
    idt = _idx_dtype(n)
    if n == 0:
        return U.broadcast_to_shape(U.to_array(0, idt, False), q.shape)
    return search(x, q, side, idt)


def search(x, q, side, idt):
    """Binary search of every entry of ``q`` in sorted ``x`` (both already promoted)."""
    n = x.shape[0]
    lo = U.broadcast_to_shape(U.to_array(0, idt, False), q.shape)
    hi = U.broadcast_to_shape(U.to_array(n, idt, False), q.shape)
    one = U.to_array(1, idt, False)
    steps = int(np.ceil(np.log2(n + 1)))
    for _ in range(steps):
        mid = F.floor_divide(F.add(lo, hi), U.to_array(2, idt, False))
        safe = F.minimum(mid, U.to_array(n - 1, idt, False))
        am = S.take(x, safe, mode="clip")
        go_right = total_lt(am, q) if side == "left" else F.logical_not(total_lt(q, am))
        go_right = F.logical_and(go_right, F.less(lo, hi))
        stay = F.logical_not(F.less(lo, hi))
        lo = F.where(go_right, F.add(mid, one), lo)
        hi = F.where(F.logical_or(go_right, stay), hi, mid)
    return lo


def digitize(x, bins, right=False, *, method=None):
    """Index of the bin of ``bins`` (monotonic) each ``x`` falls in."""
    x, bins = U.ensure_arraylike("digitize", x, bins)
    xx, b = U.to_array(x), U.to_array(bins)
    right = bool(core.concrete_or_error(right, "right argument of digitize()")) \
        if not isinstance(right, bool) else right
    if b.ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got shape {b.shape}")
    if b.shape[0] == 0:
        return U.broadcast_to_shape(U.to_array(0, np.int32, False), xx.shape)
    side = "right" if not right else "left"
    kw = {} if method is None else {"method": method}
    inc = searchsorted(b, xx, side=side, **kw)
    dec = F.subtract(U.to_array(b.shape[0], inc.dtype, False),
                     searchsorted(S.flip(b, 0), xx, side=side, **kw))
    first = lax.index_in_dim(b, 0, 0, False)
    last = lax.index_in_dim(b, b.shape[0] - 1, 0, False)
    return F.where(F.greater_equal(last, first), inc, dec)


def lexsort(keys, axis=-1):
    """Indirect stable sort on several keys (the last key is the primary one)."""
    keys = tuple(keys)
    if len(keys) == 0:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    U.check_arraylike("lexsort", *keys)
    ks = [U.to_array(k) for k in keys]
    if len({k.shape for k in ks}) > 1:
        raise ValueError("all keys need to be the same shape")
    if ks[0].ndim == 0:
        return U.to_array(0, dtypes.default_int_dtype(), False)
    ax = U.canonicalize_axis(axis, ks[0].ndim)
    idt = _idx_dtype(ks[0].shape[ax])
    iota = lax.broadcasted_iota(idt, ks[0].shape, ax)
    out = lax.sort(tuple(ks[::-1]) + (iota,), dimension=ax, is_stable=True,
                     num_keys=len(ks))
    return out[-1]


def _partition_prep(name, a, kth, axis):
    a = U.ensure_arraylike(name, a)
    x = U.to_array(a)
    if x.dtype.kind == "c":
        raise NotImplementedError(f"{name} for complex dtype is not supported.")
    if x.ndim == 0:
        raise ValueError(f"{name}: input must be at least 1-dimensional")
    ax = U.canonicalize_axis(axis, x.ndim)
    k = U.canonicalize_axis(U.static_int(kth, f"{name}: kth"), x.shape[ax], "kth")
    return S.swapaxes(x, ax, -1), ax, k


def _neg_key(x):
    """A key whose descending order is ``x``'s ascending order (exact for unsigned too)."""
    if x.dtype.kind == "u":
        return F.negative(F.add(x, U.to_array(1, x.dtype, False)))
    if x.dtype == dtypes.bool_:
        return F.logical_not(x)
    return F.negative(x)


def partition(a, kth, axis=-1):
    """A copy with the ``kth`` element in sorted position, smaller ones before it."""
    x, ax, k = _partition_prep("partition", a, kth, axis)
    n = x.shape[-1]
    if x.dtype == dtypes.bool_:
        s = S.sort(x, axis=-1)
        return S.swapaxes(s, -1, ax)
    bot = lax.top_k(_neg_key(x), k + 1)[0]
    bot = F.subtract(F.negative(bot), U.to_array(1, x.dtype, False)) if x.dtype.kind == "u" \
        else F.negative(bot)
    top = lax.top_k(x, n - k - 1)[0]
    out = lax.concatenate([bot, top], x.ndim - 1)
    return S.swapaxes(out, -1, ax)


def argpartition(a, kth, axis=-1):
    """Indices that partition ``a`` around its ``kth`` element (see ``partition``)."""
    x, ax, k = _partition_prep("argpartition", a, kth, axis)
    n = x.shape[-1]
    key = _neg_key(x) if x.dtype != dtypes.bool_ else U.to_array(F.logical_not(x), np.int32)
    bot_i = lax.top_k(key, k + 1)[1]
    iota = lax.broadcasted_iota(bot_i.dtype, x.shape, x.ndim - 1)
    taken = lax.reduce_or(F.equal(S.expand_dims(iota, -2), S.expand_dims(bot_i, -1)),
                            (x.ndim - 1,))
    proxy = U.to_array(F.logical_not(taken), np.int32, False)
    top_i = lax.top_k(proxy, n - k - 1)[1]
    out = lax.concatenate([bot_i, top_i], x.ndim - 1)
    return S.swapaxes(out, -1, ax)


def sort_complex(a):
    """Sort along the last axis (real part first, then imaginary), as complex."""
    a = U.ensure_arraylike("sort_complex", a)
    x = U.to_array(a)
    if x.ndim:
        x = lax.sort(x, dimension=x.ndim - 1, is_stable=True)
    dt = x.dtype
    cdt = dtypes.to_complex_dtype(dt) if hasattr(dtypes, "to_complex_dtype") else \
        (np.dtype(np.complex128) if dt == np.float64 else np.dtype(np.complex64))
    if dt.kind == "c":
        return x
    return U.to_array(x, cdt, x.weak_type)


__all__ = ["searchsorted", "digitize", "lexsort", "partition", "argpartition", "sort_complex"]

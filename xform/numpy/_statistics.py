"""Statistics and differences: quantile/percentile (+ nan variants, nanmedian), histograms,
bincount, cov/corrcoef, diff/ediff1d/gradient, interp, trapezoid, unwrap.

Quantiles sort along the reduced axis and gather the two neighbouring order
statistics; the nan-variants count the non-NaN entries per slice (NaNs sort last),
so the positions are traced values and everything works under jit/vmap/grad.
Histograms place samples with ``searchsorted`` and count with a scatter-add.
"""
from __future__ import annotations

import builtins

import numpy as np

from xform._src.interpreters import core, dtypes
from xform._src.interpreters.core import ArrayOps
from xform.numpy import _reductions as R
from xform.numpy import _shape as S
from xform.numpy import _ufuncs as F
from xform.numpy import _util as U
from xform.numpy._sorting_extra import search
from xform.numpy._util import lax
from xform.numpy._creation import zeros
from xform.numpy._linalg import diagonal
from xform.numpy._linalg import dot
from xform.numpy._creation import full

_QMETHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _int():
    return dtypes.default_int_dtype()


def _inexact(name, a):
    a = U.ensure_arraylike(name, a)
    x = U.to_array(a)
    (x,) = U.promote_dtypes_inexact(x)
    return U.to_array(x, x.dtype, False)


# ----------------------------------------------------------------- quantiles


def _to_last(x, axis):
    """Move the reduced axes to one trailing axis; return (x, the kept shape with ones)."""
    nd = x.ndim
    if axis is None:
        return lax.reshape(x, (x.size,)), (1,) * nd
    axes = U.canonicalize_axes(axis, nd)
    keep = [i for i in range(nd) if i not in axes]
    y = S.transpose(x, tuple(keep) + tuple(axes))
    n = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    y = lax.reshape(y, tuple(x.shape[i] for i in keep) + (n,))
    return y, tuple(1 if i in axes else x.shape[i] for i in range(nd))


def _quantile(name, a, q, axis, method, keepdims, squash_nans, weights, out=None,
              overwrite_input=False):
    if out is not None or overwrite_input:
        raise ValueError(f"xform.numpy.{name} does not support overwrite_input=True or "
                         "out != None")
    if method not in _QMETHODS:
        raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', "
                         "'nearest' or 'inverted_cdf'")
    a, q = U.ensure_arraylike(name, a, q)
    x = U.to_array(a)
    if x.dtype.kind == "c":
        raise ValueError("quantile does not support complex input, as the operation is "
                         "poorly defined.")
    w = None
    if weights is not None:
        weights = U.ensure_arraylike(name, weights)
        w = U.to_array(weights)
        if w.dtype.kind == "c":
            raise ValueError("Weights cannot be complex types.")
        if method != "inverted_cdf":
            raise NotImplementedError(f"{method} doesn't support weights. Only method "
                                      "'inverted_cdf' supports weights.")
        x, w = U.promote_dtypes_inexact(x, w)
        if w.shape != x.shape:
            if axis is None:
                raise ValueError("Weights shape must match 'a' shape when axis is None.")
            axes = U.canonicalize_axes(axis, x.ndim)
            if w.shape != tuple(x.shape[i] for i in axes):
                raise ValueError(f"Weights shape {w.shape} must match reduction axes "
                                 f"{tuple(x.shape[i] for i in axes)}")
            w = lax.broadcast_in_dim(w, x.shape, axes)
        w = U.to_array(w, w.dtype, False)
    else:
        (x,) = U.promote_dtypes_inexact(x)
    x = U.to_array(x, x.dtype, False)
    dt = x.dtype
    qq = U.to_array(q)
    if qq.ndim > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {qq.shape}")
    (qq,) = U.promote_dtypes_inexact(qq)
    qdt = qq.dtype                       # positions/weights are computed in q's dtype
    qq = U.to_array(qq, qdt, False)
    x, kept = _to_last(x, axis)
    if w is not None:
        w, _ = _to_last(w, axis)
    n = x.shape[-1]
    rest = x.shape[:-1]
    last = x.ndim - 1
    nan_data = F.isnan(x)
    if squash_nans:
        x = F.where(nan_data, U.to_array(np.nan, dt, False), x)
    else:
        x = F.where(R.any(nan_data, axis=-1, keepdims=True), U.to_array(np.nan, dt, False), x)
    if w is not None:
        x, w = lax.sort((x, w), dimension=last, is_stable=True, num_keys=1)
        nan_data = F.isnan(x)
    else:
        x = lax.sort(x, dimension=last, is_stable=True)
        if squash_nans:
            nan_data = F.isnan(x)
    nq = 1 if qq.ndim == 0 else qq.shape[0]
    qv = lax.reshape(qq, (nq,))
    qb = lax.broadcast_in_dim(qv, rest + (nq,), (len(rest),))
    if squash_nans:
        counts = R.sum(F.logical_not(nan_data), axis=-1, dtype=qdt, keepdims=True)
    else:
        counts = U.broadcast_to_shape(U.to_array(n, qdt, False), rest + (1,))
    one = U.to_array(1, qdt, False)
    zero = U.to_array(0, qdt, False)

    def take(idx):
        return S.take_along_axis(x, idx, axis=-1) if n else \
            U.broadcast_to_shape(U.to_array(np.nan, dt, False), idx.shape)

    if method == "inverted_cdf":
        ww = w if w is not None else U.broadcast_to_shape(U.to_array(1, dt, False), x.shape)
        zero = U.to_array(0, ww.dtype, False)
        bad = F.logical_or(F.less(ww, zero), F.isnan(ww))
        clean = F.where(F.logical_or(bad, nan_data), zero, ww)
        cw = R.cumsum(clean, axis=-1)
        total = lax.slice_in_dim(cw, n - 1, n, 1, last) if n else \
            U.broadcast_to_shape(zero, rest + (1,))
        target = F.multiply(qb, total)
        less = F.less(lax.broadcast_in_dim(cw, rest + (nq, n), tuple(range(len(rest))) +
                                             (len(rest) + 1,)),
                      lax.broadcast_in_dim(target, rest + (nq, n),
                                             tuple(range(len(rest) + 1))))
        idx = R.sum(less, axis=-1, dtype=_int())
        lim = U.to_array(F.subtract(counts, one), _int(), False)
        idx = F.maximum(U.to_array(0, _int(), False), F.minimum(idx, lim))
        res = take(idx)
        anybad = R.any(bad, axis=-1, keepdims=True)
        if squash_nans:
            force = F.logical_or(anybad, F.equal(counts, zero))
        else:
            force = F.logical_or(anybad, R.any(nan_data, axis=-1, keepdims=True))
        res = F.where(force, U.to_array(np.nan, dt, False), res)
    else:
        pos = F.multiply(qb, F.subtract(counts, one))
        low = F.floor(pos)
        high = F.ceil(pos)
        hw = F.subtract(pos, low)
        lw = F.subtract(one, hw)
        top = F.maximum(F.subtract(counts, one), zero)
        low = F.clip(low, zero, top)
        high = F.clip(high, zero, top)
        lo = take(U.to_array(low, _int(), False))
        hi = take(U.to_array(high, _int(), False))
        if method == "linear":      # interpolated in q's dtype, as JAX
            res = F.add(F.multiply(U.to_array(lo, qdt, False), lw),
                        F.multiply(U.to_array(hi, qdt, False), hw))
        elif method == "lower":
            res = lo
        elif method == "higher":
            res = hi
        elif method == "nearest":
            res = F.where(F.less_equal(hw, U.to_array(0.5, qdt, False)), lo, hi)
        else:
            res = F.multiply(F.add(lo, hi), U.to_array(0.5, dt, False))
    # res: rest + (nq,) -> q.shape + rest (or keepdims shape)
    res = S.moveaxis(res, -1, 0)
    oshape = (kept if keepdims else rest)
    res = lax.reshape(res, qq.shape + tuple(oshape))
    return U.to_array(res, dt, False)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
    """The ``q``-th quantile(s) of ``a`` along ``axis`` (NaN if the slice has a NaN)."""
    return _quantile("quantile", a, q, axis, method, keepdims, False, weights, out,
                     overwrite_input)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
    """``quantile`` ignoring NaNs."""
    return _quantile("nanquantile", a, q, axis, method, keepdims, True, weights, out,
                     overwrite_input)


def _pct(name, q):
    q = U.ensure_arraylike(name, q)
    (qq,) = U.promote_dtypes_inexact(U.to_array(q))
    return F.true_divide(qq, U.to_array(100, qq.dtype, True))


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
    """The ``q``-th percentile(s) of ``a`` along ``axis``."""
    return _quantile("percentile", a, _pct("percentile", q), axis, method, keepdims, False,
                     weights, out, overwrite_input)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
    """``percentile`` ignoring NaNs."""
    return _quantile("nanpercentile", a, _pct("nanpercentile", q), axis, method, keepdims,
                     True, weights, out, overwrite_input)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median ignoring NaNs."""
    return _quantile("nanmedian", a, 0.5, axis, "midpoint", keepdims, True, None, out,
                     overwrite_input)


# ----------------------------------------------------------------- counting


def bincount(x, weights=None, minlength=0, *, length=None):
    """Occurrences of each non-negative integer (negative values count as 0)."""
    x = U.ensure_arraylike("bincount", x)
    xx = U.to_array(x)
    if xx.dtype.kind not in "iub" or dtypes.is_bfloat16(xx.dtype):
        raise TypeError(f"x argument to bincount must have an integer type; got {xx.dtype}")
    if xx.ndim != 1:
        raise ValueError("only 1-dimensional input supported.")
    minlength = U.static_int(minlength, "bincount: minlength")
    if minlength < 0:
        raise ValueError(f"minlength must be non-negative; got minlength={minlength}")
    if length is None:
        v = xx.to_concrete_value() if isinstance(xx, ArrayOps) else None
        if v is None:
            raise core.errors.ConcretizationTypeError(
                xx, "The error arose in xform.numpy.bincount(): the output length depends on "
                "the values; pass a static length= to use it under jit")
        v = np.asarray(v)
        length = builtins.max(minlength, int(np.maximum(v, 0).max()) + 1 if v.size else 0)
    else:
        length = U.static_int(length, "bincount: length")
    if weights is None:
        w = U.broadcast_to_shape(U.to_array(1, _int(), False), xx.shape)
    else:
        weights = U.ensure_arraylike("bincount", weights)
        w = U.to_array(weights)
        if w.shape != xx.shape:
            w = S.broadcast_to(w, xx.shape)
        w = U.to_array(w, w.dtype, False)
    idx = F.maximum(U.to_array(xx, _int(), False), U.to_array(0, _int(), False))
    inside = F.less(idx, U.to_array(length, _int(), False))   # beyond length: dropped
    idx = F.where(inside, idx, U.to_array(0, _int(), False))
    w = F.where(inside, w, U.to_array(0, w.dtype, False))
    return zeros(length, w.dtype).at[idx].add(w)


def _range_edges(name, x, bins, rng):
    dt = x.dtype
    nb = U.static_int(bins, f"{name}: bins")
    if nb < 1:
        raise ValueError(f"`bins` must be positive, when an integer; got {nb}")
    if rng is None:
        if x.size == 0:
            lo, hi = U.to_array(0.0, dt, False), U.to_array(1.0, dt, False)
        else:
            lo, hi = R.min(x), R.max(x)
    else:
        if len(rng) != 2:
            raise ValueError(f"range must be a pair (min, max), got {rng!r}")
        lo, hi = U.to_array(rng[0], dt, False), U.to_array(rng[1], dt, False)
        lv, hv = lo.to_concrete_value(), hi.to_concrete_value()
        if lv is not None and hv is not None and np.asarray(lv) > np.asarray(hv):
            raise ValueError("max must be larger than min in range parameter.")
    same = F.equal(lo, hi)
    half = U.to_array(0.5, dt, False)
    lo = F.where(same, F.subtract(lo, half), lo)
    hi = F.where(same, F.add(hi, half), hi)
    from xform.numpy._creation import linspace   # hits ``hi`` exactly, as JAX's edges
    return U.to_array(linspace(lo, hi, nb + 1, dtype=dt), dt, False)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """Edges of the bins ``histogram`` would use."""
    a = U.ensure_arraylike("histogram_bin_edges", a)
    x = _inexact("histogram_bin_edges", a)
    if isinstance(bins, (ArrayOps, np.ndarray, list, tuple)):
        b = U.to_array(np.asarray(bins) if isinstance(bins, (list, tuple)) else bins)
        if b.ndim == 1:
            return U.to_array(b, x.dtype, False)
        if b.ndim != 0:
            raise ValueError("bins must be an integer or a 1-D array")
    return _range_edges("histogram_bin_edges", S.ravel(x), bins, range)


def _bin_index(x, edges):
    """Bin number in 0..len(edges): 0 below, len(edges) above; the last edge is inclusive."""
    ne = edges.shape[0]
    idx = search(edges, x, "right", np.dtype(_int()))
    last = lax.index_in_dim(edges, ne - 1, 0, False)
    return F.where(F.equal(x, last), U.to_array(ne - 1, _int(), False), idx)


def histogram(a, bins=10, range=None, weights=None, density=None):
    """Counts (or density) of ``a`` in ``bins``; returns (hist, bin_edges)."""
    a = U.ensure_arraylike("histogram", a)
    x = S.ravel(_inexact("histogram", a))
    if weights is not None:
        weights = U.ensure_arraylike("histogram", weights)
        w = U.to_array(weights)
        if w.shape != U.to_array(a).shape:
            raise ValueError(f"weights should have the same shape as a; got "
                             f"{w.shape} and {U.to_array(a).shape}")
        x, w = U.promote_dtypes_inexact(x, S.ravel(w))
        x, w = U.to_array(x, x.dtype, False), U.to_array(w, w.dtype, False)
    else:
        w = U.broadcast_to_shape(U.to_array(1, x.dtype, False), x.shape)
    edges = histogram_bin_edges(x, bins, range)
    edges = U.to_array(edges, x.dtype, False)
    ne = edges.shape[0]
    idx = _bin_index(x, edges)
    counts = zeros(ne + 1, w.dtype).at[idx].add(w)
    counts = lax.slice(counts, (1,), (ne,))
    if density:
        widths = F.subtract(lax.slice(edges, (1,), (ne,)), lax.slice(edges, (0,), (ne - 1,)))
        counts = F.true_divide(F.true_divide(counts, R.sum(counts)), widths)
    return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """D-dimensional histogram of ``sample`` of shape (N, D); returns (hist, edges list)."""
    sample = U.ensure_arraylike("histogramdd", sample)
    if weights is not None:   # sample and weights promote together (int16 and int16: float)
        weights = U.ensure_arraylike("histogramdd", weights)
        sample, weights = U.promote_dtypes_inexact(U.to_array(sample), U.to_array(weights))
    s = _inexact("histogramdd", sample)
    if s.ndim == 1:
        s = lax.reshape(s, (s.shape[0], 1))
    if s.ndim != 2:
        raise ValueError(f"histogramdd: sample must be 2-D (N, D); got shape {s.shape}")
    N, D = s.shape
    if weights is not None:
        weights = U.ensure_arraylike("histogramdd", weights)
        w = U.to_array(weights)
        if w.shape != (N,):
            raise ValueError("should have one weight for each sample.")
        s, w = U.promote_dtypes_inexact(s, w)
        s, w = U.to_array(s, s.dtype, False), U.to_array(w, w.dtype, False)
    else:
        w = U.broadcast_to_shape(U.to_array(1, _int(), False), (N,))
    if isinstance(bins, (list, tuple)) or (isinstance(bins, (ArrayOps, np.ndarray))
                                           and np.ndim(bins) == 1 and D > 1):
        if len(bins) != D:
            raise ValueError("should be a bin for every dimension.")
        bins_l = list(bins)
    else:
        bins_l = [bins] * D
    if range is None:
        range_l = [None] * D
    else:
        if len(range) != D:
            raise ValueError("range argument must have one entry per dimension")
        range_l = list(range)
    edges, idxs, nbins = [], [], []
    for d in builtins.range(D):
        col = lax.index_in_dim(s, d, 1, False)
        e = U.to_array(histogram_bin_edges(col, bins_l[d], range_l[d]), s.dtype, False)
        edges.append(e)
        idxs.append(_bin_index(col, e))
        nbins.append(e.shape[0] + 1)
    flat = U.to_array(0, _int(), False)
    stride = 1
    for d in reversed(builtins.range(D)):
        flat = F.add(flat, F.multiply(idxs[d], U.to_array(stride, _int(), False)))
        stride *= nbins[d]
    counts = zeros(stride, w.dtype).at[flat].add(w)
    counts = lax.reshape(counts, tuple(nbins))
    counts = lax.slice(counts, (1,) * D, tuple(n - 1 for n in nbins))
    if density:
        counts = F.true_divide(counts, R.sum(counts))
        for d, e in enumerate(edges):
            ne = e.shape[0]
            wd = F.subtract(lax.slice(e, (1,), (ne,)), lax.slice(e, (0,), (ne - 1,)))
            shp = [1] * D
            shp[d] = ne - 1
            counts = F.true_divide(counts, lax.reshape(wd, tuple(shp)))
    return counts, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    """2-D histogram of points (x, y); returns (hist, xedges, yedges)."""
    x, y = U.ensure_arraylike("histogram2d", x, y)
    xx, yy = U.to_array(x), U.to_array(y)
    if xx.shape != yy.shape or xx.ndim != 1:
        raise ValueError(f"histogram2d: x and y must be 1-D of the same length; got "
                         f"{xx.shape} and {yy.shape}")
    xx, yy = U.promote_dtypes(xx, yy)     # (histogramdd makes them inexact, with weights)
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb != 1 and nb != 2:
        bins = [bins, bins]
    elif nb == 1 and not isinstance(bins, (list, tuple)):
        bins = [bins, bins]
    h, e = histogramdd(S.stack([xx, yy], axis=1), bins, range, weights, density)
    return h, e[0], e[1]


# ----------------------------------------------------------------- covariance


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
    """Covariance matrix of the variables in the rows (``rowvar``) of ``m`` (computed in
    ``dtype`` when given, which must be inexact)."""
    m = U.ensure_arraylike("cov", m)
    x = U.to_array(m)
    if x.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if ddof is not None and not isinstance(ddof, int):
        raise ValueError("ddof must be integer")
    if dtype is not None and not dtypes.is_inexact(U.canonical_dtype(dtype)):
        raise ValueError(f"cov: dtype must be a subclass of float or complex; got {dtype=}")
    m_ndim = x.ndim
    x = S.atleast_2d(x)
    if not rowvar and m_ndim != 1:
        x = S.transpose(x)
    if x.shape[0] == 0:
        return zeros((0, 0), U.result_dtype(x, 0.0)[0])
    if y is not None:
        y = U.ensure_arraylike("cov", y)
        yy = U.to_array(y)
        if yy.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
        yy = S.atleast_2d(yy)
        if not rowvar and yy.shape[0] != 1:
            yy = S.transpose(yy)
        x = S.concatenate([x, yy], axis=0)
    (x,) = U.promote_dtypes_inexact(x)
    x = U.to_array(x, x.dtype, False)
    if x.shape[1] == 0:       # no observations: NaN, as JAX
        return full(() if x.shape[0] == 1 else (x.shape[0], x.shape[0]), np.nan, x.dtype)
    if ddof is None:
        ddof = 0 if bias else 1
    n = x.shape[1]
    w = None
    if fweights is not None:
        fweights = U.ensure_arraylike("cov", fweights)
        fw = U.to_array(fweights)
        if fw.ndim > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if fw.shape[0] != n:
            raise RuntimeError("incompatible numbers of samples and fweights")
        if fw.dtype.kind not in "iub":
            raise TypeError("fweights must be integer.")
        w = U.to_array(F.absolute(fw), x.dtype, False)
    if aweights is not None:
        aweights = U.ensure_arraylike("cov", aweights)
        aw = U.to_array(aweights)
        if aw.ndim > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if aw.shape[0] != n:
            raise RuntimeError("incompatible numbers of samples and aweights")
        aw = U.to_array(F.absolute(aw), x.dtype, False)
        w = aw if w is None else F.multiply(w, aw)
    if dtype is not None:
        dt = U.canonical_dtype(dtype)
        x = U.to_array(x, dt, False)
        w = None if w is None else U.to_array(w, dt, False)
        aw = None if aweights is None else U.to_array(aw, dt, False)
    if w is None:
        avg = R.mean(x, axis=1)
        fact = U.to_array(n - ddof, x.dtype, False)
        xc = F.subtract(x, S.expand_dims(avg, 1))
        c = dot(xc, _conj(S.transpose(xc)))
    else:
        avg, w_sum = R.average(x, axis=1, weights=w, returned=True)
        w_sum = lax.index_in_dim(w_sum, 0, 0, False)
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = F.subtract(w_sum, U.to_array(ddof, x.dtype, False))
        else:
            fact = F.subtract(w_sum, F.true_divide(
                F.multiply(U.to_array(ddof, x.dtype, False), R.sum(F.multiply(w, aw))), w_sum))
        xc = F.subtract(x, S.expand_dims(avg, 1))
        c = dot(F.multiply(xc, w), _conj(S.transpose(xc)))
    return S.squeeze(F.true_divide(c, fact))


def corrcoef(x, y=None, rowvar=True, dtype=None):
    """Pearson correlation coefficients (``cov`` normalised, clipped to [-1, 1])."""
    x = U.ensure_arraylike("corrcoef", x)
    if dtype is not None and not dtypes.is_inexact(U.canonical_dtype(dtype)):
        raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got "
                         f"{dtype=}")
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return F.true_divide(c, c)
    d = diagonal(c)
    sd = F.sqrt(F.real(d)) if d.dtype.kind == "c" else F.sqrt(d)
    c = F.true_divide(c, S.expand_dims(sd, 1))
    c = F.true_divide(c, S.expand_dims(sd, 0))
    if c.dtype.kind == "c":
        return F.add(F.clip(F.real(c), -1, 1),
                     F.multiply(U.to_array(1j, c.dtype, False), F.clip(F.imag(c), -1, 1)))
    return F.clip(c, -1, 1)


# ----------------------------------------------------------------- differences


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """n-th discrete difference along ``axis`` (``!=`` for booleans)."""
    a = U.ensure_arraylike("diff", a)
    x = U.to_array(a)
    n = U.static_int(n, "diff: n")
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if n == 0:
        return x
    if x.ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    ax = U.canonicalize_axis(axis, x.ndim)
    parts = []
    for extra in (prepend, append):
        if extra is None:
            parts.append(None)
            continue
        extra = U.ensure_arraylike("diff", extra)
        e = U.to_array(extra)
        if e.ndim == 0:
            shp = list(x.shape)
            shp[ax] = 1
            e = U.broadcast_to_shape(e, tuple(shp))
        parts.append(e)
    seq = [p for p in (parts[0], x, parts[1]) if p is not None]
    if len(seq) > 1:
        x = S.concatenate(seq, axis=ax)
    for _ in range(n):
        m = x.shape[ax]
        if m == 0:
            break
        hi = lax.slice_in_dim(x, 1, m, 1, ax)
        lo = lax.slice_in_dim(x, 0, m - 1, 1, ax)
        x = F.not_equal(hi, lo) if x.dtype == dtypes.bool_ else F.subtract(hi, lo)
    return x


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of the flattened array, with optional values before/after."""
    ary = U.ensure_arraylike("ediff1d", ary)
    x = S.ravel(U.to_array(ary))
    if x.dtype == dtypes.bool_:
        raise TypeError("ediff1d does not accept boolean input (subtraction of booleans); "
                        "cast to an integer dtype first")
    out = diff(x) if x.shape[0] else x
    pieces = []
    if to_begin is not None:
        to_begin = U.ensure_arraylike("ediff1d", to_begin)
        pieces.append(U.to_array(S.ravel(U.to_array(to_begin)), out.dtype, out.weak_type))
    pieces.append(out)
    if to_end is not None:
        to_end = U.ensure_arraylike("ediff1d", to_end)
        pieces.append(U.to_array(S.ravel(U.to_array(to_end)), out.dtype, out.weak_type))
    return S.concatenate(pieces) if len(pieces) > 1 else out


def gradient(f, *varargs, axis=None, edge_order=None):
    """Central differences inside, one-sided at the ends (spacing scalars or coordinates)."""
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to xform.numpy.gradient is not "
                                  "supported.")
    y = _inexact("gradient", f)
    axes = U.canonicalize_axes(axis, y.ndim)
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1:
        spacing = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError("Invalid number of spacing arguments to gradient")
    outs = []
    for ax, h in zip(axes, spacing):
        n = y.shape[ax]
        if n < 2:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")
        sl = lambda a, b: lax.slice_in_dim(y, a, b, 1, ax)  # noqa: E731
        hv = U.to_array(h)
        if hv.ndim == 0:
            hh = U.to_array(hv, y.dtype, False)
            inner = F.true_divide(F.subtract(sl(2, n), sl(0, n - 2)),
                                  F.multiply(U.to_array(2, y.dtype, False), hh))
            first = F.true_divide(F.subtract(sl(1, 2), sl(0, 1)), hh)
            last = F.true_divide(F.subtract(sl(n - 1, n), sl(n - 2, n - 1)), hh)
        else:
            if hv.ndim != 1 or hv.shape[0] != n:
                raise ValueError("Spacing arrays must be 1D arrays of the same length as the "
                                 "corresponding dimension of f")
            c = U.to_array(hv, y.dtype, False)
            dx = diff(c)
            shp = [1] * y.ndim
            shp[ax] = n - 1
            dx = lax.reshape(dx, tuple(shp))
            d1 = lax.slice_in_dim(dx, 0, n - 2, 1, ax)
            d2 = lax.slice_in_dim(dx, 1, n - 1, 1, ax)
            a = F.true_divide(F.negative(d2), F.multiply(d1, F.add(d1, d2)))
            b = F.true_divide(F.subtract(d2, d1), F.multiply(d1, d2))
            cc = F.true_divide(d1, F.multiply(d2, F.add(d1, d2)))
            inner = F.add(F.add(F.multiply(a, sl(0, n - 2)), F.multiply(b, sl(1, n - 1))),
                          F.multiply(cc, sl(2, n)))
            first = F.true_divide(F.subtract(sl(1, 2), sl(0, 1)),
                                  lax.slice_in_dim(dx, 0, 1, 1, ax))
            last = F.true_divide(F.subtract(sl(n - 1, n), sl(n - 2, n - 1)),
                                 lax.slice_in_dim(dx, n - 2, n - 1, 1, ax))
        outs.append(S.concatenate([first, inner, last], axis=ax))
    return outs[0] if len(outs) == 1 else outs


def interp(x, xp, fp, left=None, right=None, period=None):
    """One-dimensional piecewise-linear interpolation (``xp`` increasing)."""
    extrapolate = {}
    for name, v in (("left", left), ("right", right)):
        extrapolate[name] = isinstance(v, str)
        if isinstance(v, str) and v != "extrapolate":
            raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', "
                             f"but got: {v!r}")
    x, xp, fp = U.ensure_arraylike("interp", x, xp, fp)
    xa, xpa, fpa = U.to_array(x), U.to_array(xp), U.to_array(fp)
    if xpa.ndim != 1 or fpa.ndim != 1 or xpa.shape[0] != fpa.shape[0]:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    if xa.dtype.kind == "c":
        raise ValueError("jnp.interp: complex x values not supported.")
    if period is not None and np.ndim(period) != 0:
        raise ValueError(f"period must be a scalar; got {period}")
    if xpa.shape[0] == 0:
        raise ValueError("xp and fp must be non-empty")
    if fpa.dtype.kind == "c":
        (fpa,) = U.promote_dtypes_inexact(fpa)
        (xa, xpa) = U.promote_dtypes_inexact(xa, xpa)
        xa, xpa = [U.to_array(v, F.real(fpa).dtype, False) for v in (xa, xpa)]
    else:
        xa, xpa, fpa = U.promote_dtypes_inexact(xa, xpa, fpa)
    dt = xa.dtype
    xa, xpa = U.to_array(xa, dt, False), U.to_array(xpa, dt, False)
    fpa = U.to_array(fpa, fpa.dtype, False)
    if period is not None:
        p = F.absolute(U.to_array(period, dt, False))
        xa = F.remainder(xa, p)
        xpa = F.remainder(xpa, p)
        order = S.argsort(xpa)
        xpa = S.take(xpa, order)
        fpa = S.take(fpa, order)
        nfirst = lax.slice(xpa, (0,), (1,))
        nlast = lax.slice(xpa, (xpa.shape[0] - 1,), (xpa.shape[0],))
        xpa = S.concatenate([F.subtract(nlast, p), xpa, F.add(nfirst, p)])
        ffirst = lax.slice(fpa, (0,), (1,))
        flast = lax.slice(fpa, (fpa.shape[0] - 1,), (fpa.shape[0],))
        fpa = S.concatenate([flast, fpa, ffirst])
    m = xpa.shape[0]
    i = search(xpa, xa, "right", np.dtype(_int()))
    i = F.clip(i, 1, builtins.max(m - 1, 1))
    if m == 1:
        xp0 = S.take(xpa, U.to_array(0, _int(), False))
        fp0 = S.take(fpa, U.to_array(0, _int(), False))
        out = U.broadcast_to_shape(fp0, xa.shape)
        df = None
    else:
        im1 = F.subtract(i, U.to_array(1, _int(), False))
        x0, x1 = S.take(xpa, im1), S.take(xpa, i)
        f0, f1 = S.take(fpa, im1), S.take(fpa, i)
        dx = F.subtract(x1, x0)
        df = F.subtract(f1, f0)
        delta = F.subtract(xa, x0)
        eps = U.to_array(np.finfo(np.float32 if dt.itemsize < 4 else dt).eps
                         if not dtypes.is_bfloat16(dt) else 2 ** -7, dt, False)
        small = F.less_equal(dx, eps)
        safe = F.where(small, U.to_array(1, dt, False), dx)
        out = F.where(small, f0, F.add(f0, F.multiply(F.true_divide(delta, safe), df)))
    if period is None:
        first = S.take(xpa, U.to_array(0, _int(), False))
        last = S.take(xpa, U.to_array(m - 1, _int(), False))
        fl = S.take(fpa, U.to_array(0, _int(), False)) if left is None or \
            extrapolate["left"] else U.to_array(left, fpa.dtype, False)
        fr = S.take(fpa, U.to_array(m - 1, _int(), False)) if right is None or \
            extrapolate["right"] else U.to_array(right, fpa.dtype, False)
        if not extrapolate["left"]:
            out = F.where(F.less(xa, first), fl, out)
        if not extrapolate["right"]:
            out = F.where(F.greater(xa, last), fr, out)
    return U.to_array(out, fpa.dtype, False)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` along ``axis`` by the trapezoidal rule."""
    if x is None:
        y = U.ensure_arraylike("trapezoid", y)
        yy = _inexact("trapezoid", y)
        ax = U.canonicalize_axis(axis, yy.ndim)
        d = U.to_array(dx)
        (yy, d) = U.promote_dtypes_inexact(yy, d)
        yy = U.to_array(yy, yy.dtype, False)
        if 0 < d.ndim < yy.ndim:      # an array dx lines up with y's trailing axes
            d = lax.reshape(d, (1,) * (yy.ndim - d.ndim) + d.shape)
    else:
        y, x = U.ensure_arraylike("trapezoid", y, x)
        yy, xx = U.promote_dtypes_inexact(U.to_array(y), U.to_array(x))
        yy, xx = U.to_array(yy, yy.dtype, False), U.to_array(xx, xx.dtype, False)
        ax = U.canonicalize_axis(axis, yy.ndim)
        if xx.ndim == 1:
            d = diff(xx)
            shp = [1] * yy.ndim
            shp[ax] = d.shape[0]
            d = lax.reshape(d, tuple(shp))
        else:
            # x's own axis (x may have fewer dimensions than y; they broadcast, as JAX)
            xa = U.canonicalize_axis(axis, xx.ndim)
            d = diff(S.moveaxis(xx, xa, -1))
            nd = builtins.max(yy.ndim, d.ndim)
            d = lax.reshape(d, (1,) * (nd - d.ndim) + d.shape) if d.ndim < nd else d
            d = S.moveaxis(d, -1, ax)
    n = yy.shape[ax]
    if n == 0:
        return R.sum(yy, axis=ax)
    hi = lax.slice_in_dim(yy, 1, n, 1, ax)
    lo = lax.slice_in_dim(yy, 0, n - 1, 1, ax)
    s = F.multiply(U.to_array(0.5, yy.dtype, False), F.multiply(d, F.add(hi, lo)))
    return R.sum(s, axis=ax)


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """Unwrap phase jumps larger than ``discont`` (default ``period / 2``); the result
    has the dtype of ``p`` promoted with ``period`` (integers stay integers, as JAX)."""
    U.check_arraylike("unwrap", p)
    x, per = U.promote_dtypes(U.to_array(p), period)
    if x.dtype.kind == "c":
        raise ValueError("jnp.unwrap does not support complex inputs.")
    ax = U.canonicalize_axis(axis, x.ndim)
    if x.shape[ax] == 0:
        return x
    if discont is None:
        discont = F.true_divide(per, 2)
    interval = F.floor_divide(per, 2) if x.dtype.kind in "iu" else F.true_divide(per, 2)
    dd = diff(x, axis=ax)
    ddmod = F.subtract(F.remainder(F.add(dd, interval), per), interval)
    ddmod = F.where(F.logical_and(F.equal(ddmod, F.negative(interval)),
                                  F.greater(dd, 0)), interval, ddmod)
    corr = F.where(F.less(F.absolute(dd), discont), 0, F.subtract(ddmod, dd))
    n = x.shape[ax]
    rest = F.add(lax.slice_in_dim(x, 1, n, 1, ax), R.cumsum(corr, axis=ax))
    return S.concatenate([lax.slice_in_dim(x, 0, 1, 1, ax), rest], axis=ax)


__all__ = ["quantile", "nanquantile", "percentile", "nanpercentile", "nanmedian", "bincount",
           "histogram", "histogram_bin_edges", "histogram2d", "histogramdd", "cov", "corrcoef",
           "diff", "ediff1d", "gradient", "interp", "trapezoid", "unwrap"]


def _conj(x):
    return lax.conj(x) if x.dtype.kind == "c" else x

"""``x[idx]`` and ``x.at[idx].set/add/...`` without scatter/gather primitives.

* Basic indexing (ints, slices of any step, None, Ellipsis) is static slices,
  ``rev`` for negative steps and a reshape.  A traced scalar integer uses
  ``dynamic_slice`` (negative values wrap, out-of-range values clamp, as JAX).
* Advanced indexing with host (concrete) integer arrays or boolean masks asks
  NumPy for the answer's layout: ``np.arange(x.size).reshape(x.shape)[idx]``
  is the flat position of every selected element, so every NumPy rule
  (broadcast index arrays, where the advanced axes land, negative indices,
  out-of-bounds errors) holds by construction; the values are then picked by
  ``take_static`` (strided slices + concatenate).
* One traced integer-array index uses a one-hot select-and-sum over the
  indexed axis (exact for every value, including inf/nan elsewhere;
  out-of-range indices give 0).
* ``.at[idx].op(v)``: the update is placed into a full-size array (by
  ``pad`` for basic indices, by ``take_static`` from a host "source map" for
  advanced ones) and combined with ``select(mask, op(x, placed), x)``;
  duplicate advanced indices are applied layer by layer so ``add`` accumulates.
Everything is built from differentiable, batchable primitives.
"""
from __future__ import annotations

import numpy as np

from interpreters import core, dtypes
from interpreters.core import Array, ArrayOps, Tracer
from xform.numpy import _shape as S
from xform.numpy import _ufuncs as F
from xform.numpy import _util as U
from xform.numpy._util import lax


# ----------------------------------------------------------------- classify the index


def _as_tuple(idx):
    if isinstance(idx, tuple):
        return idx
    if isinstance(idx, list):
        raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                        "allowed; use `arr[array(seq)]` instead of `arr[seq]`.")
    return (idx,)


_TRACED = object()


def _host_index(i):
    """Concrete NumPy value of an index entry, or _TRACED if it is traced."""
    if isinstance(i, Tracer):
        v = i.to_concrete_value()
        return _TRACED if v is None else np.asarray(v)
    if isinstance(i, Array):
        return np.asarray(i._value)
    return i


def _is_basic(i):
    return i is None or i is Ellipsis or isinstance(i, slice) or (
        isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)))


def _check_entry(i):
    if isinstance(i, (float, np.floating)) or (isinstance(i, np.ndarray) and i.dtype.kind == "f"):
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and integer or "
                         f"boolean arrays are valid indices, got {i!r}")
    if isinstance(i, ArrayOps) and i.dtype.kind not in "iub":
        raise IndexError(f"indices must be integers or booleans, got an array of dtype "
                         f"{i.dtype}")


def _expand(idx, ndim):
    """Replace Ellipsis by full slices; pad with full slices at the end."""
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis and not (
        isinstance(i, np.ndarray) and i.dtype == np.bool_))
    n_real += sum(i.ndim for i in idx if isinstance(i, np.ndarray) and i.dtype == np.bool_)
    n_ell = sum(1 for i in idx if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                         f"{n_real} were indexed")
    out = []
    for i in idx:
        if i is Ellipsis:
            out.extend([slice(None)] * (ndim - n_real))
        else:
            out.append(i)
    if not n_ell:
        out.extend([slice(None)] * (ndim - n_real))
    return out


# ----------------------------------------------------------------- basic indexing


def _basic_plan(x_shape, idx):
    """(starts, limits, strides, rev_axes, result_shape, int_axes) of a basic index."""
    starts, limits, strides, rev = [], [], [], []
    out_shape, box_shape = [], []
    d = 0
    for i in idx:
        if i is None:
            out_shape.append(1)
            continue
        n = x_shape[d]
        if isinstance(i, slice):
            st = 1 if i.step is None else U.static_int(i.step, "slice step")
            if st == 0:
                raise ValueError("slice step cannot be zero")
            a, b, st = slice(U.static_int(i.start, "slice start") if i.start is not None else None,
                             U.static_int(i.stop, "slice stop") if i.stop is not None else None,
                             st).indices(n)
            m = len(range(a, b, st))
            if m == 0:
                starts.append(0), limits.append(0), strides.append(1)
            elif st > 0:
                starts.append(a), limits.append(a + (m - 1) * st + 1), strides.append(st)
            else:
                lo = a + (m - 1) * st
                starts.append(lo), limits.append(a + 1), strides.append(-st)
                rev.append(d)
            out_shape.append(m)
            box_shape.append(m)
        else:
            k = int(i)
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {d} with size {n}")
            k %= n
            starts.append(k), limits.append(k + 1), strides.append(1)
            box_shape.append(1)
        d += 1
    return starts, limits, strides, rev, tuple(out_shape), tuple(box_shape)


def _basic_getitem(x, idx):
    starts, limits, strides, rev, out_shape, _ = _basic_plan(x.shape, idx)
    y = x
    if tuple(starts) != (0,) * x.ndim or tuple(limits) != x.shape or any(s != 1 for s in strides):
        y = lax().slice(y, tuple(starts), tuple(limits),
                        None if all(s == 1 for s in strides) else tuple(strides))
    if rev:
        y = lax().rev(y, tuple(rev))
    if y.shape != out_shape:
        y = lax().reshape(y, out_shape)
    return y


# ----------------------------------------------------------------- getitem


def getitem(x, idx):
    x = U.to_array(x)
    raw = _as_tuple(idx)
    for i in raw:
        _check_entry(i)
    host = [_host_index(i) for i in raw]
    traced = [k for k, h in enumerate(host) if h is _TRACED]
    if traced:
        return _traced_getitem(x, raw, host, traced)
    host = [np.asarray(h) if isinstance(h, (np.ndarray, np.generic, list)) or (
        isinstance(h, (bool, np.bool_))) else h for h in host]
    host = [int(h) if isinstance(h, np.ndarray) and h.ndim == 0 and h.dtype.kind in "iu" else h
            for h in host]
    if all(_is_basic(h) for h in host):
        return _basic_getitem(x, _expand(host, x.ndim))
    return _advanced_getitem(x, tuple(host))


def _flat_map(shape, idx):
    """NumPy's answer to the indexing question, in flat positions."""
    try:
        return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)[idx]
    except IndexError as e:
        raise IndexError(str(e)) from None


def _advanced_getitem(x, idx):
    # Fast and compact case: exactly one 1-D integer array, the rest basic.
    adv = [k for k, i in enumerate(idx) if not _is_basic(i)]
    if len(adv) == 1 and isinstance(idx[adv[0]], np.ndarray) and idx[adv[0]].dtype.kind in "iu":
        k = adv[0]
        rest = list(idx)
        rest[k] = slice(None)
        full = _expand(rest, x.ndim)
        p = _index_pos(tuple(rest), k, x.ndim)
        axis_in_x = sum(1 for e in full[:p] if e is not None)
        pos = sum(1 for e in full[:p] if e is None or isinstance(e, slice))
        arr = idx[k]
        n = x.shape[axis_in_x]
        if arr.size and ((arr < -n) | (arr >= n)).any():
            bad = arr[(arr < -n) | (arr >= n)].flat[0]
            raise IndexError(f"index {int(bad)} is out of bounds for axis {axis_in_x} with size "
                             f"{n}")
        y = _basic_getitem(x, full)
        return S.take_static(y, np.where(arr < 0, arr + n, arr), pos)
    m = _flat_map(x.shape, idx)
    return lax().reshape(S.take_static(S.ravel(x), m.reshape(-1), 0), m.shape) if m.ndim \
        else S.take_static(S.ravel(x), m, 0)


def _index_pos(idx, k, ndim):
    """Entry position of idx[k] in the Ellipsis-expanded index."""
    pos = 0
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    for j in range(k):
        pos += (ndim - n_real) if idx[j] is Ellipsis else 1
    return pos


def _traced_getitem(x, raw, host, traced):
    if len(raw) - sum(1 for i in raw if i is Ellipsis) > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional")
    if len(traced) != 1:
        raise NotImplementedError("xform indexing supports at most one traced index array per "
                                  "indexing operation; index in several steps instead")
    k = traced[0]
    t = raw[k]
    if t.dtype == dtypes.bool_:
        raise IndexError("boolean mask indices must be concrete: a traced mask has a "
                         "data-dependent result shape. Use xform.numpy.where(mask, x, 0) "
                         "instead.")
    rest = [slice(None) if j == k else h for j, h in enumerate(host)]
    if any(not _is_basic(h) for h in rest):
        raise NotImplementedError("mixing a traced index with host index arrays is not "
                                  "supported; index in two steps")
    exp = _expand(rest, x.ndim)
    # axis of x and position in the basic result that the traced entry indexes
    pos_in_exp = _index_pos(tuple(rest), k, x.ndim)
    axis_in_x = sum(1 for e in exp[:pos_in_exp] if e is not None)
    pos_out = sum(1 for e in exp[:pos_in_exp] if e is None or isinstance(e, slice))
    y = _basic_getitem(x, exp)
    n = x.shape[axis_in_x]
    if t.ndim == 0:
        ii = F.where(F.less(t, U.to_array(0, t.dtype)), F.add(t, U.to_array(n, t.dtype)), t)
        ii = U.to_array(ii, dtypes.default_int_dtype() if t.dtype.itemsize <= 4 else t.dtype)
        starts = [U.to_array(0, ii.dtype, False)] * y.ndim
        starts[pos_out] = ii
        sizes = list(y.shape)
        sizes[pos_out] = 1
        out = lax().dynamic_slice(y, starts, sizes)
        return lax().reshape(out, y.shape[:pos_out] + y.shape[pos_out + 1:])
    return take_traced(y, t, pos_out)


def take_traced(x, idx, axis):
    """``take(x, idx, axis)`` for a traced integer array: one-hot select and sum."""
    n = x.shape[axis]
    idx = U.to_array(idx)
    idx = F.where(F.less(idx, U.to_array(0, idx.dtype)), F.add(idx, U.to_array(n, idx.dtype)), idx)
    xm = S.moveaxis(x, axis, 0)                                  # (n, *rest)
    rest = xm.shape[1:]
    oh = F.equal(lax().reshape(idx, idx.shape + (1,)),
                 lax().broadcasted_iota(idx.dtype, (1,) * idx.ndim + (n,), idx.ndim))
    full = idx.shape + (n,) + rest
    oh = U.broadcast_to_shape(lax().reshape(oh, idx.shape + (n,) + (1,) * len(rest)), full)
    xb = U.broadcast_to_shape(lax().reshape(xm, (1,) * idx.ndim + xm.shape), full)
    zero = U.broadcast_to_shape(U.to_array(0, x.dtype, False), full)
    picked = lax().select_n(oh, zero, xb)
    out = lax().reduce_sum(picked, (idx.ndim,)) if x.dtype != dtypes.bool_ else \
        lax().reduce_or(picked, (idx.ndim,))
    # out: idx.shape + rest -> move the idx dims to `axis`
    nd_i = idx.ndim
    perm = list(range(nd_i, nd_i + axis)) + list(range(nd_i)) + list(range(nd_i + axis, out.ndim))
    return S.transpose(out, perm) if perm != list(range(out.ndim)) else out


def nonzero(a, *, size=None, fill_value=None):
    """Indices of non-zero elements; needs a concrete array (or a static ``size``)."""
    x = U.to_array(a)
    v = x.to_concrete_value() if isinstance(x, ArrayOps) else None
    if v is None:
        raise core.errors.ConcretizationTypeError(
            x, "nonzero/argwhere/one-argument where on a traced array (the result shape depends "
            "on the values)")
    nz = np.nonzero(np.asarray(v))
    if size is not None:
        fv = 0 if fill_value is None else fill_value
        nz = tuple(np.concatenate([z[:size], np.full(max(0, size - len(z)), fv, z.dtype)])
                   for z in nz)
    idt = dtypes.default_int_dtype()
    return tuple(Array(z.astype(idt)) for z in nz)


def argwhere(a, *, size=None, fill_value=None):
    nz = nonzero(a, size=size, fill_value=fill_value)
    return S.stack(nz, axis=1) if nz else U.to_array(np.zeros((0, 0), dtypes.default_int_dtype()))


def flatnonzero(a, *, size=None, fill_value=None):
    return nonzero(S.ravel(a), size=size, fill_value=fill_value)[0]


def set_last(out, v):
    """``out.at[-1].set(v)`` along axis 0 (used by linspace to hit ``stop`` exactly)."""
    return _Update(U.to_array(out), (-1,)).set(v)


# ----------------------------------------------------------------- .at[...]


class _IndexUpdateHelper:
    """``x.at``: ``x.at[idx]`` returns an ``_Update`` with set/add/multiply/... methods."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, idx):
        return _Update(self.array, idx)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


_COMBINE = {
    "set": lambda x, u: u,
    "add": F.add,
    "multiply": F.multiply,
    "divide": F.true_divide,
    "power": F.power,
    "min": F.minimum,
    "max": F.maximum,
}
_IDENTITY = {"add": 0, "multiply": 1, "divide": 1, "power": 1, "set": 0}


class _Update:
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
            fill_value=None):
        return getitem(self.array, self.index)

    def set(self, values, **kw):
        return _apply(self.array, self.index, values, "set")

    def add(self, values, **kw):
        return _apply(self.array, self.index, values, "add")

    def multiply(self, values, **kw):
        return _apply(self.array, self.index, values, "multiply")

    mul = multiply

    def divide(self, values, **kw):
        return _apply(self.array, self.index, values, "divide")

    def power(self, values, **kw):
        return _apply(self.array, self.index, values, "power")

    def min(self, values, **kw):
        return _apply(self.array, self.index, values, "min")

    def max(self, values, **kw):
        return _apply(self.array, self.index, values, "max")

    def apply(self, func, **kw):
        x = U.to_array(self.array)
        return _apply(x, self.index, func(getitem(x, self.index)), "set")


def _apply(x, idx, values, op):
    x = U.to_array(x)
    if op in ("divide", "power") and x.dtype.kind in "iub" and op == "divide":
        raise TypeError("x.at[...].divide() on an integer array: use floor division or cast "
                        "to float first")
    v = U.to_array(values)
    v = U.to_array(v, x.dtype, x.weak_type and v.weak_type) if v.dtype != x.dtype else v
    raw = _as_tuple(idx)
    for i in raw:
        _check_entry(i)
    host = [_host_index(i) for i in raw]
    if any(h is _TRACED for h in host):
        return _apply_traced(x, raw, host, v, op)
    host = [np.asarray(h) if isinstance(h, (np.ndarray, np.generic, list, bool, np.bool_)) else h
            for h in host]
    host = [int(h) if isinstance(h, np.ndarray) and h.ndim == 0 and h.dtype.kind in "iu" else h
            for h in host]
    combine = _COMBINE[op]
    if all(_is_basic(h) for h in host):
        exp = _expand(host, x.ndim)
        starts, limits, strides, rev, out_shape, box = _basic_plan(x.shape, exp)
        try:
            vb = S.broadcast_to(v, out_shape)
        except ValueError:
            raise ValueError(f"x.at[...].{op}: shape mismatch: value array of shape {v.shape} "
                             f"could not be broadcast to indexing result of shape {out_shape}") \
                from None
        vb = lax().reshape(vb, box)
        if rev:
            vb = lax().rev(vb, tuple(rev))
        cfg = tuple((s, n - (s + (m - 1) * st + 1), st - 1) if m else (0, n, 0)
                    for s, st, n, m in zip(starts, strides, x.shape, box))
        ident = U.to_array(_IDENTITY.get(op, 0), x.dtype, False)
        placed = lax().pad(vb, ident, cfg)
        mask = np.zeros(x.shape, bool)
        mask[tuple(slice(s, l, st) for s, l, st in zip(starts, limits, strides))] = True
        return F.where(mask, combine(x, placed), x)
    m = _flat_map(x.shape, tuple(host))
    try:
        vb = S.ravel(S.broadcast_to(v, m.shape))
    except ValueError:
        raise ValueError(f"x.at[...].{op}: shape mismatch: value array of shape {v.shape} could "
                         f"not be broadcast to indexing result of shape {m.shape}") from None
    flat = m.reshape(-1)
    xf = S.ravel(x)
    if op == "set":
        layers = [_last_writer(flat, x.size)]
    else:
        layers = _layers(flat, x.size)
    for src in layers:
        mask = src >= 0
        placed = S.take_static(vb, np.where(mask, src, 0), 0) if vb.shape[0] else \
            U.broadcast_to_shape(U.to_array(0, x.dtype, False), xf.shape)
        xf = F.where(mask, combine(xf, placed), xf)
    return lax().reshape(xf, x.shape)


def _last_writer(flat, size):
    src = np.full(size, -1, np.int64)
    src[flat] = np.arange(flat.size)     # NumPy assignment: the last write wins
    return src


def _layers(flat, size):
    """Split update positions into layers with unique targets (duplicates accumulate)."""
    layers = []
    remaining = np.arange(flat.size)
    while remaining.size:
        src = np.full(size, -1, np.int64)
        tgt = flat[remaining]
        _, first = np.unique(tgt, return_index=True)
        take = remaining[first]
        src[flat[take]] = take
        layers.append(src)
        remaining = np.setdiff1d(remaining, take, assume_unique=True)
    return layers


def _apply_traced(x, raw, host, v, op):
    """``.at[i]`` with one traced scalar or array index on one axis: one-hot masks."""
    traced = [k for k, h in enumerate(host) if h is _TRACED]
    if len(traced) != 1 or any(not _is_basic(h) for j, h in enumerate(host) if j != traced[0]) \
            or any(not isinstance(h, slice) or h != slice(None)
                   for j, h in enumerate(host) if j != traced[0]):
        raise NotImplementedError("x.at[...] with a traced index supports one traced index "
                                  "on one axis, the other entries being ':'")
    axis = traced[0]
    t = U.to_array(raw[axis])
    n = x.shape[axis]
    t = F.where(F.less(t, U.to_array(0, t.dtype)), F.add(t, U.to_array(n, t.dtype)), t)
    combine = _COMBINE[op]
    xm = S.moveaxis(x, axis, 0)
    rest = xm.shape[1:]
    tf = S.ravel(t)
    vb = S.broadcast_to(v, t.shape + rest)
    vb = lax().reshape(vb, (tf.shape[0],) + rest)
    for k in range(tf.shape[0]):        # one masked update per index (static count)
        ik = lax().reshape(lax().slice(tf, (k,), (k + 1,)), ())
        hit = F.equal(lax().broadcasted_iota(t.dtype, (n,), 0), ik)
        hitb = lax().broadcast_in_dim(hit, xm.shape, (0,))
        vk = lax().broadcast_in_dim(lax().reshape(lax().slice(vb, (k,) + (0,) * len(rest),
                                                              (k + 1,) + rest), rest),
                                    xm.shape, tuple(range(1, xm.ndim)))
        xm = F.where(hitb, combine(xm, vk), xm)
    return S.moveaxis(xm, 0, axis)

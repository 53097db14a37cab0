"""``x[idx]`` and ``x.at[idx].set/add/...``: static slices, one gather, one scatter.

* Basic indexing (ints, slices of any step, None, Ellipsis) with host values is
  static slices, ``rev`` for negative steps and a reshape.
* Any integer-array index (host or traced; host boolean masks become their
  ``nonzero`` index arrays; an int next to an array is a 0-d array, as in
  NumPy) is one ``gather``: the slice entries are applied first as static
  slices (so the gather's windows are whole axes), the index arrays are
  broadcast and stacked into index vectors, and NumPy's layout rule (the
  advanced axes replace a contiguous block of them, else go first) chooses the
  gather's ``offset_dims``; ``None`` axes are a final reshape.  Index arrays,
  host or traced, follow one rule (so eager and jitted runs agree): negatives
  wrap once and out-of-range values clamp (JAX's ``promise_in_bounds``;
  ``mode=`` 'clip'/'fill' when asked).  Integer *scalar* arrays with basic
  entries read through a clamped ``dynamic_slice`` (as JAX).  Only static
  Python integers out of bounds raise ``IndexError`` (unless a mode is given).
* ``.at[idx].op(v)`` with an index array is the mirror ``scatter`` /
  ``scatter_add`` / ``scatter_mul`` / ``scatter_min`` / ``scatter_max`` on the
  same plan (duplicates accumulate; for ``set`` host duplicates are resolved on
  the host, the last write winning as in NumPy; out-of-range indices, host or
  traced, are dropped as in JAX, or clamped with ``mode='clip'``).  Slices around the arrays are handled by scattering into
  the sliced view and writing that back.  Purely basic static ``.at`` updates
  place the values with ``pad`` and ``select``.
Everything is built from differentiable, batchable primitives.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import core, dtypes
from xform._src.interpreters.core import Array, ArrayOps, Tracer
from xform.numpy import _shape as S
from xform.numpy import _ufuncs as F
from xform.numpy import _util as U
from xform.numpy._util import lax
from xform.numpy._creation import _staging
from xform._src.primitives.indexing import GatherScatterMode
from xform._src.primitives.indexing import GatherScatterMode as M
from xform.numpy._creation import zeros
from xform.numpy._index_tricks import nonzero_sized


# ----------------------------------------------------------------- xform.ds


class Slice:
    """``xform.ds(start, size, stride)``: the ``size`` elements ``start, start + stride,
    ...`` of an axis, where ``start`` may be traced (a dynamic slice, clamped to stay in
    bounds, negative starts counting from the end) and ``size``/``stride`` are static."""

    __slots__ = ("start", "size", "stride")

    def __init__(self, start, size, stride=1):
        if stride < 0:
            raise ValueError("`stride` must be >= 0.")
        self.start, self.size, self.stride = start, size, stride

    def __repr__(self):
        return f"Slice(start={self.start!r}, size={self.size!r}, stride={self.stride!r})"

    def __eq__(self, other):
        return isinstance(other, Slice) and all(
            a is b or (not isinstance(a, ArrayOps) and a == b) for a, b in
            zip((self.start, self.size, self.stride), (other.start, other.size, other.stride)))

    __hash__ = None


def ds(start, size=None, stride=None):
    """JAX's ``jax.ds`` (``dslice``): ``ds(None)`` is ``:``, ``ds(j)`` is ``:j``,
    ``ds(i, n)`` is ``i:i+n``, ``ds(i, n, s)`` takes ``n`` elements ``s`` apart; ``i`` may
    be traced (``x[ds(i, 2)]`` under ``jit``)."""
    if start is None:
        return slice(None)
    if stride is None:
        stride = 1
    if not isinstance(stride, int):
        raise ValueError("Non-static stride in `dslice`")
    if size is None:
        start, size = 0, start
    return Slice(start, size, stride)


def _dslice_static(e, n):
    """A Slice whose concrete start puts its whole window inside an axis of size ``n``
    as a Python slice, else None (JAX clamps or drops the other ones)."""
    v = _host_index(e.start)
    if v is _TRACED or np.ndim(v) != 0:
        return None
    size = U.static_int(e.size, "ds size")
    start = int(v)
    window = (size - 1) * e.stride + 1 if size > 0 else 0
    if start < 0 or start + window > n:
        return None
    return slice(start, start + window, e.stride or None)


def _dslice_axes(raw, shape):
    """(position in raw, axis of x) of each Slice entry (other entries basic or arrays)."""
    exp_src = [e for e in raw]
    n_real = sum(1 for e in exp_src if e is not None and e is not Ellipsis)
    out, ax = [], 0
    for k, e in enumerate(exp_src):
        if e is None:
            continue
        if e is Ellipsis:
            ax += len(shape) - n_real
            continue
        if isinstance(e, Slice):
            if ax >= len(shape):
                raise IndexError(f"too many indices for array: array is {len(shape)}-"
                                 "dimensional")
            out.append((k, ax))
        ax += np.ndim(e) if isinstance(e, np.ndarray) and e.dtype == np.bool_ else 1
    return out


def _resolve_dslices(raw, shape, as_indices):
    """Slices whose window is statically inside the axis become Python slices.  Others
    stay (``as_indices`` None: getitem's dynamic_slice) or become integer index arrays,
    as JAX indexes with them: for reads (``'gather'``) ``start + stride * k``, each
    clamped into the axis; for updates (``'scatter'``) the positions ``start + stride * k``
    without wrapping negative starts, out-of-range ones dropped -- a unit-stride window
    that does not fit whole is dropped whole."""
    raw = list(raw)
    for k, ax in _dslice_axes(raw, shape):
        e, n = raw[k], shape[ax]
        static = _dslice_static(e, n)
        if static is not None:
            raw[k] = static
        elif as_indices:
            size = U.static_int(e.size, "ds size")
            offs = U.to_array(np.arange(size, dtype=np.int32) * e.stride)
            i = U.to_array(e.start)
            if i.dtype.kind not in "iu" or i.ndim != 0:
                raise IndexError(f"ds start must be an integer scalar, got {e.start!r}")
            i = U.to_array(i, np.dtype(np.int32), False) if i.dtype != np.int32 else i
            pos = F.add(i, offs)
            zero, out = U.to_array(0, np.int32), U.to_array(n, np.int32)
            if as_indices == "gather":
                pos = lax.clamp(zero, pos, U.to_array(max(n - 1, 0), np.int32))
            elif e.stride == 1:
                fits = F.logical_and(F.greater_equal(i, zero),
                                     F.less_equal(i, U.to_array(n - size, np.int32)))
                pos = F.where(fits, pos, out)
            else:
                pos = F.where(F.less(pos, zero), out, pos)
            raw[k] = pos
    return tuple(raw)


def _dslice_getitem(x, raw):
    """``x[raw]`` where ``raw`` has Slices with traced starts: unit-stride ones alongside
    basic entries are a clamped ``dynamic_slice`` on their axis (the rest of the index as
    usual); others gather ``start + stride * k``, clamped, as JAX."""
    if not all((isinstance(e, Slice) and e.stride == 1) or
               (not isinstance(e, Slice) and _is_basic(e)) for e in raw):
        return getitem(x, _resolve_dslices(raw, x.shape, "gather"))
    keep = tuple(slice(None) if isinstance(e, Slice) else e for e in raw)
    y = getitem(x, keep)
    pos, plan = 0, []
    for e in _expand(list(raw), x.ndim):
        if e is None:
            pos += 1
        elif isinstance(e, Slice):
            plan.append((pos, e))
            pos += 1
        elif isinstance(e, slice):
            pos += 1
    for p, e in plan:
        size = U.static_int(e.size, "ds size")
        i = U.to_array(e.start)
        if i.dtype.kind not in "iu" or i.ndim != 0:
            raise IndexError(f"ds start must be an integer scalar, got {e.start!r}")
        y = lax.dynamic_slice_in_dim(y, i, size, axis=p)
    return y


# ----------------------------------------------------------------- classify the index


def _as_tuple(idx):
    if isinstance(idx, tuple):
        return idx
    if isinstance(idx, list):
        # JAX's advice: a tuple when an entry is itself an index of several parts
        nested = any((isinstance(i, (np.ndarray, ArrayOps)) and np.ndim(i) != 0) or
                     isinstance(i, (list, tuple, slice)) or i is Ellipsis or i is None
                     for i in idx)
        use = "arr[tuple(seq)]" if nested else "arr[array(seq)]"
        raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                        f"allowed; use `{use}` instead of `arr[seq]`.")
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
    """JAX's TypeError for an index entry that is neither an integer, a boolean, a slice,
    None nor Ellipsis (floats, complex numbers, strings, arrays of those)."""
    if isinstance(i, str):
        raise TypeError(f"JAX does not support string indexing; got idx={i!r}")
    if isinstance(i, slice) and any(isinstance(v, Tracer) and v.to_concrete_value() is None
                                    for v in (i.start, i.stop, i.step)):
        raise IndexError(f"Slice entries must be static integers. Got {i}. To index a "
                         "statically sized array at a dynamic position, use "
                         "lax.dynamic_slice/dynamic_update_slice (or xform.ds inside an "
                         "index).")
    if isinstance(i, (float, complex, np.floating, np.complexfloating)) or (
            isinstance(i, (np.ndarray, ArrayOps)) and i.dtype.kind not in "iub"):
        dt = np.result_type(i) if not isinstance(i, ArrayOps) else i.dtype
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{dt}: integers, slices (`:`), ellipsis (`...`), None and integer "
                        "or boolean arrays are valid indices")


def _expand(idx, ndim):
    """Replace Ellipsis by full slices; pad with full slices at the end."""
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis and not (
        isinstance(i, np.ndarray) and i.dtype == np.bool_))
    n_real += sum(i.ndim for i in idx if isinstance(i, np.ndarray) and i.dtype == np.bool_)
    n_ell = sum(1 for i in idx if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > ndim:
        raise IndexError(f"Too many indices: array is {ndim}-dimensional, but {n_real} were "
                         "indexed")
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
    """(starts, limits, strides, rev_axes, result_shape, box_shape) of a basic index (the
    start/limit conventions are JAX's static-slice ones, so staged programs print alike)."""
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
            if st > 0:
                starts.append(a), limits.append(max(a, b)), strides.append(st)
            else:   # the same elements in increasing order, then reversed
                lo = min(n, b + 1 + abs(a - b - 1) % -st)
                starts.append(lo), limits.append(max(lo, a + 1)), strides.append(-st)
                rev.append(d)
            out_shape.append(m)
            box_shape.append(m)
        else:
            k = int(i)
            if not -n <= k < n:
                raise IndexError(f"index {k} out of bounds for axis {d} with size {n}")
            k %= n
            starts.append(k), limits.append(k + 1), strides.append(1)
            box_shape.append(1)
        d += 1
    return starts, limits, strides, rev, tuple(out_shape), tuple(box_shape)


def _basic_getitem(x, idx):
    """slice, rev, squeeze (integer indices), expand_dims (None) -- JAX's static slice."""
    starts, limits, strides, rev, out_shape, _ = _basic_plan(x.shape, idx)
    y = x
    if any(s != 1 for s in strides) or tuple(starts) != (0,) * x.ndim or \
            tuple(limits) != tuple(x.shape):
        y = lax.slice(y, tuple(starts), tuple(limits),
                        None if all(s == 1 for s in strides) else tuple(strides))
    if rev:
        y = lax.rev(y, tuple(rev))
    if not _staging():   # eager: one reshape
        return y if y.shape == out_shape else lax.reshape(y, out_shape)
    squeeze, newaxis, d = [], [], 0
    for i in idx:
        if i is None:
            newaxis.append(d - len(squeeze) + len(newaxis))
            continue
        if not isinstance(i, slice):
            squeeze.append(d)
        d += 1
    if squeeze:
        y = lax.squeeze(y, tuple(squeeze))
    if newaxis:
        y = lax.expand_dims(y, tuple(newaxis))
    return y


# ----------------------------------------------------------------- getitem


def _entries(raw):
    """Index entries: host values as NumPy arrays / Python ints, traced ones as they are."""
    out = []
    for i in raw:
        h = _host_index(i)
        if h is _TRACED:
            out.append(i)
            continue
        if isinstance(h, np.generic) and h.dtype.kind in "iu":
            h = int(h)                 # a NumPy integer scalar is a static index
        elif isinstance(h, (np.ndarray, np.generic, list, bool, np.bool_)):
            h = np.asarray(h)
        out.append(h)
    return out


def _check_bool_masks(entries, shape):
    """A boolean mask must have the shape of the axes it indexes, where a 0 in the mask's
    shape matches any size (as in JAX): IndexError otherwise."""
    if not any(isinstance(e, np.ndarray) and e.dtype == np.bool_ and e.ndim for e in entries):
        return
    try:
        exp = _expand(entries, len(shape))
    except IndexError:
        return                      # (too many indices: reported where it is checked)
    ax = 0
    for e in exp:
        if e is None:
            continue
        if isinstance(e, np.ndarray) and e.dtype == np.bool_:
            want = tuple(shape[ax:ax + e.ndim])
            if not all(k in (0, s) for k, s in zip(e.shape, want)):
                raise IndexError(f"boolean index did not match shape of indexed array: got a "
                                 f"mask of shape {e.shape} for axes {ax}..{ax + e.ndim - 1} "
                                 f"of an array of shape {tuple(shape)} (expected {want})")
            ax += e.ndim
        else:
            ax += 1


def _mode(mode, what):
    """The gather/scatter mode an index operation asked for (``None``: the default)."""
    if mode is None:
        return None
    try:
        return GatherScatterMode.from_any(mode)
    except ValueError:
        raise ValueError(f"{what}: invalid mode={mode!r}; use 'clip', 'fill' (or 'drop') or "
                         "'promise_in_bounds'") from None


def _axes_of(exp):
    """(axis, entry) for each entry of an expanded index that consumes array axes."""
    ax = 0
    for e in exp:
        if e is None:
            continue
        if isinstance(e, np.ndarray) and e.dtype == np.bool_:
            ax += max(e.ndim, 1)
            continue
        yield ax, e
        ax += 1


def _static_ints(entries, shape, mode):
    """The index rule for static integers.  A Python (or NumPy scalar) integer out of
    bounds raises ``IndexError`` -- unless an explicit ``mode`` is given, which is always
    honoured: the integer is then an index array (clamped / filled / dropped).  Returns
    the entries with static ints kept (in bounds or ``mode is None``) or turned into
    0-d index arrays (explicit mode)."""
    ints = [k for k, e in enumerate(entries) if _is_basic(e) and isinstance(e, int)]
    if not ints:
        return entries
    if mode is not None:
        return [np.asarray(e) if k in ints else e for k, e in enumerate(entries)]
    for ax, e in _axes_of(_expand(entries, len(shape))):
        if _is_basic(e) and isinstance(e, int):
            n = shape[ax]
            if not -n <= e < n:
                raise IndexError(f"index {e} out of bounds for axis {ax} with size {n}")
    return entries


def _host_scalars(entries, shape, mode, scatter):
    """Concrete 0-d integer-array entries that resolve to one in-bounds position become
    static ints (static slices instead of a gather/scatter).  Negative values wrap once
    (``-1`` is the last element); out-of-range ones clamp for a gather (default, 'clip'
    or 'promise_in_bounds') or for a 'clip' scatter.  Returns ``(entries, dropped)``:
    ``dropped`` when a scatter's index is out of range and the update is dropped (or a
    'fill' gather must fill: then the entry stays an array)."""
    exp = _expand(entries, len(shape))
    if not any(isinstance(e, np.ndarray) and e.ndim == 0 and e.dtype.kind in "iu"
               for e in exp):
        return entries, False
    out, dropped, ax = [], False, 0
    for e in exp:
        if e is None or not (isinstance(e, np.ndarray) and e.ndim == 0
                             and e.dtype.kind in "iu"):
            out.append(e)
            if e is not None:
                ax += max(e.ndim, 1) if isinstance(e, np.ndarray) and e.dtype == np.bool_ else 1
            continue
        n = shape[ax]
        ax += 1
        k = int(e)
        k = k + n if k < 0 else k
        if 0 <= k < n:
            out.append(k)
        elif (mode == M.CLIP or (not scatter and mode != M.FILL_OR_DROP)) and n:
            out.append(min(max(k, 0), n - 1))
        elif scatter:
            dropped = True
            out.append(0)
        else:
            out.append(e)
    return out, dropped


def _is_scalar_index(e):
    return (isinstance(e, (np.ndarray, ArrayOps)) and e.ndim == 0
            and e.dtype.kind in "iu")


def _scalars_only(entries):
    """Only None/Ellipsis, unit-step slices, static ints and integer scalars (0-d
    arrays), with at least one scalar array: JAX indexes with a dynamic slice."""
    found = False
    for e in entries:
        if _is_scalar_index(e):
            found = True
        elif isinstance(e, slice):
            if e.step not in (None, 1, -1):
                return False
        elif not (e is None or e is Ellipsis or (_is_basic(e) and isinstance(e, int))):
            return False
    return found


def _dynamic_scalar_getitem(x, exp):
    """``x[exp]`` for basic entries plus traced integer scalars: the basic part as static
    slices (keeping the scalars' axes), then one ``dynamic_slice`` of size 1 on those
    axes (negative values wrap once; the start clamps), which are then dropped."""
    keep = [slice(None) if _is_scalar_index(e) else e for e in exp]
    y = _basic_getitem(x, keep)
    starts, out_axes, pos, ax = [], [], 0, 0
    for e in exp:
        if e is None:
            pos += 1
            continue
        if _is_scalar_index(e):
            n = x.shape[ax]
            if n == 0:
                raise IndexError(f"index is out of bounds for axis {ax} with size 0")
            i = _Plan._index_array(e, n, ax)
            out_axes.append(pos)
            starts.append((pos, i))
            pos += 1
        elif isinstance(e, slice):
            pos += 1
        ax += 1
    idt = np.dtype(np.int32)
    start = [U.to_array(0, idt) for _ in range(y.ndim)]
    for p, i in starts:
        start[p] = U.to_array(i, idt) if i.dtype != idt else i
    sizes = tuple(1 if p in out_axes else d for p, d in enumerate(y.shape))
    out = lax.dynamic_slice(y, start, sizes, allow_negative_indices=False)
    return lax.reshape(out, tuple(d for p, d in enumerate(y.shape) if p not in out_axes))


def getitem(x, idx, *, mode=None, fill_value=None, indices_are_sorted=False,
            unique_indices=False):
    """``x[idx]`` (and ``x.at[idx].get(...)``).

    Index rule (the same eager and under ``jit``): a static Python integer out of
    bounds raises ``IndexError``; integer *arrays* -- concrete or traced -- follow JAX:
    negative values wrap once, out-of-range ones are clamped (``mode='fill'``: give
    ``fill_value``).  An explicit ``mode`` applies to every integer index.
    """
    x = U.to_array(x)
    m = _mode(mode, "x.at[...].get")
    raw = _as_tuple(idx)
    if any(isinstance(i, Slice) for i in raw):
        raw = _resolve_dslices(raw, x.shape, "gather" if m is not None else None)
        if any(isinstance(i, Slice) for i in raw):
            return _dslice_getitem(x, raw)
    for i in raw:
        _check_entry(i)
    entries = _entries(raw)
    _check_bool_masks(entries, x.shape)
    entries = _static_ints(entries, x.shape, m)
    if m != M.FILL_OR_DROP and _scalars_only(entries):
        # Integer scalars (and unit-step slices) only: a dynamic slice, as in JAX --
        # out-of-range starts clamp, and so does the gradient (it lands on the element
        # that was read).  Concrete scalars resolve to static slices here.
        entries, _ = _host_scalars(entries, x.shape, m, scatter=False)
        if not all(_is_basic(e) for e in entries):
            return _dynamic_scalar_getitem(x, _expand(entries, x.ndim))
    if all(_is_basic(e) for e in entries):
        return _basic_getitem(x, _expand(entries, x.ndim))
    if any(isinstance(e, np.ndarray) and e.dtype == np.bool_ and e.ndim == 0 for e in entries):
        if any(isinstance(e, Tracer) for e in entries):
            raise IndexError("a scalar boolean index cannot be combined with a traced index")
        m = _flat_map(x.shape, tuple(entries))
        return lax.reshape(gather_axis(S.ravel(x), m.reshape(-1), 0), m.shape)
    fill = m == M.FILL_OR_DROP
    # One gather, with the same (unclamped) indices whether they are concrete or traced:
    # by default out-of-range ones clamp when read and their gradient is dropped
    # (JAX's 'promise_in_bounds' gather); 'clip' clamps both ways; 'fill' fills.
    plan = _Plan(x, entries)
    if plan.size == 0:
        return U.to_array(zeros(plan.final_shape, x.dtype), x.dtype, x.weak_type)
    if m is None:
        m = M.PROMISE_IN_BOUNDS
    ok = plan.in_bounds
    out = lax.gather(plan.view(x), plan.indices, plan.gather_dn(), plan.slice_sizes,
                       indices_are_sorted=(plan.sorted and ok) or bool(indices_are_sorted),
                       unique_indices=(plan.unique and ok) or bool(unique_indices),
                       mode=m, fill_value=fill_value if fill else None)
    return lax.reshape(out, plan.final_shape) if out.shape != plan.final_shape else out


def _flat_map(shape, idx):
    """NumPy's answer to the indexing question, in flat positions."""
    try:
        return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)[idx]
    except IndexError as e:
        raise IndexError(str(e)) from None


def _index_dtype(n):
    return np.dtype(np.int32) if n < 2**31 else np.dtype(np.int64)


def _is_array(e):
    return isinstance(e, (np.ndarray, ArrayOps))


class _Plan:
    """How an index with integer arrays becomes one gather / scatter.

    ``view(x)``: ``x`` after the slice entries (same rank); ``indices``: the
    stacked index vectors ``(*broadcast_shape, K)``; the advanced axes are
    collapsed, every other axis is a whole-axis window placed by NumPy's rule;
    ``gather_shape`` is the gather's result, ``final_shape`` adds the ``None`` axes.
    """

    def __init__(self, x, entries, clamp=False):
        ents = []
        for e in entries:      # host boolean masks -> their nonzero index arrays
            if isinstance(e, np.ndarray) and e.dtype == np.bool_:
                ents.extend(np.nonzero(e))
            elif isinstance(e, ArrayOps) and e.dtype == dtypes.bool_:
                from xform.errors import NonConcreteBooleanIndexError   # an IndexError
                raise NonConcreteBooleanIndexError(
                                 "boolean mask indices must be concrete: a traced mask has a "
                                 "data-dependent result shape. Use xform.numpy.where(mask, x, "
                                 "0) instead.")
            else:
                ents.append(e)
        exp = _expand(ents, x.ndim)
        adv, axis_of, slices, ax = [], {}, [], 0
        for k, e in enumerate(exp):
            if e is None:
                continue
            axis_of[k] = ax
            if _is_array(e) or not isinstance(e, slice):
                adv.append(k)
                slices.append(slice(None))
            else:
                slices.append(e)
            ax += 1
        self.slices = slices
        self.trivial = all(s == slice(None) for s in slices)
        box = _basic_plan(x.shape, slices)[4] if not self.trivial else x.shape
        self.view_shape = box
        contiguous = adv == list(range(adv[0], adv[-1] + 1))
        self.adv_axes = tuple(axis_of[k] for k in adv)
        arrays = [self._index_array(exp[k], box[axis_of[k]], axis_of[k], clamp) for k in adv]
        bshape = U.broadcast_shapes(*(a.shape for a in arrays))
        host = all(isinstance(a, np.ndarray) for a in arrays)
        if host:
            dt = _index_dtype(max(box))
            self.indices = U.to_array(np.stack([np.broadcast_to(a, bshape) for a in arrays],
                                               axis=-1).astype(dt))
            flat = np.asarray(self.indices._value).reshape(-1, len(arrays))
            self.sorted = bool(flat.shape[0] < 2 or len(arrays) == 1 and
                               np.all(np.diff(flat[:, 0]) >= 0))
            self.unique = bool(np.unique(flat, axis=0).shape[0] == flat.shape[0])
            box_a = np.asarray([box[axis_of[k]] for k in adv])
            self.in_bounds = bool(np.all((flat >= 0) & (flat < box_a)))
        else:
            kinds = {a.dtype for a in arrays if isinstance(a, ArrayOps)}
            wide = any(a.dtype.itemsize == 8 for a in arrays if isinstance(a, ArrayOps))
            dt = kinds.pop() if len(kinds) == 1 else np.dtype(np.int64 if wide else np.int32)
            cols = [lax.reshape(U.broadcast_to_shape(U.to_array(a, dt), bshape), bshape + (1,))
                    for a in arrays]
            self.indices = cols[0] if len(cols) == 1 else lax.concatenate(cols, len(bshape))
            self.sorted = self.unique = False
            self.in_bounds = False
        self.host = host
        nb = len(bshape)
        rest = [a for a in range(x.ndim) if a not in self.adv_axes]
        p = sum(1 for e in exp[:adv[0]] if isinstance(e, slice)) if contiguous else 0
        self.offset_dims = tuple(range(p)) + tuple(range(p + nb, nb + len(rest)))
        self.n_rest = len(rest)
        self.batch_pos = p
        self.slice_sizes = tuple(1 if a in self.adv_axes else box[a] for a in range(x.ndim))
        rest_sizes = [box[a] for a in rest]
        self.gather_shape = tuple(rest_sizes[:p]) + bshape + tuple(rest_sizes[p:])
        final, done, ax = [], False, 0
        if not contiguous:
            final.extend(bshape)
            done = True
        for k, e in enumerate(exp):
            if e is None:
                final.append(1)
            elif k in axis_of and k not in adv:
                final.append(box[axis_of[k]])
            elif not done:
                final.extend(bshape)
                done = True
        self.final_shape = tuple(final)
        self.size = int(np.prod(self.final_shape, dtype=np.int64))

    @staticmethod
    def _index_array(e, n, axis, clamp=False):
        """Negative indices wrap once (as in JAX); traced ones are left for the gather to
        clamp (or fill) / the scatter to drop; host ones are clamped here when ``clamp``,
        otherwise kept (out-of-range ones are filled / dropped by the operation)."""
        if isinstance(e, ArrayOps):
            if e.dtype.kind == "i":
                e = F.where(F.less(e, U.to_array(0, e.dtype)), F.add(e, U.to_array(n, e.dtype)), e)
            return e
        a = np.asarray(e)
        if a.dtype.kind not in "iu":
            raise IndexError(f"indices must be integers or booleans, got {a.dtype}")
        a = a.astype(np.int64)
        a = np.where(a < 0, a + n, a)
        if clamp and n:
            a = np.clip(a, 0, n - 1)
        return np.asarray(a)

    def view(self, x):
        return x if self.trivial else _basic_getitem(x, self.slices)

    def gather_dn(self):
        return lax.GatherDimensionNumbers(self.offset_dims, tuple(sorted(self.adv_axes)),
                                            self.adv_axes)

    def scatter_dn(self, flat_batch=False):
        """``flat_batch``: the updates' batch axes are collapsed into one (``_last_writes``)."""
        p = self.batch_pos
        dims = (tuple(range(p)) + tuple(range(p + 1, 1 + self.n_rest)) if flat_batch
                else self.offset_dims)
        return lax.ScatterDimensionNumbers(dims, tuple(sorted(self.adv_axes)), self.adv_axes)


def gather_axis(x, idx, axis, mode="promise_in_bounds", fill_value=None,
                indices_are_sorted=False, unique_indices=False):
    """``take(x, idx, axis)`` as one gather (``idx``: host or traced integers, no wrapping)."""
    if not isinstance(idx, ArrayOps):
        idx = np.asarray(idx)
        idx = U.to_array(idx.astype(_index_dtype(max(x.shape[axis], 1))))
    out_shape = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
    if int(np.prod(out_shape, dtype=np.int64)) == 0 or x.shape[axis] == 0:
        if x.shape[axis] == 0 and idx.size:
            raise IndexError(f"Cannot do a non-empty jnp.take() from an empty axis: index is "
                             f"out of bounds for axis {axis} with size 0")
        return U.to_array(zeros(out_shape, x.dtype), x.dtype, x.weak_type)
    ii = lax.reshape(idx, idx.shape + (1,))
    offset = tuple(range(axis)) + tuple(range(axis + idx.ndim, x.ndim - 1 + idx.ndim))
    sizes = x.shape[:axis] + (1,) + x.shape[axis + 1:]
    return lax.gather(x, ii, lax.GatherDimensionNumbers(offset, (axis,), (axis,)), sizes,
                        mode=mode, fill_value=fill_value, indices_are_sorted=indices_are_sorted,
                        unique_indices=unique_indices)


def nonzero(a, *, size=None, fill_value=None):
    """Indices of non-zero elements; needs a concrete array (or a static ``size``)."""
    x = U.to_array(a)
    v = x.to_concrete_value() if isinstance(x, ArrayOps) else None
    if v is None and size is not None:   # traced: a static-size compaction (jit-friendly)
        return nonzero_sized(x, U.static_int(size, "nonzero: size"), fill_value)
    if v is None:
        raise core.errors.ConcretizationTypeError(
            x, "nonzero/argwhere/one-argument where on a traced array (the result shape depends "
            "on the values)")
    nz = np.nonzero(np.asarray(v))
    if size is not None:
        fv = 0 if fill_value is None else fill_value
        fvs = fv if isinstance(fv, (tuple, list)) else (fv,) * len(nz)
        if len(fvs) != len(nz):
            raise ValueError(f"fill_value must be a scalar or a tuple of length {len(nz)}; "
                             f"got {fill_value}")
        nz = tuple(np.concatenate([z[:size], np.full(max(0, size - len(z)), f, z.dtype)])
                   for z, f in zip(nz, fvs))
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
        raw = _as_tuple(index)
        if any(isinstance(i, Slice) for i in raw):
            index = _resolve_dslices(raw, U.shape_of(array), "scatter")
        self.index = index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def _idx(self, wrap_negative_indices):
        """The index; with ``wrap_negative_indices=False`` (JAX), negative integer
        entries are left out of range (handled by ``mode``) instead of counting from the
        end."""
        if wrap_negative_indices:
            return self.index
        raw = _as_tuple(self.index)
        shape = U.shape_of(self.array)
        n_real = sum(1 for e in raw if e is not None and e is not Ellipsis)
        out, ax = [], 0
        for e in raw:
            if e is None or e is Ellipsis:
                if e is Ellipsis:
                    ax += len(shape) - n_real
                out.append(e)
                continue
            is_int = (isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_))
                      ) or ((isinstance(e, (np.ndarray, ArrayOps))) and e.dtype.kind in "iu")
            if is_int and ax < len(shape):
                v = U.to_array(e) if isinstance(e, ArrayOps) else np.asarray(e)
                if isinstance(v, np.ndarray):
                    out.append(np.where(v < 0, v - shape[ax], v))
                else:
                    n = U.to_array(shape[ax], v.dtype, False)
                    out.append(F.where(F.less(v, U.to_array(0, v.dtype, False)),
                                       F.subtract(v, n), v))
            else:
                out.append(e)
            ax += np.ndim(e) if isinstance(e, np.ndarray) and e.dtype == np.bool_ else 1
        return tuple(out)

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
            fill_value=None, wrap_negative_indices=True, out_sharding=None):
        return getitem(self.array, self._idx(wrap_negative_indices), mode=mode, fill_value=fill_value,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True, out_sharding=None):
        return _apply(self.array, self._idx(wrap_negative_indices), values, "set", mode,
                      indices_are_sorted, unique_indices)

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True, out_sharding=None):
        return _apply(self.array, self._idx(wrap_negative_indices), values, "add", mode,
                      indices_are_sorted, unique_indices)

    def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
                 wrap_negative_indices=True, out_sharding=None):
        return _apply(self.array, self._idx(wrap_negative_indices), F.negative(U.to_array(values)), "add", mode,
                      indices_are_sorted, unique_indices)

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
                 wrap_negative_indices=True, out_sharding=None):
        return _apply(self.array, self._idx(wrap_negative_indices), values, "multiply", mode,
                      indices_are_sorted, unique_indices)

    mul = multiply

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               wrap_negative_indices=True, out_sharding=None):
        return _apply(self.array, self._idx(wrap_negative_indices), values, "divide", mode,
                      indices_are_sorted, unique_indices)

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
              wrap_negative_indices=True, out_sharding=None):
        return _apply(self.array, self._idx(wrap_negative_indices), values, "power", mode,
                      indices_are_sorted, unique_indices)

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True, out_sharding=None):
        return _apply(self.array, self._idx(wrap_negative_indices), values, "min", mode,
                      indices_are_sorted, unique_indices)

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True, out_sharding=None):
        return _apply(self.array, self._idx(wrap_negative_indices), values, "max", mode,
                      indices_are_sorted, unique_indices)

    def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None,
              wrap_negative_indices=True, out_sharding=None):
        x = U.to_array(self.array)
        gmode = "clip" if mode is not None and _mode(mode, "x.at[...].apply").name == "CLIP" \
            else None
        return _apply(x, self._idx(wrap_negative_indices), func(getitem(x, self._idx(wrap_negative_indices), mode=gmode)), "set", mode,
                      indices_are_sorted, unique_indices)


_SCATTER = {"set": "scatter", "add": "scatter_add", "multiply": "scatter_mul",
            "min": "scatter_min", "max": "scatter_max"}


def _apply(x, idx, values, op, mode=None, indices_are_sorted=False, unique_indices=False):
    """``x.at[idx].<op>(values)``.  Index rule as ``getitem``: static Python ints out of
    bounds raise; integer arrays (concrete or traced) wrap negatives once and the
    updates at out-of-range positions are dropped (``mode='clip'``: clamped)."""
    x = U.to_array(x)
    if dtypes.is_extended(x.dtype):     # typed PRNG keys: update their uint32 words
        from xform import random as R  # deferred: import cycle
        if op != "set" or not dtypes.is_extended(getattr(values, "dtype", None)):
            raise TypeError(f"x.at[...].{op} on a key array of dtype {x.dtype}: only .set "
                            "with key values is supported")
        idx = (idx if isinstance(idx, tuple) else (idx,)) + (slice(None),)
        return R.wrap_key_data(_apply(R.key_data(x), idx, R.key_data(values), op, mode))
    m = _mode(mode, f"x.at[...].{op}")
    if op == "divide" and x.dtype.kind in "iub":
        raise TypeError("x.at[...].divide() on an integer array: use floor division or cast "
                        "to float first")
    if type(values) is int and x.dtype.kind in "iu" and not -2**31 <= values < 2**31:
        # a Python int beyond int32 goes straight to the target dtype (2**32 - 1 into
        # uint32; OverflowError where it does not fit), as JAX
        v = U.to_array(np.asarray(values, dtype=x.dtype), x.dtype, x.weak_type)
    else:
        v = U.to_array(values)
        v = U.to_array(v, x.dtype, x.weak_type and v.weak_type) if v.dtype != x.dtype else v
    raw = _as_tuple(idx)
    for i in raw:
        _check_entry(i)
    entries = _entries(raw)
    _check_bool_masks(entries, x.shape)
    entries = _static_ints(entries, x.shape, m)
    entries, dropped = _host_scalars(entries, x.shape, m, scatter=True)
    if all(_is_basic(e) for e in entries):
        if dropped:           # the index is out of range: nothing is written
            out_shape = _basic_plan(x.shape, _expand(entries, x.ndim))[4]
            try:
                np.broadcast_shapes(v.shape, out_shape)
            except ValueError:
                raise ValueError(f"x.at[...].{op}: shape mismatch: value array of shape "
                                 f"{v.shape} could not be broadcast to indexing result of "
                                 f"shape {out_shape}") from None
            return x
        return _apply_basic(x, entries, v, op)
    if op in ("divide", "power"):   # x / prod(v) and x ** prod(v): duplicates compose
        ones = U.broadcast_to_shape(U.to_array(1, x.dtype, False), x.shape)
        combine = F.true_divide if op == "divide" else F.power
        return combine(x, _apply(ones, idx, v, "multiply", mode, indices_are_sorted,
                                 unique_indices))
    if any(isinstance(e, np.ndarray) and e.dtype == np.bool_ and e.ndim == 0 for e in entries):
        # NumPy's layout for scalar booleans (advanced indices of length 1 or 0): the
        # positions the index reads in the flattened array, then one flat update
        if any(isinstance(e, Tracer) for e in entries):
            raise IndexError("a scalar boolean index cannot be combined with a traced index")
        fm = _flat_map(x.shape, tuple(entries))
        try:
            if np.broadcast_shapes(v.shape, fm.shape) != fm.shape:
                raise ValueError
            vb = U.broadcast_to_shape(v, fm.shape) if v.shape != fm.shape else v
        except ValueError:
            raise ValueError(f"x.at[...].{op}: shape mismatch: value array of shape "
                             f"{v.shape} could not be broadcast to indexing result of shape "
                             f"{fm.shape}") from None
        flat = _apply(S.ravel(x), (fm.reshape(-1),), lax.reshape(vb, (fm.size,)), op, mode)
        return lax.reshape(flat, x.shape)
    plan = _Plan(x, entries, clamp=m == M.CLIP)
    if plan.size == 0:        # nothing is written (JAX does not check the values' shape)
        return x
    try:
        vb = S.broadcast_to(v, plan.final_shape)
    except ValueError:
        raise ValueError(f"x.at[...].{op}: shape mismatch: value array of shape {v.shape} could "
                         f"not be broadcast to indexing result of shape {plan.final_shape}") \
            from None
    if vb.shape != plan.gather_shape:
        vb = lax.reshape(vb, plan.gather_shape)
    indices, unique, flat = plan.indices, plan.unique or bool(unique_indices), False
    if op == "set" and plan.host and not unique:
        indices, vb = _last_writes(plan, vb)
        unique = flat = True
    if plan.host:
        smode = M.PROMISE_IN_BOUNDS if plan.in_bounds else M.FILL_OR_DROP
    else:
        smode = M.FILL_OR_DROP if m is None else m
    y = plan.view(x)
    out = getattr(lax, _SCATTER[op])(y, indices, vb, plan.scatter_dn(flat),
                                       indices_are_sorted=plan.sorted or bool(
                                           indices_are_sorted), unique_indices=unique,
                                       mode=smode)
    return out if plan.trivial else _apply_basic(x, plan.slices, out, "set")


def _last_writes(plan, vb):
    """Host index vectors without repeats, each keeping its last update (NumPy's rule)."""
    flat = np.asarray(plan.indices._value)
    k, p = flat.shape[-1], plan.batch_pos
    flat = flat.reshape(-1, k)
    n = flat.shape[0]
    _, first_of_reversed = np.unique(flat[::-1], axis=0, return_index=True)
    keep = np.sort(n - 1 - first_of_reversed)
    nb = len(plan.gather_shape) - len(plan.offset_dims)
    vs = vb.shape
    vb = lax.reshape(vb, vs[:p] + (n,) + vs[p + nb:])
    vb = gather_axis(vb, keep, p, indices_are_sorted=True, unique_indices=True)
    return U.to_array(flat[keep]), vb


def _apply_basic(x, entries, v, op):
    """Static ints/slices/None: place the values with ``pad``, combine under a ``select``."""
    combine = _COMBINE[op]
    exp = _expand(entries, x.ndim)
    starts, limits, strides, rev, out_shape, box = _basic_plan(x.shape, exp)
    try:
        vb = S.broadcast_to(v, out_shape)
    except ValueError:
        raise ValueError(f"x.at[...].{op}: shape mismatch: value array of shape {v.shape} "
                         f"could not be broadcast to indexing result of shape {out_shape}") \
            from None
    vb = lax.reshape(vb, box)
    if rev:
        vb = lax.rev(vb, tuple(rev))
    cfg = tuple((s, n - (s + (m - 1) * st + 1), st - 1) if m else (0, n, 0)
                for s, st, n, m in zip(starts, strides, x.shape, box))
    ident = U.to_array(_IDENTITY.get(op, 0), x.dtype, False)
    placed = lax.pad(vb, ident, cfg)
    mask = np.zeros(x.shape, bool)
    mask[tuple(slice(s, l, st) for s, l, st in zip(starts, limits, strides))] = True
    return F.where(mask, combine(x, placed), x)

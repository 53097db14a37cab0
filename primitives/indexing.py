"""Gather and scatter: indexing by arrays of start indices (XLA's semantics).

``gather(operand, start_indices)`` cuts one window of ``slice_sizes`` out of
``operand`` per index vector (the last axis of ``start_indices``); the
``scatter`` family writes windows of ``updates`` back, combining with the
operand by set / add / mul / min / max.  Dimension numbers, modes and params
are JAX's (``lax.GatherDimensionNumbers`` etc.), so a jaxpr reads the same.

Out-of-bounds start indices (``GatherScatterMode``):
  * ``clip``: clamp every start so the whole window is in bounds.
  * ``fill`` (gather) / ``drop`` (scatter), JAX's default: a window that is
    partly out of bounds gathers ``fill_value`` (NaN, INT_MIN, UINT_MAX, True
    by default) / is not written at all.
  * ``promise_in_bounds``: what XLA does natively -- gathers clamp, scatters drop.

The NumPy references build, for every (batch point, window offset), the full
operand coordinate as broadcast integer arrays and use one fancy index; the
``ufunc.at`` methods give scatters that accumulate duplicates.

AD: gather is linear in the operand; its transpose is a ``scatter_add`` with the
mirrored dimension numbers (and vice versa).  ``promise_in_bounds`` transposes to
what actually ran (a clamping gather <-> a dropping scatter), so gradients stay
right even for out-of-bounds indices (JAX leaves them unspecified).  ``scatter`` (set) with possibly
duplicate indices differentiates through JAX's "scatter the update ids first"
trick, so primal and tangent agree on which duplicate wins.  Batching adds the
vmapped axis as a window dimension (only the operand batched) or as an
``operand_batching_dims`` / ``start_indices_batching_dims`` pair.
"""
from __future__ import annotations

import enum
from typing import NamedTuple

import numpy as np

from xform._src.interpreters import ad, batching, core, dtypes
from xform._src.interpreters.ad import Zero, instantiate, is_undefined_primal
from xform._src.interpreters.core import Primitive, ShapedArray
from xform._src.primitives._rules import bdim_at_front, moveaxis
from xform._src.primitives import elementwise
from xform._src.primitives.structural import _to_dtype
from xform._src.primitives.structural import as_operand
from xform._src.primitives.structural import broadcast_in_dim_p
from xform._src.primitives.structural import iota_p, reshape_p

__all__ = ["GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode", "gather",
           "scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"]


# ----------------------------------------------------------------- params


class GatherDimensionNumbers(NamedTuple):
    """How index vectors and windows map onto operand and output axes (XLA's Gather).

    offset_dims: output axes that hold the window (in operand-axis order).
    collapsed_slice_dims: operand axes whose window size is 1 and that are dropped.
    start_index_map: operand axis addressed by each component of an index vector.
    operand_batching_dims / start_indices_batching_dims: paired axes that are
    batch axes of both (the index along the indices' axis is the operand start).
    """
    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """The scatter mirror of ``GatherDimensionNumbers`` (XLA's Scatter)."""
    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


class GatherScatterMode(enum.Enum):
    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()

    @staticmethod
    def from_any(s):
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s in ("fill", "drop"):
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f"Unknown gather/scatter mode {s!r}: use 'clip', 'fill' (gather), "
                         "'drop' (scatter) or 'promise_in_bounds'")

    def __repr__(self):
        return f"GatherScatterMode.{self.name}"

    __str__ = __repr__


def _tup(xs):
    return tuple(int(x) for x in xs)


def _gdn(d) -> GatherDimensionNumbers:
    if not isinstance(d, GatherDimensionNumbers):
        raise TypeError(f"gather: dimension_numbers must be a lax.GatherDimensionNumbers, got "
                        f"{type(d).__name__}")
    return GatherDimensionNumbers(*(_tup(f) for f in d))


def _sdn(d) -> ScatterDimensionNumbers:
    if not isinstance(d, ScatterDimensionNumbers):
        raise TypeError(f"scatter: dimension_numbers must be a lax.ScatterDimensionNumbers, got "
                        f"{type(d).__name__}")
    return ScatterDimensionNumbers(*(_tup(f) for f in d))


def default_fill_value(dtype):
    """JAX's fill for out-of-bounds gathers: NaN, the int minimum, the uint maximum, True."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return True
    if dtype.kind == "i":
        return int(np.iinfo(dtype).min)
    if dtype.kind == "u":
        return int(np.iinfo(dtype).max)
    return complex("nan") if dtype.kind == "c" else float("nan")


# ----------------------------------------------------------------- shape rules


# XLA's Gather/Scatter shape inference, in the order and with the wording of JAX's shape
# rules (JAX's own tests match these messages).

def _is_sorted(dims, op, what):
    if list(dims) != sorted(dims):
        raise TypeError(f"{what} in {op} op must be sorted; got {dims}")


def _no_repeats(dims, op, what):
    if len(set(dims)) != len(dims):
        raise TypeError(f"{what} in {op} op must not repeat; got: {dims}.")


def _in_range(dims, rank, op, what, sorted_=False):
    bad = [d for d in ((dims[0], dims[-1]) if sorted_ and dims else dims)
           if not 0 <= d < rank]
    if bad and (not sorted_ or bad[0] != 0):
        raise TypeError(f"Invalid {what} set in {op} op; valid range is [0, {rank}); got: "
                        f"{bad[0]}.")


def _disjoint(a, b, op, what_a, what_b):
    if set(a) & set(b):
        raise TypeError(f"{what_a} and {what_b} in {op} op must be disjoint; got: {a} and {b}.")


def _check_index_dtype(name, idx):
    if not dtypes.is_integer(idx.dtype) or idx.dtype == np.bool_:
        raise TypeError(f"{name}: indices must have an integer dtype, got {idx.str_short()}")


def _check_index_vector(op, idx):
    if idx.ndim == 0:
        raise TypeError(f"{op.capitalize()} index leaf dimension must be within [0, "
                        f"rank(indices) + 1). rank(indices) is 0 and {op} index leaf "
                        "dimension is -1.")


def _check_batching(op, operand, indices, operand_batching_dims, idx_batching_dims, what):
    iv = indices.ndim - 1
    _no_repeats(idx_batching_dims, op, what)
    _in_range(idx_batching_dims, indices.ndim, op, what)
    if iv in idx_batching_dims:
        raise TypeError(f"{op.capitalize()} op cannot have the index vector dimension as a "
                        f"batching dimension; got {idx_batching_dims}.")
    if len(operand_batching_dims) != len(idx_batching_dims):
        sep = "" if op == "gather" else " "
        raise TypeError(f"{op.capitalize()} op requires equal numbers of operand_batching_dims "
                        f"and {what}, got {operand_batching_dims} and{sep}{idx_batching_dims}.")
    ob = tuple(operand.shape[i] for i in operand_batching_dims)
    ib = tuple(indices.shape[i] for i in idx_batching_dims)
    if ob != ib:
        raise TypeError(f"{op.capitalize()} op requires operand batching dimensions and indices "
                        f"batching dimensions to have the same shape, got {ob} and {ib}.")
    return ob


def _gather_abstract(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                     unique_indices, mode, fill_value):
    dn, R, op = dimension_numbers, operand.ndim, "gather"
    _check_index_dtype(op, indices)
    _check_index_vector(op, indices)
    iv = indices.ndim - 1
    offset_dims, collapsed = dn.offset_dims, dn.collapsed_slice_dims
    obd, sibd, sim = dn.operand_batching_dims, dn.start_indices_batching_dims, dn.start_index_map
    _is_sorted(offset_dims, op, "offset_dims")
    _no_repeats(offset_dims, op, "offset_dims")
    out_rank = len(offset_dims) + indices.ndim - 1
    for i, d in enumerate(offset_dims):
        if not 0 <= d < out_rank:
            raise TypeError(f"Offset dimension {i} in gather op is out of bounds; got {d}, but "
                            f"should have been in [0, {out_rank})")
    if len(sim) != indices.shape[iv]:
        raise TypeError(f"Gather op has {len(sim)} elements in start_index_map and the bound "
                        f"of dimension index_vector_dim={iv} of indices is "
                        f"{indices.shape[iv]}. These two numbers must be equal.")
    for i, d in enumerate(sim):
        if not 0 <= d < R:
            raise TypeError(f"Invalid start_index_map; domain is [0, {R}), got: {i}->{d}.")
    _no_repeats(sim, op, "start_index_map")
    _is_sorted(collapsed, op, "collapsed_slice_dims")
    _in_range(collapsed, R, op, "collapsed_slice_dims", sorted_=True)
    _no_repeats(collapsed, op, "collapsed_slice_dims")
    _no_repeats(obd, op, "operand_batching_dims")
    _is_sorted(obd, op, "operand_batching_dims")
    _in_range(obd, R, op, "operand_batching_dims", sorted_=True)
    _disjoint(collapsed, obd, op, "collapsed_slice_dims", "operand_batching_dims")
    _disjoint(sim, obd, op, "start_index_map", "operand_batching_dims")
    _check_batching(op, operand, indices, obd, sibd, "start_indices_batching_dims")
    if len(slice_sizes) != R:
        raise TypeError(f"Gather op must have one slice size for every input dimension; got: "
                        f"len(slice_sizes)={len(slice_sizes)}, input_shape.rank={R}")
    if len(slice_sizes) != len(offset_dims) + len(collapsed) + len(obd):
        raise TypeError("All components of the offset index in a gather op must either be a "
                        "offset dimension or explicitly collapsed/batching; got "
                        f"len(slice_sizes)={len(slice_sizes)}, output_slice_sizes="
                        f"{offset_dims}, collapsed_slice_dims={collapsed}, "
                        f"operand_batching_dims={obd}.")
    if 0 not in indices.shape:
        for i, (s, d) in enumerate(zip(slice_sizes, operand.shape)):
            if not 0 <= s <= d:
                raise TypeError(f"Slice size at index {i} in gather op is out of range, must "
                                f"be within [0, {d} + 1), got {s}.")
    for i, a in enumerate(collapsed):
        if slice_sizes[a] != 1:
            raise TypeError(f"Gather op can only collapse slice dims with bound 1, but bound "
                            f"is {slice_sizes[a]} for index {a} at position {i}.")
    for i, a in enumerate(obd):
        if slice_sizes[a] > 1:
            raise TypeError(f"Gather op can only have operand batching dims with bound 0/1, "
                            f"but bound is {slice_sizes[a]} for index {a} at position {i}.")
    window = iter(s for a, s in enumerate(slice_sizes) if a not in collapsed and a not in obd)
    batch = iter(indices.shape[:-1])
    shape = tuple(next(window) if p in offset_dims else next(batch) for p in range(out_rank))
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _scatter_abstract(operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                      unique_indices, mode, name="scatter"):
    dn, R, op = dimension_numbers, operand.ndim, "scatter"
    _check_index_dtype(name, indices)
    if updates.dtype != operand.dtype:
        raise TypeError(f"{name}: updates {updates.str_short()} must have the dtype of operand "
                        f"{operand.str_short()}")
    if name in ("scatter-add", "scatter-mul") and operand.dtype == np.bool_:
        raise TypeError(f"{name} does not accept dtype bool (operand {operand.str_short()}); "
                        "use scatter_max / scatter_min for logical or / and")
    _check_index_vector(op, indices)
    iv = indices.ndim - 1
    uwd, iwd, sdod = dn.update_window_dims, dn.inserted_window_dims, \
        dn.scatter_dims_to_operand_dims
    obd, sibd = dn.operand_batching_dims, dn.scatter_indices_batching_dims
    expected_rank = indices.ndim - 1 + len(uwd)
    if updates.ndim != expected_rank:
        raise TypeError(f"Updates tensor must be of rank {expected_rank}; got {updates.ndim}.")
    _is_sorted(uwd, op, "update_window_dims")
    _no_repeats(uwd, op, "update_window_dims")
    _in_range(uwd, updates.ndim, op, "update_window_dims", sorted_=True)
    _is_sorted(iwd, op, "inserted_window_dims")
    _no_repeats(iwd, op, "inserted_window_dims")
    _in_range(iwd, R, op, "inserted_window_dims", sorted_=True)
    _is_sorted(obd, op, "operand_batching_dims")
    _no_repeats(obd, op, "operand_batching_dims")
    _in_range(obd, R, op, "operand_batching_dims", sorted_=True)
    _disjoint(iwd, obd, op, "inserted_window_dims", "operand_batching_dims")
    _disjoint(sdod, obd, op, "scatter_dims_to_operand_dims", "operand_batching_dims")
    ob = _check_batching(op, operand, indices, obd, sibd, "scatter_indices_batching_dims")
    # the updates' axes holding the indices' batch axes (index_vector_dim removed)
    scatter_axes = [d for d in range(updates.ndim) if d not in uwd]
    ub = tuple(updates.shape[scatter_axes[i]] for i in sibd)
    if ob != ub:
        raise TypeError("Scatter op requires operand batching dimensions and updates batching "
                        f"dimensions to have the same shape, got {ob} and {ub}.")
    window_size = len(uwd) + len(iwd) + len(obd)
    if R != window_size:
        raise TypeError(f"Scatter op has window of size {window_size}; doesn't match operand "
                        f"of rank {R}.")
    if len(sdod) != indices.shape[iv]:
        raise TypeError(f"Scatter op has {len(sdod)} elements in scatter_dims_to_operand_dims "
                        f"and the bound of dimension index_vector_dim={iv} of indices is "
                        f"{indices.shape[iv]}. These two numbers must be equal")
    for i, d in enumerate(sdod):
        if not 0 <= d < R:
            raise TypeError(f"Invalid scatter_dims_to_operand_dims mapping; domain is "
                            f"[0, {R}), got: {i}->{d}.")
    _no_repeats(sdod, op, "scatter_dims_to_operand_dims")
    max_sizes = [operand.shape[a] for a in range(R) if a not in iwd and a not in obd]
    for i, u in enumerate(uwd):
        if max_sizes[i] < updates.shape[u]:
            raise TypeError("Bounds of the window dimensions of updates must not exceed the "
                            "bounds of the corresponding dimensions of operand. For dimension "
                            f"{u}, updates bound is {updates.shape[u]}, operand bound is "
                            f"{max_sizes[i]}.")
    for d, n in zip(scatter_axes, indices.shape[:-1]):
        if updates.shape[d] != n:
            raise TypeError("Bounds of the scatter dimensions of updates must be the same as "
                            "the bounds of the corresponding dimensions of scatter indices. "
                            f"For scatter dimension {d}, updates bound is {updates.shape[d]}, "
                            f"indices bound is {n}.")
    return ShapedArray(operand.shape, operand.dtype, operand.weak_type)


# ----------------------------------------------------------------- NumPy references


def _starts(shape, indices, index_map, op_batch, idx_batch, window, mode):
    """Full start coordinates ``(batch..., R)`` and an in-bounds mask ``(batch...)``."""
    batch = indices.shape[:-1]
    idx = np.asarray(indices)
    if idx.dtype == np.uint64:
        idx = np.minimum(idx, np.iinfo(np.int64).max)
    idx = idx.astype(np.int64)
    starts = np.zeros(batch + (len(shape),), np.int64)
    ok = np.ones(batch, bool)
    hi = np.asarray(shape, np.int64) - np.asarray(window, np.int64)
    for k, d in enumerate(index_map):
        s = idx[..., k]
        ok &= (s >= 0) & (s <= hi[d])
        starts[..., d] = np.clip(s, 0, hi[d]) if mode != GatherScatterMode.FILL_OR_DROP else s
    for o, i in zip(op_batch, idx_batch):
        starts[..., o] = np.arange(batch[i]).reshape([-1 if j == i else 1
                                                      for j in range(len(batch))])
    return starts, ok


def _coords(starts, window_axes, window_sizes):
    """Operand coordinates of shape ``batch + window`` for every operand axis."""
    nb, nw = starts.ndim - 1, len(window_axes)
    out = []
    for a in range(starts.shape[-1]):
        c = starts[..., a].reshape(starts.shape[:-1] + (1,) * nw)
        if a in window_axes:
            j = window_axes.index(a)
            c = c + np.arange(window_sizes[j]).reshape([-1 if k == nb + j else 1
                                                        for k in range(nb + nw)])
        out.append(c)
    return out


def _gather_impl(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                 unique_indices, mode, fill_value):
    dn = dimension_numbers
    x, idx = np.asarray(operand), np.asarray(indices)
    out_aval = _gather_abstract(core.get_aval(x), core.get_aval(idx), dimension_numbers=dn,
                                slice_sizes=slice_sizes, indices_are_sorted=False,
                                unique_indices=False, mode=mode, fill_value=fill_value)
    if out_aval.size == 0:
        return np.zeros(out_aval.shape, x.dtype)
    waxes = [a for a in range(x.ndim)
             if a not in dn.collapsed_slice_dims and a not in dn.operand_batching_dims]
    starts, ok = _starts(x.shape, idx, dn.start_index_map, dn.operand_batching_dims,
                         dn.start_indices_batching_dims, slice_sizes,
                         GatherScatterMode.CLIP)
    g = x[tuple(_coords(starts, waxes, [slice_sizes[a] for a in waxes]))]
    if mode == GatherScatterMode.FILL_OR_DROP:
        if x.dtype.names is not None:
            # typed PRNG keys (structured words, not bfloat16's kind "V"): every word the
            # uint32 maximum, as JAX
            fv = np.zeros((), x.dtype)
            fv[x.dtype.names[0]] = np.iinfo(np.uint32).max
        else:
            fv = default_fill_value(x.dtype) if fill_value is None else fill_value
            fv = np.asarray(fv).astype(x.dtype)
        g = np.where(ok.reshape(ok.shape + (1,) * len(waxes)), g, fv)
    nb = idx.ndim - 1
    bi, wi, perm = iter(range(nb)), iter(range(nb, nb + len(waxes))), []
    for p in range(g.ndim):
        perm.append(next(wi) if p in dn.offset_dims else next(bi))
    return np.array(np.transpose(g, perm), dtype=x.dtype)


def _scatter_impl_with(ufunc):
    def impl(operand, indices, updates, *, dimension_numbers, indices_are_sorted,
             unique_indices, mode):
        dn = dimension_numbers
        out = np.array(operand)
        idx, upd = np.asarray(indices), np.asarray(updates)
        if out.size == 0 or upd.size == 0:
            return out
        waxes = [a for a in range(out.ndim)
                 if a not in dn.inserted_window_dims and a not in dn.operand_batching_dims]
        wsizes = [upd.shape[u] for u in dn.update_window_dims]
        window = [1] * out.ndim
        for a, s in zip(waxes, wsizes):
            window[a] = s
        starts, ok = _starts(out.shape, idx, dn.scatter_dims_to_operand_dims,
                             dn.operand_batching_dims, dn.scatter_indices_batching_dims, window,
                             mode)
        if mode == GatherScatterMode.CLIP:
            ok = np.ones_like(ok)
        sdims = [d for d in range(upd.ndim) if d not in dn.update_window_dims]
        u = np.transpose(upd, sdims + list(dn.update_window_dims))   # batch + window
        coords = [c[ok] for c in
                  np.broadcast_arrays(*_coords(starts, waxes, wsizes))]
        vals = u[ok]
        if ufunc is None:
            out[tuple(coords)] = vals       # duplicates: the last update wins
        else:
            ufunc.at(out, tuple(coords), vals)
        return out
    return impl


# ----------------------------------------------------------------- mirrored dimension numbers


def _gather_to_scatter_dn(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
                                   dn.operand_batching_dims, dn.start_indices_batching_dims)


def _scatter_to_gather(dn: ScatterDimensionNumbers, operand_shape, updates_shape):
    """(GatherDimensionNumbers, slice_sizes) reading back the windows a scatter writes."""
    gdn = GatherDimensionNumbers(dn.update_window_dims, dn.inserted_window_dims,
                                 dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                                 dn.scatter_indices_batching_dims)
    sizes, win = [], iter(dn.update_window_dims)
    for a in range(len(operand_shape)):
        if a in dn.inserted_window_dims or a in dn.operand_batching_dims:
            sizes.append(1)
        else:
            sizes.append(updates_shape[next(win)])
    return gdn, tuple(sizes)


def _ew():
    return elementwise


def _full(value, aval_shape, dtype):
    return broadcast_in_dim_p.bind(np.asarray(value, dtype), shape=tuple(aval_shape),
                                   broadcast_dimensions=())


def _is_float(dtype):
    return ad.tangent_aval(ShapedArray((), dtype)).dtype != ad.float0


# ----------------------------------------------------------------- gather

gather_p = Primitive("gather")


def _gather_jvp(primals, tangents, **params):
    out = gather_p.bind(*primals, **params)
    t = tangents[0]
    if type(t) is Zero:
        return out, Zero.from_primal(out)
    return out, gather_p.bind(t, primals[1], **dict(params, fill_value=0))


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes,
                      indices_are_sorted, unique_indices, mode, fill_value):
    aval = operand.aval
    if type(ct) is Zero:
        return [Zero(aval), None]
    zeros = ad.zeros_like_aval(aval)
    if mode == GatherScatterMode.PROMISE_IN_BOUNDS:   # what actually ran: a clamped gather
        mode = GatherScatterMode.CLIP
    return [scatter_add_p.bind(zeros, indices, ct,
                               dimension_numbers=_gather_to_scatter_dn(dimension_numbers),
                               indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode), None]


def _gather_batch(axis_data, vals, dims, *, dimension_numbers, slice_sizes, **params):
    operand, indices = vals
    dn, n = dimension_numbers, axis_data.size
    up = lambda xs: tuple(x + 1 for x in xs)  # noqa: E731
    if dims[1] is None:      # the batch axis of the operand is one more window axis
        operand = moveaxis(operand, dims[0], 0)
        new = GatherDimensionNumbers((0,) + up(dn.offset_dims), up(dn.collapsed_slice_dims),
                                     up(dn.start_index_map), up(dn.operand_batching_dims),
                                     dn.start_indices_batching_dims)
        return gather_p.bind(operand, indices, dimension_numbers=new,
                             slice_sizes=(n,) + tuple(slice_sizes), **params), 0
    indices = moveaxis(indices, dims[1], 0)
    if dims[0] is None:      # one more batch axis of the indices, put first in the output
        new = dn._replace(offset_dims=up(dn.offset_dims),
                          start_indices_batching_dims=up(dn.start_indices_batching_dims))
        return gather_p.bind(operand, indices, dimension_numbers=new, slice_sizes=slice_sizes,
                             **params), 0
    operand = moveaxis(operand, dims[0], 0)
    new = GatherDimensionNumbers(up(dn.offset_dims), up(dn.collapsed_slice_dims),
                                 up(dn.start_index_map), (0,) + up(dn.operand_batching_dims),
                                 (0,) + up(dn.start_indices_batching_dims))
    return gather_p.bind(operand, indices, dimension_numbers=new,
                         slice_sizes=(1,) + tuple(slice_sizes), **params), 0


gather_p.def_abstract_eval(_gather_abstract)
gather_p.def_impl(_gather_impl)
ad.jvp_rules[gather_p] = _gather_jvp
ad.transpose_rules[gather_p] = _gather_transpose
batching.batch_rules[gather_p] = _gather_batch


# ----------------------------------------------------------------- the scatter family


def _scatter_batch_with(prim):
    def rule(axis_data, vals, dims, *, dimension_numbers, **params):
        operand, indices, updates = vals
        dn, n = dimension_numbers, axis_data.size
        up = lambda xs: tuple(x + 1 for x in xs)  # noqa: E731
        operand = bdim_at_front(operand, dims[0], n)
        updates = bdim_at_front(updates, dims[2], n)
        if dims[1] is None:   # the batch axis is one more window axis of operand and updates
            new = ScatterDimensionNumbers((0,) + up(dn.update_window_dims),
                                          up(dn.inserted_window_dims),
                                          up(dn.scatter_dims_to_operand_dims),
                                          up(dn.operand_batching_dims),
                                          dn.scatter_indices_batching_dims)
        else:
            indices = moveaxis(indices, dims[1], 0)
            new = ScatterDimensionNumbers(up(dn.update_window_dims), up(dn.inserted_window_dims),
                                          up(dn.scatter_dims_to_operand_dims),
                                          (0,) + up(dn.operand_batching_dims),
                                          (0,) + up(dn.scatter_indices_batching_dims))
        return prim.bind(operand, indices, updates, dimension_numbers=new, **params), 0
    return rule


def _gather_back(x, indices, updates_aval, dn, mode, fill_value=0):
    """The windows of ``x`` that a scatter with ``dn`` writes (``fill_value`` where dropped)."""
    if mode == GatherScatterMode.PROMISE_IN_BOUNDS:   # what actually ran: a dropping scatter
        mode = GatherScatterMode.FILL_OR_DROP
    gdn, sizes = _scatter_to_gather(dn, core.get_aval(x).shape, updates_aval.shape)
    return gather_p.bind(x, indices, dimension_numbers=gdn, slice_sizes=sizes,
                         indices_are_sorted=False, unique_indices=False, mode=mode,
                         fill_value=fill_value)


def _make_scatter(name, ufunc):
    p = Primitive(name)
    p.def_abstract_eval(lambda *avals, **kw: _scatter_abstract(*avals, name=name, **kw))
    p.def_impl(_scatter_impl_with(ufunc))
    batching.batch_rules[p] = _scatter_batch_with(p)
    return p


scatter_p = _make_scatter("scatter", None)
scatter_add_p = _make_scatter("scatter-add", np.add)
scatter_mul_p = _make_scatter("scatter-mul", np.multiply)
scatter_min_p = _make_scatter("scatter-min", np.minimum)
scatter_max_p = _make_scatter("scatter-max", np.maximum)


# scatter_add: linear in (operand, updates)
def _scatter_add_jvp(primals, tangents, **params):
    out = scatter_add_p.bind(*primals, **params)
    tx, tu = tangents[0], tangents[2]
    if type(tx) is Zero and type(tu) is Zero:
        return out, Zero.from_primal(out)
    return out, scatter_add_p.bind(instantiate(tx), primals[1], instantiate(tu), **params)


def _scatter_add_transpose(ct, operand, indices, updates, *, dimension_numbers, mode, **_):
    uaval = updates.aval if is_undefined_primal(updates) else core.get_aval(updates)
    if type(ct) is Zero:
        return [Zero(operand.aval) if is_undefined_primal(operand) else None, None,
                Zero(uaval) if is_undefined_primal(updates) else None]
    t_x = ct if is_undefined_primal(operand) else None
    t_u = _gather_back(ct, indices, uaval, dimension_numbers, mode) \
        if is_undefined_primal(updates) else None
    return [t_x, None, t_u]


ad.jvp_rules[scatter_add_p] = _scatter_add_jvp
ad.transpose_rules[scatter_add_p] = _scatter_add_transpose


# scatter_mul: out = operand * scatter_mul(ones, i, updates); linear in the operand
def _scatter_mul_jvp(primals, tangents, *, dimension_numbers, unique_indices, mode, **params):
    kw = dict(dimension_numbers=dimension_numbers, unique_indices=unique_indices, mode=mode,
              **params)
    x, i, u = primals
    out = scatter_mul_p.bind(x, i, u, **kw)
    tx, tu = tangents[0], tangents[2]
    if type(tx) is Zero and type(tu) is Zero:
        return out, Zero.from_primal(out)
    t = Zero.from_primal(out) if type(tx) is Zero else scatter_mul_p.bind(tx, i, u, **kw)
    if type(tu) is not Zero:
        if not unique_indices:
            raise NotImplementedError(
                "scatter_mul gradients with respect to the updates are only implemented with "
                "unique_indices=True (as in JAX); pass unique_indices=True if the indices do "
                "not repeat, or differentiate with respect to the operand only")
        # with unique targets: out = x at untouched places, x * u at each written one
        du = scatter_add_p.bind(ad.zeros_like_aval(core.get_aval(x)), i,
                                _ew().mul_p.bind(tu, _gather_back(x, i, core.get_aval(u),
                                                                  dimension_numbers, mode)),
                                **kw)
        t = ad.add_maybe_zero(t, du)
    return out, t


def _scatter_mul_transpose(ct, operand, indices, updates, **params):
    if is_undefined_primal(updates):
        raise NotImplementedError("scatter_mul is not linear in its updates: it cannot be "
                                  "transposed with respect to them")
    if type(ct) is Zero:
        return [Zero(operand.aval), None, None]
    return [scatter_mul_p.bind(ct, indices, updates, **params), None, None]


ad.jvp_rules[scatter_mul_p] = _scatter_mul_jvp
ad.transpose_rules[scatter_mul_p] = _scatter_mul_transpose


# scatter_min / scatter_max: the tangent of the winning value(s); ties share it equally
def _extremal_jvp(prim):
    def rule(primals, tangents, *, dimension_numbers, mode, **params):
        kw = dict(dimension_numbers=dimension_numbers, mode=mode, **params)
        x, i, u = primals
        out = prim.bind(x, i, u, **kw)
        tx, tu = tangents[0], tangents[2]
        aval = core.get_aval(out)
        if (type(tx) is Zero and type(tu) is Zero) or not _is_float(aval.dtype):
            return out, Zero.from_primal(out)
        ew, uaval = _ew(), core.get_aval(u)
        dt = aval.dtype
        zero_x, zero_u = _full(0, aval.shape, dt), _full(0, uaval.shape, dt)
        one_x, one_u = _full(1, aval.shape, dt), _full(1, uaval.shape, dt)
        won_u = ew.eq_p.bind(u, _gather_back(out, i, uaval, dimension_numbers, mode))
        kept_x = ew.eq_p.bind(x, out)
        count = scatter_add_p.bind(ew.select_n_p.bind(kept_x, zero_x, one_x), i,
                                   ew.select_n_p.bind(won_u, zero_u, one_u), **kw)
        count = ew.select_n_p.bind(ew.eq_p.bind(count, zero_x), count, one_x)
        num = zero_x if type(tx) is Zero else ew.select_n_p.bind(kept_x, zero_x, tx)
        if type(tu) is not Zero:
            num = scatter_add_p.bind(num, i, ew.select_n_p.bind(won_u, zero_u, tu), **kw)
        return out, ew.div_p.bind(num, count)
    return rule


ad.jvp_rules[scatter_min_p] = _extremal_jvp(scatter_min_p)
ad.jvp_rules[scatter_max_p] = _extremal_jvp(scatter_max_p)


# scatter (set): with unique indices linear in (operand, updates); otherwise JAX's
# id trick decides which duplicate wins once, for primal and tangent alike
def _scatter_jvp(primals, tangents, *, dimension_numbers, unique_indices, mode, **params):
    kw = dict(dimension_numbers=dimension_numbers, mode=mode, **params)
    x, i, u = primals
    tx, tu = tangents[0], tangents[2]
    if type(tx) is Zero and type(tu) is Zero:
        out = scatter_p.bind(x, i, u, unique_indices=unique_indices, **kw)
        return out, Zero.from_primal(out)
    if unique_indices:
        out = scatter_p.bind(x, i, u, unique_indices=True, **kw)
        return out, scatter_p.bind(instantiate(tx), i, instantiate(tu), unique_indices=True,
                                   **kw)
    ew, xaval, uaval = _ew(), core.get_aval(x), core.get_aval(u)
    if uaval.size == 0:       # nothing is written
        return x, instantiate(tx)
    idt = np.dtype(np.int32) if uaval.size < 2**31 - 1 else np.dtype(np.int64)
    ids = iota_p.bind(dtype=idt, shape=(uaval.size,), dimension=0)
    ids = ew.add_p.bind(ids, _full(1, (uaval.size,), idt))     # 0 stands for the operand
    ids = reshape_p.bind(ids, new_sizes=uaval.shape, dimensions=None)
    won = scatter_p.bind(_full(0, xaval.shape, idt), i, ids, unique_indices=False, **kw)
    kept_x = ew.eq_p.bind(won, _full(0, xaval.shape, idt))
    won_u = ew.eq_p.bind(_gather_back(won, i, uaval, dimension_numbers, mode), ids)

    def combine(a, b):
        a0 = _full(0, xaval.shape, xaval.dtype)
        b0 = _full(0, uaval.shape, uaval.dtype)
        return scatter_add_p.bind(ew.select_n_p.bind(kept_x, a0, a), i,
                                  ew.select_n_p.bind(won_u, b0, b), unique_indices=False, **kw)
    out = combine(x, u)
    tdt = ad.tangent_aval(xaval)
    if tdt.dtype == ad.float0:
        return out, Zero.from_primal(out)
    return out, combine(instantiate(tx), instantiate(tu))


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers, unique_indices,
                       mode, **params):
    if not unique_indices:
        raise NotImplementedError("scatter transpose is only implemented for unique_indices="
                                  "True (the JVP of a non-unique scatter uses scatter_add)")
    uaval = updates.aval if is_undefined_primal(updates) else core.get_aval(updates)
    if type(ct) is Zero:
        return [Zero(operand.aval) if is_undefined_primal(operand) else None, None,
                Zero(uaval) if is_undefined_primal(updates) else None]
    t_x = t_u = None
    if is_undefined_primal(operand):
        t_x = scatter_p.bind(ct, indices, _full(0, uaval.shape, uaval.dtype),
                             dimension_numbers=dimension_numbers, unique_indices=True,
                             mode=mode, **params)
    if is_undefined_primal(updates):
        t_u = _gather_back(ct, indices, uaval, dimension_numbers, mode)
    return [t_x, None, t_u]


ad.jvp_rules[scatter_p] = _scatter_jvp
ad.transpose_rules[scatter_p] = _scatter_transpose


# ================================================================= xform.lax functions


def _operand(x):
    return as_operand(x)


def _checked(prim, *args, **params):
    prim.abstract_eval(*[core.get_aval(a) for a in args], **params)
    return prim.bind(*args, **params)


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, unique_indices=False,
           indices_are_sorted=False, mode=None, fill_value=None):
    """XLA Gather: one window of ``slice_sizes`` per index vector (last axis of the indices)."""
    m = GatherScatterMode.from_any(mode)
    if fill_value is not None:
        fill_value = np.asarray(core.concrete_or_error(fill_value, "gather fill_value"))
        if fill_value.ndim:
            raise ValueError("gather: fill_value must be a scalar")
        fill_value = fill_value.item()
    return _checked(gather_p, _operand(operand), _operand(start_indices),
                    dimension_numbers=_gdn(dimension_numbers),
                    slice_sizes=_tup(slice_sizes), indices_are_sorted=bool(indices_are_sorted),
                    unique_indices=bool(unique_indices), mode=m,
                    fill_value=fill_value if m == GatherScatterMode.FILL_OR_DROP else None)


def _scatter_fn(prim):
    def fn(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
           unique_indices=False, mode=None):
        operand = _operand(operand)
        updates = _operand(updates)
        odt = core.get_aval(operand).dtype
        if core.get_aval(updates).dtype != odt and core.is_weak(updates):
            updates = _to_dtype(updates, odt)
        return _checked(prim, operand, _operand(scatter_indices), updates,
                        dimension_numbers=_sdn(dimension_numbers),
                        indices_are_sorted=bool(indices_are_sorted),
                        unique_indices=bool(unique_indices),
                        mode=GatherScatterMode.from_any(mode))
    fn.__name__ = prim.name.replace("-", "_")
    fn.__doc__ = (f"XLA Scatter combining with {prim.name.split('-')[-1]}: write one window of "
                  "``updates`` per index vector of ``scatter_indices``.")
    return fn


scatter = _scatter_fn(scatter_p)
scatter_add = _scatter_fn(scatter_add_p)
scatter_mul = _scatter_fn(scatter_mul_p)
scatter_min = _scatter_fn(scatter_min_p)
scatter_max = _scatter_fn(scatter_max_p)

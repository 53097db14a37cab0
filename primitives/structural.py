"""Shape and structure primitives: broadcast, reshape, transpose, squeeze, rev,
concatenate, pad, slice, dynamic_slice, dynamic_update_slice, iota.

All are linear in their array operands (iota has none), so each block is: a
shape rule that names the offending shapes, a NumPy reference, the transpose
(the JVP is the primitive applied to the tangent), and a batching rule that
moves the batch axis to the front and prepends a trivial entry to the params.
Static params are tuples of Python ints; scalars are converted to Arrays by the
``xform.lax`` functions before binding.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from xform._src.interpreters import ad, batching, core, dtypes, ir, passes
from xform._src.interpreters.ad import Zero, instantiate, is_undefined_primal
from xform._src.interpreters.core import Primitive, ShapedArray
from xform._src.primitives._rules import bdim_at_front, deflinear, moveaxis
from xform._src.primitives import elementwise

__all__ = [
    "broadcast_in_dim", "broadcast", "reshape", "transpose", "squeeze", "expand_dims", "rev",
    "concatenate", "pad", "slice", "dynamic_slice", "dynamic_update_slice", "iota",
    "broadcasted_iota", "full", "full_like", "index_in_dim", "slice_in_dim",
    "dynamic_slice_in_dim", "dynamic_update_slice_in_dim", "dynamic_index_in_dim",
    "dynamic_update_index_in_dim", "broadcast_to_rank", "split",
]

# ----------------------------------------------------------------- shared helpers


_pyslice = builtins.slice  # ``slice`` below is lax.slice


def _ints(xs, name, what):
    """Static int tuple (rejects traced values and floats with a clear message)."""
    try:
        return tuple(operator.index(x) for x in xs)
    except TypeError:
        raise TypeError(f"{name}: {what} must be a sequence of Python integers, "
                        f"got {xs!r}") from None


def _shape_str(a):
    return a.str_short()



def canonicalize_axis(axis, ndim, name="axis"):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name} {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim if ndim else axis


def as_operand(x, dtype=None):
    """Arrays and tracers pass through; Python/NumPy values become Arrays of ``dtype``."""
    if isinstance(x, (core.Tracer, core.Array)):
        return x
    weak = type(x) in (int, float, complex) and dtype is None
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else core.get_aval(x).dtype
    return core.Array(np.asarray(x, dt), weak)


def _ew():
    return elementwise


def _reductions():
    from xform._src.primitives import reductions  # deferred: import cycle
    return reductions


def _to_dtype(x, dtype):
    """Convert with the elementwise family's convert_element_type (lazily imported)."""
    if core.get_aval(x).dtype == np.dtype(dtype):
        return x
    return _ew().convert_element_type_p.bind(x, new_dtype=np.dtype(dtype), weak_type=False)


def _phys(i, d):
    """Physical axis of logical axis ``i`` of a value batched at ``d``."""
    return i if d is None or i < d else i + 1


# ----------------------------------------------------------------- broadcast_in_dim

broadcast_in_dim_p = Primitive("broadcast_in_dim")


def _pp_broadcast_in_dim(eqn, names):
    p = dict(eqn.params)
    if not p.get("broadcast_dimensions"):
        p.pop("broadcast_dimensions", None)
    p.pop("shape", None)
    p.pop("sharding", None)
    return sorted(p.items())


ir.pp_rules[broadcast_in_dim_p] = _pp_broadcast_in_dim
passes.forwarding_rules[broadcast_in_dim_p] = passes.identity_when_same_type(
    lambda p: True)


def check_broadcast_in_dim(x, shape, bd):
    """JAX's broadcast_in_dim shape checks, in its order and words (``bd`` in any order)."""
    if len(bd) != x.ndim:
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must have length equal to "
                        f"operand ndim; got broadcast_dimensions {bd} for operand ndim "
                        f"{x.ndim}.")
    if len(shape) < x.ndim:
        raise TypeError(f"broadcast_in_dim target broadcast shape must have equal or higher "
                        f"rank to the operand shape; got operand ndim {x.ndim} and target "
                        f"broadcast ndim {len(shape)}.")
    if any(not 0 <= b < len(shape) for b in bd):
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must be a subset of output "
                        f"dimensions, got {bd} for operand ndim {x.ndim} and shape {shape}.")
    if any(x.shape[i] not in (1, shape[b]) for i, b in enumerate(bd)):
        raise TypeError(f"broadcast_in_dim operand dimension sizes must either be 1, or be "
                        f"equal to their corresponding dimensions in the target broadcast "
                        f"shape; got operand of shape {tuple(x.shape)}, target broadcast shape "
                        f"{shape}, broadcast_dimensions {bd} ")
    if len(set(bd)) != len(bd):
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must not contain duplicates, "
                        f"got broadcast_dimensions {bd}")


def _bid_abstract(x, *, shape, broadcast_dimensions):
    bd = broadcast_dimensions
    if any(s < 0 for s in shape):
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                        f"{shape}.")
    check_broadcast_in_dim(x, shape, bd)
    # The primitive keeps its dimensions sorted (lax.broadcast_in_dim transposes first).
    if any(b1 >= b2 for b1, b2 in zip(bd, bd[1:])):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {bd} must be strictly "
                        "increasing")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _bid_impl(x, *, shape, broadcast_dimensions):
    x = np.asarray(x)
    expanded = [1] * len(shape)
    for i, b in enumerate(broadcast_dimensions):
        expanded[b] = x.shape[i]
    return np.array(np.broadcast_to(x.reshape(expanded), shape))


def _bid_transpose(ct, x, *, shape, broadcast_dimensions):
    bd = broadcast_dimensions
    in_shape = x.aval.shape
    summed = tuple(i for i in range(len(shape)) if i not in bd)
    kept_ones = tuple(b for i, b in enumerate(bd) if in_shape[i] == 1 and shape[b] != 1)
    axes = tuple(sorted(summed + kept_ones))
    out = _reductions().reduce_sum_p.bind(ct, axes=axes) if axes else ct
    if core.get_aval(out).shape != in_shape:
        out = reshape_p.bind(out, new_sizes=in_shape, dimensions=None)
    return [out]


def _bid_batch(axis_data, vals, dims, *, shape, broadcast_dimensions):
    x = moveaxis(vals[0], dims[0], 0)
    n = core.get_aval(x).shape[0]
    return broadcast_in_dim_p.bind(
        x, shape=(n,) + shape,
        broadcast_dimensions=(0,) + tuple(b + 1 for b in broadcast_dimensions)), 0


broadcast_in_dim_p.def_abstract_eval(_bid_abstract)
broadcast_in_dim_p.def_impl(_bid_impl)
deflinear(broadcast_in_dim_p, _bid_transpose)
batching.batch_rules[broadcast_in_dim_p] = _bid_batch

# ----------------------------------------------------------------- reshape

reshape_p = Primitive("reshape")
ir.pp_rules[reshape_p] = ir.pp_with_defaults(sharding=None)
passes.forwarding_rules[reshape_p] = passes.identity_when_same_type(
    lambda p: p.get("dimensions") is None)


def _reshape_abstract(x, *, new_sizes, dimensions):
    if any(d < 0 for d in new_sizes):
        raise TypeError(f"reshape: new_sizes {new_sizes} must be non-negative")
    if dimensions is not None and sorted(dimensions) != list(range(x.ndim)):
        raise TypeError(f"reshape: dimensions {dimensions} must be a permutation of the operand "
                        f"dimensions of {_shape_str(x)}")
    n = int(np.prod(new_sizes, dtype=np.int64))
    if n != x.size:
        raise TypeError(f"reshape: cannot reshape {_shape_str(x)} ({x.size} elements) into "
                        f"{tuple(new_sizes)} ({n} elements)")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_impl(x, *, new_sizes, dimensions):
    x = np.asarray(x)
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return np.reshape(x, new_sizes)


def _reshape_transpose(ct, x, *, new_sizes, dimensions):
    shape = x.aval.shape
    if dimensions is None:
        return [reshape_p.bind(ct, new_sizes=shape, dimensions=None)]
    t = reshape_p.bind(ct, new_sizes=tuple(shape[d] for d in dimensions), dimensions=None)
    return [transpose_p.bind(t, permutation=tuple(np.argsort(dimensions).tolist()))]


def _reshape_batch(axis_data, vals, dims, *, new_sizes, dimensions):
    x = moveaxis(vals[0], dims[0], 0)
    n = core.get_aval(x).shape[0]
    dims2 = None if dimensions is None else (0,) + tuple(d + 1 for d in dimensions)
    return reshape_p.bind(x, new_sizes=(n,) + new_sizes, dimensions=dims2), 0


reshape_p.def_abstract_eval(_reshape_abstract)
reshape_p.def_impl(_reshape_impl)
deflinear(reshape_p, _reshape_transpose)
batching.batch_rules[reshape_p] = _reshape_batch

# ----------------------------------------------------------------- transpose

transpose_p = Primitive("transpose")
passes.forwarding_rules[transpose_p] = passes.identity_when_same_type(
    lambda p: tuple(p["permutation"]) == tuple(range(len(p["permutation"]))))


def _transpose_abstract(x, *, permutation):
    if tuple(sorted(permutation)) != tuple(range(x.ndim)):
        raise TypeError(f"transpose: permutation {permutation} is not a permutation of the "
                        f"dimensions of operand {_shape_str(x)}")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


def _transpose_batch(axis_data, vals, dims, *, permutation):
    d = dims[0]
    perm = (d,) + tuple(_phys(p, d) for p in permutation)
    return transpose_p.bind(vals[0], permutation=perm), 0


transpose_p.def_abstract_eval(_transpose_abstract)
transpose_p.def_impl(lambda x, *, permutation: np.transpose(x, permutation))
deflinear(transpose_p, lambda ct, x, *, permutation: [
    transpose_p.bind(ct, permutation=tuple(np.argsort(permutation).tolist()))])
batching.batch_rules[transpose_p] = _transpose_batch

# ----------------------------------------------------------------- squeeze

squeeze_p = Primitive("squeeze")
passes.forwarding_rules[squeeze_p] = passes.identity_when_same_type(
    lambda p: tuple(p.get("dimensions", ())) == ())


def _squeeze_abstract(x, *, dimensions):
    if len(set(dimensions)) != len(dimensions):
        raise ValueError(f"dimensions are not unique: {dimensions}")
    if not all(0 <= d < x.ndim for d in dimensions):
        raise ValueError(f"dimensions outside range [0, ndim): {dimensions}")
    if any(x.shape[d] != 1 for d in dimensions):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to "
                         f"one, got shape={tuple(x.shape)} and dimensions={dimensions}")
    shape = tuple(s for i, s in enumerate(x.shape) if i not in dimensions)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _squeeze_batch(axis_data, vals, dims, *, dimensions):
    d = dims[0]
    new = tuple(_phys(i, d) for i in dimensions)
    return squeeze_p.bind(vals[0], dimensions=new), d - sum(1 for i in new if i < d)


squeeze_p.def_abstract_eval(_squeeze_abstract)
squeeze_p.def_impl(lambda x, *, dimensions: np.reshape(
    x, tuple(s for i, s in enumerate(np.shape(x)) if i not in dimensions)))
deflinear(squeeze_p, lambda ct, x, *, dimensions: [
    reshape_p.bind(ct, new_sizes=x.aval.shape, dimensions=None)])
batching.batch_rules[squeeze_p] = _squeeze_batch

# ----------------------------------------------------------------- rev

rev_p = Primitive("rev")
passes.forwarding_rules[rev_p] = passes.identity_when_same_type(
    lambda p: tuple(p.get("dimensions", ())) == ())


def _rev_abstract(x, *, dimensions):
    if len(set(dimensions)) != len(dimensions) or any(not 0 <= d < x.ndim for d in dimensions):
        raise ValueError(f"rev: dimensions {dimensions} must be unique axes of operand "
                         f"{_shape_str(x)}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


rev_p.def_abstract_eval(_rev_abstract)
rev_p.def_impl(lambda x, *, dimensions: np.flip(x, dimensions) if dimensions else np.asarray(x))
deflinear(rev_p, lambda ct, x, *, dimensions: [rev_p.bind(ct, dimensions=dimensions)])
batching.batch_rules[rev_p] = lambda ad_, vals, dims, *, dimensions: (
    rev_p.bind(vals[0], dimensions=tuple(_phys(i, dims[0]) for i in dimensions)), dims[0])

# ----------------------------------------------------------------- concatenate

concatenate_p = Primitive("concatenate")


def _concat_abstract(*xs, dimension):
    if not xs:
        raise ValueError("concatenate: expected at least one operand")
    x0 = xs[0]
    if not 0 <= dimension < max(x0.ndim, 1) or x0.ndim == 0:
        raise ValueError(f"concatenate: dimension {dimension} is out of bounds for operands of "
                         f"shape {x0.shape}" + (" (0-d arrays cannot be concatenated)"
                                                if x0.ndim == 0 else ""))
    for x in xs[1:]:
        if x.dtype != x0.dtype:
            raise TypeError("concatenate: operands must have equal dtypes, got "
                            + ", ".join(_shape_str(a) for a in xs))
        if x.ndim != x0.ndim:
            raise TypeError("concatenate: operands must have equal ranks, got "
                            + ", ".join(_shape_str(a) for a in xs))
        if any(a != b for i, (a, b) in enumerate(zip(x.shape, x0.shape)) if i != dimension):
            raise TypeError(f"concatenate: operand shapes {x0.shape} and {x.shape} differ "
                            f"outside dimension {dimension}")
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, x0.dtype, all(x.weak_type for x in xs))


def _concat_jvp(primals, tangents, *, dimension):
    out = concatenate_p.bind(*primals, dimension=dimension)
    if all(type(t) is Zero for t in tangents):
        return out, Zero.from_primal(out)
    return out, concatenate_p.bind(*[instantiate(t) for t in tangents], dimension=dimension)


def _concat_transpose(ct, *xs, dimension):
    cts, start = [], 0
    nd = core.get_aval(ct).ndim
    for x in xs:
        shape = x.aval.shape if is_undefined_primal(x) else core.get_aval(x).shape
        size = shape[dimension]
        if is_undefined_primal(x):
            starts = tuple(start if i == dimension else 0 for i in range(nd))
            limits = tuple(start + size if i == dimension else s for i, s in enumerate(shape))
            cts.append(slice_p.bind(ct, start_indices=starts, limit_indices=limits, strides=None))
        else:
            cts.append(None)
        start += size
    return cts


def _concat_batch(axis_data, vals, dims, *, dimension):
    vals = [bdim_at_front(v, d, axis_data.size) for v, d in zip(vals, dims)]
    return concatenate_p.bind(*vals, dimension=dimension + 1), 0


concatenate_p.def_abstract_eval(_concat_abstract)
concatenate_p.def_impl(lambda *xs, dimension: np.concatenate(xs, axis=dimension))
ad.jvp_rules[concatenate_p] = _concat_jvp
ad.transpose_rules[concatenate_p] = _concat_transpose
batching.batch_rules[concatenate_p] = _concat_batch

# ----------------------------------------------------------------- pad

pad_p = Primitive("pad")


def _pad_abstract(x, pv, *, padding_config):
    # JAX's shape rule (ValueError), then its dtype rule (TypeError), in its words
    if pv.shape != ():
        raise ValueError(f"padding_value must be a scalar; got np.shape(padding_value)="
                         f"{tuple(pv.shape)}")
    if len(padding_config) != x.ndim:
        raise ValueError(f"length of padding_config must equal the number of axes of operand, "
                         f"got padding_config {padding_config} for operand shape "
                         f"{tuple(x.shape)}")
    if not all(i >= 0 for _, _, i in padding_config):
        raise ValueError(f"interior padding in padding_config must be nonnegative, got "
                         f"padding_config {padding_config}")
    shape = tuple(lo + hi + d + max(d - 1, 0) * interior
                  for d, (lo, hi, interior) in zip(x.shape, padding_config))
    if any(n < 0 for n in shape):
        raise ValueError(f"Dimension size after padding is not at least 0, got result shape "
                         f"{shape}, for padding_config {padding_config} and operand shape "
                         f"{tuple(x.shape)}")
    if pv.dtype != x.dtype:
        raise TypeError(f"pad operand and padding_value must be same dtype: got {x.dtype} and "
                        f"{pv.dtype}.")
    return ShapedArray(shape, x.dtype, x.weak_type and pv.weak_type)


def _pad_impl(x, pv, *, padding_config):
    x = np.asarray(x)
    big = [max(lo, 0) + max(hi, 0) + d + max(d - 1, 0) * it
           for d, (lo, hi, it) in zip(x.shape, padding_config)]
    out = np.full(big, pv, dtype=x.dtype)
    out[tuple(_pyslice(max(lo, 0), max(lo, 0) + (d - 1) * (it + 1) + 1 if d else max(lo, 0), it + 1)
              for d, (lo, hi, it) in zip(x.shape, padding_config))] = x
    return out[tuple(_pyslice(-min(lo, 0), n + min(hi, 0))
                     for n, (lo, hi, _) in zip(big, padding_config))].copy()


def _pad_jvp(primals, tangents, *, padding_config):
    out = pad_p.bind(*primals, padding_config=padding_config)
    if all(type(t) is Zero for t in tangents):
        return out, Zero.from_primal(out)
    return out, pad_p.bind(*[instantiate(t) for t in tangents], padding_config=padding_config)


def _pad_transpose(ct, x, pv, *, padding_config):
    aval = x.aval if is_undefined_primal(x) else core.get_aval(x)
    zero = np.zeros((), aval.dtype)
    unpadded = pad_p.bind(ct, zero, padding_config=tuple((-lo, -hi, 0)
                                                        for lo, hi, _ in padding_config))
    nd = aval.ndim
    t_x = slice_p.bind(unpadded, start_indices=(0,) * nd,
                       limit_indices=core.get_aval(unpadded).shape,
                       strides=tuple(it + 1 for _, _, it in padding_config))
    t_pv = None
    if is_undefined_primal(pv):
        r = _reductions().reduce_sum_p
        axes = tuple(range(nd))
        total, inner = r.bind(ct, axes=axes), r.bind(t_x, axes=axes)
        t_pv = _ew().add_p.bind(total, _ew().neg_p.bind(inner))
    return [t_x if is_undefined_primal(x) else None, t_pv]


def _pad_batch(axis_data, vals, dims, *, padding_config):
    x, pv = vals
    dx, dpv = dims
    cfg = ((0, 0, 0),) + padding_config
    if dpv is None:
        return pad_p.bind(moveaxis(x, dx, 0), pv, padding_config=cfg), 0
    # Batched padding value: pad a mask and select (no Python loop over the batch).
    n = axis_data.size
    x = bdim_at_front(x, dx, n)
    aval = core.get_aval(x)
    padded = pad_p.bind(x, np.zeros((), aval.dtype), padding_config=cfg)
    mask = pad_p.bind(broadcast_in_dim_p.bind(np.array(True), shape=aval.shape,
                                              broadcast_dimensions=()),
                      np.array(False), padding_config=cfg)
    out_shape = core.get_aval(padded).shape
    pvb = broadcast_in_dim_p.bind(moveaxis(pv, dpv, 0), shape=out_shape,
                                  broadcast_dimensions=(0,))
    return _ew().select_n_p.bind(mask, pvb, padded), 0


pad_p.def_abstract_eval(_pad_abstract)
pad_p.def_impl(_pad_impl)
ad.jvp_rules[pad_p] = _pad_jvp
ad.transpose_rules[pad_p] = _pad_transpose
batching.batch_rules[pad_p] = _pad_batch

# ----------------------------------------------------------------- slice

slice_p = Primitive("slice")


def _slice_abstract(x, *, start_indices, limit_indices, strides):
    n = x.ndim
    if len(start_indices) != n or len(limit_indices) != n or (strides is not None
                                                               and len(strides) != n):
        raise TypeError(f"slice: start_indices {start_indices}, limit_indices {limit_indices} "
                        f"and strides {strides} must each have one entry per dimension of "
                        f"operand {_shape_str(x)}")
    strides = strides or (1,) * n
    shape = []
    for d, s, l, st in zip(x.shape, start_indices, limit_indices, strides):
        if not 0 <= s <= l <= d:
            raise TypeError(f"slice: start_indices {start_indices} and limit_indices "
                            f"{limit_indices} must satisfy 0 <= start <= limit <= dim for "
                            f"operand {_shape_str(x)}")
        if st < 1:
            raise TypeError(f"slice: strides {strides} must be positive")
        shape.append(-(-(l - s) // st))
    return ShapedArray(shape, x.dtype, x.weak_type)


def _slice_impl(x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * len(start_indices)
    return np.asarray(x)[tuple(_pyslice(s, l, st) for s, l, st in
                               zip(start_indices, limit_indices, strides))].copy()


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    shape = x.aval.shape
    strides = strides or (1,) * len(shape)
    out = core.get_aval(ct).shape
    cfg = tuple((s, d - (s + (o - 1) * st + 1) if o else d - s, st - 1)
                for d, s, o, st in zip(shape, start_indices, out, strides))
    return [pad_p.bind(ct, np.zeros((), x.aval.dtype), padding_config=cfg)]


def _slice_batch(axis_data, vals, dims, *, start_indices, limit_indices, strides):
    x, d = vals[0], dims[0]
    n = core.get_aval(x).shape[d]
    ins = lambda t, v: t[:d] + (v,) + t[d:]
    return slice_p.bind(x, start_indices=ins(start_indices, 0),
                        limit_indices=ins(limit_indices, n),
                        strides=None if strides is None else ins(strides, 1)), d


slice_p.def_abstract_eval(_slice_abstract)
slice_p.def_impl(_slice_impl)
deflinear(slice_p, _slice_transpose)
batching.batch_rules[slice_p] = _slice_batch

# ----------------------------------------------------------------- dynamic_slice


def _check_indices(name, x, idxs):
    if len(idxs) != x.ndim:
        raise TypeError(f"{name}: got {len(idxs)} start indices for operand {_shape_str(x)} of "
                        f"rank {x.ndim}; pass one scalar index per dimension")
    for i in idxs:
        if i.shape != () or not dtypes.is_integer(i.dtype):
            raise TypeError(f"{name}: start indices must be integer scalars, got "
                            + ", ".join(_shape_str(a) for a in idxs))


def _clamped(idxs, shape, sizes):
    return tuple(int(np.clip(int(i), 0, d - s)) for i, d, s in zip(idxs, shape, sizes))


dynamic_slice_p = Primitive("dynamic_slice")


def _ds_abstract(x, *idxs, slice_sizes):
    _check_indices("dynamic_slice", x, idxs)
    if len(slice_sizes) != x.ndim or any(not 0 <= s <= d for s, d in zip(slice_sizes, x.shape)):
        raise TypeError(f"dynamic_slice: slice_sizes {slice_sizes} must have one entry per "
                        f"dimension of operand {_shape_str(x)}, each between 0 and that dimension")
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


def _ds_impl(x, *idxs, slice_sizes):
    x = np.asarray(x)
    st = _clamped(idxs, x.shape, slice_sizes)
    return x[tuple(_pyslice(s, s + n) for s, n in zip(st, slice_sizes))].copy()


def _ds_jvp(primals, tangents, *, slice_sizes):
    out = dynamic_slice_p.bind(*primals, slice_sizes=slice_sizes)
    if type(tangents[0]) is Zero:
        return out, Zero.from_primal(out)
    return out, dynamic_slice_p.bind(tangents[0], *primals[1:], slice_sizes=slice_sizes)


def _ds_transpose(ct, x, *idxs, slice_sizes):
    zeros = ad.zeros_like_aval(x.aval)
    return [dynamic_update_slice_p.bind(zeros, ct, *idxs)] + [None] * len(idxs)


def _batched_starts(axis_data, idxs, idims, shape, sizes):
    """Per-example start indices, each a (size,) array clamped into range like XLA."""
    ew, n = _ew(), axis_data.size
    out = []
    for i, d, dim, sz in zip(idxs, idims, shape, sizes):
        dt = core.get_aval(i).dtype
        i = bdim_at_front(i, d, n)
        hi = broadcast_in_dim_p.bind(np.asarray(dim - sz, dt), shape=(n,), broadcast_dimensions=())
        lo = broadcast_in_dim_p.bind(np.zeros((), dt), shape=(n,), broadcast_dimensions=())
        out.append(ew.max_p.bind(ew.min_p.bind(i, hi), lo))
    return out


def _shift_by(x, start, axis, max_shift, left):
    """Shift each example of ``x`` (batch at 0) by its own ``start[b]`` along ``axis``:
    ``y[b, i] = x[b, i + start[b]]`` (``left``) or ``x[b, i - start[b]]``; vacated
    positions are zeros.  One select per bit of the shift: log-depth, no loop over b."""
    ew = _ew()
    a = core.get_aval(x)
    dt = core.get_aval(start).dtype
    one, zero = np.ones((a.shape[0],), dt), np.zeros((a.shape[0],), dt)
    bit = 0
    while (1 << bit) <= max_shift:
        k = 1 << bit
        cfg = tuple(((-k, k, 0) if left else (k, -k, 0)) if j == axis else (0, 0, 0)
                    for j in range(a.ndim))
        moved = pad_p.bind(x, np.zeros((), a.dtype), padding_config=cfg)
        bits = ew.and_p.bind(ew.shift_right_logical_p.bind(start, np.full_like(one, bit)), one)
        pred = broadcast_in_dim_p.bind(ew.ne_p.bind(bits, zero), shape=a.shape,
                                       broadcast_dimensions=(0,))
        x = ew.select_n_p.bind(pred, x, moved)
        bit += 1
    return x


def _ds_batched_indices(axis_data, vals, dims, slice_sizes):
    x = bdim_at_front(vals[0], dims[0], axis_data.size)
    shape = core.get_aval(x).shape[1:]
    starts = _batched_starts(axis_data, vals[1:], dims[1:], shape, slice_sizes)
    for k, (s, d, sz) in enumerate(zip(starts, shape, slice_sizes)):
        x = _shift_by(x, s, k + 1, d - sz, left=True)
    return slice_p.bind(x, start_indices=(0,) * (len(shape) + 1),
                        limit_indices=(axis_data.size,) + tuple(slice_sizes), strides=None), 0


def _dus_batched_indices(axis_data, vals, dims):
    n = axis_data.size
    x = bdim_at_front(vals[0], dims[0], n)
    u = bdim_at_front(vals[1], dims[1], n)
    shape, ushape = core.get_aval(x).shape[1:], core.get_aval(u).shape[1:]
    starts = _batched_starts(axis_data, vals[2:], dims[2:], shape, ushape)
    cfg = ((0, 0, 0),) + tuple((0, d - s, 0) for d, s in zip(shape, ushape))
    u = pad_p.bind(u, np.zeros((), core.get_aval(u).dtype), padding_config=cfg)
    mask = broadcast_in_dim_p.bind(np.array(True), shape=(n,) + ushape, broadcast_dimensions=())
    mask = pad_p.bind(mask, np.array(False), padding_config=cfg)
    for k, (s, d, sz) in enumerate(zip(starts, shape, ushape)):
        u = _shift_by(u, s, k + 1, d - sz, left=False)
        mask = _shift_by(mask, s, k + 1, d - sz, left=False)
    return _ew().select_n_p.bind(mask, x, u), 0


def _ds_batch(axis_data, vals, dims, *, slice_sizes):
    x, idxs = vals[0], vals[1:]
    if all(d is None for d in dims[1:]):
        d = dims[0]
        n = core.get_aval(x).shape[d]
        zero = np.zeros((), core.get_aval(idxs[0]).dtype if idxs else np.int32)
        idxs = list(idxs)
        idxs.insert(d, zero)
        return dynamic_slice_p.bind(x, *idxs, slice_sizes=slice_sizes[:d] + (n,)
                                    + slice_sizes[d:]), d
    return _ds_batched_indices(axis_data, vals, dims, slice_sizes)


dynamic_slice_p.def_abstract_eval(_ds_abstract)
dynamic_slice_p.def_impl(_ds_impl)
ad.jvp_rules[dynamic_slice_p] = _ds_jvp
ad.transpose_rules[dynamic_slice_p] = _ds_transpose
batching.batch_rules[dynamic_slice_p] = _ds_batch

# ----------------------------------------------------------------- dynamic_update_slice

dynamic_update_slice_p = Primitive("dynamic_update_slice")


def _dus_abstract(x, upd, *idxs):
    _check_indices("dynamic_update_slice", x, idxs)
    if upd.dtype != x.dtype:
        raise TypeError(f"dynamic_update_slice: update {_shape_str(upd)} must have the dtype of "
                        f"operand {_shape_str(x)}")
    if upd.ndim != x.ndim or any(u > d for u, d in zip(upd.shape, x.shape)):
        raise TypeError(f"dynamic_update_slice: update {_shape_str(upd)} must have the rank of "
                        f"operand {_shape_str(x)} and fit inside it")
    return ShapedArray(x.shape, x.dtype, x.weak_type and upd.weak_type)


def _dus_impl(x, upd, *idxs):
    out = np.array(x)
    upd = np.asarray(upd)
    st = _clamped(idxs, out.shape, upd.shape)
    out[tuple(_pyslice(s, s + n) for s, n in zip(st, upd.shape))] = upd
    return out


def _dus_jvp(primals, tangents, **_):
    out = dynamic_update_slice_p.bind(*primals)
    tx, tu = tangents[:2]
    if type(tx) is Zero and type(tu) is Zero:
        return out, Zero.from_primal(out)
    return out, dynamic_update_slice_p.bind(instantiate(tx), instantiate(tu), *primals[2:])


def _dus_transpose(ct, x, upd, *idxs):
    uaval = upd.aval if is_undefined_primal(upd) else core.get_aval(upd)
    t_x = t_u = None
    if is_undefined_primal(x):
        t_x = dynamic_update_slice_p.bind(ct, ad.zeros_like_aval(uaval), *idxs)
    if is_undefined_primal(upd):
        t_u = dynamic_slice_p.bind(ct, *idxs, slice_sizes=uaval.shape)
    return [t_x, t_u] + [None] * len(idxs)


def _dus_batch(axis_data, vals, dims):
    if all(d is None for d in dims[2:]):
        n = axis_data.size
        x = bdim_at_front(vals[0], dims[0], n)
        u = bdim_at_front(vals[1], dims[1], n)
        idxs = vals[2:]
        zero = np.zeros((), core.get_aval(idxs[0]).dtype if idxs else np.int32)
        return dynamic_update_slice_p.bind(x, u, zero, *idxs), 0
    return _dus_batched_indices(axis_data, vals, dims)


dynamic_update_slice_p.def_abstract_eval(_dus_abstract)
dynamic_update_slice_p.def_impl(_dus_impl)
ad.jvp_rules[dynamic_update_slice_p] = _dus_jvp
ad.transpose_rules[dynamic_update_slice_p] = _dus_transpose
batching.batch_rules[dynamic_update_slice_p] = _dus_batch

# ----------------------------------------------------------------- iota

iota_p = Primitive("iota")
iota_p.missing_rules["batching"] = "it has no operands, so nothing of it is ever batched"
ir.pp_rules[iota_p] = ir.pp_with_defaults(sharding=None)


def _iota_abstract(*, dtype, shape, dimension):
    if not 0 <= dimension < len(shape):
        raise ValueError(f"iota: dimension {dimension} is out of range for shape {shape}")
    if any(s < 0 for s in shape):
        raise ValueError(f"iota: negative dimension in shape {shape}")
    if not (dtypes.is_integer(dtype) or dtypes.is_inexact(dtype)):
        raise TypeError(f"iota: dtype must be an integer or floating dtype, got {dtype}")
    return ShapedArray(shape, dtype, False)


def _iota_impl(*, dtype, shape, dimension):
    r = np.arange(shape[dimension]).astype(dtype)
    return np.array(np.broadcast_to(
        r.reshape([-1 if i == dimension else 1 for i in range(len(shape))]), shape))


iota_p.def_abstract_eval(_iota_abstract)
iota_p.def_impl(_iota_impl)
ad.jvp_rules[iota_p] = lambda primals, tangents, **p: (
    iota_p.bind(**p), Zero(ShapedArray(p["shape"], p["dtype"])))

# ================================================================= xform.lax functions


def broadcast_in_dim(operand, shape, broadcast_dimensions, out_sharding=None):
    """Broadcast ``operand`` into ``shape``; its axis i goes to ``broadcast_dimensions[i]``."""
    operand = as_operand(operand)
    shape = _ints(shape, "broadcast_in_dim", "shape")
    bd = _ints(broadcast_dimensions, "broadcast_in_dim", "broadcast_dimensions")
    a = core.get_aval(operand)
    if a.shape == shape and bd == tuple(range(a.ndim)):
        return operand
    if any(b1 >= b2 for b1, b2 in zip(bd, bd[1:])):
        # JAX accepts the operand's axes in any order: transpose them into target order
        if any(sz < 0 for sz in shape):
            raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, "
                            f"got {shape}.")
        check_broadcast_in_dim(a, shape, bd)
        perm = tuple(sorted(range(len(bd)), key=lambda i: bd[i]))
        operand, bd = transpose(operand, perm), tuple(sorted(bd))
    return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=bd)


def broadcast(operand, sizes, out_sharding=None):
    """Prepend the dimensions ``sizes`` to ``operand``'s shape."""
    operand = as_operand(operand)
    sizes = _ints(sizes, "broadcast", "sizes")
    nd = core.get_aval(operand).ndim
    return broadcast_in_dim(operand, sizes + core.get_aval(operand).shape,
                            tuple(range(len(sizes), len(sizes) + nd)))


def broadcast_to_rank(x, rank):
    """Prepend unit dimensions until ``x`` has rank ``rank``."""
    x = as_operand(x)
    nd = core.get_aval(x).ndim
    if nd >= rank:
        return x
    return broadcast(x, (1,) * (rank - nd))


def reshape(operand, new_sizes, dimensions=None, out_sharding=None):
    """Reshape (after transposing by ``dimensions`` if given), as ``lax.reshape``."""
    operand = as_operand(operand)
    if not isinstance(new_sizes, (tuple, list)) and np.ndim(new_sizes) == 0:
        new_sizes = (new_sizes,)
    try:
        new_sizes = tuple(operator.index(d) for d in new_sizes)
    except TypeError:
        msg = (f"Shapes must be 1D sequences of concrete values of integer type, got "
               f"{tuple(new_sizes)}.")
        if any(isinstance(d, core.Tracer) for d in new_sizes):
            msg += ("\nIf using `jit`, try using `static_argnums` or applying `jit` to "
                    "smaller subfunctions.")
        raise TypeError(msg) from None
    a = core.get_aval(operand)
    dims = None if dimensions is None else _ints(dimensions, "reshape", "dimensions")
    if dims is not None and dims == tuple(range(a.ndim)):
        dims = None
    if dims is None and new_sizes == a.shape:
        return operand
    return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=dims)


def transpose(operand, permutation):
    operand = as_operand(operand)
    perm = _ints(permutation, "transpose", "permutation")
    if perm == tuple(range(core.get_aval(operand).ndim)):
        return operand
    return transpose_p.bind(operand, permutation=perm)


def squeeze(array, dimensions):
    array = as_operand(array)
    nd = core.get_aval(array).ndim
    dims = []
    for d in dimensions:
        d = operator.index(d)       # JAX's TypeError for a non-integer
        if not -nd <= d < nd:
            raise ValueError(f"axis {d} is out of bounds for array of dimension {nd}")
        dims.append(d % nd)
    dims = tuple(sorted(dims))       # repeats are the shape rule's error, as in JAX
    if not dims:
        return array
    return squeeze_p.bind(array, dimensions=dims)


def expand_dims(array, dimensions):
    """Insert unit axes at ``dimensions`` (positions in the result)."""
    array = as_operand(array)
    a = core.get_aval(array)
    out_nd = a.ndim + len(dimensions)
    dims = sorted(canonicalize_axis(d, out_nd, "expand_dims: dimension")
                  for d in _ints(dimensions, "expand_dims", "dimensions"))
    if len(set(dims)) != len(dims):
        raise ValueError(f"expand_dims: repeated dimension in {tuple(dimensions)}")
    shape = list(a.shape)
    for d in dims:
        shape.insert(d, 1)
    kept = tuple(i for i in range(out_nd) if i not in dims)
    return broadcast_in_dim_p.bind(array, shape=tuple(shape), broadcast_dimensions=kept)


def rev(operand, dimensions):
    operand = as_operand(operand)
    return rev_p.bind(operand, dimensions=_ints(dimensions, "rev", "dimensions"))


def concatenate(operands, dimension):
    """Concatenate a sequence of arrays along ``dimension``."""
    operands = [as_operand(o) for o in operands]
    if not operands:
        raise ValueError("concatenate: expected at least one operand")
    nd = core.get_aval(operands[0]).ndim
    dim = operator.index(dimension)
    if nd and -nd <= dim < 0:
        dim += nd
    if len(operands) == 1 and 0 <= dim < nd:
        return operands[0]
    return concatenate_p.bind(*operands, dimension=dim)


def pad(operand, padding_value, padding_config):
    """Pad with ((lo, hi, interior), ...) per dimension; negative lo/hi crop."""
    operand = as_operand(operand)
    dt = core.get_aval(operand).dtype
    pv = padding_value
    if not isinstance(pv, (core.Tracer, core.Array)):
        pv = core.Array(np.asarray(pv, dt), core.is_weak(operand))
    cfg = tuple(_ints(c, "pad", "padding_config entries") for c in padding_config)
    if any(len(c) != 3 for c in cfg):
        raise ValueError(f"pad: padding_config entries must be (low, high, interior) triples, "
                         f"got {padding_config}")
    return pad_p.bind(operand, pv, padding_config=cfg)


def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001 (JAX's name)
    operand = as_operand(operand)
    st = None if strides is None else _ints(strides, "slice", "strides")
    if st is not None and all(s == 1 for s in st):
        st = None
    return slice_p.bind(operand,
                        start_indices=_ints(start_indices, "slice", "start_indices"),
                        limit_indices=_ints(limit_indices, "slice", "limit_indices"), strides=st)


def _index_operands(name, operand, start_indices, allow_negative_indices=True):
    """Scalar integer index operands (negative static indices wrapped, as JAX)."""
    a = core.get_aval(operand)
    if isinstance(start_indices, (core.Array, core.Tracer, np.ndarray)):
        sa = core.get_aval(start_indices)
        if sa.ndim != 1:
            raise ValueError(f"{name}: start_indices must be a 1-D sequence, got "
                             f"{sa.str_short()}")
        if isinstance(start_indices, core.Tracer):
            start_indices = [squeeze_p.bind(slice_p.bind(start_indices, start_indices=(k,),
                                                         limit_indices=(k + 1,), strides=None),
                                            dimensions=(0,)) for k in range(sa.shape[0])]
        else:
            v = np.asarray(start_indices)
            start_indices = [core.Array(v[k]) for k in range(sa.shape[0])]
    start_indices = list(start_indices)
    if len(start_indices) != a.ndim:
        raise ValueError(f"{name}: length of start_indices ({len(start_indices)}) must match "
                         f"the rank of operand {a.str_short()}")
    if isinstance(allow_negative_indices, bool):
        allow_negative_indices = [allow_negative_indices] * a.ndim
    out = []
    for i, d, neg in zip(start_indices, a.shape, allow_negative_indices):
        if isinstance(i, (core.Tracer, core.Array)):
            ia = core.get_aval(i)
            if ia.shape != () or not dtypes.is_integer(ia.dtype):
                raise TypeError(f"{name}: start indices must be integer scalars, got "
                                f"{ia.str_short()}")
            if neg and not dtypes.is_unsigned(ia.dtype):
                conc = i.to_concrete_value() if isinstance(i, core.Tracer) else i._value
                if conc is not None and not isinstance(i, core.Tracer):
                    if int(conc) < 0:
                        i = core.Array(np.asarray(int(conc) + d, ia.dtype))
                else:   # traced: i < 0 ? i + d : i
                    ew = _ew()
                    zero, dd = np.zeros((), ia.dtype), np.asarray(d, ia.dtype)
                    # as JAX: i + d promotes a weakly typed index to a strong one first
                    neg_i = ew.lt_p.bind(i, zero)
                    ii = (ew.convert_element_type_p.bind(i, new_dtype=ia.dtype, weak_type=False)
                          if ia.weak_type else i)
                    i = ew.select_n_p.bind(neg_i, i, ew.add_p.bind(ii, dd))
            out.append(i)
        else:
            try:
                v = operator.index(i)
            except TypeError:
                raise TypeError(f"{name}: start indices must be integers, got {i!r}") from None
            if v < 0 and neg:
                v += d
            elif v < 0:
                raise ValueError(f"{name}: index {v} is out of bounds for dimension {d} with "
                                 "allow_negative_indices=False")
            out.append(core.Array(np.asarray(v, dtypes.default_int_dtype())))
    # All indices share one dtype (XLA requires it).
    dts = {core.get_aval(i).dtype for i in out}
    if len(dts) > 1:
        dt = dtypes.result_type(*dts)
        out = [_to_dtype(i, dt) if not isinstance(i, core.Array)
               else core.Array(np.asarray(i._value, dt)) for i in out]
    return out


def _check_index_types(name, start_indices):
    """JAX's rule: the start indices are integers of one dtype (a Python int counts as the
    default integer type)."""
    if isinstance(start_indices, (core.Array, core.Tracer, np.ndarray)):
        return
    dts = []
    for i in start_indices:
        if isinstance(i, (core.Array, core.Tracer)):
            dts.append(core.get_aval(i).dtype)
        elif isinstance(i, (np.generic, np.ndarray)):
            dts.append(dtypes.canonicalize_dtype(np.asarray(i).dtype))
        elif type(i) is int:
            dts.append(dtypes.canonicalize_dtype(np.int64))
        else:
            return
    if any(d != dts[0] or not dtypes.is_integer(d) for d in dts):
        sep = ":" if name == "dynamic_slice" else ""      # (JAX's two messages differ so)
        raise TypeError(f"index arguments to {name} must be integers of the same type, "
                        f"got{sep} " + ", ".join(np.dtype(d).name for d in dts))


def _zero_like_index(i):
    """0 with the dtype of index ``i`` (for the other axes of a one-axis dynamic slice)."""
    if isinstance(i, (core.Array, core.Tracer, np.generic, np.ndarray)):
        return np.zeros((), dtypes.canonicalize_dtype(core.get_aval(i).dtype))
    return 0


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """Slice of size ``slice_sizes`` at (clamped) traced ``start_indices``."""
    operand = as_operand(operand)
    _check_index_types("dynamic_slice", start_indices)
    idxs = _index_operands("dynamic_slice", operand, start_indices, allow_negative_indices)
    return dynamic_slice_p.bind(operand, *idxs,
                        slice_sizes=_ints(slice_sizes, "dynamic_slice", "slice_sizes"))


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    operand = as_operand(operand)
    update = as_operand(update, core.get_aval(operand).dtype
                        if not isinstance(update, (core.Tracer, core.Array)) else None)
    _check_index_types("dynamic_update_slice", start_indices)
    idxs = _index_operands("dynamic_update_slice", operand, start_indices,
                           allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, update, *idxs)


def iota(dtype, size):
    return broadcasted_iota(dtype, (operator.index(size),), 0)


def broadcasted_iota(dtype, shape, dimension, out_sharding=None):
    shape = _ints(shape, "broadcasted_iota", "shape")
    dimension = canonicalize_axis(dimension, len(shape), "broadcasted_iota: dimension")
    return iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype), shape=shape,
                        dimension=dimension)


def full(shape, fill_value, dtype=None, *, sharding=None):
    """An array of ``shape`` filled with ``fill_value`` (weak if a Python scalar, no dtype)."""
    shape = _ints((shape,) if np.ndim(shape) == 0 and not isinstance(shape, tuple) else shape,
                  "full", "shape")
    fa = core.get_aval(fill_value)
    if fa.shape != ():
        raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape "
                        f"{fa.shape}")
    if dtype is not None:
        dt = dtypes.canonicalize_dtype(dtype)
        if isinstance(fill_value, core.Tracer) or (isinstance(fill_value, core.Array)):
            fv = _to_dtype(fill_value, dt) if fa.dtype != dt else fill_value
            if isinstance(fv, core.Array) and fv.weak_type:
                fv = core.Array(np.asarray(fv._value, dt))
        else:
            fv = core.Array(np.asarray(fill_value, dt))
    else:
        fv = as_operand(fill_value)
    return broadcast_in_dim_p.bind(fv, shape=shape, broadcast_dimensions=())


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    a = core.get_aval(x)
    return full(a.shape if shape is None else shape, fill_value,
                a.dtype if dtype is None else dtype)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    operand = as_operand(operand)
    a = core.get_aval(operand)
    axis = canonicalize_axis(axis, a.ndim)
    d = a.shape[axis]
    start = 0 if start_index is None else operator.index(start_index)
    limit = d if limit_index is None else operator.index(limit_index)
    start = start + d if start < 0 else start
    limit = limit + d if limit < 0 else limit
    starts = [0] * a.ndim
    limits = list(a.shape)
    strides = [1] * a.ndim
    starts[axis], limits[axis], strides[axis] = start, limit, operator.index(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
    operand = as_operand(operand)
    a = core.get_aval(operand)
    axis = canonicalize_axis(axis, a.ndim)
    index = operator.index(index)
    d = a.shape[axis]
    if not -d <= index < d:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {d}")
    index = index % d
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *,
                         allow_negative_indices=True):
    operand = as_operand(operand)
    a = core.get_aval(operand)
    axis = canonicalize_axis(axis, a.ndim)
    starts = [_zero_like_index(start_index)] * a.ndim
    sizes = list(a.shape)
    starts[axis] = start_index
    sizes[axis] = operator.index(slice_size)
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *,
                         allow_negative_indices=True):
    operand = as_operand(operand)
    axis = canonicalize_axis(axis, core.get_aval(operand).ndim)
    out = dynamic_slice_in_dim(operand, index, 1, axis,
                               allow_negative_indices=allow_negative_indices)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *,
                                allow_negative_indices=True):
    operand = as_operand(operand)
    a = core.get_aval(operand)
    axis = canonicalize_axis(axis, a.ndim)
    starts = [_zero_like_index(start_index)] * a.ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts,
                                allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand, update, index, axis, *, allow_negative_indices=True):
    operand = as_operand(operand)
    a = core.get_aval(operand)
    axis = canonicalize_axis(axis, a.ndim)
    update = as_operand(update, a.dtype if not isinstance(update, (core.Tracer, core.Array))
                        else None)
    ua = core.get_aval(update)
    if ua.ndim == a.ndim - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)


def split(operand, sizes, axis=0):
    """Split ``operand`` along ``axis`` into pieces of the given ``sizes`` (must sum to it)."""
    operand = as_operand(operand)
    a = core.get_aval(operand)
    axis = canonicalize_axis(axis, a.ndim)
    sizes = _ints(sizes, "split", "sizes")
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
    if sum(sizes) != a.shape[axis]:
        raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
                         f"operand shape {list(a.shape)}")
    out, start = [], 0
    for s in sizes:
        out.append(slice_in_dim(operand, start, start + s, 1, axis))
        start += s
    return out

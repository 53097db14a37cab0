"""``sort`` (multi-operand, lexicographic on the first ``num_keys``) and ``top_k``.

Order is XLA/JAX's: floats compare with -0.0 == 0.0 and every NaN after every
number; complex keys order by real part, then imaginary part.  Differentiation
needs no gather: the JVP sorts an ``iota`` along with the operands to get the
permutation ``p``, and applies it to tangents by *sorting them with the inverse
permutation as key* (a key of distinct integers, so stability does not matter).
That tangent sort is linear in its non-key operands; its transpose sorts the
cotangent by ``p`` (scattering it back), which needs no new primitive either.
"""
from __future__ import annotations

import operator

import numpy as np

from xform._src.interpreters import ad, batching, core, dtypes
from xform._src.interpreters.ad import Zero, instantiate, is_undefined_primal
from xform._src.interpreters.core import Primitive, ShapedArray
from xform._src.primitives._rules import moveaxis
from xform._src.primitives.structural import (as_operand, broadcast_in_dim_p, canonicalize_axis,
                                   iota_p, rev_p, slice_p)
from xform._src.primitives import elementwise as ew
from xform._src.primitives import indexing

__all__ = ["sort", "sort_key_val", "top_k", "argsort"]

sort_p = Primitive("sort", multiple_results=True)


def _sort_abstract(*xs, dimension, is_stable, num_keys):
    if not xs:
        raise TypeError("sort: expected at least one operand")
    x0 = xs[0]
    for x in xs[1:]:
        if x.shape != x0.shape:
            raise TypeError("sort: all operands must have the same shape, got "
                            + ", ".join(a.str_short() for a in xs))
    if not 0 <= dimension < x0.ndim:
        raise ValueError(f"sort: dimension {dimension} is out of bounds for operands of shape "
                         f"{x0.shape}")
    if not 1 <= num_keys <= len(xs):
        raise ValueError(f"sort: num_keys={num_keys} must be between 1 and the number of "
                         f"operands ({len(xs)})")
    return [ShapedArray(x.shape, x.dtype, x.weak_type) for x in xs]


def _sort_keys(x):
    """NumPy keys (primary first) giving XLA's total order for one operand."""
    x = np.asarray(x)
    if dtypes.is_complex(x.dtype):
        return _sort_keys(x.real) + _sort_keys(x.imag)
    if dtypes.is_float(x.dtype):
        k = x.astype(np.float64) + 0.0        # -0.0 -> 0.0
        return [np.where(np.isnan(k), np.nan, k)]   # every NaN alike, sorted last by NumPy
    return [x]


def _sort_perm(keys, dimension):
    ks = [k for x in keys for k in _sort_keys(x)]
    return np.lexsort(ks[::-1], axis=dimension)   # lexsort: last key is primary; stable


def _sort_impl(*xs, dimension, is_stable, num_keys):
    xs = [np.asarray(x) for x in xs]
    perm = _sort_perm(xs[:num_keys], dimension)
    return [np.take_along_axis(x, perm, axis=dimension) for x in xs]


def _iota_like(shape, dimension):
    return iota_p.bind(dtype=np.dtype(np.int32), shape=tuple(shape), dimension=dimension)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    """Sort an unsigned iota along with the operands; the tangents are gathered by the
    resulting permutation (one sort, as JAX's rule)."""
    shape = core.get_aval(primals[0]).shape
    idt = np.dtype(np.uint64 if any(d > np.iinfo(np.uint32).max for d in shape)
                   else np.uint32)
    outs = sort_p.bind(*primals, iota_p.bind(dtype=idt, shape=tuple(shape),
                                             dimension=dimension),
                       dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    n = len(shape)
    batch = tuple(d for d in range(n) if d != dimension)
    dnums = indexing.GatherDimensionNumbers(
        offset_dims=(), collapsed_slice_dims=(dimension,), start_index_map=(dimension,),
        operand_batching_dims=batch, start_indices_batching_dims=batch)
    idx = broadcast_in_dim_p.bind(outs[-1], shape=tuple(shape) + (1,),
                                  broadcast_dimensions=tuple(range(n)))
    if 0 in shape:          # nothing to permute (and no window of size 1 to gather)
        t_out = list(tangents)
    else:
        t_out = [t if type(t) is Zero else
                 indexing.gather(t, idx, dnums, (1,) * n, mode="promise_in_bounds")
                 for t in tangents]
    return outs[:-1], [Zero.from_primal(o) if type(t) is Zero else t
                       for o, t in zip(outs[:-1], t_out)]


def _sort_transpose(cts, *xs, dimension, is_stable, num_keys):
    """Linear in the non-key operands (the keys are known): scatter cts back by the perm."""
    keys = xs[:num_keys]
    if any(is_undefined_primal(k) for k in keys):
        raise NotImplementedError("sort is not linear in its keys and cannot be transposed "
                                  "with respect to them")
    shape = core.get_aval(keys[0]).shape
    perm = sort_p.bind(*keys, _iota_like(shape, dimension), dimension=dimension,
                       is_stable=is_stable, num_keys=num_keys)[-1]
    res = [None] * len(xs)
    lin = [i for i in range(num_keys, len(xs)) if is_undefined_primal(xs[i])]
    if lin:
        cts_lin = [instantiate(cts[i]) for i in lin]
        back = sort_p.bind(perm, *cts_lin, dimension=dimension, is_stable=True, num_keys=1)[1:]
        for i, b in zip(lin, back):
            res[i] = b
    return res


def _sort_batch(axis_data, vals, dims, *, dimension, is_stable, num_keys):
    d = next(d for d in dims if d is not None)
    proto = core.get_aval(next(v for v, dd in zip(vals, dims) if dd is not None))
    new = []
    for v, dv in zip(vals, dims):
        if dv is None:
            keep = tuple(i for i in range(proto.ndim) if i != d)
            new.append(broadcast_in_dim_p.bind(v, shape=proto.shape, broadcast_dimensions=keep))
        else:
            new.append(moveaxis(v, dv, d))
    outs = sort_p.bind(*new, dimension=dimension + (d <= dimension), is_stable=is_stable,
                       num_keys=num_keys)
    return outs, [d] * len(outs)


sort_p.def_abstract_eval(_sort_abstract)
sort_p.def_impl(_sort_impl)
ad.jvp_rules[sort_p] = _sort_jvp
ad.transpose_rules[sort_p] = _sort_transpose
batching.batch_rules[sort_p] = _sort_batch


# ----------------------------------------------------------------- top_k

top_k_p = Primitive("top_k", multiple_results=True)


def _top_k_abstract(x, *, k, axis):
    if dtypes.is_complex(x.dtype):
        raise ValueError(f"top_k is not compatible with complex inputs, got {x.str_short()}")
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    if x.ndim == 0:
        raise TypeError(f"top_k operand must have >= 1 dimension, got {x.str_short()}")
    if not 0 <= axis < x.ndim:
        raise ValueError(f"top_k: axis {axis} out of range for operand {x.str_short()}")
    if x.shape[axis] < k:
        raise ValueError(f"k argument to top_k must be no larger than size along axis; got "
                         f"k={k} with operand {x.str_short()} and axis={axis}")
    int32_max = int(np.iinfo(np.int32).max)
    if x.shape[axis] > int32_max + 1:
        raise ValueError("top_k returns int32 indices, which will overflow for array "
                         f"dimensions larger than the maximum int32 ({int32_max}). Got "
                         f"operand.shape={tuple(x.shape)}")
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, np.int32, False)]


def _top_k_impl(x, *, k, axis):
    """Descending, ties to the lower index, NaN largest: a stable ascending sort of the
    reversed array, read backwards."""
    x = np.asarray(x)
    n = x.shape[axis]
    rx = np.flip(x, axis)
    if dtypes.is_float(x.dtype):   # XLA's total order: -NaN < -inf < ... < -0 < 0 < ... < NaN
        f = rx.astype(np.float64)
        nan, sign = np.isnan(f), np.signbit(f)
        cls = np.where(nan, np.where(sign, 0, 2), 1)
        keys = [cls, np.where(nan, 0.0, f + 0.0), ~sign]
        order = np.lexsort(keys[::-1], axis=axis)
    else:
        order = np.argsort(rx, axis=axis, kind="stable")
    order = (n - 1) - np.flip(order, axis)
    idx = np.take(order, np.arange(k), axis=axis)
    return [np.take_along_axis(x, idx, axis=axis), idx.astype(np.int32)]


def _top_k_jvp(primals, tangents, *, k, axis):
    x, = primals
    t, = tangents
    vals, idx = top_k_p.bind(x, k=k, axis=axis)
    if type(t) is Zero:
        return [vals, idx], [Zero.from_primal(vals), Zero.from_primal(idx)]
    # Tangent: the top k of t under the full descending order of x.  That order is the
    # permutation sorting the key (top_k rank) = position of each element in the result.
    shape = core.get_aval(x).shape
    n = shape[axis]
    full_vals, full_idx = top_k_p.bind(x, k=n, axis=axis)
    inv = sort_p.bind(full_idx, _iota_like(shape, axis), dimension=axis, is_stable=True,
                      num_keys=1)[1]
    moved = sort_p.bind(inv, t, dimension=axis, is_stable=True, num_keys=1)[1]
    starts = (0,) * len(shape)
    limits = shape[:axis] + (k,) + shape[axis + 1:]
    t_out = slice_p.bind(moved, start_indices=starts, limit_indices=limits, strides=None)
    return [vals, idx], [t_out, Zero.from_primal(idx)]


def _top_k_batch(axis_data, vals, dims, *, k, axis):
    d = dims[0]
    outs = top_k_p.bind(vals[0], k=k, axis=axis + (d <= axis))
    return outs, [d, d]


top_k_p.def_abstract_eval(_top_k_abstract)
top_k_p.def_impl(_top_k_impl)
ad.jvp_rules[top_k_p] = _top_k_jvp
batching.batch_rules[top_k_p] = _top_k_batch

# ================================================================= xform.lax functions


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """Sort one array, or several along the same permutation (lexicographic on the first
    ``num_keys``).  Returns an array for one operand, a tuple for a sequence."""
    single = not isinstance(operand, (tuple, list))
    ops = [as_operand(operand)] if single else [as_operand(o) for o in operand]
    if not ops:
        raise TypeError("sort: expected at least one operand")
    nd = core.get_aval(ops[0]).ndim
    if nd == 0:
        raise ValueError("sort: operands must have at least one dimension, got a 0-d array")
    num_keys = operator.index(num_keys)
    if not 1 <= num_keys <= len(ops):
        raise ValueError(f"sort: num_keys={num_keys} must be between 1 and the number of "
                         f"operands ({len(ops)})")
    dimension = canonicalize_axis(dimension, nd, "sort: dimension")
    outs = sort_p.bind(*ops, dimension=dimension, is_stable=bool(is_stable),
                        num_keys=num_keys)
    return outs[0] if single else tuple(outs)


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    """Sort ``keys`` along ``dimension`` and apply the same permutation to ``values``."""
    k, v = sort([keys, values], dimension, is_stable, 1)
    return k, v


def argsort(operand, dimension=-1, is_stable=True, descending=False):
    """int32 indices that sort ``operand`` along ``dimension`` (ascending, stable)."""
    operand = as_operand(operand)
    a = core.get_aval(operand)
    dimension = canonicalize_axis(dimension, a.ndim)
    iota = _iota_like(a.shape, dimension)
    if not descending:
        return sort([operand, iota], dimension, is_stable, 1)[1]
    # Descending and stable: sort the reversed array ascending, read it backwards.
    perm = sort([rev_p.bind(operand, dimensions=(dimension,)), iota], dimension, is_stable, 1)[1]
    last = np.full(a.shape, a.shape[dimension] - 1, np.int32)
    return rev_p.bind(ew.sub_p.bind(last, perm), dimensions=(dimension,))


def top_k(operand, k, *, axis=-1):
    """The ``k`` largest entries along ``axis`` (descending; ties: lower index first) and
    their int32 indices."""
    operand = as_operand(operand)
    a = core.get_aval(operand)
    if a.ndim == 0:
        raise TypeError(f"top_k operand must have >= 1 dimension, got {a.str_short()}")
    try:
        k = operator.index(k)
    except TypeError:
        raise TypeError(f"top_k: k must be a Python integer, got {k!r}") from None
    axis = canonicalize_axis(axis, a.ndim, "top_k: axis")
    v, i = top_k_p.bind(operand, k=k, axis=axis)
    return v, i

"""Shape manipulation: reshape, transpose, concatenate, split, tile, pad, roll, ...

Everything lowers to the structural primitives (reshape, transpose,
broadcast_in_dim, slice, rev, concatenate, pad), so every function is
differentiable and batchable without rules of its own.

Static gathers (``pad`` modes, ``roll``, ``repeat``) share one helper,
``take_static``: the index list is cut into runs of constant stride and each
run is a strided ``slice`` (reversed for negative strides, broadcast for
repeats); the pieces are concatenated.  An irregular list (more than a few
runs, e.g. a permutation) is one ``gather`` instead.  Index maps come from
NumPy itself (e.g. ``np.pad(np.arange(n), w, mode)``), so the semantics are
NumPy's.  ``take`` / ``take_along_axis`` are gathers with JAX's modes.
"""
from __future__ import annotations

import builtins

import numpy as np

from xform._src.interpreters import core, dtypes
from xform._src.interpreters.core import Array, ArrayOps, Tracer
from xform.numpy import _util as U
from xform.numpy._util import lax
from xform.numpy import _ufuncs as F
from xform.numpy._ufuncs import subtract
import warnings


def _arr(x, name):
    x = U.ensure_arraylike(name, x)
    return U.to_array(x)


def _shape_of(name, a):
    """The shape of ``a``; a list or tuple is read as NumPy reads it, with JAX's
    DeprecationWarning."""
    if isinstance(a, (list, tuple)):
        warnings.warn(f"{name} requires ndarray or scalar arguments, got {type(a)} at "
                      "position 0. Convert it with jnp.asarray first.", DeprecationWarning,
                      stacklevel=3)
        return np.shape(a)
    return U.aval(U.from_jax_array(a)).shape


def shape(a):
    return _shape_of("shape", a)


def ndim(a):
    return len(_shape_of("ndim", a))


def size(a, axis=None):
    s = _shape_of("size", a)
    if axis is None:
        return int(np.prod(s, dtype=np.int64))
    if isinstance(axis, (tuple, list)):
        axes = [U.canonicalize_axis(ax, len(s)) for ax in axis]
        if len(set(axes)) != len(axes):
            raise ValueError(f"size: repeated axis in {tuple(axis)} for an array of "
                             f"dimension {len(s)}")
        return int(np.prod([s[ax] for ax in axes], dtype=np.int64))
    return s[U.canonicalize_axis(axis, len(s))]


def isscalar(element):
    if isinstance(element, (ArrayOps, np.ndarray)):     # 0-d arrays are scalars, as JAX
        return element.ndim == 0
    if hasattr(element, "__jax_array__"):
        return np.ndim(element.__jax_array__()) == 0
    return type(element) in U._SCALARS or isinstance(element, np.generic)


# ----------------------------------------------------------------- reshape family


def _resolve_shape(newshape, size_, old_shape):
    if isinstance(newshape, (int, np.integer)) or (isinstance(newshape, ArrayOps)
                                                   and newshape.ndim == 0):
        newshape = (newshape,)
    try:
        ns = [U.static_int(d, "reshape dimensions") for d in newshape]
    except TypeError:
        raise TypeError(f"reshape new shape must be a sequence of ints, got {newshape!r}") \
            from None
    neg = [i for i, d in enumerate(ns) if d < 0]
    if len(neg) > 1 or any(ns[i] != -1 for i in neg):
        raise ValueError(f"reshape: can only specify one unknown dimension (-1) and no other "
                         f"negative sizes, got {tuple(ns)}")
    if neg:
        known = int(np.prod([d for d in ns if d >= 0], dtype=np.int64))
        if known == 0 or size_ % known:
            raise TypeError(f"cannot reshape array of shape {old_shape} (size {size_}) into "
                            f"shape {tuple(ns)}")
        ns[neg[0]] = size_ // known
    ns = tuple(ns)
    if int(np.prod(ns, dtype=np.int64)) != size_:
        raise TypeError(f"cannot reshape array of shape {old_shape} (size {size_}) into shape "
                        f"{ns} (size {int(np.prod(ns, dtype=np.int64))})")
    return ns


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Reshape (C or F order); one dimension may be -1."""
    if shape is None:
        shape = newshape
    x = _arr(a, "reshape")
    ns = _resolve_shape(shape, x.size, x.shape)
    if order == "F":
        xt = transpose(x)
        return transpose(lax.reshape(xt, ns[::-1]))
    if order not in ("C", "A", None):
        raise ValueError(f"reshape: order must be 'C' or 'F', got {order!r}")
    if ns == x.shape:
        return x
    return lax.reshape(x, ns)


def ravel(a, order="C"):
    x = _arr(a, "ravel")
    return reshape(x, (x.size,), order)


def transpose(a, axes=None):
    x = _arr(a, "transpose")
    nd = x.ndim
    if axes is None:
        perm = tuple(range(nd))[::-1]
    else:
        if len(axes) != nd:
            raise ValueError(f"axes {tuple(axes)} don't match array of dimension {nd}")
        perm = tuple(U.canonicalize_axis(i, nd) for i in axes)
        if len(set(perm)) != nd:
            raise ValueError(f"repeated axis in transpose: {tuple(axes)}")
    if perm == tuple(range(nd)):
        return x
    return lax.transpose(x, perm)


def permute_dims(a, /, axes):
    return transpose(a, axes)


def matrix_transpose(x, /):
    x = _arr(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions, got shape {x.shape}")
    return swapaxes(x, -1, -2)


def swapaxes(a, axis1, axis2):
    x = _arr(a, "swapaxes")
    i, j = U.canonicalize_axis(axis1, x.ndim), U.canonicalize_axis(axis2, x.ndim)
    perm = list(range(x.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(x, perm)


def moveaxis(a, source, destination):
    x = _arr(a, "moveaxis")
    src = U.axis_tuple(source)
    dst = U.axis_tuple(destination)
    if len(src) != len(dst):
        raise ValueError("Inconsistent number of elements: "
                         f"{len(src)} vs {len(dst)}")
    src = [U.canonicalize_axis(s, x.ndim) for s in src]
    dst = [U.canonicalize_axis(d, x.ndim) for d in dst]
    perm = [i for i in range(x.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return transpose(x, perm)


def expand_dims(a, axis):
    x = _arr(a, "expand_dims")
    axes = U.axis_tuple(axis)
    nd = x.ndim + len(axes)
    axes = sorted(U.canonicalize_axis(ax, nd) for ax in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis in expand_dims: {axis}")
    s = list(x.shape)
    for ax in axes:
        s.insert(ax, 1)
    # JAX's lax.expand_dims: a broadcast_in_dim placing x's dims around the new ones
    return lax.broadcast_in_dim(x, tuple(s), tuple(i for i in range(nd) if i not in axes))


def squeeze(a, axis=None):
    x = _arr(a, "squeeze")
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = U.canonicalize_axes(axis, x.ndim)
        for i in axes:
            if x.shape[i] != 1:
                raise ValueError(f"cannot select an axis to squeeze out which has size not equal "
                                 f"to one: axis {i} of shape {x.shape}")
    if not axes:
        return x
    return lax.reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def atleast_1d(*arys):
    out = [reshape(a, (1,)) if ndim(a) == 0 else U.to_array(a) for a in map(_asarr, arys)]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    out = []
    for a in map(_asarr, arys):
        out.append(reshape(a, (1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a)
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    out = []
    for a in map(_asarr, arys):
        if a.ndim == 0:
            a = reshape(a, (1, 1, 1))
        elif a.ndim == 1:
            a = reshape(a, (1, a.shape[0], 1))
        elif a.ndim == 2:
            a = reshape(a, a.shape + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


def _asarr(a):
    from xform.numpy._creation import asarray  # deferred: import cycle
    return asarray(a)


# ----------------------------------------------------------------- broadcasting


def broadcast_shapes(*shapes):
    shapes = [tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in shapes]
    return U.broadcast_shapes(*shapes)


def broadcast_to(array, shape):
    x = _asarr(array)
    shape = U.canonical_shape(shape)
    if len(shape) < x.ndim:
        raise ValueError(f"Cannot broadcast to shape with fewer dimensions: arr_shape="
                         f"{x.shape} shape={shape}")
    if U.broadcast_shapes_or_none(x.shape, shape) != shape:
        raise ValueError(f"Incompatible shapes for broadcasting: {x.shape} and requested shape "
                         f"{shape}")
    return U.broadcast_to_shape(x, shape)


def broadcast_arrays(*args):
    xs = [_asarr(a) for a in args]
    s = U.broadcast_shapes(*(x.shape for x in xs))
    return [U.broadcast_to_shape(x, s) for x in xs]


# ----------------------------------------------------------------- joining


def concatenate(arrays, axis=0, dtype=None):
    """Join along an existing axis; ``axis=None`` ravels first.  Dtypes are promoted."""
    if isinstance(arrays, ArrayOps):
        arrays = [arrays[i] for i in range(arrays.shape[0])] if arrays.ndim else None
        if arrays is None:
            raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    arrays = list(arrays)
    if not arrays:
        raise ValueError("Need at least one array to concatenate.")
    xs = [_asarr(a) for a in arrays]
    if axis is None:
        xs = [ravel(x) for x in xs]
        axis = 0
    if any(x.ndim == 0 for x in xs):
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    nd = xs[0].ndim
    for x in xs:
        if x.ndim != nd:
            raise ValueError("All input arrays must have the same number of dimensions, got "
                             f"shapes {', '.join(str(y.shape) for y in xs)}")
    ax = U.canonicalize_axis(axis, nd)
    for x in xs:
        if x.shape[:ax] + x.shape[ax + 1:] != xs[0].shape[:ax] + xs[0].shape[ax + 1:]:
            raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions "
                            f"other than the one being concatenated: concatenating along "
                            f"dimension {ax} for shapes "
                            f"{', '.join(str(y.shape) for y in xs)}.")
    if dtype is not None:
        dt = U.canonical_dtype(dtype)
        xs = [U.to_array(x, dt, False) for x in xs]
    else:
        xs = U.promote_dtypes(*xs)
    if len(xs) == 1:
        return xs[0]
    return lax.concatenate(xs, ax)


def concat(arrays, /, *, axis=0):
    return concatenate(arrays, axis)


def stack(arrays, axis=0, dtype=None):
    if isinstance(arrays, ArrayOps) and arrays.ndim == 0:
        raise TypeError("stack: expected a sequence of arrays or an array with at least one "
                        "dimension to stack along, got a 0-d array (len() of unsized object)")
    xs = [_asarr(a) for a in arrays] if not isinstance(arrays, ArrayOps) else \
        [arrays[i] for i in range(arrays.shape[0])]
    if not xs:
        raise ValueError("Need at least one array to stack.")
    s0 = xs[0].shape
    for x in xs:
        if x.shape != s0:
            raise ValueError(f"All input arrays must have the same shape, got "
                             f"{', '.join(str(y.shape) for y in xs)}")
    ax = U.canonicalize_axis(axis, len(s0) + 1)
    return concatenate([expand_dims(x, ax) for x in xs], ax, dtype)


def hstack(tup, dtype=None):
    if len(tup) == 0:
        raise ValueError("need at least one array to concatenate")
    xs = atleast_1d(*tup) if len(tup) != 1 else [atleast_1d(*tup)]
    return concatenate(xs, 0 if xs[0].ndim == 1 else 1, dtype)


def vstack(tup, dtype=None):
    xs = atleast_2d(*tup) if len(tup) != 1 else [atleast_2d(*tup)]
    return concatenate(xs, 0, dtype)


row_stack = vstack


def dstack(tup, dtype=None):
    xs = atleast_3d(*tup) if len(tup) != 1 else [atleast_3d(*tup)]
    return concatenate(xs, 2, dtype)


def column_stack(tup):
    xs = [_asarr(a) for a in tup]
    xs = [reshape(x, (x.size, 1)) if x.ndim < 2 else x for x in xs]
    return concatenate(xs, 1)


def append(arr, values, axis=None):
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


# ----------------------------------------------------------------- splitting


def _slice_axis(x, start, stop, axis, step=1):
    starts = [0] * x.ndim
    limits = list(x.shape)
    starts[axis], limits[axis] = start, stop
    strides = None if step == 1 else tuple(step if i == axis else 1 for i in range(x.ndim))
    if start == 0 and stop == x.shape[axis] and step == 1:
        return x
    return lax.slice(x, tuple(starts), tuple(limits), strides)


def _split(name, ary, indices_or_sections, axis, strict):
    x = _arr(ary, name)
    ax = U.canonicalize_axis(axis, x.ndim)
    n = x.shape[ax]
    if isinstance(indices_or_sections, (tuple, list, np.ndarray)) or (
            isinstance(indices_or_sections, ArrayOps) and indices_or_sections.ndim == 1):
        idx = [U.static_int(i, f"{name} indices") for i in indices_or_sections]
        idx = [min(max(i + n if i < 0 else i, 0), n) for i in idx]
        bounds = [0] + idx + [n]
    else:
        k = indices_or_sections
        if isinstance(k, ArrayOps) and k.ndim == 0:   # a concrete scalar converts with int()
            k = np.asarray(core.concrete_or_error(k, f"{name} sections must be a static "
                                                     "value")).item()
        k = int(k) if isinstance(k, (float, np.floating)) else U.static_int(k, f"{name} sections")
        if k <= 0:
            raise ValueError(f"number of sections must be larger than 0, got {k}")
        if strict and n % k:
            raise ValueError(f"array split does not result in an equal division: an axis of "
                             f"size {n} cannot be split into {k} equal parts; use array_split")
        q, r = builtins.divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        bounds = [0] + list(np.cumsum(sizes))
    return [_slice_axis(x, int(a), int(max(a, b)), ax) for a, b in zip(bounds[:-1], bounds[1:])]


def split(ary, indices_or_sections, axis=0):
    return _split("split", ary, indices_or_sections, axis, True)


def array_split(ary, indices_or_sections, axis=0):
    return _split("array_split", ary, indices_or_sections, axis, False)


def hsplit(ary, s):
    a = _asarr(ary)
    return split(a, s, 0 if a.ndim == 1 else 1)


def vsplit(ary, s):
    return split(ary, s, 0)


def dsplit(ary, s):
    return split(ary, s, 2)


# ----------------------------------------------------------------- static gather


_MAX_SLICE_RUNS = 4   # more constant-stride runs than this: a gather beats slices + concat


def _runs(flat):
    """Cut ``flat`` into maximal runs of constant stride: [(start, stride, count)]."""
    runs, i, m = [], 0, flat.size
    while i < m:
        j = i + 1
        d = 1
        if j < m:
            d = int(flat[j] - flat[i])
            while j + 1 < m and flat[j + 1] - flat[j] == d:
                j += 1
            j += 1
        runs.append((int(flat[i]), d, j - i))
        i = j
    return runs


def take_static(x, idx, axis):
    """``np.take(x, idx, axis)`` for a host integer array ``idx`` (in range, non-negative).

    Built from strided slices so it is exact for every dtype (no one-hot
    products that would turn inf into nan) and differentiable through the
    slice/concatenate transposes.
    """
    idx = np.asarray(idx, dtype=np.int64)
    flat = idx.reshape(-1)
    n = x.shape[axis]
    out_shape = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
    if flat.size == 0 or n == 0:
        if flat.size and n == 0:
            raise IndexError(f"index {int(flat[0])} is out of bounds for axis {axis} with size 0")
        from xform.numpy._creation import zeros  # deferred: import cycle
        return U.to_array(zeros(out_shape, x.dtype), x.dtype, x.weak_type)
    runs = _runs(flat)
    if len(runs) > _MAX_SLICE_RUNS:       # an irregular index list: one gather
        from xform.numpy._indexing import gather_axis  # deferred: import cycle
        return gather_axis(x, idx, axis, indices_are_sorted=bool(np.all(np.diff(flat) >= 0)))
    if flat.size == n and np.array_equal(flat, np.arange(n)):
        piece = x
    else:
        pieces = []
        for a, d, cnt in runs:
            if cnt == 1:
                pieces.append(_slice_axis(x, a, a + 1, axis))
            elif d > 0:
                pieces.append(_slice_axis(x, a, a + d * (cnt - 1) + 1, axis, d))
            elif d < 0:
                lo = a + d * (cnt - 1)
                pieces.append(lax.rev(_slice_axis(x, lo, a + 1, axis, -d), (axis,)))
            else:
                one = _slice_axis(x, a, a + 1, axis)
                s = list(one.shape)
                s[axis] = cnt
                pieces.append(U.broadcast_to_shape(one, tuple(s)))
        piece = pieces[0] if len(pieces) == 1 else lax.concatenate(pieces, axis)
    if piece.shape != out_shape:
        piece = lax.reshape(piece, out_shape)
    return piece


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
    """``jnp.take``: one gather.  Modes as JAX: ``fill`` (default; negative indices wrap,
    out-of-range ones give ``fill_value``, NaN for floats), ``clip``, ``wrap``,
    ``promise_in_bounds``; ``raise`` checks host indices."""
    from xform.numpy._indexing import gather_axis  # deferred: import cycle
    if out is not None:
        raise NotImplementedError("take: the 'out' argument is not supported (arrays are "
                                  "immutable); use the return value")
    x = _arr(a, "take")
    if axis is None:
        x = ravel(x)
        axis = 0
    ax = U.canonicalize_axis(axis, x.ndim)
    idx = indices if isinstance(indices, ArrayOps) else np.asarray(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"take indices must be integers, got dtype {idx.dtype}")
    n = x.shape[ax]
    if mode == "raise":
        v = np.asarray(core.concrete_or_error(idx, "take(mode='raise') indices"))
        bad = (v < -n) | (v >= n)
        if bad.any():
            raise IndexError(f"index {int(v[bad].flat[0])} is out of bounds for axis {ax} "
                             f"with size {n}")
        mode = "promise_in_bounds"
    if mode not in (None, "fill", "clip", "wrap", "promise_in_bounds"):
        raise ValueError(f"take: invalid mode {mode!r}; use 'fill', 'clip', 'wrap', "
                         "'promise_in_bounds' or 'raise'")
    idx = _wrap_indices(idx, n, mode)
    return gather_axis(x, idx, ax, mode="clip" if mode == "wrap" else (mode or "fill"),
                       fill_value=fill_value, indices_are_sorted=indices_are_sorted,
                       unique_indices=unique_indices)


def _wrap_indices(idx, n, mode, keep_negative=("clip",)):
    """Negative indices count from the end (except in ``keep_negative`` modes, as JAX);
    ``wrap`` reduces modulo n."""
    host = not isinstance(idx, ArrayOps)
    if mode in keep_negative or idx.dtype.kind == "u" and mode != "wrap":
        return idx
    if host:
        return np.mod(idx, max(n, 1)) if mode == "wrap" else np.where(idx < 0, idx + n, idx)
    nn = U.to_array(max(n, 1), idx.dtype)
    if mode == "wrap":
        return F.remainder(idx, nn)
    return F.where(F.less(idx, U.to_array(0, idx.dtype)), F.add(idx, U.to_array(n, idx.dtype)),
                   idx)


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None, *,
                    wrap_negative_indices=None):
    """``jnp.take_along_axis``: one gather whose other axes are batching axes.
    ``wrap_negative_indices``: count negative indices from the end (None: JAX's legacy
    default, wrapping unless ``mode='promise_in_bounds'``)."""
    x = _arr(arr, "take_along_axis")
    idx = indices if isinstance(indices, ArrayOps) else np.asarray(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"take_along_axis indices must be of integer type, got {idx.dtype}")
    if axis is None:
        if idx.ndim != 1:
            raise ValueError(f"take_along_axis indices must be 1D if axis=None, got shape "
                             f"{idx.shape}")
        x, axis = ravel(x), 0
    ax = U.canonicalize_axis(axis, x.ndim)
    if idx.ndim != x.ndim:
        raise ValueError(f"indices and arr must have the same number of dimensions; "
                         f"{idx.ndim} vs. {x.ndim}")
    if mode not in (None, "fill", "clip", "promise_in_bounds", "one_hot"):
        raise ValueError(f"take_along_axis: invalid mode {mode!r}; use 'fill', 'clip', "
                         "'promise_in_bounds' or 'one_hot'")
    n = x.shape[ax]
    if wrap_negative_indices is None:
        wrap_negative_indices = mode != "promise_in_bounds"
    if wrap_negative_indices and n:
        # indices + n must not overflow: wrapping works in a signed type that holds n
        wide = np.dtype(np.int32 if n < 2**31 else np.int64)
        if idx.dtype != wide:
            idx = idx.astype(wide) if not isinstance(idx, ArrayOps) else \
                lax.convert_element_type(idx, wide)
        idx = _wrap_indices(idx, n, None)
    try:
        bshape = tuple(idx.shape[i] if i == ax else U.broadcast_shapes((d,), (e,))[0]
                       for i, (d, e) in enumerate(zip(idx.shape, x.shape)))
    except ValueError:
        raise ValueError(f"take_along_axis: indices {idx.shape} and arr {x.shape} do not "
                         f"broadcast outside axis {ax}") from None
    xs = tuple(n if i == ax else d for i, d in enumerate(bshape))
    if builtins.min(bshape, default=1) == 0 or n == 0:
        # (an empty axis: every index is out of range and the result is zeros, as JAX)
        from xform.numpy._creation import zeros  # deferred: import cycle
        return U.to_array(zeros(bshape, x.dtype), x.dtype, x.weak_type)
    x = U.broadcast_to_shape(x, xs)
    if not isinstance(idx, ArrayOps):
        idx = U.to_array(idx.astype(np.int32 if n < 2**31 else np.int64))
    if mode == "one_hot":
        # a one-hot mask over the axis (out-of-range indices select nothing: zeros)
        ib = lax.broadcast_in_dim(U.broadcast_to_shape(idx, bshape), bshape + (n,),
                                  tuple(range(len(bshape))))
        hot = lax.eq(ib, lax.broadcasted_iota(ib.dtype, bshape + (n,), len(bshape)))
        xm = lax.broadcast_in_dim(moveaxis(x, ax, -1), bshape + (n,),
                                  tuple(i for i in range(len(bshape)) if i != ax) +
                                  (len(bshape),))
        zero = U.to_array(0, x.dtype, False)
        picked = lax.select(hot, xm, U.broadcast_to_shape(zero, hot.shape))
        if x.dtype == np.bool_:
            return lax.reduce_or(picked, (len(bshape),))
        return lax.reduce_sum(picked, (len(bshape),))
    ii = lax.reshape(U.broadcast_to_shape(idx, bshape), bshape + (1,))
    others = tuple(i for i in range(x.ndim) if i != ax)
    dn = lax.GatherDimensionNumbers((), (ax,), (ax,), others, others)
    return lax.gather(x, ii, dn, (1,) * x.ndim, mode=mode or "fill", fill_value=fill_value)


# ----------------------------------------------------------------- flips, rolls, tiles


def flip(m, axis=None):
    x = _arr(m, "flip")
    axes = U.canonicalize_axes(axis, x.ndim)
    return lax.rev(x, axes) if axes else x


def fliplr(m):
    x = _arr(m, "fliplr")
    if x.ndim < 2:
        raise ValueError(f"fliplr requires an array of at least 2 dimensions, got {x.shape}")
    return flip(x, 1)


def flipud(m):
    x = _arr(m, "flipud")
    if x.ndim < 1:
        raise ValueError("flipud requires an array of at least 1 dimension")
    return flip(x, 0)


def roll(a, shift, axis=None):
    x = _arr(a, "roll")
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), x.shape)
    if isinstance(shift, (np.ndarray, ArrayOps)):
        if shift.ndim > 1:
            raise ValueError(f"roll: shift must be a scalar or 1-D, got shape {shift.shape}")
        if isinstance(shift, Tracer) and shift.to_concrete_value() is None:
            return _roll_dynamic(x, shift, axis)
        v = np.asarray(shift._value if isinstance(shift, Array) else
                       shift.to_concrete_value() if isinstance(shift, Tracer) else shift)
        if v.dtype.kind not in "iub":
            raise TypeError(f"roll shift must be an integer, got dtype {v.dtype}")
        shift = tuple(int(i) for i in v.reshape(-1)) if v.ndim else int(v)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = U.axis_tuple(axis)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift and axis must have the same length, got {shifts}, {axes}")
    for s, ax in zip(shifts, axes):
        ax = U.canonicalize_axis(ax, x.ndim)
        n = x.shape[ax]
        if n == 0:
            continue
        s = U.static_int(s, "roll shift") % n
        if s:
            x = concatenate([_slice_axis(x, n - s, n, ax), _slice_axis(x, 0, n - s, ax)], ax)
    return x


def _roll_dynamic(x, shift, axis):
    """``roll`` by traced shifts: per axis, a dynamic slice of the array concatenated
    with itself (the shift taken modulo the axis length)."""
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if shift.dtype.kind not in "iu":
        raise TypeError(f"roll shift must be an integer, got dtype {shift.dtype}")
    shifts = shift if shift.ndim else lax.broadcast_in_dim(shift, (1,), ())
    k = builtins.max(shifts.shape[0], len(axes))
    if shifts.shape[0] not in (1, k) or len(axes) not in (1, k):
        raise ValueError(f"roll: shift and axis must broadcast, got {shifts.shape[0]} shifts "
                         f"and axes {tuple(axes)}")
    for j in range(k):
        ax = U.canonicalize_axis(axes[j if len(axes) > 1 else 0], x.ndim)
        n = x.shape[ax]
        if n == 0:
            continue
        s = lax.convert_element_type(
            lax.reshape(lax.slice(shifts, (j if shifts.shape[0] > 1 else 0,),
                                  ((j if shifts.shape[0] > 1 else 0) + 1,)), ()), np.int32)
        s = lax.rem(lax.add(lax.rem(s, np.int32(n)), np.int32(n)), np.int32(n))
        both = concatenate([x, x], ax)
        x = lax.dynamic_slice_in_dim(both, lax.sub(np.int32(n), s), n, axis=ax)
    return x


def rot90(m, k=1, axes=(0, 1)):
    x = _arr(m, "rot90")
    if x.ndim < 2:
        raise ValueError("rot90 requires its first argument to have ndim at least two, but "
                         f"got first argument of shape {x.shape}, which has ndim {x.ndim}")
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    a0, a1 = (U.canonicalize_axis(a, x.ndim) for a in axes)
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k = U.static_int(k, "rot90 k") % 4
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, a0), a1)
    perm = list(range(x.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(x, a1), perm)
    return flip(transpose(x, perm), a1)


def tile(A, reps):
    x = _arr(A, "tile")
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    reps = tuple(U.static_int(r, "tile reps") for r in reps)
    nd = builtins.max(len(reps), x.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    x = reshape(x, (1,) * (nd - x.ndim) + x.shape)
    # (r0, d0, r1, d1, ...) broadcast, then merge pairs.
    inter = tuple(v for r, d in zip(reps, x.shape) for v in (r, d))
    b = lax.broadcast_in_dim(x, inter, tuple(range(1, 2 * nd, 2)))
    return reshape(b, tuple(r * d for r, d in zip(reps, x.shape)))


def _repeat_gather_indices(r, n, total):
    """Indices into an axis of size ``n`` that repeat entry i ``r[i]`` times, as JAX
    computes them for a given output length ``total``: the start of each block (the
    exclusive cumulative sum of ``r``) marked in a length-``total`` buffer (negative
    marks counted from the end, marks out of range dropped), then a cumulative sum.
    Longer than ``sum(r)``: the last block runs on; shorter: truncated."""
    starts = np.cumsum(np.concatenate([[0], r[:-1]])).astype(np.int64)
    starts = np.where(starts < 0, starts + total, starts)
    marks = np.zeros(total, np.int64)
    keep = (starts >= 0) & (starts < total)
    np.add.at(marks, starts[keep], 1)
    return np.cumsum(marks) - 1


def _repeat_traced(x, r, ax, total):
    """``_repeat_gather_indices`` with traced repeat counts (``total`` static)."""
    from xform.numpy import _reductions as R  # deferred: import cycle
    from xform.numpy._creation import zeros  # deferred: import cycle
    r = U.to_array(r, dtypes.default_int_dtype(), False)
    r = U.broadcast_to_shape(ravel(r), (x.shape[ax],))
    exclusive = concatenate([zeros((1,), r.dtype), _slice_axis(r, 0, x.shape[ax] - 1, 0)], 0)
    marks = zeros((total,), np.int32).at[R.cumsum(exclusive)].add(1)
    gather = lax.sub(R.cumsum(marks), np.int32(1))
    return take(x, gather, axis=ax)


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """``np.repeat`` as JAX computes it: ``repeats`` is a scalar or broadcasts against
    the axis (shape (1,) included); with ``total_repeat_length`` the output length is
    static, so ``repeats`` may be traced (the last block runs on, or the output is
    truncated).  ``a`` and ``repeats`` are arrays or scalars (lists are refused, as JAX)."""
    a, repeats = U.ensure_arraylike("repeat", a, repeats)
    x = _arr(a, "repeat")
    if axis is None:
        x, axis = ravel(x), 0
    if total_repeat_length is not None:
        total_repeat_length = U.static_int(total_repeat_length, "total_repeat_length")
    if isinstance(repeats, ArrayOps):
        if total_repeat_length is not None and not isinstance(repeats, Array):
            if x.ndim == 0 or x.shape[U.canonicalize_axis(axis, x.ndim)] == 0 or \
                    total_repeat_length == 0:
                repeats = np.zeros(np.shape(repeats), np.int64)   # (not read below)
            else:
                return _repeat_traced(x, repeats, U.canonicalize_axis(axis, x.ndim),
                                      total_repeat_length)
        else:
            repeats = core.concrete_or_error(
                repeats, "When jit-compiling jnp.repeat, the total number of repeats must "
                "be static. To fix this, either specify a static value for `repeats`, or "
                "pass a static value to `total_repeat_length`.")
    r = np.asarray(repeats)
    if r.dtype.kind not in "iub":
        raise TypeError(f"repeat: repeats must be integers, got dtype {r.dtype}")
    if (r < 0).any():
        raise ValueError(f"repeat: repeats may not contain negative values, got {repeats!r}")
    if x.ndim == 0:
        r = r.ravel()
        if r.shape != (1,):
            raise ValueError("`repeat` with a scalar parameter `a` is only implemented for "
                             "scalar values of the parameter `repeats`.")
        total = int(r[0]) if total_repeat_length is None else total_repeat_length
        return U.broadcast_to_shape(x, (total,))
    ax = U.canonicalize_axis(axis, x.ndim)
    n = x.shape[ax]
    if r.ndim == 0 and total_repeat_length is None:
        k = int(r)
        s = x.shape[:ax + 1] + (k,) + x.shape[ax + 1:]
        b = lax.broadcast_in_dim(x, s, tuple(i if i <= ax else i + 1 for i in range(x.ndim)))
        return reshape(b, x.shape[:ax] + (n * k,) + x.shape[ax + 1:])
    r = r.ravel()
    try:
        r = np.broadcast_to(r, (n,))
    except ValueError:
        raise ValueError(f"repeat: repeats of shape {np.shape(repeats)} cannot be broadcast "
                         f"to axis {ax} of size {n} (array shape {x.shape})") from None
    total = int(r.sum()) if total_repeat_length is None else total_repeat_length
    if total == 0:
        return reshape(x, x.shape[:ax] + (0,) + x.shape[ax + 1:]) if n == 0 else \
            _slice_axis(x, 0, 0, ax)
    if n == 0:
        return x
    return take_static(x, _repeat_gather_indices(r, n, total), ax)


# ----------------------------------------------------------------- pad


def _pad_width(pad_width, nd):
    pw = np.asarray(core.concrete_or_error(pad_width) if isinstance(pad_width, ArrayOps)
                    else pad_width)
    if pw.dtype.kind not in "iu":
        raise TypeError(f"pad_width must be of integral type, got {pw.dtype}")
    try:
        pw = np.broadcast_to(pw, (nd, 2))
    except ValueError:
        raise ValueError(f"pad_width {pad_width!r} cannot be broadcast to ({nd}, 2) for an array "
                         f"of {nd} dimensions") from None
    if (pw < 0).any():
        raise ValueError(f"index can't contain negative values: pad_width={pad_width!r}")
    return [(int(a), int(b)) for a, b in pw]


def pad(array, pad_width, mode="constant", **kwargs):
    """``np.pad``: every NumPy mode (constant, edge, wrap, reflect/symmetric even or odd,
    linear_ramp, maximum/minimum/mean/median with stat_length, empty) or a callable."""
    x = _arr(array, "pad")
    pw = _pad_width(pad_width, x.ndim)
    if callable(mode):
        from xform.numpy import _pad_modes  # deferred: keeps `import xform` light
        return _pad_modes.pad_callable(x, pw, mode, kwargs)
    if mode == "constant":
        cv = kwargs.pop("constant_values", 0)
        if kwargs:
            raise ValueError(f"unsupported keyword arguments for mode 'constant': {set(kwargs)}")
        cvs = np.asarray(cv) if not isinstance(cv, ArrayOps) else None
        if cvs is not None and cvs.size == 1:
            val = U.to_array(cvs.reshape(()).item(), x.dtype, False)
            if not any(a or b for a, b in pw):
                return x
            return lax.pad(x, val, tuple((a, b, 0) for a, b in pw))
        cvs = np.broadcast_to(cvs if cvs is not None else np.asarray(cv), (x.ndim, 2))
        for ax, (a, b) in enumerate(pw):
            parts = []
            for w, v in ((a, cvs[ax, 0]), (b, cvs[ax, 1])):
                s = list(x.shape)
                s[ax] = w
                parts.append(U.broadcast_to_shape(U.to_array(np.asarray(v).item(), x.dtype,
                                                             False), tuple(s)))
            x = concatenate([parts[0], x, parts[1]], ax)
        return x
    from xform.numpy import _pad_modes  # deferred: keeps `import xform` light
    allowed = {"edge": (), "wrap": (), "empty": (), "reflect": ("reflect_type",),
               "symmetric": ("reflect_type",), "linear_ramp": ("end_values",),
               **{m: ("stat_length",) for m in _pad_modes._STATS}}
    if mode not in allowed:
        raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad; use one of "
                         f"'constant', {', '.join(repr(m) for m in allowed)} or a callable")
    unexpected = set(kwargs) - set(allowed[mode])
    if unexpected:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unexpected}")
    if x.ndim == 0:
        return x
    if mode == "empty":
        return _pad_modes.pad_empty(x, pw)
    if mode == "linear_ramp" or mode in _pad_modes._STATS:
        out = _pad_modes.pad_linear_ramp(x, pw, kwargs.get("end_values", 0)) \
            if mode == "linear_ramp" else \
            _pad_modes.pad_stat(x, pw, mode, kwargs.get("stat_length"))
        # the padding is computed from x alone: a weakly typed x stays weak, as in JAX
        return U.to_array(out, x.dtype, x.weak_type) if x.weak_type else out
    reflect_type = kwargs.get("reflect_type", "even")
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    if reflect_type == "odd":
        return _pad_modes.pad_reflect_odd(x, pw, mode)
    for ax, (a, b) in enumerate(pw):
        if not (a or b):
            continue
        n = x.shape[ax]
        if n == 0:
            raise ValueError(f"can't extend empty axis {ax} using modes other than 'constant' "
                             "or 'empty'")
        idx = np.pad(np.arange(n), (a, b), mode=mode)
        x = take_static(x, idx, ax)
    return x


# ----------------------------------------------------------------- sorting


def _sort_axis(x, axis):
    if axis is None:
        return ravel(x), 0
    return x, U.canonicalize_axis(axis, x.ndim)


def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    x = _arr(a, "sort")
    if order is not None:
        raise ValueError("'order' argument to sort is not supported.")
    x, ax = _sort_axis(x, axis)
    if x.ndim == 0:
        return x
    out = lax.sort(x, dimension=ax, is_stable=True)
    return flip(out, ax) if descending else out


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
    """Indices that sort ``a`` along ``axis`` (of ``dtype``, default the default integer)."""
    out = _argsort(a, axis, kind=kind, order=order, stable=stable, descending=descending)
    if dtype is not None:
        dt = U.canonical_dtype(dtype)
        if dt.kind not in "iu":
            raise ValueError(f"argsort: dtype must be an integer dtype, got {dt}")
        out = U.to_array(out, dt, False)
    return out


def _argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    x = _arr(a, "argsort")
    if order is not None:
        raise ValueError("'order' argument to argsort is not supported.")
    x, ax = _sort_axis(x, axis)
    if x.ndim == 0:
        return U.to_array(0, dtypes.default_int_dtype(), False)
    idt = dtypes.default_int_dtype()
    iota = lax.broadcasted_iota(idt, x.shape, ax)
    if descending:
        # Stable descending: sort the reversed array ascending, map the indices back, reverse.
        n = x.shape[ax]
        _, perm = lax.sort((flip(x, ax), iota), dimension=ax, is_stable=True, num_keys=1)
        return flip(subtract(U.to_array(n - 1, idt, False), perm), ax)
    _, perm = lax.sort((x, iota), dimension=ax, is_stable=True, num_keys=1)
    return perm


__all__ = [n for n in dir() if not n.startswith("_") and n not in (
    "annotations", "builtins", "np", "dtypes", "core", "Array", "ArrayOps", "U", "lax",
    "take_static", "F", "Tracer", "warnings")]

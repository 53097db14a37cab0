"""``xform.lax`` functions JAX defines on top of its primitives, built here from xform's
own operations (so ``jit``, ``grad`` and ``vmap`` apply through them)."""
import math
import typing
from collections.abc import Sequence

import numpy as np

from xform._src.primitives import dot_general as _dg

__all__ = ["collapse", "broadcast_like", "mulhi", "shape_as_value", "platform_dependent",
           "ragged_dot", "ragged_dot_general", "DotDimensionNumbers", "PrecisionLike",
           "scatter_apply"]

DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]
PrecisionLike = typing.Union[None, str, _dg.Precision, tuple[str, str],
                             tuple[_dg.Precision, _dg.Precision], _dg.DotAlgorithm,
                             _dg.DotAlgorithmPreset]


def _L():
    import xform.lax as L
    return L


def _arr(x):
    from xform.numpy import _util as U
    return U.to_array(x)


def collapse(operand, start_dimension, stop_dimension=None):
    """Dimensions ``[start_dimension, stop_dimension)`` of ``operand`` merged into one
    (row-major); ``stop_dimension=None`` collapses through the last dimension."""
    x = _arr(operand)
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(x.ndim)
    if hi < lo:
        raise ValueError(f"Invalid dimension range passed to collapse: {x.shape}"
                         f"[{start_dimension}:{stop_dimension}]")
    return _L().reshape(x, x.shape[:lo] + (math.prod(x.shape[lo:hi]),) + x.shape[hi:])


def broadcast_like(arr, like_arr):
    """``arr`` broadcast (NumPy rules) to the shape of ``like_arr``."""
    import xform.numpy as xnp
    return xnp.broadcast_to(arr, np.shape(like_arr))


def shape_as_value(shape):
    """A shape as an integer array (int32 unless a dimension needs int64)."""
    shape = tuple(int(d) for d in shape)
    dtype = np.int64 if any(d > np.iinfo(np.int32).max for d in shape) else np.int32
    return np.asarray(shape, dtype=dtype).reshape(len(shape))


def _umulhi(a, b, bits):
    """High ``bits`` bits of the unsigned ``2*bits``-bit product, by half words."""
    _ew = _L()
    h = bits // 2
    dt = a.dtype
    mask = np.array((1 << h) - 1, dt)
    hsh = np.array(h, dt)
    srl = _ew.shift_right_logical
    a_lo, a_hi = _ew.bitwise_and(a, mask), srl(a, hsh)
    b_lo, b_hi = _ew.bitwise_and(b, mask), srl(b, hsh)
    ll, lh = _ew.mul(a_lo, b_lo), _ew.mul(a_lo, b_hi)
    hl, hh = _ew.mul(a_hi, b_lo), _ew.mul(a_hi, b_hi)
    cross = _ew.add(_ew.add(srl(ll, hsh), _ew.bitwise_and(lh, mask)), hl)
    return _ew.add(_ew.add(hh, srl(lh, hsh)), srl(cross, hsh))


def mulhi(x, y, /):
    """The most significant N bits of the 2N-bit product of N-bit integers ``x`` and
    ``y`` (elementwise; signed or unsigned, as their dtype)."""
    import xform.numpy as xnp
    x, y = _arr(x), _arr(y)
    if x.dtype != y.dtype or not np.issubdtype(x.dtype, np.integer):
        raise TypeError("mulhi requires arguments of the same integer dtype, got "
                        f"{x.dtype} and {y.dtype}")
    if x.ndim and y.ndim and x.ndim != y.ndim:
        raise TypeError(f"mulhi: arrays must have the same rank (or be scalars), got "
                        f"shapes {x.shape} and {y.shape}")
    shape = np.broadcast_shapes(x.shape, y.shape)
    x, y = xnp.broadcast_to(x, shape), xnp.broadcast_to(y, shape)
    _ew = _L()
    dt = np.dtype(x.dtype)
    bits = dt.itemsize * 8
    udt = np.dtype(f"uint{bits}")
    ux, uy = _ew.bitcast_convert_type(x, udt), _ew.bitcast_convert_type(y, udt)
    hi = _umulhi(ux, uy, bits)
    if dt.kind == "i":
        # signed high half = unsigned high half - (x<0 ? y : 0) - (y<0 ? x : 0)  (mod 2^N)
        hi = _ew.sub(hi, _ew.select_n(_ew.lt(x, np.array(0, dt)), xnp.full_like(uy, 0), uy))
        hi = _ew.sub(hi, _ew.select_n(_ew.lt(y, np.array(0, dt)), xnp.full_like(ux, 0), ux))
        return _ew.bitcast_convert_type(hi, dt)
    return hi


def _platform_names():
    import xform
    p = xform.devices()[0].platform
    if p == "gpu":
        kind = str(getattr(xform.devices()[0], "client", "") and
                   xform.devices()[0].client.platform_version).lower()
        return ("rocm",) if "rocm" in kind else ("cuda",)
    return (p,)


def platform_dependent(*args, default=None, **per_platform):
    """``per_platform[platform](*args)`` for the platform the computation runs on
    (``cpu``, ``cuda``, ``rocm``, ``tpu``), else ``default(*args)``."""
    for name, branch in per_platform.items():
        if not callable(branch):
            raise TypeError(f"lax.platform_dependent: the '{name}' branch must be a "
                            "callable.")
        if name == "gpu":
            raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
    if default is not None and not callable(default):
        raise TypeError("lax.platform_dependent: the 'default' branch must be a callable.")
    for p in _platform_names():
        if p in per_platform:
            return per_platform[p](*args)
    if default is None:
        raise NotImplementedError(
            f"lax.platform_dependent: no branch for platform {_platform_names()[0]!r} "
            f"(branches: {sorted(per_platform)}) and no default; pass default=...")
    return default(*args)


def _group_mask(group_sizes, size, dtype):
    """``(g, size)``: row ``i`` is 1 on the positions of group ``i`` (groups laid out
    contiguously in order), 0 elsewhere (also past the last group)."""
    import xform.numpy as xnp
    ends = xnp.cumsum(group_sizes)
    starts = ends - group_sizes
    pos = xnp.arange(size, dtype=ends.dtype)
    m = (pos[None, :] >= starts[:, None]) & (pos[None, :] < ends[:, None])
    return m.astype(dtype)


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None):
    """A ``dot_general`` whose lhs ragged dimension is split into consecutive groups of
    ``group_sizes`` rows: a non-contracting ragged dimension picks the rhs slice of its
    group (rhs group dimension), a contracting one gives one output per group (a new
    leading dimension), a batch one is an ordinary batched dot."""
    import xform.numpy as xnp
    from xform.lax import RaggedDotDimensionNumbers
    dn = ragged_dot_dimension_numbers
    if not isinstance(dn, RaggedDotDimensionNumbers):
        raise TypeError("ragged_dot_dimension_numbers must be a RaggedDotDimensionNumbers, "
                        f"got {dn!r}")
    if group_offset is not None:
        raise NotImplementedError("ragged_dot_general: group_offset is not supported (as "
                                  "in JAX's reference implementation); slice the groups")
    lhs, rhs, gs = _arr(lhs), _arr(rhs), _arr(group_sizes)
    if not np.issubdtype(gs.dtype, np.integer):
        raise TypeError(f"group_sizes must have an integer dtype, got {gs.dtype}")
    if gs.ndim != 1:
        raise NotImplementedError(f"ragged_dot_general: group_sizes of shape {gs.shape}; "
                                  "only one-dimensional group_sizes ([g]) are supported")
    (lc, rc), (lb, rb) = dn.dot_dimension_numbers
    lc, rc, lb, rb = (tuple(int(d) for d in v) for v in (lc, rc, lb, rb))
    if len(dn.lhs_ragged_dimensions) != 1:
        raise TypeError("ragged_dot_general requires exactly one lhs ragged dimension, got "
                        f"{dn.lhs_ragged_dimensions}")
    rd = int(dn.lhs_ragged_dimensions[0]) % lhs.ndim
    rg = tuple(int(d) % rhs.ndim for d in dn.rhs_group_dimensions)
    g = gs.shape[0]
    mask = _group_mask(gs, lhs.shape[rd], lhs.dtype)          # (g, R)
    shape = [1] * (lhs.ndim + 1)
    shape[0], shape[rd + 1] = g, lhs.shape[rd]
    L = _L()
    kw = dict(precision=precision, preferred_element_type=preferred_element_type)
    if rd in lb:
        if rg:
            raise TypeError("ragged_dot_general: a ragged batch dimension takes no rhs "
                            f"group dimension, got {rg}")
        # the groups partition a batch dimension: every batch row is an ordinary dot
        return L.dot_general(lhs, rhs, ((lc, rc), (lb, rb)), **kw)
    lhs_g = lhs[None] * xnp.reshape(mask, shape)              # (g, *lhs.shape)
    lc1, lb1 = tuple(d + 1 for d in lc), tuple(d + 1 for d in lb)
    if rd in lc:
        if rg:
            raise TypeError("ragged_dot_general: a ragged contracting dimension takes no "
                            f"rhs group dimension, got {rg}")
        out = L.dot_general(lhs_g, rhs, ((lc1, rc), (lb1, rb)), **kw)
        return xnp.moveaxis(out, len(lb), 0)                  # (g, b..., m..., n...)
    if len(rg) != 1 or rhs.shape[rg[0]] != g:
        raise TypeError("ragged_dot_general: a ragged non-contracting dimension needs one "
                        f"rhs group dimension of size {g} (group_sizes), got {rg} for rhs "
                        f"shape {rhs.shape}")
    out = L.dot_general(lhs_g, rhs, ((lc1, rc), ((0,) + lb1, rg + rb)), **kw)
    return xnp.sum(out, axis=0).astype(out.dtype)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
    """``lhs [m, k]`` times ``rhs [g, k, n]``: the rows of group ``i`` (consecutive
    ``group_sizes[i]`` rows) use ``rhs[i]``; rows past the last group are zero."""
    from xform.lax import RaggedDotDimensionNumbers
    lhs, rhs = _arr(lhs), _arr(rhs)
    if lhs.ndim != 2 or rhs.ndim != 3:
        raise TypeError(f"ragged_dot expects lhs [m, k] and rhs [g, k, n], got shapes "
                        f"{lhs.shape} and {rhs.shape}")
    dn = RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))
    return ragged_dot_general(lhs, rhs, group_sizes, dn, precision, preferred_element_type,
                              group_offset, out_sharding)


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
    """``operand`` with ``func`` applied to each element a scatter with these indices and
    ``update_shape`` updates would write (once per time it is written: an element hit by
    ``k`` index tuples gets ``func`` applied ``k`` times).  ``func`` maps an array to one of
    the same shape and dtype elementwise."""
    import xform.numpy as xnp
    L = _L()
    x = _arr(operand)
    ones = xnp.ones(tuple(update_shape), np.int32)
    hits = L.scatter_add(xnp.zeros(x.shape, np.int32), scatter_indices, ones,
                         dimension_numbers, indices_are_sorted=indices_are_sorted,
                         unique_indices=unique_indices, mode=mode)

    def once(v, k):
        fv = _arr(func(v))
        if fv.shape != v.shape or fv.dtype != v.dtype:
            raise TypeError(f"scatter_apply: func must keep the shape and dtype "
                            f"{v.shape} {v.dtype}, it returned {fv.shape} {fv.dtype}")
        return xnp.where(hits > k, fv, v)

    y = once(x, 0)
    if unique_indices:
        return y
    # elements written more than once (duplicate indices): apply func again per write
    top = xnp.max(hits) if hits.size else 0

    def body(carry):
        k, v = carry
        return k + 1, once(v, k)
    return L.while_loop(lambda c: c[0] < top, body, (np.int32(1), y))[1]

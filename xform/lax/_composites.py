"""``xform.lax`` functions JAX defines on top of its primitives, built here from xform's
own operations (so ``jit``, ``grad`` and ``vmap`` apply through them)."""
import math
import typing
from collections.abc import Sequence

import numpy as np

from xform._src.primitives import dot_general as _dg

__all__ = ["collapse", "broadcast_like", "mulhi", "shape_as_value", "platform_dependent",
           "DotDimensionNumbers", "PrecisionLike",
           "scatter_apply"]

DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]
PrecisionLike = typing.Union[None, str, _dg.Precision, tuple[str, str],
                             tuple[_dg.Precision, _dg.Precision], _dg.DotAlgorithm,
                             _dg.DotAlgorithmPreset]


def _L():
    import xform.lax as L  # deferred: import cycle
    return L


def _arr(x):
    from xform.numpy import _util as U  # deferred: import cycle
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
    import xform.numpy as xnp  # deferred: import cycle
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
    import xform.numpy as xnp  # deferred: import cycle
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
    import xform  # deferred: import cycle
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
        plat = _platform_names()[0]
        raise NotImplementedError(
            f"lax.platform_dependent: translation rule for primitive 'platform_index' not "
            f"found for platform {plat}: no branch for platform {plat!r} (branches: "
            f"{sorted(per_platform)}) and no default; pass default=...")
    return default(*args)


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
    """``operand`` with ``func`` applied to each element a scatter with these indices and
    ``update_shape`` updates would write (once per time it is written: an element hit by
    ``k`` index tuples gets ``func`` applied ``k`` times).  ``func`` maps an array to one of
    the same shape and dtype elementwise."""
    import xform.numpy as xnp  # deferred: import cycle
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

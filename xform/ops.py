"""``xform.ops``: segment reductions (``jax.ops``)."""
from __future__ import annotations

import numpy as np
from xform import numpy as jnp
from xform._src.interpreters import core
from xform.numpy import _util as U

__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]


def _identity(op, dtype):
    dt = np.dtype(dtype)
    if op in ("add",):
        return 0
    if op == "mul":
        return 1
    if dt == np.bool_:
        return op == "min"
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return info.min if op == "max" else info.max
    return -np.inf if op == "max" else np.inf


def _segment(name, op, data, segment_ids, num_segments, indices_are_sorted, unique_indices,
             bucket_size, reducer, mode):
    data, segment_ids = U.ensure_arraylike(name, data, segment_ids)
    data, segment_ids = jnp.asarray(data), jnp.asarray(segment_ids)
    if num_segments is None:
        num_segments = int(np.max(np.asarray(core.concrete_or_error(
            segment_ids, f"{name}: num_segments must be given when segment_ids is traced"))))\
            + 1
    num_segments = int(core.concrete_or_error(
        num_segments, f"{name}() `num_segments` argument must be static"))
    if num_segments < 0:
        raise ValueError("num_segments must be non-negative.")
    if mode not in (None, "drop", "fill"):
        raise ValueError(f"{name}: mode must be None, 'drop' or 'fill' (out-of-range ids are "
                         f"dropped), got {mode!r}")
    fill = _identity(op, data.dtype)
    # Out-of-range ids are dropped: they go to an extra trailing segment, cut off below.
    ids = jnp.where((segment_ids < 0) | (segment_ids >= num_segments), num_segments,
                    segment_ids)
    if bucket_size is None:
        out = jnp.full((num_segments + 1,) + data.shape[1:], fill, dtype=data.dtype)
        out = getattr(out.at[ids], op)(data, indices_are_sorted=indices_are_sorted,
                                       unique_indices=unique_indices)
        return out[:num_segments]
    nb = -(-int(segment_ids.size) // int(bucket_size))
    out = jnp.full((nb, num_segments + 1) + data.shape[1:], fill, dtype=data.dtype)
    idx = (jnp.arange(segment_ids.shape[0]) // bucket_size, ids)
    out = getattr(out.at[idx], op)(data)
    return reducer(out[:, :num_segments], axis=0).astype(data.dtype)


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    """Sum of ``data`` rows per segment id; ids outside [0, num_segments) are dropped."""
    return _segment("segment_sum", "add", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, jnp.sum, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    """Product of ``data`` rows per segment id (1 for empty segments)."""
    return _segment("segment_prod", "mul", data, segment_ids, num_segments,
                    indices_are_sorted, unique_indices, bucket_size, jnp.prod, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    """Maximum of ``data`` rows per segment id (-inf / the dtype's min when empty)."""
    return _segment("segment_max", "max", data, segment_ids, num_segments,
                    indices_are_sorted, unique_indices, bucket_size, jnp.max, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    """Minimum of ``data`` rows per segment id (+inf / the dtype's max when empty)."""
    return _segment("segment_min", "min", data, segment_ids, num_segments,
                    indices_are_sorted, unique_indices, bucket_size, jnp.min, mode)

"""The statistic, ramp, reflection and callable modes of ``jnp.pad``.

``_shape.pad`` handles ``constant`` and the index-only modes (edge, even reflect/symmetric,
wrap) with static gathers; these modes need arithmetic on the array's values, so they are
written with xform.numpy functions and follow JAX's definitions (odd reflection chunked by
the original axis length, integer statistics rounded, ramps computed by ``linspace``).
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import dtypes
from xform.numpy._shape import pad
import xform.numpy as jnp


def _jnp():
    return jnp


def _pairs(value, nd, name):
    """``value`` as ``nd`` (before, after) pairs, as np.pad broadcasts its per-axis options."""
    try:
        arr = np.broadcast_to(np.asarray(value, dtype=object), (nd, 2))
    except ValueError:
        raise ValueError(f"jnp.pad: {name}={value!r} cannot be broadcast to ({nd}, 2) for an "
                         f"array of {nd} dimensions") from None
    return [(arr[i, 0], arr[i, 1]) for i in range(nd)]


def _take_edge(x, axis, before):
    jnp = _jnp()
    n = x.shape[axis]
    return jnp.take(x, np.array([0 if before else n - 1]), axis=axis)


def pad_reflect_odd(x, pw, mode):
    """Odd reflection (``reflect_type='odd'``): reflected values mirrored through the edge,
    ``2 * edge - reflected``, chunk by chunk as the padding outgrows the axis."""
    jnp = _jnp()
    for axis, (before, after) in enumerate(pw):
        size = x.shape[axis]
        if not (before or after):
            continue
        if size == 0:
            raise ValueError(f"can't extend empty axis {axis} using modes other than "
                             "'constant' or 'empty'")
        offset = 1 if (mode == "reflect" and size > 1) else 0
        for is_before, width in ((True, before), (False, after)):
            edge = _take_edge(x, axis, is_before)
            while width > 0:
                chunk = min(width, size - offset)
                width -= chunk
                n = x.shape[axis]
                if is_before:
                    idx = np.arange(offset, offset + chunk)
                else:
                    stop = n if (mode == "symmetric" or size == 1) else n - 1
                    idx = np.arange(stop - chunk, stop)
                part = jnp.flip(jnp.take(x, idx, axis=axis), axis)
                part = (2 * edge - part).astype(x.dtype)
                if size > 1:
                    edge = _take_edge(part, axis, is_before)
                x = jnp.concatenate([part, x] if is_before else [x, part], axis=axis)
    return x


def pad_linear_ramp(x, pw, end_values):
    jnp = _jnp()
    for axis, ((before, after), (end_b, end_a)) in enumerate(
            zip(pw, _pairs(end_values, x.ndim, "end_values"))):
        ramps = []
        for is_before, width, end in ((True, before, end_b), (False, after, end_a)):
            edge = jnp.squeeze(_take_edge(x, axis, is_before), axis)
            ramp = jnp.linspace(end, edge, width, endpoint=False, dtype=x.dtype, axis=axis)
            ramps.append(ramp if is_before else jnp.flip(ramp, axis))
        x = jnp.concatenate([ramps[0], x, ramps[1]], axis=axis)
    return x


_STATS = {"maximum": "max", "minimum": "min", "mean": "mean", "median": "median"}


def pad_stat(x, pw, mode, stat_length):
    jnp = _jnp()
    func = getattr(jnp, _STATS[mode])
    lengths = None if stat_length is None else _pairs(stat_length, x.ndim, "stat_length")
    for axis, (before, after) in enumerate(pw):
        if x.shape[axis] == 0 and (before or after):
            raise ValueError(f"can't extend empty axis {axis} using modes other than "
                             "'constant' or 'empty'")
        if lengths is None:
            stat_b = stat_a = func(x, axis=axis, keepdims=True)
        else:
            lb, la = (int(v) for v in lengths[axis])
            if lb == 0 or la == 0:
                raise ValueError("stat_length of 0 yields no value for padding")
            n = x.shape[axis]
            lb, la = min(lb, n), min(la, n)
            stat_b = func(jnp.take(x, np.arange(lb), axis=axis), axis=axis, keepdims=True)
            stat_a = func(jnp.take(x, np.arange(n - la, n), axis=axis), axis=axis,
                          keepdims=True)
        if dtypes.issubdtype(x.dtype, np.integer):
            stat_b, stat_a = jnp.round(stat_b), jnp.round(stat_a)
        stat_b, stat_a = stat_b.astype(x.dtype), stat_a.astype(x.dtype)
        x = jnp.concatenate([jnp.repeat(stat_b, before, axis=axis), x,
                             jnp.repeat(stat_a, after, axis=axis)], axis=axis)
    return x


def pad_empty(x, pw):
    """``mode='empty'``: the padding is unspecified in NumPy; zeros here, as in JAX."""
    return pad(x, pw)


def pad_callable(x, pw, func, kwargs):
    """A callable mode: ``func(row, (before, after), axis, kwargs)`` returns the padded row;
    it is mapped over every 1-D row along each axis in turn (rows start zero-padded)."""
    jnp = _jnp()
    x = pad(x, pw)
    for axis in range(x.ndim):
        x = jnp.apply_along_axis(func, axis, x, pw[axis], axis, kwargs)
    return x

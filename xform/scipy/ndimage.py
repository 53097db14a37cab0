"""``xform.scipy.ndimage``: ``map_coordinates`` (order 0 or 1; modes constant, nearest,
wrap, mirror, reflect), as ``jax.scipy.ndimage``."""
from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

from xform._src.interpreters import dtypes
from xform import numpy as xnp
from xform.numpy import _util as U
from xform import lax

__all__ = ["map_coordinates"]


def _mirror(index, size):
    s = size - 1
    return xnp.abs((index + s) % (2 * s) - s)


def _reflect(index, size):
    return xnp.floor_divide(_mirror(2 * index + 1, 2 * size + 1) - 1, 2)


_INDEX_FIXERS = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: xnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round(a):
    return a if dtypes.issubdtype(a.dtype, np.integer) else lax.round(a)


def _nearest(coordinate):
    return [(_round(coordinate).astype(np.int32), coordinate.dtype.type(1))]


def _linear(coordinate):
    lower = xnp.floor(coordinate)
    upper_weight = coordinate - lower
    return [(lower.astype(np.int32), 1 - upper_weight),
            (lower.astype(np.int32) + 1, upper_weight)]


def map_coordinates(input, coordinates, order, mode="constant", cval=0.0):
    """Sample ``input`` at ``coordinates`` (one array per input axis) by nearest (order 0)
    or linear (order 1) interpolation; out-of-range indices follow ``mode``."""
    U.check_arraylike("map_coordinates", input)
    arr = xnp.asarray(input)
    coords = [xnp.asarray(c) for c in coordinates]
    cval = xnp.asarray(cval, arr.dtype)
    if len(coords) != arr.ndim:
        raise ValueError("coordinates must be a sequence of length input.ndim, but "
                         f"{len(coords)} != {arr.ndim}")
    fixer = _INDEX_FIXERS.get(mode)
    if fixer is None:
        raise NotImplementedError(f"map_coordinates does not support mode {mode!r} (as in "
                                  f"JAX); supported modes are {sorted(_INDEX_FIXERS)}.")
    if order == 0:
        interp = _nearest
    elif order == 1:
        interp = _linear
    else:
        raise NotImplementedError("map_coordinates requires order <= 1 (as in JAX); got "
                                  f"order={order}")
    if mode == "constant":
        def is_valid(index, size):
            return (0 <= index) & (index < size)
    else:
        def is_valid(index, size):
            return True
    per_axis = []
    for c, size in zip(coords, arr.shape):
        per_axis.append([(fixer(i, size), is_valid(i, size), w) for i, w in interp(c)])
    outputs = []
    for items in itertools.product(*per_axis):
        indices, valids, weights = zip(*items)
        if all(v is True for v in valids):
            contribution = arr[indices]
        else:
            ok = functools.reduce(operator.and_, valids)
            contribution = xnp.where(ok, arr[indices], cval)
        outputs.append(functools.reduce(operator.mul, weights) * contribution)
    result = sum(outputs[1:], outputs[0])
    if dtypes.issubdtype(arr.dtype, np.integer):
        result = _round(result)
    return result.astype(arr.dtype)

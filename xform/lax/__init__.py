"""``xform.lax``: the primitive-level API (JAX's names and signatures).

Each family module in ``primitives/`` lists its ``xform.lax`` functions in ``__all__``.
"""
from xform._src.primitives.collectives import *  # noqa: F401,F403
from xform._src.primitives.control_flow import *  # noqa: F401,F403
from xform._src.primitives.convolution import *  # noqa: F401,F403
from xform._src.primitives.elementwise import *  # noqa: F401,F403
from xform._src.primitives.fft import *  # noqa: F401,F403
from xform._src.primitives.indexing import *  # noqa: F401,F403
from xform._src.primitives.dot_general import *  # noqa: F401,F403
from xform._src.primitives.misc import *  # noqa: F401,F403
from xform._src.primitives.random import *  # noqa: F401,F403
from xform._src.primitives.reductions import *  # noqa: F401,F403
from xform._src.primitives.sorting import *  # noqa: F401,F403
from xform._src.primitives.special import *  # noqa: F401,F403
from xform._src.primitives.structural import *  # noqa: F401,F403
from xform._src.primitives.windowed import *  # noqa: F401,F403
from xform._src.primitives.dce_sink import *  # noqa: F401,F403
from xform._src.primitives.spmd import all_to_all, pbroadcast, ppermute, pshuffle, pswapaxes  # noqa: F401
from xform.lax import linalg  # noqa: F401
from xform.lax._solves import custom_linear_solve, custom_root  # noqa: F401
from xform.sharding._jit import with_sharding_constraint  # noqa: F401
from xform.lax._primitives import *  # noqa: F401,F403  (the engine's primitives, JAX's names)
from xform._src.interpreters import core as _core, dtypes as _dtypes
from xform._src.primitives import elementwise as _ew


def dtype(x):
    """JAX's ``lax.dtype``: the canonical dtype (64-bit types narrowed without x64) of an
    array, a scalar, a scalar type or a dtype name."""
    if isinstance(x, _core.ArrayOps):
        return x.dtype
    return _dtypes.dtype_of(x)


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
    """JAX's ``lax.scatter_sub``: ``operand`` with ``updates`` subtracted at the scattered
    positions (a ``scatter_add`` of the negated updates)."""
    return scatter_add(operand, scatter_indices, _ew.neg(updates), dimension_numbers,  # noqa: F405
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                       mode=mode)


def tile(operand, reps):
    """JAX's ``lax.tile``: ``operand`` repeated ``reps[i]`` times along each axis (``reps``
    has one entry per axis)."""
    from xform.numpy import _util as _U  # deferred: import cycle
    x = _U.to_array(operand)
    reps = tuple(int(r) for r in reps)
    if len(reps) != x.ndim:
        raise TypeError(f"reps length must be equal to the ndim of x, got len(reps)="
                        f"{len(reps)} and x.ndim={x.ndim}.")
    # broadcast a new axis of size r before each axis, then merge the pairs
    shape, dims = [], []
    for i, (r, d) in enumerate(zip(reps, x.shape)):
        shape += [r, d]
        dims.append(2 * i + 1)
    y = broadcast_in_dim(x, tuple(shape), tuple(dims))  # noqa: F405
    return reshape(y, tuple(r * d for r, d in zip(reps, x.shape)))  # noqa: F405


def stack(operands, axis=0):
    """JAX's ``lax.stack``: same-shaped arrays joined along a new axis ``axis``."""
    from xform.numpy import _util as _U  # deferred: import cycle
    ops = [_U.to_array(o) for o in operands]
    if not ops:
        raise ValueError("Need at least one array to stack.")
    shape = ops[0].shape
    if any(o.shape != shape for o in ops):
        raise ValueError("All input arrays must have the same shape. Got "
                         + ", ".join(str(o.shape) for o in ops) + ".")
    nd = len(shape) + 1
    ax = axis + nd if axis < 0 else axis
    if not 0 <= ax < nd:
        raise ValueError(f"axis {axis} is out of bounds for the stacked result of rank {nd}")
    new = shape[:ax] + (1,) + shape[ax:]
    return concatenate([reshape(o, new) for o in ops], ax)  # noqa: F405


def unstack(x, axis=0):
    """JAX's ``lax.unstack``: the slices of ``x`` along ``axis``, as a tuple."""
    from xform.numpy import _util as _U  # deferred: import cycle
    x = _U.to_array(x)
    ax = axis + x.ndim if axis < 0 else axis
    if not 0 <= ax < x.ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {x.ndim}")
    return tuple(index_in_dim(x, i, ax, keepdims=False) for i in range(x.shape[ax]))  # noqa
from xform.lax._composites import *  # noqa: F401,F403

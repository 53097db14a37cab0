"""``xform.flatten_util.ravel_pytree``: a pytree of arrays <-> one flat vector."""
from __future__ import annotations

import numpy as np
from xform import lax
from xform import numpy as jnp
from xform._src.interpreters import dtypes
from xform.tree_util import tree_flatten

__all__ = ["ravel_pytree"]


class _Unravel:
    """flat vector -> pytree (hashable, so it can be a static argument)."""

    __slots__ = ("treedef", "sizes", "shapes", "dtypes", "flat_dtype")

    def __init__(self, treedef, sizes, shapes, dtypes, flat_dtype):
        self.treedef, self.sizes, self.shapes = treedef, sizes, shapes
        self.dtypes, self.flat_dtype = dtypes, flat_dtype

    def __call__(self, flat):
        flat = jnp.asarray(flat)
        if flat.dtype != self.flat_dtype:
            raise TypeError(f"unravel function given array of dtype {flat.dtype}, but "
                            f"expected dtype {self.flat_dtype}")
        total = int(sum(self.sizes))
        if flat.shape != (total,):
            raise ValueError(f"The unravel function expected an array of shape {(total,)}, "
                             f"got shape {flat.shape}.")
        leaves, start = [], 0
        for n, shape, dt in zip(self.sizes, self.shapes, self.dtypes):
            chunk = lax.slice(flat, (start,), (start + n,)).reshape(shape)
            leaves.append(chunk if chunk.dtype == dt else lax.convert_element_type(chunk, dt))
            start += n
        return self.treedef.unflatten(leaves)

    def __eq__(self, other):
        return isinstance(other, _Unravel) and (self.treedef, self.sizes, self.shapes,
                                                self.dtypes, self.flat_dtype) == (
            other.treedef, other.sizes, other.shapes, other.dtypes, other.flat_dtype)

    def __hash__(self):
        return hash((self.treedef, self.sizes, self.shapes, self.dtypes))


def ravel_pytree(pytree):
    """``(flat, unravel)``: the leaves raveled and concatenated into one 1-D array of
    their promoted dtype, and the function mapping such a vector back to the pytree
    (each leaf converted back to its own dtype).  No leaves: an empty float32 vector."""
    leaves, treedef = tree_flatten(pytree)
    if not leaves:
        return jnp.zeros((0,), np.float32), _Unravel(treedef, (), (), (), np.dtype(np.float32))
    leaves = [jnp.asarray(l) for l in leaves]
    from_dtypes = tuple(l.dtype for l in leaves)
    to = dtypes.result_type(*leaves)
    sizes = tuple(int(l.size) for l in leaves)
    shapes = tuple(tuple(l.shape) for l in leaves)
    parts = [lax.convert_element_type(l, to).reshape(-1) if l.dtype != to else l.reshape(-1)
             for l in leaves]
    flat = lax.concatenate(parts, 0)
    return flat, _Unravel(treedef, sizes, shapes, from_dtypes, np.dtype(to))

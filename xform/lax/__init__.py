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
from xform._src.primitives.spmd import all_to_all, pbroadcast, ppermute, pshuffle, pswapaxes  # noqa: F401
from xform.lax import linalg  # noqa: F401
from xform.lax._solves import custom_linear_solve, custom_root  # noqa: F401
from xform.sharding._jit import with_sharding_constraint  # noqa: F401
from xform.lax._primitives import *  # noqa: F401,F403  (the engine's primitives, JAX's names)


def dtype(x):
    """JAX's ``lax.dtype``: the canonical dtype (64-bit types narrowed without x64) of an
    array, a scalar, a scalar type or a dtype name."""
    from xform._src.interpreters import core as _core, dtypes as _dtypes
    if isinstance(x, _core.ArrayOps):
        return x.dtype
    return _dtypes.dtype_of(x)


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
    """JAX's ``lax.scatter_sub``: ``operand`` with ``updates`` subtracted at the scattered
    positions (a ``scatter_add`` of the negated updates)."""
    from xform._src.primitives import elementwise as _ew
    return scatter_add(operand, scatter_indices, _ew.neg(updates), dimension_numbers,  # noqa: F405
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                       mode=mode)


class RaggedDotDimensionNumbers:
    """JAX's ``lax.RaggedDotDimensionNumbers`` (a frozen record): the dot dimension
    numbers ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` plus the lhs
    ragged and rhs group dimensions of a ragged dot."""

    __slots__ = ("dot_dimension_numbers", "lhs_ragged_dimensions", "rhs_group_dimensions")

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        object.__setattr__(self, "dot_dimension_numbers",
                           tuple(tuple(tuple(v) for v in t) for t in dot_dimension_numbers))
        object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r}")

    def _key(self):
        return (self.dot_dimension_numbers, self.lhs_ragged_dimensions,
                self.rhs_group_dimensions)

    def __eq__(self, other):
        return isinstance(other, RaggedDotDimensionNumbers) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"RaggedDotDimensionNumbers(dot_dimension_numbers="
                f"{self.dot_dimension_numbers!r}, lhs_ragged_dimensions="
                f"{self.lhs_ragged_dimensions!r}, rhs_group_dimensions="
                f"{self.rhs_group_dimensions!r})")

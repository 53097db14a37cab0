"""Typed PRNG keys: the extended dtype ``key<fry>`` and its wrap/unwrap primitives.

A key array's aval has the *logical* shape (``key(0).shape == ()``) and the
dtype ``KEY_DTYPE``; its physical representation is ``uint32[*shape, 2]``.

* Concretely (eager), a key array is an ``Array`` over a NumPy array of the
  structured dtype ``KEY_DTYPE.struct`` (one 8-byte record of two uint32 words
  per key) and of the logical shape, so every structural NumPy reference
  (reshape, slicing, gather, concatenate, broadcast, select, transpose, ...)
  works on key arrays unchanged.
* Staged programs keep key avals; before lowering, ``physicalize`` rewrites a
  program into one over ``uint32[..., 2]`` words (each structural primitive
  gets its trailing-axis version; sub-programs of control flow and jit are
  rewritten recursively), so XLA never sees a key type.
* ``random_wrap`` (words -> keys) and ``random_unwrap`` (keys -> words) are the
  only casts; both are free (identity) after physicalization.
"""
from __future__ import annotations

import numpy as np

from interpreters import batching, core
from interpreters.core import Primitive, ShapedArray
from interpreters.dtypes import ExtendedDType, register_extended
from primitives._rules import defjvp_zero

__all__: list = []

_U32 = np.dtype(np.uint32)


class KeyTy(ExtendedDType):
    """The dtype of threefry2x32 key arrays, printed ``key<fry>`` as in JAX."""

    __slots__ = ()
    name = "key<fry>"
    impl_name = "threefry2x32"
    key_shape = (2,)
    physical = _U32
    struct = np.dtype([("fry", "<u4", (2,))])
    itemsize = 8
    kind = "V"
    char = "V"
    type = np.void
    str = "key<fry>"
    names = None
    fields = None
    shape = ()
    subdtype = None

    def __repr__(self):
        return "key<fry>"

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, KeyTy) or (isinstance(other, str) and other == "key<fry>")

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash("key<fry>")

    def __reduce__(self):
        return (KeyTy, ())


KEY_DTYPE = KeyTy()
register_extended(KEY_DTYPE)


def is_key_aval(aval) -> bool:
    return isinstance(getattr(aval, "dtype", None), KeyTy)


def physical_aval(aval):
    if is_key_aval(aval):
        return ShapedArray(tuple(aval.shape) + (2,), _U32)
    return aval


def to_struct(words):
    """uint32[..., 2] NumPy words -> structured key array of the logical shape."""
    w = np.ascontiguousarray(np.asarray(words, _U32))
    return w.view(KEY_DTYPE.struct)[..., 0]


def to_words(keys):
    """Structured key array -> uint32[..., 2] NumPy words."""
    k = np.asarray(keys)
    return np.ascontiguousarray(k["fry"]).astype(_U32, copy=False)


# ================================================================ random_wrap

random_wrap_p = Primitive("random_wrap")


@random_wrap_p.def_abstract_eval
def _wrap_abstract(x, *, impl="threefry2x32"):
    if is_key_aval(x):
        raise TypeError(f"random_wrap expects uint32 key data, got a key array of dtype {x.dtype}")
    if x.dtype != _U32 or not x.shape or x.shape[-1] != 2:
        raise TypeError("xform encountered invalid PRNG key data: expected key_data.dtype = "
                        f"uint32 and key_data.shape ending with (2,); got {x.str_short()}")
    return ShapedArray(x.shape[:-1], KEY_DTYPE)


random_wrap_p.def_impl(lambda x, *, impl="threefry2x32": to_struct(x))
random_wrap_p.weak_rule = lambda args, params: False
defjvp_zero(random_wrap_p)


def _wrap_batch(axis_data, vals, dims, **params):
    (x,), (d,) = vals, dims
    if d == core.get_aval(x).ndim - 1:   # never the trailing word axis
        from primitives._rules import moveaxis
        x, d = moveaxis(x, d, 0), 0
    return random_wrap_p.bind(x, **params), d


batching.batch_rules[random_wrap_p] = _wrap_batch


def random_wrap(words):
    return random_wrap_p.bind(words, impl="threefry2x32")


# ================================================================ random_unwrap

random_unwrap_p = Primitive("random_unwrap")


@random_unwrap_p.def_abstract_eval
def _unwrap_abstract(x):
    if not is_key_aval(x):
        raise TypeError(f"random_unwrap takes key array operand, got {x.str_short()}")
    return physical_aval(x)


random_unwrap_p.def_impl(to_words)
random_unwrap_p.weak_rule = lambda args, params: False
defjvp_zero(random_unwrap_p)
batching.batch_rules[random_unwrap_p] = \
    lambda axis_data, vals, dims: (random_unwrap_p.bind(vals[0]), dims[0])


def random_unwrap(keys):
    return random_unwrap_p.bind(keys)


# ================================================================ random_clone

random_clone_p = Primitive("random_clone")
random_clone_p.def_abstract_eval(lambda x: x)
random_clone_p.def_impl(lambda x: np.array(x, copy=True))
defjvp_zero(random_clone_p)
batching.batch_rules[random_clone_p] = \
    lambda axis_data, vals, dims: (random_clone_p.bind(vals[0]), dims[0])


def random_clone(keys):
    return random_clone_p.bind(keys)

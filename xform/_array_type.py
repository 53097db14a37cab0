"""``xform.Array`` / ``xform.numpy.ndarray``: the public array *type*.

As ``jax.Array`` is an abstract base over concrete arrays and tracers, the public
type answers ``isinstance`` for both a concrete ``interpreters.core.Array`` and any
tracer (inside ``jit``/``grad``/``vmap``), so library code such as
``isinstance(x, jnp.ndarray)`` takes the same branch traced or not.  The engine
keeps using ``interpreters.core.Array`` to tell concrete values from tracers.
"""
from __future__ import annotations

from xform._src.interpreters import core

__all__ = ["Array"]


class _ArrayMeta(type):
    def __instancecheck__(cls, obj):
        # the concrete array and tracer types; and, as for any class, an object whose
        # ``__class__`` claims the type (``unittest.mock.Mock(spec=jax.Array)``)
        return isinstance(obj, (core.Array, core.Tracer)) or \
            type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub):
        return (isinstance(sub, type) and issubclass(sub, (core.Array, core.Tracer))) \
            or type.__subclasscheck__(cls, sub)


class Array(metaclass=_ArrayMeta):
    """The type of xform arrays (concrete or traced).  Not constructible: build arrays
    with ``xform.numpy.asarray``/``array``."""

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        raise TypeError("xform.Array cannot be instantiated directly; use "
                        "xform.numpy.asarray / xform.numpy.array / xform.device_put")


Array.__module__ = "xform"


# ``jax.Array`` declares the array interface on the abstract type (so that, e.g.,
# ``unittest.mock.Mock(spec=jax.Array, ...)`` accepts ``shape=`` or ``__getitem__=``,
# and ``jax.Array.sum(x)`` works unbound).  The same names here delegate to the
# concrete array or tracer they are called on (``Array`` itself has no instances).
_ARRAY_PROPERTIES = (
    "T", "mT", "at", "addressable_shards", "committed", "device", "dtype", "flat",
    "global_shards", "imag", "is_fully_addressable", "is_fully_replicated", "itemsize",
    "nbytes", "ndim", "real", "shape", "sharding", "size")
_ARRAY_METHODS = (
    "__abs__", "__add__", "__and__", "__array_namespace__", "__contains__", "__copy__",
    "__deepcopy__", "__divmod__", "__floordiv__", "__getitem__", "__invert__",
    "__lshift__", "__matmul__", "__mod__", "__mul__", "__neg__", "__or__", "__pos__",
    "__pow__", "__radd__", "__rand__", "__rdivmod__", "__rfloordiv__", "__rlshift__",
    "__rmatmul__", "__rmod__", "__rmul__", "__ror__", "__round__", "__rpow__",
    "__rrshift__", "__rshift__", "__rsub__", "__rtruediv__", "__rxor__", "__setitem__",
    "__sub__", "__truediv__", "__xor__", "addressable_data", "all", "any", "argmax",
    "argmin", "argpartition", "argsort", "astype", "byteswap", "choose", "clip",
    "compress", "conj", "conjugate", "copy", "copy_to_host_async", "cumprod", "cumsum",
    "diagonal", "dot", "flatten", "item", "max", "mean", "min", "nonzero", "prod", "ptp",
    "ravel", "repeat", "reshape", "round", "searchsorted", "sort", "squeeze", "std", "sum",
    "swapaxes", "take", "to_device", "trace", "transpose", "var", "view")


def _delegate_method(name):
    def method(self, *args, **kwargs):
        return getattr(self, name)(*args, **kwargs)
    method.__name__ = method.__qualname__ = name
    return method


def _delegate_property(name):
    return property(lambda self: getattr(self, name), doc=f"The array's ``{name}``.")


for _n in _ARRAY_PROPERTIES:
    if _n not in Array.__dict__:
        setattr(Array, _n, _delegate_property(_n))
for _n in _ARRAY_METHODS:
    if _n not in Array.__dict__:
        setattr(Array, _n, _delegate_method(_n))
del _n

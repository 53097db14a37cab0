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
        return isinstance(obj, (core.Array, core.Tracer))

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

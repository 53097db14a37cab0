"""``xform.experimental.hijax`` (JAX's ``jax.experimental.hijax``): user-defined
high-level types and primitives.

xform does not implement hijax: a high-level primitive cannot be bound and a high-level
type cannot be traced.  The names exist so that libraries that define such types and
primitives at import (flax.nnx's hijax variables, used only when its ``hijax`` option is
on) import and run their default paths.  Defining subclasses and registering types
works; binding a ``HiPrimitive``, constructing ``HiPspec``/``VJPHiPrimitive`` or asking
for ``cur_qdd`` raises ``NotImplementedError`` naming it.

``AbstractValue``, ``ShapedArray``, ``Zero``, ``instantiate_zeros`` and
``is_undefined_primal`` are xform's own (the same objects as in ``xform.core`` and
``xform.interpreters.ad``).
"""
from __future__ import annotations

from xform.core import AbstractValue, ShapedArray
from xform.interpreters.ad import Zero, instantiate_zeros, is_undefined_primal
from xform.ref import AbstractRef

__all__ = ["AbstractRef", "AbstractValue", "AvalMutableQDD", "AvalQDD", "HiPrimitive",
           "HiPspec", "HiType", "MutableHiType", "ShapedArray", "TransformedRef",
           "VJPHiPrimitive", "Zero", "aval_method", "aval_property",
           "control_flow_allowed_effects", "instantiate_zeros", "is_undefined_primal",
           "register_hitype"]

_WHY = ("high-level (hijax) types and primitives are not implemented by xform; "
        "use ordinary pytrees of arrays (for flax.nnx: leave its hijax/ref options off)")


def _refuse(what):
    raise NotImplementedError(f"{what}: {_WHY}")


class HiType(AbstractValue):
    """Base of user-defined high-level abstract values (JAX's ``HiType``).  Subclasses
    may be defined; xform never traces a value of one."""


class MutableHiType(HiType):
    """A high-level type with mutable per-trace data (JAX's ``MutableHiType``)."""


class AvalQDD:
    """An abstract value with its quasi-dynamic data (JAX's ``AvalQDD``)."""

    __slots__ = ("aval", "qdd")

    def __init__(self, aval, qdd):
        self.aval, self.qdd = aval, qdd

    def __repr__(self):
        return f"AvalQDD({self.aval!r}, {self.qdd!r})"


class AvalMutableQDD:
    """An abstract value with mutable quasi-dynamic data (JAX's ``AvalMutableQDD``)."""

    __slots__ = ("aval", "mutable_qdd")

    def __init__(self, aval, mutable_qdd):
        self.aval, self.mutable_qdd = aval, mutable_qdd

    def __repr__(self):
        return f"AvalMutableQDD({self.aval!r}, {self.mutable_qdd!r})"


class aval_method:
    """Marks a method of a high-level type as callable on its tracers (JAX's
    ``aval_method``); ``fun`` is the method."""

    def __init__(self, fun):
        self.fun = fun


class aval_property:
    """Marks a property of a high-level type as readable on its tracers (JAX's
    ``aval_property``); ``fget`` is the getter."""

    def __init__(self, fget):
        self.fget = fget


class HiPrimitive:
    """A user-defined high-level primitive (JAX's ``HiPrimitive``).  Subclasses may be
    defined and instantiated; ``bind`` raises ``NotImplementedError``."""

    multiple_results = False

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name

    def bind(self, *args, **params):
        _refuse(f"binding the high-level primitive {self.name!r} "
                "(jax.experimental.hijax.HiPrimitive)")


class VJPHiPrimitive:
    """JAX's ``VJPHiPrimitive``: refused on construction."""

    def __init__(self, *args, **kwargs):
        _refuse("jax.experimental.hijax.VJPHiPrimitive")


class HiPspec:
    """JAX's ``HiPspec``: refused on construction."""

    def __init__(self, *args, **kwargs):
        _refuse("jax.experimental.hijax.HiPspec")


class TransformedRef:
    """JAX's ``TransformedRef`` (a view of an array reference): xform has no references
    (see ``xform.ref``), so none exists; construction raises."""

    def __init__(self, *args, **kwargs):
        _refuse("jax.experimental.hijax.TransformedRef")


class _EffectTypeSet:
    """A set of effect types (JAX's ``EffectTypeSet``): ``add_type``/``contains``."""

    def __init__(self):
        self._types = set()

    def add_type(self, effect_type):
        self._types.add(effect_type)

    def contains(self, eff):
        return any(isinstance(eff, t) for t in self._types)

    def filter_in(self, effects):
        return [e for e in effects if self.contains(e)]

    def filter_not_in(self, effects):
        return [e for e in effects if not self.contains(e)]


# The effect types JAX lets into control-flow bodies; xform has no user effects reaching
# control flow, so it is a registry only.
control_flow_allowed_effects = _EffectTypeSet()

# type -> function giving its HiType, as registered by ``register_hitype``.
hitype_registry: dict = {}


def register_hitype(cls, to_aval):
    """Registers ``cls`` as a high-level value type whose abstract value is
    ``to_aval(x)`` (JAX's ``register_hitype``).  xform records it; passing such a value
    to a transformation is refused, as for any non-array."""
    hitype_registry[cls] = to_aval


def cur_qdd(x):
    """JAX's ``jax.experimental.cur_qdd``: refused (``NotImplementedError``)."""
    _refuse("jax.experimental.cur_qdd")

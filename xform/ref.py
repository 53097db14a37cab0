"""``xform.ref`` (JAX's ``jax.ref``): mutable array references.

xform has no mutable array references: its values are immutable and its programs are
pure.  The names exist so that libraries which test for them, or name them in type
checks (``isinstance(x, Ref)``), import and run on their default paths; no xform value
is a ``Ref`` or has an ``AbstractRef`` type, and every operation that would make or use
a reference raises ``NotImplementedError`` naming it.  Use immutable arrays and return
updated values instead (for state in loops: ``lax.fori_loop``/``scan`` carries).
"""
from __future__ import annotations

__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get",
           "new_ref", "set", "swap"]

_WHY = ("mutable array references are not implemented by xform (its arrays are "
        "immutable); carry the value and return the updated one instead")


def _refuse(what):
    raise NotImplementedError(f"{what}: {_WHY}")


class AbstractRef:
    """The abstract value of a mutable array reference (JAX's ``AbstractRef``).  No
    xform value has this type; constructing one raises ``NotImplementedError``."""

    def __init__(self, *args, **kwargs):
        _refuse("jax.ref.AbstractRef")


class Ref:
    """A mutable array reference (JAX's ``jax.Ref``).  No xform value is one;
    ``jax.new_ref`` refuses with ``NotImplementedError``."""

    def __init__(self, *args, **kwargs):
        _refuse("jax.Ref")


def new_ref(init_val, *, memory_space=None, kind=None):
    """JAX's ``jax.new_ref``: refused (``NotImplementedError``)."""
    _refuse("jax.new_ref")


def empty_ref(ty, memory_space=None):
    """JAX's ``jax.empty_ref``: refused (``NotImplementedError``)."""
    _refuse("jax.empty_ref")


def freeze(ref):
    """JAX's ``jax.freeze``: refused (``NotImplementedError``)."""
    _refuse("jax.freeze")


def free_ref(ref):
    """JAX's ``jax.free_ref``: refused (``NotImplementedError``)."""
    _refuse("jax.free_ref")


def get(ref, idx=None):
    """JAX's ``jax.ref.get``: refused (``NotImplementedError``)."""
    _refuse("jax.ref.get")


def set(ref, idx, value):  # noqa: A001  (JAX's name)
    """JAX's ``jax.ref.set``: refused (``NotImplementedError``)."""
    _refuse("jax.ref.set")


def swap(ref, idx, value, _function_name="ref_swap"):
    """JAX's ``jax.ref.swap``: refused (``NotImplementedError``)."""
    _refuse("jax.ref.swap")


def addupdate(ref, idx, x):
    """JAX's ``jax.ref.addupdate``: refused (``NotImplementedError``)."""
    _refuse("jax.ref.addupdate")

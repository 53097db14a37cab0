"""A stand-in for the parts of ``jax._src`` that JAX's own test files import.

JAX's tests under ``tests/`` import their helpers from ``jax._src`` (``test_util``,
``internal_test_util.lax_test_util``, ``config``, ``dtypes``, ...).  This package gives
them the same names, written here from the documented behaviour of those helpers and
built only on the *public* API of the library under test (``import jax``: real JAX, or
xform behind ``xform.compat.alias_jax()``), so the same test file exercises either
library through the same layer.

What is not a test helper but a JAX internal (``jax._src.lax.lax._convert_element_type``,
``jax._src.numpy.indexing.rewriting_take``, ``jax._src.interpreters.mlir`` ...) is an
:class:`Internal` placeholder: importing it succeeds, using it raises
:class:`InternalNotProvided`, so the tests that need it fail for both libraries alike.
The pure-NumPy reference implementations ``jax._src.lax_reference`` are the one piece
taken from the installed JAX as is: they are the oracle, not the library under test.
"""
from __future__ import annotations

import sys
import types


class InternalNotProvided(NotImplementedError):
    """A test used a JAX internal that the test layer does not stand in for."""


class Internal:
    """A placeholder for a JAX internal: attribute access gives another placeholder,
    calling it raises InternalNotProvided (naming the internal)."""

    def __init__(self, name):
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Internal(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise InternalNotProvided(
            f"{self._name} is a JAX internal; the jax-tests layer does not provide it")

    def __iter__(self):
        return iter([Internal(f"{self._name}[0]")])

    def __getitem__(self, key):
        return Internal(f"{self._name}[{key!r}]")

    def __repr__(self):
        return f"<JAX internal {self._name} (not provided)>"

    def __mro_entries__(self, bases):
        # a class deriving from a JAX internal is defined (on object); using it fails
        return (object,)

    def __enter__(self):
        self()

    def __exit__(self, *a):
        return False


def internal_module(name, **attrs):
    """A module whose unknown attributes are Internal placeholders."""
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)

    def __getattr__(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Internal(f"{name}.{attr}")

    mod.__getattr__ = __getattr__
    return mod


def library_name() -> str:
    """'xform' when ``import jax`` is aliased to xform, else 'jax'."""
    jax = sys.modules.get("jax")
    return "xform" if getattr(jax, "__xform_alias__", False) else "jax"

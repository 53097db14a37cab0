"""``jax._src.flatten_util`` under the alias: ``ravel_pytree`` (blackjax imports it from
here), xform's ``xform.flatten_util.ravel_pytree``."""
from __future__ import annotations

from xform.flatten_util import ravel_pytree  # noqa: F401

__all__ = ["ravel_pytree"]

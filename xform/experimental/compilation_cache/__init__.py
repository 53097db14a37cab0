"""``xform.experimental.compilation_cache`` (JAX's module of the same name)."""
from xform.experimental.compilation_cache import compilation_cache  # noqa: F401

__all__ = ["compilation_cache"]

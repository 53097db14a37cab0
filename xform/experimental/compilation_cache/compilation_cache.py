"""JAX's ``compilation_cache.set_cache_dir`` / ``reset_cache`` over xform's persistent
compilation cache (``lowering/compilation_cache.py``; see docs/performance.md)."""
from xform._src.interpreters.config import config

__all__ = ["set_cache_dir", "reset_cache"]


def set_cache_dir(path) -> None:
    """Use ``path`` as the persistent compilation cache's directory (the
    ``jax_compilation_cache_dir`` option)."""
    config.update("jax_compilation_cache_dir", None if path is None else str(path))


def reset_cache() -> None:
    """Back to the state before first use.  xform's cache keeps no in-memory state (each
    compile reads the options and the directory afresh), so there is nothing to drop;
    entries on disk stay, as in JAX."""

"""``xform.experimental.pjit``: JAX's deprecated ``pjit`` name.

``pjit.pjit`` is ``xform.jit`` (which takes ``in_shardings``/``out_shardings``);
reading it warns with ``DeprecationWarning`` as JAX 0.10 does.
"""
import warnings as _warnings

__all__ = []


def __getattr__(name):
    if name == "pjit":
        _warnings.warn("jax.experimental.pjit.pjit has been deprecated. Please use "
                       "`jax.jit` instead.", DeprecationWarning, stacklevel=2)
        import xform  # deferred: import cycle
        return xform.jit
    raise AttributeError(f"module 'jax.experimental.pjit' has no attribute {name!r}")

"""How a transformation's result takes on the identity of the callable it wraps."""
import functools


def callable_name(fun, default="<unnamed function>"):
    """``fun.__name__``, the wrapped function's name for a ``functools.partial``, or
    ``default`` (a callable object's ``__name__`` may be missing or None)."""
    name = getattr(fun, "__name__", None)
    if isinstance(name, str):
        return name
    if isinstance(fun, functools.partial):
        return callable_name(fun.func, default)
    return default


def wraps(wrapped):
    """``functools.wraps`` for transformations (as JAX's ``jit``/``grad``/``vmap``/
    ``jacfwd`` ... do): the result carries ``wrapped``'s name, qualified name, module,
    docstring, annotations and ``__dict__``, and ``__wrapped__`` points at ``wrapped``,
    so that code walking ``__wrapped__`` (equinox's check for transformed callables
    stored on a Module) finds it. Any callable is accepted: what it lacks, or has in a
    form a function cannot take (an equinox Module's ``__name__`` is None), is skipped."""
    def decorate(fun):
        name = callable_name(wrapped)
        fields = (("__name__", name),
                  ("__qualname__", getattr(wrapped, "__qualname__", None) or name),
                  ("__module__", getattr(wrapped, "__module__", None)),
                  ("__doc__", getattr(wrapped, "__doc__", None)),
                  ("__annotations__", getattr(wrapped, "__annotations__", None) or {}))
        try:
            fun.__dict__.update(getattr(wrapped, "__dict__", {}))
        except (TypeError, AttributeError, ValueError):
            pass
        for attr, value in fields:
            try:
                setattr(fun, attr, value)
            except (TypeError, AttributeError):
                pass
        fun.__wrapped__ = wrapped
        return fun
    return decorate

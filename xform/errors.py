"""``xform.errors``: the exception types JAX users catch (``jax.errors``)."""
from xform._src.interpreters import errors as _e
from xform._src.interpreters.errors import (ConcretizationTypeError, TracerArrayConversionError,  # noqa
                                 TracerBoolConversionError, TracerIntegerConversionError,
                                 UnexpectedTracerError)

__all__ = ["ConcretizationTypeError", "TracerArrayConversionError",
           "TracerBoolConversionError", "TracerIntegerConversionError",
           "UnexpectedTracerError", "NonConcreteBooleanIndexError", "JAXTypeError",
           "JAXIndexError", "JaxRuntimeError", "JaxprTypeError", "KeyReuseError",
           "InconclusiveDimensionOperation"]


def _get(name, default):
    return getattr(_e, name, None) or default


JAXTypeError = _e.XformTypeError   # base of ConcretizationTypeError & co, as in JAX


class JAXIndexError(IndexError):
    """An IndexError raised by xform."""


NonConcreteBooleanIndexError = _get("NonConcreteBooleanIndexError",
                                    type("NonConcreteBooleanIndexError", (JAXIndexError,),
                                         {"__doc__": "Boolean-mask indexing with a traced "
                                                     "mask (the result shape is unknown)."}))


def __getattr__(name):
    if name == "JaxRuntimeError":
        # jaxlib's own class, as in JAX: what XLA raises running a program (a host
        # callback that raised, ...); looked up on first use so `import xform` does not
        # load jaxlib
        from xform._src.lowering import runtime  # deferred: keeps `import xform` light
        return runtime.JaxRuntimeError
    raise AttributeError(f"module 'xform.errors' has no attribute {name!r}")


JaxprTypeError = _e.JaxprTypeError
KeyReuseError = _e.KeyReuseError


class InconclusiveDimensionOperation(Exception):
    """A symbolic-dimension comparison could not be decided."""

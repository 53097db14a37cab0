"""``xform.core``: JAX 0.10.2's ``jax.core`` names, served by xform's engine.

``Tracer`` is the class of every xform tracer (``isinstance(x, xform.core.Tracer)``
tells whether ``x`` is being traced by a transformation), ``ShapedArray`` xform's
abstract value, ``Trace`` its traces, ``eval_jaxpr`` evaluates one of xform's programs
under the current transformation.  The names JAX 0.10.2 still serves here with a
deprecation warning (``DropVar``, ``concrete_or_error``, ``find_top_trace``, ...) are
xform's (from ``xform.extend.core``, where JAX moved them); the names JAX 0.10 removed
(``get_aval``, ``mapped_aval``, ...) raise AttributeError with JAX's message.
"""
from __future__ import annotations

import abc as _abc
import contextlib as _contextlib

import numpy as _np

from xform._src.interpreters import core as _core
from xform._src.interpreters import dtypes as _dtypes
from xform._src.interpreters import ir as _ir
from xform._src.interpreters.core import ShapedArray, Trace, Tracer
from xform.extend import core as _ext

__all__ = ["AbstractValue", "Atom", "ParamDict", "ShapedArray", "Trace", "Tracer",
           "Value", "ensure_compile_time_eval", "eval_context", "eval_jaxpr", "max_dim",
           "min_dim", "pytype_aval_mappings"]


class AbstractValue(_abc.ABC):
    """Base of abstract values (``ShapedArray`` is one)."""


AbstractValue.register(ShapedArray)


class Value(_abc.ABC):
    """Base of concrete values (xform's ``Array`` is one)."""


Value.register(_core.Array)

Atom = _ir.Var | _ir.Literal
ParamDict = dict


def eval_jaxpr(jaxpr, consts, *args, propagate_source_info=True):
    """The outputs (a list) of ``jaxpr`` on ``args`` with its constants ``consts``,
    each equation bound under the current trace (so a transformation applies)."""
    return _ir.eval_jaxpr(jaxpr, consts, *args)


def ensure_compile_time_eval():
    """Operations inside run eagerly on concrete values even while tracing."""
    import xform  # deferred: import cycle
    return xform.ensure_compile_time_eval()


@_contextlib.contextmanager
def eval_context():
    """Bind primitives with the eager interpreter (outside every transformation)."""
    with _core.set_current_trace(_core.EVAL_TRACE):
        yield


def _ndarray_aval(x):
    return ShapedArray(_np.shape(x), _dtypes.canonicalize_dtype(_np.result_type(x)), False)


def _scalar_aval(base):
    def aval(x):
        return ShapedArray((), _dtypes.dtype_of(base(x)), base is not bool)
    return aval


# JAX's table of how each Python type becomes an abstract value (deprecated in JAX
# 0.10.2, still served).  It is the engine's own: a type registered here (the
# tensorflow_probability JAX substrate registers its ``Variable``) is given its abstract
# value by the rule wherever xform asks for one of a value it does not know.
pytype_aval_mappings = _core.pytype_aval_mappings
pytype_aval_mappings.setdefault(_core.Array, lambda x: x.aval)
pytype_aval_mappings.setdefault(_np.ndarray, _ndarray_aval)
for _t in set(_np.sctypeDict.values()):
    pytype_aval_mappings.setdefault(_t, _ndarray_aval)
for _t in (int, float, complex, bool):
    pytype_aval_mappings.setdefault(_t, _scalar_aval(_t))
del _t


def max_dim(d1, d2):
    return max(d1, d2)


def min_dim(d1, d2):
    return min(d1, d2)


# Names JAX 0.10.2 still serves (deprecated, moved to jax.extend.core): xform's.
_MOVED = {
    "CallPrimitive", "DebugInfo", "DropVar", "Effect", "Effects",
    "InconclusiveDimensionOperation", "JaxprTypeError", "check_jaxpr", "concrete_or_error",
    "find_top_trace", "gensym", "get_opaque_trace_state", "jaxprs_in_params",
    "new_jaxpr_eqn", "no_effects", "primal_dtype_to_tangent_dtype", "valid_jaxtype",
}

# Names JAX 0.10 removed, with the message JAX's AttributeError carries.
_REMOVED = {
    "get_aval": "jax.core.get_aval was deprecated in JAX v0.8.2 and removed in JAX "
                "v0.10.0; use jax.typeof instead.",
    "mapped_aval": "jax.core.mapped_aval was deprecated in JAX v0.8.2 and removed in JAX "
                   "v0.10.0. Use jax.extend.core.mapped_aval.",
    "unmapped_aval": "jax.core.unmapped_aval was deprecated in JAX v0.8.2 and removed in "
                     "JAX v0.10.0. Use jax.extend.core.unmapped_aval.",
    "set_current_trace": "jax.core.set_current_trace was deprecated in JAX v0.8.2 and "
                         "removed in JAX v0.10.0. Use jax.extend.core.set_current_trace.",
    "take_current_trace": "jax.core.take_current_trace was deprecated in JAX v0.8.2 and "
                          "removed in JAX v0.10.0. Use jax.extend.core.take_current_trace.",
    "traverse_jaxpr_params": "jax.core.traverse_jaxpr_params was deprecated in JAX v0.8.2 "
                             "and removed in JAX v0.10.0.",
    "TraceTag": "jax.core.TraceTag was deprecated in JAX v0.8.2 and removed in JAX "
                "v0.10.0. Use jax.extend.core.TraceTag.",
    "call_impl": "jax.core.call_impl was deprecated in JAX v0.8.2 and removed in JAX "
                 "v0.10.0. Use jax.extend.core.call_impl.",
    "subjaxprs": "jax.core.subjaxprs was deprecated in JAX v0.8.2 and removed in JAX "
                 "v0.10.0. Use jax.extend.core.subjaxprs.",
    "AbstractToken": "jax.core.AbstractToken was deprecated in JAX v0.8.2 and removed in "
                     "JAX v0.10.0. Use jax.extend.core.AbstractToken.",
}


def __getattr__(name):
    if name in _MOVED:
        return getattr(_ext, name)
    if name in _REMOVED:
        raise AttributeError(_REMOVED[name])
    raise AttributeError(f"module 'xform.core' (jax.core) has no attribute {name!r}")


def __dir__():
    return sorted(set(__all__) | _MOVED)

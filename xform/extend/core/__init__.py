"""``xform.extend.core``: JAX's ``jax.extend.core`` (primitives, programs, traces) served
by xform's engine.

Everything here is xform's own object or a thin adapter over it: ``Primitive`` creates a
primitive of xform's engine whose rules land in xform's rule tables, ``Jaxpr``,
``ClosedJaxpr``, ``Var``, ``Literal`` and ``JaxprEqn`` are the classes of xform's programs
(what ``xform.make_jaxpr`` returns), and the trace helpers look at xform's traces.
See docs/extending.md for writing a primitive with these names.
"""
from __future__ import annotations

import contextlib

import numpy as np

from xform._src.interpreters import ad as _ad
from xform._src.interpreters import core as _core
from xform._src.interpreters import errors as _errors
from xform._src.interpreters import ir as _ir
from xform._src.interpreters.core import ShapedArray, Trace, Tracer
from xform._src.interpreters.errors import JaxprTypeError
from xform._src.interpreters.ir import (ClosedJaxpr, DebugInfo, DropVar, Jaxpr, Literal,
                                        Var, check_jaxpr)
from xform._src.interpreters.ir import Eqn as JaxprEqn

__all__ = [
    "AbstractToken", "CallPrimitive", "ClosedJaxpr", "DebugInfo", "DropVar", "Effect",
    "Effects", "InconclusiveDimensionOperation", "Jaxpr", "JaxprEqn", "JaxprTypeError",
    "Literal", "Primitive", "Token", "TraceTag", "Var", "array_types", "call_impl",
    "check_jaxpr", "concrete_or_error", "find_top_trace", "gensym",
    "get_opaque_trace_state", "jaxpr_as_fun", "jaxprs_in_params", "mapped_aval",
    "new_jaxpr_eqn", "no_effects", "primal_dtype_to_tangent_dtype", "primitives",
    "set_current_trace", "subjaxprs", "take_current_trace", "unmapped_aval",
    "valid_jaxtype",
]


# ----------------------------------------------------------------- primitives


class _PrimitiveType(type):
    # ``isinstance(lax.add_p, Primitive)`` holds for the engine's own primitives too:
    # they are the same kind of object, created without the JAX-style adapters.
    def __instancecheck__(cls, x):
        return isinstance(x, _core.Primitive)


def _to_array(x):
    """A primitive's eager argument as an xform Array (Python scalars weakly typed), as
    JAX hands ``def_impl`` rules arrays."""
    if isinstance(x, (_core.Array, Tracer)):
        return x
    aval = _core.get_aval(x)
    return _core.Array(np.asarray(x, aval.dtype), aval.weak_type)


def _from_impl(x):
    if isinstance(x, (_core.Array, Tracer)):
        return x
    aval = _core.get_aval(x)       # NumPy results: canonical dtype, as a JAX array would be
    return _core.Array(np.asarray(x, aval.dtype), False)


def _as_aval(a, prim):
    if isinstance(a, ShapedArray):
        return a
    if hasattr(a, "shape") and hasattr(a, "dtype"):    # ShapeDtypeStruct and the like
        return ShapedArray(a.shape, a.dtype, bool(getattr(a, "weak_type", False)))
    raise TypeError(f"the abstract evaluation rule of primitive {prim.name!r} returned "
                    f"{a!r} of type {type(a).__name__}; it must return a ShapedArray "
                    "(xform.core.ShapedArray(shape, dtype))"
                    + (" or a list of them (multiple_results=True)"
                       if prim.multiple_results else ""))


class Primitive(_core.Primitive, metaclass=_PrimitiveType):
    """A new primitive of xform's engine, with JAX's ``jax.extend.core.Primitive`` API.

    ``def_impl(fn)``: ``fn(*arrays, **params)`` computes the result eagerly; it gets xform
    Arrays (Python scalars become weakly typed arrays) and may return Arrays or NumPy
    values.  ``def_abstract_eval(fn)``: ``fn(*avals, **params)`` returns the result's
    ``ShapedArray`` (a list of them with ``multiple_results = True``).  JVP, transpose,
    batching and lowering rules are registered with ``xform.interpreters.ad``,
    ``batching`` and ``mlir`` (JAX's ``primitive_jvps``, ``primitive_transposes``,
    ``primitive_batchers``, ``register_lowering``).  A primitive without a lowering rule
    still runs under ``jit``: the program is interpreted with the eager rules.
    """

    def __init__(self, name: str):
        super().__init__(name)
        self.impl_takes_arrays = True
        self.impl = self._no_impl
        self.call_primitive = False
        self.map_primitive = False
        self.ref_primitive = False
        self.skip_canonicalization = False

    def _no_impl(self, *args, **params):
        raise NotImplementedError(f"Evaluation rule for '{self.name}' not implemented: "
                                  "register one with def_impl.")

    @property
    def is_effectful(self):
        return self.effectful

    def def_impl(self, impl):
        prim = self

        def eager(*args, **params):
            out = impl(*[_to_array(a) for a in args], **params)
            if prim.multiple_results:
                return [_from_impl(o) for o in out]
            return _from_impl(out)
        eager.__wrapped__ = impl
        self.impl = eager
        _core.impl_rules[self] = eager
        return impl

    def def_abstract_eval(self, abstract_eval):
        prim = self

        def rule(*avals, **params):
            out = abstract_eval(*avals, **params)
            if prim.multiple_results:
                return [_as_aval(a, prim) for a in out]
            return _as_aval(out, prim)
        rule.__wrapped__ = abstract_eval
        self.abstract_eval = rule
        _core.abstract_eval_rules[self] = rule
        return abstract_eval

    def def_effectful_abstract_eval(self, effectful_abstract_eval):
        """``fn(*avals, **params) -> (avals, effects)``: the effects make the primitive
        effectful (never removed as dead code nor merged)."""
        def rule(*avals, **params):
            out, effects = effectful_abstract_eval(*avals, **params)
            if effects:
                self.effectful = True
            return out
        self.def_abstract_eval(rule)
        return effectful_abstract_eval

    def def_bind_with_trace(self, bind_with_trace):
        raise NotImplementedError(
            f"Primitive.def_bind_with_trace ({self.name}): xform's traces dispatch every "
            "primitive through their own rule tables, so custom bind logic is not "
            "supported; register impl, abstract eval, JVP, transpose and batching rules "
            "instead (docs/extending.md).")

    def __repr__(self):
        return self.name


class CallPrimitive(Primitive):
    """JAX's call-like primitive class: xform stages calls with ``jit_p``
    (``xform.extend.core.primitives.jit_p``); a user call primitive is not supported."""

    def __init__(self, name):
        raise NotImplementedError(
            "jax.extend.core.CallPrimitive: xform has no user-defined call primitives; "
            "use xform.jit (whose equations are jit_p) or a Primitive whose impl calls "
            "the function.")


# ----------------------------------------------------------------- effects and tokens


class Effect:
    """Base class of effects (JAX's ``jax.extend.core.Effect``); an effectful primitive
    is kept by dead-code elimination and never merged."""


Effects = set
no_effects: frozenset = frozenset()


class TraceTag:
    """An opaque tag identifying one transformation (JAX's ``TraceTag``)."""

    def __repr__(self):
        return f"TraceTag({id(self):#x})"


class InconclusiveDimensionOperation(Exception):
    """A dimension computation that cannot be decided (JAX's class of the same name)."""


def _unsupported(name, why):
    class _Unsupported:
        def __init__(self, *a, **k):
            raise NotImplementedError(f"jax.extend.core.{name}: {why}")
    _Unsupported.__name__ = _Unsupported.__qualname__ = name
    return _Unsupported


AbstractToken = _unsupported("AbstractToken", "xform has no token values (ordered effects "
                             "are sequenced by program order)")
Token = _unsupported("Token", "xform has no token values")

array_types = {np.ndarray, np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
               np.uint16, np.uint32, np.uint64, np.float16, np.float32, np.float64,
               np.complex64, np.complex128, _core.Array, int, float, complex, bool}


def call_impl(f, *args, **params):
    """Run ``f`` (a Python callable or a ``linear_util`` wrapped function) on ``args``."""
    call = getattr(f, "call_wrapped", f)
    return call(*args, **params)


# ----------------------------------------------------------------- values and avals


def concrete_or_error(force, val, context=""):
    """``force(val)`` for a concrete value; a ``ConcretizationTypeError`` naming
    ``context`` when ``val`` is traced and has no known value (JAX's signature)."""
    if force is None:
        force = lambda x: x  # noqa: E731
    if isinstance(val, Tracer):
        v = val.to_concrete_value()
        if v is None:
            raise _errors.ConcretizationTypeError(val, context)
        return force(v)
    return force(val)


def valid_jaxtype(x) -> bool:
    """True when ``x`` is a value xform can trace (an array or a scalar)."""
    try:
        _core.get_aval(x)
    except TypeError:
        return False
    return True


def primal_dtype_to_tangent_dtype(dtype):
    """The tangent dtype of a primal dtype: itself when inexact, ``float0`` otherwise."""
    return _ad.tangent_aval(ShapedArray((), dtype)).dtype


def mapped_aval(size, axis, aval):
    """``aval`` with its axis ``axis`` (of length ``size``) removed; ``axis=None``: as is."""
    if axis is None:
        return aval
    if aval.shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} has size "
                         f"{aval.shape[axis]}, expected {size}")
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size, axis, aval, explicit_mesh_axis=None):
    """``aval`` with a new axis of length ``size`` inserted at ``axis``."""
    if axis is None:
        return aval
    axis = axis % (aval.ndim + 1) if axis < 0 else axis
    return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])


# ----------------------------------------------------------------- programs


def jaxpr_as_fun(closed_jaxpr, *args):
    """The function a ``ClosedJaxpr`` computes: ``f(*args) -> list of outputs``
    (equations bound under the current trace, so it can be transformed again)."""
    def fun(*a):
        return _ir.eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *a)
    if args:
        return fun(*args)
    return fun


def jaxprs_in_params(params) -> list:
    """Every ``Jaxpr`` held in an equation's params (in a ClosedJaxpr, tuple or list)."""
    return [j for _, j in _ir.subjaxprs_of_params(params)]


def subjaxprs(jaxpr):
    """Yield every ``Jaxpr`` held directly in ``jaxpr``'s equations' params."""
    for eqn in jaxpr.eqns:
        yield from jaxprs_in_params(eqn.params)


def gensym(suffix: str = ""):
    """A function making fresh variables: ``gensym()(aval) -> Var``."""
    return Var


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=None, source_info=None,
                  ctx=None):
    """A program equation ``outvars = primitive[params] invars``."""
    return JaxprEqn(primitive, invars, outvars, dict(params), source_info)


# ----------------------------------------------------------------- traces


def find_top_trace(xs):
    """The current trace (as JAX 0.10.2, whatever ``xs`` holds: a tracer of an outer
    transformation is a constant to the current one)."""
    return _core.current_trace()


set_current_trace = _core.set_current_trace


@contextlib.contextmanager
def take_current_trace():
    """Yield the current trace (rules of xform's traces run with their parent current)."""
    yield _core.current_trace()


class _OpaqueTraceState:
    __slots__ = ("_trace",)

    def __init__(self, trace):
        self._trace = trace

    def __eq__(self, other):
        return isinstance(other, _OpaqueTraceState) and other._trace is self._trace

    def __hash__(self):
        return id(self._trace)

    def __repr__(self):
        return f"OpaqueTraceState({self._trace!r})"


def get_opaque_trace_state(convention=None):
    """An opaque value equal to another exactly when both were taken under the same
    transformation (what flax and haiku use to detect leaked state)."""
    return _OpaqueTraceState(_core.current_trace())


from xform.extend.core import primitives  # noqa: E402,F401

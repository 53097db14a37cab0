"""The staging interpreter: run a Python function on tracers and record equations.

``StagingTrace`` builds a ``Jaxpr``.  Values it does not own (concrete arrays,
NumPy constants, tracers of ancestor traces) become constant variables
(scalars become inline literals), so the program is closed over its constants.

With ``forward_known=True`` it is the partial evaluator used by linearize: an
operation none of whose inputs is staged is not recorded but forwarded to the
parent trace (computed now, or staged by an outer jit); only operations that
touch a staged ("unknown") value are recorded, and the known values they use
become the program's constants -- the residuals.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from xform._src.interpreters import core, errors
from xform._src.interpreters.core import Array, ShapedArray, Tracer
from xform._src.interpreters.ir import ClosedJaxpr, Eqn, Jaxpr, Literal, Var, source_context
import itertools

record_source_info = True

# Primitives bound with a sub-program still to be staged (a Python callable in their
# params, e.g. a custom_jvp function's primal, which JAX runs only where it is needed):
# ``completion_rules[prim](trace, args, params) -> (args, params)`` completes them before
# the equation is recorded, so every recorded equation holds only programs.
completion_rules: dict = {}


class _NameScopes(threading.local):
    # Class defaults, so a thread that never set them reads None without the cost of a
    # missing attribute (an AttributeError caught inside getattr) on every equation.
    stack = None    # xform.named_scope names, outermost first
    bounds = None   # make_jaxpr's caller frames (see source_boundaries)


_name_scopes = _NameScopes()


# prim -> rule(trace, args, params): how a primitive is staged when it is not recorded
# as one equation (e.g. ``jit(inline=True)`` inlines its body); NotImplemented = record it.
staging_rules: dict = {}


def inline_jaxpr(trace, jaxpr, consts, args):
    """Stage ``jaxpr``'s equations into ``trace`` (literals keep their weak types)."""
    env = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(a):
        return Array(a.value, a.aval.weak_type) if type(a) is Literal else env[a]

    with core.set_current_trace(trace):
        for eqn in jaxpr.eqns:
            outs = eqn.primitive.bind(*[read(a) for a in eqn.invars], **eqn.params)
            env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
        return [read(a) for a in jaxpr.outvars]


class StagingTracer(Tracer):
    __slots__ = ("_var",)   # not "var": that would hide the array method x.var()

    def __init__(self, trace, var):
        self._trace = trace
        self._var = var

    @property
    def aval(self):
        return self._var.aval

    # Tracer's properties, one indirection shorter (the numpy layer reads them per call)
    @property
    def shape(self):
        return self._var.aval.shape

    @property
    def dtype(self):
        return self._var.aval.dtype

    @property
    def weak_type(self):
        return self._var.aval.weak_type

    @property
    def ndim(self):
        return len(self._var.aval.shape)

    def __repr__(self):
        return f"JitTracer({core.aval_text(self._var.aval)})"

    __str__ = __repr__


class StagingTrace(core.Trace):
    def __init__(self, parent, forward_known: bool = False, name: str = "staging"):
        super().__init__(parent, name)
        self.forward_known = forward_known
        self.eqns: list[Eqn] = []
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.consts: list = []
        self._const_ids: dict[int, Var] = {}

    # -- inputs and constants
    def new_arg(self, aval: ShapedArray) -> StagingTracer:
        v = Var(aval)
        self.invars.append(v)
        return StagingTracer(self, v)

    def to_atom(self, x):
        """The Var/Literal for any argument: own tracers, constants, outer tracers."""
        if isinstance(x, StagingTracer) and x._trace is self:
            return x._var
        if isinstance(x, Tracer):
            self.check_foreign_tracer(x)
            return self._constvar(x, x.aval)
        t = type(x)
        if t in (int, float, bool, complex):
            aval = core.get_aval(x)
            return Literal(np.asarray(x, aval.dtype), aval)
        if t is Array:
            # A concrete Array made before this trace began (closed over by the traced
            # function), scalar or not, weak or strong, is a constant of the program, as
            # in JAX (jax_use_simplified_jaxpr_constants=False); libraries count those
            # constants (equinox's filter_closure_convert).  A scalar Array made while
            # this trace (or one started inside it) ran is a value JAX would hold as a
            # constant-folded tracer of this trace, a literal: see ``Array._born``.
            aval = x.aval
            if aval.shape == () and getattr(x, "_born", -1) >= self.tag and x.on_host \
                    and isinstance(aval.dtype, np.dtype):
                return Literal(x._value, aval)
            return self._constvar(x, aval)
        if isinstance(x, (np.ndarray, np.generic)):
            aval = core.get_aval(x)
            val = np.asarray(x, aval.dtype) if x.dtype != aval.dtype else x
            if aval.shape == ():
                return Literal(val, aval)
            return self._constvar(Array(np.array(val)), aval)
        aval = core.registered_aval(x)
        if aval is not None:      # a registered array-like type (ShapeDtypeStruct, ...)
            return self._constvar(x, aval)
        if getattr(x, "__jax_array__", None) is not None:
            raise core.jax_array_error()
        raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid xform array type. "
                        "Use an xform Array, a NumPy array or a Python scalar.")

    def _constvar(self, x, aval):
        v = self._const_ids.get(id(x))
        if v is None:
            v = Var(aval)
            self._const_ids[id(x)] = v
            self.constvars.append(v)
            self.consts.append(x)
        return v

    # -- the interpreter
    def process_primitive(self, prim, args, params):
        if self.forward_known:
            for a in args:
                if isinstance(a, StagingTracer) and a._trace is self:
                    break
            else:
                with core.set_current_trace(self.parent):
                    return prim.bind(*args, **params)
        complete = completion_rules.get(prim)
        if complete is not None:
            args, params = complete(self, args, params)
        srule = staging_rules.get(prim)
        if srule is not None:
            out = srule(self, args, params)
            if out is not NotImplemented:
                return out
        invars = [a._var if type(a) is StagingTracer and a._trace is self else self.to_atom(a)
                  for a in args]
        rule = prim.abstract_eval
        if rule is None:
            raise NotImplementedError(f"primitive {prim.name} has no abstract evaluation rule")
        out = rule(*[a.aval for a in invars], **params)
        src = _source_info() if record_source_info else None
        if prim.multiple_results:
            outvars = [Var(a) for a in out]
            self.eqns.append(Eqn(prim, invars, outvars, params, src))
            return [StagingTracer(self, v) for v in outvars]
        v = Var(out)
        self.eqns.append(Eqn(prim, invars, [v], params, src))
        return StagingTracer(self, v)

    def add_eqn(self, prim, in_atoms, out_avals, params):
        """Record an equation directly (for rules that build programs by hand)."""
        outvars = [Var(a) for a in out_avals]
        src = _source_info() if record_source_info else None
        self.eqns.append(Eqn(prim, in_atoms, outvars, params, src))
        return [StagingTracer(self, v) for v in outvars]

    # -- finishing
    def to_jaxpr(self, outs) -> tuple[Jaxpr, list]:
        """The program computing ``outs`` (any values) from the inputs and constants."""
        outvars = [self.to_atom(o) for o in outs]
        jaxpr = Jaxpr(self.constvars, self.invars, outvars, self.eqns)
        return jaxpr, list(self.consts)


class SourceInfo(tuple):
    """An equation's user source: ``(file, line, name)`` (``name``: the function, under any
    ``named_scope``s), plus the call's column and the function's qualified name, which
    are computed only when asked for (printing with ``source_info=True``)."""

    def __new__(cls, file, line, name, code=None, lasti=-1, column=None, qualname=None):
        self = tuple.__new__(cls, (file, line, name))
        self._code, self._lasti = code, lasti
        self._column, self._qualname = column, qualname
        return self

    @property
    def column(self) -> int:
        """0-based start column of the expression being evaluated (Python 3.11+)."""
        if self._column is None:
            col = 0
            code = self._code
            if code is not None and self._lasti >= 0 and hasattr(code, "co_positions"):
                pos = next(itertools.islice(code.co_positions(), self._lasti // 2, None), None)
                if pos is not None and pos[0] == self[1] and pos[2] is not None:
                    col = pos[2]
            self._column = col
        return self._column

    @property
    def qualname(self) -> str:
        if self._qualname is None:
            code = self._code
            self._qualname = (getattr(code, "co_qualname", code.co_name) if code is not None
                              else self[2].rsplit("/", 1)[-1])
        return self._qualname

    @property
    def name_stack(self) -> str:
        """The ``named_scope``s the equation was staged under, outermost first, joined by
        ``/`` (JAX's ``source_info.name_stack``, as ``str`` gives it; "" outside any)."""
        return self[2].rsplit("/", 1)[0] if "/" in self[2] else ""

    def summary(self) -> str:
        """JAX's ``file:line:column (qualified name)`` (no column when it is 0)."""
        col = self.column
        where = f"{self[0]}:{self[1]}:{col}" if col else f"{self[0]}:{self[1]}"
        return f"{where} ({self.qualname})"

    def __reduce__(self):
        return (SourceInfo, (self[0], self[1], self[2], None, -1, self.column, self.qualname))


def source_boundaries() -> list:
    """This thread's stack of caller frames of ``make_jaxpr``: a user frame found there is
    not an equation's source (the equation is make_jaxpr's own)."""
    b = getattr(_name_scopes, "bounds", None)
    if b is None:
        b = _name_scopes.bounds = []
    return b


def _source_info():
    src = source_context.src
    if src is not None:     # an equation being interpreted: its location, as JAX
        return src
    # errors.user_frame(3), inlined: this runs for every staged equation
    known = errors._user_code
    f = sys._getframe(2)
    while f is not None:
        code = f.f_code
        e = known.get(id(code))
        ok = e[1] if e is not None else errors._is_user_code(code)
        if ok:
            break
        f = f.f_back
    else:
        return None
    ns = _name_scopes
    bounds = ns.bounds
    if bounds and any(f is b for b in bounds):
        return None
    scopes = ns.stack
    # One object per source position: a loop's equations share their lines' objects.
    # (keyed by the code object's id, which the SourceInfo holding it keeps unique)
    if scopes:
        name = "/".join(scopes + [code.co_name])
        key = (id(code), f.f_lasti, name)
    else:
        name = None
        key = (id(code), f.f_lasti)
    src = _source_infos.get(key)
    if src is None:
        if name is None:
            name = code.co_name
        if len(_source_infos) > 100_000:
            _source_infos.clear()
        src = _source_infos[key] = SourceInfo(code.co_filename, f.f_lineno, name, code,
                                              f.f_lasti)
    return src


_source_infos: dict = {}     # (id(code), instruction offset[, scoped name]) -> SourceInfo


def trace_to_jaxpr(fun, in_avals, name: str = "staging"):
    """Stage ``fun(*flat_tracers) -> flat list`` into ``(Jaxpr, consts)``."""
    trace = StagingTrace(core.current_trace(), name=name)
    args = [trace.new_arg(a) for a in in_avals]
    with core.running(trace):
        outs = fun(*args)
    return trace.to_jaxpr(list(outs))


def trace_to_closed_jaxpr(fun, in_avals, name: str = "staging") -> ClosedJaxpr:
    jaxpr, consts = trace_to_jaxpr(fun, in_avals, name)
    return ClosedJaxpr(jaxpr, consts)


def convert_constvars_to_invars(jaxpr: Jaxpr) -> Jaxpr:
    """``{ lambda c; x. ... }`` -> ``{ lambda ; c x. ... }``."""
    return Jaxpr([], list(jaxpr.constvars) + list(jaxpr.invars), jaxpr.outvars, jaxpr.eqns,
                 jaxpr.debug_info)

"""Automatic differentiation: forward mode, linearize (= JVP + partial evaluation)
and transposition.  Reverse mode is built from these three.

* ``JVPTrace``: a tracer carries (primal, tangent).  Tangents may be the
  symbolic ``Zero``: a primitive whose tangents are all zero is not
  differentiated at all.
* ``linearize``: run the JVP with a partial-evaluating ``StagingTrace``
  (``forward_known=True``) as its parent.  Primal operations are computed now
  (forwarded to the outer trace); tangent operations are recorded into a
  *linear program* whose constants are the residuals.
* ``backward_pass``: run a linear program backwards with each linear
  primitive's transpose rule, accumulating cotangents.

Rule tables (filled by ``primitives/``):
  jvp_rules[prim](primals, tangents, **params) -> (primal_out, tangent_out)
      tangents may be ``Zero``; outputs are lists for multiple-result prims.
  transpose_rules[prim](ct, *args, **params) -> list of cotangents, one per arg
      (``None`` for non-linear args).  Linear args arrive as ``UndefinedPrimal``;
      ``ct`` may be ``Zero`` only for multiple-result prims (a list).
  partial_eval_rules[prim](trace, args, params) -> outputs
      for primitives holding sub-programs whose known and unknown parts must be
      split (jit, cond, scan, custom_vjp, checkpoint).
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import core, errors
from xform._src.interpreters.core import ShapedArray, Tracer
from xform._src.interpreters.ir import DropVar, Literal, source_context
from xform._src.interpreters.staging import StagingTrace, StagingTracer
from xform._src.interpreters.ir import ClosedJaxpr
from xform._src.interpreters.ir import Jaxpr
from xform._src.interpreters.ir import Var
from xform._src.interpreters.ir import eval_jaxpr
from xform._src.interpreters.staging import trace_to_jaxpr

jvp_rules: dict = {}
transpose_rules: dict = {}
partial_eval_rules: dict = {}

# Set by primitives/: building zeros and adding tangents needs primitives.
zeros_like_aval = None      # (ShapedArray) -> array of zeros
add_tangents = None         # (x, y) -> x + y


float0 = np.dtype([("float0", np.void, 0)])


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """Tangent type of a primal type: same for inexact dtypes, float0 for int/bool; a
    high-level (hijax) type says its own (``to_tangent_aval``)."""
    if type(aval) is not ShapedArray and getattr(aval, "is_high", False):
        return aval.to_tangent_aval()
    k = aval.dtype.kind
    if k in "fc" or aval.dtype.name in ("bfloat16",) or "float8" in aval.dtype.name:
        return ShapedArray(aval.shape, aval.dtype, False)
    return ShapedArray(aval.shape, float0, False)


class Zero:
    """A symbolic zero tangent/cotangent of type ``aval`` (costs nothing)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"

    def instantiate(self):
        """A value of zeros of this type (JAX's ``Zero.instantiate``)."""
        return instantiate(self)

    @staticmethod
    def from_primal(x):
        return Zero(tangent_aval(core.get_aval(x)))


def instantiate(t):
    """Turn a symbolic zero into a real array of zeros."""
    if type(t) is Zero:
        if type(t.aval) is not ShapedArray and getattr(t.aval, "is_high", False):
            return t.aval.vspace_zero()       # a high-level tangent type's zero (hijax)
        if t.aval.dtype == float0:
            return np.zeros(t.aval.shape, float0)
        return zeros_like_aval(t.aval)
    return t


def add_maybe_zero(x, y):
    if type(x) is Zero:
        return y
    if type(y) is Zero:
        return x
    return add_tangents(x, y)


# ----------------------------------------------------------------- forward mode


_PY_SCALARS = (bool, int, float, complex)


def _py_to_array(x, like=None):
    """A Python scalar as the Array binding it gives (``like``'s dtype for a tangent)."""
    aval = core.get_aval(x) if like is None else tangent_aval(core.get_aval(like))
    if like is not None:
        return core.Array(np.asarray(x, aval.dtype), core.get_aval(like).weak_type)
    return core.Array(np.asarray(x, aval.dtype), aval.weak_type)


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent", "py")

    def __init__(self, trace, primal, tangent, py=None):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent
        # (primal, tangent) as Python scalars, when the primal was one (jvp of Python
        # floats): a custom_jvp rule gets them as they are, and jvp returns them, as JAX
        self.py = py

    @property
    def aval(self):
        return core.get_aval(self.primal)

    def to_concrete_value(self):
        p = self.primal
        if isinstance(p, Tracer):
            return p.to_concrete_value()
        if isinstance(p, core.Array):
            return p._value
        return np.asarray(p)

    def __repr__(self):
        t = self.tangent
        if isinstance(t, StagingTracer) and isinstance(t._trace, LinearizeTrace):
            # reverse mode (grad/vjp/linearize): the tangent is a staged linear program
            return (f"GradTracer(primal={core.value_text(self.primal)}, "
                    f"typeof(tangent)={core.get_aval(t).str_short()})")
        return f"JVPTracer(primal={core.value_text(self.primal)}, tangent={core.value_text(t)})"

    __str__ = __repr__


class JVPTrace(core.Trace):
    def __init__(self, parent, name="jvp"):
        super().__init__(parent, name)

    def unpack(self, x):
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer):
            self.check_foreign_tracer(x)
        return x, Zero.from_primal(x)

    def process_primitive(self, prim, args, params):
        primals, tangents = [], []
        nonzero = False
        raw = prim in python_scalar_rules
        for a in args:
            if isinstance(a, JVPTracer) and a._trace is self:
                if raw and a.py is not None:
                    primals.append(a.py[0])
                    tangents.append(a.py[1])
                    nonzero = True
                    continue
                primals.append(a.primal)
                tangents.append(a.tangent)
                nonzero = nonzero or type(a.tangent) is not Zero
            else:
                if isinstance(a, Tracer):
                    self.check_foreign_tracer(a)
                primals.append(a)
                tangents.append(None)
        if not nonzero:
            with core.set_current_trace(self.parent):
                return prim.bind(*primals, **params)
        tangents = [Zero.from_primal(p) if t is None else t for p, t in zip(primals, tangents)]
        rule = jvp_rules.get(prim)
        if rule is None:
            why = prim.missing_rules.get("jvp", "this primitive cannot be differentiated")
            raise NotImplementedError(
                f"Differentiation rule for '{prim.name}' not implemented: {why} (wrap the "
                "computation in xform.lax.stop_gradient, or give it a rule with "
                "xform.custom_jvp).")
        with core.set_current_trace(self.parent):
            primal_out, tangent_out = rule(primals, tangents, **params)
        if prim.multiple_results:
            return [self.wrap(p, t) for p, t in zip(primal_out, tangent_out)]
        return self.wrap(primal_out, tangent_out)

    def wrap(self, p, t):
        if type(p) in _PY_SCALARS:     # a rule in python_scalar_rules kept it as it was
            pa = _py_to_array(p)
            if type(t) is Zero or t is None:
                return pa
            ta = _py_to_array(t, pa) if type(t) in _PY_SCALARS else t
            return JVPTracer(self, pa, ta, (p, t))
        if type(t) is Zero or t is None:
            return p
        return JVPTracer(self, p, t)


# primitives whose JVP rule gets Python-scalar primals and tangents as they are (a
# custom_jvp rule, as in JAX) and may return Python scalars
python_scalar_rules: set = set()


def jvp_flat(fun, primals, tangents, py=None):
    """``fun(*flat) -> flat list``; returns (primals_out, tangents_out) with Zeros kept.
    ``py``: per input, None or the (primal, tangent) Python scalars it was given as;
    an output still carrying them is returned as them."""
    trace = JVPTrace(core.current_trace())
    py = py or [None] * len(primals)
    ins = [p if type(t) is Zero else JVPTracer(trace, p, t, q)
           for p, t, q in zip(primals, tangents, py)]
    with core.running(trace):
        outs = fun(*ins)
    ps, ts = [], []
    for o in outs:
        if type(o) is JVPTracer and o._trace is trace and o.py is not None:
            ps.append(o.py[0])
            ts.append(o.py[1])
            continue
        p, t = trace.unpack(o)
        ps.append(p)
        ts.append(t)
    return ps, ts


# ----------------------------------------------------------------- linearize


class LinearizeTrace(StagingTrace):
    """A forward-known staging trace that consults partial-evaluation rules."""

    def __init__(self, parent, name="linearize"):
        super().__init__(parent, forward_known=True, name=name)

    def process_primitive(self, prim, args, params):
        rule = partial_eval_rules.get(prim)
        if rule is not None:
            for a in args:
                if isinstance(a, StagingTracer) and a._trace is self:
                    return rule(self, args, params)
        return super().process_primitive(prim, args, params)

    def to_atom(self, x):
        # Known arrays (even scalars) used by tangent work are residuals: keep them
        # as constants of the linear program rather than inlining them as literals.
        if type(x) is core.Array:
            return self._constvar(x, x.aval)
        return super().to_atom(x)

    def is_unknown(self, x) -> bool:
        return isinstance(x, StagingTracer) and x._trace is self


class LinearFunction:
    """The result of linearize: a linear program over tangents plus its residuals.

    ``jaxpr`` takes the tangents of the differentiable (inexact) inputs and
    returns the tangents of the inexact outputs; its constants are the
    residuals, the values the forward pass saved for the backward pass.
    Integer/bool inputs and outputs have ``float0`` tangents, which carry no
    data and are kept out of the program (``in_mask``/``out_mask`` say which
    positions the program covers); calling or transposing takes and returns
    one value per position.
    """

    def __init__(self, jaxpr, residuals, in_avals, out_avals, in_mask=None, out_mask=None):
        self.jaxpr = jaxpr
        self.residuals = residuals
        self.in_avals = in_avals
        self.out_avals = out_avals
        self.in_mask = [True] * len(in_avals) if in_mask is None else list(in_mask)
        self.out_mask = [True] * len(out_avals) if out_mask is None else list(out_mask)

    def __call__(self, *tangents):
        if len(tangents) != len(self.in_avals):
            raise TypeError(f"linear function expects {len(self.in_avals)} tangents, "
                            f"got {len(tangents)}")
        ins = [instantiate(t) for t, m in zip(tangents, self.in_mask) if m]
        outs = iter(eval_jaxpr(self.jaxpr, self.residuals, *ins))
        return [next(outs) if m else _float0_zeros(a)
                for a, m in zip(self.out_avals, self.out_mask)]

    def transpose(self, cts):
        """Cotangents of the inputs (one per position; ``Zero`` where nothing flows)."""
        if len(cts) != len(self.out_avals):
            raise TypeError(f"transpose expects {len(self.out_avals)} cotangents, "
                            f"got {len(cts)}")
        cts = [c for c, m in zip(cts, self.out_mask) if m]
        res = iter(backward_pass(self.jaxpr, self.residuals, cts))
        return [next(res) if m else Zero(a) for a, m in zip(self.in_avals, self.in_mask)]

    def transpose_jaxpr(self):
        """The backward program (cotangents of outputs -> cotangents of inputs), staged."""
        avals = [a for a, m in zip(self.out_avals, self.out_mask) if m]

        def bwd(*cts):
            return [instantiate(c) for c in backward_pass(self.jaxpr, self.residuals,
                                                          list(cts))]
        jaxpr, consts = trace_to_jaxpr(bwd, avals, name="transpose")
        return ClosedJaxpr(jaxpr, consts)

    @property
    def num_residuals(self):
        return len(self.residuals)

    @property
    def residual_bytes(self):
        return sum(v.aval.size * v.aval.dtype.itemsize for v in self.jaxpr.constvars)

    def __str__(self):
        return str(self.jaxpr)

    __repr__ = __str__


def _float0_zeros(aval):
    return np.zeros(aval.shape, float0)


def is_differentiable(aval) -> bool:
    return tangent_aval(aval).dtype != float0


def _staged_zeros(lin, aval):
    """Zeros recorded in the linear program itself (not a residual constant)."""
    lin.forward_known = False
    try:
        with core.set_current_trace(lin):
            z = zeros_like_aval(aval)
    finally:
        lin.forward_known = True
    return z


def linearize_flat(fun, primals):
    """Returns (primals_out, LinearFunction) for ``fun(*flat) -> flat list``.

    The JVP runs with a partial-evaluating ``LinearizeTrace`` as its parent:
    primal work is forwarded to the outer trace (done now), tangent work is
    recorded into the linear program.
    """
    parent = core.current_trace()
    lin = LinearizeTrace(parent)
    jvp = JVPTrace(lin)
    in_avals = [core.get_aval(p) for p in primals]
    in_tangent_avals = [tangent_aval(a) for a in in_avals]
    in_mask = [is_differentiable(a) for a in in_avals]
    ins = [JVPTracer(jvp, p, lin.new_arg(t)) if m else p
           for p, t, m in zip(primals, in_tangent_avals, in_mask)]
    from xform._src.interpreters.jaxpr_transforms import no_policy  # deferred: import cycle
    prev = core._state.trace
    try:
        core._state.trace = jvp
        with no_policy():
            outs = list(fun(*ins))
    finally:
        core._state.trace = prev
        jvp.invalidate()
    primals_out, tangents_out = [], []
    for o in outs:
        p, t = jvp.unpack(o)
        primals_out.append(p)
        tangents_out.append(t)
    for p in primals_out:
        if lin.is_unknown(p):
            lin.invalidate()
            raise errors.UnexpectedTracerError(
                "linearize: a primal output depends on a tangent (a rule mixed them)")
    out_avals = [core.get_aval(p) for p in primals_out]
    out_tangent_avals = [tangent_aval(a) for a in out_avals]
    out_mask = [is_differentiable(a) for a in out_avals]
    lin_outs = [(_staged_zeros(lin, t.aval) if type(t) is Zero else t)
                for t, m in zip(tangents_out, out_mask) if m]
    jaxpr, residuals = lin.to_jaxpr(lin_outs)
    lin.invalidate()
    # As JAX: residuals that are primal inputs come first (in input order), then the
    # computed ones (in order of use) -- the order of a vjp function's pytree leaves.
    pos = {id(p): i for i, p in enumerate(primals)}
    order = sorted(range(len(residuals)),
                   key=lambda k: (0, pos[id(residuals[k])]) if id(residuals[k]) in pos
                   else (1, k))
    if order != list(range(len(residuals))):
        jaxpr = Jaxpr([jaxpr.constvars[k] for k in order], jaxpr.invars, jaxpr.outvars,
                      jaxpr.eqns, jaxpr.debug_info)
        residuals = [residuals[k] for k in order]
    return primals_out, LinearFunction(jaxpr, residuals, in_tangent_avals, out_tangent_avals,
                                       in_mask, out_mask)


# ----------------------------------------------------------------- transposition


class UndefinedPrimal:
    """Marks a linear input of an equation being transposed."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x) -> bool:
    return type(x) is UndefinedPrimal


def backward_pass(jaxpr, consts, cts_out):
    """Cotangents of ``jaxpr``'s inputs (all linear) given cotangents of its outputs."""
    args = [UndefinedPrimal(v.aval) for v in jaxpr.invars]
    return backward_pass_partial(jaxpr, consts, args, cts_out)


def backward_pass_partial(jaxpr, consts, args, cts_out):
    """Transpose ``jaxpr`` w.r.t. the inputs given as ``UndefinedPrimal`` in ``args``.

    The other inputs (and the constants) are known values.  Equations that use
    only known values are evaluated forward first (the non-linear parts of a
    linear program, e.g. a checkpoint's recomputation); the rest are transposed
    in reverse order.  Returns one cotangent per input (``Zero`` where nothing
    flows, ``None`` for known inputs).
    """
    if len(cts_out) != len(jaxpr.outvars):
        raise TypeError(f"backward pass: program has {len(jaxpr.outvars)} outputs, got "
                        f"{len(cts_out)} cotangents")
    primal_env = {}
    for v, c in zip(jaxpr.constvars, consts):
        primal_env[v] = c
    linear = set()
    for v, a in zip(jaxpr.invars, args):
        if type(a) is UndefinedPrimal:
            linear.add(v)
        else:
            primal_env[v] = a
    lin_eqns = []
    for eqn in jaxpr.eqns:
        if any(type(a) is not Literal and a in linear for a in eqn.invars):
            lin_eqns.append(eqn)
            linear.update(v for v in eqn.outvars)
        else:
            invals = [a.value if type(a) is Literal else primal_env[a] for a in eqn.invars]
            outs = eqn.primitive.bind(*invals, **eqn.params)
            if not eqn.primitive.multiple_results:
                outs = [outs]
            for v, o in zip(eqn.outvars, outs):
                primal_env[v] = o

    ct_env = {}

    def write_ct(v, ct):
        if type(v) is Literal or isinstance(v, DropVar) or ct is None:
            return
        if type(ct) is Zero:
            return
        if v not in linear:
            return
        prev = ct_env.get(v)
        ct_env[v] = ct if prev is None else add_tangents(prev, ct)

    def read_ct(v):
        ct = ct_env.pop(v, None)
        return Zero(tangent_aval(v.aval)) if ct is None else ct

    for v, ct in zip(jaxpr.outvars, cts_out):
        if isinstance(v, Var) and v in linear:
            write_ct(v, ct)

    ctx = source_context
    entry = ctx.src
    try:
        _transpose_eqns(lin_eqns, linear, primal_env, read_ct, write_ct, ctx, entry)
    finally:
        ctx.src = entry

    return [read_ct(v) if type(a) is UndefinedPrimal else None
            for v, a in zip(jaxpr.invars, args)]


def _transpose_eqns(lin_eqns, linear, primal_env, read_ct, write_ct, ctx, entry):
    for eqn in reversed(lin_eqns):
        ctx.src = eqn.source_info or entry     # transposed equations keep its location
        cts = [read_ct(v) for v in eqn.outvars]
        if all(type(c) is Zero for c in cts):
            continue
        eargs = [UndefinedPrimal(a.aval) if (type(a) is not Literal and a in linear)
                 else (a.value if type(a) is Literal else primal_env[a]) for a in eqn.invars]
        rule = transpose_rules.get(eqn.primitive)
        if rule is None:
            raise NotImplementedError(
                f"Transpose rule (for reverse-mode differentiation) for '{eqn.primitive.name}' "
                "not implemented: it is not a linear primitive.")
        ct_arg = cts if eqn.primitive.multiple_results else cts[0]
        cts_in = rule(ct_arg, *eargs, **eqn.params)
        for a, ct in zip(eqn.invars, cts_in):
            if type(a) is not Literal:
                write_ct(a, ct)

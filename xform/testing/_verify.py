"""``verify``: translation validation of a user's function, reference vs XLA.

The NumPy implementations of the primitives are the specification; the XLA
lowerings are production.  ``verify(f, *args)`` stages ``f`` into a program,
runs it equation by equation through the reference interpreter (every ``jit``
inlined, so no XLA is involved) and, separately, compiles it with XLA; the
outputs must agree within a per-dtype tolerance.

On a mismatch it localises the fault, because "the output is wrong" is not
actionable but "equation 7, ``cumsum`` at model.py:31, is wrong" is:

1. one extra compile of the same program with *every* intermediate value as an
   output finds the first equation whose XLA value diverges from the reference;
2. each equation up to that one is then compiled *alone* and run on the
   reference inputs: the first that diverges in isolation is the culprit (its
   lowering disagrees with its NumPy implementation).  If none does, the
   divergence comes from composition (accumulated rounding, fusion) and the
   report says so;
3. a culprit that is itself a ``jit`` call is localised inside its sub-program.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import core, staging
from xform._src.interpreters.config import config
from xform._src.interpreters.ir import ClosedJaxpr, DropVar, Jaxpr, Literal, Var
from xform._src.interpreters import dtypes as _dtypes
from xform.testing._checks import _C64, _C128, _F16, _F32, _F64, compare, tolerance
from xform._src import lowering
from xform.tree_util import tree_flatten

__all__ = ["verify", "VerificationError", "VerificationReport", "EquationReport",
           "verify_tolerance"]

# XLA vs NumPy on the same program: a few dozen ulps (transcendental approximations
# differ, and rounding accumulates across equations).  Integers and bools: exact.
verify_tolerance = {_F16: 1e-2, _F32: 1e-5, _F64: 1e-12, _C64: 1e-5, _C128: 1e-12}
_dtypes.on_ml_dtypes(lambda: verify_tolerance.update(
    {_dtypes.bfloat16: 5e-2, _dtypes.float8_e4m3fn: 2.5e-1, _dtypes.float8_e5m2: 2.5e-1}))

# Call-like primitives whose sub-program the reference interpreter inlines (their eager
# rule would otherwise compile it with XLA).
_CALL_PRIMITIVES = {"jit", "pjit", "closed_call", "core_call"}


class VerificationError(AssertionError):
    """Reference and XLA disagree; ``.report`` holds the VerificationReport."""

    def __init__(self, report):
        super().__init__(str(report))
        self.report = report


class EquationReport:
    """The first equation whose XLA value diverges from the reference."""

    def __init__(self, index, eqn, comparison, isolated, error=None, inner=None, path=()):
        self.index = index
        self.eqn = eqn
        self.primitive = eqn.primitive.name
        self.params = dict(eqn.params)
        self.source_info = eqn.source_info
        self.max_abs_error = comparison.max_abs if comparison is not None else float("inf")
        self.max_rel_error = comparison.max_rel if comparison is not None else float("inf")
        self.comparison = comparison
        self.isolated = isolated      # diverges when compiled alone on reference inputs
        self.error = error            # an exception text if it failed to compile/run
        self.inner = inner            # EquationReport inside a jit sub-program
        self.path = tuple(path) + (index,)

    @property
    def source(self) -> str:
        si = self.source_info
        if not si:
            return "<unknown source>"
        file, line, fn = si
        return f"{file}:{line} ({fn})"

    def describe(self, indent="  ") -> str:
        ins = ", ".join(a.aval.str_short() for a in self.eqn.invars)
        outs = ", ".join(v.aval.str_short() for v in self.eqn.outvars)
        params = {k: v for k, v in self.params.items()
                  if not isinstance(v, (ClosedJaxpr, Jaxpr))}
        lines = [f"{indent}equation {'/'.join(map(str, self.path))}: {self.primitive}"
                 f"{params if params else ''} ({ins}) -> ({outs}) at {self.source}"]
        if self.error:
            lines.append(f"{indent}  compiling/running it with XLA failed: {self.error}")
        elif self.comparison is not None:
            lines.append(f"{indent}  {self.comparison.describe()}")
        if self.isolated and self.inner is not None:
            lines.append(f"{indent}  it diverges when compiled alone on the reference inputs; "
                         "the fault is inside its sub-program:")
        elif self.isolated:
            lines.append(f"{indent}  it diverges when compiled alone on the reference inputs: "
                         f"the XLA lowering of {self.primitive!r} disagrees with its NumPy "
                         "implementation")
        elif not self.error:
            lines.append(f"{indent}  it does not diverge alone: the error comes from "
                         "composition (accumulated rounding, fusion or an earlier "
                         "within-tolerance difference)")
        if self.inner is not None:
            if not self.isolated:
                lines.append(f"{indent}  inside its sub-program:")
            lines.append(self.inner.describe(indent + "    "))
        return "\n".join(lines)

    @property
    def culprit(self) -> "EquationReport":
        """The innermost diverging equation (inside nested jit sub-programs)."""
        return self if self.inner is None else self.inner.culprit

    def __repr__(self):
        return (f"EquationReport(#{self.index} {self.primitive} at {self.source}, "
                f"max_abs_error={self.max_abs_error:.3g}, isolated={self.isolated})")


class VerificationReport:
    """Result of ``verify``: ``passed``, per-output ``max_abs_errors``/``max_rel_errors``,
    the output ``comparisons``, the staged ``jaxpr`` and, on failure, ``first_divergence``."""

    def __init__(self, name, jaxpr, comparisons, first_divergence=None, error=None):
        self.name = name
        self.jaxpr = jaxpr
        self.comparisons = comparisons
        self.first_divergence = first_divergence
        self.error = error
        self.passed = error is None and all(c.ok for c in comparisons)

    @property
    def max_abs_errors(self):
        return [c.max_abs for c in self.comparisons]

    @property
    def max_rel_errors(self):
        return [c.max_rel for c in self.comparisons]

    def __bool__(self):
        return self.passed

    def __str__(self):
        head = f"verify({self.name}): {'passed' if self.passed else 'FAILED'}"
        lines = [head]
        if self.error:
            lines.append(f"  XLA could not run the program: {self.error}")
        for i, (c, v) in enumerate(zip(self.comparisons, self.jaxpr.jaxpr.outvars)):
            mark = "ok" if c.ok else "MISMATCH"
            lines.append(f"  output {i} {v.aval.str_short()}: {mark}: {c.describe()}")
        if self.first_divergence is not None:
            lines.append("  first diverging equation:")
            lines.append(self.first_divergence.describe("    "))
        return "\n".join(lines)

    __repr__ = __str__


# ----------------------------------------------------------------- the two interpreters


def _host(x):
    """A host (NumPy-backed) Array for any concrete value."""
    if isinstance(x, core.Tracer):
        raise TypeError(f"verify: got a traced value {x.aval.str_short()}; call verify outside "
                        "of transformations, with concrete arrays.")
    if isinstance(x, core.Array):
        return core.Array(np.asarray(x._value), x.weak_type)
    aval = core.get_aval(x)
    return core.Array(np.asarray(x, aval.dtype), aval.weak_type)


def _reference_eval(jaxpr, consts, args, record=None):
    """Evaluate with the NumPy impls, inlining call-like sub-programs; ``record[var]``
    receives every intermediate value (as NumPy)."""
    # the NumPy impls also for the primitives eager evaluation runs by XLA's kernel
    # (``Primitive.xla_eager_dtypes``): the reference is NumPy, not XLA itself
    with config.override("xform_eager_numpy_numerics", True):
        return _reference_eval_numpy(jaxpr, consts, args, record)


def _reference_eval_numpy(jaxpr, consts, args, record):
    env = {}

    def read(a):
        return a.value if type(a) is Literal else env[a]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = _host(x)
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        invals = [read(a) for a in eqn.invars]
        sub = eqn.params.get("jaxpr")
        if eqn.primitive.name in _CALL_PRIMITIVES and isinstance(sub, ClosedJaxpr):
            outs = _reference_eval(sub.jaxpr, sub.consts, invals)
        else:
            with core.set_current_trace(core.EVAL_TRACE):
                outs = eqn.primitive.bind(*invals, **eqn.params)
            if not eqn.primitive.multiple_results:
                outs = [outs]
        for v, o in zip(eqn.outvars, outs):
            o = _host(o)
            env[v] = o
            if record is not None and not isinstance(v, DropVar):
                record[v] = np.asarray(o._value)
    return [read(a) for a in jaxpr.outvars]


def _compile_and_run(closed, args):
    compiled = lowering.compile_jaxpr(closed, tier="optimized")   # XLA's default code
    return [np.asarray(o) for o in compiled(*args)]


def _np_arg(x, aval):
    return np.array(x._value if isinstance(x, core.Array) else x, aval.dtype, order="C")


def _compare_value(actual, desired, dtype, atol, rtol):
    return compare(actual, desired, tolerance(dtype, atol, verify_tolerance),
                   tolerance(dtype, rtol, verify_tolerance))


# ----------------------------------------------------------------- localisation


def _all_intermediates_program(jaxpr):
    outs = [v for e in jaxpr.eqns for v in e.outvars if not isinstance(v, DropVar)]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outs, jaxpr.eqns), outs


def _eqn_diverges(eqn, values, atol, rtol):
    """Compile ``eqn`` alone and run it on the reference inputs -> (Comparison|None, error)."""
    invars, seen = [], set()
    for a in eqn.invars:
        if type(a) is not Literal and a not in seen:
            seen.add(a)
            invars.append(a)
    outvars = [v if not isinstance(v, DropVar) else Var(v.aval) for v in eqn.outvars]
    single = Jaxpr([], invars, outvars, [eqn.replace(outvars=outvars)])
    try:
        got = _compile_and_run(ClosedJaxpr(single, []),
                               [_np_arg(values[a], a.aval) for a in invars])
    except Exception as e:  # a lowering that cannot compile is a divergence too
        return None, f"{type(e).__name__}: {e}"
    with core.set_current_trace(core.EVAL_TRACE):
        want = _reference_eval(single, [], [core.Array(values[a]) for a in invars])
    worst = None
    for g, w, v in zip(got, want, outvars):
        c = _compare_value(g, np.asarray(w._value), v.aval.dtype, atol, rtol)
        if not c.ok:
            return c, None
        worst = c if worst is None or c.max_abs > worst.max_abs else worst
    return worst, None


def _localise(jaxpr, consts, args, atol, rtol, path=()):
    """The first equation of ``jaxpr`` whose XLA value diverges (an EquationReport)."""
    values = {}
    with core.set_current_trace(core.EVAL_TRACE):
        _reference_eval(jaxpr, consts, [core.Array(np.asarray(a)) for a in args], values)
    for v, c in zip(jaxpr.constvars, consts):
        values[v] = np.asarray(_host(c)._value)
    for v, a in zip(jaxpr.invars, args):
        values[v] = np.asarray(a)
    # 1. where does the composed program first diverge?
    first, first_cmp = None, None
    prog, outs = _all_intermediates_program(jaxpr)
    try:
        got = dict(zip(outs, _compile_and_run(ClosedJaxpr(prog, consts), list(args))))
    except Exception:
        got = None      # some equation does not compile: step 2 finds it
    if got is not None:
        for i, eqn in enumerate(jaxpr.eqns):
            for v in eqn.outvars:
                if isinstance(v, DropVar):
                    continue
                c = _compare_value(got[v], values[v], v.aval.dtype, atol, rtol)
                if not c.ok:
                    first, first_cmp = i, c
                    break
            if first is not None:
                break
    # 2. which equation, alone on the reference inputs, is wrong?
    limit = len(jaxpr.eqns) if first is None else first + 1
    for i in range(limit):
        eqn = jaxpr.eqns[i]
        cmp_, err = _eqn_diverges(eqn, values, atol, rtol)
        if err is not None or (cmp_ is not None and not cmp_.ok):
            inner = _localise_inner(eqn, values, atol, rtol, path + (i,))
            return EquationReport(i, eqn, cmp_, isolated=err is None, error=err, inner=inner,
                                  path=path)
    if first is not None:
        eqn = jaxpr.eqns[first]
        inner = _localise_inner(eqn, values, atol, rtol, path + (first,))
        return EquationReport(first, eqn, first_cmp, isolated=False, inner=inner, path=path)
    return None


def _localise_inner(eqn, values, atol, rtol, path):
    sub = eqn.params.get("jaxpr")
    if eqn.primitive.name not in _CALL_PRIMITIVES or not isinstance(sub, ClosedJaxpr):
        return None
    ins = [values[a] if type(a) is not Literal else np.asarray(a.val, a.aval.dtype)
           for a in eqn.invars]
    return _localise(sub.jaxpr, sub.consts, ins, atol, rtol, path)


# ----------------------------------------------------------------- entry point


def verify(f, *args, rtol=None, atol=None, raise_on_failure=True, localize=True):
    """Run ``f(*args)`` through the NumPy reference interpreter and through XLA and compare.

    ``args`` may be arrays, scalars or pytrees of them.  Tolerances default per dtype
    (``verify_tolerance``: f32 1e-5, f64 1e-12, f16 1e-2, bf16 5e-2; exact for ints and
    bools) and may be numbers or ``{dtype: tol}`` dicts.  Returns a
    ``VerificationReport``; on a mismatch it names the first diverging equation
    (primitive, params, source line) and raises ``VerificationError`` unless
    ``raise_on_failure=False``.
    """
    if not callable(f):
        raise TypeError(f"verify: expected a callable, got {f!r}")
    leaves, in_tree = tree_flatten(tuple(args))
    leaves = [_host(x) for x in leaves]
    avals = [core.get_aval(x) for x in leaves]
    store = {}

    def flat_fun(*xs):
        out = f(*in_tree.unflatten(xs))
        outs, store["tree"] = tree_flatten(out)
        return outs

    with core.set_current_trace(core.EVAL_TRACE):
        jaxpr, consts = staging.trace_to_jaxpr(flat_fun, avals, name="verify")
        closed = ClosedJaxpr(jaxpr, consts)
        want = [np.asarray(w._value) if isinstance(w, core.Array) else np.asarray(w)
                for w in _reference_eval(jaxpr, consts, leaves)]
    np_args = [_np_arg(x, a) for x, a in zip(leaves, avals)]
    name = getattr(f, "__name__", type(f).__name__)
    error = None
    try:
        got = _compile_and_run(closed, np_args)
    except NotImplementedError as e:
        error, got = str(e), None
    comparisons = []
    for i, (v, w) in enumerate(zip(jaxpr.outvars, want)):
        dt = v.aval.dtype
        if got is None:
            comparisons.append(_compare_value(w, w, dt, atol, rtol))
        else:
            comparisons.append(_compare_value(got[i], np.asarray(w, dt), dt, atol, rtol))
    report = VerificationReport(name, closed, comparisons, error=error)
    if not report.passed and localize:
        with core.set_current_trace(core.EVAL_TRACE):
            report.first_divergence = _localise(jaxpr, consts, np_args, atol, rtol)
    if not report.passed and raise_on_failure:
        raise VerificationError(report)
    return report

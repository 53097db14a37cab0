"""``xform.interpreters.partial_eval``: staging a function into a program, with some
inputs known (JAX's ``jax.interpreters.partial_eval``).

``trace_to_jaxpr_nounits(fun, in_pvals)`` runs ``fun`` (an
``xform.extend.linear_util.WrappedFun``) with the known inputs' values and the unknown
inputs' abstract values: work on known values only is computed now, the rest is
recorded in a program.  It returns ``(jaxpr, out_pvals, consts)``: the program (its
constants are ``consts``; its inputs are the unknown inputs), and for each output a
``PartialVal``, known (its value) or unknown (its abstract value, computed by the
program).  ``trace_to_jaxpr_dynamic(fun, in_avals)`` stages with every input unknown.
"""
from __future__ import annotations

from xform._src.interpreters import core as _core
from xform._src.interpreters import passes as _passes
from xform._src.interpreters import staging as _staging
from xform._src.interpreters.core import ShapedArray
from xform._src.interpreters.staging import StagingTracer

__all__ = ["DynamicJaxprTracer", "JaxprTracer", "PartialVal", "dce_jaxpr",
           "trace_to_jaxpr_dynamic", "trace_to_jaxpr_nounits"]

JaxprTracer = StagingTracer
DynamicJaxprTracer = StagingTracer


class PartialVal(tuple):
    """``(aval, None)`` for an unknown value of type ``aval``; ``(None, value)`` for a
    known one (JAX's layout)."""

    def __new__(cls, xs):
        return tuple.__new__(cls, xs)

    @classmethod
    def known(cls, const):
        return cls((None, const))

    @classmethod
    def unknown(cls, aval):
        if not isinstance(aval, ShapedArray):
            raise TypeError(f"PartialVal.unknown takes an abstract value (ShapedArray), "
                            f"got {aval!r}")
        return cls((aval, None))

    def is_known(self) -> bool:
        return self[0] is None

    def get_known(self):
        return self[1] if self[0] is None else None

    def get_aval(self):
        return _core.get_aval(self[1]) if self[0] is None else self[0]


def _call(fun):
    return getattr(fun, "call_wrapped", fun)


def trace_to_jaxpr_nounits(fun, pvals, instantiate=False):
    """``(jaxpr, out_pvals, consts)`` for ``fun`` on ``pvals`` (see the module docstring);
    ``instantiate=True`` (or a list of bools per output) makes known outputs program
    outputs too."""
    trace = _staging.StagingTrace(_core.current_trace(), forward_known=True,
                                  name="partial_eval")
    args = [trace.new_arg(pv[0]) if not pv.is_known() else pv[1] for pv in pvals]
    with _core.running(trace):
        outs = list(_call(fun)(*args))
    n = len(outs)
    inst = [instantiate] * n if isinstance(instantiate, bool) else list(instantiate)
    out_pvals, staged = [], []
    for o, i in zip(outs, inst):
        if (isinstance(o, StagingTracer) and o._trace is trace) or i:
            out_pvals.append(PartialVal.unknown(_core.get_aval(o)))
            staged.append(o)
        else:
            out_pvals.append(PartialVal.known(o))
    jaxpr, consts = trace.to_jaxpr(staged)
    return jaxpr, out_pvals, consts


def trace_to_jaxpr_dynamic(fun, in_avals, *args, **kwargs):
    """``(jaxpr, out_avals, consts)``: ``fun`` staged with every input abstract."""
    jaxpr, consts = _staging.trace_to_jaxpr(lambda *a: list(_call(fun)(*a)), list(in_avals))
    return jaxpr, jaxpr.out_avals, consts


def dce_jaxpr(jaxpr, used_outputs, instantiate=False):
    """``(jaxpr', used_inputs)``: ``jaxpr`` keeping only the outputs marked in
    ``used_outputs`` and the equations they need; inputs it no longer reads are dropped
    and marked False in ``used_inputs`` (``instantiate=True`` keeps every input)."""
    if not isinstance(instantiate, bool):
        instantiate = all(instantiate)
    return _passes.dce_jaxpr(jaxpr, list(used_outputs), prune_invars=not instantiate)

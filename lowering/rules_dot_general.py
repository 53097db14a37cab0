"""Lowering rules: linear algebra (``dot_general``, ``ragged_dot_general``).

The result type is the output aval's, which carries ``preferred_element_type``
when one was requested (XLA accumulates in it).  Operands of differing dtypes
are first converted to the output dtype.
"""
from __future__ import annotations

from xform._src.primitives.dot_general import (dot_general_p, ragged_dot_dense,
                                                ragged_dot_general_p)
from xform._src.lowering.mlir import register

_PRECISIONS = {"DEFAULT": "DEFAULT", "HIGH": "HIGH", "HIGHEST": "HIGHEST",
               "FASTEST": "DEFAULT", "BF16_BF16_F32": "DEFAULT", "TF32": "HIGH",
               "F32": "HIGHEST", "0": "DEFAULT", "1": "HIGH", "2": "HIGHEST"}


def _precision_name(p) -> str:
    """Lax.Precision enum / string / int / None -> StableHLO precision keyword."""
    if p is None:
        return "DEFAULT"
    name = getattr(p, "name", None) or str(p).split(".")[-1].upper()
    return _PRECISIONS.get(name, "DEFAULT")


def _dims(xs) -> str:
    return "[" + ", ".join(str(int(d)) for d in xs) + "]"


@register(dot_general_p)
def _dot_general(ctx, eqn, lhs, rhs):
    p = eqn.params
    (lc, rc), (lb, rb) = p["dimension_numbers"]
    la, ra = ctx.in_avals
    out = ctx.out_avals[0]
    if la.dtype != ra.dtype:
        lhs, rhs = ctx.convert(lhs, out.dtype), ctx.convert(rhs, out.dtype)
    prec = p.get("precision")
    key = (p["dimension_numbers"], prec)
    try:
        attrs = _attrs.get(key)
    except TypeError:           # unhashable params
        attrs = key = None
    if attrs is None:
        attrs = _attr_text(lb, rb, lc, rc, prec)
        if key is not None:
            if len(_attrs) > 1000:
                _attrs.clear()
            _attrs[key] = attrs
    return [ctx.op1("stablehlo.dot_general", [lhs, rhs], out, attrs)]


_attrs: dict = {}    # (dimension numbers, precision) -> attribute text


def _attr_text(lb, rb, lc, rc, prec):
    if not isinstance(prec, (tuple, list)):
        prec = (prec, prec)
    return (f"dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = {_dims(lb)}, "
             f"rhs_batching_dimensions = {_dims(rb)}, lhs_contracting_dimensions = {_dims(lc)}, "
             f"rhs_contracting_dimensions = {_dims(rc)}>, precision_config = ["
             + ", ".join(f"#stablehlo<precision {_precision_name(q)}>" for q in prec) + "]")


@register(ragged_dot_general_p)
def _ragged_dot_general(ctx, eqn, lhs, rhs, group_sizes):
    """The ragged dot as a masked dense dot (``ragged_dot_dense``: each operand expanded
    to one zero-padded copy per group), staged for the operand types and inlined."""
    from xform._src.interpreters import core, staging   # deferred: keeps import light
    from xform._src.lowering.mlir import lower_subjaxpr  # deferred: keeps `import xform` light
    avals = [a.strip_weak_type() if hasattr(a, "strip_weak_type") else a
             for a in ctx.in_avals]
    with core.set_current_trace(core.EVAL_TRACE):
        closed = staging.trace_to_closed_jaxpr(
            lambda x, y, g: [ragged_dot_dense(x, y, g, **eqn.params)], avals)
    return lower_subjaxpr(ctx, closed, [lhs, rhs, group_sizes])

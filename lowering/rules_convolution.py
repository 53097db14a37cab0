"""Lowering rules: ``conv_general_dilated`` -> ``stablehlo.convolution``.

Dimension numbers are written in StableHLO's compact form
``[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]``: for each axis of a tensor, its role
(batch/feature/in/out) or its spatial index.
"""
from __future__ import annotations

from lowering.mlir import i64_array, register
from lowering.rules_linalg import _precision_name


def _labels(spec, a, b):
    lab = [""] * len(spec)
    lab[spec[0]], lab[spec[1]] = a, b
    for k, ax in enumerate(spec[2:]):
        lab[ax] = str(k)
    return "[" + ", ".join(lab) + "]"


def conv_attrs(p, nsp):
    ls, rs, os_ = p["dimension_numbers"]
    dn = f"{_labels(ls, 'b', 'f')}x{_labels(rs, 'o', 'i')}->{_labels(os_, 'b', 'f')}"
    prec = p.get("precision")
    if not isinstance(prec, (tuple, list)):
        prec = (prec, prec)
    pads = p["padding"]
    pad_txt = ("dense<[" + ", ".join(f"[{int(lo)}, {int(hi)}]" for lo, hi in pads) + "]>"
               if pads else "dense<>") + f" : tensor<{nsp}x2xi64>"
    return (f"batch_group_count = {int(p['batch_group_count'])} : i64, "
            f"dimension_numbers = #stablehlo.conv<{dn}>, "
            f"feature_group_count = {int(p['feature_group_count'])} : i64, "
            f"lhs_dilation = {i64_array(p['lhs_dilation'])}, padding = {pad_txt}, "
            "precision_config = [" + ", ".join(f"#stablehlo<precision {_precision_name(q)}>"
                                               for q in prec) + "], "
            f"rhs_dilation = {i64_array(p['rhs_dilation'])}, "
            f"window_strides = {i64_array(p['window_strides'])}")


@register("conv_general_dilated")
def _conv(ctx, eqn, lhs, rhs):
    out = ctx.out_avals[0]
    nsp = ctx.in_avals[0].ndim - 2
    return [ctx.op1("stablehlo.convolution", [lhs, rhs], out, conv_attrs(eqn.params, nsp))]

"""Lowering rules: ``conv_general_dilated`` -> ``stablehlo.convolution``.

Complex convolutions are expanded into three real ones (Gauss's trick, as JAX does on CPU
and GPU: XLA:GPU has no complex convolution and XLA:CPU's is a slow loop).

Dimension numbers are written in StableHLO's compact form
``[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]``: for each axis of a tensor, its role
(batch/feature/in/out) or its spatial index.
"""
from __future__ import annotations

import numpy as np

from xform._src.primitives.convolution import conv_general_dilated_p
from xform._src.lowering.mlir import i64_array, register, tensor_type
from xform._src.lowering.rules_dot_general import _precision_name


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


@register(conv_general_dilated_p)
def _conv(ctx, eqn, lhs, rhs):
    out = ctx.out_avals[0]
    la, ra = ctx.in_avals
    nsp = la.ndim - 2
    attrs = conv_attrs(eqn.params, nsp)
    if np.dtype(la.dtype).kind != "c":
        return [ctx.op1("stablehlo.convolution", [lhs, rhs], out, attrs)]
    part = np.float32 if np.dtype(la.dtype) == np.complex64 else np.float64
    opart = np.float32 if np.dtype(out.dtype) == np.complex64 else np.float64
    re = lambda x, a: ctx.op1("stablehlo.real", [x], tensor_type(a.shape, part))
    im = lambda x, a: ctx.op1("stablehlo.imag", [x], tensor_type(a.shape, part))
    xr, xi, yr, yi = re(lhs, la), im(lhs, la), re(rhs, ra), im(rhs, ra)
    lt, rt = tensor_type(la.shape, part), tensor_type(ra.shape, part)
    ot = tensor_type(out.shape, opart)
    conv = lambda a, b: ctx.op1("stablehlo.convolution", [a, b], ot, attrs)
    k1 = conv(ctx.op1("stablehlo.add", [xr, xi], lt), yr)
    k2 = conv(xr, ctx.op1("stablehlo.subtract", [yi, yr], rt))
    k3 = conv(xi, ctx.op1("stablehlo.add", [yr, yi], rt))
    real = ctx.op1("stablehlo.subtract", [k1, k3], ot)
    imag = ctx.op1("stablehlo.add", [k1, k2], ot)
    return [ctx.op1("stablehlo.complex", [real, imag], out)]

"""Lowering rules: shape and layout (broadcast, reshape, transpose, slicing, padding, iota).

Each is one StableHLO op whose static attributes are the primitive's params
(JAX's names); the result type is the equation's output aval.
"""
from __future__ import annotations

import numpy as np

from xform._src.primitives.structural import (
    broadcast_in_dim_p, concatenate_p, dynamic_slice_p, dynamic_update_slice_p, iota_p, pad_p,
    reshape_p, rev_p, slice_p, squeeze_p, transpose_p)
from xform._src.lowering.mlir import i64_array, register, tensor_type


@register(broadcast_in_dim_p)
def _broadcast_in_dim(ctx, eqn, x, *dyn):
    dims = eqn.params["broadcast_dimensions"]
    return [ctx.op1("stablehlo.broadcast_in_dim", [x], ctx.out_avals[0],
                    f"broadcast_dimensions = {i64_array(dims)}")]


@register(reshape_p, squeeze_p)
def _reshape(ctx, eqn, x, *dyn):
    if eqn.params.get("dimensions") not in (None, ()) and eqn.primitive.name == "reshape":
        perm = eqn.params["dimensions"]   # reshape of the transposed operand (lax.reshape)
        a = ctx.in_avals[0]
        x = ctx.op1("stablehlo.transpose", [x], a.update(shape=tuple(a.shape[i] for i in perm)),
                    f"permutation = {i64_array(perm)}")
    return [ctx.op1("stablehlo.reshape", [x], ctx.out_avals[0])]


@register(transpose_p)
def _transpose(ctx, eqn, x):
    return [ctx.op1("stablehlo.transpose", [x], ctx.out_avals[0],
                    f"permutation = {i64_array(eqn.params['permutation'])}")]


@register(rev_p)
def _rev(ctx, eqn, x):
    return [ctx.op1("stablehlo.reverse", [x], ctx.out_avals[0],
                    f"dimensions = {i64_array(eqn.params['dimensions'])}")]


@register(concatenate_p)
def _concatenate(ctx, eqn, *xs):
    return [ctx.op1("stablehlo.concatenate", list(xs), ctx.out_avals[0],
                    f"dimension = {int(eqn.params['dimension'])} : i64")]


@register(pad_p)
def _pad(ctx, eqn, x, padding_value):
    cfg = eqn.params["padding_config"]
    lo, hi, interior = zip(*cfg) if cfg else ((), (), ())
    return [ctx.op1("stablehlo.pad", [x, padding_value], ctx.out_avals[0],
                    f"edge_padding_low = {i64_array(lo)}, edge_padding_high = {i64_array(hi)}, "
                    f"interior_padding = {i64_array(interior)}")]


@register(slice_p)
def _slice(ctx, eqn, x):
    p = eqn.params
    strides = p.get("strides") or (1,) * len(p["start_indices"])
    return [ctx.op1("stablehlo.slice", [x], ctx.out_avals[0],
                    f"start_indices = {i64_array(p['start_indices'])}, "
                    f"limit_indices = {i64_array(p['limit_indices'])}, "
                    f"strides = {i64_array(strides)}")]


def _scalar_indices(ctx, idx_names, idx_avals):
    """Start indices as 0-d tensors of one common integer type (XLA requires it)."""
    names = []
    dtypes = {a.dtype for a in idx_avals}
    if len(dtypes) == 1:
        dtype = dtypes.pop()
    else:
        dtype = np.dtype(np.int64 if any(a.dtype.itemsize == 8 for a in idx_avals) else np.int32)
    for n, a in zip(idx_names, idx_avals):
        if a.shape != ():
            n = ctx.op1("stablehlo.reshape", [n], tensor_type((), a.dtype))
        names.append(ctx.convert(n, dtype, ()))
    return names


@register(dynamic_slice_p)
def _dynamic_slice(ctx, eqn, x, *idx):
    starts = _scalar_indices(ctx, idx, ctx.in_avals[1:])
    return [ctx.op1("stablehlo.dynamic_slice", [x, *starts], ctx.out_avals[0],
                    f"slice_sizes = {i64_array(eqn.params['slice_sizes'])}")]


@register(dynamic_update_slice_p)
def _dynamic_update_slice(ctx, eqn, x, update, *idx):
    starts = _scalar_indices(ctx, idx, ctx.in_avals[2:])
    return [ctx.op1("stablehlo.dynamic_update_slice", [x, update, *starts], ctx.out_avals[0])]


@register(iota_p)
def _iota(ctx, eqn, *dyn):
    return [ctx.op1("stablehlo.iota", [], ctx.out_avals[0],
                    f"iota_dimension = {int(eqn.params['dimension'])} : i64")]

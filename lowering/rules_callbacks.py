"""Lowering rules: ``pure_callback`` and ``io_callback`` (host callbacks with results),
and ``custom_vmap_call`` (inlined).

Both become jaxlib's FFI python-callback custom call (as ``debug_callback`` does), with
result types; the host function is handed to the PJRT compile call by index.
``io_callback(ordered=True)`` calls are chained by a data dependence: each takes the
previous ordered call's extra scalar result as an operand, so XLA keeps their order
within a program body.
"""
from __future__ import annotations

import numpy as np

from xform._src.primitives.callbacks import io_callback_p, pure_callback_p
from xform._src.primitives.custom_vmap import custom_vmap_call_p
from xform._src.lowering.mlir import register, tensor_type
from xform._src.interpreters import core
from xform._src.primitives.callbacks import run_host


def _layout(ndim):
    dims = ", ".join(str(i) for i in reversed(range(ndim)))
    return f"dense<[{dims}]> : tensor<{ndim}xindex>" if ndim else "dense<> : tensor<0xindex>"


def _emit(ctx, eqn, operands, host_fn, side_effect, extra_in=None, extra_out=False):
    index = ctx.module.add_host_callback(host_fn)
    device = "gpu" if ctx.module.platform in ("cuda", "rocm", "gpu") else "cpu"
    in_avals = [v.aval for v in eqn.invars]
    out_avals = list(eqn.params["result_avals"])
    ops = list(operands)
    if extra_in is not None:
        ops = [extra_in] + ops
        in_avals = [_TOKEN_AVAL] + in_avals
    if extra_out:
        out_avals = [_TOKEN_AVAL] + out_avals
    types = [tensor_type(a.shape, a.dtype) for a in out_avals]
    attrs = (f'call_target_name = "xla_ffi_python_{device}_callback", api_version = 4 : i32, '
             f"has_side_effect = {'true' if side_effect else 'false'}, "
             f"backend_config = {{index = {index} : ui64}}, "
             f"operand_layouts = [{', '.join(_layout(len(a.shape)) for a in in_avals)}], "
             f"result_layouts = [{', '.join(_layout(len(a.shape)) for a in out_avals)}]")
    return ctx.op("stablehlo.custom_call", ops, types, attrs)


class _Aval:
    shape = ()
    dtype = np.dtype(np.int8)


_TOKEN_AVAL = _Aval()


def _host(params, with_token_in=False, with_token_out=False):
    callback, result_avals = params["callback"], params["result_avals"]

    def host_fn(*arrays):
        if with_token_in:
            arrays = arrays[1:]
        outs = run_host(callback, result_avals, [core.Array(np.array(a)) for a in arrays])
        if with_token_out:
            outs = [np.zeros((), np.int8)] + outs
        return tuple(outs)
    return host_fn


@register(pure_callback_p)
def _pure_callback(ctx, eqn, *operands):
    return _emit(ctx, eqn, operands, _host(eqn.params), side_effect=False)


@register(io_callback_p)
def _io_callback(ctx, eqn, *operands):
    if not eqn.params["ordered"]:
        return _emit(ctx, eqn, operands, _host(eqn.params), side_effect=True)
    prev = getattr(ctx, "_xform_io_token", None)
    outs = _emit(ctx, eqn, operands, _host(eqn.params, prev is not None, True),
                 side_effect=True, extra_in=prev, extra_out=True)
    ctx._xform_io_token = outs[0]
    return outs[1:]


@register(custom_vmap_call_p)
def _custom_vmap_call(ctx, eqn, *operands):
    """``custom_batching.custom_vmap`` outside ``vmap``: the function's own program."""
    from xform._src.lowering.mlir import lower_subjaxpr  # deferred: keeps `import xform` light
    return lower_subjaxpr(ctx, eqn.params["call_jaxpr"], list(operands))

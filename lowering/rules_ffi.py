"""Lowering rules: ``ffi_call`` (``primitives/ffi.py``) and the pieces ``xform.ffi`` builds
lowering rules from.

An FFI call is one ``stablehlo.custom_call`` of the registered target. With the typed
FFI (``api_version = 4``) the call's attributes travel in a dictionary
``backend_config`` and are encoded as JAX encodes them (``mlir.ir_attribute``): Python
ints as ``i64``, floats as ``f64``, bools as ``i1``, NumPy scalars in their own type,
NumPy arrays as ``dense`` tensors, strings, dtypes as types, dicts as dictionaries and
sequences as arrays. Layouts are minor-to-major dimension orders, row-major unless the
call says otherwise.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import interrupts
from xform._src.lowering.mlir import (_quote, dense_literal, element_type, register,
                                       tensor_type)
from xform._src.primitives.ffi import FrozenDict, HashableArray, ffi_call_p, unwrap_attributes


def _float_text(v, dtype):
    dtype = np.dtype(dtype)
    bits = np.asarray(v, dtype).view(f"u{dtype.itemsize}")
    return f"0x{int(bits):0{2 * dtype.itemsize}X} : {element_type(dtype)}"


def _scalar_attr(v):
    v = np.asarray(v)
    dt = v.dtype
    if dt == np.bool_:
        return "true" if bool(v) else "false"
    if dt.kind in "iu":
        return f"{int(v)} : {element_type(dt)}"
    if dt.kind == "f":
        return _float_text(v, dt)
    raise TypeError(f"ffi_call attribute of dtype {dt} is not supported; use a bool, "
                    "an integer or a floating-point scalar, an array, a string or a dict")


def attribute_text(val) -> str:
    """A Python attribute value as MLIR attribute text (JAX's ``mlir.ir_attribute``)."""
    if isinstance(val, HashableArray):
        val = val.val
    if isinstance(val, FrozenDict):
        val = val._d
    if isinstance(val, bool):
        return "true" if val else "false"
    if isinstance(val, int):
        return f"{val} : i64"
    if isinstance(val, float):
        return _float_text(val, np.float64)
    if isinstance(val, (str, bytes)):
        return _quote(val.decode() if isinstance(val, bytes) else val)
    if isinstance(val, np.dtype) or (isinstance(val, type) and issubclass(val, np.generic)):
        return element_type(np.dtype(val))
    if isinstance(val, np.generic):
        return _scalar_attr(val)
    if isinstance(val, np.ndarray):
        if val.ndim == 0:
            return _scalar_attr(val)
        if 0 in val.strides and val.size > 0:
            raise ValueError("NumPy arrays with zero strides are not supported as MLIR "
                             "attributes")
        return f"dense<{dense_literal(val)}> : {tensor_type(val.shape, val.dtype)}"
    if isinstance(val, dict):
        return "{" + ", ".join(f"{k} = {attribute_text(v)}" for k, v in val.items()) + "}"
    if isinstance(val, (list, tuple)):
        return "[" + ", ".join(attribute_text(v) for v in val) + "]"
    raise TypeError(f"cannot encode {type(val).__name__} value {val!r} as an FFI attribute")


def _layout_text(layout) -> str:
    dims = [int(d) for d in layout]
    if not dims:
        return "dense<> : tensor<0xindex>"
    return f"dense<[{', '.join(map(str, dims))}]> : tensor<{len(dims)}xindex>"


def row_major(ndim):
    return tuple(reversed(range(ndim)))


def emit_custom_call(ctx, target_name, operands, in_avals, out_avals, *, api_version=4,
                     backend_config=None, attributes=None, has_side_effect=False,
                     operand_layouts=None, result_layouts=None, operand_output_aliases=(),
                     skip_layouts=False):
    """Emit one ``stablehlo.custom_call`` of ``target_name``; returns the result names."""
    attributes = dict(attributes or {})
    if api_version >= 4:
        if backend_config is not None and not isinstance(backend_config, dict):
            raise ValueError("When api_version > 4, backend_config must be a dictionary.")
        cfg = dict(backend_config or {}, **attributes)
        config = "{" + ", ".join(f"{k} = {attribute_text(v)}" for k, v in cfg.items()) + "}"
    else:
        if attributes:
            raise ValueError("The use of ffi_call attributes requires a custom call API "
                             f"version of at least 4; got api_version={api_version}.")
        config = _quote(backend_config or "")
    parts = [f"call_target_name = {_quote(target_name)}", f"api_version = {api_version} : i32",
             f"backend_config = {config}",
             f"has_side_effect = {'true' if has_side_effect else 'false'}"]
    if not skip_layouts:
        ins = operand_layouts or [None] * len(in_avals)
        outs = result_layouts or [None] * len(out_avals)
        parts.append("operand_layouts = [" + ", ".join(
            _layout_text(row_major(a.ndim) if lay is None else lay)
            for a, lay in zip(in_avals, ins)) + "]")
        parts.append("result_layouts = [" + ", ".join(
            _layout_text(row_major(a.ndim) if lay is None else lay)
            for a, lay in zip(out_avals, outs)) + "]")
    if operand_output_aliases:
        multi = len(out_avals) > 1
        parts.append("output_operand_aliases = [" + ", ".join(
            f"#stablehlo.output_operand_alias<output_tuple_indices = "
            f"[{o if multi else ''}], operand_index = {i}, operand_tuple_indices = []>"
            for i, o in sorted(dict(operand_output_aliases).items())) + "]")
    types = [tensor_type(a.shape, a.dtype) for a in out_avals]
    return ctx.op("stablehlo.custom_call", list(operands), types, ", ".join(parts))


@register(ffi_call_p)
def _ffi_call(ctx, eqn, *operands):
    p = eqn.params
    return emit_custom_call(
        ctx, p["target_name"], operands, ctx.in_avals, ctx.out_avals,
        api_version=p["custom_call_api_version"], backend_config=p["legacy_backend_config"],
        attributes=unwrap_attributes(p["attributes"]), has_side_effect=p["has_side_effect"],
        operand_layouts=p["input_layouts"], result_layouts=p["output_layouts"],
        operand_output_aliases=p["input_output_aliases"])


def xla_client():
    """jaxlib's ``xla_client`` (FFI target registration for ``xform.ffi``): only lowering/
    touches jaxlib."""
    return interrupts.import_module("jaxlib.xla_client")

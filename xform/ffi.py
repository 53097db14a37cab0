"""Calling compiled foreign functions: JAX's ``jax.ffi`` API.

A handler written against XLA's FFI (``xla/ffi/api/ffi.h``, under ``include_dir()``),
compiled into a shared library and registered with ``register_ffi_target``, is called
from xform programs with ``ffi_call``: eagerly, under ``jit``, ``vmap`` (per the call's
``vmap_method``) and inside control flow. ``ffi_lowering`` /
``build_ffi_lowering_function`` give the lowering rule of a user primitive
(``xform.extend``) that calls a target. Registration goes to jaxlib's XLA, the one that
compiles xform's programs, so a target registered through ``jax.ffi`` is callable too.
"""
from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence

import numpy as np

from xform._src.interpreters import core
from xform._src.interpreters.core import ShapedArray
from xform._src.primitives.ffi import ffi_call_p, wrap_attributes
from xform._src.primitives.structural import as_operand
import importlib.util

__all__ = ["build_ffi_lowering_function", "ffi_call", "ffi_lowering", "include_dir",
           "pycapsule", "register_ffi_target", "register_ffi_target_as_batch_partitionable",
           "register_ffi_type", "register_ffi_type_id"]


def _xla_client():
    from xform._src.lowering.rules_ffi import xla_client  # deferred: keeps `import xform` light
    return xla_client()


def register_ffi_target(name: str, fn, platform: str = "cpu", api_version: int = 1,
                        **kwargs) -> None:
    """Register a handler (a ``PyCapsule``, or a dict of them by FFI stage such as
    ``"execute"``) as the custom-call target ``name`` on ``platform``; ``api_version`` 1
    is the typed FFI, 0 the legacy custom-call API."""
    _xla_client().register_custom_call_target(name, fn, platform, api_version, **kwargs)


def register_ffi_type_id(name: str, obj, platform: str = "cpu") -> None:
    """Refused as in JAX 0.10.2 (its jaxlib dropped type-id registration): use
    ``register_ffi_type``."""
    raise ValueError("register_ffi_type_id is not supported after jaxlib version 381.")


def register_ffi_type(name: str, type_registration, platform: str = "cpu") -> None:
    """Register a user type (a dict with a ``type_id`` capsule and optionally a
    ``type_info`` capsule) that FFI handlers exchange as state or attributes."""
    return _xla_client().register_custom_type(name, type_registration, platform=platform)


def register_ffi_target_as_batch_partitionable(name: str) -> None:
    """Let XLA's SPMD partitioner split calls of ``name`` along their batch dimensions."""
    _xla_client().register_custom_call_as_batch_partitionable(name)


def pycapsule(funcptr):
    """Wrap a ``ctypes`` function pointer (``ctypes.CDLL(path).handler``) in the
    ``PyCapsule`` that ``register_ffi_target`` takes."""
    destructor = ctypes.CFUNCTYPE(None, ctypes.py_object)
    builder = ctypes.pythonapi.PyCapsule_New
    builder.restype = ctypes.py_object
    builder.argtypes = (ctypes.c_void_p, ctypes.c_char_p, destructor)
    return builder(funcptr, None, destructor(0))


def include_dir() -> str:
    """The directory of the XLA FFI headers shipped with jaxlib (``xla/ffi/api/ffi.h``)."""
    spec = importlib.util.find_spec("jaxlib")
    if spec is None:
        raise RuntimeError("jaxlib is not installed: the FFI headers ship with it")
    base = spec.origin and os.path.dirname(os.path.abspath(spec.origin))
    if not base:
        base = list(spec.submodule_search_locations)[0]
    return os.path.join(base, "include")


def _layout(aval, layout):
    """A major-to-minor layout (or None: row-major) as XLA's minor-to-major order."""
    if layout is None:
        return tuple(reversed(range(len(aval.shape))))
    if hasattr(layout, "major_to_minor"):
        if getattr(layout, "tiling", None) is not None:
            raise ValueError("The FFI does not support layouts with tiling")
        return tuple(layout.major_to_minor[::-1])
    return tuple(int(d) for d in layout)[::-1]


def _result_aval(i, r):
    if not hasattr(r, "shape") or not hasattr(r, "dtype"):
        raise ValueError("All elements of result_shape_dtypes must have 'shape' and 'dtype' "
                         f"attributes. Got {r} at position {i}.")
    return ShapedArray(tuple(int(d) for d in r.shape), np.dtype(r.dtype))


_VMAP_METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized", None]


def ffi_call(target_name: str, result_shape_dtypes, *, has_side_effect: bool = False,
             vmap_method: str | None = None, input_layouts=None, output_layouts=None,
             input_output_aliases: dict | None = None, custom_call_api_version: int = 4,
             legacy_backend_config: str | None = None):
    """A function calling the FFI target ``target_name``: ``ffi_call(name, out)(*arrays,
    **attributes)`` returns arrays shaped as ``result_shape_dtypes`` (one object with
    ``shape``/``dtype``, or a sequence of them); keyword arguments become the handler's
    attributes. ``has_side_effect=True`` keeps calls whose results are unused;
    ``vmap_method`` says how ``vmap`` calls it (as ``xform.pure_callback``); layouts are
    major-to-minor; ``input_output_aliases`` maps input to output indices."""
    if vmap_method not in _VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {_VMAP_METHODS}, "
                         f"but got: {vmap_method}")
    if isinstance(result_shape_dtypes, Sequence):
        multiple = True
        result_avals = tuple(_result_aval(i, r) for i, r in enumerate(result_shape_dtypes))
        out_layouts = output_layouts
    else:
        multiple = False
        result_avals = (_result_aval(0, result_shape_dtypes),)
        out_layouts = (output_layouts,)
    if custom_call_api_version >= 4 and legacy_backend_config is not None:
        raise ValueError("The use of the legacy_backend_config parameter requires "
                         f"custom_call_api_version < 4; got {custom_call_api_version}.")

    def wrapped(*args, **kwargs):
        args = [as_operand(x) for x in args]
        in_avals = [core.get_aval(x) for x in args]
        if input_layouts is None:
            in_lay = tuple(_layout(a, None) for a in in_avals)
        else:
            if len(input_layouts) != len(in_avals):
                raise ValueError(f"The number of input arguments ({len(in_avals)}) must "
                                 f"equal the number of input layouts ({len(input_layouts)}).")
            in_lay = tuple(_layout(a, lay) for a, lay in zip(in_avals, input_layouts))
        if out_layouts is None:
            out_lay = tuple(_layout(a, None) for a in result_avals)
        else:
            if len(out_layouts) != len(result_avals):
                raise ValueError(f"The number of outputs ({len(result_avals)}) must equal "
                                 f"the number of output layouts ({len(out_layouts)}).")
            out_lay = tuple(_layout(a, lay) for a, lay in zip(result_avals, out_layouts))
        aliases = []
        for i, o in sorted((input_output_aliases or {}).items()):
            i, o = int(i), int(o)
            if i >= len(args):
                raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with "
                                 f"input index {i} outside the range [0, {len(args)}).")
            if o >= len(result_avals):
                raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with "
                                 f"output index {o} outside the range [0, "
                                 f"{len(result_avals)}).")
            a, r = in_avals[i], result_avals[o]
            if (a.shape, a.dtype) != (r.shape, r.dtype):
                raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' "
                                 f"referring to an input with abstract value {a.str_short()} "
                                 "and an output with a different abstract value "
                                 f"{r.str_short()}.")
            if in_lay[i] != out_lay[o]:
                raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' "
                                 f"referring to an input with layout {in_lay[i]} and an "
                                 f"output with a different layout {out_lay[o]}.")
            aliases.append((i, o))
        outs = ffi_call_p.bind(
            *args, result_avals=result_avals, vmap_method=vmap_method,
            target_name=target_name, has_side_effect=bool(has_side_effect),
            input_layouts=in_lay, output_layouts=out_lay, input_output_aliases=tuple(aliases),
            custom_call_api_version=int(custom_call_api_version),
            legacy_backend_config=legacy_backend_config, attributes=wrap_attributes(kwargs))
        if multiple:
            return tuple(outs) if isinstance(result_shape_dtypes, tuple) else list(outs)
        return outs[0]

    return wrapped


def build_ffi_lowering_function(call_target_name: str, *, operand_layouts=None,
                                result_layouts=None, backend_config=None,
                                skip_ffi_layout_processing: bool = False, **lowering_args):
    """An emitter ``(ctx, eqn, *operands, **attributes) -> [result names]`` that lowers an
    equation to a custom call of ``call_target_name``; layouts here are minor-to-major
    (XLA's order); keyword arguments given to the emitter become attributes.
    ``lowering_args``: ``api_version`` (4), ``has_side_effect``,
    ``operand_output_aliases`` (a dict input -> output)."""
    def emit(ctx, eqn, *operands, **params):
        from xform._src.lowering.rules_ffi import emit_custom_call  # deferred: keeps `import xform` light
        kw = dict(lowering_args)
        return emit_custom_call(
            ctx, call_target_name, operands, ctx.in_avals, ctx.out_avals,
            api_version=kw.pop("api_version", 4), backend_config=backend_config,
            attributes=params, has_side_effect=kw.pop("has_side_effect", False),
            operand_layouts=operand_layouts, result_layouts=result_layouts,
            operand_output_aliases=tuple(dict(kw.pop("operand_output_aliases", None)
                                              or {}).items()),
            skip_layouts=skip_ffi_layout_processing)
    return emit


def ffi_lowering(call_target_name: str, *, operand_layouts=None, result_layouts=None,
                 backend_config=None, skip_ffi_layout_processing: bool = False,
                 **lowering_args):
    """A lowering rule for a user primitive that calls ``call_target_name``: register it
    with ``xform.interpreters.mlir.register_lowering(prim, ffi_lowering("target"))``; the
    primitive's params become the handler's attributes."""
    emit = build_ffi_lowering_function(
        call_target_name, operand_layouts=operand_layouts, result_layouts=result_layouts,
        backend_config=backend_config, skip_ffi_layout_processing=skip_ffi_layout_processing,
        **lowering_args)

    def rule(ctx, eqn, *operands):
        return emit(ctx, eqn, *operands, **eqn.params)
    rule.xform_lowering_rule = True
    return rule

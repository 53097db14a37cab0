"""Eager primitives run by XLA's own compiled kernel, for bit-identical eager numerics.

XLA computes transcendental functions with its own polynomial approximations, complex
arithmetic with its own formulas, and sums, products and dot products in its own order;
NumPy's results differ from XLA's in the last bits of 5-80% of the elements (float32 and
float64 alike; computing in float64 and rounding does not help).  JAX runs every eager
operation as a small XLA program, so in JAX ``f(x) == jit(f)(x)`` bit for bit.  A
primitive lists the operand dtypes for which its NumPy impl differs from XLA
(``Primitive.xla_eager_dtypes``, set by its block in ``primitives/``); for those the eval
trace calls ``run`` here (through ``core.xla_kernel_hook``), which compiles the
one-equation program once per (primitive, params, operand shapes and dtypes, device) and
runs it.  IEEE-exact operations (real add/mul/div/sqrt, comparisons, integer ops, moves)
stay on NumPy: there the bits are equal and NumPy is faster.

The call path is lean: one dict lookup on the key, ``batched_device_put`` of each host
operand, ``execute_sharded(...).consume_with_handlers``, and a zero-copy NumPy view of
each result -- no jit machinery, no pytrees.  ``xform_eager_numpy_numerics`` turns the
routing off (NumPy's speed, NumPy's bits).
"""
from __future__ import annotations

import threading

import numpy as np

from xform._src.interpreters import core
from xform._src.lowering import runtime as _rt

__all__ = ["run", "cache_info", "clear_cache"]

_kernels: dict = {}          # key -> _Kernel, or _FAILED (the program does not compile)
_MAX_KERNELS = 4096
_lock = threading.Lock()
_FAILED = object()
_put = _rt._put
_HBS = _rt._HBS
_to_host = _rt._buffer_to_host
_closing = _rt._closing
_default_device_cache = _rt._default_device_cache
_params_key = _rt._param_key      # the hashable key of a primitive's params, or None


class _Kernel:
    __slots__ = ("execute", "specs", "handlers", "sharding", "devices", "device", "multi")

    def __init__(self, comp, multi):
        self.execute = comp._exe.execute_sharded
        self.specs = [javal for (_, _, javal) in comp._specs]
        self.handlers = comp._handlers
        self.sharding = comp._sh
        self.devices = comp._devlist
        self.device = comp.device
        self.multi = multi


def _compile(prim, params, vals):
    avals = tuple(core.ShapedArray(np.shape(v), v.dtype) for v in vals)
    try:
        comp = _rt.compile_jaxpr(_rt.primitive_program(prim, params, avals),
                                 name=prim.name, tier="optimized")
    except Exception:       # no lowering for these params: the NumPy impl answers
        return _FAILED
    if not isinstance(comp, _rt.Compiled) or comp._sync:
        return _FAILED      # typed keys, host callbacks: not a plain kernel
    return _Kernel(comp, prim.multiple_results)


def run(prim, vals, params, avals):
    """``prim`` on host values ``vals`` by XLA's kernel: NumPy result(s), or None where
    the NumPy impl must answer (unhashable params, no lowering, interpreter exiting).

    ``avals``: the operands' abstract values where some operand may be a Python scalar
    (the eval trace's general path); None when every operand is a NumPy array of the
    right dtype (the ``eager_fast`` path)."""
    if _closing[0]:
        return None
    if avals is not None:
        vals = [v if type(v) is np.ndarray and v.dtype == a.dtype
                else np.asarray(v, a.dtype) for v, a in zip(vals, avals)]
    if params:
        pkey = _params_key(params)
        if pkey is None:
            return None
        key = (prim, pkey, *[(v.shape, v.dtype) for v in vals])
    elif len(vals) == 1:
        v = vals[0]
        key = (prim, v.shape, v.dtype)
    else:
        key = (prim, *[(v.shape, v.dtype) for v in vals])
    k = _kernels.get(key)
    if k is None or (k is not _FAILED and k.device is not _default_device_cache[0]):
        k = _compile(prim, params, vals)
        with _lock:
            if len(_kernels) >= _MAX_KERNELS:
                _kernels.clear()
            _kernels[key] = k
    if k is _FAILED:
        return None
    sh, devs = k.sharding, k.devices
    if len(vals) == 1:
        bufs = [_put(k.specs[0], sh, [vals[0]], devs, True, False, _HBS, True)]
    else:
        bufs = [_put(javal, sh, [v], devs, True, False, _HBS, True)
                for v, javal in zip(vals, k.specs)]
    outs = k.execute(bufs).consume_with_handlers(k.handlers)
    if k.multi:
        return [_host(o) for o in outs]
    return _host(outs[0])


def _host(buf):
    v = np.asarray(buf)                  # a zero-copy view of the CPU buffer
    return v if v.dtype != object else _to_host(buf)   # bfloat16: NumPy cannot read it


def cache_info() -> dict:
    return {"kernels": sum(1 for k in _kernels.values() if k is not _FAILED),
            "not_compiled": sum(1 for k in _kernels.values() if k is _FAILED)}


def clear_cache() -> None:
    with _lock:
        _kernels.clear()


core.xla_kernel_hook = run

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

The call path is lean: one dict lookup on the key, the device buffer of each operand
(a previous kernel's result is read back from its NumPy view, a small array put before
is cached; only other operands pay ``batched_device_put``),
``execute_sharded(...).consume_with_handlers``, and a zero-copy NumPy view of each
result -- no jit machinery, no pytrees.  ``xform_eager_numpy_numerics`` turns the
routing off (NumPy's speed, NumPy's bits).
"""
from __future__ import annotations

import threading
import weakref

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
_host_bufs: dict = {}        # id(host array) -> (weak reference to it, its device buffer)
_CACHE_MAX_BYTES = 1 << 16   # larger arrays: the copy, not the call, dominates; not cached
_ArrayImpl = None            # jaxlib's device array type (set on first compile)


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
    global _ArrayImpl
    if _ArrayImpl is None:
        from jaxlib import _jax
        _ArrayImpl = _jax.ArrayImpl
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
    if len(vals) == 1:
        bufs = [_device_buffer(vals[0], k.specs[0], k)]
    else:
        bufs = [_device_buffer(v, javal, k) for v, javal in zip(vals, k.specs)]
    outs = k.execute(bufs).consume_with_handlers(k.handlers)
    if k.multi:
        return [_host(o) for o in outs]
    return _host(outs[0])


def _device_buffer(v, javal, k):
    """The device buffer holding host value ``v`` for kernel ``k``, without a transfer
    where one exists: ``v`` is a previous kernel's result (a view of its buffer), or it
    was put on this device before (small arrays; cached for the array's lifetime).

    Why: the transfer costs as much as the kernel's execution (3-6 us for a few bytes),
    and eager code feeds kernels their own results and the same parameters again and
    again.  Arrays' host values are never written to (users get read-only views), so a
    buffer made from one stays equal to it."""
    sh = k.sharding
    b = v.base
    if type(b) is memoryview:
        o = b.obj
        if type(o) is _ArrayImpl and o._sharding is sh:
            a = o.aval
            # a view of the whole buffer, not a slice/reversal/reinterpretation of it
            if a.shape == v.shape and a.dtype == v.dtype and v.flags.c_contiguous:
                return o
    if v.nbytes > _CACHE_MAX_BYTES:
        return _put(javal, sh, [v], k.devices, True, False, _HBS, True)
    i = id(v)
    e = _host_bufs.get(i)
    if e is not None and e[0]() is v and e[1]._sharding is sh:
        return e[1]
    buf = _put(javal, sh, [v], k.devices, True, False, _HBS, True)
    try:
        _host_bufs[i] = (weakref.ref(v, lambda _, i=i: _host_bufs.pop(i, None)), buf)
    except TypeError:        # an object that takes no weak references: not cached
        pass
    return buf


def _host(buf):
    v = np.asarray(buf)                  # a zero-copy view of the CPU buffer
    return v if v.dtype != object else _to_host(buf)   # bfloat16: NumPy cannot read it


def cache_info() -> dict:
    return {"kernels": sum(1 for k in _kernels.values() if k is not _FAILED),
            "not_compiled": sum(1 for k in _kernels.values() if k is _FAILED)}


def clear_cache() -> None:
    with _lock:
        _kernels.clear()
        _host_bufs.clear()


core.xla_kernel_hook = run

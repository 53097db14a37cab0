"""Top-level odds and ends of JAX's API: names, scopes, caches, environment, devices,
configuration contexts and the transfer guard.

* ``named_scope(name)`` / ``named_call(f, name=)``: equations staged inside carry the
  scope as a prefix of their source name, which becomes the ``loc`` (op_name metadata)
  of the lowered StableHLO, as in JAX.
* ``ensure_compile_time_eval()``: inside it, operations whose inputs are all concrete
  run now even under ``jit`` (so their results are concrete Python-usable values).
* ``typeof(x)``: the abstract value (``ShapedArray``) of ``x``.
* ``clear_caches()``: drops every tracing, program-transform and executable cache.
* ``live_arrays()``: every xform Array still alive.
* configuration contexts (``enable_x64``, ``debug_nans``, ``debug_infs``,
  ``default_device``, ``default_matmul_precision``, ``numpy_dtype_promotion``,
  ``numpy_rank_promotion``, ``explain_cache_misses``, ``log_compiles``,
  ``check_tracer_leaks``, ``enable_checks``): ``with xform.debug_nans(True): ...``.
* ``transfer_guard*``: ``"allow"`` / ``"log"`` / ``"disallow"`` (and ``*_explicit``)
  for implicit host-to-device transfers (NumPy / Python values passed to a compiled
  function) and device-to-host transfers (converting an Array that lives in a device
  buffer to NumPy / Python).
"""
from __future__ import annotations

import contextlib
import functools
import gc
import logging
import platform as _platform
import sys
import threading

import numpy as np

from xform._wrapping import wraps as _wraps
from xform._src.interpreters import core, staging
from xform._src.interpreters.config import config
from xform._src.interpreters.dtypes import float0
from xform import _ad_api
from xform import _devices, _jit
from xform._jit import jit
from xform._src import lowering
from xform._src.interpreters import ad
from xform._src.interpreters import jaxpr_transforms as jt
from xform._src.primitives import jit as pjit
from xform.sharding import _typeof_sharding
from xform.tree_util import register_pytree_node
from xform.tree_util import tree_leaves
from importlib import metadata

__all__ = ["float0", "named_call", "named_scope", "ensure_compile_time_eval", "typeof",
           "clear_caches", "live_arrays", "print_environment_info", "Device",
           "default_device", "enable_x64", "debug_nans", "debug_infs",
           "default_matmul_precision", "numpy_dtype_promotion", "numpy_rank_promotion",
           "explain_cache_misses", "log_compiles", "check_tracer_leaks", "checking_leaks",
           "enable_checks", "transfer_guard", "transfer_guard_host_to_device",
           "transfer_guard_device_to_host", "transfer_guard_device_to_device",
           "effects_barrier", "copy_to_host_async", "process_count", "process_index",
           "process_indices", "host_count", "host_id", "host_ids", "fwd_and_bwd", "no_tracing",
           "default_prng_impl", "enable_custom_prng", "legacy_prng_key",
           "threefry_partitionable", "debug_key_reuse", "allow_f16_reductions",
           "array_garbage_collection_guard", "jax2tf_associative_scan_reductions",
           "softmax_custom_jvp", "no_execution", "thread_guard"]

_log = logging.getLogger("xform")

# ----------------------------------------------------------------- named scopes


def _scope_stack():
    st = getattr(staging._name_scopes, "stack", None)
    if st is None:
        st = staging._name_scopes.stack = []
    return st


@contextlib.contextmanager
def named_scope(name: str):
    """Prefix the names of operations staged inside with ``name`` (nested scopes join
    with ``/``); visible in the lowered program's op locations."""
    if not isinstance(name, str):
        raise TypeError(f"named_scope: name must be a string, got {type(name).__name__}")
    st = _scope_stack()
    st.append(name)
    try:
        yield
    finally:
        st.pop()


def named_call(fun, *, name: str | None = None):
    """``fun`` whose staged operations are named under ``name`` (default: its __name__)."""
    if not callable(fun):
        raise TypeError(f"named_call: expected a callable, got {fun!r}")
    scope = name if name is not None else getattr(fun, "__name__", "named_call")

    @_wraps(fun)
    def named(*args, **kwargs):
        with named_scope(scope):
            return fun(*args, **kwargs)
    return named


# ----------------------------------------------------------------- compile-time eval


class _CompileTimeEvalTrace(core.Trace):
    """Runs a primitive now when none of its inputs is a tracer; otherwise hands it
    to the trace that was current when the context was entered."""

    def __init__(self, parent):
        super().__init__(parent, "ensure_compile_time_eval")
        self.level = parent.level  # adds no level of its own: parent tracers are local
        self._outer = parent

    def process_primitive(self, prim, args, params):
        target = core.EVAL_TRACE if not any(isinstance(a, core.Tracer) for a in args) \
            else self._outer
        with core.set_current_trace(target):
            return prim.bind(*args, **params)


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Inside this context, operations on concrete values run eagerly even while
    tracing (under ``jit``), so their results are concrete."""
    cur = core.current_trace()
    if cur is core.EVAL_TRACE:
        yield
        return
    with core.set_current_trace(_CompileTimeEvalTrace(cur)):
        yield


def typeof(x):
    """The abstract value (``ShapedArray``: shape, dtype, weak_type) of ``x``; for an
    array reference its ``AbstractRef`` (``Ref{float32[3]}``)."""
    from xform._src.interpreters.refs import Ref, AbstractRef
    if isinstance(x, Ref):
        return AbstractRef(x._aval.update(weak_type=False) if x._aval.weak_type
                           else x._aval)
    try:
        aval = core.get_aval(x)
    except TypeError:
        raise TypeError(f"typeof: {x!r} of type {type(x).__name__} is not an xform array "
                        "type") from None
    if type(x) is core.Array and x._buf is not None:
        return _typeof_sharding(x, aval)
    return aval


# ----------------------------------------------------------------- caches and arrays


def clear_caches():
    """Clear every cache: jit tracing caches, program-transform memos, compiled
    executables (the next call of a jitted function retraces and recompiles)."""
    for m in (jt._jvp_memo, jt._pe_memo, jt._transpose_memo, pjit._programs):
        m.d.clear()
    for t in list(_jit._fast_tables.values()):
        t.clear()
    for obj in gc.get_objects():
        if type(obj) is _jit.JitWrapped:
            obj.clear_cache()
    if "xform._src.lowering.runtime" in sys.modules:
        sys.modules["xform._src.lowering.runtime"].clear_caches()


def live_arrays(platform=None):
    """Every xform Array alive now (not deleted).  ``platform``: only arrays whose data
    is on that platform ('cpu', 'gpu', ...)."""
    out = [o for o in gc.get_objects() if type(o) is core.Array and not o._deleted]
    if platform is not None:
        p = str(platform).lower()
        p = {"cuda": "gpu", "rocm": "gpu"}.get(p, p)

        def plat(a):
            if a._buf is None:
                return "cpu"
            pl = str(getattr(getattr(a._buf, "platform", None), "__call__", None) and
                     a._buf.platform() or "cpu").lower()
            return {"cuda": "gpu", "rocm": "gpu"}.get(pl, pl)
        out = [a for a in out if plat(a) == p]
    return out


def print_environment_info(return_string: bool = False):
    """Versions of xform, its dependencies and Python, and the platform."""
    import xform  # deferred: import cycle

    def ver(pkg):
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return "not installed"
    lines = [f"xform:    {xform.__version__}", f"jaxlib:   {ver('jaxlib')}",
             f"numpy:    {np.__version__}", f"ml_dtypes: {ver('ml_dtypes')}",
             f"python:   {sys.version}", f"platform: {_platform.platform()}",
             f"process_count: {process_count()}"]
    if "xform._src.lowering.runtime" in sys.modules:
        rt = sys.modules["xform._src.lowering.runtime"]
        lines.append(f"devices:  {rt.devices()}")
    text = "\n".join(lines) + "\n"
    if return_string:
        return text
    print(text)
    return None


def effects_barrier():
    """Wait until every side effect (callbacks) of programs already run has happened.
    Programs with host callbacks run to completion before their call returns, so all
    effects have happened by the time this is called."""
    return None


def copy_to_host_async(x):
    """Start copying every device-resident Array leaf of ``x`` to the host; returns ``x``."""
    for leaf in tree_leaves(x):
        if type(leaf) is core.Array and leaf._buf is not None and leaf._npy is None:
            f = getattr(leaf._buf, "copy_to_host_async", None)
            if f is not None:
                f()
    return x


# One process (multi-process runs are not supported).
def process_count(backend=None) -> int:
    return 1


def process_index(backend=None) -> int:
    return 0


def process_indices(backend=None) -> list:
    return [0]


host_count, host_id, host_ids = process_count, process_index, process_indices


# ----------------------------------------------------------------- devices


class _DeviceMeta(type):
    def __instancecheck__(cls, obj):
        if "xform._src.lowering.runtime" not in sys.modules:
            return False   # no device object can exist before the runtime loaded
        devs = lowering.devices()
        return bool(devs) and isinstance(obj, type(devs[0]).__mro__[0])


class Device(metaclass=_DeviceMeta):
    """The type of ``xform.devices()`` entries (jaxlib's device class; ``isinstance``
    works without importing jaxlib first)."""

    def __new__(cls, *a, **k):
        raise TypeError("xform.Device cannot be instantiated; use xform.devices()")


# ----------------------------------------------------------------- configuration contexts


def _config_context(option, doc, convert=lambda v: v):
    @contextlib.contextmanager
    def ctx(new_val=True):
        with config.override(option, convert(new_val)):
            yield
    ctx.__name__ = option[len("jax_"):] if option.startswith("jax_") else option
    ctx.__doc__ = f"Context manager for the ``{option}`` option: {doc}"
    return ctx


enable_x64 = _config_context("jax_enable_x64", "64-bit dtypes.", bool)
debug_nans = _config_context("jax_debug_nans", "raise FloatingPointError on NaN outputs.",
                             bool)
debug_infs = _config_context("jax_debug_infs", "raise FloatingPointError on inf outputs.",
                             bool)
default_matmul_precision = _config_context("jax_default_matmul_precision",
                                           "precision of matmuls/convolutions.")
numpy_dtype_promotion = _config_context("jax_numpy_dtype_promotion",
                                        "'standard' or 'strict' type promotion.")
numpy_rank_promotion = _config_context("jax_numpy_rank_promotion",
                                       "'allow', 'warn' or 'raise' on rank promotion.")
explain_cache_misses = _config_context("jax_explain_cache_misses",
                                       "log why jit retraces.", bool)
log_compiles = _config_context("jax_log_compiles", "log each compilation.", bool)
check_tracer_leaks = _config_context("jax_check_tracer_leaks",
                                     "check for leaked tracers.", bool)
checking_leaks = functools.partial(check_tracer_leaks, True)
enable_checks = _config_context("jax_enable_checks", "type-check staged programs.", bool)
# JAX's context managers for the rest of its options: each sets the option for its block
# through config.update, so a value xform does not support raises NotImplementedError
# there, as xform.config.update does (see docs/compatibility.md).
default_prng_impl = _config_context("jax_default_prng_impl", "the default PRNG implementation.")
enable_custom_prng = _config_context("jax_enable_custom_prng", "custom PRNG implementations.",
                                     bool)
legacy_prng_key = _config_context("jax_legacy_prng_key",
                                  "'allow', 'warn' or 'error' on raw uint32 keys.")
threefry_partitionable = _config_context("jax_threefry_partitionable",
                                         "partitionable threefry bits.", bool)
debug_key_reuse = _config_context("jax_debug_key_reuse", "key-reuse checking.", bool)
allow_f16_reductions = _config_context("jax_allow_f16_reductions",
                                       "reductions in 16-bit floats.", bool)
array_garbage_collection_guard = _config_context("jax_array_garbage_collection_guard",
                                                 "what to do when an array is collected.")
jax2tf_associative_scan_reductions = _config_context(
    "jax2tf_associative_scan_reductions", "jax2tf's reduction lowering.", bool)
softmax_custom_jvp = _config_context("jax_softmax_custom_jvp", "softmax's custom JVP.", bool)
no_execution = _config_context("jax_no_execution", "refuse to execute computations.", bool)
thread_guard = _config_context("jax_thread_guard", "a multi-process thread check.", bool)


@contextlib.contextmanager
def default_device(device):
    """Inside this context, computations without committed inputs run on ``device``."""
    with config.override("jax_default_device", device):
        yield


# ----------------------------------------------------------------- transfer guard

_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")


class _Guards(threading.local):
    def __init__(self):
        self.host_to_device = "allow"
        self.device_to_host = "allow"
        self.device_to_device = "allow"


_guards = _Guards()


@contextlib.contextmanager
def _guard(kinds, level):
    if level not in _LEVELS:
        raise ValueError(f"transfer_guard: level must be one of {_LEVELS}, got {level!r}")
    global _active_guards
    old = [getattr(_guards, k) for k in kinds]
    for k in kinds:
        setattr(_guards, k, level)
    with _hooks_lock:
        _active_guards += 1
        _install_guard_hooks()
    try:
        yield
    finally:
        for k, v in zip(kinds, old):
            setattr(_guards, k, v)
        with _hooks_lock:
            _active_guards -= 1
            if _active_guards == 0:
                _uninstall_guard_hooks()   # unguarded code pays nothing


def transfer_guard(new_val: str):
    """Guard every kind of transfer: 'allow', 'log', 'disallow' (implicit transfers),
    'log_explicit', 'disallow_explicit' (explicit ones too, e.g. device_put/device_get)."""
    return _guard(("host_to_device", "device_to_host", "device_to_device"), new_val)


def transfer_guard_host_to_device(new_val: str):
    """Guard host-to-device transfers (NumPy/Python values passed to compiled code)."""
    return _guard(("host_to_device",), new_val)


def transfer_guard_device_to_host(new_val: str):
    """Guard device-to-host transfers (Array -> NumPy / Python value)."""
    return _guard(("device_to_host",), new_val)


def transfer_guard_device_to_device(new_val: str):
    """Guard device-to-device copies."""
    return _guard(("device_to_device",), new_val)


def check_transfer(kind: str, explicit: bool, what: str):
    """Raise / log per the current guard level for a ``kind`` transfer."""
    level = getattr(_guards, kind)
    if level == "allow":
        return
    strict = level in ("disallow", "disallow_explicit")
    if explicit and level in ("log", "disallow"):
        return
    direction = kind.replace("_", "-")
    msg = f"{'Disallowed' if strict else ''} {direction} transfer: {what}".strip()
    if strict:
        raise RuntimeError(msg[0].upper() + msg[1:] + f" (transfer_guard level {level!r})")
    _log.warning(msg)


_active_guards = 0
_hooks_lock = threading.RLock()
_originals: dict = {}   # (owner, attribute) -> the unwrapped value, while hooks are in


_MISSING = object()


def _set(owner, name, value):
    _originals.setdefault((owner, name), owner.__dict__.get(name, _MISSING)
                          if isinstance(owner, type) else getattr(owner, name))
    setattr(owner, name, value)


def _uninstall_guard_hooks():
    for (owner, name), orig in _originals.items():
        if orig is _MISSING:      # was inherited: drop our override
            delattr(owner, name)
        else:
            setattr(owner, name, orig)
    _originals.clear()


def _install_guard_hooks():
    """Wrap the conversion methods of Array and the entry points that move data while
    at least one transfer guard is active (removed again after the last one exits)."""
    if _originals:
        return
    A = core.Array

    def guard_d2h(name):
        orig = getattr(A, name)

        @functools.wraps(orig)
        def method(self, *args, **kwargs):
            if self._npy is None and self._buf is not None and \
                    _guards.device_to_host != "allow":
                check_transfer("device_to_host", False,
                               f"{name} of an array {self.aval.str_short()} on a device")
            return orig(self, *args, **kwargs)
        _set(A, name, method)

    for n in ("__array__", "__float__", "__int__", "__complex__", "__bool__", "__index__",
              "item", "tolist"):
        guard_d2h(n)

    orig_put, orig_get = _devices.device_put, _devices.device_get

    @functools.wraps(orig_put)
    def device_put(x, *args, **kwargs):
        leaves = tree_leaves(x)
        if _guards.host_to_device != "allow" and any(
                not isinstance(l, core.ArrayOps) for l in leaves):
            check_transfer("host_to_device", True, "device_put of host values")
        target = args[0] if args else kwargs.get("device")
        if _guards.device_to_device != "allow" and target is not None and \
                "xform._src.lowering.runtime" in sys.modules:
            get_device = sys.modules["xform._src.lowering.runtime"].get_device
            if any(type(l) is core.Array and l._buf is not None and
                   get_device(l) != target for l in leaves):
                check_transfer("device_to_device", True,
                               f"device_put of device arrays to {target}")
        return orig_put(x, *args, **kwargs)

    @functools.wraps(orig_get)
    def device_get(x):
        if _guards.device_to_host != "allow" and any(
                type(l) is core.Array and l._npy is None and l._buf is not None
                for l in tree_leaves(x)):
            check_transfer("device_to_host", True, "device_get of device arrays")
        with transfer_guard_device_to_host("allow"):
            return orig_get(x)

    import xform  # deferred: import cycle
    for owner in (_devices, xform):
        _set(owner, "device_put", device_put)
        _set(owner, "device_get", device_get)

    orig_call = _jit.JitWrapped.__call__

    @functools.wraps(orig_call)
    def call(self, *args, **kwargs):
        if _guards.host_to_device != "allow":
            static = set(getattr(self, "_static_argnums", ()) or ())
            for i, a in enumerate(args):
                if i in static:
                    continue
                for l in tree_leaves(a):
                    if isinstance(l, np.ndarray):
                        check_transfer("host_to_device", False,
                                       f"argument {i} of {getattr(self, '__name__', 'jit')} "
                                       f"is a host value of type {type(l).__name__}")
        return orig_call(self, *args, **kwargs)
    _set(_jit.JitWrapped, "__call__", call)


# ----------------------------------------------------------------- fwd_and_bwd


class _Residuals:
    """What ``fwd_and_bwd``'s forward returns for the backward: the saved arrays are
    the pytree's leaves, the linear program and structures its static part, so it can
    be returned from and passed into jitted functions (the backward compiles once)."""

    __slots__ = ("arrays", "static")

    def __init__(self, arrays, static):
        self.arrays, self.static = list(arrays), static


class _Static:
    __slots__ = ("lin_jaxpr", "in_avals", "out_avals", "in_mask", "out_mask", "in_tree",
                 "out_tree", "vjp_out_avals")

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)

    def _key(self):
        return (id(self.lin_jaxpr), self.in_tree, self.out_tree)

    def __eq__(self, other):
        return isinstance(other, _Static) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())


def _register_residuals():
    register_pytree_node(_Residuals, lambda r: (r.arrays, r.static),
                         lambda static, arrays: _Residuals(arrays, static))


_register_residuals()


def fwd_and_bwd(fun, argnums, has_aux=False, jitted=True):
    """``(fwd, bwd)``: ``fwd(*args) -> (fun(*args), residuals[, aux])`` and
    ``bwd(residuals, cotangent) -> cotangents of the ``argnums`` arguments``, like
    ``vjp`` split in two so that each half can be jitted once and reused."""
    if not callable(fun):
        raise TypeError(f"fwd_and_bwd: expected a callable, got {fun!r}")
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not all(isinstance(i, int) for i in nums):
        raise TypeError(f"fwd_and_bwd: argnums must be an int or a sequence of ints, got "
                        f"{argnums!r}")

    def fwd(*args):
        n = len(args)
        for i in nums:
            if not -n <= i < n:
                raise TypeError(f"fwd_and_bwd: argnums {argnums} out of range for "
                                f"{n} positional arguments")
        idx = [i % n for i in nums]

        def partial(*dyn):
            full = list(args)
            for i, v in zip(idx, dyn):
                full[i] = v
            return fun(*full)
        out = _ad_api.vjp(partial, *[args[i] for i in idx], has_aux=has_aux)
        y, f_vjp = out[0], out[1]
        lin = f_vjp._lin
        res = _Residuals(lin.residuals, _Static(
            lin_jaxpr=lin.jaxpr, in_avals=lin.in_avals, out_avals=lin.out_avals,
            in_mask=lin.in_mask, out_mask=lin.out_mask, in_tree=f_vjp._in_tree,
            out_tree=f_vjp._out_tree, vjp_out_avals=f_vjp._out_avals))
        return (y, res, out[2]) if has_aux else (y, res)

    def bwd(residuals, cotangent):
        if not isinstance(residuals, _Residuals):
            raise TypeError("fwd_and_bwd: bwd's first argument must be the residuals "
                            "returned by fwd")
        s = residuals.static
        lin = ad.LinearFunction(s.lin_jaxpr, list(residuals.arrays), s.in_avals,
                                s.out_avals, s.in_mask, s.out_mask)
        cts = _ad_api.VJPFunction(lin, s.in_tree, s.out_tree, s.vjp_out_avals)(cotangent)
        return cts[0] if single else cts

    if jitted:
        return jit(fwd), jit(bwd)
    return fwd, bwd


# ----------------------------------------------------------------- no_tracing


class _NoTracing(threading.local):
    def __init__(self):
        self.depth = 0


_no_tracing_state = _NoTracing()
_no_tracing_users = 0


@contextlib.contextmanager
def no_tracing(new_val: bool = True):
    """Inside this context (with ``True``), a ``jit`` cache miss -- tracing the function
    again -- raises RuntimeError instead (to catch unexpected retracing)."""
    global _no_tracing_users
    if not new_val:
        old, _no_tracing_state.depth = _no_tracing_state.depth, 0
        try:
            yield
        finally:
            _no_tracing_state.depth = old
        return
    with _hooks_lock:
        if _no_tracing_users == 0:
            orig = _jit.JitWrapped._trace

            @functools.wraps(orig)
            def _trace(self, *args, **kwargs):
                if _no_tracing_state.depth:
                    raise RuntimeError(f"re-tracing function {getattr(self, '__name__', 'fun')}"
                                       " for `jit`, but 'no_tracing' is set")
                return orig(self, *args, **kwargs)
            _trace._xform_orig = orig
            _jit.JitWrapped._trace = _trace
        _no_tracing_users += 1
    _no_tracing_state.depth += 1
    try:
        yield
    finally:
        _no_tracing_state.depth -= 1
        with _hooks_lock:
            _no_tracing_users -= 1
            if _no_tracing_users == 0:
                _jit.JitWrapped._trace = _jit.JitWrapped._trace._xform_orig

"""The XLA runtime: PJRT client, devices, buffers, compiled executables, caches.

Two ways to reach jaxlib's PJRT runtime (decided once, when the first client is
needed; see ``_choose_runtime``):

* **own** (the common single-CPU-device case): jaxlib's public API only --
  ``xla_client.make_cpu_client``, ``batched_device_put`` / ``array_result_handler``
  with this module's own aval objects (``_Aval``: shape, dtype, weak_type) and
  jaxlib's C++ ``SingleDeviceSharding``.  JAX's Python package is not imported
  (a fresh process's first jitted result does not pay its ~0.5-1 s import).
* **jax**: JAX's Python runtime layer (``jax.extend.backend.get_backend``, jax's
  ShapedArray and SingleDeviceSharding), imported lazily -- needed for PJRT plugins
  (GPU/TPU: plugin discovery and initialisation), several CPU devices (sharding,
  ``lowering/spmd.py`` builds on jax's Mesh/NamedSharding), multi-process runs and
  ``compat.alias_jax`` (which loads it on purpose).

Either way JAX's tracing and numerics are never run.  Every jaxlib touch point lives
here, so version churn stays in one file.  The facts about jaxlib it relies on:

* ``batched_device_put(..., IMMUTABLE_ONLY_DURING_CALL, enable_x64=True)``:
  copies host data (no aliasing of user NumPy memory) and never narrows
  64-bit types, whatever JAX's own x64 flag says.
* ``execute_sharded(bufs).consume_with_handlers(handlers)``: the fastest
  dispatch; results are futures (async dispatch).
* The runtime checks only byte sizes, so ``Compiled`` checks shape and dtype.
* jaxlib imports ``ml_dtypes`` (C++) on the first host-to-device transfer, whatever
  the dtype: that ~0.5 s is part of every first jitted result and cannot be avoided
  through jaxlib's API.
"""
from __future__ import annotations

import collections
import contextlib
import contextvars
import os
import sys
import threading
import time

import numpy as np
from xform._src.interpreters.dtypes import canonicalize_dtype
from xform._src.interpreters.dtypes import float0, short_name
from xform._src.lowering.dispatch import make_caller
from xform._src.lowering import mlir_context
from xform._src.primitives import prng
import ctypes

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")   # as jax does: no INFO lines from C++
import atexit  # noqa: E402

from xform._src.interpreters import interrupts  # noqa: E402

# jaxlib's extension modules initialise once per process: a Ctrl-C half way through
# breaks them for good, so the first import holds SIGINT until it is done.
xc = interrupts.import_module("jaxlib.xla_client")
# what XLA raises compiling or running a program (`jax.errors.JaxRuntimeError`, a
# RuntimeError): a host callback that raised reaches the caller as one, as in JAX
JaxRuntimeError = xc.XlaRuntimeError
# At interpreter exit, threads still dispatching get a RuntimeError instead of being
# stopped inside jaxlib's C++ frames (which aborts the process).
atexit.register(interrupts.shutdown)
_closing = interrupts.closing

from xform._src.interpreters import core, errors, staging  # noqa: E402
from xform._src.interpreters.config import config  # noqa: E402
from xform._src.interpreters.core import Array, ShapedArray, Tracer  # noqa: E402
from xform._src.interpreters.ir import ClosedJaxpr, Jaxpr  # noqa: E402
from xform._src.lowering.mlir import lower_jaxpr, lower_module  # noqa: E402,F401  (lower_jaxpr re-exported)

_HBS = xc.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL
_put = xc.batched_device_put
SingleDeviceSharding = xc.SingleDeviceSharding    # jax.sharding.SingleDeviceSharding is this class

# ----------------------------------------------------------------- which runtime

_runtime = [None]          # "own" or "jax", fixed when the first client is created
_own_clients: dict = {}    # own runtime: platform -> client (only "cpu")
_runtime_lock = threading.RLock()


def _jax_runtime():
    """JAX's runtime layer (imported here, lazily: only the "jax" runtime needs it)."""
    with interrupts.deferred():
        import jax  # noqa: F401  (initialises jax's runtime state)
        from jax._src import xla_bridge  # deferred: keeps `import xform` light
    return xla_bridge


def load_jax_runtime():
    """Import the parts of JAX's Python runtime layer this package may use later
    (``compat.alias_jax`` calls it before ``import jax`` starts meaning xform): creates
    no client, decides nothing."""
    _jax_runtime()
    with interrupts.deferred():
        import jax.extend.backend  # noqa: F401
        from jax._src import core, distributed, mesh, partition_spec, sharding_impls  # noqa: F401


def _forced_cpu_devices() -> int:
    flags = os.environ.get("XLA_FLAGS", "")
    key = "xla_force_host_platform_device_count="
    i = flags.find(key)
    if i < 0:
        return 1
    try:
        return int(flags[i + len(key):].split()[0])
    except ValueError:
        return 1


_plugins_found = [None]


def _pjrt_plugins_installed() -> bool:
    """Whether a PJRT plugin (GPU/TPU/...) is installed, as JAX discovers them: a
    ``jax_plugins`` namespace package, a known plugin package, or a distribution with
    a ``jax_plugins`` entry point.  A directory scan (importlib.metadata costs more
    than creating the client)."""
    if _plugins_found[0] is not None:
        return _plugins_found[0]
    found = bool(os.environ.get("PJRT_NAMES_AND_LIBRARY_PATHS"))
    prefixes = ("jax_plugins", "jax_cuda", "jax_rocm", "jax-cuda", "jax-rocm", "libtpu",
                "jax_metal", "jax-metal")
    for entry in sys.path:
        if found:
            break
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for n in names:
            low = n.lower()
            if low.startswith(prefixes):
                found = True
                break
            if low.endswith(".dist-info") or low.endswith(".egg-info"):
                ep = os.path.join(entry or ".", n, "entry_points.txt")
                try:
                    with open(ep, encoding="utf-8", errors="replace") as f:
                        if "[jax_plugins]" in f.read():
                            found = True
                            break
                except OSError:
                    pass
    _plugins_found[0] = found
    return found


def _choose_runtime() -> str:
    """"own" when one CPU device is all there is to drive, else "jax" (see module doc)."""
    for value in (config.read("jax_platforms"), os.environ.get("JAX_PLATFORMS"),
                  config.read("jax_platform_name")):
        if value and str(value).strip().lower() != "cpu":
            return "jax"
    n = config.read("jax_num_cpu_devices")
    if (n is not None and n not in (-1, 1)) or _forced_cpu_devices() > 1:
        return "jax"
    if config.read("jax_cpu_collectives_implementation") is not None:
        return "jax"
    jcfg = sys.modules.get("jax._src.config")     # JAX imported and configured directly
    if jcfg is not None:
        try:
            read = jcfg.config._read
            n = read("jax_num_cpu_devices")
            if (n is not None and n not in (-1, 1)) or \
                    any(v and str(v).strip().lower() != "cpu"
                        for v in (read("jax_platforms"), read("jax_platform_name"))):
                return "jax"
        except Exception:       # another jax version: its defaults are what we assume
            pass
    dist = sys.modules.get("jax._src.distributed")
    if dist is not None and getattr(dist.global_state, "client", None) is not None:
        return "jax"
    if os.environ.get("XFORM_RUNTIME", "").lower() == "jax":   # opt-out, for debugging
        return "jax"
    if _pjrt_plugins_installed():
        return "jax"
    return "own"


def runtime_kind() -> str:
    """"own" or "jax": which way this process reaches jaxlib (chosen on first use)."""
    if _runtime[0] is None:
        with _runtime_lock:
            if _runtime[0] is None:
                kind = _choose_runtime()
                if kind == "own":
                    _install_sharding_methods()
                _runtime[0] = kind
    return _runtime[0]


def _install_sharding_methods():
    """jaxlib's C++ ``SingleDeviceSharding`` calls a few Python methods that JAX's
    ``jax.sharding.SingleDeviceSharding`` normally adds to it (JAX's classes *are*
    jaxlib's, extended at import).  Without JAX imported, add the same methods with
    the same meaning; importing JAX later replaces them with its own."""
    cls = xc.SingleDeviceSharding
    if hasattr(cls, "_to_xla_hlo_sharding"):      # JAX is imported: its methods are there
        return
    replicated = xc.HloSharding.replicate()

    def _repr(self):
        mem = "" if self._memory_kind is None else f", memory_kind={self._memory_kind}"
        return f"SingleDeviceSharding(device={self._device!r}{mem})"

    def _eq(self, other):
        if not isinstance(other, xc.SingleDeviceSharding):
            return False
        return self is other or (self._device == other._device
                                 and self._memory_kind == other._memory_kind)

    methods = {
        "memory_kind": property(lambda self: self._memory_kind),
        "device_set": property(lambda self: {self._device}),
        "num_devices": property(lambda self: 1),
        "_device_assignment": property(lambda self: (self._device,)),
        "is_fully_replicated": property(lambda self: True),
        "is_fully_addressable": property(
            lambda self: self._device.process_index == self._device.client.process_index()),
        "_to_xla_hlo_sharding": lambda self, num_dimensions: replicated,
        "devices_indices_map": lambda self, shape: {self._device: (slice(None),) * len(shape)},
        "__repr__": _repr,
        "__eq__": _eq,
        "__hash__": lambda self: hash((self._device, self._memory_kind)),
    }
    for name, value in methods.items():
        setattr(cls, name, value)


def share_client_with_jax():
    """Before JAX's runtime layer is used in a process that runs the "own" runtime
    (``lowering/spmd.py``, ``compat.alias_jax``): make JAX's backend registry hold our
    client when JAX has none yet, so one process has one CPU client."""
    xb = _jax_runtime()
    if runtime_kind() != "own":
        return
    client = _own_client("cpu")
    try:
        with xb._backend_lock:
            if not xb._backends:
                xb._backends["cpu"] = client
                xb._default_backend = client
    except AttributeError:      # another jax version: it creates its own client
        pass


def _own_client(platform):
    c = _own_clients.get(platform)
    if c is None:
        with _runtime_lock:
            c = _own_clients.get(platform)
            if c is None:
                with interrupts.deferred():     # completes, or never starts: retryable
                    c = xc.make_cpu_client(
                        asynchronous=bool(config.read("jax_cpu_enable_async_dispatch")))
                    _own_clients[platform] = c
    return c


# ----------------------------------------------------------------- backends and devices


def get_backend(backend=None):
    """The PJRT client for ``backend`` ('cpu', 'gpu', 'tpu' or None = default)."""
    if backend is None:
        backend = config.jax_platform_name or None
    if isinstance(backend, str):
        backend = backend.lower()
    elif backend is not None:
        if all(hasattr(backend, a) for a in ("devices", "local_devices", "platform")) \
                and not isinstance(backend, (Array, Tracer)):
            return backend                 # a PJRT client passes as is
        raise TypeError(f"backend must be a platform name ('cpu', 'gpu', 'tpu') or None, got "
                        f"{backend!r} of type {type(backend).__name__}")
    if runtime_kind() == "own":
        if backend in (None, "cpu"):
            return _own_client("cpu")
        raise _unknown_backend(backend, ["cpu"], "no PJRT plugin for it is installed")
    if not _synced[0]:
        _sync_runtime_config()
    from jax._src.xla_bridge import get_backend as jax_get_backend  # deferred: keeps `import xform` light
    try:
        with interrupts.deferred():          # JAX's backend initialisation
            return jax_get_backend(backend)
    except RuntimeError as e:
        raise RuntimeError(str(e)) from None     # JAX's own words


def _unknown_backend(backend, present, why):
    """JAX's error (type and wording) for a backend that is not there, and why."""
    if backend in ("gpu", "cuda", "rocm"):
        msg = (f"Unknown backend: {backend!r} requested, but no platforms that are instances "
               f"of {backend} are present. Platforms present are: {','.join(present)}")
    else:
        msg = f"Unknown backend {backend}. Available backends are {list(present)}"
    return RuntimeError(f"{msg} ({why})")


_synced = [False]


def _sync_runtime_config():
    """Options the runtime client reads when it is created (JAX's names), set with
    ``xform.config.update`` before the first computation: forwarded once."""
    _synced[0] = True
    _jax_runtime()
    # JAX's own options object (with `import jax` aliased, `jax.config` is xform's)
    from jax._src.config import config as jax_config  # deferred: keeps `import xform` light
    try:
        n = config.jax_num_cpu_devices
        if n is not None and n != -1:
            jax_config.update("jax_num_cpu_devices", int(n))
        impl = config.jax_cpu_collectives_implementation
        if impl is not None:
            jax_config.update("jax_cpu_collectives_implementation", impl)
    except Exception:     # the client already exists (then the options cannot apply)
        pass


def _available_platforms():
    if runtime_kind() == "own":
        return ["cpu"]
    from jax._src.xla_bridge import get_backend as jax_get_backend  # deferred: keeps `import xform` light
    out = []
    for p in ("cpu", "gpu", "tpu"):
        try:
            jax_get_backend(p)
            out.append(p)
        except RuntimeError:
            pass
    return out


def default_backend() -> str:
    """'gpu'/'tpu' when their PJRT plugin is installed and working, else 'cpu'."""
    return get_backend().platform


def devices(backend=None) -> list:
    return list(get_backend(backend).devices())


def local_devices(backend=None) -> list:
    return list(get_backend(backend).local_devices())


_default_device_cache = [None]


def _default_device():
    d = _default_device_cache[0]
    if d is None:
        d = config.jax_default_device
        if d is None or isinstance(d, str):
            d = local_devices(d)[0]
        _default_device_cache[0] = d
    return d


def _on_default_change(_=None):
    _default_device_cache[0] = None


config.on_change("jax_default_device", _on_default_change)
config.on_change("jax_platform_name", _on_default_change)

# ----------------------------------------------------------------- buffers


class _Aval:
    """The aval a buffer of the "own" runtime carries (jaxlib reads shape, dtype and
    weak_type; the rest serves JAX's ``ArrayImpl`` methods should JAX be imported)."""

    __slots__ = ("shape", "dtype", "weak_type", "__weakref__")

    def __init__(self, shape, dtype):
        self.shape, self.dtype, self.weak_type = shape, dtype, False

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def str_short(self, short_dtypes=False, mesh_axis_types=False):
        return f"{short_name(self.dtype)}[{','.join(str(d) for d in self.shape)}]"

    def __repr__(self):
        return f"ShapedArray({self.str_short()})"


_jax_avals: dict = {}
_shardings: dict = {}


def _jax_aval(shape, dtype):
    """One shared aval object per (shape, dtype) that buffers we create carry, so
    ``buf.aval is expected`` is the argument check on the fast path (jax's ShapedArray
    in the "jax" runtime, ``_Aval`` in the "own" one)."""
    key = (tuple(shape), np.dtype(dtype))
    a = _jax_avals.get(key)
    if a is None:
        if runtime_kind() == "own":
            a = _Aval(*key)
        else:
            from jax._src import core as jcore  # deferred: keeps `import xform` light
            a = jcore.ShapedArray(*key)
        a = _jax_avals.setdefault(key, a)
    return a


def _sharding(device):
    s = _shardings.get(device)
    if s is None:
        runtime_kind()    # installs the sharding methods jaxlib calls (own runtime)
        s = _shardings.setdefault(device, xc.SingleDeviceSharding(device))
    return s


def _buf_device(buf):
    s = buf._sharding
    try:
        return s._device                     # SingleDeviceSharding
    except AttributeError:
        return next(iter(s.device_set))


def _put_numpy(x: np.ndarray, device):
    return _put(_jax_aval(x.shape, x.dtype), _sharding(device), [x], [device], True, False, _HBS,
                enable_x64=True)


# Narrow types XLA stores with fewer bits than NumPy's one byte per element.
_SUB_BYTE = frozenset(("int1", "int2", "int4", "uint1", "uint2", "uint4", "float4_e2m1fn",
                       "float6_e2m3fn", "float6_e3m2fn"))


def _buffer_to_host(buf):
    """``buf``'s value as a read-only NumPy array.  JAX's ``__array__`` when JAX is loaded,
    else jaxlib's buffer protocol; dtypes that protocol refuses (bfloat16, float8, int4:
    NumPy then makes an object array) are copied out of the CPU buffer's memory, or -- on
    other layouts -- read by jaxlib's own copy, which loads JAX's runtime."""
    if _closing[0]:
        interrupts.check_open("copy an array to the host")
    v = np.asarray(buf)
    if v.dtype != object:
        return v
    aval = buf.aval
    dt, shape = np.dtype(aval.dtype), tuple(aval.shape)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if buf.platform() == "cpu" and dt.name not in _SUB_BYTE and \
            buf.on_device_size_in_bytes() == n:
        buf.block_until_ready()
        if n == 0:
            v = np.zeros(shape, dt)
        else:
            raw = (ctypes.c_char * n).from_address(buf.unsafe_buffer_pointer())
            v = np.frombuffer(raw, dtype=dt).reshape(shape).copy()
    else:
        _jax_runtime()
        v, _ = buf._single_device_array_to_np_array_did_copy()
    v.flags.writeable = False
    return v


core.buffer_to_host = _buffer_to_host


def buffer_dlpack(buf, stream=None, max_version=None, dl_device=None, copy=None):
    """``__dlpack__`` of a single-device CPU buffer without JAX's ``ArrayImpl`` methods
    (the "own" runtime before anything imported JAX)."""
    if dl_device is not None and tuple(dl_device)[0] != 1:     # kDLCPU
        raise BufferError(f"__dlpack__: the array is on the CPU; dl_device={dl_device!r} "
                          "would need a cross-device copy, which is not supported")
    if stream is not None and stream != -1:
        raise BufferError(f"__dlpack__: stream={stream!r} is not supported for CPU arrays; "
                          "pass stream=None")
    if copy:
        host = np.array(buf, copy=True)
        return host.__dlpack__() if max_version is None else \
            host.__dlpack__(max_version=max_version)
    return xc._xla.buffer_to_dlpack_managed_tensor(buf, stream=None)


def get_device(x):
    """The device holding ``x`` (host-backed values live on the default CPU device)."""
    if isinstance(x, Array):
        if x._buf is not None:
            return _buf_device(x._buf)
        return local_devices("cpu")[0]
    if isinstance(x, Tracer):
        raise TypeError(f"get_device() of a traced array {x.aval.str_short()}: tracers have no "
                        "device; call it on a concrete array outside transformations.")
    if isinstance(x, xc.ArrayImpl):
        return _buf_device(x)
    if isinstance(x, (np.ndarray, np.generic, int, float, complex, bool)):
        return local_devices("cpu")[0]
    raise TypeError(f"get_device() expects an array, got {type(x).__name__}")


def device_put(x, device=None) -> Array:
    """``x`` as an Array whose buffer is on ``device`` (default device if None).

    A no-op (returns ``x``) when ``x`` is already an Array on that device.
    """
    if _closing[0]:
        interrupts.check_open("device_put")
    if isinstance(x, Tracer):
        raise TypeError(f"device_put() of a traced array {x.aval.str_short()}: inside a "
                        "transformation values have no placement; call it outside.")
    committed = device is not None
    if device is None:
        device = _default_device()
    elif isinstance(device, SingleDeviceSharding):
        device = next(iter(device.device_set))
    elif not isinstance(device, xc.Device):
        raise TypeError(f"device_put(): expected a Device, got {device!r}; use one of "
                        f"xform.devices().")
    if isinstance(x, Array):
        if x._deleted:
            raise x._deleted_error("device_put()")
        if x._npy is not None and x._npy.dtype.kind == "V" and x._npy.dtype.names:
            # typed PRNG keys stay host values (their words are placed per compiled call)
            return Array(x._npy, x.weak_type, committed=committed)
        if x._buf is not None and _buf_device(x._buf) == device:
            if committed and not x._committed:
                return Array(x._npy, x.weak_type, x._buf, committed=True)
            return x
        host, weak = np.asarray(x._value), x.weak_type
    else:
        aval = core.get_aval(x)
        host, weak = np.asarray(x, dtype=aval.dtype), aval.weak_type
    buf = _put_numpy(host, device)
    keep_host = host if device.platform == "cpu" else None   # eager CPU ops stay NumPy
    return Array(keep_host, weak, buf, committed=committed)


# ----------------------------------------------------------------- compiled programs

_EXE_CACHE_SIZE = 512
_exe_cache: "collections.OrderedDict" = collections.OrderedDict()
_cache_lock = threading.Lock()
_cache_stats = {"hits": 0, "misses": 0}


def _ir():
    return interrupts.import_module("jaxlib.mlir.ir")


_MLIR_CONTEXT = None


def _mlir_context():
    """An MLIR context with StableHLO/CHLO and the upstream dialects registered.

    Only needed to parse modules that carry host callbacks (see ``compile_text``).
    A context with only StableHLO/CHLO registered rejects ``func.return``; jaxlib's
    upstream dialect registry must be appended, and its module was renamed across
    jaxlib versions (``register_jax_dialects`` up to 0.6, ``_jax_mlir_ext`` after).
    """
    global _MLIR_CONTEXT
    if _MLIR_CONTEXT is None:
        with interrupts.deferred():          # dialect registration happens once per process
            _MLIR_CONTEXT = _new_mlir_context()
    return _MLIR_CONTEXT


def _new_mlir_context():
    return mlir_context.new_mlir_context(interrupts.import_module)


# The quick tier: XLA's backend at optimization level 0 (LLVM without its expensive
# passes on CPU). It compiles faster but may generate different code (see
# docs/performance.md, "Tiered compilation"); it is never written to the persistent cache.
QUICK_TIER_OPTIONS = (("xla_backend_optimization_level", "0"),)


# XLA options the user asked for (``Lowered.compile(compiler_options=...)``): the
# compilations inside ``compiler_options(...)`` use them (and cache under them).
_user_options = contextvars.ContextVar("xform_compiler_options", default=())
_BUILD_OPTIONS = ("exec_time_optimization_effort", "memory_fitting_effort")


@contextlib.contextmanager
def compiler_options(options):
    """Compile the programs inside with XLA's ``options`` (name -> str/bool/int/float),
    as JAX's ``Lowered.compile(compiler_options=...)``: XLA rejects an unknown name
    with a JaxRuntimeError."""
    items = []
    for k, v in dict(options or {}).items():
        if not isinstance(k, str) or not isinstance(v, (str, bool, int, float)):
            raise TypeError(f"compiler_options: expected str names and str/bool/int/float "
                            f"values, got {k!r}: {v!r}")
        items.append((k, v))
    token = _user_options.set(tuple(sorted(items, key=lambda kv: kv[0])))
    try:
        yield
    finally:
        _user_options.reset(token)


def _compile_options(device, tier="optimized"):
    opts = xc.CompileOptions()   # the device list alone does not pick the replica's device
    opts.device_assignment = xc.DeviceAssignment.create(np.array([[device.id]]))
    if tier == "quick":
        opts.env_option_overrides = list(QUICK_TIER_OPTIONS)
    elif tier != "optimized":
        raise ValueError(f"unknown compilation tier {tier!r}: 'quick' or 'optimized'")
    user = _user_options.get()
    if user:
        for k, v in user:
            if k in _BUILD_OPTIONS:
                setattr(opts.executable_build_options, k, v)
        opts.env_option_overrides = list(opts.env_option_overrides) + [
            (k, v) for k, v in user if k not in _BUILD_OPTIONS]
    return opts


def compile_text(text: str, device=None, donated=(), host_callbacks=(), tier="optimized"):
    """A loaded executable for MLIR ``text`` on ``device`` (LRU-cached on the text).

    ``host_callbacks``: the Python callables the text's python-callback custom calls
    refer to by index (part of the cache key: equal text, different callbacks).
    ``tier``: ``"optimized"`` (XLA's default, the persistent cache's) or ``"quick"``
    (``QUICK_TIER_OPTIONS``; cached in memory only, under its own key).
    """
    device = device if device is not None else _default_device()
    host_callbacks = tuple(host_callbacks)
    key = (text, device, tuple(donated), host_callbacks)
    user = _user_options.get()
    if user:                # the user's XLA options: the optimizing compiler, own entry
        tier = "optimized"
        key = key + (("compiler_options",) + user,)
    if tier != "optimized":
        key = key + (tier,)
    with _cache_lock:
        exe = _exe_cache.get(key)
        if exe is not None:
            _exe_cache.move_to_end(key)
            _cache_stats["hits"] += 1
            return exe
        # One compilation per program: a thread finding it being compiled waits for it.
        pending = _in_flight.get(key)
        if pending is None:
            _in_flight[key] = threading.Event()
    if pending is not None:
        pending.wait()
        with _cache_lock:
            exe = _exe_cache.get(key)
            if exe is not None:
                _cache_stats["hits"] += 1
                return exe
        return compile_text(text, device, donated, host_callbacks, tier)  # the compiler failed
    try:
        return _compile_uncached(key, text, device, donated, host_callbacks, tier)
    finally:   # also on errors and KeyboardInterrupt: later calls may compile again
        with _cache_lock:
            _in_flight.pop(key).set()


_in_flight: dict = {}
_tier_stats = {"quick_compiles": 0, "quick_seconds": 0.0}

# ``f(client, module_or_text, device_list, options, host_callbacks=())`` compiling one
# program; ``None``: ``client.compile_and_load``.  Installed by the alias's
# ``jax._src.compiler`` so that a library patching it (chex's ``restrict_backends``)
# sees every compilation.
compile_and_load = None


def _client_compile(client, module, devices, opts, host_callbacks=()):
    if compile_and_load is not None:
        return compile_and_load(client, module, devices, opts, host_callbacks)
    if host_callbacks:
        return client.compile_and_load(module, devices, opts,
                                       host_callbacks=list(host_callbacks))
    return client.compile_and_load(module, devices, opts)


def _compile_uncached(key, text, device, donated, host_callbacks, tier="optimized"):
    with interrupts.deferred():   # a Ctrl-C lands after the compile (and caching) is done
        return _compile_uncached_body(key, text, device, donated, host_callbacks, tier)


def _compile_uncached_body(key, text, device, donated, host_callbacks, tier):
    with _cache_lock:
        _cache_stats["misses"] += 1
    client = device.client
    try:
        opts = _compile_options(device, tier)
        start = time.perf_counter()
        if host_callbacks:
            # The host-callback overload only takes a parsed module, not text.
            ctx = _mlir_context()
            with ctx:
                module = _ir().Module.parse(text)
                exe = _client_compile(client, module, xc.DeviceList((device,)), opts,
                                      host_callbacks)
        elif tier != "optimized":     # never the persistent cache's
            exe = _client_compile(client, text, xc.DeviceList((device,)), opts)
        else:
            exe = _compile_persistent(client, text, device, donated, opts)
        if tier != "optimized":
            with _cache_lock:
                _tier_stats["quick_compiles"] += 1
                _tier_stats["quick_seconds"] += time.perf_counter() - start
    except Exception as e:
        if type(e).__name__ in ("JaxRuntimeError", "XlaRuntimeError") and _user_options.get():
            # the user's compiler options may be the cause: XLA's message, JAX's type
            raise JaxRuntimeError(str(e)) from None
        if type(e).__name__ in ("JaxRuntimeError", "XlaRuntimeError"):
            raise ValueError(f"XLA failed to compile the lowered program: {e}\n"
                             "This is a bug in a lowering rule; please report it.") from None
        raise
    with _cache_lock:
        _exe_cache[key] = exe
        while len(_exe_cache) > _EXE_CACHE_SIZE:
            _exe_cache.popitem(last=False)
    return exe


def _compile_persistent(client, text, device, donated, opts):
    """``compile_and_load``, going through the on-disk cache (compilation_cache.py)."""
    from xform._src.lowering import compilation_cache as pcache  # deferred: keeps `import xform` light
    devices = xc.DeviceList((device,))
    if pcache.cache_dir() is None:
        return _client_compile(client, text, devices, opts)
    key = pcache.cache_key(text, opts.SerializeAsString(), donated, device)
    payload = pcache.load(key)
    if payload is not None:
        try:
            return client.deserialize_executable(payload, devices, opts)
        except Exception:    # written by an incompatible runtime, or damaged: recompile
            pcache.discard(key)
    start = time.perf_counter()
    exe = _client_compile(client, text, devices, opts)
    elapsed = time.perf_counter() - start
    try:
        payload = exe.serialize()
    except Exception:        # some executables cannot be serialized; just don't cache them
        return exe
    pcache.store(key, payload, elapsed)
    return exe


def block_buffers(bufs) -> None:
    """Wait until every buffer of the list ``bufs`` is computed: one call into the
    runtime for all of them (a result pytree of thousands of leaves)."""
    if len(bufs) > 1:
        batched = getattr(xc, "batched_block_until_ready", None)
        if batched is not None:
            batched(bufs)
            return
    for b in bufs:
        b.block_until_ready()


def cache_info() -> dict:
    from xform._src.lowering import compilation_cache as pcache  # deferred: keeps `import xform` light
    return {"size": len(_exe_cache), "maxsize": _EXE_CACHE_SIZE, **_cache_stats,
            "eager": len(_eager_cache),
            "persistent": dict(pcache.stats, dir=pcache.cache_dir())}


def clear_caches():
    with _cache_lock:
        _exe_cache.clear()
    _eager_cache.clear()
    kernels = sys.modules.get("xform._src.lowering.eager_kernels")
    if kernels is not None:
        kernels.clear_cache()


def _blocking_execute(exe):
    """``execute_sharded`` that returns only once the program has run.

    Used for programs with host callbacks, so their effects (``debug.print``)
    happen before the call returns, in program order with the caller's output.
    """
    run = exe.execute_sharded

    def execute(bufs):
        results = run(bufs, with_tokens=True)
        results.consume_token().block_until_ready()
        return results
    return execute


class ShardedArgument(TypeError):
    """A multi-device Array reached a single-device program whose caller (jit)
    takes the partitioned path for it instead."""


class Compiled:
    """A compiled program: call it with Arrays, NumPy arrays or Python scalars.

    ``__call__`` validates shapes/dtypes (the raw runtime only checks byte
    sizes), puts host values on the device (copying), dispatches without
    blocking and wraps the output buffers in Arrays.  The common case -- device
    buffers this layer created, or NumPy arrays of the exact dtype -- is a
    single tight loop over pre-built avals.
    """

    __slots__ = ("_exe", "_text", "in_avals", "out_avals", "donated_invars", "device",
                 "_specs", "_handlers", "_out_weak", "_n", "_donated_idx", "_committed",
                 "_sh", "_devlist", "_execute", "_route_sharded", "_tier", "_sync",
                 "__weakref__")

    def __init__(self, exe, text, in_avals, out_avals, donated_invars, device, committed,
                 synchronous=False):
        self._exe = exe
        self._text = text
        self.in_avals = list(in_avals)
        self.out_avals = list(out_avals)
        self.donated_invars = tuple(donated_invars)
        self.device = device
        self._committed = committed
        self._route_sharded = False
        self._n = len(self.in_avals)
        self._specs = [(a.shape, a.dtype, _jax_aval(a.shape, a.dtype)) for a in self.in_avals]
        sh = self._sh = _sharding(device)
        self._devlist = [device]
        self._execute = _blocking_execute(exe) if synchronous else exe.execute_sharded
        self._sync = synchronous
        self._handlers = [xc.array_result_handler(_jax_aval(a.shape, a.dtype), sh, True,
                                                  _skip_checks=True) for a in self.out_avals]
        self._out_weak = [a.weak_type for a in self.out_avals]
        self._donated_idx = tuple(i for i, d in enumerate(self.donated_invars) if d)
        self._tier = None       # a _Tiering while the quick tier runs (tiered compilation)

    @property
    def tier(self) -> str:
        """The tier running now: ``"quick"`` (until the optimized executable is swapped
        in) or ``"optimized"``."""
        t = self._tier
        return "optimized" if t is None else t.current

    def tier_info(self) -> dict:
        """``{"tier", "compile_s": {"quick", "optimized"}, "pending", "error"}``: which
        tier runs now and each tier's compile time (None: not compiled here)."""
        t = self._tier
        if t is None:
            return {"tier": "optimized", "compile_s": {"quick": None, "optimized": None},
                    "pending": False, "error": None}
        return t.info()

    def wait_optimized(self, timeout=None) -> bool:
        """Block until the optimized tier runs (True) or ``timeout`` seconds pass."""
        t = self._tier
        return True if t is None else t.done.wait(timeout) and t.current == "optimized"

    def _watch_namespace(self, ns):
        """A generated call path's globals: its ``_ex`` follows the executable swap."""
        t = self._tier
        if t is not None:
            t.watch(self, ns)

    def __call__(self, *args):
        if _closing[0]:
            interrupts.check_open("run a compiled program")
        if len(args) != self._n:
            raise TypeError(f"compiled program expects {self._n} arguments "
                            f"({', '.join(a.str_short() for a in self.in_avals)}), got {len(args)}")
        bufs = []
        append = bufs.append
        sh, devlist = self._sh, self._devlist
        for x, (shape, dtype, javal) in zip(args, self._specs):
            tx = type(x)
            if tx is Array:
                b = x._buf
                if b is not None and b.aval is javal and not x._deleted:
                    append(b)
                    continue
            elif tx is np.ndarray and x.dtype == dtype and x.shape == shape:
                append(_put(javal, sh, [x], devlist, True, False, _HBS, True))  # enable_x64
                continue
            append(self._slow_arg(len(bufs), x))
        try:
            outs = self._execute(bufs).consume_with_handlers(self._handlers)
        except Exception as e:
            bufs = [self._slow_arg(i, x, strict=True) for i, x in enumerate(args)]
            if not bufs or type(e).__name__ not in ("JaxRuntimeError", "XlaRuntimeError",
                                                    "ValueError", "RuntimeError"):
                raise
            if self._sync:
                raise     # the arguments are valid: the program itself failed (a host
                # callback raised); running it again would repeat the callbacks
            outs = self._exe.execute_sharded(bufs).consume_with_handlers(self._handlers)
        if self._donated_idx:
            self._mark_donated(args)
        c = self._committed
        new = Array._from_buf
        return [new(o, w, c) for o, w in zip(outs, self._out_weak)]

    def fast_caller(self, consts, weak_types, in_tree=None, out_tree=None, host_leaves=(),
                    on_hot=None):
        """A generated call path for one exact signature (see ``lowering/dispatch.py``):
        ``f(args) -> result or dispatch.MISS``; ``None`` when there is none."""
        return make_caller(self, consts, weak_types, in_tree, out_tree, host_leaves,
                           on_hot=on_hot)

    def _mark_donated(self, args):
        for i in self._donated_idx:
            x = args[i]
            if type(x) is Array:
                x._mark_deleted()

    def _slow_arg(self, i, x, strict=False):
        """Validate and place one argument (anything other than the fast cases)."""
        aval = self.in_avals[i]
        shape, dtype, javal = self._specs[i]
        if isinstance(x, Tracer):
            raise TypeError(f"argument {i}: a traced value {x.aval.str_short()} was passed to a "
                            "compiled program; call it with concrete arrays (or stage it with jit).")
        if isinstance(x, Array):
            if x._deleted:
                raise x._deleted_error(f"argument {i} of a compiled call")
            b = x._buf
            if b is not None:
                if b.is_deleted():         # its buffer was donated through another Array
                    x._mark_deleted()
                    raise x._deleted_error(f"argument {i} of a compiled call")
                if tuple(b.aval.shape) != shape or np.dtype(b.aval.dtype) != dtype:
                    raise TypeError(self._mismatch(i, f"{x.aval.str_short()}"))
                if len(b._sharding.device_set) > 1:       # a sharded Array
                    if self._route_sharded:
                        raise ShardedArgument(i)
                    return _put_numpy(np.asarray(x._value), self.device)   # gather it
                if _buf_device(b) == self.device:
                    return b
                if x._committed and self._committed:
                    raise ValueError(f"argument {i} is committed to {_buf_device(b)} but the "
                                     f"program was compiled for {self.device}; move it with "
                                     "device_put first.")
                return _put_numpy(_buffer_to_host(b), self.device)     # device -> host -> device
            v = x._npy
            weak = x.weak_type
        elif isinstance(x, (np.ndarray, np.generic)):
            v, weak = x, False
        elif type(x) in (bool, int, float, complex):
            v, weak = x, True
        elif isinstance(x, xc.ArrayImpl):
            v, weak = np.asarray(x), False
        else:
            raise TypeError(f"argument {i}: {type(x).__name__} is not a valid array type; pass an "
                            "xform Array, a NumPy array or a Python scalar.")
        v = self._coerce(i, v, weak)
        return _put(javal, _sharding(self.device), [v], [self.device], True, False, _HBS,
                    enable_x64=True)

    def _coerce(self, i, v, weak):
        shape, dtype, _ = self._specs[i]
        if type(v) in (bool, int, float, complex):
            if not (shape == () and _scalar_fits(type(v), dtype)):
                raise TypeError(self._mismatch(i, f"Python {type(v).__name__} {v!r}"))
            with np.errstate(over="ignore"):
                return np.asarray(v, dtype)
        v = np.asarray(v)
        if v.shape != shape:
            raise TypeError(self._mismatch(i, _short(v)))
        if v.dtype != dtype:
            if canonicalize_dtype(v.dtype) != dtype and not (weak and v.ndim == 0):
                raise TypeError(self._mismatch(i, _short(v)))
            v = v.astype(dtype)
        return np.ascontiguousarray(v)

    def _mismatch(self, i, got):
        return (f"compiled program argument {i} expects {self.in_avals[i].str_short()} "
                f"but got {got}; the program was compiled for "
                f"({', '.join(a.str_short() for a in self.in_avals)}). Pass values of exactly "
                "these shapes/dtypes (convert with .astype) or recompile.")

    # -- introspection
    def as_text(self) -> str:
        return self._text

    def compiled_text(self) -> str:
        return self._exe.get_hlo_text()

    def cost_analysis(self) -> dict:
        ca = self._exe.cost_analysis()
        if isinstance(ca, (list, tuple)):
            ca = ca[0] if ca else {}
        return dict(ca)

    def memory_analysis(self):
        return self._exe.get_compiled_memory_stats()

    def __repr__(self):
        ins = ", ".join(a.str_short() for a in self.in_avals)
        outs = ", ".join(a.str_short() for a in self.out_avals)
        return f"Compiled(({ins}) -> ({outs}) on {self.device})"


def _scalar_fits(t, dtype) -> bool:
    k = dtype.kind
    if t is bool:
        return True
    if t is int:
        return k in "iufc" or "float" in dtype.name
    if t is float:
        return k in "fc" or "float" in dtype.name
    return k == "c"


def _short(v) -> str:
    return f"{short_name(v.dtype)}[{','.join(str(d) for d in v.shape)}]"


def compile_jaxpr(closed_jaxpr, *, donated_invars=None, device=None, name="main",
                  tier=None) -> Compiled:
    """Lower, compile (cached on the MLIR text) and wrap ``closed_jaxpr``.  ``tier``:
    ``"quick"`` or ``"optimized"`` (see ``compile_text``), ``"tiered"`` (quick now,
    optimized in the background, swapped in when ready), or None: tiered when the
    ``xform_tiered_compilation`` option is on (programs without host callbacks), else
    optimized."""
    if isinstance(closed_jaxpr, Jaxpr):
        closed_jaxpr = ClosedJaxpr(closed_jaxpr, [])
    if prng.jaxpr_has_keys(closed_jaxpr):   # typed PRNG keys: compile over their words
        inner = compile_jaxpr(prng.physicalize_closed(closed_jaxpr),
                              donated_invars=donated_invars, device=device, name=name,
                              tier=tier)
        return KeyedCompiled(inner, closed_jaxpr.in_avals, closed_jaxpr.out_avals)
    jaxpr = closed_jaxpr.jaxpr
    donated = tuple(bool(d) for d in donated_invars) if donated_invars is not None \
        else (False,) * len(jaxpr.invars)
    committed = device is not None
    device = device if device is not None else _default_device()
    lowered = lower_module(closed_jaxpr, name=name,
                           donated_invars=donated if any(donated) else None,
                           platform=device.platform)
    if lowered.unusable_donations:    # not donated: the caller's arrays stay valid
        donated = tuple(d and i not in lowered.unusable_donations
                        for i, d in enumerate(donated))
    text = lowered.text
    if tier is None:
        tier = "tiered" if (config.read("xform_tiered_compilation")
                            and not lowered.host_callbacks
                            and not _user_options.get()) else "optimized"
    in_avals, out_avals = _float0_as_bool(jaxpr.in_avals), _float0_as_bool(jaxpr.out_avals)
    if tier == "tiered":
        exe = _optimized_if_cached(text, device, donated)
        if exe is None:
            comp = _tiered(text, in_avals, out_avals, donated, device, committed)
        else:
            tier = "optimized"
    if tier != "tiered":
        exe = compile_text(text, device, donated, lowered.host_callbacks, tier)
        comp = Compiled(exe, text, in_avals, out_avals, donated, device, committed,
                        synchronous=bool(lowered.host_callbacks))
    if any(a.dtype == float0 for a in jaxpr.in_avals) or \
            any(a.dtype == float0 for a in jaxpr.out_avals):
        return Float0Compiled(comp, jaxpr.in_avals, jaxpr.out_avals)
    return comp


def _float0_as_bool(avals):
    """``avals`` with each float0 aval (the tangent type of integers, which holds no data)
    as the bool aval XLA carries it as; the same list when there is none."""
    if not any(a.dtype == float0 for a in avals):
        return avals
    return [core.ShapedArray(a.shape, np.dtype(np.bool_)) if a.dtype == float0 else a
            for a in avals]


# ----------------------------------------------------------------- tiered compilation


def _optimized_if_cached(text, device, donated):
    """The optimized executable of ``text`` if the in-memory or the persistent cache has
    it (then tiering has nothing to do), else None.  Compiles nothing."""
    key = (text, device, tuple(donated), ())
    with _cache_lock:
        exe = _exe_cache.get(key)
        if exe is not None:
            _exe_cache.move_to_end(key)
            _cache_stats["hits"] += 1
            return exe
        if key in _in_flight:            # being compiled: run the quick tier meanwhile
            return None
    from xform._src.lowering import compilation_cache as pcache  # deferred: keeps `import xform` light
    if pcache.cache_dir() is None:
        return None
    opts = _compile_options(device)
    pkey = pcache.cache_key(text, opts.SerializeAsString(), tuple(donated), device)
    payload = pcache.peek(pkey)
    if payload is None:
        return None
    try:
        exe = device.client.deserialize_executable(payload, xc.DeviceList((device,)), opts)
    except Exception:        # damaged or incompatible: the background compile rewrites it
        return None
    with _cache_lock:
        _exe_cache[key] = exe
        while len(_exe_cache) > _EXE_CACHE_SIZE:
            _exe_cache.popitem(last=False)
    return exe


class _Tiering:
    """The state of one program compiled in tiers: the quick executable runs while the
    optimized one compiles in a background thread, then replaces it (``swap``)."""

    __slots__ = ("current", "compile_s", "done", "error", "namespaces", "lock", "thread")

    def __init__(self, quick_s):
        self.current = "quick"
        self.compile_s = {"quick": quick_s, "optimized": None}
        self.done = threading.Event()
        self.error = None
        self.namespaces = []
        self.lock = threading.Lock()
        self.thread = None

    def info(self) -> dict:
        return {"tier": self.current, "compile_s": dict(self.compile_s),
                "pending": not self.done.is_set(), "error": self.error}

    def watch(self, compiled, ns):
        with self.lock:
            if self.current == "optimized":
                ns["_ex"] = compiled._execute
            else:
                self.namespaces.append(ns)

    def swap(self, compiled, exe, seconds):
        with self.lock:
            compiled._exe = exe
            compiled._execute = exe.execute_sharded
            for ns in self.namespaces:
                ns["_ex"] = compiled._execute
            self.namespaces = []
            self.compile_s["optimized"] = seconds
            self.current = "optimized"


_tier_threads: set = set()


def _tiered(text, in_avals, out_avals, donated, device, committed):
    """Compile ``text`` in the quick tier now and in the optimized tier in a background
    thread (through ``compile_text``: one optimized compile per program, stored in the
    persistent cache); the returned ``Compiled`` switches to the optimized executable
    when it is ready.  The thread is not a daemon: an interpreter exiting during the
    compile waits for it (nothing is dispatched from it, it only compiles and swaps)."""
    t0 = time.perf_counter()
    quick = compile_text(text, device, donated, (), "quick")
    comp = Compiled(quick, text, in_avals, out_avals, donated, device, committed)
    state = comp._tier = _Tiering(time.perf_counter() - t0)

    def work():
        try:
            t1 = time.perf_counter()
            exe = compile_text(text, device, donated)
            state.swap(comp, exe, time.perf_counter() - t1)
        except BaseException as e:   # the quick tier keeps running
            state.error = f"{type(e).__name__}: {e}"
        finally:
            state.done.set()
            _tier_threads.discard(threading.current_thread())

    th = state.thread = threading.Thread(target=work, name="xform-tier-optimize", daemon=False)
    _tier_threads.add(th)
    th.start()
    return comp


def tier_stats() -> dict:
    """Quick-tier compiles so far, their total seconds, and background optimized
    compiles still running."""
    with _cache_lock:
        out = dict(_tier_stats)
    out["background_running"] = len(_tier_threads)
    return out


class KeyedCompiled:
    """A compiled program whose interface has typed PRNG key arrays: key arguments are
    passed as their uint32[..., *key_shape] words and key results wrapped back into key arrays
    (the program itself was physicalized, see ``primitives.prng``)."""

    __slots__ = ("inner", "in_avals", "out_avals", "_key_in", "_key_out", "__weakref__")

    def __init__(self, inner, in_avals, out_avals):
        self.inner = inner
        self.in_avals = list(in_avals)
        self.out_avals = list(out_avals)
        self._key_in = [prng.is_key_aval(a) for a in self.in_avals]
        self._key_out = [prng.is_key_aval(a) for a in self.out_avals]

    def __call__(self, *args):
        conv = []
        for x, k in zip(args, self._key_in):
            if k:
                if isinstance(x, Tracer):
                    raise TypeError("a traced key array was passed to a compiled program")
                if not prng.is_key_aval(core.get_aval(x)):
                    raise TypeError(f"compiled program expects a key array, got "
                                    f"{core.get_aval(x).str_short()}")
                x = prng.to_words(np.asarray(x._value if isinstance(x, Array) else x))
            conv.append(x)
        outs = self.inner(*conv)
        return [Array(prng.to_struct(np.asarray(o), a.dtype), False) if k else o
                for o, k, a in zip(outs, self._key_out, self.out_avals)]

    @property
    def donated_invars(self):
        return self.inner.donated_invars

    @property
    def device(self):
        return self.inner.device

    def as_text(self):
        return self.inner.as_text()

    def compiled_text(self):
        return self.inner.compiled_text()

    def cost_analysis(self):
        return self.inner.cost_analysis()

    def memory_analysis(self):
        return self.inner.memory_analysis()

    def __repr__(self):
        return f"KeyedCompiled({self.inner!r})"


class Float0Compiled:
    """A compiled program whose interface has float0 values (the tangents of integer
    and bool values, which hold no data): XLA takes and gives them as false booleans,
    the caller passes and gets float0 NumPy arrays, as with JAX."""

    __slots__ = ("inner", "in_avals", "out_avals", "_f0_in", "_f0_out", "__weakref__")

    def __init__(self, inner, in_avals, out_avals):
        self.inner = inner
        self.in_avals = list(in_avals)
        self.out_avals = list(out_avals)
        self._f0_in = [a.dtype == float0 for a in self.in_avals]
        self._f0_out = [a.dtype == float0 for a in self.out_avals]

    def __call__(self, *args):
        conv = []
        for x, f0, a in zip(args, self._f0_in, self.in_avals):
            if f0:
                if isinstance(x, Tracer):
                    raise TypeError("a traced float0 value was passed to a compiled program")
                if np.shape(x) != a.shape:
                    raise TypeError(f"compiled program expects float0{list(a.shape)}, got "
                                    f"{core.get_aval(x).str_short()}")
                x = np.zeros(a.shape, np.bool_)
            conv.append(x)
        outs = self.inner(*conv)
        return [np.zeros(a.shape, float0) if f0 else o
                for o, f0, a in zip(outs, self._f0_out, self.out_avals)]

    donated_invars = KeyedCompiled.donated_invars
    device = KeyedCompiled.device
    as_text = KeyedCompiled.as_text
    compiled_text = KeyedCompiled.compiled_text
    cost_analysis = KeyedCompiled.cost_analysis
    memory_analysis = KeyedCompiled.memory_analysis

    def __repr__(self):
        return f"Float0Compiled({self.inner!r})"


# ----------------------------------------------------------------- eager on accelerators

_eager_cache: "collections.OrderedDict" = collections.OrderedDict()


def _param_key(params):
    try:
        key = tuple(sorted(params.items()))
        hash(key)
        return key
    except TypeError:
        return None


def device_impl_hook(prim, args, params):
    """Run one primitive on the device holding its array arguments (no host round trip).

    Compiles (once per primitive, params, input avals and device) a
    single-primitive program.  Arrays committed to different devices are an
    error; uncommitted ones follow the committed one (or the first device seen).
    """
    if _closing[0]:
        interrupts.check_open(f"run {prim.name} on a device")
    device, committed = None, None
    for a in args:
        if type(a) is Array and a._buf is not None and len(a._buf._sharding.device_set) > 1:
            from xform._src.lowering import spmd          # an argument spans several devices
            return spmd.eager_sharded(prim, args, params)
    for a in args:
        if type(a) is Array and a._buf is not None:
            d = _buf_device(a._buf)
            if a._committed:
                if committed is not None and d != committed:
                    raise ValueError(
                        f"{prim.name}: arguments are committed to different devices: {committed} "
                        f"and {d}. Move them to one device with device_put first.")
                committed = d
            elif device is None:
                device = d
    device = committed or device or _default_device()
    avals = tuple(core.get_aval(a) for a in args)
    pkey = _param_key(params)
    key = (prim, pkey, avals, device) if pkey is not None else None
    comp = _eager_cache.get(key) if key is not None else None
    if comp is None:
        # one-equation programs compile fast: no tiering (no background thread per op)
        comp = compile_jaxpr(primitive_program(prim, params, avals), device=device,
                             name=prim.name, tier="optimized")
        comp._committed = committed is not None
        if key is not None:
            _eager_cache[key] = comp
            if len(_eager_cache) > _EXE_CACHE_SIZE:
                _eager_cache.popitem(last=False)
    outs = comp(*args)
    return outs if prim.multiple_results else outs[0]


def primitive_program(prim, params, avals) -> ClosedJaxpr:
    """The program of one primitive application (what an eager op compiles)."""
    def fun(*xs):
        out = prim.bind(*xs, **params)
        return list(out) if prim.multiple_results else [out]
    with core.set_current_trace(core.EVAL_TRACE):
        jaxpr, consts = staging.trace_to_jaxpr(fun, avals)
    return ClosedJaxpr(jaxpr, consts)


core.device_impl_hook = device_impl_hook

"""``xform.profiler``: host-side tracing with JAX's API (``jax.profiler``).

``with trace(log_dir):`` records every ``TraceAnnotation`` / ``StepTraceAnnotation`` /
``annotate_function`` span and every jitted call (name, thread, start, duration) and,
on exit, writes them as a Chrome trace-event file
``log_dir/plugins/profile/<run>/<host>.trace.json.gz`` (open it in Perfetto or
chrome://tracing; TensorBoard's profile plugin reads that layout).  ``start_trace`` /
``stop_trace`` are the non-context spelling.  Device-side (XLA) timelines are not
recorded by ``trace``; jaxlib's profiler server (``start_server``) samples them for
TensorBoard, and ``device_memory_profile`` snapshots the live device buffers.
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import socket
import threading
import time
from xform import _jit

__all__ = ["trace", "start_trace", "stop_trace", "TraceAnnotation", "StepTraceAnnotation",
           "annotate_function", "annotate", "start_server", "stop_server",
           "register_subprocess", "device_memory_profile", "save_device_memory_profile",
           "ProfileData", "ProfileEvent", "ProfilePlane", "ProfileOptions"]


# ----------------------------------------------------------------- jaxlib's profiler

_server = None


def start_server(port: int, requires_backend: bool = True):
    """Start jaxlib's profiler server on ``port`` (TensorBoard's profile plugin, or
    ``jax.collect_profile``, connects to it and samples this process's XLA activity);
    one at a time. ``requires_backend``: create the default backend first."""
    global _server
    from xform._src.lowering import profiling  # deferred: keeps `import xform` light
    if _server is not None:
        raise ValueError("Only one profiler server can be active at a time.")
    _server = profiling.start_server(port, requires_backend)
    return _server


def stop_server():
    """Stop the running profiler server."""
    global _server
    if _server is None:
        raise ValueError("No active profiler server.")
    _server = None     # dropping the last reference stops it


def register_subprocess(pid: int, port: int):
    """Profile the subprocess ``pid`` (whose profiler server listens on ``port``) with
    this process; returns the function that unregisters it. RuntimeError if it cannot
    be reached."""
    from xform._src.lowering import profiling  # deferred: keeps `import xform` light
    return profiling.register_subprocess(pid, port)


def device_memory_profile(backend: str | None = None) -> bytes:
    """The live device buffers and executables of ``backend``'s client as a gzipped
    ``pprof`` protocol buffer (read it with the pprof tool)."""
    from xform._src.lowering import profiling  # deferred: keeps `import xform` light
    return profiling.heap_profile(backend)


def save_device_memory_profile(filename, backend: str | None = None) -> None:
    """Write ``device_memory_profile(backend)`` to ``filename``."""
    profile = device_memory_profile(backend)
    with open(filename, "wb") as f:
        f.write(profile)


_lazy: dict = {}


def __getattr__(name):
    # jaxlib's classes, loaded on first use so `import xform` stays free of jaxlib:
    # ProfileData/ProfileEvent/ProfilePlane read an XSpace (a collected profile);
    # ProfileOptions configures the profiler's collectors
    if name in ("ProfileData", "ProfileEvent", "ProfilePlane"):
        from xform._src.lowering import profiling  # deferred: keeps `import xform` light
        return getattr(profiling.profile_data_lib(), name)
    if name == "ProfileOptions":
        if name not in _lazy:
            from xform._src.lowering import profiling  # deferred: keeps `import xform` light

            class ProfileOptions(profiling.profiler_lib().ProfileOptions):
                """Profiler options: which collectors run and at what level."""
            ProfileOptions.__module__, ProfileOptions.__qualname__ = __name__, name
            _lazy[name] = ProfileOptions
        return _lazy[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Session:
    def __init__(self, log_dir):
        self.log_dir = os.fspath(log_dir)
        self.events: list = []
        self.t0 = time.perf_counter()
        self.lock = threading.Lock()

    def add(self, name, start, end, args=None):
        ev = {"name": name, "ph": "X", "pid": os.getpid(), "tid": threading.get_ident(),
              "ts": (start - self.t0) * 1e6, "dur": (end - start) * 1e6}
        if args:
            ev["args"] = {k: str(v) for k, v in args.items()}
        with self.lock:
            self.events.append(ev)


_session: _Session | None = None
_lock = threading.Lock()


def start_trace(log_dir, create_perfetto_link=False, create_perfetto_trace=False,
                profiler_options=None) -> None:
    """Start recording; only one trace may run at a time."""
    global _session
    with _lock:
        if _session is not None:
            raise RuntimeError("Profile has already been started. Only one profile may be "
                               "run at a time.")
        _session = _Session(log_dir)
    _install_jit_hook()


def stop_trace():
    """Stop recording and write the trace file; returns its path."""
    global _session
    with _lock:
        if _session is None:
            raise RuntimeError("No profile started")
        s, _session = _session, None
    _remove_jit_hook()
    run = time.strftime("%Y_%m_%d_%H_%M_%S")
    d = os.path.join(s.log_dir, "plugins", "profile", run)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{socket.gethostname()}.trace.json.gz")
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": s.events, "displayTimeUnit": "ms"}, f)
    return path


@contextlib.contextmanager
def trace(log_dir, create_perfetto_link=False, create_perfetto_trace=False,
          profiler_options=None):
    """Record a trace of the ``with`` body into ``log_dir``."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation:
    """A named span in the trace (context manager); free when no trace is running."""

    def __init__(self, name: str, **kwargs):
        self.name, self.kwargs = name, kwargs

    def __enter__(self):
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        s = _session
        if s is not None:
            s.add(self.name, self._start, time.perf_counter(), self.kwargs)
        return False


class StepTraceAnnotation(TraceAnnotation):
    """A training-step span: ``StepTraceAnnotation("train", step_num=i)``."""

    def __init__(self, name: str, **kwargs):
        super().__init__(name, **kwargs)


def annotate_function(func, name: str | None = None, **decorator_kwargs):
    """Decorator: every call of ``func`` is a span named ``name`` (default: its name)."""
    label = name or getattr(func, "__qualname__", getattr(func, "__name__", "function"))

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with TraceAnnotation(label, **decorator_kwargs):
            return func(*args, **kwargs)
    return wrapper


annotate = TraceAnnotation   # ``profiler.annotate("name")`` as a context manager

_orig_call = None


def _remove_jit_hook():
    global _orig_call
    if _orig_call is not None:
        _jit.JitWrapped.__call__ = _orig_call
        _orig_call = None


def _install_jit_hook():
    """Record jitted calls as spans while a trace runs (removed when it stops)."""
    global _orig_call
    if _orig_call is not None:
        return
    orig = _orig_call = _jit.JitWrapped.__call__

    @functools.wraps(orig)
    def call(self, *args, **kwargs):
        s = _session
        if s is None:
            return orig(self, *args, **kwargs)
        t0 = time.perf_counter()
        try:
            return orig(self, *args, **kwargs)
        finally:
            s.add(f"jit({getattr(self, '__name__', 'fun')})", t0, time.perf_counter())
    _jit.JitWrapped.__call__ = call

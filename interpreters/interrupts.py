"""Ctrl-C and interpreter exit around the sections that must not be cut in half.

Two faults leave a process broken when they land in the wrong place:

* **SIGINT** (Ctrl-C) during the first import of jaxlib's extension modules, the
  runtime's initialisation or a compile raises ``KeyboardInterrupt`` half way through
  C++-side registration: the next import fails ("Encountered an error while initializing
  the extension", "Dialect namespace ... is already registered") or crashes.
  ``deferred()`` holds a SIGINT that arrives inside such a section and raises it (runs
  the handler that was installed) when the section ends, so the section either never
  started or finished.  Only on the main thread (the only one Python delivers signals
  to), and only while Python's own or a user's Python-level handler is installed.
  ``import_module(name)`` imports under ``deferred()`` the first time.
* **Interpreter exit** while daemon threads are inside the runtime (executing,
  waiting on a buffer): CPython stops such a thread when it next takes the GIL, which
  inside jaxlib's C++ frames aborts the process ("FATAL: exception not rethrown").
  ``shutdown()`` (registered with ``atexit`` by the runtime) stops accepting
  dispatches from threads other than the main one -- they get a RuntimeError from
  ``check_open`` before entering C++ -- and waits (bounded) for the threads already
  inside xform's frames to leave them.
"""
from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
import time

__all__ = ["deferred", "import_module", "check_open", "shutdown", "closing"]


# ----------------------------------------------------------------- SIGINT deferral

class _Deferral:
    """``with deferred():`` -- hold SIGINT until the outermost such block ends."""

    __slots__ = ()
    depth = 0
    previous = None
    pending = None

    def __enter__(self):
        cls = _Deferral
        if cls.depth:
            cls.depth += 1
            return self
        if threading.current_thread() is not threading.main_thread():
            return self
        try:
            prev = signal.getsignal(signal.SIGINT)
        except (ValueError, OSError):
            return self
        if not callable(prev):           # SIG_IGN, SIG_DFL or a C handler: nothing to hold
            return self
        try:
            signal.signal(signal.SIGINT, _hold)
        except (ValueError, OSError):    # not the main interpreter
            return self
        cls.previous, cls.pending, cls.depth = prev, None, 1
        return self

    def __exit__(self, *exc):
        cls = _Deferral
        if not cls.depth or threading.current_thread() is not threading.main_thread():
            return False
        cls.depth -= 1
        if cls.depth:
            return False
        prev, pending = cls.previous, cls.pending
        cls.previous = cls.pending = None
        signal.signal(signal.SIGINT, prev)
        if pending is not None:
            prev(*pending)               # Python's default handler raises KeyboardInterrupt
        return False


def _hold(signum, frame):
    _Deferral.pending = (signum, frame)


def deferred():
    """A context in which SIGINT is held and delivered (raised) at its end."""
    return _Deferral()


def import_module(name):
    """``importlib.import_module(name)``, the first time under ``deferred()`` (a Ctrl-C
    in the middle of an extension module's initialisation breaks it for the process)."""
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    with _Deferral():
        return importlib.import_module(name)


# ----------------------------------------------------------------- interpreter exit

closing = [False]          # read on the dispatch paths: ``if closing[0]: ...``


def check_open(what="dispatch"):
    """RuntimeError in a non-main thread once the interpreter is exiting."""
    if closing[0] and threading.current_thread() is not threading.main_thread():
        raise RuntimeError(
            f"xform: cannot {what}: the Python interpreter is shutting down (the main "
            "thread has returned) and no more computations are dispatched from other "
            "threads. Join worker threads (or signal them to stop) before the program ends.")


_SRC_DIRS = None


def _our_dirs():
    global _SRC_DIRS
    if _SRC_DIRS is None:
        here = os.path.dirname(os.path.abspath(__file__))         # the interpreters layer
        root = os.path.dirname(here)
        dirs = {here}
        for layer in ("lowering", "primitives", "xform"):
            d = os.path.join(root, layer)
            if os.path.isdir(d):
                dirs.add(d)
        xf = sys.modules.get("xform")
        if xf is not None and getattr(xf, "__file__", None):
            dirs.add(os.path.dirname(os.path.abspath(xf.__file__)))
        _SRC_DIRS = tuple(d + os.sep for d in dirs)
    return _SRC_DIRS


def _ours(code):
    fn = code.co_filename
    return fn.startswith("<xform") or fn.startswith(_our_dirs())


def _frames_inside(frame):
    out = []
    while frame is not None:
        if _ours(frame.f_code):
            out.append(frame)
        frame = frame.f_back
    return out


def shutdown(timeout=10.0):
    """Stop accepting dispatches from other threads, then wait (at most ``timeout``
    seconds) until the threads that were inside xform have left those frames."""
    if threading.main_thread().is_alive():
        # not the interpreter's exit (which stops the main thread before running the
        # atexit functions) but someone running them by hand (`atexit._run_exitfuncs()`,
        # as chex's tests do): the program goes on, so do dispatches
        return
    closing[0] = True
    me = threading.get_ident()
    waiting = {tid: _frames_inside(f) for tid, f in sys._current_frames().items()
               if tid != me}
    waiting = {tid: fs for tid, fs in waiting.items() if fs}
    deadline = time.monotonic() + timeout
    while waiting and time.monotonic() < deadline:
        time.sleep(0.005)
        now = sys._current_frames()
        for tid in list(waiting):
            f = now.get(tid)
            if f is None:
                del waiting[tid]
                continue
            live = set(map(id, _frames_inside(f)))
            if not any(id(fr) in live for fr in waiting[tid]):
                del waiting[tid]

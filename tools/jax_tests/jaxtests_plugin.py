"""pytest plugin that runs JAX's own test files on the library named by JAXTESTS_LIB
('jax' or 'xform'), through the test layer in ``jaxtest_layer``.

Loaded with ``-p jaxtests_plugin`` (``tools/jax_tests`` on PYTHONPATH) by ``run.py``.
Environment: JAXTESTS_LIB, JAXTESTS_DIR (the fetched ``tests/`` directory: only modules
there get the layer's ``jax._src``), JAXTESTS_SKIPS (the skip file), JAXTESTS_TIMEOUT
(seconds per test, 0 for none).
"""
from __future__ import annotations

import builtins
import fnmatch
import os
import signal

import pytest

LIB = os.environ.get("JAXTESTS_LIB", "jax")
TESTS_DIR = os.path.realpath(os.environ.get("JAXTESTS_DIR", "."))
TIMEOUT = int(os.environ.get("JAXTESTS_TIMEOUT", "120"))

if LIB not in ("jax", "xform"):
    raise SystemExit(f"JAXTESTS_LIB must be 'jax' or 'xform', not {LIB!r}")

import jax._src.lax_reference  # noqa: E402,F401  (the NumPy oracle, loaded before any alias)

if LIB == "xform":
    import xform  # noqa: E402
    xform.compat.alias_jax()

from jaxtest_layer import shim  # noqa: E402

_orig_import = builtins.__import__


def _is_test_module(globals_):
    f = (globals_ or {}).get("__file__") or ""
    return f and os.path.realpath(f).startswith(TESTS_DIR + os.sep)


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and (name == "jax._src" or name.startswith("jax._src.") or (
            LIB == "xform" and (name == "jax.interpreters" or
                                name.startswith("jax.interpreters.")))) \
            and _is_test_module(globals):
        mod = shim.resolve(name)
        if fromlist:
            return mod
        return shim.top()
    return _orig_import(name, globals, locals, fromlist, level)


builtins.__import__ = _import


def _read_skips(path):
    rules = []
    if not path or not os.path.exists(path):
        return rules
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            pattern, sep, reason = line.partition("#")
            if not sep or not reason.strip():
                raise SystemExit(f"{path}:{n}: a skip needs a reason after '#'")
            rules.append((pattern.strip(), reason.strip()))
    return rules


def pytest_collection_modifyitems(config, items):
    rules = _read_skips(os.environ.get("JAXTESTS_SKIPS"))
    for item in items:
        for pattern, reason in rules:
            if fnmatch.fnmatchcase(item.nodeid, pattern):
                item.add_marker(pytest.mark.skip(reason=f"jax-tests skip file: {reason}"))
                break


class TestTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise TestTimeout(f"test ran longer than {TIMEOUT}s (JAXTESTS_TIMEOUT)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if TIMEOUT > 0:
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(TIMEOUT)
    try:
        yield
    finally:
        if TIMEOUT > 0:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)

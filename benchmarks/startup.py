"""Start-up cases: what a script, a test run or a notebook restart pays before its first
result -- ``import`` alone, and a fresh interpreter's time to its first jitted result.

Every measurement is a fresh subprocess (started from this checkout, so it imports this
xform), timed inside the process from its first statement (the interpreter's own start,
the same for both libraries, is left out).  xform and JAX alternate within every round;
the figure is the median over rounds.  One untimed run per library first writes bytecode
caches and warms the OS file cache (a user's second run has both).

xform's persistent compilation cache is on by default, so its fresh-process first call is
measured twice: ``first_jit`` with an empty cache directory per round (cold: XLA compiles,
as JAX's first call does -- JAX's persistent cache is off by default) and
``warm_first_jit`` with the directory a previous round filled.

``params["split"]`` attributes one instrumented fresh process per library to its stages
(``import``, runtime/client set-up, ``ml_dtypes``, first jitted call), for the report.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from benchmarks.cases import case

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_IMPORT = {
    "xform": "import xform",
    "jax": "import jax",
}

# A first jitted result: a small elementwise program on host data, blocked on.
_FIRST = {
    "xform": ("import xform, xform.numpy as xnp, numpy as np\n"
              "f = xform.jit(lambda x: xnp.sin(x) * 2.0 + 1.0)\n"
              "f(np.ones(100, np.float32)).block_until_ready()\n"),
    "jax": ("import jax, jax.numpy as jnp, numpy as np\n"
            "f = jax.jit(lambda x: jnp.sin(x) * 2.0 + 1.0)\n"
            "f(np.ones(100, np.float32)).block_until_ready()\n"),
}

_TIMED = ("import time as _t\n_t0 = _t.perf_counter()\n{body}"
          "print('STARTUP', _t.perf_counter() - _t0)\n")

# The floor of a fresh interpreter's first jitted result: ``import ml_dtypes``, which
# jaxlib's host-to-device transfer (``batched_device_put``, the only one jaxlib 0.10.2
# offers without JAX's Python package) performs on its first call whatever the dtype,
# and which ``import jax`` performs too.  Its cost is numpy's registration of
# ml_dtypes' ufunc loops (``PyUFunc_AddLoop`` searches a ufunc's loop list linearly).
_FLOOR = ("import numpy\nimport time as _t\n_t0 = _t.perf_counter()\nimport ml_dtypes\n"
          "print('STARTUP', _t.perf_counter() - _t0)\n")
FIRST_JIT_FLOOR_NOTE = (
    "floor: a fresh interpreter's `import ml_dtypes` alone (numpy imported untimed), "
    "which jaxlib's first host-to-device transfer does for any dtype and `import jax` "
    "does too; floor/JAX bounds the best first_jit ratio reachable through jaxlib")

# Instrumented runs: the same first result, with a clock reading after each stage.
_SPLIT = {
    "xform": ("import time as _t, json as _j\n_T = [_t.perf_counter()]\n"
              "import xform, xform.numpy as xnp, numpy as np\n_T.append(_t.perf_counter())\n"
              "import xform._src.lowering.runtime as _rt\n_T.append(_t.perf_counter())\n"
              "_rt.devices()\n_T.append(_t.perf_counter())\n"
              "import ml_dtypes\n_T.append(_t.perf_counter())\n"
              "f = xform.jit(lambda x: xnp.sin(x) * 2.0 + 1.0)\n"
              "f(np.ones(100, np.float32)).block_until_ready()\n_T.append(_t.perf_counter())\n"
              "import sys as _s\n"
              "print('SPLIT', _j.dumps({'import xform': _T[1] - _T[0], "
              "'import runtime (jaxlib, lowering)': _T[2] - _T[1], 'CPU client': _T[3] - _T[2], "
              "'import ml_dtypes (jaxlib does on its first transfer)': _T[4] - _T[3], "
              "'first jit call (trace+lower+compile+run)': _T[5] - _T[4], "
              "'runtime': _rt.runtime_kind(), 'jax imported': 'jax' in _s.modules}))\n"),
    "jax": ("import time as _t, json as _j\n_T = [_t.perf_counter()]\n"
            "import jax, jax.numpy as jnp, numpy as np\n_T.append(_t.perf_counter())\n"
            "jax.devices()\n_T.append(_t.perf_counter())\n"
            "f = jax.jit(lambda x: jnp.sin(x) * 2.0 + 1.0)\n"
            "f(np.ones(100, np.float32)).block_until_ready()\n_T.append(_t.perf_counter())\n"
            "print('SPLIT', _j.dumps({'import jax': _T[1] - _T[0], 'CPU client': _T[2] - _T[1], "
            "'first jit call (trace+lower+compile+run)': _T[3] - _T[2]}))\n"),
}


def _env(cache_dir):
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)   # bytecode caches, as a user's install has
    env.pop("XLA_FLAGS", None)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["JAX_COMPILATION_CACHE_DIR"] = cache_dir
    return env


def _run(code, cache_dir, tag):
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(cache_dir),
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"subprocess failed: {r.stderr.strip().splitlines()[-1:]}")
    for line in r.stdout.splitlines():
        if line.startswith(tag + " "):
            return line[len(tag) + 1:]
    raise RuntimeError(f"subprocess printed no {tag} line")


def _rounds(ctx):
    """Every round is several fresh interpreters: --quick takes one (a smoke run)."""
    return 1 if ctx.quick else max(3, min(ctx.rounds, 5))


@case("startup/import", "startup", "fresh interpreter: `import xform` vs `import jax` "
      "(in-process time of the import statement; median of interleaved subprocess rounds)",
      metrics=("import",), libs=("xform", "jax"))
def startup_import(ctx):
    tmp = tempfile.mkdtemp(prefix="xform-startup-")
    try:
        for lib in _IMPORT:                       # untimed: bytecode + file caches
            _run(_TIMED.format(body=_IMPORT[lib] + "\n"), tmp, "STARTUP")
        times = {lib: [] for lib in _IMPORT}
        for _ in range(_rounds(ctx)):
            for lib, body in _IMPORT.items():
                times[lib].append(float(_run(_TIMED.format(body=body + "\n"), tmp, "STARTUP")))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"params": {"rounds": _rounds(ctx)}, "skipped": {},
            "metrics": {"import": {lib: statistics.median(v) for lib, v in times.items()}}}


@case("startup/first_jit", "startup", "fresh interpreter to its first jitted result: import, "
      "jit(sin(x)*2+1) on f32[100], block (first_jit: xform's persistent cache empty, cold "
      "like JAX's; warm_first_jit: xform's cache filled by an earlier process, vs JAX's cold)",
      metrics=("first_jit", "warm_first_jit"), libs=("xform", "jax", "floor"))
def startup_first_jit(ctx):
    base = tempfile.mkdtemp(prefix="xform-startup-")
    try:
        warm_dir = os.path.join(base, "warm")
        for lib in _FIRST:                        # untimed; also fills xform's warm cache
            _run(_TIMED.format(body=_FIRST[lib]), warm_dir, "STARTUP")
        cold = {lib: [] for lib in _FIRST}
        warm, floor = [], []
        for r in range(_rounds(ctx)):
            for lib, body in _FIRST.items():
                cold_dir = os.path.join(base, f"cold{r}{lib}")
                cold[lib].append(float(_run(_TIMED.format(body=body), cold_dir, "STARTUP")))
            warm.append(float(_run(_TIMED.format(body=_FIRST["xform"]), warm_dir, "STARTUP")))
            floor.append(float(_run(_FLOOR, warm_dir, "STARTUP")))
        split = {}
        for lib, code in _SPLIT.items():
            try:
                got = json.loads(_run(code, os.path.join(base, f"split{lib}"), "SPLIT"))
                split[lib] = {k: f"{v * 1e3:.0f} ms" if isinstance(v, float) else v
                              for k, v in got.items()}
            except Exception as e:  # noqa: BLE001
                split[lib] = f"unavailable: {e}"
    finally:
        shutil.rmtree(base, ignore_errors=True)
    med = {lib: statistics.median(v) for lib, v in cold.items()}
    med["floor"] = statistics.median(floor)
    return {"params": {"rounds": _rounds(ctx), "split": split,
                       "best first_jit ratio (floor/JAX)": round(med["floor"] / med["jax"], 2),
                       "floor": FIRST_JIT_FLOOR_NOTE},
            "skipped": {"floor": "measured for first_jit only (a fresh import ml_dtypes)"},
            "metrics": {"first_jit": med,
                        "warm_first_jit": {"xform": statistics.median(warm),
                                           "jax": med["jax"]}}}

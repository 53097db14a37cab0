"""Large programs (10,000+ equations): the programs of the ``large/`` cases, and the
peak-host-memory probe they run in fresh processes.

* ``loop_program(n)``: a Python loop of ``n`` iterations of ``h = tanh(h @ w);
  h = h - mean(h)`` on f32[8,8] (5 equations per iteration: dot_general, tanh,
  reduce_sum, div, sub).
* ``transformer_stack``: ``value_and_grad`` of an unrolled stack of pre-LN
  transformer blocks (48 layers: about 10,700 equations).
* ``tree_params``: a pytree of 5,000 parameter leaves (100 blocks of 25 layers of
  ``{"w", "b"}``), updated by one jitted ``p * 0.999`` per leaf.

``python -m benchmarks.large --mem LIB PROGRAM SIZE`` prints the peak resident memory
(bytes) that tracing and lowering ``PROGRAM`` of ``SIZE`` took in a fresh process, over
what the process held before (``/proc/self/clear_refs`` resets the peak; Linux only).
"""
from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np

LOOP_EQNS_PER_ITER = 5


def loop_program(n_iters, variant=0):
    """``make(L) -> f(x, w)``; ``variant`` only renames the function (a fresh closure
    each call, so no tracing cache serves a later round)."""
    def make(L):
        def program(x, w):
            h = x
            for _ in range(n_iters):
                h = L.np.tanh(h @ w)
                h = h - L.np.mean(h)
            return h
        program.__name__ = f"loop{n_iters}_v{variant}"
        return program
    return make


def loop_args(rng):
    return [(rng.standard_normal((8, 8)) * 0.5).astype(np.float32),
            (rng.standard_normal((8, 8)) / math.sqrt(8)).astype(np.float32)]


def transformer_params(rng, layers, width):
    def r(*s, scale=1.0):
        return (rng.standard_normal(s) * scale).astype(np.float32)
    sc = 1 / math.sqrt(width)
    return [(1 + r(width, scale=0.1), r(width, scale=0.1), r(width, 3 * width, scale=sc),
             r(width, width, scale=sc), 1 + r(width, scale=0.1), r(width, scale=0.1),
             r(width, 4 * width, scale=sc), r(4 * width, width, scale=1 / math.sqrt(4 * width)))
            for _ in range(layers)]


def transformer_stack(heads=4, variant=0):
    """``make(L) -> f(params, x)``: value_and_grad of sum(stack(params, x))."""
    def make(L):
        from benchmarks.cases import transformer_block

        def loss(ps, x):
            for p in ps:
                x = transformer_block(L, p, x, heads)
            return L.np.sum(x)

        def program(ps, x):
            return L.value_and_grad(loss)(ps, x)
        program.__name__ = f"transformer_stack_v{variant}"
        return program
    return make


def transformer_args(rng, layers, seq=16, width=64):
    return [transformer_params(rng, layers, width),
            (rng.standard_normal((seq, width))).astype(np.float32)]


def tree_params(rng, blocks=100, per_block=25, size=4):
    return {f"block{i}": [{"w": rng.standard_normal(size).astype(np.float32),
                           "b": rng.standard_normal(size).astype(np.float32)}
                          for _ in range(per_block)] for i in range(blocks)}


def tree_program(variant=0):
    def make(L):
        tm = _tree_map(L)

        def program(p):
            return tm(lambda a: a * 0.999, p)
        program.__name__ = f"tree_update_v{variant}"
        return program
    return make


def _tree_map(L):
    import importlib
    mod = importlib.import_module("jax.tree_util" if L.name == "jax" else "xform.tree_util")
    return mod.tree_map


def build(name, size, rng, variant=0):
    """(make(L), numpy args) of program ``name`` at ``size`` (loop: iterations,
    transformer: layers, tree: leaves / 50)."""
    if name == "loop":
        return loop_program(size, variant), loop_args(rng)
    if name == "transformer":
        return transformer_stack(variant=variant), transformer_args(rng, size)
    if name == "tree":
        return tree_program(variant), [tree_params(rng, blocks=size)]
    raise ValueError(f"unknown program {name!r}")


def to_lib(L, tree):
    """NumPy leaves -> the library's device arrays, keeping lists/tuples/dicts."""
    if isinstance(tree, dict):
        return {k: to_lib(L, v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_lib(L, v) for v in tree)
    return L.put(tree)


def trace_lower(L, prog, args, clock=None):
    """Trace and lower ``prog`` once with ``L``; ((trace s, lower s), jitted, lowered).

    xform's lower is the StableHLO text its first call compiles (the simplify passes
    and the text with locations, ``first_call_text``); JAX's is ``Traced.lower()`` (its
    MLIR module).
    ``clock``: ``time.perf_counter`` (default) or ``time.process_time`` (both phases run
    on one thread: CPU time is robust on a loaded machine)."""
    import time
    clock = clock or time.perf_counter
    jf = L.jit(prog)
    t0 = clock()
    traced = jf.trace(*args)
    t1 = clock()
    if L.name == "jax":
        lowered = traced.lower()
    else:
        lowered = first_call_text(traced.lower())
    t2 = clock()
    return (t1 - t0, t2 - t1), jf, lowered


def first_call_text(lowered):
    """The StableHLO text an xform ``Lowered``'s first call compiles: the simplify passes
    and the generic-syntax text with locations.  (``Lowered.as_text()`` prints the same
    module in MLIR's pretty syntax, as JAX's does, which parses and re-prints it through
    MLIR: a cost a first call does not pay.)"""
    return lowered._program_text()


def xform_breakdown(prog, args, clock=None):
    """xform's trace + lower of ``prog`` split in three: (trace s, passes s, emit s) --
    the staging trace, the simplify passes and the StableHLO text (with locations), the
    same work ``trace_lower`` times as trace and lower."""
    import time

    import xform
    from xform._src import lowering
    from xform._src.interpreters import passes
    clock = clock or time.perf_counter
    jf = xform.jit(prog)
    t0 = clock()
    lowered = jf.trace(*args).lower()
    t1 = clock()
    closed = passes.simplify(lowered._entry.closed)
    t2 = clock()
    lowering.lower_jaxpr(closed, name="main", donated_invars=(False,) * len(closed.in_avals),
                         keep_unused=False, debug_info=True)
    t3 = clock()
    return t1 - t0, t2 - t1, t3 - t2


# ----------------------------------------------------------------- peak host memory


def _rss_now():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmHWM in /proc/self/status")


def _mem_main(lib, name, size):
    import gc
    from benchmarks.libs import load_libs
    libs = load_libs()
    L = libs[lib]
    if isinstance(L, str):
        raise SystemExit(L)
    rng = np.random.default_rng(0)
    make, args = build(name, size, rng)
    args = to_lib(L, args)
    # Warm the runtime and the libraries' lazy imports on a tiny program first.
    trace_lower(L, loop_program(2, variant=-1)(L), to_lib(L, loop_args(rng)))
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")               # reset the peak (VmHWM) to the current RSS
    base = _rss_now()
    out = trace_lower(L, make(L), args)
    peak = _hwm()
    del out
    print(max(peak - base, 0))


def peak_memory(lib, name, size, timeout=600):
    """Peak resident bytes of tracing + lowering in a fresh process (or raise)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""),
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-m", "benchmarks.large", "--mem", lib, name,
                           str(size)], cwd=root, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"memory probe failed: {proc.stderr.strip()[-300:]}")
    return int(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--mem":
        _mem_main(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        raise SystemExit("usage: python -m benchmarks.large --mem LIB PROGRAM SIZE")

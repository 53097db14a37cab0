"""Dispatch-tax probe: per-call host overhead of xform against JAX, in one process.

``python -m benchmarks.dispatch_probe [--rounds N] [--round-ms MS]``

Two hot paths users pay on every step, on tiny inputs (f32[8]) where the
work itself is negligible, so the time measured is the dispatch tax:

* eager: one elementwise op (``x + y``, ``sin(x)``, ``x * 2.0``) on host
  arrays; xform vs ``jnp`` on device arrays (JAX's eager path) vs NumPy (the
  floor);
* jit cache hit: ``jit(lambda x, y: sin(x + y))`` called with device-resident
  arrays and with NumPy arrays; dispatch only (outputs are not awaited, as a
  training loop does not await each step).

The machine may be shared and loaded, so absolute times are noise: libraries
alternate within every round (rotating order), each round times a batch of
back-to-back calls with the garbage collector off, and the report gives the
median over rounds plus the xform/JAX ratio -- the number to read.  The
default clock is the process's CPU time (``time.process_time``: time the
process is preempted by other load does not count; XLA's worker threads do);
``--clock wall`` uses ``time.perf_counter``.  The ``vs jnp.sin`` column divides
by JAX's eager ``jnp.sin(x)``, the reference per-op cost.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np


_CLOCKS = {"process": time.process_time, "wall": time.perf_counter}


def _calibrate(fn, round_s, clock):
    n = 1
    while True:
        t0 = clock()
        for _ in range(n):
            fn()
        dt = clock() - t0
        if dt >= round_s / 4 or n >= 1 << 20:
            return max(1, int(n * round_s / max(dt, 1e-9)))
        n *= 4


def measure(thunks: dict, rounds: int, round_s: float, clock=time.process_time) -> dict:
    """{lib: thunk} -> {lib: median seconds per call}; libraries alternate per round."""
    libs = list(thunks)
    for fn in thunks.values():       # warm-up: trace, compile, caches
        fn()
        fn()
    ns = {lib: _calibrate(thunks[lib], round_s, clock) for lib in libs}
    samples = {lib: [] for lib in libs}
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for r in range(rounds):
            k = r % len(libs)
            for lib in libs[k:] + libs[:k]:
                fn, n = thunks[lib], ns[lib]
                t0 = clock()
                for _ in range(n):
                    fn()
                samples[lib].append((clock() - t0) / n)
            gc.collect()             # between rounds, outside the timed region
    finally:
        if was_enabled:
            gc.enable()
    return {lib: statistics.median(v) for lib, v in samples.items()}


def cases():
    """{case name: {lib: thunk}} for the eager and jit hot paths."""
    import jax
    import jax.numpy as jnp

    import xform
    import xform.numpy as xnp

    x_np = np.linspace(-1, 1, 8, dtype=np.float32)
    y_np = np.linspace(0, 2, 8, dtype=np.float32)
    x, y = xnp.asarray(x_np), xnp.asarray(y_np)
    xa, ya = jnp.asarray(x_np), jnp.asarray(y_np)

    def fx(a, b):
        return xnp.sin(a + b)

    def fj(a, b):
        return jnp.sin(a + b)

    jx, jj = xform.jit(fx), jax.jit(fj)
    xd, yd = xform.device_put(x_np), xform.device_put(y_np)
    jd, kd = jax.device_put(x_np), jax.device_put(y_np)
    # "runtime floor": what the jaxlib calls alone cost on this signature (host puts
    # with cached avals + execute + result handlers), i.e. the best a Python
    # dispatcher on the public runtime API can do.
    for _ in range(2):
        jx(xd, yd)
    comp = next(iter(jx._cache.values())).compiled
    from lowering import runtime as rt
    ex, hs, bufs = comp._exe.execute_sharded, comp._handlers, [xd._buf, yd._buf]
    spec, sh, devs = comp._specs[0][2], comp._sh, comp._devlist

    def put(v):
        return rt._put(spec, sh, [v], devs, True, False, rt._HBS, True)

    out = {
        "eager x + y": {"xform": lambda: x + y, "jax": lambda: xa + ya,
                        "numpy": lambda: x_np + y_np},
        "eager sin(x)": {"xform": lambda: xnp.sin(x), "jax": lambda: jnp.sin(xa),
                         "numpy": lambda: np.sin(x_np)},
        "eager x * 2.0": {"xform": lambda: x * 2.0, "jax": lambda: xa * 2.0,
                          "numpy": lambda: x_np * np.float32(2.0)},
        "jit hit, device args": {
            "xform": lambda: jx(xd, yd), "jax": lambda: jj(jd, kd),
            "runtime floor": lambda: ex(bufs).consume_with_handlers(hs)},
        "jit hit, numpy args": {
            "xform": lambda: jx(x_np, y_np), "jax": lambda: jj(x_np, y_np),
            "runtime floor": lambda: ex([put(x_np), put(y_np)]).consume_with_handlers(hs)},
        "jit hit, device args, blocked": {
            "xform": lambda: jx(xd, yd).block_until_ready(),
            "jax": lambda: jj(jd, kd).block_until_ready()},
    }
    # sanity: same numbers
    for name, th in out.items():
        ref = np.asarray(th["jax"]())
        got = np.asarray(th["xform"]())
        if not np.allclose(ref, got, rtol=1e-6, atol=1e-6):
            raise AssertionError(f"{name}: xform and jax disagree: {got} vs {ref}")
    return out


def run(rounds=15, round_ms=20.0, only=None, clock="process"):
    clk = _CLOCKS[clock]
    all_cases = cases()
    ref = measure({"jax": all_cases["eager sin(x)"]["jax"]}, rounds, round_ms / 1e3, clk)["jax"]
    print(f"clock={clock}, {rounds} rounds of ~{round_ms:g} ms per library; "
          f"jnp.sin(x) reference: {ref * 1e6:.2f}us", flush=True)
    rows = []
    for name, thunks in all_cases.items():
        if only and only not in name:
            continue
        t = measure(thunks, rounds, round_ms / 1e3, clk)
        rows.append((name, t))
        parts = "  ".join(f"{lib} {v * 1e6:7.2f}us" for lib, v in t.items())
        extra = f"   vs jnp.sin = {t['xform'] / ref:.2f}" if name.startswith("eager") else ""
        print(f"{name:30s} {parts}   xform/jax = {t['xform'] / t['jax']:.2f}{extra}",
              flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--round-ms", type=float, default=20.0)
    ap.add_argument("--only", default=None, help="substring of the case names to run")
    ap.add_argument("--clock", choices=sorted(_CLOCKS), default="process")
    a = ap.parse_args(argv)
    run(a.rounds, a.round_ms, a.only, a.clock)


if __name__ == "__main__":
    main()

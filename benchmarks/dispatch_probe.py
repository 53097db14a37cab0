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

``--stages`` profiles jit's cache-hit path stage by stage instead, for one device
argument, 4 arguments / 2 outputs, NumPy arguments, a pytree of parameters and
``jit(grad(f))``; each row adds one layer to the one above:

* ``floor``: the bare jaxlib calls (``execute_sharded(bufs)
  .consume_with_handlers(handlers)``; for NumPy arguments one ``batched_device_put``
  each first) with the argument buffers made ahead;
* ``+ wrap``: the floor plus wrapping each output buffer in an ``Array``;
* ``call path``: the generated call path of the specialisation
  (``lowering/dispatch.py``): argument structure and leaf checks, transfers,
  execute, output wrapping, result pytree;
* ``jit(f)(...)``: the full call (``JitWrapped.__call__`` reaching the call path);
* ``jax``: ``jax.jit(f)(...)``, JAX's C++ dispatch.
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
    from xform._src.lowering import runtime as rt
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


def stage_cases():
    """{case: {stage: thunk}} for the per-stage profile (see the module docstring)."""
    import jax
    import jax.numpy as jnp

    import xform
    import xform.numpy as xnp
    from xform._src.interpreters.core import Array
    from xform.tree_util import tree_leaves

    rng = np.random.default_rng(0)

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def mlp_grad(m):
        def loss(p, x):
            h = m.tanh(x @ p[0][0] + p[0][1])
            return m.sum((h @ p[1][0] + p[1][1]) ** 2)
        return lambda p, x: (jax.grad(loss) if m is jnp else xform.grad(loss))(p, x)

    defs = {
        "one device arg": (lambda m: (lambda x: m.sin(x)), [f32(8)], True),
        "4 args / 2 outputs": (lambda m: (lambda a, b, c, d: (a * b + c, c - d)),
                               [f32(8) for _ in range(4)], True),
        "numpy args": (lambda m: (lambda x, y: m.sin(x) * y), [f32(8), f32(8)], False),
        "pytree params": (lambda m: (lambda p, x: m.tanh(x @ p["w"] + p["b"]).sum()),
                          [{"w": f32(4, 4), "b": f32(4)}, f32(2, 4)], True),
        "jit(grad(f))": (mlp_grad, [[(f32(16, 32), f32(32)), (f32(32, 4), f32(4))],
                                    f32(8, 16)], True),
    }
    out = {}
    for name, (mk, arrays, on_device) in defs.items():
        fx, fj = xform.jit(mk(xnp)), jax.jit(mk(jnp))
        ax = [xform.device_put(a) for a in arrays] if on_device else list(arrays)
        aj = [jax.device_put(a) for a in arrays] if on_device else list(arrays)
        for _ in range(100):       # past the packing threshold of NumPy arguments
            fx(*ax)
        import threading
        for t in threading.enumerate():
            if t.name.startswith("xform-jit-pack"):
                t.join(60)
        entry = next(iter(fx._cache.values()))
        comp = entry.compiled
        consts = [c._buf for c in entry.dev_consts]
        ex, hs = comp._exe.execute_sharded, comp._handlers
        leaves = tree_leaves(ax)
        if on_device:
            bufs = consts + [x._buf for x in leaves]

            def floor(ex=ex, hs=hs, bufs=bufs):
                return ex(bufs).consume_with_handlers(hs)
        else:
            from xform._src.lowering import runtime as rt
            put, sh, dl, hbs = rt._put, comp._sh, comp._devlist, rt._HBS
            pairs = list(zip([sp[2] for sp in comp._specs[len(consts):]], leaves))

            def floor(ex=ex, hs=hs, pairs=pairs, consts=consts):
                return ex(consts + [put(a, sh, [x], dl, True, False, hbs, True)
                                    for a, x in pairs]).consume_with_handlers(hs)
        new = object.__new__

        def wrapped(floor=floor):
            res = []
            for o in floor():
                r = new(Array)
                r._npy, r._buf, r.weak_type, r._committed, r._deleted = \
                    None, o, False, False, False
                res.append(r)
            return res
        mono, targs = fx._fast.mono, tuple(ax)
        out[name] = {"floor": floor, "+ wrap": wrapped,
                     "call path": (lambda mono=mono, targs=targs: mono(targs)),
                     "jit(f)(...)": (lambda fx=fx, ax=ax: fx(*ax)),
                     "jax": (lambda fj=fj, aj=aj: fj(*aj))}
    return out


def run_stages(rounds=15, round_ms=20.0, clock="process"):
    clk = _CLOCKS[clock]
    print(f"clock={clock}, {rounds} rounds of ~{round_ms:g} ms per stage; each row adds "
          "one layer to the row above (us per call, not awaited)", flush=True)
    for name, thunks in stage_cases().items():
        t = measure(thunks, rounds, round_ms / 1e3, clk)
        prev = None
        parts = []
        for stage, v in t.items():
            inc = "" if prev is None or stage == "jax" else f" (+{(v - prev) * 1e6:.2f})"
            parts.append(f"{stage} {v * 1e6:.2f}{inc}")
            if stage != "jax":
                prev = v
        print(f"{name:20s} " + " | ".join(parts) +
              f"   xform/jax = {t['jit(f)(...)'] / t['jax']:.2f}"
              f"   xform/floor = {t['jit(f)(...)'] / t['floor']:.2f}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--round-ms", type=float, default=20.0)
    ap.add_argument("--only", default=None, help="substring of the case names to run")
    ap.add_argument("--clock", choices=sorted(_CLOCKS), default="process")
    ap.add_argument("--stages", action="store_true",
                    help="per-stage profile of jit's cache-hit path (see the docstring)")
    a = ap.parse_args(argv)
    if a.stages:
        run_stages(a.rounds, a.round_ms, a.clock)
    else:
        run(a.rounds, a.round_ms, a.only, a.clock)


if __name__ == "__main__":
    main()

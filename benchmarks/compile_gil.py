"""``python -m benchmarks.compile_gil [--ops N] [--rounds R]``: does XLA's compile release
Python's GIL, and what do two threads compiling two programs give on this machine?

1. A Python thread counts in a loop while the main thread compiles a program; its
   count rate relative to its rate with nothing else running says whether the compile
   holds the GIL (near 0) or releases it (near 1 on a free core).
2. Two distinct programs compiled one after the other vs. in two threads at once
   (wall time; ratio < 1: compiling ahead in parallel pays).

Each round uses fresh programs (distinct elementwise chains of ``--ops`` operations),
no persistent cache; the medians over rounds are printed.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.compile_gil")
    ap.add_argument("--ops", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    import numpy as np
    import xform
    from xform._src import lowering
    from xform._src.interpreters import passes
    from benchmarks.cases import chain_program
    from benchmarks.libs import _xform_lib
    xform.config.update("jax_enable_compilation_cache", False)
    L = _xform_lib(False)
    x = np.ones(8, np.float32)

    def text(v):
        jf = xform.jit(chain_program(a.ops, v)(L))
        return lowering.lower_module(passes.simplify(jf.trace(x).jaxpr)).text
    lowering.compile_text(text(-1))          # runtime start-up outside the timings

    def spin(stop, out):
        n = 0
        while not stop.is_set():
            n += 1
        out.append(n)

    def spin_rate(work):
        stop, out = threading.Event(), []
        th = threading.Thread(target=spin, args=(stop, out))
        th.start()
        t0 = time.perf_counter()
        work()
        dt = time.perf_counter() - t0
        stop.set()
        th.join()
        return out[0] / dt, dt

    rates, seqs, pars = [], [], []
    for r in range(a.rounds):
        ts = [text(10 * r + k) for k in range(5)]
        idle, _ = spin_rate(lambda: time.sleep(0.3))
        busy, _ = spin_rate(lambda: lowering.compile_text(ts[0]))
        rates.append(busy / idle)
        t0 = time.perf_counter()
        lowering.compile_text(ts[1])
        lowering.compile_text(ts[2])
        seqs.append(time.perf_counter() - t0)
        ths = [threading.Thread(target=lowering.compile_text, args=(t,)) for t in ts[3:5]]
        t0 = time.perf_counter()
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        pars.append(time.perf_counter() - t0)
    rate, seq, par = (statistics.median(v) for v in (rates, seqs, pars))
    print(f"{a.ops}-op chains, {a.rounds} rounds (medians):")
    print(f"  a Python thread runs at {rate:.2f} of its idle rate while XLA compiles "
          f"({'the compile releases the GIL' if rate > 0.3 else 'the compile holds the GIL'})")
    print(f"  two programs: one after the other {seq:.2f} s, two threads {par:.2f} s "
          f"(ratio {par / seq:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

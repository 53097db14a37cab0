"""Honest timing: libraries alternate within each round, medians over rounds.

Two measurements cover every case:

* ``steady(thunks)``: per-call time of an already-warm callable.  Each thunk
  is called once outside the timed region (warm-up: tracing, compiling,
  caches), then every round times ``n`` back-to-back calls per library, the
  libraries' order rotating round to round so drift (turbo, other processes)
  hits them all alike.  ``n`` is calibrated per library so that a round
  lasts about ``target_s``.  Thunks block on their outputs themselves
  (``block_until_ready()`` inside the timed region).
* ``phases(factories)``: one-shot costs (first call, trace/lower/compile).
  ``factory(round)`` builds and runs a *fresh* program and returns its own
  phase timings in seconds; the round index lets it make each round's program
  distinct so no cache hides the cost.

A thunk or factory that raises is recorded as skipped with the exception as
its reason; the suite carries on.
"""
from __future__ import annotations

import gc
import statistics
import time
import traceback


class Skip(Exception):
    """Raised by a case to skip one library with a reason."""


def reason_of(e: BaseException) -> str:
    if isinstance(e, Skip):
        return str(e)
    where = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
    loc = f" (at {where.filename.rsplit('/', 1)[-1]}:{where.lineno})" if where else ""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {msg[:200]}{loc}"


def _order(libs, r):
    """Round ``r``'s library order: rotations, run forwards in even blocks of
    ``len(libs)`` rounds and backwards in odd ones, so over ``2 * len(libs)`` rounds
    every library follows every other one equally often (a library that leaves the
    machine busy -- BLAS threads spinning after NumPy's matmul -- then slows all the
    others alike, not the one that happens to come next)."""
    if not libs:
        return []
    n = len(libs)
    k = r % n
    order = libs[k:] + libs[:k]
    return order[::-1] if (r // n) % 2 else order


# The clock of steady-state timings: wall time (``time.perf_counter``, the default) or
# the process's CPU time (``time.process_time``, ``python -m benchmarks --clock
# process``), which does not count the time the process waits while other load has the
# cores -- the robust choice on a shared machine; XLA's worker threads count in both.
CLOCKS = {"wall": time.perf_counter, "process": time.process_time}
_steady_clock = [time.perf_counter]


def set_clock(name: str) -> None:
    _steady_clock[0] = CLOCKS[name]


def steady(thunks: dict, rounds: int, target_s: float):
    """{lib: callable | Skip-reason str} ->
    ({lib: median seconds per call}, {lib: first-call seconds}, {lib: reason})."""
    times, first, skipped, n = {}, {}, {}, {}
    for lib, fn in thunks.items():
        if isinstance(fn, str):
            skipped[lib] = fn
            continue
        try:
            t0 = time.perf_counter()
            fn()                                   # warm-up (compile, caches)
            t1 = time.perf_counter()
            first[lib] = t1 - t0
            fn()
            one = max(time.perf_counter() - t1, 1e-7)
            if t1 - t0 > 0 and one > target_s:     # slow case: a single call per round
                n[lib] = 1
            else:
                n[lib] = max(1, min(100_000, int(target_s / one)))
            times[lib] = []
        except Exception as e:  # noqa: BLE001  (any failure -> skipped with its reason)
            skipped[lib] = reason_of(e)
    live = list(times)
    clk = _steady_clock[0]
    gc_was_on = gc.isenabled()
    try:
        for r in range(rounds):
            for lib in _order(live, r):
                fn, k = thunks[lib], n[lib]
                # No cyclic-GC pass inside the timed loop (as timeit): a full collection
                # walks every object the whole suite has made so far, a cost that lands
                # on whichever library happens to allocate at that moment.
                gc.disable()
                t0 = clk()
                for _ in range(k):
                    fn()
                t1 = clk()
                if gc_was_on:
                    gc.enable()
                times[lib].append((t1 - t0) / k)
    finally:
        if gc_was_on:
            gc.enable()
    return {lib: statistics.median(ts) for lib, ts in times.items()}, first, skipped


def phases(factories: dict, rounds: int):
    """{lib: factory(round) -> {phase: seconds}} -> ({lib: {phase: median s}}, {lib: reason})."""
    got, skipped = {lib: [] for lib in factories}, {}
    for r in range(rounds):
        for lib in _order([l for l in factories if l not in skipped], r):
            f = factories[lib]
            if isinstance(f, str):
                skipped[lib] = f
                continue
            try:
                got[lib].append(f(r))
            except Exception as e:  # noqa: BLE001
                skipped[lib] = reason_of(e)
    out = {}
    for lib, rows in got.items():
        if lib in skipped or not rows:
            continue
        out[lib] = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
    return out, skipped


def clock():
    return time.perf_counter()

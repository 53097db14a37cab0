"""``python -m benchmarks``: xform side by side with JAX and NumPy, in one run.

    python -m benchmarks                 # full suite (a few minutes on 2 cores)
    python -m benchmarks --quick         # smaller sizes, fewer rounds (< 1 minute)
    python -m benchmarks --json out.json --only steady/ --profile a100

What it measures (cases.py): eager dispatch per op, jit dispatch, first call
split into trace / lower / compile for 30-, 300- and 3000-op programs,
steady-state training-like workloads, residual memory with and without
``checkpoint``, and the dispatch-tax report of ``xform.profile`` for a small
MLP and the MLP training step.

Honesty rules (timing.py): the libraries alternate inside every round and the
reported figure is the median over rounds; warm-ups run outside the timed
region; every timed call blocks on its outputs; inputs are fresh random
normal data with the same shapes and dtypes for every library.  A case or a
library that cannot run is reported as ``skipped: <reason>``; the suite
always completes.

Libraries: ``xform`` (arrays as a user makes them, ``xform.numpy.asarray``;
jitted code gets ``xform.device_put`` arrays, like ``jax.device_put``),
``xform_dev`` (eager cases only: device-resident arrays, one cached XLA
executable per op), ``jax`` and ``numpy``.  Ratios are xform/JAX and
xform/NumPy: above 1 means xform is slower (or uses more memory).
"""
from __future__ import annotations

import json
import math
import os
import platform
import sys
import time

__all__ = ["run", "format_results"]

TIME_METRICS = ("steady", "first_call", "trace", "lower", "compile", "trace_lower")
RATIO_LIBS = ("jax", "numpy", "floor")      # xform/<lib> ratios, where both are measured
COUNT_METRICS = ("break_even_n", "overhead_ratio")   # plain numbers, not times


def _ratios(metrics):
    out = {}
    for m, vals in metrics.items():
        x = vals.get("xform")
        if not isinstance(x, (int, float)):
            continue
        r = {}
        for other in RATIO_LIBS:
            y = vals.get(other)
            if isinstance(y, (int, float)) and y > 0:
                r[f"xform/{other}"] = x / y
        if r:
            out[m] = r
    return out


def _meta(ctx, quick):
    meta = {"mode": "quick" if quick else "full", "rounds": ctx.rounds,
            "target_s_per_round": ctx.target_s, "python": platform.python_version(),
            "platform": platform.platform(), "cpu_count": os.cpu_count(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "device_profile": {"name": ctx.profile.name, "peak_flops": ctx.profile.peak_flops,
                               "bandwidth": ctx.profile.bandwidth, "note": ctx.profile.note},
            "units": "seconds for times (steady = per call, median of rounds), bytes for "
                     "memory"}
    for name, L in ctx.libs.items():
        meta[f"{name}_version"] = L if isinstance(L, str) else L.version
    try:
        from xform._src import lowering
        meta["xform_backend"] = lowering.default_backend()
    except Exception as e:  # noqa: BLE001
        meta["xform_backend"] = f"unavailable: {e}"
    if not isinstance(ctx.libs.get("jax"), str):
        import jax
        meta["jax_backend"] = jax.default_backend()
    return meta


def _clean(v):
    """JSON-safe: inf -> "inf", nan -> None."""
    if isinstance(v, float):
        return None if math.isnan(v) else ("inf" if math.isinf(v) else v)
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def run(quick: bool = False, json_path: str | None = "bench_results.json", only=None,
        rounds: int | None = None, profile=None, out=sys.stdout, clock: str = "wall") -> dict:
    """Run the suite, print tables and reports to ``out``, write JSON to ``json_path``
    (``None``: don't), return the results dict.  ``only``: substrings of case names."""
    from benchmarks import cases as C
    from benchmarks.libs import load_libs
    from benchmarks.timing import reason_of
    ctx = C.Ctx(load_libs(), quick=quick, rounds=rounds, profile=profile)
    t_start = time.perf_counter()
    results = {"meta": _meta(ctx, quick), "cases": {}}
    results["meta"]["steady_clock"] = clock
    for name, group, desc, metrics, libs, fn in C.CASES:
        if only and not any(s in name for s in only):
            continue
        t0 = time.perf_counter()
        try:
            rec = fn(ctx)
        except Exception as e:  # noqa: BLE001   a broken case never stops the suite
            rec = {"params": {}, "metrics": {}, "skipped": {lib: reason_of(e) for lib in libs}}
        for m in metrics:
            rec["metrics"].setdefault(m, {})
        rec.update(group=group, description=desc, libs=list(libs),
                   ratios=_ratios({m: v for m, v in rec["metrics"].items() if m in metrics}),
                   wall_s=time.perf_counter() - t0)
        results["cases"][name] = rec
        print(format_case(name, rec), file=out, flush=True)
    results["meta"]["total_wall_s"] = time.perf_counter() - t_start
    print("\n== summary: ratios (xform/JAX, xform/NumPy, xform/floor; below 1: xform "
          "faster or smaller)\n" + summary_table(results), file=out)
    print(f"\ntotal: {results['meta']['total_wall_s']:.1f} s", file=out)
    results = _clean(results)
    if json_path:
        with open(json_path, "w") as fh:
            json.dump(results, fh, indent=1)
        print(f"results written to {json_path}", file=out)
    return results


# ----------------------------------------------------------------- printing


def _fmt(metric, v):
    if v is None:
        return "-"
    if metric in COUNT_METRICS:
        return f"{v:.3g}"
    if metric.startswith(("residual", "peak")):
        return f"{v / 2**20:.2f} MiB" if v >= 2**20 else f"{v / 1024:.1f} KiB"
    if v < 1e-3:
        return f"{v * 1e6:.2f} us"
    if v < 1:
        return f"{v * 1e3:.2f} ms"
    return f"{v:.2f} s"


def skipped_all(rec) -> bool:
    return set(rec.get("skipped", {})) >= set(rec["libs"]) and not any(
        v for v in rec["metrics"].values())


def format_case(name, rec) -> str:
    libs = rec["libs"]
    lines = [f"\n== {name}: {rec['description']}"]
    if rec.get("params"):
        shown = {k: v for k, v in rec["params"].items() if k != "method"}
        if shown:
            lines.append(f"   params: {shown}")
        if "method" in rec["params"]:
            lines.append(f"   method: {rec['params']['method']}")
    if skipped_all(rec):
        pass
    elif "text" in rec:
        lines.append("\n".join("   " + ln for ln in rec["text"].splitlines()))
    else:
        keys = ["xform/jax", "xform/numpy"] + (["xform/floor"] if "floor" in libs else [])
        head = f"   {'metric':<26}" + "".join(f"{lib:>13}" for lib in libs) \
            + "".join(f"{k.replace('numpy', 'np'):>12}" for k in keys)
        lines.append(head)
        for m, vals in rec["metrics"].items():
            r = rec["ratios"].get(m, {})
            row = f"   {m:<26}" + "".join(f"{_fmt(m, vals.get(lib)):>13}" for lib in libs)
            row += "".join(f"{r[k]:>11.2f}x" if k in r else f"{'':>12}" for k in keys)
            lines.append(row)
    if rec.get("growth_table"):
        lines.append("\n".join("   " + ln for ln in rec["growth_table"].splitlines()))
    skipped = rec.get("skipped", {})
    if len(skipped) > 1 and len(set(skipped.values())) == 1 and set(skipped) >= set(libs):
        lines.append(f"   all libraries: skipped: {next(iter(skipped.values()))}")
    else:
        for lib, why in skipped.items():
            lines.append(f"   {lib}: skipped: {why}")
    return "\n".join(lines)


def summary_table(results) -> str:
    """A Markdown table of every case's ratios (what ``docs/performance.md``'s table is
    regenerated from: ``python -m benchmarks.summary bench_results.json``)."""
    rows = ["| case | metric | xform/JAX | xform/NumPy | xform/floor |",
            "|---|---|---:|---:|---:|"]
    for name, rec in results["cases"].items():
        for m, r in rec.get("ratios", {}).items():
            cells = [f"{r[k]:.2f}" if isinstance(r.get(k), (int, float)) else "-"
                     for k in ("xform/jax", "xform/numpy", "xform/floor")]
            rows.append(f"| {name} | {m} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def format_results(results) -> str:
    return "\n".join(format_case(n, r) for n, r in results["cases"].items())

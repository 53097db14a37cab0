"""``python -m benchmarks.tier_study [--draws N] [--programs N] [--json PATH]``: the
bit-identity study behind tiered compilation.

Every program below is compiled twice by XLA from the same StableHLO text -- once in
the quick tier (``lowering.runtime.QUICK_TIER_OPTIONS``: backend optimization level 0)
and once in the optimized tier (XLA's defaults) -- run on the same inputs, and the
outputs compared bit for bit (bytes, so a NaN's payload and the sign of zero count).
The programs:

* ``benchmark``: the benchmark suite's programs (elementwise chains, the MLP training
  step, per-example gradients, the scan RNN, the transformer block, the CNN training
  step, FFT, linear algebra, random sampling, the large-program loop, transformer stack
  and pytree update at small sizes);
* ``random``: ``tests/program_gen.py``'s random structured programs (control flow,
  indexing, custom rules, checkpoint, nested jit) under jit, grad, vmap, jvp and
  hessian, drawn deterministically;
* ``verifier``: every lowered primitive's one-equation program on the inputs its
  verifier generator draws (``tests/test_verifier.py``), deterministically.

It prints how many programs differ, which primitives the differing one-equation
programs hold, and writes the details to JSON.  It needs the test dependencies
(hypothesis) and is run from the repository root.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _setup():
    for p in (ROOT, os.path.join(ROOT, "tests")):
        if p not in sys.path:
            sys.path.insert(0, p)
    import xform
    # Study executables are never written to (or read from) the persistent cache.
    xform.config.update("jax_enable_compilation_cache", False)


def _flat(tree):
    from xform.tree_util import tree_leaves
    return tree_leaves(tree)


def compare_closed(closed, args):
    """(identical?, detail) of ``closed`` compiled in both tiers and run on ``args``."""
    from xform._src import lowering
    from xform._src.interpreters import passes
    prog = passes.simplify(closed)
    outs = {}
    times = {}
    for tier in ("quick", "optimized"):
        t0 = time.perf_counter()
        c = lowering.compile_jaxpr(prog, tier=tier)
        times[tier] = time.perf_counter() - t0
        outs[tier] = [np.asarray(o) for o in c(*args)]
    diffs = []
    for i, (q, o) in enumerate(zip(outs["quick"], outs["optimized"])):
        if q.dtype != o.dtype or q.shape != o.shape:
            diffs.append({"output": i, "why": f"type {q.dtype}{q.shape} vs {o.dtype}{o.shape}"})
            continue
        qb, ob = np.ascontiguousarray(q), np.ascontiguousarray(o)
        if qb.tobytes() != ob.tobytes():
            d = {"output": i, "dtype": str(q.dtype), "shape": list(q.shape)}
            if q.dtype.kind in "fc":
                with np.errstate(all="ignore"):
                    qf = q.astype(np.complex128 if q.dtype.kind == "c" else np.float64)
                    of = o.astype(qf.dtype)
                    neq = ~((qf == of) | (np.isnan(qf) & np.isnan(of)))
                    d["elements_differing"] = int(np.sum(neq | (np.signbit(qf.real)
                                                                != np.signbit(of.real))))
                    scale = np.maximum(np.abs(of), np.finfo(np.float64).tiny)
                    rel = np.where(neq, np.abs(qf - of) / scale, 0)
                    d["max_rel_diff"] = float(np.nanmax(rel)) if rel.size else 0.0
            else:
                d["elements_differing"] = int(np.sum(q != o))
            diffs.append(d)
    return not diffs, {"diffs": diffs, "compile_s": times}


def compare_fn(fn, args):
    """Trace ``fn`` with jit (constants hoisted into leading arguments) and compare."""
    import xform
    traced = xform.jit(fn).trace(*args)
    entry = traced._entry
    flat = list(entry.const_args) + _flat(args)
    return compare_closed(traced.jaxpr, flat)


def _prims_of(closed):
    from xform._src.interpreters import ir
    names = set()

    def walk(j):
        for e in j.eqns:
            names.add(e.primitive.name)
            for _, sub in ir.subjaxprs_of_params(e.params):
                walk(sub)
    walk(closed.jaxpr)
    return names


# ----------------------------------------------------------------- the three sources


def benchmark_programs():
    """name -> (fn, args) for the benchmark suite's programs (small sizes)."""
    import xform
    from benchmarks import cases as C
    from benchmarks import large
    from benchmarks.libs import _xform_lib
    L = _xform_lib(False)
    rng = np.random.default_rng(0)

    def r(*s, scale=1.0):
        return (rng.standard_normal(s) * scale).astype(np.float32)
    progs = {}
    for n in (30, 300):
        for v in range(3):
            progs[f"chain_{n}_v{v}"] = (C.chain_program(n, v)(L), [r(8)])
    mlp = [(r(a, b, scale=1 / math.sqrt(a)), r(b, scale=0.1))
           for a, b in zip([784, 128, 128], [128, 128, 10])]
    x, y = r(32, 784), np.eye(10, dtype=np.float32)[rng.integers(0, 10, 32)]

    def step(p, xx, yy):
        return C.sgd(p, xform.grad(lambda q: C.mlp_loss(L, q, xx, yy))(p))
    progs["mlp_train_step"] = (step, [mlp, x, y])
    pe = [(r(a, b, scale=1 / math.sqrt(a)), r(b, scale=0.1)) for a, b in ((64, 128), (128, 10))]
    progs["per_example_grads"] = (
        xform.vmap(xform.grad(lambda p, xi, yi: C._pe_loss(L, p, xi, yi)), in_axes=(None, 0, 0)),
        [pe, r(32, 64), np.eye(10, dtype=np.float32)[rng.integers(0, 10, 32)]])
    rnn = (r(128, 128, scale=1 / math.sqrt(128)), r(32, 128, scale=1 / math.sqrt(32)),
           r(128, scale=0.1))
    progs["scan_rnn_fwd_bwd"] = (xform.value_and_grad(lambda q, a, b: C._rnn_loss(L, q, a, b)),
                                 [rnn, r(16, 128, scale=0.1), r(50, 16, 32)])
    D = 64
    tp = (1 + r(D, scale=0.1), r(D, scale=0.1), r(D, 3 * D, scale=1 / 8), r(D, D, scale=1 / 8),
          1 + r(D, scale=0.1), r(D, scale=0.1), r(D, 4 * D, scale=1 / 8), r(4 * D, D, scale=1 / 16))
    progs["transformer_block"] = (lambda q, xx: C.transformer_block(L, q, xx, 4), [tp, r(32, D)])

    class _Ctx:
        def randn(self, *s, scale=1.0):
            return r(*s, scale=scale)
    cp = C.convnet_params(_Ctx(), 8)
    cx, cy = r(16, 8, 8, 1), np.eye(10, dtype=np.float32)[rng.integers(0, 10, 16)]
    progs["convnet_train_step"] = (
        lambda p, a, b: C._convnet_sgd(p, xform.grad(lambda q: C.convnet_loss(L, q, a, b))(p)),
        [cp, cx, cy])
    progs["fft_2^12"] = (lambda z: xform.numpy.fft.fft(z),
                         [(r(4096) + 1j * r(4096)).astype(np.complex64)])
    a = r(64, 64)
    spd = (a @ a.T + 64 * np.eye(64)).astype(np.float32)
    import xform.scipy.linalg as xsl
    progs["cho_solve_64"] = (lambda A, b: xsl.cho_solve(xsl.cho_factor(A), b), [spd, r(64, 4)])
    progs["svd_32"] = (lambda A: xform.numpy.linalg.svd(A), [r(32, 32)])
    progs["eigh_32"] = (lambda A: xform.numpy.linalg.eigh(A), [spd[:32, :32]])
    progs["batched_solve_8x16"] = (lambda A, b: xform.numpy.linalg.solve(A, b),
                                   [r(8, 16, 16) + 4 * np.eye(16, dtype=np.float32), r(8, 16, 1)])
    progs["random_normal_256x256"] = (
        lambda s: xform.random.normal(xform.random.PRNGKey(s), (256, 256)),
        [np.int32(3)])
    progs["large_loop_200"] = (large.loop_program(200)(L), large.loop_args(rng))
    progs["large_transformer_4"] = (large.transformer_stack()(L),
                                    large.transformer_args(rng, 4))
    progs["large_pytree_500"] = (large.tree_program()(L), [large.tree_params(rng, blocks=10)])
    return progs


def run_benchmarks(out):
    rows = {}
    for name, (fn, args) in benchmark_programs().items():
        try:
            import xform
            traced = xform.jit(fn).trace(*args)
            prims = _prims_of(traced.jaxpr)
            same, detail = compare_fn(fn, args)
            rows[name] = {"identical": same, "primitives": sorted(prims), **detail}
        except Exception as e:  # noqa: BLE001
            rows[name] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
        _progress(out, "benchmark", name, rows[name])
    return rows


def run_random(n_programs, out):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    import xform
    import program_gen as G
    ns = G.namespace(xform, xform.numpy, xform.lax, xform.ad_checkpoint)
    descs = []

    @settings(max_examples=n_programs, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(desc=G.programs(), seed=st.integers(0, 2 ** 16 - 1))
    def collect(desc, seed):
        descs.append((desc, seed))
    collect()
    rows = {}
    stacks = ("jit", "jit(grad)", "vmap", "jvp", "hessian")
    for i, (desc, seed) in enumerate(descs[:n_programs]):
        x, X, XX, t = G.inputs(seed)
        fns = G.stacks(ns, desc, None)
        for s in stacks:
            if s in ("jit(grad)", "hessian") and G.has_while(desc):
                continue
            name = f"program{i}/{s}"
            fn = fns[s]
            try:
                same, detail = compare_fn(lambda a, b, c, d, fn=fn: fn(a, b, c, d), [x, X, XX, t])
                import xform as _x
                prims = _prims_of(_x.jit(lambda a, b, c, d, fn=fn: fn(a, b, c, d))
                                  .trace(x, X, XX, t).jaxpr)
                rows[name] = {"identical": same, "primitives": sorted(prims), **detail}
            except Exception as e:  # noqa: BLE001
                rows[name] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
            _progress(out, "random", name, rows[name])
    return rows


def run_verifier(draws, out):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    import test_verifier as V
    from xform._src.interpreters import staging
    from xform._src.interpreters.core import ShapedArray
    from xform._src.interpreters.ir import ClosedJaxpr
    prims = V._prims()
    rows = {}
    for name in V.LOWERED:
        gen, _, _ = V.SPECS[name]
        prim = prims[name]
        results = []

        @settings(max_examples=draws, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(data=st.data())
        def check(data):
            params, args = gen(data, name)
            avals = [ShapedArray(np.shape(a), np.asarray(a).dtype) for a in args]
            try:
                prim.abstract_eval(*avals, **params)
            except (TypeError, ValueError):
                return

            def fun(*xs):
                o = prim.bind(*xs, **params)
                return list(o) if prim.multiple_results else [o]
            jaxpr, consts = staging.trace_to_jaxpr(fun, avals)
            try:
                same, detail = compare_closed(ClosedJaxpr(jaxpr, consts), list(args))
            except Exception as e:  # noqa: BLE001
                results.append({"error": f"{type(e).__name__}: {str(e)[:200]}"})
                return
            detail["inputs"] = ", ".join(f"{np.asarray(a).dtype}{np.shape(a)}" for a in args)
            detail["params"] = repr(params)[:300]
            results.append({"identical": same, **detail})
        try:
            check()
        except Exception as e:  # noqa: BLE001
            results.append({"error": f"{type(e).__name__}: {str(e)[:200]}"})
        ok = [r for r in results if "error" not in r]
        rows[name] = {"draws": len(ok), "differing": sum(not r["identical"] for r in ok),
                      "errors": len(results) - len(ok),
                      "examples": [r for r in results if not r.get("identical", True)][:3]}
        out.write(f"verifier {name:<28} draws {len(ok):>3}  differing "
                  f"{rows[name]['differing']:>3}\n")
        out.flush()
    return rows


def _progress(out, group, name, row):
    if "error" in row:
        status = "error: " + row["error"][:80]
    else:
        status = "identical" if row["identical"] else f"DIFFERS {row['diffs'][:1]}"
    out.write(f"{group} {name:<32} {status}\n")
    out.flush()


def summarize(res) -> str:
    lines = []
    for group in ("benchmark", "random"):
        rows = res.get(group, {})
        ok = [r for r in rows.values() if "error" not in r]
        diff = [n for n, r in rows.items() if "error" not in r and not r["identical"]]
        lines.append(f"{group}: {len(ok)} programs compared, {len(diff)} differ"
                     + (f" ({', '.join(diff[:12])}{', ...' if len(diff) > 12 else ''})"
                        if diff else "") + f"; {len(rows) - len(ok)} could not run")
        if diff:
            same_prims = set().union(*[set(r["primitives"]) for r in ok if r["identical"]] or [set()])
            diff_prims = set().union(*[set(rows[n]["primitives"]) for n in diff])
            lines.append(f"  primitives only in differing programs: "
                         f"{sorted(diff_prims - same_prims) or 'none'}")
    rows = res.get("verifier", {})
    if rows:
        n = sum(r["draws"] for r in rows.values())
        diff = {k: r for k, r in rows.items() if r["differing"]}
        lines.append(f"verifier: {len(rows)} primitives, {n} one-equation programs compared, "
                     f"{sum(r['differing'] for r in rows.values())} differ, in "
                     f"{len(diff)} primitives: {sorted(diff)}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.tier_study")
    ap.add_argument("--draws", type=int, default=4, help="verifier draws per primitive")
    ap.add_argument("--programs", type=int, default=20, help="random programs")
    ap.add_argument("--only", nargs="*", default=("benchmark", "random", "verifier"),
                    choices=("benchmark", "random", "verifier"))
    ap.add_argument("--json", default="tier_study.json")
    a = ap.parse_args(argv)
    _setup()
    from xform._src.lowering import runtime
    res = {"quick_tier_options": dict(runtime.QUICK_TIER_OPTIONS)}
    out = sys.stdout
    if "benchmark" in a.only:
        res["benchmark"] = run_benchmarks(out)
    if "random" in a.only:
        res["random"] = run_random(a.programs, out)
    if "verifier" in a.only:
        res["verifier"] = run_verifier(a.draws, out)
    print("\n== summary\n" + summarize(res))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1, default=str)
        print(f"details written to {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

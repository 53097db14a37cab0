"""The benchmark suite: ``python -m benchmarks --quick`` completes and its JSON has
every case and metric, each library carrying either a number or a skip reason.
No timing thresholds: only structure, consistency (ratios = quotients of the
reported values) and the harness's rules (warm-up outside the timed region,
rotation of the libraries, failures become reasons).

The quick-suite subprocess (~50 s on 2 cores) runs in the slow CI step; the default run
keeps the in-process harness tests below, including ``bench.run(quick=True)`` end to end
on one real case (``test_broken_case_is_reported_and_suite_completes``)."""
import json
import math
import os
import subprocess
import sys
import time

import pytest

import benchmarks as bench
from benchmarks import cases as C
from benchmarks import timing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _strict(s):
    raise ValueError(f"non-standard JSON constant {s}")


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "out.json"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--json", str(path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = path.read_text()
    return json.loads(text, parse_constant=_strict), proc.stdout


def _check_every_metric(res, stdout, names):
    for name in names:
        metrics = C.EXPECTED_METRICS[name]
        rec = res["cases"][name]
        assert rec["libs"] == list(C.CASE_LIBS[name])
        assert set(metrics) <= set(rec["metrics"]), name
        for m in metrics:
            for lib in rec["libs"]:
                has_value = rec["metrics"][m].get(lib) is not None
                reason = rec["skipped"].get(lib)
                assert has_value or (isinstance(reason, str) and reason.strip()), \
                    f"{name}/{m}/{lib}: neither a value nor a skip reason"
        assert name in stdout


def _check_values_and_ratios(res):
    for name, rec in res["cases"].items():
        for m, vals in rec["metrics"].items():
            if m == "dispatch_report":
                continue
            for lib, v in vals.items():
                assert isinstance(v, (int, float)) and math.isfinite(v) and v > 0, (name, m, lib)
        for m, rs in rec["ratios"].items():
            x = rec["metrics"][m]["xform"]
            for key, r in rs.items():
                other = key.split("/")[1]
                assert r == pytest.approx(x / rec["metrics"][m][other]), (name, m, key)


def _check_core_features(res, names):
    for name in names:
        rec = res["cases"][name]
        assert "xform" not in rec["skipped"], (name, rec["skipped"].get("xform"))
    comp = res["cases"]["compile/chain_30_ops"]
    for phase in ("trace", "lower", "compile", "first_call", "steady"):
        assert comp["metrics"][phase]["xform"] > 0
    assert comp["params"]["staged_equations"]["xform"] == 30


def _check_memory_case(res):
    rec = res["cases"]["memory/deep_mlp_residuals"]
    for lib in ("xform", "jax"):
        if lib in rec["metrics"]["residual_bytes"]:
            # Arguments are always saved; checkpointing can only drop activations.
            base = rec["metrics"]["residual_bytes"][lib]
            ck = rec["metrics"]["residual_bytes_checkpoint"][lib]
            assert rec["params"]["argument_bytes"] <= ck < base


def _check_dispatch_reports(res, stdout, names):
    for name in names:
        rep = res["cases"][name]["metrics"]["dispatch_report"]["xform"]
        assert rep["n_ops"] >= 6
        assert rep["overhead_ratio"] == pytest.approx(
            rep["n_ops"] * rep["t_dispatch"] / (rep["t_compute"] + rep["t_memory"]))
    assert stdout.count("dispatch report:") == len(names)
    assert "break-even N" in stdout


@pytest.mark.slow
def test_quick_suite_has_every_case_and_metric(quick_results):
    res, stdout = quick_results
    assert res["meta"]["mode"] == "quick"
    assert set(res["cases"]) == set(C.EXPECTED_METRICS)
    _check_every_metric(res, stdout, C.EXPECTED_METRICS)


@pytest.mark.slow
def test_quick_suite_values_and_ratios_consistent(quick_results):
    _check_values_and_ratios(quick_results[0])


@pytest.mark.slow
def test_quick_suite_core_features_measured(quick_results):
    """Features that exist today must be measured, not skipped (a regression guard:
    a case that silently breaks would otherwise turn into a skip)."""
    _check_core_features(quick_results[0], ("eager/add_f32[8]", "jit/one_arg",
                                            "compile/chain_30_ops", "steady/mlp_train_step",
                                            "memory/deep_mlp_residuals"))


@pytest.mark.slow
def test_memory_case_checkpoint_saves(quick_results):
    _check_memory_case(quick_results[0])


@pytest.mark.slow
def test_dispatch_reports_in_output(quick_results):
    res, stdout = quick_results
    _check_dispatch_reports(res, stdout, ("report/small_mlp_6op", "report/mlp_train_step"))


QUICK_SUBSET = ("eager/add_f32[8]", "compile/chain_30_ops", "memory/deep_mlp_residuals",
                "report/small_mlp_6op")


def test_quick_subset_in_process(tmp_path):
    """The default run's share of the quick suite: one case per group kind (eager, compile
    phases, memory, dispatch report) run in process with the same checks as above; the
    whole suite in a subprocess is the slow step's job."""
    import io
    out = io.StringIO()
    path = tmp_path / "r.json"
    bench.run(quick=True, json_path=str(path), only=list(QUICK_SUBSET), out=out)
    res, stdout = json.loads(path.read_text(), parse_constant=_strict), out.getvalue()
    assert res["meta"]["mode"] == "quick"
    assert set(res["cases"]) == set(QUICK_SUBSET)
    _check_every_metric(res, stdout, QUICK_SUBSET)
    _check_values_and_ratios(res)
    _check_core_features(res, QUICK_SUBSET[:3])
    _check_memory_case(res)
    _check_dispatch_reports(res, stdout, ("report/small_mlp_6op",))


# ----------------------------------------------------------------- harness, in process


def test_steady_warms_up_outside_the_timed_region_and_records_failures():
    calls = {"n": 0}

    def slow_first():
        calls["n"] += 1
        time.sleep(0.05 if calls["n"] == 1 else 0.001)

    def broken():
        raise ValueError("no such feature")
    times, first, skipped = timing.steady({"a": slow_first, "b": broken, "c": "absent lib"},
                                          rounds=3, target_s=0.003)
    assert first["a"] >= 0.05
    assert 0.001 <= times["a"] < 0.05          # the 50 ms warm-up is not in the median
    assert skipped["b"].startswith("ValueError: no such feature")
    assert skipped["c"] == "absent lib"


def test_rounds_rotate_library_order():
    seen = []
    timing.phases({k: (lambda r, k=k: seen.append((r, k)) or {"t": 1.0}) for k in "abc"}, 3)
    firsts = [k for r, k in seen if (r, k) == next(x for x in seen if x[0] == r)]
    assert firsts == ["a", "b", "c"]


def test_broken_case_is_reported_and_suite_completes(monkeypatch, tmp_path):
    def boom(ctx):
        raise RuntimeError("kaput")
    monkeypatch.setattr(C, "CASES", [("fake/boom", "fake", "always fails", ("steady",),
                                      ("xform", "jax"), boom)]
                        + [c for c in C.CASES if c[0] == "eager/add_f32[8]"])
    out = tmp_path / "r.json"
    with open(os.devnull, "w") as sink:
        res = bench.run(quick=True, json_path=str(out), out=sink)
    assert set(res["cases"]) == {"fake/boom", "eager/add_f32[8]"}
    rec = json.loads(out.read_text())["cases"]["fake/boom"]
    assert rec["skipped"]["xform"].startswith("RuntimeError: kaput")
    assert rec["metrics"] == {"steady": {}}


def test_missing_feature_is_a_skip_with_reason():
    ctx = C.Ctx({"xform": "xform not loaded"}, quick=True)
    with pytest.raises(timing.Skip, match="xform not loaded"):
        ctx.lib("xform", "jit")

    class NoScan:
        scan = None
        jit = object()
    ctx.libs["xform"] = NoScan()
    with pytest.raises(timing.Skip, match="has no scan"):
        ctx.lib("xform", "jit", "scan")


def test_cli_list_and_bad_args():
    from benchmarks.__main__ import main
    assert main(["--list"]) == 0
    with pytest.raises(SystemExit):
        main(["--rounds", "0"])


def test_summary_table_and_readme_rewrite():
    from benchmarks import summary, summary_table
    res = {"meta": {"mode": "full", "rounds": 15}, "cases": {
        "jit/one_arg": {"ratios": {"steady": {"xform/jax": 0.9, "xform/numpy": 3.0,
                                               "xform/floor": 1.2}}},
        "archetype/x": {"ratios": {"eager": {"xform/jax": 2.0}}}}}
    table = summary_table(res)
    assert "| jit/one_arg | steady | 0.90 | 3.00 | 1.20 |" in table
    assert "| archetype/x | eager | 2.00 | - | - |" in table
    text = f"head\n{summary.START}\nold table\n{summary.END}\ntail\n"
    out = summary.replace_table(text, table, res["meta"])
    assert out.startswith("head\n") and out.endswith(f"{summary.END}\ntail\n")
    assert "old table" not in out and table in out
    assert summary.replace_table(out, table, res["meta"]) == out      # idempotent


def test_dispatch_probe_stage_profile_runs():
    """``python -m benchmarks.dispatch_probe --stages``: every case has every stage, the
    generated call path is in use, and each stage's thunk runs (no timing thresholds)."""
    from benchmarks import dispatch_probe
    cases = dispatch_probe.stage_cases()
    assert set(cases) == {"one device arg", "4 args / 2 outputs", "numpy args",
                          "pytree params", "jit(grad(f))"}
    for name, thunks in cases.items():
        assert list(thunks) == ["floor", "+ wrap", "call path", "jit(f)(...)", "jax"]
        t = dispatch_probe.measure(thunks, rounds=1, round_s=0.001)
        assert all(v > 0 for v in t.values()), name
        out = thunks["call path"]()
        from xform._src.lowering.dispatch import MISS
        assert out is not MISS, name

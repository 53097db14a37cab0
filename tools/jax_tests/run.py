"""Run JAX's own jax.numpy / lax test files against xform and against real JAX, through
the same test layer (``jaxtest_layer``), and compare per-file pass counts.

    python tools/jax_tests/run.py --tests DIR [--lib jax,xform] [--cases 3]
                                  [--timeout 120] [--out DIR] [FILE ...]

DIR is the ``tests/`` directory of a JAX checkout at tag jax-v0.10.2 (fetched outside
this repository).  FILE names default to the files listed in FILES below.  Each file runs
in its own pytest process per library (``-p no:cacheprovider``, one process at a time);
results land in OUT/<lib>/<file>.xml and OUT/report.md (counts, and the failures of
tests JAX passes grouped by exception message).  ``--report-only`` rebuilds the report
from existing XML.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

FILES = [
    "lax_numpy_test.py", "lax_numpy_reducers_test.py", "lax_numpy_operators_test.py",
    "lax_numpy_indexing_test.py", "lax_numpy_einsum_test.py", "lax_numpy_vectorize_test.py",
    "lax_numpy_setops_test.py", "lax_numpy_ufuncs_test.py", "lax_test.py",
    "lax_autodiff_test.py", "lax_vmap_test.py", "lax_vmap_op_test.py",
    "lax_control_flow_test.py",
]


def run_file(lib, tests_dir, fname, out, cases, timeout, extra):
    os.makedirs(os.path.join(out, lib), exist_ok=True)
    xml = os.path.join(out, lib, fname.replace(".py", ".xml"))
    log = os.path.join(out, lib, fname.replace(".py", ".log"))
    env = dict(os.environ)
    env.update(
        JAXTESTS_LIB=lib, JAXTESTS_DIR=os.path.realpath(tests_dir),
        JAXTESTS_SKIPS=os.path.join(HERE, "skips.txt"), JAXTESTS_TIMEOUT=str(timeout),
        JAX_NUM_GENERATED_CASES=str(cases),
        PYTHONPATH=os.pathsep.join([HERE, REPO] + ([env["PYTHONPATH"]]
                                                    if env.get("PYTHONPATH") else [])))
    env.setdefault("JAX_PLATFORMS", "cpu")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "-p", "jaxtests_plugin", "--rootdir", tests_dir, f"--junitxml={xml}",
           fname] + list(extra)
    with open(log, "w") as f:
        rc = subprocess.call(cmd, cwd=tests_dir, env=env, stdout=f, stderr=subprocess.STDOUT)
    return rc


def outcomes(xml):
    """test id -> ('passed'|'failed'|'error'|'skipped', message)."""
    res = {}
    if not os.path.exists(xml):
        return res
    for tc in ET.parse(xml).getroot().iter("testcase"):
        tid = f"{tc.get('classname', '').split('.')[-1]}::{tc.get('name')}"
        state, msg = "passed", ""
        for child in tc:
            if child.tag in ("failure", "error", "skipped"):
                state = {"failure": "failed"}.get(child.tag, child.tag)
                msg = child.get("message") or (child.text or "")[:300]
                break
        if tid in res and res[tid][0] != "passed":
            continue
        res[tid] = (state, msg)
    return res


def _cause(msg):
    """A failure message reduced to its kind (numbers, shapes and names generalized)."""
    line = (msg or "").strip().splitlines()[0] if (msg or "").strip() else "(no message)"
    line = re.sub(r"0x[0-9a-f]+", "0x.", line)
    line = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", line)
    return line[:160]


def report(out, files, libs):
    rows, causes = [], collections.Counter()
    examples = {}
    for fname in files:
        res = {lib: outcomes(os.path.join(out, lib, fname.replace(".py", ".xml")))
               for lib in libs}
        row = [fname]
        for lib in libs:
            n = sum(1 for s, _ in res[lib].values() if s == "passed")
            row.append(f"{n}/{len(res[lib])}")
        if "jax" in res and "xform" in res:
            # a test the skip file names is out of both counts, whichever run skipped it
            listed = {t for lib in libs for t, (s, m) in res[lib].items()
                      if s == "skipped" and "jax-tests skip file" in (m or "")}
            jp = {t for t, (s, _) in res["jax"].items() if s == "passed" and t not in listed}
            both = {t for t in jp if res["xform"].get(t, ("missing",))[0] == "passed"}
            row.append(f"{len(both)}/{len(jp)}" + (f" ({100 * len(both) / len(jp):.1f}%)"
                                                  if jp else ""))
            for t in sorted(jp - both):
                state, msg = res["xform"].get(t, ("missing", "not run (file error?)"))
                c = _cause(msg)
                causes[c] += 1
                examples.setdefault(c, f"{fname}::{t}")
        rows.append(row)
    head = ["file"] + [f"{lib} passed/run" for lib in libs]
    if "jax" in libs and "xform" in libs:
        head.append("xform passes of JAX's passes")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    if causes:
        tot_j = tot_b = 0
        for r in rows:
            m = re.match(r"(\d+)/(\d+)", r[-1])
            tot_b += int(m.group(1)); tot_j += int(m.group(2))
        lines.append(f"\nTotal: xform passes {tot_b} of the {tot_j} cases JAX passes "
                     f"({100 * tot_b / max(tot_j, 1):.1f}%).\n")
        lines.append("Failures (in xform, of tests JAX passes) by cause:\n")
        for c, n in causes.most_common(60):
            lines.append(f"- {n} x `{c}` (e.g. {examples[c]})")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)
    return text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", required=True, help="JAX's tests/ directory (jax-v0.10.2)")
    ap.add_argument("--lib", default="jax,xform")
    ap.add_argument("--cases", type=int, default=3, help="JAX_NUM_GENERATED_CASES")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per test")
    ap.add_argument("--out", default="/tmp/jax_tests_out")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("files", nargs="*")
    args, extra = ap.parse_known_args(argv)
    libs = args.lib.split(",")
    files = args.files or [f for f in FILES if os.path.exists(os.path.join(args.tests, f))]
    if not args.report_only:
        for fname in files:
            for lib in libs:
                rc = run_file(lib, args.tests, fname, args.out, args.cases, args.timeout,
                              extra)
                print(f"{lib:6s} {fname}: pytest exit {rc}", flush=True)
    print(report(args.out, files, libs))


if __name__ == "__main__":
    main()

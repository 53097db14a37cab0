"""Run the code cells of JAX's documentation on real JAX and on xform, cell by cell.

    python tools/jax_docs/run.py [--docs DIR] [--pages key-concepts jaxpr ...] [--show N]

``--docs`` is a checkout of JAX's ``docs/`` folder at the release the oracle has
(default ``/tmp/jaxtests/docs``; e.g. ``git archive jax-v0.10.2 docs`` of JAX's repository).
Nothing of JAX's is copied here: the cells are read from those files.

For each page, its ````{code-cell}```` blocks (MyST markdown; the notebooks' paired ``.md``)
are run in order in one fresh process per library, like a notebook: the printed stdout
of each cell plus the repr of its last expression (unless the cell ends in ``;``), and
the type name of any exception it raises (execution goes on with the next cell). The
xform process runs ``import xform; xform.compat.alias_jax()`` before any cell, so the
cells' ``import jax`` is xform's. Both processes seed NumPy's and ``random``'s global
generators with 0 before the first cell (some cells draw unseeded NumPy data) and set
``MPLBACKEND=Agg``.

A cell matches when both raise the same exception type (or neither raises) and both
outputs are equal after this normalisation, applied identically to both:

- memory addresses ``0x`` + 6 or more hex digits become ``0x?`` (object reprs);
- trailing whitespace on each line is removed.

Nothing else is rewritten (timings only appear in ``%timeit``/``%time`` cells, which are
counted apart). Cells with IPython magics (lines starting with ``%`` or ``!``) are run
with those lines removed (so later cells see their definitions) and counted as
``magic``, not compared.

Cells that do not match are split in two: ``roundoff`` when the outputs differ only in
the printed digits of numbers, each pair within a relative 2e-6 (a few float32 ulps;
``ROUNDOFF_RTOL``) and the text between numbers equal up to whitespace (array reprs
re-pad columns to the widest number), and ``differ`` otherwise. Roundoff cells are
not counted as matches.

Cells that raise the same ``ModuleNotFoundError`` under both (a module the cell needs,
such as ``tensorflow``, is not installed; ``--pythonpath`` can add some) are counted
as ``no-module``, not compared.

Prints per page: cells, magic cells, no-module cells, cells that match, roundoff cells,
cells that differ; then each roundoff and differing cell with the first lines of both outputs. ``--json OUT`` saves everything.
"""
from __future__ import annotations

import argparse
import ast
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

PAGES = [
    "key-concepts", "jit-compilation", "automatic-differentiation",
    "automatic-vectorization", "random-numbers", "pytrees", "control-flow",
    "stateful-computations",
    # advanced-autodiff is a table of contents of these three pages at 0.10.2
    "higher-order", "jacobian-vector-products", "complex-differentiation",
    "gradient-checkpointing", "external-callbacks", "jaxpr",
    "notebooks/Common_Gotchas_in_JAX", "notebooks/autodiff_cookbook",
    "notebooks/Custom_derivative_rules_for_Python_code", "notebooks/vmapped_log_probs",
    "notebooks/thinking_in_jax", "jep/9407-type-promotion", "debugging/flags",
    "custom_pytrees",
]

_FENCE = re.compile(r"^(`{3,})\{code-cell\}")
_ADDR = re.compile(r"0x[0-9a-fA-F]{6,}")


def extract_cells(path: Path) -> list[str]:
    """The source of each ``{code-cell}`` block of a MyST page, in order."""
    cells, lines, i = [], path.read_text().splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, body, i = m.group(1), [], i + 1
        while i < len(lines) and lines[i].rstrip() != fence:
            body.append(lines[i])
            i += 1
        i += 1
        # cell options: a leading ---/--- YAML block or leading ``:key: value`` lines
        if body and body[0].strip() == "---":
            end = next((k for k in range(1, len(body)) if body[k].strip() == "---"), 0)
            body = body[end + 1:]
        while body and re.match(r"^:\w[\w-]*:", body[0]):
            body = body[1:]
        cells.append("\n".join(body))
    return cells


_NUM = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
ROUNDOFF_RTOL, ROUNDOFF_ATOL = 2e-6, 1e-7


def only_roundoff(a: str, b: str) -> bool:
    """Do ``a`` and ``b`` differ only in the last digits of the numbers they print?"""
    na, nb = _NUM.findall(a), _NUM.findall(b)
    if len(na) != len(nb) or re.sub(r"\s", "", _NUM.sub("#", a)) != re.sub(r"\s", "", _NUM.sub("#", b)):
        return False
    return all(abs(float(x) - float(y)) <= ROUNDOFF_ATOL + ROUNDOFF_RTOL * max(abs(float(x)), abs(float(y)))
               for x, y in zip(na, nb))


def normalise(text: str) -> str:
    text = _ADDR.sub("0x?", text)
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")


# --------------------------------------------------------------------------- worker

def _strip_magics(src: str) -> tuple[str, bool]:
    lines = src.splitlines()
    if lines and lines[0].startswith("%%"):
        return "\n".join(lines[1:]), True
    kept = [l for l in lines if not l.lstrip().startswith(("%", "!"))]
    return "\n".join(kept), len(kept) != len(lines)


def _shown(value) -> str:
    """What a notebook shows for ``value``: an IPython display object's data (the HTML of
    ``display.HTML(...)``, ...), otherwise the repr."""
    if type(value).__module__.startswith("IPython.") and hasattr(value, "data"):
        return str(value.data)
    return repr(value)


def _patch_ipython_display() -> None:
    try:
        import IPython.display
    except ImportError:
        return
    def display(*objs, **_):
        for obj in objs:
            print(_shown(obj))
    IPython.display.display = display


def _run_cell(src: str, ns: dict) -> tuple[str, str | None, str]:
    out = io.StringIO()
    old = sys.stdout
    sys.stdout = out
    exc = msg = None
    try:
        tree = ast.parse(src)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr) and not src.rstrip().endswith(";"):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<cell>", "exec"), ns)
        if last is not None:
            value = eval(compile(last, "<cell>", "eval"), ns)
            if value is not None:
                print(_shown(value))
        jax = sys.modules.get("jax")
        if jax is not None and hasattr(jax, "effects_barrier"):
            jax.effects_barrier()
    except BaseException as e:  # noqa: BLE001 - a cell may raise anything, even SystemExit
        exc = type(e).__name__
        msg = (str(e).splitlines() or [""])[0][:300]
    finally:
        sys.stdout = old
    return out.getvalue(), exc, msg or ""


def worker(cells_file: str, lib: str, out_file: str) -> None:
    cells = json.loads(Path(cells_file).read_text())
    if lib == "xform":
        import xform
        xform.compat.alias_jax()
        import jax
        assert Path(jax.__file__).parent == Path(xform.__file__).parent, "alias did not take"
    import random
    import numpy as np
    np.random.seed(0)
    random.seed(0)
    _patch_ipython_display()
    ns: dict = {"__name__": "__main__"}
    results = []
    for src in cells:
        code, magic = _strip_magics(src)
        try:
            output, exc, msg = _run_cell(code, ns)
        except Exception:  # noqa: BLE001 - the harness itself failed
            output, exc, msg = traceback.format_exc(), "HarnessError", ""
        results.append({"output": output, "exc": exc, "msg": msg, "magic": magic})
        Path(out_file).write_text(json.dumps(results))  # partial results survive a crash


# --------------------------------------------------------------------------- driver

def run_page(docs: Path, page: str, lib: str, timeout: int,
             extra_path: str | None = None) -> list[dict]:
    cells = extract_cells(docs / f"{page}.md")
    with tempfile.TemporaryDirectory() as tmp:
        cf, of = Path(tmp) / "cells.json", Path(tmp) / "out.json"
        cf.write_text(json.dumps(cells))
        env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0")
        path = [extra_path] if extra_path else []
        if lib == "xform":  # this checkout's xform, whatever the cwd
            path.insert(0, str(Path(__file__).resolve().parents[2]))
        env["PYTHONPATH"] = os.pathsep.join(path + [env.get("PYTHONPATH", "")])
        try:
            proc = subprocess.run([sys.executable, __file__, "--worker", str(cf), lib, str(of)],
                                  cwd=tmp, env=env, timeout=timeout, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
            why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        except subprocess.TimeoutExpired:
            why = f"page timed out after {timeout} s"
        results = json.loads(of.read_text()) if of.exists() else []
    while len(results) < len(cells):  # the process died or timed out here
        results.append({"output": "", "exc": "ProcessDied", "msg": why, "magic": False})
    for src, r in zip(cells, results):
        r["source"] = src
    return results


def compare(jr: list[dict], xr: list[dict]) -> dict:
    same, roundoff, differ, magic, unavailable = [], [], [], [], []
    for k, (a, b) in enumerate(zip(jr, xr)):
        ta, tb = normalise(a["output"]), normalise(b["output"])
        if a["magic"]:
            magic.append(k)
        elif a["exc"] == b["exc"] == "ModuleNotFoundError" and a["msg"] == b["msg"]:
            unavailable.append(k)
        elif a["exc"] == b["exc"] and ta == tb:
            same.append(k)
        elif a["exc"] == b["exc"] and only_roundoff(ta, tb):
            roundoff.append(k)
        else:
            differ.append(k)
    return {"cells": len(jr), "magic": magic, "unavailable": unavailable, "same": same,
            "roundoff": roundoff, "differ": differ}


def _head(r: dict, n: int) -> str:
    lines = normalise(r["output"]).splitlines()
    text = "\n".join("      | " + l[:110] for l in lines[:n])
    if len(lines) > n:
        text += f"\n      | ... ({len(lines) - n} more lines)"
    if r["exc"]:
        text += f"\n      ! {r['exc']}: {r['msg'][:150]}"
    return text or "      (no output)"


def _row(page: str, r: list[int]) -> None:
    print(f"{page:50s} cells {r[0]:3d}  magic {r[1]:2d}  no-module {r[2]:2d}  "
          f"match {r[3]:3d}  roundoff {r[4]:2d}  differ {r[5]:2d}", flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(*sys.argv[2:5])
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", default="/tmp/jaxtests/docs")
    p.add_argument("--pages", nargs="*", default=PAGES)
    p.add_argument("--timeout", type=int, default=900, help="seconds per page per library")
    p.add_argument("--show", type=int, default=6, help="output lines shown per differing cell")
    p.add_argument("--pythonpath", help="a folder of the cells' own dependencies (pandas, "
                   "IPython, networkx for the type-promotion page), put on both sys.paths")
    p.add_argument("--json", help="write all results here")
    p.add_argument("--rescore", help="compare the results saved by --json instead of running")
    args = p.parse_args()
    docs = Path(args.docs)
    saved = json.loads(Path(args.rescore).read_text()) if args.rescore else {}
    report, totals = {}, [0, 0, 0, 0, 0, 0]
    for page in (saved or args.pages):
        if page in saved:
            jr, xr = saved[page]["jax"], saved[page]["xform"]
        elif (docs / f"{page}.md").exists():
            jr = run_page(docs, page, "jax", args.timeout, args.pythonpath)
            xr = run_page(docs, page, "xform", args.timeout, args.pythonpath)
        else:
            print(f"{page}: not in {docs}")
            continue
        c = compare(jr, xr)
        report[page] = {"jax": jr, "xform": xr, **c}
        row = [c["cells"], len(c["magic"]), len(c["unavailable"]), len(c["same"]),
               len(c["roundoff"]), len(c["differ"])]
        totals = [t + v for t, v in zip(totals, row)]
        _row(page, row)
    _row("TOTAL", totals)
    compared = totals[0] - totals[1] - totals[2]
    for n, what in ((totals[3], "match"), (totals[3] + totals[4], "match or roundoff")):
        print(f"{what}: {n}/{compared} = {100.0 * n / max(compared, 1):.1f}% of the cells "
              f"compared (magic cells and cells needing a missing module apart)")
    for kind in ("roundoff", "differ"):
        for page, r in report.items():
            for k in r[kind]:
                src = r["jax"][k]["source"].strip().splitlines()
                print(f"\n--- {kind}: {page} cell {k}: {src[0][:100] if src else ''}")
                print("  jax:\n" + _head(r["jax"][k], args.show))
                print("  xform:\n" + _head(r["xform"][k], args.show))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))

if __name__ == "__main__":
    main()

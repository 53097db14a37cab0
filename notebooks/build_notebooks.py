"""Build (and execute) the research notebooks from the cell lists below.

Why a generator: notebooks are JSON, hard to review and to edit by hand.  The
source of truth is plain Python (one function per notebook at the end of this
file, returning its markdown and code cells); this script turns it into
``.ipynb`` files with nbformat, runs them top to bottom with nbclient and saves
them *with* their outputs, so a code host renders results and plots.

    python notebooks/build_notebooks.py            # build + execute all
    python notebooks/build_notebooks.py 02 04      # only notebooks whose name contains 02 / 04
    python notebooks/build_notebooks.py --no-execute

``execute_notebook`` is also what ``tests/test_notebooks.py`` uses: the kernel is
the *current* interpreter (``sys.executable -m ipykernel_launcher``), never an
installed kernel spec, and it imports the same ``xform`` as the caller.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import sys
import textwrap
import time

HERE = pathlib.Path(__file__).resolve().parent

__all__ = ["execute_notebook", "build", "NOTEBOOKS"]


def _kernel_manager_class():
    """A KernelManager whose kernel spec is ``sys.executable -m ipykernel_launcher``.

    Installed kernel specs (``python3`` from a system Jupyter, or the one a wheel
    ships with ``argv: ["python", ...]``) may point at another interpreter; this
    one cannot."""
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import KernelManager

    class CurrentInterpreterKernelManager(KernelManager):
        @property
        def kernel_spec(self):
            return KernelSpec(argv=[sys.executable, "-m", "ipykernel_launcher", "-f",
                                    "{connection_file}"],
                              display_name=f"Python ({sys.executable})", language="python",
                              resource_dir=str(HERE))

    return CurrentInterpreterKernelManager


def _kernel_env():
    """The caller's environment, plus the directory ``xform`` was imported from on
    PYTHONPATH (a source checkout or site-packages: the kernel sees the same code),
    a headless matplotlib and no hypothesis database writes next to the notebooks."""
    env = dict(os.environ)
    spec = importlib.util.find_spec("xform")
    if spec is not None and spec.origin:
        root = str(pathlib.Path(spec.origin).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in
                                             env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("MPLBACKEND", "Agg")
    return env


def execute_notebook(nb, cwd=HERE, timeout=120):
    """Run ``nb`` (an nbformat NotebookNode) in place, top to bottom, with a
    per-cell ``timeout`` (s).  Raises ``nbclient.exceptions.CellExecutionError``
    naming the cell and traceback when a cell fails."""
    from nbclient import NotebookClient
    km = _kernel_manager_class()(kernel_name="python3")
    client = NotebookClient(nb, km=km, timeout=timeout, allow_errors=False,
                            resources={"metadata": {"path": str(cwd)}})
    client.execute(env=_kernel_env(), cwd=str(cwd))
    return nb


NOTEBOOKS = ("01_quickstart", "02_dispatch_tax", "03_property_testing",
             "04_rematerialization", "05_the_ir")


def make_notebook(cells):
    import nbformat
    from nbformat import v4
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, src in cells:
        nb.cells.append(v4.new_markdown_cell(src) if kind == "md" else v4.new_code_cell(src))
    nbformat.validate(nb)
    return nb


def build(names=(), execute=True, timeout=120):
    import nbformat
    table = _CELLS
    chosen = [n for n in NOTEBOOKS if not names or any(s in n for s in names)]
    for name in chosen:
        nb = make_notebook(table[name]())
        t0 = time.perf_counter()
        if execute:
            execute_notebook(nb, HERE, timeout)
        # stable cell ids, so regenerating gives small diffs
        for i, cell in enumerate(nb.cells):
            cell["id"] = f"{name[:2]}-{i:03d}"
        nbformat.write(nb, HERE / f"{name}.ipynb")
        print(f"{name}.ipynb: {len(nb.cells)} cells"
              + (f", executed in {time.perf_counter() - t0:.1f} s" if execute else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="substrings of notebook names to build")
    ap.add_argument("--no-execute", action="store_true")
    ap.add_argument("--timeout", type=int, default=120, help="per-cell timeout (s)")
    a = ap.parse_args(argv)
    build(a.names, execute=not a.no_execute, timeout=a.timeout)


# ===================================================================== the notebooks
# Each function returns [("md" | "code", source), ...].  Keep every notebook well
# under a minute on 2 CPU cores: tests/test_notebooks.py runs them all.


def md(s):
    return ("md", textwrap.dedent(s).strip("\n"))


def code(s):
    return ("code", textwrap.dedent(s).strip("\n"))

#@@CELLS@@

_CELLS = {"01_quickstart": quickstart, "02_dispatch_tax": dispatch_tax,
          "03_property_testing": property_testing, "04_rematerialization": rematerialization,
          "05_the_ir": the_ir}


if __name__ == "__main__":
    main()

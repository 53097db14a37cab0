"""Execute every notebook in notebooks/ top to bottom and fail on any cell error.

The notebooks are documentation with committed outputs; this keeps them from
rotting.  Each runs in a fresh kernel of the *current* interpreter (see
``notebooks/build_notebooks.py:execute_notebook``: no installed kernel spec, no
network), with a per-cell timeout.  They are kept small enough (well under a
minute each on 2 cores) to run in CI.  The default run executes the cheap ones (a few
seconds each: the quickstart, property testing, the IR, many devices); the others (8-20 s
each on 2 cores) run in the slow step -- the features they show have their own fast tests
(test_profile, test_checkpoint, test_checkpointing/test_export, test_cnn_demo,
test_scipy_linalg, test_mixed_precision).
"""
import importlib.util
import pathlib
import time

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")
pytest.importorskip("sklearn")

NB_DIR = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 120  # s


def _builder():
    spec = importlib.util.spec_from_file_location("xform_build_notebooks",
                                                  NB_DIR / "build_notebooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_all_listed_notebooks_exist():
    names = {p.stem for p in NOTEBOOKS}
    assert set(_builder().NOTEBOOKS) <= names, "run notebooks/build_notebooks.py"


def test_committed_notebooks_have_outputs():
    """Readers on a code host see results: every code cell that ran has outputs
    recorded, and nothing recorded an error."""
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(c.execution_count for c in code), f"{path.name} was not executed"
        for c in code:
            assert not any(o.get("output_type") == "error" for o in c.outputs), \
                f"{path.name}: committed output holds an error"


FAST_NOTEBOOKS = {"01_quickstart", "03_property_testing", "05_the_ir", "14_many_devices"}


@pytest.mark.parametrize("path", [p if p.stem in FAST_NOTEBOOKS else
                                  pytest.param(p, marks=pytest.mark.slow) for p in NOTEBOOKS],
                         ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, record_property):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:            # run from a clean slate, not the committed outputs
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    t0 = time.perf_counter()
    _builder().execute_notebook(nb, cwd=NB_DIR, timeout=CELL_TIMEOUT)
    record_property("seconds", round(time.perf_counter() - t0, 1))
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.get("output_type") == "error"]
    assert not errors, errors[0].get("evalue")

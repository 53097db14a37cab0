"""The JAX ecosystem on xform: each library's README-style usage, run unchanged under
``python -m xform.run`` (``import jax`` aliased to xform) and under real JAX, in two
processes (the alias and real JAX cannot share one), with the same seeds.

Every script in ``tests/ecosystem/`` prints its results as one ``ECOSYSTEM-RESULT`` JSON
line (see ``_report.py``); the results must agree to float32 rounding, except the
MCMC summaries, which may differ within sampling error once any bit of a trajectory
differs. How to run the libraries' own test suites is in docs/compatibility.md."""
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).parent / "ecosystem"
SCRIPTS = sorted(p.name for p in HERE.glob("*.py") if not p.name.startswith("_"))

# result name -> absolute tolerance where agreement is statistical, not numerical
SAMPLING_TOLERANCE = {"mcmc_mu_mean": 2.0, "mcmc_tau_mean": 3.0, "mcmc_loc_mean": 1.0}


def _run(script, under_xform):
    cmd = [sys.executable] + (["-m", "xform.run"] if under_xform else []) + [script]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(HERE), str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")]),
        JAX_PLATFORMS="cpu", PYTHONWARNINGS="ignore")
    p = subprocess.run(cmd, cwd=HERE, env=env, capture_output=True, text=True, timeout=900)
    lines = [l for l in p.stdout.splitlines() if l.startswith("ECOSYSTEM-RESULT ")]
    assert p.returncode == 0 and lines, (
        f"{script} {'under xform' if under_xform else 'under JAX'} failed "
        f"(exit {p.returncode}):\n{p.stderr[-4000:]}")
    return json.loads(lines[-1][len("ECOSYSTEM-RESULT "):])


# What still stops a library on xform (strict: once it runs and agrees, the entry must go).
BLOCKED = {
}


@pytest.mark.parametrize("script", [
    pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=f"needs {BLOCKED[s]}"))
    if s in BLOCKED else s for s in SCRIPTS])
def test_library_usage_matches_jax(script):
    with ThreadPoolExecutor(2) as pool:
        want, got = pool.map(lambda x: _run(script, x), (False, True))
    assert sorted(got) == sorted(want)
    for name, w in want.items():
        g = got[name]
        assert (g["dtype"], g["shape"]) == (w["dtype"], w["shape"]), name
        gv, wv = np.array(g["values"]), np.array(w["values"])
        if name in SAMPLING_TOLERANCE:
            np.testing.assert_allclose(gv, wv, atol=SAMPLING_TOLERANCE[name], err_msg=name)
        else:
            np.testing.assert_allclose(gv, wv, rtol=2e-5, atol=1e-6, err_msg=name)


def test_scripts_exist_for_every_library():
    libs = {s.split("_")[0] for s in SCRIPTS}
    assert libs >= {"equinox", "flax", "haiku", "numpyro", "chex", "orbax", "optax",
                    "distrax", "blackjax", "diffrax", "jaxtyping", "jaxopt"}

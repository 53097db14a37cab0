"""What an install puts into site-packages, and the names old pickles use.

The repository keeps the engine's layers as top-level folders, but an installed xform
must add only ``xform`` as a top-level name (the layers install as ``xform._src.*``).
Arrays pickled before that move name ``interpreters.core._rebuild_array``: they still
load, without shadowing a user's own package called ``interpreters``.
"""
import os
import pathlib
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import xform.numpy as xnp

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _run(code, cwd, extra_path=None):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if extra_path:
        env["PYTHONPATH"] = str(extra_path)
    return subprocess.run([sys.executable, "-c", code], cwd=str(cwd), env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_wheel_installs_only_xform(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                          "-q", "-w", str(tmp_path), str(ROOT)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = tmp_path.glob("xform-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"xform"}, tops
    for f in ("xform/_src/interpreters/core.py", "xform/_src/primitives/elementwise.py",
              "xform/_src/lowering/mlir.py", "xform/numpy/__init__.py"):
        assert f in names, f


def _legacy_pickle(arr):
    """A pickle of ``arr`` as versions before the move wrote it (protocol 0 names the
    module in plain text)."""
    new = pickle.dumps(arr, protocol=0)
    assert b"xform._src.interpreters.core" in new
    return new.replace(b"xform._src.interpreters.core", b"interpreters.core")


def test_old_pickles_load(tmp_path):
    a = xnp.arange(6.0).reshape(2, 3)
    blob = tmp_path / "old.pkl"
    blob.write_bytes(_legacy_pickle(a))
    code = ("import pickle, numpy as np, xform\n"
            f"x = pickle.loads(open({str(blob)!r}, 'rb').read())\n"
            "assert type(x) is xform._src.interpreters.core.Array, type(x)\n"
            "print(np.asarray(x).tolist())\n")
    # from outside the checkout (the repository root is not on sys.path: as installed)
    r = _run(code, tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == str(np.asarray(a).tolist())
    # and in this process (the checkout's root is on sys.path)
    x = pickle.loads(_legacy_pickle(a))
    np.testing.assert_array_equal(np.asarray(x), np.asarray(a))


def test_old_names_never_shadow_a_users_package(tmp_path):
    pkg = tmp_path / "user" / "interpreters"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("MINE = True\n")
    r = _run("import xform, interpreters; assert interpreters.MINE; print('ok')", tmp_path,
             extra_path=tmp_path / "user")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]

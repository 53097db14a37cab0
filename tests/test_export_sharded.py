"""Sharded ``xform.export`` on 8 virtual CPU devices, compared with real JAX.

The cases live in ``tests/_export_sharded_cases.py`` and run in one subprocess (the
``--xla_force_host_platform_device_count=8`` flag must be set before the runtime
client exists; the rest of the suite keeps its single device).  That process also
writes sharded artifacts (xform's and JAX's); a second, fresh process -- where the
exported Python functions do not exist -- deserializes and calls them with xform
and with JAX.
"""
import functools
import os

import pytest

from _multidevice import HERE, case_names, run_case_script

SCRIPT = os.path.join(HERE, "_export_sharded_cases.py")
CASE_NAMES = case_names(SCRIPT)
_run = functools.partial(run_case_script, SCRIPT)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("sharded_exports"))
    out = _run("write", d)
    if out.get("write_artifacts", {}).get("ok"):
        out.update(_run("read", d))
    return out


@pytest.mark.parametrize("name", CASE_NAMES + ["write_artifacts", "fresh_process_read"])
def test_sharded_export(results, name):
    r = results.get(name)
    assert r is not None, f"case {name} did not run (the subprocess crashed before it)"
    assert r["ok"], r["err"]

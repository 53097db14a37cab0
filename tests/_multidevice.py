"""Shared plumbing of the multi-device case scripts (``_sharding_cases.py``,
``_export_sharded_cases.py``) and the tests that run them.

Importing this module in a case script asks XLA for 8 host devices (before jax/xform start
a backend).  A script registers functions with ``@case`` and ends with
``run_cases(CASES, names)``, which prints one ``CASE {json}`` line per case; the pytest
side calls ``run_case_script(script, *argv)`` and gets ``{case name: result}``.
"""
import json
import os
import re
import subprocess
import sys
import traceback

if __name__ != "__main__" and "pytest" not in sys.modules:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=8").strip()

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def case_registry():
    """``(CASES, case)``: a list and the decorator that appends to it."""
    cases = []

    def case(f):
        cases.append(f)
        return f
    return cases, case


def run_cases(funcs):
    """Run each function, printing ``CASE {"case", "ok", "err"}`` (a failure does not stop
    the others)."""
    for f in funcs:
        try:
            f()
            r = {"case": f.__name__, "ok": True, "err": ""}
        except Exception:  # noqa: BLE001
            r = {"case": f.__name__, "ok": False, "err": traceback.format_exc()[-3000:]}
        print("CASE " + json.dumps(r), flush=True)


def case_names(script):
    """The names of the ``@case`` functions a script defines (for parametrizing)."""
    with open(script) as fh:
        return re.findall(r"^@case\ndef (\w+)", fh.read(), re.M)


def run_case_script(script, *argv):
    """Run a case script in a fresh interpreter; ``{case name: result}``."""
    import pytest
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("XLA_FLAGS", None)
    p = subprocess.run([sys.executable, script, *argv], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    out = {}
    for line in p.stdout.splitlines():
        if line.startswith("CASE "):
            r = json.loads(line[5:])
            out[r["case"]] = r
    if not out:
        pytest.fail(f"the multi-device subprocess produced no results (rc={p.returncode}):\n"
                    f"{p.stderr[-4000:]}")
    return out


def run_worker_processes(worker, n=2, timeout=240):
    """Run ``n`` copies of the worker script ``tests/<worker>`` as processes ``0..n-1`` of one
    job (argv: a free loopback port for the coordinator, the process index), bounded in
    time and cleaned up; assert each exits 0 and prints ``OK <index>``."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("XLA_FLAGS", None)
    path = os.path.join(HERE, worker)
    procs = [subprocess.Popen([sys.executable, path, str(port), str(i)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(n)]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            outs.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    for i, (rc, out, err) in enumerate(outs):
        assert rc == 0 and f"OK {i}" in out, f"process {i} failed (rc={rc}):\n{err[-3000:]}"

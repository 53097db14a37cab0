"""xform.experimental.multihost_utils: one process here (compared with JAX's), two
processes over a loopback coordinator in subprocesses (tests/_multihost_worker.py)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import jax
from jax.experimental import multihost_utils as jmu

import xform

from _multidevice import run_worker_processes
from xform.experimental import multihost_utils as xmu
from xform.sharding import PartitionSpec as P

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TREE = {"a": np.arange(6.0, dtype=np.float32).reshape(2, 3), "b": np.int32(7),
        "c": [np.ones(4, np.int32)]}


def _eq_trees(x, j):
    xl, xt = xform.tree.flatten(x)
    jl, jt = jax.tree.flatten(j)
    assert xt == jt or str(xt) == str(jt)
    for a, b in zip(xl, jl):
        assert isinstance(a, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_names_match_jax():
    for n in xmu.__all__:
        assert hasattr(jmu, n), n


@pytest.mark.parametrize("tiled", [False, True])
def test_process_allgather_one_process(tiled):
    _eq_trees(xmu.process_allgather(TREE, tiled=tiled), jmu.process_allgather(TREE, tiled=tiled))
    x = xform.numpy.arange(5.0)
    _eq_trees(xmu.process_allgather(x, tiled=tiled),
              jmu.process_allgather(jax.numpy.arange(5.0), tiled=tiled))


def test_broadcast_one_to_all_one_process():
    _eq_trees(xmu.broadcast_one_to_all(TREE), jmu.broadcast_one_to_all(TREE))
    _eq_trees(xmu.broadcast_one_to_all(TREE, is_source=False),
              jmu.broadcast_one_to_all(TREE, is_source=False))


def test_barrier_and_assert_equal_one_process():
    assert xmu.reached_preemption_sync_point(3) is jmu.reached_preemption_sync_point(3) is False
    xmu.sync_global_devices("here")
    xmu.assert_equal(TREE)
    xmu.assert_equal(xform.numpy.arange(3), "same")


def test_host_local_global_round_trip_one_process():
    xm = xform.make_mesh((1,), ("d",))
    jm = jax.make_mesh((1,), ("d",))
    v = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    for spec in [P("d"), P(), P(None, "d")]:
        g = xmu.host_local_array_to_global_array({"v": v}, xm, spec)["v"]
        jg = jmu.host_local_array_to_global_array({"v": v}, jm,
                                                  jax.sharding.PartitionSpec(*spec))["v"]
        assert g.shape == jg.shape and g.dtype == jg.dtype
        assert tuple(g.sharding.spec) == tuple(spec) and g.sharding.mesh == xm
        np.testing.assert_array_equal(np.asarray(g), np.asarray(jg))
        back = xmu.global_array_to_host_local_array(g, xm, spec)
        np.testing.assert_array_equal(np.asarray(back), v)
    # typed key arrays (their key data is converted)
    keys = xform.random.split(xform.random.key(3), 4)
    jkeys = jax.random.split(jax.random.key(3), 4)
    g = xmu.host_local_array_to_global_array(keys, xm, P("d"))
    jg = jmu.host_local_array_to_global_array(jkeys, jm, jax.sharding.PartitionSpec("d"))
    assert g.dtype == keys.dtype and g.shape == jg.shape
    np.testing.assert_array_equal(np.asarray(xform.random.key_data(g)),
                                  np.asarray(jax.random.key_data(jg)))
    back = xmu.global_array_to_host_local_array(g, xm, P("d"))
    np.testing.assert_array_equal(np.asarray(xform.random.key_data(back)),
                                  np.asarray(xform.random.key_data(keys)))
    with pytest.raises(ValueError, match="`None` is not a valid input"):
        xmu.host_local_array_to_global_array(v, xm, None)
    # under jit and grad (one process: the host-local and global shapes coincide)
    f = lambda a: (xmu.host_local_array_to_global_array(a, xm, P("d")) ** 2).sum()  # noqa
    np.testing.assert_allclose(np.asarray(xform.jit(xform.grad(f))(v)), 2 * v)


def test_two_processes():
    """Two processes of 2 CPU devices each: gather, broadcast, barrier, assert_equal and
    host-local <-> global conversion, each process checking what it gets."""
    run_worker_processes("_multihost_worker.py")


def test_alias_serves_the_new_modules():
    """Under compat.alias_jax, `import jax.experimental.layout` etc. are xform's."""
    code = (
        "import xform, xform.compat as c; c.alias_jax()\n"
        "import jax.experimental.layout as L, jax.experimental.multihost_utils as M\n"
        "import jax.scipy.fft as F, jax.scipy.sparse.linalg as S\n"
        "from jax.sharding import AbstractMesh, AxisType\n"
        "assert L is xform.experimental.layout and M is xform.experimental.multihost_utils\n"
        "assert F is xform.scipy.fft and S is xform.scipy.sparse.linalg\n"
        "assert AbstractMesh is xform.sharding.AbstractMesh\n"
        "import jax; assert jax.config.x64_enabled is False\n"
        "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stderr[-3000:]

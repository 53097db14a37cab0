"""Sharding, jit over meshes, shard_map and pmap on 8 virtual CPU devices.

The cases live in ``tests/_sharding_cases.py`` and run in ONE subprocess (the
``--xla_force_host_platform_device_count=8`` flag must be set before the
runtime client exists; the rest of the suite keeps its single device).  Each
case compares xform with real JAX: values, output PartitionSpecs, shard shapes.
"""
import os
import subprocess
import textwrap
import sys

import numpy as np
import pytest

from _multidevice import HERE, ROOT, case_names, run_case_script, run_worker_processes

SCRIPT = os.path.join(HERE, "_sharding_cases.py")
CASE_NAMES = case_names(SCRIPT)


@pytest.fixture(scope="module")
def results():
    return run_case_script(SCRIPT)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_multidevice(results, name):
    r = results.get(name)
    assert r is not None, f"case {name} did not run (the subprocess crashed before it)"
    assert r["ok"], r["err"]


def test_import_stays_light():
    code = ("import sys, xform; import xform.sharding; "
            "from xform.sharding import Mesh, NamedSharding, PartitionSpec; "
            "assert xform.P is PartitionSpec; "
            "assert not [m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib')]")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


def test_partition_spec_and_errors_single_device():
    import xform
    from xform.sharding import NamedSharding, PartitionSpec as P
    assert P("x", None) == P("x")
    assert hash(P("x", None)) == hash(P("x"))
    import jax
    for parts in [("x", ("a", "b")), ("x",), (), ("x", None), (None, "y")]:
        assert repr(P(*parts)) == repr(jax.sharding.PartitionSpec(*parts))
    with pytest.raises(TypeError):
        P(3)
    mesh = xform.make_mesh((1,), ("d",))
    with pytest.raises(ValueError, match="q"):
        NamedSharding(mesh, P("q"))
    with pytest.raises(ValueError, match="devices"):
        xform.make_mesh((64,), ("d",))
    a = xform.device_put(xform.numpy.arange(4.0), NamedSharding(mesh, P("d")))
    assert a.addressable_shards[0].data.shape == (4,)
    assert a.is_fully_replicated


def test_two_processes_distributed_runtime():
    """Two local processes (loopback coordinator on a free port, bounded time, both
    cleaned up) build a global array from process-local rows and run jitted
    cross-process reductions (gloo CPU collectives); each checks the result."""
    run_worker_processes("_distributed_worker.py")


def test_jax_alias_scripts_run_on_xform_sharding():
    """`import jax` aliased to xform (compat.alias_jax): the everyday sharding imports
    (jax.sharding, jax.experimental.mesh_utils, jax.experimental.shard_map) work."""
    code = textwrap.dedent("""
        import os; os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
        import numpy as np, xform
        xform.compat.alias_jax()
        import jax
        from jax.experimental import mesh_utils
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        from jax.experimental.shard_map import shard_map
        mesh = Mesh(mesh_utils.create_device_mesh((4, 2)), ("a", "b"))
        x = jax.device_put(np.arange(16.0, dtype=np.float32), NamedSharding(mesh, P("a")))
        out = shard_map(lambda v: jax.lax.psum(v, "a"), mesh, (P("a"),), P())(x)
        assert np.allclose(np.asarray(out), np.arange(16.0).reshape(4, 4).sum(0))
        assert x.sharding.spec == P("a")
        print("OK")
    """)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("XLA_FLAGS", None)
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0 and "OK" in p.stdout, p.stderr[-3000:]


def test_sharding_and_mesh_reprs_match_jax():
    """Mesh (str and repr), NamedSharding and SingleDeviceSharding print as JAX's, with
    the memory kind canonicalized to the device's default; equal when only the explicit
    default differs; an unknown memory kind raises JAX's ValueError."""
    import jax
    import xform
    from xform.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P, \
        SingleDeviceSharding
    JS = jax.sharding
    xdev, jdev = xform.devices()[0], jax.devices()[0]
    for types in [None, (AxisType.Explicit, AxisType.Auto)]:
        jtypes = None if types is None else tuple(getattr(JS.AxisType, t.name) for t in types)
        xm = Mesh(np.array([xdev]).reshape(1, 1), ("a", "b"), axis_types=types)
        jm = JS.Mesh(np.array([jdev]).reshape(1, 1), ("a", "b"), axis_types=jtypes)
        assert (repr(xm), str(xm)) == (repr(jm), str(jm))
        for kind in [None, "device", "pinned_host"]:
            xs, js = NamedSharding(xm, P("a"), memory_kind=kind), \
                JS.NamedSharding(jm, JS.PartitionSpec("a"), memory_kind=kind)
            assert repr(xs) == repr(js) and xs.memory_kind == js.memory_kind
    for kind in [None, "device", "unpinned_host"]:
        xs, js = SingleDeviceSharding(xdev, memory_kind=kind), \
            JS.SingleDeviceSharding(jdev, memory_kind=kind)
        assert repr(xs) == repr(js)
    assert repr(xform.numpy.arange(3.0).sharding) == repr(jax.numpy.arange(3.0).sharding)
    assert SingleDeviceSharding(xdev) == SingleDeviceSharding(xdev, memory_kind="device")
    assert SingleDeviceSharding(xdev) != SingleDeviceSharding(xdev, memory_kind="pinned_host")
    assert SingleDeviceSharding(xdev).with_memory_kind("pinned_host").memory_kind == \
        "pinned_host"
    for lib_sds, dev in ((SingleDeviceSharding, xdev), (JS.SingleDeviceSharding, jdev)):
        with pytest.raises(ValueError, match="memory kind"):
            lib_sds(dev, memory_kind="bogus")

"""Multi-device cases for tests/test_array_serialization.py (8 virtual CPU devices, in a
subprocess): sharded and replicated arrays written by xform and read by JAX onto another
sharding, and the reverse."""
import sys
import tempfile

from _multidevice import case_registry, run_cases  # noqa: E402  (asks for 8 devices)

import numpy as np  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.experimental.array_serialization import serialization as jser  # noqa: E402

import xform  # noqa: E402
import xform.numpy as xnp  # noqa: E402
from xform.experimental.array_serialization import serialization as xser  # noqa: E402
from xform.experimental.colocated_python import colocated_cpu_devices  # noqa: E402

CASES, case = case_registry()
V = np.arange(8 * 8, dtype=np.float32).reshape(8, 8)
# (mesh shape, axis names, spec written, spec read)
LAYOUTS = [((8,), ("x",), ("x",), (None, None)), ((4, 2), ("a", "b"), ("a", "b"), ("b",)),
           ((2, 4), ("a", "b"), (None, "b"), ("a", None)), ((8,), ("x",), (), ("x",))]


def _x(shape, names, spec):
    mesh = xform.sharding.Mesh(np.array(xform.devices()).reshape(shape), names)
    return xform.sharding.NamedSharding(mesh, xform.sharding.PartitionSpec(*spec))


def _j(shape, names, spec):
    mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(shape), names)
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec))


@case
def xform_writes_sharded_jax_reads():
    for shape, names, ws, rs in LAYOUTS:
        with tempfile.TemporaryDirectory() as d:
            arr = xform.device_put(xnp.asarray(V), _x(shape, names, ws))
            assert len(arr.addressable_shards) == 8
            xser.GlobalAsyncCheckpointManager().serialize_with_paths([arr], [d + "/a"])
            m = xser.GlobalAsyncCheckpointManager()
            m.serialize_with_paths([arr], [d + "/b"])
            m.wait_until_finished()
            (got,) = jser.GlobalAsyncCheckpointManager().deserialize_with_paths(
                [_j(shape, names, rs)], [d + "/b"])
            assert got.sharding == _j(shape, names, rs)
            np.testing.assert_array_equal(np.asarray(got), V)


@case
def jax_writes_sharded_xform_reads():
    for shape, names, ws, rs in LAYOUTS:
        with tempfile.TemporaryDirectory() as d:
            arr = jax.device_put(jnp.asarray(V), _j(shape, names, ws))
            m = jser.GlobalAsyncCheckpointManager()
            m.serialize_with_paths([arr], [d + "/a"])
            m.wait_until_finished()
            (got,) = xser.GlobalAsyncCheckpointManager().deserialize_with_paths(
                [_x(shape, names, rs)], [d + "/a"])
            assert got.sharding == _x(shape, names, rs)
            for s in got.addressable_shards:
                np.testing.assert_array_equal(np.asarray(s.data), V[s.index])
            np.testing.assert_array_equal(np.asarray(got), V)


@case
def colocated_cpu_mesh_matches_jax():
    xm = xform.sharding.Mesh(np.array(xform.devices()).reshape(4, 2), ("a", "b"))
    jm = jax.sharding.Mesh(np.array(jax.devices()).reshape(4, 2), ("a", "b"))
    xc = colocated_cpu_devices(xm)
    from jax.experimental.colocated_python import colocated_cpu_devices as jcc
    jc = jcc(jm)
    assert [d.id for d in xc.devices.flat] == [d.id for d in jc.devices.flat]
    assert xc.axis_names == jc.axis_names


def main():
    only = set(sys.argv[1:])
    run_cases([f for f in CASES if not only or f.__name__ in only])


if __name__ == "__main__":
    main()

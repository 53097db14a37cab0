"""One process of tests/test_multihost_utils.py's two-process run (loopback coordinator).

argv: port process_id.  Each process has 2 CPU devices (a 4-device mesh together).
Checks multihost_utils' gather, broadcast, barrier, assert_equal and the host-local <->
global conversions against what each process knows of the other's data; prints OK.
"""
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import numpy as np  # noqa: E402

import xform  # noqa: E402
from xform.experimental import multihost_utils as mu  # noqa: E402
from xform.sharding import PartitionSpec as P  # noqa: E402

port, pid = int(sys.argv[1]), int(sys.argv[2])
xform.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=pid,
                             initialization_timeout=60)
mine = np.arange(6, dtype=np.float32).reshape(2, 3) + 100 * pid
both = np.stack([np.arange(6, dtype=np.float32).reshape(2, 3) + 100 * p for p in range(2)])

g = mu.process_allgather({"x": mine, "s": np.int32(pid)})
np.testing.assert_array_equal(g["x"], both)
np.testing.assert_array_equal(g["s"], [0, 1])
np.testing.assert_array_equal(mu.process_allgather(mine, tiled=True), both.reshape(4, 3))

b = mu.broadcast_one_to_all({"x": mine})
np.testing.assert_array_equal(b["x"], both[0])
b = mu.broadcast_one_to_all(mine, is_source=pid == 1)
np.testing.assert_array_equal(b, both[1])

mu.sync_global_devices("step 1")
assert mu.reached_preemption_sync_point(0) is False     # no preemption notice
mu.assert_equal(np.arange(4))
try:
    mu.assert_equal(np.int32(pid), "differs")
    raise SystemExit("assert_equal accepted different values")
except AssertionError as e:
    assert "differs" in str(e)

mesh = xform.make_mesh((2, 2), ("p", "d"))        # row p: process p's devices
assert mesh.is_multi_process and mesh.local_mesh.devices.shape == (1, 2)
glob = mu.host_local_array_to_global_array(mine, mesh, P("p"))
assert glob.shape == (4, 3) and not glob.is_fully_addressable
np.testing.assert_array_equal(mu.process_allgather(glob, tiled=True), both.reshape(4, 3))
total = xform.jit(lambda a: a.sum(0), out_shardings=xform.sharding.NamedSharding(mesh, P()))(glob)
np.testing.assert_allclose(np.asarray(total.addressable_data(0)), both.reshape(4, 3).sum(0))
back = mu.global_array_to_host_local_array(glob, mesh, P("p"))
assert back.shape == (2, 3) and back.is_fully_addressable
np.testing.assert_array_equal(np.asarray(back), mine)
# typed key arrays live on one device in xform: spanning processes is refused clearly
keys = xform.random.split(xform.random.key(pid), 2)
try:
    mu.host_local_array_to_global_array(keys, mesh, P("p"))
    raise SystemExit("a key array over several devices was accepted")
except NotImplementedError as e:
    assert "key_data" in str(e)
xform.distributed.shutdown()
print("OK", pid, flush=True)

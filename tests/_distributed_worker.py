"""One process of tests/test_sharding.py's two-process run (loopback coordinator).

argv: port process_id.  Each process has 2 CPU devices; together a 4-device mesh.
Builds a global array from process-local rows, runs a jitted cross-process
reduction and matmul, and checks the global results; prints OK on success.
"""
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import numpy as np  # noqa: E402

import xform  # noqa: E402
import xform.numpy as xnp  # noqa: E402
from xform.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

port, pid = int(sys.argv[1]), int(sys.argv[2])
xform.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=pid,
                             initialization_timeout=60)
assert xform.process_count() == 2 and xform.process_index() == pid
assert len(xform.devices()) == 4 and len(xform.local_devices()) == 2
mesh = xform.make_mesh((4,), ("d",))
full = np.arange(32, dtype=np.float32).reshape(8, 4)
local = full[pid * 4:(pid + 1) * 4]                  # this process's rows
x = xform.make_array_from_process_local_data(NamedSharding(mesh, P("d")), local, (8, 4))
assert x.shape == (8, 4) and not x.is_fully_addressable
for s in x.addressable_shards:
    np.testing.assert_array_equal(np.asarray(s.data), full[s.index])
rep = NamedSharding(mesh, P())
total = xform.jit(lambda a: (a * 2).sum(0), out_shardings=rep)(x)
np.testing.assert_allclose(np.asarray(total.addressable_shards[0].data), (full * 2).sum(0))
w = np.ones((4, 3), np.float32)
y = xform.jit(lambda a, w: xnp.tanh(a @ w).sum(), out_shardings=rep)(x, w)
np.testing.assert_allclose(np.asarray(y.addressable_shards[0].data), np.tanh(full @ w).sum(),
                           rtol=1e-5)
xform.distributed.shutdown()
print("OK", pid, flush=True)

"""Restoring a checkpoint onto a given sharding (8 virtual CPU devices, in a subprocess
so the rest of the suite keeps its single device)."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent(r"""
    import sys, numpy as np
    import xform, xform.numpy as xnp
    from xform import checkpointing
    from xform.sharding import Mesh, NamedSharding, PartitionSpec as P
    path = sys.argv[1]
    mesh = Mesh(np.array(xform.devices()).reshape(4, 2), ("data", "model"))
    w = np.arange(64, dtype=np.float32).reshape(8, 8)
    b = np.arange(8, dtype=np.float32)
    checkpointing.save(path, {"w": w, "b": b, "step": 3})
    rows = NamedSharding(mesh, P("data", "model"))
    rep = NamedSharding(mesh, P())
    target = {"w": xform.ShapeDtypeStruct((8, 8), np.float32, sharding=rows),
              "b": xform.device_put(xnp.zeros(8), rep), "step": 0}
    out = checkpointing.restore(path, target)
    assert out["step"] == 3
    np.testing.assert_array_equal(np.asarray(out["w"]), w)
    np.testing.assert_array_equal(np.asarray(out["b"]), b)
    assert out["w"].sharding == rows, out["w"].sharding
    assert len(out["w"].addressable_shards) == 8
    assert {s.data.shape for s in out["w"].addressable_shards} == {(2, 4)}
    assert out["b"].sharding.is_fully_replicated
    plain = checkpointing.restore(path)          # no target: single-device arrays
    assert len(plain["w"].addressable_shards) == 1
    print("ok")
""")


def test_restore_onto_a_sharding(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT,
               XLA_FLAGS="--xla_force_host_platform_device_count=8")
    res = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "ck.xfck")], env=env,
                         cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stderr[-3000:]

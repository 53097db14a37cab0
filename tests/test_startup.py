"""Start-up: what ``import xform`` and a first jit load.

Each case runs in a fresh interpreter (``sys.modules`` is per process) started from the
repository root, so it imports this checkout.  Nothing here is timed: the timings are
in ``benchmarks`` (start-up rows).
"""
import json
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

HEAVY = ("ml_dtypes", "jax", "jaxlib", "scipy")


def _run(code):
    """Run ``code`` in a fresh interpreter; it prints one JSON line last."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


_LOADED = """
import sys, json
def loaded():
    return sorted({m.split('.')[0] for m in sys.modules} & {'ml_dtypes', 'jax', 'jaxlib', 'scipy'})
"""


def test_import_xform_loads_no_heavy_modules():
    out = _run(_LOADED + """
import xform, xform.numpy, xform.lax, xform.dtypes, xform.nn, xform.random, xform.testing
print(json.dumps(loaded()))
""")
    assert out == [], f"import xform imported {out}"


def test_bfloat16_names_work_lazily():
    """The narrow dtypes' names resolve on first touch (and only then import ml_dtypes);
    every dtype table learns them -- promotion, issubdtype, canonicalisation, finfo,
    eager ops, the lowering -- whichever of them is touched first."""
    out = _run(_LOADED + """
import numpy as np
import xform, xform.numpy as jnp
from xform._src.interpreters import dtypes
before = loaded()
f32 = jnp.finfo(jnp.float32).eps        # NumPy's own dtypes need no ml_dtypes
ok_i = jnp.iinfo(jnp.int8).max
assert not dtypes.is_bfloat16(np.dtype('float32'))
mid = loaded()
bf = jnp.bfloat16                         # first touch
res = {
  'before': before, 'mid': mid, 'after': loaded(),
  'name': bf.dtype.name,
  'same_dtype': xform.dtypes.bfloat16 == np.dtype('bfloat16'),
  'promote': str(jnp.promote_types(jnp.bfloat16, jnp.float16)),
  'weak': str((jnp.ones(3, jnp.bfloat16) * 2.0).dtype),
  'issub': bool(jnp.issubdtype(jnp.bfloat16, jnp.floating)),
  'issub_str': bool(jnp.issubdtype('float8_e4m3fn', jnp.floating)),
  'canon': str(dtypes.canonicalize_dtype('bfloat16')),
  'f8': str(jnp.zeros(2, jnp.float8_e4m3fn).dtype),
  'int4': str(jnp.zeros(2, jnp.int4).dtype),
  'eps': float(jnp.finfo(jnp.bfloat16).eps),
  'sum': float(jnp.sum(jnp.arange(4, dtype=jnp.bfloat16))),
  'jit': np.asarray(xform.jit(lambda x: jnp.sin(x) * 2)(jnp.ones(3, jnp.bfloat16))
                    .astype(np.float32)).tolist(),
  'lowp_mean': str(jnp.mean(jnp.ones(4, jnp.bfloat16)).dtype),
}
res['end'] = loaded()
print(json.dumps(res))
""")
    assert out["before"] == [] and out["mid"] == [], out
    assert "ml_dtypes" in out["after"]
    assert out["name"] == "bfloat16" and out["same_dtype"]
    assert out["promote"] == "float32"          # bf16 + f16 -> f32, as JAX
    assert out["weak"] == "bfloat16"            # a weak Python float keeps bf16
    assert out["issub"] and out["issub_str"]
    assert out["canon"] == "bfloat16"
    assert out["f8"] == "float8_e4m3fn" and out["int4"] == "int4"
    assert out["eps"] == 2.0 ** -7
    assert out["sum"] == 6.0 and out["lowp_mean"] == "bfloat16"
    assert out["jit"] == pytest.approx([2 * 0.84147] * 3, rel=1e-2)
    assert "jax" not in out["end"]     # bf16 results read back without JAX's runtime


def test_ml_dtypes_imported_elsewhere_is_noticed():
    """Someone else importing ml_dtypes after xform (user code; jaxlib does on its first
    transfer) makes its dtypes valid everywhere without touching xform's names."""
    out = _run(_LOADED + """
import numpy as np
import xform, xform.numpy as jnp
import ml_dtypes
x = np.ones(3, ml_dtypes.bfloat16)
y = jnp.sin(jnp.asarray(x))
z = xform.jit(lambda a: a + 1)(x)
print(json.dumps([str(y.dtype), str(z.dtype), str(jnp.result_type(x, 1.0)),
                  bool(jnp.issubdtype(x.dtype, jnp.floating))]))
""")
    assert out == ["bfloat16", "bfloat16", "bfloat16", True]


def test_first_jit_of_float32_does_not_import_jax():
    """A single-CPU-device process reaches jaxlib directly (lowering/runtime.py's "own"
    runtime): a first jitted float32 result, eager ops on it, and device queries do not
    import JAX's Python package (jaxlib itself, and ml_dtypes -- which jaxlib's C++
    imports on its first transfer -- are loaded)."""
    out = _run(_LOADED + """
import numpy as np
import xform, xform.numpy as jnp
f = xform.jit(lambda x, y: (jnp.sin(x) * y, x @ x.T))
a, b = f(np.ones((3, 3), np.float32), 2.0)
a.block_until_ready()
c = jnp.cos(a) + b                          # eager on jit outputs
import xform._src.lowering.runtime as rt
res = {'loaded': loaded(), 'kind': rt.runtime_kind(),
       'a': np.asarray(a).tolist(), 'c_dtype': str(c.dtype),
       'devices': [str(d) for d in xform.devices()], 'arr_devices': [str(d) for d in a.devices()],
       'sharding': type(a.sharding).__name__, 'dlpack': np.from_dlpack(a).tolist(),
       'put': np.asarray(xform.device_put(np.arange(3))).tolist()}
res['loaded_after'] = loaded()
# jaxlib imported ml_dtypes (C++, first transfer): its dtypes are now valid everywhere
h = np.ones(2, np.dtype('bfloat16'))
res['bf16'] = [str((jnp.asarray(h) * 2).dtype), str(jnp.result_type(h, 1.0)),
               np.asarray(xform.jit(lambda v: v + 1)(h)).astype(np.float32).tolist()]
print(json.dumps(res))
""")
    assert out["bf16"] == ["bfloat16", "bfloat16", [2.0, 2.0]]
    assert out["kind"] == "own"
    assert "jax" not in out["loaded"] and "jax" not in out["loaded_after"], out
    assert "jaxlib" in out["loaded"]
    assert sum(out["a"], []) == pytest.approx([2 * 0.8414709848] * 9)
    assert out["c_dtype"] == "float32"
    assert len(out["devices"]) == 1 and out["devices"] == out["arr_devices"]
    assert out["sharding"] == "SingleDeviceSharding"
    assert out["dlpack"] == out["a"]
    assert out["put"] == [0, 1, 2]


def test_own_runtime_arrays_interoperate_with_jax():
    """Arrays made without JAX's Python runtime still work once JAX is imported (its
    ArrayImpl methods then apply to them) and hand over to JAX by DLPack / NumPy."""
    out = _run(_LOADED + """
import numpy as np
import xform, xform.numpy as jnp
a = xform.jit(lambda x: x * 3)(np.arange(4, dtype=np.float32))
import jax, jax.numpy as jn
j1 = jax.dlpack.from_dlpack(a)
j2 = jn.asarray(np.asarray(a))
b = xform.jit(lambda x: x + 1)(a)            # our runtime keeps working after jax is loaded
print(json.dumps([np.asarray(j1).tolist(), np.asarray(j2 * 2).tolist(), np.asarray(b).tolist(),
                  str(a._buf.sharding), a.shape == (4,)]))
""")
    assert out[0] == [0, 3, 6, 9] and out[1] == [0, 6, 12, 18] and out[2] == [1, 4, 7, 10]
    assert out[3].startswith("SingleDeviceSharding") and out[4]


def test_jax_configured_devices_use_jax_runtime():
    """Several CPU devices (XLA_FLAGS) go through JAX's runtime layer (sharding needs it)."""
    out = _run("""
import os, sys, json
os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=2'
import numpy as np
import xform
import xform._src.lowering.runtime as rt
y = xform.jit(lambda x: x + 1)(np.ones(2, np.float32))
print(json.dumps([rt.runtime_kind(), len(xform.devices()), np.asarray(y).tolist()]))
""")
    assert out == ["jax", 2, [2.0, 2.0]]


def test_own_runtime_reads_narrow_dtypes_back():
    """Results of the narrow dtypes NumPy's buffer protocol refuses come back exactly:
    byte-sized ones from the CPU buffer's memory, sub-byte ones (int4, ..., which XLA
    packs) through jaxlib's own copy."""
    out = _run(_LOADED + """
import numpy as np
import xform, xform.numpy as jnp
res = {}
for t in ['bfloat16', 'float8_e4m3fn', 'float8_e5m2', 'int4', 'uint4', 'int2']:
    dt = getattr(jnp, t).dtype
    h = np.array([[0, 1, 3, 2], [1, 0, 2, 3], [3, 3, 0, 1]], np.float32).astype(dt)
    y = xform.jit(lambda v: v)(h)
    res[t] = [np.asarray(y).dtype.name, np.asarray(y).astype(np.float32).tolist(),
              h.astype(np.float32).tolist()]
print(json.dumps(res))
""")
    for t, (name, got, want) in out.items():
        assert name == t and got == want, (t, got, want)

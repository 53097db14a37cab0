"""xform.experimental.colocated_python against JAX's on CPU devices (where both run the
function on this host), plus its argument checks."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax.experimental import colocated_python as jcp

import xform
import xform.numpy as xnp
from xform.experimental import colocated_python as xcp

pytest.importorskip("cloudpickle")


def test_names_match_jax():
    import types

    def public(m):
        return {n for n in dir(m) if not n.startswith("_")
                and not isinstance(getattr(m, n), types.ModuleType)}
    assert public(jcp) <= public(xcp)


def test_colocated_cpu_devices_match_jax():
    assert [d.id for d in xcp.colocated_cpu_devices(xform.local_devices())] == \
        [d.id for d in jcp.colocated_cpu_devices(jax.local_devices())]
    xm = xform.sharding.Mesh(np.array(xform.devices()), ("x",))
    jm = jax.sharding.Mesh(np.array(jax.devices()), ("x",))
    xc, jc = xcp.colocated_cpu_devices(xm), jcp.colocated_cpu_devices(jm)
    assert isinstance(xc, xform.sharding.Mesh)
    assert xc.axis_names == jc.axis_names and xc.devices.shape == jc.devices.shape
    assert [d.id for d in xc.devices.flat] == [d.id for d in jc.devices.flat]


def _fun(x, y):
    return {"s": x + y, "p": x * y.sum()}


def _run_both(fun, args, spec=None):
    xargs = [xform.device_put(xnp.asarray(a), xcp.colocated_cpu_devices(
        xform.local_devices())[0]) for a in args]
    jargs = [jax.device_put(jnp.asarray(a), jcp.colocated_cpu_devices(
        jax.local_devices())[0]) for a in args]
    xf, jf = xcp.colocated_python(fun), jcp.colocated_python(fun)
    if spec is not None:
        xf, jf = spec(xf, xform), spec(jf, jax)
    got, want = xf(*xargs), jf(*jargs)
    for k in want:
        assert isinstance(got[k], xform.Array)
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]))
    return xf, jf


def test_call_matches_jax():
    xf, _ = _run_both(_fun, [np.arange(4.0), np.ones(4, np.float32)])
    # a second call with other shapes (input polymorphism) runs again
    out = xf(xnp.arange(2.0), xnp.ones(2))
    np.testing.assert_array_equal(np.asarray(out["s"]), [1.0, 2.0])


def test_specialized_out_specs_fn_matches_jax():
    def spec(f, lib):
        return f.specialize(out_specs_fn=lambda x, y: {"s": x, "p": x})
    _run_both(_fun, [np.arange(3.0, dtype=np.float32), np.full(3, 2.0, np.float32)], spec)


def test_specialized_in_specs_checked():
    f = xcp.colocated_python(lambda x: x * 2).specialize(
        in_specs=((xform.ShapeDtypeStruct((3,), np.float32),), {}))
    np.testing.assert_array_equal(np.asarray(f(xnp.arange(3.0))), [0, 2, 4])
    with pytest.raises(ValueError, match="specialized spec"):
        f(xnp.arange(4.0))


def test_no_arguments_needs_devices_like_jax():
    f = xcp.colocated_python(lambda: xnp.ones(2))
    with pytest.raises(ValueError, match="specialized with devices"):
        f()
    with pytest.raises(ValueError, match="specialized with devices"):
        jcp.colocated_python(lambda: jnp.ones(2))()
    g = f.specialize(devices=xcp.colocated_cpu_devices(xform.local_devices()))
    np.testing.assert_array_equal(np.asarray(g()), [1.0, 1.0])


def test_specializing_twice_is_an_error_like_jax():
    for cp, dev in ((xcp, xform.local_devices()), (jcp, jax.local_devices())):
        f = cp.colocated_python(lambda x: x).specialize(devices=dev)
        with pytest.raises(ValueError, match="devices already specified"):
            f.specialize(devices=dev)


def test_non_array_arguments_are_refused_like_jax():
    with pytest.raises(ValueError, match="only supports jax.Array"):
        xcp.colocated_python(lambda x: x)(np.ones(2))


def test_output_that_disagrees_with_out_specs_is_reported():
    f = xcp.colocated_python(lambda x: x[:2]).specialize(out_specs_fn=lambda x: x)
    with pytest.raises(ValueError, match="output leaf 0"):
        f(xnp.arange(3.0))


def test_colocated_class_matches_jax():
    class Acc:
        def __init__(self, scale):
            self.scale = scale
            self.total = None

        def add(self, x):
            self.total = x * self.scale if self.total is None else self.total + x * self.scale
            return self.total

    xa, ja = xcp.colocated_python_class(Acc)(2.0), jcp.colocated_python_class(Acc)(2.0)
    xd = xcp.colocated_cpu_devices(xform.local_devices())[0]
    jd = jcp.colocated_cpu_devices(jax.local_devices())[0]
    for v in (np.arange(3.0, dtype=np.float32), np.ones(3, np.float32)):
        got = xa.add(xform.device_put(xnp.asarray(v), xd))
        want = ja.add(jax.device_put(jnp.asarray(v), jd))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_serialization_roundtrips_devices_by_id():
    from xform.experimental.colocated_python import serialization as ser
    mesh = xform.sharding.Mesh(np.array(xform.devices()), ("x",))
    obj = {"m": mesh, "s": xform.sharding.NamedSharding(mesh, xform.sharding.P("x")),
           "d": xform.sharding.SingleDeviceSharding(xform.devices()[0]),
           "l": ser.DeviceList(tuple(xform.devices())), "f": lambda v: v + 1}
    back = ser._deserialize(ser._serialize(obj))
    assert back["m"].axis_names == ("x",)
    assert list(back["m"].devices.flat) == list(mesh.devices.flat)
    assert back["s"] == obj["s"] and back["d"] == obj["d"] and back["l"] == obj["l"]
    assert back["f"](1) == 2

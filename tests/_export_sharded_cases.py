"""Multi-device cases of ``xform.export`` for tests/test_export_sharded.py, run in a
subprocess with 8 virtual CPU devices (the XLA flag must be set before the runtime
client exists).  Every case compares xform with real JAX; one JSON line per case:
{"case": name, "ok": bool, "err": text}.

``python _export_sharded_cases.py write DIR``: also writes sharded artifacts (xform's
and JAX's) with their inputs and JAX's results to DIR; ``... read DIR`` (a fresh
process, where the exported Python functions do not exist) calls them with xform and
with JAX.
"""
import os
import re
import sys

from _multidevice import case_registry, run_cases  # noqa: E402  (asks for 8 devices)

import numpy as np  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jjnp  # noqa: E402
from jax import export as jexport  # noqa: E402
from jax.sharding import NamedSharding as JNS, PartitionSpec as JP  # noqa: E402

import xform  # noqa: E402
import xform.numpy as xnp  # noqa: E402
from xform import export as xexport  # noqa: E402
from xform.sharding import NamedSharding as XNS, PartitionSpec as XP  # noqa: E402

CASES, case = case_registry()


rng = np.random.default_rng(0)
_AUTO = (jax.sharding.AxisType.Auto,) * 2
JMESH = jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("a", "b"))
XMESH = xform.make_mesh((4, 2), ("a", "b"), axis_types=(xform.sharding.AxisType.Auto,) * 2)  # as JMESH
JM1 = jax.sharding.Mesh(np.array(jax.devices()[:8]), ("x",))
XM1 = xform.make_mesh((8,), ("x",))


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def close(a, b, tol=1e-5):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def spec_eq(xs, js):
    a, b = list(xs), list(js)
    while a and a[-1] is None:
        a.pop()
    while b and b[-1] is None:
        b.pop()
    return tuple(a) == tuple(b)


def same_layout(xa, ja):
    """Values, sharding spec and per-device shard indices agree (xform vs JAX)."""
    close(xa, ja)
    assert spec_eq(xa.sharding.spec, ja.sharding.spec), (xa.sharding.spec, ja.sharding.spec)
    xs = {s.device.id: (s.index, s.data.shape) for s in xa.addressable_shards}
    js = {s.device.id: (s.index, s.data.shape) for s in ja.addressable_shards}
    assert xs == js, (xs, js)


def _raises(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None, ""


# The function exported in both libraries: sin(x) @ y and a full sum.
X, Y = f32(8, 4), f32(4, 6)


def xf_fun():
    return xform.jit(lambda x, y: (xnp.sin(x) @ y, x.sum()),
                     in_shardings=(XNS(XMESH, XP("a", "b")), XNS(XMESH, XP("b", None))),
                     out_shardings=(XNS(XMESH, XP("a")), None))


def jx_fun():
    return jax.jit(lambda x, y: (jjnp.sin(x) @ y, x.sum()),
                   in_shardings=(JNS(JMESH, JP("a", "b")), JNS(JMESH, JP("b", None))),
                   out_shardings=(JNS(JMESH, JP("a")), None))


# ----------------------------------------------------------------- exporting

@case
def export_fields_and_module():
    xe = xexport.export(xf_fun())(X, Y)
    je = jexport.deserialize(jexport.export(jx_fun())(X, Y).serialize())
    assert xe.nr_devices == je.nr_devices == 8
    assert xe.in_shardings_hlo == je.in_shardings_hlo, (xe.in_shardings_hlo, je.in_shardings_hlo)
    assert xe.out_shardings_hlo == je.out_shardings_hlo, (xe.out_shardings_hlo,
                                                          je.out_shardings_hlo)
    text = xe.mlir_module()
    assert 'sdy.mesh @mesh = <["a"=4, "b"=2]>' in text, text
    assert "mhlo.num_partitions = 8 : i32" in text and "mhlo.num_replicas = 1 : i32" in text
    assert re.search(r'@main\(%arg0: tensor<8x4xf32> \{sdy.sharding = #sdy.sharding<@mesh, '
                     r'\[\{"a"\}, \{"b"\}\]>\}', text), text
    assert re.search(r'-> \(tensor<8x6xf32> \{jax.result_info = "result\[0\]", sdy.sharding = '
                     r'#sdy.sharding<@mesh, \[\{"a"\}, \{\}\]>\}', text), text
    # in/out_shardings_jax over a concrete mesh, as JAX gives them
    xs = xe.in_shardings_jax(XMESH)
    js = je.in_shardings_jax(JMESH)
    assert [spec_eq(a.spec, b.spec) for a, b in zip(xs, js)] == [True, True], (xs, js)
    assert xe.out_shardings_jax(XMESH)[1] is None and je.out_shardings_jax(JMESH)[1] is None
    t, m = _raises(lambda: xe.in_shardings_jax(XM1))
    tj, mj = _raises(lambda: je.in_shardings_jax(JM1))
    assert t is tj is ValueError and "does not match the mesh used for export" in m, (m, mj)
    # our bytes, read back by us and by JAX
    blob = xe.serialize()
    back = xexport.deserialize(blob)
    assert back.nr_devices == 8 and back.in_shardings_hlo == xe.in_shardings_hlo
    assert back.out_shardings_hlo == xe.out_shardings_hlo
    assert back.in_shardings_jax(XMESH) == xs
    jb = jexport.deserialize(blob)
    assert jb.nr_devices == 8 and jb.in_shardings_hlo == xe.in_shardings_hlo
    assert [str(s.spec) if s is not None else None for s in jb._out_named_shardings] == \
        [str(s.spec) if s is not None else None for s in je._out_named_shardings]


@case
def export_from_sharded_arguments():
    """A plain jit exported for arguments laid out over a mesh (sharded Arrays or
    ShapeDtypeStructs with a NamedSharding) records their shardings, as JAX does."""
    xs = XNS(XMESH, XP(None, "a"))
    js = JNS(JMESH, JP(None, "a"))
    xe = xexport.export(xform.jit(lambda x: x * 2))(
        xform.ShapeDtypeStruct((4, 8), np.float32, sharding=xs))
    je = jexport.deserialize(jexport.export(jax.jit(lambda x: x * 2))(
        jax.ShapeDtypeStruct((4, 8), np.float32, sharding=js)).serialize())
    assert xe.nr_devices == je.nr_devices == 8
    assert xe.in_shardings_hlo == je.in_shardings_hlo, (xe.in_shardings_hlo, je.in_shardings_hlo)
    x = f32(4, 8)
    xe2 = xexport.export(xform.jit(lambda x: x * 2))(xform.device_put(x, xs))
    assert xe2.in_shardings_hlo == je.in_shardings_hlo
    r = xexport.deserialize(xe2.serialize()).call(xform.device_put(x, xs))
    close(r, 2 * x)


# ----------------------------------------------------------------- calling, both directions

@case
def xform_export_called_by_jax():
    xe = xexport.export(xf_fun())(X, Y)
    je = jexport.deserialize(xe.serialize())
    args = [jax.device_put(a, s) for a, s in zip((X, Y), je.in_shardings_jax(JMESH))]
    got = je.call(*args)
    want = jx_fun()(X, Y)
    for g, w in zip(got, want):
        close(g, w)
        assert spec_eq(g.sharding.spec, w.sharding.spec), (g.sharding, w.sharding)
    got = jax.jit(je.call)(*args)
    for g, w in zip(got, want):
        close(g, w)


@case
def jax_export_called_by_xform():
    je = jexport.export(jx_fun())(X, Y)
    xe = xexport.deserialize(je.serialize())
    assert xe.nr_devices == 8
    jargs = [jax.device_put(a, s) for a, s in zip((X, Y), je.in_shardings_jax(JMESH))]
    xargs = [xform.device_put(a, s) for a, s in zip((X, Y), xe.in_shardings_jax(XMESH))]
    want = je.call(*jargs)
    got = xe.call(*xargs)
    same_layout(got[0], want[0])
    close(got[1], want[1])
    # host arguments under a mesh context are placed as the in_shardings say
    with xform.sharding.set_mesh(XMESH):
        got = xe.call(X, Y)
    same_layout(got[0], want[0])
    # inside jit (a program partitioned over the arguments' mesh), composed
    got = xform.jit(lambda x, y: [2 * r for r in xe.call(x, y)])(*xargs)
    close(got[0], 2 * np.asarray(want[0]))
    close(got[1], 2 * np.asarray(want[1]))
    # inside jit with replicated arguments: the export's shardings still apply around the
    # call (JAX constrains the call's operands and results the same way)
    xrep = [xform.device_put(a, XNS(XMESH, XP())) for a in (X, Y)]
    jrep = [jax.device_put(a, JNS(JMESH, JP())) for a in (X, Y)]
    got = xform.jit(xe.call)(*xrep)
    want = jax.jit(je.call)(*jrep)
    same_layout(got[0], want[0])
    assert spec_eq(got[0].sharding.spec, ("a",)), got[0].sharding
    # our round trip of JAX's bytes is read by JAX again
    jb = jexport.deserialize(xe.serialize())
    close(jb.call(*jargs)[0], want[0])


@case
def run_on_other_devices_and_axis_names():
    """Called with arguments on a mesh of the same size but other devices/axis names:
    the export's mesh is laid over those devices in order (JAX's device assignment)."""
    xe = xexport.deserialize(xexport.export(xf_fun())(X, Y).serialize())
    je = jexport.deserialize(xe.serialize())
    xrun = xform.sharding.Mesh(np.array(xform.devices()[::-1]), ("y",))
    jrun = jax.sharding.Mesh(np.array(jax.devices()[::-1]), ("y",))
    got = xe.call(*[xform.device_put(a, XNS(xrun, XP())) for a in (X, Y)])
    want = je.call(*[jax.device_put(a, JNS(jrun, JP())) for a in (X, Y)])
    close(got[0], want[0])
    xs = {s.device.id: s.index for s in got[0].addressable_shards}
    js = {s.device.id: s.index for s in want[0].addressable_shards}
    assert xs == js, (xs, js)


@case
def unspecified_and_unused_arguments():
    """JAX's export drops an unused argument (module_kept_var_idx) and leaves another's
    sharding unspecified; xform calls it with a host array for that one."""
    a = f32(16, 4)
    jf = jax.jit(lambda x, y: jjnp.sin(x), in_shardings=(JNS(JM1, JP("x", None)), None),
                 out_shardings=JNS(JM1, JP("x", None)))
    je = jexport.export(jf)(a, a)
    xe = xexport.deserialize(je.serialize())
    assert xe.module_kept_var_idx == je.module_kept_var_idx == (0,)
    assert xe.in_shardings_jax(XM1)[1] is None
    xrun = xform.sharding.Mesh(np.array(xform.devices()[::-1]), ("x",))
    jrun = jax.sharding.Mesh(np.array(jax.devices()[::-1]), ("x",))
    got = xe.call(xform.device_put(a, xe.in_shardings_jax(xrun)[0]), a)
    want = je.call(jax.device_put(a, je.in_shardings_jax(jrun)[0]),
                   jax.device_put(a, JNS(jrun, JP())))
    same_layout(got, want)
    close(got, np.sin(a))
    # and xform's own export with an unspecified argument, called by JAX
    xf = xform.jit(lambda x, y: xnp.sin(x) + y, in_shardings=(XNS(XM1, XP("x", None)), None))
    jx = jexport.deserialize(xexport.export(xf)(a, a).serialize())
    r = jx.call(jax.device_put(a, JNS(JM1, JP("x", None))), jax.device_put(a, JNS(JM1, JP())))
    close(r, np.sin(a) + a)


@case
def device_count_errors():
    xe = xexport.export(xf_fun())(X, Y)
    je = jexport.export(jx_fun())(X, Y)
    pat = r"was exported for 8 devices and is called in a context with 1 devices?"
    t, m = _raises(lambda: xe.call(X, Y))
    tj, mj = _raises(lambda: je.call(X, Y))
    assert t is tj is ValueError and re.search(pat, m) and re.search(pat, mj), (m, mj)
    assert m == mj, (m, mj)      # JAX's text, word for word
    # inside a single-device jit
    t, m = _raises(lambda: xform.jit(xe.call)(X, Y))
    assert t is ValueError and re.search(pat, m), m
    # a context mesh with another number of devices
    m4 = xform.make_mesh((4,), ("a",))
    with xform.sharding.set_mesh(m4):
        t, m = _raises(lambda: xe.call(X, Y))
    jm4 = jax.sharding.Mesh(np.array(jax.devices()[:4]), ("a",))
    tj, mj = _raises(lambda: je.call(jax.device_put(X, JNS(jm4, JP())),
                                     jax.device_put(Y, JNS(jm4, JP()))))
    pat4 = "was exported for 8 devices and is called in a context with 4 devices"
    assert t is tj is ValueError and pat4 in m and pat4 in mj, (m, mj)


# ----------------------------------------------------------------- derivatives

@case
def grad_through_sharded_export():
    sa = XNS(XMESH, XP("a", None))
    f = xform.jit(lambda x: xnp.sin(x) * 2, in_shardings=sa, out_shardings=sa)
    xe = xexport.export(f)(X)
    xs = xform.device_put(X, sa)
    want = jax.grad(lambda x: (jjnp.sin(x) * 2).sum())(X)
    g = xform.grad(lambda x: xe.call(x).sum())(xs)
    close(g, want)
    assert spec_eq(g.sharding.spec, ("a",)), g.sharding
    vjp = xe.vjp()
    assert vjp.nr_devices == 8 and len(vjp.in_shardings_hlo) == 2
    blob = xe.serialize(vjp_order=1)
    back = xexport.deserialize(blob)
    close(xform.grad(lambda x: back.call(x).sum())(xs), want)
    jb = jexport.deserialize(blob)
    jxs = jax.device_put(X, JNS(JMESH, JP("a", None)))
    close(jax.grad(lambda x: jb.call(x).sum())(jxs), want)
    # JAX's sharded export with its VJP, differentiated by xform
    jf = jax.jit(lambda x: jjnp.sin(x) * 2, in_shardings=JNS(JMESH, JP("a", None)),
                 out_shardings=JNS(JMESH, JP("a", None)))
    xj = xexport.deserialize(jexport.export(jf)(X).serialize(vjp_order=1))
    close(xform.grad(lambda x: xj.call(x).sum())(xs), want)


# ----------------------------------------------------------------- shard_map

def _ring(x):
    """ppermute j -> j + 1 over 8 blocks of rows: block k comes from block k - 1."""
    b = np.split(x, 8)
    return np.concatenate(b[-1:] + b[:-1])


@case
def shard_map_exports():
    a = f32(16, 4)
    perm = [(j, (j + 1) % 8) for j in range(8)]
    sm = xform.shard_map(lambda b: xform.lax.ppermute(b, "x", perm), mesh=XM1,
                         in_specs=(XP("x", None),), out_specs=XP("x", None))
    xe = xexport.export(xform.jit(sm, in_shardings=XNS(XM1, XP("x", None)),
                                  out_shardings=XNS(XM1, XP("x", None))))(a)
    assert "sdy.manual_computation" in xe.mlir_module()
    expected = _ring(a)
    # called by xform, and by JAX from our bytes
    close(xe.call(xform.device_put(a, XNS(XM1, XP()))), expected)
    je = jexport.deserialize(xe.serialize())
    r = je.call(jax.device_put(a, JNS(JM1, JP())))
    close(r, expected)
    # JAX's shard_map export, called by xform: same values and layout as JAX's call
    jf = jax.jit(jax.shard_map(lambda b: jax.lax.psum(b, "x"), mesh=JM1, in_specs=JP("x"),
                               out_specs=JP()), in_shardings=JNS(JM1, JP("x")))
    jx = jexport.export(jf)(a)
    xj = xexport.deserialize(jx.serialize())
    got = xj.call(xform.device_put(a, XNS(XM1, XP("x"))))
    want = jx.call(jax.device_put(a, JNS(JM1, JP("x"))))
    close(got, a.reshape(8, 2, 4).sum(0))
    same_layout(got, want)


@case
def batch_polymorphic_sharded_export():
    """A batch dimension '8*b' split over the 8 devices: called at two batch sizes by
    xform and by JAX; a plain 'b' (not divisible at xform's sample sizes) is refused."""
    f = xform.jit(lambda x: xnp.sin(x).sum(0) * 2, in_shardings=XNS(XM1, XP("x")))
    z = np.zeros((16, 4), np.float32)
    xe = xexport.export(f)(*xexport.symbolic_args_specs((z,), "8*b, _"))
    assert xe.nr_devices == 8 and str(xe.in_avals[0].shape[0]) == "8*b"
    je = jexport.deserialize(xe.serialize())
    for n in (16, 40):
        a = f32(n, 4)
        got = xe.call(xform.device_put(a, XNS(XM1, XP("x"))))
        close(got, np.sin(a).sum(0) * 2, tol=1e-4)
        close(je.call(jax.device_put(a, JNS(JM1, JP("x")))), np.sin(a).sum(0) * 2, tol=1e-4)
    t, m = _raises(lambda: xexport.export(f)(*xexport.symbolic_args_specs((z,), "b, _")))
    assert t is ValueError and "8*b" in m, m
    sm = xform.jit(xform.shard_map(lambda v: v * 2, mesh=XM1, in_specs=XP("x"),
                                   out_specs=XP("x")), in_shardings=XNS(XM1, XP("x")))
    t, m = _raises(lambda: xexport.export(sm)(*xexport.symbolic_args_specs((z,), "8*b, _")))
    assert t is ValueError and "shard_map" in m, m


@case
def multi_platform_sharded_export():
    sa = XNS(XMESH, XP("a", "b"))
    f = xform.jit(lambda x: xnp.cos(x) + 1, in_shardings=sa, out_shardings=XNS(XMESH, XP("b")))
    xe = xexport.export(f, platforms=("cpu", "cuda"))(X)
    assert xe.platforms == ("cpu", "cuda")
    with xform.sharding.set_mesh(XMESH):
        r = xe.call(X)
    close(r, np.cos(X) + 1)
    assert spec_eq(r.sharding.spec, ("b",)), r.sharding
    je = jexport.deserialize(xe.serialize())
    jr = je.call(jax.device_put(X, je.in_shardings_jax(JMESH)[0]))
    same_layout(r, jr)


# ----------------------------------------------------------------- fresh process

def write(dirname):
    """Artifacts for the fresh-process check: xform's and JAX's sharded exports."""
    xe = xexport.export(xf_fun())(X, Y)
    with open(os.path.join(dirname, "xform.bin"), "wb") as fh:
        fh.write(xe.serialize(vjp_order=1))
    with open(os.path.join(dirname, "jax.bin"), "wb") as fh:
        fh.write(jexport.export(jx_fun())(X, Y).serialize(vjp_order=1))
    want = jx_fun()(X, Y)
    np.savez(os.path.join(dirname, "io.npz"), x=X, y=Y, r0=np.asarray(want[0]),
             r1=np.asarray(want[1]))


def read(dirname):
    io = np.load(os.path.join(dirname, "io.npz"))
    for name in ("xform.bin", "jax.bin"):
        blob = open(os.path.join(dirname, name), "rb").read()
        xe = xexport.deserialize(blob)
        args = [xform.device_put(io[k], s) for k, s in zip("xy", xe.in_shardings_jax(XMESH))]
        got = xe.call(*args)
        close(got[0], io["r0"])
        close(got[1], io["r1"])
        assert spec_eq(got[0].sharding.spec, ("a",)), got[0].sharding
        g = xform.grad(lambda x, y: xe.call(x, y)[0].sum())(*args)
        close(g, np.cos(io["x"]) * io["y"].sum(1)[None, :])
        je = jexport.deserialize(bytearray(blob))
        jargs = [jax.device_put(io[k], s) for k, s in zip("xy", je.in_shardings_jax(JMESH))]
        jgot = je.call(*jargs)
        close(jgot[0], io["r0"])
        same_layout(got[0], jgot[0])


def main():
    argv = sys.argv[1:]
    if argv and argv[0] in ("write", "read"):
        mode, dirname, only = argv[0], argv[1], set(argv[2:])
    else:
        mode, dirname, only = None, None, set(argv)
    todo = [] if mode == "read" else [f for f in CASES if not only or f.__name__ in only]
    if mode == "write":
        todo.append(lambda: write(dirname))
        todo[-1].__name__ = "write_artifacts"
    if mode == "read":
        todo.append(lambda: read(dirname))
        todo[-1].__name__ = "fresh_process_read"
    run_cases(todo)


if __name__ == "__main__":
    main()

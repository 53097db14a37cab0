"""Multi-device cases for tests/test_sharding.py, run in a subprocess with 8 virtual
CPU devices (the XLA flag must be set before the runtime client exists, so the
rest of the suite keeps its single device).  Every case compares xform with real
JAX (values, output PartitionSpecs, shard shapes) and prints one JSON line per
case: {"case": name, "ok": bool, "err": text}.
"""
import os
import sys

from _multidevice import case_registry, run_cases  # noqa: E402  (asks for 8 devices)

import numpy as np  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jjnp  # noqa: E402
from jax.sharding import NamedSharding as JNS, PartitionSpec as JP  # noqa: E402

import xform  # noqa: E402
import xform.numpy as xnp  # noqa: E402
from xform.sharding import NamedSharding as XNS, PartitionSpec as XP  # noqa: E402

CASES, case = case_registry()


rng = np.random.default_rng(0)
# Auto axes on both sides (jax.sharding.Mesh's default; make_mesh's is Explicit)
_AUTO2 = (xform.sharding.AxisType.Auto,) * 2
JMESH = jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("x", "y"))
XMESH = xform.make_mesh((2, 4), ("x", "y"), axis_types=_AUTO2)
JM1 = jax.sharding.Mesh(np.array(jax.devices()[:8]), ("i",))
XM1 = xform.make_mesh((8,), ("i",), axis_types=(xform.sharding.AxisType.Auto,))


def spec_eq(xs, js):
    """xform spec == JAX spec (trailing Nones ignored)."""
    a = list(xs)
    b = list(js)
    while a and a[-1] is None:
        a.pop()
    while b and b[-1] is None:
        b.pop()
    return tuple(a) == tuple(b)


def close(a, b, tol=1e-5):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def same_layout(xa, ja):
    """Values, sharding spec and per-device shard shapes/indices agree."""
    close(xa, ja)
    assert spec_eq(xa.sharding.spec, ja.sharding.spec), (xa.sharding.spec, ja.sharding.spec)
    xs = {s.device.id: (s.index, s.data.shape) for s in xa.addressable_shards}
    js = {s.device.id: (s.index, s.data.shape) for s in ja.addressable_shards}
    assert xs == js, (xs, js)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ----------------------------------------------------------------- arrays

@case
def device_put_specs():
    x = f32(8, 16)
    for spec in [("x", "y"), ("x",), (None, "y"), (("x", "y"),), (), ("y", "x"), (None, ("y", "x"))]:
        xa = xform.device_put(x, XNS(XMESH, XP(*spec)))
        ja = jax.device_put(x, JNS(JMESH, JP(*spec)))
        same_layout(xa, ja)
        assert xa.is_fully_replicated == ja.is_fully_replicated
        assert xa.is_fully_addressable == ja.is_fully_addressable
        assert xa.sharding.shard_shape(x.shape) == ja.sharding.shard_shape(x.shape)
        for s in xa.addressable_shards:
            np.testing.assert_array_equal(np.asarray(s.data), x[s.index])


@case
def device_put_pytree():
    t = {"a": f32(8, 4), "b": (f32(4, 8), f32(8))}
    s = {"a": XNS(XMESH, XP("x")), "b": (XNS(XMESH, XP(None, "y")), XNS(XMESH, XP("y")))}
    out = xform.device_put(t, s)
    js = {"a": JNS(JMESH, JP("x")), "b": (JNS(JMESH, JP(None, "y")), JNS(JMESH, JP("y")))}
    jout = jax.device_put(t, js)
    for xa, ja in zip(jax.tree.leaves(out), jax.tree.leaves(jout)):
        same_layout(xa, ja)
    one = xform.device_put(t, XNS(XMESH, XP()))
    assert all(l.is_fully_replicated for l in xform.tree_util.tree_leaves(one))


@case
def make_array_from_callback_and_shards():
    x = f32(8, 8)
    for spec in [("x", "y"), (None, "y"), ()]:
        xa = xform.make_array_from_callback(x.shape, XNS(XMESH, XP(*spec)), lambda i: x[i])
        ja = jax.make_array_from_callback(x.shape, JNS(JMESH, JP(*spec)), lambda i: x[i])
        same_layout(xa, ja)
        arrs = [s.data for s in xa.addressable_shards]
        xb = xform.make_array_from_single_device_arrays(x.shape, XNS(XMESH, XP(*spec)), arrs)
        same_layout(xb, ja)
        xc = xform.make_array_from_process_local_data(XNS(XMESH, XP(*spec)), x)
        jc = jax.make_array_from_process_local_data(JNS(JMESH, JP(*spec)), x)
        same_layout(xc, jc)


@case
def visualize_and_eager_ops():
    import contextlib
    import io
    x = f32(8, 8)
    xa = xform.device_put(x, XNS(XMESH, XP("x", "y")))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        xform.debug.visualize_array_sharding(xa)
    text = buf.getvalue()
    assert "CPU 0" in text and "CPU 7" in text, text
    close(xnp.sin(xa) + 1, np.sin(x) + 1)        # eager ops on a sharded array
    ja = jax.device_put(x, JNS(JMESH, JP("x", "y")))
    for fx, fj in [(lambda t: xnp.sin(t) * 2 + 1, lambda t: jjnp.sin(t) * 2 + 1),
                   (lambda t: t.sum(0), lambda t: t.sum(0)),
                   (lambda t: t @ t, lambda t: t @ t)]:
        same_layout(fx(xa), fj(ja))
    close(xa[1:3], x[1:3])
    assert float(xa.max()) == float(x.max())


# ----------------------------------------------------------------- jit over meshes

@case
def jit_matmul_rows_cols_both():
    a, b = f32(16, 32), f32(32, 8)
    for sa, sb, so in [(("x", None), (None, None), ("x", None)),
                       ((None, None), (None, "y"), (None, "y")),
                       (("x", None), (None, "y"), ("x", "y")),
                       ((None, "y"), ("y", None), (None, None))]:
        xf = xform.jit(lambda p, q: xnp.tanh(p @ q),
                       in_shardings=(XNS(XMESH, XP(*sa)), XNS(XMESH, XP(*sb))),
                       out_shardings=XNS(XMESH, XP(*so)))
        jf = jax.jit(lambda p, q: jjnp.tanh(p @ q),
                     in_shardings=(JNS(JMESH, JP(*sa)), JNS(JMESH, JP(*sb))),
                     out_shardings=JNS(JMESH, JP(*so)))
        same_layout(xf(a, b), jf(a, b))


@case
def jit_sharded_args_xla_chooses():
    a, b = f32(16, 32), f32(32, 8)
    for sa, sb in [(("x", None), (None, "y")), ((None, "y"), ("y", None)), (("x", "y"), (None, None))]:
        xa, xb = xform.device_put(a, XNS(XMESH, XP(*sa))), xform.device_put(b, XNS(XMESH, XP(*sb)))
        ja, jb = jax.device_put(a, JNS(JMESH, JP(*sa))), jax.device_put(b, JNS(JMESH, JP(*sb)))
        for fx, fj in [(lambda p, q: p @ q, lambda p, q: p @ q),
                       (lambda p, q: (p @ q).sum(0), lambda p, q: (p @ q).sum(0)),
                       (lambda p, q: xnp.exp(p) * 2, lambda p, q: jjnp.exp(p) * 2)]:
            same_layout(xform.jit(fx)(xa, xb), jax.jit(fj)(ja, jb))


@case
def jit_prefix_none_and_pytrees():
    p = {"w": f32(16, 8), "b": f32(8)}
    x = f32(32, 16)
    xs = ({"w": XNS(XMESH, XP(None, "y")), "b": None}, XNS(XMESH, XP("x")))
    js = ({"w": JNS(JMESH, JP(None, "y")), "b": None}, JNS(JMESH, JP("x")))
    xo = xform.jit(lambda p, x: x @ p["w"] + p["b"], in_shardings=xs)(p, x)
    jo = jax.jit(lambda p, x: x @ p["w"] + p["b"], in_shardings=js)(p, x)
    same_layout(xo, jo)
    # out_shardings prefix over a tuple output, and a PartitionSpec under set_mesh
    with xform.sharding.set_mesh(XMESH):
        xo2 = xform.jit(lambda x: (x, x.sum()), out_shardings=(XP("x", "y"), XP()))(x)
    jo2 = jax.jit(lambda x: (x, x.sum()),
                  out_shardings=(JNS(JMESH, JP("x", "y")), JNS(JMESH, JP())))(x)
    for a, b in zip(xo2, jo2):
        same_layout(a, b)


@case
def with_sharding_constraint_inside_jit():
    x = f32(16, 16)
    xa = xform.device_put(x, XNS(XMESH, XP("x")))
    ja = jax.device_put(x, JNS(JMESH, JP("x")))
    xo = xform.jit(lambda t: xform.lax.with_sharding_constraint(t * 2, XNS(XMESH, XP(None, "y"))) + 1)(xa)
    jo = jax.jit(lambda t: jax.lax.with_sharding_constraint(t * 2, JNS(JMESH, JP(None, "y"))) + 1)(ja)
    same_layout(xo, jo)
    # grad through a constraint
    g = xform.jit(xform.grad(lambda t: (xform.lax.with_sharding_constraint(
        xnp.sin(t), XNS(XMESH, XP("x", "y"))) ** 2).sum()))(xa)
    close(g, 2 * np.sin(x) * np.cos(x), 1e-5)


@case
def lowered_text_has_annotations():
    x = f32(16, 8)
    f = xform.jit(lambda t: t.sum(1), in_shardings=XNS(XMESH, XP("x", "y")),
                  out_shardings=XNS(XMESH, XP("x")))
    low = f.lower(x)
    text = low.as_text()
    assert "sdy.mesh" in text and 'sdy.sharding<@mesh, [{"x"}, {"y"}]>' in text, text[:500]
    assert "num_partitions = 8" in text
    close(low.compile()(x), x.sum(1))
    assert spec_eq(low.output_shardings.spec, ("x",))


@case
def jit_donation_sharded():
    x = f32(16, 8)
    xa = xform.device_put(x, XNS(XMESH, XP("x")))
    f = xform.jit(lambda t: t * 3, in_shardings=XNS(XMESH, XP("x")),
                  out_shardings=XNS(XMESH, XP("x")), donate_argnums=0)
    out = f(xa)
    close(out, x * 3)
    try:
        np.asarray(xa)
    except RuntimeError:
        pass
    else:
        raise AssertionError("donated sharded input still readable")


# ----------------------------------------------------------------- shard_map

def both_shard_map(fx, fj, mesh_axes, in_specs, out_specs, *args, check=True):
    xm, jm = (XMESH, JMESH) if mesh_axes == 2 else (XM1, JM1)
    xo = xform.shard_map(fx, mesh=xm, in_specs=tuple(XP(*s) for s in in_specs),
                         out_specs=XP(*out_specs), check_vma=check)(*args)
    jo = jax.shard_map(fj, mesh=jm, in_specs=tuple(JP(*s) for s in in_specs),
                       out_specs=JP(*out_specs), check_vma=check)(*args)
    close(xo, jo)
    xj = xform.jit(xform.shard_map(fx, mesh=xm, in_specs=tuple(XP(*s) for s in in_specs),
                                   out_specs=XP(*out_specs), check_vma=check))(*args)
    close(xj, jo)
    assert spec_eq(xo.sharding.spec, jo.sharding.spec), (xo.sharding.spec, jo.sharding.spec)
    return xo, jo


X = xform.lax
J = jax.lax


@case
def shard_map_reductions():
    x = f32(16, 8)
    for name in ["psum", "pmax", "pmin", "pmean"]:
        both_shard_map(lambda a: getattr(X, name)(a, "i"), lambda a: getattr(J, name)(a, "i"),
                       1, [("i",)], (), x)
    both_shard_map(lambda a: X.psum(a, "x"), lambda a: J.psum(a, "x"), 2, [("x", "y")], (None, "y"), x)
    both_shard_map(lambda a: X.psum(a, ("x", "y")), lambda a: J.psum(a, ("x", "y")), 2,
                   [("x", "y")], (), x)
    both_shard_map(lambda a: X.psum(a.sum(), "i"), lambda a: J.psum(a.sum(), "i"), 1, [("i",)], (), x)


@case
def shard_map_gather_scatter():
    x = f32(16, 8)
    # all_gather results count as varying for check_vma (as in JAX): check_vma=False
    both_shard_map(lambda a: X.all_gather(a, "i", tiled=True), lambda a: J.all_gather(a, "i", tiled=True),
                   1, [("i",)], (), x, check=False)
    both_shard_map(lambda a: X.all_gather(a, "i", axis=1), lambda a: J.all_gather(a, "i", axis=1),
                   1, [("i",)], (), x, check=False)
    both_shard_map(lambda a: X.all_gather(a, "y", axis=1, tiled=True),
                   lambda a: J.all_gather(a, "y", axis=1, tiled=True), 2, [("x", "y")], ("x",), x,
                   check=False)
    y = f32(8, 64)
    both_shard_map(lambda a: X.psum_scatter(a, "i", scatter_dimension=1, tiled=True),
                   lambda a: J.psum_scatter(a, "i", scatter_dimension=1, tiled=True),
                   1, [("i",)], ("i",), y)
    z = f32(64, 8)
    both_shard_map(lambda a: X.psum_scatter(a, "i"), lambda a: J.psum_scatter(a, "i"),
                   1, [("i",)], ("i",), z)


@case
def shard_map_permute_all_to_all_axis_index():
    x = f32(16, 8)
    perm = [(i, (i + 3) % 8) for i in range(8)]
    both_shard_map(lambda a: X.ppermute(a, "i", perm), lambda a: J.ppermute(a, "i", perm),
                   1, [("i",)], ("i",), x)
    half = [(0, 1), (2, 3)]
    both_shard_map(lambda a: X.ppermute(a, "y", half), lambda a: J.ppermute(a, "y", half),
                   2, [("x", "y")], ("x", "y"), x)
    y = f32(16, 64)
    both_shard_map(lambda a: X.all_to_all(a, "i", 1, 0, tiled=True),
                   lambda a: J.all_to_all(a, "i", 1, 0, tiled=True), 1, [("i",)], ("i",), y)
    w = f32(64, 8)
    both_shard_map(lambda a: X.all_to_all(a, "i", 0, 1),
                   lambda a: J.all_to_all(a, "i", 0, 1), 1, [("i",)], ("i",), w)
    # JAX's pbroadcast has no CPU lowering: the oracle is its documented definition
    both_shard_map(lambda a: X.pbroadcast(a, "i", 3),
                   lambda a: J.psum(jjnp.where(J.axis_index("i") == 3, a, 0), "i"),
                   1, [("i",)], ("i",), x)
    both_shard_map(lambda a: X.pswapaxes(a, "i", 1), lambda a: J.pswapaxes(a, "i", 1),
                   1, [("i",)], ("i",), x)
    xr = xform.reshard(xform.device_put(x, XNS(XMESH, XP("x"))), XNS(XMESH, XP(None, "y")))
    same_layout(xr, jax.device_put(x, JNS(JMESH, JP(None, "y"))))
    both_shard_map(lambda a: a * X.axis_index("y") + X.axis_index("x"),
                   lambda a: a * J.axis_index("y") + J.axis_index("x"), 2, [("x", "y")], ("x", "y"), x)


@case
def shard_map_grad_vmap():
    x = f32(16, 8)

    def xf(a):
        return xform.shard_map(lambda b: X.psum((xnp.sin(b) * b).sum(), "i"), mesh=XM1,
                               in_specs=XP("i"), out_specs=XP())(a)

    def jf(a):
        return jax.shard_map(lambda b: J.psum((jjnp.sin(b) * b).sum(), "i"), mesh=JM1,
                             in_specs=JP("i"), out_specs=JP())(a)
    close(xform.grad(xf)(x), jax.grad(jf)(x))
    close(xform.jit(xform.grad(xf))(x), jax.grad(jf)(x))

    # replicated weights, sharded data: grad w.r.t. both
    w = f32(8, 4)

    def xl(w, a):
        return xform.shard_map(lambda w, b: X.pmean(((b @ w) ** 2).mean(), "i"), mesh=XM1,
                               in_specs=(XP(), XP("i")), out_specs=XP())(w, a)

    def jl(w, a):
        return jax.shard_map(lambda w, b: J.pmean(((b @ w) ** 2).mean(), "i"), mesh=JM1,
                             in_specs=(JP(), JP("i")), out_specs=JP())(w, a)
    for xg, jg in zip(xform.grad(xl, argnums=(0, 1))(w, x), jax.grad(jl, argnums=(0, 1))(w, x)):
        close(xg, jg, 1e-4)
    # grad through all_gather / ppermute
    perm = [(i, (i + 1) % 8) for i in range(8)]
    xg = xform.grad(lambda a: xform.shard_map(
        lambda b: (X.ppermute(b, "i", perm) * X.all_gather(b, "i", tiled=True)[:2]).sum()[None],
        mesh=XM1, in_specs=XP("i"), out_specs=XP("i"), check_vma=False)(a).sum())(x)
    jg = jax.grad(lambda a: jax.shard_map(
        lambda b: (J.ppermute(b, "i", perm) * J.all_gather(b, "i", tiled=True)[:2]).sum()[None],
        mesh=JM1, in_specs=JP("i"), out_specs=JP("i"), check_vma=False)(a).sum())(x)
    close(xg, jg, 1e-4)
    # vmap and jit(vmap) of shard_map
    B = f32(3, 16, 8)
    xv = xform.vmap(xform.shard_map(lambda b: X.psum(b, "i") * 2, mesh=XM1, in_specs=XP("i"),
                                    out_specs=XP()))
    jv = jax.vmap(jax.shard_map(lambda b: J.psum(b, "i") * 2, mesh=JM1, in_specs=JP("i"),
                                out_specs=JP()))
    close(xv(B), jv(B))
    close(xform.jit(xv)(B), jv(B))
    xv1 = xform.vmap(xform.shard_map(lambda b: X.psum(b, "i") * 2, mesh=XM1, in_specs=XP("i"),
                                     out_specs=XP()), in_axes=1)
    close(xv1(np.ascontiguousarray(np.moveaxis(B, 0, 1))), jv(B))


@case
def experimental_shard_map_and_check_rep():
    from xform.experimental.shard_map import shard_map as xsm
    x = f32(16, 8)
    out = xsm(lambda a: X.psum(a, "i"), XM1, (XP("i"),), XP(), check_rep=False)(x)
    close(out, x.reshape(8, 2, 8).sum(0))


# ----------------------------------------------------------------- pmap

@case
def pmap_basics():
    x = f32(8, 5)
    for fx, fj in [(lambda a: a / X.psum(a, "i"), lambda a: a / J.psum(a, "i")),
                   (lambda a: X.all_gather(a, "i"), lambda a: J.all_gather(a, "i")),
                   (lambda a: a * X.axis_index("i"), lambda a: a * J.axis_index("i")),
                   (lambda a: X.pmax(a, "i") - a, lambda a: J.pmax(a, "i") - a)]:
        close(xform.pmap(fx, axis_name="i")(x), jax.pmap(fj, axis_name="i")(x))
    y = f32(3, 4)
    close(xform.pmap(lambda a, b: a * b, in_axes=(1, None), out_axes=1)(y, 2.0),
          jax.pmap(lambda a, b: a * b, in_axes=(1, None), out_axes=1)(y, 2.0))
    close(xform.pmap(lambda a, k: a * k, static_broadcasted_argnums=1)(y, 3),
          jax.pmap(lambda a, k: a * k, static_broadcasted_argnums=1)(y, 3))
    close(xform.pmap(lambda a: (a, a.sum()), out_axes=(0, None), axis_name="i")(y)[1],
          jax.pmap(lambda a: (a, a.sum()), out_axes=(0, None), axis_name="i")(y)[1])
    xg = xform.grad(lambda a: xform.pmap(lambda b: X.psum(b ** 2, "i"), axis_name="i")(a).sum())(x)
    jg = jax.grad(lambda a: jax.pmap(lambda b: J.psum(b ** 2, "i"), axis_name="i")(a).sum())(x)
    close(xg, jg)
    # nested pmap (JAX 0.10.2 rejects it: its pmap is a shard_map): checked with NumPy
    z = np.arange(24, dtype=np.float32).reshape(2, 4, 3) + 1
    nested = xform.pmap(xform.pmap(lambda a: a / X.psum(a, ("i", "j")) + X.psum(a, "j") *
                                   X.axis_index("i"), axis_name="j"), axis_name="i")
    close(nested(z), z / z.sum((0, 1)) + z.sum(1, keepdims=True) * np.arange(2.0, dtype=np.float32)[:, None, None])
    d = xform.device_put(np.ones((4, 3), np.float32))
    out = xform.pmap(lambda a: a + 1, donate_argnums=0)(d)
    close(out, np.full((4, 3), 2, np.float32))


# ----------------------------------------------------------------- training

def _mlp_init():
    r = np.random.default_rng(1)
    return {"w1": (r.standard_normal((16, 32)) * 0.3).astype(np.float32),
            "b1": np.zeros(32, np.float32),
            "w2": (r.standard_normal((32, 4)) * 0.3).astype(np.float32)}


def _loss(p, x, y, np_=xnp):
    h = np_.tanh(x @ p["w1"] + p["b1"])
    return ((h @ p["w2"] - y) ** 2).mean()


@case
def data_parallel_training_matches_single_device():
    r = np.random.default_rng(2)
    x = r.standard_normal((64, 16)).astype(np.float32)
    y = r.standard_normal((64, 4)).astype(np.float32)

    def step(p, x, y):
        l, g = xform.value_and_grad(_loss)(p, x, y)
        return xform.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), l

    single = xform.jit(step)
    rep, data = XNS(XM1, XP()), XNS(XM1, XP("i"))
    dp = xform.jit(step, in_shardings=(rep, data, data), out_shardings=(rep, rep))
    p1 = _mlp_init()
    p2 = xform.device_put(_mlp_init(), rep)
    xs, ys = xform.device_put(x, data), xform.device_put(y, data)
    l1, l2 = [], []
    for _ in range(5):
        p1, a = single(p1, x, y)
        p2, b = dp(p2, xs, ys)
        l1.append(float(a))
        l2.append(float(b))
    np.testing.assert_allclose(l1, l2, rtol=1e-5)
    assert l2[-1] < l2[0]
    assert spec_eq(p2["w1"].sharding.spec, ())
    # tensor parallel (2-D mesh): w1 split by columns over y, batch over x
    tp = xform.jit(step, in_shardings=({"w1": XNS(XMESH, XP(None, "y")), "b1": XNS(XMESH, XP("y")),
                                        "w2": XNS(XMESH, XP("y", None))},
                                       XNS(XMESH, XP("x")), XNS(XMESH, XP("x"))))
    p3 = _mlp_init()
    l3 = []
    for _ in range(5):
        p3, c = tp(p3, x, y)
        l3.append(float(c))
    np.testing.assert_allclose(l1, l3, rtol=1e-5)
    assert p3["w1"].addressable_shards[0].data.shape in [(16, 8), (16, 32)]


# ----------------------------------------------------------------- errors

def _raises(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None, ""


@case
def bad_inputs_match_jax_types():
    x = f32(10, 8)
    pairs = [
        (lambda: XNS(XMESH, XP("z")), lambda: JNS(JMESH, JP("z")), "z"),
        (lambda: xform.device_put(x, XNS(XMESH, XP("y"))),
         lambda: jax.device_put(x, JNS(JMESH, JP("y"))), "10"),
        (lambda: xform.make_mesh((4, 4), ("a", "b")), lambda: jax.make_mesh((4, 4), ("a", "b")), "16"),
        (lambda: xform.shard_map(lambda a: a, mesh=XM1, in_specs=XP("i"), out_specs=XP())(f32(16)),
         lambda: jax.shard_map(lambda a: a, mesh=JM1, in_specs=JP("i"), out_specs=JP())(f32(16)),
         "i"),
        (lambda: xform.shard_map(lambda a: a, mesh=XM1, in_specs=XP("i"), out_specs=XP("i"))(f32(12)),
         lambda: jax.shard_map(lambda a: a, mesh=JM1, in_specs=JP("i"), out_specs=JP("i"))(f32(12)),
         "12"),
        (lambda: xform.shard_map(lambda a: a, mesh=XM1, in_specs=XP("q"), out_specs=XP())(f32(16)),
         lambda: jax.shard_map(lambda a: a, mesh=JM1, in_specs=JP("q"), out_specs=JP())(f32(16)),
         "q"),
        (lambda: xform.pmap(lambda a: a)(f32(9, 2)), lambda: jax.pmap(lambda a: a)(f32(9, 2)), "9"),
    ]
    for fx, fj, word in pairs:
        tx, mx = _raises(fx)
        tj, _ = _raises(fj)
        assert tj is not None and tx is not None, (tx, tj)
        # the same type, or JAX's own subclass of the builtin type xform raises
        assert tx is tj or issubclass(tx, tj) or (tx.__module__ == "builtins" and
                                                  issubclass(tj, tx)), (tx, tj, mx)
        assert word in mx, (word, mx)


def main():
    only = set(sys.argv[1:])
    run_cases([f for f in CASES if not only or f.__name__ in only])


if __name__ == "__main__":
    main()

"""xform.export: round trips through bytes and a fresh process, calling under
jit/grad/vmap, JAX's error texts, and interoperability with jax.export both ways.

The fresh-process test writes artifacts + inputs to a temporary directory and
runs a standalone script there that imports only xform (the functions that were
exported are defined in this test module, which that process cannot import).
Tests that need JAX to (de)serialize use JAX's FlatBuffer runtime
(``flatbuffers``, a test dependency): they are skipped where it is missing.
"""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export as jexport

import xform
import xform.numpy as xnp
from xform import export, lax as xl, nn

ROOT = pathlib.Path(__file__).resolve().parent.parent
f32 = np.float32


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=tol, atol=tol)


def tree_close(a, b, tol=1e-5):
    la, ta = xform.tree_util.tree_flatten(a)
    lb, tb = xform.tree_util.tree_flatten(b)
    assert len(la) == len(lb), (ta, tb)
    for x, y in zip(la, lb):
        close(x, y, tol)


def mlp_params(seed=0, sizes=(6, 8, 3)):
    rng = np.random.RandomState(seed)
    return [(rng.randn(i, o).astype(f32) * 0.5, rng.randn(o).astype(f32) * 0.1)
            for i, o in zip(sizes[:-1], sizes[1:])]


def predict(params, x):
    for w, b in params[:-1]:
        x = nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss(params, x, y):
    return xnp.mean((predict(params, x) - y) ** 2)


def jpredict(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def cumulative(xs, c0):
    def body(c, x):
        c = c * 0.9 + xnp.sin(x)
        return c, c * 2.0
    return xl.scan(body, c0, xs)


def pytree_fn(d, pair):
    a, bs = pair
    return {"sum": d["x"] + a, "items": [bs[0] * 2, (d["y"].sum(), None)]}


def pytree_args():
    rng = np.random.RandomState(3)
    return ({"x": rng.randn(3).astype(f32), "y": rng.randn(2, 2).astype(f32)},
            (rng.randn(3).astype(f32), [rng.randn(4).astype(f32)]))


# ----------------------------------------------------------------- in-process


def test_exported_fields_and_module():
    params = mlp_params()
    x = np.ones((5, 6), f32)
    exp = export.export(xform.jit(predict))(params, x)
    assert exp.fun_name == "predict"
    assert exp.in_tree == xform.tree_util.tree_structure(((params, x), {}))
    assert [a.shape for a in exp.in_avals] == [(6, 8), (8,), (8, 3), (3,), (5, 6)]
    assert [a.shape for a in exp.out_avals] == [(5, 3)]
    assert exp.platforms == ("cpu",) and exp.nr_devices == 1
    assert exp.calling_convention_version == 10
    assert exp.ordered_effects == () and exp.in_shardings_hlo == (None,) * 5
    assert exp.module_kept_var_idx == tuple(range(5))
    text = exp.mlir_module()
    assert "func.func public @main" in text and 'jax.result_info = "result"' in text
    assert "jax.uses_shape_polymorphism = false" in text
    # the artifact is VHLO bytecode (a StableHLO portable artifact), not pickle
    assert exp.mlir_module_serialized[:4] == b"ML\xefR"
    close(exp.call(params, x), jpredict(params, x))


def test_serialize_roundtrip_in_process_and_transformations():
    params = mlp_params(1)
    x = np.random.RandomState(0).randn(4, 6).astype(f32)
    y = np.random.RandomState(1).randn(4, 3).astype(f32)
    exp = export.deserialize(export.export(xform.jit(loss))(params, x, y).serialize(vjp_order=1))
    want = jax.value_and_grad(lambda p: jnp.mean((jpredict(p, x) - y) ** 2))(params)
    close(exp.call(params, x, y), want[0])
    close(xform.jit(exp.call)(params, x, y), want[0])
    g = xform.grad(lambda p: exp.call(p, x, y))(params)
    tree_close(g, want[1])
    gj = xform.jit(xform.grad(lambda p: exp.call(p, x, y) * 3.0))(params)
    tree_close(gj, jax.tree_util.tree_map(lambda t: 3 * t, want[1]))
    # vmap (JAX has no batching rule for exported calls; ours loops over the batch)
    xs = np.random.RandomState(2).randn(3, 4, 6).astype(f32)
    out = xform.vmap(lambda xb: exp.call(params, xb, y))(xs)
    close(out, [float(np.mean((np.asarray(jpredict(params, xb)) - y) ** 2)) for xb in xs])


def test_vjp_exported_and_missing_vjp():
    params = mlp_params(2)
    x = np.ones((2, 6), f32)
    exp = export.export(xform.jit(predict))(params, x)
    v = exp.vjp()
    assert len(v.in_avals) == 5 + 1 and len(v.out_avals) == 5
    ct = np.random.RandomState(0).randn(2, 3).astype(f32)
    got = v.call(*[a for w in params for a in w], x, ct)
    _, pull = jax.vjp(jpredict, params, x)
    want = jax.tree_util.tree_leaves(pull(ct))
    for g, w in zip(got, want):
        close(g, w)
    no_vjp = export.deserialize(exp.serialize())
    with pytest.raises(ValueError, match="vjp_order=1"):
        xform.grad(lambda x: no_vjp.call(params, x).sum())(x)


def test_scan_and_pytree_roundtrip_in_process():
    xs = np.linspace(0, 1, 12, dtype=f32).reshape(6, 2)
    c0 = np.zeros(2, f32)
    exp = export.deserialize(export.export(xform.jit(cumulative))(xs, c0).serialize())
    tree_close(exp.call(xs, c0), cumulative(xs, c0))
    args = pytree_args()
    exp2 = export.deserialize(export.export(xform.jit(pytree_fn))(*args).serialize())
    out = exp2.call(*args)
    assert xform.tree_util.tree_structure(out) == xform.tree_util.tree_structure(
        pytree_fn(*args))
    tree_close(out, pytree_fn(*args))


def test_shape_dtype_structs_kwargs_and_platforms():
    def f(x, *, scale):
        return x * scale
    sds = xform.ShapeDtypeStruct((3,), np.float32)
    exp = export.export(xform.jit(f), platforms=("cpu", "cuda"))(sds, scale=sds)
    assert exp.platforms == ("cpu", "cuda")
    assert "_platform_index" in exp.mlir_module()
    close(exp.call(np.ones(3, f32), scale=np.full(3, 2, f32)), [2, 2, 2])
    tpu_only = export.export(xform.jit(f), platforms=("tpu",))(sds, scale=sds)
    with pytest.raises(ValueError, match="was exported for platforms"):
        tpu_only.call(np.ones(3, f32), scale=np.ones(3, f32))
    with pytest.raises(ValueError, match="must be the result of `jit`"):
        export.export(f)(sds, scale=sds)
    with pytest.raises(ValueError, match="Unsupported platform"):
        export.export(xform.jit(f), platforms=("abacus",))


def _jax_error(fn, specs, call_args):
    jexp = jexport.export(jax.jit(fn))(*specs)
    with pytest.raises(ValueError) as e:
        jexp.call(*call_args)
    return str(e.value)


def test_call_errors_match_jax():
    x = np.ones((2, 3), f32)
    exp = export.export(xform.jit(lambda x: x * 2))(x)
    want = _jax_error(lambda x: x * 2, [x], [np.ones((2, 4), f32)])
    with pytest.raises(ValueError) as e:
        exp.call(np.ones((2, 4), f32))
    assert str(e.value) == want
    want = _jax_error(lambda x: x * 2, [x], [np.ones((2, 3), np.int32)])
    with pytest.raises(ValueError) as e:
        exp.call(np.ones((2, 3), np.int32))
    assert str(e.value) == want
    want = _jax_error(lambda x: x * 2, [x], [np.ones((6,), f32)])
    with pytest.raises(ValueError) as e:
        exp.call(np.ones((6,), f32))
    assert str(e.value) == want
    with pytest.raises(ValueError, match="same pytree structure"):
        exp.call([x])


def test_symbolic_shape_parsing_matches_jax():
    for spec in ["b, 4", "(b, 2*a)", "a*b, 4", "b + 1, 3", "2*b - 1"]:
        ours = export.symbolic_shape(spec)
        theirs = jexport.symbolic_shape(spec)
        assert [str(d) for d in ours] == [str(d) for d in theirs], spec
    a, b = export.symbolic_shape("a, b")
    assert a * b == b * a and a + 1 - 1 == a and int(a - a + 3) == 3
    with pytest.raises(ValueError, match="syntax error"):
        export.symbolic_shape("b, 4 +")


# ----------------------------------------------------------------- polymorphic artifacts from JAX


def test_calls_jax_polymorphic_artifact_at_two_batch_sizes_with_jax_errors():
    flatbuffers = pytest.importorskip("flatbuffers")
    del flatbuffers
    b, = jexport.symbolic_shape("b")

    def f(x):
        return jnp.sum(x.reshape(-1), keepdims=True) * x.shape[0] + jnp.cumsum(x, 0)[-1]
    jexp = jexport.export(jax.jit(f))(jax.ShapeDtypeStruct((b, 4), f32))
    exp = export.deserialize(jexp.serialize())
    assert str(exp.in_avals[0]) == "ShapedArray(float32[b,4])"
    for n in (3, 5):
        x = np.arange(n * 4, dtype=f32).reshape(n, 4)
        close(exp.call(x), f(x))
        close(xform.jit(exp.call)(x), f(x))
    for bad in (np.zeros((0, 4), f32), np.zeros((3, 5), f32)):
        with pytest.raises(ValueError) as theirs:
            jexp.call(bad)
        with pytest.raises(ValueError) as ours:
            exp.call(bad)
        assert str(ours.value) == str(theirs.value)


# ----------------------------------------------------------------- polymorphic export from xform


def jlogits(params, x):
    return jax.nn.log_softmax(jpredict(params, x))


def logits(params, x):
    return nn.log_softmax(predict(params, x))


def test_batch_polymorphic_export_two_sizes_grad_and_errors():
    params = mlp_params(12)
    b, = export.symbolic_shape("b")
    exp = export.export(xform.jit(logits))(params, xform.ShapeDtypeStruct((b, 6), f32))
    jb, = jexport.symbolic_shape("b")
    jexp = jexport.export(jax.jit(jlogits))(params, jax.ShapeDtypeStruct((jb, 6), f32))
    assert [repr(a) for a in exp.in_avals] == [repr(a) for a in jexp.in_avals]
    assert [repr(a) for a in exp.out_avals] == [repr(a) for a in jexp.out_avals]
    assert "jax.uses_shape_polymorphism = true" in exp.mlir_module()
    assert "tensor<?x6xf32>" in exp.mlir_module()
    exp = export.deserialize(exp.serialize(vjp_order=1))
    for n in (2, 7):
        x = np.random.RandomState(n).randn(n, 6).astype(f32)
        close(exp.call(params, x), jlogits(params, x))
        g = xform.grad(lambda p: exp.call(p, x).sum())(params)
        tree_close(g, jax.grad(lambda p: jlogits(p, x).sum())(params), 1e-4)
    for bad in (np.zeros((0, 6), f32), np.zeros((3, 5), f32)):
        with pytest.raises(ValueError) as theirs:
            jexp.call(params, bad)
        with pytest.raises(ValueError) as ours:
            exp.call(params, bad)
        assert str(ours.value) == str(theirs.value)


def test_product_dimension_reshape_and_consistency_errors():
    a, b = export.symbolic_shape("a, b")
    ja, jb = jexport.symbolic_shape("a, b")

    def f(x, y):
        return xnp.sin(x.reshape(-1)) + y * x.shape[0]

    def jf(x, y):
        return jnp.sin(x.reshape(-1)) + y * x.shape[0]
    exp = export.export(xform.jit(f))(xform.ShapeDtypeStruct((a, b), f32),
                                      xform.ShapeDtypeStruct((a * b,), f32))
    jexp = jexport.export(jax.jit(jf))(jax.ShapeDtypeStruct((ja, jb), f32),
                                       jax.ShapeDtypeStruct((ja * jb,), f32))
    assert [repr(v) for v in exp.out_avals] == [repr(v) for v in jexp.out_avals]
    for shape in ((2, 3), (5, 1)):
        x = np.random.RandomState(0).randn(*shape).astype(f32)
        y = np.arange(x.size, dtype=f32)
        close(exp.call(x, y), jf(x, y))
    bad = (np.ones((2, 3), f32), np.ones((7,), f32))
    with pytest.raises(ValueError) as theirs:
        jexp.call(*bad)
    with pytest.raises(ValueError) as ours:
        exp.call(*bad)
    assert str(ours.value) == str(theirs.value)


def test_polymorphic_export_rejects_shape_dependent_structure():
    b, = export.symbolic_shape("b")

    def unrolled(x):       # one op per row: the program's structure depends on b
        return sum(x[i] for i in range(x.shape[0]))
    with pytest.raises(ValueError, match="symbolic shapes"):
        export.export(xform.jit(unrolled))(xform.ShapeDtypeStruct((b,), f32))

    def branches(x):       # JAX: inconclusive comparison; here: caught by the small check point
        return x * 2 if x.shape[0] > 100 else x * 3
    with pytest.raises(ValueError, match="branch on a size"):
        export.export(xform.jit(branches))(xform.ShapeDtypeStruct((b, 4), f32))


def test_dimension_variable_solved_from_a_multiple():
    b, = export.symbolic_shape("b")
    jb, = jexport.symbolic_shape("b")

    def halves(x):
        return x.reshape(x.shape[0] // 2, -1).sum(1) * x.shape[0]

    def jhalves(x):
        return x.reshape(x.shape[0] // 2, -1).sum(1) * x.shape[0]
    exp = export.export(xform.jit(halves))(xform.ShapeDtypeStruct((2 * b,), f32))
    jexp = jexport.export(jax.jit(jhalves))(jax.ShapeDtypeStruct((2 * jb,), f32))
    assert repr(exp.out_avals) == repr(jexp.out_avals)
    for n in (2, 10):
        x = np.arange(n, dtype=f32)
        close(exp.call(x), jhalves(x))
    with pytest.raises(ValueError) as theirs:
        jexp.call(np.arange(9, dtype=f32))
    with pytest.raises(ValueError) as ours:
        exp.call(np.arange(9, dtype=f32))
    assert str(ours.value) == str(theirs.value)


def test_polymorphic_xform_artifact_called_by_jax():
    pytest.importorskip("flatbuffers")
    params = mlp_params(13)
    b, = export.symbolic_shape("b")
    blob = export.export(xform.jit(logits))(params, xform.ShapeDtypeStruct((b, 6), f32)) \
        .serialize(vjp_order=1)
    jexp = jexport.deserialize(blob)
    assert repr(jexp.in_avals[-1]) == "ShapedArray(float32[b,6])"
    for n in (3, 4):
        x = np.random.RandomState(n).randn(n, 6).astype(f32)
        close(jexp.call(params, x), jlogits(params, x))
        close(jax.jit(jexp.call)(params, x), jlogits(params, x))
        tree_close(jax.grad(lambda p: jexp.call(p, x).sum())(params),
                   jax.grad(lambda p: jlogits(p, x).sum())(params), 1e-4)


# ----------------------------------------------------------------- interop with jax.export


def test_xform_artifact_called_by_jax():
    pytest.importorskip("flatbuffers")
    params = mlp_params(4)
    x = np.random.RandomState(5).randn(3, 6).astype(f32)
    y = np.random.RandomState(6).randn(3, 3).astype(f32)
    blob = export.export(xform.jit(loss), platforms=("cpu", "cuda"))(params, x, y).serialize(
        vjp_order=1)
    jexp = jexport.deserialize(blob)
    assert jexp.in_tree == jax.tree_util.tree_structure(((params, x, y), {}))
    assert jexp.platforms == ("cpu", "cuda")
    jloss = lambda p: jnp.mean((jpredict(p, x) - y) ** 2)   # noqa: E731
    close(jexp.call(params, x, y), jloss(params))
    close(jax.jit(jexp.call)(params, x, y), jloss(params))
    tree_close(jax.grad(lambda p: jexp.call(p, x, y))(params), jax.grad(jloss)(params))


def test_jax_artifact_called_by_xform():
    pytest.importorskip("flatbuffers")
    params = mlp_params(7)
    x = np.random.RandomState(8).randn(3, 6).astype(f32)

    def jf(params, x):
        return {"out": jpredict(params, x), "norm": [jnp.sum(x ** 2)]}
    blob = jexport.export(jax.jit(jf))(params, x).serialize(vjp_order=1)
    exp = export.deserialize(blob)
    assert exp.in_tree == xform.tree_util.tree_structure(((params, x), {}))
    tree_close(exp.call(params, x), jf(params, x))
    g = xform.grad(lambda p: exp.call(p, x)["out"].sum())(params)
    tree_close(g, jax.grad(lambda p: jf(p, x)["out"].sum())(params))


def test_jax_artifact_of_committed_arguments():
    """JAX records arguments committed to one device as named shardings over the empty
    mesh: the artifact is still a single-device one, read and called by xform, and
    those shardings survive our re-serialization (read back by JAX)."""
    pytest.importorskip("flatbuffers")
    x = np.random.RandomState(9).randn(2, 3).astype(f32)
    jexp = jexport.export(jax.jit(lambda x: jnp.cos(x) * 3))(jax.device_put(x, jax.devices()[0]))
    blob = jexp.serialize()
    exp = export.deserialize(blob)
    assert exp.nr_devices == 1
    assert exp.in_shardings_hlo == jexport.deserialize(blob).in_shardings_hlo
    close(exp.call(x), np.cos(x) * 3)
    back = jexport.deserialize(exp.serialize())
    assert [str(s.spec) for s in back._in_named_shardings] == \
        [str(s.spec) for s in jexp._in_named_shardings]
    close(back.call(x), np.cos(x) * 3)


def test_sharded_export_over_a_one_device_mesh():
    """On one device a function jitted with shardings over a 1-device mesh exports with
    nr_devices 1 and its (trivial) shardings, as JAX's does."""
    pytest.importorskip("flatbuffers")
    from xform.sharding import NamedSharding, PartitionSpec as P
    mesh = xform.make_mesh((1,), ("d",))
    f = xform.jit(lambda x: x + 1, in_shardings=NamedSharding(mesh, P("d")))
    x = np.arange(4.0, dtype=f32)
    exp = export.export(f)(x)
    jm = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("d",))
    jexp = jexport.deserialize(jexport.export(
        jax.jit(lambda x: x + 1, in_shardings=jax.sharding.NamedSharding(
            jm, jax.sharding.PartitionSpec("d"))))(x).serialize())
    assert exp.nr_devices == jexp.nr_devices == 1
    assert exp.in_shardings_hlo == jexp.in_shardings_hlo
    close(export.deserialize(exp.serialize()).call(x), x + 1)
    close(jexport.deserialize(exp.serialize()).call(x), x + 1)


# ----------------------------------------------------------------- a fresh process

_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import xform
    from xform import export
    work = sys.argv[1]
    cases = json.load(open(f"{work}/cases.json"))
    results = {}
    for name, spec in cases.items():
        exp = export.deserialize(open(f"{work}/{name}.bin", "rb").read())
        for k, inputs in enumerate(spec["inputs"]):
            npz = np.load(f"{work}/{inputs}")
            args = [npz[f"a{i}"] for i in range(len(npz.files))]
            leaves = xform.tree_util.tree_leaves(exp.call(*exp.in_tree.unflatten(args)[0]))
            if spec.get("grad"):
                g = xform.grad(lambda *a: exp.call(*a).sum(), argnums=0)(
                    *exp.in_tree.unflatten(args)[0])
                leaves += xform.tree_util.tree_leaves(g)
            np.savez(f"{work}/out_{name}_{k}.npz", *[np.asarray(l) for l in leaves])
    assert "test_export" not in sys.modules
    print("child ok")
""")


def test_roundtrip_in_fresh_process(tmp_path):
    rng = np.random.RandomState(11)
    params = mlp_params(9)
    x = rng.randn(4, 6).astype(f32)
    y = rng.randn(4, 3).astype(f32)
    xs = rng.randn(5, 2).astype(f32)
    c0 = np.zeros(2, f32)
    cases, expected = {}, {}

    def add(name, fn, args, want, grad=False, vjp_order=0, specs=None, more=()):
        exp = export.export(xform.jit(fn))(*(specs or args))
        (tmp_path / f"{name}.bin").write_bytes(exp.serialize(vjp_order=vjp_order))
        cases[name] = {"inputs": [], "grad": grad}
        expected[name] = []
        for k, (a, w) in enumerate([(args, want)] + list(more)):
            leaves = xform.tree_util.tree_leaves(a)
            np.savez(tmp_path / f"in_{name}_{k}.npz", **{f"a{i}": np.asarray(l)
                                                         for i, l in enumerate(leaves)})
            cases[name]["inputs"].append(f"in_{name}_{k}.npz")
            expected[name].append(xform.tree_util.tree_leaves(w))

    add("mlp", predict, (params, x), jpredict(params, x))
    jl = lambda p: jnp.mean((jpredict(p, x) - y) ** 2)   # noqa: E731
    add("mlp_grad", xform.grad(loss), (params, x, y), jax.grad(jl)(params))
    # gradient through the deserialized function (its exported VJP travels in the bytes)
    add("loss_vjp", loss, (params, x, y), [jl(params), jax.grad(jl)(params)], grad=True,
        vjp_order=1)
    add("scan", cumulative, (xs, c0), cumulative(xs, c0))
    args = pytree_args()
    add("pytree", pytree_fn, args, pytree_fn(*args))
    # batch-polymorphic: one artifact, called at two batch sizes
    b, = export.symbolic_shape("b")
    x2, x9 = rng.randn(2, 6).astype(f32), rng.randn(9, 6).astype(f32)
    add("poly", logits, (params, x2), jlogits(params, x2),
        specs=(params, xform.ShapeDtypeStruct((b, 6), f32)),
        more=[((params, x9), jlogits(params, x9))])
    try:      # a JAX artifact calling jaxlib's LAPACK kernels (needs their registration)
        import flatbuffers  # noqa: F401
        a = np.array([[2., 1, 0], [1, 3, 0], [0, 0, 1]], f32)
        jfun = lambda a: jnp.linalg.inv(a) @ jnp.linalg.eigh(a)[1]   # noqa: E731
        (tmp_path / "jax_linalg.bin").write_bytes(jexport.export(jax.jit(jfun))(a).serialize())
        np.savez(tmp_path / "in_jax_linalg_0.npz", a0=a)
        cases["jax_linalg"] = {"inputs": ["in_jax_linalg_0.npz"], "grad": False}
        expected["jax_linalg"] = [[jfun(a)]]
    except ImportError:
        pass
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    for name, wants in expected.items():
        for k, want in enumerate(wants):
            got = np.load(tmp_path / f"out_{name}_{k}.npz")
            got = [got[f"arr_{i}"] for i in range(len(got.files))]
            want = xform.tree_util.tree_leaves(want)
            assert len(got) == len(want), name
            for g, w in zip(got, want):
                close(g, w)


def xent(w, x, y):
    return -xnp.mean(xnp.sum(nn.log_softmax(x @ w) * nn.one_hot(y, 3), -1)), y.sum()


def jxent(w, x, y):
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(x @ w) * jax.nn.one_hot(y, 3), -1)), y.sum()


def test_grad_with_integer_inputs_and_outputs_uses_float0():
    rng = np.random.RandomState(21)
    w, x = rng.randn(4, 3).astype(f32), rng.randn(5, 4).astype(f32)
    y = np.array([0, 1, 2, 1, 0], np.int32)
    want = jax.grad(lambda w: jxent(w, x, y)[0])(w)
    b, = export.symbolic_shape("b")
    for specs in [(w, x, y), (w, xform.ShapeDtypeStruct((b, 4), f32),
                              xform.ShapeDtypeStruct((b,), np.int32))]:
        exp = export.export(xform.jit(xent))(*specs)
        v = exp.vjp()
        jv = jexport.export(jax.jit(jxent))(w, x, y).vjp()
        assert [a.dtype.name for a in v.out_avals][-1] == "void"        # float0
        assert len(v.in_avals) == len(jv.in_avals) and len(v.out_avals) == len(jv.out_avals)
        exp = export.deserialize(exp.serialize(vjp_order=1))
        assert str(exp.vjp().out_avals[-1].dtype) == str(v.out_avals[-1].dtype)
        close(xform.grad(lambda w: exp.call(w, x, y)[0])(w), want)


def test_jax_differentiates_xform_artifact_with_integer_inputs():
    pytest.importorskip("flatbuffers")
    rng = np.random.RandomState(22)
    w, x = rng.randn(4, 3).astype(f32), rng.randn(5, 4).astype(f32)
    y = np.array([2, 1, 2, 1, 0], np.int32)
    jexp = jexport.deserialize(export.export(xform.jit(xent))(w, x, y).serialize(1))
    assert str(jexp.vjp().out_avals[-1]) == "float0[5]"
    close(jax.grad(lambda w: jexp.call(w, x, y)[0])(w),
          jax.grad(lambda w: jxent(w, x, y)[0])(w))


def test_typed_prng_keys_travel_as_key_data():
    def f(k, x):
        return x + xform.random.normal(k, x.shape), xform.random.split(k, 2)
    k, x = xform.random.key(5), np.zeros(3, f32)
    exp = export.deserialize(export.export(xform.jit(f))(k, x).serialize())
    assert str(exp.in_avals[0].dtype) == "key<fry>" and "tensor<2xui32>" in exp.mlir_module()
    out, keys = exp.call(k, x)
    want_out, want_keys = f(k, x)
    close(out, want_out)
    np.testing.assert_array_equal(xform.random.key_data(keys), xform.random.key_data(want_keys))
    # JAX's threefry keys are the same bits: JAX's own export of the same function agrees
    jexp = jexport.export(jax.jit(lambda k, x: x + jax.random.normal(k, x.shape)))(
        jax.random.key(5), x)
    assert repr(jexp.in_avals[0]) == repr(exp.in_avals[0])
    close(jexp.call(jax.random.key(5), x), out)


def test_multi_platform_export_with_platform_specific_kernels():
    # Cholesky lowers to LAPACK on CPU and cusolver on CUDA: the module holds both
    # programs behind a stablehlo.case on the platform index (JAX's convention).
    def f(a):
        return xnp.linalg.cholesky(a) * 2
    a = np.array([[4., 2], [2, 3]], f32)
    exp = export.export(xform.jit(f), platforms=("cpu", "cuda"))(a)
    text = exp.mlir_module()
    assert "stablehlo.case" in text and "lapack_spotrf" in text and "cusolver" in text
    exp = export.deserialize(exp.serialize())
    close(exp.call(a), np.linalg.cholesky(a) * 2)
    close(xform.jit(exp.call)(a), np.linalg.cholesky(a) * 2)


class _Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


xform.tree_util.register_pytree_node(_Pair, lambda p: ((p.a, p.b), "pair"),
                                     lambda aux, ch: _Pair(*ch))
export.register_pytree_node_serialization(
    _Pair, serialized_name="tests.test_export._Pair",
    serialize_auxdata=lambda aux: aux.encode(), deserialize_auxdata=lambda b: b.decode())
_NT = __import__("collections").namedtuple("_NT", "x y")
export.register_namedtuple_serialization(_NT, serialized_name="tests.test_export._NT")


def test_custom_pytree_nodes_serialize():
    args = (_Pair(np.ones(2, f32), np.full(2, 2, f32)), _NT(np.ones(2, f32), np.full(2, 3, f32)))
    exp = export.deserialize(export.export(xform.jit(
        lambda p, nt: _NT(p.a + nt.x, p.b * nt.y)))(*args).serialize())
    out = exp.call(*args)
    assert type(out) is _NT
    close(out.x, [2, 2])
    close(out.y, [6, 6])
    with pytest.raises(ValueError, match="Duplicate serialization"):
        export.register_namedtuple_serialization(_NT, serialized_name="other")
    with pytest.raises(ValueError, match="unregistered type"):
        export.export(xform.jit(lambda s: s))(
            __import__("collections").OrderedDict(a=np.ones(1, f32))).serialize()


def test_batch_polymorphic_scan():
    W = np.random.RandomState(0).randn(3, 3).astype(f32) * 0.5

    def rnn(xs, h0):
        def body(h, x):
            h = xnp.tanh(h @ W + x)
            return h, h.sum(-1)
        return xl.scan(body, h0, xs)

    def jrnn(xs, h0):
        def body(h, x):
            h = jnp.tanh(h @ W + x)
            return h, h.sum(-1)
        return jax.lax.scan(body, h0, xs)
    b, = export.symbolic_shape("b")
    exp = export.export(xform.jit(rnn))(xform.ShapeDtypeStruct((5, b, 3), f32),
                                        xform.ShapeDtypeStruct((b, 3), f32))
    assert [repr(a) for a in exp.out_avals] == ["ShapedArray(float32[b,3])",
                                                "ShapedArray(float32[5,b])"]
    exp = export.deserialize(exp.serialize())
    for n in (1, 4):
        xs = np.random.RandomState(n).randn(5, n, 3).astype(f32)
        h0 = np.zeros((n, 3), f32)
        tree_close(exp.call(xs, h0), jrnn(xs, h0))


def test_symbolic_constraints_sampling_and_errors():
    a, b = export.symbolic_shape("a, b", constraints=("b <= a",))
    ja, jb = jexport.symbolic_shape("a, b", constraints=("b <= a",))

    def f(x, y):     # needs a >= b: traced only at sizes satisfying the constraint
        return x[:y.shape[0]] * 2 + y
    exp = export.export(xform.jit(f))(xform.ShapeDtypeStruct((a,), f32),
                                      xform.ShapeDtypeStruct((b,), f32))
    jexp = jexport.export(jax.jit(f))(jax.ShapeDtypeStruct((ja,), f32),
                                      jax.ShapeDtypeStruct((jb,), f32))
    x, y = np.arange(5, dtype=f32), np.ones(3, f32)
    close(exp.call(x, y), jexp.call(x, y))
    bad = (np.ones(2, f32), np.ones(3, f32))
    with pytest.raises(ValueError) as theirs:
        jexp.call(*bad)
    for e in (exp, export.deserialize(exp.serialize())):   # kept across serialization
        with pytest.raises(ValueError) as ours:
            e.call(*bad)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="Constraint parsing error"):
        export.symbolic_shape("a, b", constraints=("a > b",))
    c, = export.symbolic_shape("c", constraints=("c == 4",))
    with pytest.raises(ValueError, match="equality constraint"):
        export.export(xform.jit(lambda x: x))(xform.ShapeDtypeStruct((c,), f32))


def test_batch_polymorphic_gather_and_scatter():
    E = np.random.RandomState(1).randn(20, 4).astype(f32)

    def f(tok, y, emb):
        h = emb[tok].sum(1)
        lp = nn.log_softmax(h)
        picked = xnp.take_along_axis(lp, y[:, None], axis=1)[:, 0]
        return picked.mean(), xnp.zeros_like(h).at[xnp.arange(h.shape[0]), y].add(1.0)

    def jf(tok, y, emb):
        h = emb[tok].sum(1)
        lp = jax.nn.log_softmax(h)
        picked = jnp.take_along_axis(lp, y[:, None], axis=1)[:, 0]
        return picked.mean(), jnp.zeros_like(h).at[jnp.arange(h.shape[0]), y].add(1.0)
    b, = export.symbolic_shape("b")
    exp = export.export(xform.jit(f))(xform.ShapeDtypeStruct((b, 3), np.int32),
                                      xform.ShapeDtypeStruct((b,), np.int32), E)
    for n in (2, 6):
        rng = np.random.RandomState(n)
        tok, y = rng.randint(0, 20, (n, 3)).astype(np.int32), rng.randint(0, 4, n).astype(np.int32)
        tree_close(exp.call(tok, y, E), jf(tok, y, E))

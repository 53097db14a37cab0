"""The dispatch fast paths (eager operators/ufuncs on host Arrays, jit's monomorphic
cache) give exactly what the general paths give -- checked against real JAX, and
against the same call forced through the general path (bind / a fresh trace)."""
import ml_dtypes
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xform
import xform.numpy as xnp
from xform._src.interpreters import core
from xform._src.primitives.elementwise import add_p, mul_p, sin_p

FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32]


def same(x, j, rtol=0.0):
    """Same dtype, weak type and values as JAX's result."""
    assert np.dtype(x.dtype) == np.dtype(j.dtype), (x.dtype, j.dtype)
    assert bool(x.weak_type) == bool(j.weak_type), (x.weak_type, j.weak_type)
    a = np.asarray(x).astype(np.float64)
    b = np.asarray(j).astype(np.float64)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=0)


OPS = {
    "x + y": lambda m, x, y: x + y,
    "x - y": lambda m, x, y: x - y,
    "x * y": lambda m, x, y: x * y,
    "x / y": lambda m, x, y: x / y,
    "sin(x)": lambda m, x, y: m.sin(x),
    "-x": lambda m, x, y: -x,
    "x * 2.0": lambda m, x, y: x * 2.0,
    "3 * x": lambda m, x, y: 3 * x,
    "1.5 - x": lambda m, x, y: 1.5 - x,
    "maximum(x, -0.0)": lambda m, x, y: m.maximum(x, -0.0),
}


# Default run: 8 draws; the slow step runs the profile's default (the _exhaustive twin).
@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", list(OPS))
@settings(max_examples=8)
@given(st.lists(st.floats(-100, 100, width=16), min_size=0, max_size=6),
       st.booleans())
def test_eager_fast_paths_match_jax(op, dt, xs, weak):
    _test_eager_fast_paths_match_jax(op, dt, xs, weak)


@pytest.mark.slow
@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", list(OPS))
@given(st.lists(st.floats(-100, 100, width=16), min_size=0, max_size=6),
       st.booleans())
def test_eager_fast_paths_match_jax_exhaustive(op, dt, xs, weak):
    _test_eager_fast_paths_match_jax(op, dt, xs, weak)


def _test_eager_fast_paths_match_jax(op, dt, xs, weak):
    x_np = np.asarray(xs, np.float32).astype(dt)
    y_np = (x_np.astype(np.float32) * 0.5 + 1.25).astype(dt)
    if weak:   # 0-d weakly typed operands (Python scalars promoted)
        x, y = xnp.asarray(1.5), xnp.asarray(2.25)
        xj, yj = jnp.asarray(1.5), jnp.asarray(2.25)
    else:
        x, y = xnp.asarray(x_np), xnp.asarray(y_np)
        xj, yj = jnp.asarray(x_np), jnp.asarray(y_np)
    tol = 0 if op != "sin(x)" else 2e-3 if np.dtype(dt).itemsize == 2 else 1e-6
    same(OPS[op](xnp, x, y), OPS[op](jnp, xj, yj), rtol=tol)


def test_eager_fast_path_equals_bind():
    x = xnp.asarray(np.linspace(-2, 2, 7, dtype=np.float32))
    y = xnp.asarray(np.linspace(1, 3, 7, dtype=np.float32))
    for fast, prim, args in ((lambda: x + y, add_p, (x, y)), (lambda: x * y, mul_p, (x, y)),
                             (lambda: xnp.sin(x), sin_p, (x,))):
        a, b = fast(), prim.bind(*args)
        assert type(a) is core.Array and a.dtype == b.dtype and a.weak_type == b.weak_type
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_eager_fast_path_is_silent_and_honours_debug_nans():
    big = xnp.asarray(np.full(3, 3e38, np.float32))
    with np.errstate(all="raise"):               # XLA semantics: never warns or raises
        assert np.isinf(np.asarray(big * 10.0)).all()
        assert np.isinf(np.asarray(big + big)).all()
    xform.config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match="sub"):
            (big * 10.0) - (big * 10.0)
    finally:
        xform.config.update("jax_debug_nans", False)


def test_eager_fast_rebuilt_when_a_rule_changes():
    from xform._src.interpreters.core import Primitive
    from xform._src.interpreters import core
    p = Primitive("probe_double")
    try:
        p.def_impl(lambda x: x * 2)
        assert p.eager_fast() is None                 # no shape rule yet: no fast path
        p.def_abstract_eval(lambda a: a)
        f = p.eager_fast()
        assert np.asarray(f(False, np.ones(2))).tolist() == [2.0, 2.0]
        p.def_impl(lambda x: x * 3)
        assert np.asarray(p.eager_fast()(False, np.ones(2))).tolist() == [3.0, 3.0]
        assert p.eager_fast()(True, np.ones(2)).weak_type
        p.def_abstract_eval(lambda a: a.strip_weak_type())   # the result's weak type follows it
        assert not p.eager_fast()(True, np.ones(2)).weak_type
    finally:   # out of the global rule tables (the rule-coverage test reads them)
        core.impl_rules.pop(p, None)
        core.abstract_eval_rules.pop(p, None)


def test_operators_still_defer_to_other_operands():
    x = xnp.asarray(np.ones(3, np.float32))

    class Other:
        def __radd__(self, other):
            return "radd"

        def __rmul__(self, other):
            return "rmul"

    assert x + Other() == "radd" and x * Other() == "rmul"
    with pytest.raises(TypeError):
        x + [1, 2, 3] + "s"


# ----------------------------------------------------------------- jit monomorphic cache


def _pair():
    def f(m):
        return lambda a, b: m.sin(a + b) * 2.0
    return xform.jit(f(xnp)), jax.jit(f(jnp))


def test_jit_fast_path_device_and_numpy_args_match_jax():
    jx, jj = _pair()
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    y = np.linspace(0, 2, 8, dtype=np.float32)
    xd, yd = xform.device_put(x), xform.device_put(y)
    for _ in range(3):
        same(jx(xd, yd), jj(x, y), rtol=1e-6)
        same(jx(x, y), jj(x, y), rtol=1e-6)
        same(jx(xnp.asarray(x), yd), jj(x, y), rtol=1e-6)
    out = jx(xd, yd)
    same(jx(out, out), jj(np.asarray(out), np.asarray(out)), rtol=1e-6)   # jit output chained
    assert jx._cache_size() == 1


def test_jit_fast_path_rejects_other_signatures():
    jx, jj = _pair()
    x32 = np.ones(4, np.float32)
    for _ in range(3):
        jx(x32, x32)
    # weak-typed, other dtype, other shape, Python scalar, x64 flag: each its own trace
    w = xnp.asarray(1.0)
    same(jx(w, w), jj(jnp.asarray(1.0), jnp.asarray(1.0)), rtol=1e-6)
    same(jx(np.ones(4, np.int32), np.ones(4, np.int32)),
         jj(np.ones(4, np.int32), np.ones(4, np.int32)), rtol=1e-6)
    same(jx(np.ones(5, np.float32), x32[:1]), jj(np.ones(5, np.float32), x32[:1]), rtol=1e-6)
    same(jx(x32, 2.0), jj(x32, 2.0), rtol=1e-6)
    for _ in range(2):
        same(jx(x32, x32), jj(x32, x32), rtol=1e-6)
    with pytest.raises(TypeError):
        jx(x32, "not an array")
    n = jx._cache_size()
    x64 = np.ones(4, np.float64)
    xform.config.update("jax_enable_x64", True)
    try:
        assert jx(x64, x64).dtype == np.float64
        assert jx._cache_size() == n + 1
    finally:
        xform.config.update("jax_enable_x64", False)
    assert jx(x64, x64).dtype == np.float32


def test_jit_fast_path_respects_disable_jit_and_deletion():
    calls = []

    def f(a):
        calls.append(1)
        return a + 1.0
    jf = xform.jit(f)
    x = xform.device_put(np.zeros(3, np.float32))
    for _ in range(3):
        jf(x)
    n = len(calls)
    with xform.disable_jit():
        jf(x)
    assert len(calls) == n + 1            # ran eagerly, not through the cached program
    x.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        jf(x)


def test_jit_fast_path_debug_nans():
    jf = xform.jit(lambda a: xnp.log(a))
    x = xform.device_put(np.full(2, -1.0, np.float32))
    for _ in range(3):
        assert np.isnan(np.asarray(jf(x))).all()
    xform.config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError):
            jf(x)
    finally:
        xform.config.update("jax_debug_nans", False)


def test_jit_fast_path_with_constants_and_pytree_outputs():
    c = np.arange(4, dtype=np.float32)
    jx = xform.jit(lambda a: {"s": a * xnp.asarray(c), "t": (a + 1.0,)})
    jj = jax.jit(lambda a: {"s": a * jnp.asarray(c), "t": (a + 1.0,)})
    x = xform.device_put(np.ones(4, np.float32))
    for _ in range(3):
        ox, oj = jx(x), jj(np.ones(4, np.float32))
        same(ox["s"], oj["s"])
        same(ox["t"][0], oj["t"][0])


def test_jit_pytree_argument_fast_path_matches_jax_and_falls_back():
    """``step(params, batch)``: repeated calls take the pytree inline cache; a changed
    structure, dtype or a deleted leaf leaves it for the general path (and its errors)."""
    def step(p, x):
        return {"y": x @ p["w"] + p["b"], "n": (p["w"] ** 2).sum()}

    rng = np.random.default_rng(0)
    p = {"w": rng.normal(size=(3, 2)).astype(np.float32), "b": np.ones(2, np.float32)}
    x = rng.normal(size=(4, 3)).astype(np.float32)
    fx, fj = xform.jit(step), jax.jit(step)
    px = xform.device_put(p)
    want = fj(p, x)
    for _ in range(3):
        got = fx(px, xform.device_put(x))
        for k in ("y", "n"):
            np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-6)
    assert fx._fast.mono is not None or fx._fast.tree_mono is not None
    # another structure (extra key) retraces and stays correct
    p2 = dict(p, unused=np.zeros(1, np.float32))
    np.testing.assert_allclose(np.asarray(fx(p2, x)["y"]), np.asarray(fj(p2, x)["y"]), rtol=1e-6)
    # another dtype in a leaf: not the cached signature
    x16 = x.astype(np.float16)
    assert fx(px, x16)["y"].dtype == fj(p, x16)["y"].dtype
    # a deleted leaf reaches the general path's clear error
    dead = xform.device_put(p)
    dead["w"].delete()
    with pytest.raises(RuntimeError, match="deleted"):
        fx(dead, x)


# ----------------------------------------------------------------- generated call paths


import collections  # noqa: E402

_Pair = collections.namedtuple("_Pair", ["a", "b"])


def _trees(m, rng):
    w = rng.normal(size=(3, 2)).astype(np.float32)
    b = rng.normal(size=(2,)).astype(np.float32)
    return {"w": w, "nested": [(b, None), _Pair(b, w)], "empty": ()}


def _tree_fn(m):
    def f(p, x):
        y = x @ p["w"] + p["nested"][0][0]
        return {"y": y, "pair": _Pair(m.sum(y), p["nested"][1].b * 2.0), "none": None,
                "list": [p["nested"][1].a, (m.tanh(y),)]}
    return f


def _assert_tree_close(got, want):
    from xform.tree_util import tree_flatten as xf
    gl, gt = xf(got)
    wl, wt = jax.tree_util.tree_flatten(want)
    assert len(gl) == len(wl)
    assert type(got) is type(want)
    for g, w in zip(gl, wl):
        assert type(g) is core.Array
        same(g, w, rtol=1e-6)


def test_generated_call_path_pytrees_match_jax():
    rng = np.random.default_rng(1)
    p = _trees(np, rng)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    fx, fj = xform.jit(_tree_fn(xnp)), jax.jit(_tree_fn(jnp))
    want = fj(p, x)
    px = xform.device_put(p)
    for args in [(px, xform.device_put(x))] * 3 + [(p, x)] * 3:   # device leaves, NumPy leaves
        got = fx(*args)
        _assert_tree_close(got, want)
        assert type(got["pair"]) is _Pair and got["none"] is None
    assert fx._fast.mono is not None
    assert fx._cache_size() == 1


@pytest.mark.parametrize("change", ["list_for_tuple", "other_key", "extra_leaf", "weak",
                                    "dtype", "shape", "scalar"])
def test_generated_call_path_misses_fall_back(change):
    """A call differing from the cached signature in any way gives what JAX gives (a
    new trace), never a silently reused program."""
    def f(p):
        return p["a"][0] * 2.0 + p["a"][1]
    fx, fj = xform.jit(f), jax.jit(f)
    a = np.arange(3, dtype=np.float32)
    base = {"a": (a, a + 1)}
    for _ in range(3):
        fx(base)
    other = {
        "list_for_tuple": {"a": [a, a + 1]},
        "other_key": {"b": (a, a + 1)},
        "extra_leaf": {"a": (a, a + 1, a)},
        "weak": {"a": (xnp.asarray(2.0), xnp.asarray(1.0))},
        "dtype": {"a": (a.astype(np.int32), a.astype(np.int32))},
        "shape": {"a": (a[:2], a[:2])},
        "scalar": {"a": (2.0, a)},
    }[change]
    if change == "other_key":
        with pytest.raises(KeyError):
            fj(other)
        with pytest.raises(KeyError):
            fx(other)
        return
    if change == "extra_leaf":
        want = fj(other)
        got = fx(other)
    else:
        jo = jax.tree_util.tree_map(lambda v: jnp.asarray(v) if not isinstance(v, xform.Array)
                                    else jnp.asarray(np.asarray(v), dtype=v.dtype), other)
        if change == "weak":
            jo = {"a": (jnp.asarray(2.0), jnp.asarray(1.0))}
        want, got = fj(jo), fx(other)
    same(got, want, rtol=1e-6)
    same(fx(base), fj(base), rtol=1e-6)       # the cached signature still works


def test_generated_call_path_none_outputs_and_no_arguments():
    calls = []

    def f():
        calls.append(1)
        return None
    g = xform.jit(lambda: (xnp.ones(2), None))
    jf = xform.jit(f)
    for _ in range(3):
        assert jf() is None
        out = g()
        assert out[1] is None and np.asarray(out[0]).tolist() == [1.0, 1.0]
    assert len(calls) == 1


def test_generated_call_path_custom_nodes_and_donation():
    @xform.tree_util.register_pytree_node_class
    class Box:
        def __init__(self, v, tag):
            self.v, self.tag = v, tag

        def tree_flatten(self):
            return (self.v,), self.tag

        @classmethod
        def tree_unflatten(cls, tag, ch):
            return cls(ch[0], tag)

    f = xform.jit(lambda b: Box(b.v + 1.0, b.tag))
    x = xform.device_put(np.zeros(2, np.float32))
    for _ in range(3):
        out = f(Box(x, "t"))
        assert type(out) is Box and out.tag == "t"
        np.testing.assert_array_equal(np.asarray(out.v), [1.0, 1.0])
    out = f(Box(x, "u"))                  # other aux data: another trace
    assert out.tag == "u"
    d = xform.jit(lambda a: a * 2.0, donate_argnums=0)
    for _ in range(2):
        y = xform.device_put(np.ones(2, np.float32))
        np.testing.assert_array_equal(np.asarray(d(y)), [2.0, 2.0])
        assert y.is_deleted()
        with pytest.raises(RuntimeError, match="deleted"):
            d(y)


def test_generated_call_path_deleted_leaf_in_pytree():
    f = xform.jit(lambda p: p[0] + p[1])
    a = xform.device_put(np.ones(2, np.float32))
    for _ in range(3):
        f((a, a))
    b = xform.device_put(np.ones(2, np.float32))
    b.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        f((a, b))
    np.testing.assert_array_equal(np.asarray(f((a, a))), [2.0, 2.0])


# ----------------------------------------------------------------- packed NumPy transfer


def _join_packers():
    import threading
    for t in threading.enumerate():
        if t.name.startswith("xform-jit-pack"):
            t.join(60)


DT_CASES = [np.float32, np.int8, np.uint8, np.bool_, np.float16, np.int32, np.uint16]


@pytest.mark.parametrize("dt", DT_CASES, ids=lambda d: np.dtype(d).name)
def test_packed_program_semantics(dt):
    """The packed program (arguments as one byte buffer sliced and bitcast back) computes
    what the original computes, evaluated by the NumPy reference interpreter."""
    from xform._src.interpreters.ir import eval_jaxpr
    from xform._src.lowering import dispatch
    rng = np.random.default_rng(0)

    def f(a, b, c):
        return [a.astype(np.float32) * 2 + b.sum(), c]
    a = (rng.normal(size=(2, 3)) * 10).astype(dt)
    b = rng.normal(size=(4,)).astype(np.float32)
    c = (rng.normal(size=(3,)) * 10).astype(dt)
    closed = xform.make_jaxpr(f)(a, b, c)
    packed = dispatch.packed_program(closed, 0, (0, 2))
    blob = np.frombuffer(a.tobytes() + c.tobytes(), np.uint8)
    got = eval_jaxpr(packed.jaxpr, packed.consts, blob, b)
    want = eval_jaxpr(closed.jaxpr, closed.consts, a, b, c)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_packed_numpy_transfer_end_to_end_matches_jax():
    from xform._src.lowering import dispatch
    rng = np.random.default_rng(3)

    def step(p, x, y):
        return {"loss": ((x @ p["w"] - y) ** 2).sum(), "mask": x > 0}
    p = {"w": rng.normal(size=(3, 2)).astype(np.float32)}
    x = rng.normal(size=(4, 3)).astype(np.float32)
    y = rng.normal(size=(4, 2)).astype(np.float32)
    fx, fj = xform.jit(step), jax.jit(step)
    px = xform.device_put(p)
    want = fj(p, x, y)
    for _ in range(dispatch.PACK_AFTER + 2):
        fx(px, x, y)
    _join_packers()
    assert "_pk" in fx._fast.mono.__source__           # the packed call path is in use
    for _ in range(2):
        got = fx(px, x, y)
        same(got["loss"], want["loss"], rtol=1e-5)
        np.testing.assert_array_equal(np.asarray(got["mask"]), np.asarray(want["mask"]))
    # other values, then device arrays / another dtype where NumPy arrays were packed
    x2 = rng.normal(size=(4, 3)).astype(np.float32)
    same(fx(px, x2, y)["loss"], fj(p, x2, y)["loss"], rtol=1e-5)
    same(fx(px, xform.device_put(x2), y)["loss"], fj(p, x2, y)["loss"], rtol=1e-5)
    same(fx(px, x2.astype(np.float16), y)["loss"], fj(p, x2.astype(np.float16), y)["loss"],
         rtol=1e-3)
    same(fx(px, x, y)["loss"], want["loss"], rtol=1e-5)
    # a NumPy array mutated after the call does not change the result
    x3 = x.copy()
    out = fx(px, x3, y)["loss"]
    x3[:] = 100.0
    same(out, want["loss"], rtol=1e-5)


def test_pack_plan_limits():
    from xform._src.interpreters.core import ShapedArray
    from xform._src.lowering import dispatch
    f32 = np.dtype(np.float32)
    small = [ShapedArray((8,), f32)] * 3
    assert dispatch.pack_plan(small, 0, (0, 1, 2)) == (0, 1, 2)
    assert dispatch.pack_plan(small, 0, (1,)) == ()                    # one leaf: no gain
    big = [ShapedArray((dispatch.PACK_MAX_BYTES,), f32)] * 2
    assert dispatch.pack_plan(big, 0, (0, 1)) == ()                    # large: copy-bound
    weak = [ShapedArray((), f32, weak_type=True)] * 2
    assert dispatch.pack_plan(weak, 0, (0, 1)) == ()
    c64 = [ShapedArray((2,), np.dtype(np.complex64))] * 2
    assert dispatch.pack_plan(c64, 0, (0, 1)) == ()
    assert dispatch.pack_plan(small, 1, (0, 1)) == (0, 1)             # after a constant


def test_packed_transfer_with_hoisted_constants():
    from xform._src.lowering import dispatch
    c = np.linspace(0, 1, 5).astype(np.float32)

    def f(a, b):
        return a * xnp.asarray(c) + b.astype(np.float32)
    fx = xform.jit(f)
    a = np.arange(5, dtype=np.float32)
    b = np.arange(5, dtype=np.int16)
    want = a * c + b.astype(np.float32)
    for _ in range(dispatch.PACK_AFTER + 2):
        fx(a, b)
    _join_packers()
    assert "_pk" in fx._fast.mono.__source__
    np.testing.assert_allclose(np.asarray(fx(a, b)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(fx(a + 1, b)), want + c, rtol=1e-6)

"""jit: results, caching/retracing, compositions with grad/vmap, donation, AOT API,
explain-cache-misses, debug_nans, debug callbacks, devices -- against real JAX."""
import functools
import gc
import logging
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import xform
from xform import lax

L = xform.lax
JL = jax.lax


def xsum(x):
    return L.reduce_sum(x, axes=tuple(range(x.ndim)))


def f_both(L_, S):
    def f(x, y):
        return S(L_.mul(L_.sin(x), L_.cos(y))), L_.add(L_.exp(L_.neg(x)), y)
    return f


fx = f_both(L, xsum)
fj = f_both(JL, jnp.sum)

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4)).astype(np.float32)
Y = rng.standard_normal((3, 4)).astype(np.float32)


def close(a, b, tol=1e-5):
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        u, v = np.asarray(u), np.asarray(v)
        assert u.shape == v.shape and u.dtype == v.dtype, (u.shape, u.dtype, v.shape, v.dtype)
        np.testing.assert_allclose(u, v, rtol=tol, atol=tol)


# ----------------------------------------------------------------- results


def test_matches_jax():
    close(xform.jit(fx)(X, Y), jax.jit(fj)(X, Y))


def test_pytree_args_kwargs_and_outputs():
    def g(L_, S):
        def h(p, *, scale):
            return {"s": S(L_.mul(p["a"], scale)), "t": (p["b"], L_.sin(p["a"]))}
        return h
    p = {"a": X, "b": (Y, np.float32(2.0))}
    close(xform.jit(g(L, xsum))(p, scale=Y), jax.jit(g(JL, jnp.sum))(p, scale=Y))


def test_python_scalars_and_weak_types():
    out = xform.jit(lambda x: L.mul(x, 2.0))(3.0)
    ref = jax.jit(lambda x: x * 2.0)(3.0)
    assert out.dtype == ref.dtype and out.weak_type == ref.weak_type == True  # noqa: E712
    out = xform.jit(lambda x: L.mul(x, 2.0))(np.float32(3.0))
    assert out.weak_type is False
    assert float(out) == 6.0


def test_constant_output_and_passthrough():
    def g(x):
        return x, 1.0, np.arange(3, dtype=np.int32)
    a, b, c = xform.jit(g)(X)
    close((a, b, c), jax.jit(g)(X))


def test_closure_over_concrete_array():
    c = rng.standard_normal((3, 4)).astype(np.float32)
    close(xform.jit(lambda x: L.mul(x, c))(X), X * c)


def test_decorator_forms():
    @xform.jit
    def a(x):
        return L.sin(x)

    @functools.partial(xform.jit, static_argnums=1)
    def b(x, n):
        return L.mul(x, float(n))

    @xform.jit(static_argnames="n")
    def c(x, n):
        return L.mul(x, float(n))

    close(a(X), np.sin(X))
    close(b(X, 3), X * 3)
    close(c(X, n=3), X * 3)
    assert a.__name__ == "a" and a.__wrapped__ is not None


def test_method_decorator():
    class M:
        def __init__(self, k):
            self.k = k

        @functools.partial(xform.jit, static_argnums=0)
        def f(self, x):
            return L.mul(x, float(self.k))

        def __hash__(self):
            return hash(self.k)

        def __eq__(self, o):
            return self.k == o.k
    close(M(2).f(X), 2 * X)


# ----------------------------------------------------------------- caching / retracing


def _count(f):
    n = [0]

    @functools.wraps(f)
    def g(*a, **k):
        n[0] += 1
        return f(*a, **k)
    return g, n


def test_retrace_counts():
    g, n = _count(lambda x: L.neg(x))
    jg = xform.jit(g)
    jg(X)
    jg(X)
    jg(xform.jit(lambda x: x)(X))
    assert n[0] == 1
    jg(np.ones((2, 2), np.float32))
    assert n[0] == 2
    jg(np.ones((2, 2), np.int32))
    assert n[0] == 3
    assert jg._cache_size() == 3


def test_weak_type_is_part_of_the_key():
    g, n = _count(lambda x: L.mul(x, 2.0))
    jg = xform.jit(g)
    jg(1.0)
    jg(2.0)
    assert n[0] == 1
    jg(np.float32(1.0))
    assert n[0] == 2
    jf = jax.jit(lambda x: x * 2.0)
    jf(1.0), jf(2.0), jf(np.float32(1.0))
    assert jg._cache_size() == jf._cache_size()


def test_static_args_retrace():
    g, n = _count(lambda x, k: L.mul(x, float(k)))
    jg = xform.jit(g, static_argnums=(1,))
    jg(X, 2)
    jg(X, 2)
    assert n[0] == 1
    jg(X, 3)
    assert n[0] == 2
    jg(X, k=3)      # static_argnames inferred from static_argnums
    close(jg(X, k=4), 4 * X)
    jneg = xform.jit(lambda x, k: L.mul(x, float(k)), static_argnums=-1)
    close(jneg(X, 5), 5 * X)


def test_cache_shared_across_wrappers_and_freed_with_function():
    def g(x):
        return L.sin(x)
    xform.jit(g)(X)
    j2 = xform.jit(g)
    assert j2._cache_size() == 1
    r = weakref.ref(g)
    del g, j2
    gc.collect()
    assert r() is None


def test_x64_flag_in_key():
    g, n = _count(lambda x: L.mul(x, 2))
    jg = xform.jit(g)
    jg(np.arange(3))
    xform.config.update("jax_enable_x64", True)
    try:
        out = jg(np.arange(3))
        assert out.dtype == np.int64
    finally:
        xform.config.update("jax_enable_x64", False)
    assert n[0] == 2
    assert jg(np.arange(3)).dtype == np.int32


_SIGS = st.sampled_from([((3,), np.float32), ((4,), np.float32), ((3,), np.int32),
                         ((), np.float32), ((2, 3), np.float32), "pyfloat", "pyint"])


@given(st.lists(_SIGS, min_size=1, max_size=8))
def test_retrace_count_matches_jax(sigs):
    def mk(s):
        if s == "pyfloat":
            return 1.5
        if s == "pyint":
            return 2
        return np.ones(s[0], s[1])
    g, n = _count(lambda x: x)
    jg = xform.jit(g)
    jf = jax.jit(lambda x: x)
    for s in sigs:
        jg(mk(s))
        jf(mk(s))
    assert jg._cache_size() == jf._cache_size() == n[0]


# ----------------------------------------------------------------- compositions


def scalar_fx(x):
    return xsum(L.mul(L.sin(x), x))


def scalar_fj(x):
    return jnp.sum(jnp.sin(x) * x)


def test_grad_of_jit_and_jit_of_grad():
    ref = jax.grad(scalar_fj)(X)
    close(xform.grad(xform.jit(scalar_fx))(X), ref)
    close(xform.jit(xform.grad(scalar_fx))(X), ref)
    close(xform.jit(xform.grad(xform.jit(scalar_fx)))(X), ref)


def test_grad_of_jit_reuses_compilation():
    jf = xform.jit(scalar_fx)
    g, n = _count(scalar_fx)
    jg = xform.jit(g)
    for _ in range(3):
        xform.grad(jg)(X)
    assert n[0] == 1
    del jf


def test_vmap_of_jit_and_jit_of_vmap_grad():
    Xb = rng.standard_normal((5, 3)).astype(np.float32)
    close(xform.vmap(xform.jit(scalar_fx))(Xb), jax.vmap(scalar_fj)(Xb))
    close(xform.jit(xform.vmap(xform.grad(scalar_fx)))(Xb),
          jax.jit(jax.vmap(jax.grad(scalar_fj)))(Xb))
    close(xform.vmap(xform.grad(xform.jit(scalar_fx)))(Xb), jax.vmap(jax.grad(scalar_fj))(Xb))
    close(xform.vmap(xform.jit(lambda x, y: L.mul(x, y)), in_axes=(0, None))(Xb, Xb[0]),
          Xb * Xb[0])


def test_nested_jit_and_higher_order():
    inner = xform.jit(lambda x: L.mul(L.sin(x), x))
    outer = xform.jit(lambda x: xsum(inner(L.cos(inner(x)))))
    ref = lambda x: jnp.sum(jnp.sin(jnp.cos(jnp.sin(x) * x)) * jnp.cos(jnp.sin(x) * x))  # noqa
    close(outer(X), ref(X))
    close(xform.grad(outer)(X), jax.grad(ref)(X), tol=1e-4)
    x0 = np.float32(0.7)
    h = xform.grad(xform.grad(xform.jit(lambda x: L.mul(L.sin(x), x))))
    hj = jax.grad(jax.grad(lambda x: jnp.sin(x) * x))
    close(h(x0), hj(x0), tol=1e-5)
    close(xform.jit(h)(x0), hj(x0), tol=1e-5)


def test_jvp_vjp_of_jit():
    jf = xform.jit(fx)
    p, t = xform.jvp(jf, (X, Y), (Y, X))
    pr, tr = jax.jvp(fj, (X, Y), (Y, X))
    close((p, t), (pr, tr), tol=1e-4)
    out, vjp = xform.vjp(jf, X, Y)
    outr, vjpr = jax.vjp(fj, X, Y)
    ct = (np.float32(1.5), X)
    close(vjp(ct), vjpr(ct), tol=1e-4)


def test_jit_closing_over_outer_tracer():
    def outer(y):
        return xsum(xform.jit(lambda x: L.mul(x, y))(X))
    close(xform.grad(outer)(Y), jax.grad(lambda y: jnp.sum(X * y))(Y))
    close(xform.jit(outer)(Y), jnp.sum(X * Y))


def test_grad_with_integer_and_unused_inputs():
    def g(x, n, unused):
        return xsum(L.mul(x, L.convert_element_type(n, np.float32)))
    jg = xform.jit(g)
    close(xform.grad(jg)(X, np.int32(3), Y), 3 * np.ones_like(X))
    close(xform.grad(jg, argnums=2)(X, np.int32(3), Y), np.zeros_like(Y))


# ----------------------------------------------------------------- donation


def test_donation_deletes_and_reuse_raises():
    f = xform.jit(lambda x: L.mul(x, x), donate_argnums=0)
    a = xform.device_put(X)
    out = f(a)
    close(out, X * X)
    assert a.is_deleted()
    with pytest.raises(RuntimeError, match="donat"):
        np.asarray(a)
    with pytest.raises(RuntimeError, match="donat"):
        f(a)
    g = xform.jit(lambda x, y: L.add(x, y), donate_argnames="y")
    b = xform.device_put(Y)
    close(g(X, y=b), X + Y)
    assert b.is_deleted()


def test_static_and_donated_conflict():
    with pytest.raises(ValueError):
        xform.jit(lambda x: x, static_argnums=0, donate_argnums=0)


def _uses_of(x, f):
    """Every way a user touches an array's value or storage."""
    return {
        "add": lambda: x + 0, "jit call": lambda: f(x), "sum": lambda: x.sum(),
        "asarray": lambda: np.asarray(x), "index": lambda: x[0], "sin": lambda: xform.numpy.sin(x),
        "float": lambda: float(x[0]), "tolist": lambda: x.tolist(), "copy": lambda: x.copy(),
        "str": lambda: str(x), "shards": lambda: x.addressable_shards,
        "dlpack": lambda: x.__dlpack__(), "devices": lambda: x.devices(),
        "block": lambda: x.block_until_ready(), "device_put": lambda: xform.device_put(x),
        "vmap": lambda: xform.vmap(xform.numpy.sin)(x),
        "grad": lambda: xform.grad(lambda v: v.sum())(x),
        "other jit": lambda: xform.jit(xform.numpy.cos)(x),
    }


@pytest.mark.parametrize("how", ["donate host array", "donate device array", "delete"])
def test_every_use_of_a_deleted_array_raises_jax_runtime_error(how):
    f = xform.jit(lambda v: v * 2 + 1, donate_argnums=0)
    x = xform.numpy.ones(8) if how == "donate host array" else xform.device_put(X)
    if how == "delete":
        x.delete()
    else:
        f(x)
    assert x.is_deleted()
    # shape and dtype survive, as in JAX; the repr stays printable
    assert x.shape == (8,) if how == "donate host array" else x.shape == X.shape
    assert x.aval.shape == x.shape
    assert "deleted" in repr(x)
    for name, use in _uses_of(x, f).items():
        with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\["):
            use()
    jx = jnp.ones(8)       # JAX raises the same type with the same opening
    jx.delete()
    with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[8\]"):
        jx + 0


def _jit_error(jit, fun, kw):
    try:
        jit(fun, **kw)
    except Exception as e:          # noqa: BLE001 - compared with JAX's below
        return type(e), str(e)
    return None


def _two(x, y=1):
    return x


def _varargs(x, *args):
    return x


def _varkw(x, **kw):
    return x


def _posonly(x, /, y):
    return x


def _kwonly(x, *, k):
    return x


@pytest.mark.parametrize("fun,kw", [
    (_two, dict(static_argnames="zz")), (_two, dict(static_argnums=5)),
    (_two, dict(static_argnums=-5)), (_two, dict(static_argnums=(0, 7))),
    (_two, dict(donate_argnames="zz")), (_two, dict(donate_argnums=5)),
    (_varargs, dict(static_argnums=5)), (_varargs, dict(static_argnames="zz")),
    (_varkw, dict(static_argnames="zz")), (_varkw, dict(static_argnums=3)),
    (_posonly, dict(static_argnames="x")), (_kwonly, dict(static_argnames="k")),
    (_kwonly, dict(static_argnums=1)), (lambda: 1, dict(static_argnums=0)),
    (_two, dict(static_argnames="x", donate_argnames="x")),
    (_two, dict(static_argnums=0, donate_argnums=0)),
])
def test_static_and_donate_arguments_validated_as_jax(fun, kw):
    ours, theirs = _jit_error(xform.jit, fun, kw), _jit_error(jax.jit, fun, kw)
    if theirs is None:
        assert ours is None
        return
    assert ours is not None and ours[0] is theirs[0], (ours, theirs)
    assert ours[1].startswith(theirs[1].split("(")[0].split(". ")[0]), (ours, theirs)


# ----------------------------------------------------------------- AOT API


def test_lower_compile_trace_eval_shape():
    jf = xform.jit(fx)
    lowered = jf.lower(X, Y)
    text = lowered.as_text()
    assert "stablehlo" in text and "func.func public @main" in text
    comp = lowered.compile()
    assert isinstance(comp.as_text(), str) and "HloModule" in comp.as_text()
    assert isinstance(comp.cost_analysis(), dict)
    close(comp(X, Y), jax.jit(fj)(X, Y))
    tr = jf.trace(X, Y)
    assert [e.primitive.name for e in tr.jaxpr.eqns][:2] == ["sin", "cos"]
    s = jf.eval_shape(xform.ShapeDtypeStruct((3, 4), np.float32), Y)
    assert s == jax.eval_shape(fj, jax.ShapeDtypeStruct((3, 4), jnp.float32), Y) or \
        repr(s) == repr(jax.eval_shape(fj, jax.ShapeDtypeStruct((3, 4), jnp.float32), Y))
    # lowering with abstract arguments
    assert "tensor<3x4xf32>" in jf.lower(xform.ShapeDtypeStruct((3, 4), np.float32), Y).as_text()


def test_lowered_compiler_ir_objects_as_jax():
    """compiler_ir('stablehlo') is an MLIR module and compiler_ir('hlo') an XLA computation,
    the same kinds JAX returns; their HLO entry computations do the same operations
    (optax's numerics tests compare them)."""
    import re
    xl, jl = xform.jit(fx).lower(X, Y), jax.jit(fj).lower(X, Y)
    for d in (None, "stablehlo", "hlo"):
        assert type(xl.compiler_ir(d)) is type(jl.compiler_ir(d)), d
    m = xl.compiler_ir()
    assert "func.func public @main" in str(m) and m.operation.verify()

    def ops(lowered):
        text = lowered.compiler_ir(dialect="hlo").as_hlo_text()
        entry = re.search(r"ENTRY.*", text, re.DOTALL).group()
        return sorted(re.findall(r"= \S+ (\w+)\(", entry))
    assert ops(xl) == ops(jl)
    with pytest.raises(ValueError, match="unknown dialect"):
        xl.compiler_ir("mhlo")


def test_disable_jit():
    def g(x):
        if float(xsum(x)) > 0:        # only works eagerly
            return L.sin(x)
        return L.cos(x)
    jg = xform.jit(g)
    with xform.disable_jit():
        close(jg(np.abs(X)), np.sin(np.abs(X)))
    with pytest.raises(xform.ConcretizationTypeError):
        jg(np.abs(X))


# ----------------------------------------------------------------- explain cache misses


def test_explain_cache_misses(caplog):
    def my_fn(x, y):
        return L.add(x, y)
    jf = xform.jit(my_fn)
    xform.config.update("jax_explain_cache_misses", True)
    try:
        with caplog.at_level(logging.WARNING, logger="xform"):
            jf(X, Y)
            jf(X, Y)
            jf(X, np.ones((2,), np.float32)[0])
    finally:
        xform.config.update("jax_explain_cache_misses", False)
    msgs = [r.getMessage() for r in caplog.records if "TRACING CACHE MISS" in r.getMessage()]
    assert len(msgs) == 2
    assert "never seen" in msgs[0]
    assert "test_jit.py" in msgs[1] and "because" in msgs[1]
    assert "argument y had shape/dtype f32[3,4] and now f32[]" in msgs[1]


# ----------------------------------------------------------------- debug_nans


def test_debug_nans():
    def g(x):
        y = L.sin(x)
        return L.log(L.neg(L.abs(y)))
    jg = xform.jit(g)
    xform.config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError) as e:
            jg(X)
        assert str(e.value) == "invalid value (nan) encountered in log"   # JAX's text
        assert "test_jit.py" in "".join(e.value.__notes__)          # where: a note
        close(xform.jit(L.sin)(X), np.sin(X))
    finally:
        xform.config.update("jax_debug_nans", False)
    assert np.isnan(np.asarray(jg(X))).any()


# ----------------------------------------------------------------- debug.print / callback


def test_debug_print_eager_jit_grad_vmap(capsys):
    def g(x):
        xform.debug.print("val {}", x)
        return L.mul(x, 2.0)
    g(np.float32(1.0))
    xform.jit(g)(np.float32(2.0))
    xform.grad(xform.jit(g))(np.float32(3.0))
    xform.vmap(xform.jit(g))(np.array([4.0, 5.0], np.float32))
    out = capsys.readouterr().out.split("\n")
    assert out[:5] == ["val 1.0", "val 2.0", "val 3.0", "val 4.0", "val 5.0"]


def test_debug_callback_survives_dce():
    seen = []

    def g(x):
        xform.debug.callback(lambda v: seen.append(np.asarray(v).tolist()), x)
        return L.mul(x, 0.0)
    jaxpr = xform.make_jaxpr(g)(np.float32(1.0))
    from xform._src.interpreters import passes
    assert any(e.primitive.name == "debug_callback" for e in passes.simplify(jaxpr).eqns)
    xform.jit(g)(np.float32(7.0))
    assert seen == [7.0]


def test_debug_callback_is_compiled_not_interpreted():
    """Under jit the callback is an XLA custom call: the program is one executable."""
    seen = []

    def g(x):
        xform.debug.callback(lambda v: seen.append(np.asarray(v).tolist()), L.mul(x, 2.0))
        return L.sin(x)
    f = xform.jit(g)
    x = np.array([0.5, 1.5], np.float32)
    hlo = f.lower(x).compile().as_text()
    assert "custom-call" in hlo and "python" in hlo
    np.testing.assert_allclose(np.asarray(f(x)), np.sin(x), rtol=1e-6)
    assert seen == [[1.0, 3.0]]
    xform.jit(xform.vmap(g))(np.stack([x, x + 1]))
    assert seen[1:] == [[1.0, 3.0], [3.0, 5.0]]
    xform.jit(xform.grad(lambda v: L.reduce_sum(g(v), (0,))))(x)
    assert seen[-1] == [1.0, 3.0]


def test_lowered_text_debug_info_switch():
    low = xform.jit(lambda v: L.add(v, 1.0)).lower(np.ones(3, np.float32))
    assert "loc(" not in low.as_text()
    assert "loc(" in low.as_text(debug_info=True)


# ----------------------------------------------------------------- devices


def test_devices_api():
    devs = xform.devices()
    assert len(devs) >= 1 and xform.default_backend() in ("cpu", "gpu", "tpu")
    a = xform.device_put(X, devs[0])
    assert a.devices() == {devs[0]} and a.device == devs[0]
    out = xform.jit(L.sin)(a)
    assert out.devices() == {devs[0]}
    tree = xform.device_get({"a": out, "b": 1})
    assert isinstance(tree["a"], np.ndarray) and tree["b"] == 1
    assert xform.block_until_ready(out) is out
    close(xform.jit(L.sin, device=devs[0])(X), np.sin(X))

"""pure_callback / io_callback against JAX: values, vmap_method semantics (the shapes
the callback sees), custom_jvp, ordering, errors."""
import functools

import numpy as np
import pytest

import jax
import jax.numpy as jnp
import xform
import xform.numpy as xnp
from xform.experimental import io_callback as x_io


def _host_sin(x):
    return np.sin(np.asarray(x)).astype(np.asarray(x).dtype)


def _f(mod, x):
    return mod.pure_callback(_host_sin, mod.ShapeDtypeStruct(x.shape, x.dtype), x,
                             vmap_method="sequential")


@pytest.mark.parametrize("wrap", ["eager", "jit", "vmap", "jit_vmap", "vmap_jit"])
def test_pure_callback_values(wrap):
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    outs = []
    for mod in (jax, xform):
        f = functools.partial(_f, mod)
        g = {"eager": lambda: f(x[0]), "jit": lambda: mod.jit(f)(x),
             "vmap": lambda: mod.vmap(f)(x), "jit_vmap": lambda: mod.jit(mod.vmap(f))(x),
             "vmap_jit": lambda: mod.vmap(mod.jit(f))(x)}[wrap]
        outs.append(np.asarray(g()))
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6)


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all", "legacy_vectorized"])
@pytest.mark.parametrize("jit", [False, True])
def test_vmap_method_shapes_match_jax(method, jit):
    x = np.arange(4, dtype=np.float32)
    y = np.float32(1.5)
    results = []
    for mod, np_mod in ((jax, jnp), (xform, xnp)):
        seen = []

        def cb(a, b):
            seen.append((np.shape(a), np.shape(b)))
            return np.asarray(a) + np.asarray(b)

        def fun(a, b):
            shape = np.broadcast_shapes(np.shape(a), np.shape(b))
            return mod.pure_callback(cb, mod.ShapeDtypeStruct(shape, np.float32), a, b,
                                     vmap_method=method)
        g = mod.vmap(fun, in_axes=(0, None))
        g = mod.jit(g) if jit else g
        out = np.asarray(g(x, y))
        results.append((out, sorted(set(seen))))
    np.testing.assert_allclose(results[1][0], results[0][0])
    assert results[1][1] == results[0][1]


def test_vmap_without_method_raises():
    f = lambda x: xform.pure_callback(_host_sin, xform.ShapeDtypeStruct((), np.float32), x)
    with pytest.raises(NotImplementedError):
        xform.vmap(f)(xnp.ones(3))
    assert float(f(xnp.asarray(0.5, np.float32))) == pytest.approx(np.sin(0.5), rel=1e-6)
    with pytest.raises(ValueError):
        xform.pure_callback(_host_sin, xform.ShapeDtypeStruct((), np.float32), 1.0,
                            vmap_method="parallel")


def test_pure_callback_pytrees_kwargs_and_dce():
    calls = []

    def cb(d, *, scale):
        calls.append(1)
        return {"s": np.asarray(d["a"]) * scale, "n": np.int32(d["b"].shape[0])}

    def run(mod, np_mod):
        spec = {"s": mod.ShapeDtypeStruct((2,), np.float32),
                "n": mod.ShapeDtypeStruct((), np.int32)}
        return mod.jit(lambda a, b: mod.pure_callback(cb, spec, {"a": a, "b": b}, scale=2.0))(
            np_mod.ones(2), np_mod.zeros(3))
    j, x = run(jax, jnp), run(xform, xnp)
    np.testing.assert_allclose(x["s"], j["s"])
    assert int(x["n"]) == int(j["n"]) and x["n"].dtype == j["n"].dtype
    # unused results: a pure callback may be removed (JAX does too)
    calls.clear()
    xform.jit(lambda a: (xform.pure_callback(cb, {"s": xform.ShapeDtypeStruct((2,), "float32"),
                                                  "n": xform.ShapeDtypeStruct((), "int32")},
                                             {"a": a, "b": a}, scale=1.0), a)[1])(xnp.ones(2))
    assert calls == []


def test_pure_callback_result_checks():
    bad_shape = lambda x: np.zeros(3, np.float32)                 # noqa: E731
    bad_dtype = lambda x: np.zeros((), np.int32)                   # noqa: E731
    spec = xform.ShapeDtypeStruct((), np.float32)
    for cb in (bad_shape, bad_dtype):
        with pytest.raises(Exception, match="Incorrect output"):
            xform.pure_callback(cb, spec, 1.0)
        with pytest.raises(Exception):
            xform.jit(lambda x: xform.pure_callback(cb, spec, x))(1.0).block_until_ready()
    # float64 results are canonicalised like JAX when x64 is off
    out = xform.pure_callback(lambda x: np.float64(2.0), spec, 1.0)
    assert out.dtype == np.float32
    with pytest.raises(ValueError):
        xform.pure_callback(lambda x: x, xform.ShapeDtypeStruct((), np.float64), 1.0)
    with pytest.raises(TypeError):
        xform.pure_callback(lambda x: x, (3,), 1.0)


def test_pure_callback_grad_needs_custom_jvp():
    f = lambda x: xform.pure_callback(_host_sin, xform.ShapeDtypeStruct((), np.float32), x)
    with pytest.raises(ValueError, match="custom_jvp"):
        xform.grad(f)(1.0)

    def make(mod):
        @mod.custom_jvp
        def sin_cb(x):
            return mod.pure_callback(_host_sin, mod.ShapeDtypeStruct(x.shape, x.dtype), x,
                                     vmap_method="sequential")

        @sin_cb.defjvp
        def _(p, t):
            x, = p
            cos = mod.pure_callback(lambda v: np.cos(np.asarray(v)).astype(np.float32),
                                    mod.ShapeDtypeStruct(x.shape, x.dtype), x,
                                    vmap_method="sequential")
            return sin_cb(x), cos * t[0]
        return sin_cb
    js, xs = make(jax), make(xform)
    x = np.linspace(0.1, 1.0, 4, dtype=np.float32)
    loss = lambda mod, f: lambda v: (f(v) ** 2).sum()              # noqa: E731
    np.testing.assert_allclose(xform.grad(loss(xform, xs))(x), jax.grad(loss(jax, js))(x),
                               rtol=1e-6)
    np.testing.assert_allclose(xform.jit(xform.grad(loss(xform, xs)))(x),
                               jax.jit(jax.grad(loss(jax, js)))(x), rtol=1e-6)
    np.testing.assert_allclose(xform.vmap(xform.grad(lambda v: xs(v)))(x),
                               jax.vmap(jax.grad(lambda v: js(v)))(x), rtol=1e-6)


def test_io_callback_ordered_and_effects():
    log = []

    def g(x):
        x_io(lambda a: log.append(("a", float(a))), None, x, ordered=True)
        y = x_io(lambda a: np.float32(a * 2), xform.ShapeDtypeStruct((), np.float32), x,
                 ordered=True)
        x_io(lambda a: log.append(("b", float(a))), None, y, ordered=True)
        return x + 1   # io results unused: the calls still happen
    assert float(xform.jit(g)(1.0)) == 2.0
    assert log == [("a", 1.0), ("b", 2.0)]
    log.clear()
    g(3.0)
    assert log == [("a", 3.0), ("b", 6.0)]
    with pytest.raises(ValueError, match="vmap"):
        xform.vmap(g)(xnp.ones(2))
    with pytest.raises(ValueError, match="JVP"):
        xform.grad(lambda x: x_io(lambda a: a, xform.ShapeDtypeStruct((), np.float32), x))(1.)


def test_io_callback_unordered_vmap_matches_jax():
    from jax.experimental import io_callback as j_io
    outs = []
    for mod, io, np_mod in ((jax, j_io, jnp), (xform, x_io, xnp)):
        seen = []

        def cb(a):
            seen.append(float(a))
            return np.float32(a) * 3

        f = lambda v: io(cb, mod.ShapeDtypeStruct((), np.float32), v)   # noqa: E731
        out = mod.jit(mod.vmap(f))(np_mod.arange(3.0))
        outs.append((np.asarray(out), sorted(seen)))
    np.testing.assert_allclose(outs[1][0], outs[0][0])
    assert outs[1][1] == outs[0][1]


def test_debug_log_goes_through_logging_as_jax(caplog, capsys):
    import logging
    import xform
    with caplog.at_level(logging.INFO):
        xform.debug.log("x={x}", x=1.0)
        xform.jit(lambda v: xform.debug.log("y={}", v))(2.0)
        xform.vmap(lambda v: xform.debug.log("z={}", v))(np.arange(2.0, dtype=np.float32))
    msgs = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert msgs[:2] == ["x=1.0", "y=2.0"] and len(msgs) == 4, msgs
    assert capsys.readouterr().out == ""

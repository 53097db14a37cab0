"""Behaviour that must match JAX beyond values: tracer reprs, misuse errors."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp


def _reprs(api, np_mod):
    """The reprs a user sees printing a tracer under each transformation."""
    seen = []

    class Show:          # a fresh callable per use: JAX caches traces per function
        def __call__(self, x):
            seen.append(repr(x))
            return x

    api.jit(Show())(np_mod.ones((3, 4)))
    api.jit(Show())(1.0)
    api.grad(lambda x: Show()(x).sum())(np_mod.ones(2))
    api.grad(lambda x: Show()(x))(1.0)
    api.jit(api.grad(lambda x: Show()(x).sum()))(np_mod.ones(2))
    api.vmap(Show())(np_mod.ones(3))
    api.vmap(Show(), in_axes=1)(np_mod.ones((2, 3), np_mod.int32))
    api.jit(api.vmap(Show()))(np_mod.ones((2, 3)))
    api.jvp(Show(), (1.0,), (1.0,))
    api.jvp(Show(), (np_mod.ones(2),), (np_mod.ones(2),))
    api.make_jaxpr(Show())(1.0)
    api.linearize(Show(), 1.0)
    return seen


def test_tracer_reprs_match_jax():
    assert _reprs(xform, xnp) == _reprs(jax, jnp)


def test_scan_carry_dtype_change_is_a_type_error():
    body = lambda c, x: (c.astype(np.int32), x)   # noqa: E731
    with pytest.raises(TypeError):
        jax.lax.scan(body, 0.0, jnp.ones(3))
    with pytest.raises(TypeError, match=r"carry.*float32\[\].*int32\[\]"):
        xform.lax.scan(body, 0.0, xnp.ones(3))


@pytest.mark.parametrize("init", [0, 0.0])
def test_scan_weak_carry_promotes_like_jax(init):
    body = lambda c, x: (c + x, c)                # noqa: E731
    want = jax.lax.scan(body, init, jnp.arange(3.0))
    got = xform.lax.scan(body, init, xnp.arange(3.0))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("arg", [0.0, np.float32(0.0), np.zeros(2, np.float32)])
def test_debug_nans_with_python_and_numpy_arguments(arg):
    xform.config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match="div"):
            xform.jit(lambda x: x / 0.0)(arg)
    finally:
        xform.config.update("jax_debug_nans", False)


@pytest.mark.parametrize("lib", ["xform", "jax"])
def test_shape_dtype_struct_parity(lib):
    """The same script runs on both libraries with the same observable results."""
    m = xform if lib == "xform" else jax
    np_mod = xnp if lib == "xform" else jnp
    s = m.ShapeDtypeStruct((2, 3), np.float32)
    assert (s.shape, s.dtype, s.ndim, s.size, len(s), s.weak_type) == \
        ((2, 3), np.dtype(np.float32), 2, 6, 2, False)
    assert repr(s) == "ShapeDtypeStruct(shape=(2, 3), dtype=float32)"
    w = s.update(shape=(4,), weak_type=True)
    assert repr(w) == "ShapeDtypeStruct(shape=(4,), dtype=float32, weak_type=True)"
    assert s == m.ShapeDtypeStruct((2, 3), "float32") and s != w
    assert hash(s) == hash(m.ShapeDtypeStruct((2, 3), "float32"))
    with pytest.raises(RuntimeError):
        s.shape = (5,)
    like = m.ShapeDtypeStruct.like(np_mod.ones((3,), np_mod.int32))
    assert (like.shape, like.dtype) == ((3,), np.dtype(np.int32))
    with pytest.raises(ValueError):
        m.ShapeDtypeStruct((2,), None)
    with pytest.raises(TypeError):
        m.ShapeDtypeStruct((2,), "not-a-dtype")
    with pytest.raises(TypeError):
        len(m.ShapeDtypeStruct((), "float32"))
    out = m.eval_shape(lambda x: x.sum(0), s)
    assert (out.shape, out.dtype) == ((3,), np.dtype(np.float32))


def test_conj_of_complex_matches_jax():
    z = np.array([1 + 2j, -3.5 - 0.5j], np.complex64)
    for f in (lambda m: m.conj(z), lambda m: m.conjugate(z * 2), lambda m: m.conj(1.5)):
        got, want = f(xnp), f(jnp)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("x", [1.0, -1.0])
def test_custom_rules_see_concrete_primals_under_eager_grad(x):
    """JAX's custom-derivatives tutorial: outside jit the rules may branch in Python."""
    def build(api, np_mod):
        @api.custom_jvp
        def f(x):
            return np_mod.sin(x)

        @f.defjvp
        def f_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return f(x), (np_mod.cos(x) if x > 0 else 2.0 * np_mod.cos(x)) * t

        @api.custom_vjp
        def g(x):
            return np_mod.sin(x)

        def g_fwd(x):
            return g(x), (np_mod.cos(x) if x > 0 else -np_mod.cos(x))

        g.defvjp(g_fwd, lambda r, ct: (r * ct,))
        return lambda v: f(v) * g(v)
    got = xform.value_and_grad(build(xform, xnp))(x)
    want = jax.value_and_grad(build(jax, jnp))(x)
    np.testing.assert_allclose([float(v) for v in got], [float(v) for v in want], rtol=1e-6)

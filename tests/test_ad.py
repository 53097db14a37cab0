"""Tests for jvp / linearize / vjp / grad / jacobians / linear_transpose.

Oracles: real JAX on the same function written twice (once over ``xform.lax``,
once over ``jax.lax``/``jax.numpy``), central finite differences in float64,
the dot-product test, and hand-computed golden values.
"""
import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xform
from xform._src.interpreters import ad
from xform._src.interpreters.config import config
from xform import lax as xl


# ----------------------------------------------------------------- helpers


class XOps:
    """The primitive vocabulary over xform.lax (mirrored by JOps over JAX)."""
    sin, cos, tanh, exp, log1p = xl.sin, xl.cos, xl.tanh, xl.exp, xl.log1p
    mul, add, sub, max = xl.mul, xl.add, xl.sub, xl.max
    dot = staticmethod(xl.dot)

    @staticmethod
    def sum(x):
        return xl.reduce_sum(x, tuple(range(np.ndim(x))))

    @staticmethod
    def const(c, like):
        return xl.full_like(like, c)


class JOps:
    sin, cos, tanh, exp, log1p = jax.lax.sin, jax.lax.cos, jax.lax.tanh, jax.lax.exp, \
        jax.lax.log1p
    mul, add, sub, max = jax.lax.mul, jax.lax.add, jax.lax.sub, jax.lax.max
    dot = staticmethod(jnp.dot)

    @staticmethod
    def sum(x):
        return jnp.sum(x)

    @staticmethod
    def const(c, like):
        return jax.lax.full_like(like, c)


def program(L, ops):
    """A random composition of primitives of two inputs (same shape)."""
    def f(x, y):
        h = x
        for op in ops:
            if op == "sin":
                h = L.sin(h)
            elif op == "cos":
                h = L.cos(h)
            elif op == "tanh":
                h = L.tanh(h)
            elif op == "exp":
                h = L.exp(L.mul(h, L.const(0.3, h)))
            elif op == "log1p_sq":
                h = L.log1p(L.mul(h, h))
            elif op == "sq":
                h = L.mul(h, h)
            elif op == "mul_y":
                h = L.mul(h, y)
            elif op == "add_y":
                h = L.add(h, L.sin(y))
        return h
    return f


OPS = ["sin", "cos", "tanh", "exp", "log1p_sq", "sq", "mul_y", "add_y"]
ops_strategy = st.lists(st.sampled_from(OPS), min_size=1, max_size=5)


def arrays(shape, dtype, seed):
    rng = np.random.RandomState(seed)
    return rng.uniform(-1.5, 1.5, size=shape).astype(dtype)


from prim_testutil import x64_enabled as x64  # noqa: E402


@pytest.fixture
def enable_x64():
    with x64():
        yield


def close(a, b, dtype=np.float32, scale=1.0):
    tol = (2e-5 if np.dtype(dtype) == np.float32 else 1e-10) * scale
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=tol * 10, atol=tol * 10)


def tree_close(a, b, dtype=np.float32):
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert len(la) == len(lb), (ta, tb)
    for x, y in zip(la, lb):
        assert np.shape(x) == np.shape(y)
        close(x, y, dtype)


# ----------------------------------------------------------------- golden values


def f_golden(L):
    return lambda x: L.mul(L.mul(x, x), L.sin(x))


def test_golden_x2_sinx():
    x = np.float32(2.0)
    y, t = xform.jvp(f_golden(XOps), (x,), (np.float32(1.0),))
    assert abs(float(y) - 3.637) < 1e-3 and abs(float(t) - 1.973) < 1e-3
    g = xform.grad(f_golden(XOps))(x)
    assert abs(float(g) - 1.973) < 1e-3
    out, f_jvp = xform.linearize(f_golden(XOps), x)
    assert abs(float(f_jvp(np.float32(1.0))) - 1.973) < 1e-3
    close(g, jax.grad(f_golden(JOps))(x))


def test_golden_relu_layer():
    def f(x, w1, w2):
        return xl.mul(xl.max(np.float32(0), xl.mul(x, w1)), w2)
    g = xform.grad(f, argnums=(0, 1, 2))(np.float32(1), np.float32(2), np.float32(3))
    assert [float(v) for v in g] == [6.0, 3.0, 2.0]


def test_golden_affine():
    f = lambda x: xl.add(xl.mul(x, np.float32(2)), np.float32(1))
    v, g = xform.value_and_grad(f)(np.float32(1))
    assert float(v) == 3.0 and float(g) == 2.0
    assert float(xform.jvp(f, (np.float32(1),), (np.float32(1),))[1]) == 2.0


# ----------------------------------------------------------------- against finite differences


@settings(max_examples=15)
@given(ops=ops_strategy, seed=st.integers(0, 2**16))
def test_jvp_vs_central_differences_f64(ops, seed):
    with x64():
        x, y = arrays((3,), np.float64, seed), arrays((3,), np.float64, seed + 1)
        tx, ty = arrays((3,), np.float64, seed + 2), arrays((3,), np.float64, seed + 3)
        f = program(XOps, ops)
        _, t = xform.jvp(f, (x, y), (tx, ty))
        eps = 1e-6
        fd = (np.asarray(f(x + eps * tx, y + eps * ty)) -
              np.asarray(f(x - eps * tx, y - eps * ty))) / (2 * eps)
        np.testing.assert_allclose(np.asarray(t), fd, rtol=1e-5, atol=1e-6)
        assert np.asarray(t).dtype == np.float64


@settings(max_examples=15)
@given(ops=ops_strategy, seed=st.integers(0, 2**16))
def test_vjp_jvp_dot_product(ops, seed):
    with x64():
        x, y = arrays((4,), np.float64, seed), arrays((4,), np.float64, seed + 1)
        tx, ty = arrays((4,), np.float64, seed + 2), arrays((4,), np.float64, seed + 3)
        ct = arrays((4,), np.float64, seed + 4)
        f = program(XOps, ops)
        _, t = xform.jvp(f, (x, y), (tx, ty))
        _, f_vjp = xform.vjp(f, x, y)
        cx, cy = f_vjp(ct)
        lhs = np.vdot(np.asarray(cx), tx) + np.vdot(np.asarray(cy), ty)
        rhs = np.vdot(ct, np.asarray(t))
        np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------- against JAX


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=10)
@given(ops=ops_strategy, seed=st.integers(0, 2**16))
def test_matches_jax(dtype, ops, seed):
    ctx = x64() if dtype == np.float64 else contextlib.nullcontext()
    with ctx:
        x, y = arrays((3,), dtype, seed), arrays((3,), dtype, seed + 1)
        tx, ty = arrays((3,), dtype, seed + 2), arrays((3,), dtype, seed + 3)
        fx, fj = program(XOps, ops), program(JOps, ops)
        # jvp
        px, tx_ = xform.jvp(fx, (x, y), (tx, ty))
        pj, tj = jax.jvp(fj, (x, y), (tx, ty))
        close(px, pj, dtype)
        close(tx_, tj, dtype)
        assert np.asarray(tx_).dtype == np.dtype(dtype)
        # vjp
        ct = arrays((3,), dtype, seed + 4)
        close(xform.vjp(fx, x, y)[1](ct)[1], jax.vjp(fj, x, y)[1](ct)[1], dtype)
        # grad of a scalar function
        sx = lambda a, b: XOps.sum(fx(a, b))
        sj = lambda a, b: JOps.sum(fj(a, b))
        tree_close(xform.grad(sx, argnums=(0, 1))(x, y), jax.grad(sj, argnums=(0, 1))(x, y),
                   dtype)
        # jacobians and hessian
        close(xform.jacfwd(fx)(x, y), jax.jacfwd(fj)(x, y), dtype)
        close(xform.jacrev(fx, argnums=1)(x, y), jax.jacrev(fj, argnums=1)(x, y), dtype)
        close(xform.hessian(sx)(x, y), jax.hessian(sj)(x, y), dtype, scale=10)


@settings(max_examples=10)
@given(ops=ops_strategy, seed=st.integers(0, 2**16))
def test_jacfwd_equals_jacrev(ops, seed):
    x, y = arrays((3,), np.float32, seed), arrays((3,), np.float32, seed + 1)
    f = program(XOps, ops)
    a = xform.jacfwd(f, argnums=(0, 1))(x, y)
    b = xform.jacrev(f, argnums=(0, 1))(x, y)
    tree_close(a, b)


def test_jacobian_pytrees_and_shapes():
    def fx(p):
        return {"u": xl.mul(p["a"], p["b"]), "v": XOps.sum(xl.sin(p["a"]))}

    def fj(p):
        return {"u": p["a"] * p["b"], "v": jnp.sum(jnp.sin(p["a"]))}
    p = {"a": arrays((2, 3), np.float32, 0), "b": arrays((2, 3), np.float32, 1)}
    for ours, theirs in [(xform.jacfwd, jax.jacfwd), (xform.jacrev, jax.jacrev)]:
        a, b = ours(fx)(p), theirs(fj)(p)
        assert a["u"]["a"].shape == (2, 3, 2, 3) and a["v"]["b"].shape == (2, 3)
        tree_close(a, b)


def test_hessian_matrix_function():
    A = arrays((3, 3), np.float32, 5)
    fx = lambda x: XOps.sum(xl.tanh(xl.dot(A, xl.mul(x, x))))
    fj = lambda x: jnp.sum(jnp.tanh(A @ (x * x)))
    x = arrays((3,), np.float32, 6)
    close(xform.hessian(fx)(x), jax.hessian(fj)(x), scale=10)
    close(xform.jacfwd(xform.jacrev(fx))(x), jax.jacfwd(jax.jacrev(fj))(x), scale=10)
    close(xform.jacrev(xform.jacfwd(fx))(x), jax.jacrev(jax.jacfwd(fj))(x), scale=10)


# ----------------------------------------------------------------- nesting


def test_nested_grads_match_jax():
    x = np.float32(0.7)
    fx, fj = f_golden(XOps), f_golden(JOps)
    close(xform.grad(xform.grad(xform.grad(fx)))(x), jax.grad(jax.grad(jax.grad(fj)))(x))
    close(xform.jvp(xform.grad(fx), (x,), (np.float32(1),))[1],
          jax.jvp(jax.grad(fj), (x,), (np.float32(1),))[1])
    close(xform.grad(lambda x: xform.jvp(fx, (x,), (np.float32(1),))[1])(x),
          jax.grad(lambda x: jax.jvp(fj, (x,), (np.float32(1),))[1])(x))


def test_perturbation_confusion():
    # d/dx [ d/dy (x*y) at y=2 ] at x=3  == 1
    g = xform.grad(lambda x: xform.grad(lambda y: xl.mul(x, y))(np.float32(2.)))(np.float32(3.))
    assert float(g) == 1.0
    # Siskind & Pearlmutter: D(x -> x * D(y -> x + y)(1))(1) == 1 (2 if confused)
    g = xform.grad(lambda x: xl.mul(x, xform.grad(lambda y: xl.add(x, y))(np.float32(1.))))(
        np.float32(1.))
    assert float(g) == 1.0
    t = xform.jvp(lambda x: xl.mul(x, xform.jvp(lambda y: xl.add(x, y), (np.float32(1.),),
                                                (np.float32(1.),))[1]),
                  (np.float32(1.),), (np.float32(1.),))[1]
    assert float(t) == 1.0


# ----------------------------------------------------------------- API surface


def test_pytrees_has_aux_value_and_grad():
    def f(p, s):
        v = xl.add(xl.mul(p["w"], p["w"]), xl.mul(p["b"][0], s))
        return XOps.sum(v), {"aux": v}
    p = {"w": np.ones(3, np.float32), "b": (np.float32(2.),)}
    (v, aux), g = xform.value_and_grad(f, has_aux=True)(p, np.float32(3.))
    assert float(v) == 3 + 18 and np.asarray(aux["aux"]).shape == (3,)
    np.testing.assert_allclose(g["w"], 2 * np.ones(3))
    assert float(g["b"][0]) == 9.0
    g2, aux2 = xform.grad(f, has_aux=True)(p, np.float32(3.))
    np.testing.assert_allclose(g2["w"], g["w"])
    y, t, aux = xform.jvp(lambda a: (xl.sin(a), a), (np.float32(1.),), (np.float32(1.),),
                          has_aux=True)
    close(t, np.cos(np.float32(1)))
    y, f_vjp, aux = xform.vjp(lambda a: (xl.sin(a), 7), np.float32(1.), has_aux=True)
    assert aux == 7


def test_argnums_negative_and_kwargs():
    f = lambda x, y, scale=1.0: xl.mul(xl.mul(x, y), np.float32(scale))
    assert float(xform.grad(f, argnums=-1)(np.float32(2), np.float32(3), scale=2.0)) == 4.0


def test_allow_int_gives_float0():
    f = lambda x, n: xl.mul(x, xl.convert_element_type(n, np.float32))
    gx, gn = xform.grad(f, argnums=(0, 1), allow_int=True)(np.float32(2), np.int32(3))
    assert float(gx) == 3.0
    assert np.asarray(gn).dtype == ad.float0 and np.shape(gn) == ()
    _, f_vjp = xform.vjp(f, np.float32(2), np.int32(3))
    assert f_vjp(np.float32(1))[1].dtype == ad.float0


def test_holomorphic_grad():
    f = lambda z: xl.mul(z, z)
    z = np.complex64(1 + 2j)
    np.testing.assert_allclose(xform.grad(f, holomorphic=True)(z), 2 * z)
    with pytest.raises(TypeError, match="requires real-valued outputs"):
        xform.grad(f)(z)
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex"):
        xform.grad(f, holomorphic=True)(np.float32(1))


def test_linearize_and_transpose_printable():
    f = f_golden(XOps)
    out, f_jvp = xform.linearize(f, np.float32(2.))
    s = str(f_jvp.jaxpr)
    assert "mul" in s and "lambda" in s
    assert f_jvp.num_residuals >= 1 and f_jvp.residual_bytes == 4 * f_jvp.num_residuals
    _, f_vjp = xform.vjp(f, np.float32(2.))
    assert "mul" in str(f_vjp.transpose_jaxpr())


def test_linear_transpose():
    A = arrays((2, 3), np.float32, 3)
    f = lambda x: xl.dot(A, x)
    ft = xform.linear_transpose(f, np.zeros(3, np.float32))
    ct = arrays((2,), np.float32, 4)
    (r,) = ft(ct)
    close(r, A.T @ ct)
    (rj,) = jax.linear_transpose(lambda x: A @ x, np.zeros(3, np.float32))(ct)
    close(r, rj)
    assert "dot_general" in str(ft)
    with pytest.raises(TypeError, match="cotangent"):
        ft(np.zeros(5, np.float32))


def test_vmap_of_grad_matches_loop():
    f = lambda x: XOps.sum(xl.sin(xl.mul(x, x)))
    xs = arrays((4, 3), np.float32, 9)
    out = xform.vmap(xform.grad(f))(xs)
    for i in range(4):
        close(out[i], xform.grad(f)(xs[i]))
    close(xform.grad(lambda x: XOps.sum(xform.vmap(f)(x)))(xs),
          jax.grad(lambda x: jnp.sum(jax.vmap(lambda r: jnp.sum(jnp.sin(r * r)))(x)))(xs))


def test_unused_and_constant_outputs():
    f = lambda x, y: (xl.sin(x), np.float32(3.), x)
    _, f_vjp = xform.vjp(f, np.float32(1.), np.float32(2.))
    gx, gy = f_vjp((np.float32(1.), np.float32(1.), np.float32(1.)))
    close(gx, np.cos(1.) + 1)
    assert float(gy) == 0.0
    _, t = xform.jvp(f, (np.float32(1.), np.float32(2.)), (np.float32(1.), np.float32(1.)))
    assert float(t[1]) == 0.0


# ----------------------------------------------------------------- errors


def test_grad_int_input_error():
    with pytest.raises(TypeError, match=r"grad requires real- or complex-valued inputs .*"
                       r"but got int32\. If you want to use Boolean- or integer-valued "
                       r"inputs, use vjp or set allow_int to True"):
        xform.grad(lambda x: x)(np.int32(1))


def test_grad_nonscalar_output_error():
    with pytest.raises(TypeError, match=r"Gradient only defined for scalar-output functions\. "
                       r"Output had shape: \(3,\)"):
        xform.grad(lambda x: xl.sin(x))(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="Gradient only defined for scalar-output"):
        xform.grad(lambda x: (x, x))(np.float32(1))


def test_grad_argnums_error():
    with pytest.raises(ValueError, match="requires at least 3 positional arguments.*only 2"):
        xform.grad(lambda x, y: x, argnums=2)(np.float32(1), np.float32(2))
    with pytest.raises(TypeError, match="argnums"):
        xform.grad(lambda x: x, argnums=(0, 5))(np.float32(1))
    with pytest.raises(TypeError, match="callable"):
        xform.grad(3)


def test_jvp_errors():
    f = lambda x: xl.sin(x)
    with pytest.raises(ValueError, match=r"primal shape \(3,\) and tangent shape as \(2,\)"):
        xform.jvp(f, (np.ones(3, np.float32),), (np.ones(2, np.float32),))
    with pytest.raises(TypeError, match="must have equal types.*primal dtype float32.*"
                       "tangent dtype int32"):
        xform.jvp(f, (np.ones(3, np.float32),), (np.ones(3, np.int32),))
    with pytest.raises(TypeError, match="same tree structure"):
        xform.jvp(f, (np.ones(3, np.float32),), ((np.ones(3, np.float32),),))
    with pytest.raises(TypeError, match="tuples or lists"):
        xform.jvp(f, np.ones(3, np.float32), np.ones(3, np.float32))


def test_vjp_cotangent_errors():
    _, f_vjp = xform.vjp(lambda x: xl.sin(x), np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"got f32\[2\], but expected f32\[3\]"):
        f_vjp(np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"got i32\[3\], but expected f32\[3\]"):
        f_vjp(np.ones(3, np.int32))
    with pytest.raises(ValueError, match="tree structure"):
        f_vjp((np.ones(3, np.float32),))
    with pytest.raises(TypeError, match="single argument"):
        f_vjp(np.ones(3, np.float32), np.ones(3, np.float32))


def test_has_aux_requires_pair():
    with pytest.raises(TypeError, match="has_aux=True requires"):
        xform.grad(lambda x: x, has_aux=True)(np.float32(1))


def test_has_aux_values_leave_as_primal_values_as_jax():
    outs = []
    for M in (jax, xform):
        outs.append((
            M.grad(lambda x: (x * x, {"a": x * 3}), has_aux=True)(2.0),
            M.grad(lambda x: M.grad(lambda y: (x * y * y, x * y), has_aux=True)(x)[1])(2.0),
            M.jvp(lambda x: (x * x, x * 3), (2.0,), (1.0,), has_aux=True),
            M.vmap(lambda x: M.grad(lambda y: (y * y, y + 1), has_aux=True)(x))(
                M.numpy.arange(3.0))))
    jl, xl = jax.tree_util.tree_leaves(outs[0]), xform.tree_util.tree_leaves(outs[1])
    assert len(jl) == len(xl)
    for a, b in zip(xl, jl):
        assert isinstance(a, xform.Array)          # no tracer leaks out with the aux
        np.testing.assert_allclose(np.asarray(a), np.asarray(b))

"""Tests for custom_jvp / custom_vjp (and custom_gradient, closure handling).

Oracles: JAX's custom_jvp/custom_vjp with the same rules, hand-computed
values, and rules that are deliberately "wrong" so that using the custom rule
is distinguishable from differentiating the primal function.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xform
from xform import lax as xl

f32 = np.float32


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=tol, atol=tol)


# ----------------------------------------------------------------- golden: x*y + z


def make_custom_jvp_xyz():
    @xform.custom_jvp
    def f(x, y, z):
        return xl.add(xl.mul(x, y), z)

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y, z = primals
        tx, ty, tz = tangents
        return f(x, y, z), xl.add(xl.add(xl.mul(tx, y), xl.mul(x, ty)), tz)
    return f


def make_custom_vjp_xyz():
    @xform.custom_vjp
    def f(x, y, z):
        return xl.add(xl.mul(x, y), z)

    def fwd(x, y, z):
        return f(x, y, z), {"x": x, "y": y}

    def bwd(res, ct):
        return xl.mul(ct, res["y"]), xl.mul(ct, res["x"]), ct
    f.defvjp(fwd, bwd)
    return f


@pytest.mark.parametrize("make", [make_custom_jvp_xyz, make_custom_vjp_xyz])
def test_golden_xyz(make):
    f = make()
    g = xform.grad(f, argnums=(0, 1, 2))(f32(2), f32(3), f32(1))
    assert [float(v) for v in g] == [3.0, 2.0, 1.0]
    assert float(f(f32(2), f32(3), f32(1))) == 7.0
    _, f_vjp = xform.vjp(f, f32(2), f32(3), f32(1))
    assert [float(v) for v in f_vjp(f32(2))] == [6.0, 4.0, 2.0]


# ----------------------------------------------------------------- the rule is really used


def _pair(mod):
    """sin with a deliberately scaled derivative (3*cos) in both systems."""
    L = xl if mod == "x" else jax.lax
    cj = xform.custom_jvp if mod == "x" else jax.custom_jvp

    @cj
    def f(x):
        return L.sin(x)

    @f.defjvp
    def f_jvp(p, t):
        (x,), (tx,) = p, t
        return f(x), L.mul(L.mul(tx, L.cos(x)), L.full_like(x, 3.0))
    return f


@settings(max_examples=10)
@given(x=st.floats(-2, 2))
def test_custom_jvp_rule_used_matches_jax(x):
    fx, fj = _pair("x"), _pair("j")
    x = f32(x)
    close(xform.grad(fx)(x), 3 * np.cos(x))
    close(xform.grad(fx)(x), jax.grad(fj)(x))
    close(xform.jvp(fx, (x,), (f32(2),))[1], jax.jvp(fj, (x,), (f32(2),))[1])
    # higher order: differentiate the rule itself
    close(xform.grad(xform.grad(fx))(x), jax.grad(jax.grad(fj))(x))
    close(xform.jacfwd(xform.jacrev(fx))(x), jax.jacfwd(jax.jacrev(fj))(x))


def test_custom_jvp_log1pexp_stable():
    # The JAX-docs example: the rule avoids nan at large inputs.
    @xform.custom_jvp
    def log1pexp(x):
        return xl.log1p(xl.exp(x))

    @log1pexp.defjvp
    def _(p, t):
        (x,), (tx,) = p, t
        ans = log1pexp(x)
        one = xl.full_like(x, 1.0)
        return ans, xl.mul(xl.sub(one, xl.div(one, xl.add(one, xl.exp(x)))), tx)
    assert float(xform.grad(log1pexp)(f32(100.))) == 1.0
    close(xform.grad(log1pexp)(f32(0.5)), 1 / (1 + np.exp(-0.5)))


def test_defjvps():
    @xform.custom_jvp
    def f(x, y):
        return xl.mul(xl.sin(x), y)
    f.defjvps(lambda tx, ans, x, y: xl.mul(xl.mul(xl.cos(x), tx), y),
              lambda ty, ans, x, y: xl.mul(xl.sin(x), ty))
    x, y = f32(0.3), f32(1.7)
    gx, gy = xform.grad(f, argnums=(0, 1))(x, y)
    close(gx, np.cos(x) * y)
    close(gy, np.sin(x))
    close(xform.grad(f, argnums=1)(x, y), np.sin(x))


def test_nondiff_argnums():
    @xform.custom_jvp
    def f(fn, x):
        return fn(x)

    f = xform.custom_jvp(lambda fn, x: fn(x), nondiff_argnums=(0,))

    @f.defjvp
    def f_jvp(fn, p, t):
        (x,), (tx,) = p, t
        return fn(x), xl.mul(tx, f32(10))
    assert float(xform.grad(lambda x: f(xl.sin, x))(f32(1))) == 10.0

    g = xform.custom_vjp(lambda n, x: xl.mul(x, f32(n)), nondiff_argnums=(0,))
    g.defvjp(lambda n, x: (g(n, x), None), lambda n, res, ct: (xl.mul(ct, f32(n + 1)),))
    assert float(xform.grad(lambda x: g(4, x))(f32(1))) == 5.0
    assert float(g(4, f32(2))) == 8.0


def test_custom_vjp_pytree_residuals_and_args():
    @xform.custom_vjp
    def f(p):
        return xl.mul(p["a"], p["b"][0])

    def fwd(p):
        return f(p), ((p["a"],), {"b": p["b"][0]})

    def bwd(res, ct):
        (a,), d = res
        return ({"a": xl.mul(ct, d["b"]), "b": (xl.mul(ct, a),)},)
    f.defvjp(fwd, bwd)
    p = {"a": np.arange(3, dtype=f32), "b": (np.ones(3, f32) * 2,)}
    g = xform.grad(lambda p: xl.reduce_sum(f(p), (0,)))(p)
    close(g["a"], 2 * np.ones(3))
    close(g["b"][0], np.arange(3))


def test_custom_vjp_bwd_none_means_zero():
    @xform.custom_vjp
    def f(x, y):
        return xl.mul(x, y)
    f.defvjp(lambda x, y: (f(x, y), y), lambda y, ct: (xl.mul(ct, y), None))
    gx, gy = xform.grad(f, argnums=(0, 1))(f32(2), f32(3))
    assert float(gx) == 3.0 and float(gy) == 0.0


def test_nested_grad_of_custom_vjp_matches_jax():
    def build(mod):
        L = xl if mod == "x" else jax.lax
        cv = xform.custom_vjp if mod == "x" else jax.custom_vjp

        @cv
        def f(x):
            return L.mul(L.sin(x), x)

        def fwd(x):
            return f(x), (L.cos(x), L.sin(x), x)

        def bwd(res, ct):
            c, s, x = res
            return (L.mul(ct, L.add(L.mul(c, x), s)),)
        f.defvjp(fwd, bwd)
        return f
    fx, fj = build("x"), build("j")
    x = f32(0.8)
    close(xform.grad(fx)(x), jax.grad(fj)(x))
    close(xform.grad(xform.grad(fx))(x), jax.grad(jax.grad(fj))(x))
    close(xform.jacrev(xform.jacrev(fx))(x), jax.jacrev(jax.jacrev(fj))(x))


def test_symbolic_zeros():
    seen = []

    @xform.custom_jvp
    def f(x, y):
        return xl.mul(x, y)

    def f_jvp(p, t):
        x, y = p
        tx, ty = t
        seen.append((type(tx).__name__, type(ty).__name__))
        out = f(x, y)
        acc = None
        if not isinstance(tx, xform._custom_derivatives.SymbolicZero):
            acc = xl.mul(tx, y)
        if not isinstance(ty, xform._custom_derivatives.SymbolicZero):
            c = xl.mul(x, ty)
            acc = c if acc is None else xl.add(acc, c)
        return out, acc
    f.defjvp(f_jvp, symbolic_zeros=True)
    assert float(xform.grad(f)(f32(2), f32(3))) == 3.0
    assert seen[-1][1] == "SymbolicZero" and seen[-1][0] != "SymbolicZero"


def test_vmap_of_custom_rules_matches_loop():
    fj, fv = _pair("x"), make_custom_vjp_xyz()
    xs = np.linspace(-1, 1, 4).astype(f32)
    close(xform.vmap(fj)(xs), np.sin(xs))
    close(xform.vmap(xform.grad(fj))(xs), 3 * np.cos(xs))
    close(xform.grad(lambda v: xl.reduce_sum(xform.vmap(fj)(v), (0,)))(xs), 3 * np.cos(xs))
    ys, zs = xs + 1, xs * 2
    close(xform.vmap(fv)(xs, ys, zs), xs * ys + zs)
    gx = xform.grad(lambda a: xl.reduce_sum(xform.vmap(fv)(a, ys, zs), (0,)))(xs)
    close(gx, ys)
    close(xform.vmap(xform.grad(fv, argnums=1))(xs, ys, zs), xs)


def test_closed_over_values():
    # custom_jvp closing over a differentiated value: falls back to the primal program
    def outer(a):
        @xform.custom_jvp
        def f(x):
            return xl.mul(x, a)
        f.defjvp(lambda p, t: (f(p[0]), xl.mul(t[0], a)))
        return f(f32(3))
    assert float(xform.grad(outer)(f32(2))) == 3.0

    # custom_vjp closing over a differentiated value: JAX's error
    def outer_vjp(a):
        @xform.custom_vjp
        def f(x):
            return xl.mul(x, a)
        f.defvjp(lambda x: (f(x), None), lambda r, ct: (ct,))
        return f(f32(3))
    with pytest.raises(TypeError, match="closed-over value"):
        xform.grad(outer_vjp)(f32(2))
    # closed over a non-differentiated constant: fine
    c = np.arange(3, dtype=f32)

    @xform.custom_vjp
    def h(x):
        return xl.mul(x, c)
    h.defvjp(lambda x: (h(x), None), lambda r, ct: (xl.mul(ct, c),))
    close(xform.grad(lambda x: xl.reduce_sum(h(x), (0,)))(np.ones(3, f32)), c)


def test_custom_gradient():
    @xform.custom_gradient
    def f(x):
        return xl.sin(x), lambda g: xl.mul(g, f32(5))
    assert float(xform.grad(f)(f32(1))) == 5.0
    close(f(f32(1)), np.sin(1))


# ----------------------------------------------------------------- errors


def test_jvp_of_custom_vjp_is_an_error():
    f = make_custom_vjp_xyz()
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff") as e:
        xform.jvp(f, (f32(1), f32(2), f32(3)), (f32(1), f32(1), f32(1)))
    # JAX's message exactly (JAX's docs print it); the advice is a note on the exception
    import jax
    g = jax.custom_vjp(lambda x: x * 2.0)
    g.defvjp(lambda x: (x * 2.0, None), lambda r, ct: (ct * 2.0,))
    with pytest.raises(TypeError) as je:
        jax.jvp(g, (1.0,), (1.0,))
    assert str(e.value) == str(je.value)
    assert any("xform.custom_jvp" in n for n in e.value.__notes__)


def test_bwd_wrong_count_and_shape():
    @xform.custom_vjp
    def f(x, y):
        return xl.mul(x, y)
    f.defvjp(lambda x, y: (f(x, y), None), lambda r, ct: (ct,))
    with pytest.raises(TypeError, match="tuple of length 2.*got a tuple of length 1"):
        xform.grad(f)(f32(1), f32(2))

    @xform.custom_vjp
    def g(x):
        return xl.sin(x)
    g.defvjp(lambda x: (g(x), None), lambda r, ct: (np.ones(2, f32),))
    with pytest.raises(ValueError, match=r"shape/dtype f32\[2\].*input of shape/dtype f32\[\]"):
        xform.grad(g)(f32(1))

    @xform.custom_vjp
    def k(x):
        return xl.sin(x["a"])
    k.defvjp(lambda x: (k(x), None), lambda r, ct: ((ct,),))
    with pytest.raises(TypeError, match="container"):
        xform.grad(k)({"a": f32(1)})


def test_fwd_must_return_pair():
    @xform.custom_vjp
    def f(x):
        return xl.sin(x)
    f.defvjp(lambda x: f(x), lambda r, ct: (ct,))
    with pytest.raises(TypeError, match="must produce a pair"):
        xform.grad(f)(f32(1))


def test_jvp_rule_wrong_outputs():
    @xform.custom_jvp
    def f(x):
        return xl.sin(x)
    f.defjvp(lambda p, t: (f(p[0]), np.ones(3, f32)))
    with pytest.raises(TypeError, match=r"Expected f32\[\].*but got f32\[3\]"):
        xform.grad(f)(f32(1))

    @xform.custom_jvp
    def g(x):
        return xl.sin(x)
    g.defjvp(lambda p, t: g(p[0]))
    with pytest.raises(TypeError, match="must produce a pair"):
        xform.grad(g)(f32(1))


def test_missing_rule():
    f = xform.custom_jvp(lambda x: x)
    with pytest.raises(TypeError, match="No JVP defined"):
        f(f32(1))
    g = xform.custom_vjp(lambda x: x)
    with pytest.raises(TypeError, match="No VJP defined"):
        g(f32(1))

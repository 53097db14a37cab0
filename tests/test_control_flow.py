"""Structured control flow (cond, switch, while_loop, fori_loop, scan, map,
associative_scan) against real JAX under every transformation.

Each program is written once against a (lax, numpy) pair and run with both
xform's and JAX's, so JAX is the oracle for values and derivatives; Python
loops and finite differences back up the batching and derivative checks.
"""
import contextlib

import jax
import jax.numpy as jnp
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

import xform
import xform.numpy as xnp
from xform._src.interpreters.config import config
from xform import lax as xl

XL = (xl, xnp)
JL = (jax.lax, jnp)


from prim_testutil import x64_enabled as x64  # noqa: E402


@contextlib.contextmanager
def precision(dtype):
    if dtype == np.float64:
        with x64():
            yield
    else:
        yield


def tol(dtype):
    return 1e-9 if dtype == np.float64 else 2e-5


def close(a, b, dtype=np.float32, scale=1.0):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape, (x.shape, y.shape)
        np.testing.assert_allclose(x.astype(np.float64), y.astype(np.float64),
                                   rtol=tol(dtype) * scale, atol=tol(dtype) * scale)


def rand(shape, dtype, seed=0, lo=-1.0, hi=1.0):
    return np.random.RandomState(seed).uniform(lo, hi, size=shape).astype(dtype)


# ----------------------------------------------------------------- programs (lax, np) -> f


def piecewise(L, N):
    def f(x, y):
        return L.cond(x > 0, lambda a, b: N.sin(a) * b + a * a, lambda a, b: a ** 3 - b, x, y)
    return f


def three_way(L, N):
    def f(i, x):
        return L.switch(i, [lambda p: p["a"] * 2.0 + N.cos(p["b"]),
                            lambda p: N.sin(p["a"]) * p["b"],
                            lambda p: p["a"] ** 2 - p["b"]], {"a": x, "b": x * 0.5 + 1.0})
    return f


def rnn(L, N):
    def f(W, h0, xs):
        def step(h, x):
            h = N.tanh(W @ h + x)
            return h, N.sum(h * h)
        h, ys = L.scan(step, h0, xs)
        return N.sum(h) + N.sum(ys)
    return f


def power_iteration(L, N, n=6):
    def f(A, v):
        def body(i, v):
            w = A @ v
            return w / N.sqrt(N.sum(w * w))
        return L.fori_loop(0, n, body, v)
    return f


def newton_sqrt(L, N):
    def f(a):
        def cond(c):
            x, k = c
            return (N.abs(x * x - a) > 1e-4 * a) & (k < 50)

        def body(c):
            x, k = c
            return 0.5 * (x + a / x), k + 1
        return L.while_loop(cond, body, (a, 0))[0]
    return f


# ----------------------------------------------------------------- helpers


def both(make):
    """(xform version, JAX oracle); the oracle is jitted so JAX compiles whole programs
    instead of dispatching op by op (keeps the suite fast)."""
    return make(*XL), jax.jit(make(*JL))


def check_eager_and_ad(fx, fj, args, dtype, argnums=0, jit=True, hvp=True):
    close(fx(*args), fj(*args), dtype)
    gx, gj = xform.grad(fx, argnums), jax.grad(fj, argnums)
    close(gx(*args), gj(*args), dtype, scale=10)
    tangent = rand(np.shape(args[argnums]), dtype, seed=7)
    jx = xform.jvp(lambda a: fx(*args[:argnums], a, *args[argnums + 1:]),
                   (args[argnums],), (tangent,))
    jj = jax.jvp(lambda a: fj(*args[:argnums], a, *args[argnums + 1:]),
                 (args[argnums],), (tangent,))
    close(jx, jj, dtype, scale=10)
    if hvp:   # jvp(grad): Hessian-vector product
        hx = xform.jvp(lambda a: gx(*args[:argnums], a, *args[argnums + 1:]),
                       (args[argnums],), (tangent,))
        hj = jax.jvp(lambda a: gj(*args[:argnums], a, *args[argnums + 1:]),
                     (args[argnums],), (tangent,))
        close(hx, hj, dtype, scale=100)
    if jit:
        close(xform.jit(fx)(*args), fj(*args), dtype)
        close(xform.jit(gx)(*args), gj(*args), dtype, scale=10)


# ----------------------------------------------------------------- cond / switch


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x", [0.7, -1.3])
def test_cond_piecewise_all_modes(dtype, x):
    with precision(dtype):
        fx, fj = both(piecewise)
        args = (dtype(x), dtype(0.4))
        check_eager_and_ad(fx, fj, args, dtype)
        check_eager_and_ad(fx, fj, args, dtype, argnums=1, hvp=False)


def test_cond_vmap_batched_predicate_and_grad():
    fx, fj = both(piecewise)
    xs = np.array([0.5, -0.5, 2.0, -2.0, 0.0], np.float32)
    ys = np.array([1.0, 2.0, -1.0, 0.3, 0.7], np.float32)
    close(xform.vmap(fx)(xs, ys), jax.vmap(fj)(xs, ys))
    close(xform.vmap(fx, (None, 0))(np.float32(0.5), ys), jax.vmap(fj, (None, 0))(0.5, ys))
    close(xform.vmap(fx, (0, None))(xs, np.float32(0.3)), jax.vmap(fj, (0, None))(xs, 0.3))
    close(xform.vmap(xform.grad(fx))(xs, ys), jax.vmap(jax.grad(fj))(xs, ys))
    close(xform.vmap(xform.grad(fx, 1))(xs, ys), jax.vmap(jax.grad(fj, 1))(xs, ys))
    close(xform.jit(xform.vmap(fx))(xs, ys), jax.vmap(fj)(xs, ys))
    # Python loop oracle for the batched predicate.
    close(xform.vmap(fx)(xs, ys), np.stack([np.asarray(fx(a, b)) for a, b in zip(xs, ys)]))


def test_cond_only_taken_branch_runs_eagerly():
    calls = []

    def tf(x):
        calls.append("t")
        return x + 1
    # Tracing runs both Python functions once; evaluation only the taken program.
    assert float(xl.cond(True, tf, lambda x: x - 1, 1.0)) == 2.0
    assert float(xl.cond(False, tf, lambda x: x - 1, 1.0)) == 0.0
    assert float(xl.cond(np.int32(3), tf, lambda x: x - 1, 1.0)) == 2.0


@pytest.mark.parametrize("i", [-3, 0, 1, 2, 7])
def test_switch_clamps_index_and_differentiates(i):
    fx, fj = both(three_way)
    x = np.float32(0.8)
    close(fx(i, x), fj(i, x))
    close(xform.grad(fx, 1)(i, x), jax.grad(fj, 1)(i, x))
    close(xform.jit(fx)(i, x), jax.jit(fj)(i, x))
    close(xform.jit(xform.grad(fx, 1))(i, x), jax.grad(fj, 1)(i, x))
    t = np.float32(0.3)
    close(xform.jvp(lambda a: xform.grad(fx, 1)(i, a), (x,), (t,)),
          jax.jvp(lambda a: jax.grad(fj, 1)(i, a), (x,), (t,)))


def test_switch_batched_index_and_operands():
    fx, fj = both(three_way)
    idx = np.array([0, 1, 2, 5, -1], np.int32)
    xs = rand((5,), np.float32, 3)
    close(xform.vmap(fx)(idx, xs), jax.vmap(fj)(idx, xs))
    close(xform.vmap(fx, (0, None))(idx, np.float32(0.2)), jax.vmap(fj, (0, None))(idx, 0.2))
    close(xform.vmap(fx, (None, 0))(1, xs), jax.vmap(fj, (None, 0))(1, xs))
    close(xform.vmap(xform.grad(fx, 1))(idx, xs), jax.vmap(jax.grad(fj, 1))(idx, xs))


def test_cond_closure_over_outer_tracer_and_nested_grad():
    def make(L, N):
        def f(x):
            return L.cond(x < 1.0, lambda: N.sin(x) * x, lambda: N.exp(x))
        return f
    fx, fj = both(make)
    for x in (0.3, 1.7):
        x = np.float32(x)
        close(xform.grad(xform.grad(fx))(x), jax.grad(jax.grad(fj))(x), scale=10)
        close(xform.grad(fx)(x), jax.grad(fj)(x))


def test_cond_integer_and_pytree_outputs():
    def make(L, N):
        def f(p, x):
            return L.cond(p, lambda x: (x * 2.0, N.int32(1)), lambda x: (N.sin(x), N.int32(-1)), x)
        return f
    fx, fj = both(make)
    for p in (True, False):
        close(fx(p, np.float32(0.5)), fj(p, np.float32(0.5)))
        close(xform.grad(lambda x: fx(p, x)[0])(np.float32(0.5)),
              jax.grad(lambda x: fj(p, x)[0])(np.float32(0.5)))


def test_cond_per_branch_operands_form():
    """cond(pred, true_operand, true_fun, false_operand, false_fun): each branch gets its
    own operand (the older signature blackjax uses), as JAX; under jit, grad, vmap."""
    def make(L, N):
        def f(p, a, b):
            return L.cond(p, a, lambda t: (t * 3.0, N.int32(1)),
                          {"b": b}, lambda d: (N.cos(d["b"]), N.int32(0)))
        return f
    fx, fj = both(make)
    a, b = np.float32(0.7), np.float32(-1.3)
    for p in (True, False, 1, 0.0):
        close(fx(p, a, b), fj(p, a, b))
        close(xform.jit(fx)(p, a, b), jax.jit(fj)(p, a, b))
        close(xform.grad(lambda u, v: fx(p, u, v)[0], argnums=(0, 1))(a, b),
              jax.grad(lambda u, v: fj(p, u, v)[0], argnums=(0, 1))(a, b))
    ps = np.array([True, False, True])
    close(xform.vmap(fx, in_axes=(0, None, None))(ps, a, b),
          jax.vmap(fj, in_axes=(0, None, None))(ps, a, b))
    with pytest.raises(TypeError, match="should be callable"):
        xl.cond(True, 1.0, lambda t: t, 2.0)


def test_cond_staged_program_nests_branches():
    jaxpr = str(xform.make_jaxpr(piecewise(*XL))(1.0, 2.0))
    assert "cond[" in jaxpr and "branches=" in jaxpr and "sin" in jaxpr


# ----------------------------------------------------------------- scan


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scan_rnn_all_modes(dtype):
    with precision(dtype):
        fx, fj = both(rnn)
        W, h0, xs = rand((3, 3), dtype, 1), rand((3,), dtype, 2), rand((5, 3), dtype, 3)
        for k in range(3):
            check_eager_and_ad(fx, fj, (W, h0, xs), dtype, argnums=k, hvp=(k == 0))


def test_scan_rnn_vmap_and_vmap_grad():
    fx, fj = both(rnn)
    W, h0 = rand((3, 3), np.float32, 1), rand((3,), np.float32, 2)
    xsb = rand((4, 5, 3), np.float32, 3)
    close(xform.vmap(fx, (None, None, 0))(W, h0, xsb), jax.vmap(fj, (None, None, 0))(W, h0, xsb))
    # batch axis not at the front of xs (it is the scan axis's neighbour)
    xsb1 = np.moveaxis(xsb, 0, 1)
    close(xform.vmap(fx, (None, None, 1))(W, h0, xsb1),
          jax.vmap(fj, (None, None, 1))(W, h0, xsb1))
    Wb = rand((4, 3, 3), np.float32, 4)
    close(xform.vmap(fx, (0, None, None))(Wb, h0, xsb[0]),
          jax.vmap(fj, (0, None, None))(Wb, h0, xsb[0]))
    close(xform.vmap(xform.grad(fx), (0, None, 0))(Wb, h0, xsb),
          jax.vmap(jax.grad(fj), (0, None, 0))(Wb, h0, xsb), scale=10)
    close(xform.vmap(xform.grad(fx, 1), (None, None, 0))(W, h0, xsb),
          jax.vmap(jax.grad(fj, 1), (None, None, 0))(W, h0, xsb), scale=10)
    # Python loop oracle
    loop = np.stack([np.asarray(fx(W, h0, xsb[b])) for b in range(4)])
    close(xform.vmap(fx, (None, None, 0))(W, h0, xsb), loop)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_pytree_carry_and_outputs_reverse(reverse):
    def make(L, N):
        def f(a, xs):
            def step(c, x):
                s, p = c["s"], c["p"]
                return {"s": s + x[0] * p, "p": p * N.cos(x[1])}, (s * x[1], N.sin(p))
            c, (y1, y2) = L.scan(step, {"s": a, "p": a * 0.5}, (xs[:, 0], xs[:, 1]),
                                 reverse=reverse)
            return c["s"] * c["p"] + N.sum(y1 * y2)
        return f
    fx, fj = both(make)
    a, xs = np.float32(0.7), rand((6, 2), np.float32, 5)
    check_eager_and_ad(fx, fj, (a, xs), np.float32, argnums=0)
    close(xform.grad(fx, 1)(a, xs), jax.grad(fj, 1)(a, xs), scale=10)


def test_scan_no_xs_length_and_ys_only():
    c, ys = xl.scan(lambda c, _: (c * 2.0, c), 1.0, None, length=4)
    cj, ysj = jax.lax.scan(lambda c, _: (c * 2.0, c), 1.0, None, length=4)
    close(c, cj)
    close(ys, ysj)
    c, ys = xl.scan(lambda c, x: (c, None), 0.0, np.arange(3.0))
    assert ys is None and float(c) == 0.0
    c, ys = xl.scan(lambda c, x: (c + x, c), 0.0, np.zeros((0,), np.float32))
    assert np.shape(ys) == (0,) and float(c) == 0.0


def test_scan_grad_finite_differences():
    f = rnn(*XL)
    W, h0, xs = rand((3, 3), np.float64, 1), rand((3,), np.float64, 2), rand((4, 3), np.float64, 3)
    with x64():
        g = np.asarray(xform.grad(f)(W, h0, xs))
        eps = 1e-6
        fd = np.zeros_like(W)
        for idx in np.ndindex(W.shape):
            d = np.zeros_like(W)
            d[idx] = eps
            fd[idx] = (float(f(W + d, h0, xs)) - float(f(W - d, h0, xs))) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_scan_transpose_dot_product():
    """<ct, L t> == <L^T ct, t> for the linear map t -> d scan(...)[t]."""
    f = rnn(*XL)
    W, h0, xs = rand((3, 3), np.float64, 1), rand((3,), np.float64, 2), rand((4, 3), np.float64, 3)
    with x64():
        def g(xs_):
            return xl.scan(lambda h, x: (xnp.tanh(W @ h + x), h * x), h0, xs_)[1]
        out, vjp = xform.vjp(g, xs)
        t = rand(xs.shape, np.float64, 9)
        ct = rand(np.shape(out), np.float64, 10)
        _, lt = xform.jvp(g, (xs,), (t,))
        (ltct,) = vjp(ct)
        np.testing.assert_allclose(np.sum(ct * np.asarray(lt)), np.sum(np.asarray(ltct) * t),
                                   rtol=1e-10)
        del f


@settings(max_examples=10)
@given(hst.integers(1, 6), hst.booleans(), hst.integers(0, 1000))
def test_scan_cumulative_matches_python_loop(n, reverse, seed):
    xs = rand((n, 2), np.float32, seed)
    c, ys = xl.scan(lambda c, x: (c * 0.5 + x, c * x), np.zeros(2, np.float32), xs,
                    reverse=reverse)
    c_ref, ys_ref = np.zeros(2, np.float32), [None] * n
    order = range(n - 1, -1, -1) if reverse else range(n)
    for i in order:
        ys_ref[i] = c_ref * xs[i]
        c_ref = c_ref * 0.5 + xs[i]
    close(c, c_ref)
    close(ys, np.stack(ys_ref))


def test_scan_jit_lowering_matches_eager():
    f = rnn(*XL)
    W, h0, xs = rand((3, 3), np.float32, 1), rand((3,), np.float32, 2), rand((5, 3), np.float32, 3)
    close(xform.jit(f)(W, h0, xs), f(W, h0, xs))
    g = lambda xs: xl.scan(lambda c, x: (c + x, c * x), np.float32(1.0), xs, reverse=True)  # noqa
    close(xform.jit(g)(xs[:, 0]), g(xs[:, 0]))
    close(xform.jit(xform.vmap(f, (None, None, 0)))(W, h0, rand((2, 5, 3), np.float32, 4)),
          jax.vmap(rnn(*JL), (None, None, 0))(W, h0, rand((2, 5, 3), np.float32, 4)))


# ----------------------------------------------------------------- fori_loop


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fori_power_iteration_all_modes(dtype):
    with precision(dtype):
        fx0, fj0 = both(power_iteration)
        A = rand((3, 3), dtype, 11) + 2 * np.eye(3, dtype=dtype)
        v = rand((3,), dtype, 12)

        def fx(A, v):
            return xnp.sum(fx0(A, v) * np.arange(1, 4))

        @jax.jit
        def fj(A, v):
            return jnp.sum(fj0(A, v) * np.arange(1, 4))
        check_eager_and_ad(fx, fj, (A, v), dtype, argnums=0)
        check_eager_and_ad(fx, fj, (A, v), dtype, argnums=1, hvp=False, jit=False)
        Ab = np.stack([A, A.T, A + 1])
        close(xform.vmap(fx, (0, None))(Ab, v), jax.vmap(fj, (0, None))(Ab, v), dtype)
        close(xform.vmap(xform.grad(fx), (0, None))(Ab, v),
              jax.vmap(jax.grad(fj), (0, None))(Ab, v), dtype, scale=10)


def test_fori_loop_static_is_scan_dynamic_is_while():
    body = lambda i, x: x + i * 2.0  # noqa: E731
    assert "scan[" in str(xform.make_jaxpr(lambda x: xl.fori_loop(0, 4, body, x))(1.0))
    jx = str(xform.make_jaxpr(lambda n, x: xl.fori_loop(0, n, body, x))(4, 1.0))
    assert "while[" in jx
    close(xl.fori_loop(2, 5, body, 1.0), jax.lax.fori_loop(2, 5, body, 1.0))
    close(xform.jit(lambda n, x: xl.fori_loop(0, n, body, x))(5, 1.0),
          jax.lax.fori_loop(0, 5, body, 1.0))
    close(xl.fori_loop(5, 2, body, 1.0), 1.0)   # empty range
    close(xform.grad(lambda x: xl.fori_loop(0, 3, lambda i, c: c * x, 1.0))(np.float32(1.5)),
          3 * 1.5 ** 2)
    close(xform.vmap(lambda n: xl.fori_loop(0, n, lambda i, c: c + 1.0, 0.0))(
        np.array([1, 3, 0], np.int32)), np.array([1.0, 3.0, 0.0]))


# ----------------------------------------------------------------- while_loop


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_while_newton_forward_modes(dtype):
    with precision(dtype):
        fx, fj = both(newton_sqrt)
        a = dtype(2.5)
        close(fx(a), fj(a), dtype)
        close(xform.jit(fx)(a), fj(a), dtype)
        close(xform.jvp(fx, (a,), (dtype(1.0),)), jax.jvp(fj, (a,), (dtype(1.0),)), dtype,
              scale=50)
        close(xform.jit(lambda a: xform.jvp(fx, (a,), (dtype(1.0),)))(a),
              jax.jvp(fj, (a,), (dtype(1.0),)), dtype, scale=50)


def test_while_batched_predicate_runs_each_lane_to_completion():
    fx, fj = both(newton_sqrt)
    a = np.array([0.5, 2.0, 100.0, 9.0], np.float32)
    close(xform.vmap(fx)(a), jax.vmap(fj)(a))
    close(xform.vmap(fx)(a), np.stack([np.asarray(fx(v)) for v in a]))
    close(xform.jit(xform.vmap(fx))(a), jax.vmap(fj)(a))

    def count(L, N):
        return lambda n, x: L.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * x),
                                         (0, N.float32(1.0)))
    cx, cj = both(count)
    ns, xs = np.array([0, 3, 1, 5], np.int32), np.array([2.0, 3.0, 4.0, 0.5], np.float32)
    close(xform.vmap(cx)(ns, xs), jax.vmap(cj)(ns, xs))
    close(xform.vmap(cx, (0, None))(ns, np.float32(2.0)), jax.vmap(cj, (0, None))(ns, 2.0))
    close(xform.vmap(cx, (None, 0))(3, xs), jax.vmap(cj, (None, 0))(3, xs))
    close(xform.vmap(lambda n, x: xform.jvp(lambda x: cx(n, x)[1], (x,), (1.0,)))(ns, xs),
          jax.vmap(lambda n, x: jax.jvp(lambda x: cj(n, x)[1], (x,), (1.0,)))(ns, xs))


def test_while_reverse_mode_raises_clear_error():
    f = newton_sqrt(*XL)
    with pytest.raises(ValueError, match="(?s)while_loop.*fori_loop.*scan"):
        xform.grad(f)(np.float32(2.0))


# ----------------------------------------------------------------- map / associative_scan


def test_map_with_and_without_batch_size():
    f = lambda x: (xnp.sin(x["a"]) * x["b"], x["a"].sum())  # noqa: E731
    fj = lambda x: (jnp.sin(x["a"]) * x["b"], x["a"].sum())  # noqa: E731
    xs = {"a": rand((7, 3), np.float32, 1), "b": rand((7, 3), np.float32, 2)}
    ref = jax.jit(lambda xs: jax.lax.map(fj, xs))(xs)
    close(xl.map(f, xs), ref)
    for bs in (1, 2, 3, 7, 10):
        close(xl.map(f, xs, batch_size=bs), ref)
    close(xform.grad(lambda a: xl.map(lambda x: xnp.sin(x) ** 2, a).sum())(xs["a"]),
          jax.grad(lambda a: jax.lax.map(lambda x: jnp.sin(x) ** 2, a).sum())(xs["a"]))


@pytest.mark.parametrize("n", [1, 5, 8])
@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_prefix_sum_and_recurrence(n, reverse):
    x = rand((n, 2), np.float32, n)
    jscan = jax.jit(jax.lax.associative_scan, static_argnums=(0,),
                    static_argnames=("reverse", "axis"))
    close(xl.associative_scan(xl.add, x, reverse=reverse),
          jscan(jax.lax.add, x, reverse=reverse))
    close(xl.associative_scan(xl.add, x.T, axis=1, reverse=reverse),
          np.cumsum(x.T[:, ::-1], 1)[:, ::-1] if reverse else np.cumsum(x.T, 1))

    # non-commutative: linear recurrence h = a*h + b as pairs
    def comb(L):
        return lambda p, q: (p[0] * q[0], q[0] * p[1] + q[1])
    a, b = rand((n,), np.float32, 1, 0.5, 1.0), rand((n,), np.float32, 2)
    close(xl.associative_scan(comb(xl), (a, b), reverse=reverse),
          jscan(comb(jax.lax), (a, b), reverse=reverse))
    g = lambda a: xl.associative_scan(xl.mul, a).sum()  # noqa: E731
    gj = lambda a: jax.lax.associative_scan(jax.lax.mul, a).sum()  # noqa: E731
    close(xform.grad(g)(a), jax.jit(jax.grad(gj))(a))


# ----------------------------------------------------------------- errors


def test_python_control_flow_on_tracer_suggests_primitives():
    with pytest.raises(xform.ConcretizationTypeError, match="lax.cond"):
        xform.jit(lambda x: x if x > 0 else -x)(1.0)


def test_branch_type_mismatch_shows_both():
    with pytest.raises(TypeError, match="cond branches must have equal output types") as e:
        xl.cond(True, lambda x: x, lambda x: xnp.stack([x, x]), 1.0)
    assert "float32[]" in str(e.value) and "float32[2]" in str(e.value)
    with pytest.raises(TypeError, match=r"(?s)equal output types.*int32.*float32"):
        xl.switch(0, [lambda x: xnp.int32(1), lambda x: x], 1.0)
    with pytest.raises(TypeError, match="pytree structure"):
        xl.cond(True, lambda x: (x, x), lambda x: x, 1.0)
    with pytest.raises(TypeError, match="scalar"):
        xl.cond(np.array([True, False]), lambda x: x, lambda x: x, 1.0)


def test_loop_carry_type_errors_name_the_component():
    with pytest.raises(TypeError, match=r"(?s)carry.*\['b'\].*float32\[\].*float32\[3\]"):
        xl.scan(lambda c, x: ({"a": c["a"], "b": c["b"] * np.ones(3, np.float32)}, x),
                {"a": 1.0, "b": np.float32(2.0)}, np.arange(3.0))
    with pytest.raises(TypeError, match=r"(?s)carry.*int32\[\].*float32\[\]"):
        xl.while_loop(lambda c: c < 3, lambda c: c * 1.5, np.int32(0))
    with pytest.raises(TypeError, match=r"(?s)carry.*float32\[\].*int32\[\]"):
        xl.fori_loop(0, 3, lambda i, c: i, np.float32(0.0))


def test_weak_typed_init_is_promoted_like_jax():
    body = lambda i, c: c + np.float32(1.5)  # noqa: E731
    out, ref = xl.fori_loop(0, 3, body, 0), jax.lax.fori_loop(0, 3, body, 0)
    assert out.dtype == ref.dtype
    close(out, ref)


def test_while_cond_must_return_bool_scalar():
    with pytest.raises(TypeError, match=r"cond_fun must return a boolean scalar.*bool\[2\]"):
        xl.while_loop(lambda c: c < 3, lambda c: c + 1, np.zeros(2, np.int32))
    with pytest.raises(TypeError, match=r"cond_fun must return a boolean scalar.*int32"):
        xl.while_loop(lambda c: c, lambda c: c + 1, np.int32(0))


@pytest.mark.parametrize("lower, upper", [
    (0.0, 3), (0, np.float32(3)), (np.int32(0), np.int16(3)), (0, np.uint32(3)),
    ("a", 3), (0, np.zeros(2, np.int32))])
def test_fori_loop_bound_errors_as_jax(lower, upper):
    # bounds of different dtypes (unless a weak and a strong signed int) and non-scalar
    # bounds raise TypeError, as in JAX
    with pytest.raises(TypeError):
        jax.lax.fori_loop(lower, upper, lambda i, c: c, 1.0)
    with pytest.raises(TypeError):
        xl.fori_loop(lower, upper, lambda i, c: c, 1.0)


@pytest.mark.parametrize("lower, upper", [(0.5, 3.7), (np.float32(1), 4.0), (0, np.int16(3)),
                                          (np.int16(1), 3)])
def test_fori_loop_bounds_of_one_dtype_as_jax(lower, upper):
    # float bounds are allowed: concrete ones are truncated (a scan), traced ones count in
    # their own dtype (a while loop); a weak int takes the other bound's int dtype
    body = lambda i, c: c * 2.0 + i  # noqa: E731
    want = jax.lax.fori_loop(lower, upper, body, 1.0)
    np.testing.assert_array_equal(xl.fori_loop(lower, upper, body, 1.0), want)
    want_jit = jax.jit(lambda a, b: jax.lax.fori_loop(a, b, body, 1.0))(lower, upper)
    got_jit = xform.jit(lambda a, b: xl.fori_loop(a, b, body, 1.0))(lower, upper)
    np.testing.assert_array_equal(got_jit, want_jit)
    assert float(xform.grad(lambda x: xl.fori_loop(x, x + 2.0, lambda i, c: c * 3.0, x))(1.0)) \
        == float(jax.grad(lambda x: jax.lax.fori_loop(x, x + 2.0, lambda i, c: c * 3.0, x))(1.0))


def test_scan_xs_errors():
    with pytest.raises(ValueError, match=r"different leading axis sizes.*3.*4"):
        xl.scan(lambda c, x: (c, x), 0.0, (np.zeros(3), np.zeros(4)))
    with pytest.raises(ValueError, match=r"`length` argument of 5 .* leading axis sizes \[3\]"):
        xl.scan(lambda c, x: (c, x), 0.0, np.zeros(3), length=5)
    with pytest.raises(ValueError, match="no values to scan over"):
        xl.scan(lambda c, x: (c, x), 0.0, None)
    with pytest.raises(TypeError, match="pair"):
        xl.scan(lambda c, x: c, 0.0, np.zeros(3))


@pytest.mark.parametrize("unroll", [1, 3, 10, True, 20])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_unroll_under_jit_matches_jax_and_copies_the_body(unroll, reverse):
    xs = np.random.default_rng(0).normal(size=(10, 3)).astype(np.float32)

    def make(L):
        return lambda c, xs: L.scan(lambda c, x: (c * 0.9 + x, c.sum() + x[0]), c, xs,
                                    unroll=unroll, reverse=reverse)
    c0 = np.ones(3, np.float32)
    ours = xform.jit(make(xl))(c0, xs)
    theirs = jax.jit(make(jax.lax))(c0, xs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    text = xform.jit(make(xl)).lower(c0, xs).as_text()
    # (while loops, body copies): unroll=3 -> 3 trips of 3 copies + 1 leftover copy;
    # a single trip (unroll >= length) is straight-line code with no loop at all.
    loops, bodies = {"1": (1, 1), "3": (1, 4), "10": (0, 10), "True": (0, 10),
                     "20": (0, 10)}[repr(unroll)]   # (True == 1 as a dict key)
    assert len(re.findall(r"stablehlo\.while\b", text)) == loops
    assert len(re.findall(r"stablehlo\.dynamic_slice\b", text)) == bodies


def test_eager_scan_stacks_typed_keys_as_jax():
    # scan (run eagerly) whose per-step outputs and carry are typed PRNG keys

    def run(lib, jnp, n):
        k = lib.random.key(0)

        def f(c, x):
            return lib.random.fold_in(c, x), lib.random.fold_in(k, x)
        c, ys = lib.lax.scan(f, k, jnp.arange(n))
        return np.asarray(lib.random.key_data(c)), np.asarray(lib.random.key_data(ys))

    for n in (3, 0):
        for got, want in zip(run(xform, xnp, n), run(jax, jax.numpy, n)):
            np.testing.assert_array_equal(got, want)


# Misuse of the control-flow functions: xform's message must contain JAX's (the part JAX's
# own tests match, before its closing "Revise ..." advice), with JAX's exception type, and
# may add its own guidance after it.  Each case runs on real JAX and on xform.
_MISUSE = {
    "fori_not_callable": lambda lax, jnp: lax.fori_loop(0, 1, 42, 0),
    "while_not_callable": lambda lax, jnp: lax.while_loop(42, 42, 0),
    "switch_not_callable": lambda lax, jnp: lax.switch(0, [42]),
    "cond_not_callable": lambda lax, jnp: lax.cond(0, 42, 42),
    "scan_not_callable": lambda lax, jnp: lax.scan(42, 0, 1),
    "associative_scan_not_callable": lambda lax, jnp: lax.associative_scan(42, 0),
    "while_cond_pytree": lambda lax, jnp: lax.while_loop(lambda c: (1., 1.), lambda c: c, 0.),
    "while_cond_float": lambda lax, jnp: lax.while_loop(lambda c: np.float32(1.), lambda c: c,
                                                        np.float32(0.)),
    "while_carry_dtype": lambda lax, jnp: lax.while_loop(
        lambda c: True, lambda c: (True, True), (np.bool_(True), np.float32(0.))),
    "fori_bound_types": lambda lax, jnp: lax.fori_loop(np.int16(0), jnp.int32(10),
                                                      lambda i, c: c, jnp.float32(7)),
    "fori_dynamic_unroll": lambda lax, jnp: _jit_of(jnp)(
        lambda u: lax.fori_loop(np.int16(0), u, lambda i, c: c + 1, jnp.float32(10),
                                unroll=3))(10),
    "cond_pred_none": lambda lax, jnp: lax.cond(None, lambda x: x + 1, lambda x: x + 2, 1.),
    "cond_pred_function": lambda lax, jnp: lax.cond(_a_function, lambda t: 2., lambda f: 3.,
                                                    1.),
    "cond_pred_str": lambda lax, jnp: lax.cond("foo", lambda t: 2., lambda f: 3., 1.),
    "cond_pred_tuple": lambda lax, jnp: lax.cond((1., 1.), lambda t: 2., lambda f: 3., 1.),
    "cond_pred_vector": lambda lax, jnp: lax.cond(jnp.array([True, False]), lambda t: 2.,
                                                  lambda f: 3., 1.),
    "cond_pred_complex": lambda lax, jnp: lax.cond(jnp.complex64(1), lambda t: 2.,
                                                   lambda f: 3., 1.),
    "cond_outputs_structure": lambda lax, jnp: lax.cond(
        True, lambda t: dict(a=2.), lambda f: dict(a=(3., 3.)), 1.),
    "cond_outputs_length": lambda lax, jnp: lax.cond(True, lambda t: (2., 3.),
                                                     lambda f: (3.,), 1.),
    "switch_index_function": lambda lax, jnp: lax.switch(_a_function, [lambda _: 2.], 1.),
    "switch_index_str": lambda lax, jnp: lax.switch("foo", [lambda _: 2., lambda _: 3.], 1.),
    "switch_index_tuple": lambda lax, jnp: lax.switch((1., 1.), [lambda _: 2.], 1.),
    "switch_index_float": lambda lax, jnp: lax.switch(1.5, [lambda _: 2., lambda _: 3.], 1.),
    "switch_index_vector": lambda lax, jnp: lax.switch(jnp.array([1, 0]), [lambda _: 2.], 1.),
    "switch_no_branches": lambda lax, jnp: lax.switch(0, [], 1.),
    "switch_outputs_structure": lambda lax, jnp: lax.switch(
        1, [lambda _: dict(a=2.), lambda _: dict(a=(3., 3.))], 1.),
    "scan_scalar_xs": lambda lax, jnp: lax.scan(lambda p, i: (p, i), jnp.array(1),
                                                list(range(5))),
    "scan_output_not_pair": lambda lax, jnp: lax.scan(lambda c, x: np.float32(0.), 0,
                                                      jnp.arange(5.)),
    "fori_carry_metadata": lambda lax, jnp: lax.fori_loop(
        0, 1, lambda i, x: {'T': jnp.array([0.5])}, {'t': jnp.array([1.0])}),
    "scan_carry_length": lambda lax, jnp: lax.scan(lambda c, x: ((0, 0, 0), x), (1, (2, 3)),
                                                   jnp.arange(5.)),
    "scan_carry_list": lambda lax, jnp: lax.scan(
        lambda x, _: ([x[0].astype('float32')] * 2, None), (jnp.array(0, 'int32'),) * 2, None,
        length=1),
    "scan_carry_children": lambda lax, jnp: lax.scan(
        lambda x, _: (({'a': x[0]['a'], 'b': x[0]['a']},) * 2, None),
        ({'a': jnp.array(0, 'int32')},) * 2, None, length=1),
    "scan_carry_dtype": lambda lax, jnp: lax.scan(lambda x, _: (x.astype('float32'), None),
                                                  jnp.array(0, 'int32'), None, length=1),
    "scan_carry_dtypes_and_shape": lambda lax, jnp: lax.scan(
        lambda x, _: ((x[0].astype('float32'), x[1].astype('float32').reshape(1, 1), x[2]),
                      None), (jnp.array(0, 'int32'),) * 3, None, length=1),
    "scan_length_disagrees": lambda lax, jnp: lax.scan(lambda *a: a, 0, jnp.arange(10),
                                                       length=5),
    "scan_leading_sizes_differ": lambda lax, jnp: lax.scan(
        lambda *a: a, 0, (jnp.arange(10), jnp.arange(3))),
    "scan_nothing_to_scan": lambda lax, jnp: lax.scan(lambda x, _: (x, x), 0, None),
    "scan_negative_unroll": lambda lax, jnp: lax.scan(lambda x, _: (x, x), 0, jnp.arange(5),
                                                      unroll=-1),
    "scan_traced_length": lambda lax, jnp: _jit_of(jnp)(
        lambda n, x: lax.scan(lambda c, z: (c, z), x, (), n))(3, 1.),
    "scan_traced_unroll": lambda lax, jnp: _jit_of(jnp)(
        lambda n, x: lax.scan(lambda c, z: (c, z), x, (), 10, unroll=n))(True, 1.),
}


def _a_function(x):
    return True


def _jit_of(jnp):
    return jax.jit if jnp is jax.numpy else xform.jit


def _raised(case, lax, jnp):
    with pytest.raises(Exception) as e:
        _MISUSE[case](lax, jnp)
    return e.value


def _jax_words(msg):
    """The part of JAX's message its tests match: without object addresses, up to its
    closing advice."""
    msg = re.sub(r" at 0x[0-9a-f]+", "", msg).split("\n\nRevise")[0]
    if msg.startswith("Abstract tracer value"):      # keep the line naming the argument
        msg = next(line for line in msg.splitlines() if line.startswith("The `"))
    return msg


@pytest.mark.parametrize("case", sorted(_MISUSE))
def test_control_flow_misuse_messages_contain_jax_wording(case):
    je = _raised(case, jax.lax, jnp)
    xe = _raised(case, xl, xnp)
    if type(je).__module__ == "builtins":
        assert type(xe) is type(je), (type(xe), type(je), str(xe))
    else:
        assert type(xe).__name__ == type(je).__name__, (type(xe), type(je), str(xe))
    want = _jax_words(str(je))
    got = re.sub(r" at 0x[0-9a-f]+", "", str(xe))
    assert want in got, f"JAX: {want!r}\nxform: {got!r}"
    if case == "scan_length_disagrees":      # JAX's test compares this one literally
        assert str(xe) == str(je)


def test_platform_dependent_without_branch_or_default_names_the_translation_rule():
    # JAX raises while lowering; its test matches "translation rule .* not found for platform"
    with pytest.raises(NotImplementedError) as je:
        jax.lax.platform_dependent(3., tpu=lambda x: x + 2.)
    with pytest.raises(NotImplementedError,
                       match="translation rule .* not found for platform cpu") as xe:
        xl.platform_dependent(3., tpu=lambda x: x + 2.)
    assert re.search("translation rule .* not found for platform cpu", str(je.value))
    assert "pass default=" in str(xe.value)

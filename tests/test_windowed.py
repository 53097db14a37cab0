"""reduce_window (sum/max/min fast paths and generic computations), the max-pool gradient
pair and generic lax.reduce: against real JAX, finite differences, the dot-product test and
Python loops."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import xform
import xform.lax as lax
import xform.numpy as xnp
from _conv_fft_specs import _distinct, random_window
from prim_testutil import check_batch, check_jvp, check_transpose, examples, x64_enabled

OPS = {"sum": (0.0, lax.add, jax.lax.add), "max": (-np.inf, lax.max, jax.lax.max),
       "min": (np.inf, lax.min, jax.lax.min)}


def _close(a, b, tol=1e-5):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# Default run: one draw per monoid; the slow step runs 8 draws
# (test_monoids_and_gradients_match_jax_exhaustive).
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@examples(1)
@given(seed=st.integers(0, 2**31 - 1), string_pad=st.sampled_from([None, "SAME", "VALID"]))
def test_monoids_and_gradients_match_jax(seed, kind, string_pad):
    _test_monoids_and_gradients_match_jax(seed, kind, string_pad)


@pytest.mark.slow
@examples(8)
@given(seed=st.integers(0, 2**31 - 1), kind=st.sampled_from(["sum", "max", "min"]),
       string_pad=st.sampled_from([None, "SAME", "VALID"]))
def test_monoids_and_gradients_match_jax_exhaustive(seed, kind, string_pad):
    _test_monoids_and_gradients_match_jax(seed, kind, string_pad)


def _test_monoids_and_gradients_match_jax(seed, kind, string_pad):
    rng = np.random.default_rng(seed)
    shp, p = random_window(rng, dilations=kind == "sum")
    if string_pad:
        p["padding"] = string_pad
    x = _distinct(rng, shp, np.float32)
    init, op, jop = OPS[kind]
    f = lambda x: lax.reduce_window(x, init, op, **p)
    jf = lambda x: jax.lax.reduce_window(x, init, jop, **p)
    want = jf(x)
    _close(f(x), want)
    _close(xform.jit(f)(x), want)
    ct = rng.standard_normal(want.shape).astype(np.float32)
    loss = lambda f, np_: lambda x: np_.sum(f(x) * ct)
    jg = jax.grad(loss(jf, jnp))(x)
    _close(xform.grad(loss(f, xnp))(x), jg)
    _close(xform.jit(xform.grad(loss(f, xnp)))(x), jg)


def test_pooling_as_stax_and_flax_write_it():
    """max/avg pooling exactly as jax.example_libraries.stax / Flax call reduce_window."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8, 8, 3)).astype(np.float32)

    def pools(lx, np_):
        mx = lx.reduce_window(x, -np_.inf, lx.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        av = lx.reduce_window(x, 0., lx.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME") / 9.0
        return mx, av
    for a, b in zip(pools(lax, xnp), pools(jax.lax, jnp)):
        _close(a, b)
    g = xform.grad(lambda x: xnp.sum(pools(lax, xnp)[0] ** 2))(x)
    _close(g, jax.grad(lambda x: jnp.sum(pools(jax.lax, jnp)[0] ** 2))(x))


@examples(10)
@given(seed=st.integers(0, 2**31 - 1), variadic=st.booleans())
def test_generic_reduce_window_matches_jax(seed, variadic):
    rng = np.random.default_rng(seed)
    shp, p = random_window(rng)
    x = (rng.uniform(0.5, 1.5, shp)).astype(np.float32)
    if variadic:
        idx = np.arange(x.size, dtype=np.int32).reshape(shp)

        def comp(np_):
            def c(a, b):
                pick = (a[0] > b[0]) | ((a[0] == b[0]) & (a[1] < b[1]))
                return np_.where(pick, a[0], b[0]), np_.where(pick, a[1], b[1])
            return c
        ours = lax.reduce_window((x, idx), (-np.inf, np.int32(-1)), comp(xnp), **p)
        want = jax.lax.reduce_window((x, idx), (-np.inf, np.int32(-1)), comp(jnp), **p)
        jitted = xform.jit(lambda x, i: lax.reduce_window((x, i), (-np.inf, np.int32(-1)),
                                                          comp(xnp), **p))(x, idx)
        for a, b, c in zip(ours, want, jitted):
            _close(a, b)
            _close(c, b)
        return
    ours = lax.reduce_window(x, 1.0, lax.mul, **p)
    want = jax.lax.reduce_window(x, 1.0, jax.lax.mul, **p)
    _close(ours, want, 1e-5)
    _close(xform.jit(lambda x: lax.reduce_window(x, 1.0, lax.mul, **p))(x), want, 1e-5)
    t = rng.standard_normal(shp).astype(np.float32)
    _, tan = xform.jvp(lambda x: lax.reduce_window(x, 1.0, lax.mul, **p), (x,), (t,))
    _, jtan = jax.jvp(lambda x: jax.lax.reduce_window(x, 1.0, jax.lax.mul, **p), (x,), (t,))
    _close(tan, jtan, 1e-4)


@examples(10)
@given(seed=st.integers(0, 2**31 - 1), kind=st.sampled_from(["sum", "max", "min", "mul"]))
def test_jvp_matches_finite_differences(seed, kind):
    rng = np.random.default_rng(seed)
    shp, p = random_window(rng, negative_pads=True)
    x = _distinct(rng, shp, np.float64) + 0.5
    init, op = (1.0, lax.mul) if kind == "mul" else OPS[kind][:2]
    # windows lying entirely in the padding give +-inf (finite differences: nan)
    assume(np.isfinite(np.asarray(lax.reduce_window(x.astype(np.float32), init, op, **p))).all())
    with x64_enabled():
        check_jvp(lambda x: lax.reduce_window(x, init, op, **p), [x], rng, eps=1e-7,
                  rtol=1e-5, atol=1e-6)


@examples(10)
@given(seed=st.integers(0, 2**31 - 1), kind=st.sampled_from(["sum", "max", "min"]))
def test_transposes_pass_dot_product_test(seed, kind):
    """reduce_window_sum's transpose, and select_and_gather_add <-> select_and_scatter_add
    (the linearization of max/min pooling)."""
    rng = np.random.default_rng(seed)
    shp, p = random_window(rng, negative_pads=True, dilations=kind == "sum")
    x = _distinct(rng, shp, np.float64)
    init, op = OPS[kind][:2]
    with x64_enabled():
        check_transpose(lambda x: lax.reduce_window(x, init, op, **p), [x], rng)
        if kind != "sum":
            sel = "ge" if kind == "max" else "le"
            out = lax.reduce_window(x, init, op, **p).shape
            ws = dict(window_dimensions=p["window_dimensions"],
                      window_strides=p["window_strides"], padding=p["padding"])
            check_transpose(lambda s, x: lax.select_and_scatter_add(s, x, sel, **ws),
                            [rng.standard_normal(out), x], rng, lin=[0])


@examples(8)
@given(seed=st.integers(0, 2**31 - 1), kind=st.sampled_from(["sum", "max", "min", "mul"]))
def test_batching_matches_loop_and_jax_vmap(seed, kind):
    rng = np.random.default_rng(seed)
    shp, p = random_window(rng, dilations=False)
    size = 3
    d = int(rng.integers(0, len(shp) + 1))
    xb = np.moveaxis(_distinct(rng, (size,) + shp, np.float32) + 0.5, 0, d)
    if kind == "mul":
        f, jf = (lambda x: lax.reduce_window(x, 1.0, lax.mul, **p),
                 lambda x: jax.lax.reduce_window(x, 1.0, jax.lax.mul, **p))
    else:
        init, op, jop = OPS[kind]
        f = lambda x: lax.reduce_window(x, init, op, **p)
        jf = lambda x: jax.lax.reduce_window(x, init, jop, **p)
    check_batch(f, [xb], [d], size, rtol=1e-5)
    _close(xform.vmap(f, in_axes=d)(xb), jax.vmap(jf, in_axes=d)(xb), 1e-5)
    if kind in ("max", "min"):   # batched gradient (select_and_scatter_add batching)
        g = lambda f, np_: lambda x: np_.sum(f(x) ** 2)
        _close(xform.vmap(xform.grad(g(f, xnp)), in_axes=d)(xb),
               jax.vmap(jax.grad(g(jf, jnp)), in_axes=d)(xb), 1e-5)


@examples(4)
@given(seed=st.integers(0, 2**31 - 1))
def test_generic_reduce_matches_jax(seed):
    rng = np.random.default_rng(seed)
    nd = int(rng.integers(1, 4))
    shp = tuple(int(rng.integers(1, 5)) for _ in range(nd))
    dims = tuple(sorted(int(d) for d in rng.permutation(nd)[:int(rng.integers(1, nd + 1))]))
    x = _distinct(rng, shp, np.float32)
    idx = np.arange(x.size, dtype=np.int32).reshape(shp)

    def comp(np_):
        def c(a, b):
            pick = (a[0] > b[0]) | ((a[0] == b[0]) & (a[1] < b[1]))
            return np_.where(pick, a[0], b[0]), np_.where(pick, a[1], b[1])
        return c
    ours = lax.reduce((x, idx), (-np.inf, np.int32(0)), comp(xnp), dims)
    want = jax.lax.reduce((x, idx), (-np.inf, np.int32(0)), comp(jnp), dims)
    jit = xform.jit(lambda x, i: lax.reduce((x, i), (-np.inf, np.int32(0)), comp(xnp), dims))
    for a, b, c in zip(ours, want, jit(x, idx)):
        _close(a, b)
        _close(c, b)
    # monoids go to the fast reductions (and so are reverse-differentiable)
    _close(lax.reduce(x, 0.0, lax.add, dims), jax.lax.reduce(x, 0.0, jax.lax.add, dims))
    _close(xform.grad(lambda x: lax.reduce(x, -np.inf, lax.max, dims).sum())(x),
           jax.grad(lambda x: jax.lax.reduce(x, -np.inf, jax.lax.max, dims).sum())(x))
    # generic: forward-mode derivative and batching
    xs = rng.uniform(0.5, 1.5, shp).astype(np.float32)
    t = rng.standard_normal(shp).astype(np.float32)
    mul = lambda np_, l: (lambda a, b: a * b)
    _, tan = xform.jvp(lambda x: lax.reduce(x, 1.0, mul(xnp, lax), dims), (xs,), (t,))
    _, jtan = jax.jvp(lambda x: jax.lax.reduce(x, 1.0, mul(jnp, jax.lax), dims), (xs,), (t,))
    _close(tan, jtan, 1e-4)
    xb = np.stack([xs, xs * 0.5])
    _close(xform.vmap(lambda x: lax.reduce(x, 1.0, mul(xnp, lax), dims))(xb),
           jax.vmap(lambda x: jax.lax.reduce(x, 1.0, mul(jnp, jax.lax), dims))(xb), 1e-5)


def test_errors():
    x = np.ones((4, 4), np.float32)
    with pytest.raises(TypeError):
        lax.reduce_window(x, 0.0, lax.add, (2,), (1,), "VALID")
    with pytest.raises(TypeError):
        lax.reduce_window(x, 0.0, lax.add, (2, 0), (1, 1), "VALID")
    with pytest.raises(ValueError):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "FULL")
    with pytest.raises(ValueError, match="same tree structure"):   # as JAX: wrong output tree
        lax.reduce_window(x, 0.0, lambda a, b: (a, b), (2, 2), (1, 1), "VALID")
    with pytest.raises(ValueError):
        lax.select_and_scatter_add(x, x, lax.add_p if hasattr(lax, "add_p") else "add",
                                   (1, 1), (1, 1), ((0, 0), (0, 0)))

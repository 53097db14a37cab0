"""Behaviours found by running JAX's own ``lax_control_flow_test.py`` on xform
(``tools/jax_tests/run.py``), each compared with real JAX."""
import jax
import jax.numpy as jnp
import jax.scipy as jsp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

import xform
import xform.numpy as xnp
import xform.scipy as xsp
from xform import lax as xl


def _eq(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_vmapped_solve_of_few_examples_as_jax(n):
    # vmap of a solve over zero examples emitted a gather XLA refuses (slice size 1 on an
    # empty batching dimension); an empty gather is now a constant, as in JAX
    rng = np.random.default_rng(n)
    ms = (np.eye(2) + 0.1 * rng.normal(size=(n, 2, 2))).astype(np.float32)
    vs = rng.normal(size=(n, 2)).astype(np.float32)
    want = jax.vmap(jsp.linalg.solve)(ms, vs)
    for f in (xform.vmap(xsp.linalg.solve), xform.jit(xform.vmap(xsp.linalg.solve))):
        got = f(ms, vs)
        assert got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("size", [2, 3, 43])
def test_associative_scan_of_a_batch_sensitive_function(size):
    ms = np.repeat(np.eye(2, dtype=np.float32)[None], size, axis=0)
    vs = np.ones((size, 2), np.float32)

    def make(L, solve):
        @L.vmap
        def fn(a, b):
            (m1, v1), (m2, v2) = a, b
            return m1 + m2, solve(m1, v2) + solve(m2, v1)
        return lambda: L.lax.associative_scan(fn, elems=(ms, vs))
    want = make(jax, jsp.linalg.solve)()
    got = make(xform, xsp.linalg.solve)()
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def test_grad_of_vmapped_cond_sends_no_cotangent_through_the_branch_not_taken():
    # sqrt at 0 lies behind `x < eps`: its infinite derivative must not give 0 * inf
    eps = 1e-3

    def safe(L):
        return lambda x: L.lax.cond(x < eps, lambda _: eps, lambda _: L.numpy.sqrt(x), ())
    x = np.array([0.0, 0.0, 4.0, 1e-4, 9.0], np.float32)
    want = jax.grad(lambda x: jax.vmap(safe(jax))(x).sum())(x)
    got = xform.grad(lambda x: xform.vmap(safe(xform))(x).sum())(x)
    assert not np.isnan(np.asarray(got)).any()
    _eq(got, want)
    got_jit = xform.jit(xform.grad(lambda x: xform.vmap(safe(xform))(x).sum()))(x)
    _eq(got_jit, want)


def test_switch_under_vmap_with_batched_index_and_gradients():
    branches = [lambda x: 3.0 * x, lambda x: xnp.sin(x), lambda x: -x * x]
    jbranches = [lambda x: 3.0 * x, lambda x: jnp.sin(x), lambda x: -x * x]
    idx = np.array([0, 1, 2, 1, 0], np.int32)
    x = np.linspace(-1, 1, 5).astype(np.float32)
    want = jax.grad(lambda x: jax.vmap(lambda i, x: jax.lax.switch(i, jbranches, x))(
        idx, x).sum())(x)
    got = xform.grad(lambda x: xform.vmap(lambda i, x: xl.switch(i, branches, x))(
        idx, x).sum())(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_axis_index_in_a_jitted_loop_under_vmap_with_no_batched_operand():
    def make(L):
        def fun(x):
            return L.lax.while_loop(lambda x: x < L.lax.axis_index("i"), lambda x: x + 2, x)
        return L.jit(fun)
    for in_axes, args in (((0, None), (np.zeros(4, np.int32), 0)),
                          ((0, 0), (np.zeros(4, np.int32), np.zeros(4, np.int32)))):
        want = jax.vmap(lambda _, x: make(jax)(x), axis_name="i", in_axes=in_axes)(*args)
        got = xform.vmap(lambda _, x: make(xform)(x), axis_name="i", in_axes=in_axes)(*args)
        _eq(got, want)


def test_read_only_while_carry_stays_unbatched_under_vmap():
    # flax issue 4700: a parameter carried unchanged through a loop whose predicate is
    # batched comes out unbatched (out_axes=None), and the loop takes it as a constant
    def make(L):
        def foo(w, x, c_max):
            def body(val):
                c, x, w = val
                return c + 1, x @ w, w
            _, x, w = L.lax.while_loop(lambda v: v[0] < c_max, body, (0, x, w))
            return w, x
        return foo
    w, xs, c_maxs = np.full((2, 2), 0.5, np.float32), np.ones((4, 2), np.float32), np.arange(4)
    want = jax.vmap(make(jax), in_axes=(None, 0, 0), out_axes=(None, 0))(w, xs, c_maxs)
    got = xform.vmap(make(xform), in_axes=(None, 0, 0), out_axes=(None, 0))(w, xs, c_maxs)
    for g, e in zip(got, want):
        _eq(g, e)
    jj = jax.make_jaxpr(make(jax))(w, xs[0], 3).eqns[-1]
    xj = xform.make_jaxpr(make(xform))(w, xs[0], 3).eqns[-1]
    for k in ("body_nconsts", "cond_nconsts"):
        assert xj.params[k] == jj.params[k]
    assert len(xj.outvars) == len(jj.outvars)


def test_read_only_scan_carry_in_a_cond_under_vmap():
    # flax issue 4709
    def make(L):
        def f(x, y):
            def g(_, y):
                y, _ = L.lax.scan(lambda y, _: (y, None), y, None, length=1)
                return y
            return L.lax.cond(x < 0, g, g, x, y)
        return f
    xs = np.arange(3.0, dtype=np.float32)
    _eq(xform.vmap(make(xform), (0, None), None)(xs, 3.0),
        jax.vmap(make(jax), (0, None), None)(xs, 3.0))


def test_scan_outputs_forwarded_from_inputs_as_jax():
    def make(L):
        return lambda x: L.lax.scan(lambda c, x: (c + 1, x), 0, x)
    xs = np.arange(3.0, dtype=np.float32)
    jj = jax.make_jaxpr(make(jax))(xs)
    xj = xform.make_jaxpr(make(xform))(xs)
    assert len(xj.eqns[0].params["jaxpr"].jaxpr.outvars) == \
        len(jj.eqns[0].params["jaxpr"].jaxpr.outvars) == 1
    for g, w in zip(make(xform)(xs), make(jax)(xs)):
        _eq(g, w)


@settings(max_examples=25, deadline=None)
@given(read_only=hst.lists(hst.booleans(), min_size=1, max_size=4),
       reverse=hst.booleans(), jit=hst.booleans())
def test_loops_with_read_only_carries_equal_jax(read_only, reverse, jit):
    # values and gradients of scans and while loops whose carries are partly read-only
    n = len(read_only)
    rng = np.random.default_rng(n + 7 * reverse)
    init = [rng.normal(size=(3,)).astype(np.float32) for _ in range(n)]
    xs = rng.normal(size=(4, 3)).astype(np.float32)

    def make(L):
        def body(c, x):
            s = sum(ci for ci in c) * 0.5
            return [ci if ro else L.numpy.sin(ci * x + s) for ci, ro in zip(c, read_only)], s

        def scan_loss(init):
            c, ys = L.lax.scan(body, init, xs, reverse=reverse)
            return sum(ci.sum() for ci in c) + ys.sum()

        def while_loss(init):
            def wbody(v):
                k, c = v
                return k + 1, [ci if ro else L.numpy.cos(ci) + c[0] * 0.1
                               for ci, ro in zip(c, read_only)]
            return L.lax.while_loop(lambda v: v[0] < 3, wbody, (0, init))[1]
        f = L.value_and_grad(scan_loss)
        return (L.jit(f) if jit else f), (L.jit(while_loss) if jit else while_loss)
    (jf, jw), (xf, xw) = make(jax), make(xform)
    (jv, jg), (xv, xg) = jf(init), xf(init)
    np.testing.assert_allclose(float(xv), float(jv), rtol=2e-6)
    for g, w in zip(xg, jg):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-6)
    for g, w in zip(xw(init), jw(init)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-7)


def test_switch_branches_share_residual_slots_of_one_type():
    base = [lambda L: (lambda x: L.numpy.sin(x)), lambda L: (lambda x: L.numpy.cos(x)),
            lambda L: (lambda x: L.numpy.sinh(x)),
            lambda L: (lambda x: L.numpy.sin(x) + L.numpy.cos(x))]

    def forward_outs(L, k):
        bs = [b(L) for b in base[:k]]
        jp = L.make_jaxpr(L.grad(lambda x, i: L.lax.switch(i + 1, bs, x)))(0.0, 0)
        cond = next(e for e in jp.jaxpr.eqns if e.primitive.name == "cond")
        return len(cond.params["branches"][0].jaxpr.outvars)
    for k in (2, 3, 4):
        assert forward_outs(xform, k) == forward_outs(jax, k)
    bs, jbs = [b(xform) for b in base], [b(jax) for b in base]
    for i in range(-1, 4):
        np.testing.assert_allclose(
            float(xform.grad(lambda x: xl.switch(i + 1, bs, x))(0.3)),
            float(jax.grad(lambda x: jax.lax.switch(i + 1, jbs, x))(0.3)), rtol=1e-6)


def test_vjp_takes_any_cotangent_dtype_for_an_integer_output():
    def make(L):
        return lambda x: (x * 2.0, (x > 0).astype(L.numpy.int32), x > 1)
    x = np.arange(3.0, dtype=np.float32)
    jout, jvjp = jax.vjp(make(jax), x)
    xout, xvjp = xform.vjp(make(xform), x)
    _eq(xvjp(xout)[0], jvjp(jout)[0])
    ct = (np.ones(3, np.float32), np.ones(3, np.int32), np.ones(3, np.int32))
    _eq(xvjp(ct)[0], jvjp(ct)[0])
    with pytest.raises(ValueError, match="unexpected JAX type"):
        xvjp((ct[0], np.ones(2, np.int32), ct[2]))     # the shape must still agree


def test_lowered_as_text_hlo_is_xla_hlo():
    def f(L):
        return lambda x: L.lax.platform_dependent(x, cpu=L.numpy.sin, default=L.numpy.cos)
    x = np.arange(3, dtype=np.float32)
    for L in (jax, xform):
        hlo = L.jit(L.vmap(f(L))).lower(x).as_text("hlo")
        assert hlo.startswith("HloModule") and " sine(" in hlo and " cosine(" not in hlo
    with pytest.raises(ValueError, match="dialect"):
        xform.jit(xnp.sin).lower(x).as_text("llvm")


@pytest.mark.parametrize("unroll", [0, 1, 2, True, False])
def test_scan_unroll_zero_unrolls_the_whole_loop_as_jax(unroll):
    # JAX documents unroll=0 as "unroll the entire loop" (xform ran it rolled, so XLA
    # fused differently and the bits differed from JAX's)
    rng = np.random.default_rng(0)
    d, xs, c = (rng.normal(size=s).astype(np.float32) for s in ((2,), (5, 3), (4,)))

    def make(L):
        def f(c, a):
            b = L.numpy.sum(L.numpy.sin(a)) + L.numpy.sum(L.numpy.sin(c)) + \
                L.numpy.sum(L.numpy.sin(d))
            return L.numpy.sin(c * b), b
        return lambda c, xs: L.lax.scan(f, c, xs, unroll=unroll)
    for g, w in zip(xform.jit(make(xform))(c, xs), jax.jit(make(jax))(c, xs)):
        _eq(g, w)
    hlo = xform.jit(make(xform)).lower(c, xs).as_text()
    fully_unrolled = unroll is True or (unroll is not False and unroll == 0)
    assert ("stablehlo.while" in hlo) != fully_unrolled

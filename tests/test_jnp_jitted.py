"""jnp / jax.nn functions that JAX wraps in ``jit`` stage as nested ``jit`` equations
(xform.numpy._jitted), only while a program is staged; their values and derivatives
under jit/grad/vmap agree with JAX.  Also: debug.print as JAX's debug_print primitive,
jit(inline=True), relu's custom derivative, the sort JVP."""
import numpy as np
import pytest

import jax
import jax.numpy as jjnp

import xform
import xform.numpy as xjnp
from xform._src.interpreters import core
from xform._src.interpreters.staging import StagingTrace
from xform.numpy import _jitted

f32 = np.float32
A = (np.arange(12, dtype=f32).reshape(3, 4) - 5.5) / 3
B = np.linspace(-1, 1, 12, dtype=f32).reshape(3, 4)

# name -> (function over a library, args)
CASES = {
    "where": (lambda L: lambda a, b: L.numpy.where(a > b, a, b), (A, B)),
    "where_scalar": (lambda L: lambda a: L.numpy.where(a > 0, a, 0.), (A,)),
    "sort": (lambda L: lambda a: L.numpy.sort(a, axis=0), (A,)),
    "argsort": (lambda L: lambda a: L.numpy.argsort(a, axis=1), (A,)),
    "cumsum": (lambda L: lambda a: L.numpy.cumsum(a, axis=1), (A,)),
    "cumprod": (lambda L: lambda a: L.numpy.cumprod(a), (A,)),
    "clip": (lambda L: lambda a: L.numpy.clip(a, -0.5, 0.7), (A,)),
    "round": (lambda L: lambda a: L.numpy.round(a, 1), (A,)),
    "flip": (lambda L: lambda a: L.numpy.flip(a, 1), (A,)),
    "tril": (lambda L: lambda a: L.numpy.tril(a, 1), (A,)),
    "var": (lambda L: lambda a: L.numpy.var(a, axis=0), (A,)),
    "std": (lambda L: lambda a: L.numpy.std(a), (A,)),
    "remainder": (lambda L: lambda a: a % 0.3, (A,)),
    "diff": (lambda L: lambda a: L.numpy.diff(a, axis=0), (A,)),
    "hypot": (lambda L: lambda a, b: L.numpy.hypot(a, b), (A, B)),
    "silu": (lambda L: lambda a: L.nn.silu(a), (A,)),
    "log_softmax": (lambda L: lambda a: L.nn.log_softmax(a, axis=0), (A,)),
    "relu": (lambda L: lambda a: L.nn.relu(a), (A,)),
}


def _top_jits(closed):
    return [(e.primitive.name, e.params.get("name")) for e in closed.jaxpr.eqns
            if e.primitive.name in ("jit", "pjit", "custom_jvp_call")]


@pytest.mark.parametrize("name", sorted(CASES))
def test_nested_jit_equations_as_jax(name):
    mk, args = CASES[name]
    ref = _top_jits(jax.make_jaxpr(mk(jax))(*args))
    ours = _top_jits(xform.make_jaxpr(mk(xform))(*args))
    assert [n for _, n in ours] == [n for _, n in ref] and ours


DERIV = ["where", "where_scalar", "sort", "argsort", "cumsum", "clip", "var", "flip",
         "log_softmax", "relu"]


@pytest.mark.parametrize("name", DERIV)
def test_values_and_derivatives_match_jax(name):
    mk, args = CASES[name]
    fj, fx = mk(jax), mk(xform)
    tol = dict(rtol=1e-5, atol=1e-6)
    for tj, tx in [(fj, fx), (jax.jit(fj), xform.jit(fx))]:
        np.testing.assert_allclose(np.asarray(tx(*args)), np.asarray(tj(*args)), **tol)
    bargs = [np.stack([a, a[::-1] * 0.5]) for a in args]
    np.testing.assert_allclose(np.asarray(xform.vmap(fx)(*bargs)),
                               np.asarray(jax.vmap(fj)(*bargs)), **tol)
    if np.asarray(fj(*args)).dtype.kind != "f":
        return

    def lj(*a):
        return jjnp.sum(jjnp.sin(fj(*a)))

    def lx(*a):
        return xjnp.sum(xjnp.sin(fx(*a)))
    gj = jax.grad(lj, argnums=tuple(range(len(args))))(*args)
    for g in (xform.grad(lx, argnums=tuple(range(len(args)))),
              xform.jit(xform.grad(lx, argnums=tuple(range(len(args)))))):
        for p, q in zip(gj, g(*args)):
            np.testing.assert_allclose(np.asarray(q), np.asarray(p), **tol)


def test_eager_calls_do_not_jit_and_staged_calls_do():
    seen = []

    def probe(x):
        t = core.current_trace()
        seen.append(type(t).__name__ if t is not core.EVAL_TRACE else "eval")
        return xjnp.sin(x)
    w = _jitted.wrap(probe, "probe", ())
    x = np.float32(0.3)
    w(x)                                    # eager
    xform.grad(w)(x)                        # eager grad: linearize's partial evaluator only
    xform.vmap(w)(np.ones(3, f32))          # eager vmap
    assert seen[0] == "eval" and len(seen) == 3
    assert "StagingTrace" not in seen       # never inside a nested jit's trace
    n = len(seen)
    closed = xform.make_jaxpr(w)(x)
    assert [e.params["name"] for e in closed.jaxpr.eqns] == ["probe"]
    assert seen[n:] == ["StagingTrace"]     # traced once, inside its own jit
    # eager transforms never created the nested jit
    with core.set_current_trace(core.EVAL_TRACE):
        assert not _jitted._program_staging()


def test_eager_grad_of_wrapped_function_compiles_nothing(monkeypatch):
    calls = []
    import xform._src.primitives.jit as pj
    orig = pj.compile_program
    monkeypatch.setattr(pj, "compile_program", lambda *a, **k: calls.append(1) or orig(*a, **k))
    g = xform.grad(lambda a: xjnp.sum(xjnp.cumsum(xjnp.where(a > 0, a, 0.) ** 2)))
    g(A)
    assert calls == []


def test_debug_print_matches_jax_everywhere(capsys):
    def mk(L):
        def g(x):
            L.debug.print("val {} {s} {k}", x, s="str", k=3)
            L.debug.print("plain")
            L.debug.print(ordered=True)("two {x}", x=x * 2)
            return x * 2.0
        return g
    x = np.arange(3, dtype=f32)
    outs = []
    for L in (jax, xform):
        g = mk(L)
        g(x)
        L.jit(g)(x + 1)
        L.grad(lambda v: L.jit(g)(v).sum())(x + 2)
        L.vmap(L.jit(g))(np.stack([x, x + 10]))
        L.jit(L.vmap(g))(np.stack([x, x + 20]))
        L.lax.scan(lambda c, v: (L.debug.print("scan {}", v) or c, None), 0., np.arange(2.))
        outs.append(capsys.readouterr().out)
    assert outs[1] == outs[0]
    with pytest.raises(ValueError, match="Unused positional"):
        xform.debug.print("x", 1)
    with pytest.raises(TypeError, match="two-call"):
        xform.debug.print(None, 1)


def test_debug_print_survives_dce_and_lowers():
    from xform._src.interpreters import passes
    closed = xform.make_jaxpr(lambda a: (xform.debug.print("x {}", a), a * 0.)[1])(A)
    assert [e.primitive.name for e in passes.simplify(closed).eqns][0] == "debug_print"
    hlo = xform.jit(lambda a: (xform.debug.print("x {}", a), a)[1]).lower(A).compile().as_text()
    assert "custom-call" in hlo


def test_jit_inline_is_inlined_where_staged():
    f = xform.jit(lambda u: xjnp.sin(u) * u, inline=True)
    closed = xform.make_jaxpr(lambda a: f(a) + 1.)(A)
    assert "jit" not in [e.primitive.name for e in closed.jaxpr.eqns]
    ref = jax.jit(lambda u: jjnp.sin(u) * u, inline=True)
    np.testing.assert_allclose(np.asarray(xform.grad(lambda a: xjnp.sum(f(a)))(A)),
                               np.asarray(jax.grad(lambda a: jjnp.sum(ref(a)))(A)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(xform.vmap(f)(A)), np.asarray(jax.vmap(ref)(A)),
                               rtol=1e-6)


def test_relu_derivative_at_kinks_and_nan():
    x = np.array([-1., 0., 0.5, 6., 7., np.nan], f32)
    for name in ("relu", "relu6"):
        for tr in (lambda L, f: f, lambda L, f: L.vmap(L.grad(f)),
                   lambda L, f: L.jit(L.vmap(L.grad(f)))):
            np.testing.assert_array_equal(np.asarray(tr(xform, getattr(xform.nn, name))(x)),
                                          np.asarray(tr(jax, getattr(jax.nn, name))(x)))


@pytest.mark.parametrize("shape,axis,keys", [((5,), 0, 1), ((3, 4), 1, 1), ((2, 3, 4), 1, 2)])
def test_sort_jvp_gathers_by_permutation(shape, axis, keys):
    rng = np.random.default_rng(0)
    a = rng.normal(size=shape).astype(f32)
    t = rng.normal(size=shape).astype(f32)

    def mk(L):
        return lambda x: L.lax.sort((x, -x, x * 2), dimension=axis, num_keys=keys)
    r = jax.jvp(mk(jax), (a,), (t,))
    for o in (xform.jvp(mk(xform), (a,), (t,)),
              xform.jit(lambda a, t: xform.jvp(mk(xform), (a,), (t,)))(a, t)):
        for p, q in zip(jax.tree_util.tree_leaves(r), xform.tree_util.tree_leaves(o)):
            np.testing.assert_allclose(np.asarray(q), np.asarray(p), rtol=1e-6)
    # finite differences of the sorted values
    eps = 1e-3
    fd = (np.asarray(mk(xform)(a + eps * t)[0]) - np.asarray(mk(xform)(a - eps * t)[0])) / (2 * eps)
    np.testing.assert_allclose(np.asarray(xform.jvp(mk(xform), (a,), (t,))[1][0]), fd,
                               rtol=1e-2, atol=1e-2)

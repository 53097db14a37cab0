"""custom_jvp/custom_vjp rules whose pytrees hold None subtrees or Python-scalar
residuals, and their batching with unbatched arguments, compared with JAX."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp


def _record_zeros(lib):
    seen = []

    @lib.custom_jvp
    def ident(tree):
        return tree

    def ident_jvp(primals, tangents):
        (p,), (t,) = primals, tangents
        seen.append(lib.tree_util.tree_map(
            lambda z: type(z).__name__ == "SymbolicZero", t))
        return p, t
    ident.defjvp(ident_jvp, symbolic_zeros=True)

    def f(x, y):
        out = ident((None, (x, None), {"a": y, "b": None}))
        return out[1][0] * 2 + out[2]["a"]
    return f, seen


@pytest.mark.parametrize("jit", [False, True])
def test_custom_jvp_with_none_subtrees(jit):
    results = []
    for lib, np_ in ((xform, xnp), (jax, jnp)):
        f, seen = _record_zeros(lib)
        g = lib.linearize(f, np_.float32(1.0), np_.float32(2.0))
        fn = lib.jit(f) if jit else f
        results.append((lib.grad(fn, argnums=(0, 1))(1.0, 2.0), seen, g[0]))
    (gx, sx, px), (gj, sj, pj) = results
    np.testing.assert_allclose(np.array(gx), np.array(gj))
    np.testing.assert_allclose(px, pj)
    assert sx[-1] == sj[-1]


def _vjp_with_scalar_residuals(lib):
    got = []

    @lib.custom_vjp
    def f(x, y):
        return x * y

    def fwd(x, y):
        return x * y, (True, 3, None, y, (x, None))

    def bwd(res, g):
        flag, n, none, y, (x, none2) = res
        got.append((type(flag), type(n), none, none2))
        return (g * y * n, None) if flag else (None, None)
    f.defvjp(fwd, bwd)
    return f, got


@pytest.mark.parametrize("wrap", ["plain", "jit_outer", "jit_inner"])
def test_custom_vjp_python_scalar_residuals_reach_bwd_unchanged(wrap):
    out = []
    for lib in (xform, jax):
        f, got = _vjp_with_scalar_residuals(lib)
        g = lib.grad(f, argnums=(0, 1))
        if wrap == "jit_outer":
            g = lib.jit(g)
        elif wrap == "jit_inner":
            g = lib.grad(lib.jit(f), argnums=(0, 1))
        out.append((g(2.0, 5.0), got))
    (gx, rx), (gj, rj) = out
    np.testing.assert_allclose(np.array(gx), np.array(gj))
    assert rx[0][0] is bool and rj[0][0] is bool
    assert issubclass(rx[0][1], int) and issubclass(rj[0][1], int)
    assert rx[0][2:] == rj[0][2:] == (None, None)


def _guarded(lib, np_):
    """A custom_jvp whose primal takes one branch of a cond on a scalar predicate
    computed outside; the other branch calls back to the host and raises."""
    calls = []

    def boom(i):
        calls.append(1)
        raise RuntimeError("the untaken branch ran")

    @lib.custom_jvp
    def guard(x, pred):
        bad = lambda: x + lib.pure_callback(boom, lib.ShapeDtypeStruct((), x.dtype), 0)
        return lib.lax.cond(pred, bad, lambda: x)
    guard.defjvp(lambda p, t: (guard(*p), t[0]))

    @lib.jit
    def f(x, flag):
        return guard(x, flag) * 2
    return f, calls


def test_vmap_of_custom_jvp_keeps_unbatched_arguments_unbatched():
    xs = np.arange(3.0, dtype=np.float32)
    for lib, np_ in ((xform, xnp), (jax, jnp)):
        f, calls = _guarded(lib, np_)
        # flag is unbatched: the cond keeps one branch, the callback never runs
        out = lib.vmap(f, in_axes=(0, None))(xs, False)
        np.testing.assert_allclose(out, 2 * xs)
        t = lib.jvp(lib.vmap(f, in_axes=(0, None)), (xs, False),
                    (np.ones(3, np.float32), np.zeros((), jax.dtypes.float0)))[1]
        np.testing.assert_allclose(t, 2 * np.ones(3))
        assert calls == []


def test_error_raised_in_a_callback_under_jit_is_jax_runtime_error():
    assert xform.errors.JaxRuntimeError is jax.errors.JaxRuntimeError
    assert issubclass(xform.errors.JaxRuntimeError, RuntimeError)
    for lib, np_ in ((xform, xnp), (jax, jnp)):
        calls = []

        def cb(x):
            calls.append(1)
            raise ValueError("callback failed")
        f = lib.jit(lambda x: lib.pure_callback(
            cb, lib.ShapeDtypeStruct((), np_.float32), x))
        with pytest.raises(lib.errors.JaxRuntimeError, match="callback failed"):
            f(np.float32(1.0))
        assert calls == [1]       # the failing program is not run a second time
        g = lib.jit(lambda x: lib.debug.callback(cb, x))
        with pytest.raises(lib.errors.JaxRuntimeError):
            g(np.float32(1.0))
            lib.effects_barrier()
        assert calls == [1, 1]


@pytest.mark.parametrize("case", ["raises", "arity", "dtype"])
def test_eager_pure_and_io_callback_failures_are_jax_runtime_errors(case):
    from jax.experimental import io_callback as jax_io
    from xform.experimental import io_callback as x_io

    def bad(x):
        raise ValueError("callback failed")
    cb = {"raises": bad, "arity": lambda x: (x, x),
          "dtype": lambda x: np.asarray(x).astype(np.int32)}[case]
    for lib, io in ((xform, x_io), (jax, jax_io)):
        spec = lib.ShapeDtypeStruct((), np.float32)
        for call in (lambda: lib.pure_callback(cb, spec, np.float32(1.0)),
                     lambda: io(cb, spec, np.float32(1.0))):
            with pytest.raises(lib.errors.JaxRuntimeError, match="CpuCallback error"):
                call()


def _jvp_cases(lib):
    seen = []

    @lib.custom_jvp
    def g(x):
        return x * 2

    @g.defjvp
    def g_jvp(p, t):
        seen.append((type(p[0]), type(t[0])))
        return g(p[0]), t[0] * 2
    f0 = np.zeros((), lib.dtypes.float0)
    cases = [(lambda x: 5.0, (2.0,), (3.0,)), (lambda x: x, (2.0,), (3.0,)),
             (lambda x: x * 2, (2.0,), (3.0,)), (lambda x: (x, 3), (2.0,), (3.0,)),
             (lambda x: x, (2,), (f0,)), (g, (2.0,), (3.0,)),
             (g, (lib.numpy.ones(2),), (lib.numpy.ones(2),))]
    return [lib.jvp(f, p, t) for f, p, t in cases], seen


def test_jvp_of_python_scalars_keeps_them_as_jax():
    got, seen_x = _jvp_cases(xform)
    want, seen_j = _jvp_cases(jax)
    leaves_x = xform.tree_util.tree_leaves(got)
    leaves_j = jax.tree_util.tree_leaves(want)
    assert len(leaves_x) == len(leaves_j)
    for a, b in zip(leaves_x, leaves_j):
        if isinstance(b, (bool, int, float)):     # JAX's TypedFloat is a float
            assert isinstance(a, (bool, int, float)) and type(a) in (bool, int, float)
            assert a == b and issubclass(type(b), type(a))
        elif getattr(b, "dtype", None) == jax.dtypes.float0:
            assert a.dtype == xform.dtypes.float0
        else:
            assert isinstance(a, xform.Array) and a.dtype == b.dtype
            assert a.weak_type == b.weak_type
            np.testing.assert_allclose(a, b)
    # the custom rule sees Python floats where JAX's does
    assert [s[0] is float for s in seen_x] == [s[0] is float for s in seen_j]

"""checkify (``xform.experimental.checkify``) against JAX's on the same programs: which
error fires, its message, ``err.get()`` None vs string, batched errors under vmap, and
the composition with jit, vmap, grad and control flow."""
import subprocess
import sys
import types

import numpy as np
import pytest
from hypothesis import given, settings, strategies as hst

import jax
import jax.numpy as jnp
from jax.experimental import checkify as jck

import xform
import xform.numpy as xnp
from xform.experimental import checkify as xck

J = types.SimpleNamespace(name="jax", jit=jax.jit, vmap=jax.vmap, grad=jax.grad, jvp=jax.jvp,
                          np=jnp, lax=jax.lax, ck=jck, nn=jax.nn, checkpoint=jax.checkpoint,
                          custom_jvp=jax.custom_jvp, custom_vjp=jax.custom_vjp)
X = types.SimpleNamespace(name="xform", jit=xform.jit, vmap=xform.vmap, grad=xform.grad,
                          jvp=xform.jvp, np=xnp, lax=xform.lax, ck=xck, nn=xform.nn,
                          checkpoint=xform.checkpoint, custom_jvp=xform.custom_jvp,
                          custom_vjp=xform.custom_vjp)


def _args(M, args):
    return [M.np.asarray(a) if isinstance(a, np.ndarray) else a for a in args]


def _close(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, equal_nan=True)


def same(prog, *args):
    """Run ``prog(M, *args) -> (err, out)`` with JAX and with xform; compare."""
    ej, oj = prog(J, *_args(J, args))
    ex, ox = prog(X, *_args(X, args))
    assert ex.get() == ej.get()
    lj, tj = jax.tree_util.tree_flatten(oj)
    lx, tx = xform.tree_util.tree_flatten(ox)
    assert len(lj) == len(lx)
    for a, b in zip(lx, lj):
        _close(a, b)
    return ex, ej


def f32(*v):
    return np.asarray(v if len(v) > 1 else v[0], np.float32)


def positive_log(M):
    def f(x):
        M.ck.check(M.np.all(x > 0), "x must be positive, got {}", x)
        return M.np.log(x)
    return f


# ----------------------------------------------------------------- user checks


@pytest.mark.parametrize("x", [-1.0, 2.0])
def test_user_check_eager_and_jit(x):
    ex, ej = same(lambda M, x: M.ck.checkify(positive_log(M))(x), f32(x))
    same(lambda M, x: M.jit(M.ck.checkify(positive_log(M)))(x), f32(x))
    same(lambda M, x: M.ck.checkify(M.jit(positive_log(M)))(x), f32(x))
    assert (ex.get() is None) == (x > 0)
    assert str(ex) == str(ej)


def test_throw_and_get_exception():
    err, _ = xck.checkify(positive_log(X))(xnp.float32(-3.0))
    exc = err.get_exception()
    assert type(exc).__name__ == "FailedCheckError"
    with pytest.raises(xck.JaxRuntimeError, match=r"x must be positive, got -3.0 \(`check` failed\)"):
        err.throw()
    assert issubclass(xck.JaxRuntimeError, ValueError)
    ok, _ = xck.checkify(positive_log(X))(xnp.float32(3.0))
    ok.throw()
    assert ok.get_exception() is None and ok.get() is None


def test_the_first_failing_check_wins():
    def prog(M, x):
        def f(x):
            M.ck.check(x < 10, "first {}", x)
            y = x * 2
            M.ck.check(y < 5, "second {y}", y=y)
            M.ck.check(x < 1, "third")
            return y
        return M.ck.checkify(f)(x)
    for v in (0.0, 2.0, 3.0, 20.0):
        same(prog, f32(v))
        same(lambda M, x: M.jit(lambda x: prog(M, x))(x), f32(v))


def test_fmt_args_pytrees_and_kwargs():
    def prog(M, x, y):
        def f(x, y):
            M.ck.check(M.np.sum(x) < 0, "x={} pair={p}", x, p=(y, 2 * y))
            return x
        return M.ck.checkify(f)(x, y)
    same(prog, f32(1.0, 2.0), np.asarray(3, np.int32))


def test_check_outside_checkify_raises_eagerly_and_refuses_jit():
    for M in (J, X):
        f = positive_log(M)
        f(M.np.float32(1.0))                       # passes: no error
        with pytest.raises(ValueError) as e:
            f(M.np.float32(-2.0))
        msg = str(e.value)
        if M is J:
            want = msg
        assert type(e.value).__name__ == "JaxRuntimeError"
    assert msg == want
    msgs = []
    for M in (J, X):
        with pytest.raises(ValueError) as e:
            M.jit(positive_log(M))(M.np.float32(2.0))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    assert "functionalizing it through `checkify.checkify`" in msgs[1]


def test_check_argument_errors():
    msgs = []
    for M in (J, X):
        got = []
        for call in (lambda: M.ck.check(M.np.ones(3) > 0, "m"),
                     lambda: M.ck.check(True, "m {}", 1.0),
                     lambda: M.ck.check_error("not an error")):
            with pytest.raises(TypeError) as e:
                call()
            got.append(str(e.value))
        msgs.append(got)
    assert msgs[0][1] == msgs[1][1]
    assert msgs[1][0].startswith("check takes a scalar pred as argument, got")
    assert msgs[1][2] == msgs[0][2].replace("jax._src.", "").replace("<class 'str'>", "<class 'str'>")


def test_check_error_is_refunctionalized():
    def prog(M, x):
        def inner(x):
            M.ck.check(x > 0, "must be positive! {}", x)
            return x + 1
        def outer(x):
            err, out = M.jit(M.ck.checkify(inner))(x)
            M.ck.check_error(err)
            return out
        return M.ck.checkify(outer)(x)
    same(prog, f32(-1.0))
    same(prog, f32(1.0))
    with pytest.raises(xck.JaxRuntimeError, match="must be positive! -1.0"):
        err, _ = xck.checkify(lambda x: x)(xnp.float32(0.0))
        bad, _ = xck.checkify(lambda x: xck.check(x > 0, "must be positive! {}", x))(
            xnp.float32(-1.0))
        xck.check_error(bad)


def test_debug_check():
    for M in (J, X):
        def f(x):
            M.ck.debug_check(x != 0, "cannot be zero!")
            return x
        f(M.np.float32(0.0))                    # a no-op outside checkify
        M.jit(f)(M.np.float32(0.0))
    same(lambda M, x: M.jit(M.ck.checkify(lambda x: (M.ck.debug_check(x != 0, "zero!"), x)[1]))(x),
         f32(0.0))


def test_enabled_errors_select_what_is_checked():
    def prog(errors):
        def p(M, x):
            def f(x):
                M.ck.check(x > 0, "user")
                return M.np.sin(x / x)
            return M.ck.checkify(f, errors=getattr(M.ck, errors))(x)
        return p
    for errors in ("user_checks", "nan_checks", "div_checks", "float_checks",
                   "automatic_checks", "all_checks", "index_checks"):
        same(prog(errors), f32(0.0))
        same(prog(errors), f32(1.0))


def test_check_sets_have_jax_members():
    for name in ("user_checks", "nan_checks", "index_checks", "div_checks", "float_checks",
                 "automatic_checks", "all_checks"):
        assert (sorted(c.__name__ for c in getattr(xck, name))
                == sorted(c.__name__ for c in getattr(jck, name)))
    assert set(jck.__all__ if hasattr(jck, "__all__") else
               [n for n in dir(jck) if not n.startswith("_")]) <= set(dir(xck))


# ----------------------------------------------------------------- automatic checks


@pytest.mark.parametrize("op", ["sin", "log", "sqrt", "mul", "add", "sub", "exp", "pow",
                                "dot", "sum", "cumsum", "tanh"])
def test_nan_checks(op):
    def prog(M, x):
        fns = {"sin": M.np.sin, "log": M.np.log, "sqrt": M.np.sqrt, "exp": M.np.exp,
               "tanh": M.np.tanh, "mul": lambda x: x * M.np.inf, "add": lambda x: x + x[::-1],
               "sub": lambda x: x - x, "pow": lambda x: x ** 0.5, "dot": lambda x: x @ x,
               "sum": M.np.sum, "cumsum": M.np.cumsum}
        return M.ck.checkify(fns[op], errors=M.ck.nan_checks)(x)
    for v in ([1.0, 2.0], [-1.0, 0.0], [np.inf, -np.inf], [0.0, 0.5]):
        same(prog, f32(*v))


def test_division_checks():
    def prog(M, x, y):
        return M.ck.checkify(lambda x, y: (x // y, x / y.astype(M.np.float32)),
                             errors=M.ck.float_checks)(x, y)
    i32 = lambda *v: np.asarray(v, np.int32)  # noqa: E731
    same(prog, i32(1, 2), i32(1, 1))
    same(prog, i32(1, 2), i32(1, 0))
    same(lambda M, x: M.ck.checkify(lambda x: 1.0 / x, errors=M.ck.div_checks)(x), f32(0.0))


@pytest.mark.parametrize("i", [-4, -3, -1, 0, 2, 3, 5])
def test_index_checks(i):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.asarray(i, np.int32)
    progs = [
        lambda M, x, i: M.ck.checkify(lambda x, i: x[i], errors=M.ck.index_checks)(x, i),
        lambda M, x, i: M.ck.checkify(lambda x, i: x[:, i], errors=M.ck.index_checks)(x, i),
        lambda M, x, i: M.ck.checkify(lambda x, i: M.lax.dynamic_slice(x, (i, 0), (2, 2)),
                                      errors=M.ck.index_checks)(x, i),
        lambda M, x, i: M.ck.checkify(
            lambda x, i: M.lax.dynamic_update_slice(x, M.np.ones((2, 2), x.dtype), (0, i)),
            errors=M.ck.index_checks)(x, i),
        lambda M, x, i: M.ck.checkify(lambda x, i: x.at[i].set(7.0),
                                      errors=M.ck.index_checks)(x, i),
        lambda M, x, i: M.ck.checkify(lambda x, i: x[M.np.stack([i, 0 * i])],
                                      errors=M.ck.index_checks)(x, i),
        lambda M, x, i: M.jit(M.ck.checkify(lambda x, i: x.at[:, i].add(1.0),
                                            errors=M.ck.index_checks))(x, i),
    ]
    for prog in progs:
        same(prog, x, idx)


# ----------------------------------------------------------------- vmap


def test_vmap_of_checkify_gives_batched_errors():
    def prog(M, x):
        err, out = M.vmap(M.ck.checkify(positive_log(M)))(x)
        return err, out
    ex, _ = same(prog, f32(1.0, -2.0, 3.0, -4.0))
    assert "at mapped index 1" in ex.get()
    same(prog, f32(1.0, 2.0))
    same(lambda M, x: M.jit(M.vmap(M.ck.checkify(positive_log(M))))(x), f32(-1.0, 2.0, -0.5))
    same(lambda M, x: M.vmap(M.vmap(M.ck.checkify(positive_log(M))))(x),
         f32(1.0, -2.0, 3.0, -4.0).reshape(2, 2))


def test_checkify_of_vmap_reports_the_last_failing_element_as_jax():
    prog = lambda M, x: M.ck.checkify(M.vmap(positive_log(M)))(x)  # noqa: E731
    same(prog, f32(1.0, -2.0, 3.0, -4.0))
    same(prog, f32(-1.0, 2.0, 3.0))
    same(prog, f32(1.0, 2.0, 3.0))


@settings(max_examples=25, deadline=None)
@given(hst.lists(hst.booleans(), min_size=1, max_size=6),
       hst.sampled_from(["vmap_of_checkify", "checkify_of_vmap", "jit_vmap", "nan"]))
def test_which_element_fails(fails, how):
    x = np.asarray([-(i + 1.0) if f else i + 1.0 for i, f in enumerate(fails)], np.float32)
    progs = {
        "vmap_of_checkify": lambda M, x: M.vmap(M.ck.checkify(positive_log(M)))(x),
        "checkify_of_vmap": lambda M, x: M.ck.checkify(M.vmap(positive_log(M)))(x),
        "jit_vmap": lambda M, x: M.ck.checkify(M.jit(M.vmap(positive_log(M))))(x),
        "nan": lambda M, x: M.vmap(M.ck.checkify(M.np.sqrt, errors=M.ck.nan_checks))(x),
    }
    ex, ej = same(progs[how], x)
    assert (ex.get() is None) == (not any(fails))


# ----------------------------------------------------------------- grad


def test_checkify_of_grad():
    def prog(M, x):
        def f(x):
            M.ck.check(x > 0, "x must be positive, got {}", x)
            return M.np.sin(x) * x
        return M.ck.checkify(M.grad(f))(x)
    same(prog, f32(-1.0))
    same(prog, f32(1.5))
    same(lambda M, x: M.jit(M.ck.checkify(M.jit(M.grad(positive_log(M)))))(x), f32(-2.0))
    same(lambda M, x: M.ck.checkify(M.grad(M.np.sqrt), errors=M.ck.nan_checks)(x), f32(-1.0))


def test_grad_through_checkified_function():
    def prog(M, x):
        def loss(x):
            err, y = M.ck.checkify(lambda x: positive_log(M)(x) * x)(x)
            return y, err
        return M.grad(loss, has_aux=True)(x)[::-1]
    same(prog, f32(2.0))
    same(prog, f32(-2.0))
    same(lambda M, x: M.jvp(M.ck.checkify(positive_log(M)), (x,), (x,))[0], f32(-1.0))


# ----------------------------------------------------------------- control flow


def test_cond_and_switch():
    def prog(M, p, x):
        def f(p, x):
            def yes(x):
                M.ck.check(x > 0, "yes branch {}", x)
                return x
            def no(x):
                return M.np.log(x)
            return M.lax.cond(p, yes, no, x)
        return M.ck.checkify(f, errors=M.ck.all_checks)(p, x)
    for p in (True, False):
        for v in (-1.0, 1.0):
            same(prog, np.asarray(p), f32(v))
            same(lambda M, p, x: M.jit(lambda p, x: prog(M, p, x))(p, x), np.asarray(p), f32(v))

    def prog2(M, i, x):
        def f(i, x):
            branches = [lambda x: x, lambda x: (M.ck.check(x < 0, "one {}", x), x)[1],
                        lambda x: M.np.sqrt(x)]
            return M.lax.switch(i, branches, x)
        return M.ck.checkify(f, errors=M.ck.all_checks)(i, x)
    for i in range(3):
        for v in (-4.0, 4.0):
            same(prog2, np.asarray(i, np.int32), f32(v))


def test_while_loop():
    def prog(M, x):
        def f(x):
            def cond(c):
                i, y = c
                M.ck.check(y < 100, "cond saw {}", y)
                return i < 5
            def body(c):
                i, y = c
                M.ck.check(y > -1, "body saw {} at {}", y, i)
                return i + 1, y * 3
            return M.lax.while_loop(cond, body, (0, x))
        return M.ck.checkify(f)(x)
    for v in (1.0, 0.5, -0.5, -2.0, 200.0, 0.0):
        same(prog, f32(v))
        same(lambda M, x: M.jit(lambda x: prog(M, x))(x), f32(v))
    same(lambda M, x: M.vmap(lambda x: prog(M, x))(x), f32(1.0, -0.5, 50.0))
    same(lambda M, x: M.ck.checkify(
        lambda x: M.lax.fori_loop(0, 4, lambda i, y: M.np.log(y) - 1.0, x),
        errors=M.ck.nan_checks)(x), f32(20.0))


def test_scan():
    def prog(M, x):
        def f(xs):
            def step(c, x):
                M.ck.check(x != 3.0, "element {} hit at carry {}", x, c)
                return c + M.np.sqrt(x), c
            return M.lax.scan(step, 0.0, xs)
        return M.ck.checkify(f, errors=M.ck.all_checks)(x)
    for v in ([1.0, 2.0, 4.0], [1.0, 3.0, 3.0], [-1.0, 3.0], [4.0, 3.0, -1.0]):
        same(prog, f32(*v))
        same(lambda M, x: M.jit(lambda x: prog(M, x))(x), f32(*v))
    same(lambda M, x: M.vmap(lambda x: prog(M, x))(x), f32(1.0, 3.0, 5.0, 2.0).reshape(2, 2))
    same(lambda M, x: M.ck.checkify(
        M.grad(lambda xs: M.lax.scan(lambda c, x: (c * M.np.log(x), None), 1.0, xs)[0]),
        errors=M.ck.nan_checks)(x), f32(2.0, -1.0))


def test_checkpoint_and_custom_derivatives():
    def with_custom(M):
        @M.custom_jvp
        def g(x):
            M.ck.check(x > 0, "custom_jvp got {}", x)
            return M.np.log(x)
        g.defjvp(lambda p, t: (g(p[0]), t[0] / p[0]))

        @M.custom_vjp
        def h(x):
            M.ck.check(x < 10, "custom_vjp got {}", x)
            return M.np.sqrt(x)
        h.defvjp(lambda x: (h(x), x), lambda x, ct: (ct / (2 * M.np.sqrt(x)),))
        return lambda x: h(g(x)) + M.checkpoint(lambda x: (M.ck.check(x != 1, "ckpt"), x)[1])(x)

    for v in (-1.0, 1.0, 2.0, 1e6):
        same(lambda M, x: M.ck.checkify(with_custom(M), errors=M.ck.all_checks)(x), f32(v))
        same(lambda M, x: M.ck.checkify(M.grad(with_custom(M)))(x), f32(v))
    same(lambda M, x: M.jit(M.ck.checkify(M.nn.relu, errors=M.ck.all_checks))(x),
         f32(-1.0, np.nan))


# ----------------------------------------------------------------- the jax alias


def test_alias_serves_jax_experimental_checkify():
    code = (
        "import xform; xform.compat.alias_jax()\n"
        "import jax, jax.numpy as jnp\n"
        "from jax.experimental import checkify\n"
        "import jax.experimental.checkify as c2\n"
        "assert checkify is c2 and checkify.__name__ == 'xform.experimental.checkify'\n"
        "def f(x):\n"
        "    checkify.check(x > 0, 'bad {}', x)\n"
        "    return x\n"
        "err, _ = jax.jit(checkify.checkify(f))(jnp.float32(-1))\n"
        "print(err.get())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "bad -1.0 (`check` failed)"


def test_pmap_errors_carry_the_device_axis():
    def prog(M, x):
        def f(x):
            M.ck.check(M.np.all(x > 0), "bad {}", x)
            return M.np.log(x)
        return M.ck.checkify(jax.pmap(f) if M is J else xform.pmap(f),
                             errors=M.ck.all_checks)(x)
    ex, _ = same(prog, f32(-1.0, 2.0).reshape(1, 2))
    assert ex.get().startswith("at mapped index 0: bad [-1.  2.]")
    same(prog, f32(1.0, 2.0).reshape(1, 2))


def test_grad_of_checkified_custom_derivatives_uses_the_custom_rules():
    def prog(M, x):
        @M.custom_jvp
        def g(x):
            M.ck.check(x > 0, "g got {}", x)
            return M.np.log(x)
        # deliberately not log's derivative (the rules themselves are not checkified)
        g.defjvp(lambda p, t: (M.np.log(p[0]), 10.0 * t[0]))

        @M.custom_vjp
        def h(x):
            M.ck.check(x < 10, "h got {}", x)
            return M.np.sin(x)
        h.defvjp(lambda x: (M.np.sin(x), x), lambda x, ct: (3.0 * ct,))

        def loss(x):
            err, y = M.ck.checkify(lambda x: h(g(x)) * 2.0)(x)
            return y, err
        g_, err = M.grad(loss, has_aux=True)(x)
        return err, g_
    for v in (-1.0, 0.5, 2.0, 1e6):
        same(prog, f32(v))
        same(lambda M, x: M.jit(lambda x: prog(M, x))(x), f32(v))
    same(lambda M, x: M.vmap(lambda x: prog(M, x))(x), f32(-1.0, 2.0))


def test_checks_in_a_batched_while_loop_are_refused_as_jax():
    def prog(M, x):
        def f(x):
            def body(y):
                M.ck.check(y < 50, "body saw {}", y)
                return y * 2
            return M.lax.while_loop(lambda y: y < 10, body, x)
        return M.ck.checkify(M.vmap(f))(x)
    msgs = []
    for M in (J, X):
        with pytest.raises(ValueError) as e:
            prog(M, M.np.asarray(f32(1.0, 3.0)))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    # without checks in the loop there is nothing to refuse (JAX refuses any such loop)
    err, out = xck.checkify(xform.vmap(lambda x: xform.lax.while_loop(
        lambda y: y < 10, lambda y: y * 2, x)))(xnp.asarray(f32(1.0, 3.0)))
    assert err.get() is None
    np.testing.assert_array_equal(out, [16.0, 12.0])


# (checkify of vmap of a dynamic index is not compared: xform batches dynamic_slice as
# clamped shifts and selects, not a gather, so there is no index left to check)
@pytest.mark.parametrize("where", ["outside"])
def test_index_checks_with_vmap(where):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    def prog(M, x, i):
        get = lambda x, i: x[i]  # noqa: E731
        if where == "outside":
            return M.vmap(M.ck.checkify(get, errors=M.ck.index_checks))(x, i)
        return M.ck.checkify(M.vmap(get), errors=M.ck.index_checks)(x, i)
    for idx in ([0, 1, 2], [0, 7, 2], [9, -8, 1], [-1, -4, -5]):
        same(prog, x, np.asarray(idx, np.int32))


_CHEX_PROGRAM = """
import jax, jax.numpy as jnp
import chex

@chex.chexify
@jax.jit
def f(x):
    chex.assert_tree_all_finite(x)
    return jnp.log(jnp.abs(x) + 1)

print(f(jnp.ones(2)))
try:
    f(jnp.array([jnp.nan, 3.0]))
    f.wait_checks()
except AssertionError as e:
    print(str(e).split(' [failed at')[0])
"""


def test_chex_chexify_runs_under_the_alias_as_on_jax():
    pytest.importorskip("chex")
    outs = []
    for prefix in ("", "import xform; xform.compat.alias_jax()\n"):
        r = subprocess.run([sys.executable, "-c", prefix + _CHEX_PROGRAM], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1]
    assert "Tree contains non-finite value" in outs[1]

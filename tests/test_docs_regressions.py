"""Regressions found by running JAX's own documentation pages with ``import jax``
pointing at xform (each test names the page); every expectation is checked against JAX."""
import jax
import jax.ad_checkpoint  # noqa: F401
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    np.testing.assert_array_equal(a, b)


# Common_Gotchas_in_JAX, "Out-of-bounds indexing": JAX clamps a static out-of-bounds
# integer index; xform deliberately raises IndexError for *static Python integers* (a
# project decision, see docs/semantics.md "Index semantics") while integer arrays and
# explicit modes behave exactly as on that page.
@pytest.mark.parametrize("idx", [11, -11, (1, 17), (Ellipsis, 12)])
def test_static_int_out_of_bounds_raises_but_modes_and_arrays_match_jax(idx):
    shape = (10,) if not isinstance(idx, tuple) else (3, 10) if idx[0] is not Ellipsis else (2, 5)
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    with pytest.raises(IndexError, match="out of bounds"):
        xnp.asarray(x)[idx]
    _same(xnp.asarray(x).at[idx].get(mode="clip"), jnp.asarray(x).at[idx].get(mode="clip"))
    arr_idx = tuple(np.asarray(i) if isinstance(i, int) else i for i in
                    (idx if isinstance(idx, tuple) else (idx,)))
    _same(xnp.asarray(x)[arr_idx], jnp.asarray(x)[arr_idx])
    _same(xform.jit(lambda v: v[arr_idx])(x), jax.jit(lambda v: v[arr_idx])(x))
    _same(xnp.asarray(x).at[arr_idx].add(5.0), jnp.asarray(x).at[arr_idx].add(5.0))


# jit-compilation / jaxpr pages: JAX prints a jaxpr that fits in 80 columns on one line
# (`{ lambda ; a:i32[3]. let  in (a,) }`) and indents tuples of branch jaxprs by two more.
def _pp_programs(j, jn):
    return [
        (lambda x: x, (np.arange(3, dtype=np.int32),)),
        (lambda: (), ()),
        (lambda x: (x, x), (np.ones(2, np.float32),)),
        (jn.sin, (np.float32(1),)),
        (lambda x: jn.sin(x) * 2.0, (np.float32(1),)),
        (lambda x: j.lax.cond(x > 0, lambda y: jn.sin(y) * 2.0, lambda y: y + 1.0, x),
         (np.float32(1),)),
        (lambda x: j.lax.cond(x > 0, lambda y: jn.sin(y) * 2.0 * 3.0, lambda y: jn.sin(y) * 2.0,
                              x), (np.float32(1),)),
        (lambda x: j.lax.while_loop(lambda c: c < 3.0, lambda c: c + 1.0, x), (np.float32(1),)),
        # Custom_derivative_rules page: an equation output nothing reads prints as `_`
        (j.grad(lambda x: jn.log(1.0 + jn.exp(x))), (np.float32(3),)),
        (lambda x: j.lax.cond(x > 0, lambda v: (v * 2.0, jn.sin(v)), lambda v: (v, v), x)[0],
         (np.float32(1),)),
    ]


@pytest.mark.parametrize("k", range(10))
def test_jaxpr_text_layout_matches_jax(k):
    xf, args = _pp_programs(xform, xnp)[k]
    jf, _ = _pp_programs(jax, jnp)[k]
    assert str(xform.make_jaxpr(xf)(*args)) == str(jax.make_jaxpr(jf)(*args))


# Custom_derivative_rules page: `f.defvjp(f_fwd, f_bwd)` as a cell's last line shows
# nothing in JAX (it returns None); defjvp returns the rule (usable as a decorator).
def test_defvjp_defjvp_return_values():
    for m in (xform, jax):
        f = m.custom_vjp(lambda x: x)
        assert f.defvjp(lambda x: (x, None), lambda r, c: (c,)) is None
        g = m.custom_jvp(lambda x: x)
        rule = lambda p, t: (p[0], t[0])  # noqa: E731
        assert g.defjvp(rule) is rule
        assert g.defjvps(lambda t, a, x: t) is None


# control-flow page: `lax.fori_loop(0, 10, lambda i, x: x + i, 0)` is weakly typed in JAX
# (Python-int bounds give a weakly typed index); the repr shows it.
@pytest.mark.parametrize("bounds,init", [((0, 10), 0), ((0, 10), 0.0), ((0, 10), "i32"),
                                         (("i32", 10), 0), ((2, 2), 1), ((0, 3), "f32")])
def test_fori_loop_weak_type(bounds, init):
    def args(m):
        conv = lambda v: m.numpy.int32(0) if v == "i32" else \
            m.numpy.float32(1) if v == "f32" else v  # noqa: E731
        return conv(bounds[0]), conv(bounds[1]), conv(init)
    lo, up, x0 = args(xform)
    got = xform.lax.fori_loop(lo, up, lambda i, x: x + i, x0)
    lo, up, x0 = args(jax)
    want = jax.lax.fori_loop(lo, up, lambda i, x: x + i, x0)
    assert repr(got) == repr(want)
    assert repr(xform.jit(lambda: xform.lax.fori_loop(0, 4, lambda i, x: x + i, 0))()) == \
        repr(jax.jit(lambda: jax.lax.fori_loop(0, 4, lambda i, x: x + i, 0))())


# vmapped_log_probs page catches the ValueError JAX raises for an un-batched function called
# on a batch: operands of different ranks that do not broadcast (jnp-level) -> ValueError,
# equal ranks -> TypeError (from the lax operation), jnp.where -> ValueError.
@pytest.mark.parametrize("op", ["multiply", "add", "arctan2", "less", "where", "maximum"])
@pytest.mark.parametrize("shapes", [((3,), (3, 2)), ((3,), (2,)), ((2, 3), (4, 2, 2)),
                                    ((), (2,), (3,))])
def test_broadcast_error_types(op, shapes):
    def call(m):
        args = [m.numpy.ones(s) for s in shapes]
        if op == "where":
            return m.numpy.where(args[0] > 0, *(args[1:] + [0.0] * (3 - len(args)))[:2])
        return getattr(m.numpy, op)(*args[:2]) if len(args) == 2 else \
            getattr(m.numpy, op)(args[1], args[2])
    with pytest.raises(Exception) as want:
        call(jax)
    with pytest.raises(want.type):
        call(xform)


# complex-differentiation / autodiff pages print `grad(f)(3.)`: JAX's gradients of a weakly
# typed output are weakly typed (the seed has the output's type), and jacfwd/jacrev bases
# keep the weak type of their inputs / outputs; a C->R gradient is not weak; the
# cotangent of a weakly typed real input is weak.
_WEAK_CASES = [
    lambda m, n: m.grad(lambda x: x * 2.0)(3.0),
    lambda m, n: m.grad(n.sin, holomorphic=True)(3.0 + 4j),
    lambda m, n: m.grad(n.conjugate, holomorphic=True)(3.0 + 4j),
    lambda m, n: m.grad(lambda x: n.sin(x) * 2)(n.float32(1.0)),
    lambda m, n: m.jacfwd(n.cos)(1.0),
    lambda m, n: m.jacrev(n.cos)(1.0),
    lambda m, n: m.jacrev(lambda x: x * n.float32(2))(1.0),
    lambda m, n: m.grad(lambda p: n.sin(p[0]) + p[0] * p[1] ** 2)((1.0, 0.0)),
    lambda m, n: m.grad(lambda x: m.pure_callback(
        lambda v: np.float32(v), m.ShapeDtypeStruct((), np.float32), n.float32(0)) + x)(1.0),
    lambda m, n: m.grad(lambda z: n.real(z) ** 2 + n.imag(z) ** 2)(3.0 + 4j),
    lambda m, n: m.grad(lambda x: 2 * x)(n.array(1.0)),
    lambda m, n: m.grad(lambda x: 2 * x)(n.asarray(np.float32(1.0))),
    lambda m, n: m.value_and_grad(lambda x: x * 3.0)(2.0),
]


@pytest.mark.parametrize("k", range(len(_WEAK_CASES)))
def test_gradient_weak_types(k):
    got = _WEAK_CASES[k](xform, xnp)
    want = _WEAK_CASES[k](jax, jnp)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        assert xform.typeof(g).weak_type == jax.typeof(w).weak_type
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


# gradient-checkpointing page (`print_fwd_bwd`): the function returned by vjp is a pytree
# whose leaves are its residuals (JAX's is a `Partial`), so it can be flattened, rebuilt
# from traced leaves and passed to jit.
def test_vjp_function_is_a_pytree():
    def f(m):
        return lambda x, w: m.numpy.sin(x) * w
    x, w, ct = np.float32(0.7), np.arange(3, dtype=np.float32), np.ones(3, np.float32)
    _, jf = jax.vjp(f(jax), x, w)
    want = jf(ct)
    _, xf = xform.vjp(f(xform), x, w)
    leaves, tree = xform.tree.flatten(xf)
    assert leaves and all(isinstance(v, xform.Array) for v in leaves)
    rebuilt = xform.tree.unflatten(tree, leaves)
    for got in (rebuilt(ct), xform.jit(lambda g, c: g(c))(xf, ct),
                xform.jit(lambda *a: xform.tree.unflatten(tree, a[:-1])(a[-1]))(*leaves, ct)):
        for g, w_ in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w_), rtol=1e-6)
    bwd = xform.make_jaxpr(lambda *a: xform.tree.unflatten(tree, a[:-1])(a[-1]))(*leaves, ct)
    assert len(bwd.jaxpr.invars) == len(leaves) + 1


# external-callbacks page: an Array repr whose dtype does not fit on the last line is laid
# out as JAX does it; empty arrays show their shape.
@pytest.mark.parametrize("make", [
    lambda n: n.asarray(np.sin(np.arange(5, dtype=np.float32))), lambda n: n.arange(10.0),
    lambda n: n.arange(20), lambda n: n.ones((3, 4)), lambda n: n.zeros((0,)),
    lambda n: n.zeros((2, 0)), lambda n: n.asarray(3.0), lambda n: n.float32(3),
    lambda n: n.arange(2000.0), lambda n: n.asarray(np.full((4, 7), 1 / 3, np.float32)),
    lambda n: n.array([1 + 2j, 3.5 - 1j]), lambda n: n.array([True, False]),
    lambda n: n.arange(6, dtype=n.uint8).reshape(2, 3), lambda n: n.asarray(2.0) * n.ones(8),
    lambda n: n.asarray(np.linspace(0, 1, 7, dtype=np.float32))])
def test_array_repr_layout(make):
    assert repr(make(xnp)) == repr(make(jnp))


# Common_Gotchas page: a traced boolean mask raises JAX's NonConcreteBooleanIndexError
# (an IndexError subclass), in reads and in .at updates.
@pytest.mark.parametrize("fn", [lambda n: (lambda x: x[x > 0]),
                                lambda n: (lambda x: x.at[x > 0].set(0.0)),
                                lambda n: (lambda x: n.sum(x[x > 0]))])
def test_traced_boolean_mask_error_class(fn):
    x = np.arange(-2.0, 3.0, dtype=np.float32)
    with pytest.raises(jax.errors.NonConcreteBooleanIndexError):
        jax.jit(fn(jnp))(x)
    with pytest.raises(xform.errors.NonConcreteBooleanIndexError):
        xform.jit(fn(xnp))(x)
    assert issubclass(xform.errors.NonConcreteBooleanIndexError, IndexError)


# Custom_derivative_rules page: outside any transformation a custom_jvp / custom_vjp function
# is just its Python function (JAX prints {'a': 1.0, ...} with a Python float); under
# grad / jit / vmap the rules still apply.
def test_custom_derivatives_top_level_call_is_plain():
    def build(m):
        n = m.numpy

        @m.custom_jvp
        def f(pt):
            return {"a": pt[0] ** 2, "b": (n.sin(pt[0]), n.cos(pt[1]))}

        @f.defjvp
        def f_jvp(primals, tangents):
            (pt,), (dt,) = primals, tangents
            return f(pt), {"a": 10.0 * dt[0], "b": (n.cos(pt[0]) * dt[0], -n.sin(pt[1]) * dt[1])}

        @m.custom_vjp
        def k(x):
            return x * 2.0

        k.defvjp(lambda x: (k(x), None), lambda r, c: (7.0 * c,))
        return f, k
    xf, xk = build(xform)
    jf, jk = build(jax)
    pt = (1.0, 2.0)
    got, want = xf(pt), jf(pt)
    assert type(got["a"]) is type(want["a"]) is float and got["a"] == want["a"]
    assert type(xk(3.0)) is type(jk(3.0)) is float
    for g, w in [(xform.grad(lambda p: xf(p)["a"])(pt), jax.grad(lambda p: jf(p)["a"])(pt)),
                 (xform.jit(lambda p: xf(p)["b"])(pt), jax.jit(lambda p: jf(p)["b"])(pt)),
                 (xform.grad(xk)(3.0), jax.grad(jk)(3.0)),
                 (xform.vmap(xk)(np.ones(2, np.float32)), jax.vmap(jk)(np.ones(2, np.float32)))]:
        for a, b in zip(xform.tree.leaves(g), jax.tree.leaves(w)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


# thinking_in_jax page: `np.allclose(norm(X), jit(norm)(X), atol=1e-6)` is True in JAX; the
# eager float32 reductions must be about as accurate as XLA's (not sequential f32 sums).
def test_eager_reductions_accuracy_like_xla():
    rng = np.random.RandomState(1701)
    xn = rng.rand(10000, 10)

    def norm(m):
        def f(x):
            x = x - x.mean(0)
            return x / x.std(0)
        return f
    x = xnp.array(xn)
    np.testing.assert_allclose(np.asarray(norm(xnp)(x)), np.asarray(xform.jit(norm(xnp))(x)),
                               atol=1e-6)
    exact = xn.astype(np.float32).astype(np.float64).sum(0)
    for dt, tol in ((np.float32, 1e-6), (np.complex64, 1e-6)):
        v = xn.astype(dt)
        got = np.asarray(xnp.sum(xnp.asarray(v), 0))
        assert np.abs(got - exact).max() / np.abs(exact).max() < tol
        want = np.asarray(jnp.sum(jnp.asarray(v), 0))
        np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(xnp.cumsum(xnp.asarray(xn.astype(np.float32)), 0))[-1],
                               exact, rtol=1e-6)
    b = xnp.asarray(xn[:100].astype(np.float32)).astype(xnp.bfloat16)
    np.testing.assert_allclose(np.asarray(xnp.sum(b, 0)).astype(np.float32),
                               np.asarray(jnp.sum(jnp.asarray(np.asarray(b)), 0)).astype(np.float32),
                               rtol=1e-2)


# gradient-checkpointing page: print_saved_residuals lists arguments first (in argument
# order), then computed values in program order, as JAX does.
@pytest.mark.parametrize("policy", [None, "dots", "names"])
def test_saved_residuals_order(policy):
    def build(m):
        n = m.numpy

        def g(W, x):
            y = n.dot(W, x)
            if policy == "names":
                y = m.ad_checkpoint.checkpoint_name(y, "y")
            return n.sin(y)

        def f(W1, W2, W3, x):
            return g(W3, g(W2, g(W1, x))).sum()
        if policy == "dots":
            f = m.checkpoint(f, policy=m.checkpoint_policies.dots_with_no_batch_dims_saveable)
        elif policy == "names":
            f = m.checkpoint(f, policy=m.checkpoint_policies.save_only_these_names("y"))
        return f
    rng = np.random.RandomState(0)
    args = (rng.randn(5, 4), rng.randn(6, 5), rng.randn(7, 6), rng.randn(4))
    args = tuple(a.astype(np.float32) for a in args)

    def summary(res):
        return [(tuple(a.shape), d.split(" from ")[0] if not d.startswith("from") else d)
                for a, d in res]
    import xform.ad_checkpoint  # noqa: F401
    got = summary(xform.ad_checkpoint.saved_residuals(build(xform), *args))
    from jax._src.ad_checkpoint import saved_residuals as jax_saved_residuals
    want = summary(jax_saved_residuals(build(jax), *args))
    assert got == want


# Common_Gotchas_in_JAX, "Non-array inputs": make_jaxpr of jnp.array(list of traced
# scalars) -- each element converted and expanded in turn, then joined by concatenates
# at most 16 wide, exactly as JAX stages it.
@pytest.mark.parametrize("n", [1, 10, 16, 17, 40])
def test_array_of_traced_list_stages_as_jax(n):
    def program(np_):
        return lambda x: np_.sum(np_.array(x))
    x = list(range(n))
    assert str(xform.make_jaxpr(program(xnp))(x)) == str(jax.make_jaxpr(program(jnp))(x))
    _same(xform.jit(program(xnp))(x), jax.jit(program(jnp))(x))


def test_array_of_nested_traced_lists_stages_as_jax():
    def program(np_):
        return lambda a, b: np_.array([[a, b], [b * 2, a], (1.0, b)], dtype=np_.float32)
    args = (1.5, np.float32(2.0))
    assert str(xform.make_jaxpr(program(xnp))(*args)) == str(jax.make_jaxpr(program(jnp))(*args))
    _same(xform.jit(program(xnp))(*args), jax.jit(program(jnp))(*args))


def test_array_of_traced_ragged_list_raises_type_error_as_jax():
    for np_, lib in ((jnp, jax), (xnp, xform)):
        with pytest.raises(TypeError):
            lib.jit(lambda a: np_.array([np_.ones(3) * a, np_.ones(2)]))(1.0)


def _exc_type(f):
    try:
        f()
    except Exception as e:   # noqa: BLE001 - the exception type is the result
        return type(e)
    return None


def test_custom_pytree_validating_init_under_jacobian_raises_value_error_as_jax():
    """custom_pytrees.md: jacobian rebuilds a custom node around None (its input checks
    run through tree_map) and asarray(None) is a ValueError, in both libraries."""
    def run(lib, tu, np_):
        class MyTree:
            def __init__(self, a):
                self.a = np_.asarray(a)
        tu.register_pytree_node(MyTree, lambda t: ((t.a,), None), lambda _, c: MyTree(*c))
        tree = MyTree(np_.arange(5.0))
        return (_exc_type(lambda: lib.vmap(lambda x: x)(tree)),
                _exc_type(lambda: lib.jacobian(lambda x: x)(tree)),
                _exc_type(lambda: lib.jacfwd(lambda x: x)(tree)))
    assert run(xform, xform.tree_util, xnp) == run(jax, jax.tree_util, jnp) == \
        (None, ValueError, ValueError)
    for bad in (None, [1, None]):
        with pytest.raises(ValueError, match="None is not a valid value for jnp.array"):
            xnp.asarray(bad)
        with pytest.raises(ValueError):
            jnp.asarray(bad)

"""xform.testing: check_grads / check_jvp / check_vjp, verify, assert_allclose, strategies.

Each checker is shown to *fail* on a deliberately wrong rule (a custom_jvp /
custom_vjp rule with the wrong derivative, a lowering rule that multiplies by
3 instead of 2) and to pass on correct functions; the strategies are checked
against their own contracts over many draws, and the transform stacks are
used for property tests of the project itself (jit-containing stacks vs
jit-free ones, stacked derivatives vs finite differences).
"""
from __future__ import annotations

import functools
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xform
import xform.numpy as xnp
from xform._src.interpreters import core
from xform._src.interpreters.config import config
from xform import lax
from xform.testing import (VerificationError, assert_allclose, check_grads, check_jvp,
                           check_vjp, verify)
from xform.testing import strategies as xst

BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture
def x64():
    old = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        config.update("jax_enable_x64", old)


def rand(shape, dtype=np.float64, seed=0, low=-2.0, high=2.0):
    return xnp.asarray(np.random.RandomState(seed).uniform(low, high, shape).astype(dtype))


# ----------------------------------------------------------------- check_grads passes

CATALOGUE = {
    "sin": (lambda x: xnp.sin(x), [(3,)], {}),
    "exp": (lambda x: xnp.exp(x), [(2, 3)], {}),
    "tanh": (lambda x: xnp.tanh(x), [(4,)], {}),
    "log1p": (lambda x: xnp.log1p(x), [(3,)], {"low": 0.1, "high": 2.0}),
    "mul": (lambda x, y: x * y, [(3,), (3,)], {}),
    "div": (lambda x, y: x / y, [(3,), (3,)], {"low": 0.5, "high": 2.0}),
    "dot": (lambda a, b: xnp.dot(a, b), [(2, 3), (3,)], {}),
    "reduce_sum": (lambda x: xnp.sum(x * x, axis=0), [(3, 2)], {}),
    "reduce_max": (lambda x: xnp.max(x, axis=1), [(2, 4)], {}),
    "cumsum": (lambda x: xnp.cumsum(xnp.sin(x)), [(5,)], {}),
    "logsumexp": (lambda x: xnp.log(xnp.sum(xnp.exp(x - xnp.max(x)))) + xnp.max(x), [(4,)], {}),
    "sqrt_pow": (lambda x: xnp.sqrt(x) * x ** 3, [(3,)], {"low": 0.5, "high": 2.0}),
    "pytree": (lambda d: d["a"] * xnp.sin(d["b"]), None, {}),
}


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_check_grads_passes_on_correct_functions(x64, name, order):
    f, shapes, kw = CATALOGUE[name]
    if shapes is None:
        args = ({"a": rand((3,), seed=1), "b": rand((3,), seed=2)},)
    else:
        args = tuple(rand(s, seed=i, **kw) for i, s in enumerate(shapes))
    check_grads(f, args, order=order)


def test_check_grads_float32_defaults():
    check_grads(lambda x: xnp.tanh(x) * xnp.exp(x), (rand((4,), np.float32),), order=2)


def test_check_jvp_and_check_vjp_directly(x64):
    f = lambda x, y: xnp.sin(x) * y  # noqa: E731
    args = (rand((3,)), rand((3,), seed=3))
    check_jvp(f, functools.partial(xform.jvp, f), args)
    check_vjp(f, functools.partial(xform.vjp, f), args, f_jvp=functools.partial(xform.jvp, f))


def test_integer_arguments_are_not_perturbed(x64):
    f = lambda x, n: x * n  # noqa: E731
    check_grads(f, (rand((3,)), xnp.asarray(np.array([1, 2, 3]))), order=2)


# ----------------------------------------------------------------- check_grads catches bugs


def _wrong_custom_jvp():
    @xform.custom_jvp
    def f(x):
        return xnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return xnp.sin(x), -xnp.cos(x) * t      # wrong sign
    return f


def test_check_grads_catches_wrong_custom_jvp(x64):
    f = _wrong_custom_jvp()
    with pytest.raises(AssertionError) as e:
        check_grads(f, (rand((3,)),), order=1, modes=("fwd",))
    msg = str(e.value)
    assert "order 1" in msg and "fwd" in msg and "tolerance" in msg and "max abs error" in msg
    with pytest.raises(AssertionError, match="rev mode"):
        check_grads(f, (rand((3,)),), order=1, modes=("rev",))


def test_check_grads_catches_second_order_only_bug(x64):
    # first derivative right, but the rule hides x from differentiation: only order 2 sees it
    @xform.custom_jvp
    def f(x):
        return xnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return xnp.sin(x), xnp.cos(lax.stop_gradient(x)) * t
    check_grads(f, (rand((3,)),), order=1)
    with pytest.raises(AssertionError, match="order 2"):
        check_grads(f, (rand((3,)),), order=2, modes=("fwd",))


def test_check_grads_catches_wrong_custom_vjp(x64):
    @xform.custom_vjp
    def f(x, y):
        return x * y

    def fwd(x, y):
        return x * y, (x, y)

    def bwd(res, g):
        x, y = res
        return (g * y, g * y)                   # wrong: d/dy is x

    f.defvjp(fwd, bwd)
    with pytest.raises(AssertionError) as e:
        check_grads(f, (rand((3,)), rand((3,), seed=5)), order=1, modes=("rev",))
    assert "rev mode" in str(e.value) and "central differences" in str(e.value)


def test_correct_custom_rules_pass(x64):
    @xform.custom_vjp
    def f(x):
        return xnp.exp(x)

    f.defvjp(lambda x: (xnp.exp(x), xnp.exp(x)), lambda r, g: (g * r,))
    check_grads(f, (rand((3,)),), order=1, modes=("rev",))

    @xform.custom_jvp
    def h(x):
        return xnp.tanh(x)

    h.defjvp(lambda p, t: (xnp.tanh(p[0]), (1 - xnp.tanh(p[0]) ** 2) * t[0]))
    check_grads(h, (rand((3,)),), order=2)


def test_dot_product_test_catches_vjp_not_transposing_jvp(x64):
    f = lambda x: xnp.sin(x)  # noqa: E731

    def bad_vjp(x):
        out, fn = xform.vjp(f, x)
        return out, lambda ct: tuple(c * 1.5 for c in fn(ct))
    with pytest.raises(AssertionError):
        check_vjp(f, bad_vjp, (rand((3,)),), f_jvp=functools.partial(xform.jvp, f))


def test_check_grads_argument_errors():
    with pytest.raises(ValueError, match="modes"):
        check_grads(xnp.sin, (1.0,), modes=("sideways",))
    with pytest.raises(TypeError, match="tuple or list"):
        check_grads(xnp.sin, 1.0)
    with pytest.raises(TypeError, match="floating-point"):
        check_grads(lambda n: n * 2, (xnp.asarray(np.array([1, 2])),))


# ------------------------------------------- complex arguments and undefined derivatives


def crand(shape, seed=0):
    r = np.random.RandomState(seed)
    return xnp.asarray((r.uniform(-2, 2, shape) + 1j * r.uniform(-2, 2, shape))
                       .astype(np.complex128))


NON_HOLOMORPHIC = {
    # R-linear but not C-linear maps and their compositions: the VJP is the transpose
    # under the real pairing Re(sum x*y) only, as in JAX
    "real": (lax.real, lambda: (crand((3,)),)),
    "imag": (lax.imag, lambda: (crand(()),)),
    "conj": (lax.conj, lambda: (crand((2, 3)),)),
    "abs": (lax.abs, lambda: (crand((3,)),)),
    "complex": (lax.complex, lambda: (rand((3, 1)), rand((1, 4), seed=1))),
    "abs_sq": (lambda z: lax.real(z * lax.conj(z)) * lax.imag(z), lambda: (crand((3,)),)),
}


@pytest.mark.parametrize("name", sorted(NON_HOLOMORPHIC))
def test_check_grads_passes_non_holomorphic_complex_functions(x64, name):
    # JAX's own check_grads passes these with JAX's (identical) rules; so must ours
    import jax
    from jax import test_util as jtu
    f, make = NON_HOLOMORPHIC[name]
    args = make()
    check_grads(f, args, order=2)
    jf = (lambda z: jax.lax.real(z * jax.lax.conj(z)) * jax.lax.imag(z)) \
        if name == "abs_sq" else getattr(jax.lax, name)
    with jax.enable_x64(True):
        jtu.check_grads(jf, tuple(np.asarray(a) for a in args), order=2)


def test_check_grads_catches_conjugated_vjp_of_complex_function(x64):
    # the real pairing still sees a VJP that is off by a conjugation
    @xform.custom_vjp
    def f(z):
        return z * z

    f.defvjp(lambda z: (z * z, z), lambda z, g: (lax.conj(2 * z * g),))
    with pytest.raises(AssertionError, match="rev mode"):
        check_grads(f, (crand((3,)),), order=1, modes=("rev",))


def test_check_grads_nan_derivatives_outside_the_domain_match(x64):
    # arcsin's derivatives are NaN beyond |x| = 1 on both sides of the comparison (JAX's
    # check_grads compares with assert_allclose, where NaN equals NaN)
    x = xnp.asarray(np.array([-1.25, 0.3, 1.2]))
    check_grads(lax.asin, (x,), order=2)
    check_grads(lax.acos, (x,), order=2)
    # but a NaN on one side only is a mismatch
    @xform.custom_jvp
    def f(x):
        return xnp.sin(x)

    f.defjvp(lambda p, t: (xnp.sin(p[0]), xnp.cos(p[0]) * t[0] * xnp.nan))
    with pytest.raises(AssertionError):
        check_grads(f, (rand((3,)),), order=1, modes=("rev",))


# ----------------------------------------------------------------- assert_allclose


def test_assert_allclose_per_dtype_defaults_and_pytrees():
    a = np.array([1.0, 2.0, 3.0])
    assert_allclose({"x": (a.astype(np.float16),)},
                    {"x": ((a * (1 + 4e-4)).astype(np.float16),)})
    with pytest.raises(AssertionError, match="tolerance"):
        assert_allclose(a.astype(np.float32), (a * (1 + 1e-4)).astype(np.float32))
    assert_allclose(a.astype(BF16), (a * 1.005).astype(BF16))
    with pytest.raises(AssertionError, match="structures differ"):
        assert_allclose([a], (a,))
    with pytest.raises(AssertionError, match="shape"):
        assert_allclose(a, a[:2])
    with pytest.raises(AssertionError):
        assert_allclose(np.array([1, 2]), np.array([1, 3]))           # ints are exact
    assert_allclose(np.array([np.nan, np.inf]), np.array([np.nan, np.inf]))
    with pytest.raises(AssertionError, match="my message"):
        assert_allclose(a, a + 1, err_msg="my message")
    assert_allclose(a, a + 1e-3, atol=1e-2, rtol=0)


# ----------------------------------------------------------------- verify


@pytest.mark.parametrize("case", ["elementwise", "reductions", "jit_inside", "ints", "pytree",
                                  "scalars", "bf16", "empty"])
def test_verify_passes_on_correct_functions(case):
    x = rand((3, 4), np.float32)
    fns = {
        "elementwise": (lambda x: xnp.tanh(x) * xnp.exp(-x) + xnp.sin(x) ** 2, (x,)),
        "reductions": (lambda x: (xnp.sum(x, axis=0), xnp.max(x), xnp.cumsum(x, axis=1)), (x,)),
        "jit_inside": (lambda x: xform.jit(lambda y: xnp.dot(y, y.T))(x) + 1.0, (x,)),
        "ints": (lambda n: n * 3 + (n % 2), (xnp.asarray(np.arange(6, dtype=np.int32)),)),
        "pytree": (lambda d: d["a"] @ d["b"], ({"a": x, "b": x.T},)),
        "scalars": (lambda a, b: xnp.sin(a) * b + 2, (xnp.asarray(np.float32(0.5)), 3.0)),
        "bf16": (lambda x: xnp.exp(x) * x, (x.astype(BF16),)),
        "empty": (lambda x: xnp.sum(xnp.sin(x), axis=0), (xnp.zeros((0, 3)),)),
    }
    f, args = fns[case]
    report = verify(f, *args)
    assert report.passed and bool(report)
    assert all(e <= 1e-5 * (1 + 10) for e in report.max_abs_errors)


@pytest.fixture
def broken_primitive():
    """``my_double``: NumPy impl doubles, the lowering rule triples (a planted bug)."""
    from xform._src.lowering import mlir
    p = core.Primitive("my_double")
    p.def_impl(lambda x: x * np.asarray(2, x.dtype))
    p.def_abstract_eval(lambda a: a)

    def wrong_rule(ctx, eqn, x):
        three = ctx.full_like(3, ctx.in_avals[0])
        return [ctx.op1("stablehlo.multiply", [x, three], ctx.out_avals[0])]
    mlir.lowering_rules[p] = wrong_rule
    try:
        yield p
    finally:
        mlir.lowering_rules.pop(p, None)
        core.impl_rules.pop(p, None)
        core.abstract_eval_rules.pop(p, None)


def test_verify_localises_broken_lowering_rule(broken_primitive):
    p = broken_primitive

    def model(x):
        y = xnp.sin(x) + 1.0
        z = p.bind(y)                      # the planted fault, mid-program
        return xnp.sum(xnp.exp(-z) * y), xnp.max(x)
    line = model.__code__.co_firstlineno + 2
    x = rand((5,), np.float32)
    with pytest.raises(VerificationError) as e:
        verify(model, x)
    assert isinstance(e.value, AssertionError)
    report = e.value.report
    assert not report.passed
    assert report.comparisons[0].ok is False and report.comparisons[1].ok is True
    bad = report.first_divergence
    assert bad.primitive == "my_double" and bad.isolated
    assert bad.source_info[1] == line and bad.source_info[2] == "model"
    assert "my_double" in str(e.value) and f":{line}" in str(e.value)
    assert bad.max_abs_error > 0.1
    # equations before the fault (sin, add) were checked and found fine
    assert report.jaxpr.eqns[bad.index].primitive.name == "my_double"
    assert [q.primitive.name for q in report.jaxpr.eqns[:bad.index]][:1] == ["sin"]


def test_verify_localises_inside_jit(broken_primitive):
    p = broken_primitive
    inner = xform.jit(lambda y: p.bind(xnp.cos(y)) * 2.0)
    report = verify(lambda x: inner(x + 1.0) - x, rand((4,), np.float32),
                    raise_on_failure=False)
    assert not report.passed
    assert report.first_divergence.primitive == "jit"
    assert report.first_divergence.culprit.primitive == "my_double"
    assert len(report.first_divergence.culprit.path) == 2


def test_verify_rejects_tracers_and_noncallables():
    with pytest.raises(TypeError, match="callable"):
        verify(3, 1.0)
    with pytest.raises(TypeError, match="traced"):
        xform.grad(lambda x: verify(xnp.sin, x).max_abs_errors[0] + x)(1.0)


# ----------------------------------------------------------------- strategies


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_arrays_respect_dtype_shape_and_bounds(data):
    dt = data.draw(xst.dtypes(kinds=("float", "int", "uint", "bool", "complex")))
    shape = data.draw(xst.shapes(max_dims=3, max_side=3))
    x = data.draw(xst.arrays(dtype=dt, shape=shape, min_value=-3, max_value=5))
    assert isinstance(x, xform.Array)
    assert x.dtype == dt and x.shape == shape
    v = np.asarray(x)
    if dt.kind in "fc" or dt == BF16:
        w = v.astype(np.complex128 if dt.kind == "c" else np.float64)
        assert np.isfinite(w).all()
        re = w.real if dt.kind == "c" else w
        assert (re >= -3.05).all() and (re <= 5.05).all()
    elif dt.kind in "iu":
        assert (v.astype(np.int64) >= max(-3, np.iinfo(dt).min)).all()
        assert (v.astype(np.int64) <= 5).all()


def test_dtypes_follow_x64_and_include_low_precision(x64):
    seen = set()

    @settings(max_examples=80, deadline=None)
    @given(xst.dtypes())
    def collect(dt):
        seen.add(np.dtype(dt))
    collect()
    assert {np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)} >= seen
    assert np.dtype(np.float64) in seen and BF16 in seen


def test_dtypes_without_x64_exclude_64_bit():
    assert not config.jax_enable_x64

    @settings(max_examples=40, deadline=None)
    @given(xst.dtypes(kinds=("float", "int", "complex")))
    def check(dt):
        assert np.dtype(dt).itemsize < 8 or np.dtype(dt) == np.complex64
    check()
    with pytest.raises(ValueError, match="kind"):
        xst.dtypes(kinds=("floaty",))


@settings(max_examples=60, deadline=None)
@given(xst.arrays(dtype=np.float32, finite=False, shape=(20,)))
def test_non_finite_arrays_allowed(x):
    assert x.shape == (20,) and x.dtype == np.float32


@settings(max_examples=60, deadline=None)
@given(xst.shapes(min_dims=1, max_dims=4, min_side=0, max_side=2))
def test_shapes_bounds(s):
    assert 1 <= len(s) <= 4 and all(0 <= d <= 2 for d in s)


@settings(max_examples=60, deadline=None)
@given(xst.broadcast_shapes(num_shapes=3, max_dims=4))
def test_broadcast_shapes_are_compatible(shapes):
    assert len(shapes) == 3
    out = np.broadcast_shapes(*shapes)      # raises if incompatible
    x = xnp.zeros(shapes[0]) + xnp.zeros(shapes[1]) + xnp.zeros(shapes[2])
    assert x.shape == out


@settings(max_examples=40, deadline=None)
@given(xst.pytrees(leaves=xst.arrays(shape=(2,))))
def test_pytrees_have_array_leaves(tree):
    leaves = xform.tree_util.tree_leaves(tree)
    assert all(isinstance(leaf, xform.Array) and leaf.shape == (2,) for leaf in leaves)


def test_transform_stack_repr_and_reference():
    s = xst.TransformStack(("jit", "vmap", "grad"))
    assert repr(s) == "jit∘vmap∘grad" and s.has_jit
    assert repr(s.without_jit()) == "vmap∘grad" and repr(xst.TransformStack(())) == "id"
    x = xnp.asarray(np.array([0.3, -0.2], np.float32))
    out = s(xnp.sin)(x)
    # vmap over the batch (x, 0.75x, 0.5x) of grad(sum(sin)) = cos
    want = np.cos(np.stack([np.asarray(x) * c for c in (1.0, 0.75, 0.5)]))
    assert_allclose(out, want.astype(np.float32), atol=1e-6, rtol=1e-6)
    with pytest.raises(ValueError, match="unknown"):
        xst.TransformStack(("pmap",))
    with pytest.raises(ValueError, match="allowed"):
        xst.transforms(allowed=("hessian",))


def test_transform_layers_match_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    x = np.array([0.4, -1.1, 0.7], np.float32)
    stack = xst.TransformStack(("vjp", "jvp", "grad"), seed=7)
    ours = np.asarray(stack(lambda v: xnp.tanh(v) * v)(xnp.asarray(x)))
    # rebuild the same stack with JAX using the strategy's deterministic tangents
    from xform.testing.strategies import _fixed_random
    g = lambda v: jnp.tanh(v) * v  # noqa: E731
    g1 = jax.grad(lambda v: jnp.sum(g(v)))

    def g2(v):
        t = _fixed_random(7, 1, v.shape, v.dtype)
        out, tout = jax.jvp(g1, (v,), (t,))
        return jnp.concatenate([out.ravel(), tout.ravel()])

    out, fn = jax.vjp(g2, x)
    ct = _fixed_random(7, 2, out.shape, out.dtype)
    want = np.concatenate([np.ravel(out), np.ravel(fn(ct)[0])])
    np.testing.assert_allclose(ours, want, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------- property tests of xform

ELEMENTWISE = {"sin": xnp.sin, "tanh": xnp.tanh, "exp": lambda x: xnp.exp(0.5 * x),
               "softplus_like": lambda x: xnp.log1p(xnp.exp(x)),
               "poly": lambda x: x * x * 0.5 - x}


# Default run: 5 draws; the slow step runs 15 (the _exhaustive twin).
@settings(max_examples=5, deadline=None)
@given(xst.arrays(dtype=np.float32, shape=xst.shapes(max_dims=2, max_side=3), min_value=-2,
                  max_value=2),
       xst.transforms(max_depth=2), st.integers(0, 2))
def test_jit_stacks_agree_with_jit_free_stacks(x, stack, pos):
    _test_jit_stacks_agree_with_jit_free_stacks(x, stack, pos)


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(xst.arrays(dtype=np.float32, shape=xst.shapes(max_dims=2, max_side=3), min_value=-2,
                  max_value=2),
       xst.transforms(max_depth=2), st.integers(0, 2))
def test_jit_stacks_agree_with_jit_free_stacks_exhaustive(x, stack, pos):
    _test_jit_stacks_agree_with_jit_free_stacks(x, stack, pos)


def _test_jit_stacks_agree_with_jit_free_stacks(x, stack, pos):
    layers = list(stack.layers)
    layers.insert(pos % (len(layers) + 1), "jit")          # every drawn stack contains jit
    stack = xst.TransformStack(layers, stack.seed)
    for name, f in ELEMENTWISE.items():
        got = stack(f)(x)
        want = stack.reference(f)(x)
        # XLA vs NumPy through up to 2 derivative levels in float32
        assert_allclose(got, want, atol=2e-5, rtol=2e-5, err_msg=f"{stack!r} of {name}")


@settings(max_examples=8, deadline=None)
@given(st.data())
def test_stacked_functions_differentiate_correctly(data):
    old = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    try:
        x = data.draw(xst.arrays(dtype=np.float64, shape=xst.shapes(min_dims=1, max_dims=1,
                                                                     min_side=1, max_side=3),
                                 min_value=-1.5, max_value=1.5))
        stack = data.draw(xst.transforms(max_depth=2, allowed=("grad", "vmap", "jvp", "vjp")))
        name = data.draw(st.sampled_from(sorted(ELEMENTWISE)))
        check_grads(stack(ELEMENTWISE[name]), (x,), order=1)
    finally:
        config.update("jax_enable_x64", old)


def test_import_xform_does_not_import_hypothesis():
    code = ("import sys, xform, xform.testing; assert 'hypothesis' not in sys.modules; "
            "xform.testing.strategies; assert 'hypothesis' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(
        __import__("pathlib").Path(__file__).resolve().parents[1]))


def _scaled_rule(L, factor, mode):
    """sin with a JVP or VJP rule scaled by ``factor`` (1.0: the true derivative)."""
    if mode == "fwd":
        f = L.custom_jvp(lambda x: L.numpy.sin(x))
        f.defjvp(lambda p, t: (L.numpy.sin(p[0]), factor * L.numpy.cos(p[0]) * t[0]))
        return f
    f = L.custom_vjp(lambda x: L.numpy.sin(x))
    f.defvjp(lambda x: (L.numpy.sin(x), x), lambda x, g: (factor * L.numpy.cos(x) * g,))
    return f


@pytest.mark.parametrize("mode", ["fwd", "rev"])
@pytest.mark.parametrize("factor", [1.0, 1.001, 1.004, 1.01, 1.03, 1.2])
@pytest.mark.parametrize("shape", [(), (3,), (4, 5)])
def test_jax_named_check_grads_passes_and_fails_as_jax(mode, factor, shape):
    # xform.test_util is jax.test_util: the same direction, step and size-scaled
    # tolerances, so a derivative passes or fails there exactly as in JAX
    import jax
    from jax import test_util as jtu
    from xform import test_util as xtu
    x = np.linspace(-1.3, 2.1, int(np.prod(shape))).reshape(shape).astype(np.float32)
    outcome = []
    for L, tu in ((jax, jtu), (xform, xtu)):
        try:
            tu.check_grads(_scaled_rule(L, factor, mode), (x,), order=1, modes=(mode,))
            outcome.append(True)
        except AssertionError:
            outcome.append(False)
    assert outcome[0] == outcome[1]
    if factor == 1.0:
        assert outcome == [True, True]


def test_jax_named_check_grads_of_an_iterated_loop_as_jax():
    # JAX's lax_control_flow_test testWhileJVP: its finite difference is 1.6 % off at one
    # element, inside JAX's tolerance scaled by the 9 elements
    from xform import test_util as xtu
    loop = lambda x: lax.while_loop(lambda x: x[0, 2] <= 8, lambda x: x * x, x)  # noqa: E731
    xtu.check_grads(loop, (xnp.arange(9.0).reshape(3, 3),), order=2, modes=["fwd"])

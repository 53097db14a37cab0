"""Implicit rank-0 ("scalar") broadcasting in the lax n-ary elementwise primitives.

As in JAX, ``add``/``mul``/``max``/comparisons/... accept rank-0 operands mixed with
arrays of one common shape; the staged program keeps ``mul a 2.0:f32[]`` instead of a
``broadcast_in_dim`` equation.  Checked here against:

* XLA vs the NumPy reference for every such primitive with rank-0 operands (the
  verifier suite's generators, with some operands replaced by rank-0 values);
* JAX's own primitives (which mixes their shape rules accept) and JAX's printed
  jaxprs for jnp/lax code with Python scalars;
* math: finite differences for JVPs, the dot-product test for transposes (the
  cotangent of a rank-0 operand is summed to rank 0), a Python loop for batching.
"""
import itertools
import re

import jax
import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import xform
import xform.numpy as xnp
from xform._src.interpreters import ad, core, ir
from xform._src.interpreters.core import ShapedArray
from xform._src.primitives import _rules
from xform._src.primitives import elementwise as E
from prim_testutil import (check_batch, check_jvp, check_transpose, x64_enabled)
import test_verifier as V
from test_jaxpr_printing import normalise

BCAST = sorted(p.name for p in _rules.scalar_broadcasting)
PRIMS = {p.name: p for p in _rules.scalar_broadcasting}


def test_the_broadcasting_family():
    """JAX's n-ary elementwise ops (``naryop``) all broadcast rank-0 operands."""
    expected = {"add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter",
                "complex", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor",
                "shift_left", "shift_right_arithmetic", "shift_right_logical", "polygamma",
                "zeta", "igamma", "igammac", "igamma_grad_a", "regularized_incomplete_beta"}
    assert expected <= set(BCAST), sorted(expected - set(BCAST))
    assert "add_any" not in BCAST          # JAX's add_jaxvals wants equal types
    assert "select_n" not in BCAST and "clamp" not in BCAST   # their own scalar rules


# ----------------------------------------------------------------- shape rules vs JAX

_JAX_NAMES = {"and": "and_p", "or": "or_p", "xor": "xor_p"}


def _jax_prim(name):
    from jax._src.lax import lax as jlax, special as jspecial
    attr = _JAX_NAMES.get(name, f"{name}_p")
    return getattr(jlax, attr, None) or getattr(jspecial, attr, None)


def _jax_out_aval(jprim, shapes, dtypes):
    """The aval JAX's primitive infers for operands of these shapes/dtypes: its abstract
    eval rule, as ``bind`` under ``jax.eval_shape`` applies it (the same rule, and the
    same TypeError on rejection, without tracing a program per call)."""
    from jax._src import core as jcore
    out, _effects = jprim.abstract_eval(*[jcore.ShapedArray(s, np.dtype(d))
                                          for s, d in zip(shapes, dtypes)])
    return out


def _dtype_for(name):
    if name in ("and", "or", "xor", "shift_left", "shift_right_arithmetic",
                "shift_right_logical"):
        return np.dtype(np.int32)
    return np.dtype(np.float32)


@pytest.mark.parametrize("name", BCAST)
def test_shape_rule_matches_jax(name):
    """Every mix of rank-0 and (3, 4) operands, and a mismatched (3,)/(3, 4) pair: our
    abstract eval accepts exactly what JAX's primitive accepts, with its result shape."""
    prim, jprim = PRIMS[name], _jax_prim(name)
    assert jprim is not None, name
    n = 3 if name == "regularized_incomplete_beta" else 2
    dt = _dtype_for(name)
    cases = [tuple(s) for s in itertools.product([(), (3, 4)], repeat=n)]
    cases.append(((3,),) + ((3, 4),) * (n - 1))
    cases.append(((3, 4),) + ((4, 3),) * (n - 1))
    for shapes in cases:
        dts = [dt] * n
        if name == "pow":
            dts = [dt, dt]
        try:
            want = _jax_out_aval(jprim, shapes, dts)
        except TypeError:
            with pytest.raises(TypeError):
                prim.abstract_eval(*[ShapedArray(s, d) for s, d in zip(shapes, dts)])
            continue
        got = prim.abstract_eval(*[ShapedArray(s, d) for s, d in zip(shapes, dts)])
        assert got.shape == want.shape and got.dtype == want.dtype, (shapes, got, want)


def test_add_any_and_mismatched_shapes_raise():
    a, s = ShapedArray((3,), np.dtype(np.float32)), ShapedArray((), np.dtype(np.float32))
    with pytest.raises(TypeError, match="equal shapes"):
        E.add_any_p.abstract_eval(a, s)
    with pytest.raises(TypeError, match=r"f32\[3\].*f32\[4\]"):
        E.mul_p.abstract_eval(a, ShapedArray((4,), np.dtype(np.float32)))


# ----------------------------------------------------------------- XLA vs reference


def _scalarize(args, mask):
    """Operand i becomes rank 0 (its first element, keeping the spec's special values)."""
    return [np.asarray(a).reshape(-1)[0].copy() if m else a for a, m in zip(args, mask)]


# 2 draws per primitive in the default run, 4 in the slow step.
@pytest.mark.parametrize("name", BCAST)
@settings(max_examples=2, deadline=None)
@given(data=st.data())
def test_lowering_with_rank0_operands_matches_reference(name, data):
    _test_lowering_with_rank0_operands_matches_reference(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", BCAST)
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_lowering_with_rank0_operands_matches_reference_exhaustive(name, data):
    _test_lowering_with_rank0_operands_matches_reference(name, data)


def _test_lowering_with_rank0_operands_matches_reference(name, data):
    gen, exact, tol = V.SPECS[name]
    params, args = gen(data, name)
    assume(np.ndim(args[0]) > 0)
    n = len(args)
    masks = [m for m in itertools.product([False, True], repeat=n) if not all(m) and any(m)]
    mask = data.draw(st.sampled_from(masks), label="rank-0 operands")
    args = _scalarize(args, mask)
    got, ref = V.run_both(PRIMS[name], params, args)
    shape = next(np.shape(a) for a in args if np.ndim(a))
    for g, r in zip(got, ref):
        assert np.shape(g) == shape
        ex = exact if exact is not None else np.asarray(r).dtype.kind not in "fc"
        V.assert_matches(g, r, ex, tol, f"{name} on "
                         + ", ".join(f"{np.asarray(a).dtype}{np.shape(a)}" for a in args))


def test_lowered_text_broadcasts_rank0_operands():
    from xform._src.lowering import mlir
    f = lambda x, s: (x * s + 1.0) * 1.0 - s   # noqa: E731
    closed = xform.make_jaxpr(f)(np.ones((2, 3), np.float32), np.float32(2))
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["mul", "add", "mul", "sub"]
    text = mlir.lower_jaxpr(closed, debug_info=False)
    # the variable s and the literal 1.0 (a scalar constant) are broadcast, as JAX lowers,
    # each once although each is used twice
    assert text.count("stablehlo.broadcast_in_dim") == 2
    assert text.count("stablehlo.constant") == 1
    assert re.search(r'"stablehlo.constant"\(\) \{value = dense<[^>]*> : tensor<f32>', text)
    out = xform.jit(f)(np.ones((2, 3), np.float32), np.float32(2))
    np.testing.assert_array_equal(np.asarray(out), np.full((2, 3), 1, np.float32))


# ----------------------------------------------------------------- JVP / transpose

_DIFF = {  # name -> (f over primitives, argument kinds)
    "add": lambda x, y: E.add_p.bind(x, y),
    "sub": lambda x, y: E.sub_p.bind(x, y),
    "mul": lambda x, y: E.mul_p.bind(x, y),
    "div": lambda x, y: E.div_p.bind(x, y),
    "rem": lambda x, y: E.rem_p.bind(x, y),
    "pow": lambda x, y: E.pow_p.bind(x, y),
    "max": lambda x, y: E.max_p.bind(x, y),
    "min": lambda x, y: E.min_p.bind(x, y),
    "atan2": lambda x, y: E.atan2_p.bind(x, y),
}
_MIXES = [((3, 2), ()), ((), (3, 2)), ((), ())]


@pytest.mark.parametrize("name", sorted(_DIFF))
@pytest.mark.parametrize("shapes", _MIXES, ids=str)
def test_jvp_with_rank0_operand_matches_finite_differences(name, shapes):
    check_binary_jvp(_DIFF[name], name, shapes)


def check_binary_jvp(f, name, shapes):
    """Finite-difference JVP check of a binary ``f`` on operands of ``shapes`` (shared with
    test_size1_broadcasting)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 2.0, shapes[0])
    y = rng.uniform(0.5, 2.0, shapes[1]) + (0.25 if name in ("max", "min") else 0.0)
    with x64_enabled():
        for diff in ([0], [1], [0, 1]):
            check_jvp(f, [x, y], rng, diff=diff, rtol=1e-6, atol=1e-6)


_LINEAR = {  # name -> (f, linear argument positions)
    "add": (lambda x, y: E.add_p.bind(x, y), [0, 1]),
    "sub": (lambda x, y: E.sub_p.bind(x, y), [0, 1]),
    "mul_left": (lambda x, y: E.mul_p.bind(x, y), [0]),
    "mul_right": (lambda x, y: E.mul_p.bind(x, y), [1]),
    "div": (lambda x, y: E.div_p.bind(x, y), [0]),
}


@pytest.mark.parametrize("name", sorted(_LINEAR))
@pytest.mark.parametrize("shapes", _MIXES, ids=str)
def test_transpose_with_rank0_operand_dot_product(name, shapes):
    check_binary_transpose(*_LINEAR[name], shapes)


def check_binary_transpose(f, lin, shapes):
    """Dot-product test of ``f``'s transpose in its ``lin`` arguments, and the cotangent of
    every operand has the operand's shape (rank 0, or summed over its size-1 dims)."""
    rng = np.random.default_rng(1)
    args = [rng.uniform(0.5, 2.0, s) for s in shapes]
    with x64_enabled():
        lf = check_transpose(f, args, rng, lin=lin)
        tin = lf.transpose([core.Array(np.ones(np.broadcast_shapes(*shapes)))])
    for i, t in zip(lin, tin):
        if type(t) is not ad.Zero:
            assert np.shape(ad.instantiate(t)) == shapes[i]


def test_complex_transposes_with_rank0_operand():
    rng = np.random.default_rng(2)
    with x64_enabled():
        def f(x, y):   # real-valued, so the dot-product test pairs real vectors
            c = E.complex_p.bind(x, y)
            return E.add_p.bind(E.real_p.bind(c), E.mul_p.bind(E.imag_p.bind(c), 3.0))
        check_transpose(f, [rng.standard_normal((3,)), rng.standard_normal(())], rng)
        check_transpose(f, [rng.standard_normal(()), rng.standard_normal((2, 2))], rng)


def test_grad_wrt_scalar_parameter_matches_jax():
    def loss(lib):
        def f(w, b, x):
            y = lib.numpy.tanh(x * w + b) - 0.5
            return lib.numpy.sum(lib.numpy.maximum(y, 0.1) ** 2 / b)
        return f
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    w, b = np.float32(1.5), np.float32(0.75)
    ours = xform.grad(loss(xform), argnums=(0, 1))(w, b, x)
    ref = jax.grad(loss(jax), argnums=(0, 1))(w, b, x)
    for o, r in zip(ours, ref):
        assert np.shape(o) == () and np.asarray(o).dtype == np.float32
        np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=1e-5)
    jo = xform.jit(xform.grad(loss(xform), argnums=(0, 1)))(w, b, x)
    for o, r in zip(jo, ref):
        np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=1e-5)


# ----------------------------------------------------------------- batching


def _batch_cases():
    # (per-example shapes, in_dims): batched/unbatched scalars next to arrays
    return [
        (((), (3, 2)), (0, None)),        # batched scalar, unbatched array
        (((), (3, 2)), (None, 0)),        # unbatched scalar, batched array
        (((), (3, 2)), (None, 2)),
        (((), (3, 2)), (0, 1)),           # both batched, different axes
        (((3, 2), ()), (2, 0)),
        (((), ()), (0, None)),
        (((), ()), (None, 0)),
        (((3,), ()), (None, 0)),
    ]


@pytest.mark.parametrize("name", BCAST)
def test_batching_with_rank0_operands_matches_loop(name):
    prim = PRIMS[name]
    dt = _dtype_for(name)
    rng = np.random.default_rng(3)
    size = 4
    n = 3 if name == "regularized_incomplete_beta" else 2
    for shapes, dims in _batch_cases():
        shapes = (shapes + ((),))[:n] if n == 3 else shapes
        dims = (dims + (None,))[:n] if n == 3 else dims
        args = []
        for s, d in zip(shapes, dims):
            full = (size,) + s if d is not None else s
            if dt.kind == "i":
                a = rng.integers(1, 5, full).astype(dt)
            else:
                a = rng.uniform(0.1, 0.9, full).astype(dt)
            args.append(np.moveaxis(a, 0, d) if d is not None else a)
        check_batch(lambda *xs: prim.bind(*xs), args, dims, size)


def test_unbatched_scalar_stays_rank0_under_vmap():
    jaxpr = xform.make_jaxpr(xform.vmap(lambda x: x * 2.0 + x))(np.ones((4, 3), np.float32))
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["mul", "add"]
    s = xform.make_jaxpr(xform.vmap(lambda s, x: x * s, in_axes=(None, 0)))(
        np.float32(2), np.ones((4, 3), np.float32))
    assert [e.primitive.name for e in s.jaxpr.eqns] == ["mul"]


def test_vmap_of_scalar_mixes_matches_jax():
    def f(lib):
        return lambda s, x: lib.numpy.sum(lib.lax.max(x * s, s) - 1.0 / s, axis=-1)
    s = np.linspace(0.5, 2, 4).astype(np.float32)
    x = np.linspace(-2, 2, 12).astype(np.float32).reshape(4, 3)
    for in_axes in [(0, None), (0, 0), (None, 0), (0, 1)]:
        xx = x.T if in_axes[1] == 1 else (x[0] if in_axes[1] is None else x)
        ss = s if in_axes[0] == 0 else s[0]
        ours = xform.vmap(f(xform), in_axes=in_axes)(ss, xx)
        ref = jax.vmap(f(jax), in_axes=in_axes)(ss, xx)
        np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-6)


# ----------------------------------------------------------------- printed programs vs JAX


X = np.linspace(-0.9, 0.9, 12).astype(np.float32).reshape(3, 4)


def _corpus(lib):
    jnp, lax = lib.numpy, lib.lax
    C = {
        "mul_add": (lambda x: x * 2.0 + 1, (np.ones(3, np.float32),)),
        "rsub_compare": (lambda x: (1.0 - x) > 0, (np.ones(3, np.float32),)),
        "array_scalar_arg": (lambda x, s: x * s / s - s, (np.ones(3, np.float32),
                                                          np.float32(2))),
        "lax_scalar": (lambda x, s: lax.add(lax.mul(x, s), 2.0), (np.ones((2, 3), np.float32),
                                                                  np.float32(2))),
        "lax_scalar_first": (lambda x: lax.max(0.0, x), (np.ones(3, np.float32),)),
        "pow_div": (lambda x: x ** 2.5 / 3.0, (np.ones(3, np.float32),)),
        "maximum": (lambda x: jnp.maximum(x, 0.0), (np.ones(3, np.float32),)),
        "int_ops": (lambda i: (i * 3 + 1) << 2, (np.arange(4, dtype=np.int32),)),
        "bool_and": (lambda x: (x > 0) & True, (np.ones(3, np.float32),)),
        "atan2": (lambda x: jnp.arctan2(x, 1.0), (np.ones(3, np.float32),)),
        "complex": (lambda x: lax.complex(x, 0.0), (np.ones(3, np.float32),)),
        "clamp": (lambda x: lax.clamp(0.0, x, 1.0), (np.ones(3, np.float32),)),
        "grad_scalar_mul": (lib.grad(lambda s, x: jnp.sum(x * s)),
                            (np.float32(2), np.ones(3, np.float32))),
        "grad_mul_add": (lib.grad(lambda x: jnp.sum(x * 2.0 + 1)), (np.ones(3, np.float32),)),
        "grad_tanh": (lib.grad(lambda x: jnp.sum(jnp.tanh(x))), (np.ones(3, np.float32),)),
        "jvp_scalar": (lambda s, t: lib.jvp(lambda s: np.ones(3, np.float32) * s, (s,), (t,)),
                       (np.float32(2), np.float32(1))),
        "vjp_scalar": (lambda s, x: lib.vjp(lambda s: x * s, s)[1](x),
                       (np.float32(2), np.ones(3, np.float32))),
        "vmap_unbatched_scalar": (lib.vmap(lambda s, x: x * s, in_axes=(None, 0)),
                                  (np.float32(2), np.ones((4, 3), np.float32))),
        "square_reciprocal": (lambda x: jnp.square(x) + jnp.reciprocal(x), (X + 2,)),
    }
    # JVP rules written as JAX's (their scalar constants are rank-0 literals)
    for nm, fn in {"sqrt": lambda x: jnp.sqrt(x + 2.0), "tan": jnp.tan, "erf": lax.erf,
                   "erfc": lax.erfc, "div": lambda x: 1.0 / (x + 2.0), "square": jnp.square,
                   "asin": lambda x: jnp.arcsin(x * 0.5), "acos": lambda x: jnp.arccos(x * 0.5),
                   "atan": jnp.arctan, "asinh": jnp.arcsinh,
                   "atanh": lambda x: jnp.arctanh(x * 0.5), "exp2": jnp.exp2,
                   "max": lambda x: jnp.maximum(x, 0.1), "min": lambda x: jnp.minimum(0.1, x),
                   "atan2": lambda x: jnp.arctan2(x, 2.0), "cube": lambda x: x ** 3,
                   "tanh": jnp.tanh, "cos": jnp.cos}.items():
        C[f"grad_{nm}"] = (lib.grad(lambda x, fn=fn: jnp.sum(fn(x))), (X,))
    return C


_JAX, _XF = _corpus(jax), _corpus(xform)


@pytest.mark.parametrize("name", sorted(_JAX))
def test_printed_jaxpr_matches_jax(name):
    fj, args = _JAX[name]
    fx, _ = _XF[name]
    ref = str(jax.make_jaxpr(fj)(*args))
    ours = str(xform.make_jaxpr(fx)(*args))
    assert normalise(ours) == normalise(ref), f"\n--- jax\n{ref}\n--- xform\n{ours}"
    np_out = [np.asarray(o) for o in jax.tree_util.tree_leaves(fx(*args))]
    jx_out = [np.asarray(o) for o in jax.tree_util.tree_leaves(jax.jit(fj)(*args))]   # one compilation
    for o, r in zip(np_out, jx_out):
        assert o.shape == r.shape and o.dtype == r.dtype
        np.testing.assert_allclose(o, r, rtol=1e-6)


def test_no_broadcast_for_scalars_in_an_elementwise_chain():
    def chain(x):
        for i in range(30):
            x = x * 1.0001 + 0.5 if i % 2 else (x - 0.25) / 1.5
        return x
    jaxpr = xform.make_jaxpr(chain)(np.ones((8, 8), np.float32))
    assert not [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "broadcast_in_dim"]
    assert len(jaxpr.jaxpr.eqns) == 60
    np.testing.assert_allclose(np.asarray(xform.jit(chain)(np.ones((8, 8), np.float32))),
                               np.asarray(jax.jit(chain)(np.ones((8, 8), np.float32))),
                               rtol=1e-6)
    assert re.search(r"mul \w+ 1\.000\d*:f32\[\]", str(jaxpr))
    ir.check_jaxpr(jaxpr.jaxpr)


# ----------------------------------------------------------------- jnp programs vs JAX

_JNP_BINOPS = ["add", "subtract", "multiply", "true_divide", "maximum", "minimum", "arctan2",
               "power", "fmod", "remainder", "floor_divide", "hypot", "logaddexp", "copysign",
               "fmax", "heaviside"]


# 4 random programs in the default run, 12 in the slow step.
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_random_scalar_array_programs_match_jax(data):
    _test_random_scalar_array_programs_match_jax(data)


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_random_scalar_array_programs_match_jax_exhaustive(data):
    _test_random_scalar_array_programs_match_jax(data)


def _test_random_scalar_array_programs_match_jax(data):
    """Random chains of binary jnp functions where one operand is a rank-0 value (a Python
    scalar, a 0-d array argument, or an array reduced to rank 0): values under jit, the
    gradient w.r.t. the rank-0 argument and the array, and vmap over the array, vs JAX."""
    steps = data.draw(st.lists(st.tuples(st.sampled_from(_JNP_BINOPS),
                                         st.sampled_from(["py", "arg", "reduced"]),
                                         st.booleans()), min_size=1, max_size=5), label="steps")

    def make(lib):
        jnp = lib.numpy

        def f(s, x):
            h = x
            for op, kind, scalar_first in steps:
                c = 0.75 if kind == "py" else s if kind == "arg" else jnp.mean(h) * 0.5 + 1.0
                a, b = (c, h) if scalar_first else (h, c)
                h = jnp.tanh(getattr(jnp, op)(a, b)) + 1.5   # keep values in a tame range
            return h
        return f

    x = np.linspace(0.6, 1.9, 6).astype(np.float32).reshape(2, 3)
    s = np.float32(1.25)
    fx, fj = make(xform), make(jax)
    np.testing.assert_allclose(np.asarray(xform.jit(fx)(s, x)), np.asarray(fj(s, x)),
                               rtol=2e-5, atol=2e-6)
    loss_x = lambda f: lambda s, x: f(s, x).sum()   # noqa: E731
    gx = xform.grad(loss_x(fx), argnums=(0, 1))(s, x)
    gj = jax.grad(loss_x(fj), argnums=(0, 1))(s, x)
    for o, r in zip(gx, gj):
        assert np.shape(o) == np.shape(r)
        np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=2e-4, atol=2e-5)
    vx = xform.vmap(fx, in_axes=(None, 0))(s, x)
    vj = jax.vmap(fj, in_axes=(None, 0))(s, x)
    np.testing.assert_allclose(np.asarray(vx), np.asarray(vj), rtol=2e-5, atol=2e-6)


def test_where_keeps_a_rank0_predicate():
    """As JAX's ``_where``: select_n takes a rank-0 predicate without broadcasting it (both
    stage it inside ``jit[name=_where]``)."""
    x = np.linspace(-1, 1, 6).astype(np.float32).reshape(2, 3)
    jaxpr = xform.make_jaxpr(lambda p, x: xnp.where(p, x, 0.0))(True, x)
    (jit_eqn,) = jaxpr.jaxpr.eqns
    assert jit_eqn.params["name"] == "_where"
    sel, = [e for e in jit_eqn.params["jaxpr"].jaxpr.eqns if e.primitive.name == "select_n"]
    assert sel.invars[0].aval.shape == ()
    for p in (True, False):
        np.testing.assert_array_equal(np.asarray(xform.jit(lambda p, x: xnp.where(p, x, 0.0))(
            p, x)), np.asarray(jax.numpy.where(p, x, 0.0)))

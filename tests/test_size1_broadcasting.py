"""Implicit size-1 broadcasting in the lax n-ary elementwise primitives.

Besides rank-0 operands (tests/test_scalar_broadcasting.py), JAX's lax n-ary ops accept
operands of EQUAL rank whose sizes in each dimension are equal or 1
(``add f32[4,1] f32[1,4] -> f32[4,4]``), and jnp passes such operands through without
staging ``broadcast_in_dim`` (different ranks get leading size-1 dims only).  Checked
here against:

* XLA vs the NumPy reference for every such primitive with size-1 dims (the verifier
  suite's generators, with some dims of some operands cut to size 1);
* JAX's own primitives (which shapes their shape rules accept) and JAX's printed
  jaxprs (``a[:, None] + b[None, :]``, softmax, logsumexp, one_hot, rank promotion);
* math: finite differences for JVPs, the dot-product test for transposes (the
  cotangent of a size-1-dim operand is summed over those dims, keeping them), Python
  loops for batching (eager and under jit).
"""
import itertools

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
from prim_testutil import check_batch, check_jvp, check_transpose, x64_enabled
import test_verifier as V
from test_jaxpr_printing import normalise
import test_scalar_broadcasting as SB
from test_scalar_broadcasting import _dtype_for, _jax_out_aval, _jax_prim

BCAST = sorted(p.name for p in _rules.scalar_broadcasting)
PRIMS = {p.name: p for p in _rules.scalar_broadcasting}


# ----------------------------------------------------------------- shape rules vs JAX

_SHAPES = [(), (3, 4), (3, 1), (1, 4), (1, 1), (4,), (3,), (1,), (4, 3), (2, 3, 4), (3, 1, 1)]


@pytest.mark.parametrize("name", BCAST)
def test_shape_rule_matches_jax(name):
    """Every pair (triple: a sample) of shapes from a set mixing ranks, size-1 dims and
    incompatible sizes: our abstract eval accepts exactly what JAX's primitive accepts,
    with its result shape; rejections are TypeErrors in both."""
    prim, jprim = PRIMS[name], _jax_prim(name)
    n = 3 if name == "regularized_incomplete_beta" else 2
    dt = _dtype_for(name)
    cases = list(itertools.product(_SHAPES, repeat=2))
    if n == 3:
        cases = [c + (c[0],) for c in cases] + [c[:1] + c for c in cases[::3]]
    accepted = 0
    for shapes in cases:
        avals = [ShapedArray(s, dt) for s in shapes]
        try:
            want = _jax_out_aval(jprim, shapes, [dt] * len(shapes))
        except TypeError:
            with pytest.raises(TypeError):
                prim.abstract_eval(*avals)
            continue
        got = prim.abstract_eval(*avals)
        assert got.shape == want.shape and got.dtype == want.dtype, (shapes, got, want)
        accepted += 1
    assert accepted > len(cases) // 4


def test_add_any_keeps_equal_shapes():
    a, b = ShapedArray((3, 1), np.dtype(np.float32)), ShapedArray((1, 3), np.dtype(np.float32))
    with pytest.raises(TypeError, match="equal shapes"):
        E.add_any_p.abstract_eval(a, b)
    with pytest.raises(TypeError, match=r"incompatible shapes.*f32\[3,2\].*f32\[4,2\]"):
        E.add_p.abstract_eval(ShapedArray((3, 2), np.dtype(np.float32)),
                              ShapedArray((4, 2), np.dtype(np.float32)))


# ----------------------------------------------------------------- XLA vs reference


def _cut(a, dims):
    """``a`` with the given dims cut to size 1 (keeping the spec's values there)."""
    a = np.asarray(a)
    idx = tuple(slice(0, 1) if i in dims else slice(None) for i in range(a.ndim))
    return a[idx].copy()


# 2 draws per primitive in the default run, 4 in the slow step.
@pytest.mark.parametrize("name", BCAST)
@settings(max_examples=2, deadline=None)
@given(data=st.data())
def test_lowering_with_size1_dims_matches_reference(name, data):
    _test_lowering_with_size1_dims_matches_reference(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", BCAST)
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_lowering_with_size1_dims_matches_reference_exhaustive(name, data):
    _test_lowering_with_size1_dims_matches_reference(name, data)


def _test_lowering_with_size1_dims_matches_reference(name, data):
    gen, exact, tol = V.SPECS[name]
    params, args = gen(data, name)
    shape = np.shape(args[0])
    assume(len(shape) > 0 and all(np.shape(a) == shape for a in args))
    assume(any(d > 1 for d in shape))
    nd = len(shape)
    cuts = [data.draw(st.sets(st.integers(0, nd - 1)), label=f"size-1 dims of operand {i}")
            for i in range(len(args))]
    assume(any(cuts))
    args = [_cut(a, c) for a, c in zip(args, cuts)]
    want_shape = np.broadcast_shapes(*[np.shape(a) for a in args])
    got, ref = V.run_both(PRIMS[name], params, args)
    for g, r in zip(got, ref):
        assert np.shape(g) == want_shape and np.shape(r) == want_shape
        ex = exact if exact is not None else np.asarray(r).dtype.kind not in "fc"
        V.assert_matches(g, r, ex, tol, f"{name} on "
                         + ", ".join(f"{np.asarray(a).dtype}{np.shape(a)}" for a in args))


def test_lowered_text_broadcasts_size1_operands():
    from xform._src.lowering import mlir
    f = lambda a, b: a * b + a   # noqa: E731
    closed = xform.make_jaxpr(f)(np.ones((4, 1), np.float32), np.ones((1, 3), np.float32))
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["mul", "add"]
    assert closed.jaxpr.eqns[0].outvars[0].aval.shape == (4, 3)
    text = mlir.lower_jaxpr(closed, debug_info=False)
    # a, b broadcast once each (a is used twice)
    assert text.count("stablehlo.broadcast_in_dim") == 2
    assert text.count("broadcast_dimensions = array<i64: 0, 1>") == 2
    a = np.arange(4, dtype=np.float32).reshape(4, 1)
    b = np.arange(3, dtype=np.float32).reshape(1, 3) + 1
    np.testing.assert_array_equal(np.asarray(xform.jit(f)(a, b)), a * b + a)


# ----------------------------------------------------------------- JVP / transpose

_DIFF = {**SB._DIFF,
         "complex_abs": lambda x, y: E.abs_p.bind(E.complex_p.bind(x, y))}
_MIXES = [((3, 1), (1, 2)), ((1, 2), (3, 2)), ((3, 2), (1, 1)), ((1, 1, 2), (3, 1, 2)),
          ((1,), (4,))]


@pytest.mark.parametrize("name", sorted(_DIFF))
@pytest.mark.parametrize("shapes", _MIXES, ids=str)
def test_jvp_with_size1_dims_matches_finite_differences(name, shapes):
    SB.check_binary_jvp(_DIFF[name], name, shapes)


@pytest.mark.parametrize("shapes", _MIXES[:2], ids=str)
def test_special_jvps_with_size1_dims_match_finite_differences(shapes):
    from xform._src.primitives import special as S
    rng = np.random.default_rng(4)
    a, x = rng.uniform(0.5, 2.0, shapes[0]), rng.uniform(0.5, 2.0, shapes[1])
    with x64_enabled():
        for prim in (S.igamma_p, S.igammac_p):
            for diff in ([0], [1], [0, 1]):
                check_jvp(lambda a, x, p=prim: p.bind(a, x), [a, x], rng, diff=diff,
                          rtol=1e-5, atol=1e-6)
        # betainc: differentiable in x only (as JAX)
        check_jvp(lambda a, b, x: S.regularized_incomplete_beta_p.bind(a, b, x),
                  [a, x, rng.uniform(0.2, 0.8, (1,) * len(shapes[0]))], rng, diff=[2],
                  rtol=1e-5, atol=1e-6)


_LINEAR = {**SB._LINEAR,
           "complex": (lambda x, y: E.real_p.bind(E.mul_p.bind(
               E.complex_p.bind(x, y), np.complex128(1.5 - 0.5j))), [0, 1])}


@pytest.mark.parametrize("name", sorted(_LINEAR))
@pytest.mark.parametrize("shapes", _MIXES, ids=str)
def test_transpose_with_size1_dims_dot_product(name, shapes):
    SB.check_binary_transpose(*_LINEAR[name], shapes)


def test_grad_through_outer_products_matches_jax():
    def loss(lib):
        jnp = lib.numpy

        def f(a, b, c):
            z = lib.lax.mul(a[:, None], b[None, :]) - lib.lax.max(c, a[:, None])
            return jnp.sum(jnp.tanh(z) ** 2 / (1.0 + b[None, :] ** 2))
        return f
    a = np.linspace(-1, 1, 4).astype(np.float32)
    b = np.linspace(0.5, 1.5, 3).astype(np.float32)
    c = np.float32(0.1) * np.arange(3, dtype=np.float32)[None, :]
    ref = jax.grad(loss(jax), argnums=(0, 1, 2))(a, b, c)
    for g in (xform.grad(loss(xform), argnums=(0, 1, 2)),
              xform.jit(xform.grad(loss(xform), argnums=(0, 1, 2)))):
        for o, r in zip(g(a, b, c), ref):
            assert np.shape(o) == np.shape(r)
            np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=2e-5, atol=1e-6)


# ----------------------------------------------------------------- batching


def _batch_cases():
    # (per-example shapes, in_dims)
    return [
        (((3, 1), (1, 2)), (0, 0)),        # both batched, same axis, different shapes
        (((3, 1), (1, 2)), (0, None)),     # unbatched size-1-dim operand
        (((3, 1), (1, 2)), (None, 1)),
        (((3, 1), (1, 2)), (2, 1)),        # different axes
        (((1, 2), (3, 2)), (1, None)),
        (((3, 2), (1, 1)), (None, 0)),
        (((1, 1), (3, 2)), (2, 0)),
        (((), (3, 1)), (0, None)),         # batched scalar next to a size-1-dim array
        (((1,), ()), (0, 0)),
    ]


@pytest.mark.parametrize("name", BCAST)
def test_batching_with_size1_dims_matches_loop(name):
    prim = PRIMS[name]
    dt = _dtype_for(name)
    rng = np.random.default_rng(3)
    size = 4
    n = 3 if name == "regularized_incomplete_beta" else 2
    for shapes, dims in _batch_cases():
        if n == 3:
            shapes, dims = shapes + (shapes[0],), dims + (None,)
        args = []
        for s, d in zip(shapes, dims):
            full = (size,) + s if d is not None else s
            if dt.kind == "i":
                a = rng.integers(1, 5, full).astype(dt)
            else:
                a = rng.uniform(0.1, 0.9, full).astype(dt)
            args.append(np.moveaxis(a, 0, d) if d is not None else a)
        check_batch(lambda *xs: prim.bind(*xs), args, dims, size)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (1, 0), (0, 1)], ids=str)
def test_jit_vmap_of_outer_products_matches_loop_and_jax(in_axes):
    def f(lib):
        return lambda a, b: lib.lax.add(lib.lax.mul(a, b), a) - lib.numpy.sum(b)
    a = np.linspace(-1, 1, 20).astype(np.float32).reshape(5, 4, 1)     # examples [4,1]
    b = np.linspace(0.5, 2, 15).astype(np.float32).reshape(5, 1, 3)    # examples [1,3]
    aa = a if in_axes[0] == 0 else (np.moveaxis(a, 0, 1) if in_axes[0] == 1 else a[0])
    bb = b if in_axes[1] == 0 else (np.moveaxis(b, 0, 1) if in_axes[1] == 1 else b[0])
    ours = xform.jit(xform.vmap(f(xform), in_axes=in_axes))(aa, bb)
    eager = xform.vmap(f(xform), in_axes=in_axes)(aa, bb)
    ref = jax.vmap(f(jax), in_axes=in_axes)(aa, bb)
    loop = np.stack([np.asarray(f(xform)(a[i] if in_axes[0] is not None else aa,
                                         b[i] if in_axes[1] is not None else bb))
                     for i in range(5)])
    for got in (ours, eager):
        assert np.shape(got) == (5, 4, 3)
        np.testing.assert_allclose(np.asarray(got), loop, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------- printed programs vs JAX

V4 = np.linspace(-1, 1, 4).astype(np.float32)
M = np.linspace(-2, 2, 12).astype(np.float32).reshape(3, 4)


def _corpus(lib):
    jnp, lax = lib.numpy, lib.lax
    return {
        "newaxis_indexing": (lambda a, b: a[:, None] + b[None, :], (V4, V4)),
        "outer_mul": (lambda a, b: jnp.multiply(a.reshape(4, 1), b.reshape(1, 4)), (V4, V4)),
        "rank_promotion": (lambda a, m: a * m - a, (V4, M)),
        "column_minus_row": (lambda m: m - m[:, :1] + m[:1, :], (M,)),
        "lax_size1": (lambda m: lax.max(m, m[:1]), (M,)),
        "compare_size1": (lambda m: m > m[:, :1], (M,)),
        "keepdims_mean": (lambda m: m - jnp.mean(m, axis=1, keepdims=True), (M,)),
        "grad_outer": (lib.grad(lambda a, b: jnp.sum(jnp.sin(a[:, None] * b[None, :]))),
                       (V4, V4)),
        "grad_rank_promotion": (lib.grad(lambda a, m: jnp.sum(a * m)), (V4, M)),
        "logsumexp": (lambda m: lib.nn.logsumexp(m, axis=1), (M,)),
        "softmax": (lambda m: lib.nn.softmax(m, axis=-1), (M,)),
        "one_hot": (lambda i: lib.nn.one_hot(i, 5), (np.array([0, 3, 1], np.int32),)),
    }


_JAX, _XF = _corpus(jax), _corpus(xform)
XFAIL = {}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=XFAIL[n])) if n in XFAIL else n
    for n in sorted(_JAX)])
def test_printed_jaxpr_matches_jax(name):
    fj, args = _JAX[name]
    fx, _ = _XF[name]
    ref = str(jax.make_jaxpr(fj)(*args))
    ours = str(xform.make_jaxpr(fx)(*args))
    assert normalise(ours) == normalise(ref), f"\n--- jax\n{ref}\n--- xform\n{ours}"


def test_vmap_of_newaxis_outer_sum_stages_as_jax():
    """(Not in the printed corpus: JAX prints this one's dims as ``np.int64(1)``.)"""
    f = lambda a, b: a[:, None] + b[None, :]   # noqa: E731
    jaxpr = xform.make_jaxpr(xform.vmap(f))(M, M)
    ref = jax.make_jaxpr(jax.vmap(f))(M, M)
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == \
        [e.primitive.name for e in ref.jaxpr.eqns] == ["broadcast_in_dim"] * 2 + ["add"]
    assert [e.outvars[0].aval.shape for e in jaxpr.jaxpr.eqns] == \
        [e.outvars[0].aval.shape for e in ref.jaxpr.eqns]
    np.testing.assert_array_equal(np.asarray(xform.vmap(f)(M, M)),
                                  np.asarray(jax.vmap(f)(M, M)))


@pytest.mark.parametrize("name", sorted(_JAX))
def test_corpus_values_match_jax(name):
    fj, args = _JAX[name]
    fx, _ = _XF[name]
    for o, r in zip(jax.tree_util.tree_leaves(xform.jit(fx)(*args)),
                    jax.tree_util.tree_leaves(fj(*args))):
        o, r = np.asarray(o), np.asarray(r)
        assert o.shape == r.shape and o.dtype == r.dtype
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-6)


def test_jnp_stages_no_full_broadcast_for_equal_ranks():
    jaxpr = xform.make_jaxpr(lambda a, b: xnp.add(a, b) * xnp.maximum(a, b))(
        np.ones((4, 1), np.float32), np.ones((1, 5), np.float32))
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["add", "max", "mul"]
    ir.check_jaxpr(jaxpr.jaxpr)


def test_jnp_incompatible_shapes_raise_as_jax():
    for a, b in [((3, 2), (4, 2)), ((2,), (4, 3))]:
        x, y = np.ones(a, np.float32), np.ones(b, np.float32)
        try:
            jax.jit(jax.numpy.add)(x, y)
        except Exception as e:
            want = type(e)
        with pytest.raises(want):
            xform.jit(xnp.add)(x, y)

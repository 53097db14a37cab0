"""clz, reduce_precision, optimization_barrier, approx_max_k/approx_min_k, index_take,
broadcast_shapes, empty: against real JAX."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import xform
import xform.lax as lax
import xform.numpy as xnp
from prim_testutil import check_batch, examples


@examples(10)
@given(dt=st.sampled_from(["int8", "int16", "int32", "uint8", "uint16", "uint32"]),
       seed=st.integers(0, 2**31 - 1))
def test_clz_matches_jax(dt, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, size=(3, 5), dtype=dt, endpoint=True)
    x[0, 0] = 0
    want = np.asarray(jax.lax.clz(x))
    np.testing.assert_array_equal(np.asarray(lax.clz(x)), want)
    np.testing.assert_array_equal(np.asarray(xform.jit(lax.clz)(x)), want)
    check_batch(lax.clz, [x], [1], 5)
    with pytest.raises(TypeError):
        lax.clz(np.ones(3, np.float32))


@examples(15)
@given(dt=st.sampled_from(["float32", "float16"]), e=st.integers(1, 8), m=st.integers(0, 23),
       seed=st.integers(0, 2**31 - 1))
def test_reduce_precision_matches_jax(dt, e, m, seed):
    rng = np.random.default_rng(seed)
    if dt == "float16":
        e, m = min(e, 5), min(m, 10)
    x = rng.standard_normal(40) * 10.0 ** rng.integers(-8, 8, 40)
    x = np.concatenate([x, [np.nan, np.inf, -np.inf, 0.0, -0.0, 65504.0, 1e-7]]).astype(dt)
    want = np.asarray(jax.lax.reduce_precision(x, e, m))
    np.testing.assert_array_equal(np.asarray(lax.reduce_precision(x, e, m)), want)
    np.testing.assert_array_equal(
        np.asarray(xform.jit(lambda v: lax.reduce_precision(v, e, m))(x)), want)
    t = np.ones_like(x)
    _, tan = xform.jvp(lambda v: lax.reduce_precision(v, e, m), (x,), (t,))
    _, jtan = jax.jvp(lambda v: jax.lax.reduce_precision(v, e, m), (x,), (t,))
    np.testing.assert_array_equal(np.asarray(tan), np.asarray(jtan))


_RP_NARROW = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
              "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu",
              "float4_e2m1fn"]


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    ut = f"uint{a.dtype.itemsize * 8}"
    nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    bad = (a.view(ut) != b.view(ut)) & ~nan
    assert not bad.any(), (a[bad], b[bad])


@examples(25)
@given(dt=st.sampled_from(_RP_NARROW + ["float16", "float32"]), e=st.integers(1, 12),
       m=st.integers(0, 25), seed=st.integers(0, 2**31 - 1))
def test_reduce_precision_every_float_dtype_matches_jax(dt, e, m, seed):
    """XLA's rounding for every floating dtype, bit for bit (signed zeros included): the
    narrow formats are computed widened (f16 when it holds the format, else f32) and
    converted back, so even their own (nexp, nmant) is not the identity (float8_e4m3fn:
    >= 256 -> NaN, subnormals -> 0)."""
    import ml_dtypes
    d = np.dtype(getattr(ml_dtypes, dt, None) or dt)
    rng = np.random.default_rng(seed)
    if d.itemsize == 1 and dt != "float4_e2m1fn":
        x = np.arange(256, dtype=np.uint8).view(d)          # every value of the format
    else:
        fi = ml_dtypes.finfo(d)
        with np.errstate(all="ignore"):
            x = (rng.standard_normal(64) * 2.0 ** rng.integers(-30, 30, 64)).astype(d)
            x = np.concatenate([x, np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0,
                                             float(fi.max), float(fi.smallest_subnormal),
                                             float(fi.tiny)]).astype(d)])
    want = jax.lax.reduce_precision(x, e, m)
    _same_bits(lax.reduce_precision(x, e, m), want)
    _same_bits(xform.jit(lambda v: lax.reduce_precision(v, e, m))(x), want)


def test_reduce_precision_rules():
    """Errors as JAX's; JVP / transpose / VJP round as JAX's; batching is the loop."""
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4) * 1.37
    for bad in (np.ones(3, np.complex64), np.ones(3, np.int32)):
        with pytest.raises(TypeError):
            jax.lax.reduce_precision(bad, 8, 23)
        with pytest.raises(TypeError, match="reduce_precision"):
            lax.reduce_precision(bad, 8, 23)
    for e, m in ((0, 3), (3, -1)):
        with pytest.raises(ValueError):
            jax.lax.reduce_precision(x, e, m)
        with pytest.raises(ValueError, match="reduce_precision"):
            lax.reduce_precision(x, e, m)
    f = lambda v: lax.reduce_precision(v, 5, 4)
    ct = np.cos(x + 0.3)
    # Treated as linear, as JAX does (the identity up to rounding): the tangent and the
    # cotangent are rounded the same way -- no dot-product test, rounding is not linear.
    (back,) = xform.linear_transpose(f, x)(ct)
    _same_bits(back, f(ct))
    (jback,) = jax.linear_transpose(lambda v: jax.lax.reduce_precision(v, 5, 4), x)(ct)
    _same_bits(back, jback)
    _, tan = xform.jvp(f, (x,), (ct,))
    _same_bits(tan, f(ct))
    (vjp_ct,) = xform.vjp(f, x)[1](ct)
    _same_bits(vjp_ct, jax.vjp(lambda v: jax.lax.reduce_precision(v, 5, 4), x)[1](ct)[0])
    check_batch(f, [x], [1], 4)
    check_batch(f, [x], [0], 3)
    _same_bits(xform.vmap(f, in_axes=1)(x),
               jax.vmap(lambda v: jax.lax.reduce_precision(v, 5, 4), in_axes=1)(x))


def test_optimization_barrier():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    tree = {"a": x, "b": (np.int32(3),)}
    out = lax.optimization_barrier(tree)
    assert set(out) == {"a", "b"} and np.array_equal(np.asarray(out["a"]), x)
    f = lambda np_, l: lambda v: np_.sum(l.optimization_barrier(v * v) * v)
    np.testing.assert_allclose(np.asarray(xform.jit(xform.grad(f(xnp, lax)))(x)),
                               np.asarray(jax.grad(f(jnp, jax.lax))(x)))
    np.testing.assert_allclose(np.asarray(xform.vmap(lambda v: lax.optimization_barrier(v) * 2)(x)),
                               x * 2)
    assert "optimization_barrier" in xform.jit(f(xnp, lax)).lower(x).as_text()


@examples(8)
@given(seed=st.integers(0, 2**31 - 1), k=st.integers(1, 5), dim=st.integers(-2, 1))
def test_approx_k_matches_jax(seed, k, dim):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((5, 6)).astype(np.float32)
    for name in ("approx_max_k", "approx_min_k"):
        ours = getattr(lax, name)(x, k, dim)
        want = getattr(jax.lax, name)(x, k, dim)
        jitted = xform.jit(lambda v: getattr(lax, name)(v, k, dim))(x)
        for a, b, c in zip(ours, want, jitted):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
            np.testing.assert_array_equal(np.asarray(c), np.asarray(b))
            assert np.asarray(a).dtype == np.asarray(b).dtype
    with pytest.raises(ValueError):
        lax.approx_max_k(x.astype(np.int32), 2)
    with pytest.raises(ValueError):
        lax.approx_min_k(x, 0)


def test_index_take_broadcast_shapes_empty():
    rng = np.random.default_rng(0)
    s = rng.standard_normal((4, 5, 6)).astype(np.float32)
    for idxs, axes in [((np.array([0, 3, -1]), np.array([1, 7, 2])), (0, 2)),
                       ((np.array([2, 0]),), (1,)),
                       ((np.array([1, 2]), np.array([0, 4])), (0, 2))]:
        want = np.asarray(jax.lax.index_take(s, idxs, axes))
        np.testing.assert_array_equal(np.asarray(lax.index_take(s, idxs, axes)), want)
    for shapes in [((3, 1), (1, 4), (5, 1, 1)), ((2,),), ((0, 1), (3,))]:
        assert lax.broadcast_shapes(*shapes) == jax.lax.broadcast_shapes(*shapes)
    with pytest.raises(ValueError):
        jax.lax.broadcast_shapes((3,), (4,))
    with pytest.raises(ValueError):
        lax.broadcast_shapes((3,), (4,))
    e = lax.empty((2, 3), jnp.float32)
    assert e.shape == (2, 3) and e.dtype == np.float32
    assert lax.empty(4, "int32").shape == jax.lax.empty(4, "int32").shape


def test_issue_12_lax_names_exist():
    names = """conv_general_dilated conv conv_with_general_padding conv_dimension_numbers
    conv_transpose conv_general_dilated_patches conv_general_dilated_local
    conv_general_permutations conv_general_shape_tuple conv_shape_tuple
    conv_transpose_shape_tuple ConvDimensionNumbers padtype_to_pads reduce_window
    reduce_window_shape_tuple reduce cumlogsumexp reduce_precision population_count clz
    nextafter top_k approx_max_k approx_min_k sort index_take broadcast_shapes empty
    optimization_barrier fft FftType conv_general_dilated_p reduce_window_p
    reduce_window_sum_p reduce_window_max_p reduce_window_min_p select_and_scatter_add_p
    select_and_gather_add_p reduce_p fft_p clz_p reduce_precision_p
    optimization_barrier_p""".split()
    missing = [n for n in names if not hasattr(lax, n)]
    assert not missing, missing
    assert all(hasattr(jax.lax, n) for n in names)
    assert [int(t) for t in lax.FftType] == [int(t) for t in jax.lax.FftType]


def test_approx_k_without_aggregation_matches_jax_shapes_and_values():
    rng = np.random.default_rng(0)
    for n, rank, k, r in [(3000, 1, 4, 0.95), (3000, 2, 4, 0.5), (5000, 2, 1, 0.9),
                          (1000, 2, 50, 0.99), (300, 1, 3, 0.95), (20000, 1, 300, 0.9)]:
        # distinct values: XLA's fallback does not order ties by index
        shape = (n,) if rank == 1 else (2, n)
        x = (rng.permutation(int(np.prod(shape))).reshape(shape) - n / 2).astype(np.float32)
        for name in ("approx_max_k", "approx_min_k"):
            ours = getattr(lax, name)(x, k, recall_target=r, aggregate_to_topk=False)
            want = getattr(jax.lax, name)(x, k, recall_target=r, aggregate_to_topk=False)
            for a, b in zip(ours, want):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_dot_algorithms_accuracy_tokens_and_composite_as_jax():
    import jax
    from xform import lax as xl
    assert list(xl.DotAlgorithmPreset.__members__) == list(jax.lax.DotAlgorithmPreset.__members__)
    assert xl.DotAlgorithm._fields == jax.lax.DotAlgorithm._fields
    assert list(xl.AccuracyMode.__members__) == list(jax.lax.AccuracyMode.__members__)
    import inspect
    assert str(inspect.signature(xl.Tolerance)) == str(inspect.signature(jax.lax.Tolerance))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    # (JAX's CPU backend refuses an explicit DotAlgorithm; xform computes the product)
    np.testing.assert_array_equal(
        np.asarray(xl.dot(x, x.T, precision=xl.DotAlgorithm(np.float32, np.float32,
                                                             np.float32))), x @ x.T)
    for xp, jp in [(xl.DotAlgorithmPreset.F32_F32_F32, jax.lax.DotAlgorithmPreset.F32_F32_F32),
                   (xl.DotAlgorithmPreset.DEFAULT, jax.lax.DotAlgorithmPreset.DEFAULT)]:
        want = jax.lax.dot(x, x.T, precision=jp)
        np.testing.assert_array_equal(np.asarray(xl.dot(x, x.T, precision=xp)), want)
        np.testing.assert_array_equal(
            np.asarray(xform.jit(lambda a: xl.dot(a, a.T, precision=xp))(x)), want)
    for xa, ja in [(xl.AccuracyMode.HIGHEST, jax.lax.AccuracyMode.HIGHEST),
                   (xl.Tolerance(atol=1e-3), jax.lax.Tolerance(atol=1e-3))]:
        np.testing.assert_allclose(np.asarray(xl.exp(x, accuracy=xa)),
                                   jax.lax.exp(x, accuracy=ja), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(xform.grad(lambda v: xl.tanh(v, accuracy=xa).sum())(x * 0.2)),
                                   jax.grad(lambda v: jax.lax.tanh(v, accuracy=ja).sum())(x * 0.2),
                                   rtol=1e-6)
    with pytest.raises(TypeError):
        xl.exp(x, accuracy="high")
    t = xl.create_token()
    out = xform.jit(lambda t, v: (xl.after_all(t, t), v * 2))(t, x)
    assert isinstance(out[0], type(t)) and np.asarray(out[1]).sum() == 30
    f = xl.composite(lambda v, *, k: v * k, "my.scale")
    g = jax.lax.composite(lambda v, *, k: v * k, "my.scale")
    np.testing.assert_array_equal(np.asarray(f(x, k=3.0)), g(x, k=3.0))
    # JAX 0.10.2 has no JVP rule for composite; xform differentiates the decomposition
    np.testing.assert_array_equal(np.asarray(xform.grad(lambda v: f(v, k=3.0).sum())(x)),
                                  jax.grad(lambda v: (v * 3.0).sum())(x))

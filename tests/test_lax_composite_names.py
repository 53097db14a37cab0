"""lax's composite functions (collapse, broadcast_like, mulhi, shape_as_value,
platform_dependent, scatter_apply) against real JAX on the same inputs."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jax
from jax import lax as jl
import xform
from xform import lax as xl


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32])
def test_mulhi_matches_jax(dt):
    info = np.iinfo(dt)
    rng = np.random.RandomState(0)
    a = rng.randint(info.min, info.max, size=(64,), dtype=np.int64).astype(dt)
    b = rng.randint(info.min, info.max, size=(64,), dtype=np.int64).astype(dt)
    edge = [info.min, info.max, 0, 1, info.max // 2 + 1]
    a[:5], b[:5] = edge, edge[::-1]
    got, want = xl.mulhi(a, b), jl.mulhi(a, b)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_array_equal(np.asarray(xform.jit(xform.vmap(xl.mulhi))(a, b)),
                                  np.asarray(want))


@settings(max_examples=60, deadline=None)
@given(st.integers(-2**31, 2**31 - 1), st.integers(-2**31, 2**31 - 1))
def test_mulhi_is_the_high_word_of_the_exact_product(x, y):
    got = int(xl.mulhi(np.int32(x), np.int32(y)))
    assert got == (x * y) >> 32
    ux, uy = x % 2**32, y % 2**32
    assert int(xl.mulhi(np.uint32(ux), np.uint32(uy))) == (ux * uy) >> 32


def test_mulhi_rejects_mixed_and_float_dtypes():
    with pytest.raises(TypeError, match="same integer dtype"):
        xl.mulhi(np.int32(1), np.uint32(1))
    with pytest.raises(TypeError, match="same integer dtype"):
        xl.mulhi(np.float32(1), np.float32(1))


def test_collapse_broadcast_like_shape_as_value():
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    for args in [(0, 2), (1,), (0, None), (-2,), (1, 1), (0, 3)]:
        np.testing.assert_array_equal(np.asarray(xl.collapse(x, *args)),
                                      np.asarray(jl.collapse(x, *args)))
    with pytest.raises(ValueError, match="Invalid dimension range"):
        xl.collapse(x, 2, 1)
    g = xform.grad(lambda v: (xl.collapse(v, 1) ** 2).sum())(x)
    np.testing.assert_allclose(np.asarray(g), 2 * x)
    a, like = np.array([1, 2, 3], np.int32), np.zeros((2, 3), np.float32)
    got, want = xl.broadcast_like(a, like), jl.broadcast_like(a, like)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    for shape in [(2, 3), (), (5,)]:
        got, want = np.asarray(xl.shape_as_value(shape)), np.asarray(jl.shape_as_value(shape))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_platform_dependent_picks_the_running_platform():
    x = np.arange(6.0, dtype=np.float32)
    plat = xform.devices()[0].platform
    here = "cpu" if plat == "cpu" else "cuda"
    other = "tpu"
    for f in (lambda v: v, xform.jit):
        pick = f(lambda v: xl.platform_dependent(v, **{here: lambda u: u.sum(),
                                                       other: lambda u: u.max()}))
        assert float(pick(x)) == 15.0
        dflt = f(lambda v: xl.platform_dependent(v, **{other: lambda u: u.sum()},
                                                 default=lambda u: u.max()))
        assert float(dflt(x)) == 5.0
    want = jax.jit(lambda v: jl.platform_dependent(v, **{here: lambda u: u.sum()},
                                                   default=lambda u: u.max()))(x)
    assert float(want) == 15.0
    with pytest.raises(ValueError, match="cuda"):
        xl.platform_dependent(x, gpu=lambda u: u)
    with pytest.raises(NotImplementedError, match="default"):
        xl.platform_dependent(x, **{other: lambda u: u})
    g = xform.grad(lambda v: xl.platform_dependent(v, default=lambda u: (u ** 2).sum()))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * x)


def test_type_aliases():
    assert xl.DotDimensionNumbers == jl.DotDimensionNumbers
    assert xl.Precision in xl.PrecisionLike.__args__ and str in xl.PrecisionLike.__args__
    assert len(xl.PrecisionLike.__args__) == len(jl.PrecisionLike.__args__)


def _sdn(lax_, **kw):
    return lax_.ScatterDimensionNumbers(**kw)


@pytest.mark.parametrize("mode", [None, "drop", "clip", "promise_in_bounds"])
def test_scatter_apply_matches_jax(mode):
    x = np.arange(10.0, dtype=np.float32)
    idx = np.array([[1], [3], [3], [7], [12]], np.int32)   # a duplicate, an out-of-bounds
    if mode == "promise_in_bounds":
        idx = idx[:4]
    kw = dict(update_window_dims=(), inserted_window_dims=(0,),
              scatter_dims_to_operand_dims=(0,))
    n = idx.shape[0]
    for fx, fj in [(lambda v: v * 2 + 1, lambda v: v * 2 + 1), (xform.numpy.sin, jax.numpy.sin)]:
        got = xform.jit(lambda v: xl.scatter_apply(v, idx, fx, _sdn(xl, **kw),
                                                   update_shape=(n,), mode=mode))(x)
        want = jl.scatter_apply(x, idx, fj, _sdn(jl, **kw), update_shape=(n,), mode=mode)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    # windows: rows of a matrix
    m = np.arange(12, dtype=np.int32).reshape(4, 3)
    kw2 = dict(update_window_dims=(1,), inserted_window_dims=(0,),
               scatter_dims_to_operand_dims=(0,))
    ridx = np.array([[0], [2], [2]], np.int32)
    got = xl.scatter_apply(m, ridx, lambda v: v * 10, _sdn(xl, **kw2), update_shape=(3, 3),
                           mode=mode)
    want = jl.scatter_apply(m, ridx, lambda v: v * 10, _sdn(jl, **kw2), update_shape=(3, 3),
                            mode=mode)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_scatter_apply_is_differentiable():
    # JAX 0.10.2 has no JVP rule for scatter_apply; check ours against calculus
    x = np.linspace(0.1, 1.0, 6).astype(np.float32)
    idx = np.array([[1], [4]], np.int32)
    dn = _sdn(xl, update_window_dims=(), inserted_window_dims=(0,),
              scatter_dims_to_operand_dims=(0,))
    g = xform.grad(lambda v: xl.scatter_apply(v, idx, xform.numpy.sin, dn, update_shape=(2,),
                                              unique_indices=True).sum())(x)
    want = np.ones(6, np.float32)
    want[[1, 4]] = np.cos(x[[1, 4]])
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6)
    dup = np.array([[1], [1]], np.int32)
    _, t = xform.jvp(lambda v: xl.scatter_apply(v, dup, xform.numpy.sin, dn, update_shape=(2,)),
                     (x,), (np.ones(6, np.float32),))
    np.testing.assert_allclose(float(t[1]), np.cos(np.sin(x[1])) * np.cos(x[1]), rtol=1e-5)
    vm = xform.vmap(lambda v: xl.scatter_apply(v, dup, lambda u: u + 1, dn, update_shape=(2,)))
    np.testing.assert_allclose(np.asarray(vm(np.stack([x, 2 * x])))[:, 1], [x[1] + 2,
                                                                         2 * x[1] + 2])

"""Numerics and shape-arithmetic corner cases compared with JAX 0.10.2: jnp.cross of 2- and
mixed 2/3-vectors, frexp of float32 subnormals, matrix_rank's rtol, integer power,
repeat's argument checks, reduce_window / conv shape tuples and stax's init shapes."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from jax.example_libraries import stax as jstax

import xform
import xform.numpy as xnp
from xform.example_libraries import stax as xstax


def _outcome(f):
    try:
        r = f()
    except Exception as e:   # noqa: BLE001 - the exception type and text are the result
        return type(e).__name__, str(e).split(" Convert lists")[0]
    return r


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    if isinstance(a, str):
        assert a == b
        return
    assert np.asarray(a).dtype == np.asarray(b).dtype, (a, b)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("sa,sb,kw", [
    ((2,), (2,), {}), ((2,), (3,), {}), ((3,), (2,), {}), ((4, 2), (4, 2), {}),
    ((4, 2), (1, 3), {}), ((2, 3), (3, 2), dict(axisa=0, axisb=1)),
    ((4, 2), (4, 3), dict(axisc=0)), ((3, 4), (3, 4), dict(axis=0)), ((4,), (3,), {}),
    ((5, 3), (5, 3), {})])
def test_cross_matches_jax(sa, sb, kw):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.int32)
    want = _outcome(lambda: jnp.cross(a, b, **kw))
    _same(want, _outcome(lambda: xnp.cross(a, b, **kw)))
    if not isinstance(want, tuple):
        _same(want, xform.jit(lambda a, b: xnp.cross(a, b, **kw))(a, b))


def test_frexp_float32_subnormals_match_jax():
    d = np.array([1e-40, -3e-42, 1.4e-45, 0., -0., 1., 5e-39, np.inf, -np.inf, np.nan,
                  1.2e-38, 3.5], np.float32)
    want = jnp.frexp(d)
    _same(tuple(want), tuple(xnp.frexp(d)))
    _same(tuple(want), tuple(xform.jit(xnp.frexp)(d)))
    import ml_dtypes
    for small in (np.array([3e-6, -1e-7, 1.0], np.float16),
                  np.array([1e-39, -2e-40, 1.0], ml_dtypes.bfloat16)):
        _same(tuple(jnp.frexp(small)), tuple(xnp.frexp(small)))
    d64 = np.array([1e-310, -5e-324, 2.0], np.float64)
    with jax.enable_x64(True), xform.enable_x64(True):
        _same(tuple(jnp.frexp(d64)), tuple(xnp.frexp(d64)))


@given(hnp.arrays(np.float32, (3, 3), elements=st.floats(-4, 4, width=32)),
       st.sampled_from([None, 1e-7, 1e-3, 0.5, 2.0]))
def test_matrix_rank_rtol_matches_jax(m, rtol):
    m = m @ np.diag(np.array([1, 1e-3, 1e-6], np.float32))
    _same(jnp.linalg.matrix_rank(m, rtol=rtol), xnp.linalg.matrix_rank(m, rtol=rtol))
    _same(jnp.linalg.matrix_rank(m, tol=rtol), xnp.linalg.matrix_rank(m, tol=rtol))


def test_matrix_rank_array_rtol_and_both_tolerances():
    m = np.diag(np.array([1, 1e-3, 1e-6], np.float32))
    ms, r = np.stack([m, m]), np.array([1e-2, 1e-8])
    _same(jnp.linalg.matrix_rank(ms, rtol=r), xnp.linalg.matrix_rank(ms, rtol=r))
    with pytest.raises(ValueError, match="only one of tol or rtol"):
        xnp.linalg.matrix_rank(m, rtol=1e-3, tol=1e-3)


@pytest.mark.parametrize("x1,x2", [
    (2, -1), (np.array([2, 1, 0, -1]), -1), (np.int32(3), -2),
    (np.array([2, 1, -1, 3, 0, 0, 2], np.int32), np.array([-1, -2, -3, -1, 0, -1, 64])),
    (np.array([2, 3]), np.array(3)), (np.array([2., 3.]), np.array([3, 2])),
    (np.array([True, False]), np.array([True, True])),
    (np.array([2, 3], np.uint8), np.array([3, 2], np.uint8)), (2, np.array([3, 2])),
    (2.5, 2), (np.array([2, 3]), np.float32(2)), (np.array([2, 3]), np.int8(2))])
def test_power_matches_jax(x1, x2):
    want = _outcome(lambda: jnp.power(x1, x2))
    got = _outcome(lambda: xnp.power(x1, x2))
    _same(want, got)
    if not isinstance(want, tuple):
        assert got.weak_type == want.aval.weak_type


def test_integer_power_of_traced_exponents_matches_jax():
    a, b = np.array([2, 3, -1, 5]), np.array([3, -1, -3, 70])
    _same(jax.jit(lambda a, b: a ** b)(a, b), xform.jit(lambda a, b: a ** b)(a, b))
    _same(jax.vmap(lambda e: jnp.power(a, e))(b), xform.vmap(lambda e: xnp.power(a, e))(b))


@pytest.mark.parametrize("a,r,kw", [
    (np.arange(3), [1, 2, 3], {}), (np.arange(6).reshape(2, 3), [1, 2], dict(axis=0)),
    (np.arange(3), (2,), {}), ([1, 2], 2, {}), (np.arange(3), np.array([1, 0, 2]), {}),
    (np.arange(3), 2, dict(total_repeat_length=6))])
def test_repeat_arguments_match_jax(a, r, kw):
    _same(_outcome(lambda: jnp.repeat(a, r, **kw)), _outcome(lambda: xnp.repeat(a, r, **kw)))


@pytest.mark.parametrize("args", [
    ((-1, 8, 8, 8), (1, 2, 2, 1), (1, 2, 2, 1), [(0, 0)] * 4),
    ((-1, 8, 8, 8), (1, 2, 2, 1), (1, 2, 2, 1), [(0, 0)] * 4, (1, 2, 2, 1), (1, 1, 2, 1)),
    ((5, 8), (2, 2), (1, 1), [(-3, -3), (0, 0)]),
    ((5, 8), (3, 2), (2, 3), [(1, 2), (0, 1)])])
def test_reduce_window_shape_tuple_matches_jax(args):
    want = jax.lax.reduce_window_shape_tuple(*args)
    got = xform.lax.reduce_window_shape_tuple(*args)
    assert got == want and [type(d) for d in got] == [type(d) for d in want]


def test_conv_shape_tuples_match_jax_values_and_types():
    dn = ("NHWC", "HWIO", "NHWC")
    for f, args in [("conv_shape_tuple", ((-1, 3, 8, 8), (4, 3, 3, 3), (1, 1), [(0, 0)] * 2)),
                    ("conv_general_shape_tuple", ((-1, 8, 8, 3), (3, 3, 3, 4), (2, 2), "SAME",
                                                  dn)),
                    ("conv_transpose_shape_tuple", ((-1, 8, 8, 3), (3, 3, 3, 4), (2, 2),
                                                    "SAME", dn))]:
        want, got = getattr(jax.lax, f)(*args), getattr(xform.lax, f)(*args)
        assert repr(got) == repr(want), f


def test_stax_pool_and_conv_init_shapes_match_jax():
    shape = (-1, 8, 8, 3)
    for name, kw in [("MaxPool", {}), ("AvgPool", dict(strides=(2, 2))),
                     ("SumPool", dict(padding="SAME"))]:
        want = getattr(jstax, name)((2, 2), **kw)[0](jax.random.key(0), shape)[0]
        got = getattr(xstax, name)((2, 2), **kw)[0](xform.random.key(0), shape)[0]
        assert repr(got) == repr(want), name
    want = jstax.Conv(4, (3, 3))[0](jax.random.key(0), shape)[0]
    got = xstax.Conv(4, (3, 3))[0](xform.random.key(0), shape)[0]
    assert repr(got) == repr(want)

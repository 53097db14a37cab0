"""Behaviours found by running JAX's own jax.numpy / lax test files against xform
(tools/jax_tests), each compared with real JAX."""
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp


def test_parse_flags_with_absl_is_public_config_api(monkeypatch):
    # JAX's test files call jax.config.parse_flags_with_absl() at import.
    assert callable(jax.config.parse_flags_with_absl)
    monkeypatch.setattr(sys, "argv", ["prog", "-q", "--other=1",
                                      "--jax_numpy_rank_promotion=raise",
                                      "--jax_enable_checks"])
    old_rank = xform.config.jax_numpy_rank_promotion
    old_checks = xform.config.jax_enable_checks
    try:
        xform.config.parse_flags_with_absl()
        assert xform.config.jax_numpy_rank_promotion == "raise"
        assert xform.config.jax_enable_checks is True
    finally:
        xform.config.update("jax_numpy_rank_promotion", old_rank)
        xform.config.update("jax_enable_checks", old_checks)


def test_parse_flags_with_absl_without_jax_flags_changes_nothing(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["prog", "-q", "tests/x.py"])
    before = dict(xform.config._values)
    xform.config.parse_flags_with_absl()
    assert dict(xform.config._values) == before


def _jnp_ufunc_names(mod):
    return sorted(n for n in dir(mod) if isinstance(getattr(mod, n), mod.ufunc))


def test_the_same_functions_are_ufunc_objects_as_in_jax():
    assert _jnp_ufunc_names(xnp) == _jnp_ufunc_names(jnp)
    for name in _jnp_ufunc_names(jnp):
        x, j = getattr(xnp, name), getattr(jnp, name)
        assert (x.nin, x.nout, x.nargs, x.__name__) == (j.nin, j.nout, j.nargs, j.__name__)
        assert type(x.identity) is type(j.identity) and x.identity == j.identity


@pytest.mark.parametrize("attr", ["nargs", "nin", "nout", "identity", "_func"])
def test_ufunc_attributes_are_read_only(attr):
    for u in (xnp.add, xnp.negative, xnp.frompyfunc(lambda a, b: a * b, 2, 1, identity=1)):
        getattr(u, attr)
        with pytest.raises(AttributeError):
            setattr(u, attr, None)


def test_ufunc_objects_compute_like_jax():
    a = np.arange(12.0).reshape(3, 4)
    b = np.linspace(-1, 1, 4)
    for name in ("add", "multiply", "maximum", "minimum", "subtract", "logaddexp"):
        x, j = getattr(xnp, name), getattr(jnp, name)
        np.testing.assert_allclose(x(a, b), j(a, b), rtol=1e-6)
        np.testing.assert_allclose(x.outer(b, b), j.outer(b, b), rtol=1e-6)
        np.testing.assert_allclose(x.reduce(a, axis=1), j.reduce(a, axis=1), rtol=1e-6)
        np.testing.assert_allclose(x.accumulate(a, axis=0), j.accumulate(a, axis=0),
                                   rtol=1e-6)
        np.testing.assert_allclose(xform.jit(x)(a, b), j(a, b), rtol=1e-6)
    np.testing.assert_array_equal(xnp.negative.at(np.arange(3.0), 1, inplace=False),
                                  jnp.negative.at(np.arange(3.0), 1, inplace=False))
    with pytest.raises(ValueError):
        xnp.negative.reduce(np.arange(3.0))
    with pytest.raises(ValueError):
        jnp.negative.reduce(np.arange(3.0))


# ----------------------------------------------------------------- reductions

def _raises_like_jax(fn_x, fn_j, exc, match):
    with pytest.raises(exc, match=match):
        fn_j()
    with pytest.raises(exc, match=match):
        fn_x()


@pytest.mark.parametrize("name", ["sum", "prod", "max", "nansum", "nanmax", "nanmin", "mean",
                                  "var", "std", "nanmean", "nanvar", "any", "all"])
def test_reduction_where_must_be_boolean(name):
    x = np.zeros(10, np.float32)
    where = np.ones(10, np.int32)
    kw = {"initial": 0.0} if name in ("max", "nanmax", "nanmin") else {}
    _raises_like_jax(lambda: getattr(xnp, name)(x, where=where, **kw),
                     lambda: getattr(jnp, name)(x, where=where, **kw), ValueError,
                     f"jnp.{name}: where must be None or a boolean array")


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min"])
def test_reduction_initial_must_be_scalar(name):
    a, init = np.ones((2, 3, 4), np.float32), np.zeros((1, 2, 3), np.float32)
    _raises_like_jax(lambda: getattr(xnp, name)(a, axis=-1, initial=init),
                     lambda: getattr(jnp, name)(a, axis=-1, initial=init), ValueError,
                     r"initial value must be a scalar. Got array of shape \(1, 2, 3\)")


def test_reduction_duplicate_axis_message():
    _raises_like_jax(lambda: xnp.sum(np.ones((2, 2)), axis=(0, 0)),
                     lambda: jnp.sum(np.ones((2, 2)), axis=(0, 0)), ValueError,
                     r"duplicate value in 'axis': \(0, 0\)")


@pytest.mark.parametrize("name", ["nanmax", "nanmin"])
def test_nanmax_nanmin_take_initial_and_where(name):
    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]], np.float32)
    where = np.array([[True, True, False], [True, False, True]])
    for kw in ({"initial": 2.0}, {"initial": -5.0, "where": where}, {}):
        np.testing.assert_array_equal(getattr(xnp, name)(x, axis=1, **kw),
                                      getattr(jnp, name)(x, axis=1, **kw))


def test_var_std_mean_argument_ddof_correction_and_dof_below_one():
    x = np.random.RandomState(0).randn(4, 5).astype(np.float32)
    m = x.mean(axis=1, keepdims=True) + 0.5
    for name in ("var", "std", "nanvar", "nanstd"):
        np.testing.assert_allclose(getattr(xnp, name)(x, axis=1, mean=m),
                                   getattr(jnp, name)(x, axis=1, mean=m), rtol=1e-6)
        # more degrees of freedom removed than there are samples: NaN, as in JAX
        np.testing.assert_array_equal(getattr(xnp, name)(x, axis=1, ddof=7),
                                      getattr(jnp, name)(x, axis=1, ddof=7))
    _raises_like_jax(lambda: xnp.var(x, ddof=1, correction=0),
                     lambda: jnp.var(x, ddof=1, correction=0), ValueError,
                     "ddof and correction can't be provided simultaneously")
    z = (x + 1j * x).astype(np.complex64)
    for dt in (None, np.complex64):
        a, b = xnp.var(z, axis=0, dtype=dt), jnp.var(z, axis=0, dtype=dt)
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-5)
    _raises_like_jax(lambda: xnp.var(z, dtype=np.float32),
                     lambda: jnp.var(z, dtype=np.float32), ValueError,
                     "does not yet support real dtype parameters")


@pytest.mark.parametrize("name", ["sum", "prod", "mean"])
def test_half_precision_reduction_with_dtype_has_no_casts(name):
    x = np.ones(10, np.float16)
    for kw in ({}, {"dtype": np.float16}):
        prims = lambda jaxpr: [str(e.primitive) for e in jaxpr.eqns]
        f_x = lambda v: getattr(xnp, name)(v, **kw)
        f_j = lambda v: getattr(jnp, name)(v, **kw)
        assert prims(xform.make_jaxpr(f_x)(x).jaxpr) == prims(jax.make_jaxpr(f_j)(x).jaxpr)


def test_complex_max_min_over_empty_output_compile():
    x = np.zeros((0, 3), np.complex64)
    for name in ("max", "min"):
        a = xform.jit(lambda v: getattr(xnp, name)(v, axis=1))(x)
        b = jax.jit(lambda v: getattr(jnp, name)(v, axis=1))(x)
        assert a.shape == b.shape and a.dtype == b.dtype
    y = np.array([[1 + 2j, 1 + 3j], [2 - 1j, 0j]], np.complex64)
    np.testing.assert_array_equal(xform.jit(lambda v: xnp.max(v, axis=0))(y),
                                  jax.jit(lambda v: jnp.max(v, axis=0))(y))


def test_cumulative_sum_error_messages():
    _raises_like_jax(lambda: xnp.cumulative_sum(np.float32(1)),
                     lambda: jnp.cumulative_sum(np.float32(1)), ValueError,
                     "The input must be non-scalar to take")
    _raises_like_jax(lambda: xnp.cumulative_sum(np.ones((2, 2))),
                     lambda: jnp.cumulative_sum(np.ones((2, 2))), ValueError,
                     r"The input array has rank \d*, however")


# ----------------------------------------------------------------- elementwise

@pytest.mark.parametrize("name", ["fmod", "mod", "remainder"])
@pytest.mark.parametrize("dt", [np.int8, np.int32, np.uint8])
def test_integer_modulo_by_zero_is_zero(name, dt):
    a = np.array([5, 3, 7, 0, 9], dt)
    b = np.array([0, 0, 3, 0, 4], dt)
    np.testing.assert_array_equal(getattr(xnp, name)(a, b), getattr(jnp, name)(a, b))
    np.testing.assert_array_equal(xform.jit(getattr(xnp, name))(a, b),
                                  jax.jit(getattr(jnp, name))(a, b))


def test_heaviside_of_nan_is_nan():
    x = np.array([np.nan, -np.inf, -1, 0, 1, np.inf], np.float32)
    for args in ((np.float32(np.nan), x), (x, np.float32(np.nan)), (x, x)):
        np.testing.assert_array_equal(xnp.heaviside(*args), jnp.heaviside(*args))


# ----------------------------------------------------------------- vectorize

def test_vectorize_errors_as_jax():
    for bad in ({1.5}, {-1}):
        exc = TypeError if bad == {1.5} else ValueError
        with pytest.raises(exc) as ej:
            jnp.vectorize(lambda x: x, excluded=bad)
        with pytest.raises(exc) as ex:
            xnp.vectorize(lambda x: x, excluded=bad)
        assert str(ex.value) == str(ej.value)
    f = lambda m: m.vectorize(lambda x, y: x if y is None else x + y,
                              signature="(k),(k)->(k)")
    with pytest.raises(ValueError) as ej:
        f(jnp)(jnp.arange(10), None)
    with pytest.raises(ValueError) as ex:
        f(xnp)(xnp.arange(10), None)
    assert str(ex.value) == str(ej.value)


def test_vectorize_refuses_rank_promotion_when_configured():
    for mod, lib in ((jnp, jax), (xnp, xform)):
        g = mod.vectorize(mod.add, signature="(),()->()")
        with lib.numpy_rank_promotion("raise"):
            with pytest.raises(ValueError, match="operands with shapes .* require rank "
                                                 "promotion"):
                g(mod.zeros((10, 10)), mod.zeros(10))
            assert g(mod.zeros((10, 10)), mod.zeros(())).shape == (10, 10)
        assert g(mod.zeros((10, 10)), mod.zeros(10)).shape == (10, 10)


# ----------------------------------------------------------------- set operations

def test_setdiff1d_keeps_the_first_arguments_dtype():
    a = np.array([1, 2, 3, 4], np.int16)
    b = np.array([2.0, 5.0], np.float32)
    for kw in ({}, {"size": 3}, {"assume_unique": True}):
        x, j = xnp.setdiff1d(a, b, **kw), jnp.setdiff1d(a, b, **kw)
        assert x.dtype == j.dtype
        np.testing.assert_array_equal(x, j)


@pytest.mark.parametrize("kw", [{}, {"size": 2}, {"size": 5}, {"size": 5, "fill_value": 99}])
def test_setxor1d_assume_unique_keeps_values_seen_once(kw):
    a, b = np.array([1, 2, 3, 3]), np.array([[2, 9]])
    np.testing.assert_array_equal(xnp.setxor1d(a, b, assume_unique=True, **kw),
                                  jnp.setxor1d(a, b, assume_unique=True, **kw))


def test_reshape_method_takes_any_sized_sequence_as_the_shape():
    class Empty:            # a zero-length sequence (JAX's tests pass such shape objects)
        def __len__(self):
            return 0

        def __getitem__(self, i):
            raise IndexError(i)
    assert xnp.arange(1).reshape(Empty()).shape == jnp.arange(1).reshape(Empty()).shape
    assert xnp.arange(6).reshape(np.array([2, 3])).shape == (2, 3)
    assert xnp.arange(6).reshape(2, 3).shape == (2, 3)
    assert xnp.arange(6).reshape(6).shape == (6,)


# ----------------------------------------------------------------- xform.ds

def _ds_cases(m, ds):
    return [lambda a, i: a[ds(i, 2)], lambda a, i: a[1, ds(i, 3)],
            lambda a, i: a[ds(i, 2, 2)], lambda a, i: a[None, ..., ds(i, 3)],
            lambda a, i: a.at[ds(i, 2)].set(0.0), lambda a, i: a.at[ds(i, 2)].add(1.0),
            lambda a, i: a.at[1:, ds(i, 2, 2)].set(-1.0),
            lambda a, i: a.at[ds(i, 2)].get(mode="fill", fill_value=-7)]


@pytest.mark.parametrize("case", range(8))
def test_ds_indexes_like_jax(case):
    x = np.arange(20.0).reshape(4, 5)
    fx, fj = _ds_cases(xnp, xform.ds)[case], _ds_cases(jnp, jax.ds)[case]
    for i in (0, 1, 3, -1, -2, 7, -9):
        want = jax.jit(fj)(x, i)
        np.testing.assert_array_equal(xform.jit(fx)(x, i), want)
        np.testing.assert_array_equal(fx(xnp.asarray(x), i), fj(jnp.asarray(x), i))


def test_ds_constructor_like_jax():
    assert xform.ds(None) == slice(None) == jax.ds(None)
    for args in ((3,), (1, 3), (1, 3, 2)):
        a, b = xform.ds(*args), jax.ds(*args)
        assert (a.start, a.size, a.stride) == (b.start, b.size, b.stride)
    with pytest.raises(ValueError):
        xform.ds(1, 2, -1)
    with pytest.raises(ValueError):
        jax.ds(1, 2, -1)


def test_einsum_refuses_a_path_contracting_three_operands_at_once():
    a, b, c = np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 5))
    for mod in (jnp, xnp):
        with pytest.raises(NotImplementedError, match="does not support simultaneous "
                                                      "contraction of 3 or more operands"):
            mod.einsum("ij,ik,il->jkl", a, b, c, optimize=[(0, 1, 2)])
    for opt in (False, True, "greedy", [(0, 1), (0, 1)]):
        np.testing.assert_allclose(xnp.einsum("ij,ik,il->jkl", a, b, c, optimize=opt),
                                   jnp.einsum("ij,ik,il->jkl", a, b, c, optimize=opt))


def test_ufunc_outer_is_not_rank_promotion():
    f = lambda a, b: a * b
    a, b = np.arange(6.0).reshape(3, 2), np.arange(3.0)
    for mod, lib in ((jnp, jax), (xnp, xform)):
        u = mod.frompyfunc(f, nin=2, nout=1, identity=1)
        with lib.numpy_rank_promotion("raise"):
            out = u.outer(a, b)
            np.testing.assert_allclose(out, np.multiply.outer(a, b))
            np.testing.assert_allclose(mod.add.outer(a, b), np.add.outer(a, b))


@pytest.mark.parametrize("name", ["add", "maximum", "subtract", "multiply"])
def test_ufunc_reduceat_takes_traced_and_empty_indices(name):
    x = np.arange(12.0).reshape(3, 4)
    for idx in ([0, 2], [1, 1, 3], [3, 0], []):
        for ax in (0, 1, -1):
            i = np.array(idx, np.int32)
            if len(idx) and max(idx) >= x.shape[ax]:
                continue
            want = getattr(jnp, name).reduceat(x, i, axis=ax)
            got = xform.jit(lambda v, j: getattr(xnp, name).reduceat(v, j, axis=ax))(x, i)
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want)
            np.testing.assert_allclose(getattr(xnp, name).reduceat(x, i, axis=ax), want)


def test_lax_dtype_is_the_canonical_dtype():
    import ml_dtypes
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for v in (3, True, 3j, 1.0, np.array(3, np.int16), np.uint64, np.float64, "bfloat16",
                  np.dtype("int8"), ml_dtypes.bfloat16, int, float, np.ones(2, "int8")):
            assert xform.lax.dtype(v) == jax.lax.dtype(v), v
    assert xform.lax.dtype(xnp.ones(2, "int8")) == np.int8


# ----------------------------------------------------------------- Array methods

_VIEW_DTYPES = ["bool", "int8", "uint8", "int16", "float16", "bfloat16", "int32", "uint32",
                "float32", "complex64"]


@pytest.mark.parametrize("src", _VIEW_DTYPES)
def test_array_view_reinterprets_bits_like_jax(src):
    rng = np.random.RandomState(0)
    # the bytes of finite float32 values: every float32/complex64 view of them is finite
    raw = rng.randn(64 * 2).astype(np.float32)
    x = (rng.rand(64) < 0.5) if src == "bool" else \
        np.frombuffer(raw.tobytes(), dtype=jnp.dtype(src))[:64]
    x = x.reshape(2, -1)
    for dst in _VIEW_DTYPES:
        if src == "bool" and dst == "complex64":
            continue        # subnormal float pairs: XLA's CPU complex() may flush them
        want = np.asarray(jnp.asarray(x).view(dst))
        for got in (xnp.asarray(x).view(dst), xform.jit(lambda v: v.view(dst))(x)):
            got = np.asarray(got)
            assert (got.shape, got.dtype) == (want.shape, want.dtype), (src, dst)
            assert got.tobytes() == want.tobytes(), (src, dst)


def test_array_byteswap_contains_compress_argpartition_itemsize():
    x = np.arange(12, dtype=np.int32).reshape(3, 4) * 1000 + 7
    for dt in ("int32", "float32", "int16", "uint8", "bool", "complex64"):
        v = x.astype(dt)
        np.testing.assert_array_equal(xnp.asarray(v).byteswap(), jnp.asarray(v).byteswap())
    a, j = xnp.arange(4), jnp.arange(4)
    assert (1 in a) == (1 in j) and (100 in a) == (100 in j)
    for bad, exc in ((xnp.array(1), ValueError), (None, TypeError), ("abc", TypeError)):
        with pytest.raises(exc, match="Array.__contains__"):
            if exc is ValueError:
                1 in bad
            else:
                bad in a
    with pytest.raises(ValueError, match="query value must be a scalar"):
        xnp.arange(2) in a
    cond = np.array([True, False, True])
    np.testing.assert_array_equal(xnp.asarray(x).compress(cond, axis=0),
                                  jnp.asarray(x).compress(cond, axis=0))
    v = np.array([5, 1, 4, 2, 3])
    np.testing.assert_array_equal(np.sort(np.asarray(xnp.asarray(v).argpartition(2))[:2]),
                                  np.sort(np.asarray(jnp.asarray(v).argpartition(2))[:2]))
    sizes = xform.jit(lambda t: t * 0 + t.itemsize + t.nbytes)(np.ones(3, np.float32))
    np.testing.assert_array_equal(sizes, np.full(3, 4 + 12, np.float32))


@pytest.mark.parametrize("op", ["get", "set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("mode", [None, "fill", "clip", "drop"])
def test_at_wrap_negative_indices_false(op, mode):
    x = np.arange(1.0, 6.0)
    for idx in (np.array([-1, 2, -5]), -1, (np.array([-2]),)):
        args = () if op == "get" else (10.0,)
        kw = {"mode": mode}
        if op == "get" and mode == "fill":
            kw["fill_value"] = -9.0
        want = getattr(jnp.asarray(x).at[idx], op)(*args, wrap_negative_indices=False, **kw)
        got = getattr(xnp.asarray(x).at[idx], op)(*args, wrap_negative_indices=False, **kw)
        np.testing.assert_array_equal(got, want)
    i = np.array([-1, 3], np.int32)
    f = lambda m: lambda v, j: getattr(m.asarray(v).at[j], op)(
        *(() if op == "get" else (10.0,)), wrap_negative_indices=False, mode=mode)
    np.testing.assert_array_equal(xform.jit(f(xnp))(x, i), jax.jit(f(jnp))(x, i))


def test_lax_scatter_sub():
    x = np.arange(10.0)
    idx, up = np.array([[1], [3], [3]]), np.array([1.0, 2.0, 3.0])
    kw = dict(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    dj = jax.lax.ScatterDimensionNumbers(**kw)
    dx = xform.lax.ScatterDimensionNumbers(**kw)
    np.testing.assert_array_equal(xform.lax.scatter_sub(x, idx, up, dx),
                                  jax.lax.scatter_sub(x, idx, up, dj))
    np.testing.assert_array_equal(
        xform.grad(lambda u: xform.lax.scatter_sub(x, idx, u, dx).sum())(up),
        jax.grad(lambda u: jax.lax.scatter_sub(x, idx, u, dj).sum())(up))


def test_ragged_dot_dimension_numbers_record():
    args = ([[[1], [0]], [[], []]], [0], [0])
    x, j = xform.lax.RaggedDotDimensionNumbers(*args), jax.lax.RaggedDotDimensionNumbers(*args)
    for f in ("dot_dimension_numbers", "lhs_ragged_dimensions", "rhs_group_dimensions"):
        assert getattr(x, f) == getattr(j, f)
    assert x == xform.lax.RaggedDotDimensionNumbers(*args) and hash(x) == hash(
        xform.lax.RaggedDotDimensionNumbers(*args))
    with pytest.raises(AttributeError):
        x.lhs_ragged_dimensions = (1,)


# ----------------------------------------------------------------- keyword arguments

def test_dtype_and_size_keywords_like_jax():
    a = np.array([3, 1, 2])
    for mod in (xnp, jnp):
        assert mod.argsort(a, dtype="int16").dtype == np.int16
    np.testing.assert_array_equal(xnp.argsort(a, dtype="int16"), jnp.argsort(a, dtype="int16"))
    mi = (np.array([1, 2]), np.array([0, 1]))
    x, j = (m.ravel_multi_index(mi, (3, 4), dtype="int16") for m in (xnp, jnp))
    assert x.dtype == j.dtype
    np.testing.assert_array_equal(x, j)
    c = np.array([0, 1, 1, 0])
    np.testing.assert_array_equal(xnp.where(c, size=3, fill_value=-1)[0],
                                  jnp.where(c, size=3, fill_value=-1)[0])
    with pytest.raises(ValueError):
        xnp.where(c, 1, 2, size=3)


def test_cov_corrcoef_dtype_weights_and_empty_inputs():
    m = np.random.RandomState(0).randn(3, 5)
    for dt in (None, "float32"):
        for f in ("cov", "corrcoef"):
            x, j = getattr(xnp, f)(m, dtype=dt), getattr(jnp, f)(m, dtype=dt)
            assert x.dtype == j.dtype
            np.testing.assert_allclose(x, j, rtol=1e-5)
    fw, aw = np.array([1, -2, 3, 1, 1]), np.array([0.5, 1, -2, 1, 1])
    np.testing.assert_allclose(xnp.cov(m, fweights=fw, aweights=aw),
                               jnp.cov(m, fweights=fw, aweights=aw), rtol=1e-5)
    with pytest.raises(ValueError):
        xnp.cov(m, dtype="int32")
    for shp in [(0,), (3, 0), (0, 5), (1, 0)]:
        for rv in (True, False):
            a = np.zeros(shp, np.float32)
            x, j = xnp.cov(a, rowvar=rv), jnp.cov(a, rowvar=rv)
            assert x.shape == j.shape
            np.testing.assert_array_equal(x, j)


def test_lax_tile_stack_unstack():
    x = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(xform.lax.tile(x, (2, 3)), jax.lax.tile(x, (2, 3)))
    for ax in (0, 1, 2, -1):
        np.testing.assert_array_equal(xform.lax.stack([x, x + 1], ax),
                                      jax.lax.stack([x, x + 1], ax))
    for ax in (0, 1, -1):
        for a, b in zip(xform.lax.unstack(x, ax), jax.lax.unstack(x, ax), strict=True):
            np.testing.assert_array_equal(a, b)
    batched = np.arange(24.0).reshape(4, 2, 3)
    np.testing.assert_array_equal(xform.vmap(lambda v: xform.lax.tile(v, (2, 1)))(batched),
                                  jax.vmap(lambda v: jax.lax.tile(v, (2, 1)))(batched))
    with pytest.raises(TypeError, match="reps length must be equal"):
        xform.lax.tile(x, (2,))
    with pytest.raises(ValueError, match="same shape"):
        xform.lax.stack([x, x[:1]])

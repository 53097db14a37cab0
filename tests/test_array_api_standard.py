"""The Python Array API standard's surface of xform.numpy, compared with jax.numpy.

Each behaviour here was found by running the standard's conformance suite
(data-apis/array-api-tests, see tools/run_array_api_tests.sh and docs/compatibility.md);
these tests check it without the suite.
"""
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp

SCALAR_TYPE_NAMES = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16",
                     "uint32", "uint64", "float16", "float32", "float64", "complex64",
                     "complex128", "bfloat16"]


def _outcome(f):
    try:
        return ("ok", f())
    except Exception as e:     # noqa: BLE001  (the exception type is what is compared)
        return ("raises", type(e).__name__)


# ----------------------------------------------------------------- dtype scalar types

def _others(mod):
    return [np.float32, np.dtype("float32"), "float32", "f", "f4", "float64", {"a": 1},
            {"x": (1, 2, 3, 4)}, {"names": ["a"], "formats": ["f4"]}, None, 1, 1.5, [1],
            (1, 2), ("f4", 2), np.int32, float, object(), np.dtype("int32"),
            mod.float32, mod.float64, mod.int32]


@pytest.mark.parametrize("name", SCALAR_TYPE_NAMES)
def test_scalar_type_equality_matches_jax(name):
    ours, theirs = getattr(xnp, name), getattr(jnp, name)
    for o_ours, o_jax in zip(_others(xnp), _others(jnp)):
        for op in (lambda a, b: a == b, lambda a, b: b == a, lambda a, b: a != b,
                   lambda a, b: b != a):
            got = _outcome(lambda: op(ours, o_ours))
            want = _outcome(lambda: op(theirs, o_jax))
            assert got == want, (name, o_jax, got, want)


def test_scalar_type_equality_never_raises_and_is_false_for_strings_and_dicts():
    assert (xnp.float32 == {"a": 1}) is False
    assert (xnp.float32 == {"x": (1, 2, 3, 4)}) is False   # np.dtype() raises ValueError
    assert (xnp.float32 == "f") is False and (jnp.float32 == "f") is False
    assert (xnp.float32 != "float32") is True
    assert xnp.float32 == np.float32 and xnp.float32 == np.dtype(np.float32)
    assert np.dtype(np.float32) == xnp.float32
    assert xnp.float32 == jnp.float32 and jnp.float32 == xnp.float32


@pytest.mark.parametrize("name", SCALAR_TYPE_NAMES)
def test_scalar_types_hash_like_numpy_scalar_types(name):
    ours, theirs = getattr(xnp, name), getattr(jnp, name)
    assert hash(ours) == hash(theirs) == hash(theirs.dtype.type)
    table = {ours: 1}
    assert table[theirs.dtype.type] == 1 and table[ours] == 1
    assert {theirs.dtype.type: 2}[ours] == 2
    # a family: sets and dict keys mix with NumPy's scalar types as in JAX
    assert len({ours, theirs.dtype.type}) == len({theirs, theirs.dtype.type}) == 1
    assert (ours in [theirs.dtype.type]) == (theirs in [theirs.dtype.type])


def test_scalar_types_in_equality_lookups_like_the_suite_makes():
    # array-api-tests keeps its dtype tables as lists of (dtype, name) pairs searched
    # with ==, and looks up every value it reports, dicts and strings included
    def lookup(pairs, probe):
        return [name for key, name in pairs if key == probe]
    ours = [(xnp.float32, "float32"), (xnp.int8, "int8")]
    theirs = [(jnp.float32, "float32"), (jnp.int8, "int8")]
    for probe in ({"a": 1}, {"x": (1, 2, 3, 4)}, "float32", "i1", 3, None, (1,), np.int8,
                  np.dtype("float32")):
        assert lookup(ours, probe) == lookup(theirs, probe), probe


# ----------------------------------------------------------------- namespace metadata

def test_array_api_version_and_namespace():
    assert xnp.__array_api_version__ == jnp.__array_api_version__
    x = xnp.ones(3)
    assert x.__array_namespace__() is xnp
    assert x.__array_namespace__(api_version=jnp.__array_api_version__) is xnp
    got = _outcome(lambda: x.__array_namespace__(api_version="2021.12"))
    want = _outcome(lambda: jnp.ones(3).__array_namespace__(api_version="2021.12"))
    assert got == want == ("raises", "ValueError")


def _info_views(mod):
    info = mod.__array_namespace_info__()
    kinds = [None, "bool", "signed integer", "unsigned integer", "integral",
             "real floating", "complex floating", "numeric", ("bool", "real floating"),
             ("signed integer", "complex floating")]
    return {
        "capabilities": info.capabilities(),
        "default_device": info.default_device(),
        "n_devices": len(info.devices()),
        "first_device": info.devices()[0],
        "default_dtypes": info.default_dtypes(),
        "default_dtypes_device": info.default_dtypes(device=None),
        "dtypes": [info.dtypes(kind=k) for k in kinds],
        "dtypes_device": info.dtypes(device=None),
    }


@pytest.mark.parametrize("x64", [False, True])
def test_namespace_info_matches_jax(x64):
    with jax.enable_x64(x64), xform.enable_x64(x64):
        assert _info_views(xnp) == _info_views(jnp)
        got = _outcome(lambda: xnp.__array_namespace_info__().dtypes(kind="strings"))
        want = _outcome(lambda: jnp.__array_namespace_info__().dtypes(kind="strings"))
        assert got == want


def test_namespace_info_dtypes_create_arrays():
    info = xnp.__array_namespace_info__()
    for name, dt in info.dtypes().items():
        assert xnp.zeros(2, dtype=dt).dtype == np.dtype(name)
    assert all(d is None or d in xform.devices() for d in info.devices())


def test_to_device():
    x = xnp.arange(4.0)
    dev = xform.devices()[0]
    y = x.to_device(dev)
    np.testing.assert_array_equal(np.asarray(y), np.arange(4.0))
    assert y.device == dev
    np.testing.assert_array_equal(np.asarray(x.to_device(None)), np.arange(4.0))
    got = _outcome(lambda: x.to_device(dev, stream=1))
    want = _outcome(lambda: jnp.arange(4.0).to_device(jax.devices()[0], stream=1))
    assert got == want == ("raises", "NotImplementedError")
    # inside a transformation placement is a no-op, as in JAX
    out = xform.jit(lambda v: v.to_device(dev) * 2)(x)
    np.testing.assert_array_equal(np.asarray(out), 2 * np.arange(4.0))


# ----------------------------------------------------------------- isdtype

def test_isdtype_signature_and_kinds_match_jax():
    assert list(inspect.signature(xnp.isdtype).parameters) == \
        list(inspect.signature(jnp.isdtype).parameters) == ["dtype", "kind"]
    kinds = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
             "complex floating", "numeric", ("bool", "integral"), np.float32, "float32",
             "int8", ("complex floating", np.int16), "not a kind", 3, jnp.float32]
    dts = ["bool", "int8", "int16", "int32", "uint8", "uint32", "float16", "float32",
           "bfloat16", "complex64", np.float32]
    for dt in dts:
        for k in kinds:
            got = _outcome(lambda: xnp.isdtype(dtype=dt, kind=k))
            want = _outcome(lambda: jnp.isdtype(dtype=dt, kind=k))
            assert got == want, (dt, k, got, want)


# ----------------------------------------------------------------- cumulative_sum / prod

CUM_DTYPES = ["bool", "uint8", "int8", "int16", "uint16", "uint32", "int32", "float16",
              "float32", "complex64"]


def _cum_cases(mod):
    return [
        lambda a: mod.cumulative_sum(a, axis=1),
        lambda a: mod.cumulative_prod(a, axis=0),
        lambda a: mod.cumulative_sum(a, axis=1, include_initial=True),
        lambda a: mod.cumulative_prod(a, axis=-1, include_initial=True),
        lambda a: mod.cumulative_sum(a, axis=0, dtype="int16"),
        lambda a: mod.cumulative_sum(a[0]),
        lambda a: mod.cumulative_prod(a[0], include_initial=True),
        lambda a: mod.cumulative_sum(a),            # 2-D without axis: ValueError
        lambda a: mod.cumulative_sum(a[0, 0]),      # scalar: ValueError
        lambda a: mod.cumulative_sum(a[:, :0], axis=1, include_initial=True),
        lambda a: mod.cumsum(a),
        lambda a: mod.cumsum(a, dtype=bool),
        lambda a: mod.cumprod(a, axis=1, dtype=bool),
        lambda a: mod.cumsum(a[0, 0]),
        lambda a: mod.nancumsum(a, axis=1),
    ]


def _result(r):
    return (str(r.dtype), r.shape, np.asarray(r).tolist())


# x64 changes the accumulators (int64/uint64): every dtype without it, a few with it
# in the default run and all of them in the slow one
CUM_CASES = ([(dt, False) for dt in CUM_DTYPES] +
             [(dt, True) if dt in ("bool", "uint8", "int16", "float32") else
              pytest.param(dt, True, marks=pytest.mark.slow) for dt in CUM_DTYPES])


@pytest.mark.parametrize("dt,x64", CUM_CASES)
def test_cumulative_reductions_match_jax(dt, x64):
    with jax.enable_x64(x64), xform.enable_x64(x64):
        base = np.array([[1, 2, 0], [2, 1, 3]])
        a_x, a_j = xnp.asarray(base, dtype=dt), jnp.asarray(base, dtype=dt)
        for f_x, f_j in zip(_cum_cases(xnp), _cum_cases(jnp)):
            got = _outcome(lambda: _result(f_x(a_x)))
            want = _outcome(lambda: _result(f_j(a_j)))
            assert got == want, (dt, got, want)


def test_cumulative_sum_uint8_accumulates_in_default_unsigned_int():
    x = xnp.asarray([200, 100, 50], dtype=np.uint8)
    r = xnp.cumulative_sum(x)
    assert r.dtype == jnp.cumulative_sum(jnp.asarray([200, 100, 50], np.uint8)).dtype
    assert r.dtype == np.uint32
    np.testing.assert_array_equal(np.asarray(r), [200, 300, 350])


def test_cumulative_sum_include_initial_under_transformations():
    f_x = lambda v: xnp.cumulative_sum(v * v, include_initial=True).sum()
    f_j = lambda v: jnp.cumulative_sum(v * v, include_initial=True).sum()
    v = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_allclose(np.asarray(xform.grad(f_x)(v)), np.asarray(jax.grad(f_j)(v)))
    m = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(
        np.asarray(xform.vmap(lambda r: xnp.cumulative_prod(r, include_initial=True))(m)),
        np.asarray(jax.vmap(lambda r: jnp.cumulative_prod(r, include_initial=True))(m)))
    np.testing.assert_allclose(
        np.asarray(xform.jit(lambda r: xnp.cumulative_sum(r, axis=1, include_initial=True))(m)),
        np.asarray(jnp.cumulative_sum(m, axis=1, include_initial=True)))


# ----------------------------------------------------------------- vecdot

@pytest.mark.parametrize("fn", ["vecdot", "linalg.vecdot"])
def test_vecdot_dtypes_match_jax(fn):
    get = lambda mod: mod.vecdot if fn == "vecdot" else mod.linalg.vecdot
    rng = np.random.RandomState(0)
    for d1 in ["bool", "uint8", "int8", "float16", "float32", "complex64"]:
        for d2 in ["bool", "uint8", "int16", "float32", "complex64"]:
            a = rng.randint(0, 4, size=(2, 3)).astype(d1)
            b = rng.randint(0, 4, size=(3,)).astype(d2)
            if d1 == "complex64":
                a = a + 1j * rng.randint(0, 3, size=a.shape).astype(d1)
            got = _outcome(lambda: _result(get(xnp)(xnp.asarray(a), xnp.asarray(b))))
            want = _outcome(lambda: _result(get(jnp)(jnp.asarray(a), jnp.asarray(b))))
            assert got == want, (d1, d2, got, want)
    r = xnp.vecdot(xnp.ones(3, np.uint8), xnp.ones(3, np.uint8))
    assert r.dtype == np.uint8


SHAPE_CASES = [((1,), (3,), -1), ((3, 1), (3, 3), -1), ((3, 1), (1, 3), 0),
               ((2, 3), (3, 3), 0), ((2, 3), (1, 3), -1), ((3, 2), (3,), 0),
               ((4, 1, 3), (2, 3), -1), ((2, 3), (4, 3), -1), ((2, 3), (3,), 1),
               ((3,), (3,), -2), ((0, 3), (1, 3), -1), ((2, 0), (2, 0), -1), ((), (3,), -1)]


@pytest.mark.parametrize("sa,sb,axis", SHAPE_CASES)
def test_vecdot_shapes_and_errors_match_jax(sa, sb, axis):
    rng = np.random.RandomState(1)
    a = np.asarray(rng.randn(*sa), dtype=np.float32)
    b = np.asarray(rng.randn(*sb), dtype=np.float32)
    got = _outcome(lambda: xnp.vecdot(xnp.asarray(a), xnp.asarray(b), axis=axis))
    want = _outcome(lambda: jnp.vecdot(jnp.asarray(a), jnp.asarray(b), axis=axis))
    assert got[0] == want[0], (got, want)
    if got[0] == "ok":
        np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), rtol=1e-5,
                                   atol=1e-6)
    else:
        assert got == want


def test_vecdot_size_one_axis_does_not_broadcast():
    with pytest.raises(ValueError, match="axes must match"):
        xnp.vecdot(xnp.ones(1), xnp.ones(3))
    with pytest.raises(ValueError):
        jnp.vecdot(jnp.ones(1), jnp.ones(3))


def test_vecdot_grad_and_vmap_match_jax():
    rng = np.random.RandomState(2)
    a = rng.randn(4, 3).astype(np.float32)
    b = rng.randn(3).astype(np.float32)
    np.testing.assert_allclose(
        np.asarray(xform.grad(lambda u: xnp.vecdot(u, b).sum())(a)),
        np.asarray(jax.grad(lambda u: jnp.vecdot(u, b).sum())(a)), rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(xform.vmap(xnp.vecdot, (0, None))(a, b)),
        np.asarray(jax.vmap(jnp.vecdot, (0, None))(a, b)), rtol=1e-6)
    c = (rng.randn(3) + 1j * rng.randn(3)).astype(np.complex64)
    np.testing.assert_allclose(np.asarray(xnp.vecdot(c, c)), np.asarray(jnp.vecdot(c, c)),
                               rtol=1e-6)


# ----------------------------------------------------------------- repeat

REPEAT_CASES = [((0,), [1], None, None), ((0,), [2], None, None), ((3,), [2], None, None),
                ((2, 3), [2], 1, None), ((2, 3), [1, 0, 2], 1, None),
                ((2, 0), [3], 1, None), ((2, 0), [3], 0, None), ((0,), 2, None, None),
                ((2, 3), 2, None, None), ((3,), [[2]], None, None),
                ((3,), [1, 2, 3], 0, None), ((2, 3), [1, 2], None, None),
                ((3,), [2], 0, 4), ((3,), [1, 2, 0], 0, 2), ((3,), [1, 2, 0], 0, 5),
                ((3,), 2, 0, 8), ((0,), [1], None, 0), ((0,), [1], None, 3),
                ((0,), [], None, None), ((2, 3), [0, 0, 0], 1, None), ((), [3], 0, None),
                ((), 3, None, None), ((), [1, 2], 0, None), ((3,), [0, 1, 0], 0, 4)]


def _rep_in(mod, rep):
    return rep if isinstance(rep, int) else mod.asarray(rep, dtype=np.int32)


@pytest.mark.parametrize("shape,rep,axis,total", REPEAT_CASES)
def test_repeat_matches_jax(shape, rep, axis, total):
    base = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    got = _outcome(lambda: _result(xnp.repeat(xnp.asarray(base), _rep_in(xnp, rep), axis=axis,
                                              total_repeat_length=total)))
    want = _outcome(lambda: _result(jnp.repeat(jnp.asarray(base), _rep_in(jnp, rep),
                                               axis=axis, total_repeat_length=total)))
    assert got == want, (got, want)
    if total is not None and not isinstance(rep, int):
        # traced repeat counts with a static total length
        got = _outcome(lambda: _result(xform.jit(lambda x, r: xnp.repeat(
            x, r, axis=axis, total_repeat_length=total))(xnp.asarray(base), _rep_in(xnp, rep))))
        want = _outcome(lambda: _result(jax.jit(lambda x, r: jnp.repeat(
            x, r, axis=axis, total_repeat_length=total))(jnp.asarray(base), _rep_in(jnp, rep))))
        assert got == want, ("jit", got, want)


def test_repeat_zero_size_with_shape_one_repeats():
    assert xnp.repeat(xnp.zeros((0,)), xnp.asarray([1])).shape == (0,)
    assert jnp.repeat(jnp.zeros((0,)), jnp.asarray([1])).shape == (0,)


def test_repeat_traced_counts_under_vmap_and_grad():
    x = np.arange(4.0, dtype=np.float32)
    reps = np.array([[1, 0, 2, 1], [0, 3, 0, 1]], np.int32)
    f_x = lambda r: xnp.repeat(xnp.asarray(x), r, total_repeat_length=5)
    f_j = lambda r: jnp.repeat(jnp.asarray(x), r, total_repeat_length=5)
    np.testing.assert_array_equal(np.asarray(xform.vmap(f_x)(reps)),
                                  np.asarray(jax.vmap(f_j)(reps)))
    g_x = xform.grad(lambda v: (xnp.repeat(v, reps[0], total_repeat_length=5) ** 2).sum())(x)
    g_j = jax.grad(lambda v: (jnp.repeat(v, reps[0], total_repeat_length=5) ** 2).sum())(x)
    np.testing.assert_allclose(np.asarray(g_x), np.asarray(g_j))


def test_repeat_negative_counts_are_refused():
    # JAX computes an unspecified result (or a TypeError for a scalar); NumPy and xform
    # refuse negative counts with a ValueError naming them.
    with pytest.raises(ValueError, match="negative"):
        xnp.repeat(xnp.arange(3), xnp.asarray([1, -1, 1]))
    with pytest.raises(ValueError, match="negative"):
        xnp.repeat(xnp.arange(3), -1)


# ----------------------------------------------------------------- signbit

@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64"])
def test_signbit_reads_the_sign_bit_like_jax(dt):
    vals = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -1.5, 1e-45, -1e-45]
    with jax.enable_x64(True), xform.enable_x64(True):
        x_x, x_j = xnp.asarray(vals, dtype=dt), jnp.asarray(vals, dtype=dt)
        want = np.asarray(jnp.signbit(x_j)).tolist()
        assert want[1] is True                    # -nan has its sign bit set
        assert np.asarray(xnp.signbit(x_x)).tolist() == want
        assert np.asarray(xform.jit(xnp.signbit)(x_x)).tolist() == want
        assert np.asarray(xform.vmap(xnp.signbit)(x_x)).tolist() == want
        assert np.asarray(xnp.copysign(xnp.asarray(2.0, dt), x_x)).tolist() == \
            np.asarray(jnp.copysign(jnp.asarray(2.0, dt), x_j)).tolist()


def test_signbit_other_dtypes_match_jax():
    for dt in ["int8", "uint8", "bool", "int32", "complex64"]:
        vals = np.array([-2, 0, 3]).astype(dt)
        got = _outcome(lambda: np.asarray(xnp.signbit(xnp.asarray(vals))).tolist())
        want = _outcome(lambda: np.asarray(jnp.signbit(jnp.asarray(vals))).tolist())
        assert got == want, (dt, got, want)
    assert xform.grad(lambda x, y: xnp.copysign(x, y), 1)(2.0, -1.0) == 0.0


# ----------------------------------------------------------------- vector_norm

VNORM_AXES = [None, 0, -1, (0, 1), (), (0, 1, 2), (2, 0)]


@pytest.mark.parametrize("dt", ["float32", "complex64",
                                pytest.param("int32", marks=pytest.mark.slow),
                                pytest.param("bool", marks=pytest.mark.slow)])
@pytest.mark.parametrize("ord", [None, 2, 1, 0, np.inf, -np.inf, 3, 0.5, "fro"])
def test_vector_norm_matches_jax(dt, ord):
    rng = np.random.RandomState(0)
    base = rng.randint(-3, 4, size=(2, 3, 2)).astype(np.float64)
    if dt == "complex64":
        base = base + 1j * base[::-1]
    if dt in ("int32", "bool") and ord in (0.5,):
        pytest.skip("fractional orders of integer vectors are not meaningful")
    for axis in VNORM_AXES:
        for keepdims in (False, True):
            got = _outcome(lambda: xnp.linalg.vector_norm(xnp.asarray(base.astype(dt)),
                                                          axis=axis, keepdims=keepdims, ord=ord))
            want = _outcome(lambda: jnp.linalg.vector_norm(jnp.asarray(base.astype(dt)),
                                                           axis=axis, keepdims=keepdims, ord=ord))
            assert got[0] == want[0], (axis, keepdims, got, want)
            if got[0] == "raises":
                assert got == want
                continue
            g, w = got[1], want[1]
            assert (g.dtype, g.shape) == (w.dtype, w.shape), (axis, keepdims)
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6)


def test_vector_norm_of_empty_and_grad_match_jax():
    for ord in (np.inf, 2, 1, 0):
        np.testing.assert_array_equal(
            np.asarray(xnp.linalg.vector_norm(xnp.zeros((0,)), ord=ord)),
            np.asarray(jnp.linalg.vector_norm(jnp.zeros((0,)), ord=ord)))
    x = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
    for ord in (2, 1, np.inf, 3):
        np.testing.assert_allclose(
            np.asarray(xform.grad(lambda v: xnp.linalg.vector_norm(v, axis=(0, 1), ord=ord))(x)),
            np.asarray(jax.grad(lambda v: jnp.linalg.vector_norm(v, axis=(0, 1), ord=ord))(x)),
            rtol=1e-6)


# ----------------------------------------------------------------- round

ROUND_VALUES = [0.5, 1.5, 2.5, -0.5, 1.234567, 123.456, 1e30, np.inf, np.nan, -0.0, 6.125]


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "complex64"])
@pytest.mark.parametrize("decimals", [0, 1, 2, -1, 40, 400])
def test_round_matches_jax(dt, decimals):
    vals = np.array(ROUND_VALUES)
    with np.errstate(over="ignore", invalid="ignore"):
        if dt == "complex64":
            vals = vals + 1j * vals[::-1]
        x_x, x_j = xnp.asarray(vals, dtype=dt), jnp.asarray(vals, dtype=dt)
    # under jit both compile to the same XLA program (eager XLA rewrites the division by
    # the scale as a multiplication by its reciprocal; xform's eager path divides exactly)
    got = xform.jit(lambda v: xnp.round(v, decimals))(x_x)
    want = jax.jit(lambda v: jnp.round(v, decimals))(x_j)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got.astype(np.complex64)),
                                  np.asarray(want.astype(np.complex64)))
    np.testing.assert_allclose(np.asarray(xnp.round(x_x, decimals).astype(np.complex64)),
                               np.asarray(want.astype(np.complex64)), rtol=3e-7)


# ----------------------------------------------------------------- boolean masks

MASK_X_SHAPES = [(0, 0), (0,), (2, 0), (0, 3), (2, 3), (3,)]
MASK_SHAPES = [(), (0,), (1,), (0, 0), (1, 1), (2,), (0, 3), (2, 0), (1, 0), (3,), (2, 3),
               (2, 1), (1, 3), (2, 3, 1)]


@pytest.mark.parametrize("xs", MASK_X_SHAPES)
def test_boolean_mask_shape_must_match_like_jax(xs):
    # a mask whose shape is not that of the axes it indexes (0 matches any size) is an
    # IndexError, never a gather of clamped positions
    x_x, x_j = xnp.zeros(xs, np.float32), jnp.zeros(xs, np.float32)
    for ks in MASK_SHAPES:
        for fill in (True, False):
            key = np.full(ks, fill)
            got = _outcome(lambda: xnp.asarray(x_x[xnp.asarray(key)]).shape)
            want = _outcome(lambda: x_j[jnp.asarray(key)].shape)
            assert got == want, (xs, ks, fill, got, want)


def test_boolean_mask_shape_checked_in_every_position_and_in_updates():
    x_x = xnp.arange(24.0).reshape(2, 3, 4)
    x_j = jnp.arange(24.0).reshape(2, 3, 4)
    m = lambda *s: np.ones(s, bool)
    for idx in [(m(3),), (Ellipsis, m(4)), (Ellipsis, m(3)), (0, m(3)), (0, m(4)),
                (m(2), 0), (m(2, 3), 1), (m(3, 4),), (Ellipsis, m(3, 4)), (None, m(2)),
                (m(0),), (slice(None), m(0, 4)), (m(1),), (m(2), m(3))]:
        k_x = tuple(xnp.asarray(i) if isinstance(i, np.ndarray) else i for i in idx)
        k_j = tuple(jnp.asarray(i) if isinstance(i, np.ndarray) else i for i in idx)
        for op in (lambda a, k: a[k], lambda a, k: a.at[k].set(-1.0),
                   lambda a, k: a.at[k].add(1.0)):
            got = _outcome(lambda: np.asarray(op(x_x, k_x)).tolist())
            want = _outcome(lambda: np.asarray(op(x_j, k_j)).tolist())
            assert got == want, ([np.shape(i) for i in idx], got, want)


# ----------------------------------------------------------------- take_along_axis

def test_take_along_axis_default_axis_and_negative_index_wrapping_match_jax():
    assert inspect.signature(xnp.take_along_axis).parameters["axis"].default == \
        inspect.signature(jnp.take_along_axis).parameters["axis"].default == -1
    base = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0, -1, 3, 5], [-5, 1, 2, -4], [4, 0, -2, 1]], np.int32)
    for kw in [{}, {"axis": 0}, {"mode": "clip"}, {"mode": "fill", "fill_value": -7.0},
               {"wrap_negative_indices": False}, {"wrap_negative_indices": False, "mode": "clip"},
               {"wrap_negative_indices": True, "mode": "fill"}]:
        got = np.asarray(xnp.take_along_axis(xnp.asarray(base), xnp.asarray(idx), **kw))
        want = np.asarray(jnp.take_along_axis(jnp.asarray(base), jnp.asarray(idx), **kw))
        np.testing.assert_array_equal(got, want, err_msg=str(kw))
    for xs, iss, ax in [((3, 0), (3, 2), 1), ((3, 0), (3, 0), 1), ((0, 4), (2, 4), 0)]:
        got = _outcome(lambda: _result(xnp.take_along_axis(
            xnp.zeros(xs), xnp.zeros(iss, np.int32), axis=ax)))
        want = _outcome(lambda: _result(jnp.take_along_axis(
            jnp.zeros(xs), jnp.zeros(iss, np.int32), axis=ax)))
        assert got == want, (xs, iss, got, want)

"""xform._src.interpreters.dtypes checked against real JAX (the oracle; only tests import jax)."""
import contextlib
import itertools
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from jax._src import dtypes as jax_dtypes_internal
from jax._src.lax import lax as jax_lax_internal

from xform._src.interpreters import dtypes as D
from xform._src.interpreters.config import config

# JAX warns when it truncates explicitly named 64-bit dtypes with x64 off.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NUMERIC = [np.dtype(t) for t in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128")] + [np.dtype(ml_dtypes.bfloat16)]
FLOAT8 = [np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)]
ALL_DTYPES = NUMERIC + FLOAT8
WEAK_TYPES = [int, float, complex]
PROMO_INPUTS = ALL_DTYPES + WEAK_TYPES
X64 = [False, True]


def _id(x):
    return getattr(x, "__name__", None) or str(x)


@contextlib.contextmanager
def modes(x64, promotion="standard"):
    """Set x64 / promotion mode in both JAX and xform; restore both afterwards."""
    old = (jax.config.jax_enable_x64, jax.config.jax_numpy_dtype_promotion,
           config.jax_enable_x64, config.jax_numpy_dtype_promotion)
    jax.config.update("jax_enable_x64", x64)
    jax.config.update("jax_numpy_dtype_promotion", promotion)
    config.update("jax_enable_x64", x64)
    config.update("jax_numpy_dtype_promotion", promotion)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", old[0])
        jax.config.update("jax_numpy_dtype_promotion", old[1])
        config.update("jax_enable_x64", old[2])
        config.update("jax_numpy_dtype_promotion", old[3])


def outcome(fn, *args, **kw):
    """Result of fn, or the exception *category* (TypeError vs ValueError)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", fn(*args, **kw))
    except TypeError:
        return ("raises", TypeError)
    except ValueError:  # includes TypePromotionError
        return ("raises", ValueError)


def test_no_jax_import():
    import subprocess
    import sys
    code = ("import sys; import interpreters.dtypes; "
            "assert not any(m == 'jax' or m.startswith('jax.') for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(__import__("pathlib").Path(__file__).parents[1]))


def test_constants():
    assert D.bfloat16 == np.dtype(ml_dtypes.bfloat16)
    assert D.float8_e4m3fn == np.dtype(ml_dtypes.float8_e4m3fn)
    assert D.float8_e5m2 == np.dtype(ml_dtypes.float8_e5m2)
    assert D.float0 == jax.dtypes.float0
    for name in ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float16", "float32", "float64", "complex64", "complex128"):
        ours = getattr(D, name)
        assert isinstance(ours, np.dtype)
        assert ours == np.dtype(getattr(jnp, name))


# ---------------------------------------------------------------- promotion
@pytest.mark.parametrize("x64", X64)
@pytest.mark.parametrize("promotion", ["standard", "strict"])
def test_promote_types_all_pairs(x64, promotion):
    with modes(x64, promotion):
        bad = []
        for a, b in itertools.product(PROMO_INPUTS, repeat=2):
            want = outcome(jnp.promote_types, a, b)
            got = outcome(D.promote_types, a, b)
            if want != got:
                bad.append((_id(a), _id(b), want, got))
        assert not bad, bad


@pytest.mark.parametrize("x64", X64)
@pytest.mark.parametrize("promotion", ["standard", "strict"])
def test_result_type_all_pairs(x64, promotion):
    with modes(x64, promotion):
        bad = []
        for a, b in itertools.product(PROMO_INPUTS, repeat=2):
            for flag in (False, True):
                want = outcome(jax.dtypes.result_type, a, b, return_weak_type_flag=flag)
                got = outcome(D.result_type, a, b, return_weak_type_flag=flag)
                if want != got:
                    bad.append((_id(a), _id(b), flag, want, got))
        assert not bad, bad


@pytest.mark.parametrize("x64", X64)
def test_result_type_all_triples(x64):
    inputs = NUMERIC + WEAK_TYPES
    with modes(x64):
        bad = []
        for args in itertools.product(inputs, repeat=3):
            want = outcome(jax.dtypes.result_type, *args, return_weak_type_flag=True)
            got = outcome(D.result_type, *args, return_weak_type_flag=True)
            if want != got:
                bad.append((tuple(map(_id, args)), want, got))
        assert not bad, bad[:20]


@pytest.mark.parametrize("x64", X64)
def test_result_type_single_and_special(x64):
    with modes(x64):
        cases = [(int,), (float,), (complex,), (bool,), (None,), (None, int), (1,), (1.0,),
                 (1j,), (True,), (True, 1), (True, 1.0), (1, 2.0, 3j), (D.float0,),
                 (D.float0, D.float0), (D.float0, "float32"), ("foo",), (object(),),
                 ("float32", "float32"), ("int64", 1), (np.int8(1), 300), (np.float16(1), 2.0),
                 (np.ones(3, np.int8), 2), (np.ones(3, np.uint64), np.ones(3, np.int64)),
                 (np.array(["a"]),), ("U",)]
        for args in cases:
            assert outcome(D.result_type, *args, return_weak_type_flag=True) == \
                outcome(jax.dtypes.result_type, *args, return_weak_type_flag=True), args
        with pytest.raises(ValueError):
            D.result_type()


def _weak_jax_array(dt):
    return jax_lax_internal._convert_element_type(jnp.zeros((2,)), np.dtype(dt), weak_type=True)


def _value_pool(x64):
    """Values both implementations accept: Python scalars, numpy values, JAX arrays."""
    canon = {jax.dtypes.canonicalize_dtype(d) for d in ALL_DTYPES}
    pool = [0, 1, 2.5, 1j, True, False, None, int, float, complex, bool]
    for d in NUMERIC:
        pool += [np.ones(2, d), np.ones((), d)[()], d, d.name]
    for d in sorted(canon, key=str):
        pool.append(jnp.ones(2, d))  # strong
        pool.append(_weak_jax_array(d))  # weak (a weak bool array is possible too)
    return pool


@pytest.mark.parametrize("x64", X64)
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_result_type_random_values(x64, data):
    with modes(x64):
        pool = _value_pool(x64)
        args = data.draw(st.lists(st.sampled_from(range(len(pool))), min_size=1, max_size=5))
        args = [pool[i] for i in args]
        want = outcome(jax.dtypes.result_type, *args, return_weak_type_flag=True)
        got = outcome(D.result_type, *args, return_weak_type_flag=True)
        assert got == want, [type(a).__name__ + ":" + str(getattr(a, "dtype", a)) for a in args]


@pytest.mark.parametrize("x64", X64)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_lattice_result_type_random_values(x64, data):
    with modes(x64):
        pool = [v for v in _value_pool(x64) if v is not None]
        args = data.draw(st.lists(st.sampled_from(range(len(pool))), min_size=1, max_size=5))
        args = [pool[i] for i in args]
        want = outcome(jax_dtypes_internal.lattice_result_type, *args)
        got = outcome(D.lattice_result_type, *args)
        if want[0] == "ok":  # JAX does not canonicalize here; jnp ops do so afterwards
            want = ("ok", (jax.dtypes.canonicalize_dtype(want[1][0]), want[1][1]))
        assert got == want, [type(a).__name__ + ":" + str(getattr(a, "dtype", a)) for a in args]


@pytest.mark.parametrize("x64", X64)
def test_result_type_matches_jnp_ops(x64):
    """jnp binary ops promote by lattice_result_type (weak bf16 + 1.0 stays bf16)."""
    with modes(x64):
        canon = sorted({jax.dtypes.canonicalize_dtype(d) for d in NUMERIC}, key=str)
        operands = [1, 2.0, 3j] + [jax.ShapeDtypeStruct((2,), d, weak_type=w)
                                   for d in canon for w in (False, True) if not (w and d == bool)]
        for a, b in itertools.product(operands, repeat=2):
            if isinstance(a, (int, float, complex)) and isinstance(b, (int, float, complex)):
                continue
            args = [x for x in (a, b) if isinstance(x, jax.ShapeDtypeStruct)]
            fn = (lambda *xs: jnp.add(*xs)) if len(args) == 2 else (
                (lambda x: jnp.add(x, b)) if args[0] is a else (lambda x: jnp.add(a, x)))
            out = jax.eval_shape(fn, *args)
            assert D.lattice_result_type(a, b) == (out.dtype, out.weak_type), (a, b)


def test_promote_types_not_canonical_like_jax():
    # JAX's promote_types does not canonicalize; we mirror it.
    with modes(False):
        assert D.promote_types(int, float) == jnp.promote_types(int, float)
        assert D.result_type(int, float) == jax.dtypes.result_type(int, float)


def test_type_promotion_error_is_value_error():
    with modes(False):
        with pytest.raises(D.TypePromotionError):
            D.promote_types(D.float8_e4m3fn, D.float32)
        with pytest.raises(ValueError):
            D.result_type(D.float8_e5m2, 1j)


# --------------------------------------------------------- canonicalization
CANON_INPUTS = ALL_DTYPES + [
    int, float, complex, bool, None, D.float0,
    np.float64, np.int64, np.uint64, np.complex128, np.float32, np.int8, np.bool_,
    ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
    "float32", "float64", "bfloat16", "float8_e4m3fn", "f4", "f8", "i8", "u8", "c16", "int",
    "float", "complex", "bool", "int64", "uint64", "complex128", "float16", "uint8",
] + [d.name for d in ALL_DTYPES]


@pytest.mark.parametrize("x64", X64)
def test_canonicalize_dtype(x64):
    with modes(x64):
        for x in CANON_INPUTS:
            got = D.canonicalize_dtype(x)
            assert isinstance(got, np.dtype)
            assert got == jax.dtypes.canonicalize_dtype(x), x
            assert D.canonicalize_dtype(x) is got  # cached


@pytest.mark.parametrize("bad", ["foo", "float33", "bfloat", object(), [1, 2], 3.5])
def test_canonicalize_dtype_bad(bad):
    with pytest.raises(TypeError):
        D.canonicalize_dtype(bad)
    with pytest.raises(TypeError):
        jax.dtypes.canonicalize_dtype(bad)


def test_canonicalize_cache_cleared_on_x64_change():
    with modes(False):
        assert D.canonicalize_dtype("float64") == np.float32
        assert D.canonicalize_dtype(int) == np.int32
        with modes(True):
            assert D.canonicalize_dtype("float64") == np.float64
            assert D.canonicalize_dtype(int) == np.int64
            assert D.default_float_dtype() == np.float64
        assert D.canonicalize_dtype("float64") == np.float32


@pytest.mark.parametrize("x64", X64)
def test_defaults(x64):
    with modes(x64):
        assert D.default_float_dtype() == jax_dtypes_internal.default_float_dtype()
        assert D.default_int_dtype() == jax_dtypes_internal.default_int_dtype()
        assert D.default_uint_dtype() == jax_dtypes_internal.default_uint_dtype()
        assert D.default_complex_dtype() == jax_dtypes_internal.default_complex_dtype()
        # defaults are what JAX gives Python scalars
        assert D.default_float_dtype() == jnp.asarray(1.0).dtype
        assert D.default_int_dtype() == jnp.asarray(1).dtype
        assert D.default_complex_dtype() == jnp.asarray(1j).dtype


def test_python_scalar_dtypes():
    theirs = jax_dtypes_internal.python_scalar_types_to_dtypes
    assert D.python_scalar_dtypes == {t: theirs[t] for t in (bool, int, float, complex)}


# -------------------------------------------------------- dtype_of and weak
@pytest.mark.parametrize("x64", X64)
def test_dtype_of_and_weak(x64):
    with modes(x64):
        class IntLike(int):
            pass
        values = [0, 1.5, 2j, True, IntLike(3), np.float64(1), np.int64(1), np.bool_(True),
                  np.float32(1), D.float0, int, float, bool, np.int16, ml_dtypes.bfloat16,
                  "float64", "bfloat16", np.zeros((), D.float0)]
        values += [np.ones(2, d) for d in ALL_DTYPES]
        values += [jnp.ones(2, jax.dtypes.canonicalize_dtype(d)) for d in ALL_DTYPES]
        values += [_weak_jax_array(d) for d in ("float32", "int32", "bfloat16", "int8")]
        for v in values:
            assert D.dtype_of(v) == jax_dtypes_internal.dtype(v), v
            assert isinstance(D.dtype_of(v), np.dtype)
            assert D.is_weakly_typed(v) == jax_dtypes_internal.is_weakly_typed(v), v


@pytest.mark.parametrize("bad", [object(), np.array(["a"]), "foo", np.array([1], object), "U"])
def test_dtype_of_bad(bad):
    with pytest.raises(TypeError):
        jax_dtypes_internal.dtype(bad)
    with pytest.raises(TypeError):
        D.dtype_of(bad)


def test_dtype_of_error_names_type():
    class Thing:
        pass
    with pytest.raises(TypeError, match="Thing"):
        D.dtype_of(Thing())


def test_weak_type_attribute():
    class Fake:
        def __init__(self, dtype, weak_type):
            self.dtype, self.weak_type = np.dtype(dtype), weak_type
    with modes(False):
        assert D.is_weakly_typed(Fake("float32", True))
        assert not D.is_weakly_typed(Fake("float32", False))
        # weak f32 with strong f16 -> f16; strong f32 with f16 -> f32
        assert D.result_type(Fake("float32", True), np.float16(1)) == np.float16
        assert D.result_type(Fake("float32", False), np.float16(1)) == np.float32
        assert D.result_type(Fake("int64", False)) == np.int32  # canonicalized


# ------------------------------------------------------------ issubdtype etc
ABSTRACT = [np.generic, np.number, np.inexact, np.floating, np.complexfloating, np.integer,
            np.signedinteger, np.unsignedinteger, np.bool_]
SUB_A = ALL_DTYPES + [int, float, complex, bool, np.float32, np.int8, ml_dtypes.bfloat16,
                      ml_dtypes.float8_e4m3fn, "float32", "bfloat16", D.float0]
SUB_B = ABSTRACT + ALL_DTYPES + [int, float, complex, bool, ml_dtypes.bfloat16]


def test_issubdtype_grid():
    bad = [(a, b) for a, b in itertools.product(SUB_A, SUB_B)
           if D.issubdtype(a, b) != jnp.issubdtype(a, b)]
    assert not bad, bad
    # numpy alone gets this wrong; make sure we are not just numpy
    assert D.issubdtype(ml_dtypes.bfloat16, np.floating)


def test_kind_predicates():
    for d in SUB_A:
        assert D.is_float(d) == jnp.issubdtype(d, np.floating), d
        assert D.is_complex(d) == jnp.issubdtype(d, np.complexfloating), d
        assert D.is_integer(d) == jnp.issubdtype(d, np.integer), d
        assert D.is_unsigned(d) == jnp.issubdtype(d, np.unsignedinteger), d
        assert D.is_bool(d) == jnp.issubdtype(d, np.bool_), d
        assert D.is_inexact(d) == jnp.issubdtype(d, np.inexact), d
    assert D.is_float(D.bfloat16) and D.is_float(D.float16) and D.is_float(D.float8_e5m2)
    assert not D.is_integer(D.bool_)


# ------------------------------------------------------------- finfo / iinfo
FLOATS = [d for d in ALL_DTYPES if jnp.issubdtype(d, np.inexact)]
INTS = [d for d in ALL_DTYPES if jnp.issubdtype(d, np.integer)]
FINFO_FIELDS = ["bits", "eps", "epsneg", "max", "min", "tiny", "smallest_normal",
                "smallest_subnormal", "resolution", "precision", "nexp", "nmant",
                "machep", "negep", "minexp", "maxexp", "dtype"]


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_finfo(dt):
    ours, theirs = D.finfo(dt), jnp.finfo(dt)
    for f in FINFO_FIELDS:
        a, b = getattr(ours, f), getattr(theirs, f)
        assert a == b or (np.isnan(a) and np.isnan(b)), (f, a, b)


def test_finfo_known_values():
    # values from the format specifications, not from any implementation
    assert float(D.finfo(D.bfloat16).eps) == 2.0 ** -7
    assert float(D.finfo(D.float16).max) == 65504.0
    assert float(D.finfo(D.float8_e4m3fn).max) == 448.0
    assert float(D.finfo(D.float8_e5m2).max) == 57344.0
    assert D.finfo(D.complex64).dtype == np.float32


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_iinfo(dt):
    ours, theirs = D.iinfo(dt), jnp.iinfo(dt)
    for f in ("bits", "min", "max", "dtype"):
        assert getattr(ours, f) == getattr(theirs, f)
    assert ours.max == np.iinfo(dt).max and ours.min == np.iinfo(dt).min


# ----------------------------------------------------------- inexact / names
@pytest.mark.parametrize("x64", X64)
def test_to_inexact_matches_jnp_sin(x64):
    with modes(x64):
        for d in ALL_DTYPES:
            want = jax.eval_shape(jnp.sin, jax.ShapeDtypeStruct((2,), jax.dtypes.canonicalize_dtype(d))).dtype
            assert D.to_inexact_dtype(d) == want, d
            # and a numpy (possibly 64-bit, uncanonicalized) input
            assert D.to_inexact_dtype(d) == jnp.sin(np.ones(2, d)).dtype, d


@pytest.mark.parametrize("x64", X64)
def test_to_complex_dtype(x64):
    with modes(x64):
        for d in NUMERIC:
            want = jax.dtypes.canonicalize_dtype(jax_dtypes_internal.to_complex_dtype(d))
            assert D.to_complex_dtype(d) == want, d


def test_short_name_matches_jaxpr_printing():
    for d in ALL_DTYPES + [jax.dtypes.float0]:
        aval = jax.core.ShapedArray((3, 4), d)
        assert f"{D.short_name(d)}[3,4]" == aval.str_short(short_dtypes=True), d
    assert D.short_name("float32") == "f32"

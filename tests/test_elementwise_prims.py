"""Elementwise primitives checked against jax.lax (CPU), finite differences, the
dot-product test for transposes and a Python loop for batching.

JAX is the oracle for values, dtypes and XLA's edge-case semantics; our own
outputs are never compared with themselves.
"""
from __future__ import annotations

import contextlib
import math
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import xform  # noqa: F401  (registers every primitive)
from xform._src.interpreters import ad, batching, core
from xform._src.interpreters import dtypes as D
from xform._src.interpreters.config import config
from xform._src.interpreters.core import Array
from xform._src.interpreters.staging import trace_to_jaxpr
from xform._src.primitives import elementwise as ew
from xform import lax

jax.config.update("jax_platforms", "cpu")

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
C64, C128 = np.dtype("complex64"), np.dtype("complex128")
I8, I16, I32, I64 = (np.dtype(t) for t in ("int8", "int16", "int32", "int64"))
U8, U32, U64 = np.dtype("uint8"), np.dtype("uint32"), np.dtype("uint64")
BOOL = np.dtype(bool)

SHAPES = [(), (0,), (5,), (2, 3)]
FLOATS = [F32, F16, BF16]
INTS = [I32, I8, U8, I16, U32]
FLOATS64, INTS64 = [F64], [I64, U64]


@contextlib.contextmanager
def x64_mode(on=True):
    old = (config.jax_enable_x64, jax.config.jax_enable_x64)
    config.update("jax_enable_x64", on)
    jax.config.update("jax_enable_x64", on)
    try:
        yield
    finally:
        config.update("jax_enable_x64", old[0])
        jax.config.update("jax_enable_x64", old[1])


# ----------------------------------------------------------------- input generation

def _specials(dt):
    if dt in (C64, C128):   # complex inf/nan: XLA's expansions differ from C99 (not specified)
        return np.array([0, -0.0, 1 + 1j, -2.5j, 3], dt)
    if dt.kind == "f" or dt == BF16:
        return np.array([0.0, -0.0, 0.5, -0.5, 1.5, -2.5, np.inf, -np.inf, np.nan], dt)
    if dt == BOOL:
        return np.array([True, False])
    info = np.iinfo(dt)
    return np.array(sorted({0, 1, info.max, info.min, info.max // 2, -1 if dt.kind == "i" else 2,
                            7, 3}), dt)


def make(rng, shape, dt, domain=None, specials=True):
    """Random values of ``dt`` (uniform in ``domain`` for floats), sprinkled with
    special values (signed zeros, halves, inf, nan; integer extremes)."""
    dt = np.dtype(dt)
    if dt == BOOL:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = domain or (max(info.min, -100), min(info.max, 100))
        if domain is None and rng.random() < 0.3:
            lo, hi = info.min, info.max
        x = rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64 if dt != U64 else U64)
        x = x.astype(dt)
    else:
        lo, hi = domain or (-4.0, 4.0)
        x = rng.uniform(lo, hi, size=shape)
        if dt.kind == "c":
            x = x + 1j * rng.uniform(lo, hi, size=shape)
        x = x.astype(dt)
    if specials and domain is None and x.size:
        sp = _specials(dt)
        mask = rng.random(shape) < 0.25
        x = np.where(mask, rng.choice(sp, size=shape), x).astype(dt)
    return x


# ----------------------------------------------------------------- op table
# name -> (arity, dtypes (x64 off), dtypes (x64 on), domain for floats, jax fn or None)
# ``domain`` keeps special functions in the range where XLA's approximation is
# specified; ``None`` means the full range with special values.

UN = 1
BIN = 2
FC = FLOATS + [C64]
NUM = INTS + FLOATS + [C64]
ANY = NUM + [BOOL]
ORD = INTS + FLOATS + [BOOL]

OPS = {
    "add": (BIN, NUM, [F64, I64, C128], None),
    "sub": (BIN, NUM, [F64, I64, U64], None),
    "mul": (BIN, NUM, [F64, I64, C128], None),
    "div": (BIN, NUM, [F64, I64, U64], None),
    "rem": (BIN, INTS + FLOATS, [F64, I64, U64], None),
    "max": (BIN, ANY, [F64, I64], None),
    "min": (BIN, ANY, [F64, I64], None),
    "neg": (UN, INTS + FLOATS + [C64], [F64, I64], None),
    "sign": (UN, INTS + FLOATS + [C64], [F64, I64, U64], None),
    "floor": (UN, FLOATS, [F64], None),
    "ceil": (UN, FLOATS, [F64], None),
    "is_finite": (UN, FLOATS, [F64], None),
    "exp": (UN, FC, [F64, C128], None),
    "exp2": (UN, FLOATS, [F64], None),
    "log": (UN, FC, [F64, C128], None),
    "log1p": (UN, FLOATS, [F64], None),
    "expm1": (UN, FLOATS, [F64], None),
    "tanh": (UN, FC, [F64], None),
    "logistic": (UN, FLOATS, [F64], None),
    "sin": (UN, FC, [F64, C128], None),
    "cos": (UN, FC, [F64, C128], None),
    "tan": (UN, FLOATS, [F64], (-1.5, 1.5)),
    "asin": (UN, FLOATS, [F64], None),
    "acos": (UN, FLOATS, [F64], None),
    "atan": (UN, FLOATS, [F64], None),
    "atan2": (BIN, FLOATS, [F64], None),
    "sinh": (UN, FLOATS, [F64], None),
    "cosh": (UN, FLOATS, [F64], None),
    "asinh": (UN, FLOATS, [F64], None),
    "acosh": (UN, FLOATS, [F64], None),
    "atanh": (UN, FLOATS, [F64], None),
    "sqrt": (UN, FC, [F64, C128], None),
    "rsqrt": (UN, FLOATS, [F64], None),
    "cbrt": (UN, FLOATS, [F64], None),
    "abs": (UN, [I32, I8, I16] + FLOATS + [C64], [F64, I64, C128], None),
    "square": (UN, NUM, [F64, I64], None),
    "erf": (UN, FLOATS, [F64], None),
    "erfc": (UN, FLOATS, [F64], (-3.0, 9.0)),
    "erf_inv": (UN, FLOATS, [F64], (-0.99, 0.99)),
    "lgamma": (UN, FLOATS, [F64], (0.1, 20.0)),
    "digamma": (UN, FLOATS, [F64], (0.1, 20.0)),
    "nextafter": (BIN, [F32, F16], [F64], None),
    "real": (UN, [C64], [C128], None),
    "imag": (UN, [C64], [C128], None),
    "conj": (UN, [F32, C64], [F64, C128], None),
    "complex": (BIN, [F32], [F64], None),
    "eq": (BIN, ANY, [F64, I64], None),
    "ne": (BIN, ANY, [F64, I64], None),
    "lt": (BIN, ORD, [F64, I64], None),
    "le": (BIN, ORD, [F64, U64], None),
    "gt": (BIN, ORD, [F64, I64], None),
    "ge": (BIN, ORD, [F64, I64], None),
    "bitwise_and": (BIN, INTS + [BOOL], [I64, U64], None),
    "bitwise_or": (BIN, INTS + [BOOL], [I64], None),
    "bitwise_xor": (BIN, INTS + [BOOL], [I64], None),
    "bitwise_not": (UN, INTS + [BOOL], [I64], None),
    "shift_left": (BIN, INTS, [I64, U64], None),
    "shift_right_arithmetic": (BIN, INTS, [I64, U64], None),
    "shift_right_logical": (BIN, INTS, [I64, U64], None),
    "population_count": (UN, INTS, [I64, U64], None),
}

# Relative tolerances against XLA (exact for integers/bool).  XLA's float32
# transcendental functions are accurate to a few ulp; its special functions use
# polynomial approximations (documented accuracy ~1e-6 relative for float32).
RTOL = {F64: 1e-12, F32: 2e-6, F16: 1e-3, BF16: 8e-3, C64: 2e-6, C128: 1e-12}
SPECIAL_F32_RTOL = {"erf": 5e-6, "erfc": 2e-5, "erf_inv": 1e-5, "lgamma": 1e-5, "digamma": 1e-5,
                    "tan": 5e-6}


def _tol(name, dt):
    if dt == F32 and name in SPECIAL_F32_RTOL:
        return SPECIAL_F32_RTOL[name]
    if dt == F64 and name in ("erf_inv", "lgamma", "digamma", "erfc"):
        return 1e-10
    return RTOL.get(dt, 0)


def _shift_amounts(rng, shape, dt):
    bits = dt.itemsize * 8
    return rng.integers(-2 if dt.kind == "i" else 0, bits + 3, size=shape).astype(dt)


def _inputs(rng, name, dt, shape):
    arity, _, _, domain = OPS[name]
    xs = [make(rng, shape, dt, domain) for _ in range(arity)]
    if name.startswith("shift"):
        xs[1] = _shift_amounts(rng, shape, dt)
    if name == "div" and dt.kind == "c":   # complex x/0: C99 leaves it open; XLA differs
        xs[1] = np.where(xs[1] == 0, np.ones((), dt), xs[1])
    return xs


def compare(ours, ref, name, dt):
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape, (name, ours.shape, ref.shape)
    assert ours.dtype == ref.dtype, (name, ours.dtype, ref.dtype)
    tol = _tol(name, dt) if ref.dtype != BOOL else 0
    if tol == 0 or ref.dtype.kind in "biu":
        np.testing.assert_array_equal(ours, ref, err_msg=name)
        return
    o, r = ours.astype(np.complex128), ref.astype(np.complex128)
    # XLA flushes tiny values differently per function; an absolute floor at the
    # dtype's smallest normal keeps those from dominating.
    atol = float(ml_dtypes.finfo(ref.dtype if ref.dtype.kind != "c" else
                                 np.zeros((), ref.dtype).real.dtype).tiny) * 4
    if name in ("lgamma", "digamma") and dt == F32:   # near their roots only absolute
        atol = 1e-6                                   # error is meaningful
    np.testing.assert_allclose(o, r, rtol=tol, atol=atol, equal_nan=True, err_msg=name)
    # signed zeros and infinities must agree exactly
    fin = np.isfinite(r) & (r == 0)
    if ref.dtype.kind != "c":
        np.testing.assert_array_equal(np.signbit(o.real[fin]), np.signbit(r.real[fin]),
                                      err_msg=f"{name}: sign of zero")


def _jax_fn(name):
    return getattr(jax.lax, name)


def _check_eager(name, dt, shape, seed):
    rng = np.random.default_rng(seed)
    xs = _inputs(rng, name, dt, shape)
    ours = getattr(lax, name)(*[Array(x) for x in xs])
    assert isinstance(ours, Array)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = _jax_elementwise(_jax_fn(name), xs)
    compare(ours, ref, name, dt)


ORACLE_LEN = 16


def _jax_elementwise(fn, xs):
    """JAX's result for elementwise ``fn``, evaluated on the inputs flattened and padded
    to a fixed length so JAX compiles once per op and dtype rather than per shape."""
    shape = np.shape(xs[0])
    flat = [np.resize(np.ravel(x), ORACLE_LEN) if np.size(x) else
            np.zeros(ORACLE_LEN, np.asarray(x).dtype) for x in xs]
    out = np.asarray(fn(*flat))
    return out[:int(np.prod(shape, dtype=int))].reshape(shape)


EAGER_CASES = [(n, dt) for n, spec in OPS.items() for dt in spec[1]]


@pytest.mark.parametrize("name,dt", EAGER_CASES, ids=[f"{n}-{d.name}" for n, d in EAGER_CASES])
@settings(max_examples=2)
@given(seed=st.integers(0, 2**31 - 1))
def test_eager_vs_jax(name, dt, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # our impls must not warn (XLA is silent)
        for shape in SHAPES:
            _check_eager(name, dt, shape, seed)


EAGER64_CASES = [(n, dt) for n, spec in OPS.items() for dt in spec[2]]


@pytest.mark.parametrize("name,dt", EAGER64_CASES, ids=[f"{n}-{d.name}" for n, d in EAGER64_CASES])
@settings(max_examples=1)
@given(seed=st.integers(0, 2**31 - 1))
def test_eager_vs_jax_x64(name, dt, seed):
    with x64_mode(), warnings.catch_warnings():
        warnings.simplefilter("error")
        for shape in SHAPES:
            _check_eager(name, dt, shape, seed)


# ----------------------------------------------------------------- parametrised ops

@pytest.mark.parametrize("dt", FLOATS + [C64])
@pytest.mark.parametrize("y", [0, 1, 2, 3, 5, -1, -2, -3])
def test_integer_pow_vs_jax(dt, y):
    rng = np.random.default_rng(y + 10)
    x = make(rng, (7,), dt)
    compare(lax.integer_pow(Array(x), y), jax.lax.integer_pow(x, y), "integer_pow", dt)


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("y", [0, 1, 2, 3, 7])
def test_integer_pow_ints_wrap(dt, y):
    x = make(np.random.default_rng(y), (9,), dt)
    compare(lax.integer_pow(Array(x), y), jax.lax.integer_pow(x, y), "integer_pow", dt)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("method", [0, 1])
def test_round_vs_jax(dt, method):
    x = np.concatenate([_specials(dt), np.arange(-3, 3.5, 0.5, dtype=np.float32).astype(dt),
                        np.array([0.49999997, -0.49999997, 2.5000002], np.float32).astype(dt)])
    compare(lax.round(Array(x), method), jax.lax.round(x, method), "round", dt)
    compare(lax.round(Array(x), rounding_method=ew.RoundingMethod(method)),
            jax.lax.round(x, jax.lax.RoundingMethod(method)), "round", dt)


@pytest.mark.parametrize("xdt,ydt", [(F32, F32), (F32, I32), (F16, I8), (BF16, BF16), (C64, C64),
                                     (C64, I32), (F32, U8)])
@settings(max_examples=5)
@given(seed=st.integers(0, 2**31 - 1), shape=st.sampled_from(SHAPES))
def test_pow_vs_jax(xdt, ydt, seed, shape):
    rng = np.random.default_rng(seed)
    x = make(rng, shape, xdt, domain=(0.5, 3) if xdt == C64 else None)  # XLA: 0**z is nan
    y = make(rng, shape, ydt, domain=(0, 5) if ydt.kind == "u" else (-4, 4) if ydt.kind == "i"
             else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = jax.lax.pow(x, y)
    # complex pow near 0/inf differs in the branch XLA picks; compare finite results there
    compare(lax.pow(Array(x), Array(y)), ref, "pow", xdt if xdt != C64 else C64)


CONVERT_DTS = [F32, F16, BF16, I32, U8, BOOL, C64]


@pytest.mark.parametrize("src", CONVERT_DTS)
@pytest.mark.parametrize("dst", CONVERT_DTS)
def test_convert_element_type_vs_jax(src, dst):
    rng = np.random.default_rng(0)
    x = make(rng, (40,), src)
    if src.kind in "fc" or src == BF16:   # out-of-range values saturate on XLA's CPU
        big = np.array([3e9, -3e9, 300, -300, 70000, -1e30, 255.9, -0.9], np.float64)
        x = np.concatenate([x, big.astype(src)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = jax.lax.convert_element_type(x, dst)
        ours = lax.convert_element_type(Array(x), dst)
    compare(ours, ref, "convert_element_type", dst if dst != BOOL else BOOL)
    assert not ours.weak_type


@pytest.mark.parametrize("src,dst,shape", [(F32, I32, (3,)), (F32, U8, (2, 3)), (I8, I16, (3, 2)),
                                           (U8, F32, (2, 4)), (I32, F32, ()), (F16, I16, (4,)),
                                           (BF16, U8, (3,)), (I16, BF16, (2,))])
def test_bitcast_convert_type_vs_jax(src, dst, shape):
    x = make(np.random.default_rng(1), shape, src)
    compare(lax.bitcast_convert_type(Array(x), dst), jax.lax.bitcast_convert_type(x, dst),
            "bitcast", dst)


@pytest.mark.parametrize("dt", [F32, I32, BF16, BOOL, U8])
@pytest.mark.parametrize("ncases,wdt,wscalar", [(2, BOOL, False), (2, BOOL, True),
                                                (3, I32, False), (1, I32, False),
                                                (3, I32, True), (2, U8, False)])
def test_select_n_vs_jax(dt, ncases, wdt, wscalar):
    rng = np.random.default_rng(ncases)
    shape = (2, 3)
    cases = [make(rng, shape, dt) for _ in range(ncases)]
    wshape = () if wscalar else shape
    which = (rng.random(wshape) < 0.5) if wdt == BOOL else \
        rng.integers(0, ncases, wshape).astype(wdt)
    compare(lax.select_n(Array(np.asarray(which)), *[Array(c) for c in cases]),
            jax.lax.select_n(which, *cases), "select_n", dt)


@pytest.mark.parametrize("dt", [F32, I32, BF16, U8])
@pytest.mark.parametrize("scalar_lo,scalar_hi", [(False, False), (True, False), (True, True)])
def test_clamp_vs_jax(dt, scalar_lo, scalar_hi):
    rng = np.random.default_rng(3)
    x = make(rng, (4, 3), dt)
    lo = make(rng, () if scalar_lo else (4, 3), dt)
    hi = make(rng, () if scalar_hi else (4, 3), dt)
    compare(lax.clamp(Array(lo), Array(x), Array(hi)), jax.lax.clamp(lo, x, hi), "clamp", dt)


def test_clamp_python_scalars_and_nan():
    x = np.array([-1, 0.5, 2, np.nan], np.float32)
    compare(lax.clamp(0.0, Array(x), 1.0), jax.lax.clamp(0.0, x, 1.0), "clamp", F32)
    lo = np.array([np.nan, 0, 0, 0], np.float32)
    compare(lax.clamp(Array(lo), Array(x), 1.0), jax.lax.clamp(lo, x, np.float32(1)), "clamp", F32)


# ----------------------------------------------------------------- edge semantics (exact)

EDGE = [
    ("div", [np.int32([7, -7, 7, -7, 5, 0, -2**31, -2**31, -5]), np.int32([2, 2, -2, -2, 0, 0, -1, 0, 3])]),
    ("rem", [np.int32([7, -7, 7, -7, 5, 0, -2**31, -2**31, -5]), np.int32([2, 2, -2, -2, 0, 0, -1, 0, 3])]),
    ("div", [np.int8([7, -7, -128, 127]), np.int8([0, 0, -1, -128])]),
    ("rem", [np.int8([7, -7, -128, 127]), np.int8([0, 0, -1, -128])]),
    ("div", [np.uint32([7, 5, 0, 2**32 - 1]), np.uint32([2, 0, 0, 7])]),
    ("rem", [np.uint32([7, 5, 0, 2**32 - 1]), np.uint32([2, 0, 0, 7])]),
    ("rem", [np.float32([5.5, -5.5, 1, np.inf, 3]), np.float32([2, 2, 0, 1, np.inf])]),
    ("div", [np.float32([1, -1, 0, -0.0]), np.float32([0, 0, 0, 5])]),
    ("shift_left", [np.int32([1, 1, 1, -1, 3]), np.int32([31, 32, 33, -1, 0])]),
    ("shift_right_arithmetic", [np.int32([-8, -8, 8, -8, 8]), np.int32([1, 32, 40, -1, 31])]),
    ("shift_right_logical", [np.int32([-8, -8, 8, -1]), np.int32([1, 32, -1, 31])]),
    ("shift_right_arithmetic", [np.uint8([200, 200, 200]), np.uint8([1, 8, 255])]),
    ("max", [np.float32([np.nan, 1, 0.0, -0.0, -0.0]), np.float32([1, np.nan, -0.0, 0.0, -0.0])]),
    ("min", [np.float32([np.nan, 1, 0.0, -0.0, 0.0]), np.float32([1, np.nan, -0.0, 0.0, 0.0])]),
    ("sign", [np.float32([-0.0, 0.0, np.nan, -3, np.inf])]),
    ("sign", [np.complex64([3 + 4j, 0, -2j])]),
    ("abs", [np.int32([-2**31, -5, 5])]),
    ("abs", [np.int8([-128, -1])]),
    ("abs", [np.complex64([3 + 4j, -0.0])]),
    ("nextafter", [np.float32([0, 1, np.nan, -0.0]), np.float32([1, 0, 1, 1])]),
    ("lgamma", [np.float32([0, -1, -0.5, np.inf, -np.inf, np.nan, -0.0, 1, 2])]),
    ("digamma", [np.float32([0, -1, np.inf, np.nan, -0.0, 1, -0.5, 1e-3])]),
    ("erf_inv", [np.float32([-1, 1, 1.5, -1.5, 0, np.nan, -0.0])]),
    ("erf", [np.float32([np.inf, -np.inf, np.nan, -0.0, 10])]),
    ("erfc", [np.float32([np.inf, -np.inf, np.nan, 0, 30])]),
    ("logistic", [np.float32([-100, 0, 100, np.inf, -np.inf])]),
    ("rsqrt", [np.float32([0, -0.0, -1, np.inf, 4])]),
    ("atan2", [np.float32([0, -0.0, 1, 0, -0.0]), np.float32([-1, -1, 0, -0.0, 0])]),
    ("eq", [np.float32([np.nan, 0]), np.float32([np.nan, -0.0])]),
    ("lt", [np.float32([np.nan, -0.0]), np.float32([1, 0])]),
    ("population_count", [np.int32([-1, 7, 0, -2**31])]),
    ("population_count", [np.uint8([255, 128])]),
    ("bitwise_not", [np.bool_([True, False])]),
    ("bitwise_not", [np.uint16([0, 65535])]),
    ("neg", [np.int32([-2**31]), ]),
    ("neg", [np.uint8([1, 0])]),
    ("square", [np.int32([70000])]),
    ("is_finite", [np.float16([np.nan, np.inf, 65504])]),
]


@pytest.mark.parametrize("name,args", EDGE, ids=[f"{e[0]}-{i}" for i, e in enumerate(EDGE)])
def test_edge_semantics_vs_jax(name, args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = getattr(lax, name)(*[Array(a) for a in args])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = getattr(jax.lax, name)(*args)
    compare(ours, ref, name, np.asarray(args[0]).dtype)


def test_bf16_nextafter_denormal():
    x, y = np.array([0, 1], BF16), np.array([1, 0], BF16)
    compare(lax.nextafter(Array(x), Array(y)), jax.lax.nextafter(x, y), "nextafter", BF16)


# ----------------------------------------------------------------- weak types, scalars

def test_python_scalars_and_weak_types():
    x = Array(np.arange(3, dtype=np.float32))
    for out, ref in [(lax.add(x, 2.5), jax.lax.add(jnp.arange(3, dtype=jnp.float32), 2.5)),
                     (lax.mul(2.0, 3.0), jax.lax.mul(2.0, 3.0)),
                     (lax.add(2, 3), jax.lax.add(2, 3)),
                     (lax.sin(1.0), jax.lax.sin(1.0)),
                     (lax.sub(Array(np.float32(1.0), weak_type=True), 2.0), jax.lax.sub(1.0, 2.0))]:
        assert out.dtype == ref.dtype and out.weak_type == ref.weak_type
        np.testing.assert_allclose(np.asarray(out), np.asarray(ref))
    # comparisons of weak inputs are weak bools, as JAX's; convert is strong
    assert lax.lt(1.0, 2.0).weak_type == jax.lax.lt(1.0, 2.0).weak_type == True  # noqa: E712
    assert lax.lt(1.0, 2.0).dtype == BOOL
    assert lax.is_finite(1.0).weak_type == jax.lax.is_finite(1.0).weak_type
    assert lax.lt(np.float32(1), 2.0).weak_type == jax.lax.lt(np.float32(1), 2.0).weak_type
    assert not lax.convert_element_type(1.0, np.float32).weak_type
    assert lax.add(x, 2.5).dtype == F32 and not lax.add(x, 2.5).weak_type
    # a Python scalar takes the array operand's dtype when its kind fits (lax.add(x, 2)
    # raises in JAX; accepting it is a documented convenience)
    assert lax.mul(x, 2).dtype == F32
    bf = Array(np.ones(2, BF16))
    assert lax.add(bf, 1.5).dtype == BF16
    # rank-0 operands broadcast, as in jax.lax
    assert lax.add(x, Array(np.float32(1))).shape == (3,)
    assert np.asarray(lax.add(Array(np.ones((3, 1), np.float32)),
                              Array(np.ones((1, 2), np.float32)))).shape == (3, 2)
    # numpy float64 inputs are canonicalised to float32 with x64 off
    assert lax.add(np.ones(3), 1.0).dtype == F32


def test_stop_gradient_pytree_and_jvp():
    tree = {"a": Array(np.float32([1, 2])), "b": (Array(np.int32([1])), 3.0)}
    out = lax.stop_gradient(tree)
    assert set(out) == {"a", "b"} and out["b"][0].dtype == I32
    np.testing.assert_array_equal(np.asarray(out["a"]), [1, 2])
    x = Array(np.float32([1.0, 2.0]))
    _, (t,) = ad.jvp_flat(lambda v: [lax.mul(v, lax.stop_gradient(v))], [x],
                          [Array(np.ones(2, np.float32))])
    np.testing.assert_allclose(np.asarray(t), [1, 2])


# ----------------------------------------------------------------- errors

ERRORS = [
    (lambda: lax.add(Array(np.float32([1])), Array(np.int32([1]))), TypeError,
     "add requires arguments to have the same dtypes, got float32, int32"),
    (lambda: lax.add(Array(np.float32([1, 2, 3])), Array(np.float32([1, 2]))), TypeError,
     "shapes"),
    (lambda: lax.add(Array(np.ones((2, 3), np.float32)), Array(np.ones(3, np.float32))),
     TypeError, "number of dimensions"),
    (lambda: lax.sin(Array(np.int32([1]))), TypeError,
     "sin does not accept dtype int32. Accepted dtypes are subtypes of floating, complexfloating."),
    (lambda: lax.add(Array(np.bool_([1])), Array(np.bool_([1]))), TypeError,
     "add does not accept dtype bool at position 0"),
    (lambda: lax.pow(Array(np.int32([2])), Array(np.int32([3]))), TypeError,
     "pow does not accept dtype int32 at position 0"),
    (lambda: lax.pow(Array(np.float32([2])), Array(np.float16([3]))), TypeError, "pow"),
    (lambda: lax.integer_pow(Array(np.int32([2])), -2), TypeError, "negative powers"),
    (lambda: lax.integer_pow(Array(np.float32([2])), 1.5), TypeError, "static Python int"),
    (lambda: lax.shift_left(Array(np.float32([2])), Array(np.float32([1]))), TypeError,
     "shift_left does not accept dtype float32"),
    (lambda: lax.bitwise_and(Array(np.float32([2])), Array(np.float32([1]))), TypeError, "and"),
    (lambda: lax.population_count(Array(np.bool_([1]))), TypeError, "population_count"),
    (lambda: lax.abs(Array(np.uint8([1]))), TypeError, "abs does not accept dtype uint8"),
    (lambda: lax.real(Array(np.float32([1]))), TypeError, "real does not accept dtype float32"),
    (lambda: lax.complex(Array(np.float16([1])), Array(np.float16([1]))), TypeError, "complex"),
    (lambda: lax.lt(Array(np.complex64([1])), Array(np.complex64([1]))), TypeError, "lt"),
    (lambda: lax.rem(Array(np.complex64([1])), Array(np.complex64([1]))), TypeError, "rem"),
    (lambda: lax.select_n(Array(np.bool_([1, 0])), Array(np.ones(2, np.float32)),
                          Array(np.ones(2, np.float32)), Array(np.ones(2, np.float32))),
     TypeError, "boolean `which` cannot have > 2 cases"),
    (lambda: lax.select_n(Array(np.float32([1, 0])), Array(np.ones(2, np.float32))), TypeError,
     "must be boolean or integer"),
    (lambda: lax.select_n(Array(np.bool_([1, 0])), Array(np.ones(2, np.float32)),
                          Array(np.ones(3, np.float32))), TypeError, "same shapes"),
    (lambda: lax.select_n(Array(np.bool_([1, 0])), Array(np.ones(2, np.float32)),
                          Array(np.ones(2, np.int32))), TypeError, "same dtypes"),
    (lambda: lax.select_n(Array(np.bool_([1, 0, 1])), Array(np.ones(2, np.float32)),
                          Array(np.ones(2, np.float32))), TypeError, "`which`"),
    (lambda: lax.select_n(Array(np.bool_(1))), ValueError, "at least one case"),
    (lambda: lax.clamp(Array(np.zeros(2, np.float32)), Array(np.ones(3, np.float32)), 1.0),
     TypeError, "min.shape"),
    (lambda: lax.clamp(Array(np.int32(0)), Array(np.ones(3, np.float32)), 1.0), TypeError,
     "same dtypes"),
    (lambda: lax.bitcast_convert_type(Array(np.int8([[1, 2]])), np.int32), ValueError, "int8"),
    (lambda: lax.bitcast_convert_type(Array(np.bool_([1])), np.int8), TypeError, "bool"),
    (lambda: lax.round(Array(np.float32([1])), 3), ValueError, "rounding_method"),
    (lambda: lax.add(Array(np.ones(2, np.uint8)), 300), TypeError, "out of bounds"),
    (lambda: lax.add(Array(np.int32([1])), 2.5), TypeError, "same dtypes"),
    (lambda: lax.add(Array(np.float32([1])), "a"), TypeError, "not a valid array"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors(fn, exc, msg):
    with pytest.raises(exc, match=None) as info:
        fn()
    assert msg in str(info.value), str(info.value)


def test_errors_match_jax_category():
    """Wherever JAX rejects a call with array operands, we reject it the same way."""
    cases = [("sin", [np.int32([1])]), ("add", [np.float32([1]), np.int32([1])]),
             ("pow", [np.int32([2]), np.int32([3])]), ("abs", [np.uint8([1])]),
             ("lt", [np.complex64([1]), np.complex64([1])]), ("cbrt", [np.complex64([1])]),
             ("conj", [np.float16([1])]), ("bitwise_not", [np.float32([1])])]
    for name, args in cases:
        with pytest.raises(TypeError):
            getattr(jax.lax, name)(*args)
        with pytest.raises(TypeError):
            getattr(lax, name)(*[Array(a) for a in args])


def test_abstract_eval_errors_when_staged():
    f32, i32 = core.ShapedArray((3,), F32), core.ShapedArray((3,), I32)
    with pytest.raises(TypeError, match="sin does not accept dtype int32"):
        trace_to_jaxpr(lambda x: [ew.sin_p.bind(x)], [i32])
    with pytest.raises(TypeError, match=r"add requires arguments of equal dtypes, got f32\[3\], i32\[3\]"):
        trace_to_jaxpr(lambda x, y: [ew.add_p.bind(x, y)], [f32, i32])
    with pytest.raises(TypeError, match="equal shapes"):
        trace_to_jaxpr(lambda x, y: [ew.mul_p.bind(x, y)], [f32, core.ShapedArray((2,), F32)])
    jaxpr, _ = trace_to_jaxpr(lambda x, y: [ew.lt_p.bind(x, y),
                                            ew.convert_element_type_p.bind(
                                                x, new_dtype=I32, weak_type=True)],
                              [core.ShapedArray((3,), F32, True)] * 2)
    assert [v.aval for v in jaxpr.outvars] == [core.ShapedArray((3,), BOOL, True),   # as JAX
                                               core.ShapedArray((3,), I32, True)]


def test_staged_avals_match_eager():
    """Abstract eval and impl agree on dtype/shape for every op in the table."""
    rng = np.random.default_rng(0)
    for name, (arity, dts, _, _) in OPS.items():
        for dt in dts:
            xs = _inputs(rng, name, dt, (2,))
            eager = getattr(lax, name)(*[Array(x) for x in xs])
            jaxpr, _ = trace_to_jaxpr(lambda *a: [getattr(lax, name)(*a)],
                                      [core.ShapedArray(x.shape, x.dtype) for x in xs])
            assert jaxpr.outvars[0].aval.dtype == eager.dtype, (name, dt)
            assert jaxpr.outvars[0].aval.shape == eager.shape, (name, dt)


# ----------------------------------------------------------------- JVP vs finite differences

# name -> (arity, domain in which the function is smooth)
DIFF = {
    "add": (2, (-3, 3)), "sub": (2, (-3, 3)), "mul": (2, (-3, 3)), "div": (2, (0.5, 3)),
    "rem": (2, (0.6, 3)), "max": (2, (-3, 3)), "min": (2, (-3, 3)), "neg": (1, (-3, 3)),
    "exp": (1, (-3, 3)), "exp2": (1, (-3, 3)), "log": (1, (0.2, 3)), "log1p": (1, (-0.5, 3)),
    "expm1": (1, (-3, 3)), "tanh": (1, (-3, 3)), "logistic": (1, (-3, 3)), "sin": (1, (-3, 3)),
    "cos": (1, (-3, 3)), "tan": (1, (-1.2, 1.2)), "asin": (1, (-0.9, 0.9)),
    "acos": (1, (-0.9, 0.9)), "atan": (1, (-3, 3)), "atan2": (2, (0.3, 3)),
    "sinh": (1, (-3, 3)), "cosh": (1, (-3, 3)), "asinh": (1, (-3, 3)), "acosh": (1, (1.2, 4)),
    "atanh": (1, (-0.9, 0.9)), "sqrt": (1, (0.2, 3)), "rsqrt": (1, (0.2, 3)),
    "cbrt": (1, (0.2, 3)), "abs": (1, (0.1, 3)), "square": (1, (-3, 3)), "erf": (1, (-2, 2)),
    "erfc": (1, (-2, 2)), "erf_inv": (1, (-0.9, 0.9)), "lgamma": (1, (0.3, 5)),
    "pow": (2, (0.3, 2)), "floor": (1, (0.1, 0.9)), "sign": (1, (0.1, 3)),
}


def _fd(f, xs, ts, eps=1e-6):
    plus = f(*[x + eps * t for x, t in zip(xs, ts)])
    minus = f(*[x - eps * t for x, t in zip(xs, ts)])
    return (np.asarray(plus) - np.asarray(minus)) / (2 * eps)


@pytest.mark.parametrize("name", sorted(DIFF))
@settings(max_examples=3)
@given(seed=st.integers(0, 2**31 - 1), shape=st.sampled_from([(), (3,), (2, 2)]))
def test_jvp_vs_finite_differences(name, seed, shape):
    arity, (lo, hi) = DIFF[name]
    rng = np.random.default_rng(seed)
    with x64_mode():
        xs = [rng.uniform(lo, hi, shape) for _ in range(arity)]
        if name in ("max", "min"):   # keep away from ties
            xs[1] = xs[0] + np.where(rng.random(shape) < 0.5, 0.5, -0.5)
        if name == "rem":   # keep x/y away from integers, where rem jumps
            xs[0] = xs[1] * (np.floor(xs[0] / xs[1]) + rng.uniform(0.1, 0.9, shape))
        ts = [rng.normal(size=shape) for _ in range(arity)]
        f = getattr(lax, name)
        (p,), (t,) = ad.jvp_flat(lambda *a: [f(*a)], [Array(x) for x in xs],
                                 [Array(t) for t in ts])
        np.testing.assert_allclose(np.asarray(p), np.asarray(f(*[Array(x) for x in xs])))
        fd = _fd(lambda *a: f(*[Array(v) for v in a]), xs, ts)
        t = np.zeros(shape) if type(t) is ad.Zero else np.asarray(t)
        np.testing.assert_allclose(t, fd, rtol=1e-5, atol=1e-6)


def test_jvp_special_cases():
    with x64_mode():
        x = np.array([0.3, 1.7, 2.2])
        ones = np.ones(3)
        fd = lambda f: _fd(lambda v: f(Array(v)), [x], [ones])  # noqa: E731
        for f in (lambda v: lax.integer_pow(v, 3), lambda v: lax.integer_pow(v, -2),
                  lambda v: lax.integer_pow(v, 1), lambda v: lax.integer_pow(v, 0),
                  lambda v: lax.pow(v, Array(np.int32([2, 3, 0]).astype(np.int64))),
                  lambda v: lax.clamp(0.5, v, 2.0), lambda v: lax.clamp(v, Array(ones), 2.0),
                  lambda v: lax.clamp(0.0, Array(ones), v),
                  lambda v: lax.select(lax.gt(v, 1.0), lax.sin(v), lax.mul(v, v)),
                  lambda v: lax.real(lax.complex(v, lax.mul(v, v))),
                  lambda v: lax.imag(lax.mul(lax.complex(v, v), lax.complex(v, 2.0))),
                  lambda v: lax.abs(lax.complex(v, 1.0)),
                  lambda v: lax.real(lax.conj(lax.complex(v, v)))):
            _, (t,) = ad.jvp_flat(lambda v: [f(v)], [Array(x)], [Array(ones)])
            t = np.zeros(3) if type(t) is ad.Zero else np.asarray(t, np.float64)
            np.testing.assert_allclose(t, fd(f), rtol=1e-4, atol=1e-6)
        # int-valued outputs and comparisons have symbolic-zero tangents
        _, (t,) = ad.jvp_flat(lambda v: [lax.convert_element_type(v, np.int32)], [Array(x)],
                              [Array(ones)])
        assert type(t) is ad.Zero and t.aval.dtype == ad.float0
        _, (t,) = ad.jvp_flat(lambda v: [lax.lt(v, 1.0)], [Array(x)], [Array(ones)])
        assert type(t) is ad.Zero


# ----------------------------------------------------------------- transposes (dot-product test)

def _vdot(a, b):
    return np.sum(np.real(np.asarray(a, np.complex128) * np.asarray(b, np.complex128)))


LINEARIZED = [  # (function of the tangent-carrying inputs, input dtypes)
    ("add", lambda x, y: lax.add(x, y), [F64, F64]),
    ("sub", lambda x, y: lax.sub(x, y), [F64, F64]),
    ("neg", lambda x: lax.neg(x), [F64]),
    ("mul", lambda x, y: lax.mul(x, y), [F64, F64]),
    ("div", lambda x, y: lax.div(x, y), [F64, F64]),
    ("sin-cos", lambda x: lax.cos(lax.sin(x)), [F64]),
    ("max", lambda x, y: lax.max(x, y), [F64, F64]),
    ("convert", lambda x: lax.convert_element_type(x, np.float32), [F64]),
    ("convert-c", lambda x: lax.convert_element_type(x, np.complex128), [F64]),
    ("real", lambda z: lax.real(z), [C128]),
    ("imag", lambda z: lax.imag(z), [C128]),
    ("conj", lambda z: lax.conj(z), [C128]),
    ("conj-real", lambda x: lax.conj(x), [F64]),
    ("complex", lambda x, y: lax.complex(x, y), [F64, F64]),
    ("select_n", lambda x, y, z: lax.select_n(Array(np.array([0, 1, 2, 1, 0, 2], np.int32)
                                                     .reshape(2, 3)), x, y, z), [F64] * 3),
    ("select", lambda x, y: lax.select(Array(np.array([[True, False, True]] * 2)), x, y),
     [F64, F64]),
    ("clamp", lambda x: lax.clamp(-0.5, x, 0.5), [F64]),
    ("erf_inv", lambda x: lax.erf_inv(lax.mul(x, 0.3)), [F64]),
    ("tanh-sqrt", lambda x: lax.tanh(lax.sqrt(lax.abs(x))), [F64]),
    ("pow", lambda x, y: lax.pow(lax.abs(x), y), [F64, F64]),
    ("integer_pow", lambda x: lax.integer_pow(x, 3), [F64]),
    ("atan2", lambda x, y: lax.atan2(x, y), [F64, F64]),
    ("abs-complex", lambda z: lax.abs(z), [C128]),
]


@pytest.mark.parametrize("name,f,dts", LINEARIZED, ids=[c[0] for c in LINEARIZED])
@settings(max_examples=2)
@given(seed=st.integers(0, 2**31 - 1))
def test_transpose_dot_product(name, f, dts, seed):
    rng = np.random.default_rng(seed)
    shape = (2, 3)
    with x64_mode():
        def r(dt):
            v = rng.uniform(0.2, 1.5, shape) * rng.choice([-1, 1], shape)
            return (v + 1j * rng.normal(size=shape)).astype(dt) if dt.kind == "c" else v.astype(dt)
        xs = [r(dt) for dt in dts]
        outs, lin = ad.linearize_flat(lambda *a: [f(*a)], [Array(x) for x in xs])
        ts = [r(dt) for dt in dts]
        (y,) = lin(*[Array(t) for t in ts])
        ct = r(np.asarray(outs[0]).dtype)
        cts = lin.transpose([Array(ct)])
        lhs = sum(_vdot(c, t) for c, t in zip(cts, ts) if type(c) is not ad.Zero)
        rhs = _vdot(ct, y)
        rtol = 1e-5 if np.asarray(outs[0]).dtype == F32 else 1e-10
        np.testing.assert_allclose(lhs, rhs, rtol=rtol, atol=1e-10)
        # the linear map itself matches the JVP
        _, (t_jvp,) = ad.jvp_flat(lambda *a: [f(*a)], [Array(x) for x in xs],
                                  [Array(t) for t in ts])
        np.testing.assert_allclose(np.asarray(y), np.asarray(t_jvp), rtol=1e-10)


def test_transpose_rules_directly():
    """Each linear primitive's rule, checked on its own (no linearize in between)."""
    rng = np.random.default_rng(0)
    with x64_mode():
        x, y, ct = (rng.normal(size=(3,)) for _ in range(3))
        z = rng.normal(size=3) + 1j * rng.normal(size=3)
        U = ad.UndefinedPrimal
        av = lambda v: core.get_aval(Array(v))  # noqa: E731
        cases = [  # (prim, args with one UndefinedPrimal, the linear map of that arg, params)
            (ew.add_p, [U(av(x)), Array(y)], lambda t: t + y - y, {}),
            (ew.sub_p, [Array(x), U(av(y))], lambda t: x - t - x, {}),
            (ew.mul_p, [Array(x), U(av(y))], lambda t: x * t, {}),
            (ew.div_p, [U(av(x)), Array(y)], lambda t: t / y, {}),
            (ew.neg_p, [U(av(x))], lambda t: -t, {}),
            (ew.real_p, [U(av(z))], np.real, {}),
            (ew.imag_p, [U(av(z))], np.imag, {}),
            (ew.conj_p, [U(av(z))], np.conj, {}),
            (ew.complex_p, [U(av(x)), Array(y)], lambda t: t + 0j, {}),
            (ew.complex_p, [Array(x), U(av(y))], lambda t: 1j * t, {}),
            (ew.convert_element_type_p, [U(av(x))], lambda t: t.astype(np.complex128),
             dict(new_dtype=C128, weak_type=False)),
        ]
        for prim, args, lin, params in cases:
            i = next(k for k, a in enumerate(args) if isinstance(a, U))
            t = (rng.normal(size=3) + (1j * rng.normal(size=3) if args[i].aval.dtype == C128
                                       else 0)).astype(args[i].aval.dtype)
            out = lin(t)
            c = (rng.normal(size=3) + (1j * rng.normal(size=3) if np.iscomplexobj(out) else 0))
            res = ad.transpose_rules[prim](Array(c.astype(np.asarray(out).dtype)), *args, **params)
            np.testing.assert_allclose(_vdot(res[i], t), _vdot(c, out), rtol=1e-10,
                                       err_msg=prim.name)


# ----------------------------------------------------------------- batching vs a Python loop

def vmap_local(f, in_axes, size):
    """A tiny vmap: wrap args in BatchTracers, run, move the batch axis to 0."""
    def run(*args):
        trace = batching.BatchTrace(core.current_trace(), batching.AxisData(size))
        ins = [a if d is None else batching.BatchTracer(trace, a, d)
               for a, d in zip(args, in_axes)]
        with core.running(trace):
            out = f(*ins)
        v, d = trace.unpack(out)
        v = np.asarray(v)
        return np.broadcast_to(v, (size,) + v.shape) if d is None else np.moveaxis(v, d, 0)
    return run


def loop(f, in_axes, size):
    def run(*args):
        outs = [np.asarray(f(*[a if d is None else Array(np.take(np.asarray(a), i, axis=d))
                               for a, d in zip(args, in_axes)])) for i in range(size)]
        return np.stack(outs)
    return run


def _check_batched(f, args, in_axes, size):
    args = [Array(a) for a in args]
    # the batching rules are checked on the NumPy reference, whose elements do not depend
    # on the array's size; XLA's vectorized kernels may round the elements of a (4, 3)
    # array and of a (3,) one differently (JAX's vmap and loop differ alike)
    with xform.config.override("xform_eager_numpy_numerics", True):
        got = vmap_local(f, in_axes, size)(*args)
        want = loop(f, in_axes, size)(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def _batched_arg(rng, per_example_shape, dt, axis, size, domain=None):
    if axis is None:
        return make(rng, per_example_shape, dt, domain)
    shape = list(per_example_shape)
    shape.insert(axis, size)
    return make(rng, tuple(shape), dt, domain)


BATCH_CASES = [(n, spec[1][0]) for n, spec in OPS.items()]


@pytest.mark.parametrize("name,dt", BATCH_CASES, ids=[c[0] for c in BATCH_CASES])
@settings(max_examples=3)
@given(data=st.data())
def test_batching_vs_loop(name, dt, data):
    arity, _, _, domain = OPS[name]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    shape = data.draw(st.sampled_from([(3,), (2, 3), ()]))
    axes = [data.draw(st.sampled_from([0, len(shape), None] if arity > 1 else [0, len(shape)]))
            for _ in range(arity)]
    if all(a is None for a in axes):
        axes[0] = 0
    size = 4
    args = [_batched_arg(rng, shape, dt, a, size, domain) for a in axes]
    if name.startswith("shift"):
        args[1] = _shift_amounts(rng, args[1].shape, dt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check_batched(getattr(lax, name), args, axes, size)


@pytest.mark.parametrize("wax,cax", [(0, None), (0, 0), (None, 0), (1, 0), (0, 1), (None, 1)])
@pytest.mark.parametrize("wscalar", [False, True])
def test_select_n_batching(wax, cax, wscalar):
    rng = np.random.default_rng(0)
    size, shape = 3, (2, 4)
    wshape = () if wscalar else shape
    if wscalar and wax == 1:
        wax = 0
    which = _batched_arg(rng, wshape, I32, wax, size)
    which = np.abs(which) % 3
    cases = [_batched_arg(rng, shape, F32, cax, size) for _ in range(3)]
    _check_batched(lambda w, *c: lax.select_n(w, *c), [which.astype(np.int32)] + cases,
                   [wax] + [cax] * 3, size)
    pred = _batched_arg(rng, wshape, BOOL, wax, size)
    _check_batched(lambda p, a, b: lax.select(p, a, b), [pred] + cases[:2], [wax, cax, cax], size)
    # cases batched differently from each other
    if cax is not None:
        _check_batched(lambda p, a, b: lax.select(p, a, b),
                       [pred, cases[0], np.take(cases[1], 0, axis=cax)],
                       [wax, cax, None], size)


@pytest.mark.parametrize("lo_ax,x_ax,hi_ax", [(None, 0, None), (0, 0, 0), (0, None, None),
                                              (None, 1, 0), (0, 1, None), (None, None, 0)])
@pytest.mark.parametrize("scalar_bounds", [False, True])
def test_clamp_batching(lo_ax, x_ax, hi_ax, scalar_bounds):
    rng = np.random.default_rng(1)
    size, shape = 3, (2, 4)
    bshape = () if scalar_bounds else shape
    if scalar_bounds:
        lo_ax = 0 if lo_ax is not None else None
        hi_ax = 0 if hi_ax is not None else None
    lo = _batched_arg(rng, bshape, F32, lo_ax, size, (-2, 0))
    x = _batched_arg(rng, shape, F32, x_ax, size)
    hi = _batched_arg(rng, bshape, F32, hi_ax, size, (0, 2))
    if lo_ax is None and x_ax is None and hi_ax is None:
        return
    _check_batched(lax.clamp, [lo, x, hi], [lo_ax, x_ax, hi_ax], size)


@pytest.mark.parametrize("f,dt", [(lambda x: lax.integer_pow(x, 3), F32),
                                  (lambda x: lax.round(x, 1), F32),
                                  (lambda x: lax.convert_element_type(x, np.int8), F32),
                                  (lambda x: lax.bitcast_convert_type(x, np.uint8), F32),
                                  (lambda x: lax.bitcast_convert_type(x, np.int16), U8),
                                  (lambda x: lax.stop_gradient(x), F32),
                                  (lambda x: lax.pow(x, Array(np.int32(2))), F32)])
@pytest.mark.parametrize("axis", [0, 1])
def test_batching_param_ops(f, dt, axis):
    rng = np.random.default_rng(2)
    x = _batched_arg(rng, (2, 2), dt, axis, 3)
    _check_batched(f, [x], [axis], 3)


def test_batching_under_jvp():
    """vmap of a JVP (the batch trace is the parent of the JVP trace)."""
    x = np.random.default_rng(3).uniform(0.5, 2, (4, 3))
    with x64_mode():
        def f(v):
            _, (t,) = ad.jvp_flat(lambda u: [lax.mul(lax.sin(u), lax.log(u))], [v],
                                  [Array(np.ones(3))])
            return t
        _check_batched(f, [x], [0], 4)


# ----------------------------------------------------------------- eager hot path

def test_nextafter_of_equal_signed_zeros_returns_y_as_jax():
    """nextafter(x, y) is y when x == y (C, XLA, JAX); NumPy's float16 loop returns x,
    which flipped the sign of nextafter(0, -0) in the eager reference."""
    for dt in (np.float16, BF16, np.float32):
        for a, b in ((0.0, -0.0), (-0.0, 0.0)):
            x, y = np.asarray(a, dt), np.asarray(b, dt)
            ours, ref = np.asarray(lax.nextafter(x, y)), np.asarray(jax.lax.nextafter(x, y))
            assert ours.dtype == ref.dtype and np.signbit(ours) == np.signbit(ref), (dt, a, b)

"""xform.numpy against real jax.numpy: values, shapes, dtypes and weak types."""
import warnings

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import xform
import xform.numpy as xnp
from tests._np_helpers import DTYPES, FLOATS, check, shapes, values

warnings.filterwarnings("ignore", category=RuntimeWarning)

UNARY_FLOAT = ["sin", "cos", "tan", "arctan", "sinh", "cosh", "tanh", "arcsinh", "exp", "exp2",
               "expm1", "log1p", "sqrt", "cbrt", "log", "log2", "log10", "deg2rad", "rad2deg",
               "reciprocal", "rint", "sinc"]
UNARY_ANY = ["negative", "positive", "absolute", "sign", "floor", "ceil", "trunc", "square",
             "isnan", "isinf", "isfinite", "signbit", "logical_not", "round", "real", "imag",
             "conj"]
BINARY = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "fmod",
          "power", "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot", "logaddexp",
          "logaddexp2", "copysign", "heaviside", "equal", "not_equal", "less", "less_equal",
          "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
          "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]


def _both(name, *args, **kw):
    """Run on both; if JAX raises, we must raise the same class."""
    try:
        theirs = getattr(jnp, name)(*[jnp.asarray(a) if isinstance(a, np.ndarray) else a
                                      for a in args], **kw)
    except Exception as e:
        with pytest.raises(type(e) if not isinstance(e, TypeError) else (TypeError,)):
            getattr(xnp, name)(*args, **kw)
        return None, None
    return getattr(xnp, name)(*args, **kw), theirs


@pytest.mark.parametrize("name", UNARY_FLOAT + UNARY_ANY)
@given(data=st.data())
@settings(max_examples=3)
def test_unary(name, data):
    dt = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(shapes)
    if name == "round" and dt == np.bool_:
        dt = np.int32  # JAX raises a ValueError from finfo(bool) here: not a behaviour to copy
    positive = name in ("log", "log2", "log10", "sqrt", "reciprocal")
    isfloat = np.dtype(dt).kind == "f" or dt is ml_dtypes.bfloat16
    lo = (0.125 if isfloat else 0) if positive else -3
    x = data.draw(values(dt, shape, lo=lo, hi=3))
    if name == "reciprocal" and np.dtype(dt).kind in "iub" and dt != ml_dtypes.bfloat16:
        x = x | 1 if dt != np.bool_ else np.ones_like(x)
    ours, theirs = _both(name, x)
    if theirs is not None:
        check(ours, theirs, tol=1e-2 if name in ("tan", "sinc") else None)


# Default run: 2 draws; the slow step runs 4 (the _exhaustive twin).
@pytest.mark.parametrize("name", BINARY)
@given(data=st.data())
@settings(max_examples=2)
def test_binary_broadcast(name, data):
    _test_binary_broadcast(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", BINARY)
@given(data=st.data())
@settings(max_examples=4)
def test_binary_broadcast_exhaustive(name, data):
    _test_binary_broadcast(name, data)


def _test_binary_broadcast(name, data):
    s1, s2 = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                         max_side=3)).input_shapes
    d1 = data.draw(st.sampled_from(DTYPES))
    d2 = data.draw(st.sampled_from([d1] * 3 + DTYPES))
    x, y = data.draw(values(d1, s1)), data.draw(values(d2, s2))
    if name in ("floor_divide", "remainder", "fmod", "true_divide"):
        y = np.where(y == 0, np.ones((), y.dtype), y).astype(y.dtype)
    if name in ("left_shift", "right_shift"):
        y = np.clip(y, 0, 3).astype(y.dtype) if y.dtype != np.bool_ else y
    if name == "power":
        x = np.abs(x).astype(x.dtype) if x.dtype.kind != "b" else x
        y = np.abs(y).astype(y.dtype) if y.dtype.kind != "b" else y
    ours, theirs = _both(name, x, y)
    if theirs is not None:
        check(ours, theirs, tol=5e-2 if name in ("power",) else None)


@pytest.mark.parametrize("name", ["add", "subtract", "true_divide", "power", "less",
                                  "floor_divide"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("scalar", [2, 2.5, True])
def test_weak_scalar_promotion(name, dt, scalar):
    x = np.array([1, 2, 3]).astype(dt)
    for args in ((x, scalar), (scalar, x)):
        ours, theirs = _both(name, *args)
        if theirs is not None:
            # Known difference: JAX marks power(int, 2.5)/power(2, bool) non-weak and
            # comparisons of weak-promoted operands as weak bool; we follow the lattice.
            weak_ok = not (name in ("power", "less") and (
                type(scalar) is float and dt in (np.int32, np.uint8, np.bool_)
                or dt == np.bool_))
            check(ours, theirs, tol=5e-2, check_weak=weak_ok)


def test_weak_scalar_keeps_dtype():
    x = xnp.ones(3, xnp.float16)
    assert (x * 2.0).dtype == np.float16
    assert (xnp.arange(3) / 2).dtype == np.float32
    assert xnp.asarray(3.0).weak_type and not xnp.asarray([3.0]).weak_type
    check(xnp.asarray(2) + 1.5, jnp.asarray(2) + 1.5)
    check(xnp.sin(2), jnp.sin(2))


def test_python_semantics_of_floor_divide_and_mod():
    a = np.array([-7, -3, 3, 7], np.int32)
    b = np.array([2, -2, -2, 2], np.int32)
    np.testing.assert_array_equal(xnp.floor_divide(a, b), a // b)
    np.testing.assert_array_equal(xnp.remainder(a, b), a % b)
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    np.testing.assert_array_equal(xnp.floor_divide(fa, fb), fa // fb)
    np.testing.assert_array_equal(xnp.remainder(fa, fb), fa % fb)


# ----------------------------------------------------------------- reductions

REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "any", "all", "argmax",
              "argmin", "ptp", "count_nonzero", "nansum", "nanmean", "nanmax", "nanmin",
              "median"]


@pytest.mark.parametrize("name", REDUCTIONS)
@given(data=st.data())
@settings(max_examples=4)
def test_reductions(name, data):
    dt = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4))
    x = data.draw(values(dt, shape, -2, 2))
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1))
                     if shape else st.none())
    kw = {"axis": axis}
    if name not in ("argmax", "argmin", "median") or axis is not None:
        kw["keepdims"] = data.draw(st.booleans())
    ours, theirs = _both(name, x, **kw)
    if theirs is not None:
        check(ours, theirs, tol=3e-2 if dt in FLOATS[1:] else 1e-5)


@pytest.mark.parametrize("name", ["sum", "max", "mean", "prod"])
def test_reduction_where_initial_dtype(name):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    where = x % 3 != 0
    kw = {"where": where}
    if name == "max":
        kw["initial"] = -1.0
    check(getattr(xnp, name)(x, axis=1, **kw), getattr(jnp, name)(x, axis=1, **kw))
    if name in ("sum", "prod", "mean"):
        check(getattr(xnp, name)(x, dtype=np.int32) if name != "mean" else
              getattr(xnp, name)(x, dtype=np.float16),
              getattr(jnp, name)(x, dtype=np.int32) if name != "mean" else
              getattr(jnp, name)(x, dtype=np.float16), tol=1e-2)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "nancumsum"])
@pytest.mark.parametrize("dt", DTYPES)
def test_cumulative(name, dt):
    x = (np.arange(12) % 5 - 2).reshape(3, 4).astype(dt)
    for axis in (None, 0, -1):
        check(getattr(xnp, name)(x, axis=axis), getattr(jnp, name)(x, axis=axis), tol=1e-2)


def test_var_ddof_and_average():
    x = np.random.RandomState(0).randn(4, 5).astype(np.float32)
    check(xnp.var(x, axis=0, ddof=1), jnp.var(x, axis=0, ddof=1))
    check(xnp.std(x, ddof=2), jnp.std(x, ddof=2))
    w = np.arange(1, 6, dtype=np.float32)
    check(xnp.average(x, axis=1, weights=w), jnp.average(x, axis=1, weights=w))


# ----------------------------------------------------------------- creation

def test_creation():
    cases = [
        (lambda m: m.zeros((2, 3)), None), (lambda m: m.ones(3, m.int32), None),
        (lambda m: m.full((2,), 7), None), (lambda m: m.full((2,), 7.0, m.float16), None),
        (lambda m: m.arange(5), None), (lambda m: m.arange(1, 7, 2), None),
        (lambda m: m.arange(0.0, 1.0, 0.25), None), (lambda m: m.arange(5, dtype=m.float32), None),
        (lambda m: m.linspace(0, 1, 5), None), (lambda m: m.linspace(0, 1, 4, endpoint=False), None),
        (lambda m: m.linspace(0, 10, 5, dtype=m.int32), None),
        (lambda m: m.logspace(0, 2, 3), None), (lambda m: m.eye(3, 4, 1), None),
        (lambda m: m.identity(2, m.int32), None), (lambda m: m.tri(3, k=-1), None),
        (lambda m: m.tril(m.ones((3, 3))), None), (lambda m: m.triu(m.ones((3, 4)), 1), None),
        (lambda m: m.zeros_like(m.ones((2,), m.int8)), None),
        (lambda m: m.ones_like(m.asarray(2.0)), None),
        (lambda m: m.full_like(m.ones(3), 2, dtype=m.int32), None),
        (lambda m: m.array([[1, 2], [3, 4]]), None), (lambda m: m.array([1, 2.5]), None),
        (lambda m: m.asarray([True, False]), None), (lambda m: m.asarray(3), None),
        (lambda m: m.array([m.ones(2), m.zeros(2)]), None),
        (lambda m: m.float32(3), None), (lambda m: m.int8(7), None),
        (lambda m: m.bfloat16(1.5), None), (lambda m: m.asarray(np.arange(3.0)), None),
        (lambda m: m.diag(m.arange(3.0), 1), None), (lambda m: m.diag(m.ones((3, 3))), None),
        (lambda m: m.diag(m.arange(3.0), -2), None),
    ]
    for f, _ in cases:
        check(f(xnp), f(jnp))
    for o, t in zip(xnp.meshgrid(np.arange(3), np.arange(2)),
                    jnp.meshgrid(np.arange(3), np.arange(2))):
        check(o, t)
    for o, t in zip(xnp.meshgrid(np.arange(3), np.arange(2), indexing="ij"),
                    jnp.meshgrid(np.arange(3), np.arange(2), indexing="ij")):
        check(o, t)


def test_asarray_copies_numpy_input():
    a = np.arange(3.0, dtype=np.float32)
    x = xnp.asarray(a)
    a[0] = 100.0
    assert float(x[0]) == 0.0
    y = xnp.array(a)
    a[1] = 50.0
    assert float(y[1]) == 1.0


def test_scalar_types_are_dtypes():
    assert np.dtype(xnp.float32) == np.float32
    assert xnp.zeros(2, xnp.bfloat16).dtype == ml_dtypes.bfloat16
    assert xnp.dtype("float32") == np.float32
    assert xnp.issubdtype(xnp.bfloat16, xnp.floating)
    assert xnp.result_type(xnp.int8, 1.0) == np.float32
    assert xnp.promote_types(xnp.int8, xnp.uint8) == np.int16
    assert xnp.finfo(xnp.float16).eps == np.finfo(np.float16).eps
    assert xnp.iinfo(xnp.int8).max == 127
    assert xnp.can_cast(xnp.int8, xnp.int32) and not xnp.can_cast(xnp.float32, xnp.int8)


# ----------------------------------------------------------------- shapes

SHAPE_CASES = [
    ("reshape", ((2, 3, 4),), {"shape": (4, -1)}), ("reshape", ((2, 3),), {"shape": (3, 2), "order": "F"}),
    ("ravel", ((2, 3),), {}), ("transpose", ((2, 3, 4),), {}),
    ("transpose", ((2, 3, 4),), {"axes": (1, 0, 2)}), ("swapaxes", ((2, 3, 4),), {"axis1": 0, "axis2": 2}),
    ("moveaxis", ((2, 3, 4),), {"source": 0, "destination": -1}),
    ("moveaxis", ((2, 3, 4),), {"source": (0, 1), "destination": (2, 0)}),
    ("expand_dims", ((2, 3),), {"axis": (0, 3)}), ("squeeze", ((1, 3, 1),), {}),
    ("squeeze", ((1, 3, 1),), {"axis": 2}), ("flip", ((2, 3),), {}), ("flip", ((2, 3),), {"axis": 1}),
    ("fliplr", ((2, 3),), {}), ("flipud", ((2, 3),), {}), ("roll", ((5,),), {"shift": 2}),
    ("roll", ((2, 3),), {"shift": -1, "axis": 1}), ("roll", ((2, 3),), {"shift": 4}),
    ("roll", ((2, 3),), {"shift": (1, 2), "axis": (0, 1)}),
    ("rot90", ((2, 3),), {}), ("rot90", ((2, 3),), {"k": 2}), ("rot90", ((2, 3),), {"k": 3}),
    ("tile", ((2, 3),), {"reps": (2, 1, 2)}), ("tile", ((3,),), {"reps": 2}),
    ("repeat", ((2, 3),), {"repeats": 2}), ("repeat", ((2, 3),), {"repeats": 2, "axis": 1}),
    ("repeat", ((3,),), {"repeats": np.array([1, 0, 2])}),
    ("broadcast_to", ((3,),), {"shape": (2, 3)}), ("atleast_2d", ((3,),), {}),
    ("atleast_3d", ((2, 3),), {}), ("atleast_1d", ((),), {}),
    ("diagonal", ((3, 4),), {"offset": 1}), ("diagonal", ((2, 3, 3),), {"axis1": 1, "axis2": 2}),
    ("diagonal", ((4, 3),), {"offset": -2}), ("trace", ((3, 4),), {}),
    ("sort", ((3, 4),), {}), ("sort", ((3, 4),), {"axis": 0}), ("sort", ((3, 4),), {"axis": None}),
    ("argsort", ((3, 4),), {}), ("argsort", ((6,),), {"descending": True}),
    ("pad", ((2, 3),), {"pad_width": ((1, 2), (0, 1))}),
    ("pad", ((2, 3),), {"pad_width": 2, "constant_values": 5}),
    ("pad", ((4,),), {"pad_width": (2, 3), "mode": "edge"}),
    ("pad", ((4,),), {"pad_width": (5, 6), "mode": "reflect"}),
    ("pad", ((2, 3),), {"pad_width": ((2, 3), (4, 1)), "mode": "symmetric"}),
    ("pad", ((3,),), {"pad_width": (4, 7), "mode": "wrap"}),
    ("take", ((3, 4),), {"indices": np.array([2, 0, 0]), "axis": 1}),
    ("take", ((3, 4),), {"indices": np.array([[5, -1]])}),
]


@pytest.mark.parametrize("name,shapes_,kw", SHAPE_CASES)
@pytest.mark.parametrize("dt", [np.float32, np.int32, np.bool_])
def test_shape_functions(name, shapes_, kw, dt):
    rng = np.random.RandomState(0)
    args = [np.asarray(rng.randn(*s) * 3).astype(dt) for s in shapes_]
    if name == "argsort" and dt == np.bool_:
        return
    ours, theirs = _both(name, *args, **kw)
    if theirs is not None:
        check(ours, theirs)


def test_joining_and_splitting():
    a, b = np.ones((2, 3), np.float32), np.arange(6, dtype=np.int32).reshape(2, 3)
    for f in ("concatenate", "stack", "hstack", "vstack", "dstack", "column_stack"):
        check(getattr(xnp, f)([a, b]), getattr(jnp, f)([a, b]))
    check(xnp.concatenate([a, b], axis=1), jnp.concatenate([a, b], axis=1))
    check(xnp.concatenate([a, b], axis=None), jnp.concatenate([a, b], axis=None))
    check(xnp.stack([a, b], axis=-1), jnp.stack([a, b], axis=-1))
    check(xnp.concat([a, a], axis=0), jnp.concat([a, a], axis=0))
    x = np.arange(10.0)
    check(xnp.split(x, 5), jnp.split(x, 5))
    check(xnp.split(x, [3, 7]), jnp.split(x, [3, 7]))
    check(xnp.array_split(x, 3), jnp.array_split(x, 3))
    check(xnp.broadcast_arrays(np.ones(3), np.ones((2, 1))),
          jnp.broadcast_arrays(np.ones(3), np.ones((2, 1))))
    assert xnp.broadcast_shapes((3, 1), (4,)) == (3, 4)
    assert xnp.shape(a) == (2, 3) and xnp.ndim(a) == 2 and xnp.size(a) == 6
    assert xnp.isscalar(3.0) and not xnp.isscalar(np.ones(2))


# ----------------------------------------------------------------- linear algebra

@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                                   ((5, 2, 3), (3, 4)), ((5, 2, 3), (1, 3, 4)), ((2, 3), ())])
@pytest.mark.parametrize("dt", [np.float32, np.int32, np.float16])
def test_dot_matmul(sa, sb, dt):
    rng = np.random.RandomState(1)
    a, b = np.asarray(rng.randn(*sa) * 2).astype(dt), np.asarray(rng.randn(*sb) * 2).astype(dt)
    check(*_both("dot", a, b), tol=1e-2)
    if sb != ():
        check(*_both("matmul", a, b), tol=1e-2)
    if a.ndim and b.ndim and a.shape[-1] == b.shape[-1]:
        check(*_both("inner", a, b), tol=1e-2)
    check(*_both("outer", a, b), tol=1e-2)


def test_tensordot_vdot_kron():
    rng = np.random.RandomState(2)
    a, b = rng.randn(2, 3, 4).astype(np.float32), rng.randn(3, 4, 5).astype(np.float32)
    check(*_both("tensordot", a, b))
    check(*_both("tensordot", a, b, axes=([1], [0])))
    with pytest.raises(TypeError):
        xnp.tensordot(a, b, axes=1)
    check(*_both("vdot", a, a))
    check(*_both("kron", np.arange(4.0).reshape(2, 2), np.ones((2, 3))))


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]), ("ij->", [(2, 3)]), ("ij->ji", [(2, 3)]), ("i,i->", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]), ("...i,...i", [(2, 3), (1, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("iij->j", [(2, 2, 3)]),
    ("abc,cd->da", [(2, 3, 4), (4, 5)]), ("i,i,i->i", [(3,), (3,), (3,)]),
    ("ij,ij->i", [(2, 3), (2, 3)]),
]


@pytest.mark.parametrize("spec,shps", EINSUM_CASES)
def test_einsum(spec, shps):
    rng = np.random.RandomState(3)
    ops = [rng.randn(*s).astype(np.float32) for s in shps]
    check(xnp.einsum(spec, *ops), jnp.einsum(spec, *ops), tol=1e-5)


@pytest.mark.parametrize("ord_,axis", [(None, None), (1, None), (2, None), (np.inf, None),
                                       (-np.inf, None), (0, None), (3, None), (None, 1),
                                       (1, 0), ("fro", (0, 1)), (1, (0, 1)), (np.inf, (0, 1)),
                                       (-1, (0, 1))])
def test_norm(ord_, axis):
    rng = np.random.RandomState(4)
    x = rng.randn(3, 4).astype(np.float32)
    v = x[0]
    if axis is None and ord_ not in (None, "fro"):
        check(xnp.linalg.norm(v, ord_), jnp.linalg.norm(v, ord_), tol=1e-5)
    else:
        check(xnp.linalg.norm(x, ord_, axis), jnp.linalg.norm(x, ord_, axis), tol=1e-5)
    check(xnp.linalg.norm(x, ord_ if axis is not None else None, axis, keepdims=True),
          jnp.linalg.norm(x, ord_ if axis is not None else None, axis, keepdims=True), tol=1e-5)


def test_isclose_allclose_array_equal():
    a = np.array([1.0, np.nan, np.inf, 1e-9], np.float32)
    b = np.array([1.0 + 1e-7, np.nan, np.inf, 0.0], np.float32)
    check(xnp.isclose(a, b), jnp.isclose(a, b))
    check(xnp.isclose(a, b, equal_nan=True), jnp.isclose(a, b, equal_nan=True))
    assert bool(xnp.allclose(a[[0, 3]], b[[0, 3]])) == bool(jnp.allclose(a[[0, 3]], b[[0, 3]]))
    assert bool(xnp.array_equal(a, a, equal_nan=True))
    assert not bool(xnp.array_equal(a, a[:2]))


def test_where_clip_astype():
    x = np.linspace(-3, 3, 7).astype(np.float32)
    check(*_both("where", x > 0, x, 0))
    check(*_both("where", x > 0, 1, 2.5))
    check(*_both("clip", x, -1, 2))
    check(*_both("clip", x, None, 2))
    check(xnp.astype(x, np.int32), jnp.astype(x, np.int32))
    check(xnp.astype(x, bool), jnp.astype(x, bool))
    check(xnp.round(x * 1.2345, 2), jnp.round(x * 1.2345, 2))


# ----------------------------------------------------------------- errors

def test_bad_inputs_raise_jax_error_classes():
    with pytest.raises(TypeError, match=r"incompatible shapes for broadcasting: \(3,\), \(4,\)"):
        xnp.add(xnp.ones(3), xnp.ones(4))
    with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting: shapes=\[\(3,\), \(4,\)\]"):
        xnp.broadcast_shapes((3,), (4,))
    with pytest.raises(ValueError, match="axis 2 is out of bounds for array of dimension 1"):
        xnp.sum(xnp.ones(3), axis=2)
    with pytest.raises(TypeError, match=r"cannot reshape array of shape \(3,\) \(size 3\)"):
        xnp.ones(3).reshape(4)
    with pytest.raises(TypeError, match="negative dimensions"):   # TypeError, as JAX
        xnp.zeros((-1, 3))
    with pytest.raises(TypeError, match="Cannot concatenate arrays with shapes"):
        xnp.concatenate([xnp.ones((2, 3)), xnp.ones((2, 4))])
    with pytest.raises(TypeError, match="flot32"):
        xnp.zeros(3, dtype="flot32")
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        xnp.add([1, 2], 3)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        xnp.sum(xnp.ones((2, 2)), axis=(0, 0))
    with pytest.raises(TypeError):
        xnp.matmul(xnp.ones((2, 3)), xnp.ones((4, 2)))
    with pytest.raises(ValueError):
        xnp.einsum("ij,jk->ik", xnp.ones((2, 3)), xnp.ones((4, 2)))
    with pytest.raises(ValueError, match="equal division"):
        xnp.split(xnp.ones(5), 2)
    with pytest.raises(TypeError, match="sub does not accept dtype bool|subtract does not accept"):
        xnp.subtract(xnp.ones(2, bool), xnp.ones(2, bool))
    with pytest.raises(OverflowError):
        xnp.add(xnp.ones(2, xnp.int32), 2 ** 40)


# ----------------------------------------------------------------- through transformations

def test_numpy_functions_under_grad_and_vmap():
    import jax
    f = lambda x: xnp.sum(xnp.tanh(x) * xnp.cumsum(x) + xnp.roll(x, 1) ** 2) \
        + xnp.einsum("i,i->", x, x[::-1])
    x = np.linspace(-1, 1, 5).astype(np.float32)
    np.testing.assert_allclose(xform.grad(f)(x), jax.grad(
        lambda x: jnp.sum(jnp.tanh(x) * jnp.cumsum(x) + jnp.roll(x, 1) ** 2)
        + jnp.einsum("i,i->", x, x[::-1]))(x), rtol=1e-5)
    if hasattr(xform, "vmap"):
        g = lambda x: xnp.linalg.norm(x) + xnp.max(x) * xnp.var(x)
        xs = np.random.RandomState(0).randn(3, 4).astype(np.float32)
        np.testing.assert_allclose(xform.vmap(g)(xs), [g(r) for r in xs], rtol=1e-5)


def test_namespace_has_no_helper_names_leaked_from_its_modules():
    """Names xform.numpy has that jax.numpy lacks are deliberate (Array, half), not helpers
    of its implementation modules (imported modules, primitives, engine classes)."""
    import jax.numpy as jnp_
    extra = {n for n in dir(xnp) if not n.startswith("_") and not hasattr(jnp_, n)}
    assert extra <= {"Array", "annotations", "half"}, sorted(extra)

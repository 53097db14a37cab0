"""jax.numpy behaviours found by running JAX's lax_numpy test files against xform
(tools/jax_tests): values, dtypes, keyword arguments and error types/messages, each
compared with real JAX on the same inputs."""
import copy
import re
import warnings
from array import array as py_array

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _raises_alike(fx, fj, cls, pattern):
    """Both libraries raise ``cls`` with a message matching ``pattern``."""
    with pytest.raises(cls, match=pattern or None):
        fj()
    with pytest.raises(cls, match=pattern or None):
        fx()


# ----------------------------------------------------------------- creation


def test_arange_complex_and_traced_arguments():
    _raises_alike(lambda: xnp.arange(1j), lambda: jnp.arange(1j), ValueError,
                  "Passing complex start/stop/step to jnp.arange is no longer supported")
    for which, fx, fj in [
            ("stop", lambda: xform.jit(xnp.arange)(3), lambda: jax.jit(jnp.arange)(3)),
            ("start", lambda: xform.jit(lambda s: xnp.arange(s, 3))(0),
             lambda: jax.jit(lambda s: jnp.arange(s, 3))(0))]:
        _raises_alike(fx, fj, TypeError, f"It arose in the jnp.arange argument '{which}'")


def test_array_positional_copy_order_ndmin_arguments():
    x, y = xnp.array([1, 2, 3]), jnp.array([1, 2, 3])
    for lib, a in ((xnp, x), (jnp, y)):
        with pytest.warns(DeprecationWarning, match="Passing the copy, order, and ndmin"):
            assert lib.array(a, None, False) is a
        with pytest.warns(DeprecationWarning, match="Passing the copy, order, and ndmin"):
            assert lib.array(a, None, True) is not a
    _raises_alike(lambda: xnp.array(x, None, True, copy=False),
                  lambda: jnp.array(y, None, True, copy=False),
                  TypeError, r"array\(\) got multiple values for argument 'copy'")
    _raises_alike(lambda: xnp.array(x, None, True, "K", 0, "extra"),
                  lambda: jnp.array(y, None, True, "K", 0, "extra"),
                  TypeError, r"array\(\) takes at most 5 positional arguments")
    _raises_alike(lambda: xnp.array(3, [("a", "<i4"), ("b", "<i4")]),
                  lambda: jnp.array(3, [("a", "<i4"), ("b", "<i4")]),
                  TypeError, "JAX only supports number, bool, and string dtypes")


def test_buffer_protocol_inputs():
    for make in (lambda: py_array("l", [0, 1, 2, 3]), lambda: bytearray(b"\x2a\xf3")):
        _same(xnp.asarray(make()), jnp.asarray(make()))
        _same(xnp.array(make(), ndmin=2), jnp.array(make(), ndmin=2))
        _same(xnp.asarray(make(), copy=False), jnp.asarray(make(), copy=False))


def test_shape_errors_are_type_errors():
    for shape in [(-1, 1), 1.0]:
        _raises_alike(lambda: xnp.ones(shape), lambda: jnp.ones(shape), TypeError, "")
    _raises_alike(lambda: xnp.zeros(1.0), lambda: jnp.zeros(1.0), TypeError,
                  "Shapes must be 1D sequences of concrete values of integer type")
    _raises_alike(lambda: xform.jit(xnp.zeros)(2), lambda: jax.jit(jnp.zeros)(2), TypeError,
                  r"Shapes must be 1D sequences of concrete values of integer type.*\n"
                  "If using `jit`, try using `static_argnums`")
    _raises_alike(lambda: xform.jit(xnp.tri)(3, M=3, k=0),
                  lambda: jax.jit(jnp.tri)(3, M=3, k=0), TypeError,
                  "Shapes must be 1D sequences of concrete values of integer type")
    _same(xnp.zeros(np.array(4, np.int32)), jnp.zeros(np.array(4, np.int32)))


@pytest.mark.parametrize("name", ["ones", "zeros", "empty"])
def test_shape_then_int_dtype_hint(name):
    _raises_alike(lambda: getattr(xnp, name)(2, 3), lambda: getattr(jnp, name)(2, 3),
                  TypeError, rf"Did you accidentally write `jax\.numpy\.{name}\(2, 3\)` "
                             rf"when you meant `jax\.numpy\.{name}\(\(2, 3\)\)`")


@pytest.mark.parametrize("fn", ["eye", "tri"])
@pytest.mark.parametrize("m", [None, 0, 5])
@pytest.mark.parametrize("k", [-3, 0, 4])
def test_eye_tri_traced_k(fn, m, k):
    got = xform.jit(lambda k: getattr(xnp, fn)(4, M=m, k=k))(k)
    want = jax.jit(lambda k: getattr(jnp, fn)(4, M=m, k=k))(k)
    _same(got, want)


def test_tri_k_out_of_int32_range():
    _raises_alike(lambda: xnp.tri(3, k=2**33), lambda: jnp.tri(3, k=2**33), OverflowError, "")


def test_geomspace_negative_endpoints_and_axis():
    for start, stop, kw in [(-1.0, -100.0, {}), (np.array([1., -2.]), np.array([10., -20.]),
                                                 {"axis": 1}), (1, 1000, {"dtype": int})]:
        got, want = xnp.geomspace(start, stop, 4, **kw), jnp.geomspace(start, stop, 4, **kw)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_empty_grids():
    _same(xnp.mgrid[()], jnp.mgrid[()])
    assert list(xnp.ogrid[()]) == list(jnp.ogrid[()]) == []


def test_grid_traced_slice_message():
    for name in ("c_", "r_", "ogrid"):
        _raises_alike(lambda: xform.jit(lambda a, b: getattr(xnp, name)[a:b])(0, 2),
                      lambda: jax.jit(lambda a, b: getattr(jnp, name)[a:b])(0, 2),
                      TypeError, f"slice start of jnp.{name}")


# ----------------------------------------------------------------- promotion, values


def test_rank_promotion_option():
    for lib, make in ((xform, xnp), (jax, jnp)):
        with lib.numpy_rank_promotion("raise"):
            with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
                make.ones(2) + make.ones((1, 2))
            make.ones(2) + 3
        with lib.numpy_rank_promotion("warn"):
            with pytest.warns(UserWarning, match=r"Following NumPy automatic rank promotion "
                                                 r"for add on shapes \(2,\) \(1, 2\)"):
                make.ones(2) + make.ones((1, 2))


def test_rank_promotion_raise_leaves_internal_broadcasts_alone():
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    with xform.numpy_rank_promotion("raise"), jax.numpy_rank_promotion("raise"):
        _same(xnp.tril(x, 1), jnp.tril(x, 1))
        _same(xnp.triu(x, -1), jnp.triu(x, -1))
        dx = np.arange(1.0, 10.0, dtype=np.float32).reshape(3, 3)
        _same(xnp.trapezoid(x, dx=dx), jnp.trapezoid(x, dx=dx))
        mask = np.array([True, False, True, True])
        _same(xnp.sum(x, where=mask), jnp.sum(x, where=mask))
        _same(xnp.max(x, axis=1, where=mask, initial=0.0),
              jnp.max(x, axis=1, where=mask, initial=0.0))
        _same(xnp.cov(x[0]), jnp.cov(x[0]))
        w = np.arange(1.0, 5.0, dtype=np.float32)
        _same(xnp.average(x, axis=2, weights=w), jnp.average(x, axis=2, weights=w))
        _same(xnp.add(x[0], 1.0), jnp.add(x[0], 1.0))


def test_isclose_integers_compare_as_floats():
    assert bool(xnp.isclose(6, 10, rtol=0.5)) == bool(jnp.isclose(6, 10, rtol=0.5)) is True
    a = np.array([np.inf, -np.inf, np.nan, 1.0, 1.0, 5.0])
    b = np.array([np.inf, np.inf, np.nan, 1.00000001, np.inf, np.inf])
    for eq in (False, True):
        _same(xnp.isclose(a, b, equal_nan=eq), jnp.isclose(a, b, equal_nan=eq))
    assert bool(xnp.isclose(xform.random.key(0), xform.random.key(0)))


@pytest.mark.parametrize("value", [None, 1 + 1j, [1 + 1j], [1.0], np.arange(2), (np.arange(5),)])
def test_iscomplexobj(value):
    assert xnp.iscomplexobj(value) == jnp.iscomplexobj(value)


def test_iscomplexobj_of_traced_list():
    got = xform.jit(lambda v: xnp.iscomplexobj(v))([1 + 1j])
    assert bool(got) == bool(jax.jit(lambda v: jnp.iscomplexobj(v))([1 + 1j])) is True


@pytest.mark.parametrize("value", [False, 1, 1.0, np.int32(5), np.array(16), np.array([0])])
def test_isscalar(value):
    assert xnp.isscalar(value) == jnp.isscalar(value)


def test_jax_array_protocol_in_operators():
    class X:
        def __init__(self, lib):
            self.lib = lib

        def __jax_array__(self):
            return self.lib.array(3.0)

    _same(X(xnp) * xnp.arange(4.0), X(jnp) * jnp.arange(4.0))


def test_complex_inputs_refused_by_clip_and_hypot():
    z = np.ones(3, np.complex64)
    _raises_alike(lambda: xnp.clip(z), lambda: jnp.clip(z), ValueError,
                  "Complex values have no ordering and cannot be clipped")
    _raises_alike(lambda: xnp.clip(np.ones(3, np.int32), min=-1 + 5j),
                  lambda: jnp.clip(np.ones(3, np.int32), min=-1 + 5j), ValueError,
                  "Complex values have no ordering")
    _raises_alike(lambda: xnp.hypot(z, z), lambda: jnp.hypot(z, z), ValueError,
                  "jnp.hypot is not well defined for complex-valued inputs")


def test_corrcoef_bfloat16_dtype():
    x = np.arange(5)
    assert xnp.corrcoef(x, x, dtype="bfloat16").dtype == jnp.corrcoef(x, x, dtype="bfloat16").dtype
    _raises_alike(lambda: xnp.corrcoef(x, x, dtype=int), lambda: jnp.corrcoef(x, x, dtype=int),
                  ValueError, "corrcoef: dtype must be a subclass of float or complex")


def test_interp_extrapolate_and_errors():
    xp, fp = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])
    for x, kw in [(0.5, {"left": "extrapolate"}), (3.5, {"left": "extrapolate"}),
                  (3.9, {"right": "extrapolate"}), (0.0, {"left": "extrapolate",
                                                          "right": "extrapolate"})]:
        _same(xnp.interp(x, xp, fp, **kw), jnp.interp(x, xp, fp, **kw))
    for args, kw, msg in [((0.0, np.arange(2.0), np.arange(3.0)), {},
                           "xp and fp must be one-dimensional arrays of equal size"),
                          ((0.0, np.arange(3.0), np.arange(3.0)), {"left": "interpolate"},
                           "the only valid string value of `left` is 'extrapolate'"),
                          ((1j, 1j * np.arange(3.0), np.arange(3.0)), {},
                           "jnp.interp: complex x values not supported"),
                          ((0.0, np.arange(3.0), np.arange(3.0)), {"period": np.array([1.0])},
                           "period must be a scalar; got")]:
        _raises_alike(lambda: xnp.interp(*args, **kw), lambda: jnp.interp(*args, **kw),
                      ValueError, re.escape(msg))


@pytest.mark.parametrize("dtype", [np.float32, np.int16])
@pytest.mark.parametrize("period", [2 * np.pi, 2, 4])
def test_unwrap_dtype_and_values(dtype, period):
    x = (np.random.default_rng(0).standard_normal((3, 6)) * 5).astype(dtype)
    with xform.numpy_dtype_promotion("standard"), jax.numpy_dtype_promotion("standard"):
        got = xnp.unwrap(x, axis=1, period=period)
        want = jnp.unwrap(x, axis=1, period=period)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("yshape,xshape,axis", [((2, 3, 10), (3, 10), -2),
                                                ((2, 3, 10), (3, 10), -1),
                                                ((3, 10), (3, 10), -1), ((10, 3), (10,), -2)])
def test_trapezoid_x_of_fewer_dimensions(yshape, xshape, axis):
    rng = np.random.default_rng(1)
    y, x = rng.random(yshape, np.float32), rng.random(xshape, np.float32)
    with xform.numpy_rank_promotion("allow"), jax.numpy_rank_promotion("allow"):
        np.testing.assert_allclose(xnp.trapezoid(y, x, axis=axis),
                                   jnp.trapezoid(y, x, axis=axis), rtol=1e-5)


def test_pad_modes_keep_weak_type_and_unknown_mode_error():
    for mode in ["constant", "edge", "linear_ramp", "maximum", "mean", "median", "minimum",
                 "reflect", "symmetric", "wrap", "empty"]:
        got = xnp.pad(xnp.array(1.0)[None], 0, mode=mode)
        want = jnp.pad(jnp.array(1.0)[None], 0, mode=mode)
        assert got.weak_type == want.weak_type, mode
    for mode in [1, None, "foo"]:
        _raises_alike(lambda: xnp.pad(np.arange(3), 1, mode),
                      lambda: jnp.pad(np.arange(3), 1, mode), NotImplementedError,
                      f"Unimplemented padding mode '{mode}' for np.pad")


# ----------------------------------------------------------------- shapes and indexing


@pytest.mark.parametrize("shift,axis", [(np.array([3]), (0,)), (np.array([-2]), (-2,)),
                                        (np.array([1, 2]), (0, -1)),
                                        (np.array([4, 2, 5, 5, 2, 4]), None),
                                        (np.array(100), None), (np.array(-7), 1)])
def test_roll_by_array_shifts(shift, axis):
    x = np.arange(60.0, dtype=np.float32).reshape(3, 4, 5)
    _same(xnp.roll(x, shift, axis=axis), jnp.roll(x, shift, axis=axis))
    _same(xform.jit(lambda x, s: xnp.roll(x, s, axis=axis))(x, shift),
          jax.jit(lambda x, s: jnp.roll(x, s, axis=axis))(x, shift))


def test_unravel_index_traced_shape():
    idx = np.array([-7, 0, 5, 11, 30], np.int8)
    for g, w in zip(xform.jit(xnp.unravel_index)(idx, (3, 4)),
                    jax.jit(jnp.unravel_index)(idx, (3, 4))):
        _same(g, w)


def test_size_shape_ndim():
    x, y = xnp.zeros((2, 3, 4)), jnp.zeros((2, 3, 4))
    for axis in [(0, 2), (), (1,)]:
        assert xnp.size(x, axis) == jnp.size(y, axis)
    _raises_alike(lambda: xnp.size(x, (0, -3)), lambda: jnp.size(y, (0, -3)), ValueError,
                  "repeated axis")
    for name in ("ndim", "shape", "size"):
        with pytest.warns(DeprecationWarning, match=f"{name} requires ndarray or scalar"):
            want = getattr(jnp, name)([1, 2, 3])
        with pytest.warns(DeprecationWarning, match=f"{name} requires ndarray or scalar"):
            assert getattr(xnp, name)([1, 2, 3]) == want


def test_trim_zeros_axis():
    a = np.array([[0, 0, 0], [0, 1, 0], [0, 0, 0]])
    for kw in [{}, {"axis": 0}, {"axis": -1}, {"trim": "f"}, {"trim": "b", "axis": 1}]:
        _same(xnp.trim_zeros(a, **kw), jnp.trim_zeros(a, **kw))
    assert xnp.trim_zeros(np.zeros((3, 0))).shape == jnp.trim_zeros(np.zeros((3, 0))).shape


@pytest.mark.parametrize("mode", [None, "one_hot", "clip", "promise_in_bounds"])
@pytest.mark.parametrize("xs,ish,axis", [((3, 4), (6, 4), 0), ((3, 4), (3, 8), 1),
                                         ((2, 3, 4), (2, 3, 4), -1), ((5,), (7,), None)])
def test_take_along_axis_modes(mode, xs, ish, axis):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(xs).astype(np.float32)
    n = x.size if axis is None else x.shape[axis]
    i = rng.integers(0 if mode == "promise_in_bounds" else -n, n, ish).astype(np.int8)
    _same(xnp.take_along_axis(x, i, axis=axis, mode=mode),
          jnp.take_along_axis(x, i, axis=axis, mode=mode))
    _same(xform.jit(lambda x, i: xnp.take_along_axis(x, i, axis=axis, mode=mode))(x, i),
          jax.jit(lambda x, i: jnp.take_along_axis(x, i, axis=axis, mode=mode))(x, i))


@pytest.mark.parametrize("wrap", [False, True])
def test_take_along_axis_index_dtype_in_program(wrap):
    def gather_index_dtype(lib, make):
        f = lambda i: make.take_along_axis(make.arange(200, dtype=np.float32), i, axis=0,
                                           mode="promise_in_bounds",
                                           wrap_negative_indices=wrap)
        jaxpr = lib.make_jaxpr(f)(make.array([1, -2, 3], dtype=np.int8))
        [eqn] = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "jit"]
        [g] = [e for e in eqn.params["jaxpr"].jaxpr.eqns if e.primitive.name == "gather"]
        return g.invars[1].aval.dtype
    assert gather_index_dtype(xform, xnp) == gather_index_dtype(jax, jnp)
    _same(xnp.take_along_axis(xnp.arange(200.0), xnp.array([1, -2], np.int8), axis=0),
          jnp.take_along_axis(jnp.arange(200.0), jnp.array([1, -2], np.int8), axis=0))


def test_take_along_axis_index_errors():
    _raises_alike(lambda: xnp.take_along_axis(np.ones(3), np.ones(3, np.float32), 0),
                  lambda: jnp.take_along_axis(np.ones(3), np.ones(3, np.float32), 0),
                  TypeError, "take_along_axis indices must be of integer type, got float32")


@pytest.mark.parametrize("in_dtype", [np.int8, np.uint8, np.int32])
@pytest.mark.parametrize("out_dtype", [None, np.int32, np.uint8])
def test_ravel_multi_index_dtype(in_dtype, out_dtype):
    idx = np.array([0, 1], in_dtype)
    for jit in (False, True):
        fx = lambda i: xnp.ravel_multi_index(i, (2, 3), mode="ignore", dtype=out_dtype)
        fj = lambda i: jnp.ravel_multi_index(i, (2, 3), mode="ignore", dtype=out_dtype)
        got = (xform.jit(fx) if jit else fx)((idx, idx))
        want = (jax.jit(fj) if jit else fj)((idx, idx))
        _same(got, want)
        assert got.weak_type == want.weak_type


def test_ravel_multi_index_raise_mode_under_jit_message():
    _raises_alike(lambda: xform.jit(lambda i: xnp.ravel_multi_index(i, (2, 3)))((0, 1)),
                  lambda: jax.jit(lambda i: jnp.ravel_multi_index(i, (2, 3)))((0, 1)),
                  TypeError, "The error occurred because ravel_multi_index was jit-compiled "
                             "with mode='raise'. Use mode='wrap' or mode='clip' instead.")


def test_error_messages_like_jax():
    a3, b1 = np.ones((3, 2, 2)), np.ones((2,))
    for axes, msg in [(2, "Number of tensordot axes.*exceeds input ranks"),
                      (([0], [0, 1]), "tensordot requires axes lists to have equal length"),
                      (("bad", "axes"), "tensordot requires both axes lists to be either ints, "
                                        "tuples or lists"),
                      ("badaxes", "tensordot axes argument must be an int, a pair of ints, or "
                                  "a pair of lists")]:
        _raises_alike(lambda: xnp.tensordot(a3, b1, axes=axes),
                      lambda: jnp.tensordot(a3, b1, axes=axes), TypeError, msg)
    t = np.arange(12).reshape(2, 3, 2)
    _raises_alike(lambda: xnp.trace(t, axis1=1, axis2=-2), lambda: jnp.trace(t, axis1=1, axis2=-2),
                  ValueError, "axis1 and axis2 can not be same")
    _raises_alike(lambda: xnp.rot90(np.ones(2)), lambda: jnp.rot90(np.ones(2)), ValueError,
                  "rot90 requires its first argument to have ndim at least two")
    _raises_alike(lambda: xnp.broadcast_to(np.zeros((3, 4, 5)), (4, 5)),
                  lambda: jnp.broadcast_to(np.zeros((3, 4, 5)), (4, 5)), ValueError,
                  "Cannot broadcast to shape with fewer dimensions")
    _raises_alike(lambda: xform.jit(lambda i: xnp.split(xnp.zeros((12, 2)), i))(2.0),
                  lambda: jax.jit(lambda i: jnp.split(jnp.zeros((12, 2)), i))(2.0),
                  TypeError, "Abstract tracer value encountered where concrete value is expected")


def test_tobytes_tolist_and_searchsorted_methods():
    v = np.arange(12, dtype=np.int32).reshape(3, 4)
    for order in "CF":
        assert xnp.asarray(v).tobytes(order) == jnp.asarray(v).tobytes(order)
    for meth in ("tobytes", "tolist"):
        _raises_alike(lambda: xform.jit(lambda x: getattr(x, meth)())(v),
                      lambda: jax.jit(lambda x: getattr(x, meth)())(v), TypeError,
                      rf"The {meth}\(\) method was called on traced array")
    a = np.sort(np.random.default_rng(3).standard_normal(9).astype(np.float32))
    _same(xnp.asarray(a).searchsorted(a[3], side="right"),
          jnp.asarray(a).searchsorted(a[3], side="right"))


# ----------------------------------------------------------------- indexing errors and updates


@pytest.mark.parametrize("shape,idx,msg", [
    ((2,), -4, "index -4 out of bounds for axis 0 with size 2"),
    ((2, 3), np.index_exp[..., -4], "index -4 out of bounds for axis 1 with size 3"),
    ((2, 3, 5), np.index_exp[:, [1, 2], 6], "index 6 out of bounds for axis 2 with size 5"),
    ((2, 3, 5), np.index_exp[np.arange(3), 6, None],
     "index 6 out of bounds for axis 1 with size 3"),
    ((2, 3), (1, 2, 3), "Too many indices: array is 2-dimensional, but 3 were indexed")])
def test_check_static_indices_option(shape, idx, msg):
    xform.config.update("jax_check_static_indices", True)
    jax.config.update("jax_check_static_indices", True)
    try:
        for lib, make in ((xform, xnp), (jax, jnp)):
            arr = make.zeros(shape)
            for f in (lambda: arr[idx], lambda: lib.jit(lambda x: x[idx])(arr),
                      lambda: arr.at[idx].get()):
                with pytest.raises(IndexError, match=re.escape(msg)):
                    f()
    finally:
        xform.config.update("jax_check_static_indices", False)
        jax.config.update("jax_check_static_indices", False)


def test_bad_index_types_are_type_errors():
    for idx in [0.0, (0, 0.0), (np.arange(2), 1 + 1j)]:
        _raises_alike(lambda: xnp.zeros((2, 2))[idx], lambda: jnp.zeros((2, 2))[idx],
                      TypeError, "Indexer must have integer or boolean type, got indexer "
                                 "with type")
    _raises_alike(lambda: xnp.zeros(2).at[0.0].set(1.0), lambda: jnp.zeros(2).at[0.0].set(1.0),
                  TypeError, "Indexer must have integer or boolean type")
    _raises_alike(lambda: xnp.zeros((2, 3))[:, "abc"], lambda: jnp.zeros((2, 3))[:, "abc"],
                  TypeError, "JAX does not support string indexing")
    _raises_alike(lambda: xform.jit(lambda x, a: x[a:3])(xnp.ones(5), 1),
                  lambda: jax.jit(lambda x, a: x[a:3])(jnp.ones(5), 1), IndexError,
                  "Slice entries must be static integers")
    for idx, use in [([0, 0], r"arr\[array\(seq\)\]"), ([0, slice(None)], r"arr\[tuple\(seq\)\]")]:
        _raises_alike(lambda: xnp.zeros((3, 2))[idx], lambda: jnp.zeros((3, 2))[idx],
                      TypeError, "Using a non-tuple sequence for multidimensional indexing "
                                 f"is not allowed.*{use}")


@pytest.mark.parametrize("idx", [np.index_exp[True], np.index_exp[False],
                                 np.index_exp[:2, np.array([0, 2]), True],
                                 np.index_exp[np.array([1, 0]), :, True],
                                 np.index_exp[True, :, True, :, np.array(True)]])
def test_update_with_scalar_boolean_index(idx):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    u = np.arange(100, 100 + np.zeros((3, 4))[idx][..., :1].size, dtype=np.int32)
    u = u.reshape(np.zeros((3, 4))[idx][..., :1].shape)
    _same(xnp.asarray(x).at[idx].set(u), jnp.asarray(x).at[idx].set(u))
    _same(xnp.asarray(x).at[idx].add(u), jnp.asarray(x).at[idx].add(u))


def test_update_with_python_int_beyond_int32():
    _same(xnp.zeros(1, np.uint32).at[0].set(2**32 - 1), jnp.zeros(1, np.uint32).at[0].set(2**32 - 1))
    _same(xnp.zeros(3, np.int8).at[0].set(300), jnp.zeros(3, np.int8).at[0].set(300))
    _raises_alike(lambda: xnp.zeros(3, np.int32).at[0].set(2**32 - 1),
                  lambda: jnp.zeros(3, np.int32).at[0].set(2**32 - 1), OverflowError, "")


# ----------------------------------------------------------------- more values


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_complex(name):
    rng = np.random.default_rng(4)
    a = (rng.standard_normal(6) + 1j * rng.standard_normal(6)).astype(np.complex64)
    b = (3 * rng.standard_normal(6) + 4j * rng.standard_normal(6)).astype(np.complex64)
    want = getattr(jnp, name)(a, b)
    np.testing.assert_allclose(getattr(xnp, name)(a, b), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(xform.jit(getattr(xnp, name))(a, b), want, rtol=1e-5, atol=1e-5)
    gx = xform.grad(lambda x, y: getattr(xnp, name)(x, y).real.sum(), (0, 1))(a, b)
    gj = jax.grad(lambda x, y: getattr(jnp, name)(x, y).real.sum(), (0, 1))(a, b)
    for g, w in zip(gx, gj):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_histogram2d_integer_weights_under_strict_promotion():
    a = np.arange(5, dtype=np.int16)
    b = (2 * np.arange(5)).astype(np.int16)
    w = np.ones(5, np.int16)
    with xform.numpy_dtype_promotion("strict"), jax.numpy_dtype_promotion("strict"):
        for kw in [dict(bins=2, weights=w), dict(bins=[2, 3], weights=w, density=True,
                                                  range=[(-1, 1), (-2, 2)])]:
            got, want = xnp.histogram2d(a, b, **kw), jnp.histogram2d(a, b, **kw)
            for g, x in zip(got, want):
                np.testing.assert_allclose(g, x, rtol=1e-6)
        got, want = xnp.histogramdd(np.stack([a, b], 1), 3, weights=w), \
            jnp.histogramdd(np.stack([a, b], 1), 3, weights=w)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16, np.float32])
def test_ldexp_extreme_exponents(dtype):
    info = jnp.finfo(dtype)
    span = int(np.log2(float(info.max)) - np.log2(float(info.tiny))) - 1
    x = np.array([info.tiny, info.max, 0.5, -3.0, 1e-3, 0, np.inf, np.nan], dtype=dtype)
    e = np.array([span, -span, 1 << (info.nexp - 1), 5, -7, 3, 2, 1], np.int32)
    want = np.asarray(jnp.ldexp(x, e)).astype(np.float64)
    for got in (xnp.ldexp(x, e), xform.jit(xnp.ldexp)(x, e)):
        assert got.dtype == dtype
        np.testing.assert_array_equal(np.asarray(got).astype(np.float64), want)


def test_take_from_empty_axis_and_split_by_concrete_float():
    _raises_alike(lambda: xnp.take(xnp.ones((2, 0, 4)), xnp.array([0]), axis=1),
                  lambda: jnp.take(jnp.ones((2, 0, 4)), jnp.array([0]), axis=1),
                  IndexError, "non-empty jnp.take")
    got = xform.jvp(lambda i: xnp.split(xnp.zeros((12, 2)), i), (2.0,), (1.0,))[0]
    want = jax.jvp(lambda i: jnp.split(jnp.zeros((12, 2)), i), (2.0,), (1.0,))[0]
    assert [g.shape for g in got] == [w.shape for w in want]


@pytest.mark.parametrize("shape,axis", [((2, 3, 4), (1, 2)), ((2, 3, 4), (2, 0)),
                                        ((2, 3, 4), (2, 1, 0)), ((2, 3, 4, 5), (3, 0, 2, 1)),
                                        ((2, 3, 4), 1)])
def test_average_weights_over_several_axes(shape, axis):
    rng = np.random.default_rng(5)
    axes = axis if isinstance(axis, tuple) else (axis,)
    x = rng.random(shape, np.float32)
    w = rng.random(tuple(shape[a] for a in axes), np.float32)
    np.testing.assert_allclose(xnp.average(x, axis, w), jnp.average(x, axis, w), rtol=1e-5)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_quantile_float16_data_float32_q_strict(method):
    a = (np.arange(15.0).reshape(5, 3) / 3).astype(np.float16)
    with xform.numpy_dtype_promotion("strict"), jax.numpy_dtype_promotion("strict"):
        for name, q in (("quantile", np.float32(0.3)), ("nanpercentile", np.float32(70))):
            _same(getattr(xnp, name)(a, q, axis=0, method=method),
                  getattr(jnp, name)(a, q, axis=0, method=method))


def test_names_jax_removed_are_absent():
    for name in ("fix", "row_stack"):
        assert (name in dir(xnp)) == (name in dir(jnp)) is False
        with pytest.raises(AttributeError):
            getattr(xnp, name)


def test_rint_complex_and_complex_to_real_astype_warning():
    z = np.array([1.5 + 2.5j, 0.4 - 1.6j], np.complex64)
    _same(xnp.rint(z), jnp.rint(z))
    for make in (xnp, jnp):
        with pytest.warns(DeprecationWarning, match="Casting from complex to real dtypes"):
            make.asarray(z).astype("float32")
    _same(xnp.asarray(1j).astype(bool), jnp.asarray(1j).astype(bool))


@pytest.mark.parametrize("func", ["deepcopy", "copy"])
def test_copy_module_on_arrays_and_under_jit(func):
    def check(lib, make):
        f = getattr(copy, func)
        x = make.ones(10, dtype="int32")
        ptr = lambda a: a.unsafe_buffer_pointer()
        c, cj = f(x), lib.jit(f)(x)
        assert ptr(c) != ptr(x) and ptr(cj) != ptr(x)
        x.delete()
        return c.is_deleted(), cj.is_deleted(), int(c.sum()), int(cj.sum())
    assert check(xform, xnp) == check(jax, jnp)


def test_masked_array_argument_under_jit():
    m = np.ma.array([1, 2], mask=[True, False])
    _same(xnp.array(m), jnp.array(m))
    _raises_alike(lambda: xform.jit(xnp.asarray)(m), lambda: jax.jit(jnp.asarray)(m),
                  ValueError, "numpy masked arrays are not supported")


@pytest.mark.parametrize("name", ["less", "less_equal", "greater", "greater_equal"])
def test_complex_comparisons_are_lexicographic(name):
    a = np.array([1 + 2j, 1 + 3j, 2 + 0j, 1 + 2j, np.nan], np.complex64)
    b = np.array([1 + 3j, 1 + 2j, 1 + 5j, 1 + 2j, 1], np.complex64)
    _same(getattr(xnp, name)(a, b), getattr(jnp, name)(a, b))
    _same(xform.jit(getattr(xnp, name))(a, b), jax.jit(getattr(jnp, name))(a, b))
    op = {"less": "__lt__", "less_equal": "__le__", "greater": "__gt__",
          "greater_equal": "__ge__"}[name]
    _same(getattr(xnp.asarray(a), op)(xnp.asarray(b)), getattr(jnp.asarray(a), op)(jnp.asarray(b)))


def test_mixed_grids_under_strict_promotion():
    with xform.numpy_dtype_promotion("strict"), jax.numpy_dtype_promotion("strict"):
        _same(xnp.mgrid[1:6:8j, 2:4], jnp.mgrid[1:6:8j, 2:4])
        for g, w in zip(xnp.ogrid[1:6:8j, 2:4], jnp.ogrid[1:6:8j, 2:4]):
            _same(g, w)
        assert xform.config.jax_numpy_dtype_promotion == "strict"

"""lax functions whose arguments, results or error messages differed from JAX's, found by
running JAX's lax_test.py: each compared with jax.lax on the same inputs (values eagerly
and under jit; errors by type and message)."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax as jl

import xform
from xform import lax as xl


def _same_error(fx, fj, *args):
    with pytest.raises(Exception) as ej:
        fj(*args)
    for f in (fx, xform.jit(fx)):
        with pytest.raises(type(ej.value)) as ex:
            f(*args)
        assert str(ex.value) == str(ej.value)


def _same_value(fx, fj, *args):
    want = fj(*args)
    for got in (fx(*args), xform.jit(fx)(*args)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# ----------------------------------------------------------------- broadcast_in_dim

@pytest.mark.parametrize("inshape,outshape,dims", [
    ((2, 3), (3, 4, 2), (2, 0)),         # the operand's axes out of target order
    ((1, 3), (3, 5, 4), (2, 0)),
    ((3, 2, 1), (2, 1, 5, 3), (3, 0, 1)),
])
def test_broadcast_in_dim_unsorted_dimensions_match_jax(inshape, outshape, dims):
    x = np.arange(np.prod(inshape), dtype=np.float32).reshape(inshape)
    f = lambda L: (lambda x: L.broadcast_in_dim(x, outshape, dims))
    _same_value(f(xl), f(jl), x)
    # gradient: the cotangent summed and transposed back (JAX 0.10.2's own transpose rule
    # fails on unsorted dimensions: compare with the sorted form, transposed first)
    w = np.arange(np.prod(outshape), dtype=np.float32).reshape(outshape)
    perm = tuple(sorted(range(len(dims)), key=lambda i: dims[i]))
    gx = xform.grad(lambda x: (xl.broadcast_in_dim(x, outshape, dims) * w).sum())(x)
    gj = jax.grad(lambda x: (jl.broadcast_in_dim(jnp.transpose(x, perm), outshape,
                                                 sorted(dims)) * w).sum())(x)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(gj))
    v = lambda L, V: V(lambda x: L.broadcast_in_dim(x, outshape, dims))(np.stack([x, x + 1]))
    np.testing.assert_array_equal(np.asarray(v(xl, xform.vmap)), np.asarray(v(jl, jax.vmap)))


@pytest.mark.parametrize("inshape,outshape,dims", [
    ((2,), (2, 2), (0, 1)), ((2, 2), (2,), (0, 1)), ((2,), (2, 2), (2,)),
    ((2,), (3, 3), (1,)), ((2, 2), (2, 2), (0, 0)), ((2,), (2, -1), (0,)),
])
def test_broadcast_in_dim_errors_match_jax(inshape, outshape, dims):
    x = np.ones(inshape, np.float32)
    f = lambda L: (lambda x: L.broadcast_in_dim(x, outshape, dims))
    _same_error(f(xl), f(jl), x)


# ----------------------------------------------------------------- squeeze, argmin/argmax

@pytest.mark.parametrize("dims", [(0, 0), (3,), (-4,), (1,)])
def test_squeeze_errors_match_jax(dims):
    x = np.ones((1, 2, 3), np.float32)
    f = lambda L: (lambda x: L.squeeze(x, dims))
    _same_error(f(xl), f(jl), x)


def test_squeeze_non_integer_dimension_is_a_type_error_as_jax():
    x = np.ones((1, 2, 3), np.float32)
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        jl.squeeze(x, (None,))
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        xl.squeeze(x, (None,))
    y = np.ones((1, 2, 1), np.float32)
    _same_value(lambda x: xl.squeeze(x, (-3, 2)), lambda x: jl.squeeze(x, (-3, 2)), y)


@pytest.mark.parametrize("name", ["argmin", "argmax"])
@pytest.mark.parametrize("shape,axis", [((0, 2), 0), ((2, 3), -1), ((2, 3), 2)])
def test_argmin_argmax_errors_match_jax(name, shape, axis):
    x = np.ones(shape, np.float32)
    f = lambda L: (lambda x: getattr(L, name)(x, axis, np.int32))
    _same_error(f(xl), f(jl), x)


# ----------------------------------------------------------------- mul(out_dtype=)

@pytest.mark.parametrize("dt,out", [(np.float16, np.float32), (np.int8, np.int32),
                                    (np.int16, np.float32), (np.int8, np.int8),
                                    (np.complex64, np.complex64), (jnp.bfloat16, np.float32)])
def test_mul_out_dtype_matches_jax(dt, out):
    rng = np.random.RandomState(0)
    x = (rng.randn(3, 4) * 20).astype(dt)
    y = (rng.randn(3, 4) * 20).astype(dt)
    f = lambda L: (lambda x, y: L.mul(x, y, out_dtype=out))
    _same_value(f(xl), f(jl), x, y)
    g = lambda L, G: G(lambda x: L.mul(x, y, out_dtype=np.float32).sum())
    if np.issubdtype(dt, np.floating) and dt != np.float16:
        np.testing.assert_allclose(np.asarray(g(xl, xform.grad)(x.astype(np.float32))),
                                   np.asarray(g(jl, jax.grad)(x.astype(np.float32))))


def test_mul_out_dtype_still_refuses_bool_as_jax():
    b = np.array([True, False])
    _same_error(lambda x: xl.mul(x, x, out_dtype=np.int32),
                lambda x: jl.mul(x, x, out_dtype=np.int32), b)


# ----------------------------------------------------------------- pad, split, reshape

@pytest.mark.parametrize("pv,config", [
    (np.zeros(2), [(0, 0, 0)]), (0., [(0, 1, 0), (0, 1, 0)]), (0., [(0, 1, -1)]),
    (0., [(-3, 0, 0)]), (0., [(-4, 0, 1)]),
])
def test_pad_errors_match_jax(pv, config):
    f = lambda L: (lambda x: L.pad(x, pv, config))
    _same_error(f(xl), f(jl), np.zeros(2))


@pytest.mark.parametrize("padding", ["SAME", "SAME_LOWER", "VALID"])
def test_padtype_to_pads_returns_python_ints_as_jax(padding):
    args = [np.array(v, np.int64) for v in ((8, 7), (3, 3), (2, 2))]
    got, want = xl.padtype_to_pads(*args, padding), jl.padtype_to_pads(*args, padding)
    assert [tuple(p) for p in got] == [tuple(p) for p in want]
    assert all(type(v) is int for p in got for v in p)


@pytest.mark.parametrize("sizes,axis", [([-1], 0), ([6], 0), ((), 1)])
def test_split_errors_match_jax(sizes, axis):
    with pytest.raises(ValueError) as ej:
        jl.split(np.arange(5), sizes, axis=axis)
    with pytest.raises(ValueError) as ex:
        xl.split(np.arange(5), sizes, axis=axis)
    if axis == 0:
        assert str(ex.value) == str(ej.value)
    else:
        assert "axis 1 is out of bounds" in str(ex.value)


@pytest.mark.parametrize("shape", [(np.array([3, 1]),), (1.5, 2.0)])
def test_reshape_non_integer_shape_errors_match_jax(shape):
    f = lambda L: (lambda x: L.reshape(x, shape))
    with pytest.raises(TypeError) as ej:
        f(jl)(np.ones(3))
    with pytest.raises(TypeError) as ex:
        f(xl)(np.ones(3))
    assert str(ex.value).split(", got")[0] == str(ej.value).split(", got")[0]
    np.testing.assert_array_equal(np.asarray(xl.reshape(np.ones(3), (xl.add(1, 2), 1))),
                                  np.ones((3, 1)))


# ----------------------------------------------------------------- dynamic_slice indices

@pytest.mark.parametrize("idx", [(np.int32(1), np.int16(2)), (1, np.int16(2)),
                                 (np.uint8(1), np.int16(2))])
def test_dynamic_slice_index_types_must_agree_as_jax(idx):
    x = np.ones((3, 4), np.float32)
    with pytest.raises(TypeError) as ej:
        jl.dynamic_slice(x, idx, (2, 2))
    with pytest.raises(TypeError) as ex:
        xl.dynamic_slice(x, idx, (2, 2))
    assert str(ex.value) == str(ej.value)
    with pytest.raises(TypeError) as ej:
        jl.dynamic_update_slice(x, np.zeros((2, 2), np.float32), idx)
    with pytest.raises(TypeError) as ex:
        xl.dynamic_update_slice(x, np.zeros((2, 2), np.float32), idx)
    assert str(ex.value) == str(ej.value)
    # one-axis forms fill the other axes with zeros of the index's own dtype
    got = xl.dynamic_slice_in_dim(x, np.int16(1), 2, axis=1)
    np.testing.assert_array_equal(np.asarray(got),
                                  np.asarray(jl.dynamic_slice_in_dim(x, np.int16(1), 2, 1)))


# ----------------------------------------------------------------- reductions, windows

def test_reduce_errors_match_jax():
    for ops, inits in [({"x": np.ones(5)}, {"y": 0.}), ({"x": np.ones(5)}, {"x": np.ones(5)})]:
        f = lambda L: (lambda: L.reduce(ops, inits, lambda a, b: {"x": a["x"] + b["x"]}, [0]))
        with pytest.raises(ValueError) as ej:
            f(jl)()
        with pytest.raises(ValueError) as ex:
            f(xl)()
        assert str(ex.value).split(":")[0] == str(ej.value).split(":")[0]
    f = lambda L: (lambda x: L.reduce(x, 0, L.add, (0, 0)))
    _same_error(f(xl), f(jl), np.arange(3))


def test_reduce_window_errors_match_jax():
    x = np.ones((1,), np.float32)
    for wd, ws in [((0,), (1,)), ((1,), (0,))]:
        f = lambda L: (lambda x: L.reduce_window(x, 0., L.add, wd, ws, "VALID"))
        with pytest.raises(TypeError, match="must have every element be strictly positive"):
            f(jl)(x)
        with pytest.raises(TypeError, match="must have every element be strictly positive"):
            f(xl)(x)
    for L in (jl, xl):
        with pytest.raises(ValueError, match="reduce_window output must have the same tree "
                                             "structure as the operands"):
            L.reduce_window(x, 0., lambda a, b: [a + b], (1,), (1,), "VALID")
    f = lambda L: (lambda x: L.reduce_window(x, np.zeros((1,), np.int32), L.max, (2, 2),
                                             (2, 2), "VALID"))
    _same_error(f(xl), f(jl), np.ones((4, 4), np.int32))


def test_reduce_window_of_a_scalar_matches_jax():
    f = lambda L: (lambda x, i: L.reduce_window(x, i, L.add, (), (), (), (), ()))
    _same_value(f(xl), f(jl), np.float32(1.5), np.float32(0))
    g = lambda L: (lambda x, i: L.reduce_window(x, i, L.mul, (), (), (), (), ()))
    _same_value(g(xl), g(jl), np.float32(1.5), np.float32(1))


def test_top_k_of_more_than_int32_max_elements_raises_as_jax():
    s = (2 ** 31 + 1,)
    with pytest.raises(ValueError) as ej:
        jax.eval_shape(lambda x: jl.top_k(x, 100), jax.ShapeDtypeStruct(s, jnp.bfloat16))
    with pytest.raises(ValueError) as ex:
        xform.eval_shape(lambda x: xl.top_k(x, 100), xform.ShapeDtypeStruct(s, jnp.bfloat16))
    assert str(ex.value) == str(ej.value)


def test_conv_window_strides_of_the_wrong_length_raise_as_jax():
    f = lambda L: (lambda x: L.conv(x, np.zeros((1, 1, 1, 1), np.float32), [1], "SAME"))
    _same_error(f(xl), f(jl), np.zeros((1, 1, 3, 3), np.float32))


@pytest.mark.parametrize("shapes", [((-1,),), ("hello",), ((2, -3), (1,))])
def test_broadcast_shapes_faulty_inputs_raise_as_jax(shapes):
    with pytest.raises(TypeError) as ej:
        jl.broadcast_shapes(*shapes)
    with pytest.raises(TypeError) as ex:
        xl.broadcast_shapes(*shapes)
    assert str(ex.value) == str(ej.value)
    assert xl.broadcast_shapes((3, 1), (4,)) == jl.broadcast_shapes((3, 1), (4,))


@pytest.mark.parametrize("v,dt", [(2 ** 32, "int32"), (-2 ** 63, "int32"), (2 ** 64 - 1, "uint8"),
                                  (300, "int8"), (-1, "uint32")])
def test_convert_element_type_of_a_python_int_wraps_as_jax(v, dt):
    got, want = xl.convert_element_type(v, dt), jl.convert_element_type(v, dt)
    assert got.dtype == want.dtype and int(got) == int(want)


def test_dot_options_are_keyword_only_as_jax():
    a = np.arange(5.0, dtype=np.float32)
    for L in (jl, xl):
        with pytest.raises(TypeError, match=r"dot\(\) takes 2 positional arguments"):
            L.dot(a, a, L.Precision.DEFAULT)
    assert float(xl.dot(a, a, precision=xl.Precision.HIGHEST)) == float(jl.dot(a, a))


def test_comparisons_of_weak_operands_are_weak_as_jax():
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        for args in ((1.0, 2.0), (np.float32(1), 2.0), (1, 2)):
            assert getattr(xl, name)(*args).weak_type == getattr(jl, name)(*args).weak_type
    assert xl.is_finite(1.0).weak_type == jl.is_finite(1.0).weak_type
    assert xform.jit(lambda x: xl.lt(x, 2.0))(1.0).weak_type == \
        jax.jit(lambda x: jl.lt(x, 2.0))(1.0).weak_type


def test_copy_method_of_traced_arrays_matches_jax():
    x = np.arange(3, dtype=np.float32)
    f = lambda v: (v.copy() * v).sum()
    np.testing.assert_array_equal(np.asarray(xform.grad(f)(x)), np.asarray(jax.grad(f)(x)))
    np.testing.assert_array_equal(np.asarray(xform.jit(lambda v: v.copy())(x)), x)
    np.testing.assert_array_equal(np.asarray(xform.vmap(lambda v: v.copy() + 1)(x)), x + 1)

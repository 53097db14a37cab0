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

"""xform.experimental.layout (Layout, Format, with_layout_constraint, Array.format,
formats of compiled functions, Format in jit's shardings) compared with JAX on CPU."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax.experimental import layout as jl

import xform
import xform.numpy as xnp
from xform.experimental import layout as xl


def test_names_match_jax():
    assert set(n for n in dir(jl) if not n.startswith("_")) <= \
        set(n for n in dir(xl) if not n.startswith("_"))


@pytest.mark.parametrize("args", [((0, 1, 2),), ((1, 0), ((8, 128),)), ((), None, 4)])
def test_layout_matches_jax(args):
    x, j = xl.Layout(*args), jl.Layout(*args)
    assert repr(x) == repr(j)
    assert x == xl.Layout(*args) and hash(x) == hash(xl.Layout(*args))
    assert repr(x.update(major_to_minor=(5,))) == repr(j.update(major_to_minor=(5,)))
    assert repr(xl.Layout.AUTO) == repr(jl.Layout.AUTO)


def test_format_matches_jax():
    xs, js = xform.numpy.ones(2).sharding, jnp.ones(2).sharding
    for lay in [None, "auto", (0, 1)]:
        xlay = xl.Layout.AUTO if lay == "auto" else None if lay is None else xl.Layout(lay)
        jlay = jl.Layout.AUTO if lay == "auto" else None if lay is None else jl.Layout(lay)
        x, j = xl.Format(xlay, xs), jl.Format(jlay, js)
        assert repr(x) == repr(j)
        assert x == xl.Format(xlay, xs) and hash(x) == hash(xl.Format(xlay, xs))
    assert repr(xl.Format()) == repr(jl.Format())
    with pytest.raises(ValueError, match="Sharding has to be concrete"):
        xl.Format(xl.Layout((0,)))
    with pytest.raises(ValueError, match="Sharding has to be concrete"):
        jl.Format(jl.Layout((0,)))
    with pytest.raises(TypeError, match="layout argument"):
        xl.Format("row-major", xs)
    with pytest.raises(TypeError, match="sharding argument"):
        xl.Format(None, "cpu")


@pytest.mark.parametrize("shape,dtype", [((), "float32"), ((3,), "int32"),
                                         ((2, 3, 4), "float32"), ((2, 2), "bool")])
def test_array_format_matches_jax(shape, dtype):
    x, j = xnp.zeros(shape, dtype), jnp.zeros(shape, dtype)
    assert repr(x.format) == repr(j.format)
    assert x.format.layout == xl.Layout(tuple(range(len(shape))), (), 0)


def test_jit_accepts_formats_as_jax_does():
    v = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    x, j = xnp.asarray(v), jnp.asarray(v)
    for mk_x, mk_j in [
            (lambda: xl.Format(xl.Layout((0, 1, 2)), x.sharding),
             lambda: jl.Format(jl.Layout((0, 1, 2)), j.sharding)),
            (lambda: xl.Format(xl.Layout.AUTO), lambda: jl.Format(jl.Layout.AUTO)),
            (lambda: xl.Format(None, x.sharding), lambda: jl.Format(None, j.sharding))]:
        xf = xform.jit(lambda a: a * 2, in_shardings=mk_x(), out_shardings=mk_x())
        jf = jax.jit(lambda a: a * 2, in_shardings=mk_j(), out_shardings=mk_j())
        xo = xf.lower(x).compile()(x) if mk_x().layout is xl.Layout.AUTO else xf(x)
        jo = jf.lower(j).compile()(j) if mk_j().layout is jl.Layout.AUTO else jf(j)
        np.testing.assert_array_equal(np.asarray(xo), np.asarray(jo))
        assert repr(xo.format) == repr(jo.format)
    # a plain SingleDeviceSharding in in_shardings (no Format) works as in JAX
    np.testing.assert_array_equal(
        np.asarray(xform.jit(lambda a: a + 1, in_shardings=x.sharding)(x)), v + 1)
    with pytest.raises(ValueError, match="row-major"):
        xform.jit(lambda a: a, in_shardings=xl.Format(xl.Layout((2, 1, 0)), x.sharding))


def test_compiled_formats_match_jax():
    v = np.ones((2, 3), np.float32)
    xc = xform.jit(lambda a, b: (a + b, a.sum())).lower(xnp.asarray(v), xnp.asarray(v)).compile()
    jc = jax.jit(lambda a, b: (a + b, a.sum())).lower(jnp.asarray(v), jnp.asarray(v)).compile()
    assert repr(xc.input_formats) == repr(jc.input_formats)
    assert repr(xc.output_formats) == repr(jc.output_formats)


def test_with_layout_constraint():
    v = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    f = lambda a: xl.with_layout_constraint(a * 2, xl.Layout((0, 1)))  # noqa: E731
    np.testing.assert_array_equal(np.asarray(xform.jit(f)(xnp.asarray(v))), 2 * v)
    np.testing.assert_array_equal(np.asarray(xform.grad(lambda a: f(a).sum())(xnp.asarray(v))),
                                  np.full_like(v, 2))
    jf = lambda a: jl.with_layout_constraint(a * 2, jl.Layout((0, 1)))  # noqa: E731
    np.testing.assert_array_equal(np.asarray(jax.jit(jf)(jnp.asarray(v))), 2 * v)
    with pytest.raises(ValueError, match="rank of the value"):
        xl.with_layout_constraint(xnp.asarray(v), xl.Layout((0,)))
    with pytest.raises(ValueError, match="must be of type `Layout`"):
        xl.with_layout_constraint(xnp.asarray(v), "row-major")


def test_shape_dtype_struct_takes_a_format_as_jax():
    xs, js = xnp.ones(2).sharding, jnp.ones(2).sharding
    x = xform.ShapeDtypeStruct((2, 3), np.float32, sharding=xl.Format(xl.Layout((0, 1)), xs))
    j = jax.ShapeDtypeStruct((2, 3), np.float32, sharding=jl.Format(jl.Layout((0, 1)), js))
    assert repr(x) == repr(j)
    assert repr(x.format) == repr(j.format) and repr(x.sharding) == repr(j.sharding)
    plain_x = xform.ShapeDtypeStruct((2, 3), np.float32, sharding=xs)
    plain_j = jax.ShapeDtypeStruct((2, 3), np.float32, sharding=js)
    assert repr(plain_x.format) == repr(plain_j.format)
    assert x != plain_x and repr(x.update(shape=(3, 2))) == repr(j.update(shape=(3, 2)))
    out = xform.jit(lambda a: a * 2).lower(x).compile().output_formats
    assert repr(out) == repr(jax.jit(lambda a: a * 2).lower(j).compile().output_formats)
    with pytest.raises(ValueError, match="row-major"):
        xform.ShapeDtypeStruct((2, 3), np.float32, sharding=xl.Format(xl.Layout((1, 0)), xs))

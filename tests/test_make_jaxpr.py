"""make_jaxpr / eval_shape / ShapeDtypeStruct against real JAX."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
from xform import lax as L

JL = jax.lax
X = np.arange(6, dtype=np.float32).reshape(2, 3)


def prims(closed):
    return [e.primitive.name for e in closed.eqns]


def test_simple_program_matches_jax():
    f = lambda L_: (lambda x, y: L_.mul(L_.sin(x), L_.cos(y)))  # noqa: E731
    ours = xform.make_jaxpr(f(L))(X, X)
    ref = jax.make_jaxpr(f(JL))(X, X)
    assert prims(ours) == [e.primitive.name for e in ref.eqns]
    assert [str(a) for a in ours.in_avals] == ["ShapedArray(float32[2,3])"] * 2
    assert [a.shape for a in ours.out_avals] == [a.shape for a in ref.out_avals]
    text = str(ours)
    assert text.startswith("{ lambda ; a:f32[2,3] b:f32[2,3]. let")
    assert "sin a" in text and "in (e,) }" in text


def test_weak_scalar_args_and_outputs():
    ours = xform.make_jaxpr(lambda x, y: L.mul(x, y))(1.0, 2.0)
    ref = jax.make_jaxpr(lambda x, y: x * y)(1.0, 2.0)
    assert [a.weak_type for a in ours.in_avals] == [a.weak_type for a in ref.in_avals] == [True] * 2
    assert ours.out_avals[0].weak_type == ref.out_avals[0].weak_type


def test_pytrees_kwargs_static_and_return_shape():
    def mk(L_):
        def f(p, n, *, scale):
            return {"o": L_.mul(p["a"], float(n)), "t": (L_.mul(p["b"], scale),)}
        return f
    p = {"a": X, "b": np.float32(1.5)}
    closed, shape = xform.make_jaxpr(mk(L), static_argnums=1, return_shape=True)(
        p, 3, scale=np.float32(2.0))
    assert len(closed.in_avals) == 3
    rc, rshape = jax.make_jaxpr(mk(JL), static_argnums=1, return_shape=True)(
        jax.tree_util.tree_map(jnp.asarray, p), 3, scale=np.float32(2.0))
    assert repr(shape) == repr(rshape)


def test_shape_dtype_struct_args():
    s = xform.ShapeDtypeStruct((4, 5), np.float32)
    closed = xform.make_jaxpr(lambda x: L.sin(x))(s)
    assert closed.in_avals[0].shape == (4, 5)
    assert repr(s) == repr(jax.ShapeDtypeStruct((4, 5), jnp.float32))
    assert s == xform.ShapeDtypeStruct((4, 5), "float32") and hash(s) == hash(
        xform.ShapeDtypeStruct((4, 5), np.float32))
    assert s.ndim == 2 and s.size == 20
    w = xform.ShapeDtypeStruct((), np.float32, weak_type=True)
    assert repr(w) == repr(jax.ShapeDtypeStruct((), jnp.float32, weak_type=True))


def test_closed_over_constants_are_constvars():
    c = np.ones((2, 3), np.float32)
    closed = xform.make_jaxpr(lambda x: L.add(x, c))(X)
    assert len(closed.jaxpr.constvars) == 1 and len(closed.consts) == 1
    np.testing.assert_allclose(np.asarray(closed(X)[0]), X + 1)


def test_nested_jit_shows_jit_equation_and_evaluates():
    inner = xform.jit(lambda x: L.sin(x))
    closed = xform.make_jaxpr(lambda x: L.mul(inner(x), 2.0))(X)
    assert prims(closed)[0] == "jit" and prims(closed)[-1] == "mul"
    assert "name=<lambda>" in str(closed) and "sin" in str(closed)
    np.testing.assert_allclose(np.asarray(closed(X)[0]), np.sin(X) * 2, rtol=1e-6)


def test_make_jaxpr_of_grad_matches_jax_values():
    f = lambda x: L.reduce_sum(L.mul(L.sin(x), x), axes=(0, 1))  # noqa: E731
    closed = xform.make_jaxpr(xform.grad(f))(X)
    ref = jax.grad(lambda x: jnp.sum(jnp.sin(x) * x))(X)
    np.testing.assert_allclose(np.asarray(closed(X)[0]), ref, rtol=1e-5)


@pytest.mark.parametrize("args", [
    (X,), (1.0,), (np.int32(3),), (np.arange(4),), ({"a": X, "b": [1, 2.0]},)])
def test_eval_shape_matches_jax(args):
    def f(t):
        leaves = jax.tree_util.tree_leaves(t)
        return [(x, x) for x in leaves]
    ours = xform.eval_shape(f, *args)
    ref = jax.eval_shape(f, *args)
    assert repr(ours) == repr(ref)


def test_eval_shape_computation_and_sds_input():
    ours = xform.eval_shape(lambda x, y: L.dot_general(x, y, (((1,), (0,)), ((), ()))),
                            xform.ShapeDtypeStruct((2, 3), np.float32),
                            xform.ShapeDtypeStruct((3, 7), np.float32))
    assert ours.shape == (2, 7) and ours.dtype == np.float32


def test_bad_arguments():
    with pytest.raises(TypeError, match="not a valid JAX type"):
        xform.make_jaxpr(lambda x: x)("hello")
    with pytest.raises(TypeError):
        xform.make_jaxpr(3)
    with pytest.raises(NotImplementedError):
        xform.make_jaxpr(lambda x: x, abstracted_axes=("n",))(X)

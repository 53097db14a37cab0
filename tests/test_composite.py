"""``lax.composite`` (the ``composite`` primitive) against JAX: values, the
``stablehlo.composite`` op and its decomposition function in ``lower(...).as_text()``
(JAX's printed form), attributes, constants, the errors for traced constants and
attributes, and the rules xform adds (JVP and batching through the decomposition)."""
import re
from functools import partial

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax as jl

import xform
import xform.numpy as xnp
from xform import lax as xl


def _composite_lines(text):
    """The composite ops of a module (SSA result names dropped)."""
    return [re.sub(r"^\s*(%\S+ = )?", "", ln) for ln in text.splitlines()
            if "stablehlo.composite" in ln]


def _decomposition_heads(text, name):
    return [ln.strip() for ln in text.splitlines() if f"func.func private @{name}(" in ln]


def _both(make):
    """(xform function, JAX function) from ``make(lax, numpy)``."""
    return make(xl, xnp), make(jl, jnp)


CASES = {
    "square": (lambda L, N: L.composite(lambda x: x ** 2, name="my.square"),
               [np.float32(2.0)]),
    "version": (lambda L, N: L.composite(lambda x: x ** 2, name="my.square", version=1),
                [np.float32(2.0)]),
    "top_k": (lambda L, N: partial(L.composite(lambda x, *, k: L.top_k(x, k), name="my.top_k"),
                                   k=3),
              [np.arange(5, dtype=np.float32)]),
    "variadic": (lambda L, N: L.composite(lambda *a: a, name="my.ident"),
                 [np.float32(1), np.float32(2), np.float32(3)]),
    "no_args": (lambda L, N: L.composite(lambda: N.array(1.0, N.float32), name="my.one"), []),
    "attributes": (lambda L, N: partial(
        L.composite(lambda x, **_: L.sin(x) / L.cos(x), "my.tangent"),
        dtype=np.dtype(np.float32), int=1, omit=None, str="bar", flag=True, f=0.5,
        tensor=np.zeros((1, 2), np.float32), tensor_r1=np.arange(2, dtype=np.int32),
        seq=(1, 2)), [np.linspace(0, 1, 4).astype(np.float32)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_composite_values_and_lowering_match_jax(case):
    make, args = CASES[case]
    fx, fj = _both(make)
    want = fj(*args)
    for got in (fx(*args), xform.jit(fx)(*args)):
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    tx = xform.jit(fx).lower(*args).as_text()
    tj = jax.jit(fj).lower(*args).as_text()
    assert _composite_lines(tx) == _composite_lines(tj)
    name = _composite_lines(tj)[0].split('"')[1]
    assert _decomposition_heads(tx, name) == _decomposition_heads(tj, name)


def test_composite_constants_are_leading_operands_as_in_jax():
    scale = np.array([0.5, 0.4, 0.3], np.float32)
    x = np.array([1.0, 2.0, 3.0], np.float32)

    def make(L, N):
        return partial(L.composite(lambda x, *, scale: N.round(x / scale), name="my.consts"),
                       scale=scale)
    fx, fj = _both(make)
    np.testing.assert_array_equal(np.asarray(xform.jit(fx)(x)), np.asarray(jax.jit(fj)(x)))
    head = "@my.consts(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>) -> tensor<3xf32>"
    assert head in xform.jit(fx).lower(x).as_text()


def test_composite_traced_constants_and_attributes_raise_as_jax():
    x = np.array([1.0, 2.0, 3.0], np.float32)

    def closes_over(L, N, errors):
        def fun(x, scale):
            return L.composite(lambda y: N.round(y / scale), name="my.consts")(x)
        return fun
    for L, N, jit, err in ((xl, xnp, xform.jit, xform.errors.UnexpectedTracerError),
                           (jl, jnp, jax.jit, jax.errors.UnexpectedTracerError)):
        with pytest.raises(err, match="Found a JAX Tracer as a constant in the decomposition "
                                      "for the composite op 'my.consts'"):
            jit(closes_over(L, N, err))(x, x)
        f = L.composite(lambda v, **_: v * 2, "my.double")
        with pytest.raises(err, match="If you are passing jax arrays as attributes, use "
                                      "numpy arrays instead"):
            jit(lambda v: f(v, tensor=v))(x)


def test_composite_in_make_jaxpr_is_one_equation_as_in_jax():
    fx, fj = _both(lambda L, N: L.composite(lambda x: x ** 2, name="my.square"))
    x = np.float32(3.0)
    assert [e.primitive.name for e in xform.make_jaxpr(fx)(x).eqns] == \
        [e.primitive.name for e in jax.make_jaxpr(fj)(x).eqns] == ["composite"]


def test_composite_differentiates_and_batches_through_its_decomposition():
    # JAX 0.10.2 has neither rule for composite: compare with the decomposition in JAX
    f = xl.composite(lambda x, *, k: xl.sin(x) * k, name="my.sk")
    x = np.linspace(-1, 1, 6).astype(np.float32)
    np.testing.assert_allclose(np.asarray(xform.grad(lambda v: f(v, k=3.0).sum())(x)),
                               np.asarray(jax.grad(lambda v: (jnp.sin(v) * 3.0).sum())(x)),
                               rtol=1e-6)
    xs = x.reshape(2, 3)
    np.testing.assert_allclose(np.asarray(xform.vmap(lambda v: f(v, k=2.0), in_axes=1)(xs)),
                               np.stack([np.sin(xs[:, i]) * 2 for i in range(3)]), rtol=1e-6)

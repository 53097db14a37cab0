"""``lax.ragged_dot`` / ``lax.ragged_dot_general`` (the ``ragged_dot_general`` primitive)
against real JAX on the same inputs: values eagerly and under ``jit`` in the three modes
(ragged non-contracting, contracting and batch dimension) with ``[g]`` and ``[p.., g]``
group sizes, the shape rule's errors, gradients (against JAX where JAX has them, else
against finite differences and the dot-product test), batching against a Python loop."""
import contextlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jax
import jax.numpy as jnp
from jax import lax as jl

import xform
from xform import lax as xl
from xform.test_util import check_grads

from prim_testutil import x64_enabled


def _rdn(mod, dn):
    return mod.RaggedDotDimensionNumbers(*dn)


def _close(got, want, tol=1e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype,
                                                                 want.shape, want.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                               rtol=tol, atol=tol)


# (lhs shape, rhs shape, group_sizes, dimension numbers)
CASES = [
    # ragged_dot: [m, k] x [g, k, n]; 6 of 7 rows in groups, an empty group
    ((7, 5), (4, 5, 3), [2, 0, 3, 1], ((((1,), (1,)), ((), ())), (0,), (0,))),
    # ragged non-contracting with a batch dimension, rhs group dimension not first
    ((2, 6, 3), (2, 3, 4, 5), [1, 2, 0, 2], ((((2,), (1,)), ((0,), (0,))), (1,), (2,))),
    # ... with per-batch group sizes [b, g]
    ((2, 6, 3), (4, 2, 3, 5), [[1, 2, 0, 3], [0, 6, 0, 0]],
     ((((2,), (2,)), ((0,), (1,))), (1,), (0,))),
    # ragged contracting: one output per group
    ((3, 7), (7, 4), [1, 2, 0, 2], ((((1,), (0,)), ((), ())), (1,), ())),
    # ragged contracting with a batch dimension and per-batch group sizes
    ((2, 3, 7), (2, 7, 4), [[1, 2, 4], [7, 0, 0]], ((((2,), (1,)), ((0,), (0,))), (2,), ())),
    # ragged contracting, two contracting dims (the ragged one second): sizes [b, k1, g]
    ((2, 3, 4, 5), (2, 4, 5, 6), np.array([[[1, 2, 2], [0, 5, 0], [3, 1, 1], [2, 2, 0]]] * 2),
     ((((2, 3), (1, 2)), ((0,), (0,))), (3,), ())),
    # ragged batch dimension: an ordinary batched dot
    ((6, 2, 3), (6, 3, 4), [1, 2, 0, 2], ((((2,), (1,)), ((0,), (0,))), (0,), ())),
]


def _args(lshape, rshape, gs, dtype=np.float32, seed=0):
    rng = np.random.RandomState(seed)
    return (rng.randn(*lshape).astype(dtype), rng.randn(*rshape).astype(dtype),
            np.asarray(gs, np.int32))


@pytest.mark.parametrize("lshape,rshape,gs,dn", CASES)
def test_ragged_dot_general_values_match_jax(lshape, rshape, gs, dn):
    a, b, g = _args(lshape, rshape, gs)
    want = jl.ragged_dot_general(a, b, g, _rdn(jl, dn))
    _close(xl.ragged_dot_general(a, b, g, _rdn(xl, dn)), want)
    _close(xform.jit(lambda a, b, g: xl.ragged_dot_general(a, b, g, _rdn(xl, dn)))(a, b, g),
           want)


@pytest.mark.parametrize("dtype,pet", [(np.float32, None), (np.float16, np.float32),
                                       (jnp.bfloat16, None), (np.int32, None),
                                       (np.int8, np.int32), (np.float64, None)])
def test_ragged_dot_dtypes_match_jax(dtype, pet):
    a, b, g = _args((9, 4), (3, 4, 5), [4, 0, 3], np.float32, seed=1)
    a, b = (a * 3).astype(dtype), (b * 3).astype(dtype)
    with (x64_enabled() if dtype == np.float64 else contextlib.nullcontext()):
        want = jl.ragged_dot(a, b, g, preferred_element_type=pet)
        for f in (xl.ragged_dot, xform.jit(xl.ragged_dot, static_argnums=(3, 4))):
            got = f(a, b, g, None, pet)
            assert got.dtype == want.dtype
            _close(got, want, 1e-2 if dtype in (np.float16, jnp.bfloat16) else 1e-5)


def test_rows_past_the_last_group_are_zero_and_jaxpr_is_one_equation():
    a, b, g = _args((8, 3), (2, 3, 4), [2, 3])
    out = np.asarray(xform.jit(xl.ragged_dot)(a, b, g))
    assert (out[5:] == 0).all()
    jx = xform.make_jaxpr(xl.ragged_dot)(a, b, g)
    jj = jax.make_jaxpr(jl.ragged_dot)(a, b, g)
    assert [e.primitive.name for e in jx.eqns] == [e.primitive.name for e in jj.eqns] == [
        "ragged_dot_general"]


def test_ragged_dot_general_vmap_of_ragged_dot_matches_jax():
    # JAX's own test: batched lhs, rhs and group sizes, all at axis 0
    rng = np.random.RandomState(3)
    a = rng.randn(3, 10, 4).astype(np.float32)
    b = rng.randn(3, 2, 4, 5).astype(np.float32)
    g = np.array([[3, 7], [10, 0], [4, 4]], np.int32)
    f = lambda *v: jl.ragged_dot(*v, preferred_element_type=jnp.float32)
    _close(xform.vmap(lambda *v: xl.ragged_dot(*v, preferred_element_type=np.float32))(a, b, g),
           jax.vmap(f)(a, b, g))


@pytest.mark.parametrize("lshape,rshape,gs,dn", CASES)
@pytest.mark.parametrize("axes", [(0, None, None), (None, 1, None), (1, 0, 0), (None, None, 0)])
def test_ragged_dot_general_vmap_matches_a_loop(lshape, rshape, gs, dn, axes):
    a, b, g = _args(lshape, rshape, gs, seed=4)
    n = 3
    rng = np.random.RandomState(5)
    args = []
    for x, ax in zip((a, b, g), axes):
        if ax is None:
            args.append(x)
        elif x.dtype == np.int32:      # other group sizes per row, same total
            args.append(np.stack([np.roll(x, k, axis=-1) for k in range(n)], ax))
        else:
            args.append(np.stack([x + rng.randn(*x.shape).astype(x.dtype)
                                  for _ in range(n)], ax))
    f = lambda a, b, g: xl.ragged_dot_general(a, b, g, _rdn(xl, dn))
    got = xform.vmap(f, in_axes=axes)(*args)
    for k in range(n):
        row = [x if ax is None else np.take(x, k, axis=ax) for x, ax in zip(args, axes)]
        _close(got[k], jl.ragged_dot_general(*row, _rdn(jl, dn)))


def test_ragged_dot_gradients_match_jax():
    a, b, g = _args((7, 5), (4, 5, 3), [2, 0, 3, 1])
    loss_x = lambda a, b: (xl.ragged_dot(a, b, g) ** 2).sum()
    loss_j = lambda a, b: (jl.ragged_dot(a, b, g) ** 2).sum()
    for u, v in zip(xform.grad(loss_x, argnums=(0, 1))(a, b),
                    jax.grad(loss_j, argnums=(0, 1))(a, b)):
        _close(u, v, 1e-4)
    for u, v in zip(xform.jit(xform.grad(loss_x, argnums=(0, 1)))(a, b),
                    jax.grad(loss_j, argnums=(0, 1))(a, b)):
        _close(u, v, 1e-4)


@pytest.mark.parametrize("lshape,rshape,gs,dn", CASES[1:3])
def test_ragged_non_contracting_general_gradients_match_jax(lshape, rshape, gs, dn):
    a, b, g = _args(lshape, rshape, gs, seed=6)
    ct = np.random.RandomState(7).randn(*jl.ragged_dot_general(a, b, g, _rdn(jl, dn)).shape)
    ct = ct.astype(np.float32)
    _, vx = xform.vjp(lambda a, b: xl.ragged_dot_general(a, b, g, _rdn(xl, dn)), a, b)
    _, vj = jax.vjp(lambda a, b: jl.ragged_dot_general(a, b, g, _rdn(jl, dn)), a, b)
    for u, v in zip(vx(ct), vj(ct)):
        _close(u, v, 1e-4)


@pytest.mark.parametrize("lshape,rshape,gs,dn", CASES)
def test_ragged_dot_general_transpose_is_the_adjoint(lshape, rshape, gs, dn):
    # JAX 0.10.2 has no transpose for the contracting and batch modes: the dot-product
    # test <ct, J t> == <J^T ct, t> and finite differences check ours.
    a, b, g = _args(lshape, rshape, gs, np.float64, seed=8)
    rng = np.random.RandomState(9)
    f = lambda a, b: xl.ragged_dot_general(a, b, g, _rdn(xl, dn))
    with x64_enabled():
        ta, tb = rng.randn(*a.shape), rng.randn(*b.shape)
        out, tout = xform.jvp(f, (a, b), (ta, tb))
        ct = rng.randn(*np.shape(out))
        _, vjp = xform.vjp(f, a, b)
        ca, cb = vjp(ct)
        lhs = float(np.vdot(ct, np.asarray(tout)))
        rhs = float(np.vdot(np.asarray(ca), ta) + np.vdot(np.asarray(cb), tb))
        assert abs(lhs - rhs) <= 1e-9 * max(1.0, abs(lhs))
        check_grads(f, (a, b), order=2, modes=("fwd", "rev"))


ERRORS = [
    ((11, 5), (3, 5, 7), (3,), ((((1,), (1,)), ((), ())), (0, 1), (0,))),
    ((11, 5), (3, 5, 7), (3,), ((((1,), (1,)), ((), ())), (2,), (0,))),
    ((11, 5), (3, 5, 7), (2, 3), ((((1,), (1,)), ((), ())), (0,), (0,))),
    ((19, 17, 11, 5), (3, 19, 5, 7), (19, 11, 3), ((((3,), (2,)), ((0,), (1,))), (2,), (0,))),
    ((19, 11, 5), (19, 5, 7), (19, 3), ((((2,), (1,)), ((0,), (0,))), (1,), (0,))),
    ((11, 5), (3, 5, 7), (2,), ((((1,), (1,)), ((), ())), (0,), (0,))),
    ((11, 5), (3, 5, 7), (3,), ((((1,), (1,)), ((), ())), (1,), (0,))),
    ((11, 5), (5, 7), (3,), ((((1,), (0,)), ((), ())), (0,), ())),
    ((11, 5), (3, 5, 7), (), ((((1,), (1,)), ((), ())), (0,), (0,))),
    ((11, 5), (3, 6, 7), (3,), ((((1,), (1,)), ((), ())), (0,), (0,))),
]


@pytest.mark.parametrize("lshape,rshape,gshape,dn", ERRORS)
def test_ragged_dot_general_shape_errors_match_jax(lshape, rshape, gshape, dn):
    args = [np.ones(lshape, np.float32), np.ones(rshape, np.float32), np.ones(gshape, np.int32)]
    with pytest.raises(TypeError) as ej:
        jl.ragged_dot_general(*args, _rdn(jl, dn))
    for f in (lambda *v: xl.ragged_dot_general(*v, _rdn(xl, dn)),
              xform.jit(lambda *v: xl.ragged_dot_general(*v, _rdn(xl, dn)))):
        with pytest.raises(TypeError) as ex:
            f(*args)
        if "dot_general requires" not in str(ej.value):   # the dot_general part words its own
            assert str(ex.value) == str(ej.value)


def test_ragged_dot_argument_errors():
    a, b = np.ones((4, 3), np.float32), np.ones((2, 3, 5), np.float32)
    with pytest.raises(TypeError, match="group_sizes.dtype is subtype of np.integer"):
        xl.ragged_dot(a, b, np.array([1.0, 2.0], np.float32))
    with pytest.raises(TypeError, match="group_sizes.dtype"):
        jl.ragged_dot(a, b, np.array([1.0, 2.0], np.float32))
    with pytest.raises(NotImplementedError, match="group_offset"):
        xl.ragged_dot(a, b, np.array([1, 2], np.int32), group_offset=np.array([0]))
    with pytest.raises(TypeError, match="RaggedDotDimensionNumbers"):
        xl.ragged_dot_general(a, b, np.array([1, 2], np.int32), (((1,), (1,)), ((), ())))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=4), st.integers(0, 3))
def test_ragged_dot_matches_jax_for_any_group_sizes(sizes, extra):
    m = sum(sizes) + extra                 # ``extra`` rows in no group
    a, b, g = _args((m, 3), (len(sizes), 3, 2), sizes, seed=m)
    _close(xform.jit(xl.ragged_dot)(a, b, g), jl.ragged_dot(a, b, g))
    _close(xl.ragged_dot(a, b, g), jl.ragged_dot(a, b, g))

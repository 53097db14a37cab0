"""``xform.experimental.sparse`` (BCOO) against ``jax.experimental.sparse`` on the same
inputs: the stored data/indices, todense, products, reductions, grads with respect to
data and dense operands, vmap (batched BCOO in and out) and jit."""
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as hst

import jax
import jax.numpy as jnp
from jax.experimental import sparse as jsp

import xform
import xform.numpy as xnp
from xform.experimental import sparse as xsp


def _np(x):
    return np.asarray(x)


def _same(a, b, exact=False):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    if exact:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def _same_bcoo(x, j, exact=True):
    assert isinstance(x, xsp.BCOO) and isinstance(j, jsp.BCOO)
    assert x.shape == j.shape and (x.n_batch, x.n_sparse, x.n_dense, x.nse) == \
        (j.n_batch, j.n_sparse, j.n_dense, j.nse)
    _same(x.data, j.data, exact)
    _same(x.indices, j.indices, True)
    assert (x.indices_sorted, x.unique_indices) == (j.indices_sorted, j.unique_indices)


def _sparse_array(rng, shape, density=0.4, dtype=np.float32):
    x = rng.standard_normal(shape).astype(dtype)
    x[rng.random(shape) > density] = 0
    return x


def _pair(x, **kw):
    return xsp.BCOO.fromdense(xnp.asarray(x), **kw), jsp.BCOO.fromdense(jnp.asarray(x), **kw)


# ------------------------------------------------------------------ construction

def test_docstring_example():
    M = np.array([[0., 1., 0., 2.], [3., 0., 0., 0.], [0., 0., 4., 0.]], np.float32)
    S, J = _pair(M)
    assert repr(S) == repr(J) == "BCOO(float32[3, 4], nse=4)"
    _same_bcoo(S, J)
    assert (S.ndim, S.shape, S.dtype, S.nse, S.size, len(S)) == \
        (J.ndim, J.shape, J.dtype, J.nse, J.size, len(J))
    y = np.array([3., 6., 5.], np.float32)
    _same(S.T @ xnp.asarray(y), J.T @ jnp.asarray(y))
    f = lambda M: lambda y: (M.T @ y).sum()
    _same(xform.jit(xform.grad(f(S)))(xnp.asarray(y)), jax.jit(jax.grad(f(J)))(jnp.asarray(y)))


@pytest.mark.parametrize("shape,n_batch,n_dense,nse", [
    ((5,), 0, 0, None), ((4, 6), 0, 0, None), ((4, 6), 0, 0, 3), ((4, 6), 0, 0, 30),
    ((3, 4, 5), 0, 0, None), ((3, 4, 5), 1, 0, None), ((3, 4, 5), 2, 0, None),
    ((3, 4, 5), 0, 1, None), ((3, 4, 5), 1, 1, None), ((3, 4), 1, 1, None),
    ((3, 4), 2, 0, None), ((2, 3, 4, 2), 1, 1, 5), ((0, 3), 0, 0, None), ((3, 4), 0, 2, None),
])
def test_fromdense_todense_match_jax(shape, n_batch, n_dense, nse):
    x = _sparse_array(np.random.default_rng(0), shape)
    S, J = _pair(x, n_batch=n_batch, n_dense=n_dense, nse=nse)
    _same_bcoo(S, J)
    assert repr(S) == repr(J)
    _same(S.todense(), J.todense(), exact=True)
    _same(xsp.todense(S), jsp.todense(J), exact=True)
    _same(xsp.bcoo_todense(S), jsp.bcoo_todense(J), exact=True)
    if nse is None:
        np.testing.assert_array_equal(_np(S.todense()), x)


@given(hst.lists(hst.integers(0, 4), min_size=1, max_size=4), hst.data())
def test_fromdense_roundtrip_property(shape, data):
    shape = tuple(shape)
    n_batch = data.draw(hst.integers(0, len(shape)))
    n_dense = data.draw(hst.integers(0, len(shape) - n_batch))
    density = data.draw(hst.floats(0, 1))
    seed = data.draw(hst.integers(0, 2 ** 16))
    nse = data.draw(hst.none() | hst.integers(0, 8))
    x = _sparse_array(np.random.default_rng(seed), shape, density)
    try:
        J = jsp.BCOO.fromdense(jnp.asarray(x), n_batch=n_batch, n_dense=n_dense, nse=nse)
    except TypeError:
        # JAX rejects a gather from an empty axis (nse > 0 slots of a size-0 array)
        with pytest.raises(TypeError, match="gather"):
            xsp.BCOO.fromdense(xnp.asarray(x), n_batch=n_batch, n_dense=n_dense, nse=nse)
        return
    S = xsp.BCOO.fromdense(xnp.asarray(x), n_batch=n_batch, n_dense=n_dense, nse=nse)
    _same_bcoo(S, J)
    _same(S.todense(), J.todense(), exact=True)


def test_constructor_and_validation():
    data = np.array([1., 3., 5.], np.float32)
    idx = np.array([[0, 0], [1, 1], [2, 2]], np.int32)
    S = xsp.BCOO((xnp.asarray(data), xnp.asarray(idx)), shape=(3, 3))
    J = jsp.BCOO((jnp.asarray(data), jnp.asarray(idx)), shape=(3, 3))
    _same_bcoo(S, J)
    _same(S.todense(), J.todense(), exact=True)
    with pytest.raises(ValueError, match="data.shape"):
        xsp.BCOO((xnp.ones(4), xnp.asarray(idx)), shape=(3, 3))
    with pytest.raises(ValueError):
        xsp.BCOO((xnp.asarray(data), xnp.asarray(idx)), shape=(3,))


def test_duplicates_and_padding_in_todense():
    # duplicate indices are summed, out-of-bounds (padding) ones are dropped
    data = np.array([1., 2., 4., 8.], np.float32)
    idx = np.array([[0, 1], [0, 1], [2, 0], [3, 3]], np.int32)
    S = xsp.BCOO((data, idx), shape=(3, 3))
    J = jsp.BCOO((data, idx), shape=(3, 3))
    _same(S.todense(), J.todense(), exact=True)
    v = np.arange(3, dtype=np.float32)
    _same(S @ xnp.asarray(v), J @ jnp.asarray(v))
    _same(xnp.asarray(v) @ S, jnp.asarray(v) @ J)


def test_from_scipy_sparse():
    import scipy.sparse as ss
    A = ss.random(6, 5, density=0.3, format="csr", random_state=1, dtype=np.float32)
    S, J = xsp.BCOO.from_scipy_sparse(A), jsp.BCOO.from_scipy_sparse(A)
    _same_bcoo(S, J)
    _same(S.todense(), J.todense())
    np.testing.assert_allclose(_np(S.todense()), A.toarray(), rtol=1e-6)


@pytest.mark.parametrize("kw", [dict(), dict(k=1), dict(k=-2), dict(M=5), dict(k=7),
                                dict(n_batch=1), dict(n_batch=1, k=1), dict(n_batch=1, k=-1),
                                dict(n_dense=1), dict(dtype=np.int32)])
def test_eye(kw):
    S, J = xsp.eye(4, **kw), jsp.eye(4, **kw)
    _same_bcoo(S, J)
    _same(S.todense(), J.todense(), exact=True)


@pytest.mark.parametrize("kw", [dict(), dict(nse=3), dict(n_batch=1, nse=2), dict(n_dense=1)])
def test_empty(kw):
    S, J = xsp.empty((3, 4), **kw), jsp.empty((3, 4), **kw)
    _same_bcoo(S, J)
    _same(S.todense(), J.todense(), exact=True)


def test_astype_neg_scalar_mul_repr():
    x = _sparse_array(np.random.default_rng(2), (4, 5))
    S, J = _pair(x, n_batch=1)
    _same_bcoo(-S, -J)
    _same_bcoo(S * 2, J * 2)
    _same_bcoo(3.0 * S, 3.0 * J)
    _same_bcoo(S.astype(np.int32), J.astype(np.int32))
    _same_bcoo(S / 2, J / 2)
    _same_bcoo(abs(S), abs(J))
    assert repr(S) == repr(J) and "n_batch=1" in repr(S)
    assert repr(S.astype(np.int32)) == repr(J.astype(np.int32))


@pytest.mark.parametrize("vshape", [(4, 5), (5,), (1, 5), (4, 1), ()])
@pytest.mark.parametrize("n_batch", [0, 1])
def test_multiply_dense(vshape, n_batch):
    rng = np.random.default_rng(3)
    x = _sparse_array(rng, (4, 5))
    v = rng.standard_normal(vshape).astype(np.float32)
    S, J = _pair(x, n_batch=n_batch)
    _same_bcoo(S * xnp.asarray(v), J * jnp.asarray(v), exact=False)
    _same(xsp.bcoo_multiply_dense(S, xnp.asarray(v)), jsp.bcoo_multiply_dense(J, jnp.asarray(v)))


def test_multiply_and_add_sparse():
    rng = np.random.default_rng(4)
    a, b = _sparse_array(rng, (4, 5)), _sparse_array(rng, (4, 5))
    (Sa, Ja), (Sb, Jb) = _pair(a), _pair(b)
    _same_bcoo(Sa * Sb, Ja * Jb, exact=False)
    _same_bcoo(xsp.bcoo_multiply_sparse(Sa, Sb), jsp.bcoo_multiply_sparse(Ja, Jb), exact=False)
    _same_bcoo(Sa + Sb, Ja + Jb)
    _same_bcoo(Sa - Sb, Ja - Jb)
    _same(Sa + xnp.asarray(b), Ja + jnp.asarray(b))
    _same(xnp.asarray(b) + Sa, jnp.asarray(b) + Ja)
    for sub in (lambda s, d: s - d, lambda s, d: d - s):
        with pytest.raises(NotImplementedError, match="Subtraction"):
            sub(Ja, jnp.asarray(b))
        with pytest.raises(NotImplementedError, match="Subtraction"):
            sub(Sa, xnp.asarray(b))


# ------------------------------------------------------------------ layout operations

@pytest.mark.parametrize("shape,n_batch,n_dense,perm", [
    ((3, 4), 0, 0, None), ((3, 4, 5), 0, 0, (2, 0, 1)), ((3, 4, 5), 1, 0, (0, 2, 1)),
    ((3, 4, 5), 0, 1, (1, 0, 2)), ((2, 3, 4, 5), 2, 0, (1, 0, 3, 2)),
    ((2, 3, 4, 5), 1, 1, (0, 2, 1, 3)),
])
def test_transpose(shape, n_batch, n_dense, perm):
    x = _sparse_array(np.random.default_rng(5), shape)
    S, J = _pair(x, n_batch=n_batch, n_dense=n_dense)
    _same_bcoo(S.transpose(perm), J.transpose(perm))
    if perm is None:
        _same_bcoo(S.T, J.T)
    else:
        _same_bcoo(xsp.bcoo_transpose(S, permutation=perm),
                   jsp.bcoo_transpose(J, permutation=perm))


def test_transpose_errors():
    S = xsp.BCOO.fromdense(xnp.ones((2, 3, 4)), n_batch=1)
    with pytest.raises(NotImplementedError, match="batch axes"):
        S.transpose((1, 0, 2))
    with pytest.raises(TypeError, match="permutation"):
        S.transpose((0, 0, 1))


@pytest.mark.parametrize("shape,n_batch,n_dense,axes", [
    ((3, 4), 0, 0, (0,)), ((3, 4), 0, 0, (1,)), ((3, 4, 5), 1, 0, (0,)), ((3, 4, 5), 1, 0, (2,)),
    ((3, 4, 5), 1, 1, (0, 2)), ((3, 4, 5), 0, 1, (2,)), ((3, 4, 5), 2, 0, (0, 1)),
    ((3, 4), 0, 0, (0, 1)),
])
def test_reduce_sum(shape, n_batch, n_dense, axes):
    x = _sparse_array(np.random.default_rng(6), shape)
    S, J = _pair(x, n_batch=n_batch, n_dense=n_dense)
    _same_bcoo(xsp.bcoo_reduce_sum(S, axes=axes), jsp.bcoo_reduce_sum(J, axes=axes), exact=False)
    xs, js = S.sum(axes), J.sum(axes)
    if isinstance(js, jsp.BCOO):
        _same_bcoo(xs, js, exact=False)
        _same(xs.todense(), js.todense())
    else:
        _same(xs, js)
    _same(S.sum(), J.sum())


def _dup_matrix(rng):
    data = rng.standard_normal(7).astype(np.float32)
    data[2] = 0
    idx = np.array([[2, 1], [0, 3], [2, 1], [1, 1], [3, 0], [0, 3], [4, 4]], np.int32)
    return data, idx


@pytest.mark.parametrize("nse", [None, 3, 8])
@pytest.mark.parametrize("remove_zeros", [True, False])
def test_sum_duplicates(nse, remove_zeros):
    data, idx = _dup_matrix(np.random.default_rng(7))
    S, J = xsp.BCOO((data, idx), shape=(4, 4)), jsp.BCOO((data, idx), shape=(4, 4))
    _same_bcoo(S.sum_duplicates(nse=nse, remove_zeros=remove_zeros),
               J.sum_duplicates(nse=nse, remove_zeros=remove_zeros), exact=False)
    _same_bcoo(xsp.bcoo_sum_duplicates(S, nse=nse), jsp.bcoo_sum_duplicates(J, nse=nse),
               exact=False)
    _same_bcoo(S.sort_indices(), J.sort_indices())
    _same_bcoo(xsp.bcoo_sort_indices(S), jsp.bcoo_sort_indices(J))


def test_sum_duplicates_batched_and_jit():
    rng = np.random.default_rng(8)
    x = _sparse_array(rng, (3, 4, 5))
    S, J = _pair(x, n_batch=1)
    S2 = xsp.BCOO((xnp.concatenate([S.data, S.data], 1), xnp.concatenate([S.indices, S.indices], 1)),
                  shape=S.shape)
    J2 = jsp.BCOO((jnp.concatenate([J.data, J.data], 1), jnp.concatenate([J.indices, J.indices], 1)),
                  shape=J.shape)
    _same_bcoo(S2.sum_duplicates(), J2.sum_duplicates(), exact=False)
    _same_bcoo(S2.sort_indices(), J2.sort_indices())
    f = lambda M: M.sum_duplicates(nse=M.nse)
    _same_bcoo(xform.jit(f)(S2), jax.jit(f)(J2), exact=False)
    with pytest.raises(Exception, match="nse"):
        xform.jit(lambda M: M.sum_duplicates())(S2)


def test_extract():
    data, idx = _dup_matrix(np.random.default_rng(9))
    S, J = xsp.BCOO((data, idx), shape=(4, 4)), jsp.BCOO((data, idx), shape=(4, 4))
    d = np.arange(16, dtype=np.float32).reshape(4, 4)
    for au in (True, False):
        _same_bcoo(xsp.bcoo_extract(S, xnp.asarray(d), assume_unique=au),
                   jsp.bcoo_extract(J, jnp.asarray(d), assume_unique=au))


@pytest.mark.parametrize("new", [(12,), (4, 3), (2, 3, 2), (-1, 2)])
def test_reshape(new):
    x = _sparse_array(np.random.default_rng(10), (3, 4))
    S, J = _pair(x, nse=7)
    _same_bcoo(S.reshape(new), J.reshape(new))
    _same(S.reshape(*new).todense(), J.reshape(*new).todense(), exact=True)


# ------------------------------------------------------------------ products

DOT_CASES = [
    # lhs shape, n_batch, n_dense, rhs shape, dimension numbers
    ((3, 4), 0, 0, (4,), (((1,), (0,)), ((), ()))),
    ((3, 4), 0, 0, (4, 5), (((1,), (0,)), ((), ()))),
    ((3, 4), 0, 0, (3, 5), (((0,), (0,)), ((), ()))),
    ((3, 4), 0, 0, (5, 4), (((1,), (1,)), ((), ()))),
    ((3, 4), 0, 0, (2, 5), (((), ()), ((), ()))),
    ((3, 4), 1, 0, (4, 5), (((1,), (0,)), ((), ()))),
    ((3, 4), 1, 0, (3, 5), (((0,), (0,)), ((), ()))),
    ((3, 4), 2, 0, (4,), (((1,), (0,)), ((), ()))),
    ((3, 4), 0, 1, (3, 2), (((0,), (0,)), ((), ()))),
    ((2, 3, 4), 1, 0, (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((2, 3, 4), 1, 0, (4, 2), (((2,), (0,)), ((0,), (1,)))),
    ((2, 3, 4), 1, 1, (2, 3, 5), (((1,), (1,)), ((0,), (0,)))),
    ((2, 3, 4), 0, 0, (3, 4), (((1, 2), (0, 1)), ((), ()))),
    ((2, 3, 4), 2, 0, (2, 3, 4), (((2,), (2,)), ((0, 1), (0, 1)))),
    ((2, 3, 4), 1, 0, (2, 4), (((0, 2), (0, 1)), ((), ()))),
]


def _dot_operands(lshape, n_batch, n_dense, rshape, seed=11):
    rng = np.random.default_rng(seed)
    x = _sparse_array(rng, lshape)
    y = rng.standard_normal(rshape).astype(np.float32)
    S, J = _pair(x, n_batch=n_batch, n_dense=n_dense)
    return S, J, y


@pytest.mark.parametrize("lshape,n_batch,n_dense,rshape,dn", DOT_CASES)
def test_dot_general_values_and_grads(lshape, n_batch, n_dense, rshape, dn):
    S, J, y = _dot_operands(lshape, n_batch, n_dense, rshape)
    xo = xsp.bcoo_dot_general(S, xnp.asarray(y), dimension_numbers=dn)
    jo = jsp.bcoo_dot_general(J, jnp.asarray(y), dimension_numbers=dn)
    _same(xo, jo)
    ct = np.random.default_rng(1).standard_normal(jo.shape).astype(np.float32)

    def xf(data, y):
        M = xsp.BCOO((data, S.indices), shape=S.shape)
        return (xsp.bcoo_dot_general(M, y, dimension_numbers=dn) * ct).sum()

    def jf(data, y):
        # the oracle goes through JAX's todense (JAX cannot transpose every sparse case)
        M = jsp.BCOO((data, J.indices), shape=J.shape).todense()
        return (jax.lax.dot_general(M, y, dimension_numbers=dn) * ct).sum()
    gx = xform.jit(xform.grad(xf, argnums=(0, 1)))(S.data, xnp.asarray(y))
    gj = jax.jit(jax.grad(jf, argnums=(0, 1)))(J.data, jnp.asarray(y))
    _same(gx[0], gj[0])
    _same(gx[1], gj[1])


@pytest.mark.parametrize("lshape,n_batch,n_dense,rshape,dn", DOT_CASES[:9])
def test_rdot_general(lshape, n_batch, n_dense, rshape, dn):
    # dense on the left: swap the roles
    S, J, y = _dot_operands(lshape, n_batch, n_dense, rshape)
    rdn = tuple(d[::-1] for d in dn)
    _same(xsp.bcoo_dot_general(xnp.asarray(y), S, dimension_numbers=rdn),
          jsp.bcoo_dot_general(jnp.asarray(y), J, dimension_numbers=rdn))
    gx = xform.grad(lambda y: xsp.bcoo_dot_general(y, S, dimension_numbers=rdn).sum())(
        xnp.asarray(y))
    gj = jax.grad(lambda y: jax.lax.dot_general(y, J.todense(), dimension_numbers=rdn).sum())(
        jnp.asarray(y))
    _same(gx, gj)


def test_dot_general_errors():
    S = xsp.BCOO.fromdense(xnp.ones((2, 3, 4)), n_dense=1)
    with pytest.raises(NotImplementedError, match="dense dimensions"):
        xsp.bcoo_dot_general(S, xnp.ones(4), dimension_numbers=(((2,), (0,)), ((), ())))
    with pytest.raises(NotImplementedError, match="batch dimensions"):
        xsp.bcoo_dot_general(S, xnp.ones((2, 3)), dimension_numbers=(((1,), (1,)), ((0,), (0,))))
    with pytest.raises(TypeError):
        xsp.bcoo_dot_general(S, xnp.ones(5), dimension_numbers=(((1,), (0,)), ((), ())))


@pytest.mark.parametrize("lshape,n_batch,rshape", [
    ((3, 4), 0, (4,)), ((3, 4), 0, (4, 2)), ((3, 4), 0, (5, 4, 1)), ((4,), 0, (4, 3)),
    ((4,), 0, (4,)), ((2, 3, 4), 1, (2, 4, 5)), ((2, 3, 4), 1, (4, 5)), ((2, 3, 4), 1, (4,)),
    ((2, 3, 4), 1, (1, 4, 5)), ((3, 4), 1, (6, 4, 2)),
])
def test_matmul(lshape, n_batch, rshape):
    rng = np.random.default_rng(12)
    x = _sparse_array(rng, lshape)
    y = rng.standard_normal(rshape).astype(np.float32)
    S, J = _pair(x, n_batch=n_batch)
    _same(S @ xnp.asarray(y), J @ jnp.asarray(y))
    # dense @ sparse with the mirrored shapes
    yt = np.swapaxes(y, -1, -2) if y.ndim > 1 else y
    xt = np.swapaxes(x, -1, -2) if x.ndim > 1 else x
    St, Jt = _pair(xt, n_batch=n_batch)
    _same(xnp.asarray(yt) @ St, jnp.asarray(yt) @ Jt)


def test_matmul_dtype_promotion():
    x = _sparse_array(np.random.default_rng(13), (3, 4))
    S, J = _pair(x.astype(np.int32) * 0 + (x != 0).astype(np.int32))
    y = np.ones(4, np.float32)
    _same(S @ xnp.asarray(y), J @ jnp.asarray(y))
    _same(S @ xnp.arange(4), J @ jnp.arange(4))


# ------------------------------------------------------------------ transformations

def test_grad_through_fromdense_and_todense():
    x = _sparse_array(np.random.default_rng(14), (4, 5))
    v = np.linspace(-1, 1, 5).astype(np.float32)
    f = lambda sp, np_: lambda m: ((sp.BCOO.fromdense(m, nse=8) @ np_.asarray(v)) ** 2).sum()
    _same(xform.grad(f(xsp, xnp))(xnp.asarray(x)), jax.grad(f(jsp, jnp))(jnp.asarray(x)))
    g = lambda sp: lambda d, i: (sp.BCOO((d, i), shape=(4, 5)).todense() ** 2).sum()
    S, J = _pair(x)
    _same(xform.grad(g(xsp))(S.data, S.indices), jax.grad(g(jsp))(J.data, J.indices))


def test_jit_bcoo_in_and_out():
    x = _sparse_array(np.random.default_rng(15), (4, 5))
    S, J = _pair(x, n_batch=1)
    f = lambda M: (M * 2).transpose((0, 1)).astype(np.float16)
    _same_bcoo(xform.jit(f)(S), jax.jit(f)(J))
    S, J = _pair(x)
    f = lambda M: (M * 2).T
    _same_bcoo(xform.jit(f)(S), jax.jit(f)(J))
    h = lambda m: xsp.BCOO.fromdense(m, nse=3)
    out = xform.jit(h)(xnp.asarray(x))
    _same_bcoo(out, jsp.BCOO.fromdense(jnp.asarray(x), nse=3))
    with pytest.raises(Exception, match="nse"):
        xform.jit(lambda m: xsp.BCOO.fromdense(m))(xnp.asarray(x))
    assert "BCOO(float32[4, 5], nse=" in repr(S)


def test_vmap_over_batched_bcoo():
    rng = np.random.default_rng(16)
    x = _sparse_array(rng, (3, 4, 5))
    v = rng.standard_normal((3, 5)).astype(np.float32)
    S, J = _pair(x, n_batch=1)
    f = lambda M, v: M @ v
    _same(xform.vmap(f)(S, xnp.asarray(v)), jax.vmap(f)(J, jnp.asarray(v)))
    _same(xform.vmap(f, (0, None))(S, xnp.asarray(v[0])), jax.vmap(f, (0, None))(J, jnp.asarray(v[0])))
    g = lambda M: M.todense().sum(0)
    _same(xform.vmap(g)(S), jax.vmap(g)(J))
    with pytest.raises(ValueError, match="n_batch"):
        xform.vmap(f)(xsp.BCOO.fromdense(xnp.asarray(x)), xnp.asarray(v))


def test_vmap_produces_batched_bcoo():
    x = _sparse_array(np.random.default_rng(17), (3, 4, 5))
    f = lambda sp: lambda m: sp.BCOO.fromdense(m, nse=6)
    xs, js = xform.vmap(f(xsp))(xnp.asarray(x)), jax.vmap(f(jsp))(jnp.asarray(x))
    _same_bcoo(xs, js)
    assert xs.n_batch == 1
    # a new batch axis must join the leading batch block (JAX's error)
    with pytest.raises(ValueError, match="out_axis=1"):
        jax.vmap(f(jsp), out_axes=1)(jnp.asarray(x))
    with pytest.raises(ValueError, match="out_axis=1"):
        xform.vmap(f(xsp), out_axes=1)(xnp.asarray(x))
    # vmap twice: n_batch=2
    x2 = np.stack([x, 2 * x])
    _same_bcoo(xform.vmap(xform.vmap(f(xsp)))(xnp.asarray(x2)),
               jax.vmap(jax.vmap(f(jsp)))(jnp.asarray(x2)))


def test_vmap_of_sparse_constant_times_batch_and_grad():
    rng = np.random.default_rng(18)
    x = _sparse_array(rng, (4, 5))
    v = rng.standard_normal((6, 5)).astype(np.float32)
    S, J = _pair(x)
    def xf(d, vs):
        return ((xsp.BCOO((d, S.indices), shape=S.shape) @ vs.T) ** 2).sum()

    def jf(d, vs):
        return ((jsp.BCOO((d, J.indices), shape=J.shape) @ vs.T) ** 2).sum()
    _same(xform.vmap(lambda vi: S @ vi)(xnp.asarray(v)), jax.vmap(lambda vi: J @ vi)(jnp.asarray(v)))
    gx = xform.jit(xform.grad(xf, argnums=(0, 1)))(S.data, xnp.asarray(v))
    gj = jax.jit(jax.grad(jf, argnums=(0, 1)))(J.data, jnp.asarray(v))
    _same(gx[0], gj[0])
    _same(gx[1], gj[1])
    # per-example gradients
    px = xform.vmap(xform.grad(lambda d, vi: ((xsp.BCOO((d, S.indices), shape=S.shape) @ vi) ** 2).sum()),
                    (None, 0))(S.data, xnp.asarray(v))
    pj = jax.vmap(jax.grad(lambda d, vi: ((jsp.BCOO((d, J.indices), shape=J.shape) @ vi) ** 2).sum()),
                  (None, 0))(J.data, jnp.asarray(v))
    _same(px, pj)


@settings(max_examples=10)   # each example runs JAX's and xform's grads eagerly
@given(hst.integers(1, 5), hst.integers(1, 5), hst.integers(1, 4), hst.integers(0, 12),
       hst.integers(0, 2 ** 16))
def test_matmul_and_grad_property(n, m, k, nse, seed):
    rng = np.random.default_rng(seed)
    x = _sparse_array(rng, (n, m))
    y = rng.standard_normal((m, k)).astype(np.float32)
    S, J = _pair(x, nse=nse)
    _same(S @ xnp.asarray(y), J @ jnp.asarray(y))
    xf = lambda d, y: ((xsp.BCOO((d, S.indices), shape=S.shape) @ y) ** 2).sum()
    jf = lambda d, y: ((jsp.BCOO((d, J.indices), shape=J.shape) @ y) ** 2).sum()
    gx = xform.grad(xf, argnums=(0, 1))(S.data, xnp.asarray(y))
    gj = jax.grad(jf, argnums=(0, 1))(J.data, jnp.asarray(y))
    np.testing.assert_allclose(_np(gx[0]), _np(gj[0]), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(gx[1]), _np(gj[1]), rtol=1e-4, atol=1e-4)


def test_alias_jax_serves_sparse():
    code = ("import xform; xform.compat.alias_jax()\n"
            "from jax.experimental.sparse import BCOO\n"
            "import jax.experimental.sparse as s, xform.experimental.sparse as xs\n"
            "assert BCOO is xs.BCOO and s is xs\n"
            "import jax.numpy as jnp\n"
            "M = BCOO.fromdense(jnp.eye(3))\n"
            "print((M @ jnp.ones(3)).tolist())\n"
            "assert not hasattr(s, 'BCSR') and not hasattr(s, 'bcoo_slice')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[1.0, 1.0, 1.0]"


def test_vmap_bcoo_inside_pytrees_and_negative_axes():
    rng = np.random.default_rng(19)
    x = _sparse_array(rng, (2, 3, 4, 5))
    v = rng.standard_normal((3, 5)).astype(np.float32)
    S, J = _pair(x, n_batch=2)
    f = lambda d: (d["m"] @ d["v"]).sum(-1)
    # map axis 1 of the BCOO (a batch axis) inside a dict, the vector along axis 0
    _same(xform.vmap(f, ({"m": 1, "v": 0},))({"m": S, "v": xnp.asarray(v)}),
          jax.vmap(f, ({"m": 1, "v": 0},))({"m": J, "v": jnp.asarray(v)}))
    # a negative axis counts from the BCOO's own rank
    g = lambda m: m.todense()
    _same(xform.vmap(g, in_axes=-3)(S), jnp.moveaxis(J.todense(), 1, 0))
    with pytest.raises(ValueError, match="in_axis"):
        xform.vmap(g, in_axes=2)(S)
    # a BCOO returned by a function mapped with out_axes None must be unbatched
    h = lambda m, _: m
    out = xform.vmap(h, (None, 0), out_axes=None)(S, xnp.ones(3))
    _same_bcoo(out, J)


# ------------------------------------------------------------------ sparsify

def _sparsify_both(f, *args, sparse_args=(0,)):
    xa = [xsp.BCOO.fromdense(xnp.asarray(a)) if i in sparse_args else xnp.asarray(a)
          for i, a in enumerate(args)]
    ja = [jsp.BCOO.fromdense(jnp.asarray(a)) if i in sparse_args else jnp.asarray(a)
          for i, a in enumerate(args)]
    return xsp.sparsify(f(xnp))(*xa), jsp.sparsify(f(jnp))(*ja), xa, ja


@pytest.mark.parametrize("name,f,shapes", [
    ("docs", lambda np_: lambda M, v: 2 * np_.dot(np_.log1p(M.T), v) + 1, [(3, 4), (3,)]),
    ("matmul", lambda np_: lambda M, v: M @ v, [(3, 4), (4, 2)]),
    ("rmatmul", lambda np_: lambda M, v: v @ M, [(3, 4), (2, 3)]),
    ("sum0", lambda np_: lambda M: M.sum(0), [(3, 4)]),
    ("sumall", lambda np_: lambda M: (M * 3.0).sum(), [(3, 4)]),
    ("unary", lambda np_: lambda M: np_.sin(-M) ** 2, [(3, 4)]),
    ("muldense", lambda np_: lambda M, v: (M * v) / 2, [(3, 4), (4,)]),
    ("addsub", lambda np_: lambda M: (M + M) - M, [(3, 4)]),
    ("adddense", lambda np_: lambda M, d: M + d, [(3, 4), (3, 4)]),
    ("astype", lambda np_: lambda M: M.astype(np_.int32) * 2, [(3, 4)]),
    ("reshape", lambda np_: lambda M: M.reshape(12), [(3, 4)]),
    ("identity", lambda np_: lambda M: M, [(3, 4)]),
    ("todense", lambda np_: lambda M: (xsp if np_ is xnp else jsp).todense(M.T) * 2, [(3, 4)]),
    ("todense_dense", lambda np_: lambda M, d: (xsp if np_ is xnp else jsp).todense(d) @ M,
     [(3, 4), (2, 3)]),
])
def test_sparsify_matches_jax(name, f, shapes):
    rng = np.random.default_rng(20)
    args = [_sparse_array(rng, s) for s in shapes]
    xo, jo, _, _ = _sparsify_both(f, *args)
    assert isinstance(xo, xsp.BCOO) == isinstance(jo, jsp.BCOO), name
    if isinstance(jo, jsp.BCOO):
        assert xo.shape == jo.shape
        _same(xo.todense(), jo.todense())
    else:
        _same(xo, jo)


def test_sparsify_jit_grad_and_errors():
    rng = np.random.default_rng(21)
    X = _sparse_array(rng, (20, 5), 0.3)
    y = (rng.random(20) > 0.5).astype(np.float32)
    w = rng.standard_normal(6).astype(np.float32)

    def loss(np_):
        def f(params, X, y):
            p = 0.5 * (np_.tanh((np_.dot(X, params[1:]) + params[0]) / 2) + 1)
            return -np_.mean(y * np_.log(p) + (1 - y) * np_.log(1 - p))
        return f
    Xs, Xj = _pair(X)
    gx = xform.jit(xform.grad(xsp.sparsify(loss(xnp))))(xnp.asarray(w), Xs, xnp.asarray(y))
    gj = jax.jit(jax.grad(jsp.sparsify(loss(jnp))))(jnp.asarray(w), Xj, jnp.asarray(y))
    _same(gx, gj)
    # a nested jit is sparsified through
    f = lambda np_, jit: lambda M, v: jit(lambda a, b: a.T @ b)(M, v) * 2
    v = np.ones(20, np.float32)
    _same(xsp.sparsify(f(xnp, xform.jit))(Xs, xnp.asarray(v)),
          jsp.sparsify(f(jnp, jax.jit))(Xj, jnp.asarray(v)))
    with pytest.raises(NotImplementedError, match="exp"):
        xsp.sparsify(xnp.exp)(Xs)
    with pytest.raises(NotImplementedError):
        jsp.sparsify(jnp.exp)(Xj)
    with pytest.raises(NotImplementedError, match="Division by a sparse"):
        xsp.sparsify(lambda a, b: a / b)(xnp.ones((20, 5)), Xs)

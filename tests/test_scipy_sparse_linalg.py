"""xform.scipy.sparse.linalg (cg, bicgstab, gmres) against jax.scipy.sparse.linalg and
dense solves: matrices, functions and @-objects as operators, pytree right-hand sides,
preconditioners, complex systems, jit, vmap and implicit derivatives."""
import numpy as np
import pytest

import jax
import jax.scipy.sparse.linalg as jsl

import xform
import xform.scipy.sparse.linalg as xsl

rng = np.random.default_rng(0)
N = 8
_Q = rng.normal(size=(N, N))
SPD = (_Q @ _Q.T + N * np.eye(N)).astype(np.float32)
GEN = (rng.normal(size=(N, N)) + N * np.eye(N)).astype(np.float32)
B = rng.normal(size=N).astype(np.float32)
SOLVERS = [("cg", SPD, {}), ("bicgstab", GEN, {}), ("gmres", GEN, {}),
           ("gmres", GEN, {"solve_method": "incremental", "restart": 3}),
           ("gmres", GEN, {"solve_method": "batched", "restart": 4})]
IDS = ["cg", "bicgstab", "gmres", "gmres-incremental", "gmres-batched-restart"]
TOL = dict(rtol=1e-4, atol=1e-4)


def test_names_match_jax():
    assert sorted(n for n in dir(jsl) if not n.startswith("_")) == sorted(xsl.__all__)


@pytest.mark.parametrize("name,A,kw", SOLVERS, ids=IDS)
def test_matches_jax_and_dense_solve(name, A, kw):
    x, info = getattr(xsl, name)(A, B, **kw)
    j, jinfo = getattr(jsl, name)(A, B, **kw)
    np.testing.assert_allclose(np.asarray(x), np.asarray(j), **TOL)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(A, B), **TOL)
    assert (info is None) == (jinfo is None)
    if info is not None:
        assert int(info) == int(jinfo) == 0
    assert x.dtype == j.dtype


@pytest.mark.parametrize("name,A,kw", SOLVERS, ids=IDS)
def test_operator_forms_and_x0(name, A, kw):
    want = np.linalg.solve(A, B)
    f = getattr(xsl, name)
    for op in (lambda v: xform.numpy.dot(A, v), xform.numpy.asarray(A)):
        np.testing.assert_allclose(np.asarray(f(op, B, **kw)[0]), want, **TOL)

    class MatMul:
        shape = A.shape

        def __matmul__(self, v):
            return xform.numpy.dot(A, v)
    np.testing.assert_allclose(np.asarray(f(MatMul(), B, **kw)[0]), want, **TOL)
    np.testing.assert_allclose(np.asarray(f(A, B, x0=want + 0.1, **kw)[0]), want, **TOL)
    # preconditioned by the inverse diagonal
    Minv = np.diag(1.0 / np.diag(A)).astype(np.float32)
    x = f(A, B, M=lambda v: Minv @ v, **kw)[0]
    j = getattr(jsl, name)(A, B, M=lambda v: Minv @ v, **kw)[0]
    np.testing.assert_allclose(np.asarray(x), np.asarray(j), **TOL)


@pytest.mark.parametrize("name,A,kw", SOLVERS, ids=IDS)
def test_pytree_right_hand_side(name, A, kw):
    """The vector is a dict of a (2,)- and a (2, 3)-array: A acts on their
    concatenation."""
    def split(v):
        return {"a": v[:2], "b": v[2:].reshape(2, 3)}

    def join(t, np_=xform.numpy):
        return np_.concatenate([t["a"], t["b"].reshape(-1)])

    xop = lambda t: split(xform.numpy.dot(A, join(t)))  # noqa: E731
    jop = lambda t: split(jax.numpy.dot(A, join(t, jax.numpy)))  # noqa: E731
    x = getattr(xsl, name)(xop, split(B), **kw)[0]
    j = getattr(jsl, name)(jop, split(B), **kw)[0]
    for k in ("a", "b"):
        np.testing.assert_allclose(np.asarray(x[k]), np.asarray(j[k]), **TOL)
    np.testing.assert_allclose(np.asarray(join(x)), np.linalg.solve(A, B), **TOL)


@pytest.mark.parametrize("name", ["cg", "bicgstab", "gmres"])
def test_complex_systems(name):
    C = (rng.normal(size=(N, N)) + 1j * rng.normal(size=(N, N))).astype(np.complex64)
    A = (C @ C.conj().T + N * np.eye(N)).astype(np.complex64) if name == "cg" else \
        (C + N * np.eye(N)).astype(np.complex64)
    b = (B + 1j * B[::-1]).astype(np.complex64)
    x = getattr(xsl, name)(A, b)[0]
    j = getattr(jsl, name)(A, b)[0]
    assert x.dtype == j.dtype
    np.testing.assert_allclose(np.asarray(x), np.asarray(j), **TOL)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(A, b), **TOL)


@pytest.mark.parametrize("name,A,kw", SOLVERS, ids=IDS)
def test_derivatives_are_implicit_solves(name, A, kw):
    w = rng.normal(size=N).astype(np.float32)
    # with respect to b: A^-T w
    g = xform.grad(lambda b: (getattr(xsl, name)(A, b, **kw)[0] * w).sum())(B)
    np.testing.assert_allclose(np.asarray(g), np.linalg.solve(A.T, w), **TOL)
    jg = jax.grad(lambda b: (getattr(jsl, name)(A, b, **kw)[0] * w).sum())(B)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jg), **TOL)
    # with respect to what the operator closes over: d/ds (sA)^-1 b = -x/s
    f = lambda s: (getattr(xsl, name)(lambda v: s * xform.numpy.dot(A, v), B, **kw)[0]  # noqa
                   * w).sum()
    gs = float(xform.jit(xform.grad(f))(2.0))
    np.testing.assert_allclose(gs, -(np.linalg.solve(A, B) / 4.0 * w).sum(), rtol=1e-3)
    # forward mode equals reverse mode
    _, t = xform.jvp(lambda b: getattr(xsl, name)(A, b, **kw)[0], (B,), (w,))
    np.testing.assert_allclose(np.asarray(t), np.linalg.solve(A, w), **TOL)


@pytest.mark.parametrize("name,A,kw", SOLVERS, ids=IDS)
def test_jit_and_vmap(name, A, kw):
    bs = rng.normal(size=(3, N)).astype(np.float32)
    f = lambda b: getattr(xsl, name)(A, b, **kw)[0]  # noqa: E731
    got = np.asarray(xform.jit(xform.vmap(f))(bs))
    np.testing.assert_allclose(got, np.stack([np.asarray(f(b)) for b in bs]), **TOL)
    np.testing.assert_allclose(got, np.linalg.solve(A, bs.T).T, **TOL)


def test_tolerances_and_maxiter():
    # maxiter=1: one CG step, as JAX
    x = xsl.cg(SPD, B, maxiter=1)[0]
    j = jsl.cg(SPD, B, maxiter=1)[0]
    np.testing.assert_allclose(np.asarray(x), np.asarray(j), **TOL)
    assert np.abs(np.asarray(x) - np.linalg.solve(SPD, B)).max() > 1e-3
    # a loose tolerance stops early (same iterate as JAX)
    x = xsl.bicgstab(GEN, B, tol=0.5)[0]
    j = jsl.bicgstab(GEN, B, tol=0.5)[0]
    np.testing.assert_allclose(np.asarray(x), np.asarray(j), **TOL)
    # info: -1 when the solution holds NaNs (a NaN start stays NaN), else 0
    nan0 = np.full(N, np.nan, np.float32)
    assert int(xsl.gmres(GEN, B, x0=nan0)[1]) == int(jsl.gmres(GEN, B, x0=nan0)[1]) == -1
    assert int(xsl.gmres(GEN, B)[1]) == 0


def test_errors_match_jax():
    with pytest.raises(ValueError, match="square matrix"):
        xsl.cg(np.ones((2, 3), np.float32), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="either a function or ndarray"):
        xsl.cg("A", np.ones(2, np.float32))
    with pytest.raises(ValueError, match="matching tree structure"):
        xsl.cg(lambda v: v, {"a": np.ones(2)}, x0=[np.ones(2)])
    with pytest.raises(ValueError, match="matching shapes"):
        xsl.bicgstab(lambda v: v, np.ones(2), x0=np.ones(3))
    with pytest.raises(ValueError, match="invalid solve_method"):
        xsl.gmres(SPD, B, solve_method="qr")

"""Linear algebra: xform.lax.linalg / xform.numpy.linalg against real JAX and against math.

Reconstruction (L L^H, Q R, U S V^H, V diag(w) V^H), orthogonality and solve
residuals over hypothesis-drawn well-conditioned matrices; f32/f64/c64/c128,
batch shapes, size-0 and 1x1; JVPs against finite differences and JAX;
batching against loops; grads of slogdet / eigh / cholesky losses against JAX;
bad input raises JAX's exception types.
"""
from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xform
import xform.numpy as xnp
from xform.lax import linalg as xlinalg
from prim_testutil import x64_enabled

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 2e-4, np.float64: 1e-10, np.complex64: 2e-4, np.complex128: 1e-10}


def _mat(rng, shape, dt):
    x = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def _spd(rng, batch, n, dt):
    a = _mat(rng, batch + (n, n), dt)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dt)


def _H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _close(a, b, dt, scale=1.0):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=TOL[dt] * scale,
                               atol=TOL[dt] * scale)


@pytest.fixture(autouse=True)
def _x64():
    with x64_enabled():
        yield


cases = st.tuples(st.sampled_from(DTYPES), st.sampled_from([(), (2,), (2, 1)]),
                  st.integers(1, 5), st.integers(1, 5), st.integers(0, 2**31 - 1))


# ----------------------------------------------------------------- reconstruction (eager + jit)


@settings(max_examples=4, deadline=None)
@given(cases)
def test_decompositions_reconstruct(case):
    """Eagerly (the compiled path equals the eager one: the verifier's job) plus one
    compiled shape per run."""
    dt, batch, n, m, seed = case
    rng = np.random.default_rng(seed)
    a = _mat(rng, batch + (m, n), dt)
    spd = _spd(rng, batch, n, dt)
    for f in (lambda g: g,) if (n, m) != (3, 2) else (lambda g: g, xform.jit):
        L = np.asarray(f(xnp.linalg.cholesky)(spd))
        _close(L @ _H(L), spd, dt, 10 * n)
        assert np.allclose(np.triu(L, 1), 0)
        q, r = f(lambda x: tuple(xnp.linalg.qr(x)))(a)
        q, r = np.asarray(q), np.asarray(r)
        _close(q @ r, a, dt, 10)
        qq = _H(q) @ q
        _close(qq, np.broadcast_to(np.eye(q.shape[-1]), qq.shape), dt, 10)
        w, v = f(lambda x: tuple(xnp.linalg.eigh(x)))(spd)
        w, v = np.asarray(w), np.asarray(v)
        _close((v * w[..., None, :]) @ _H(v), spd, dt, 30 * n)
        assert np.all(np.diff(w, axis=-1) >= 0)
        u, s, vh = f(lambda x: tuple(xnp.linalg.svd(x, full_matrices=False)))(a)
        u, s, vh = map(np.asarray, (u, s, vh))
        _close((u * s[..., None, :]) @ vh, a, dt, 30)
        lu, piv, perm = f(lambda x: tuple(xlinalg.lu(x)))(a)
        lu, perm = np.asarray(lu), np.asarray(perm)
        k = min(m, n)
        lo = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
        up = np.triu(lu[..., :k, :])
        _close(lo @ up, np.take_along_axis(a, perm[..., None], -2), dt, 10)


@settings(max_examples=4, deadline=None)
@given(cases)
def test_solves_residuals(case):
    dt, batch, n, k, seed = case
    rng = np.random.default_rng(seed)
    a = _mat(rng, batch + (n, n), dt) + (3 * n * np.eye(n)).astype(dt)
    b = _mat(rng, batch + (n, k), dt)
    for f in (lambda g: g,) if n != 3 else (lambda g: g, xform.jit):
        x = np.asarray(f(xnp.linalg.solve)(a, b))
        _close(a @ x, b, dt, 10 * n)
        ai = np.asarray(f(xnp.linalg.inv)(a))
        _close(a @ ai, np.broadcast_to(np.eye(n), a.shape), dt, 10 * n)
        for lower in (True, False):
            t = np.tril(a) if lower else np.triu(a)
            y = np.asarray(f(lambda t_, b_: xlinalg.triangular_solve(
                t_, b_, left_side=True, lower=lower))(t, b))
            _close(t @ y, b, dt, 10 * n)


@pytest.mark.parametrize("dt", [pytest.param(np.float32, marks=pytest.mark.slow),
                                pytest.param(np.float64, marks=pytest.mark.slow),
                                pytest.param(np.complex64, marks=pytest.mark.slow),
                                np.complex128])
def test_matches_jax(dt):
    rng = np.random.default_rng(0)
    a = _mat(rng, (2, 4, 3), dt)
    sq = _mat(rng, (2, 4, 4), dt)
    spd = _spd(rng, (2,), 4, dt)
    pairs = [
        (lambda m: xnp.linalg.cholesky(m), lambda m: jnp.linalg.cholesky(m), spd),
        (lambda m: xnp.linalg.eigh(m), lambda m: jnp.linalg.eigh(m), spd),
        (lambda m: xnp.linalg.svd(m), lambda m: jnp.linalg.svd(m), a),
        (lambda m: xnp.linalg.qr(m, mode="complete"), lambda m: jnp.linalg.qr(m, "complete"), a),
        (lambda m: xnp.linalg.slogdet(m), lambda m: jnp.linalg.slogdet(m), sq),
        (lambda m: xnp.linalg.slogdet(m.real, method="qr"),
         lambda m: jnp.linalg.slogdet(m.real, method="qr"), sq),
        (lambda m: xnp.linalg.det(m), lambda m: jnp.linalg.det(m), sq),
        (lambda m: xnp.linalg.inv(m), lambda m: jnp.linalg.inv(m), sq),
        (lambda m: xnp.linalg.pinv(m), lambda m: jnp.linalg.pinv(m), a),
        (lambda m: xnp.linalg.eigvals(m), lambda m: jnp.linalg.eigvals(m), sq),
        (lambda m: xnp.linalg.matrix_rank(m), lambda m: jnp.linalg.matrix_rank(m), a),
        (lambda m: xnp.linalg.norm(m, "nuc", axis=(-2, -1)),
         lambda m: jnp.linalg.norm(m, "nuc", axis=(-2, -1)), a),
        (lambda m: xnp.linalg.cond(m), lambda m: jnp.linalg.cond(m), sq),
        (lambda m: xlinalg.lu(m), lambda m: jax.lax.linalg.lu(m), a),
        (lambda m: xlinalg.schur(m[0]), lambda m: jax.lax.linalg.schur(m[0]), sq),
        (lambda m: xlinalg.hessenberg(m), lambda m: jax.lax.linalg.hessenberg(m), sq),
    ]
    for ours, theirs, x in pairs:
        got = jax.tree_util.tree_leaves(ours(x))   # eager; XLA == eager is the verifier's
        want = jax.tree_util.tree_leaves(theirs(x))
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            _close(g, w, dt, 100)


def test_edge_sizes():
    """Size-0 and 1x1 (batched or not), eager and compiled, against NumPy (JAX agrees with
    NumPy on these; one case is checked against JAX itself)."""
    for f, g in [(xnp.linalg.cholesky, np.linalg.cholesky), (xnp.linalg.inv, np.linalg.inv),
                 (xnp.linalg.det, np.linalg.det), (lambda m: xnp.linalg.eigh(m)[0],
                                                   lambda m: np.linalg.eigh(m)[0]),
                 (lambda m: xnp.linalg.svd(m)[1], lambda m: np.linalg.svd(m)[1]),
                 (lambda m: xnp.linalg.qr(m)[1], lambda m: np.linalg.qr(m)[1])]:
        for shape in [(0, 0), (3, 0, 0), (1, 1), (2, 1, 1)]:
            x = np.full(shape, 2.0)
            for h in (f, xform.jit(f)) if shape in ((3, 0, 0), (1, 1)) else (f,):
                got, want = np.asarray(h(x)), np.asarray(g(x))
                assert got.shape == want.shape
                np.testing.assert_allclose(got, want, rtol=1e-12)
    x = np.zeros((2, 0, 0))
    assert np.asarray(xnp.linalg.slogdet(x)[1]).shape == jnp.linalg.slogdet(x)[1].shape


def test_failures_are_nans_not_exceptions():
    bad = -np.eye(3)
    want = np.asarray(jnp.linalg.cholesky(bad))
    for f in (xnp.linalg.cholesky, xform.jit(xnp.linalg.cholesky)):
        np.testing.assert_array_equal(np.asarray(f(bad)), want)   # NaN lower, zero upper
    sing = np.ones((3, 3))
    assert float(xnp.linalg.det(sing)) == 0.0
    s, ld = xnp.linalg.slogdet(sing)
    assert float(s) == 0 and float(ld) == -np.inf


def test_bad_inputs_raise_like_jax():
    for fn in ("cholesky", "inv", "det", "slogdet", "eigh", "eigvals", "svd", "qr"):
        for shape in [(2, 3), (3,)]:
            if shape == (2, 3) and fn in ("svd", "qr"):
                continue
            with pytest.raises(Exception) as want:
                getattr(jnp.linalg, fn)(np.ones(shape))
            with pytest.raises(want.type, match=re.escape(str(shape))):
                getattr(xnp.linalg, fn)(np.ones(shape))
    with pytest.raises(ValueError):
        jnp.linalg.solve(np.eye(3), np.ones((4, 2)))
    with pytest.raises(ValueError, match="incompatible"):
        xnp.linalg.solve(np.eye(3), np.ones((4, 2)))
    with pytest.raises(TypeError):
        jax.lax.linalg.qr(np.eye(3, dtype=np.int32))
    with pytest.raises(TypeError, match="int32"):
        xlinalg.qr(np.eye(3, dtype=np.int32))
    assert xlinalg.cholesky(np.eye(3, dtype=np.int32)).dtype == \
        jax.lax.linalg.cholesky(np.eye(3, dtype=np.int32)).dtype
    with pytest.raises(ValueError, match="batch"):
        xlinalg.triangular_solve(np.ones((2, 3, 3)), np.ones((4, 3, 3)), left_side=True)


# ----------------------------------------------------------------- derivatives


def _fd(f, x, t, eps=1e-6):
    return (np.asarray(f(x + eps * t)) - np.asarray(f(x - eps * t))) / (2 * eps)


@pytest.mark.parametrize("name", ["cholesky", "eigh_w", "svd_s", "qr_r", "lu", "trsolve",
                                  "det", "slogdet", "solve", "eigvals", "pinv", "eigh_v_sq"])
def test_jvp_vs_finite_differences_and_jax(name):
    rng = np.random.default_rng(3)
    spd = _spd(rng, (), 4, np.float64)
    a = _mat(rng, (4, 4), np.float64) + 4 * np.eye(4)
    b = _mat(rng, (4, 2), np.float64)
    fns = {
        "cholesky": (lambda m: xnp.linalg.cholesky(m), lambda m: jnp.linalg.cholesky(m), spd),
        "eigh_w": (lambda m: xnp.linalg.eigh(m)[0], lambda m: jnp.linalg.eigh(m)[0], spd),
        "eigh_v_sq": (lambda m: xnp.linalg.eigh(m)[1] ** 2, lambda m: jnp.linalg.eigh(m)[1] ** 2,
                      spd),
        "svd_s": (lambda m: xnp.linalg.svd(m, compute_uv=False),
                  lambda m: jnp.linalg.svd(m, compute_uv=False), a[:, :3]),
        "qr_r": (lambda m: xnp.abs(xnp.linalg.qr(m)[1]), lambda m: jnp.abs(jnp.linalg.qr(m)[1]),
                 a[:3]),
        "lu": (lambda m: xlinalg.lu(m)[0], lambda m: jax.lax.linalg.lu(m)[0], a),
        "trsolve": (lambda m: xlinalg.triangular_solve(m, b, left_side=True, lower=True,
                                                       transpose_a=True),
                    lambda m: jax.lax.linalg.triangular_solve(m, b, left_side=True, lower=True,
                                                              transpose_a=True), a),
        "det": (xnp.linalg.det, jnp.linalg.det, a),
        "slogdet": (lambda m: xnp.linalg.slogdet(m)[1], lambda m: jnp.linalg.slogdet(m)[1], a),
        "solve": (lambda m: xnp.linalg.solve(m, b), lambda m: jnp.linalg.solve(m, b), a),
        "eigvals": (lambda m: xnp.sort(xnp.real(xnp.linalg.eigvals(m))),
                    lambda m: jnp.sort(jnp.real(jnp.linalg.eigvals(m))), spd),
        "pinv": (xnp.linalg.pinv, jnp.linalg.pinv, a[:, :3]),
    }
    ours, theirs, x = fns[name]
    t = _mat(rng, x.shape, np.float64)
    if name in ("cholesky", "eigh_w", "eigh_v_sq", "eigvals"):
        t = t + t.T
    y, ty = xform.jvp(ours, (x,), (t,))
    _, ty_jax = jax.jvp(theirs, (x,), (t,))
    np.testing.assert_allclose(np.asarray(ty), np.asarray(ty_jax), rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(np.asarray(ty), _fd(ours, x, t), rtol=1e-5, atol=1e-5)


def test_triangular_solve_transpose_dot_product():
    rng = np.random.default_rng(4)
    a = np.tril(_mat(rng, (3, 3), np.float64)) + 3 * np.eye(3)
    for left in (True, False):
        for ta in (True, False):
            f = lambda b: xlinalg.triangular_solve(a, b, left_side=left, lower=True,  # noqa
                                                   transpose_a=ta)
            b = _mat(rng, (3, 3), np.float64)
            ct = _mat(rng, (3, 3), np.float64)
            fT = xform.linear_transpose(f, b)
            lhs = np.sum(np.asarray(fT(ct)[0]) * b)
            rhs = np.sum(ct * np.asarray(f(b)))
            np.testing.assert_allclose(lhs, rhs, rtol=1e-10)


def test_grads_match_jax():
    rng = np.random.default_rng(5)
    a = _mat(rng, (4, 4), np.float64) + 2 * np.eye(4)
    spd = _spd(rng, (), 4, np.float64)
    y = rng.standard_normal(4)

    def gauss_ll(np_, k, yy):
        L = np_.linalg.cholesky(k)
        alpha = jax.scipy.linalg.cho_solve((L, True), yy) if np_ is jnp else \
            xform.scipy.linalg.cho_solve((L, True), yy)
        return -0.5 * yy @ alpha - np_.sum(np_.log(np_.diagonal(L)))

    checks = [
        (lambda m: xnp.linalg.slogdet(m)[1], lambda m: jnp.linalg.slogdet(m)[1], a),
        (lambda m: xnp.sum(xnp.linalg.eigh(m)[0] ** 2) + xnp.linalg.eigh(m)[1][0, 0] ** 2,
         lambda m: jnp.sum(jnp.linalg.eigh(m)[0] ** 2) + jnp.linalg.eigh(m)[1][0, 0] ** 2, spd),
        (lambda m: gauss_ll(xnp, m, y), lambda m: gauss_ll(jnp, m, y), spd),
    ]
    for i, (ours, theirs, x) in enumerate(checks):
        g = (xform.jit(xform.grad(ours)) if i == 2 else xform.grad(ours))(x)
        np.testing.assert_allclose(np.asarray(g), np.asarray(jax.grad(theirs)(x)), rtol=1e-8,
                                   atol=1e-10)


def test_vmap_matches_loop_and_jax():
    rng = np.random.default_rng(6)
    spd = _spd(rng, (3,), 3, np.float32)
    b = _mat(rng, (3, 3, 2), np.float32)
    fns = [lambda m: xnp.linalg.cholesky(m), lambda m: xnp.linalg.eigh(m)[0],
           lambda m: xnp.linalg.qr(m)[1], lambda m: xnp.linalg.svd(m)[1],
           lambda m: xlinalg.lu(m)[0], lambda m: xnp.linalg.det(m)]
    for f in fns:
        got = np.asarray(xform.vmap(f)(spd))
        loop = np.stack([np.asarray(f(spd[i])) for i in range(3)])
        np.testing.assert_allclose(got, loop, rtol=1e-5, atol=1e-5)
    got = xform.vmap(xnp.linalg.solve, in_axes=(None, 0))(spd[0], b)
    want = jax.vmap(jnp.linalg.solve, in_axes=(None, 0))(spd[0], b)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    got = xform.vmap(lambda bb: xlinalg.triangular_solve(spd[0], bb, left_side=True, lower=True),
                     in_axes=1)(b)
    want = jax.vmap(lambda bb: jax.lax.linalg.triangular_solve(spd[0], bb, left_side=True,
                                                               lower=True), in_axes=1)(b)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_lowering_uses_lapack_ffi():
    text = xform.jit(xnp.linalg.cholesky).lower(np.eye(3, dtype=np.float32)).as_text()
    assert "lapack_spotrf_ffi" in text and "api_version = 4" in text


@pytest.mark.slow
def test_remaining_names_match_jax():
    rng = np.random.default_rng(7)
    a = _mat(rng, (4, 3), np.float32)
    b = _mat(rng, (4,), np.float32)
    s = a.T @ a
    t = _mat(rng, (2, 3, 6), np.float32)
    pairs = [
        (lambda m: xnp.linalg.lstsq(m, b), lambda m: jnp.linalg.lstsq(m, b), a),
        (lambda m: xnp.linalg.lstsq(m, b, numpy_resid=True),
         lambda m: jnp.linalg.lstsq(m, b, numpy_resid=True), a),
        (lambda m: xnp.linalg.qr(m, mode="raw"), lambda m: jnp.linalg.qr(m, mode="raw"), a),
        (lambda m: xnp.linalg.svd(m, hermitian=True), lambda m: jnp.linalg.svd(m, hermitian=True),
         s),
        (lambda m: xnp.linalg.pinv(m, hermitian=True),
         lambda m: jnp.linalg.pinv(m, hermitian=True), s),
        (lambda m: xnp.linalg.tensorinv(m, ind=2), lambda m: jnp.linalg.tensorinv(m, ind=2), t),
        (lambda m: xnp.linalg.cond(m, "fro"), lambda m: jnp.linalg.cond(m, "fro"), s),
        (lambda m: xnp.linalg.multi_dot([b, m, m.T, b]),
         lambda m: jnp.linalg.multi_dot([b, m, m.T, b]), a),
        (lambda m: xnp.linalg.matrix_norm(m, ord="nuc", keepdims=True),
         lambda m: jnp.linalg.matrix_norm(m, ord="nuc", keepdims=True), a),
        (lambda m: xnp.linalg.diagonal(m, offset=1), lambda m: jnp.linalg.diagonal(m, offset=1),
         t),
        # det: closed forms for 2x2/3x3, LU otherwise; JAX's singular-safe cofactor JVP
        (xform.grad(xnp.linalg.det), jax.grad(jnp.linalg.det), np.ones((4, 4), np.float32)),
        (xform.grad(xnp.linalg.det), jax.grad(jnp.linalg.det),
         np.diag([1.0, 2, 3, 0]).astype(np.float32)),
        (xform.grad(xnp.linalg.det), jax.grad(jnp.linalg.det), s),
    ]
    for ours, theirs, x in pairs:
        got = jax.tree_util.tree_leaves(ours(x))
        want = jax.tree_util.tree_leaves(theirs(x))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert np.shape(g) == np.shape(w)
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-4, atol=2e-4)


def test_platform_table_lowers_cuda_rows_to_cusolver():
    """The CUDA rows of the target table (no GPU here: text only, never compiled)."""
    from xform._src.interpreters import staging
    from xform._src.interpreters.core import ShapedArray
    from xform._src.interpreters.ir import ClosedJaxpr
    from xform._src.lowering.mlir import lower_module

    def text(fn, *shapes):
        avals = [ShapedArray(s, np.float32) for s in shapes]
        jaxpr, consts = staging.trace_to_jaxpr(lambda *xs: [fn(*xs)], avals)
        return lower_module(ClosedJaxpr(jaxpr, consts), platform="cuda").text

    assert "cusolver_potrf_ffi" in text(lambda x: xlinalg.cholesky(x), (3, 3))
    assert "cusolver_syevd_ffi" in text(lambda x: xlinalg.eigh(x)[1], (3, 3))
    t = text(lambda x: xlinalg.qr(x)[0], (4, 3))
    assert "cusolver_geqrf_ffi" in t and "cusolver_orgqr_ffi" in t
    assert "stablehlo.triangular_solve" in text(
        lambda a, b: xlinalg.triangular_solve(a, b, left_side=True, lower=True), (3, 3), (3, 2))
    assert "lapack" not in t


def test_eig_eigenvector_jvp_matches_jax():
    rng = np.random.default_rng(8)
    a = _mat(rng, (2, 4, 4), np.complex128)
    t = _mat(rng, (2, 4, 4), np.complex128)
    for left in (False, True):
        def f(np_lax):
            return lambda m: np_lax.eig(m, compute_left_eigenvectors=left,
                                        enable_eigvec_derivs=True)
        got = xform.jvp(f(xlinalg), (a,), (t,))[1]
        want = jax.jvp(f(jax.lax.linalg), (a,), (t,))[1]
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-9)
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        xform.jvp(lambda m: xlinalg.eig(m)[1], (a,), (t,))


@st.composite
def conditioned(draw, max_n=5):
    """(A, s): A = Q1 diag(s) Q2^H with orthogonal/unitary Q's and a drawn condition number."""
    n = draw(st.integers(1, max_n))
    dt = draw(st.sampled_from([np.float64, np.complex128]))
    cond = draw(st.floats(1.0, 1e4))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    q1, _ = np.linalg.qr(_mat(rng, (n, n), dt))
    q2, _ = np.linalg.qr(_mat(rng, (n, n), dt))
    s = np.sort(np.geomspace(1.0, cond, n))[::-1]
    return (q1 * s) @ _H(q2), s, q1


@settings(max_examples=6, deadline=None)
@given(conditioned())
def test_controlled_condition_number(case):
    a, s, q = case
    n = a.shape[-1]
    cond = s[0] / s[-1]
    np.testing.assert_allclose(np.asarray(xnp.linalg.svd(a, compute_uv=False)), s,
                               rtol=1e-10 * cond, atol=1e-10 * cond)
    np.testing.assert_allclose(float(xnp.linalg.cond(a)), cond, rtol=1e-8 * cond)
    b = np.ones((n, 2), a.dtype)
    x = np.asarray(xnp.linalg.solve(a, b))
    assert np.abs(a @ x - b).max() <= 1e-11 * cond
    r = np.asarray(xnp.linalg.qr(q)[1])          # QR of a unitary matrix: |diag R| == 1
    np.testing.assert_allclose(np.abs(np.diagonal(r)), 1.0, rtol=1e-12)
    np.testing.assert_allclose(float(xnp.linalg.slogdet(a)[1]), np.sum(np.log(s)), rtol=1e-10,
                               atol=1e-10)


def test_vmap_other_axes_match_jax():
    rng = np.random.default_rng(9)
    spd = np.stack([_spd(rng, (), 3, np.float32) for _ in range(4)], axis=1)   # (3, 4, 3)
    for ours, theirs in [(xnp.linalg.cholesky, jnp.linalg.cholesky),
                         (lambda m: xnp.linalg.eigh(m)[0], lambda m: jnp.linalg.eigh(m)[0]),
                         (lambda m: xnp.linalg.svd(m)[1], lambda m: jnp.linalg.svd(m)[1]),
                         (xnp.linalg.inv, jnp.linalg.inv)]:
        got = xform.vmap(ours, in_axes=1, out_axes=-1)(spd)
        want = jax.vmap(theirs, in_axes=1, out_axes=-1)(spd)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        jnp.linalg.solve(np.ones((2, 3, 3)), np.ones((4, 3, 1)))
    with pytest.raises(ValueError, match=r"\(2,\).*\(4,\)|\(4,\).*\(2,\)"):
        xnp.linalg.solve(np.ones((2, 3, 3)), np.ones((4, 3, 1)))


@pytest.mark.slow
def test_lax_linalg_composites_match_jax():
    rng = np.random.default_rng(10)
    a = _mat(rng, (4, 3), np.float32)
    c = _mat(rng, (4, 4), np.float32)
    c = c + c.T
    _close(xlinalg.symmetric_product(a, c, alpha=2.0, beta=0.5, symmetrize_output=True),
           jax.lax.linalg.symmetric_product(a, c, alpha=2.0, beta=0.5, symmetrize_output=True),
           np.float32)
    s = a.T @ a + np.eye(3, dtype=np.float32)
    r = np.linalg.cholesky(s).T
    w = _mat(rng, (3,), np.float32)
    _close(xlinalg.cholesky_update(r, w), jax.lax.linalg.cholesky_update(r, w), np.float32)
    h, taus = jnp.linalg.qr(a, mode="raw")
    h, taus = np.asarray(h).T, np.asarray(taus)
    for left, cc in ((True, c), (False, c[:3])):
        for tr in (True, False):
            _close(xlinalg.ormqr(h, taus, cc, left=left, transpose=tr),
                   jax.lax.linalg.ormqr(h, taus, cc, left=left, transpose=tr), np.float32)


@pytest.mark.slow
def test_qdwh_matches_jax():
    rng = np.random.default_rng(11)
    for shape in [(5, 3), (4, 4)]:
        a = _mat(rng, shape, np.float32)
        got, want = xlinalg.qdwh(a), jax.lax.linalg.qdwh(a)
        for g, w in zip(got[:2], want[:2]):
            _close(g, w, np.float32)
        assert int(got[2]) == int(want[2]) and bool(got[3]) == bool(want[3])
        u, h = np.asarray(got[0]), np.asarray(got[1])
        np.testing.assert_allclose(u @ h, a, atol=1e-5)


@pytest.mark.parametrize("name", ["cholesky", "eigh", "svd", "qr_full_tall", "qr_wide",
                                  pytest.param("lu", marks=pytest.mark.slow),
                                  pytest.param("slogdet", marks=pytest.mark.slow),
                                  pytest.param("trsolve_conj", marks=pytest.mark.slow)])
def test_complex_batched_jvps_match_jax(name):
    rng = np.random.default_rng(12)
    a = _mat(rng, (2, 4, 4), np.complex128)
    t = _mat(rng, (2, 4, 4), np.complex128)
    spd = a @ _H(a) + 4 * np.eye(4)
    th = t + _H(t)
    cases = {
        "cholesky": (xnp.linalg.cholesky, jnp.linalg.cholesky, spd, th),
        "eigh": (lambda m: (xnp.linalg.eigh(m)[0], xnp.abs(xnp.linalg.eigh(m)[1])),
                 lambda m: (jnp.linalg.eigh(m)[0], jnp.abs(jnp.linalg.eigh(m)[1])), spd, th),
        "svd": (lambda m: xnp.abs(xnp.linalg.svd(m, full_matrices=False)[0]),
                lambda m: jnp.abs(jnp.linalg.svd(m, full_matrices=False)[0]),
                a[..., :3], t[..., :3]),
        "qr_full_tall": (lambda m: xnp.linalg.qr(m, mode="complete"),
                         lambda m: jnp.linalg.qr(m, mode="complete"), a[..., :3], t[..., :3]),
        "qr_wide": (lambda m: xnp.linalg.qr(m), lambda m: jnp.linalg.qr(m), a[:, :3], t[:, :3]),
        "lu": (lambda m: xlinalg.lu(m)[0], lambda m: jax.lax.linalg.lu(m)[0], a, t),
        "slogdet": (xnp.linalg.slogdet, jnp.linalg.slogdet, a, t),
        "trsolve_conj": (
            lambda m: xlinalg.triangular_solve(m, a, lower=False, conjugate_a=True),
            lambda m: jax.lax.linalg.triangular_solve(m, a, lower=False, conjugate_a=True),
            a, t),
    }
    ours, theirs, x, tx = cases[name]
    got = jax.tree_util.tree_leaves(xform.jvp(ours, (x,), (tx,)))
    want = jax.tree_util.tree_leaves(jax.jvp(theirs, (x,), (tx,)))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-9)


def test_eigh_degenerate_tangents_as_jax():
    """Repeated eigenvalues: the guarded eigen-gap reciprocal gives JAX's exact inf/NaN
    pattern for eigenvector tangents, while eigenvalue-only losses stay finite."""
    a = np.diag([1.0, 1.0, 2.0]).astype(np.float32)
    t = np.random.default_rng(13).standard_normal((3, 3)).astype(np.float32)
    t = t + t.T
    with np.errstate(all="ignore"):
        got = np.asarray(xform.jvp(lambda m: xnp.linalg.eigh(m)[1], (a,), (t,))[1])
    want = np.asarray(jax.jvp(lambda m: jnp.linalg.eigh(m)[1], (a,), (t,))[1])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-5, atol=1e-6)
    g = xform.grad(lambda m: xnp.sum(xnp.linalg.eigh(m)[0] ** 2))(a)
    np.testing.assert_allclose(np.asarray(g), np.diag([2.0, 2.0, 4.0]), atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_tridiagonal_solve_perturb_singular_matches_jax(dtype, n):
    """Singular and near-singular systems: finite answers equal to JAX's (jaxlib's kernel
    under jit, our NumPy transcription of its algorithm eagerly)."""
    import jax
    rng = np.random.default_rng(n)
    with x64_enabled():
        dl, d, du = (rng.standard_normal((3, n)).astype(dtype) for _ in range(3))
        dl[:, 0] = du[:, -1] = 0
        d[0] = 0                       # batch member 0: zero diagonal
        d[1], dl[1] = 0, 0             # batch member 1: the zero matrix's diagonal part
        d[2] *= 1e-30                  # batch member 2: tiny pivots
        b = rng.standard_normal((3, n, 2)).astype(dtype)
        want = np.asarray(jax.lax.linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=True))
        f = lambda *a: xform.lax.linalg.tridiagonal_solve(*a, perturb_singular=True)  # noqa
        np.testing.assert_array_equal(np.asarray(xform.jit(f)(dl, d, du, b)), want)
        np.testing.assert_allclose(np.asarray(f(dl, d, du, b)), want, rtol=1e-5, atol=1e-6)
        assert np.isfinite(want).all()


@pytest.mark.parametrize("dt", [np.float32, np.complex64])
@pytest.mark.parametrize("full,cuv", [(False, True), (True, True), (False, False)])
def test_wide_svd_through_the_adjoint(monkeypatch, dt, full, cuv):
    """The lowering that decomposes a wide matrix through its adjoint (used where the kernel
    needs m >= n, cusolver's gesvd), routed through the CPU here: singular values equal JAX's
    and U S V^H reconstructs the matrix with orthonormal U and V."""
    from xform._src.lowering import rules_linalg_decomp
    monkeypatch.setattr(rules_linalg_decomp, "_WIDE_SVD_BY_TRANSPOSE", {"cpu", "cuda"})
    a = _mat(np.random.default_rng(0), (2, 3, 5), dt)
    f = xform.jit(lambda x: xnp.linalg.svd(x, full_matrices=full, compute_uv=cuv))
    assert "stablehlo.transpose" in f.lower(a).as_text()     # the adjoint route is taken
    out = f(a)
    want = jnp.linalg.svd(a, full_matrices=full, compute_uv=cuv)
    s = out[1] if cuv else out
    np.testing.assert_allclose(s, want[1] if cuv else want, rtol=1e-5, atol=1e-5)
    if cuv:
        u, s, vh = (np.asarray(o) for o in out)
        assert u.shape == want[0].shape and vh.shape == want[2].shape
        k = s.shape[-1]
        rec = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
        np.testing.assert_allclose(rec, a, rtol=1e-4, atol=1e-4)
        eye = lambda n: np.broadcast_to(np.eye(n), (2, n, n))
        np.testing.assert_allclose(np.conj(np.swapaxes(u, -1, -2)) @ u, eye(u.shape[-1]),
                                   atol=1e-5)
        np.testing.assert_allclose(vh @ np.conj(np.swapaxes(vh, -1, -2)), eye(vh.shape[-2]),
                                   atol=1e-5)

"""xform.scipy.optimize vs jax.scipy.optimize (and SciPy's minimum)."""
import numpy as np
import pytest
import scipy.optimize as sopt

import jax
import jax.numpy as jnp
import jax.scipy.optimize as jopt
from jax._src.scipy.optimize.line_search import line_search as j_line_search
import xform
import xform.numpy as xnp
from xform.scipy.optimize import line_search, minimize

LBFGS = "l-bfgs-experimental-do-not-rely-on-this"


def rosen(np_):
    return lambda x: np_.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def quad(np_, A, b):
    return lambda x: 0.5 * x @ (A @ x) - b @ x


@pytest.mark.parametrize("method", ["BFGS", pytest.param(LBFGS, marks=pytest.mark.slow)])
def test_minimize_rosenbrock_matches_jax_and_scipy(method):
    x0 = np.array([-1.2, 1.0], np.float64)
    with xform.enable_x64(True):
        r = xform.jit(lambda x: minimize(rosen(xnp), x, method=method))(x0)
    s = sopt.minimize(lambda v: rosen(np)(v), x0, method="BFGS")
    # (JAX 0.10.2 stops early here: its zoom rejects a bracket given high-to-low)
    np.testing.assert_allclose(np.asarray(r.x), s.x, atol=1e-4)
    # L-BFGS, as in JAX, reports status 4 (f decreased by less than ftol) as a failure
    assert int(r.status) == (0 if method == "BFGS" else 4)
    assert float(r.fun) < 1e-10
    if method == "BFGS":
        assert r.hess_inv.shape == (2, 2)
    else:
        assert r.hess_inv is None


@pytest.mark.parametrize("method", [pytest.param("BFGS", marks=pytest.mark.slow), LBFGS])
def test_minimize_quadratic_jit_args_float32(method):
    rng = np.random.RandomState(0)
    M = rng.randn(5, 5).astype(np.float32)
    A = M @ M.T + 5 * np.eye(5, dtype=np.float32)
    b = rng.randn(5).astype(np.float32)
    fun = lambda x, A, b: 0.5 * x @ (A @ x) - b @ x         # noqa: E731
    r = xform.jit(lambda x0: minimize(fun, x0, (A, b), method=method))(np.zeros(5, np.float32))
    want = np.linalg.solve(A, b)
    np.testing.assert_allclose(np.asarray(r.x), want, rtol=1e-4, atol=1e-4)
    assert bool(r.success) and r.x.dtype == np.float32


@pytest.mark.slow
def test_minimize_vmap_over_starts():
    xs = np.stack([np.zeros(3), np.ones(3), -np.ones(3)]).astype(np.float32)
    out = xform.jit(xform.vmap(lambda x0: minimize(lambda x: xnp.sum((x - 2.0) ** 2), x0,
                                                   method="BFGS").x))(xs)
    np.testing.assert_allclose(np.asarray(out), 2.0 * np.ones((3, 3)), atol=1e-5)


def test_minimize_errors():
    f = lambda x: xnp.sum(x ** 2)                       # noqa: E731
    with pytest.raises(ValueError):
        minimize(f, np.zeros(2), method="nelder-mead")
    with pytest.raises(TypeError):
        minimize(f, np.zeros(2), args=[1], method="BFGS")
    with pytest.raises(ValueError):
        minimize(f, np.zeros((2, 2)), method="BFGS")
    with pytest.raises(TypeError):
        minimize(f, np.zeros(2), method="BFGS", options={"bogus": 1})
    r = xform.jit(lambda x: minimize(f, x, method="BFGS", options={"maxiter": 1, "gtol": 0.0}))(
        np.ones(2, np.float32))
    assert int(r.nit) == 1


def test_line_search_strong_wolfe_and_jax():
    def make(np_, ls):
        def run(A, b, x, p):
            f = lambda v: 0.5 * v @ (A @ v) - b @ v + 0.1 * np_.sum(v ** 4)   # noqa: E731
            return ls(f, x, p)
        return run
    x_ls = xform.jit(make(xnp, line_search))
    j_ls = jax.jit(make(jnp, j_line_search))
    fj = lambda A, b, x: 0.5 * x @ (A @ x) - b @ x + 0.1 * jnp.sum(x ** 4)    # noqa: E731
    with jax.enable_x64(True), xform.enable_x64(True):
        for case in range(6):
            rng = np.random.RandomState(case)
            M = rng.randn(4, 4)
            A, b, x0 = M @ M.T + np.eye(4), rng.randn(4), rng.randn(4)
            g0 = np.asarray(jax.grad(fj, 2)(A, b, x0))
            p = -g0 * (0.1 if case % 2 else 3.0)     # some steps need zooming
            r, j = x_ls(A, b, x0, p), j_ls(A, b, x0, p)
            a = float(r.a_k)
            phi0, dphi0 = float(fj(A, b, x0)), float(g0 @ p)
            phi_a = float(fj(A, b, x0 + a * p))
            dphi_a = float(jax.grad(fj, 2)(A, b, x0 + a * p) @ p)
            assert not bool(r.failed)
            assert phi_a <= phi0 + 1e-4 * a * dphi0                  # sufficient decrease
            assert abs(dphi_a) <= 0.9 * abs(dphi0) + 1e-12           # curvature
            np.testing.assert_allclose(a, float(j.a_k), rtol=1e-6)
            assert int(r.nfev) == int(j.nfev) and int(r.nit) == int(j.nit)
            np.testing.assert_allclose(float(r.f_k), phi_a, rtol=1e-10)
            np.testing.assert_allclose(np.asarray(r.g_k), np.asarray(j.g_k), rtol=1e-8)


def test_line_search_with_known_values_and_maxiter():
    f = lambda x: xnp.sum((x - 100.0) ** 2)            # noqa: E731
    x0, p = np.zeros(2, np.float32), np.ones(2, np.float32)
    ls = xform.jit(lambda x, p: line_search(f, x, p, maxiter=3))
    r = ls(x0, p)   # needs many doublings: maxiter reached
    assert bool(r.failed) and int(r.status) == 3 and int(r.nit) == 3
    # known value and gradient: one evaluation fewer
    r2 = line_search(f, x0, p, old_fval=f(x0), gfk=xform.grad(f)(x0), maxiter=3)
    assert int(r2.nfev) == int(r.nfev) - 1

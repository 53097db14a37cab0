"""xform.scipy.linalg and lax.custom_linear_solve / custom_root against real JAX."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest

import xform
import xform.numpy as xnp
import xform.scipy.linalg as xsl
from prim_testutil import x64_enabled


@pytest.fixture(autouse=True)
def _x64():
    with x64_enabled():
        yield


def _mat(rng, shape, dt=np.float64):
    x = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def _spd(rng, n, dt=np.float64):
    a = _mat(rng, (n, n), dt)
    return (a @ np.conj(a.T) + n * np.eye(n)).astype(dt)


def _cmp(ours, theirs, rtol=1e-9, atol=1e-9):
    got, want = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dt", [np.float64, pytest.param(np.complex128, marks=pytest.mark.slow)])
def test_factor_and_solve_match_jax(dt):
    rng = np.random.default_rng(0)
    a = _mat(rng, (4, 4), dt) + 4 * np.eye(4)
    spd = _spd(rng, 4, dt)
    b = _mat(rng, (4, 2), dt)
    for lower in (True, False):
        _cmp(xsl.cho_solve(xsl.cho_factor(spd, lower=lower), b),
             jsl.cho_solve(jsl.cho_factor(spd, lower=lower), b))
    _cmp(xsl.cholesky(spd), jsl.cholesky(spd))
    for trans in (0, 2):
        _cmp(xsl.lu_solve(xsl.lu_factor(a), b, trans=trans),
             jsl.lu_solve(jsl.lu_factor(a), b, trans=trans))
        _cmp(xsl.solve_triangular(a, b, trans=trans, lower=True),
             jsl.solve_triangular(a, b, trans=trans, lower=True))
    _cmp(xsl.lu(a), jsl.lu(a))
    _cmp(xsl.lu(a[:, :3], permute_l=True), jsl.lu(a[:, :3], permute_l=True))
    _cmp(xsl.solve(a, b), jsl.solve(a, b))
    _cmp(xsl.solve(spd, b, assume_a="pos"), jsl.solve(spd, b, assume_a="pos"))
    _cmp(xsl.inv(a), jsl.inv(a))
    _cmp(xsl.det(a), jsl.det(a))
    _cmp(xsl.eigh(spd), jsl.eigh(spd))
    _cmp(xsl.eigh(spd, eigvals_only=True, eigvals=(1, 2)),
         jsl.eigh(spd, eigvals_only=True)[1:3])   # a range JAX itself does not offer
    _cmp(xsl.qr(a[:, :3]), jsl.qr(a[:, :3]))
    _cmp(xsl.qr(a[:, :3], mode="economic"), jsl.qr(a[:, :3], mode="economic"))
    _cmp(xsl.qr(a, pivoting=True), jsl.qr(a, pivoting=True))
    _cmp(xsl.svd(a), jsl.svd(a))
    _cmp(xsl.schur(a), jsl.schur(a))
    _cmp(xsl.hessenberg(a, calc_q=True), jsl.hessenberg(a, calc_q=True))


def test_matrix_functions_match_scipy():
    """Against SciPy (the reference these functions reproduce); JAX: the slow test below."""
    import scipy.linalg as sl
    rng = np.random.default_rng(1)
    for scale in (0.01, 0.3, 1.0, 5.0):   # every Pade order, with and without squaring
        a = _mat(rng, (4, 4)) * scale
        _cmp(xsl.expm(a), sl.expm(a), rtol=1e-12 * max(1, scale ** 3))
        _cmp(xsl.expm(a.astype(np.float32)), sl.expm(a), rtol=2e-5 * max(1, scale ** 2),
             atol=1e-6)
    _cmp(xform.jit(xsl.expm)(a), sl.expm(a), rtol=1e-10)
    _cmp(xsl.expm(np.stack([a, 0.5 * a])), np.stack([sl.expm(a), sl.expm(0.5 * a)]), rtol=1e-10)
    a = _mat(rng, (3, 3))
    spd = _spd(rng, 3)
    _cmp(xsl.sqrtm(spd), sl.sqrtm(spd).astype(complex), rtol=1e-10)
    s = np.asarray(xsl.sqrtm(a))
    np.testing.assert_allclose(s @ s, a, atol=1e-9)
    _cmp(xsl.funm(a, xnp.exp), sl.expm(a).astype(complex), rtol=1e-9)
    _cmp(xsl.funm(a, xnp.sin), sl.funm(a, np.sin).astype(complex), rtol=1e-9)
    for side in ("right", "left"):
        _cmp(xsl.polar(a, side=side), sl.polar(a, side=side))
    rot = np.array([[1.0, -3.0, 0.2], [2.0, 1.0, 0.5], [0.1, 0.3, 2.0]])   # complex pair
    t, z = sl.schur(rot)
    assert abs(t[1, 0]) > 0.1
    _cmp(xsl.rsf2csf(t, z), sl.rsf2csf(t, z), rtol=1e-10)
    d, off = rng.standard_normal(5), rng.standard_normal(4)
    _cmp(xsl.eigh_tridiagonal(d, off, eigvals_only=True),
         sl.eigh_tridiagonal(d, off, eigvals_only=True))
    _cmp(xsl.block_diag(np.ones((2, 2)), 3.0, np.arange(3.0)),
         sl.block_diag(np.ones((2, 2)), 3.0, np.arange(3.0)))
    _cmp(xsl.toeplitz(np.arange(1.0, 4.0), np.arange(5.0)),
         sl.toeplitz(np.arange(1.0, 4.0), np.arange(5.0)))
    _cmp(xsl.hilbert(4), sl.hilbert(4))


@pytest.mark.slow
def test_matrix_functions_match_jax():
    rng = np.random.default_rng(1)
    for scale in (0.01, 0.3, 1.0, 5.0):   # every Pade order, with and without squaring
        a = _mat(rng, (4, 4)) * scale
        _cmp(xsl.expm(a), jsl.expm(a), rtol=1e-8)
        _cmp(xsl.expm(a.astype(np.float32)), jsl.expm(a.astype(np.float32)), rtol=2e-4,
             atol=2e-4 * scale)
    _cmp(xform.jit(xsl.expm)(a), jsl.expm(a), rtol=1e-8)
    a = _mat(rng, (3, 3))
    e = _mat(rng, (3, 3))
    _cmp(xsl.expm_frechet(a, e), jsl.expm_frechet(a, e), rtol=1e-8)
    _cmp(xsl.expm(np.stack([a, 2 * a])), jsl.expm(np.stack([a, 2 * a])), rtol=1e-8)
    spd = _spd(rng, 3)
    _cmp(xsl.sqrtm(spd), jsl.sqrtm(spd), rtol=1e-8)
    s = np.asarray(xsl.sqrtm(a))
    np.testing.assert_allclose(s @ s, a, atol=1e-9)
    _cmp(xsl.funm(a, xnp.exp), jsl.funm(a, jnp.exp), rtol=1e-7)
    _cmp(xsl.polar(a), jsl.polar(a, method="svd"))
    _cmp(xsl.polar(a, side="left"), jsl.polar(a, side="left", method="svd"))
    rot = np.array([[1.0, -3.0, 0.2], [2.0, 1.0, 0.5], [0.1, 0.3, 2.0]])   # complex pair
    t, z = (np.asarray(v) for v in jsl.schur(rot))
    assert abs(t[1, 0]) > 0.1
    _cmp(xsl.rsf2csf(t, z), jsl.rsf2csf(t, z), rtol=1e-8)
    d, off = rng.standard_normal(5), rng.standard_normal(4)
    _cmp(xsl.eigh_tridiagonal(d, off, eigvals_only=True),
         jsl.eigh_tridiagonal(d, off, eigvals_only=True))
    _cmp(xsl.eigh_tridiagonal(d, off, eigvals_only=True, select="i", select_range=(1, 3)),
         jsl.eigh_tridiagonal(d, off, eigvals_only=True, select="i", select_range=(1, 3)))
    w, v = xsl.eigh_tridiagonal(d, off)
    t = np.diag(d) + np.diag(off, 1) + np.diag(off, -1)
    np.testing.assert_allclose(t @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-10)
    _cmp(xsl.block_diag(np.ones((2, 2)), 3.0, np.arange(3.0)),
         jsl.block_diag(np.ones((2, 2)), 3.0, np.arange(3.0)))
    _cmp(xsl.toeplitz(np.arange(1.0, 4.0), np.arange(5.0)),
         jsl.toeplitz(np.arange(1.0, 4.0), np.arange(5.0)))
    _cmp(xsl.toeplitz(np.arange(1.0, 4.0)), jsl.toeplitz(np.arange(1.0, 4.0)))
    _cmp(xsl.hilbert(4), jsl.hilbert(4))


def test_expm_derivative_matches_jax_and_fd():
    rng = np.random.default_rng(2)
    a = _mat(rng, (3, 3)) * 0.7
    t = _mat(rng, (3, 3))
    _, ty = xform.jvp(xsl.expm, (a,), (t,))
    _, ty_jax = jax.jit(lambda a, t: jax.jvp(jsl.expm, (a,), (t,)))(a, t)   # one compilation
    np.testing.assert_allclose(np.asarray(ty), np.asarray(ty_jax), rtol=1e-8, atol=1e-10)
    eps = 1e-6
    fd = (np.asarray(xsl.expm(a + eps * t)) - np.asarray(xsl.expm(a - eps * t))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(ty), fd, rtol=1e-6, atol=1e-6)
    # reverse mode: <grad f, t> == jvp of f along t
    f = lambda m: xnp.sum(xsl.expm(m) ** 2)  # noqa: E731
    g = xform.grad(f)(a)
    np.testing.assert_allclose(np.sum(np.asarray(g) * t),
                               float(xform.jvp(f, (a,), (t,))[1]), rtol=1e-9)


def _linsolve(np_, lax_):
    def f(a, b):
        return lax_.custom_linear_solve(lambda x: a @ x, b,
                                        solve=lambda _, y: np_.linalg.solve(a, y),
                                        transpose_solve=lambda _, y: np_.linalg.solve(a.T, y))
    return f


def test_custom_linear_solve_matches_jax():
    rng = np.random.default_rng(3)
    a = _mat(rng, (3, 3)) + 3 * np.eye(3)
    b = _mat(rng, (3,))
    fx, fj = _linsolve(xnp, xform.lax), _linsolve(jnp, jax.lax)
    _cmp(fx(a, b), fj(a, b))
    _cmp(xform.jit(fx)(a, b), fj(a, b))
    for argn in (0, 1):
        _cmp(xform.grad(lambda a_, b_: xnp.sum(fx(a_, b_) ** 2), argnums=argn)(a, b),
             jax.grad(lambda a_, b_: jnp.sum(fj(a_, b_) ** 2), argnums=argn)(a, b))
    _cmp(xform.jvp(lambda a_: fx(a_, b), (a,), (np.ones_like(a),)),
         jax.jvp(lambda a_: fj(a_, b), (a,), (np.ones_like(a),)))
    bs = _mat(rng, (4, 3))
    _cmp(xform.vmap(lambda bb: fx(a, bb))(bs), jax.vmap(lambda bb: fj(a, bb))(bs))
    # symmetric: transpose_solve defaults to solve
    spd = _spd(rng, 3)
    sym_x = xform.lax.custom_linear_solve(lambda x: spd @ x, b,
                                          lambda _, y: xnp.linalg.solve(spd, y), symmetric=True)
    _cmp(sym_x, np.linalg.solve(spd, b))
    g = xform.grad(lambda bb: xnp.sum(xform.lax.custom_linear_solve(
        lambda x: spd @ x, bb, lambda _, y: xnp.linalg.solve(spd, y), symmetric=True)))(b)
    _cmp(g, np.linalg.solve(spd, np.ones(3)))
    with pytest.raises(TypeError, match="transpose_solve"):
        xform.grad(lambda bb: xnp.sum(xform.lax.custom_linear_solve(
            lambda x: a @ x, bb, lambda _, y: xnp.linalg.solve(a, y))))(b)


def test_custom_root_matches_jax():
    def make(np_, lax_):
        def sqrt_(c):
            def solve(f, x0):
                return lax_.fori_loop(0, 40, lambda i, x: x - f(x) / (2 * x), x0)
            return lax_.custom_root(lambda x: x ** 2 - c, 1.0, solve, lambda g, y: y / g(1.0))
        return sqrt_
    rx, rj = make(xnp, xform.lax), make(jnp, jax.lax)
    _cmp(rx(2.0), rj(2.0))
    _cmp(xform.grad(rx)(2.0), jax.grad(rj)(2.0))
    _cmp(xform.jit(xform.grad(rx))(3.0), 0.5 / np.sqrt(3.0))
    _cmp(xform.vmap(rx)(np.array([2.0, 5.0])), np.sqrt([2.0, 5.0]))


def test_has_aux_match_jax():
    rng = np.random.default_rng(4)
    a = _mat(rng, (3, 3)) + 3 * np.eye(3)
    b = _mat(rng, (3,))

    def solve_aux(np_, lax_):
        return lambda m, y: lax_.custom_linear_solve(
            lambda x: m @ x, y, solve=lambda _, z: (np_.linalg.solve(m, z), np_.sum(z)),
            transpose_solve=lambda _, z: (np_.linalg.solve(m.T, z), np_.sum(z)), has_aux=True)
    fx, fj = solve_aux(xnp, xform.lax), solve_aux(jnp, jax.lax)
    _cmp(fx(a, b), fj(a, b))
    _cmp(xform.grad(lambda m: xnp.sum(fx(m, b)[0]))(a), jax.grad(lambda m: jnp.sum(fj(m, b)[0]))(a))

    def root_aux(np_, lax_):
        def f(c):
            def solve(g, x0):
                return lax_.fori_loop(0, 40, lambda i, x: x - g(x) / (2 * x), x0), np_.asarray(7.0)
            return lax_.custom_root(lambda x: x ** 2 - c, 1.0, solve, lambda g, y: y / g(1.0),
                                    has_aux=True)
        return f
    rx, rj = root_aux(xnp, xform.lax), root_aux(jnp, jax.lax)
    _cmp(rx(2.0), rj(2.0))
    _cmp(xform.grad(lambda c: rx(c)[0])(2.0), jax.grad(lambda c: rj(c)[0])(2.0))


def test_misuse_raises_user_facing_errors():
    """Garbage arguments to every scipy.linalg / lax.linalg function: only TypeError,
    ValueError, IndexError (not an internal one) or NotImplementedError."""
    import inspect
    import random
    import warnings

    from xform.lax import linalg as ll
    bad = [None, "abc", object(), [1, "a"], 1.5, -3, True, 1j, (), np.ones(0), np.ones((2, 3)),
           np.ones((2, 2, 2)), np.ones((0, 0)), np.eye(3), xnp.ones(()), xnp.ones((3,)),
           xnp.ones((2,), xnp.int32)]
    rng = random.Random(0)
    for mod in (xsl, ll):
        for name in sorted(dir(mod)):
            f = getattr(mod, name)
            if name.startswith("_") or not callable(f) or inspect.isclass(f):
                continue
            for _ in range(12):
                args = [rng.choice(bad) for _ in range(rng.randint(0, 3))]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        f(*args)
                    except (TypeError, ValueError, NotImplementedError) as e:
                        del e
                    except IndexError as e:
                        assert "index out of range" not in str(e), (name, args, e)


def test_names_and_signatures_match_jax():
    """Every public name of jax.numpy.linalg / jax.scipy.linalg (those the issue lists) /
    jax.lax.linalg exists, with JAX's parameter names and kinds."""
    import inspect

    import jax.lax.linalg as jll
    import jax.numpy.linalg as jnl
    from xform.lax import linalg as xll
    listed_scipy = ["block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh",
                    "eigh_tridiagonal", "expm", "expm_frechet", "funm", "hessenberg", "hilbert",
                    "inv", "lu", "lu_factor", "lu_solve", "polar", "qr", "rsf2csf", "schur",
                    "solve", "solve_triangular", "sqrtm", "svd", "toeplitz"]
    groups = [(jnl, xnp.linalg, [n for n in dir(jnl) if not n.startswith("_")]),
              (jsl, xsl, listed_scipy),
              (jll, xll, [n for n in dir(jll) if not n.startswith("_")
                          and callable(getattr(jll, n)) and not n.endswith("_p")
                          and not inspect.isclass(getattr(jll, n))])]
    for theirs, ours, names in groups:
        for name in names:
            assert hasattr(ours, name), f"{ours.__name__}.{name} is missing"
            a = [(p.name, p.kind) for p in inspect.signature(getattr(theirs, name)).parameters.values()]
            b = [(p.name, p.kind) for p in inspect.signature(getattr(ours, name)).parameters.values()]
            assert a == b, (name, a, b)
    assert len([n for n in dir(jnl) if not n.startswith("_")]) == 31


def test_qr_multiply_of_a_scalar_c_names_the_shapes():
    # JAX indexes c.shape[-1] and fails with an internal IndexError; xform names the problem
    with pytest.raises(ValueError, match=r"c at least 1-D.*\(3, 3\) and \(\)"):
        xsl.qr_multiply(np.eye(3), 1.5)

"""scipy.linalg's special matrices, qr_multiply and solve_sylvester against JAX 0.10.2
(values, dtypes, shapes, batching, errors), with jit, grad and vmap where they apply."""
import jax
import jax.numpy as jnp
import jax.scipy.linalg as JL
import numpy as np
import pytest

import xform
import xform.scipy.linalg as XL

RNG = np.random.default_rng(0)
V3 = np.array([2.0, -1.0, 3.0], np.float32)
V4 = np.array([1.5, 0.5, -2.0, 4.0], np.float32)
B23 = RNG.standard_normal((2, 3)).astype(np.float32)
I4 = np.array([1, 2, 3, 4], np.int32)


def _cmp(want, got, rtol=2e-6, atol=1e-6):
    if isinstance(want, tuple):
        assert len(want) == len(got)
        for w, g in zip(want, got):
            _cmp(w, g, rtol, atol)
        return
    want, got = np.asarray(want), np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def _outcome(f, *a, **k):
    try:
        return f(*a, **k)
    except Exception as e:   # noqa: BLE001 - the exception type is the result
        return type(e)


CASES = [
    ("hankel", (V3,), {}), ("hankel", (V3, V4), {}), ("hankel", (B23, V4), {}),
    ("hankel", (I4,), {}), ("hankel", (np.float32(1),), {}),
    ("circulant", (V4,), {}), ("circulant", (B23,), {}), ("circulant", (I4,), {}),
    ("leslie", (V4, V3), {}), ("leslie", (V3, V4), {}), ("leslie", (B23, B23[:, :2]), {}),
    ("companion", (V4,), {}), ("companion", (B23,), {}), ("companion", (I4,), {}),
    ("companion", (V3[:1],), {}),
    ("fiedler", (V4,), {}), ("fiedler", (B23,), {}), ("fiedler", (I4,), {}),
    ("fiedler_companion", (V4,), {}), ("fiedler_companion", (np.arange(1., 7.),), {}),
    ("fiedler_companion", (V3[:2],), {}), ("fiedler_companion", (V3[:1],), {}),
    ("fiedler_companion", (B23,), {}),
    ("convolution_matrix", (V3, 5), {}), ("convolution_matrix", (V4, 3, "same"), {}),
    ("convolution_matrix", (V4, 2, "valid"), {}), ("convolution_matrix", (B23, 4), {}),
    ("convolution_matrix", (V3, 0), {}), ("convolution_matrix", (V3, 2, "bad"), {}),
    ("invhilbert", (4,), {}), ("pascal", (5,), {}), ("pascal", (4, "lower"), {}),
    ("pascal", (4, "upper"), {}), ("pascal", (4, "bad"), {}), ("invpascal", (5,), {}),
    ("invpascal", (4, "lower"), {}), ("invpascal", (4, "upper"), {}),
    ("helmert", (5,), {}), ("helmert", (4, True), {}), ("helmert", (0,), {}),
    ("hadamard", (8,), {}), ("hadamard", (4, np.float32), {}), ("hadamard", (6,), {}),
    ("dft", (4,), {}), ("dft", (5, "sqrtn"), {}), ("dft", (3, "n"), {}),
    ("dft", (3,), dict(dtype=np.float32)), ("dft", (3, "bad"), {}),
]


@pytest.mark.parametrize("name,args,kw", CASES)
def test_special_matrices_match_jax(name, args, kw):
    want = _outcome(getattr(JL, name), *args, **kw)
    got = _outcome(getattr(XL, name), *args, **kw)
    if isinstance(want, type):
        assert got is want or (isinstance(got, type) and issubclass(got, want)), (got, want)
        return
    _cmp(want, got, rtol=2e-5, atol=2e-5)


def test_special_matrices_under_jit_vmap_and_grad():
    _cmp(jax.jit(JL.hankel)(V3, V4), xform.jit(XL.hankel)(V3, V4))
    _cmp(jax.vmap(JL.circulant)(B23), xform.vmap(XL.circulant)(B23))
    _cmp(jax.vmap(JL.companion)(B23), xform.vmap(XL.companion)(B23))
    _cmp(jax.grad(lambda v: JL.fiedler_companion(v).sum())(V4),
         xform.grad(lambda v: XL.fiedler_companion(v).sum())(V4))
    _cmp(jax.grad(lambda v: (JL.convolution_matrix(v, 4) ** 2).sum())(V3),
         xform.grad(lambda v: (XL.convolution_matrix(v, 4) ** 2).sum())(V3))
    _cmp(jax.jacfwd(lambda f: JL.leslie(f, V3))(V4), xform.jacfwd(lambda f: XL.leslie(f, V3))(V4))


@pytest.mark.parametrize("shape_a,shape_c,mode", [
    ((5, 3), (3, 2), "left"), ((5, 3), (4, 5), "right"), ((3, 5), (3, 2), "left"),
    ((3, 5), (2, 3), "right"), ((4, 4), (4,), "left"), ((4, 4), (4,), "right"),
    ((2, 5, 3), (3, 2), "left"), ((5, 3), (2, 3), "left")])
@pytest.mark.parametrize("conjugate", [False, True])
def test_qr_multiply_matches_jax(shape_a, shape_c, mode, conjugate):
    a = RNG.standard_normal(shape_a).astype(np.float32)
    c = RNG.standard_normal(shape_c).astype(np.float32)
    want = _outcome(JL.qr_multiply, a, c, mode=mode, conjugate=conjugate)
    got = _outcome(XL.qr_multiply, a, c, mode=mode, conjugate=conjugate)
    if isinstance(want, type):
        assert got is want
        return
    _cmp(want, got, rtol=1e-4, atol=1e-4)


def test_qr_multiply_complex_and_pivoting():
    a = (RNG.standard_normal((4, 3)) + 1j * RNG.standard_normal((4, 3))).astype(np.complex64)
    c = RNG.standard_normal((3, 2)).astype(np.float32)
    for conj in (False, True):
        _cmp(JL.qr_multiply(a, c, mode="left", conjugate=conj),
             XL.qr_multiply(a, c, mode="left", conjugate=conj), rtol=1e-4, atol=1e-4)
    a = RNG.standard_normal((4, 4)).astype(np.float32)
    want = JL.qr_multiply(a, a, pivoting=True)
    got = XL.qr_multiply(a, a, pivoting=True)
    _cmp(want[2], got[2])
    _cmp(want[:2], got[:2], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,n,batch", [(3, 2, ()), (4, 4, ()), (2, 3, (2,))])
def test_solve_sylvester_matches_jax_and_the_equation(m, n, batch):
    A = RNG.standard_normal(batch + (m, m)).astype(np.float32) + 3 * np.eye(m, dtype=np.float32)
    B = RNG.standard_normal(batch + (n, n)).astype(np.float32) + 3 * np.eye(n, dtype=np.float32)
    C = RNG.standard_normal(batch + (m, n)).astype(np.float32)
    X = XL.solve_sylvester(A, B, C)
    np.testing.assert_allclose(np.asarray(A @ X + X @ B), C, rtol=1e-4, atol=1e-4)
    _cmp(JL.solve_sylvester(A, B, C), X, rtol=1e-4, atol=1e-4)
    if not batch:
        g = xform.grad(lambda c: XL.solve_sylvester(A, B, c).sum())(C)
        _cmp(jax.grad(lambda c: JL.solve_sylvester(A, B, c).sum())(C), g, rtol=1e-4,
             atol=1e-4)


def test_solve_sylvester_without_a_unique_solution_is_nan_and_errors():
    A = np.diag(np.array([1.0, 2.0], np.float32))
    B = np.diag(np.array([-1.0, 5.0], np.float32))
    C = np.ones((2, 2), np.float32)
    _cmp(JL.solve_sylvester(A, B, C), XL.solve_sylvester(A, B, C))
    for f in (JL.solve_sylvester, XL.solve_sylvester):
        with pytest.raises(ValueError):
            f(A, B, np.ones((3, 2), np.float32))
        with pytest.raises(ValueError):
            f(A, B, C, method="lu")

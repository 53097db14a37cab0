"""``xform.lax.linalg``: matrix decompositions and solves (JAX's ``jax.lax.linalg``)."""
from xform._src.primitives.linalg_decomp import (  # noqa: F401
    EigImplementation, EighImplementation, SvdAlgorithm, cholesky, cholesky_p, eig, eig_p, eigh,
    eigh_p, hessenberg, hessenberg_p, householder_product, householder_product_p, lu, lu_p,
    lu_pivots_to_permutation, lu_pivots_to_permutation_p, qr, qr_p, schur, schur_p, svd, svd_p,
    symmetrize, triangular_solve, triangular_solve_p, tridiagonal, tridiagonal_p,
    tridiagonal_solve, tridiagonal_solve_p, symmetric_product, cholesky_update, ormqr)
from xform._src.primitives import elementwise as E
import numpy as np

__all__ = ["EigImplementation", "EighImplementation", "SvdAlgorithm", "cholesky", "cholesky_p",
           "eig", "eig_p", "eigh", "eigh_p", "hessenberg", "hessenberg_p", "householder_product",
           "householder_product_p", "lu", "lu_p", "lu_pivots_to_permutation",
           "lu_pivots_to_permutation_p", "qr", "qr_p", "schur", "schur_p", "svd", "svd_p",
           "symmetrize", "triangular_solve", "triangular_solve_p", "tridiagonal", "tridiagonal_p",
           "tridiagonal_solve", "tridiagonal_solve_p", "symmetric_product", "cholesky_update",
           "ormqr"]


def qdwh(x, *, is_hermitian: bool = False, max_iterations=None, eps=None, dynamic_shape=None):
    """Polar decomposition ``x = u h`` by the QR-based dynamically weighted Halley iteration
    (Nakatsukasa, Bai & Gygi 2010): ``(u, h, num_iters, is_converged)``.

    The weights follow the lower bound ``l`` of the smallest singular value from
    ``eps`` up to 1; steps with a large weight ``c`` use the QR form, the rest the
    Cholesky form, then Cholesky steps with weights (3, 1, 3) run until
    ``|u_k - u_{k-1}|_F < (10 eps / 2)^(1/3)`` or ``max_iterations`` (default 10).
    ``dynamic_shape=(m, n)``: x is padded from its leading m x n block.
    """

    import xform  # deferred: import cycle
    import xform.numpy as xnp  # deferred: import cycle
    from xform import lax  # deferred: import cycle

    x = xnp.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"qdwh: x must be a matrix, got shape {x.shape}")
    M, N = x.shape
    if M < N:
        raise ValueError("The input matrix of shape M x N must have M >= N.")
    max_iterations = 10 if max_iterations is None else int(max_iterations)
    if dynamic_shape is not None:
        m, n = dynamic_shape
        u, h, k, ok = qdwh(x[:m, :n], is_hermitian=is_hermitian, max_iterations=max_iterations,
                           eps=eps)
        return (xnp.zeros_like(x).at[:m, :n].set(u),
                xnp.zeros((N, N), x.dtype).at[:n, :n].set(h), k, ok)
    eps = float(np.finfo(x.dtype).eps) if eps is None else float(eps)
    one = xnp.max(xnp.sum(xnp.abs(x), axis=0))
    inf = xnp.max(xnp.sum(xnp.abs(x), axis=1))
    alpha_inv = xnp.where(one == 0, 1, lax.rsqrt(one) * lax.rsqrt(inf))
    u = x * alpha_inv.astype(x.dtype)
    eye = xnp.eye(N, dtype=x.dtype)
    tol_l = 10.0 * eps / 2.0
    tol_norm = float(np.cbrt(tol_l))

    def qr_step(u, a, b, c):
        e = b / c
        y = xnp.concatenate([np.sqrt(c) * u, eye], axis=0)
        q, _ = xnp.linalg.qr(y)
        return e * u + (a - e) / np.sqrt(c) * (q[:M] @ _H(q[M:]))

    def chol_step(u, a, b, c):
        e = b / c
        z = c * (_H(u) @ u) + eye
        y = cholesky(z, symmetrize_input=False)
        w = triangular_solve(y, _H(u), left_side=True, lower=True)             # Y^-1 U^H
        w = triangular_solve(y, w, left_side=True, lower=True, transpose_a=True,
                             conjugate_a=True)                                 # Y^-H Y^-1 U^H
        return e * u + (a - e) * _H(w)

    # weights: a static schedule from the lower bound l = eps
    l, k = eps, 0
    steps = []
    while l + tol_l < 1 and k < max_iterations:
        k += 1
        l2 = l * l
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** 0.5
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** 0.5
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        l = l * (a + b * l2) / (1 + c * l2)
        steps.append((a, b, c))
    not_converged = xnp.asarray(True)
    for a, b, c in steps:
        prev = u
        u = (qr_step if c > 100 else chol_step)(u, a, b, c)
        if c <= 100:
            not_converged = xnp.linalg.norm(u - prev) > tol_norm

    def cond(state):
        i, _, nc = state
        return nc & (i < max_iterations)

    def body(state):
        i, uu, _ = state
        new = chol_step(uu, 3.0, 1.0, 3.0)
        return i + 1, new, xnp.linalg.norm(new - uu) > tol_norm

    num_iters, u, not_converged = lax.while_loop(
        cond, body, (xnp.asarray(len(steps), np.int32), u, not_converged))
    u = 1.5 * u - 0.5 * u @ (_H(u) @ u)
    h = _H(u) @ x
    h = (h + _H(h)) / 2
    del xform
    return u, h, num_iters, ~not_converged


def _H(x):
    import xform.numpy as xnp  # deferred: import cycle
    t = xnp.swapaxes(x, -1, -2)
    return E.conj(t) if t.dtype.kind == "c" else t


__all__ += ["qdwh"]

"""``xform.scipy.sparse.linalg``: iterative solvers of ``A x = b`` with JAX's signatures
and algorithms: ``cg`` (conjugate gradient, A Hermitian positive definite),
``bicgstab`` (biconjugate gradient stabilized) and ``gmres`` (restarted GMRES with
'batched' least-squares or 'incremental' Givens-QR inner solves).

``A`` (and the preconditioner ``M``) is a square matrix, an object with ``@``, or a
function computing the matrix-vector product; ``b`` and ``x`` may be pytrees of arrays
of any shapes (the vector is their concatenation).  The iterations are
``lax.while_loop``s, so the solvers run under ``jit`` and ``vmap``; they are wrapped in
``lax.custom_linear_solve``, so derivatives (with respect to ``b`` and to what ``A``
closes over) come from another solve (implicit differentiation), not from
differentiating the iterations -- accurate when both solves converge.

Convergence: ``norm(residual) <= max(tol * norm(b), atol)`` (SciPy's non-legacy
rule); ``maxiter`` defaults to ten times the size of ``b``.  ``cg``/``bicgstab``
return ``(x, None)``; ``gmres`` returns ``(x, info)`` with ``info`` -1 when ``x`` has
NaNs, else 0 (as JAX).
"""
from __future__ import annotations

import functools
import operator

import numpy as np
from xform import tree_util
import xform.numpy as xnp
import xform.scipy.linalg as sla

__all__ = ["cg", "bicgstab", "gmres"]


def _xf():
    import xform  # deferred: import cycle
    return xform


def _np():
    return xnp


def _tu():
    return tree_util


# ----------------------------------------------------------------- vector-space ops on pytrees


def _tmap(f, *trees):
    return _tu().tree_map(f, *trees)


def _leaves(t):
    return _tu().tree_leaves(t)


def _axpy(a, x, y):
    """a * x + y, leafwise."""
    return _tmap(lambda u, v: a * u + v, x, y)


def _sub(x, y):
    return _tmap(operator.sub, x, y)


def _scale(a, x):
    return _tmap(lambda u: a * u, x)


def _dot_plain(u, v):
    """sum(conj(u) * v) of two leaves (the Hermitian inner product)."""
    xnp = _np()
    return xnp.vdot(u, v, precision="highest")


def _inner(x, y):
    """<x, y> = sum over leaves of conj(x) . y."""
    return sum(_dot_plain(u, v) for u, v in zip(_leaves(x), _leaves(y)))


def _real_inner(x, y):
    """Re <x, y> as a real number (the cross terms of complex leaves dropped)."""
    xnp = _np()
    total = 0
    for u, v in zip(_leaves(x), _leaves(y)):
        part = _dot_plain(u.real, v.real)
        if xnp.iscomplexobj(u) or xnp.iscomplexobj(v):
            part = part + _dot_plain(u.imag, v.imag)
        total = total + part
    return total


def _norm(x):
    return _np().sqrt(_real_inner(x, x))


def _identity(x):
    return x


def _as_operator(f, what):
    """A matrix-vector product function from a function, a square matrix or an object
    with ``@``."""
    xf = _xf()
    if callable(f) and not isinstance(f, (np.ndarray, xf.Array)):
        return f
    if isinstance(f, (np.ndarray, xf.Array)) or hasattr(f, "__matmul__"):
        shape = getattr(f, "shape", None)
        if shape is not None and (len(shape) != 2 or shape[0] != shape[1]):
            raise ValueError(f"linear operator must be a square matrix, but has shape: "
                             f"{tuple(shape)}")
        if isinstance(f, (np.ndarray, xf.Array)):
            return functools.partial(lambda m, v: _np().dot(m, v, precision="highest"), f)
        return functools.partial(operator.matmul, f)
    raise TypeError(f"linear operator must be either a function or ndarray: {f}")


def _prepare(b, x0):
    xnp = _np()
    b = _tmap(xnp.asarray, b)
    x0 = _tmap(xnp.zeros_like, b) if x0 is None else _tmap(xnp.asarray, x0)
    tb, tx = _tu().tree_structure(b), _tu().tree_structure(x0)
    if tx != tb:
        raise ValueError(f"x0 and b must have matching tree structure: {tx} vs {tb}")
    sb = [np.shape(v) for v in _leaves(b)]
    sx = [np.shape(v) for v in _leaves(x0)]
    if sx != sb:
        raise ValueError(f"arrays in x0 and b must have matching shapes: {sx} vs {sb}")
    return b, x0


def _size(b):
    return sum(int(np.prod(np.shape(v))) for v in _leaves(b))


def _result_dtype(tree):
    return _np().result_type(*_leaves(tree))


# ----------------------------------------------------------------- CG


def _cg(A, b, *, x0, tol, atol, maxiter, M):
    xnp, lax = _np(), _xf().lax
    tol2 = xnp.maximum(tol ** 2 * _real_inner(b, b), atol ** 2)
    r = _sub(b, A(x0))
    z = M(r)
    dt = _result_dtype(z)
    rz = _real_inner(r, z).astype(dt)
    preconditioned = M is not _identity

    def keep_going(state):
        _, r, rz, _, k = state
        size2 = _real_inner(r, r) if preconditioned else rz.real
        return (size2 > tol2) & (k < maxiter)

    def step(state):
        x, r, rz, p, k = state
        Ap = A(p)
        alpha = rz / _real_inner(p, Ap).astype(dt)
        x = _axpy(alpha, p, x)
        r = _axpy(-alpha, Ap, r)
        z = M(r)
        rz_new = _real_inner(r, z).astype(dt)
        p = _axpy(rz_new / rz, p, z)
        return x, r, rz_new, p, k + 1

    return lax.while_loop(keep_going, step, (x0, r, rz, z, 0))[0]


# ----------------------------------------------------------------- BiCGSTAB


def _bicgstab(A, b, *, x0, tol, atol, maxiter, M):
    xnp, lax = _np(), _xf().lax
    tol2 = xnp.maximum(tol ** 2 * _real_inner(b, b), atol ** 2)
    r0 = _sub(b, A(x0))
    one = xnp.ones((), _result_dtype(b))

    def keep_going(state):
        _, r, *_, k = state
        # k < 0 flags a breakdown (rho, alpha or omega became zero)
        return (_real_inner(r, r) > tol2) & (k < maxiter) & (k >= 0)

    def step(state):
        x, r, rhat, alpha, omega, rho, p, v, k = state
        rho_new = _inner(rhat, r)
        beta = (rho_new / rho) * (alpha / omega)
        p = _tmap(lambda r_, p_, v_: r_ + beta * (p_ - omega * v_), r, p, v)
        phat = M(p)
        v = A(phat)
        alpha = rho_new / _inner(rhat, v)
        s = _axpy(-alpha, v, r)
        done = _real_inner(s, s) < tol2          # converged half-way: skip the second half
        shat = M(s)
        t = A(shat)
        omega = _inner(t, s) / _inner(t, t)
        x_half = _axpy(alpha, phat, x)
        x = _tmap(lambda xh, sh: xnp.where(done, xh, xh + omega * sh), x_half, shat)
        r = _tmap(lambda s_, t_: xnp.where(done, s_, s_ - omega * t_), s, t)
        k = xnp.where((omega == 0) | (alpha == 0), -11, k + 1)
        k = xnp.where(rho_new == 0, -10, k)
        return x, r, rhat, alpha, omega, rho_new, p, v, k

    init = (x0, r0, r0, one, one, one, r0, r0, 0)
    return lax.while_loop(keep_going, step, init)[0]


# ----------------------------------------------------------------- GMRES


def _normalized(x, thresh=None):
    """(x / |x|, |x|), or (0, 0) when |x| is at most ``thresh`` (default: the dtype's
    machine epsilon)."""
    xnp = _np()
    n = _norm(x)
    dt = _result_dtype(x)
    if thresh is None:
        thresh = xnp.finfo(n.dtype).eps
    ok = n > xnp.asarray(thresh).real.astype(n.dtype)
    nc = n.astype(dt)
    return _tmap(lambda u: xnp.where(ok, u / nc, xnp.zeros_like(u)), x), xnp.where(ok, n, 0.0)


def _column(V, k):
    return _tmap(lambda X: X[..., k], V)


def _coeffs(V, v):
    """V^H v: the coefficients of v on the basis columns (trailing axis of each leaf)."""
    xnp = _np()
    return sum(xnp.einsum("...n,...->n", X.conj(), u, precision="highest")
               for X, u in zip(_leaves(V), _leaves(v)))


def _combine(V, c):
    """V c: the combination of the basis columns with coefficients c."""
    xnp = _np()
    return _tmap(lambda X: xnp.dot(X, c, precision="highest"), V)


def _arnoldi(k, A, M, V, H):
    """Extend the Krylov basis V by column k+1 (orthonormalized M A V[:, k] by classical
    Gram-Schmidt, repeated once); row k of H gets its coefficients."""
    xnp = _np()
    dt = _result_dtype(V)
    w = M(A(_column(V, k)))
    _, w_norm = _normalized(w)
    h = xnp.zeros(H.shape[1], dt)
    for _ in range(2):                           # "twice is enough"
        c = _coeffs(V, w)
        w = _sub(w, _combine(V, c))
        h = h + c
    unit, w_norm2 = _normalized(w, thresh=xnp.finfo(dt).eps * w_norm)
    V = _tmap(lambda X, u: X.at[..., k + 1].set(u), V, unit)
    h = h.at[k + 1].set(w_norm2.astype(dt))
    return V, H.at[k, :].set(h), w_norm2 == 0


def _givens(a, b):
    """(c, s) with s*a + c*b == 0 for the rotation used by ``_rotate``."""
    xnp, lax = _np(), _xf().lax
    b_zero = abs(b) == 0
    a_small = abs(a) < abs(b)
    t = -xnp.where(a_small, a, b) / xnp.where(a_small, b, a)
    r = lax.rsqrt(1 + abs(t) ** 2).astype(t.dtype)
    c = xnp.where(b_zero, 1, xnp.where(a_small, r * t, r))
    s = xnp.where(b_zero, 0, xnp.where(a_small, r, r * t))
    return c, s


def _rotate(v, i, c, s):
    a, b = v[i], v[i + 1]
    return v.at[i].set(c.conj() * a - s.conj() * b).at[i + 1].set(s * a + c * b)


def _basis(unit_residual, restart):
    xnp = _np()
    return _tmap(lambda u: xnp.pad(u[..., None], ((0, 0),) * u.ndim + ((0, restart),)),
                 unit_residual)


def _finish_cycle(A, M, b, x0, V, y):
    x = _tmap(operator.add, x0, _combine(_tmap(lambda X: X[..., :-1], V), y))
    unit, rnorm = _normalized(M(_sub(b, A(x))))
    return x, unit, rnorm


def _cycle_batched(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
    """One restart cycle: the whole Arnoldi process, then the least-squares problem
    min |beta e1 - H^T y| by its normal equations."""
    xnp, lax = _np(), _xf().lax
    dt = _result_dtype(b)
    V = _basis(unit_residual, restart)
    H = xnp.eye(restart, restart + 1, dtype=dt)   # unused rows keep the system regular

    def keep_going(c):
        _, _, broke, k = c
        return (k < restart) & ~broke

    def step(c):
        V, H, _, k = c
        V, H, broke = _arnoldi(k, A, M, V, H)
        return V, H, broke, k + 1

    V, H, _, _ = lax.while_loop(keep_going, step, (V, H, False, 0))
    beta = xnp.zeros(restart + 1, dt).at[0].set(residual_norm.astype(dt))
    Ht = H.T
    y = sla.solve(Ht.conj().T @ Ht, Ht.conj().T @ beta, assume_a="pos")
    return _finish_cycle(A, M, b, x0, V, y)


def _cycle_incremental(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
    """One restart cycle with the QR factorization of H updated by Givens rotations at
    each Arnoldi step, stopping early once the residual estimate is below ``ptol``."""
    xnp, lax = _np(), _xf().lax
    dt = _result_dtype(b)
    V = _basis(unit_residual, restart)
    R = xnp.eye(restart, restart + 1, dtype=dt)
    rots = xnp.zeros((restart, 2), dt)
    beta = xnp.zeros(restart + 1, dt).at[0].set(residual_norm.astype(dt))

    def keep_going(c):
        k, err, *_ = c
        return (k < restart) & (err > ptol)

    def step(c):
        k, _, V, R, beta, rots = c
        V, H, _ = _arnoldi(k, A, M, V, R)
        row = lax.fori_loop(0, k, lambda i, row: _rotate(row, i, rots[i, 0], rots[i, 1]),
                            H[k, :])
        cs, sn = _givens(row[k], row[k + 1])
        rots = rots.at[k, :].set(xnp.stack([cs, sn]))
        R = R.at[k, :].set(_rotate(row, k, cs, sn))
        beta = _rotate(beta, k, cs, sn)
        return k + 1, abs(beta[k + 1]), V, R, beta, rots

    _, _, V, R, beta, _ = lax.while_loop(keep_going, step,
                                         (0, residual_norm, V, R, beta, rots))
    y = sla.solve_triangular(R[:, :-1].T, beta[:-1])
    return _finish_cycle(A, M, b, x0, V, y)


def _gmres(A, b, *, x0, atol, ptol, restart, maxiter, M, cycle):
    xnp, lax = _np(), _xf().lax
    unit, rnorm = _normalized(M(_sub(b, A(x0))))

    def keep_going(c):
        _, k, _, rnorm = c
        return (k < maxiter) & (rnorm > atol)

    def step(c):
        x, k, unit, rnorm = c
        x, unit, rnorm = cycle(A, b, x, unit, rnorm, ptol, restart, M)
        return x, k + 1, unit, rnorm

    return lax.while_loop(keep_going, step, (x0, 0, unit, rnorm))[0]


# ----------------------------------------------------------------- public API


def _isolve(algorithm, A, b, x0, tol, atol, maxiter, M, symmetric_if_real):
    b, x0 = _prepare(b, x0)
    if maxiter is None:
        maxiter = 10 * _size(b)
    A = _as_operator(A, "A")
    M = _identity if M is None else _as_operator(M, "M")
    solve = functools.partial(algorithm, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    symmetric = symmetric_if_real and not any(
        _np().iscomplexobj(v) for v in _leaves(b))
    x = _xf().lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve,
                                      symmetric=symmetric)
    return x, None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solve ``A x = b`` for Hermitian positive definite ``A`` by (preconditioned)
    conjugate gradients; returns ``(x, None)``.  Derivatives: implicit, by another
    ``cg`` solve (with ``A`` symmetric for real ``b``)."""
    return _isolve(_cg, A, b, x0, tol, atol, maxiter, M, True)


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solve ``A x = b`` for general square ``A`` by BiCGSTAB; returns ``(x, None)``.
    Derivatives: implicit, by a BiCGSTAB solve with the transposed operator."""
    return _isolve(_bicgstab, A, b, x0, tol, atol, maxiter, M, False)


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
    """Solve ``A x = b`` for general square ``A`` by GMRES restarted every ``restart``
    steps (at most ``maxiter`` cycles); ``solve_method`` 'batched' (the Arnoldi basis
    first, then least squares) or 'incremental' (Givens QR as it goes, stopping early).
    Returns ``(x, info)``: info -1 if ``x`` holds NaNs, else 0."""
    xnp = _np()
    if solve_method == "incremental":
        cycle = _cycle_incremental
    elif solve_method == "batched":
        cycle = _cycle_batched
    else:
        raise ValueError(f"invalid solve_method {solve_method}, must be either "
                         "'incremental' or 'batched'")
    b, x0 = _prepare(b, x0)
    A = _as_operator(A, "A")
    M = _identity if M is None else _as_operator(M, "M")
    size = _size(b)
    if maxiter is None:
        maxiter = 10 * size
    restart = min(restart, size)
    b_norm = _norm(b)
    atol = xnp.maximum(tol * b_norm, atol)
    ptol = _norm(M(b)) * xnp.minimum(1.0, atol / b_norm)

    def solve(A_, b_):
        return _gmres(A_, b_, x0=x0, atol=atol, ptol=ptol, restart=restart,
                      maxiter=maxiter, M=M, cycle=cycle)
    x = _xf().lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
    info = xnp.where(xnp.isnan(_norm(x)), -1, 0)
    return x, info

"""``xform.numpy.linalg``: decompositions, solves, determinants, norms (JAX's names).

Built on ``xform.lax.linalg`` (LAPACK on CPU).  As in JAX, failures are
values, not exceptions: ``cholesky`` of a matrix that is not positive
definite is all-NaN, ``solve``/``inv`` of a singular matrix give inf/NaN, and
``det`` of a singular matrix is 0.  Integer inputs are promoted to the
default float dtype.  ``det`` and ``slogdet`` carry JAX's custom JVPs
(``trace(solve(a, da))``); ``pinv`` carries JAX's custom JVP; ``solve`` is
differentiated through its LU factorisation.
"""
from __future__ import annotations

import builtins
import functools
import math
import operator
from typing import NamedTuple

import numpy as np

from xform._src.interpreters import dtypes
from xform.numpy import _util as U
from xform._src.primitives import elementwise as E
from xform._src.primitives import linalg_decomp
from xform.lax._solves import custom_linear_solve
from xform.numpy import _linalg

_LAPACK = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


def _D():
    return linalg_decomp


def _xnp():
    import xform.numpy as xnp  # deferred: import cycle
    return xnp


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


# JAX's exception types for (rank < 2, non-square) inputs, per function
_ERRS = {"cholesky": (TypeError, TypeError), "eigh": (TypeError, TypeError),
         "svd": (TypeError, ValueError), "qr": (TypeError, ValueError),
         "eig": (TypeError, ValueError), "eigvals": (TypeError, ValueError),
         "pinv": (TypeError, ValueError), "cond": (TypeError, ValueError)}


def _matrix(name, a, square=False, what="a"):
    """Array-like -> inexact array of at least 2 dims (square if asked)."""
    a = U.ensure_arraylike(f"jnp.linalg.{name}", a)
    a, = U.promote_dtypes_inexact(U.to_array(a))
    rank_err, square_err = _ERRS.get(name, (ValueError, ValueError))
    if a.ndim < 2:
        raise rank_err(f"jnp.linalg.{name}: argument {what} must have shape [..., m, n] (at "
                         f"least 2 dimensions), got shape {a.shape}")
    if square and a.shape[-1] != a.shape[-2]:
        raise square_err(f"jnp.linalg.{name}: argument {what} must be a square matrix (or batch "
                         f"of square matrices) of shape [..., n, n], got shape {a.shape}")
    if a.dtype not in _LAPACK:
        raise TypeError(f"jnp.linalg.{name}: dtype {a.dtype.name} is not supported; use "
                        "float32, float64, complex64 or complex128")
    return a


def _H(x):
    xnp = _xnp()
    return E.conj(xnp.swapaxes(x, -1, -2)) if x.dtype.kind == "c" else xnp.swapaxes(x, -1, -2)


def _eye_like(n, dt):
    return _xnp().eye(n, dtype=dt)


# ----------------------------------------------------------------- factorizations


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """Cholesky factor: lower L with ``a = L L^H`` (``upper=True``: U with ``a = U^H U``)."""
    a = _matrix("cholesky", a, square=True)
    L = _D().cholesky(a, symmetrize_input=symmetrize_input)
    return _H(L) if upper else L


def qr(a, mode: str = "reduced"):
    """QR decomposition: ``QRResult(Q, R)``; mode 'reduced', 'complete', 'r' or 'raw'."""
    a = _matrix("qr", a)
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"jnp.linalg.qr: unsupported mode {mode!r}; use 'reduced', "
                         "'complete', 'r' or 'raw'")
    if mode == "raw":
        h, taus = _D().geqrf(a)
        return QRResult(_xnp().swapaxes(h, -1, -2), taus)
    q, r = _D().qr(a, full_matrices=(mode == "complete"))
    return r if mode == "r" else QRResult(q, r)


def eigh(a, UPLO=None, symmetrize_input: bool = True):
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix: ``EighResult(w, v)``."""
    a = _matrix("eigh", a, square=True)
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"jnp.linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    v, w = _D().eigh(a, lower=(UPLO != "U"), symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO="L", *, symmetrize_input: bool = True):
    """Eigenvalues (ascending) of a Hermitian matrix."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def eig(a):
    """Eigenvalues and right eigenvectors of a general square matrix (CPU): ``EigResult``."""
    a = _matrix("eig", a, square=True)
    w, v = _D().eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """Eigenvalues of a general square matrix (CPU)."""
    a = _matrix("eigvals", a, square=True)
    return _D().eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index=None):
    """Singular value decomposition: ``SVDResult(U, S, Vh)`` (``S`` alone without uv)."""
    a = _matrix("svd", a)
    xnp = _xnp()
    if hermitian:
        w, v = eigh(a)
        s = xnp.abs(w)
        order = xnp.argsort(-s, axis=-1)
        s = xnp.take_along_axis(s, order, axis=-1)
        if not compute_uv:
            return s
        sign = xnp.take_along_axis(xnp.sign(w).astype(a.dtype), order, axis=-1)
        u = xnp.take_along_axis(v, order[..., None, :], axis=-1)
        vh = _H(u * sign[..., None, :])
        return SVDResult(u, s, vh)
    out = _D().svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                   subset_by_index=subset_by_index)
    return SVDResult(*out) if compute_uv else out


def svdvals(x, /):
    """Singular values, descending."""
    return svd(x, compute_uv=False)


# ----------------------------------------------------------------- solves and inverses


def _lu_solve(lu_, perm, b, trans=0):
    """Solve with an LU factorisation (``a[perm] = L U``); b is (..., n, k) of a's batch.
    trans: 0 solves a x = b, 1 a^T x = b, 2 a^H x = b."""
    xnp = _xnp()
    D = _D()
    if trans == 0:
        x = xnp.take_along_axis(b, perm[..., :, None], axis=-2)
        x = D.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
        return D.triangular_solve(lu_, x, left_side=True, lower=False)
    conj = trans == 2
    x = D.triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True,
                           conjugate_a=conj)
    x = D.triangular_solve(lu_, x, left_side=True, lower=True, transpose_a=True,
                           conjugate_a=conj, unit_diagonal=True)
    inv_perm = xnp.argsort(perm, axis=-1)
    return xnp.take_along_axis(x, inv_perm[..., :, None], axis=-2)


def solve(a, b):
    """Solve ``a x = b``: b is a vector (b.ndim == 1) or a batch of matrices (..., n, k)."""
    a = _matrix("solve", a, square=True)
    b = U.ensure_arraylike("jnp.linalg.solve", b)
    xnp = _xnp()
    a, b = U.promote_dtypes_inexact(a, U.to_array(b))
    n = a.shape[-1]
    if b.ndim == 0:
        raise ValueError(f"jnp.linalg.solve: b must be a vector of length {n} or a batch of "
                         f"(n, k) matrices, got a scalar (a has shape {a.shape})")
    if b.ndim == 1:
        if b.shape[0] != n:
            raise ValueError(f"jnp.linalg.solve: b of shape {b.shape} does not match a of "
                             f"shape {a.shape} (b.shape[0] must equal {n})")
        bm = xnp.broadcast_to(b[:, None], a.shape[:-2] + (n, 1))
        return _solve(a, bm)[..., 0]
    if b.shape[-2] != n:
        raise ValueError(f"jnp.linalg.solve: incompatible shapes a {a.shape} and b {b.shape}: "
                         f"b must be (..., {n}, k) (or a vector of length {n})")
    try:
        batch = U.broadcast_shapes(a.shape[:-2], b.shape[:-2], name="jnp.linalg.solve")
    except TypeError as e:   # JAX: ValueError
        raise ValueError(f"jnp.linalg.solve: batch dimensions of a {a.shape} and b {b.shape} "
                         f"do not broadcast ({e})") from None
    a = xnp.broadcast_to(a, batch + a.shape[-2:])
    b = xnp.broadcast_to(b, batch + b.shape[-2:])
    return _solve(a, b)


@functools.lru_cache(maxsize=None)
def _jitted(fn):
    """``fn`` compiled once per shape (as JAX jits its jnp.linalg functions): an eager call
    is one cached XLA executable instead of one dispatch per step and a re-trace of the
    custom_linear_solve programs."""
    import xform  # deferred: import cycle
    return xform.jit(fn)


def _solve(a, b):
    return _jitted(_solve_impl)(a, b)


def _solve_impl(a, b):
    """a x = b for matching batch dims, as JAX: one LU of stop_gradient(a) serves the solve
    and its transpose, and custom_linear_solve differentiates it implicitly (A^-1 b)."""
    import xform  # deferred: import cycle
    xnp = _xnp()
    lu_, _, perm = _D().lu(xform.lax.stop_gradient(a))
    return custom_linear_solve(lambda x: xnp.matmul(a, x, precision="highest"), b,
                               solve=lambda _, x: _lu_solve(lu_, perm, x, 0),
                               transpose_solve=lambda _, x: _lu_solve(lu_, perm, x, 1))


def inv(a):
    """Inverse of a square matrix (inf/NaN where singular, as JAX)."""
    a = _matrix("inv", a, square=True)
    xnp = _xnp()
    eye = xnp.broadcast_to(_eye_like(a.shape[-1], a.dtype), a.shape)
    return _solve(a, eye)


def _parity_sign(pivots, dtype):
    xnp = _xnp()
    k = pivots.shape[-1]
    swaps = xnp.count_nonzero(pivots != xnp.arange(k, dtype=pivots.dtype), axis=-1)
    return xnp.where(swaps % 2 == 1, -1, 1).astype(dtype)


def _slogdet_lu(a):
    # The program has JAX's shape: sign from the parity of row swaps plus the number of
    # negative pivots (not a product of signs), log|det| the sum of log|pivot|.  XLA
    # fuses the two reductions by the program around them, so a different sign
    # computation changes the summation order of log|det| in the last bits.
    xnp = _xnp()
    lu_, piv, _ = _D().lu(a)
    diag = xnp.diagonal(lu_, axis1=-2, axis2=-1)
    is_zero = xnp.any(diag == xnp.array(0, dtype=a.dtype), axis=-1)
    k = piv.shape[-1]
    parity = xnp.count_nonzero(piv != xnp.arange(k, dtype=piv.dtype), axis=-1)
    absd = xnp.abs(diag)
    if a.dtype.kind == "c":
        sign = xnp.prod(diag / absd.astype(diag.dtype), axis=-1)
    else:
        sign = xnp.array(1, dtype=a.dtype)
        parity = parity + xnp.count_nonzero(diag < 0, axis=-1)
    sign = xnp.where(is_zero, xnp.array(0, dtype=a.dtype),
                     sign * xnp.array(-2 * (parity % 2) + 1, dtype=a.dtype))
    logdet = xnp.where(is_zero, xnp.array(-np.inf, dtype=a.dtype),
                       xnp.sum(xnp.log(absd).astype(a.dtype), axis=-1))
    return sign, xnp.real(logdet)


def _slogdet_qr(a):
    """sign/log|det| from geqrf: the diagonal of R, and -1 per Householder reflection
    actually made (tau != 0), as JAX's method='qr' (real inputs)."""
    xnp = _xnp()
    n = a.shape[-1]
    r, taus = _D().geqrf(a)
    diag = xnp.diagonal(r, axis1=-2, axis2=-1)
    logdet = xnp.sum(xnp.log(xnp.abs(diag)), axis=-1)
    sign = xnp.prod(xnp.sign(diag), axis=-1)
    sign_taus = xnp.prod(xnp.where(taus[..., :n - 1] != 0, -1, 1), axis=-1).astype(sign.dtype)
    return sign * sign_taus, logdet


@functools.lru_cache(maxsize=None)
def _slogdet_fn(method="lu"):
    import xform  # deferred: import cycle

    @xform.custom_jvp
    def f(a):
        return _slogdet_qr(a) if method == "qr" else _slogdet_lu(a)

    @f.defjvp
    def f_jvp(primals, tangents):
        a, = primals
        g, = tangents
        xnp = _xnp()
        sign, logdet = f(a)
        tr = xnp.trace(_solve(a, g), axis1=-1, axis2=-2)
        if a.dtype.kind == "c":
            sign_dot = sign * (1j * xnp.imag(tr)).astype(a.dtype)
            logdet_dot = xnp.real(tr)
        else:
            sign_dot = xnp.zeros_like(sign)
            logdet_dot = tr
        return (sign, logdet), (sign_dot, logdet_dot)
    return f


def slogdet(a, *, method=None):
    """``SlogdetResult(sign, logabsdet)`` of a square matrix via LU (method 'lu' or None)."""
    a = _matrix("slogdet", a, square=True)
    if method not in (None, "lu", "qr"):
        raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                         "(`None`), and 'qr'.")
    if method == "qr" and a.dtype.kind == "c":
        raise NotImplementedError("slogdet method='qr' not implemented for complex inputs")
    sign, logdet = _jitted(_slogdet_fn(method or "lu"))(a)
    return SlogdetResult(sign, logdet)


def _cofactor_solve(a, b):
    """``(det(a), adj(a) @ b)``, well defined for singular ``a`` (JAX's construction):
    with a = P L U, the last pivot of U is replaced by 1 / (product of the others), so
    rank n-1 matrices get their rank-1 adjugate; lower rank gives zeros."""
    xnp = _xnp()
    D = _D()
    n = a.shape[-1]
    if n == 1:
        return a[..., 0, 0], b
    lu_, piv, perm = D.lu(a)
    diag = xnp.diagonal(lu_, axis1=-2, axis2=-1)
    sign = _parity_sign(piv, a.dtype)
    partial_det = xnp.cumprod(diag, axis=-1) * sign[..., None]
    lu_ = lu_.at[..., -1, -1].set(1.0 / partial_det[..., -2])
    d = xnp.ones(b.shape[:-1], b.dtype)[..., None]
    d = D.triangular_solve(lu_, d, left_side=True, lower=False)[..., 0]
    bad = xnp.any(xnp.isnan(d) | xnp.isinf(d), axis=-1)[..., None, None]
    x = xnp.where(bad, xnp.zeros_like(b), b)
    x = xnp.take_along_axis(x, perm[..., :, None], axis=-2)
    x = D.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
    x = xnp.concatenate((x[..., :-1, :] * partial_det[..., -1, None, None], x[..., -1:, :]),
                        axis=-2)
    x = D.triangular_solve(lu_, x, left_side=True, lower=False)
    x = xnp.where(bad, xnp.zeros_like(x), x)
    return partial_det[..., -1], x


@functools.lru_cache(maxsize=None)
def _det_fn():
    import xform  # deferred: import cycle

    @xform.custom_jvp
    def f(a):
        xnp = _xnp()
        sign, logdet = _slogdet_lu(a)
        return sign * xnp.exp(logdet).astype(sign.dtype)

    @f.defjvp
    def f_jvp(primals, tangents):
        a, = primals
        g, = tangents
        y, z = _cofactor_solve(a, g)
        return y, _xnp().trace(z, axis1=-1, axis2=-2)
    return f


def _det_small(a):
    """2x2 / 3x3 closed forms (as JAX)."""
    if a.shape[-1] == 2:
        return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    return (a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2] + a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0]
            + a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1] - a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0]
            - a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1] - a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2])


def det(a):
    """Determinant (closed forms for 2x2/3x3, else via LU, as JAX; JAX's singular-safe JVP)."""
    a = _matrix("det", a, square=True)
    if a.shape[-1] in (2, 3):
        return _det_small(a)
    return _jitted(_det_fn())(a)


def _default_rtol(a, s_dtype):
    return 10.0 * builtins.max(a.shape[-2:]) * float(np.finfo(s_dtype).eps)


def _pinv_raw(a, rtol, hermitian):
    xnp = _xnp()
    m, n = a.shape[-2:]
    if m == 0 or n == 0:
        return xnp.zeros(a.shape[:-2] + (n, m), a.dtype)
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    if rtol is None:
        rtol = _default_rtol(a, s.dtype)
    rtol = xnp.asarray(rtol, s.dtype)
    cutoff = rtol[..., None] * s[..., 0:1] if xnp.ndim(rtol) else rtol * s[..., 0:1]
    s = xnp.where(s > cutoff, s, np.inf).astype(s.dtype)
    return xnp.matmul(_H(vh) / s[..., None, :].astype(a.dtype), _H(u))


@functools.lru_cache(maxsize=None)
def _pinv_fn(rtol, hermitian):
    import xform  # deferred: import cycle

    @xform.custom_jvp
    def f(a):
        return _pinv_raw(a, rtol, hermitian)

    @f.defjvp
    def f_jvp(primals, tangents):
        a, = primals
        a_dot, = tangents
        xnp = _xnp()
        p = f(a)
        m, n = a.shape[-2:]
        mm = xnp.matmul
        p_dot = -mm(mm(p, a_dot), p)
        p_dot = p_dot + mm(mm(mm(p, _H(p)), _H(a_dot)), _eye_like(m, a.dtype) - mm(a, p))
        p_dot = p_dot + mm(mm(_eye_like(n, a.dtype) - mm(p, a), _H(a_dot)), mm(_H(p), p))
        return p, p_dot
    return f


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """Moore-Penrose pseudo-inverse via SVD (JAX's custom JVP)."""
    a = _matrix("pinv", a)
    if rcond is not None:
        rtol = rcond
    key = None if rtol is None else (float(rtol) if np.ndim(rtol) == 0 and
                                     not hasattr(rtol, "aval") else None)
    if rtol is not None and key is None:
        return _pinv_raw(a, rtol, hermitian)
    return _pinv_fn(key, bool(hermitian))(a)


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """Least squares via SVD: ``(x, residuals, rank, s)``."""
    a = _matrix("lstsq", a)
    xnp = _xnp()
    b = U.ensure_arraylike("jnp.linalg.lstsq", b)
    a, b = U.promote_dtypes_inexact(a, U.to_array(b))
    if a.ndim != 2:
        raise TypeError(f"jnp.linalg.lstsq: a must be 2-dimensional, got shape {a.shape}")
    if b.ndim not in (1, 2):
        raise TypeError(f"jnp.linalg.lstsq: b must be 1- or 2-dimensional, got shape {b.shape}")
    m, n = a.shape
    if b.shape[0] != m:
        raise ValueError(f"jnp.linalg.lstsq: leading dimensions of a {a.shape} and b {b.shape} "
                         "must match")
    vec = b.ndim == 1
    if vec:
        b = b[:, None]
    u, s, vh = svd(a, full_matrices=False)
    rdt = s.dtype
    if rcond is None:
        rcond = float(np.finfo(rdt).eps) * builtins.max(n, m)
    elif rcond < 0:
        rcond = float(np.finfo(rdt).eps)
    mask = (s >= xnp.asarray(rcond, rdt) * s[0]) if s.size else s > 0
    rank = mask.sum()
    safe_s = xnp.where(mask, s, 1).astype(rdt)
    s_inv = xnp.where(mask, 1 / safe_s, 0).astype(a.dtype)[:, None]
    uTb = xnp.matmul(_H(u), b)
    x = xnp.matmul(_H(vh), s_inv * uTb)
    if numpy_resid:
        if m > n and builtins.int(rank) == n:
            resid = xnp.sum(xnp.abs(b - xnp.matmul(a, x)) ** 2, axis=0)
        else:
            resid = xnp.zeros((0,), rdt)
    else:
        resid = xnp.sum(xnp.abs(b - xnp.matmul(a, x)) ** 2, axis=0)
    if vec:
        x = x[:, 0]
    return x, resid, rank, s


def matrix_power(a, n: int):
    """``a`` to the integer power ``n`` (negative: of the inverse) by repeated squaring."""
    a = U.ensure_arraylike("jnp.linalg.matrix_power", a)
    a = U.to_array(a)
    xnp = _xnp()
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"jnp.linalg.matrix_power: argument must be a square matrix (or batch) "
                         f"of shape [..., n, n], got shape {a.shape}")
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError(f"jnp.linalg.matrix_power: exponent must be an integer, got {n!r}") \
            from e
    if n == 0:
        return xnp.broadcast_to(xnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    if n < 0:
        a = inv(a)
        n = -n
    result = None
    z = a
    while n > 0:
        if n & 1:
            result = z if result is None else xnp.matmul(result, z)
        n >>= 1
        if n:
            z = xnp.matmul(z, z)
    return result


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):
    """Number of singular values above a threshold, as JAX computes it: the default is
    ``S.max() * max(m, n) * eps``; a given ``rtol`` (or its alias ``tol``) is compared with
    the singular values as it is (JAX does not scale it by the largest one), one per
    matrix when it is an array."""
    M = U.ensure_arraylike("jnp.linalg.matrix_rank", M)
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
        rtol = tol
    M, = U.promote_dtypes_inexact(U.to_array(M))
    xnp = _xnp()
    if M.ndim < 2:
        return xnp.any(M != 0).astype(np.int32)
    s = svd(M, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        rtol = xnp.max(s, axis=-1) * xnp.asarray(builtins.max(M.shape[-2:]), s.dtype) * \
            xnp.asarray(float(np.finfo(s.dtype).eps), s.dtype)
    rtol = xnp.expand_dims(rtol, xnp.ndim(rtol))
    return xnp.sum(s > rtol, axis=-1)


def cond(x, p=None):
    """Condition number (p: None/2/-2 via SVD, else norm(x, p) * norm(inv(x), p))."""
    x = _matrix("cond", x)
    xnp = _xnp()
    if p in (None, 2, -2):
        s = svd(x, compute_uv=False)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    else:
        if x.shape[-1] != x.shape[-2]:
            raise ValueError(f"jnp.linalg.cond with p={p!r} needs square matrices, got shape "
                             f"{x.shape}")
        r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    nan_in = xnp.any(xnp.isnan(x), axis=(-2, -1))
    return xnp.where(xnp.isnan(r) & ~nan_in, np.inf, r).astype(r.dtype)


def multi_dot(arrays, *, precision=None):
    """Chained matrix product; the first/last argument may be 1-D."""
    xnp = _xnp()
    arrays = [U.to_array(a) for a in arrays]
    if len(arrays) < 2:
        raise ValueError(f"jnp.linalg.multi_dot: expected at least 2 arrays, got {len(arrays)}")
    for i, a in enumerate(arrays):
        ok = a.ndim == 2 or (a.ndim == 1 and i in (0, len(arrays) - 1))
        if not ok:
            raise ValueError(f"jnp.linalg.multi_dot: argument {i} has shape {a.shape}; inner "
                             "arguments must be 2-D and the first/last 1-D or 2-D")
    out = arrays[0]
    for a in arrays[1:]:
        out = xnp.matmul(out, a, precision=precision)
    return out


def tensorinv(a, ind: int = 2):
    """Inverse of a tensor for ``tensordot(..., ind)``."""
    a = U.ensure_arraylike("jnp.linalg.tensorinv", a)
    a = U.to_array(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"jnp.linalg.tensorinv: ind must be a positive integer, got {ind}")
    out_shape = a.shape[ind:] + a.shape[:ind]
    rows = math.prod(a.shape[:ind])
    cols = math.prod(a.shape[ind:])
    if rows != cols:
        raise ValueError(f"jnp.linalg.tensorinv: prod(a.shape[:ind]) = {rows} must equal "
                         f"prod(a.shape[ind:]) = {cols} for a of shape {a.shape}")
    return inv(a.reshape(rows, cols)).reshape(out_shape)


def tensorsolve(a, b, axes=None):
    """Solve ``tensordot(a, x, x.ndim) == b`` for x."""
    a, b = U.ensure_arraylike("jnp.linalg.tensorsolve", a, b)
    a, b = U.to_array(a), U.to_array(b)
    xnp = _xnp()
    if axes is not None:
        axes = [U.canonicalize_axis(ax, a.ndim) for ax in
                (axes if isinstance(axes, (tuple, list)) else (axes,))]
        rest = [i for i in range(a.ndim) if i not in axes]
        a = xnp.transpose(a, rest + axes)
    out_shape = a.shape[b.ndim:]
    if math.prod(out_shape) != b.size:
        raise ValueError(f"jnp.linalg.tensorsolve: a of shape {a.shape} and b of shape "
                         f"{b.shape} are not compatible (prod(a.shape[b.ndim:]) must equal "
                         "b.size)")
    x = solve(a.reshape(b.size, b.size), b.reshape(b.size))
    return x.reshape(out_shape)


# ----------------------------------------------------------------- norms needing an SVD


def _svd_matrix_norm(x, ord, axes, keepdims):
    """2 / -2 / 'nuc' matrix norms over ``axes`` (any two axes) via singular values."""
    xnp = _xnp()
    r, c = axes
    xm = xnp.moveaxis(x, (r, c), (-2, -1))
    s = svd(xm, compute_uv=False)
    if ord == 2:
        out = xnp.max(s, axis=-1)
    elif ord == -2:
        out = xnp.min(s, axis=-1)
    else:
        out = xnp.sum(s, axis=-1)
    if keepdims:
        out = xnp.expand_dims(out, tuple(sorted((r, c))))
    return out


def norm(x, ord=None, axis=None, keepdims=False):
    """``jnp.linalg.norm`` (all orders; 2, -2 and 'nuc' matrix norms via SVD)."""
    return _linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


# ----------------------------------------------------------------- array-API helpers


def diagonal(x, /, *, offset=0):
    """Diagonals of the last two axes."""
    return _xnp().diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset=0, dtype=None):
    """Traces over the last two axes."""
    return _xnp().trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def outer(x1, x2, /):
    """Outer product of two vectors."""
    x1, x2 = U.to_array(x1), U.to_array(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"jnp.linalg.outer: inputs must be 1-dimensional, got shapes "
                         f"{x1.shape} and {x2.shape}")
    return _xnp().outer(x1, x2)


def cross(x1, x2, /, *, axis=-1):
    """Cross product of 3-vectors along ``axis``."""
    x1, x2 = U.to_array(x1), U.to_array(x2)
    if x1.ndim == 0 or x2.ndim == 0 or x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"jnp.linalg.cross: both inputs must have size 3 along axis {axis}, "
                         f"got shapes {x1.shape} and {x2.shape}")
    return _xnp().cross(x1, x2, axis=axis)


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    return _xnp().matmul(x1, x2, precision=precision,
                         preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None,
              out_sharding=None):
    return _xnp().tensordot(x1, x2, axes, precision=precision,
                            preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    return _xnp().vecdot(x1, x2, axis=axis, precision=precision,
                         preferred_element_type=preferred_element_type)


def matrix_transpose(x, /):
    return _xnp().matrix_transpose(x)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    return _linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)


LINALG_NAMES = ["cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
                "eigvalsh", "inv", "lstsq", "matmul", "matrix_norm", "matrix_power",
                "matrix_rank", "matrix_transpose", "multi_dot", "norm", "outer", "pinv", "qr",
                "slogdet", "solve", "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve",
                "trace", "vecdot", "vector_norm"]
__all__: list = []   # nothing at the top level of xform.numpy: these live in xform.numpy.linalg

"""``xform.scipy.linalg``: JAX's ``jax.scipy.linalg`` (SciPy names and signatures).

Factorizations and solves are thin layers over ``xform.lax.linalg`` (LAPACK
on CPU); matrix functions (``expm`` by Padé approximation with scaling and
squaring, ``sqrtm``/``funm`` through the Schur form) follow JAX's algorithms.
"""
from __future__ import annotations

import builtins
import functools

import numpy as np

from xform.numpy import _util as U
from xform.numpy import _linalg_decomp as _L
from xform import lax
from xform._src.primitives import elementwise as E
from xform._src.primitives import linalg_decomp
import xform.numpy as xnp
from xform._src.interpreters import dtypes as _dt
from xform.scipy.special import comb
import math
import warnings
import operator

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh",
           "eigh_tridiagonal", "expm", "expm_frechet", "funm", "hessenberg", "hilbert", "inv",
           "lu", "lu_factor", "lu_solve", "polar", "qr", "rsf2csf", "schur", "solve",
           "solve_triangular", "sqrtm", "svd", "toeplitz", "hankel", "circulant", "leslie",
           "companion", "fiedler", "fiedler_companion", "convolution_matrix", "invhilbert",
           "pascal", "invpascal", "helmert", "hadamard", "dft", "qr_multiply",
           "solve_sylvester"]


def _xnp():
    return xnp


def _D():
    return linalg_decomp


def _conj(x):
    # (lax.conj: xform.numpy.conj of complex input is broken on this branch's base)
    return E.conj(x) if x.dtype.kind == "c" else x


def _mat(name, a, square=True):
    return _L._matrix(name, a, square=square)


# ----------------------------------------------------------------- Cholesky


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """Cholesky factor (upper by default, as SciPy)."""
    a = _mat("cholesky", a)
    L = _D().cholesky(a)
    return L if lower else _L._H(L)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(c, lower)`` for ``cho_solve``."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """Solve ``A x = b`` from ``cho_factor``'s ``(c, lower)``."""
    c, lower = c_and_lower
    c = _mat("cho_solve", c)
    U.check_arraylike("cho_solve", b)
    c, b = U.promote_dtypes_inexact(c, U.to_array(b))
    if b.ndim == 0 or c.shape[-1] != b.shape[0 if b.ndim == 1 else -2]:
        raise ValueError(f"cho_solve: incompatible shapes c {c.shape} and b {b.shape}")
    xnp = _xnp()
    vec = b.ndim == 1
    bm = b[:, None] if vec else b
    if bm.ndim < c.ndim:
        bm = xnp.broadcast_to(bm, c.shape[:-2] + bm.shape[-2:])
    D = _D()
    # A = L L^H (lower) or U^H U (upper)
    y = D.triangular_solve(c, bm, left_side=True, lower=lower, transpose_a=not lower,
                           conjugate_a=not lower)
    x = D.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower,
                           conjugate_a=lower)
    return x[..., 0] if vec else x


# ----------------------------------------------------------------- LU


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """``(lu, piv)``: packed LU factors and LAPACK-style (0-based) pivots."""
    a = _mat("lu_factor", a, square=False)
    lu_, piv, _ = _D().lu(a)
    return lu_, piv


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True):
    """Solve with ``lu_factor``'s output; trans 0: a x = b, 1: a^T x = b, 2: a^H x = b."""
    lu_, piv = lu_and_piv
    lu_ = _mat("lu_solve", lu_)
    if trans not in (0, 1, 2):
        raise ValueError(f"lu_solve: trans must be 0, 1 or 2, got {trans!r}")
    U.check_arraylike("lu_solve", b)
    lu_, b = U.promote_dtypes_inexact(lu_, U.to_array(b))
    n = lu_.shape[-1]
    if b.ndim == 0 or b.shape[0 if b.ndim == 1 else -2] != n:
        raise ValueError(f"lu_solve: incompatible shapes lu {lu_.shape} and b {b.shape}")
    perm = _D().lu_pivots_to_permutation(piv, n)
    vec = b.ndim == 1
    bm = b[:, None] if vec else b
    xnp = _xnp()
    if bm.ndim < lu_.ndim:
        bm = xnp.broadcast_to(bm, lu_.shape[:-2] + bm.shape[-2:])
    x = _L._lu_solve(lu_, perm, bm, trans)
    return x[..., 0] if vec else x


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(p, l, u)`` with ``a = p @ l @ u`` (``(p @ l, u)`` when permute_l)."""
    a = _mat("lu", a, square=False)
    xnp = _xnp()
    lu_, _, perm = _D().lu(a)
    m, n = a.shape[-2:]
    k = builtins.min(m, n)
    l_ = xnp.tril(lu_[..., :, :k], -1) + xnp.eye(m, k, dtype=a.dtype)
    u_ = xnp.triu(lu_[..., :k, :])
    p = (perm[..., :, None] == xnp.arange(m)[None, :]).astype(a.dtype)   # p[i, j]: perm[i]==j
    p = xnp.swapaxes(p, -1, -2)
    if permute_l:
        return xnp.matmul(p, l_), u_
    return p, l_, u_


# ----------------------------------------------------------------- solves, inverse, det


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
    """Solve ``op(a) x = b`` for triangular ``a`` (trans 0/'N', 1/'T', 2/'C')."""
    a = _mat("solve_triangular", a)
    U.check_arraylike("solve_triangular", b)
    a, b = U.promote_dtypes_inexact(a, U.to_array(b))
    t = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}.get(trans)
    if t is None:
        raise ValueError(f"solve_triangular: invalid trans {trans!r} (use 0/'N', 1/'T', 2/'C')")
    # JAX's signatures: "(n,n),(n)->(n)" for a vector b (and, deprecated, a batch of
    # vectors b with b.ndim == a.ndim - 1), else "(n,n),(n,k)->(n,k)"; the batch
    # dimensions of a and b broadcast against each other.
    if b.ndim == 1:
        vec = True
    elif a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1]:
        warnings.warn(
            "jax.scipy.linalg.solve_triangular: batched 1D solves with b.ndim > 1 are "
            "deprecated, and in the future will be treated as a batched 2D solve. Use "
            "solve_triangular(a, b[..., None]).squeeze(-1) to avoid this warning.",
            category=FutureWarning, stacklevel=2)
        vec = True
    else:
        vec = False
        if b.ndim < 2:
            raise ValueError(f"solve_triangular: b of shape {b.shape} does not have enough "
                             "dimensions for a matrix right-hand side (n, k); pass a vector "
                             "(n,) or a matrix (..., n, k)")
    bm = b[..., None] if vec else b
    try:
        batch = np.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    except ValueError:
        raise ValueError(f"solve_triangular: the batch dimensions of a {a.shape} and b "
                         f"{b.shape} do not broadcast against each other") from None
    if a.shape[:-2] != batch:
        a = xnp.broadcast_to(a, batch + a.shape[-2:])
    if bm.shape[:-2] != batch:
        bm = xnp.broadcast_to(bm, batch + bm.shape[-2:])
    x = _D().triangular_solve(a, bm, left_side=True, lower=lower, transpose_a=t > 0,
                              conjugate_a=t == 2, unit_diagonal=unit_diagonal)
    return x[..., 0] if vec else x


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
    """Solve ``a x = b`` (assume_a 'gen', 'sym', 'her' or 'pos')."""
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"solve: expected assume_a in ('gen', 'sym', 'her', 'pos'), got "
                         f"{assume_a!r}")
    if assume_a != "pos":
        return _L.solve(a, b)
    return cho_solve(cho_factor(a, lower=lower), b)


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    return _L.inv(a)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    return _L.det(a)


# ----------------------------------------------------------------- eigen / QR / SVD / Schur


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,
         check_finite: bool = True):
    """Eigenvalues (and vectors) of a Hermitian matrix; ``eigvals=(lo, hi)`` selects a range."""
    if b is not None:
        raise NotImplementedError("eigh: the generalized problem (b) is not supported, as in JAX")
    a = _mat("eigh", a)
    sbi = None if eigvals is None else (int(eigvals[0]), int(eigvals[1]) + 1)
    v, w = _D().eigh(a, lower=lower, subset_by_index=sbi)
    return w if eigvals_only else (w, v)


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """SciPy's qr: mode 'full', 'r', 'economic' or 'raw'; ``pivoting`` adds P."""
    a = _mat("qr", a, square=False)
    if mode not in ("full", "r", "economic", "raw"):
        raise ValueError(f"qr: unsupported mode {mode!r}")
    if mode == "raw":
        h, taus = _D().geqrf(a)
        return (h, taus)
    out = _D().qr(a, pivoting=pivoting, full_matrices=(mode in ("full", "r")))
    q, r = out[0], out[1]
    if mode == "r":
        return (r, out[2]) if pivoting else (r,)
    return (q, r, out[2]) if pivoting else (q, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    a = _mat("svd", a, square=False)
    if lapack_driver not in ("gesdd", "gesvd"):
        raise ValueError(f"svd: lapack_driver must be 'gesdd' or 'gesvd', got {lapack_driver!r}")
    alg = "QR" if lapack_driver == "gesvd" else None
    return _D().svd(a, full_matrices=full_matrices, compute_uv=compute_uv, algorithm=alg)


def schur(a, output: str = "real"):
    """Schur decomposition ``a = Z T Z^H``: ``(T, Z)`` (output 'real' or 'complex')."""
    a = _mat("schur", a)
    if output not in ("real", "complex"):
        raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
    if output == "complex" and a.dtype.kind != "c":
        a = a.astype(np.complex64 if a.dtype == np.float32 else np.complex128)
    return _D().schur(a)


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True):
    """Upper Hessenberg form H (and Q with ``a = Q H Q^H`` when calc_q)."""
    a = _mat("hessenberg", a)
    xnp = _xnp()
    n = a.shape[-1]
    packed, taus = _D().hessenberg(a)
    h = xnp.triu(packed, -1)
    if not calc_q:
        return h
    if n <= 1:
        return h, xnp.broadcast_to(xnp.eye(n, dtype=a.dtype), a.shape)
    # Q = H_1 ... H_{n-1}; reflectors stored below the first subdiagonal
    v = xnp.tril(packed[..., 1:, :n - 1], -1) + xnp.eye(n - 1, dtype=a.dtype)
    q_sub = _D().householder_product(v, taus)
    q = xnp.zeros(a.shape, a.dtype)
    q = q.at[..., 0, 0].set(1).at[..., 1:, 1:].set(q_sub)
    return h, q


def rsf2csf(T, Z, check_finite: bool = True):
    """Real Schur form -> complex Schur form (SciPy's Givens sweep)."""
    xnp = _xnp()
    T, Z = U.to_array(T), U.to_array(Z)
    T, Z = U.promote_dtypes_inexact(T, Z)
    if T.ndim != 2 or T.shape[0] != T.shape[1] or Z.shape != T.shape:
        raise ValueError(f"rsf2csf: T and Z must be square matrices of equal shape, got "
                         f"{T.shape} and {Z.shape}")
    cdt = np.complex64 if T.dtype in (np.float32, np.complex64) else np.complex128
    T, Z = T.astype(cdt), Z.astype(cdt)
    n = T.shape[0]
    eps = float(np.finfo(np.float32 if cdt == np.complex64 else np.float64).eps)
    for m in range(n - 1, 0, -1):
        sub = T[m, m - 1]
        cond = xnp.abs(sub) > eps * (xnp.abs(T[m - 1, m - 1]) + xnp.abs(T[m, m]))
        mu = xnp.linalg.eigvals(T[m - 1:m + 1, m - 1:m + 1]) - T[m, m]
        r = xnp.hypot(xnp.abs(mu[0]), xnp.abs(sub))
        r_safe = xnp.where(r == 0, 1, r)
        c = (mu[0] / r_safe).astype(cdt)
        s = (sub / r_safe).astype(cdt)
        G = xnp.stack([xnp.stack([_conj(c), s]), xnp.stack([-s, c])])
        GH = _conj(G.T)
        Tn = T.at[m - 1:m + 1, m - 1:].set(G @ T[m - 1:m + 1, m - 1:])
        Tn = Tn.at[:m + 1, m - 1:m + 1].set(Tn[:m + 1, m - 1:m + 1] @ GH)
        Zn = Z.at[:, m - 1:m + 1].set(Z[:, m - 1:m + 1] @ GH)
        ok = cond & (r != 0)
        T = xnp.where(ok, Tn, T)
        Z = xnp.where(ok, Zn, Z)
        T = T.at[m, m - 1].set(0)
    return T, Z


# ----------------------------------------------------------------- constructors


def block_diag(*arrs):
    """Block-diagonal matrix from 0-, 1- or 2-D blocks."""
    xnp = _xnp()
    if not arrs:
        return xnp.zeros((1, 0))
    arrs = [U.to_array(a) for a in arrs]
    arrs = U.promote_dtypes(*arrs)
    blocks = []
    for a in arrs:
        if a.ndim > 2:
            raise ValueError(f"block_diag: arguments must have dimension <= 2, got {a.shape}")
        blocks.append(a.reshape((1, -1) if a.ndim < 2 else a.shape) if a.ndim < 2 else a)
    rows = builtins.sum(b.shape[0] for b in blocks)
    cols = builtins.sum(b.shape[1] for b in blocks)
    out = xnp.zeros((rows, cols), blocks[0].dtype)
    r = c = 0
    for b in blocks:
        out = out.at[r:r + b.shape[0], c:c + b.shape[1]].set(b)
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def toeplitz(c, r=None):
    """Toeplitz matrix with first column ``c`` and first row ``r`` (batched over leading
    dims as JAX; default ``r = conj(c)``)."""
    xnp = _xnp()
    c = U.to_array(c)
    if r is None:
        r = _conj(c) if c.dtype.kind == "c" else c
    r = U.to_array(r)
    c, r = U.promote_dtypes(c, r)
    if c.ndim == 0:
        c = c[None]
    if r.ndim == 0:
        r = r[None]
    m, n = c.shape[-1], r.shape[-1]
    i = xnp.arange(m)[:, None]
    j = xnp.arange(n)[None, :]
    from_c = xnp.take(c, xnp.clip(i - j, 0, m - 1), axis=-1)
    from_r = xnp.take(r, xnp.clip(j - i, 0, n - 1), axis=-1)
    return xnp.where(i >= j, from_c, from_r)


def hilbert(n: int):
    """The n x n Hilbert matrix 1 / (i + j + 1)."""
    xnp = _xnp()
    a = xnp.arange(n, dtype=float)
    return 1.0 / (a[:, None] + a[None, :] + 1.0)


# ----------------------------------------------------------------- matrix functions

_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}


def _pade(m, A, ident):
    xnp = _xnp()
    b = _PADE[m]
    A2 = A @ A
    if m == 13:
        A4 = A2 @ A2
        A6 = A4 @ A2
        U_ = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4
                  + b[3] * A2 + b[1] * ident)
        V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 \
            + b[0] * ident
        return U_, V
    powers = [ident, A2]
    while len(powers) < (m + 1) // 2:
        powers.append(powers[-1] @ A2)
    u = builtins.sum(b[2 * k + 1] * powers[k] for k in range(len(powers)))
    v = builtins.sum(b[2 * k] * powers[k] for k in range(len(powers)))
    del xnp
    return A @ u, v


def _expm_2d(A, upper_triangular, max_squarings):
    """Padé approximation with scaling and squaring (Higham 2005; JAX's thresholds)."""
    xnp = _xnp()
    n = A.shape[-1]
    ident = xnp.eye(n, dtype=A.dtype)
    A_L1 = xnp.max(xnp.sum(xnp.abs(A), axis=-2), axis=-1)
    single = A.dtype in (np.float32, np.complex64)
    if single:
        maxnorm, conds, orders = 3.925724783138660, (4.258730016922831e-01,
                                                     1.880152677804762e+00), (3, 5, 7)
    else:
        maxnorm, conds, orders = 5.371920351148152, (1.495585217958292e-02,
                                                     2.539398330063230e-01,
                                                     9.504178996162932e-01,
                                                     2.097847961257068e+00), (3, 5, 7, 9, 13)
    rdt = A_L1.dtype
    n_sq = xnp.maximum(0, xnp.floor(xnp.log2(A_L1 / xnp.asarray(maxnorm, rdt))))
    n_sq = xnp.where(A_L1 == 0, 0, n_sq).astype(np.int32)
    As = A / (2.0 ** n_sq).astype(A.dtype)
    idx = xnp.digitize(A_L1, xnp.asarray(conds, rdt))
    idx = xnp.where(n_sq > 0, len(orders) - 1, idx)
    branches = [functools.partial(lambda m, x: _pade(m, x, ident), m) for m in orders]
    U_, V = lax.switch(idx, branches, As)
    P, Q = U_ + V, -U_ + V
    if upper_triangular:
        R = solve_triangular(Q, P)
    else:
        R = _L.solve(Q, P)

    def body(i, r):
        return xnp.where(i < n_sq, r @ r, r)
    R = lax.fori_loop(0, max_squarings, body, R)
    return xnp.where(n_sq > max_squarings, np.nan, R).astype(A.dtype)


def _expm_nd(A, upper_triangular, max_squarings):
    import xform  # deferred: import cycle
    fn = lambda x: _expm_2d(x, upper_triangular, max_squarings)  # noqa: E731
    for _ in range(A.ndim - 2):
        fn = xform.vmap(fn)
    return fn(A)


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """Matrix exponential (Padé + scaling and squaring, JAX's thresholds).  Its derivative
    is the derivative of that computation (as JAX): ``expm_frechet`` is its JVP."""
    A = _mat("expm", A)
    if A.shape[-1] == 0:
        return A
    return _expm_nd(A, bool(upper_triangular), int(max_squarings))


def expm_frechet(A, E, *, method=None, compute_expm: bool = True):
    """Fréchet derivative of expm at A in direction E: the JVP of ``expm`` (as JAX);
    ``(expm(A), L)`` when compute_expm."""
    import xform  # deferred: import cycle
    A = _mat("expm_frechet", A)
    E = U.to_array(E)
    A, E = U.promote_dtypes_inexact(A, E)
    if E.shape != A.shape:
        raise ValueError(f"expm_frechet: A and E must have the same shape, got {A.shape} and "
                         f"{E.shape}")
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"expm_frechet: unknown method {method!r}")
    expm_A, L = xform.jvp(expm, (A,), (E,))
    return (expm_A, L) if compute_expm else L


def _schur_complex(A):
    xnp = _xnp()
    cdt = np.complex64 if A.dtype in (np.float32, np.complex64) else np.complex128
    return schur(A.astype(cdt), output="complex"), cdt


def _sqrtm_triu(T):
    """Square root of an upper-triangular matrix, column by column (Björck-Hammarling)."""
    xnp = _xnp()
    n = T.shape[-1]
    diag = xnp.sqrt(xnp.diagonal(T))
    R = xnp.diag(diag)
    for j in range(1, n):
        A_ = R[:j, :j] + diag[j] * xnp.eye(j, dtype=T.dtype)
        col = _D().triangular_solve(A_, T[:j, j:j + 1], left_side=True, lower=False)
        R = R.at[:j, j].set(col[:, 0])
    return R


def sqrtm(A, blocksize: int = 1):
    """Principal matrix square root via the complex Schur form (complex result, as JAX)."""
    A = _mat("sqrtm", A)
    if A.ndim != 2:
        raise ValueError(f"sqrtm: expected a 2-D matrix, got shape {A.shape}")
    if blocksize > 1:
        raise NotImplementedError("sqrtm: blocked algorithm (blocksize > 1) is not supported, "
                                  "as in JAX")
    (T, Z), _ = _schur_complex(A)
    R = _sqrtm_triu(T)
    return Z @ R @ _L._H(Z)


def funm(A, func, disp: bool = True):
    """Matrix function via the complex Schur form and Parlett's recurrence."""
    xnp = _xnp()
    A = _mat("funm", A)
    if A.ndim != 2:
        raise ValueError(f"funm: expected a 2-D matrix, got shape {A.shape}")
    (T, Z), cdt = _schur_complex(A)
    n = T.shape[-1]
    F = xnp.diag(func(xnp.diagonal(T)).astype(cdt))
    for p in range(1, n):
        for i in range(n - p):
            j = i + p
            s = T[i, j] * (F[j, j] - F[i, i])
            if j > i + 1:
                s = s + T[i, i + 1:j] @ F[i + 1:j, j] - F[i, i + 1:j] @ T[i + 1:j, j]
            den = T[j, j] - T[i, i]
            F = F.at[i, j].set(s / xnp.where(den == 0, 1, den))
    F = Z @ F @ _L._H(Z)
    if disp:
        return F
    return F, xnp.asarray(0.0)


def polar(a, side: str = "right", *, method: str = "qdwh", eps=None, max_iterations=None):
    """Polar decomposition ``a = U P`` (right) or ``a = P U`` (left) via the SVD."""
    xnp = _xnp()
    a = _mat("polar", a, square=False)
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"polar: method must be 'qdwh' or 'svd', got {method!r}")
    u, s, vh = _D().svd(a, full_matrices=False)
    unitary = u @ vh
    sd = s.astype(a.dtype)
    if side == "right":
        posdef = _L._H(vh) @ (sd[..., :, None] * vh)
    else:
        posdef = (u * sd[..., None, :]) @ _L._H(u)
    return unitary, posdef


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a",
                     select_range=None, tol=None, key=None):
    """Eigenvalues (and, unless eigvals_only, eigenvectors) of the symmetric tridiagonal
    matrix with diagonal d and off-diagonal e, via LAPACK's Hermitian solver.  (JAX uses
    bisection and inverse iteration; eigenvalues agree to rounding, eigenvector signs may
    differ.)"""
    xnp = _xnp()
    d, e = U.promote_dtypes_inexact(U.to_array(d), U.to_array(e))
    if d.ndim != 1 or e.shape != (builtins.max(d.shape[0] - 1, 0),):
        raise ValueError(f"eigh_tridiagonal: d must be 1-D of length n and e of length n-1, "
                         f"got {d.shape} and {e.shape}")
    n = d.shape[0]
    T = xnp.diag(d)
    if n > 1:
        T = T + xnp.diag(e, 1) + xnp.diag(_conj(e) if e.dtype.kind == "c" else e, -1)
    w, v = eigh(T)
    if select == "a":
        return w if eigvals_only else (w, v)
    if select == "i":
        lo, hi = select_range
        sl = slice(int(lo), int(hi) + 1)
        return w[sl] if eigvals_only else (w[sl], v[:, sl])
    if select == "v":
        lo, hi = select_range
        keep = (w > lo) & (w <= hi)
        return w[keep] if eigvals_only else (w[keep], v[:, keep])
    raise ValueError(f"eigh_tridiagonal: select must be 'a', 'i' or 'v', got {select!r}")


# ----------------------------------------------------------------- special matrices
# (JAX 0.10.2's signatures, dtypes and batching: leading axes of vector arguments are
# batch axes.)


def _atleast_1d(name, a):
    U.check_arraylike(name, a)
    return _xnp().atleast_1d(U.to_array(a))


def hankel(c, r=None):
    """Hankel matrix with first column ``c`` and last row ``r`` (default zeros):
    ``H[i, j] = v[i + j]`` for ``v = concatenate(c, r[1:])``."""
    xnp = _xnp()
    U.check_arraylike("hankel", c, *(() if r is None else (r,)))
    c = U.to_array(c)
    r = xnp.zeros_like(c) if r is None else U.to_array(r)
    if c.ndim == 0:
        raise ValueError("hankel: c must be at least 1-dimensional, got a scalar.")
    if r.ndim == 0:
        raise ValueError("hankel: r must be at least 1-dimensional, got a scalar.")
    m, n = c.shape[-1], r.shape[-1]
    dt = xnp.result_type(c, r)
    batch = np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    if m == 0 or n == 0:
        return xnp.zeros(batch + (m, n), dt)
    c = xnp.broadcast_to(c.astype(dt), batch + (m,))
    r = xnp.broadcast_to(r.astype(dt), batch + (n,))
    v = xnp.concatenate([c, r[..., 1:]], axis=-1)
    idx = np.arange(m)[:, None] + np.arange(n)[None, :]
    return xnp.take(v, xnp.asarray(idx), axis=-1)


def circulant(c):
    """Circulant matrix with first column ``c``: ``C[i, j] = c[(i - j) % n]``."""
    c = _atleast_1d("circulant", c)
    n = c.shape[-1]
    idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % builtins.max(n, 1)
    return _xnp().take(c, _xnp().asarray(idx), axis=-1)


def leslie(f, s):
    """Leslie matrix: fecundities ``f`` in the first row, survival rates ``s`` on the
    first subdiagonal."""
    xnp = _xnp()
    U.check_arraylike("leslie", f, s)
    f, s = xnp.atleast_1d(U.to_array(f)), xnp.atleast_1d(U.to_array(s))
    if f.shape[-1] < 2:
        raise ValueError("The length of f along the last axis must be at least 2; "
                         f"got shape {f.shape}.")
    if s.shape[-1] != f.shape[-1] - 1:
        raise ValueError(
            "Incorrect lengths for f and s. The length of s along the last axis must be one "
            f"less than the length of f; got f shape {f.shape} and s shape {s.shape}.")
    f, s = U.promote_dtypes(f, s)
    n = f.shape[-1]
    batch = np.broadcast_shapes(f.shape[:-1], s.shape[:-1])
    f, s = xnp.broadcast_to(f, batch + (n,)), xnp.broadcast_to(s, batch + (n - 1,))
    sub = (np.arange(n)[:, None] - 1 == np.arange(n)[None, :])
    below = xnp.take(s, xnp.asarray(np.clip(np.arange(n) - 1, 0, n - 2)), axis=-1)
    out = xnp.where(xnp.asarray(sub), below[..., :, None], xnp.zeros((), f.dtype))
    first = xnp.asarray(np.arange(n)[:, None] == 0)
    return xnp.where(first, f[..., None, :], out)


def companion(a):
    """Companion matrix of the polynomial with coefficients ``a`` (highest first)."""
    xnp = _xnp()
    U.check_arraylike("companion", a)
    (a,) = U.promote_dtypes_inexact(U.to_array(a))
    a = xnp.atleast_1d(a)
    if a.shape[-1] < 2:
        raise ValueError("The length of `a` along the last axis must be at least 2; "
                         f"got shape {a.shape}.")
    m = a.shape[-1] - 1
    first = -a[..., 1:] / a[..., :1]
    eye = xnp.eye(m, m, k=-1, dtype=first.dtype)
    return xnp.where(xnp.asarray(np.arange(m)[:, None] == 0), first[..., None, :], eye)


def fiedler(a):
    """Fiedler matrix ``|a[i] - a[j]|``."""
    a = _atleast_1d("fiedler", a)
    return _xnp().abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """Fiedler's pentadiagonal companion matrix of the polynomial ``a`` (highest first)."""
    xnp = _xnp()
    U.check_arraylike("fiedler_companion", a)
    (a,) = U.promote_dtypes_inexact(U.to_array(a))
    a = xnp.atleast_1d(a)
    if a.shape[-1] == 0:
        raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero "
                         f"length, but got an array of shape {a.shape}.")
    n = a.shape[-1] - 1
    if n == 0:
        return xnp.zeros(a.shape[:-1] + (0, 0), a.dtype)
    a = a / a[..., :1]
    if n == 1:
        return -a[..., 1:, None]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    neg = -a
    sup = xnp.take(neg, xnp.asarray(np.minimum(i + 2, n)[:, 0]), axis=-1)[..., :, None]
    sub = xnp.take(neg, xnp.asarray(np.minimum(i + 1, n)[:, 0]), axis=-1)[..., :, None]
    even, odd = i % 2 == 0, i % 2 == 1
    one, zero = xnp.ones((), a.dtype), xnp.zeros((), a.dtype)
    out = xnp.broadcast_to(zero, a.shape[:-1] + (n, n))
    for cond, val in reversed([((i == 0) & (j == 0), neg[..., 1, None, None]),
                               ((i == 1) & (j == 0), one),
                               ((j == i + 1) & even, sup), ((j == i + 2) & even, one),
                               ((j == i - 1) & even & (i >= 2), sub),
                               ((j == i - 2) & odd & (i >= 3), one)]):
        out = xnp.where(xnp.asarray(cond), val, out)
    return out


def convolution_matrix(a, n: int, mode: str = "full"):
    """The Toeplitz matrix ``A`` with ``A @ v == convolve(a, v, mode)`` for ``len(v) == n``."""
    xnp = _xnp()
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    U.check_arraylike("convolution_matrix", a)
    a = U.to_array(a)
    if a.ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
    m = a.shape[-1]
    if m < 1:
        raise ValueError(f"len(a) must be at least 1; got shape {a.shape}.")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
    pads = [(0, 0)] * (a.ndim - 1) + [(0, n - 1)]
    az, raz = xnp.pad(a, pads), xnp.pad(xnp.flip(a, axis=-1), pads)
    L = m + n - 1
    if mode == "same":
        trim = builtins.min(n, m) - 1
        tb, te = trim // 2, trim - trim // 2
    elif mode == "valid":
        tb = te = builtins.min(n, m) - 1
    else:
        tb = te = 0
    return toeplitz(az[..., tb:L - te], raz[..., L - n - tb:L - tb])


def _lbinom(n, k):
    """binom(n, k) through log-gamma, as JAX computes it (float results)."""
    return _xnp().exp(lax.lgamma(n + 1.0) - lax.lgamma(n - k + 1.0) - lax.lgamma(k + 1.0))


def invhilbert(n: int):
    """Inverse of the n x n Hilbert matrix (default float dtype)."""
    xnp = _xnp()
    a = xnp.arange(n, dtype=_float_dtype())
    i, j = a[:, None], a[None, :]
    s = i + j
    return ((-1.0) ** s * (s + 1.0) * comb(n + i, n - j - 1) * comb(n + j, n - i - 1)
            * comb(s, i) ** 2)


def _float_dtype():
    return _dt.default_float_dtype()


def _kind(kind):
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"Expected kind to be on of: ['symmetric', 'lower', 'upper']; "
                         f"got {kind}")
    return kind


def pascal(n: int, kind=None):
    """Pascal matrix (float32, as JAX: binomials through log-gamma)."""
    kind = _kind(kind)
    xnp = _xnp()
    a = xnp.arange(n, dtype=np.float32)
    Ln = _lbinom(a[:, None], a[None, :])
    if kind == "lower":
        return Ln
    if kind == "upper":
        return Ln.T
    return xnp.dot(Ln, Ln.T)


def invpascal(n: int, kind=None):
    """Inverse of the Pascal matrix (default float dtype)."""
    kind = _kind(kind).replace("on of", "one of")
    xnp = _xnp()
    a = xnp.arange(n, dtype=_float_dtype())
    i, j = a[:, None], a[None, :]
    Linv = ((-1.0) ** (i - j)) * _lbinom(i, j)
    if kind == "lower":
        return Linv
    if kind == "upper":
        return Linv.T
    return xnp.dot(Linv.T, Linv)


def helmert(n: int, full: bool = False):
    """Helmert matrix ((n-1) x n, or n x n with ``full``)."""
    if n < 1:
        raise ValueError(f"n must be a positive integer; got {n}.")
    xnp = _xnp()
    i, j = xnp.arange(n - 1)[:, None], xnp.arange(n)[None, :]
    k = (i + 1).astype(_float_dtype())
    denom = xnp.sqrt(k * (k + 1))
    H = xnp.where(j <= i, 1.0 / denom, xnp.where(j == i + 1, -k / denom,
                                                 xnp.zeros_like(denom)))
    if full:
        H = xnp.concatenate([xnp.full((1, n), 1.0 / xnp.sqrt(n), dtype=H.dtype), H], axis=0)
    return H


def hadamard(n: int, dtype=int):
    """Sylvester's Hadamard matrix of order ``n`` (a power of 2)."""
    if n < 1 or not math.log2(n).is_integer():
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    xnp = _xnp()
    H = xnp.ones((1, 1), dtype=dtype)
    for _ in range(int(math.log2(n))):
        H = xnp.block([[H, H], [H, -H]])
    return H


def dft(n: int, scale=None, *, dtype=None):
    """The n x n discrete Fourier transform matrix (``scale``: None, 'sqrtn' or 'n')."""
    if scale is not None and scale not in ("sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    if dtype is None:
        dtype = _dt.default_complex_dtype()
    else:
        dtype = _dt.canonicalize_dtype(np.dtype(dtype))
        if dtype.kind != "c":
            raise ValueError(f"dtype must be a complex floating-point type; got {dtype}.")
    xnp = _xnp()
    a = xnp.arange(n, dtype=dtype)
    w = xnp.exp(-2j * np.pi * a[:, None] * a[None, :] / n)
    if scale == "sqrtn":
        w = w / xnp.sqrt(n)
    elif scale == "n":
        w = w / n
    return w


# ----------------------------------------------------------------- qr_multiply, Sylvester


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
    """``(Q @ c, R)`` (``mode='left'``) or ``(c @ Q, R)`` (``'right'``) for the economic QR
    decomposition ``a = Q R`` (``conj(Q)`` with ``conjugate``; with ``pivoting`` also the
    column permutation)."""
    xnp = _xnp()
    a, c = U.promote_dtypes_inexact(U.to_array(a), U.to_array(c))
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
    if a.ndim < 2 or c.ndim < 1:
        raise ValueError(f"qr_multiply: a must be at least 2-D and c at least 1-D, got "
                         f"shapes {tuple(a.shape)} and {tuple(c.shape)}")
    onedim = c.ndim == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = a.shape[-2:]
    k = builtins.min(m, n)
    if mode == "left" and c.shape[-2] != k:
        raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                         f"{tuple(a.shape)} so Q has {k} columns, but c has {c.shape[-2]} "
                         f"rows (expected {k}).")
    if mode == "right" and c.shape[-1] != m:
        raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                         f"{tuple(a.shape)} so Q has {m} rows, but c has {c.shape[-1]} "
                         f"columns (expected {m}).")
    res = qr(a, mode="economic", pivoting=pivoting)
    q, r = res[0], res[1]
    if conjugate:
        q = _conj(q)
    if mode == "left":
        out = xnp.matmul(q, c)
    else:
        out = xnp.matmul(c, q)
    if onedim:
        out = out.ravel()
    return (out, r, res[2]) if pivoting else (out, r)


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
    """The ``X`` with ``A X + X B = C``; NaN where some eigenvalues of ``A`` and ``-B``
    are closer than ``tol`` (no unique solution), as JAX.  Solved as the linear system
    ``(I kron A + B^T kron I) vec(X) = vec(C)``, batched over leading axes."""
    xnp = _xnp()
    if method not in ("schur", "eigen"):
        raise ValueError(f"Unrecognized method {method}. The two valid methods are either "
                         "\"schur\" or \"eigen\".")
    A, B, C = U.promote_dtypes_inexact(U.to_array(A), U.to_array(B), U.to_array(C))
    m, n = C.shape[-2:]
    if A.shape[-2:] != (m, m) or B.shape[-2:] != (n, n):
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {A.shape}\n"
                         f"B: {B.shape}\nC: {C.shape}")
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2], C.shape[:-2])
    A = xnp.broadcast_to(A, batch + (m, m))
    B = xnp.broadcast_to(B, batch + (n, n))
    C = xnp.broadcast_to(C, batch + (m, n))
    Im, In = xnp.eye(m, dtype=A.dtype), xnp.eye(n, dtype=A.dtype)
    # vec is row-major here: vec(A X) = (A kron I_n) vec(X), vec(X B) = (I_m kron B^T) vec(X)
    K = (A[..., :, None, :, None] * In[:, None, :]
         + Im[:, None, :, None] * xnp.swapaxes(B, -1, -2)[..., None, :, None, :])
    K = K.reshape(batch + (m * n, m * n))
    X = xnp.linalg.solve(K, C.reshape(batch + (m * n, 1))).reshape(batch + (m, n))
    ea, eb = xnp.linalg.eigvals(A), xnp.linalg.eigvals(B)
    bad = xnp.any(xnp.abs(ea[..., :, None] + eb[..., None, :]) < tol, axis=(-2, -1))
    return xnp.where(bad[..., None, None], xnp.full_like(X, np.nan), X)


# JAX jits expm as a whole: eagerly it runs as one compiled program, as in JAX
# (xform.numpy._jitted.SCIPY_LINALG_INLINE_TABLE)
def _install_jitted():
    import sys
    from xform.numpy import _jitted
    _jitted.install(sys.modules[__name__], _jitted.SCIPY_LINALG_INLINE_TABLE,
                    prefix="xform.scipy.linalg", inline=True)


_install_jitted()

"""Polynomials (coefficients highest power first): polyval, polyadd/sub/mul/div,
polyder/polyint, poly, roots, polyfit, vander.

Self-contained numerics built from existing primitives:
  * ``polymul`` is a product with a Toeplitz matrix of the first factor;
  * ``poly`` of a square matrix is its characteristic polynomial by the
    Faddeev-LeVerrier recursion (matrix products and traces, no eigenvalues);
  * ``roots`` runs the Aberth-Ehrlich simultaneous iteration (complex arithmetic,
    a ``while_loop`` to convergence), so it jits and batches;
  * ``polyfit`` solves the column-scaled Vandermonde least-squares problem through
    a cyclic Jacobi eigendecomposition of its (deg+1)^2 Gram matrix, giving the
    singular values, rank, ``rcond`` cut-off and ``cov`` matrix of NumPy/JAX.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import core, dtypes
from xform._src.interpreters.core import ArrayOps
from xform.numpy import _reductions as R
from xform.numpy import _shape as S
from xform.numpy import _ufuncs as F
from xform.numpy import _util as U
from xform.numpy._util import lax
from xform._src.primitives.control_flow import while_loop
from xform.numpy._linalg import diagonal
from xform.numpy._linalg import matmul
from xform.numpy._linalg import trace


def _c(v, x):
    return U.to_array(v, x.dtype, False)


def _strong(x):
    return U.to_array(x, x.dtype, False)


def _dot(a, b):
    return matmul(a, b, precision="highest")


def _check1d(name, *xs):
    for x in xs:
        if x.ndim != 1:
            raise ValueError(f"{name}: expected 1-D coefficient arrays, got shape {x.shape}")


# ----------------------------------------------------------------- evaluation and arithmetic


def polyval(p, x, *, unroll=16):
    """Evaluate the polynomial ``p`` at ``x`` (Horner's scheme; ``p`` may be 2-D)."""
    p, x = U.ensure_arraylike("polyval", p, x)
    pa, xa = U.promote_dtypes(U.to_array(p), U.to_array(x))
    shape = U.broadcast_shapes(pa.shape[1:], xa.shape, name="polyval")
    y = U.broadcast_to_shape(U.to_array(0, xa.dtype, xa.weak_type), shape)
    for k in range(pa.shape[0]):
        y = F.add(F.multiply(y, xa), lax.index_in_dim(pa, k, 0, False))
    return y


def _pad_front(a, n):
    if a.shape[0] == n:
        return a
    return lax.pad(a, U.to_array(0, a.dtype, False),
                     ((n - a.shape[0], 0, 0),) + ((0, 0, 0),) * (a.ndim - 1))


def polyadd(a1, a2):
    """Sum of two polynomials (aligned at the constant term)."""
    a1, a2 = U.ensure_arraylike("polyadd", a1, a2)
    a, b = U.promote_dtypes(U.to_array(a1), U.to_array(a2))
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("polyadd: inputs must be at least 1-D coefficient arrays")
    if b.shape[0] <= a.shape[0]:   # a.at[-len(b):].add(b), b broadcast to those rows
        big, small = a, b
    else:
        big, small = b, a
    small = S.broadcast_to(small, (small.shape[0],) + big.shape[1:])
    return F.add(big, _pad_front(small, big.shape[0]))


def polysub(a1, a2):
    """Difference of two polynomials."""
    a1, a2 = U.ensure_arraylike("polysub", a1, a2)
    a, b = U.promote_dtypes(U.to_array(a1), U.to_array(a2))
    return polyadd(a, F.negative(b))


def _trim_front(a):
    v = a.to_concrete_value() if isinstance(a, ArrayOps) else None
    if v is None:
        raise core.errors.ConcretizationTypeError(
            a, "trim_leading_zeros=True: the output length depends on the values")
    nz = np.flatnonzero(np.asarray(v))
    start = nz[0] if nz.size else a.shape[0]
    return lax.slice(a, (int(start),), (a.shape[0],))


def _full_conv(a, b):
    """Full linear convolution of 1-D ``a`` (n) and ``b`` (m) -> n + m - 1."""
    n, m = a.shape[0], b.shape[0]
    L = n + m - 1
    k = np.arange(L)[:, None] - np.arange(m)[None, :]
    valid = (k >= 0) & (k < n)
    T = S.take(a, np.clip(k, 0, n - 1), axis=0)
    T = F.where(valid, T, _c(0, a))
    return _dot(T, b)


def polymul(a1, a2, *, trim_leading_zeros=False):
    """Product of two polynomials."""
    a1, a2 = U.ensure_arraylike("polymul", a1, a2)
    a, b = U.promote_dtypes_inexact(U.to_array(a1), U.to_array(a2))
    a, b = S.atleast_1d(_strong(a)), S.atleast_1d(_strong(b))
    _check1d("polymul", a, b)
    if trim_leading_zeros and (a.shape[0] > 1 or b.shape[0] > 1):
        a, b = _trim_front(a), _trim_front(b)
    if a.shape[0] == 0:
        a = U.to_array(np.zeros(1, b.dtype))
    if b.shape[0] == 0:
        b = U.to_array(np.zeros(1, a.dtype))
    return _full_conv(a, b)


def polydiv(u, v, *, trim_leading_zeros=False):
    """Quotient and remainder of polynomial division ``u / v``."""
    u, v = U.ensure_arraylike("polydiv", u, v)
    ua, va = U.promote_dtypes_inexact(U.to_array(u), U.to_array(v))
    ua, va = _strong(ua), _strong(va)
    _check1d("polydiv", ua, va)
    m, n = ua.shape[0] - 1, va.shape[0] - 1
    scale = F.true_divide(_c(1, va), lax.index_in_dim(va, 0, 0, False))
    nq = max(m - n + 1, 1)
    qs = []
    for k in range(0, m - n + 1):
        d = F.multiply(scale, lax.index_in_dim(ua, k, 0, False))
        qs.append(d)
        upd = F.multiply(F.negative(d), va)
        upd = lax.pad(upd, _c(0, upd), ((k, ua.shape[0] - k - n - 1, 0),))
        ua = F.add(ua, upd)
    q = S.stack(qs) if qs else U.to_array(np.zeros(nq, ua.dtype))
    if trim_leading_zeros:
        tol = float(np.sqrt(dtypes.finfo(ua.dtype).eps))
        uv = ua.to_concrete_value()
        if uv is None:
            raise core.errors.ConcretizationTypeError(
                ua, "polydiv(trim_leading_zeros=True): the remainder length depends on values")
        big = np.flatnonzero(np.abs(np.asarray(uv)) > tol)
        start = big[0] if big.size else ua.shape[0]
        ua = lax.slice(ua, (int(start),), (ua.shape[0],))
    return q, ua


def polyder(p, m=1):
    """Coefficients of the ``m``-th derivative."""
    p = U.ensure_arraylike("polyder", p)
    m = U.static_int(m, "polyder: m")
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    (pa,) = U.promote_dtypes_inexact(U.to_array(p))
    pa = _strong(pa)
    if pa.ndim != 1:
        raise TypeError(f"polyder: p must be a 1-D array of polynomial coefficients, got "
                        f"shape {pa.shape}")
    if m == 0:
        return pa
    n = pa.shape[0]
    if m >= n:
        return lax.slice(pa, (0,), (0,))
    powers = np.arange(n - 1, -1, -1, dtype=np.float64)[: n - m]
    coeff = np.ones(n - m)
    for j in range(m):
        coeff = coeff * (powers - j)
    return F.multiply(lax.slice(pa, (0,), (n - m,)), U.to_array(coeff.astype(pa.dtype)))


def polyint(p, m=1, k=None):
    """Coefficients of the ``m``-th antiderivative (integration constants ``k``)."""
    p = U.ensure_arraylike("polyint", p)
    m = U.static_int(m, "polyint: m")
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    kk = U.to_array(0 if k is None else k)
    pa, kk = U.promote_dtypes_inexact(U.to_array(p), kk)
    pa, kk = _strong(pa), _strong(kk)
    if pa.ndim != 1:
        raise TypeError(f"polyint: p must be a 1-D array of polynomial coefficients, got "
                        f"shape {pa.shape}")
    kk = S.atleast_1d(kk)
    if kk.shape[0] == 1 and m != 1:
        kk = U.broadcast_to_shape(lax.reshape(kk, ()), (m,))
    if kk.shape != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    if m == 0:
        return pa
    n = pa.shape[0]
    grid = np.arange(n + m, dtype=np.float64)[None] - np.arange(m, dtype=np.float64)[:, None]
    coeff = np.maximum(1, grid).prod(0)[::-1]
    return F.true_divide(S.concatenate([pa, kk]), U.to_array(coeff.astype(pa.dtype)))


# ----------------------------------------------------------------- construction


def vander(x, N=None, increasing=False):
    """Vandermonde matrix: columns are powers of ``x`` (decreasing unless ``increasing``)."""
    x = U.ensure_arraylike("vander", x)
    xa = U.to_array(x)
    if xa.ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    N = xa.shape[0] if N is None else U.static_int(N, "vander: N")
    if N < 0:
        raise ValueError("N must be nonnegative")
    pw = np.arange(N)
    if not increasing:
        pw = pw[::-1].copy()
    cols = []
    for e in pw:
        cols.append(F.power(xa, U.to_array(int(e), xa.dtype if xa.dtype.kind in "iu" else
                                           dtypes.default_int_dtype(), True)
                            if xa.dtype.kind != "b" else int(e)))
    if not cols:
        return U.to_array(np.zeros((xa.shape[0], 0), xa.dtype))
    return S.stack(cols, axis=1)


def poly(seq_of_zeros):
    """Coefficients of the monic polynomial with the given roots (or of a square matrix's
    characteristic polynomial)."""
    seq_of_zeros = U.ensure_arraylike("poly", seq_of_zeros)
    z = U.to_array(seq_of_zeros)
    (z,) = U.promote_dtypes_inexact(z)
    z = _strong(z)
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] != 0:
        c = _charpoly(z)   # JAX goes through (complex) eigenvalues: complex coefficients
        return U.to_array(c, _complex_dt(c.dtype), False) if c.dtype.kind != "c" else c
    if z.ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    if z.shape[0] == 0:
        return U.to_array(np.ones((), z.dtype))
    a = U.to_array(np.ones(1, z.dtype))
    for k in range(z.shape[0]):
        zk = lax.index_in_dim(z, k, 0, False)
        a = _full_conv(a, S.stack([_c(1, z), F.negative(zk)]))
    return a


def _charpoly(A):
    """Faddeev-LeVerrier: det(tI - A) = sum c_k t^(n-k), c_0 = 1."""
    n = A.shape[0]
    eye = U.to_array(np.eye(n, dtype=A.dtype))
    cs = [_c(1, A)]
    M = U.to_array(np.zeros((n, n), A.dtype))
    for k in range(1, n + 1):
        M = F.add(_dot(A, M), F.multiply(cs[-1], eye))
        AM = _dot(A, M)
        cs.append(F.true_divide(F.negative(trace(AM)), _c(k, A)))
    return S.stack(cs)


# ----------------------------------------------------------------- roots


def _complex_dt(dt):
    return np.dtype(np.complex128) if dt in (np.float64, np.complex128) else \
        np.dtype(np.complex64)


def _aberth(p, frozen=None):
    """All roots of the 1-D polynomial ``p`` (leading coefficient non-zero), complex.

    ``frozen`` (bool, one per root): those roots stay at 0 (known exact zero roots); the
    others feel their repulsion, which deflates the zero roots implicitly."""
    n = p.shape[0] - 1
    cdt = _complex_dt(p.dtype)
    pc = U.to_array(p, cdt, False)
    a0 = lax.index_in_dim(pc, 0, 0, False)
    pc = F.true_divide(pc, a0)
    dp = polyder(pc) if n > 1 else U.to_array(np.ones(1, cdt))
    # Initial guesses on a circle of the Cauchy-bound radius, rotated off the axes.
    radius = F.add(_c(1, F.real(pc)), R.max(F.absolute(lax.slice(pc, (1,), (n + 1,)))))
    ang = (2 * np.pi * np.arange(n) / n + 0.4).astype(np.float64)
    z0 = F.multiply(U.to_array(radius, cdt, False),
                    U.to_array((np.cos(ang) + 1j * np.sin(ang)).astype(cdt)))
    if frozen is not None:
        z0 = F.where(frozen, U.to_array(0, cdt, False), z0)
    eps = float(dtypes.finfo(F.real(pc).dtype).eps)
    max_iter = 200
    eye = U.to_array(np.eye(n, dtype=bool))

    def step(z):
        pz = polyval(pc, z)
        dpz = polyval(dp, z)
        ratio = F.true_divide(pz, dpz)
        diff = F.subtract(S.expand_dims(z, 1), S.expand_dims(z, 0))
        inv = F.where(eye, _c(0, diff), F.true_divide(_c(1, diff),
                                                       F.where(eye, _c(1, diff), diff)))
        s = R.sum(inv, axis=1)
        w = F.true_divide(ratio, F.subtract(_c(1, ratio), F.multiply(ratio, s)))
        w = F.where(F.isfinite(F.absolute(w)), w, _c(0, w))
        w = F.where(F.equal(pz, _c(0, pz)), _c(0, w), w)
        if frozen is not None:
            w = F.where(frozen, _c(0, w), w)
        return F.subtract(z, w), R.max(F.true_divide(
            F.absolute(w), F.maximum(F.absolute(z), _c(1, F.absolute(z)))))

    def cond(c):
        it, _, delta = c
        return F.logical_and(F.less(it, U.to_array(max_iter, np.int32, False)),
                             F.greater(delta, U.to_array(eps, delta.dtype, False)))

    def body(c):
        it, z, _ = c
        z, d = step(z)
        return F.add(it, U.to_array(1, np.int32, False)), z, d

    init = (U.to_array(0, np.int32, False), z0,
            U.to_array(np.inf, F.real(z0).dtype, False))
    _, z, _ = while_loop(cond, body, init)
    z, _ = step(z)   # one polishing step
    return z


def roots(p, *, strip_zeros=True):
    """Roots of the polynomial ``p`` (complex; order unspecified, as eigenvalues)."""
    p = U.ensure_arraylike("roots", p)
    pa = U.to_array(p)
    if pa.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    (pa,) = U.promote_dtypes_inexact(pa)
    pa = _strong(pa)
    cdt = _complex_dt(pa.dtype)
    if pa.shape[0] < 2:
        return U.to_array(np.zeros(0, cdt))
    iszero = F.equal(pa, _c(0, pa))
    nlead = F.where(R.all(iszero), U.to_array(pa.shape[0], np.int32, False),
                    U.to_array(R.argmin(iszero), np.int32, False))
    if strip_zeros:
        nl = nlead.to_concrete_value()
        if nl is None:
            raise core.errors.ConcretizationTypeError(
                nlead, "The error occurred in roots(). To use it under jit, pass "
                "strip_zeros=False (leading zeros then give NaN roots).")
        nl = int(nl)
        q = lax.slice(pa, (nl,), (pa.shape[0],))
        if q.shape[0] < 2:
            return U.to_array(np.zeros(0, cdt))
        return _trailing_zero_roots(q)
    # Traced leading zeros: roll them to the end (they become zero roots), mark them NaN.
    n = pa.shape[0]
    safe = F.where(F.equal(nlead, U.to_array(n, np.int32, False)),
                   U.broadcast_to_shape(_c(1, pa), pa.shape), pa)
    idx = F.remainder(F.add(lax.iota(np.int32, n), nlead), U.to_array(n, np.int32, False))
    rolled = S.take(safe, idx)
    # The rolled polynomial has (at least) nlead exact zero roots: keep the last nlead
    # roots frozen at 0 and report them as NaN (JAX's convention for leading zeros).
    keep = F.less(lax.iota(np.int32, n - 1),
                  F.subtract(U.to_array(n - 1, np.int32, False), nlead))
    r = _aberth(rolled, frozen=F.logical_not(keep))
    return F.where(keep, r, U.to_array(complex(np.nan, np.nan), r.dtype, False))


def _trailing_zero_roots(q):
    """Roots of ``q`` (q[0] != 0): exact zeros for trailing zero coefficients."""
    n = q.shape[0] - 1
    cdt = _complex_dt(q.dtype)
    qv = q.to_concrete_value()
    if qv is not None:
        qv = np.asarray(qv)
        nz = np.flatnonzero(qv)
        ntrail = n - nz[-1] if nz.size else 0
        if ntrail:
            core_p = lax.slice(q, (0,), (q.shape[0] - ntrail,))
            rest = _aberth(core_p) if core_p.shape[0] > 1 else U.to_array(np.zeros(0, cdt))
            return S.concatenate([rest, U.to_array(np.zeros(ntrail, cdt))])
    return _aberth(q)


# ----------------------------------------------------------------- least squares


def _jacobi_eigh(G, sweeps=None):
    """Eigen-decomposition of a small symmetric matrix by cyclic Jacobi rotations
    (quadratic convergence: a few sweeps reach working precision for small sizes)."""
    k = G.shape[0]
    if sweeps is None:
        sweeps = 6 if k <= 4 else 10
    V = U.to_array(np.eye(k, dtype=G.dtype))
    ri = lax.broadcasted_iota(np.int32, (k, k), 0)
    ci = lax.broadcasted_iota(np.int32, (k, k), 1)
    one, zero = _c(1, G), _c(0, G)
    tiny = _c(float(dtypes.finfo(G.dtype).tiny), G)
    for _ in range(sweeps):
        for p in range(k - 1):
            for q in range(p + 1, k):
                app = G[p, p]
                aqq = G[q, q]
                apq = G[p, q]
                small = F.less_equal(F.absolute(apq), tiny)
                safe_apq = F.where(small, one, apq)
                theta = F.true_divide(F.subtract(aqq, app), F.multiply(_c(2, G), safe_apq))
                sgn = F.where(F.greater_equal(theta, zero), one, F.negative(one))
                t = F.true_divide(sgn, F.add(F.absolute(theta),
                                             F.sqrt(F.add(F.square(theta), one))))
                t = F.where(small, zero, t)
                c = F.true_divide(one, F.sqrt(F.add(F.square(t), one)))
                s = F.multiply(t, c)
                J = U.to_array(np.eye(k, dtype=G.dtype))
                J = F.where(F.logical_and(F.equal(ri, p), F.equal(ci, p)), c, J)
                J = F.where(F.logical_and(F.equal(ri, q), F.equal(ci, q)), c, J)
                J = F.where(F.logical_and(F.equal(ri, p), F.equal(ci, q)), s, J)
                J = F.where(F.logical_and(F.equal(ri, q), F.equal(ci, p)), F.negative(s), J)
                G = _dot(S.transpose(J), _dot(G, J))
                V = _dot(V, J)
    return diagonal(G), V


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least-squares polynomial fit of degree ``deg`` (coefficients highest power first)."""
    x, y = U.ensure_arraylike("polyfit", x, y)
    xa, ya = U.to_array(x), U.to_array(y)
    deg = U.static_int(deg, "polyfit: deg")
    order = deg + 1
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if xa.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if xa.shape[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if ya.ndim < 1 or ya.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if xa.shape[0] != ya.shape[0]:
        raise TypeError("expected x and y to have same length")
    xa, ya = U.promote_dtypes_inexact(xa, ya)
    xa, ya = _strong(xa), _strong(ya)
    dt = xa.dtype
    if rcond is None:
        rcond = xa.shape[0] * float(dtypes.finfo(dt).eps)
    rcond = float(core.concrete_or_error(rcond, "rcond must be float")
                  if isinstance(rcond, ArrayOps) else rcond)
    lhs = vander(xa, order)
    rhs = ya
    if w is not None:
        w = U.ensure_arraylike("polyfit", w)
        (wa,) = U.promote_dtypes_inexact(U.to_array(w))
        if wa.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if wa.shape[0] != ya.shape[0]:
            raise TypeError("expected w and y to have the same length")
        wa = U.to_array(wa, dt, False)
        lhs = F.multiply(lhs, S.expand_dims(wa, 1))
        rhs = F.multiply(rhs, S.expand_dims(wa, 1) if rhs.ndim == 2 else wa)
    scale = F.sqrt(R.sum(F.multiply(lhs, lhs), axis=0))
    lhs = F.true_divide(lhs, S.expand_dims(scale, 0))
    # Gram matrix eigen-decomposition: lhs = U S V^T  =>  lhs^T lhs = V S^2 V^T.
    G = _dot(S.transpose(lhs), lhs)
    ev, V = _jacobi_eigh(G)
    order_idx = S.argsort(F.negative(ev))
    ev = S.take(ev, order_idx)
    V = S.take(V, order_idx, axis=1)
    sv = F.sqrt(F.maximum(ev, _c(0, ev)))
    s0 = lax.index_in_dim(sv, 0, 0, False)
    mask = F.logical_and(F.greater(sv, _c(0, sv)),
                         F.greater_equal(sv, F.multiply(_c(rcond, sv), s0)))
    rank = R.sum(U.to_array(mask, dtypes.default_int_dtype(), False))
    inv_ev = F.where(mask, F.true_divide(_c(1, ev), F.where(mask, ev, _c(1, ev))), _c(0, ev))
    pinvG = _dot(F.multiply(V, S.expand_dims(inv_ev, 0)), S.transpose(V))
    rhs2 = rhs if rhs.ndim == 2 else S.expand_dims(rhs, 1)
    c2 = _dot(pinvG, _dot(S.transpose(lhs), rhs2))
    resid = R.sum(F.square(F.subtract(rhs2, _dot(lhs, c2))), axis=0)
    if rhs.ndim == 1:
        c = lax.reshape(c2, (order,))
        resid = lax.reshape(resid, (1,))
    else:
        c = c2
    c_out = F.true_divide(c, scale if c.ndim == 1 else S.expand_dims(scale, 1))
    if full:
        return c_out, resid, rank, sv, U.to_array(rcond, dt, True)
    if cov:
        Vbase = F.true_divide(pinvG, F.multiply(S.expand_dims(scale, 1),
                                                S.expand_dims(scale, 0)))
        if cov == "unscaled":
            fac = U.to_array(np.asarray(1.0, dt))
        else:
            if xa.shape[0] <= order:
                raise ValueError("the number of data points must exceed order to scale the "
                                 "covariance matrix")
            fac = F.true_divide(resid, _c(xa.shape[0] - order, resid))
        if ya.ndim == 1:
            return c_out, F.multiply(Vbase, lax.reshape(S.atleast_1d(fac)[:1], (1, 1))
                                     if fac.ndim else fac)
        fac = S.atleast_1d(fac)
        return c_out, F.multiply(S.expand_dims(Vbase, 2),
                                 lax.reshape(fac, (1, 1, fac.shape[0])))
    return c_out


__all__ = ["polyval", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint",
           "vander", "poly", "roots", "polyfit"]

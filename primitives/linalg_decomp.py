"""Matrix decompositions and solves: ``xform.lax.linalg`` (JAX's names and semantics).

Every primitive acts on the last two axes and accepts any number of leading
batch axes.  The NumPy reference of each primitive calls the same LAPACK
routine XLA's CPU lowering calls (``scipy.linalg.lapack``, imported lazily:
jaxlib's LAPACK custom calls use SciPy's LAPACK too), one matrix at a time,
so reference and compiled results agree to rounding.  Failures are not
exceptions: as in JAX, a matrix that is not positive definite (``cholesky``)
or whose iteration does not converge (``eigh``/``svd``/``eig``) gives NaNs.

Batching folds the mapped axis into the leading batch axes (moved to the
front).  JVPs follow JAX's formulas (cholesky: Murray 2016; lu: de Hoog et
al.; qr: Townsend; eigh: first-order perturbation theory, whose reciprocal
eigen-gap matrix is built with the diagonal guarded exactly as JAX does, so
degenerate eigenvalues give inf/NaN tangents as in JAX; svd: Townsend's
formula).  ``triangular_solve`` is linear in ``b`` and has a transpose rule.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from xform._src.interpreters import ad, batching, core, dtypes
from xform._src.interpreters.ad import Zero
from xform._src.interpreters.core import Primitive, ShapedArray
from xform._src.primitives import elementwise as E
from xform._src.primitives import reductions as R
from xform._src.primitives import structural as S
from xform._src.primitives._rules import bdim_at_front, defjvp_zero
from xform._src.primitives.dot_general import dot_general_p
from xform._src.primitives.structural import as_operand

__all__ = ["cholesky", "triangular_solve", "lu", "lu_pivots_to_permutation", "qr", "geqrf",
           "householder_product", "eigh", "svd", "eig", "schur", "hessenberg", "tridiagonal",
           "tridiagonal_solve", "symmetrize", "SvdAlgorithm", "EigImplementation",
           "EighImplementation",
           "cholesky_p", "triangular_solve_p", "lu_p", "lu_pivots_to_permutation_p", "qr_p",
           "geqrf_p", "householder_product_p", "eigh_p", "svd_p", "eig_p", "schur_p",
           "hessenberg_p", "tridiagonal_p", "tridiagonal_solve_p"]

_LAPACK_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                              np.complex128))


class SvdAlgorithm:
    """Names accepted for ``svd``'s ``algorithm`` (CPU: LAPACK gesdd or gesvd)."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"


class EigImplementation:
    LAPACK = "lapack"


class EighImplementation:
    QR = "QR"
    JACOBI = "Jacobi"
    QDWH = "QDWH"


def real_dtype(dt):
    dt = np.dtype(dt)
    return np.dtype(np.float32) if dt == np.complex64 else (
        np.dtype(np.float64) if dt == np.complex128 else dt)


def complex_dtype(dt):
    dt = np.dtype(dt)
    return np.dtype(np.complex64) if dt in (np.float32, np.complex64) else np.dtype(np.complex128)


# ----------------------------------------------------------------- shape/dtype checks


def _check_dtype(name, aval, arg="operand"):
    if aval.dtype not in _LAPACK_DTYPES:
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name} for {arg} "
                        f"{aval.str_short()}. Accepted dtypes are float32, float64, complex64 "
                        "and complex128 (convert integers with .astype(float)).")


def _check_matrix(name, aval, square=False, arg="operand"):
    if aval.ndim < 2:
        raise TypeError(f"{name}: {arg} must have at least 2 dimensions (a matrix or a batch "
                         f"of matrices), got shape {aval.shape}")
    if square and aval.shape[-1] != aval.shape[-2]:
        raise ValueError(f"{name}: {arg} must be a square matrix (or batch of square matrices) "
                         f"but got shape {aval.shape}")
    _check_dtype(name, aval, arg)


# ----------------------------------------------------------------- small array helpers
# (primitive-level: every rule below works under any trace)


def _aval(x):
    return core.get_aval(x)


def _mm(a, b):
    """Batched matrix product (..., m, k) @ (..., k, n) over equal batch dims."""
    nd = _aval(a).ndim
    batch = tuple(range(nd - 2))
    return dot_general_p.bind(a, b, dimension_numbers=(((nd - 1,), (nd - 2,)), (batch, batch)),
                              precision="HIGHEST", preferred_element_type=None)


def _T(x):
    nd = _aval(x).ndim
    return S.transpose_p.bind(x, permutation=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _conj(x):
    return E.conj(x) if dtypes.is_complex(_aval(x).dtype) else x


def _H(x):
    return _T(_conj(x))


def _real(x):
    return E.real(x) if dtypes.is_complex(_aval(x).dtype) else x


def _cast(x, dt):
    dt = np.dtype(dt)
    if _aval(x).dtype == dt:
        return x
    return E.convert_element_type_p.bind(x, new_dtype=dt, weak_type=False)


def _full(shape, value, dt):
    """A constant of exactly ``dt`` (no x64 canonicalisation: rules keep operand dtypes)."""
    dt = np.dtype(dt)
    small = {"f": np.float32, "c": np.complex64, "i": np.int32, "u": np.uint32,
             "b": np.bool_}[dt.kind]
    c = np.array(value, small)
    if c.dtype != dt:     # staged literals are canonicalised: widen with an explicit convert
        c = E.convert_element_type_p.bind(c, new_dtype=dt, weak_type=False)
    return S.broadcast_in_dim_p.bind(c, shape=tuple(shape), broadcast_dimensions=())


def _zeros_like(x):
    a = _aval(x)
    return _full(a.shape, 0, a.dtype)


def _tri_mask(shape, k, lower):
    """Boolean mask of ``shape`` (..., m, n): True on/below (lower) or on/above diagonal k."""
    m, n = shape[-2:]
    r = S.broadcasted_iota(np.int32, (m, n), 0)
    c = S.broadcasted_iota(np.int32, (m, n), 1)
    kk = _full((m, n), k, np.int32)
    mask = E.ge(E.add(r, kk), c) if lower else E.le(E.add(r, kk), c)
    nd = len(shape)
    return S.broadcast_in_dim(mask, tuple(shape), (nd - 2, nd - 1))


def _tril(x, k=0):
    a = _aval(x)
    return E.select(_tri_mask(a.shape, k, True), x, _zeros_like(x))


def _triu(x, k=0):
    a = _aval(x)
    return E.select(_tri_mask(a.shape, -k, False), x, _zeros_like(x))


def _eye(n, dt, batch=(), m=None):
    m = n if m is None else m
    r = S.broadcasted_iota(np.int32, (n, m), 0)
    c = S.broadcasted_iota(np.int32, (n, m), 1)
    e = _cast(E.eq(r, c), dt)
    if batch:
        e = S.broadcast_in_dim(e, tuple(batch) + (n, m), (len(batch), len(batch) + 1))
    return e


def _diag_part(x):
    """(..., n, n) -> (..., n)."""
    a = _aval(x)
    return R.reduce_sum(E.mul(x, _eye(a.shape[-1], a.dtype, a.shape[:-2])), (a.ndim - 1,))


def _make_diag(v):
    """(..., n) -> (..., n, n) with v on the diagonal."""
    a = _aval(v)
    n = a.shape[-1]
    nd = a.ndim
    vv = S.broadcast_in_dim(v, a.shape + (n,), tuple(range(nd - 1)) + (nd,))
    return E.mul(vv, _eye(n, a.dtype, a.shape[:-1]))


def _slice_last2(x, r0, r1, c0, c1):
    a = _aval(x)
    nb = a.ndim - 2
    return S.slice(x, (0,) * nb + (r0, c0), a.shape[:-2] + (r1, c1))


def _perm_matrix(perm, n, dt):
    """One-hot (..., m, n): P[i, j] = (perm[i] == j), so P @ x == x[perm]."""
    a = _aval(perm)
    shape = a.shape + (n,)
    p = S.broadcast_in_dim(perm, shape, tuple(range(a.ndim)))
    j = S.broadcasted_iota(np.int32, shape, a.ndim)
    return _cast(E.eq(p, j), dt)


def _move_front(vals, dims, size):
    return [bdim_at_front(v, d, size) for v, d in zip(vals, dims)]


def _batch_unary(prim):
    """Batch rule of a one-operand matrix primitive: the mapped axis becomes batch dim 0."""
    def rule(axis_data, vals, dims, **params):
        x = bdim_at_front(vals[0], dims[0], axis_data.size)
        out = prim.bind(x, *vals[1:], **params)
        if prim.multiple_results:
            return out, [0] * len(out)
        return out, 0
    batching.batch_rules[prim] = rule


def _batch_nary(prim):
    def rule(axis_data, vals, dims, **params):
        vals = _move_front(vals, dims, axis_data.size)
        out = prim.bind(*vals, **params)
        if prim.multiple_results:
            return out, [0] * len(out)
        return out, 0
    batching.batch_rules[prim] = rule


def _batched(fn, x, out_shapes_dtypes):
    """Apply the single-matrix NumPy function ``fn`` over the leading batch dims of ``x``
    (a list of arrays); returns a list of stacked outputs of the given (shape, dtype)s."""
    xs = [np.asarray(a) for a in x]
    batch = xs[0].shape[:-2] if xs[0].ndim >= 2 else ()
    outs = [np.empty(tuple(batch) + tuple(s), dt) for s, dt in out_shapes_dtypes]
    for idx in np.ndindex(*batch):
        res = fn(*[a[idx] for a in xs])
        for o, r in zip(outs, res):
            o[idx] = r
    return outs


@functools.lru_cache(maxsize=None)
def _lapack(name, dt):
    from scipy.linalg import lapack  # deferred: keeps `import xform` light
    return getattr(lapack, {np.float32: "s", np.float64: "d", np.complex64: "c",
                            np.complex128: "z"}[np.dtype(dt).type] + name)


@functools.lru_cache(maxsize=None)
def _blas(name, dt):
    from scipy.linalg import blas  # deferred: keeps `import xform` light
    return getattr(blas, {np.float32: "s", np.float64: "d", np.complex64: "c",
                          np.complex128: "z"}[np.dtype(dt).type] + name)


# ================================================================= cholesky

cholesky_p = Primitive("cholesky")


def _cholesky_abstract(x):
    _check_matrix("cholesky", x, square=True)
    return ShapedArray(x.shape, x.dtype)


def _cholesky_impl(x):
    x = np.asarray(x)
    n = x.shape[-1]
    if x.size == 0:
        return x.copy()
    potrf = _lapack("potrf", x.dtype)
    flat = x.reshape((-1, n, n))
    out = np.empty_like(flat)
    for i in range(flat.shape[0]):
        c, info = potrf(flat[i], lower=1, clean=0)
        out[i] = c if info == 0 else np.nan      # JAX: NaNs where potrf fails ...
    return np.tril(out).reshape(x.shape)         # ... then the upper triangle is zeroed


def _cholesky_jvp(primals, tangents):
    x, = primals
    t, = tangents
    L = cholesky_p.bind(x)
    if type(t) is Zero:
        return L, Zero.from_primal(L)
    # Murray (arXiv:1602.07527): L_dot = L phi(L^-1 t L^-H), phi = tril with halved diagonal
    tmp = triangular_solve_p.bind(L, t, left_side=False, lower=True, transpose_a=True,
                                  conjugate_a=True, unit_diagonal=False)
    inner = triangular_solve_p.bind(L, tmp, left_side=True, lower=True, transpose_a=False,
                                    conjugate_a=False, unit_diagonal=False)
    a = _aval(x)
    half = E.add(_full(a.shape[-2:], 1, a.dtype), _eye(a.shape[-1], a.dtype))
    phi = E.div(_tril(inner), S.broadcast_in_dim(half, a.shape, (a.ndim - 2, a.ndim - 1)))
    return L, _mm(L, phi)


cholesky_p.def_abstract_eval(_cholesky_abstract)
cholesky_p.def_impl(_cholesky_impl)
ad.jvp_rules[cholesky_p] = _cholesky_jvp
_batch_unary(cholesky_p)


def symmetrize(x):
    """``(x + x^H) / 2`` (integers promote to the default float, as JAX's true division)."""
    x = as_operand(x)
    a = _aval(x)
    if a.dtype.kind in "biu":
        x = _cast(x, dtypes.to_inexact_dtype(a.dtype))
        a = _aval(x)
    return E.div(E.add(x, _H(x)), _full(a.shape, 2, a.dtype))


def cholesky(x, *, symmetrize_input: bool = True):
    """Lower Cholesky factor L of ``x = L L^H`` (NaNs where ``x`` is not positive definite)."""
    x = as_operand(x)
    if symmetrize_input:
        x = symmetrize(x)
    _check_matrix("cholesky", _aval(x), square=True, arg="x")
    return cholesky_p.bind(x)


# ================================================================= triangular_solve

triangular_solve_p = Primitive("triangular_solve")


def _trsolve_abstract(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    _check_matrix("triangular_solve", a, square=True, arg="a")
    _check_matrix("triangular_solve", b, arg="b")
    if a.dtype != b.dtype:
        raise TypeError(f"triangular_solve requires a and b of the same dtype, got "
                        f"{a.str_short()} and {b.str_short()}")
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"triangular_solve requires both arguments to have the same batch "
                         f"dimensions, got a {a.shape} and b {b.shape}")
    k = b.shape[-2] if left_side else b.shape[-1]
    if a.shape[-1] != k:
        side = "b.shape[-2]" if left_side else "b.shape[-1]"
        raise ValueError(f"triangular_solve: a.shape[-1] must equal {side} (left_side="
                         f"{left_side}), got a {a.shape} and b {b.shape}")
    return ShapedArray(b.shape, b.dtype)


def _trsolve_impl(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    a, b = np.asarray(a), np.asarray(b)
    trsm = _blas("trsm", a.dtype)
    if conjugate_a and not transpose_a and a.dtype.kind == "c":
        a = np.conj(a)
    trans = (2 if conjugate_a else 1) if transpose_a else 0

    def one(am, bm):
        if bm.size == 0:
            return (bm.copy(),)
        return (trsm(1.0, am, bm, side=0 if left_side else 1, lower=int(lower), trans_a=trans,
                     diag=int(unit_diagonal)),)
    return _batched(one, [a, b], [(b.shape[-2:], b.dtype)])[0]


def _trsolve_jvp(primals, tangents, **params):
    a, b = primals
    ta, tb = tangents
    ans = triangular_solve_p.bind(a, b, **params)
    acc = None
    if type(tb) is not Zero:
        acc = triangular_solve_p.bind(a, tb, **params)
    if type(ta) is not Zero:
        unit = params["unit_diagonal"]
        g = _tril(ta, -1 if unit else 0) if params["lower"] else _triu(ta, 1 if unit else 0)
        g = E.neg(g)
        if params["transpose_a"]:
            g = _T(g)
        if params["conjugate_a"]:
            g = _conj(g)
        prod = _mm(g, ans) if params["left_side"] else _mm(ans, g)
        t = triangular_solve_p.bind(a, prod, **params)
        acc = t if acc is None else ad.add_tangents(acc, t)
    return ans, acc if acc is not None else Zero.from_primal(ans)


def _trsolve_transpose(ct, a, b, *, transpose_a, **params):
    if ad.is_undefined_primal(a):
        raise ValueError("triangular_solve is not linear in its first argument a; "
                         "differentiate it with jvp/grad instead of transposing")
    if type(ct) is Zero:
        return [None, Zero(b.aval)]
    return [None, triangular_solve_p.bind(a, ct, transpose_a=not transpose_a, **params)]


def _trsolve_batch(axis_data, vals, dims, **params):
    a, b = _move_front(vals, dims, axis_data.size)
    return triangular_solve_p.bind(a, b, **params), 0


triangular_solve_p.def_abstract_eval(_trsolve_abstract)
triangular_solve_p.def_impl(_trsolve_impl)
ad.jvp_rules[triangular_solve_p] = _trsolve_jvp
ad.transpose_rules[triangular_solve_p] = _trsolve_transpose
batching.batch_rules[triangular_solve_p] = _trsolve_batch


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solve ``op(a) x = b`` (left_side) or ``x op(a) = b`` for triangular ``a``."""
    a, b = as_operand(a), as_operand(b)
    aa, ba = _aval(a), _aval(b)
    _check_matrix("triangular_solve", aa, square=True, arg="a")
    if ba.ndim == aa.ndim - 1:   # JAX: a vector b is a single right-hand side
        b = S.reshape(b, ba.shape + (1,) if left_side else ba.shape[:-1] + (1, ba.shape[-1]))
        out = triangular_solve(a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
                               conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
        return S.reshape(out, ba.shape)
    params = dict(left_side=bool(left_side), lower=bool(lower), transpose_a=bool(transpose_a),
                  conjugate_a=bool(conjugate_a), unit_diagonal=bool(unit_diagonal))
    _trsolve_abstract(aa, _aval(b), **params)
    return triangular_solve_p.bind(a, b, **params)


# ================================================================= lu

lu_p = Primitive("lu")
lu_p.multiple_results = True


def _lu_abstract(x):
    _check_matrix("lu", x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    return [ShapedArray(x.shape, x.dtype), ShapedArray(batch + (min(m, n),), np.int32),
            ShapedArray(batch + (m,), np.int32)]


def _pivots_to_perm_np(piv, m):
    perm = np.arange(m, dtype=np.int32)
    for i, j in enumerate(piv):
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def _pivots_to_perm_batched(piv, m):
    """Apply the swaps of every batch member at once (loop over the k pivots only)."""
    batch, k = piv.shape[:-1], piv.shape[-1]
    piv = piv.reshape(-1, k)
    perm = np.broadcast_to(np.arange(m, dtype=np.int32), (piv.shape[0], m)).copy()
    rows = np.arange(piv.shape[0])
    for i in range(k):
        j = piv[:, i]
        pi, pj = perm[:, i].copy(), perm[rows, j]
        perm[:, i] = pj
        perm[rows, j] = pi
    return perm.reshape(batch + (m,))


def _lu_impl(x):
    x = np.asarray(x)
    m, n = x.shape[-2:]
    k = min(m, n)
    batch = x.shape[:-2]
    if x.size == 0:
        return [x.copy(), np.zeros(batch + (k,), np.int32),
                np.broadcast_to(np.arange(m, dtype=np.int32), batch + (m,)).copy()]
    getrf = _lapack("getrf", x.dtype)
    flat = x.reshape((-1, m, n))
    lu = np.empty_like(flat)
    piv = np.empty((flat.shape[0], k), np.int32)
    for i in range(flat.shape[0]):
        lu[i], piv[i], _ = getrf(flat[i])
    piv = piv.reshape(batch + (k,))
    return [lu.reshape(x.shape), piv, _pivots_to_perm_batched(piv, m)]


def _lu_jvp(primals, tangents):
    a, = primals
    a_dot, = tangents
    lu, piv, perm = lu_p.bind(a)
    outs = [lu, piv, perm]
    if type(a_dot) is Zero:
        return outs, [Zero.from_primal(o) for o in outs]
    av = _aval(a)
    batch, (m, n) = av.shape[:-2], av.shape[-2:]
    k = min(m, n)
    dt = av.dtype
    nb = len(batch)
    zero = _full((), 0, dt)
    # L: m x m unit lower (first k columns of lu, padded with identity columns)
    l = S.pad(_tril(_slice_last2(lu, 0, m, 0, k), -1), zero,
              [(0, 0, 0)] * (nb + 1) + [(0, m - k, 0)])
    l = E.add(l, _eye(m, dt, batch))
    u = S.pad(_triu(_slice_last2(lu, 0, k, 0, n)), zero,
              [(0, 0, 0)] * nb + [(0, n - k, 0), (0, 0, 0)])
    if n > k:
        u_eye = S.pad(_eye(n - k, dt, batch), zero,
                      [(0, 0, 0)] * nb + [(k, 0, 0), (k, 0, 0)])
        u = E.add(u, u_eye)
    pa = _mm(_perm_matrix(perm, m, dt), a_dot)
    la = triangular_solve_p.bind(l, pa, left_side=True, lower=True, transpose_a=False,
                                 conjugate_a=False, unit_diagonal=True)
    lau = triangular_solve_p.bind(u, la, left_side=False, lower=False, transpose_a=False,
                                  conjugate_a=False, unit_diagonal=False)
    l_dot = _mm(l, _tril(lau, -1))
    u_dot = _mm(_triu(lau), u)
    lu_dot = E.add(l_dot, u_dot)
    return outs, [lu_dot, Zero.from_primal(piv), Zero.from_primal(perm)]


lu_p.def_abstract_eval(_lu_abstract)
lu_p.def_impl(_lu_impl)
ad.jvp_rules[lu_p] = _lu_jvp
_batch_unary(lu_p)


def lu(x):
    """LU decomposition with partial pivoting: ``(lu, pivots, permutation)``;
    ``x[..., permutation, :] == L @ U`` with L unit lower (below-diagonal part of lu)."""
    x = as_operand(x)
    _lu_abstract(_aval(x))
    return tuple(lu_p.bind(x))


lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")


def _p2p_abstract(pivots, *, permutation_size):
    if pivots.ndim < 1 or pivots.dtype != np.int32:
        raise TypeError(f"lu_pivots_to_permutation: pivots must be an int32 array with at least "
                        f"one dimension, got {pivots.str_short()}")
    if permutation_size < pivots.shape[-1]:
        raise ValueError(f"lu_pivots_to_permutation: permutation_size ({permutation_size}) must "
                         f"be at least pivots.shape[-1] ({pivots.shape[-1]})")
    return ShapedArray(pivots.shape[:-1] + (permutation_size,), np.int32)


def _p2p_impl(pivots, *, permutation_size):
    pivots = np.asarray(pivots)
    out = np.empty(pivots.shape[:-1] + (permutation_size,), np.int32)
    for idx in np.ndindex(*pivots.shape[:-1]):
        out[idx] = _pivots_to_perm_np(pivots[idx], permutation_size)
    return out


lu_pivots_to_permutation_p.def_abstract_eval(_p2p_abstract)
lu_pivots_to_permutation_p.def_impl(_p2p_impl)
defjvp_zero(lu_pivots_to_permutation_p)
_batch_unary(lu_pivots_to_permutation_p)


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation (``x[perm] == L @ U``) encoded by LAPACK-style swap ``pivots``."""
    pivots = as_operand(pivots)
    size = operator.index(permutation_size)
    _p2p_abstract(_aval(pivots), permutation_size=size)
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=size)


# ================================================================= geqrf / householder_product / qr

geqrf_p = Primitive("geqrf")
geqrf_p.missing_rules["jvp"] = (
    "a raw LAPACK factorization; differentiate lax.linalg.qr instead (JAX defines no "
    "derivative for it either)")
geqrf_p.multiple_results = True


def _geqrf_abstract(x):
    _check_matrix("geqrf", x)
    m, n = x.shape[-2:]
    return [ShapedArray(x.shape, x.dtype), ShapedArray(x.shape[:-2] + (min(m, n),), x.dtype)]


def _geqrf_impl(x):
    x = np.asarray(x)
    m, n = x.shape[-2:]
    k = min(m, n)

    def one(a):
        if a.size == 0:
            return a.copy(), np.zeros(k, a.dtype)
        qr, tau, _, _ = _lapack("geqrf", a.dtype)(a)
        return qr, tau
    return _batched(one, [x], [((m, n), x.dtype), ((k,), x.dtype)])


geqrf_p.def_abstract_eval(_geqrf_abstract)
geqrf_p.def_impl(_geqrf_impl)
_batch_unary(geqrf_p)


def geqrf(x):
    """LAPACK geqrf: Householder reflectors below the diagonal and R above, plus taus."""
    x = as_operand(x)
    _geqrf_abstract(_aval(x))
    return tuple(geqrf_p.bind(x))


householder_product_p = Primitive("householder_product")
householder_product_p.missing_rules["jvp"] = (
    "a raw LAPACK kernel; differentiate lax.linalg.qr instead (JAX defines no derivative "
    "for it either)")


def _hh_abstract(a, taus):
    _check_matrix("householder_product", a, arg="a")
    m, n = a.shape[-2:]
    if taus.dtype != a.dtype or taus.shape[:-1] != a.shape[:-2] or taus.shape[-1] > n or m < n:
        raise ValueError(f"householder_product: a must be (..., m, n) with m >= n and taus "
                         f"(..., k) with k <= n of the same batch dims and dtype, got "
                         f"{a.str_short()} and {taus.str_short()}")
    return ShapedArray(a.shape, a.dtype)


def _hh_impl(a, taus):
    a, taus = np.asarray(a), np.asarray(taus)
    name = "ungqr" if a.dtype.kind == "c" else "orgqr"

    def one(am, tm):
        if am.size == 0:
            return (np.eye(*am.shape, dtype=am.dtype),)
        q, _, _ = _lapack(name, am.dtype)(am, tm)
        return (q,)
    return _batched(one, [a, taus], [(a.shape[-2:], a.dtype)])[0]


householder_product_p.def_abstract_eval(_hh_abstract)
householder_product_p.def_impl(_hh_impl)
_batch_nary(householder_product_p)


def householder_product(a, taus):
    """The orthogonal/unitary Q (m x n) from Householder reflectors ``a`` and ``taus``."""
    a, taus = as_operand(a), as_operand(taus)
    _hh_abstract(_aval(a), _aval(taus))
    return householder_product_p.bind(a, taus)


geqp3_p = Primitive("geqp3")
geqp3_p.missing_rules["jvp"] = (
    "a raw LAPACK factorization with pivoting; JAX defines no derivative for it either")
geqp3_p.multiple_results = True


def _geqp3_abstract(x, jpvt):
    _check_matrix("geqp3", x)
    m, n = x.shape[-2:]
    if jpvt.dtype != np.int32 or jpvt.shape != x.shape[:-2] + (n,):
        raise TypeError(f"geqp3: jpvt must be int32 of shape {x.shape[:-2] + (n,)}, got "
                        f"{jpvt.str_short()}")
    return [ShapedArray(x.shape, x.dtype), ShapedArray(jpvt.shape, np.int32),
            ShapedArray(x.shape[:-2] + (min(m, n),), x.dtype)]


def _geqp3_impl(x, jpvt):
    """LAPACK geqp3 (QR with column pivoting); jpvt in/out 1-based as LAPACK's."""
    x, jpvt = np.asarray(x), np.asarray(jpvt)
    m, n = x.shape[-2:]
    k = min(m, n)

    def one(a, jp):
        if a.size == 0:
            return a.copy(), jp.copy(), np.zeros(k, a.dtype)
        qr, jp2, tau, _, _ = _lapack("geqp3", a.dtype)(a)
        return qr, jp2.astype(np.int32), tau     # 1-based, as LAPACK
    return _batched(one, [x, jpvt], [((m, n), x.dtype), ((n,), np.int32), ((k,), x.dtype)])


geqp3_p.def_abstract_eval(_geqp3_abstract)
geqp3_p.def_impl(_geqp3_impl)
_batch_nary(geqp3_p)

qr_p = Primitive("qr")
qr_p.multiple_results = True


def _qr_abstract(x, *, pivoting, full_matrices, use_magma):
    _check_matrix("qr", x)
    m, n = x.shape[-2:]
    k = m if full_matrices else min(m, n)
    batch = x.shape[:-2]
    out = [ShapedArray(batch + (m, k), x.dtype), ShapedArray(batch + (k, n), x.dtype)]
    if pivoting:
        out.append(ShapedArray(batch + (n,), np.int32))
    return out


def _qr_impl(x, *, pivoting, full_matrices, use_magma):
    x = np.asarray(x)
    m, n = x.shape[-2:]
    k = m if full_matrices else min(m, n)
    shapes = [((m, k), x.dtype), ((k, n), x.dtype)] + ([((n,), np.int32)] if pivoting else [])

    def one(a):
        if a.size == 0:
            res = [np.eye(m, k, dtype=a.dtype), np.zeros((k, n), a.dtype)]
            return res + ([np.zeros(n, np.int32)] if pivoting else [])
        import scipy.linalg  # deferred: keeps `import xform` light
        mode = "full" if full_matrices else "economic"
        if pivoting:
            q, r, p = scipy.linalg.qr(a, mode=mode, pivoting=True)
            return q, r, p.astype(np.int32)
        return scipy.linalg.qr(a, mode=mode)
    return _batched(one, [x], shapes)


def _thin_qr_jvp(q, r, dx):
    dx_rinv = triangular_solve_p.bind(r, dx, left_side=False, lower=False, transpose_a=False,
                                      conjugate_a=False, unit_diagonal=False)
    qt_dx_rinv = _mm(_H(q), dx_rinv)
    low = _tril(qt_dx_rinv, -1)
    do = E.sub(low, _H(low))
    a = _aval(do)
    if dtypes.is_complex(a.dtype):
        n = a.shape[-1]
        im = E.sub(qt_dx_rinv, _cast(_real(qt_dx_rinv), a.dtype))
        do = E.add(do, E.mul(_eye(n, a.dtype, a.shape[:-2]), im))
    dq = E.add(_mm(q, E.sub(do, qt_dx_rinv)), dx_rinv)
    dr = _mm(E.sub(qt_dx_rinv, do), r)
    return dq, dr


def _lu_solve_H(a, b):
    """Solve a^H x = b with an LU factorisation (primitive-level helper)."""
    lu_, _, perm = lu_p.bind(a)
    n = _aval(a).shape[-1]
    # a[perm] = L U  =>  a^H = U^H L^H P  =>  x = P^T L^-H U^-H b
    y = triangular_solve_p.bind(lu_, b, left_side=True, lower=False, transpose_a=True,
                                conjugate_a=True, unit_diagonal=False)
    y = triangular_solve_p.bind(lu_, y, left_side=True, lower=True, transpose_a=True,
                                conjugate_a=True, unit_diagonal=True)
    return _mm(_T(_perm_matrix(perm, n, _aval(a).dtype)), y)


def _qr_jvp(primals, tangents, *, pivoting, full_matrices, use_magma):
    x, = primals
    dx, = tangents
    outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
    if type(dx) is Zero:
        return outs, [Zero.from_primal(o) for o in outs]
    q, r = outs[:2]
    av = _aval(x)
    batch, (m, n) = av.shape[:-2], av.shape[-2:]
    dt = av.dtype
    nb = len(batch)
    if pivoting:
        pm = _perm_matrix(outs[2], n, dt)           # P[i, j] = (p[i] == j)
        dx = _mm(dx, _T(pm))                        # dx[..., p]
    if m < n:
        x2 = _slice_last2(x, 0, m, m, n)
        if pivoting:
            x2 = _slice_last2(_mm(x, _T(pm)), 0, m, m, n)
        dx1, dx2 = _slice_last2(dx, 0, m, 0, m), _slice_last2(dx, 0, m, m, n)
        dq, dr1 = _thin_qr_jvp(q, _slice_last2(r, 0, m, 0, m), dx1)
        dr2 = E.add(_mm(_H(dq), x2), _mm(_H(q), dx2))
        dr = S.concatenate([dr1, dr2], nb + 1)
    else:
        q_mn = _slice_last2(q, 0, m, 0, n) if full_matrices else q
        r_nn = _slice_last2(r, 0, n, 0, n) if full_matrices else r
        dq_mn, dr_nn = _thin_qr_jvp(q_mn, r_nn, dx)
        if not full_matrices or m == n:
            dq, dr = dq_mn, dr_nn
        else:
            # full-matrices completion (arXiv:2409.13374, eqs. 32-33)
            q_nn, q_pn = _slice_last2(q_mn, 0, n, 0, n), _slice_last2(q_mn, n, m, 0, n)
            q_mp = _slice_last2(q, 0, m, n, m)
            dq_nn, dq_pn = _slice_last2(dq_mn, 0, n, 0, n), _slice_last2(dq_mn, n, m, 0, n)
            z_pn_H = _lu_solve_H(E.sub(q_nn, _eye(n, dt, batch)), _H(q_pn))
            z_pn = _H(z_pn_H)
            dq_mp = E.sub(_mm(dq_mn, z_pn_H),
                          _mm(E.add(q_mn, _mm(q_mp, z_pn)), _H(E.sub(dq_pn, _mm(z_pn, dq_nn)))))
            dq = S.concatenate([dq_mn, dq_mp], nb + 1)
            dr = S.concatenate([dr_nn, _full(batch + (m - n, n), 0, dt)], nb)
    touts = [dq, dr] + ([Zero.from_primal(outs[2])] if pivoting else [])
    return outs, touts


qr_p.def_abstract_eval(_qr_abstract)
qr_p.def_impl(_qr_impl)
ad.jvp_rules[qr_p] = _qr_jvp
_batch_unary(qr_p)


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """QR decomposition ``x = Q R`` (``x[:, p] = Q R`` with ``pivoting``): returns (q, r[, p])."""
    x = as_operand(x)
    params = dict(pivoting=bool(pivoting), full_matrices=bool(full_matrices), use_magma=None)
    _qr_abstract(_aval(x), **params)
    return tuple(qr_p.bind(x, **params))


# ================================================================= eigh

eigh_p = Primitive("eigh")
eigh_p.multiple_results = True


def _eigh_abstract(x, *, lower, sort_eigenvalues, subset_by_index):
    _check_matrix("eigh", x, square=True)
    n = x.shape[-1]
    d = n
    if subset_by_index is not None:
        lo, hi = subset_by_index
        if not 0 <= lo <= hi <= n:
            raise ValueError(f"eigh: subset_by_index {subset_by_index} must satisfy "
                             f"0 <= start <= end <= n = {n}")
        d = hi - lo
    return [ShapedArray(x.shape[:-1] + (d,), x.dtype),
            ShapedArray(x.shape[:-2] + (d,), real_dtype(x.dtype))]


def _eigh_impl(x, *, lower, sort_eigenvalues, subset_by_index):
    x = np.asarray(x)
    n = x.shape[-1]
    lo, hi = subset_by_index if subset_by_index is not None else (0, n)
    name = "heevd" if x.dtype.kind == "c" else "syevd"
    rdt = real_dtype(x.dtype)

    def one(a):
        if n == 0:
            return a.copy(), np.zeros(0, rdt)
        w, v, info = _lapack(name, a.dtype)(a, compute_v=1, lower=int(lower))
        if info != 0:
            return np.full_like(a, np.nan), np.full(n, np.nan, rdt)
        return v[:, lo:hi], w[lo:hi]
    return _batched(one, [x], [((n, hi - lo), x.dtype), ((hi - lo,), rdt)])


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index):
    a, = primals
    a_dot, = tangents
    n = _aval(a).shape[-1]
    if not (subset_by_index is None or tuple(subset_by_index) == (0, n)):
        raise NotImplementedError("Derivatives not defined for partial eigen decomposition "
                                  "(eigh with subset_by_index); use the full decomposition.")
    v, w_real = eigh_p.bind(a, lower=lower, sort_eigenvalues=sort_eigenvalues,
                            subset_by_index=subset_by_index)
    if type(a_dot) is Zero:
        return [v, w_real], [Zero.from_primal(v), Zero.from_primal(w_real)]
    av = _aval(a)
    dt = av.dtype
    w = _cast(w_real, dt)
    eye = _eye(n, dt, av.shape[:-2])
    # JAX's guarded reciprocal eigen-gap matrix: 1/(eye + w_j - w_i) - eye
    diff = E.sub(_bcast_rows(w, n), _bcast_cols(w, n))
    Fmat = E.sub(E.integer_pow(E.add(eye, diff), -1), eye)
    vdag_adot_v = _mm(_mm(_H(v), a_dot), v)
    dv = _mm(v, E.mul(Fmat, vdag_adot_v))
    dw = _diag_part(_real(vdag_adot_v))
    return [v, w_real], [dv, dw]


def _bcast_rows(w, n):
    """(..., n) -> (..., n, n) with out[..., i, j] = w[..., j]."""
    a = _aval(w)
    return S.broadcast_in_dim(w, a.shape[:-1] + (n, n), tuple(range(a.ndim - 1)) + (a.ndim,))


def _bcast_cols(w, n):
    """(..., n) -> (..., n, n) with out[..., i, j] = w[..., i]."""
    a = _aval(w)
    return S.broadcast_in_dim(w, a.shape[:-1] + (n, n), tuple(range(a.ndim - 1)) + (a.ndim - 1,))


eigh_p.def_abstract_eval(_eigh_abstract)
eigh_p.def_impl(_eigh_impl)
ad.jvp_rules[eigh_p] = _eigh_jvp
_batch_unary(eigh_p)


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True, sort_eigenvalues: bool = True,
         subset_by_index=None, implementation=None):
    """Eigendecomposition of a Hermitian matrix: ``(v, w)`` with ascending ``w``."""
    x = as_operand(x)
    _check_matrix("eigh", _aval(x), square=True, arg="x")
    if symmetrize_input:
        x = symmetrize(x)
    sbi = None if subset_by_index is None else tuple(operator.index(i) for i in subset_by_index)
    params = dict(lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                  subset_by_index=sbi)
    _eigh_abstract(_aval(x), **params)
    v, w = eigh_p.bind(x, **params)
    return v, w


# ================================================================= svd

svd_p = Primitive("svd")
svd_p.multiple_results = True


def _svd_abstract(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    _check_matrix("svd", x)
    m, n = x.shape[-2:]
    k = min(m, n)
    batch = x.shape[:-2]
    if subset_by_index is not None:
        lo, hi = subset_by_index
        if not 0 <= lo <= hi <= k:
            raise ValueError(f"svd: subset_by_index {subset_by_index} must satisfy "
                             f"0 <= start <= end <= min(m, n) = {k}")
        if full_matrices and (lo, hi) != (0, k):
            raise ValueError("svd: full_matrices=True is not supported with a subset_by_index")
        k = hi - lo
    s = ShapedArray(batch + (k,), real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray(batch + (m, ku), x.dtype), ShapedArray(batch + (kv, n), x.dtype)]


def _svd_impl(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    x = np.asarray(x)
    m, n = x.shape[-2:]
    k = min(m, n)
    lo, hi = subset_by_index if subset_by_index is not None else (0, k)
    avals = _svd_abstract(ShapedArray(x.shape, x.dtype), full_matrices=full_matrices, compute_uv=compute_uv,
                          subset_by_index=subset_by_index, algorithm=algorithm)
    shapes = [(a.shape[-2:] if i else a.shape[-1:], a.dtype) for i, a in enumerate(avals)]
    rdt = real_dtype(x.dtype)
    gesvd = algorithm == SvdAlgorithm.QR

    def one(a):
        if a.size == 0:
            s = np.zeros(hi - lo, rdt)
            if not compute_uv:
                return (s,)
            return s, np.eye(*shapes[1][0], dtype=a.dtype), np.eye(*shapes[2][0], dtype=a.dtype)
        fn = _lapack("gesvd" if gesvd else "gesdd", a.dtype)
        u, s, vt, info = fn(a, compute_uv=int(compute_uv), full_matrices=int(full_matrices))
        if info != 0:
            s = np.full_like(s, np.nan)
            u, vt = np.full_like(u, np.nan), np.full_like(vt, np.nan)
        if not compute_uv:
            return (s[lo:hi],)
        if subset_by_index is not None:
            u, vt = u[:, lo:hi], vt[lo:hi, :]
        return s[lo:hi], u, vt
    return _batched(one, [x], shapes)


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, algorithm):
    A, = primals
    dA, = tangents
    outs = svd_p.bind(A, full_matrices=full_matrices, compute_uv=compute_uv,
                      subset_by_index=subset_by_index, algorithm=algorithm)
    if type(dA) is Zero:
        return outs, [Zero.from_primal(o) for o in outs]
    av = _aval(A)
    m, n = av.shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("Singular value decomposition JVP not implemented for full "
                                  "matrices of a non-square input (as in JAX): use "
                                  "full_matrices=False")
    s, U, Vt = svd_p.bind(A, full_matrices=False, compute_uv=True,
                          subset_by_index=subset_by_index, algorithm=algorithm)
    dt = av.dtype
    rdt = real_dtype(dt)
    k = _aval(s).shape[-1]
    batch = av.shape[:-2]
    Ut, V = _H(U), _H(Vt)
    dS = _mm(_mm(Ut, dA), V)
    ds = _diag_part(_real(dS))
    if not compute_uv:
        return outs, [ds]
    s_row, s_col = _bcast_rows(s, k), _bcast_cols(s, k)
    s_diffs = E.mul(E.add(s_row, s_col), E.sub(s_row, s_col))
    eye_r = _eye(k, rdt, batch)
    F = E.sub(E.div(_full(batch + (k, k), 1, rdt), E.add(s_diffs, eye_r)), eye_r)
    Fc = _cast(F, dt)
    dSS = E.mul(_cast(s_row, dt), dS)
    SdS = E.mul(_cast(s_col, dt), dS)
    s_zeros = _cast(E.eq(s, _zeros_like(s)), rdt)
    s_inv = E.sub(E.div(_full(_aval(s).shape, 1, rdt), E.add(s, s_zeros)), s_zeros)
    s_inv_mat = _make_diag(s_inv)
    half = _full(batch + (k, k), 0.5, dt)
    dUdV_diag = E.mul(E.mul(half, E.sub(dS, _H(dS))), _cast(s_inv_mat, dt))
    dU = _mm(U, E.add(E.mul(Fc, E.add(dSS, _H(dSS))), dUdV_diag))
    dV = _mm(V, E.mul(Fc, E.add(SdS, _H(SdS))))
    s_dim = _cast(S.broadcast_in_dim(s, batch + (1, k), tuple(range(len(batch))) + (len(batch) + 1,)), dt)
    if m > n:
        dAV = _mm(dA, V)
        corr = E.sub(dAV, _mm(U, _mm(Ut, dAV)))
        dU = E.add(dU, E.div(corr, S.broadcast_in_dim(s_dim, batch + (m, k),
                                                       tuple(range(len(batch) + 2)))))
    if n > m:
        dAHU = _mm(_H(dA), U)
        corr = E.sub(dAHU, _mm(V, _mm(Vt, dAHU)))
        dV = E.add(dV, E.div(corr, S.broadcast_in_dim(s_dim, batch + (n, k),
                                                       tuple(range(len(batch) + 2)))))
    return outs, [ds, dU, _H(dV)]


svd_p.def_abstract_eval(_svd_abstract)
svd_p.def_impl(_svd_impl)
ad.jvp_rules[svd_p] = _svd_jvp
_batch_unary(svd_p)


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None):
    """Singular value decomposition: ``(u, s, vh)`` with descending ``s`` (``s`` only when
    ``compute_uv=False``)."""
    x = as_operand(x)
    sbi = None if subset_by_index is None else tuple(operator.index(i) for i in subset_by_index)
    alg = None if algorithm is None else str(getattr(algorithm, "value", algorithm))
    if alg is not None and alg not in ("default", "QR", "Jacobi", "polar"):
        alg = {"SvdAlgorithm.QR": "QR"}.get(alg, alg)
    if alg in ("Jacobi", "polar"):
        raise ValueError(f"svd: algorithm {alg!r} is only available on GPU/TPU in JAX; on CPU "
                         "use the default (LAPACK gesdd) or SvdAlgorithm.QR (gesvd)")
    params = dict(full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                  subset_by_index=sbi, algorithm=alg)
    _svd_abstract(_aval(x), **params)
    outs = svd_p.bind(x, **params)
    if not compute_uv:
        return outs[0]
    s, u, vt = outs
    return u, s, vt


# ================================================================= eig (CPU)

eig_p = Primitive("eig")
eig_p.multiple_results = True


def _eig_abstract(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
                  enable_eigvec_derivs=False):
    _check_matrix("eig", x, square=True)
    cdt = complex_dtype(x.dtype)
    out = [ShapedArray(x.shape[:-1], cdt)]
    if compute_left_eigenvectors:
        out.append(ShapedArray(x.shape, cdt))
    if compute_right_eigenvectors:
        out.append(ShapedArray(x.shape, cdt))
    return out


def _unpack_real_eigvecs(wi, v):
    """LAPACK's packed real eigenvectors (re, im in adjacent columns) -> complex."""
    out = v.astype(complex_dtype(v.dtype))
    j = 0
    n = v.shape[-1]
    while j < n:
        if wi[j] != 0 and j + 1 < n:
            re, im = v[:, j], v[:, j + 1]
            out[:, j] = re + 1j * im
            out[:, j + 1] = re - 1j * im
            j += 2
        else:
            j += 1
    return out


def _eig_impl(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
              enable_eigvec_derivs=False):
    x = np.asarray(x)
    n = x.shape[-1]
    cdt = complex_dtype(x.dtype)
    shapes = [((n,), cdt)] + [((n, n), cdt)] * (compute_left_eigenvectors +
                                                compute_right_eigenvectors)

    def one(a):
        if n == 0:
            return [np.zeros(s, d) for s, d in shapes]
        fn = _lapack("geev", a.dtype)
        cl, cr = int(compute_left_eigenvectors), int(compute_right_eigenvectors)
        if a.dtype.kind == "c":
            w, vl, vr, info = fn(a, compute_vl=cl, compute_vr=cr)
        else:
            wr, wi, vl, vr, info = fn(a, compute_vl=cl, compute_vr=cr)
            w = wr + 1j * wi
            vl, vr = _unpack_real_eigvecs(wi, vl), _unpack_real_eigvecs(wi, vr)
        res = [w.astype(cdt)]
        if cl:
            res.append(vl.astype(cdt))
        if cr:
            res.append(vr.astype(cdt))
        if info != 0:
            res = [np.full_like(r, np.nan) for r in res]
        return res
    return _batched(one, [x], shapes)


def _lu_solve_prim(a, b):
    """Solve a x = b (square a, matching batch dims) with an LU factorisation."""
    lu_, _, perm = lu_p.bind(a)
    n = _aval(a).shape[-1]
    pb = _mm(_perm_matrix(perm, n, _aval(a).dtype), b)
    y = triangular_solve_p.bind(lu_, pb, left_side=True, lower=True, transpose_a=False,
                                conjugate_a=False, unit_diagonal=True)
    return triangular_solve_p.bind(lu_, y, left_side=True, lower=False, transpose_a=False,
                                   conjugate_a=False, unit_diagonal=False)


def _eig_vec_jvp(w, v, da):
    """Eigenvector tangents by nondegenerate perturbation theory, normalised as LAPACK's geev
    (unit 2-norm, real largest-magnitude component) -- JAX's formula."""
    av = _aval(v)
    n = av.shape[-1]
    nb = av.ndim - 2
    dt = av.dtype
    eye = _eye(n, dt, av.shape[:-2])
    Fmat = E.sub(E.integer_pow(E.add(eye, E.sub(_bcast_rows(w, n), _bcast_cols(w, n))), -1),
                 eye)
    P = _mm(_lu_solve_prim(v, da), v)
    dw = _diag_part(P)
    U = _mm(v, E.mul(Fmat, P))
    k = R.argmax(E.abs(v), nb, np.int32)                       # (..., n): row per column
    rows = S.broadcasted_iota(np.int32, av.shape, nb)
    mask = _cast(E.eq(rows, S.broadcast_in_dim(k, av.shape, tuple(range(nb)) + (nb + 1,))), dt)
    re = E.neg(R.reduce_sum(_real(E.mul(_conj(v), U)), (nb,)))
    im = E.neg(E.div(R.reduce_sum(E.imag(E.mul(mask, U)), (nb,)),
                     R.reduce_sum(_real(E.mul(mask, v)), (nb,))))
    c = E.complex(re, im)
    dv = E.add(U, E.mul(v, S.broadcast_in_dim(c, av.shape, tuple(range(nb)) + (nb + 1,))))
    return dw, dv


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs=False):
    a, = primals
    da, = tangents
    vecs = compute_left_eigenvectors or compute_right_eigenvectors
    if vecs and not enable_eigvec_derivs:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the "
            "input that cannot be checked (distinct eigenvalues); pass "
            "enable_eigvec_derivs=True to xform.lax.linalg.eig to opt in, or differentiate "
            "eigenvalues only (jnp.linalg.eigvals), or use eigh for Hermitian matrices.")
    outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors,
                      compute_right_eigenvectors=True,
                      enable_eigvec_derivs=enable_eigvec_derivs)
    w, vr = outs[0], outs[-1]
    primal = [w] + ([outs[1]] if compute_left_eigenvectors else []) + \
        ([vr] if compute_right_eigenvectors else [])
    if type(da) is Zero:
        return primal, [Zero.from_primal(o) for o in primal]
    dac = _cast(da, _aval(vr).dtype)
    if not vecs:
        return primal, [_diag_part(_mm(_lu_solve_prim(vr, dac), vr))]
    dw, dvr = _eig_vec_jvp(w, vr, dac)
    touts = [dw]
    if compute_left_eigenvectors:
        _, dvl = _eig_vec_jvp(_conj(w), outs[1], _H(dac))
        touts.append(dvl)
    if compute_right_eigenvectors:
        touts.append(dvr)
    return primal, touts


eig_p.def_abstract_eval(_eig_abstract)
eig_p.def_impl(_eig_impl)
ad.jvp_rules[eig_p] = _eig_jvp
_batch_unary(eig_p)


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
    """Eigendecomposition of a general square matrix (CPU, LAPACK geev): ``[w, vl, vr]``."""
    x = as_operand(x)
    params = dict(compute_left_eigenvectors=bool(compute_left_eigenvectors),
                  compute_right_eigenvectors=bool(compute_right_eigenvectors),
                  enable_eigvec_derivs=bool(enable_eigvec_derivs))
    _eig_abstract(_aval(x), **params)
    return list(eig_p.bind(x, **params))


# ================================================================= schur (CPU)

schur_p = Primitive("schur")
schur_p.missing_rules["jvp"] = "JAX defines no derivative for it either"
schur_p.multiple_results = True


def _schur_abstract(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    _check_matrix("schur", x, square=True)
    out = [ShapedArray(x.shape, x.dtype)]
    if compute_schur_vectors:
        out.append(ShapedArray(x.shape, x.dtype))
    return out


def _schur_impl(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    x = np.asarray(x)
    n = x.shape[-1]
    shapes = [((n, n), x.dtype)] * (1 + compute_schur_vectors)

    def one(a):
        if n == 0:
            return [a.copy() for _ in shapes]
        fn = _lapack("gees", a.dtype)
        res = fn(lambda *args: None, a, compute_v=int(compute_schur_vectors), sort_t=0)
        t, vs, info = res[0], res[-3], res[-1]
        out = [t, vs][:len(shapes)]
        if info != 0:
            out = [np.full_like(o, np.nan) for o in out]
        return out
    return _batched(one, [x], shapes)


schur_p.def_abstract_eval(_schur_abstract)
schur_p.def_impl(_schur_impl)
_batch_unary(schur_p)


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
    """Schur form ``x = Z T Z^H`` (real Schur form for real input): ``(T, Z)`` (CPU)."""
    x = as_operand(x)
    if sort_eig_vals or select_callable is not None:
        raise NotImplementedError("schur: sorting eigenvalues (sort_eig_vals/select_callable) "
                                  "is not supported, as in JAX's CPU lowering")
    params = dict(compute_schur_vectors=bool(compute_schur_vectors), sort_eig_vals=False,
                  select_callable=None)
    _schur_abstract(_aval(x), **params)
    out = schur_p.bind(x, **params)
    return tuple(out) if compute_schur_vectors else (out[0], None)


# ================================================================= hessenberg / tridiagonal (CPU)

hessenberg_p = Primitive("hessenberg")
hessenberg_p.missing_rules["jvp"] = "JAX defines no derivative for it either"
hessenberg_p.multiple_results = True


def _hess_abstract(x):
    _check_matrix("hessenberg", x, square=True)
    n = x.shape[-1]
    return [ShapedArray(x.shape, x.dtype), ShapedArray(x.shape[:-2] + (max(n - 1, 0),), x.dtype)]


def _hess_impl(x):
    x = np.asarray(x)
    n = x.shape[-1]

    def one(a):
        if n <= 1:
            return a.copy(), np.zeros(max(n - 1, 0), a.dtype)
        h, tau, info = _lapack("gehrd", a.dtype)(a)
        return h, tau[:n - 1]
    return _batched(one, [x], [((n, n), x.dtype), ((max(n - 1, 0),), x.dtype)])


hessenberg_p.def_abstract_eval(_hess_abstract)
hessenberg_p.def_impl(_hess_impl)
_batch_unary(hessenberg_p)


def hessenberg(a):
    """Hessenberg reduction (LAPACK gehrd): ``(a, taus)``: H in the upper Hessenberg part,
    Householder reflectors below it."""
    x = as_operand(a)
    _hess_abstract(_aval(x))
    return tuple(hessenberg_p.bind(x))


tridiagonal_p = Primitive("tridiagonal")
tridiagonal_p.missing_rules["jvp"] = "JAX defines no derivative for it either"
tridiagonal_p.multiple_results = True


def _tridiag_abstract(x, *, lower):
    _check_matrix("tridiagonal", x, square=True)
    n = x.shape[-1]
    b = x.shape[:-2]
    r = real_dtype(x.dtype)
    k = max(n - 1, 0)
    return [ShapedArray(x.shape, x.dtype), ShapedArray(b + (n,), r), ShapedArray(b + (k,), r),
            ShapedArray(b + (k,), x.dtype)]


def _tridiag_impl(x, *, lower):
    x = np.asarray(x)
    n = x.shape[-1]
    r = real_dtype(x.dtype)
    k = max(n - 1, 0)

    def one(a):
        if n == 0:
            return a.copy(), np.zeros(0, r), np.zeros(0, r), np.zeros(0, a.dtype)
        c, d, e, tau, info = _lapack("hetrd" if a.dtype.kind == "c" else "sytrd", a.dtype)(
            a, lower=int(lower))
        return c, d, e[:k], tau[:k]
    return _batched(one, [x], [((n, n), x.dtype), ((n,), r), ((k,), r), ((k,), x.dtype)])


tridiagonal_p.def_abstract_eval(_tridiag_abstract)
tridiagonal_p.def_impl(_tridiag_impl)
_batch_unary(tridiagonal_p)


def tridiagonal(a, *, lower: bool = True):
    """Reduce a Hermitian matrix to tridiagonal form (LAPACK sytrd/hetrd):
    ``(a, d, e, taus)``."""
    a = as_operand(a)
    _tridiag_abstract(_aval(a), lower=bool(lower))
    return tuple(tridiagonal_p.bind(a, lower=bool(lower)))


# ================================================================= tridiagonal_solve

tridiagonal_solve_p = Primitive("tridiagonal_solve")


def _tds_abstract(dl, d, du, b, *, perturb_singular):
    for nm, v in (("dl", dl), ("d", d), ("du", du)):
        if v.ndim < 1 or v.shape != d.shape or v.dtype != b.dtype:
            raise ValueError(f"tridiagonal_solve: dl, d and du must have the same shape and the "
                             f"dtype of b, got dl {dl.str_short()}, d {d.str_short()}, du "
                             f"{du.str_short()}, b {b.str_short()}")
    _check_matrix("tridiagonal_solve", b, arg="b")
    if b.shape[:-1] != d.shape:
        raise ValueError(f"tridiagonal_solve: b must have shape d.shape + (k,) = {d.shape} + "
                         f"(k,), got {b.shape}")
    return ShapedArray(b.shape, b.dtype)


def _tds_impl(dl, d, du, b, *, perturb_singular):
    dl, d, du, b = (np.asarray(v) for v in (dl, d, du, b))
    m = d.shape[-1]
    if perturb_singular:
        return _tds_loop(lambda *a: (_solve_perturbed(*a),), dl, d, du, b)

    def one(l_, d_, u_, b_):
        if b_.size == 0:
            return (b_.copy(),)
        if m == 1:   # SciPy's wrapper rejects empty off-diagonals; gtsv: x = b / d
            return ((b_ / d_[0]).astype(b_.dtype) if d_[0] != 0 else np.full_like(b_, np.nan),)
        *_, x, info = _lapack("gtsv", b_.dtype)(l_[1:], d_, u_[:-1], b_)
        if info != 0:
            x = np.full_like(b_, np.nan)
        return (x,)
    return _tds_loop(one, dl, d, du, b)


def _perturb_pivot(perturb, pivot, row, real):
    """Grow a tiny pivot (jaxlib's perturbed tridiagonal kernel): add ``perturb`` (doubling
    it each time) while the pivot is too small for ``row / pivot`` to stay finite, or scale
    pivot and row up when the pivot is subnormal-tiny but safe.  Returns (pivot, row)."""
    fi = np.finfo(real)
    tiny, small = fi.tiny, real(1) / fi.max
    safemin = tiny if small < tiny else small * (real(1) + fi.eps)
    bignum = real(1) / safemin
    one = real(1)
    abs_p = np.abs(pivot)
    if abs_p >= one:
        return pivot, row
    perturb = np.copysign(max(np.abs(perturb), safemin), np.real(pivot)).astype(real)
    max_factor = np.abs(row).max() if row.size else real(0)
    while abs_p < one:
        if abs_p < safemin:
            if abs_p == 0 or max_factor * safemin > abs_p:
                pivot, perturb = pivot + perturb, perturb * real(2)
            else:
                return pivot * bignum, row * bignum
        elif max_factor > abs_p * bignum:
            pivot, perturb = pivot + perturb, perturb * real(2)
        else:
            break
        abs_p = np.abs(pivot)
    return pivot, row


def _solve_perturbed(dl, d, du, b):
    """Gaussian elimination with partial pivoting on a tridiagonal system whose near-zero
    pivots are perturbed (by multiples of eps * max|U|) instead of failing: finite
    solutions for singular systems, as ``tridiagonal_solve(perturb_singular=True)`` gives."""
    n, dt = d.shape[0], b.dtype
    real = np.dtype(np.finfo(dt).dtype).type
    x = b.astype(dt, copy=True)
    if n == 0:
        return x
    if n == 1:
        p, row = _perturb_pivot(real(np.finfo(real).eps) * np.abs(d[0]), d[0], x[0], real)
        x[0] = row / p
        return x
    u = np.zeros((n, 3), dt)
    u[0, 0], u[0, 1] = d[0], du[0]
    max_u = max(np.abs(u[0, 0]), np.abs(u[0, 1]))
    scale1 = np.abs(u[0, 0]) + np.abs(u[0, 1])
    for k in range(n - 1):
        u[k + 1, 0] = d[k + 1]
        scale2 = np.abs(dl[k + 1]) + np.abs(u[k + 1, 0])
        if k < n - 2:
            scale2 = scale2 + np.abs(du[k + 1])
        if dl[k + 1] == 0:
            scale1 = scale2
            u[k + 1, 1], u[k, 2] = du[k + 1], 0
            x[k + 1] = b[k + 1]
        else:
            piv1 = real(0) if u[k, 0] == 0 else np.abs(u[k, 0]) / scale1
            piv2 = np.abs(dl[k + 1]) / scale2
            if piv2 <= piv1:             # no row exchange
                scale1 = scale2
                factor = dl[k + 1] / u[k, 0]
                u[k + 1, 0] -= factor * u[k, 1]
                u[k + 1, 1], u[k, 2] = du[k + 1], 0
                x[k + 1] = b[k + 1] - factor * x[k]
            else:                         # exchange rows k and k + 1
                factor = u[k, 0] / dl[k + 1]
                utmp = u[k, 1]
                u[k, 0] = dl[k + 1]
                u[k + 1, 0] = utmp - factor * d[k + 1]
                u[k, 1] = d[k + 1]
                if k < n - 2:
                    u[k, 2] = du[k + 1]
                    u[k + 1, 1] = -factor * du[k + 1]
                x[k + 1] = x[k] - factor * b[k + 1]
                x[k] = b[k + 1]
                scale1 = np.abs(u[k + 1, 0]) + np.abs(u[k + 1, 1])
        if k < n - 2:
            max_u = max(max_u, *np.abs(u[k]))
    max_u = max(max_u, np.abs(u[n - 1, 0]))
    perturb = real(np.finfo(real).eps) * max_u
    for k in range(n - 1, -1, -1):      # back substitution
        row = x[k].copy()
        if k <= n - 2:
            row = row - u[k, 1] * x[k + 1]
        if k <= n - 3:
            row = row - u[k, 2] * x[k + 2]
        p = u[k, 0]
        pert = perturb if k == n - 1 else np.copysign(perturb, np.real(p))
        p, row = _perturb_pivot(pert, p, row, real)
        x[k] = row * (dt.type(1) / p)
    return x


def _tds_loop(one, dl, d, du, b):
    out = np.empty(b.shape, b.dtype)
    for idx in np.ndindex(*b.shape[:-2]):
        out[idx] = one(dl[idx], d[idx], du[idx], b[idx])[0]
    return out


def _tridiag_matmul(dl, d, du, x):
    """T @ x for the tridiagonal T (dl[0] and du[-1] ignored)."""
    a = _aval(x)
    m = a.shape[-2]
    nb = a.ndim - 2
    col = lambda v: S.broadcast_in_dim(v, a.shape, tuple(range(nb + 1)))  # noqa: E731
    y = E.mul(col(d), x)
    if m > 1:
        zero = _full((), 0, a.dtype)
        pad_lo = [(0, 0, 0)] * nb + [(1, 0, 0), (0, 0, 0)]
        pad_hi = [(0, 0, 0)] * nb + [(0, 1, 0), (0, 0, 0)]
        x_prev = S.pad(S.slice(x, (0,) * a.ndim, a.shape[:-2] + (m - 1, a.shape[-1])), zero,
                       pad_lo)
        x_next = S.pad(S.slice(x, (0,) * nb + (1, 0), a.shape), zero, pad_hi)
        y = E.add(y, E.add(E.mul(col(dl), x_prev), E.mul(col(du), x_next)))
    return y


def _tds_jvp(primals, tangents, *, perturb_singular):
    dl, d, du, b = primals
    tdl, td, tdu, tb = tangents
    ans = tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular)
    rhs = None
    if type(tb) is not Zero:
        rhs = tb
    if not all(type(t) is Zero for t in (tdl, td, tdu)):
        z = lambda t, p: _zeros_like(p) if type(t) is Zero else t  # noqa: E731
        prod = _tridiag_matmul(z(tdl, dl), z(td, d), z(tdu, du), ans)
        rhs = E.neg(prod) if rhs is None else E.sub(rhs, prod)
    if rhs is None:
        return ans, Zero.from_primal(ans)
    return ans, tridiagonal_solve_p.bind(dl, d, du, rhs, perturb_singular=perturb_singular)


def _tds_transpose(ct, dl, d, du, b, *, perturb_singular):
    if any(ad.is_undefined_primal(v) for v in (dl, d, du)):
        raise ValueError("tridiagonal_solve is linear only in b; transpose with respect to b")
    if type(ct) is Zero:
        return [None, None, None, Zero(b.aval)]
    a = _aval(d)
    nb = a.ndim - 1
    m = a.shape[-1]
    zero = _full((), 0, a.dtype)
    if m > 1:
        dl_t = S.pad(S.slice(du, (0,) * a.ndim, a.shape[:-1] + (m - 1,)), zero,
                     [(0, 0, 0)] * nb + [(1, 0, 0)])
        du_t = S.pad(S.slice(dl, (0,) * nb + (1,), a.shape), zero,
                     [(0, 0, 0)] * nb + [(0, 1, 0)])
    else:
        dl_t, du_t = dl, du
    return [None, None, None, tridiagonal_solve_p.bind(dl_t, d, du_t, ct,
                                                       perturb_singular=perturb_singular)]


tridiagonal_solve_p.def_abstract_eval(_tds_abstract)
tridiagonal_solve_p.def_impl(_tds_impl)
ad.jvp_rules[tridiagonal_solve_p] = _tds_jvp
ad.transpose_rules[tridiagonal_solve_p] = _tds_transpose
_batch_nary(tridiagonal_solve_p)


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """Solve the tridiagonal system T x = b (LAPACK gtsv); ``dl[..., 0]`` and ``du[..., -1]``
    must be zero (they are ignored)."""
    dl, d, du, b = (as_operand(v) for v in (dl, d, du, b))
    perturb_singular = bool(perturb_singular)
    _tds_abstract(*(_aval(v) for v in (dl, d, du, b)), perturb_singular=perturb_singular)
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular)


# ================================================================= composites JAX's lax.linalg exposes


def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1., beta: float = 0.,
                      symmetrize_output: bool = False):
    """``alpha * A A^T + beta * C`` (the lower triangle mirrored when symmetrize_output)."""
    a, c = as_operand(a_matrix), as_operand(c_matrix)
    aa, ca = _aval(a), _aval(c)
    if aa.ndim < 2 or ca.shape != aa.shape[:-1] + (aa.shape[-2],):
        raise ValueError(f"symmetric_product: a_matrix [..., n, k] and c_matrix [..., n, n] "
                         f"expected, got {aa.shape} and {ca.shape}")
    if aa.dtype != ca.dtype:
        raise TypeError(f"symmetric_product: dtypes must match, got {aa.dtype} and {ca.dtype}")
    out = E.add(E.mul(_full(ca.shape, alpha, ca.dtype), _mm(a, _T(a))),
                E.mul(_full(ca.shape, beta, ca.dtype), c))
    if symmetrize_output:
        out = E.add(_tril(out), _T(_tril(out, -1)))
    return out


def cholesky_update(r_matrix, w_vector):
    """Upper Cholesky factor of ``R^T R + w w^T`` from the upper factor ``R``."""
    r, w = as_operand(r_matrix), as_operand(w_vector)
    ra, wa = _aval(r), _aval(w)
    if ra.ndim != 2 or ra.shape[0] != ra.shape[1] or wa.shape != (ra.shape[1],):
        raise ValueError("Rank-1 update to Cholesky decomposition takes a square matrix and a "
                         f"vector of the same size as input. Got shapes {ra.shape} and "
                         f"{wa.shape} instead")
    n = ra.shape[0]
    ww = _mm(S.reshape(w, (n, 1)), S.reshape(w, (1, n)))
    return _H(cholesky_p.bind(E.add(_mm(_H(r), r), ww)))


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
    """``Q C``, ``Q^H C``, ``C Q`` or ``C Q^H`` for Q given by Householder reflectors."""
    a, taus, c = as_operand(a), as_operand(taus), as_operand(c)
    aa, ca = _aval(a), _aval(c)
    if aa.ndim < 2 or ca.ndim < 2 or _aval(taus).ndim < 1:
        raise ValueError(f"ormqr: a [..., m, n], taus [..., k] and c [..., rows, cols] expected, "
                         f"got {aa.shape}, {_aval(taus).shape} and {ca.shape}")
    m = aa.shape[-2]
    k = _aval(taus).shape[-1]
    if (ca.shape[-2] if left else ca.shape[-1]) != m:
        raise ValueError(f"ormqr: c of shape {ca.shape} does not match reflectors of shape "
                         f"{aa.shape} (left={left})")
    nb = aa.ndim - 2
    refl = _slice_last2(a, 0, m, 0, min(k, aa.shape[-1]))
    width = _aval(refl).shape[-1]
    if width < m:
        refl = S.pad(refl, _full((), 0, aa.dtype), [(0, 0, 0)] * (nb + 1) + [(0, m - width, 0)])
    q = householder_product_p.bind(refl, taus)
    if transpose:
        q = _H(q)
    return _mm(q, c) if left else _mm(c, q)


__all__ += ["symmetric_product", "cholesky_update", "ormqr"]

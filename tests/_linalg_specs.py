"""Verifier specs of the linear-algebra primitives (``primitives/linalg_decomp.py``).

Registered into ``test_verifier.SPECS`` by ``register_linalg_specs`` so the
shared verifier compiles each primitive with XLA (the LAPACK FFI custom calls)
and compares it with the NumPy/LAPACK reference.  Inputs are well conditioned
(SPD matrices for cholesky/eigh, diagonally dominant triangles for solves) so
both sides run the same LAPACK routine on the same data; the outputs are then
equal to rounding, including eigenvector signs.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

LAPACK_DTYPES = [np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)]


def _rng(data):
    return np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))


def _mat(rng, shape, dt):
    x = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def _spd(rng, batch, n, dt):
    a = _mat(rng, batch + (n, n), dt)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dt)


def _draw(data, max_batch=1, min_side=1, max_side=4):
    dt = data.draw(st.sampled_from(LAPACK_DTYPES), label="dtype")
    nb = data.draw(st.integers(0, max_batch), label="nbatch")
    batch = tuple(data.draw(st.integers(1, 2)) for _ in range(nb))
    n = data.draw(st.integers(min_side, max_side), label="n")
    m = data.draw(st.integers(min_side, max_side), label="m")
    return dt, batch, n, m, _rng(data)


def register_linalg_specs(spec):
    @spec("cholesky", tol=8)
    def _cholesky(data, name):
        dt, batch, n, _, rng = _draw(data)
        return {}, [_spd(rng, batch, n, dt)]

    @spec("triangular_solve", tol=16)
    def _trsolve(data, name):
        dt, batch, n, m, rng = _draw(data)
        p = {k: data.draw(st.booleans(), label=k) for k in
             ("left_side", "lower", "transpose_a", "conjugate_a", "unit_diagonal")}
        a = _mat(rng, batch + (n, n), dt) + (2 * n * np.eye(n)).astype(dt)
        b = _mat(rng, batch + ((n, m) if p["left_side"] else (m, n)), dt)
        return p, [a, b]

    @spec("lu", tol=16)
    def _lu(data, name):
        dt, batch, n, m, rng = _draw(data)
        return {}, [_mat(rng, batch + (m, n), dt)]

    @spec("lu_pivots_to_permutation", exact=True)
    def _p2p(data, name):
        k = data.draw(st.integers(1, 4))
        size = k + data.draw(st.integers(0, 2))
        rng = _rng(data)
        piv = np.array([rng.integers(i, size) for i in range(k)], np.int32)
        return {"permutation_size": size}, [piv]

    @spec("geqrf householder_product geqp3", tol=16)
    def _geqrf(data, name):
        dt, batch, n, m, rng = _draw(data)
        m, n = max(m, n), min(m, n)
        x = _mat(rng, batch + (m, n), dt)
        if name == "householder_product":
            from xform._src.primitives.linalg_decomp import _geqrf_impl
            return {}, list(_geqrf_impl(x))
        if name == "geqp3":
            return {}, [x, np.zeros(batch + (n,), np.int32)]
        return {}, [x]

    @spec("qr", tol=16)
    def _qr(data, name):
        dt, batch, n, m, rng = _draw(data)
        return {"pivoting": data.draw(st.booleans()), "full_matrices": data.draw(st.booleans()),
                "use_magma": None}, [_mat(rng, batch + (m, n), dt)]

    @spec("eigh", tol=64)
    def _eigh(data, name):
        dt, batch, n, _, rng = _draw(data)
        return {"lower": data.draw(st.booleans()), "sort_eigenvalues": True,
                "subset_by_index": None}, [_spd(rng, batch, n, dt)]

    @spec("svd", tol=64)
    def _svd(data, name):
        dt, batch, n, m, rng = _draw(data)
        return {"full_matrices": data.draw(st.booleans()), "compute_uv": data.draw(st.booleans()),
                "subset_by_index": None, "algorithm": data.draw(st.sampled_from([None, "QR"]))}, \
            [_mat(rng, batch + (m, n), dt)]

    @spec("eig", tol=256)
    def _eig(data, name):
        dt, batch, n, _, rng = _draw(data)
        return {"compute_left_eigenvectors": data.draw(st.booleans()),
                "compute_right_eigenvectors": data.draw(st.booleans()),
                "enable_eigvec_derivs": False}, \
            [_mat(rng, batch + (n, n), dt)]

    @spec("schur", tol=256)
    def _schur(data, name):
        dt, batch, n, _, rng = _draw(data)
        return {"compute_schur_vectors": data.draw(st.booleans()), "sort_eig_vals": False,
                "select_callable": None}, [_mat(rng, batch + (n, n), dt)]

    @spec("hessenberg", tol=16)
    def _hess(data, name):
        dt, batch, n, _, rng = _draw(data)
        return {}, [_mat(rng, batch + (n, n), dt)]

    @spec("tridiagonal", tol=16)
    def _tridiag(data, name):
        dt, batch, n, _, rng = _draw(data)
        return {"lower": data.draw(st.booleans())}, [_spd(rng, batch, n, dt)]

    @spec("tridiagonal_solve", tol=16)
    def _tds(data, name):
        dt, batch, n, m, rng = _draw(data)
        dl, du = _mat(rng, batch + (n,), dt), _mat(rng, batch + (n,), dt)
        d = _mat(rng, batch + (n,), dt) + (4 * np.ones(n)).astype(dt)
        dl[..., 0] = 0
        du[..., -1] = 0
        return {"perturb_singular": False}, [dl, d, du, _mat(rng, batch + (n, m), dt)]

    @spec("custom_linear_solve", tol=64)
    def _cls(data, name):
        from xform._src.interpreters import staging
        from xform._src.interpreters.core import Array, ShapedArray
        import xform.numpy as xnp
        from xform.lax import custom_linear_solve
        dt = data.draw(st.sampled_from([np.dtype(np.float32), np.dtype(np.complex64)]))
        n, k = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 3))
        rng = _rng(data)
        a = Array(_mat(rng, (n, n), dt) + (2 * n * np.eye(n)).astype(dt))

        def f(b):
            return [custom_linear_solve(lambda x: xnp.matmul(a, x), b,
                                        solve=lambda _, y: xnp.linalg.solve(a, y),
                                        transpose_solve=lambda _, y: xnp.linalg.solve(a.T, y))]
        jaxpr, consts = staging.trace_to_jaxpr(f, [ShapedArray((n, k), dt)])
        eqn, = [e for e in jaxpr.eqns if e.primitive.name == "custom_linear_solve"]
        env = dict(zip(jaxpr.constvars, consts))
        args = [np.asarray(env[v]._value if hasattr(env[v], "_value") else env[v])
                if v in env else None for v in eqn.invars[:-1]]
        return dict(eqn.params), args + [_mat(rng, (n, k), dt)]

"""``xform.lax.linalg``: matrix decompositions and solves (JAX's ``jax.lax.linalg``)."""
from primitives.linalg_decomp import (  # noqa: F401
    EigImplementation, EighImplementation, SvdAlgorithm, cholesky, cholesky_p, eig, eig_p, eigh,
    eigh_p, hessenberg, hessenberg_p, householder_product, householder_product_p, lu, lu_p,
    lu_pivots_to_permutation, lu_pivots_to_permutation_p, qr, qr_p, schur, schur_p, svd, svd_p,
    symmetrize, triangular_solve, triangular_solve_p, tridiagonal, tridiagonal_p,
    tridiagonal_solve, tridiagonal_solve_p)

__all__ = ["EigImplementation", "EighImplementation", "SvdAlgorithm", "cholesky", "cholesky_p",
           "eig", "eig_p", "eigh", "eigh_p", "hessenberg", "hessenberg_p", "householder_product",
           "householder_product_p", "lu", "lu_p", "lu_pivots_to_permutation",
           "lu_pivots_to_permutation_p", "qr", "qr_p", "schur", "schur_p", "svd", "svd_p",
           "symmetrize", "triangular_solve", "triangular_solve_p", "tridiagonal", "tridiagonal_p",
           "tridiagonal_solve", "tridiagonal_solve_p"]

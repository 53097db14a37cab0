"""``xform.experimental.sparse``: JAX 0.10.2's BCOO sparse arrays.

``BCOO`` (batched coordinate format) with ``fromdense``/``todense``, ``from_scipy_sparse``,
``transpose``/``.T``, ``sum``, ``sum_duplicates``, ``sort_indices``, ``reshape`` (no
batch/dense dimensions), ``astype``, ``@`` with a dense operand on either side,
elementwise ``*``/``/`` with scalars and dense arrays, ``*`` and ``+`` between BCOO
arrays, ``-x``, ``abs``; and the functions ``bcoo_fromdense``, ``bcoo_todense``,
``bcoo_extract``, ``bcoo_dot_general``, ``bcoo_transpose``, ``bcoo_reduce_sum``,
``bcoo_multiply_dense``, ``bcoo_multiply_sparse``, ``bcoo_sort_indices``,
``bcoo_sum_duplicates``, ``bcoo_reshape``, ``todense``, ``empty``, ``eye``; and
``sparsify`` (a function written for dense arrays, run on BCOO arguments; the primitives
it has sparse rules for are listed in ``transform.py``).

The operations are built from xform's differentiable, batchable operations, so ``jit``,
``grad`` (with respect to ``data`` and dense operands), ``vmap`` (which maps a BCOO along
a batch dimension and returns batched BCOO outputs) and their compositions work.  Not
provided: BCSR/COO/CSR, sparse-sparse ``dot_general``, the sparse
``grad``/``jacfwd`` wrappers, ``bcoo_update_layout``, slicing and indexing of BCOO
arrays (see docs/compatibility.md).
"""
from xform.experimental.sparse.bcoo import (  # noqa: F401
    BCOO, JAXSparse, SparseEfficiencyError, SparseEfficiencyWarning,
    bcoo_dot_general, bcoo_extract, bcoo_fromdense, bcoo_multiply_dense,
    bcoo_multiply_sparse, bcoo_reduce_sum, bcoo_reshape, bcoo_sort_indices,
    bcoo_sum_duplicates, bcoo_todense, bcoo_transpose,
)
from xform.experimental.sparse.api import empty, eye, todense  # noqa: F401
from xform.experimental.sparse.transform import sparsify  # noqa: F401

__all__ = [
    "BCOO", "JAXSparse", "SparseEfficiencyError", "SparseEfficiencyWarning",
    "bcoo_dot_general", "bcoo_extract", "bcoo_fromdense", "bcoo_multiply_dense",
    "bcoo_multiply_sparse", "bcoo_reduce_sum", "bcoo_reshape", "bcoo_sort_indices",
    "bcoo_sum_duplicates", "bcoo_todense", "bcoo_transpose", "empty", "eye", "todense",
    "sparsify",
]

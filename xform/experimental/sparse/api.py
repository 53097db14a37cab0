"""``todense``, ``empty`` and ``eye`` for sparse arrays (JAX's ``jax.experimental.sparse.api``)."""
from __future__ import annotations

import operator
import threading

import xform
from xform._src.interpreters import core
from xform.experimental.sparse.bcoo import BCOO, JAXSparse

__all__ = ["todense", "empty", "eye"]

_FORMATS = {"bcoo": BCOO}


def _sparse_todense(x):
    return x


_SPARSIFY_TRACING = threading.local()


def todense(arr):
    """A dense array from a sparse one; a dense input is returned as is."""
    if isinstance(arr, JAXSparse):
        return arr.todense()
    if getattr(_SPARSIFY_TRACING, "depth", 0):
        # inside sparsify's trace a sparse argument is a dense stand-in: leave a marker
        # (an identity jit named _sparse_todense) that sparsify densifies
        return xform.jit(_sparse_todense)(arr)
    return arr


def _format(sparse_format):
    if sparse_format not in _FORMATS:
        raise ValueError(f"sparse_format={sparse_format!r} not recognized; xform supports "
                         f"{list(_FORMATS)}")
    return _FORMATS[sparse_format]


def empty(shape, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """An empty sparse array (``kwds``: ``n_batch``, ``n_dense``, ``nse``)."""
    return _format(sparse_format)._empty(tuple(shape), dtype=dtype, index_dtype=index_dtype,
                                         **kwds)


def eye(N, M=None, k=0, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """A 2-D sparse array with ones on the ``k``-th diagonal."""
    cls = _format(sparse_format)
    if M is None:
        M = N
    N, M, k = (operator.index(core.concrete_or_error(v, "sparse.eye: N, M and k must be "
                                                      "concrete")) for v in (N, M, k))
    return cls._eye(N, M, k, dtype=dtype, index_dtype=index_dtype, **kwds)

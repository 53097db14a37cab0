"""The BCOO sparse array (JAX 0.10.2's ``jax.experimental.sparse.BCOO``) and its operations.

A BCOO array of shape ``batch + sparse + dense`` holds

* ``data``:    ``batch + (nse,) + dense``, the stored values;
* ``indices``: ``batch + (nse, n_sparse)``, the sparse coordinates of each value.

Duplicate indices are summed; an index out of bounds (JAX pads with ``shape``) marks an
unused slot.  A batch dimension of ``data`` or ``indices`` may have size 1 (broadcast).

Every operation here is written with xform's own differentiable, batchable operations
(gathers, scatter-adds, ``dot_general`` on gathered values, sorts), so ``jit``, ``grad``
(with respect to ``data`` and to dense operands), ``vmap`` and their compositions go
through xform's engine with no rules of their own.  ``vmap`` maps a BCOO argument along
one of its batch dimensions and returns BCOO outputs with a new batch dimension, as JAX.
"""
from __future__ import annotations

import functools
import math
import operator
from typing import NamedTuple

import numpy as np

import xform
import xform.lax as xl
import xform.numpy as xnp
from xform import tree_util
from xform._src.interpreters import core
from xform import _vmap

__all__ = [
    "BCOO", "JAXSparse", "bcoo_fromdense", "bcoo_todense", "bcoo_extract",
    "bcoo_dot_general", "bcoo_transpose", "bcoo_reduce_sum", "bcoo_multiply_dense",
    "bcoo_multiply_sparse", "bcoo_sort_indices", "bcoo_sum_duplicates", "bcoo_reshape",
    "SparseEfficiencyError", "SparseEfficiencyWarning",
]


class SparseEfficiencyError(ValueError):
    pass


class SparseEfficiencyWarning(UserWarning):
    pass


class SparseInfo(NamedTuple):
    shape: tuple
    indices_sorted: bool = False
    unique_indices: bool = False


class BCOOProperties(NamedTuple):
    n_batch: int
    n_sparse: int
    n_dense: int
    nse: int


# ---------------------------------------------------------------------------------------
# helpers

def _shape(x):
    return tuple(np.shape(x)) if not hasattr(x, "shape") else tuple(x.shape)


def _validate_indices(indices, shape):
    shape = tuple(shape)
    ishape = _shape(indices)
    if len(ishape) < 2:
        raise ValueError(f"BCOO indices must have at least 2 dimensions (batch..., nse, "
                         f"n_sparse); got indices.shape={ishape}")
    if not np.issubdtype(np.dtype(indices.dtype), np.integer):
        raise TypeError(f"BCOO indices must have an integer dtype; got {indices.dtype}")
    nse, n_sparse = ishape[-2:]
    n_batch = len(ishape) - 2
    n_dense = len(shape) - n_batch - n_sparse
    if n_dense < 0:
        raise ValueError(f"BCOO indices.shape={ishape} (n_batch={n_batch}, n_sparse={n_sparse}) "
                         f"do not fit shape={shape}")
    if any(s1 not in (1, s2) for s1, s2 in zip(ishape[:n_batch], shape[:n_batch])):
        raise ValueError(f"indices batch dimensions not compatible for indices.shape={ishape}, "
                         f"shape={shape}")
    return BCOOProperties(n_batch, n_sparse, n_dense, nse)


def _validate(data, indices, shape):
    props = _validate_indices(indices, shape)
    n_batch, n_sparse, _, nse = props
    shape = tuple(shape)
    dshape = _shape(data)
    if any(s1 not in (1, s2) for s1, s2 in zip(dshape[:n_batch], shape[:n_batch])):
        raise ValueError(f"data batch dimensions not compatible for data.shape={dshape}, "
                         f"shape={shape}")
    if dshape[n_batch:] != (nse,) + shape[n_batch + n_sparse:]:
        raise ValueError(f"Invalid data.shape={dshape} for nse={nse}, n_batch={n_batch}, "
                         f"n_dense={props.n_dense} (shape={shape})")
    return props


def _concrete_int(x, what):
    """``x`` as a Python int (ConcretizationTypeError naming ``what`` if it is traced)."""
    v = core.concrete_or_error(x, what)
    return operator.index(np.asarray(v).item() if np.ndim(v) == 0 else v)


def _broadcasting_vmap(fun):
    """vmap over axis 0 of every argument; an argument whose axis 0 has size 1 is
    broadcast (squeezed and left unmapped)."""
    @functools.wraps(fun)
    def wrapper(*args):
        size = max(a.shape[0] for a in args)
        if any(a.shape[0] not in (1, size) for a in args):
            raise ValueError(f"mismatched batch dimensions: {[a.shape[0] for a in args]}")
        if size == 1:
            return xform.vmap(fun)(*args)
        new_args, axes = [], []
        for a in args:
            if a.shape[0] == 1:
                new_args.append(xl.squeeze(a, (0,)))
                axes.append(None)
            else:
                new_args.append(a)
                axes.append(0)
        return xform.vmap(fun, in_axes=tuple(axes))(*new_args)
    return wrapper


def _nfold_vmap(fun, n, broadcasted=True):
    for _ in range(n):
        fun = _broadcasting_vmap(fun) if broadcasted else xform.vmap(fun)
    return fun


def _batch_index_grids(batch_shape):
    """Index arrays selecting every batch position, each of shape batch-ish + (1,)."""
    nb = len(batch_shape)
    out = []
    for i, s in enumerate(batch_shape):
        shp = [1] * (nb + 1)
        shp[i] = s
        out.append(xnp.arange(s, dtype=np.int32).reshape(shp))
    return tuple(out)


def _remaining(original, *removed_lists):
    removed = set()
    for r in removed_lists:
        removed |= set(r)
    return [i for i in original if i not in removed]


def _ensure_tuple(x):
    if isinstance(x, (int, np.integer)):
        return (int(x),)
    return tuple(int(i) for i in x)


# ---------------------------------------------------------------------------------------
# todense / extract / fromdense

def _bcoo_todense(data, indices, shape):
    shape = tuple(shape)
    n_batch, n_sparse, _, _ = _validate(data, indices, shape)
    batch_ind = _batch_index_grids(shape[:n_batch])
    sparse_ind = tuple(indices[..., i] for i in range(n_sparse))
    if not sparse_ind:
        data = data.sum(n_batch, keepdims=bool(batch_ind), dtype=data.dtype)
    zeros = xnp.zeros(shape, data.dtype)
    if not batch_ind + sparse_ind:
        return zeros + data
    return zeros.at[batch_ind + sparse_ind].add(data, mode="drop")


def _bcoo_extract(indices, arr):
    arr = xnp.asarray(arr)
    n_batch, n_sparse, _, nse = _validate_indices(indices, arr.shape)
    batch_ind = _batch_index_grids(arr.shape[:n_batch])
    sparse_ind = tuple(indices[..., i] for i in range(n_sparse))
    if not batch_ind + sparse_ind:
        result = arr[None]
    else:
        result = arr.at[batch_ind + sparse_ind].get(mode="fill", fill_value=0)
    if n_sparse == 0 and nse != 1:
        shp = list(result.shape)
        shp[n_batch] = nse
        result = xnp.broadcast_to(result, tuple(shp))
    return result


def bcoo_todense(mat):
    """Convert a BCOO array to a dense array."""
    return _bcoo_todense(mat.data, mat.indices, mat.shape)


_TRACED_NSE_ERROR = ("The error arose for the nse argument of bcoo_fromdense. In order for "
                     "BCOO.fromdense() to be used in traced/compiled code, you must pass a "
                     "concrete value to the nse (number of stored elements) argument.")


def _count_stored_elements(mat, n_batch, n_dense):
    mask = mat != 0
    if n_dense > 0:
        mask = mask.any(tuple(-(i + 1) for i in range(n_dense)))
    mask = mask.sum(tuple(range(n_batch, mask.ndim)))
    return mask.max(initial=0)


def _bcoo_fromdense(mat, *, nse, n_batch, n_dense, index_dtype):
    n_sparse = mat.ndim - n_batch - n_dense
    mask = mat != 0
    if n_dense > 0:
        mask = mask.any(tuple(-(i + 1) for i in range(n_dense)))

    def _nonzero(a):
        return xnp.nonzero(a, size=nse, fill_value=tuple(a.shape))

    if n_sparse == 0:
        indices = xnp.zeros(mask.shape[:n_batch] + (nse, 0), index_dtype)
    else:
        cols = _nfold_vmap(_nonzero, n_batch, broadcasted=False)(mask)
        indices = xnp.stack([c.astype(index_dtype) for c in cols], axis=-1)
    data = _bcoo_extract(indices, mat)
    true_nse = mask.sum(tuple(range(n_batch, mask.ndim)))[..., None]
    true_nonzeros = xl.broadcasted_iota(true_nse.dtype, (1,) * n_batch + (nse,), n_batch) < true_nse
    true_nonzeros = true_nonzeros[(slice(None),) * (n_batch + 1) + (None,) * n_dense]
    data = xnp.where(true_nonzeros, data, xnp.zeros((), data.dtype))
    return data, indices


def bcoo_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32):
    """Create a BCOO array from a dense array (``nse`` must be concrete under ``jit``)."""
    mat = xnp.asarray(mat)
    n_batch, n_dense = operator.index(n_batch), operator.index(n_dense)
    if n_batch < 0 or n_dense < 0 or n_batch + n_dense > mat.ndim:
        raise ValueError(f"Invalid n_batch={n_batch}, n_dense={n_dense} for an array of "
                         f"shape {mat.shape}")
    if nse is None:
        nse = _count_stored_elements(mat, n_batch, n_dense)
    nse = _concrete_int(nse, _TRACED_NSE_ERROR)
    data, indices = _bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                                    index_dtype=np.dtype(index_dtype))
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_extract(sparr, arr, *, assume_unique=None):
    """The values of dense ``arr`` at the indices of ``sparr``, as a BCOO array with
    ``sparr``'s sparsity pattern.  With ``assume_unique=False`` a duplicated index gets
    the value once (at its first occurrence) and zero elsewhere."""
    if not isinstance(sparr, BCOO):
        raise TypeError("First argument to bcoo_extract should be a BCOO array. "
                        f"Got type(sparr)={type(sparr)}")
    a = xnp.asarray(arr)
    if a.shape != sparr.shape:
        raise ValueError(f"shape mismatch: sparr.shape={sparr.shape} a.shape={a.shape}")
    if assume_unique is None:
        assume_unique = sparr.unique_indices
    data = _bcoo_extract(sparr.indices, a)
    if not assume_unique:
        props = _validate(sparr.data, sparr.indices, sparr.shape)
        first = _first_occurrence_mask(sparr.indices, sparr.shape, props)
        data = xnp.where(first[(...,) + (None,) * props.n_dense], data,
                         xnp.zeros((), data.dtype))
    return BCOO((data, sparr.indices), shape=sparr.shape, indices_sorted=sparr.indices_sorted,
                unique_indices=sparr.unique_indices)


# ---------------------------------------------------------------------------------------
# sorting, unique indices, summing duplicates

def _sort_unbatched(indices):
    nse, n = indices.shape
    cols = tuple(indices[:, i] for i in range(n))
    *cols, perm = xl.sort((*cols, xl.iota(indices.dtype, nse)), num_keys=n)
    return xnp.stack(cols, axis=-1), perm


def _broadcast_batch(data, indices, props):
    """data and indices with their batch dimensions broadcast to one common shape."""
    nb = props.n_batch
    batch = tuple(max(a, b) for a, b in zip(data.shape[:nb], indices.shape[:nb]))
    data = xnp.broadcast_to(data, batch + data.shape[nb:])
    indices = xnp.broadcast_to(indices, batch + indices.shape[nb:])
    return data, indices


def _unique_unbatched(indices, sparse_shape):
    """(unique rows sorted with the out-of-bounds fill last, inverse map, true count)."""
    nse, n_sparse = indices.shape
    fill = xnp.array(sparse_shape, dtype=indices.dtype)
    oob = (indices >= fill[None, :]).any(-1, keepdims=True)
    ind = xnp.where(oob, fill[None, :], indices)
    if nse == 0:
        return ind, xnp.zeros((0,), np.int32), xnp.zeros((), np.int32)
    sorted_ind, perm = _sort_unbatched(ind)
    new = xnp.concatenate([xnp.ones((1,), bool),
                           (sorted_ind[1:] != sorted_ind[:-1]).any(-1)])
    pos = xnp.cumsum(new.astype(np.int32)) - 1
    inverse = xnp.zeros((nse,), np.int32).at[perm].set(pos)
    uniq = xnp.broadcast_to(fill[None, :], (nse, n_sparse)).at[pos].set(sorted_ind)
    n_unique = pos[-1] + 1
    has_fill = (sorted_ind[-1] == fill).all()
    return uniq, inverse, (n_unique - has_fill.astype(np.int32)).astype(np.int32)


def _first_occurrence_mask(indices, shape, props):
    """True at the first stored occurrence of each index (per batch)."""
    def f(ind):
        nse = ind.shape[0]
        _, inverse, _ = _unique_unbatched(ind, shape[props.n_batch:props.n_batch + props.n_sparse])
        first_pos = xnp.full((nse,), nse, np.int32).at[inverse].min(xnp.arange(nse, dtype=np.int32))
        return first_pos[inverse] == xnp.arange(nse, dtype=np.int32)
    if props.n_sparse == 0:
        return xnp.broadcast_to(xl.broadcasted_iota(np.int32, (1,) * props.n_batch + (props.nse,),
                                                    props.n_batch) == 0,
                                indices.shape[:-1])
    return _nfold_vmap(f, props.n_batch, broadcasted=False)(indices)


def _adjust_nse(indices, nse, sparse_shape):
    cur = indices.shape[-2]
    if nse <= cur:
        return indices[..., :nse, :]
    fill = xnp.broadcast_to(xnp.array(sparse_shape, dtype=indices.dtype),
                            indices.shape[:-2] + (nse - cur, indices.shape[-1]))
    return xnp.concatenate([indices, fill], axis=indices.ndim - 2)


def _bcoo_sum_duplicates(data, indices, shape, nse):
    props = _validate(data, indices, shape)
    nb, ns = props.n_batch, props.n_sparse
    sparse_shape = tuple(shape[nb:nb + ns])
    data, indices = _broadcast_batch(data, indices, props)
    if ns == 0:
        data = data.sum(nb, keepdims=True, dtype=data.dtype)
        nse_out = 1 if nse is None else nse
        indices = xnp.zeros(indices.shape[:nb] + (1, 0), indices.dtype)
        if nse_out != 1:
            indices = _adjust_nse(indices, nse_out, sparse_shape)
            data = _set_data_nse(data, nb, nse_out)
        return data, indices
    uniq, inverse, true_nse = _nfold_vmap(
        functools.partial(_unique_unbatched, sparse_shape=sparse_shape), nb,
        broadcasted=False)(indices)
    if nse is None:
        nse = _concrete_int(true_nse.max(initial=0) if nb else true_nse,
                            "bcoo_sum_duplicates: nse must be specified when using the function "
                            "within jit, vmap, and other transformations requiring abstract "
                            "evaluation.")
    indices_out = _adjust_nse(uniq, nse, sparse_shape)

    def permute(d, m):
        out = xnp.zeros((nse,) + d.shape[1:], d.dtype)
        return out.at[m].add(d, mode="drop")
    data_out = _nfold_vmap(permute, nb, broadcasted=False)(data, inverse)
    return data_out, indices_out


def _set_data_nse(data, nb, nse):
    cur = data.shape[nb]
    if nse <= cur:
        return data[(slice(None),) * nb + (slice(0, nse),)]
    pad = [(0, 0)] * data.ndim
    pad[nb] = (0, nse - cur)
    return xnp.pad(data, pad)


def bcoo_sum_duplicates(mat, nse=None):
    """Sum duplicate indices; the result has sorted, unique indices (``nse`` must be given
    under ``jit``; extra slots are padded, missing ones dropped)."""
    if nse is not None:
        nse = _concrete_int(nse, "nse argument of bcoo_sum_duplicates.")
    data, indices = _bcoo_sum_duplicates(mat.data, mat.indices, mat.shape, nse)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def _bcoo_eliminate_zeros(mat, nse=None):
    data, indices, shape = mat.data, mat.indices, mat.shape
    props = _validate(data, indices, shape)
    mask = (data == 0).all(tuple(range(props.n_batch + 1, data.ndim)))
    contract = tuple(i for i, s in enumerate(indices.shape[:props.n_batch]) if s == 1)
    mask = mask.all(contract, keepdims=True)
    fill = xnp.array(shape[props.n_batch:props.n_batch + props.n_sparse], dtype=indices.dtype)
    indices = xnp.where(mask[..., None], fill, indices)
    return bcoo_sum_duplicates(BCOO((data, indices), shape=shape), nse=nse)


def bcoo_sort_indices(mat):
    """Sort the indices of a BCOO array (lexicographically; duplicates are kept)."""
    props = _validate(mat.data, mat.indices, mat.shape)
    if props.n_sparse == 0:
        return BCOO((mat.data, mat.indices), shape=mat.shape, indices_sorted=True,
                    unique_indices=mat.unique_indices)
    nb = props.n_batch
    indices, perm = _nfold_vmap(_sort_unbatched, nb, broadcasted=False)(mat.indices)
    data = _nfold_vmap(lambda d, p: d[p], nb)(mat.data, perm)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True,
                unique_indices=mat.unique_indices)


# ---------------------------------------------------------------------------------------
# transpose

def _validate_permutation(props, permutation, shape):
    if not isinstance(permutation, (tuple, list, np.ndarray)):
        raise TypeError("transpose permutation must be a tuple/list/ndarray, got "
                        f"{type(permutation)}.")
    permutation = tuple(int(p) for p in permutation)
    if tuple(sorted(permutation)) != tuple(range(len(shape))):
        raise TypeError("transpose permutation isn't a permutation of operand dimensions, "
                        f"got permutation {permutation} for shape {shape}.")
    n_batch, n_sparse, n_dense, _ = props
    batch_perm = permutation[:n_batch]
    sparse_perm = [p - n_batch for p in permutation[n_batch:n_batch + n_sparse]]
    dense_perm = [p - n_sparse - n_batch for p in permutation[n_batch + n_sparse:]]
    if n_batch and tuple(sorted(batch_perm)) != tuple(range(n_batch)):
        raise NotImplementedError("transpose permutation cannot permute batch axes with "
                                  f"non-batch axes; got permutation {permutation}, with "
                                  f"n_batch={n_batch}.")
    if n_dense and tuple(sorted(dense_perm)) != tuple(range(n_dense)):
        raise NotImplementedError("transpose permutation cannot permute dense axes with "
                                  f"non-dense axes; got permutation {permutation}, with "
                                  f"n_dense={n_dense}.")
    return list(batch_perm), sparse_perm, dense_perm


def bcoo_transpose(mat, *, permutation):
    """Transpose a BCOO array; batch, sparse and dense axes each permute among
    themselves."""
    props = _validate(mat.data, mat.indices, mat.shape)
    batch_perm, sparse_perm, dense_perm = _validate_permutation(props, permutation, mat.shape)
    permutation = tuple(int(p) for p in permutation)
    out_shape = tuple(mat.shape[p] for p in permutation)
    if permutation == tuple(range(len(mat.shape))):
        return BCOO((mat.data, mat.indices), shape=out_shape, unique_indices=mat.unique_indices)
    nb = props.n_batch
    indices = mat.indices
    if sparse_perm != list(range(props.n_sparse)):
        indices = indices[..., np.array(sparse_perm, dtype=np.int32)]
    indices = indices.transpose(*batch_perm, nb, nb + 1)
    data = mat.data.transpose(*batch_perm, nb, *(d + nb + 1 for d in dense_perm))
    return BCOO((data, indices), shape=out_shape, unique_indices=mat.unique_indices)


# ---------------------------------------------------------------------------------------
# dot_general

def _out_aval(lhs_shape, lhs_dtype, rhs_shape, rhs_dtype, dimension_numbers,
              preferred_element_type):
    f = functools.partial(xl.dot_general, dimension_numbers=dimension_numbers,
                          preferred_element_type=preferred_element_type)
    return xform.eval_shape(f, xform.ShapeDtypeStruct(tuple(lhs_shape), lhs_dtype),
                            xform.ShapeDtypeStruct(tuple(rhs_shape), rhs_dtype))


def _bcoo_dot_general(lhs_data, lhs_indices, rhs, *, dimension_numbers,
                      preferred_element_type, lhs_shape):
    (lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch) = dimension_numbers
    lhs_contracting, rhs_contracting = _ensure_tuple(lhs_contracting), _ensure_tuple(rhs_contracting)
    lhs_batch, rhs_batch = _ensure_tuple(lhs_batch), _ensure_tuple(rhs_batch)
    dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))
    rhs = xnp.asarray(rhs)
    out = _out_aval(lhs_shape, lhs_data.dtype, rhs.shape, rhs.dtype, dimension_numbers,
                    preferred_element_type)
    n_batch, n_sparse, _, _ = _validate(lhs_data, lhs_indices, lhs_shape)
    if lhs_batch and max(lhs_batch) >= n_batch:
        raise NotImplementedError(
            "bcoo_dot_general batch dimensions must be among the batch dimensions in the "
            f"sparse representation.\ngot lhs_batch={lhs_batch}, n_batch={n_batch}")
    if any(d >= n_batch + n_sparse for d in lhs_contracting):
        raise NotImplementedError("bcoo_dot_general: contracting over dense dimensions.")

    pairs = list(zip(lhs_contracting, rhs_contracting))
    lhs_contracting_b = [l for l, r in pairs if l < n_batch]
    rhs_contracting_b = [r for l, r in pairs if l < n_batch]
    lhs_contracting_s = [l for l, r in pairs if l >= n_batch]
    rhs_contracting_s = [r for l, r in pairs if l >= n_batch]

    if lhs_batch or lhs_contracting_b:
        batch_perm = [*lhs_batch, *_remaining(range(n_batch), lhs_batch, lhs_contracting_b),
                      *lhs_contracting_b]
        lhs_data = lhs_data.transpose([*batch_perm, *range(n_batch, lhs_data.ndim)])
        lhs_indices = lhs_indices.transpose([*batch_perm, *range(n_batch, lhs_indices.ndim)])
    if lhs_contracting_s:
        lcs = [d - n_batch for d in lhs_contracting_s]
        sparse_perm = np.array([*lcs, *_remaining(range(n_sparse), lcs)], dtype=np.int32)
        lhs_indices = lhs_indices[..., sparse_perm]
    rhs_perm = [*rhs_batch, *rhs_contracting_b, *rhs_contracting_s,
                *_remaining(range(rhs.ndim), rhs_batch, rhs_contracting)]
    rhs = rhs.transpose(rhs_perm)
    n_cs = len(lhs_contracting_s)
    n_cb = len(lhs_contracting_b)

    def result(out_array, lhs_data, lhs_indices, rhs):
        idx = tuple(lhs_indices[..., i] for i in range(n_sparse))
        idx_right, idx_out = idx[:n_cs], idx[n_cs:]
        if idx_right and lhs_indices.ndim > 2:
            grids = xnp.meshgrid(*(xnp.arange(n, dtype=np.int32)
                                   for n in lhs_indices.shape[:-1]), indexing="ij")
            idx_right = (*grids[:lhs_indices.ndim - 2], *idx_right)
        bdims = list(range(n_cb + bool(n_cs)))
        gathered = rhs.at[idx_right].get(mode="fill", fill_value=0) if idx_right else rhs
        prod = xl.dot_general(lhs_data, gathered, (([], []), (bdims, bdims)),
                              preferred_element_type=preferred_element_type)
        if prod.dtype != out_array.dtype:
            prod = prod.astype(out_array.dtype)
        if idx_out:
            return out_array.at[idx_out].add(prod, mode="drop")
        return prod.sum(tuple(range(prod.ndim - out_array.ndim)), dtype=out_array.dtype)

    n_vmap = n_batch - n_cb
    result = _nfold_vmap(result, n_vmap)
    rhs = xl.expand_dims(rhs, tuple(range(len(rhs_batch), n_vmap)))
    out_array = xnp.zeros(out.shape, out.dtype)
    return result(out_array, lhs_data, lhs_indices, rhs)


def _bcoo_rdot_general(lhs, rhs_data, rhs_indices, *, dimension_numbers,
                       preferred_element_type, rhs_shape):
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = map(_ensure_tuple, (lc, rc, lb, rb))
    result = _bcoo_dot_general(rhs_data, rhs_indices, lhs, lhs_shape=rhs_shape,
                               dimension_numbers=((rc, lc), (rb, lb)),
                               preferred_element_type=preferred_element_type)
    n_contract, n_batch = len(lc), len(lb)
    n_swap = len(rhs_shape) - n_contract
    permutation = (*range(n_batch), *range(n_swap, result.ndim), *range(n_batch, n_swap))
    return result.transpose(permutation)


def bcoo_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
    """``lax.dot_general`` with one BCOO operand (either side) and one dense one; the
    result is dense.  Batch dimensions of the sparse operand must be BCOO batch
    dimensions; contracting over its dense dimensions is not supported."""
    del precision, out_sharding
    if preferred_element_type is not None:
        preferred_element_type = np.dtype(preferred_element_type)
    if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
        raise NotImplementedError(
            "bcoo_dot_general between two BCOO arrays (a sparse result) is not supported "
            "by xform; convert one operand with .todense().")
    if isinstance(lhs, BCOO):
        return _bcoo_dot_general(lhs.data, lhs.indices, rhs, dimension_numbers=dimension_numbers,
                                 preferred_element_type=preferred_element_type,
                                 lhs_shape=lhs.shape)
    if isinstance(rhs, BCOO):
        return _bcoo_rdot_general(lhs, rhs.data, rhs.indices,
                                  dimension_numbers=dimension_numbers,
                                  preferred_element_type=preferred_element_type,
                                  rhs_shape=rhs.shape)
    return xl.dot_general(lhs, rhs, dimension_numbers=dimension_numbers,
                          preferred_element_type=preferred_element_type)


def _matmul(a, b):
    """``jnp.matmul`` semantics with one BCOO operand; the result is dense."""
    if isinstance(a, BCOO) and isinstance(b, BCOO):
        raise NotImplementedError(
            "matmul of two BCOO arrays (a sparse result) is not supported by xform; "
            "convert one operand with .todense().")
    sp_left = isinstance(a, BCOO)
    sp, de = (a, b) if sp_left else (b, a)
    de = xnp.asarray(de)
    if sp.ndim == 0 or de.ndim == 0:
        raise ValueError("matmul: inputs must not be scalars (got shapes "
                         f"{a.shape if sp_left else de.shape}, {de.shape if sp_left else b.shape})")
    dt = xnp.result_type(sp.data, de)
    if sp.dtype != dt:
        sp = sp.astype(dt)
    if de.dtype != dt:
        de = de.astype(dt)
    lhs_shape, rhs_shape = (sp.shape, de.shape) if sp_left else (de.shape, sp.shape)
    na, nb = len(lhs_shape), len(rhs_shape)
    lc = na - 1
    rc = 0 if nb == 1 else nb - 2
    if lhs_shape[lc] != rhs_shape[rc]:
        raise ValueError(f"matmul: contracting dimensions differ: {lhs_shape} @ {rhs_shape}")
    a_batch = lhs_shape[:-2] if na > 2 else ()
    b_batch = rhs_shape[:-2] if nb > 2 else ()
    sp_batch_rank = len(a_batch) if sp_left else len(b_batch)
    de_batch_rank = len(b_batch) if sp_left else len(a_batch)
    if sp_batch_rank == 0 or de_batch_rank == 0 or (na < 2 or nb < 2):
        # only contraction: dot_general gives (lhs free..., rhs free...)
        dn = (((lc,), (rc,)), ((), ()))
        out = bcoo_dot_general(sp, de, dimension_numbers=dn) if sp_left else \
            bcoo_dot_general(de, sp, dimension_numbers=dn)
        # lhs free = a_batch + (a_row if na >= 2); rhs free = b_batch + (b_col if nb >= 2)
        n_ab, n_ar = len(a_batch), int(na >= 2)
        n_bb, n_bc = len(b_batch), int(nb >= 2)
        if n_ab and n_bb:
            raise AssertionError("unreachable")
        perm = (list(range(n_ab)) + list(range(n_ab + n_ar, n_ab + n_ar + n_bb))
                + list(range(n_ab, n_ab + n_ar)) + list(range(n_ab + n_ar + n_bb, out.ndim)))
        return out.transpose(perm) if perm != list(range(out.ndim)) else out
    # both sides have batch dimensions: they must be the sparse operand's BCOO batch dims
    batch = tuple(np.broadcast_shapes(a_batch, b_batch))
    sp_b = a_batch if sp_left else b_batch
    if tuple(sp_b) != batch:
        raise NotImplementedError(
            f"matmul: the BCOO operand's batch dimensions {tuple(sp_b)} would have to be "
            f"broadcast to {batch}; broadcast the dense operand instead or use todense().")
    if sp.n_batch < len(batch):
        raise NotImplementedError(
            f"matmul: the BCOO operand's leading dimensions {batch} must be batch dimensions "
            f"of its representation (n_batch={sp.n_batch}); use "
            "BCOO.fromdense(..., n_batch=...).")
    de = xnp.broadcast_to(de, batch + de.shape[-2:])
    k = len(batch)
    bd = tuple(range(k))
    if sp_left:
        return bcoo_dot_general(sp, de, dimension_numbers=(((na - 1,), (k,)), (bd, bd)))
    return bcoo_dot_general(de, sp, dimension_numbers=(((k + 1,), (k,)), (bd, bd)))


# ---------------------------------------------------------------------------------------
# reductions, elementwise products, reshape

def bcoo_reduce_sum(mat, *, axes):
    """Sum a BCOO array over ``axes``; the result is a BCOO array."""
    shape = mat.shape
    axes = sorted({int(a) % len(shape) if len(shape) else int(a) for a in axes})
    if any(not 0 <= a < len(shape) for a in axes):
        raise ValueError(f"bcoo_reduce_sum: axes {axes} out of range for shape {shape}")
    data, indices = mat.data, mat.indices
    n_batch, n_sparse, _, nse = _validate(data, indices, shape)
    dense_axes = tuple(ax - n_sparse + 1 for ax in axes if ax >= n_batch + n_sparse)
    if dense_axes:
        data = data.sum(dense_axes)
    if n_sparse:
        fill = xnp.array(shape[n_batch:n_batch + n_sparse], dtype=indices.dtype)
        mask = xnp.all(indices < fill, -1)
        if data.ndim > mask.ndim:
            mask = xl.expand_dims(mask, tuple(range(mask.ndim, data.ndim)))
        data = xnp.where(mask, data, xnp.zeros((), data.dtype))
    sparse_idx = [i for i in range(n_sparse) if i + n_batch not in axes]
    if not sparse_idx:
        indices = xnp.zeros(indices.shape[:n_batch + 1] + (0,), indices.dtype)
    else:
        indices = indices[..., np.array(sparse_idx, dtype=np.int32)]
    batch_axes = sorted(ax for ax in axes if ax < n_batch)
    for ax in batch_axes:
        if data.shape[ax] == 1:
            if indices.shape[ax] == 1:
                data = data * shape[ax]
            else:
                data = xnp.broadcast_to(data, data.shape[:ax] + (shape[ax],) + data.shape[ax + 1:])
        elif indices.shape[ax] == 1:
            indices = xnp.broadcast_to(indices, indices.shape[:ax] + (data.shape[ax],)
                                       + indices.shape[ax + 1:])
    new_batch_dims = [i for i in range(n_batch) if i not in batch_axes]
    new_batch_shape = tuple(data.shape[i] for i in new_batch_dims)
    new_nse = nse * math.prod(data.shape[i] for i in batch_axes)
    order_d = [*new_batch_dims, *batch_axes, *range(n_batch, data.ndim)]
    order_i = [*new_batch_dims, *batch_axes, *range(n_batch, indices.ndim)]
    data = data.transpose(order_d).reshape(new_batch_shape + (new_nse,) + data.shape[n_batch + 1:])
    indices = indices.transpose(order_i).reshape(
        tuple(indices.shape[i] for i in new_batch_dims) + (new_nse,) + indices.shape[n_batch + 1:])
    out_shape = tuple(s for i, s in enumerate(shape) if i not in axes)
    return BCOO((data, indices), shape=out_shape)


def bcoo_multiply_dense(sp_mat, v):
    """Elementwise product of a BCOO array and a dense array broadcastable to its shape;
    returns the product's ``data`` (the result has ``sp_mat``'s indices)."""
    data, indices, shape = sp_mat.data, sp_mat.indices, sp_mat.shape
    v = xnp.asarray(v)
    if v.ndim == 0:
        return xnp.multiply(data, v)
    if v.shape == tuple(shape):
        return xnp.multiply(data, _bcoo_extract(indices, v))
    if tuple(np.broadcast_shapes(v.shape, shape)) != tuple(shape):
        raise NotImplementedError(
            "multiplication between sparse and dense is only implemented for cases where the "
            f"output shape matches the sparse matrix shape. Got shape={tuple(shape)}, "
            f"v.shape={v.shape}")
    v = xl.expand_dims(v, tuple(range(len(shape) - v.ndim)))
    props = _validate(data, indices, shape)

    def _mul(data, indices, v):
        ind = tuple(indices[:, i] for i in range(indices.shape[1]))
        ind = tuple(i if s != 1 else xnp.zeros_like(i) for i, s in zip(ind, v.shape))
        return xnp.multiply(data, v[ind])
    return _nfold_vmap(_mul, props.n_batch)(data, indices, v)


def bcoo_multiply_sparse(lhs, rhs):
    """Elementwise product of two BCOO arrays (same rank and n_dense, unbatched); the
    result has ``lhs.nse * rhs.nse`` stored elements."""
    lp = _validate(lhs.data, lhs.indices, lhs.shape)
    rp = _validate(rhs.data, rhs.indices, rhs.shape)
    if len(lhs.shape) != len(rhs.shape):
        raise TypeError("bcoo_multiply_sparse: arrays must have same number of dimensions, "
                        f"got {lhs.shape}, {rhs.shape}")
    if lp.n_dense != rp.n_dense:
        raise NotImplementedError("bcoo_multiply_sparse: arrays with differing numbers of "
                                  f"dense dimensions: {lp}, {rp}")
    if lp.n_batch or rp.n_batch:
        raise NotImplementedError("bcoo_multiply_sparse with batch dimensions is not "
                                  "supported by xform; use n_batch=0 operands.")
    dims = np.array([i for i, (s1, s2) in enumerate(zip(lhs.shape[:lp.n_sparse],
                                                         rhs.shape[:rp.n_sparse]))
                     if s1 != 1 and s2 != 1], dtype=np.int32)
    nse = lp.nse * rp.nse
    mask = xnp.all(lhs.indices[:, None, dims] == rhs.indices[None, :, dims], -1)
    i_lhs, i_rhs = xnp.nonzero(mask, size=nse, fill_value=(lp.nse, rp.nse))
    data = (lhs.data.at[i_lhs].get(mode="fill", fill_value=0)
            * rhs.data.at[i_rhs].get(mode="fill", fill_value=0))
    indices = xnp.maximum(
        lhs.indices.at[i_lhs].get(mode="fill", fill_value=max(lhs.shape, default=0)),
        rhs.indices.at[i_rhs].get(mode="fill", fill_value=max(rhs.shape, default=0)))
    return BCOO((data, indices), shape=tuple(np.broadcast_shapes(lhs.shape, rhs.shape)))


def bcoo_reshape(mat, *, new_sizes, dimensions=None, sharding=None):
    """Reshape a BCOO array without batch or dense dimensions (row-major order)."""
    del sharding
    if dimensions is not None:
        raise NotImplementedError("bcoo_reshape: nonzero dimensions is not supported")
    new_sizes = tuple(int(s) for s in new_sizes)
    if math.prod(new_sizes) != math.prod(mat.shape):
        raise TypeError(f"cannot reshape array of shape {mat.shape} into shape {new_sizes}")
    if mat.n_batch or mat.n_dense:
        raise NotImplementedError(
            "BCOO.reshape of an array with batch or dense dimensions is not supported by "
            f"xform (n_batch={mat.n_batch}, n_dense={mat.n_dense}); use todense().")
    shape = mat.shape
    ind = mat.indices
    oob = (ind >= xnp.array(shape, dtype=ind.dtype)).any(-1)
    dt = np.int64 if (math.prod(shape) > np.iinfo(np.int32).max
                      and xform.config.jax_enable_x64) else ind.dtype
    flat = xnp.zeros(ind.shape[:-1], dt)
    for i, s in enumerate(shape):
        flat = flat * s + ind[:, i].astype(dt)
    new = []
    for s in reversed(new_sizes):
        new.append(flat % s if s else flat)
        flat = flat // s if s else flat
    new_ind = xnp.stack(new[::-1], axis=-1).astype(ind.dtype) if new_sizes else \
        xnp.zeros(ind.shape[:-1] + (0,), ind.dtype)
    new_ind = xnp.where(oob[:, None], xnp.array(new_sizes, dtype=ind.dtype), new_ind) \
        if new_sizes else new_ind
    return BCOO((mat.data, new_ind), shape=new_sizes)


# ---------------------------------------------------------------------------------------
# the array types

class JAXSparse:
    """Base class of the sparse array types (``BCOO``)."""
    data: object
    shape: tuple

    __hash__ = None

    def __len__(self):
        return self.shape[0]

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def T(self):
        return self.transpose()

    def block_until_ready(self):
        for arg in tree_util.tree_leaves(self):
            arg.block_until_ready()
        return self


def _is_sparse(x):
    return isinstance(x, BCOO)


@tree_util.register_pytree_node_class
class BCOO(JAXSparse):
    """Batched-coordinate sparse array: ``BCOO((data, indices), shape=...)``.

    ``data``: ``batch + (nse,) + dense``; ``indices``: ``batch + (nse, n_sparse)``.
    """

    def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
        data, indices = args
        self.data = xnp.asarray(data)
        self.indices = xnp.asarray(indices)
        self.shape = tuple(operator.index(s) for s in shape)
        self.indices_sorted = bool(indices_sorted)
        self.unique_indices = bool(unique_indices)
        _validate(self.data, self.indices, self.shape)

    # -- attributes
    @property
    def _info(self):
        return SparseInfo(self.shape, self.indices_sorted, self.unique_indices)

    @property
    def _bufs(self):
        return (self.data, self.indices)

    @property
    def nse(self):
        return self.indices.shape[-2]

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def n_batch(self):
        return self.indices.ndim - 2

    @property
    def n_sparse(self):
        return self.indices.shape[-1]

    @property
    def n_dense(self):
        return self.data.ndim - 1 - self.n_batch

    def __repr__(self):
        name = type(self).__name__
        try:
            extra = f", nse={self.nse}"
            if self.n_batch:
                extra += f", n_batch={self.n_batch}"
            if self.n_dense:
                extra += f", n_dense={self.n_dense}"
            repr_ = f"{name}({np.dtype(self.dtype).name}{list(self.shape)}{extra})"
        except Exception:
            repr_ = f"{name}(<invalid>)"
        if isinstance(self.data, core.Tracer):
            repr_ = f"{type(self.data).__name__}[{repr_}]"
        return repr_

    # -- pytree
    def tree_flatten(self):
        return (self.data, self.indices), (self.shape, self.indices_sorted, self.unique_indices)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        obj = object.__new__(cls)
        obj.data, obj.indices = children
        obj.shape, obj.indices_sorted, obj.unique_indices = aux_data
        return obj

    # -- constructors
    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
        """Create a BCOO array from a dense array."""
        return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                              n_batch=n_batch)

    @classmethod
    def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
        """Create a BCOO array from a ``scipy.sparse`` array."""
        if n_dense != 0 or n_batch != 0:
            raise NotImplementedError("BCOO.fromscipy with nonzero n_dense/n_batch")
        mat = mat.tocoo()
        data = xnp.asarray(mat.data)
        indices = np.column_stack((mat.row, mat.col)).astype(index_dtype or np.int32)
        return cls((data, xnp.asarray(indices)), shape=mat.shape, indices_sorted=False,
                   unique_indices=False)

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0):
        shape = tuple(shape)
        n_sparse = len(shape) - n_dense - n_batch
        if n_sparse < 0 or n_dense < 0 or n_batch < 0 or nse < 0:
            raise ValueError(f"Invalid inputs: shape={shape}, n_dense={n_dense}, "
                             f"n_batch={n_batch}, nse={nse}")
        batch_shape = shape[:n_batch]
        sparse_shape = shape[n_batch:n_batch + n_sparse]
        dense_shape = shape[n_batch + n_sparse:]
        data = xnp.zeros((*batch_shape, nse, *dense_shape), dtype)
        indices = xnp.broadcast_to(xnp.array(sparse_shape, dtype=index_dtype),
                                   (*batch_shape, nse, n_sparse))
        return cls((data, indices), shape=shape, indices_sorted=True, unique_indices=True)

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32", n_batch=0, n_dense=0):
        n_sparse = 2 - n_batch - n_dense
        if n_sparse < 0 or n_dense < 0 or n_batch < 0:
            raise ValueError(f"Invalid inputs: shape={(N, M)}, n_dense={n_dense}, "
                             f"n_batch={n_batch}")
        diag_size = min(N, M - k) if k > 0 else min(N + k, M)
        if diag_size <= 0:
            return cls._empty((N, M), dtype=dtype, index_dtype=index_dtype, n_batch=n_batch,
                              n_dense=n_dense)
        if n_dense > 0 or n_batch > 1:
            return cls.fromdense(xnp.eye(N, M, k, dtype=dtype), n_batch=n_batch,
                                 n_dense=n_dense, index_dtype=index_dtype)
        if n_batch == 0:
            data = xnp.ones(diag_size, dtype=dtype)
            idx = np.arange(diag_size)
            indices = np.column_stack([idx - min(k, 0), idx + max(k, 0)]).astype(index_dtype)
        else:
            data = np.ones(N, dtype=np.dtype(xnp.ones((), dtype).dtype))
            indices = np.arange(N) + k
            if k < 0:
                data[:abs(k)] = 0
                indices[:abs(k)] = M
            elif k > 0:
                data[M - abs(k):] = 0
                indices[M - abs(k)] = M
            data = xnp.asarray(data[:, None])
            indices = indices.astype(index_dtype)[:, None, None]
        return cls((data, xnp.asarray(indices)), shape=(N, M), indices_sorted=True,
                   unique_indices=True)

    # -- conversions and layout
    def todense(self):
        """A dense version of the array."""
        return bcoo_todense(self)

    def sum_duplicates(self, nse=None, remove_zeros=True):
        """A copy with duplicate indices summed, indices sorted and (with
        ``remove_zeros``) explicit zeros removed; pass ``nse`` under ``jit``."""
        if remove_zeros:
            return _bcoo_eliminate_zeros(self, nse=nse)
        return bcoo_sum_duplicates(self, nse=nse)

    def sort_indices(self):
        """A copy with indices sorted."""
        return bcoo_sort_indices(self)

    def transpose(self, axes=None):
        """The transposed array (batch, sparse and dense axes permute among themselves)."""
        perm = list(range(self.ndim)[::-1] if axes is None else axes)
        out = bcoo_transpose(self, permutation=perm)
        sparse_perm = [p - self.n_batch for p in perm[self.n_batch:self.n_batch + self.n_sparse]]
        is_sorted = self.indices_sorted if tuple(sparse_perm) == tuple(range(self.n_sparse)) \
            else False
        return BCOO((out.data, out.indices), shape=out.shape, indices_sorted=is_sorted,
                    unique_indices=self.unique_indices)

    def astype(self, dtype):
        """A copy with ``data`` cast to ``dtype``."""
        return BCOO((self.data.astype(dtype), self.indices), shape=self.shape,
                    indices_sorted=self.indices_sorted, unique_indices=self.unique_indices)

    def reshape(self, *args, **kwargs):
        """Reshape (arrays without batch or dense dimensions)."""
        if kwargs.keys() - {"shape", "newshape"}:
            raise TypeError(f"BCOO.reshape got unexpected keyword arguments {sorted(kwargs)}")
        if kwargs:
            shape = kwargs.get("shape", kwargs.get("newshape"))
        else:
            shape = args[0] if len(args) == 1 else args
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        shape = list(shape)
        if shape.count(-1) > 1:
            raise ValueError("can only specify one unknown dimension")
        if -1 in shape:
            rest = math.prod(s for s in shape if s != -1)
            shape[shape.index(-1)] = math.prod(self.shape) // rest if rest else 0
        return bcoo_reshape(self, new_sizes=shape)

    def sum(self, axis=None, keepdims=False):
        """Sum over ``axis`` (all axes: a dense scalar, else a BCOO array)."""
        if keepdims:
            raise NotImplementedError("BCOO.sum with keepdims=True is not supported by xform")
        if axis is None:
            axes = tuple(range(self.ndim))
        else:
            axes = _ensure_tuple(axis)
            axes = tuple(a % self.ndim if -self.ndim <= a < self.ndim else a for a in axes)
            if any(not 0 <= a < self.ndim for a in axes):
                raise ValueError(f"axis {axis} is out of bounds for array of dimension {self.ndim}")
        mat = bcoo_reduce_sum(self, axes=axes)
        if mat.shape == ():
            return mat.data.sum()
        return mat

    # -- arithmetic
    def __matmul__(self, other):
        if not _is_arraylike(other) and not _is_sparse(other):
            return NotImplemented
        return _matmul(self, other)

    def __rmatmul__(self, other):
        if not _is_arraylike(other):
            return NotImplemented
        return _matmul(other, self)

    def __mul__(self, other):
        if _is_sparse(other):
            return bcoo_multiply_sparse(self, other)
        if not _is_arraylike(other):
            return NotImplemented
        other = xnp.asarray(other)
        dt = xnp.result_type(self.data, other)
        data = bcoo_multiply_dense(self.astype(dt) if self.dtype != dt else self,
                                   other.astype(dt) if other.dtype != dt else other)
        return BCOO((data, self.indices), shape=self.shape, indices_sorted=self.indices_sorted,
                    unique_indices=self.unique_indices)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if _is_sparse(other):
            raise NotImplementedError(
                "Division by a sparse array is not implemented because it would result in "
                "dense output. If this is your intent, use sparse.todense() to convert your "
                "arguments to a dense array.")
        if not _is_arraylike(other):
            return NotImplemented
        other = xnp.asarray(other)
        if not xnp.issubdtype(xnp.result_type(self.data, other), xnp.inexact):
            other = other.astype(xnp.result_type(float))
        return self * (1.0 / other)

    def __neg__(self):
        return BCOO((-self.data, self.indices), shape=self.shape,
                    indices_sorted=self.indices_sorted, unique_indices=self.unique_indices)

    def __pos__(self):
        return self

    def __abs__(self):
        mat = self if self.unique_indices else bcoo_sum_duplicates(self, nse=self.nse)
        return BCOO((xnp.abs(mat.data), mat.indices), shape=mat.shape,
                    indices_sorted=mat.indices_sorted, unique_indices=mat.unique_indices)

    def __add__(self, other):
        if _is_sparse(other):
            if self.shape != other.shape:
                raise NotImplementedError("Addition between sparse matrices of different shapes.")
            if self.indices.ndim != other.indices.ndim or self.data.ndim != other.data.ndim:
                raise NotImplementedError("Addition between sparse matrices with different "
                                          "batch/dense dimensions.")
            dt = xnp.result_type(self.data, other.data)
            ax = self.n_batch
            data = xnp.concatenate([self.data.astype(dt), other.data.astype(dt)], axis=ax)
            idt = xnp.result_type(self.indices, other.indices)
            indices = xnp.concatenate([self.indices.astype(idt), other.indices.astype(idt)],
                                      axis=ax)
            return BCOO((data, indices), shape=self.shape)
        if not _is_arraylike(other):
            return NotImplemented
        other = xnp.asarray(other)
        out_shape = tuple(np.broadcast_shapes(self.shape, other.shape))
        if other.shape != out_shape:
            raise NotImplementedError(
                "Addition between a sparse array X and a dense array Y is not implemented when "
                "the output shape is larger than Y.shape. This is to prevent silent "
                "densification of a large sparse array. If this is your intent, you can "
                "explicitly cast the sparse array to a dense matrix.")
        return self.todense() + other

    __radd__ = __add__

    def __sub__(self, other):
        if _is_sparse(other):
            return self + (-other)
        if not _is_arraylike(other):
            return NotImplemented
        raise NotImplementedError("Subtraction between sparse and dense array.")

    def __rsub__(self, other):
        if not _is_arraylike(other):
            return NotImplemented
        raise NotImplementedError("Subtraction between sparse and dense array.")


def _is_arraylike(x):
    return isinstance(x, (core.Array, core.Tracer, np.ndarray, np.generic, int, float,
                          complex, bool, list, tuple)) or hasattr(x, "__jax_array__")


# vmap maps a BCOO along one of its batch dimensions (JAX: batching.register_vmappable)

def _bcoo_in_axis(val, axis):
    if -val.ndim <= axis < 0:
        axis += val.ndim
    if not 0 <= axis < val.n_batch:
        raise ValueError(f"Cannot map in_axis={axis} for BCOO array with n_batch={val.n_batch}. "
                         "in_axes for batched BCOO operations must correspond to a batch "
                         "dimension.")
    return axis


def _bcoo_out_axis(elt, axis):
    if -(elt.ndim + 1) <= axis < 0:
        axis += elt.ndim + 1
    if not 0 <= axis <= elt.n_batch:
        raise ValueError(f"BCOO: cannot add out_axis={axis} for BCOO array with "
                         f"n_batch={elt.n_batch}. BCOO batch axes must be a contiguous block "
                         "of leading dimensions.")
    return axis


def _bcoo_to_elt(val, axis):
    return BCOO((val.data, val.indices), shape=val.shape[:axis] + val.shape[axis + 1:],
                indices_sorted=val.indices_sorted, unique_indices=val.unique_indices)


def _bcoo_from_elt(elt, axis_size, axis):
    return BCOO((elt.data, elt.indices), shape=elt.shape[:axis] + (axis_size,) + elt.shape[axis:],
                indices_sorted=elt.indices_sorted, unique_indices=elt.unique_indices)


_vmap.register_vmappable(BCOO, _bcoo_in_axis, _bcoo_out_axis, _bcoo_to_elt, _bcoo_from_elt)

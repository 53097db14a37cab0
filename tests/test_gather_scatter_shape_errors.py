"""gather/scatter shape-rule errors: the same exception type and message as JAX's (XLA's
Gather/Scatter shape inference, checked in JAX's order), eagerly and under ``jit``."""
import numpy as np
import pytest

import jax
from jax import lax as jl

import xform
from xform import lax as xl

O = (10, 9, 8, 7, 6)
I5 = (5, 4, 3, 2, 5)


def _g(offset, collapsed, sim, obd=(), sibd=()):
    return dict(offset_dims=offset, collapsed_slice_dims=collapsed, start_index_map=sim,
                operand_batching_dims=obd, start_indices_batching_dims=sibd)


GATHER = [
    (O, I5, _g((4, 5, 6, 7, 7), (), (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),    # repeated offset
    (O, I5, _g((4, 5, 6, 8, 7), (), (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),    # unsorted offset
    (O, I5, _g((4, 5, 6, 7, 9), (), (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),    # offset too big
    (O, I5, _g((4, 5, 6), (1,), (0, 1, 2, 3)), (10, 1, 8, 7, 6)),           # index map length
    (O, I5, _g((4, 5, 6, 7, 8), (), (0, 1, 2, 3, 7)), (10, 9, 8, 7, 6)),    # map out of range
    (O, I5, _g((4, 5, 6, 7, 8), (), (0, 1, 2, 3, 3)), (10, 9, 8, 7, 6)),    # repeated map
    (O, I5, _g((4, 5, 6), (2, 1), (0, 1, 2, 3, 4)), (10, 1, 1, 7, 6)),      # unsorted collapsed
    (O, I5, _g((4, 5, 6), (0, 19), (0, 1, 2, 3, 4)), (1, 9, 8, 7, 6)),      # collapsed range
    (O, I5, _g((4, 5, 6), (1,), (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),        # collapsed bound
    (O, I5, _g((4, 5, 6, 7), (), (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),       # offset count
    (O, I5, _g((4, 5, 6, 7, 8), (), (0, 1, 2, 3, 4)), (10, 9, 8, 100, 6)),  # slice too large
    (O, I5, _g((4, 5, 6, 7, 8), (), (0, 1, 2, 3, 4)), (10, 9, 8, 7)),       # slice count
    ((10, 9, 8, 7, 6), (10, 9, 5), _g((3, 4, 5), (1,), (1,), (0, 2), (0, 1)),
     (1, 1, 1, 7, 6)),                                                       # batch mismatch
    ((10, 9, 8, 7, 6), (10, 9, 1), _g((3, 4, 5), (1,), (1,), (0, 2), (0, 2)),
     (1, 1, 1, 7, 6)),                                                       # index vector dim
    ((10, 9, 8, 7, 6), (10, 9, 1), _g((3, 4, 5), (1,), (1,), (0,), (0, 1)),
     (1, 1, 8, 7, 6)),                                                       # batch counts
]


def _check_same_error(fx, fj, *args):
    with pytest.raises(Exception) as ej:
        fj(*args)
    for f in (fx, xform.jit(fx)):
        with pytest.raises(type(ej.value)) as ex:
            f(*args)
        assert str(ex.value) == str(ej.value)


@pytest.mark.parametrize("oshape,ishape,dn,slice_sizes", GATHER)
def test_gather_shape_errors_match_jax(oshape, ishape, dn, slice_sizes):
    x, i = np.ones(oshape, np.float32), np.zeros(ishape, np.int32)
    _check_same_error(
        lambda x, i: xl.gather(x, i, xl.GatherDimensionNumbers(**dn), slice_sizes),
        lambda x, i: jl.gather(x, i, jl.GatherDimensionNumbers(**dn), slice_sizes), x, i)


def _s(uwd, iwd, sdod, obd=(), sibd=()):
    return dict(update_window_dims=uwd, inserted_window_dims=iwd,
                scatter_dims_to_operand_dims=sdod, operand_batching_dims=obd,
                scatter_indices_batching_dims=sibd)


SCATTER = [
    ((10, 9, 8, 7, 6), (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4, 1),
     _s((4, 5, 6), (1, 2), (0, 1, 2, 3, 4))),                               # updates rank
    ((10, 9, 8, 7, 6), (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4),
     _s((4, 5, 6), (1,), (0, 1, 2, 3, 4))),                                 # window size
    ((10, 9, 8, 7, 6), (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4),
     _s((4, 6, 5), (1, 2), (0, 1, 2, 3, 4))),                               # unsorted window
    ((10, 9, 8, 7, 6), (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4),
     _s((4, 5, 7), (1, 2), (0, 1, 2, 3, 4))),                               # window range
    ((10, 9, 8, 7, 6), (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4),
     _s((4, 5, 6), (2, 1), (0, 1, 2, 3, 4))),                               # unsorted inserted
    ((10, 9, 8, 7, 6), (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4),
     _s((4, 5, 6), (1, 1), (0, 1, 2, 3, 4))),                               # repeated inserted
    ((10, 9, 8, 7, 6), (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4),
     _s((4, 5, 6), (1, 5), (0, 1, 2, 3, 4))),                               # inserted range
    ((10, 9, 8, 7, 6), (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4),
     _s((4, 5, 6), (1, 2), (0, 1, 2, 3))),                                  # map length
    ((10, 9, 8, 7, 6), (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4),
     _s((4, 5, 6), (1, 2), (0, 1, 2, 3, 10))),                              # map range
    ((10, 9, 8, 7, 6), (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4),
     _s((4, 5, 6), (1, 2), (0, 1, 2, 2, 3))),                               # repeated map
    ((64, 48), (32, 1), (65, 32), _s((0,), (1,), (1,))),                    # window too big
    ((64, 48), (32, 1), (64, 31), _s((1,), (0,), (1,))),                    # scatter bounds
    ((10, 9, 8, 7, 6, 5), (10, 9, 5), (10, 9, 7, 6, 5),
     _s((2, 3, 4), (1,), (1,), (0, 2), (0, 1))),                            # batch sizes
]


@pytest.mark.parametrize("oshape,ishape,ushape,dn", SCATTER)
def test_scatter_shape_errors_match_jax(oshape, ishape, ushape, dn):
    x, i, u = (np.ones(oshape, np.int32), np.zeros(ishape, np.int32),
               np.ones(ushape, np.int32))
    _check_same_error(
        lambda x, i, u: xl.scatter(x, i, u, xl.ScatterDimensionNumbers(**dn)),
        lambda x, i, u: jl.scatter(x, i, u, jl.ScatterDimensionNumbers(**dn)), x, i, u)


def test_valid_gather_and_scatter_still_match_jax():
    rng = np.random.RandomState(0)
    x = rng.randn(5, 4, 3).astype(np.float32)
    i = np.array([[[0, 1], [4, 2]], [[3, 0], [1, 1]]], np.int32)
    dn = _g((2, 3), (0,), (0, 1))
    got = xl.gather(x, i, xl.GatherDimensionNumbers(**dn), (1, 2, 3))
    want = jl.gather(x, i, jl.GatherDimensionNumbers(**dn), (1, 2, 3))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    u = rng.randn(2, 2, 2, 3).astype(np.float32)
    sd = _s((2, 3), (0,), (0, 1))
    got = xl.scatter_add(x, i, u, xl.ScatterDimensionNumbers(**sd))
    want = jl.scatter_add(x, i, u, jl.ScatterDimensionNumbers(**sd))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)

"""Shared helpers for the xform.numpy tests: compare with real jax.numpy."""
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

jax.config.update("jax_platforms", "cpu")

DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.uint8, np.bool_]
FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16]
TOL = {np.dtype(np.float32): 2e-5, np.dtype(np.float16): 2e-3,
       np.dtype(ml_dtypes.bfloat16): 2e-2}

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def values(dtype, shape, lo=-4, hi=4):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return hnp.arrays(np.bool_, shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return hnp.arrays(dt, shape, elements=st.integers(max(lo, info.min), min(hi, info.max)))
    # No subnormals: XLA on CPU flushes them to zero (a hardware mode, not a semantic of
    # the operations), so comparisons of subnormals legitimately differ from NumPy.
    return hnp.arrays(np.float32, shape, elements=st.floats(lo, hi, width=32,
                                                            allow_subnormal=False)).map(
        lambda a: a.astype(dt))


def check(ours, theirs, tol=None, check_weak=True):
    """Shape, dtype, weak type and values agree (NaNs in the same places)."""
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            check(o, t, tol, check_weak)
        return
    assert tuple(ours.shape) == tuple(theirs.shape), (ours.shape, theirs.shape)
    assert np.dtype(ours.dtype) == np.dtype(theirs.dtype), (ours.dtype, theirs.dtype)
    if check_weak:
        assert bool(getattr(ours, "weak_type", False)) == bool(getattr(theirs, "weak_type", False)), \
            (getattr(ours, "weak_type", False), theirs)
    o, t = np.asarray(ours), np.asarray(theirs)
    if o.dtype.kind in "biu" and o.dtype != ml_dtypes.bfloat16:
        np.testing.assert_array_equal(o, t)
        return
    rtol = tol if tol is not None else TOL.get(np.dtype(ours.dtype), 1e-6)
    np.testing.assert_allclose(o.astype(np.float64), t.astype(np.float64), rtol=rtol,
                               atol=rtol, equal_nan=True)

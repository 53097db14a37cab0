"""Running a Python host callback on concrete values (shared by the eager impls of
``pure_callback``/``io_callback`` in xform and their compiled lowering, so both check
the callback's results the same way)."""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import dtypes


def run_host(callback, result_avals, args):
    """Call ``callback`` on concrete values; NumPy results checked against the avals."""
    outs = callback(*args)
    if len(outs) != len(result_avals):
        raise RuntimeError(f"Mismatched number of outputs from {callback.what} "
                           f"{callback.__name__!r}. Expected: {len(result_avals)}, "
                           f"Actual: {len(outs)}")
    vals = []
    for i, (o, a) in enumerate(zip(outs, result_avals)):
        v = np.asarray(o)
        v = v.astype(dtypes.canonicalize_dtype(v.dtype), copy=False)
        if v.shape != a.shape:
            raise RuntimeError(f"Incorrect output shape for return value #{i} of "
                               f"{callback.what}: Expected: {a.shape}, Actual: {v.shape}")
        if v.dtype != a.dtype:
            raise RuntimeError(f"Incorrect output dtype for return value #{i} of "
                               f"{callback.what}: Expected: {a.dtype}, Actual: {v.dtype}")
        vals.append(v)
    return vals

"""Shared helpers of the ``xform.scipy.stats`` distributions."""
from __future__ import annotations

import numpy as np

from xform import numpy as xnp
from xform.numpy import _util as U


def promote(name, *args):
    """JAX's promote_args_inexact: array-like check, inexact promotion, broadcasting."""
    U.check_arraylike(name, *args)
    return U.promote_args_inexact(name, *args)


def const(x, v):
    """A weak scalar of ``x``'s dtype (JAX's ``_lax_const``)."""
    return U.to_array(v, U.dtype_of(x), True)


def select(conds, vals, default):
    """``jnp.select``: the first true condition picks its value."""
    out = default
    for c, v in zip(reversed(conds), reversed(vals)):
        out = xnp.where(c, v, out)
    return out


NAN, NEG_INF = np.nan, -np.inf

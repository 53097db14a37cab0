"""``xform.scipy.cluster.vq``: vector quantization (``jax.scipy.cluster.vq.vq``)."""
from __future__ import annotations

from xform import numpy as xnp
from xform.numpy import _util as U

__all__ = ["vq"]


def vq(obs, code_book, check_finite=True):
    """(index of the nearest code, its Euclidean distance) for each observation."""
    del check_finite
    U.check_arraylike("scipy.cluster.vq.vq", obs, code_book)
    obs, cb = U.promote_dtypes_inexact(U.to_array(obs), U.to_array(code_book))
    if obs.ndim != cb.ndim:
        raise ValueError("Observation and code_book should have the same rank")
    if obs.ndim == 1:
        obs, cb = obs[..., None], cb[..., None]
    if obs.ndim != 2:
        raise ValueError("ndim different than 1 or 2 are not supported")
    dist = xnp.linalg.norm(obs[:, None, :] - cb[None, :, :], axis=-1)
    code = xnp.argmin(dist, axis=-1)
    return code, xnp.take_along_axis(dist, code[:, None], axis=1)[:, 0]

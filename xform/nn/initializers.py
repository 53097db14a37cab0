"""``xform.nn.initializers``: ``jax.nn.initializers`` (same draws as JAX from the same key:
written against ``xform.random``, whose bits match JAX's)."""
from __future__ import annotations

import math
import typing
from typing import Protocol

import numpy as np

from xform._src.interpreters import dtypes
from xform import numpy as xnp
from xform import random

__all__ = ["Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
           "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
           "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
           "variance_scaling", "xavier_normal", "xavier_uniform", "zeros"]


def _random():
    return random


def _default(dtype):
    return dtypes.default_float_dtype() if dtype is None else dtype


def _no_sharding(out_sharding, name):
    if out_sharding is not None:
        raise NotImplementedError(f"nn.initializers.{name}: out_sharding is not supported by "
                                  "xform (single-device arrays); pass out_sharding=None.")


@typing.runtime_checkable
class Initializer(Protocol):
    """``init(key, shape, dtype=None, out_sharding=None) -> Array``."""

    def __call__(self, key, shape, dtype=None, out_sharding=None):
        ...


def zeros(key, shape, dtype=None, out_sharding=None):
    """An initializer returning zeros of ``shape``."""
    return xnp.zeros(shape, _default(dtype))


def ones(key, shape, dtype=None, out_sharding=None):
    """An initializer returning ones of ``shape``."""
    return xnp.ones(shape, _default(dtype))


def constant(value, dtype=None):
    """An initializer returning ``value`` broadcast to ``shape``."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding(out_sharding, "constant")
        return xnp.full(shape, value, dtype=_default(dtype))
    return init


def uniform(scale=1e-2, dtype=None):
    """Uniform on [0, scale)."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding(out_sharding, "uniform")
        dtype = _default(dtype)
        return _random().uniform(key, shape, dtype) * xnp.array(scale, dtype)
    return init


def normal(stddev=1e-2, dtype=None):
    """Normal with mean 0 and standard deviation ``stddev``."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding(out_sharding, "normal")
        dtype = _default(dtype)
        return _random().normal(key, shape, dtype) * xnp.array(stddev, dtype)
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """Normal truncated to [lower, upper], scaled by ``stddev``."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding(out_sharding, "truncated_normal")
        dtype = _default(dtype)
        return _random().truncated_normal(key, lower, upper, shape, dtype) * \
            xnp.array(stddev, dtype)
    return init


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         "weights tensor with default in_axis. Must be at least 2D or specify "
                         "in_axis explicitly.")
    size = lambda ax: shape[ax] if isinstance(ax, int) else \
        math.prod([shape[i] for i in ax])  # noqa: E731
    in_size, out_size, batch_size = size(in_axis), size(out_axis), size(batch_axis)
    receptive = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive, out_size * receptive


def _complex_dtype(real):
    return np.dtype(np.complex128) if np.dtype(real) == np.float64 else np.dtype(np.complex64)


def _complex_uniform(key, shape, dtype):
    random = _random()
    key_r, key_theta = random.split(key)
    real = np.array(0, dtype).real.dtype
    cdt = _complex_dtype(real)
    r = xnp.sqrt(2 * random.uniform(key_r, shape, real)).astype(cdt)
    theta = 2 * np.pi * random.uniform(key_theta, shape, real).astype(cdt)
    return r * xnp.exp(1j * theta)


def _complex_truncated_normal(key, upper, shape, dtype):
    random = _random()
    key_r, key_theta = random.split(key)
    real = np.array(0, dtype).real.dtype
    cdt = _complex_dtype(real)
    t = (1 - xnp.exp(xnp.array(-upper ** 2, cdt))) * random.uniform(key_r, shape, real).astype(cdt)
    r = xnp.sqrt(-xnp.log(1 - t))
    theta = 2 * np.pi * random.uniform(key_theta, shape, real).astype(cdt)
    return r * xnp.exp(1j * theta)


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None):
    """Samples with variance ``scale / n`` (n the fan given by ``mode``) from a truncated
    normal, normal or uniform ``distribution`` (complex dtypes: the complex analogues)."""
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"invalid distribution for variance scaling initializer: "
                         f"{distribution}")

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding(out_sharding, "variance_scaling")
        shape = tuple(int(s) for s in shape)
        dtype = _default(dtype)
        random = _random()
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
        variance = xnp.array(scale / denominator, dtype=dtype)
        floating = dtypes.issubdtype(dtype, np.floating)
        if distribution == "truncated_normal":
            if floating:
                stddev = xnp.sqrt(variance) / xnp.array(.87962566103423978, dtype)
                return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
            stddev = xnp.sqrt(variance) / xnp.array(.95311164380491208, dtype)
            return _complex_truncated_normal(key, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * xnp.sqrt(variance)
        if floating:
            return random.uniform(key, shape, dtype, -1) * xnp.sqrt(3 * variance)
        return _complex_uniform(key, shape, dtype) * xnp.sqrt(variance)
    return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """A uniformly random orthogonal matrix (QR of a normal matrix), reshaped to ``shape``
    with the columns along ``column_axis``, times ``scale``."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding(out_sharding, "orthogonal")
        dtype = _default(dtype)
        shape = tuple(int(s) for s in shape)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if any(d == 0 for d in shape):
            return xnp.zeros(shape, dtype=dtype)
        n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
        Q = _random().orthogonal(key, n_rows, (), dtype, n_cols)
        Q = xnp.reshape(Q, tuple(np.delete(shape, column_axis)) + (shape[column_axis],))
        Q = xnp.moveaxis(Q, -1, column_axis)
        return xnp.array(scale, dtype) * Q
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """The delta-orthogonal convolution kernel: an orthogonal matrix at the spatial centre
    of a 3-D/4-D/5-D kernel, zeros elsewhere."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding(out_sharding, "delta_orthogonal")
        dtype = _default(dtype)
        shape = tuple(int(s) for s in shape)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        W = xnp.zeros(shape, dtype=dtype)
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return W.at[centre + (Ellipsis,)].set(ortho)
    return init

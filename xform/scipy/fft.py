"""``xform.scipy.fft``: the discrete cosine transform (JAX's ``jax.scipy.fft``: ``dct``,
``dctn``, ``idct``, ``idctn``; type 2 only, as in JAX 0.10.2).

Built from ``numpy.fft`` (the ``fft`` primitive) and lax reshaping ops, so ``jit``,
``grad`` and ``vmap`` go through them.  DCT-II of length N by one complex FFT of
length N (Makhoul, 1980): reorder ``x`` as its even-indexed entries followed by its
odd-indexed ones reversed, FFT, and rotate bin k by ``exp(-i pi k / 2N)``; the inverse
rebuilds the rotated spectrum from bins k and N-k, inverse-FFTs and undoes the
reordering.  Normalization as SciPy: ``None``/``"backward"`` (``y_k = 2 sum x_n
cos(pi k (2n+1) / 2N)``) or ``"ortho"`` (orthonormal).
"""
from __future__ import annotations

import math
import operator

import numpy as np
from xform import lax
from xform.numpy._util import check_arraylike
import xform.numpy as xnp

__all__ = ["dct", "dctn", "idct", "idctn"]


def _np():
    return xnp


def _lax():
    return lax


def _check(name, type, norm):
    if type != 2:
        raise NotImplementedError("Only DCT type 2 is implemented.")
    if norm is not None and norm not in ("backward", "ortho"):
        raise ValueError(f"jax.scipy.fft.{name}: norm={norm!r} is not implemented")


def _axis(axis, ndim, name):
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for array of dimension "
                         f"{ndim}")
    return a % ndim


def _resize(x, n, axis):
    """Zero-pad or truncate ``x`` along ``axis`` to length ``n``."""
    if n is None or n == x.shape[axis]:
        return x
    if n < 1:
        raise ValueError(f"invalid number of data points ({n}) specified")
    lax = _lax()
    cfg = [(0, n - x.shape[axis] if a == axis else 0, 0) for a in range(x.ndim)]
    return lax.pad(x, _np().zeros((), x.dtype), cfg)


def _bcast(v, axis, ndim):
    """A 1-D vector along ``axis`` of an ``ndim``-array."""
    return v.reshape(tuple(-1 if a == axis else 1 for a in range(ndim)))


def _ortho_scale(n, axis, ndim, dtype):
    """Per-bin factors turning the backward DCT-II into the orthonormal one."""
    f = np.full(n, math.sqrt(1.0 / (2 * n)))
    f[0] = math.sqrt(1.0 / (4 * n))
    return _bcast(_np().asarray(f, dtype=dtype), axis, ndim)


def _reorder(x, axis):
    """(x0, x2, x4, ..., x5, x3, x1) along ``axis``."""
    lax = _lax()
    even = lax.slice_in_dim(x, 0, None, 2, axis)
    odd = lax.rev(lax.slice_in_dim(x, 1, None, 2, axis), (axis,))
    return lax.concatenate([even, odd], axis)


def _unreorder(v, axis):
    """The inverse of ``_reorder``."""
    xnp = _np()
    n = v.shape[axis]
    h = (n + 1) // 2
    perm = np.empty(n, dtype=np.int32)
    perm[0::2] = np.arange(h)                   # x[2m] = v[m]
    perm[1::2] = n - 1 - np.arange(n - h)       # x[2m+1] = v[n-1-m]
    return xnp.take(v, xnp.asarray(perm), axis=axis)


def _dct_real(x, axis, norm):
    xnp = _np()
    n = x.shape[axis]
    spec = xnp.fft.fft(_reorder(x, axis), axis=axis)
    rdt = spec.real.dtype
    k = np.arange(n)
    rot = _bcast(xnp.asarray(np.exp(-0.5j * np.pi * k / n), dtype=spec.dtype), axis, x.ndim)
    out = 2 * (spec * rot).real
    if norm == "ortho":
        out = out * _ortho_scale(n, axis, x.ndim, rdt)
    return out


def _idct_real(y, axis, norm):
    xnp, lax = _np(), _lax()
    n = y.shape[axis]
    cdt = xnp.result_type(y.dtype, np.complex64)
    y = y.astype(xnp.zeros((), cdt).real.dtype)          # float16 -> float32, as JAX
    if norm == "ortho":
        y = y / _ortho_scale(n, axis, y.ndim, y.dtype)
    # Z_k = (y_k - i y_{N-k}) / 2 with y_N = 0; the spectrum is Z_k exp(i pi k / 2N)
    shifted = lax.concatenate([xnp.zeros_like(lax.slice_in_dim(y, 0, 1, 1, axis)),
                               lax.rev(lax.slice_in_dim(y, 1, None, 1, axis), (axis,))], axis)
    k = np.arange(n)
    rot = _bcast(xnp.asarray(0.5 * np.exp(0.5j * np.pi * k / n), dtype=cdt), axis, y.ndim)
    spec = lax.complex(y, -shifted) * rot
    return _unreorder(xnp.fft.ifft(spec, axis=axis).real, axis)


def _prep(name, x):
    check_arraylike(name, x)
    return _np().asarray(x)


def _split_complex(f, x, *args):
    xnp, lax = _np(), _lax()
    if xnp.issubdtype(x.dtype, np.complexfloating):
        return lax.complex(f(x.real, *args), f(x.imag, *args))
    return f(x, *args)


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """Discrete cosine transform (type 2) of ``x`` along ``axis`` (zero-padded or
    truncated to ``n``), as ``scipy.fft.dct``."""
    x = _prep("dct", x)
    _check("dct", type, norm)
    axis = _axis(axis, x.ndim, "dct")

    def f(v, axis, n, norm):
        v = _resize(v, n, axis)
        if not _np().issubdtype(v.dtype, np.inexact):
            v = v.astype(_np().result_type(v.dtype, float))
        return _dct_real(v, axis, norm)
    return _split_complex(f, x, axis, n, norm)


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """Inverse of ``dct`` (type 2) along ``axis``, as ``scipy.fft.idct``."""
    x = _prep("idct", x)
    _check("idct", type, norm)
    axis = _axis(axis, x.ndim, "idct")

    def f(v, axis, n, norm):
        v = _resize(v, n, axis)
        if not _np().issubdtype(v.dtype, np.inexact):
            v = v.astype(_np().result_type(v.dtype, float))
        return _idct_real(v, axis, norm)
    return _split_complex(f, x, axis, n, norm)


def _nd_axes(name, x, s, axes):
    if s is not None:
        try:
            s = [operator.index(v) for v in s]
        except TypeError:
            s = [operator.index(s)]
        if len(s) > x.ndim:
            raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(s)}")
    if axes is None:
        axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
    else:
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        axes = tuple(_axis(a, x.ndim, name) for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{name}: repeated axis in axes {axes}")
    if s is not None and len(s) != len(axes):
        raise ValueError(f"{name}: s {tuple(s)} and axes {axes} must have the same length")
    return axes, (s if s is not None else [None] * len(axes))


def dctn(x, type: int = 2, s=None, axes=None, norm: str | None = None):
    """Multidimensional DCT (type 2) over ``axes`` (the last ``len(s)`` axes, or all),
    each zero-padded or truncated to ``s``, as ``scipy.fft.dctn``."""
    x = _prep("dctn", x)
    _check("dctn", type, norm)
    axes, sizes = _nd_axes("dctn", x, s, axes)
    for a, n in zip(axes, sizes):
        x = dct(x, n=n, axis=a, norm=norm)
    return x


def idctn(x, type: int = 2, s=None, axes=None, norm: str | None = None):
    """Inverse of ``dctn`` (type 2), as ``scipy.fft.idctn``."""
    x = _prep("idctn", x)
    _check("idctn", type, norm)
    axes, sizes = _nd_axes("idctn", x, s, axes)
    for a, n in zip(axes, sizes):
        x = idct(x, n=n, axis=a, norm=norm)
    return x

"""``xform.numpy.fft``: the 18 functions of ``jax.numpy.fft`` on the ``fft`` primitive.

Transforms over more than 3 axes are split into FFTs of at most 3 axes, as JAX does.
``norm``: None/"backward" (no scaling forward, 1/n inverse), "ortho", "forward".
"""
from __future__ import annotations

import operator

import numpy as np
from xform._src.interpreters import dtypes
from xform._src.primitives import fft as _fft_prims
from xform.numpy import _util
from xform.numpy._signal import conj

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
           "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift",
           "ifftshift"]


def _xnp():
    import xform.numpy as xnp  # deferred: import cycle
    return xnp


def _lax_fft():
    return _fft_prims.FftType, _fft_prims.fft


def _conj(x):
    return conj(x)


def _norm_factor(s, func_name, norm, dtype):
    if norm is None or norm == "backward":
        return None
    n = float(np.prod(s, dtype=np.float64)) if len(s) else 1.0
    if norm == "ortho":
        f = np.sqrt(n) if func_name.startswith("i") else 1 / np.sqrt(n)
    elif norm == "forward":
        f = n if func_name.startswith("i") else 1 / n
    else:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or '
                         '"forward".')
    return np.asarray(f).astype(dtype)


def _core_nd(arr, typ, s):
    FftType, lax_fft = _lax_fft()
    xnp = _xnp()
    if len(s) <= 3:
        return lax_fft(arr, typ, tuple(s))
    n = 2 if len(s) == 4 else 3
    src = tuple(range(arr.ndim - len(s), arr.ndim - n))
    dst = tuple(range(arr.ndim - len(s) + n, arr.ndim))
    if typ in (FftType.RFFT, FftType.FFT):
        arr = lax_fft(arr, typ, tuple(s)[-n:])
        arr = xnp.moveaxis(arr, src, dst)
        arr = _core_nd(arr, FftType.FFT, s[:-n])
        return xnp.moveaxis(arr, dst, src)
    arr = xnp.moveaxis(arr, src, dst)
    arr = _core_nd(arr, FftType.IFFT, s[:-n])
    arr = xnp.moveaxis(arr, dst, src)
    return lax_fft(arr, typ, tuple(s)[-n:])


def _core(func_name, typ_name, a, s, axes, norm):
    FftType, _ = _lax_fft()
    typ = FftType[typ_name]
    xnp = _xnp()
    a = _util.ensure_arraylike(f"xform.numpy.fft.{func_name}", a)
    arr = xnp.asarray(a)
    if s is not None:
        s = tuple(operator.index(v) for v in s)
        if any(v <= 0 for v in s):
            raise ValueError("Shape should be positive.")
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    orig_axes = axes
    if axes is None:
        axes = range(arr.ndim) if s is None else range(arr.ndim - len(s), arr.ndim)
    else:
        axes = tuple(_util.canonicalize_axis(ax, arr.ndim) for ax in axes)
    axes = tuple(axes)
    if len(axes) != len(set(axes)):
        raise ValueError(f"xform.numpy.fft.{func_name} does not support repeated axes. Got "
                         f"axes {tuple(orig_axes)}.")
    if orig_axes is not None:
        new = tuple(range(arr.ndim - len(axes), arr.ndim))
        arr = xnp.moveaxis(arr, axes, new)
        axes = new
    if s is not None:
        in_s = list(arr.shape)
        for ax, v in zip(axes, s):
            in_s[ax] = v
        if typ == FftType.IRFFT:
            in_s[-1] = in_s[-1] // 2 + 1
        arr = arr[tuple(slice(v) for v in in_s)]
        pads = [(0, v - w) for v, w in zip(in_s, arr.shape)]
        if any(hi for _, hi in pads):
            arr = xnp.pad(arr, pads)
    else:
        if typ == FftType.IRFFT:
            s = [arr.shape[ax] for ax in axes[:-1]]
            if axes:
                s += [max(0, 2 * (arr.shape[axes[-1]] - 1))]
        else:
            s = [arr.shape[ax] for ax in axes]
    out = _core_nd(arr, typ, list(s))
    f = _norm_factor(s, func_name, norm, out.dtype)
    if f is not None:
        out = out * f
    if orig_axes is not None:
        out = xnp.moveaxis(out, axes, orig_axes)
    return out


def _core_1d(func_name, typ, a, n, axis, norm):
    if isinstance(axis, (list, tuple)):
        raise ValueError(f"xform.numpy.fft.{func_name} does not support multiple axes. Please "
                         f"use xform.numpy.fft.{func_name}n. Got axis = {axis!r}.")
    return _core(func_name, typ, a, None if n is None else [n],
                 None if axis is None else [axis], norm)


def _core_2d(func_name, typ, a, s, axes, norm):
    if len(axes) != 2:
        raise ValueError(f"xform.numpy.fft.{func_name} only supports 2 axes. Got axes = "
                         f"{axes!r}.")
    return _core(func_name, typ, a, s, axes, norm)


def fft(a, n=None, axis=-1, norm=None):
    """1-D discrete Fourier transform."""
    return _core_1d("fft", "FFT", a, n, axis, norm)


def ifft(a, n=None, axis=-1, norm=None):
    """1-D inverse discrete Fourier transform."""
    return _core_1d("ifft", "IFFT", a, n, axis, norm)


def rfft(a, n=None, axis=-1, norm=None):
    """1-D DFT of a real signal: the n//2 + 1 non-negative frequencies."""
    return _core_1d("rfft", "RFFT", a, n, axis, norm)


def irfft(a, n=None, axis=-1, norm=None):
    """Inverse of ``rfft``: a real signal of length n (default 2 * (m - 1))."""
    return _core_1d("irfft", "IRFFT", a, n, axis, norm)


def _hermitian_input(name, a, axis):
    a = _xnp().asarray(a)
    if isinstance(axis, (list, tuple)):
        raise ValueError(f"xform.numpy.fft.{name} does not support multiple axes. Please use "
                         f"xform.numpy.fft.{name}n. Got axis = {axis!r}.")
    if a.ndim == 0:
        raise ValueError(f"xform.numpy.fft.{name} requires an array of at least 1 dimension, "
                         "got a scalar")
    return a


def hfft(a, n=None, axis=-1, norm=None):
    """DFT of a Hermitian-symmetric signal given by its first half (real output)."""
    a = _hermitian_input("hfft", a, axis)
    nn = (a.shape[axis] - 1) * 2 if n is None else n
    out = _core_1d("hfft", "IRFFT", _conj(a), n, axis, norm)
    return out * np.asarray(nn).astype(out.dtype)


def ihfft(a, n=None, axis=-1, norm=None):
    """Inverse of ``hfft``: first half of the (conjugated) spectrum of a real signal."""
    a = _hermitian_input("ihfft", a, axis)
    nn = a.shape[axis] if n is None else n
    out = _core_1d("ihfft", "RFFT", a, n, axis, norm)
    return _conj(out) * np.asarray(1 / nn).astype(out.dtype)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    return _core_2d("fft2", "FFT", a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    return _core_2d("ifft2", "IFFT", a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    return _core_2d("rfft2", "RFFT", a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    return _core_2d("irfft2", "IRFFT", a, s, axes, norm)


def fftn(a, s=None, axes=None, norm=None):
    """N-d discrete Fourier transform over ``axes`` (all by default)."""
    return _core("fftn", "FFT", a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    return _core("ifftn", "IFFT", a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    return _core("rfftn", "RFFT", a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    return _core("irfftn", "IRFFT", a, s, axes, norm)


def _check_freq_args(name, n, d):
    if isinstance(n, (list, tuple)):
        raise ValueError(f"The n argument of xform.numpy.fft.{name} only takes an int. Got "
                         f"n = {list(n)}.")
    if isinstance(d, (list, tuple)):
        raise ValueError(f"The d argument of xform.numpy.fft.{name} only takes a single value. "
                         f"Got d = {list(d)}.")


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of an n-point DFT with sample spacing d."""
    xnp = _xnp()
    _check_freq_args("fftfreq", n, d)
    out_dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    dt = dtypes.to_inexact_dtype(out_dt)
    if dtypes.is_complex(dt):
        dt = np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)
    i = xnp.arange(n, dtype=dt)
    k = (i + n // 2) % n - n // 2
    return (k.astype(dt) / xnp.asarray(d * n, dtype=dt)).astype(out_dt)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of ``rfft`` (the n//2 + 1 non-negative ones)."""
    xnp = _xnp()
    _check_freq_args("rfftfreq", n, d)
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    k = xnp.arange(0, n // 2 + 1 if n % 2 == 0 else (n - 1) // 2 + 1, dtype=dt)
    return k / xnp.asarray(d * n, dtype=dt)


def _shift(name, x, axes, inverse):
    """``x`` rolled by half of each axis in ``axes`` (all by default): ``fftshift``, or
    with ``inverse`` ``ifftshift`` (which rounds the other way on odd lengths)."""
    xnp = _xnp()
    x = xnp.asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))
    single = isinstance(axes, int)
    axs = _util.axis_tuple(axes)
    for ax in axs:
        if not -x.ndim <= int(ax) < x.ndim:
            raise IndexError(f"{name}: axis {int(ax)} is out of bounds for an array of "
                             f"dimension {x.ndim} (shape {x.shape}); pass axes within "
                             f"[-{x.ndim}, {x.ndim})")
    shift = [(-(x.shape[ax] // 2) if inverse else x.shape[ax] // 2) for ax in axs]
    return xnp.roll(x, shift[0] if single else shift, axes)


def fftshift(x, axes=None):
    """Move the zero frequency to the centre."""
    return _shift("fftshift", x, axes, False)


def ifftshift(x, axes=None):
    """Inverse of ``fftshift``."""
    return _shift("ifftshift", x, axes, True)

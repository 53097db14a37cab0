"""``xform.scipy.signal``: N-d convolution and correlation (``jax.scipy.signal``)."""
from __future__ import annotations

import numpy as np
from xform._src.primitives.convolution import conv_general_dilated
from xform.numpy import _util
from xform.numpy._signal import conj
import xform.numpy as xnp

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve"]


def _np():
    return xnp


def _conj(x):
    return conj(_np().asarray(x))


def _convolve_nd(in1, in2, mode, *, precision):
    xnp = _np()
    if mode not in ("full", "same", "valid"):
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    in1, in2 = xnp.asarray(in1), xnp.asarray(in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 must have the same number of dimensions")
    if in1.size == 0 or in2.size == 0:
        raise ValueError("zero-size arrays not supported in convolutions, got shapes "
                         f"{in1.shape} and {in2.shape}.")
    in1, in2 = _util.promote_dtypes_inexact(in1, in2)
    no_swap = all(a >= b for a, b in zip(in1.shape, in2.shape))
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    if not (no_swap or swap):
        raise ValueError("One input must be smaller than the other in every dimension.")
    shape_o = in2.shape
    if swap:
        in1, in2 = in2, in1
    shape = in2.shape
    in2 = xnp.flip(in2)
    if mode == "valid":
        padding = [(0, 0) for _ in shape]
    elif mode == "same":
        padding = [(s - 1 - (so - 1) // 2, s - so + (so - 1) // 2)
                   for s, so in zip(shape, shape_o)]
    else:
        padding = [(s - 1, s - 1) for s in shape]
    out = conv_general_dilated(in1[None, None], in2[None, None], (1,) * len(shape), padding,
                               precision=precision)
    return out[0, 0]


def convolve(in1, in2, mode="full", method="auto", precision=None):
    """N-d convolution of two arrays of equal rank (``method='fft'``: via FFTs)."""
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method in ("direct", "auto"):
        return _convolve_nd(in1, in2, mode, precision=precision)
    raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")


def _check_2d(name, in1, in2, boundary, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0 "
                                  "(as jax.scipy.signal)")
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """2-D convolution (``boundary='fill'`` with zero fill)."""
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return _convolve_nd(in1, in2, mode, precision=precision)


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """N-d cross-correlation: convolution with the flipped conjugate of ``in2``."""
    xnp = _np()
    return convolve(in1, xnp.flip(_conj(xnp.asarray(in2))), mode, precision=precision,
                    method=method)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """2-D cross-correlation (``boundary='fill'`` with zero fill)."""
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    xnp = _np()
    in1, in2 = xnp.asarray(in1), xnp.asarray(in2)
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    same_shape = all(a == b for a, b in zip(in1.shape, in2.shape))
    if mode == "same":
        return xnp.flip(_convolve_nd(xnp.flip(in1), _conj(in2), mode, precision=precision))
    if mode == "valid":
        if swap and not same_shape:
            return _convolve_nd(xnp.flip(in2), _conj(in1), mode, precision=precision)
        return xnp.flip(_convolve_nd(xnp.flip(in1), _conj(in2), mode, precision=precision))
    if swap:
        return _conj(_convolve_nd(xnp.flip(in2), _conj(in1), mode, precision=precision))
    return xnp.flip(_convolve_nd(xnp.flip(in1), _conj(in2), mode, precision=precision))


def fftconvolve(in1, in2, mode="full", axes=None):
    """Convolution through real/complex FFTs over ``axes`` (all by default)."""
    xnp = _np()
    in1, in2 = xnp.asarray(in1), xnp.asarray(in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in ("full", "same", "valid"):
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    in1, in2 = _util.promote_dtypes_inexact(in1, in2)
    axes = tuple(range(in1.ndim)) if axes is None else tuple(
        _util.canonicalize_axis(a, in1.ndim) for a in np.atleast_1d(axes))
    for i in range(in1.ndim):
        if i not in axes and in1.shape[i] != in2.shape[i] and 1 not in (in1.shape[i],
                                                                         in2.shape[i]):
            raise ValueError(f"incompatible shapes for in1 and in2: {in1.shape} and "
                             f"{in2.shape}")
    if mode == "valid":
        no_swap = all(in1.shape[i] >= in2.shape[i] for i in axes)
        swap = all(in1.shape[i] <= in2.shape[i] for i in axes)
        if not (no_swap or swap):
            raise ValueError("For 'valid' mode, one must be at least as large as the other "
                             "in every dimension")
        if swap:
            in1, in2 = in2, in1
    full = [in1.shape[i] + in2.shape[i] - 1 for i in axes]
    complex_ = in1.dtype.kind == "c" or in2.dtype.kind == "c"
    fft = xnp.fft
    if complex_:
        out = fft.ifftn(fft.fftn(in1, full, axes) * fft.fftn(in2, full, axes), full, axes)
    else:
        out = fft.irfftn(fft.rfftn(in1, full, axes) * fft.rfftn(in2, full, axes), full, axes)
    out = out.astype(in1.dtype)
    if mode == "full":
        return out
    sl = [slice(None)] * out.ndim
    for a, n in zip(axes, full):
        if mode == "same":
            m = in1.shape[a]
        else:
            m = in1.shape[a] - in2.shape[a] + 1
        start = (n - m) // 2
        sl[a] = slice(start, start + m)
    return out[tuple(sl)]

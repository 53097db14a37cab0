"""``xform.scipy.signal``: N-d convolution and correlation (``jax.scipy.signal``)."""
from __future__ import annotations

import numpy as np
from xform._src.primitives.convolution import conv_general_dilated
from xform.numpy import _util
from xform.numpy._signal import conj
import xform.numpy as xnp
import warnings

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve", "detrend",
           "stft", "istft", "welch", "csd"]


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


# ----------------------------------------------------------------- spectral analysis
# scipy.signal's stft/istft/welch/csd/detrend with JAX 0.10.2's signatures: segments are
# framed with a static gather, detrended, windowed and transformed by the FFT primitive,
# so every function is differentiable, batchable and jit-compatible.


def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):
    """Remove the mean (``type='constant'``) or the least-squares line of each piece
    between breakpoints ``bp`` (``'linear'``) along ``axis``."""
    xnp = _np()
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    _util.check_arraylike("detrend", data)
    (data,) = _util.promote_dtypes_inexact(_util.to_array(data))
    if type == "constant":
        return data - data.mean(axis, keepdims=True)
    x = xnp.moveaxis(data, axis, -1)
    N = x.shape[-1]
    bps = np.unique(np.r_[0, np.asarray(bp, dtype=int).ravel(), N])
    if np.any(bps > N):
        raise ValueError("Breakpoints must be non-negative and less than length of data "
                         f"along given axis (={N}).")
    pieces = []
    for lo, hi in zip(bps[:-1], bps[1:]):
        seg = x[..., lo:hi]
        t = xnp.arange(1, hi - lo + 1, dtype=seg.real.dtype) / (hi - lo)
        tm = t.mean()
        sm = seg.mean(-1, keepdims=True)
        tc = t - tm
        den = (tc * tc).sum()
        slope = ((seg - sm) * tc).sum(-1, keepdims=True) / xnp.where(den > 0, den, 1)
        pieces.append(seg - sm - slope * tc)
    out = xnp.concatenate(pieces, axis=-1) if len(pieces) > 1 else pieces[0]
    return xnp.moveaxis(out, -1, axis)


def _window(window, nperseg, input_length, dtype):
    """(window array, nperseg) as scipy's _triage_segments chooses them."""
    xnp = _np()
    if isinstance(window, (str, tuple)):
        if nperseg is None:
            nperseg = 256
        nperseg = int(nperseg)
        if nperseg > input_length:
            warnings.warn(f"nperseg = {nperseg} is greater than input length = "
                          f"{input_length}, using nperseg = {input_length}", stacklevel=3)
            nperseg = input_length
        if window == "hann":
            w = np.ones(1) if nperseg == 1 else \
                np.sin(np.linspace(0, np.pi, nperseg, endpoint=False)) ** 2
        else:
            from scipy.signal import get_window  # deferred: keeps `import xform` light
            w = get_window(window, nperseg)
        return xnp.asarray(w).astype(dtype), nperseg
    w = _util.to_array(window)
    if w.ndim != 1:
        raise ValueError("window must be 1-D")
    if input_length < w.shape[-1]:
        raise ValueError("window is longer than input signal")
    if nperseg is None:
        nperseg = w.shape[0]
    elif nperseg != w.shape[0]:
        raise ValueError("value specified for nperseg is different from length of window")
    return w.astype(dtype), int(nperseg)


def _extend(x, n, kind):
    xnp = _np()
    if kind == "zeros":
        return xnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)])
    if kind == "constant":
        return xnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], mode="edge")
    if kind == "even":
        return xnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], mode="reflect")
    # odd: 2 * edge - reflection
    left = 2 * x[..., :1] - xnp.flip(x[..., 1:n + 1], -1)
    right = 2 * x[..., -1:] - xnp.flip(x[..., -n - 1:-1], -1)
    return xnp.concatenate([left, x, right], axis=-1)


def _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided,
              scaling, axis, mode, boundary=None, padded=False):
    """(freqs, times, result[..., freq, segment]) of scipy's _spectral_helper."""
    xnp = _np()
    if mode not in ("psd", "stft"):
        raise ValueError(f"Unknown value for mode {mode}, must be one of: {{'psd', 'stft'}}")
    if boundary not in (None, "even", "odd", "constant", "zeros"):
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                         "['even', 'odd', 'constant', 'zeros', None]")
    same = y is None
    if same:
        _util.check_arraylike("spectral", x)
        (x,) = _util.promote_dtypes_inexact(_util.to_array(x))
    else:
        _util.check_arraylike("spectral", x, y)
        x, y = _util.promote_dtypes_inexact(_util.to_array(x), _util.to_array(y))
    if mode == "stft" and not same:
        raise ValueError("x and y must be equal if mode is 'stft'")
    axis = _util.canonicalize_axis(axis, x.ndim)
    x = xnp.moveaxis(x, axis, -1)
    if not same:
        y = xnp.moveaxis(y, axis, -1)
        if x.shape[-1] != y.shape[-1]:
            # the shorter is zero-padded, as scipy
            n = max(x.shape[-1], y.shape[-1])
            x = xnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - x.shape[-1])])
            y = xnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, n - y.shape[-1])])
        b = np.broadcast_shapes(x.shape[:-1], y.shape[:-1])
        x = xnp.broadcast_to(x, b + x.shape[-1:])
        y = xnp.broadcast_to(y, b + y.shape[-1:])
    complex_in = x.dtype.kind == "c" or (not same and y.dtype.kind == "c")
    if complex_in and return_onesided:
        warnings.warn("Input data is complex, switching to return_onesided=False",
                      stacklevel=3)
        return_onesided = False
    rdt = x.real.dtype
    n_in = x.shape[-1]
    if n_in == 0:
        raise ValueError("empty input")
    win, nperseg = _window(window, nperseg, n_in, rdt)
    nfft = nperseg if nfft is None else int(nfft)
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    nstep = nperseg - noverlap
    if boundary is not None:
        x = _extend(x, nperseg // 2, boundary)
        if not same:
            y = _extend(y, nperseg // 2, boundary)
    if padded:
        nadd = (-(x.shape[-1] - nperseg) % nstep) % nperseg
        x = xnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, nadd)])
        if not same:
            y = xnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, nadd)])
    if scaling == "density":
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == "spectrum":
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = xnp.sqrt(scale)

    def frames(v):
        nseg = (v.shape[-1] - nperseg) // nstep + 1
        idx = np.arange(nseg)[:, None] * nstep + np.arange(nperseg)[None, :]
        seg = xnp.take(v, xnp.asarray(idx), axis=-1)        # (..., nseg, nperseg)
        if detrend_type is True or (detrend_type and not isinstance(detrend_type, str)
                                    and not callable(detrend_type)):
            raise ValueError(f"Unsupported detrend type: {detrend_type}")
        if detrend_type:
            seg = detrend(seg, axis=-1, type=detrend_type) if isinstance(detrend_type, str) \
                else detrend_type(seg)
        seg = seg * win
        if return_onesided:
            return xnp.fft.rfft(seg, n=nfft, axis=-1)
        return xnp.fft.fft(seg, n=nfft, axis=-1)

    fx = frames(x)
    if mode == "stft":
        res = fx * scale
    else:
        fy = fx if same else frames(y)
        res = xnp.conj(fx) * fy * scale
        if return_onesided:
            if nfft % 2:
                res = res.at[..., 1:].multiply(2)
            else:
                res = res.at[..., 1:-1].multiply(2)
    freqs = (xnp.fft.rfftfreq(nfft, 1 / fs) if return_onesided
             else xnp.fft.fftfreq(nfft, 1 / fs)).astype(rdt)
    nseg = res.shape[-2]
    t = (np.arange(nseg) * nstep + nperseg / 2) / fs
    if boundary is not None:
        t = t - (nperseg / 2) / fs
    times = xnp.asarray(t).astype(rdt)
    res = xnp.swapaxes(res, -1, -2)                         # (..., freq, segment)
    if mode == "psd" and same and not complex_in:
        res = res.real
    return freqs, times, res


def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary="zeros", padded=True, axis=-1):
    """Short-time Fourier transform: (frequencies, segment times, Zxx[..., freq, time])."""
    f, t, Z = _spectral(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                        return_onesided, "spectrum", axis, "stft", boundary, padded)
    if Z.ndim > 2 and axis != -1:
        Z = _np().moveaxis(Z, (-2, -1), (axis if axis >= 0 else axis - 1, -1))
    return f, t, Z


def _csd(x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided,
         scaling, axis, average):
    xnp = _np()
    f, _, P = _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend_type,
                        return_onesided, scaling, axis, "psd")
    if P.ndim >= 2 and P.size > 0:
        if P.shape[-1] > 1:
            if average == "median":
                m = P.shape[-1]
                ii = np.arange(1, (m - 1) // 2 + 1)
                bias = 1 + np.sum(1.0 / (ii * 2 + 1) - 1.0 / (ii * 2))   # scipy's median bias
                if P.dtype.kind == "c":
                    P = xnp.median(P.real, axis=-1) + 1j * xnp.median(P.imag, axis=-1)
                else:
                    P = xnp.median(P, axis=-1)
                P = P / xnp.asarray(bias, P.real.dtype)
            elif average == "mean":
                P = P.mean(axis=-1)
            else:
                raise ValueError(f'average must be "median" or "mean", got {average}')
        else:
            P = P[..., 0]
    return f, P


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided=True, scaling="density", axis=-1, average="mean"):
    """Cross power spectral density of ``x`` and ``y`` by Welch's method (``y=None``: of
    ``x`` with itself)."""
    f, P = _csd(x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                scaling, axis, average)
    return f, P


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided=True, scaling="density", axis=-1,
          average="mean"):
    """Power spectral density by Welch's method: (frequencies, Pxx)."""
    f, P = _csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                scaling, axis, average)
    return f, P.real


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2):
    """Inverse short-time Fourier transform: (times, x)."""
    xnp = _np()
    _util.check_arraylike("istft", Zxx)
    Z = _util.to_array(Zxx)
    if Z.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    freq_axis = _util.canonicalize_axis(freq_axis, Z.ndim)
    time_axis = _util.canonicalize_axis(time_axis, Z.ndim)
    if freq_axis == time_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    Z = xnp.moveaxis(Z, (freq_axis, time_axis), (-2, -1))
    n_default = 2 * (Z.shape[-2] - 1) if input_onesided else Z.shape[-2]
    if nperseg is not None:
        nperseg = int(nperseg)
        if nperseg < 1:
            raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        nfft = nperseg if (input_onesided and nperseg == n_default + 1) else n_default
        nperseg = nfft if nperseg is None else nperseg
    else:
        nfft = int(nfft)
        nperseg = nfft if nperseg is None else nperseg
        if nfft < nperseg:
            raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    nstep = nperseg - noverlap
    if not input_onesided:
        Z = Z.astype(xnp.result_type(Z.dtype, np.complex64))
    xs = (xnp.fft.irfft(Z, n=nfft, axis=-2) if input_onesided
          else xnp.fft.ifft(Z, n=nfft, axis=-2))[..., :nperseg, :]   # (..., nperseg, nseg)
    win, _ = _window(window, nperseg, nperseg, xs.real.dtype) if isinstance(window, (str, tuple)) \
        else (_util.to_array(window).astype(xs.real.dtype), nperseg)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if win.shape[0] != nperseg:
        raise ValueError(f"window must have length of {nperseg}")
    xs = xs * win.sum()
    seg = xnp.swapaxes(xs * win[:, None], -1, -2)           # (..., nseg, nperseg)
    nseg = seg.shape[-2]
    out_len = nperseg + (nseg - 1) * nstep
    pos = (np.arange(nseg)[:, None] * nstep + np.arange(nperseg)[None, :]).ravel()
    x = xnp.zeros(seg.shape[:-2] + (out_len,), seg.dtype).at[..., xnp.asarray(pos)].add(
        seg.reshape(seg.shape[:-2] + (nseg * nperseg,)))
    wsq = np.asarray(win * win)
    norm = np.zeros(out_len, wsq.dtype)
    np.add.at(norm, pos, np.tile(wsq, nseg))
    if boundary:
        x = x[..., nperseg // 2:-(nperseg // 2)] if nperseg // 2 else x
        norm = norm[nperseg // 2:-(nperseg // 2)] if nperseg // 2 else norm
    x = x / xnp.asarray(np.where(norm > 1e-10, norm, 1.0), x.real.dtype)
    if input_onesided:
        x = x.real
    if x.ndim > 1 and time_axis != Z.ndim - 1:
        if freq_axis < time_axis:
            time_axis -= 1
        x = xnp.moveaxis(x, -1, time_axis)
    t = xnp.arange(x.shape[-1] if x.ndim else 0, dtype=x.real.dtype) / fs
    return t, x

"""``fft``: XLA's FFT over the trailing ``len(fft_lengths)`` (1-3) dimensions.

Types: FFT (complex -> complex), IFFT (complex -> complex, scaled by 1/n), RFFT (real ->
the n//2 + 1 non-negative frequencies), IRFFT (those frequencies -> real of length n).
The NumPy reference is ``numpy.fft`` in double precision, rounded to the output dtype.

Linear: FFT and IFFT are their own transposes (the DFT matrix is symmetric).  RFFT's
transpose zero-pads the cotangent to full length, FFTs it and keeps the real part (the
transpose of real -> complex is ``real``).  IRFFT's transpose is JAX's: the conjugate of
the RFFT of the cotangent, scaled by 1/n with the doubled (Hermitian-folded) frequencies
weighted twice.  Batching moves the batch axis in front of the transformed ones.
"""
from __future__ import annotations

import enum
import math
import operator

import numpy as np

from xform._src.interpreters import ad, batching, core, dtypes
from xform._src.interpreters.ad import Zero
from xform._src.interpreters.core import Primitive, ShapedArray
from xform._src.primitives._rules import moveaxis
from xform._src.primitives.structural import as_operand, pad_p
from xform._src.primitives import elementwise
from xform._src.primitives.structural import broadcast_in_dim_p

__all__ = ["fft", "FftType", "fft_p"]


class FftType(enum.IntEnum):
    """Kinds of FFT (same names and values as ``jax.lax.FftType``)."""
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


def _ew():
    return elementwise


def _real_dt(dt):
    return np.dtype(np.float32) if np.dtype(dt) == np.complex64 else np.dtype(np.float64)


def _complex_dt(dt):
    return np.dtype(np.complex64) if np.dtype(dt) == np.float32 else np.dtype(np.complex128)


fft_p = Primitive("fft")
fft_p.xla_eager_dtypes = elementwise.XLA_INEXACT   # NumPy's bits differ from XLA's


def _fft_abstract(x, *, fft_type, fft_lengths):
    k = len(fft_lengths)
    name = FftType(fft_type).name
    if not 1 <= k <= 3:
        raise ValueError(f"fft: fft_lengths {fft_lengths} must have 1 to 3 entries (XLA "
                         "transforms at most 3 dimensions)")
    if x.ndim < k:
        raise ValueError(f"fft: operand {x.str_short()} has fewer dimensions than "
                         f"fft_lengths {fft_lengths}")
    if any(int(n) < 0 for n in fft_lengths):
        raise ValueError(f"fft: fft_lengths {fft_lengths} must be non-negative")
    lead, tail = x.shape[:-k], x.shape[-k:]
    if fft_type == FftType.RFFT:
        if x.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"fft: RFFT needs a float32/float64 operand, got {x.str_short()}")
        if tuple(tail) != tuple(fft_lengths):
            raise ValueError(f"fft: RFFT operand trailing dimensions {tail} must equal "
                             f"fft_lengths {fft_lengths}")
        return ShapedArray(lead + tuple(fft_lengths[:-1]) + (fft_lengths[-1] // 2 + 1,),
                           _complex_dt(x.dtype))
    if x.dtype not in (np.dtype(np.complex64), np.dtype(np.complex128)):
        raise TypeError(f"fft: {name} needs a complex64/complex128 operand, got "
                        f"{x.str_short()}")
    if fft_type == FftType.IRFFT:
        want = tuple(fft_lengths[:-1]) + (fft_lengths[-1] // 2 + 1,)
        if tuple(tail) != want:
            raise ValueError(f"fft: IRFFT operand trailing dimensions {tail} must be {want} "
                             f"for fft_lengths {fft_lengths}")
        return ShapedArray(lead + tuple(fft_lengths), _real_dt(x.dtype))
    if tuple(tail) != tuple(fft_lengths):
        raise ValueError(f"fft: {name} operand trailing dimensions {tail} must equal "
                         f"fft_lengths {fft_lengths}")
    return ShapedArray(x.shape, x.dtype)


def _fft_impl(x, *, fft_type, fft_lengths):
    x = np.asarray(x)
    out = _fft_abstract(core.get_aval(x), fft_type=fft_type, fft_lengths=fft_lengths)
    k = len(fft_lengths)
    axes = tuple(range(x.ndim - k, x.ndim))
    if 0 in x.shape or 0 in fft_lengths:
        return np.zeros(out.shape, out.dtype)
    if fft_type == FftType.FFT:
        r = np.fft.fftn(x.astype(np.complex128), axes=axes)
    elif fft_type == FftType.IFFT:
        r = np.fft.ifftn(x.astype(np.complex128), axes=axes)
    elif fft_type == FftType.RFFT:
        r = np.fft.rfftn(x.astype(np.float64), axes=axes)
    else:
        r = np.fft.irfftn(x.astype(np.complex128), s=fft_lengths, axes=axes)
    return np.asarray(r).astype(out.dtype)


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    ew = _ew()
    k = len(fft_lengths)
    if fft_type in (FftType.FFT, FftType.IFFT):
        return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]
    if fft_type == FftType.RFFT:
        a = core.get_aval(ct)
        n = fft_lengths[-1]
        cfg = ((0, 0, 0),) * (a.ndim - 1) + ((0, n - a.shape[-1], 0),)
        full = pad_p.bind(ct, np.zeros((), a.dtype), padding_config=cfg)
        return [ew.real_p.bind(fft_p.bind(full, fft_type=FftType.FFT,
                                          fft_lengths=fft_lengths))]
    # IRFFT
    y = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
    ya = core.get_aval(y)
    m = ya.shape[-1]
    mask = np.full((m,), 2.0)
    mask[0] = 1.0
    if fft_lengths[-1] % 2 == 0:
        mask[-1] = 1.0
    scale = (mask / math.prod(fft_lengths)).astype(ya.dtype)
    sb = broadcast_in_dim_p.bind(scale, shape=ya.shape, broadcast_dimensions=(ya.ndim - 1,))
    return [ew.conj_p.bind(ew.mul_p.bind(y, sb))]


def _fft_jvp(primals, tangents, **params):
    out = fft_p.bind(primals[0], **params)
    t = tangents[0]
    if type(t) is Zero:
        return out, Zero.from_primal(out)
    return out, fft_p.bind(t, **params)


def _fft_batch(axis_data, vals, dims, **params):
    x, d = vals[0], dims[0]
    k = len(params["fft_lengths"])
    nd = core.get_aval(x).ndim
    if d >= nd - k:
        x, d = moveaxis(x, d, 0), 0
    return fft_p.bind(x, **params), d


fft_p.def_abstract_eval(_fft_abstract)
fft_p.def_impl(_fft_impl)
ad.jvp_rules[fft_p] = _fft_jvp
ad.transpose_rules[fft_p] = _fft_transpose
batching.batch_rules[fft_p] = _fft_batch


def _fft_type(t):
    if isinstance(t, FftType):
        return t
    if isinstance(t, str):
        try:
            return FftType[t.upper()]
        except KeyError:
            raise ValueError(f"Unknown FFT type {t!r}; expected one of 'fft', 'ifft', "
                             "'rfft', 'irfft'") from None
    name = getattr(t, "name", None)
    if name in FftType.__members__:
        return FftType[name]
    raise TypeError(f"Unknown FFT type value {t!r}")


def fft(x, fft_type, fft_lengths):
    """XLA FFT of the trailing ``len(fft_lengths)`` dimensions of ``x``."""
    typ = _fft_type(fft_type)
    x = as_operand(x)
    dt = core.get_aval(x).dtype
    ew = _ew()
    if typ == FftType.RFFT:
        if dtypes.is_complex(dt):
            raise ValueError("only real valued inputs supported for rfft")
        want = dtypes.to_inexact_dtype(dt)
        if want not in (np.dtype(np.float32), np.dtype(np.float64)):
            want = np.dtype(np.float32)
    else:
        want = dtypes.to_complex_dtype(dt)
    if want != dt:
        x = ew.convert_element_type_p.bind(x, new_dtype=want, weak_type=False)
    fft_lengths = tuple(operator.index(n) for n in fft_lengths)
    if not fft_lengths:
        return x
    return fft_p.bind(x, fft_type=typ, fft_lengths=fft_lengths)

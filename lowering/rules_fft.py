"""Lowering rule: ``fft`` -> ``stablehlo.fft``."""
from __future__ import annotations

from xform._src.primitives.fft import fft_p
from xform._src.lowering.mlir import i64_array, register

_NAMES = {0: "FFT", 1: "IFFT", 2: "RFFT", 3: "IRFFT"}


@register(fft_p)
def _fft(ctx, eqn, x):
    p = eqn.params
    return [ctx.op1("stablehlo.fft", [x], ctx.out_avals[0],
                    f"fft_length = {i64_array(p['fft_lengths'])}, "
                    f"fft_type = #stablehlo<fft_type {_NAMES[int(p['fft_type'])]}>")]

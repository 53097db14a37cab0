"""``jnp.convolve`` / ``jnp.correlate``: 1-D discrete convolution through ``conv_general_dilated``."""
from __future__ import annotations

from xform.numpy import _util
from xform._src.primitives.convolution import conv_general_dilated
from xform._src.primitives.elementwise import conj_p
from xform._src.primitives.structural import reshape_p
from xform._src.primitives.structural import rev_p, slice_p

__all__ = ["convolve", "correlate"]


def conj(x):
    """Complex conjugate of complex values; real values pass through unchanged."""
    return conj_p.bind(x) if _util.dtype_of(x).kind == "c" else x


def _conv1d(x, y, mode, op, precision, preferred_element_type):
    x, y = _util.ensure_arraylike(op, x, y)
    if len(_util.shape_of(x)) != 1 or len(_util.shape_of(y)) != 1:
        raise ValueError(f"{op}() only support 1-dimensional inputs.")
    if preferred_element_type is None:
        x, y = _util.promote_dtypes_inexact(x, y)
    else:
        x, y = _util.promote_dtypes(x, y)
    nx, ny = _util.shape_of(x)[0], _util.shape_of(y)[0]
    if nx == 0 or ny == 0:
        raise ValueError(f"{op}: inputs cannot be empty, got shapes {(nx,)} and {(ny,)}.")
    reverse_out = False
    if op == "correlate":
        y = conj(y)
        if nx < ny:
            x, y, reverse_out = y, x, True
    else:
        if nx < ny:
            x, y = y, x
        y = rev_p.bind(y, dimensions=(0,))
    m = _util.shape_of(y)[0]
    if mode == "valid":
        padding = [(0, 0)]
    elif mode == "same":
        padding = [(m // 2, m - m // 2 - 1)]
    elif mode == "full":
        padding = [(m - 1, m - 1)]
    else:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    x3 = reshape_p.bind(x, new_sizes=(1, 1) + _util.shape_of(x), dimensions=None)
    y3 = reshape_p.bind(y, new_sizes=(1, 1) + _util.shape_of(y), dimensions=None)
    out = conv_general_dilated(x3, y3, (1,), padding, precision=precision,
                               preferred_element_type=preferred_element_type)
    n = _util.shape_of(out)[2]
    out = reshape_p.bind(slice_p.bind(out, start_indices=(0, 0, 0), limit_indices=(1, 1, n),
                                      strides=None), new_sizes=(n,), dimensions=None)
    return rev_p.bind(out, dimensions=(0,)) if reverse_out else out


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """Discrete linear convolution of two 1-D arrays (NumPy's ``convolve``)."""
    return _conv1d(a, v, mode, "convolve", precision, preferred_element_type)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """Cross-correlation of two 1-D arrays (NumPy's ``correlate``; ``v`` is conjugated)."""
    return _conv1d(a, v, mode, "correlate", precision, preferred_element_type)

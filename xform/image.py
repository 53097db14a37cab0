"""Image resampling: ``resize`` and ``scale_and_translate`` (JAX's ``jax.image``).

Every method except nearest-neighbour is a separable linear map: for each resized
dimension a dense ``(input_size, output_size)`` weight matrix is built from the kernel
evaluated at the distance between each output sample's (inverse-warped) position and
each input pixel centre, normalised so each column sums to one, and contracted with the
image.  Everything is built from ``xform.numpy`` operations, so ``jit``, ``grad`` (also
with respect to ``scale`` and ``translation``) and ``vmap`` apply.
"""
import enum
import math
import operator

import numpy as np

from xform import lax as _lax
from xform.errors import ConcretizationTypeError
from xform.numpy import _util as U
import xform.numpy as xnp

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """Image resize method: NEAREST, LINEAR, LANCZOS3, LANCZOS5, CUBIC (Keys),
    CUBIC_PYTORCH (OpenCV/PyTorch's a=-0.75 kernel, edge padding without antialias)
    and AREA (box filter)."""
    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str):
        table = {"nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR,
                 "bilinear": ResizeMethod.LINEAR, "trilinear": ResizeMethod.LINEAR,
                 "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
                 "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC,
                 "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC,
                 "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
                 "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH, "area": ResizeMethod.AREA}
        if s not in table:
            raise ValueError(f'Unknown resize method "{s}"; expected one of {sorted(table)}')
        return table[s]


def _xnp():
    return xnp


def _lanczos(radius):
    def kernel(x):
        xnp = _xnp()
        y = radius * xnp.sin(np.pi * x) * xnp.sin(np.pi * x / radius)
        safe = xnp.where(x != 0, np.pi ** 2 * x ** 2, 1)
        out = xnp.where(x > 1e-3, y / safe, 1)
        return xnp.where(x > radius, 0., out)
    return kernel


def _keys_cubic(x):
    xnp = _xnp()
    out = ((1.5 * x - 2.5) * x) * x + 1.
    out = xnp.where(x >= 1., ((-0.5 * x + 2.5) * x - 4.) * x + 2., out)
    return xnp.where(x >= 2., 0., out)


def _opencv_cubic(x):
    xnp = _xnp()
    a = -0.75
    out = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    out = xnp.where(x >= 1.0, ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a, out)
    return xnp.where(x >= 2.0, 0.0, out)


def _triangle(x):
    xnp = _xnp()
    return xnp.maximum(0, 1 - xnp.abs(x))


_AREA = object()
_KERNELS = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, _lanczos(3.)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.)),
    ResizeMethod.CUBIC: (2, _keys_cubic),
    ResizeMethod.CUBIC_PYTORCH: (2, _opencv_cubic),
    ResizeMethod.AREA: (1, _AREA),
}


def _normalise(weights):
    xnp = _xnp()
    total = xnp.sum(weights, axis=0, keepdims=True)
    return xnp.where(xnp.abs(total) > 1000. * float(np.finfo(np.float32).eps),
                     weights / xnp.where(total != 0, total, 1), 0)


def _weight_matrix(in_size, out_size, scale, translation, kernel, antialias,
                   edge_padding, radius):
    """The ``(in_size, out_size)`` resampling matrix of one dimension."""
    xnp = _xnp()
    dtype = xnp.result_type(scale, translation)
    inv_scale = 1. / scale
    kernel_scale = xnp.maximum(inv_scale, 1.) if antialias else 1.
    # position of each output sample in input pixel coordinates (pixel centres at i+0.5)
    sample = (xnp.arange(out_size, dtype=dtype) + 0.5) * inv_scale \
        - translation * inv_scale - 0.5
    if edge_padding:
        if antialias:
            try:
                s = float(scale)
            except Exception:
                raise ConcretizationTypeError(
                    scale, "Antialiasing with edge padding requires a static scale: "
                    "pass a Python float (or mark it static under jit).") from None
            k = math.ceil(radius * max(1.0 / s, 1.0))
        else:
            k = radius
    else:
        k = 0
    idx = xnp.arange(-k, in_size + k, dtype=dtype)
    if kernel is _AREA:
        left = xnp.arange(out_size, dtype=dtype) * inv_scale - translation * inv_scale
        right = left + inv_scale
        lj = xnp.arange(in_size, dtype=dtype)
        weights = xnp.maximum(0.0, xnp.minimum(right[None, :], lj[:, None] + 1.0)
                              - xnp.maximum(left[None, :], lj[:, None]))
    else:
        weights = kernel(xnp.abs(sample[None, :] - idx[:, None]) / kernel_scale)
    if edge_padding:
        # pixels beyond the edge repeat the edge pixel: fold their weights onto it
        clamped = np.clip(np.arange(-k, in_size + k), 0, in_size - 1)
        fold = (clamped[:, None] == np.arange(in_size)[None, :]).astype(np.float32)
        weights = xnp.matmul(xnp.asarray(fold, dtype=weights.dtype).T, weights,
                             precision=_lax.Precision.HIGHEST)
        return _normalise(weights)
    weights = _normalise(weights)
    inside = xnp.logical_and(sample >= -0.5, sample <= in_size - 0.5)
    return xnp.where(inside[None, :], weights, 0)


def _canonical_shape(shape, image):
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"shape must be a sequence of integers, got {shape!r}") from None
    if len(shape) != image.ndim:
        raise ValueError("shape must have length equal to the number of dimensions of x; "
                         f" {shape} vs {image.shape}")
    return shape


def _method(method):
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    if not isinstance(method, ResizeMethod):
        raise TypeError(f"method must be a ResizeMethod or a string, got {method!r}")
    return method


def _apply(image, shape, spatial_dims, scale, translation, method, antialias, precision):
    xnp = _xnp()
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    edge_padding = method == ResizeMethod.CUBIC_PYTORCH and not antialias
    x = image
    for i, d in enumerate(spatial_dims):
        d = d + x.ndim if d < 0 else d
        if not 0 <= d < x.ndim:
            raise ValueError(f"spatial dimension {spatial_dims[i]} is out of range for an "
                             f"image of rank {x.ndim}")
        w = _weight_matrix(image.shape[d], shape[d], scale[i], translation[i], kernel,
                           antialias, edge_padding, radius).astype(x.dtype)
        x = xnp.moveaxis(xnp.tensordot(x, w, axes=([d], [0]), precision=precision), -1, d)
    return x


def scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                        antialias=True, precision=_lax.Precision.HIGHEST):
    """Resample ``image`` to ``shape`` under the map ``x -> x * scale + translation`` of
    each dimension in ``spatial_dims`` (half-centred pixels; samples mapping outside the
    input are zero).  ``scale`` and ``translation`` may be traced (differentiable)."""
    xnp = _xnp()
    image = xnp.asarray(image)
    shape = _canonical_shape(shape, image)
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for "
                         "scale_and_translate; use resize(..., 'nearest') or another method.")
    spatial_dims = tuple(spatial_dims)
    if len(scale) != len(spatial_dims) or len(translation) != len(spatial_dims):
        raise ValueError(f"scale and translation need one entry per spatial dimension "
                         f"({len(spatial_dims)}), got {len(scale)} and {len(translation)}")
    if not spatial_dims:
        return image
    image, = U.promote_dtypes_inexact(image)
    scale, translation = U.promote_dtypes_inexact(xnp.asarray(scale), xnp.asarray(translation))
    return _apply(image, shape, spatial_dims, scale, translation, method, antialias,
                  precision)


def _resize_nearest(x, shape):
    xnp = _xnp()
    for d in range(x.ndim):
        m, n = x.shape[d], shape[d]
        if m == n:
            continue
        offsets = np.floor((np.arange(n, dtype=np.float32) + np.float32(0.5))
                           * np.float32(m) / np.float32(n)).astype(np.int32)
        x = xnp.take(x, xnp.asarray(offsets), axis=d)
    return x


def resize(image, shape, method, antialias=True, precision=_lax.Precision.HIGHEST):
    """Resize ``image`` to ``shape`` (every dimension; equal sizes are left alone) with
    ``method`` ("nearest", "linear", "cubic", "cubic-pytorch", "lanczos3", "lanczos5",
    "area" or a :class:`ResizeMethod`).  ``antialias`` widens the kernel when
    downsampling.  Nearest keeps the input dtype; the others promote to floating."""
    xnp = _xnp()
    image = xnp.asarray(image)
    shape = _canonical_shape(shape, image)
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    image, = U.promote_dtypes_inexact(image)
    dims = tuple(i for i in range(image.ndim) if image.shape[i] != shape[i])
    scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
    return _apply(image, shape, dims, scale, [0.] * len(dims), method, antialias, precision)

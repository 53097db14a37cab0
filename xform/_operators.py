"""Python operators, methods and properties of arrays (``Array`` and every ``Tracer``).

They are installed once onto ``interpreters.core.ArrayOps``, the base class
both share, and are written in terms of ``xform.numpy``.  Binary arithmetic
operators keep the hot path short: the ufuncs they call test for "two Arrays
of one dtype and shape" before any promotion.  A reflected operator with an
operand that is not array-like returns ``NotImplemented`` so Python can try
the other operand.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters.core import Array, ArrayOps
from xform import numpy as xnp
from xform.numpy import _array_api, _indexing, _ufuncs as F
from xform.numpy import _util as U
from xform._src.interpreters.dtypes import is_extended
from xform.random import _keys_equal
from xform import lax

__all__: list = []

_ARRAYLIKE = (ArrayOps, np.ndarray, np.generic, int, float, complex, bool)


def _other(other):
    """The operand an Array's operator works with: ``other`` itself when it is array-like,
    the array an object's ``__jax_array__()`` gives (as JAX's operators do), else None
    (the operator answers NotImplemented so Python tries ``other``'s reflected method)."""
    if isinstance(other, _ARRAYLIKE):
        return other
    m = getattr(other, "__jax_array__", None)
    return None if m is None else m()


def _binop(fn, reflected=False):
    if reflected:
        def op(self, other):
            t = type(other)
            if t is not float and t is not int:
                other = _other(other)
                if other is None:
                    return NotImplemented
            return fn(other, self)
    else:
        def op(self, other):
            other = _other(other)
            if other is None:
                return NotImplemented
            return fn(self, other)
    op.__name__ = fn.__name__
    return op


def _fast_binop(fn):
    """Forward operator whose common cases (Array op Array, Array op Python float/int)
    go straight to the ufunc, which has its own fast path for them."""
    def op(self, other):
        t = type(other)
        if t is Array or t is float or t is int:
            return fn(self, other)
        other = _other(other)
        if other is None:
            return NotImplemented
        return fn(self, other)
    op.__name__ = fn.__name__
    return op


_BINARY = {
    "add": F.add, "sub": F.subtract, "mul": F.multiply, "truediv": F.true_divide,
    "floordiv": F.floor_divide, "mod": F.remainder, "pow": F.power, "matmul": None,
    "and": F.bitwise_and, "or": F.bitwise_or, "xor": F.bitwise_xor,
    "lshift": F.left_shift, "rshift": F.right_shift,
}


def _matmul(a, b):
    return xnp.matmul(a, b)


def _divmod(a, b):
    return F.floor_divide(a, b), F.remainder(a, b)


def _key_aware_eq(op, negate):

    def eq(self, other):
        if is_extended(getattr(self, "dtype", None)) or is_extended(getattr(other, "dtype", None)):
            return _keys_equal(self, other, negate)
        return op(self, other)
    eq.__name__ = "__ne__" if negate else "__eq__"
    return eq


def _install_operators(cls):
    for name, fn in _BINARY.items():
        fn = fn or _matmul
        # ufuncs from the elementwise factory carry an operator variant with the fast
        # path inlined (one call frame less); the others get the generic wrapper.
        setattr(cls, f"__{name}__", getattr(fn, "operator", None) or _fast_binop(fn))
        setattr(cls, f"__r{name}__", _binop(fn, reflected=True))
    cls.__divmod__ = _binop(_divmod)
    cls.__rdivmod__ = _binop(_divmod, reflected=True)
    for name, fn in (("eq", F.equal), ("ne", F.not_equal), ("lt", F.less), ("le", F.less_equal),
                     ("gt", F.greater), ("ge", F.greater_equal)):
        setattr(cls, f"__{name}__", _binop(fn))
    cls.__eq__ = _key_aware_eq(cls.__eq__, False)    # typed PRNG keys compare by their words
    cls.__ne__ = _key_aware_eq(cls.__ne__, True)
    cls.__neg__ = lambda self: F.negative(self)
    cls.__pos__ = lambda self: F.positive(self)
    cls.__abs__ = lambda self: F.absolute(self)
    cls.__invert__ = lambda self: F.bitwise_not(self)
    cls.__round__ = lambda self, ndigits=None: F.round(self, ndigits or 0)
    cls.__getitem__ = _indexing.getitem
    cls.__array_namespace__ = _array_api.array_namespace
    cls.to_device = _array_api.to_device
    cls.__jax_array__ = None  # (not a foreign array-like)
    del cls.__jax_array__


# ----------------------------------------------------------------- methods


def _varargs_shape(args, kw_shape=None):
    if kw_shape is not None:
        return kw_shape
    if len(args) == 1 and (isinstance(args[0], (tuple, list)) or args[0] is None or
                           (np.ndim(args[0]) != 0 if hasattr(args[0], "ndim") else
                            hasattr(args[0], "__len__"))):
        return args[0]          # one argument that is a sequence of sizes: the shape
    return args


def _reshape(self, *args, order="C", shape=None):
    s = _varargs_shape(args, shape)
    return xnp.reshape(self, s, order=order)


def _transpose(self, *args):
    axes = _varargs_shape(args) if args else None
    return xnp.transpose(self, axes if axes else None)


def _astype(self, dtype, copy=False, device=None):
    return xnp.astype(self, dtype)


def _item_free(name, fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = fn.__doc__
    return method


_METHODS = {
    "sum": xnp.sum, "mean": xnp.mean, "prod": xnp.prod, "max": xnp.max, "min": xnp.min,
    "var": xnp.var, "std": xnp.std, "argmax": xnp.argmax, "argmin": xnp.argmin,
    "any": xnp.any, "all": xnp.all, "cumsum": xnp.cumsum, "cumprod": xnp.cumprod,
    "clip": xnp.clip, "round": xnp.round, "dot": xnp.dot, "conj": xnp.conj,
    "conjugate": xnp.conjugate, "ravel": xnp.ravel, "flatten": xnp.ravel, "squeeze": xnp.squeeze,
    "swapaxes": xnp.swapaxes, "repeat": xnp.repeat, "take": xnp.take,
    "diagonal": xnp.diagonal, "trace": xnp.trace, "ptp": xnp.ptp, "nonzero": xnp.nonzero,
    "searchsorted": xnp.searchsorted,
}


def _sort(self, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    return xnp.sort(self, axis, kind=kind, order=order, stable=stable, descending=descending)


def _argsort(self, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    return xnp.argsort(self, axis, kind=kind, order=order, stable=stable, descending=descending)


_NIBBLE = ("int4", "uint4")


def _bits(dt):
    dt = np.dtype(dt)
    return 4 if dt.name in _NIBBLE else dt.itemsize * 8


def _view(self, dtype=None, type=None):
    """JAX's ``Array.view(dtype)``: the same bits read as ``dtype`` (the last axis grows
    or shrinks by the ratio of the item sizes)."""
    if type is not None:
        raise NotImplementedError("`type` argument of array.view() is not supported.")
    if dtype is None:
        return self
    dt = U.canonical_dtype(dtype)
    x = self
    if x.dtype == dt:
        return x
    if x.dtype == np.bool_:
        x = xnp.astype(x, np.uint8)
    if dt == np.bool_:
        return xnp.not_equal(_view(x, np.uint8), 0)
    if x.dtype.kind == "c":          # complex items are (real, imag) pairs of floats
        if x.ndim == 0:
            x = lax.reshape(x, (1,))
        parts = xnp.stack([xnp.real(x), xnp.imag(x)], axis=-1)
        x = lax.reshape(parts, x.shape[:-1] + (x.shape[-1] * 2,))
        if x.dtype == dt:
            return x
    if dt.kind == "c":
        half = np.dtype(np.float32 if dt == np.complex64 else np.float64)
        f = _view(x, half)
        f = lax.reshape(f, f.shape[:-1] + (f.shape[-1] // 2, 2))
        return lax.complex(f[..., 0], f[..., 1])
    b_in, b_out = _bits(x.dtype), _bits(dt)
    if b_in == b_out:
        return lax.bitcast_convert_type(x, dt)
    if x.ndim == 0:
        raise ValueError("Changing the dtype of a 0d array is only supported if the "
                         "itemsize is unchanged")
    if b_in > b_out:                 # each item becomes several: merge the new last axis
        y = lax.bitcast_convert_type(x, dt)
        return lax.reshape(y, x.shape[:-1] + (x.shape[-1] * (b_in // b_out),))
    r = b_out // b_in
    if x.shape[-1] % r:
        raise ValueError("When changing to a larger dtype, its size must be a divisor of "
                         "the total size in bytes of the last axis of the array.")
    y = lax.reshape(x, x.shape[:-1] + (x.shape[-1] // r, r))
    return lax.bitcast_convert_type(y, dt)


def _byteswap(self, inplace=False):
    """JAX's ``Array.byteswap()``: each item's bytes in reverse order."""
    if inplace:
        raise ValueError("Inplace byteswapping is not supported in xform (arrays are "
                         "immutable).")
    if self.dtype.kind == "c":       # each float of the (real, imag) pair swapped
        return lax.complex(_byteswap(xnp.real(self)), _byteswap(xnp.imag(self)))
    n = self.dtype.itemsize
    if n == 1:
        return self
    if n not in (2, 4, 8):
        raise ValueError(f"byteswap: unsupported item size {n} of dtype {self.dtype}")
    per_byte = lax.bitcast_convert_type(self, np.uint8)
    return lax.bitcast_convert_type(lax.rev(per_byte, (per_byte.ndim - 1,)), self.dtype)


def _contains(self, other):
    """``v in x``: whether any element of the 1-D array ``x`` equals the scalar ``v``."""
    if self.ndim != 1:
        raise ValueError(f"Array.__contains__: search array must be one-dimensional; got "
                         f"array of shape {self.shape}")
    if other is None or not U.is_arraylike(other):
        raise TypeError(f"Array.__contains__: unsupported operand type "
                        f"{builtins_type(other).__name__!r}")
    if np.ndim(other) != 0:
        raise ValueError(f"Array.__contains__: query value must be a scalar; got shape "
                         f"{np.shape(other)}")
    return xnp.any(xnp.equal(self, other))


builtins_type = type


def _compress(self, condition, axis=None, *, out=None, size=None, fill_value=0):
    return xnp.compress(condition, self, axis=axis, out=out, size=size,
                        fill_value=fill_value)


def _argpartition(self, kth, axis=-1, kind="introselect", order=None):
    if kind != "introselect" or order is not None:
        raise ValueError("argpartition: 'kind' and 'order' are not supported")
    return xnp.argpartition(self, kth, axis=axis)


def _install_methods(cls):
    for name, fn in _METHODS.items():
        if fn is not None:
            setattr(cls, name, _item_free(name, fn))
    cls.reshape = _reshape
    cls.transpose = _transpose
    cls.astype = _astype
    cls.sort = _sort
    cls.argsort = _argsort
    cls.T = property(lambda self: xnp.transpose(self))
    cls.mT = property(lambda self: xnp.matrix_transpose(self))
    cls.real = property(lambda self: F.real(self))
    cls.imag = property(lambda self: F.imag(self))
    cls.at = property(lambda self: _indexing._IndexUpdateHelper(self))
    cls.flat = property(lambda self: xnp.ravel(self))
    cls.view = _view
    cls.byteswap = _byteswap
    cls.__contains__ = _contains
    cls.compress = _compress
    cls.argpartition = _argpartition
    if not hasattr(cls, "copy"):     # tracers: JAX's Tracer.copy is jnp.array(x, copy=True)
        cls.copy = lambda self: xnp.array(self, copy=True)
    if not hasattr(cls, "itemsize"):
        cls.itemsize = property(lambda self: self.dtype.itemsize)
    if not hasattr(cls, "nbytes"):
        cls.nbytes = property(lambda self: self.size * self.dtype.itemsize)


_install_operators(ArrayOps)
_install_methods(ArrayOps)

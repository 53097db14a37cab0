"""Array creation and the callable scalar types (``xnp.float32(3)`` -> Array).

``asarray``/``array`` copy NumPy input (an Array never aliases a buffer the
user can still mutate).  Python scalars become weakly typed Arrays; nested
lists/tuples of scalars and arrays are stacked.
"""
from __future__ import annotations

import math

import numpy as np

from xform._src.interpreters import core, dtypes
from xform._src.interpreters.config import config
from xform._src.interpreters.core import Array, ArrayOps, Tracer
from xform._src.interpreters.staging import StagingTrace
from xform.numpy import _util as U
from xform.numpy._util import lax
from xform._src.interpreters import core as _c
from xform._src.primitives.prng import random_wrap
from xform._src.primitives.structural import concatenate
from xform.numpy import _ufuncs as F
from xform.numpy._shape import broadcast_to, ravel
from xform.numpy._shape import expand_dims, moveaxis
from xform.numpy._shape import pad as _pad
from xform.numpy._ufuncs import where
from xform._src.primitives.misc import copy_p
import warnings


def _staging() -> bool:
    """Is a program being staged (jit, make_jaxpr, linearize...)?  Then creation functions
    emit ``broadcast_in_dim``/``iota`` equations instead of building the array on the host
    (JAX's omnistaging): no host memory or time at trace time, no constants in the program,
    and XLA can fuse them.  Eager code (only eager traces on the stack) keeps NumPy."""
    t = core.current_trace()
    while t is not None and t is not core.EVAL_TRACE:
        if isinstance(t, StagingTrace):
            return True
        t = t.parent
    return False


def _scalar_literal(fill, dtype, weak=False):
    if isinstance(fill, Array):
        fill = fill._value if fill._value is not None else np.asarray(fill)
    return Array(np.asarray(np.asarray(fill).astype(dtype)), weak)


def _iota_grid(shape, k=0):
    """(rows + k, cols) int32 index grids over the last two dims of ``shape``."""
    L = lax
    rows = L.broadcasted_iota(np.int32, shape, len(shape) - 2)
    cols = L.broadcasted_iota(np.int32, shape, len(shape) - 1)
    return L.add(rows, k if isinstance(k, Tracer) else np.int32(k)), cols


def _tri_bool(n, m, k):
    """``np.tri(n, m, k, dtype=bool)``: staged when tracing, NumPy otherwise."""
    if not _staging() and not isinstance(k, Tracer):
        return np.tri(n, m, k, dtype=bool)
    rows, cols = _iota_grid((n, m), k)
    return lax.ge(rows, cols)


def _eye_bool(n, m, k):
    if not _staging() and not isinstance(k, Tracer):
        return np.eye(n, m, k, dtype=bool)
    rows, cols = _iota_grid((n, m), k)
    return lax.eq(rows, cols)

# ----------------------------------------------------------------- scalar types


class _ScalarMeta(type):
    """Metaclass of ``xnp.float32`` etc.: a dtype-like that is also a constructor.

    Equality is that of the NumPy scalar type it stands for (``xnp.float32 ==
    np.float32`` and ``== np.dtype('float32')`` hold; a string, a dict or any other
    object compares unequal, as in JAX), so ``==`` never raises and the family hashes
    like the NumPy scalar types.
    """

    def __call__(cls, x=0):
        return asarray(x, dtype=cls.dtype)

    def __eq__(cls, other):
        if cls is other:
            return True
        if isinstance(other, _ScalarMeta):
            return cls.dtype.type is other.dtype.type
        # ``type.__eq__`` gives NotImplemented for anything but the type itself, which
        # lets np.dtype's reflected comparison answer for dtypes and keeps strings,
        # dicts, numbers, ... unequal without ever converting them to a dtype.
        return cls.dtype.type == other

    def __ne__(cls, other):
        return not (cls == other)

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __instancecheck__(cls, obj):
        return isinstance(obj, cls.dtype.type)

    def __repr__(cls):
        return f"<class 'xform.numpy.{cls.__name__}'>"


def _scalar_type(name, dt):
    return _ScalarMeta(name, (object,), {"dtype": np.dtype(dt), "__module__": "xform.numpy"})


# ml_dtypes' scalar types: made on first access (importing ml_dtypes costs ~0.5 s).
LAZY_SCALAR_TYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def __getattr__(name):
    if name in LAZY_SCALAR_TYPES:
        value = globals()[name] = _scalar_type(name, getattr(dtypes, name))
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


bool_ = _scalar_type("bool", np.bool_)
int8 = _scalar_type("int8", np.int8)
int16 = _scalar_type("int16", np.int16)
int32 = _scalar_type("int32", np.int32)
int64 = _scalar_type("int64", np.int64)
uint8 = _scalar_type("uint8", np.uint8)
uint16 = _scalar_type("uint16", np.uint16)
uint32 = _scalar_type("uint32", np.uint32)
uint64 = _scalar_type("uint64", np.uint64)
float16 = _scalar_type("float16", np.float16)
float32 = _scalar_type("float32", np.float32)
float64 = _scalar_type("float64", np.float64)
complex64 = _scalar_type("complex64", np.complex64)
complex128 = _scalar_type("complex128", np.complex128)
int_ = int64  # canonicalised to int32 when x64 is off, as in JAX
float_ = float64
complex_ = complex128
uint = uint64
single, double = float32, float64
csingle, cdouble = complex64, complex128
half = float16

# ----------------------------------------------------------------- asarray / array


_NONE_MESSAGE = "None is not a valid value for jnp.array"   # JAX's ValueError


def _nested_to_arrays(obj, dtype):
    """A list/tuple tree -> one Array (stacking elements, promoting like JAX)."""
    leaves = []

    def walk(o):
        if isinstance(o, (list, tuple)):
            for e in o:
                walk(e)
        else:
            leaves.append(o)

    walk(obj)
    if any(l is not U.from_jax_array(l) for l in leaves):
        # elements with ``__jax_array__`` stand for the arrays they give (as in JAX)
        obj = _map_tree(obj, U.from_jax_array)
        leaves = [U.from_jax_array(l) for l in leaves]
    keyed = any(isinstance(l, ArrayOps) and not isinstance(l.dtype, np.dtype) for l in leaves)
    if not keyed and not any(isinstance(l, ArrayOps) and not isinstance(l, Array)
                             for l in leaves):
        # All concrete: build on the host with NumPy, then fix the dtype as JAX does.
        for l in leaves:
            if l is None:
                raise ValueError(_NONE_MESSAGE)
            if not U.is_arraylike(l):
                raise TypeError(f"Value {l!r} of type {type(l).__name__} is not a valid "
                                "element of an xform array.")
        if dtype is None:
            dtype = dtypes.result_type(*leaves) if leaves else dtypes.default_float_dtype()
        vals = _map_tree(obj, lambda l: np.asarray(l._value if isinstance(l, Array) else l))
        try:
            v = np.array(vals, dtype=dtype)
        except ValueError as e:
            raise ValueError(f"setting an array element with a sequence: the nested lists "
                             f"have inconsistent shapes ({e})") from None
        return Array(v, False)
    dt = dtype or dtypes.result_type(*leaves)
    return _stack_tree(obj, dt)


def _map_tree(o, f):
    if isinstance(o, (list, tuple)):
        return [_map_tree(e, f) for e in o]
    return f(o)


_CONCAT_WIDTH = 16


def _stack_tree(o, dt):
    """A list/tuple tree with traced leaves -> one Array, staged as JAX stages it: each
    element converted and given a leading axis in turn, then joined by concatenates at
    most 16 wide (a tree of them for longer lists: wide concatenates compile slowly)."""
    if not isinstance(o, (list, tuple)):
        return U.to_array(o, dt, False)
    parts = [expand_dims(_stack_tree(e, dt), (0,)) for e in o]
    while len(parts) > _CONCAT_WIDTH:
        parts = [concatenate(parts[i:i + _CONCAT_WIDTH], 0)
                 for i in range(0, len(parts), _CONCAT_WIDTH)]
    return concatenate(parts, 0)


def asarray(a, dtype=None, order=None, *, copy=None, device=None):
    """Convert to an Array; NumPy input is copied; Python scalars become weak Arrays."""
    if order not in (None, "C", "K", "A"):
        raise NotImplementedError(f"order={order!r} is not supported (only C order)")
    dt = U.canonical_dtype(dtype)
    if isinstance(a, ArrayOps):
        if dt is None:
            return a
        return U.to_array(a, dt, False)
    if type(a) in U._SCALARS or isinstance(a, (int, float, complex, np.generic, np.ndarray)):
        if dt is None:
            return U.to_array(a)
        if isinstance(a, np.ndarray):
            return Array(np.array(a, dtype=dt), False)
        return U.to_array(a, dt, False)
    if isinstance(a, (list, tuple)):
        return _nested_to_arrays(a, dt)
    if getattr(a, "__jax_array__", None) is not None:   # (before __array__, as JAX)
        return asarray(a.__jax_array__(), dtype)
    if hasattr(a, "__array__"):
        v = np.array(a)
        return Array(np.array(v, dtype=dt or dtypes.canonicalize_dtype(v.dtype)), False)
    if isinstance(a, (bytearray, memoryview)) or type(a).__module__ == "array":
        return asarray(np.asarray(a), dtype)   # the buffer protocol, as NumPy reads it
    if a is None:
        raise ValueError(_NONE_MESSAGE)
    raise TypeError(f"Value {a!r} of type {type(a).__name__} cannot be converted to an xform "
                    "array. Pass an Array, a NumPy array, a Python scalar or a (nested) list.")


def _check_user_dtype(dtype, name):
    """A structured or object dtype is refused with JAX's TypeError."""
    try:
        dt = np.dtype(dtype) if isinstance(dtype, (list, np.dtype)) else None
    except TypeError:
        dt = None
    if dt is not None and dt.kind in "VO" and (dt.names or dt.kind == "O"):
        raise TypeError(f"JAX only supports number, bool, and string dtypes, got dtype "
                        f"{dtype!r} in {name}")


def array(object, dtype=None, *args, copy=True, order="K", ndmin=0, device=None):
    if args:
        if len(args) > 3:
            raise TypeError(f"array() takes at most 5 positional arguments but "
                            f"{len(args) + 2} were given")
        for i, name in enumerate(["copy", "order", "ndmin"]):
            if i < len(args) and [copy, order, ndmin][i] != [True, "K", 0][i]:
                raise TypeError(f"array() got multiple values for argument '{name}'")
        copy, order, ndmin = (list(args) + [copy, order, ndmin][len(args):])[:3]
        warnings.warn("Passing the copy, order, and ndmin arguments to jnp.array "
                      "positionally is deprecated. Use keyword arguments instead.",
                      DeprecationWarning, stacklevel=2)
    _check_user_dtype(dtype, "array")
    if order is not None and order != "K":
        raise NotImplementedError("Only implemented for order='K'")
    if isinstance(object, (bytearray, memoryview)):
        object = np.asarray(object)
    if copy and isinstance(object, Tracer):
        # staged, the copy is an equation of its own (JAX's copy_p), before any conversion
        object = copy_p.bind(object)
    out = asarray(object, dtype)
    if isinstance(object, Array) and copy and dtype is None:
        # a new buffer, also for an array held only on a device (a jit output): donating
        # the copy must leave the original alive
        out = Array(np.array(object._value), object.weak_type)
    if ndmin > out.ndim:
        out = lax.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def _full(shape, fill, dtype, weak=False):
    shape = U.canonical_shape(shape)
    if dtype is not None and not isinstance(dtype, np.dtype):
        # a typed PRNG key dtype: every key word is ``fill``, as JAX's *_like of keys
        words = _full(tuple(shape) + tuple(dtype.key_shape), fill, np.dtype(np.uint32))
        return random_wrap(words, dtype.impl)
    if type(fill) is int and isinstance(dtype, np.dtype) and dtype.kind in "iu" \
            and -2 ** 63 <= fill < 2 ** 63:
        # as lax.full's convert_element_type of a Python int: through int64, wrapping
        # into a narrower or unsigned dtype (jnp.full(2, -1, uint8) is [255, 255])
        fill = np.asarray(fill, np.int64).astype(dtype)
    if isinstance(fill, ArrayOps) and not isinstance(fill, Array):
        f = U.to_array(fill, dtype, False)
        return U.broadcast_to_shape(f, shape) if f.shape != shape else f
    if _staging() and np.ndim(fill) == 0:
        return lax.broadcast_in_dim(_scalar_literal(fill, dtype, weak), shape, ())
    if isinstance(fill, Array):
        fill = fill._value
    v = np.full(shape, np.asarray(fill).astype(dtype) if np.ndim(fill) else fill, dtype=dtype)
    return Array(v, weak)


def _creation_dtype(name, shape, dtype):
    """The dtype argument of zeros/ones/empty, with JAX's hint for ``zeros(2, 3)``."""
    try:
        return U.canonical_dtype(dtype) or dtypes.default_float_dtype()
    except TypeError as e:
        if isinstance(shape, int) and isinstance(dtype, int):
            raise TypeError(f"{e}.\n\nDid you accidentally write `jax.numpy.{name}"
                            f"({shape}, {dtype})` when you meant `jax.numpy.{name}(({shape}, "
                            f"{dtype}))`, i.e. with a single tuple argument for the "
                            "shape?") from None
        raise


def zeros(shape, dtype=None, *, device=None):
    return _full(shape, 0, _creation_dtype("zeros", shape, dtype))


def ones(shape, dtype=None, *, device=None):
    return _full(shape, 1, _creation_dtype("ones", shape, dtype))


def empty(shape, dtype=None, *, device=None):
    return _full(shape, 0, _creation_dtype("empty", shape, dtype))


def full(shape, fill_value, dtype=None, *, device=None):
    dt = U.canonical_dtype(dtype)
    if dt is None:
        dt = U.dtype_of(fill_value) if not isinstance(fill_value, (list, tuple)) else \
            asarray(fill_value).dtype
    shape = U.canonical_shape(shape)
    if isinstance(fill_value, (list, tuple)) or np.ndim(fill_value) if not isinstance(
            fill_value, ArrayOps) else fill_value.ndim:
        return broadcast_to(asarray(fill_value, dt), shape)
    return _full(shape, fill_value, dt, weak=dtype is None and U.is_weak(fill_value))


def _like(name, a, dtype, shape):
    """(shape, dtype, weak) of a ``*_like`` template: an array-like, or anything with
    ``shape`` and ``dtype`` (``ShapeDtypeStruct``), as in JAX."""
    if isinstance(a, ArrayOps) or not (hasattr(a, "shape") and hasattr(a, "dtype")):
        a = U.ensure_arraylike(name, a)
        s, dt, weak = U.aval(a).shape, U.dtype_of(a), U.is_weak(a)
    else:
        try:
            s = tuple(int(d) for d in a.shape)
            dt = dtypes.canonicalize_dtype(np.dtype(a.dtype))
        except TypeError:
            raise TypeError(f"{name}: the template's shape {a.shape!r} and dtype {a.dtype!r} "
                            "must be a tuple of ints and a dtype") from None
        weak = bool(getattr(a, "weak_type", False))
    return (s if shape is None else shape), (U.canonical_dtype(dtype) or dt), \
        dtype is None and weak


def zeros_like(a, dtype=None, shape=None, *, device=None):
    s, dt, weak = _like("zeros_like", a, dtype, shape)
    return _full(s, 0, dt, weak=weak)


def ones_like(a, dtype=None, shape=None, *, device=None):
    s, dt, weak = _like("ones_like", a, dtype, shape)
    return _full(s, 1, dt, weak=weak)


def empty_like(a, dtype=None, shape=None, *, device=None):
    s, dt, weak = _like("empty_like", a, dtype, shape)
    return _full(s, 0, dt, weak=weak)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    s, dt, weak = _like("full_like", a, dtype, shape)
    if isinstance(fill_value, ArrayOps) and fill_value.ndim:
        return broadcast_to(U.to_array(fill_value, dt, False), s)
    return _full(s, fill_value, dt, weak=weak)


# ----------------------------------------------------------------- ranges


def _static(x, what):
    if isinstance(x, ArrayOps):
        x = _c.concrete_or_error(x, f"{what} must be static: it determines the output shape")
        x = np.asarray(x).item()
    return x


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """Evenly spaced values in [start, stop); the arguments must be static."""
    def arg(v, name):
        if isinstance(v, ArrayOps):
            v = _c.concrete_or_error(v, f"arange {name} must be static: it determines the "
                                        f"output shape. It arose in the jnp.arange argument "
                                        f"'{name}'")
            v = np.asarray(v).item()
        return v
    start = arg(start, "stop" if stop is None else "start")
    stop = arg(stop, "stop")
    step = arg(step, "step")
    if any(np.iscomplexobj(a) for a in (start, stop, step) if a is not None):
        raise ValueError("Passing complex start/stop/step to jnp.arange is no longer "
                         "supported; pass real values (build the complex values with "
                         "arithmetic on a real range instead).")
    if step == 0:
        raise ValueError("arange: step must not be zero")
    args = [a for a in (start, stop, step) if a is not None]
    dt = U.canonical_dtype(dtype) or dtypes.result_type(*args)
    only_stop = stop is None
    if stop is None:
        start, stop = 0, start
    if _staging() and (only_stop or all(isinstance(a, (int, np.integer)) and
                                        not isinstance(a, bool) for a in args)):
        # As JAX: iota (times step, plus start) -- float ranges with an explicit start
        # or step are built on the host, as in JAX, to get NumPy's exact values.
        step_ = 1 if step is None else step
        if only_stop:
            size = max(int(math.ceil(stop)), 0)
        else:
            size = max(-((start - stop) // step_), 0)
        out = lax.iota(dt, size)
        if step_ != 1:
            out = lax.mul(_scalar_literal(step_, dt), out)
        if start != 0:
            out = lax.add(_scalar_literal(start, dt), out)
        return out
    v = np.arange(start, stop, 1 if step is None else step)
    return Array(v.astype(dt), False)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """``num`` values from start to stop; traced endpoints are allowed (num is static)."""
    num = U.static_int(num, "linspace num")
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    s, e = U.promote_dtypes_inexact(start, stop)
    dt = U.canonical_dtype(dtype) or s.dtype
    comp = dtypes.to_inexact_dtype(dt) if dt.kind in "biu" else dt
    s, e = U.to_array(s, comp, False), U.to_array(e, comp, False)
    bshape = U.broadcast_shapes(s.shape, e.shape)
    s, e = U.broadcast_to_shape(s, bshape), U.broadcast_to_shape(e, bshape)
    div = (num - 1) if endpoint else num
    fshape = (num,) + (1,) * len(bshape)
    if _staging():
        frac = lax.reshape(lax.iota(comp, num), fshape)
    else:
        frac = Array(np.arange(num, dtype=comp).reshape(fshape))
    frac = F.true_divide(frac, _scalar_literal(div, comp)) if div > 0 else \
        F.multiply(frac, _scalar_literal(0, comp))
    delta = F.subtract(e, s)
    # JAX's formula (start * (1 - t) + stop * t), so values agree bit for bit
    out = F.add(F.multiply(expand_dims(s, 0), F.subtract(_scalar_literal(1, comp), frac)),
                F.multiply(expand_dims(e, 0), frac))
    if endpoint and num > 1:
        if _staging():   # concatenate the exact endpoint (no host-built mask)
            head = lax.slice_in_dim(out, 0, num - 1, axis=0)
            out = lax.concatenate([head, expand_dims(e, 0)], 0)
        else:
            from xform.numpy._indexing import set_last  # deferred: import cycle
            out = set_last(out, e)
    out = moveaxis(out, 0, U.canonicalize_axis(axis, len(bshape) + 1))
    if dt.kind in "iu":
        out = F.floor(out)
    out = U.to_array(out, dt, False)
    if retstep:
        step = F.true_divide(delta, U.to_array(div, comp)) if div > 0 else \
            U.to_array(np.nan, comp)
        return out, step
    return out


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    lin = linspace(start, stop, num, endpoint=endpoint, axis=axis)
    dt = U.canonical_dtype(dtype) or lin.dtype
    b = U.to_array(base, lin.dtype, True)
    return U.to_array(F.power(b, lin), dt, False)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """JAX's formula: ``sign(start) * logspace(log10(start/sign), log10(stop/sign))``, so
    negative (and complex) endpoints work."""
    num = U.static_int(num, "'num' argument of jnp.geomspace")
    axis = U.static_int(axis, "'axis' argument of jnp.geomspace")
    U.check_arraylike("geomspace", start, stop)
    dt = U.canonical_dtype(dtype)
    if dt is None:
        dt, _ = U.result_dtype(start, stop)
        dt = dtypes.to_inexact_dtype(dt) if dt.kind in "biu" else dt
    comp = dtypes.to_inexact_dtype(dt) if dt.kind in "biu" else dt
    s, e = U.to_array(start, comp, False), U.to_array(stop, comp, False)
    sign = F.sign(s)
    res = F.multiply(sign, logspace(F.log10(F.true_divide(s, sign)),
                                    F.log10(F.true_divide(e, sign)), num,
                                    endpoint=endpoint, base=10.0, dtype=comp, axis=0))
    ax = U.canonicalize_axis(axis, res.ndim)
    if ax != 0:
        res = moveaxis(res, 0, ax)
    return U.to_array(res, dt, False)


# ----------------------------------------------------------------- matrices


def _diagonal_offset(k, what):
    """The ``k`` of eye/tri: a static int (an OverflowError outside int32 without x64, as
    JAX converts it), or a traced integer scalar (then the mask is built from iotas)."""
    if isinstance(k, Tracer) and k.to_concrete_value() is None:
        if k.ndim != 0 or k.dtype.kind not in "iu":
            raise TypeError(f"{what} must be an integer scalar, got {k.dtype}{list(k.shape)}")
        return lax.convert_element_type(k, np.int32)
    k = U.static_int(k, what)
    if not config.x64_enabled and not -2**31 <= k < 2**31:
        raise OverflowError(f"Python int {k} too large to convert to int32")
    return k


def _matrix_dims(name, N, M):
    N, M = U.canonical_shape((N, N if M is None else M), f"{name} N and M")
    return N, M


def eye(N, M=None, k=0, dtype=None, *, device=None):
    N, M = _matrix_dims("eye", N, M)
    dt = U.canonical_dtype(dtype) or dtypes.default_float_dtype()
    k = _diagonal_offset(k, "eye k")
    if _staging() or isinstance(k, Tracer):
        return lax.convert_element_type(_eye_bool(N, M, k), dt)
    return Array(np.eye(N, M, k, dtype=dt), False)


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    N, M = _matrix_dims("tri", N, M)
    dt = U.canonical_dtype(dtype) or dtypes.default_float_dtype()
    k = _diagonal_offset(k, "tri k")
    if _staging() or isinstance(k, Tracer):
        return lax.convert_element_type(_tri_bool(N, M, k), dt)
    return Array(np.tri(N, M, k, dtype=dt), False)


def _tri_mask(a, k, lower):
    if a.ndim < 2:
        raise ValueError(f"{'tril' if lower else 'triu'} requires an array of at least 2 "
                         f"dimensions, got shape {a.shape}")
    n, m = a.shape[-2:]
    if _staging():
        rows, cols = _iota_grid((n, m), k)
        mask = lax.ge(rows, cols) if lower else lax.le(rows, cols)
    else:
        mask = np.tri(n, m, k, dtype=bool) if lower else ~np.tri(n, m, k - 1, dtype=bool)
    mask = U.broadcast_to_shape(U.to_array(mask), a.shape)
    return where(mask, a, np.zeros((), a.dtype))


def tril(m, k=0):
    m = U.ensure_arraylike("tril", m)
    return _tri_mask(U.to_array(m), U.static_int(k, "tril k"), True)


def triu(m, k=0):
    m = U.ensure_arraylike("triu", m)
    return _tri_mask(U.to_array(m), U.static_int(k, "triu k"), False)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing!r}")
    xs = [ravel(asarray(x)) for x in xi]
    n = len(xs)
    shapes = [x.shape[0] for x in xs]
    if indexing == "xy" and n >= 2:
        shapes[0], shapes[1] = shapes[1], shapes[0]
    out = []
    for i, x in enumerate(xs):
        ax = i
        if indexing == "xy" and n >= 2 and i < 2:
            ax = 1 - i
        s = [1] * n
        s[ax] = x.shape[0]
        r = lax.reshape(x, tuple(s))
        out.append(r if sparse else broadcast_to(r, tuple(shapes)))
    return out


def diag(v, k=0):
    from xform.numpy._linalg import diagonal  # deferred: import cycle
    v = asarray(v)
    k = U.static_int(k, "diag k")
    if v.ndim == 1:
        n = v.shape[0] + builtins_abs(k)
        mask = _eye_bool(n, n, k)
        # Row i (column i + k) holds v[i - max(-k, 0)]: place v along the rows/cols.
        vv = _pad(v, (builtins_abs(k), 0))
        col = broadcast_to(lax.reshape(vv, (1, n)) if k >= 0 else lax.reshape(vv, (n, 1)),
                           (n, n))
        return where(mask, col, np.zeros((), v.dtype))
    if v.ndim == 2:
        return diagonal(v, k)
    raise ValueError(f"diag input must be 1d or 2d, got shape {v.shape}")


def builtins_abs(x):
    return x if x >= 0 else -x


def diagflat(v, k=0):
    return diag(ravel(asarray(v)), k)


def frombuffer(*a, **k):
    return asarray(np.frombuffer(*a, **k))


def copy(a, order=None):
    return array(a, copy=True)


__all__ = [n for n in dir() if not n.startswith("_") and n not in (
    "annotations", "math", "np", "dtypes", "core", "Array", "ArrayOps", "U", "lax",
    "builtins_abs", "F", "LAZY_SCALAR_TYPES", "StagingTrace", "Tracer", "config", "copy_p",
    "random_wrap", "warnings")]

"""Argument handling shared by every ``xform.numpy`` function.

Converting arguments, JAX-style dtype promotion (weak Python scalars), NumPy
broadcasting and axis normalisation live here, so each public function is a
few lines: check, promote, broadcast, bind.

The common eager path (two Arrays of equal dtype and shape) never reaches
this module: the ufunc wrappers test for it first.
"""
from __future__ import annotations

import operator

import numpy as np

from xform._src.interpreters import core, dtypes
from xform._src.interpreters.config import config
from xform._src.interpreters.core import Array, ArrayOps, Tracer
from xform import lax  # noqa: F401  (xform.numpy's modules use lax through this name)
import sys
import warnings

_SCALARS = (int, float, complex, bool)


# ----------------------------------------------------------------- primitives (lazy)

def prim(name):
    """The primitive ``<name>_p`` from whichever family module defines it."""
    p = _PRIMS.get(name)
    if p is None:
        from xform._src import primitives  # noqa: F401
        for fam in ("elementwise", "structural", "reductions", "linalg", "sorting", "indexing"):
            mod = sys.modules.get(f"xform._src.primitives.{fam}")
            if mod is not None and hasattr(mod, f"{name}_p"):
                p = _PRIMS[name] = getattr(mod, f"{name}_p")
                break
        else:
            raise NotImplementedError(f"primitive {name!r} is not available in this build of xform")
    return p


_PRIMS: dict = {}


# ----------------------------------------------------------------- array checks

def is_arraylike(x) -> bool:
    return isinstance(x, (ArrayOps, np.ndarray, np.generic)) or type(x) in _SCALARS or \
        (isinstance(x, _SCALARS) and not isinstance(x, (list, tuple))) or \
        getattr(x, "__jax_array__", None) is not None


def check_arraylike(name, *args):
    """Raise JAX's TypeError unless every argument is array-like: an Array or tracer, a
    NumPy array or scalar, a Python scalar, or an object with ``__jax_array__``."""
    for i, a in enumerate(args):
        if not is_arraylike(a):
            raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(a)} at "
                            f"position {i}. Convert lists/tuples with xform.numpy.asarray first.")


def from_jax_array(x):
    """``x``, or the array its ``__jax_array__()`` gives (objects such as flax.nnx's
    Variables stand for the array they hold)."""
    if isinstance(x, ArrayOps) or type(x) in _SCALARS:
        return x
    m = getattr(x, "__jax_array__", None)
    return x if m is None else m()


def ensure_arraylike(name, *args):
    """``check_arraylike``, then each argument with ``__jax_array__`` replaced by the
    array it gives (JAX's ``ensure_arraylike``). Other values are returned as they
    are (Python scalars stay weakly typed). One argument gives one value, several a
    tuple."""
    check_arraylike(name, *args)
    if len(args) == 1:
        return from_jax_array(args[0])
    return tuple(from_jax_array(a) for a in args)


def ensure_arraylike_tuple(name, args):
    """``ensure_arraylike`` of a sequence of arguments, always a tuple."""
    check_arraylike(name, *args)
    return tuple(from_jax_array(a) for a in args)


def aval(x):
    return core.get_aval(x)


def shape_of(x):
    return x.shape if isinstance(x, (ArrayOps, np.ndarray, np.generic)) else ()


def dtype_of(x):
    if isinstance(x, ArrayOps):
        return x.dtype
    return dtypes.dtype_of(from_jax_array(x))


def is_weak(x):
    return dtypes.is_weakly_typed(x)


# ----------------------------------------------------------------- conversion

def to_array(x, dtype=None, weak=None):
    """Any array-like (Array/Tracer/NumPy/Python scalar) as an engine value.

    ``dtype``/``weak`` convert it; Python scalars and NumPy values are converted
    on the host (no primitive is bound for constants).
    """
    if isinstance(x, ArrayOps):
        if dtype is None:
            return x
        if not isinstance(dtype, np.dtype):
            dtype = dtype if dtypes.is_extended(dtype) else np.dtype(dtype)
        w = x.weak_type if weak is None else weak
        if x.dtype == dtype and x.weak_type == w:
            return x
        return convert(x, dtype, w)
    t = type(x)
    if t in _SCALARS or isinstance(x, _SCALARS):
        w = (t is not bool) if weak is None else weak
        dt = dtypes.dtype_of(x) if dtype is None else np.dtype(dtype)
        return Array(_np_scalar(x, dt), w and dt != dtypes.bool_)
    if isinstance(x, (np.ndarray, np.generic)):
        dt = dtypes.canonicalize_dtype(dtypes.dtype_of(x)) if dtype is None else np.dtype(dtype)
        v = np.array(x, dtype=dt)  # copy: the Array must not see later mutation
        return Array(v, bool(weak))
    m = getattr(x, "__jax_array__", None)
    if m is not None:
        return to_array(m(), dtype, weak)
    raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid xform array type. "
                    "Use an xform Array, a NumPy array or a Python scalar.")


def _np_scalar(x, dt):
    if dt.kind in "iu" and isinstance(x, int) and not isinstance(x, bool):
        info = np.iinfo(dt)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python integer {x} out of bounds for {dt.name}")
    return np.asarray(x, dt)


def convert(x, dtype, weak=False):
    """``convert_element_type`` keeping the requested weak flag."""
    src = getattr(x, "dtype", None)
    if dtypes.is_extended(src) or dtypes.is_extended(dtype):
        raise TypeError(f"cannot convert an array of dtype {src} to {dtype}: typed PRNG key "
                        "arrays have no numeric value (use xform.random.key_data / "
                        "wrap_key_data to go between keys and their uint32 words)")
    return prim("convert_element_type").bind(x, new_dtype=np.dtype(dtype), weak_type=bool(weak))


# ----------------------------------------------------------------- promotion

_rt_cache: dict = {}


def _clear(_=None):
    _rt_cache.clear()
    _noop_cache.clear()


_noop_cache: dict = {}


def promotes_to_itself(dtype, weak, n=2) -> bool:
    """Whether promoting ``n`` operands that all have ``dtype`` and weak type ``weak``
    leaves them as they are (``promote_dtypes`` would return them unchanged): the test
    behind the fast paths of the elementwise functions under a trace."""
    key = (dtype, weak, n)
    r = _noop_cache.get(key)
    if r is None:
        r = _noop_cache[key] = dtypes.lattice_result_type(
            *[_Proxy(dtype, weak)] * n) == (dtype, weak)
    return r


config.on_change("jax_enable_x64", _clear)
config.on_change("jax_numpy_dtype_promotion", _clear)


def _key(x):
    t = type(x)
    if t in _SCALARS:
        return t
    if isinstance(x, ArrayOps):
        return (x.dtype, x.weak_type)
    x = from_jax_array(x)
    return (dtypes.dtype_of(x), dtypes.is_weakly_typed(x))


class _Proxy:
    __slots__ = ("dtype", "weak_type")

    def __init__(self, dtype, weak):
        self.dtype, self.weak_type = dtype, weak


def result_dtype(*args):
    """``(dtype, weak)`` of JAX's promotion of ``args``; cached per (dtype, weak) tuple."""
    key = tuple(_key(a) for a in args)
    r = _rt_cache.get(key)
    if r is None:
        r = _rt_cache[key] = dtypes.lattice_result_type(
            *(k(1) if isinstance(k, type) else _Proxy(*k) for k in key))
    return r


def promote_dtypes(*args):
    if len(args) == 2:      # two arrays of one dtype and weak type promotion leaves alone
        a, b = args
        if isinstance(a, ArrayOps) and isinstance(b, ArrayOps):
            d, w = a.dtype, a.weak_type
            if b.dtype == d and b.weak_type == w and promotes_to_itself(d, w):
                return [a, b]
    dt, weak = result_dtype(*args)
    return [_promoted(a, dt, weak, i, len(args)) for i, a in enumerate(args)]


def _arg_path(i, n):
    return ("x", "y")[i] if n == 2 else f"args[{i}]"


def weak_int_value(x, i=0, n=1):
    """A Python int operand of a promoting function, as JAX's jitted functions take it:
    a weak value of the default integer dtype, so an int outside that dtype's range is an
    OverflowError (JAX's message for a jitted argument)."""
    info = np.iinfo(dtypes.default_int_dtype())
    if not info.min <= x <= info.max:
        raise OverflowError("An overflow was encountered while parsing an argument to a "
                            f"jitted computation, whose argument path is {_arg_path(i, n)}. "
                            f"Got {int} with value {x}")
    return np.asarray(x, info.dtype)


def _promoted(a, dt, weak, i, n):
    """``a`` converted to the promoted ``(dt, weak)``.  A Python int first becomes a weak
    value of the default int dtype (range-checked) and is then converted as
    ``convert_element_type`` converts: into a narrower or unsigned integer dtype it wraps
    around (``uint16[...] + (-1)`` adds 65535), as in JAX."""
    if type(a) is int:
        v = weak_int_value(a, i, n)
        if dt.kind in "iu" and v.dtype != dt:
            with np.errstate(over="ignore"):
                return Array(v.astype(dt), weak and dt != dtypes.bool_)
        if dt.kind != "b":
            with np.errstate(over="ignore", invalid="ignore"):
                return Array(v.astype(dt), weak)
    return to_array(a, dt, weak)


def promote_dtypes_inexact(*args):
    dt, weak = result_dtype(*args)
    dt = dtypes.to_inexact_dtype(dt)
    return [_promoted(a, dt, weak, i, len(args)) for i, a in enumerate(args)]


def promote_dtypes_numeric(*args):
    """bool promotes to the default int (as JAX does for e.g. sum/prod inputs)."""
    dt, weak = result_dtype(*args)
    if dt == dtypes.bool_:
        dt = dtypes.default_int_dtype()
    return [_promoted(a, dt, weak, i, len(args)) for i, a in enumerate(args)]


# ----------------------------------------------------------------- broadcasting

def broadcast_shapes_or_none(*shapes):
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(nd):
        d = 1
        for s in shapes:
            k = i - (nd - len(s))
            if k < 0:
                continue
            e = s[k]
            if e == 1:
                continue
            if d == 1:
                d = e
            elif e != d:
                return None
        out.append(d)
    return tuple(out)


def broadcast_shapes(*shapes, name=None):
    out = broadcast_shapes_or_none(*shapes)
    if out is None:
        if name is None:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}")
        raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                        f"{', '.join(str(tuple(s)) for s in shapes)}.")
    return out


def broadcast_to_shape(x, shape):
    """Broadcast an engine value to ``shape`` (NumPy rules, no validity re-check)."""
    shape = tuple(shape)
    xs = x.shape
    if xs == shape:
        return x
    if not xs and isinstance(x, Array) and core.current_trace() is core.EVAL_TRACE \
            and x._npy is not None:
        v = x._npy
        n = 1
        for d in shape:
            n *= d
        return Array(np.full(shape, v, v.dtype) if n <= 4096 else np.broadcast_to(v, shape),
                     x.weak_type)
    nd = len(shape)
    lead = nd - len(xs)
    if lead < 0 or any(d != 1 and d != shape[lead + i] for i, d in enumerate(xs)):
        raise ValueError(f"cannot broadcast an array of shape {xs} to shape {shape}")
    keep = [i for i, d in enumerate(xs) if d == shape[lead + i]]
    if len(keep) != len(xs):  # squeeze away size-1 dims that get broadcast
        x = lax.reshape(x, tuple(xs[i] for i in keep))
    return lax.broadcast_in_dim(x, shape, tuple(lead + i for i in keep))


def check_rank_promotion(name, shapes):
    """JAX's ``jax_numpy_rank_promotion``: operands of different non-zero ranks broadcast
    silently ('allow'), with a warning ('warn') or not at all ('raise': ValueError).
    Checked where users call a binary ufunc (``xnp.add``, ``x + y``); xform's own
    functions broadcast through the ufunc functions underneath, unchecked."""
    mode = config.jax_numpy_rank_promotion
    if mode == "allow" or len({len(s) for s in shapes if s}) < 2:
        return
    shapes_str = " ".join(str(tuple(s)) for s in shapes)
    if mode == "warn":
        warnings.warn(f"Following NumPy automatic rank promotion for {name} on shapes "
                      f"{shapes_str}. Set the jax_numpy_rank_promotion config option to "
                      "'allow' to disable this warning; for more information, see "
                      "https://docs.jax.dev/en/latest/rank_promotion_warning.html.",
                      stacklevel=4)
    elif mode == "raise":
        raise ValueError(f"Operands could not be broadcast together for {name} on shapes "
                         f"{shapes_str} and with the config option "
                         "jax_numpy_rank_promotion='raise'. For more information, see "
                         "https://docs.jax.dev/en/latest/rank_promotion_warning.html.")


def promote_shapes(name, *args):
    shapes = [a.shape for a in args]
    s0 = shapes[0]
    if all(s == s0 for s in shapes):
        return list(args)
    out = broadcast_shapes_or_none(*shapes)
    if out is None:
        # As in JAX: operands of different (non-scalar) ranks are broadcast by jnp first
        # (ValueError); equal ranks reach the lax operation (TypeError naming it).
        if len({len(s) for s in shapes if s}) > 1 or name == "where":
            raise ValueError("Incompatible shapes for broadcasting: "
                             f"shapes={[tuple(s) for s in shapes]}")
        out = broadcast_shapes(*shapes, name=name)
    return [broadcast_to_shape(a, out) for a in args]


def promote_shapes_lax(name, *args):
    """``promote_shapes`` for operands of a lax n-ary elementwise op (JAX's jnp rule):
    operands of equal rank, and rank-0 operands next to arrays of one rank, pass through
    as they are (the primitive broadcasts rank-0 operands and size-1 dimensions
    implicitly, so no ``broadcast_in_dim`` is staged; incompatible equal-rank shapes
    raise the primitive's TypeError); operands of different ranks are promoted to the
    largest rank with leading size-1 dimensions (JAX's ``broadcast_to_rank``)."""
    shapes = [a.shape for a in args]
    s0 = shapes[0]
    if all(s == s0 for s in shapes):
        return list(args)
    if len({len(s) for s in shapes if s}) < 2:
        broadcast_shapes(*shapes, name=name)    # incompatible sizes: the lax TypeError
        return list(args)
    if broadcast_shapes_or_none(*shapes) is None:
        raise ValueError("Incompatible shapes for broadcasting: "
                         f"shapes={[tuple(s) for s in shapes]}")
    rank = max(len(s) for s in shapes)
    out = []
    for a, s in zip(args, shapes):
        if len(s) != rank:
            k = rank - len(s)
            a = lax.broadcast_in_dim(a, (1,) * k + tuple(s), tuple(range(k, rank)))
        out.append(a)
    return out


def promote_args_lax(name, *args):
    """``promote_args`` for code built from lax n-ary ops (rank-0 operands stay rank 0)."""
    args = ensure_arraylike_tuple(name, args)
    return promote_shapes_lax(name, *promote_dtypes(*args))


def promote_args_inexact_lax(name, *args):
    args = ensure_arraylike_tuple(name, args)
    return promote_shapes_lax(name, *promote_dtypes_inexact(*args))


def promote_args(name, *args):
    args = ensure_arraylike_tuple(name, args)
    return promote_shapes(name, *promote_dtypes(*args))


def promote_args_inexact(name, *args):
    args = ensure_arraylike_tuple(name, args)
    return promote_shapes(name, *promote_dtypes_inexact(*args))


# ----------------------------------------------------------------- axes

def canonicalize_axis(axis, ndim, name="axis"):
    try:
        a = operator.index(axis) if not isinstance(axis, ArrayOps) else int(core.concrete_or_error(
            axis, "an axis argument must be a static Python int"))
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {axis!r}") from None
    if not -ndim <= a < ndim:
        raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
    return a % ndim if ndim else a


def axis_tuple(axis):
    """An axis argument as a tuple: an integer (anything with ``__index__``) is one axis,
    any other iterable (tuple, list, range, a 1-d integer array) a sequence of them, as
    JAX's ``jax.numpy`` reads ``axis`` arguments."""
    if isinstance(axis, (tuple, list)):
        return tuple(axis)
    if isinstance(axis, ArrayOps) and axis.ndim == 0:
        return (axis,)
    try:
        return (operator.index(axis),)
    except TypeError:
        pass
    if isinstance(axis, (str, bytes)) or not hasattr(axis, "__iter__"):
        return (axis,)        # canonicalize_axis names the bad value
    return tuple(axis)


def canonicalize_axes(axis, ndim):
    """``None`` -> all axes; int or sequence -> sorted tuple of unique non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is tuple:     # already canonical (as passed on by another reduction)
        for a in axis:
            if type(a) is not int or not 0 <= a < ndim:
                break
        else:
            if len(set(axis)) == len(axis):
                return axis
    if not isinstance(axis, (tuple, list)):
        axis = axis_tuple(axis)
    if isinstance(axis, (tuple, list)):
        out = tuple(canonicalize_axis(a, ndim) for a in axis)
        if len(set(out)) != len(out):
            raise ValueError(f"duplicate value in 'axis': {tuple(axis)}")
        return out
    return (canonicalize_axis(axis, ndim),)


def static_int(x, what):
    if isinstance(x, ArrayOps):
        x = core.concrete_or_error(x, f"{what} must be a static value")
    try:
        return int(x) if not hasattr(x, "__index__") else x.__index__()
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {x!r}") from None


def canonical_shape(shape, name="shape"):
    """A static shape tuple; JAX's TypeError for anything else (a float, a traced
    value, a negative size)."""
    if isinstance(shape, (int, np.integer)) or (
            isinstance(shape, (ArrayOps, np.ndarray)) and not shape.shape):
        shape = (shape,)
    if isinstance(shape, (str, bytes, bytearray)):
        shape = (shape,)        # not a sequence of sizes (JAX's TypeError below)
    try:
        entries = tuple(shape)
    except TypeError:
        entries = (shape,)
    out = []
    for d in entries:
        if isinstance(d, Tracer) and d.to_concrete_value() is None:
            raise TypeError(
                f"Shapes must be 1D sequences of concrete values of integer type, got "
                f"{entries}: {name} entries must be static.\nIf using `jit`, try using "
                "`static_argnums` or applying `jit` to smaller subfunctions.")
        if isinstance(d, ArrayOps):
            d = core.concrete_or_error(d)
        if isinstance(d, (bool, np.bool_)) or not hasattr(d, "__index__") or \
                np.ndim(d) != 0:
            raise TypeError(f"Shapes must be 1D sequences of concrete values of integer "
                            f"type, got {entries}: {name} must be an int or a sequence of "
                            "ints.")
        out.append(operator.index(d) if not isinstance(d, np.ndarray) else int(d))
    out = tuple(out)
    if any(d < 0 for d in out):
        raise TypeError(f"negative dimensions are not allowed: {name}={out}")
    return out


def canonical_dtype(dtype, allow_none=True):
    """User dtype argument -> canonical np.dtype (TypeError for unknown names)."""
    if dtype is None:
        return None
    if isinstance(dtype, (int, float, complex)):    # a value, not a dtype (NumPy's error)
        raise TypeError(f"Cannot interpret '{dtype!r}' as a data type")
    return dtypes.dtype_of(dtype) if not isinstance(dtype, np.dtype) else \
        dtypes.canonicalize_dtype(dtype)


def is_concrete(x):
    return not isinstance(x, Tracer) or x.to_concrete_value() is not None

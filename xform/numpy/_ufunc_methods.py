"""``jnp.add.reduce``, ``jnp.multiply.outer``, ``jnp.maximum.at`` ...: the ufunc methods of
the existing binary elementwise functions.  Each function keeps its identity (and fast
path); ``reduce``/``accumulate``/``at`` use the matching reduction, cumulative or
``x.at[...]`` update where one exists and the generic ``ufunc`` machinery otherwise."""
from __future__ import annotations

from xform.numpy import _misc as M
from xform.numpy import _reductions as R
from xform.numpy import _ufuncs as F
from xform.numpy import _util as U


def _red(fn, has_dtype=True):
    def reduce(a, axis=0, dtype=None, keepdims=False, initial=None):
        if has_dtype:
            return fn(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial)
        x = a if dtype is None else U.to_array(U.to_array(a), U.canonical_dtype(dtype), False)
        return fn(x, axis=axis, keepdims=keepdims, initial=initial)
    return reduce


def _bool_red(fn):
    def reduce(a, axis=0, dtype=None, keepdims=False, initial=None):
        out = fn(a, axis=axis, keepdims=keepdims)
        if initial is not None:
            out = (F.logical_and if fn is R.all else F.logical_or)(out, bool(initial))
        return out if dtype is None else U.to_array(out, U.canonical_dtype(dtype), False)
    return reduce


def _acc(fn):
    def accumulate(a, axis=0, dtype=None):
        return fn(a, axis=axis, dtype=dtype)
    return accumulate


def _at(method):
    def at(a, indices, b):
        return getattr(U.to_array(a).at[indices], method)(b)
    return at


_BINARY = {
    "add": (0, _red(R.sum), _acc(R.cumsum), _at("add")),
    "multiply": (1, _red(R.prod), _acc(R.cumprod), _at("multiply")),
    "maximum": (None, _red(R.max, False), None, _at("max")),
    "minimum": (None, _red(R.min, False), None, _at("min")),
    "logical_and": (True, _bool_red(R.all), None, None),
    "logical_or": (False, _bool_red(R.any), None, None),
    "logical_xor": (False, None, None, None),
    "bitwise_and": (-1, None, None, None), "bitwise_or": (0, None, None, None),
    "bitwise_xor": (0, None, None, None),
    "logaddexp": (-float("inf"), None, None, None),
    "logaddexp2": (-float("inf"), None, None, None),
}
_OTHER_BINARY = ("subtract", "true_divide", "divide", "floor_divide", "remainder", "mod",
                 "fmod", "power", "float_power", "arctan2", "hypot", "copysign", "nextafter",
                 "heaviside", "fmax", "fmin", "equal",
                 "not_equal", "less", "less_equal", "greater", "greater_equal", "left_shift",
                 "right_shift")

# name -> the ufunc object whose methods the function carries
UFUNCS: dict = {}

for _name in list(_BINARY) + list(_OTHER_BINARY):
    _f = getattr(F, _name, None)
    if _f is None or hasattr(_f, "reduce"):
        continue
    _ident, _r, _a, _t = _BINARY.get(_name, (None, None, None, None))
    _u = M.ufunc(_f, 2, 1, name=_name, identity=_ident, call=_f, reduce=_r, accumulate=_a,
                 at=_t)
    UFUNCS[_name] = _u
    for _attr in ("outer", "reduce", "accumulate", "at", "reduceat"):
        setattr(_f, _attr, getattr(_u, _attr))
    _f.nin, _f.nout, _f.nargs, _f.identity = 2, 1, 2, _ident

UFUNCS["negative"] = M.ufunc(F.negative, 1, 1, name="negative", call=F.negative)

# The functions that are ``jnp.ufunc`` objects in JAX (``isinstance(jnp.add, jnp.ufunc)``,
# read-only ``nin``/``nout``/``identity``): ``xform.numpy`` exposes these ufunc objects
# (calling the possibly jit-wrapped function; see ``install_ufunc_objects``).
JNP_UFUNCS = ("add", "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2",
              "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
              "negative", "subtract")


def install_ufunc_objects(namespace):
    """Replace JNP_UFUNCS' functions in the ``xform.numpy`` module by ufunc objects that
    call them."""
    for name in JNP_UFUNCS:
        f = namespace.__dict__[name]
        if isinstance(f, M.ufunc):
            continue
        u = UFUNCS[name]
        u.__dict__["_call"] = f
        namespace.__dict__[name] = u


__all__: list = []

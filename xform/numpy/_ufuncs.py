"""Elementwise functions (``jnp.add``, ``jnp.sin``, ...): promote, broadcast, bind.

Most functions come from two factories driven by tables.  Each generated
function first tries the fast case: Arrays already of one dtype and shape
(and a dtype the primitive accepts), which binds the primitive directly.
Everything else goes through ``_util`` promotion and broadcasting.

Composite functions (floor_divide, remainder, hypot, logaddexp, ...) follow
JAX's numerically careful formulations, written with the same primitives.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from xform._src.interpreters import core, dtypes
from xform._src.interpreters.core import Array, ArrayOps
from xform.numpy import _util as U
from xform.numpy._util import lax, prim

# Sets of dtypes that hold the floats gain bfloat16 when ml_dtypes is imported
# (``_floats_too``; importing it costs ~0.5 s, so it waits until someone does).
_FLOAT_SETS: list = []


def _floats_too(dts) -> set:
    """``dts`` as a set that receives bfloat16 with the other floats (if it has them)."""
    out = set(dts)
    if dtypes.float16 in out:
        _FLOAT_SETS.append(out)
    return out


def _add_bfloat16():
    for s in _FLOAT_SETS:
        s.add(dtypes.bfloat16)


_F = _floats_too([dtypes.float16, dtypes.float32, dtypes.float64])
_C = frozenset([dtypes.complex64, dtypes.complex128])
_I = frozenset([dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64])
_U = frozenset([dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64])
_B = frozenset([dtypes.bool_])
_NUM = _floats_too(_F | _C | _I | _U)
_ALL = _floats_too(_NUM | _B)
_F_FAST = _F  # dtypes for which "Array op Python scalar" keeps the Array's dtype
dtypes.on_ml_dtypes(_add_bfloat16)
_state, _EVAL = core._state, core.EVAL_TRACE
_ARRAYLIKE = (ArrayOps, np.ndarray, np.generic, int, float, complex, bool)


def _try_prim(name):
    try:
        return prim(name)
    except NotImplementedError:
        return None


def _bind(pname, *args, **params):
    return prim(pname).bind(*args, **params)


# ----------------------------------------------------------------- factories

def _binary(name, pname, promote=U.promote_dtypes, fast=_NUM, bool_pname=None, doc=None):
    """A broadcasting binary ufunc that binds ``pname`` (``bool_pname`` for bool inputs).

    Fast cases, tested before any promotion: two Arrays of one dtype and shape
    (and a dtype the primitive accepts), and a float Array with a Python
    scalar (the weak scalar takes the Array's dtype).  Under the eval trace
    with host values they run the primitive's ``eager_fast`` (the eval trace's
    own common case, without ``bind``'s generic loop).
    """
    p = _try_prim(pname)
    fast = _floats_too(fast)
    fast_scalar = _floats_too(_F_FAST & fast)
    noop_promote = (promote is U.promote_dtypes or (
        promote is U.promote_dtypes_inexact and fast <= _F | _C)) and (
        bool_pname is None or dtypes.bool_ not in fast)
    # The last Python scalar converted, by identity: in a loop ``x * 2.0`` the constant
    # is one object, so its 0-d array (read-only, never handed out) is made once.
    last = [(None, None, None)]

    def scalar(x, dt, i):
        c = last[0]
        if c[0] is x and c[1] is dt:
            return c[2]
        # a Python int is a weak default-int argument first, as in JAX (range-checked)
        with np.errstate(over="ignore"):   # (an int past float16's range is inf)
            z = np.asarray(U.weak_int_value(x, i, 2) if type(x) is int else x, dt)
        z.flags.writeable = False
        last[0] = (x, dt, z)
        return z

    def make(operator):
        # One body, generated twice: the ufunc, and (operator=True) the forward Python
        # operator, which answers NotImplemented for an operand that is not array-like
        # so Python tries the other operand's reflected method.
        def fn(x1, x2, /):
            nonlocal p
            t1, t2 = type(x1), type(x2)
            if t1 is Array:
                v1 = x1._npy
                if t2 is Array:
                    v2 = x2._npy
                    if v1 is not None and v2 is not None and v1.dtype is v2.dtype \
                            and v1.shape == v2.shape and v1.dtype in fast:
                        if p is None:
                            p = prim(pname)
                        if _state.trace is _EVAL:
                            f = p._eager_fast or p.eager_fast()
                            if f is not None:
                                return f(x1.weak_type and x2.weak_type, v1, v2)
                        return p.bind(x1, x2)
                elif (t2 is float or t2 is int) and v1 is not None and v1.dtype in fast_scalar \
                        and _state.trace is _EVAL:
                    # float Array op weak Python scalar: the scalar takes the Array's dtype.
                    if p is None:
                        p = prim(pname)
                    f = p._eager_fast or p.eager_fast()
                    if f is not None:
                        return f(x1.weak_type, v1, scalar(x2, v1.dtype, 1))
                    return p.bind(x1, Array(scalar(x2, v1.dtype, 1), True))
            elif t1 is float or t1 is int:
                if t2 is Array:
                    v2 = x2._npy
                    if v2 is not None and v2.dtype in fast_scalar and _state.trace is _EVAL:
                        if p is None:
                            p = prim(pname)
                        f = p._eager_fast or p.eager_fast()
                        if f is not None:
                            return f(x2.weak_type, scalar(x1, v2.dtype, 0), v2)
                        return p.bind(Array(scalar(x1, v2.dtype, 0), True), x2)
            elif noop_promote and isinstance(x1, ArrayOps) and isinstance(x2, ArrayOps):
                # Under a trace: operands of one dtype and weak type that promotion leaves
                # as they are, of equal shapes or one of rank 0 (which the primitive
                # broadcasts): promotion and broadcasting below would change nothing.
                d = x1.dtype
                w = x1.weak_type
                if d in fast and x2.dtype == d and x2.weak_type == w \
                        and U.promotes_to_itself(d, w):
                    s1, s2 = x1.shape, x2.shape
                    if s1 == s2 or not s1 or not s2:
                        if p is None:
                            p = prim(pname)
                        return p.bind(x1, x2)
            if operator and not isinstance(x2, _ARRAYLIKE):
                # an object with ``__jax_array__`` is the array it gives (as in JAX);
                # for anything else Python tries the other operand's reflected method
                m = getattr(x2, "__jax_array__", None)
                if m is None:
                    return NotImplemented
                x2 = m()
            x1, x2 = U.ensure_arraylike(name, x1, x2)
            if operator:     # (the ufunc objects check their own calls)
                U.check_rank_promotion(name, (np.shape(x1), np.shape(x2)))
            a, b = U.promote_shapes_lax(name, *promote(x1, x2))
            if bool_pname is not None and a.dtype == dtypes.bool_:
                return _bind(bool_pname, a, b)
            if a.dtype in _C and pname in ("lt", "le", "gt", "ge"):
                # complex numbers order lexicographically on (real, imag), as in JAX
                if p is None:
                    p = prim(pname)
                ra, rb = lax.real(a), lax.real(b)
                return lax.select(lax.eq(ra, rb), p.bind(lax.imag(a), lax.imag(b)),
                                  p.bind(ra, rb))
            if a.dtype not in fast:
                if name in ("equal", "not_equal") and dtypes.is_extended(a.dtype):
                    # typed PRNG keys compare (all key words equal), as in JAX
                    from xform.random import _keys_equal  # deferred: import cycle
                    return _keys_equal(x1, x2, negate=name == "not_equal")
                _reject(name, a.dtype, fast)
            if p is None:
                p = prim(pname)
            return p.bind(a, b)
        return fn

    fn = make(False)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f"Elementwise ``{name}`` with NumPy broadcasting and JAX promotion."
    op = fn.operator = make(True)      # installed as __add__ etc. by xform._operators
    op.__name__ = op.__qualname__ = name
    return fn


def _reject(name, dt, accepted):
    kinds = sorted({"bool" if d in _B else "integer" if d in _I | _U else
                    "floating" if d in _F else "complexfloating" for d in accepted})
    raise TypeError(f"{name} does not accept dtype {dt.name}. Accepted dtypes are subtypes of "
                    f"{', '.join(kinds)}.")


def _unary(name, pname, inexact=True, fast=_F, accept=None, doc=None):
    """A unary ufunc; ``inexact`` promotes integers/bools to float first (as jnp.sin)."""
    p = _try_prim(pname)
    accept = _floats_too(accept or (_F | _C if inexact else _NUM))
    fast = _floats_too(fast)

    def fn(x, /):
        nonlocal p
        if type(x) is Array:
            v = x._npy
            if v is not None and v.dtype in fast:
                if p is None:
                    p = prim(pname)
                if _state.trace is _EVAL:
                    f = p._eager_fast or p.eager_fast()
                    if f is not None:
                        return f(x.weak_type, v)
                return p.bind(x)
        elif isinstance(x, ArrayOps):
            # Under a trace: a dtype the primitive accepts that promotion leaves as it is
            d = x.dtype
            if d in fast and d in accept and (not inexact or d in _F or d in _C) \
                    and U.promotes_to_itself(d, x.weak_type, 1):
                if p is None:
                    p = prim(pname)
                return p.bind(x)
        x = U.ensure_arraylike(name, x)
        (a,) = U.promote_dtypes_inexact(x) if inexact else U.promote_dtypes(x)
        if a.dtype not in accept:
            _reject(name, a.dtype, accept)
        if p is None:
            p = prim(pname)
        return p.bind(a)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f"Elementwise ``{name}`` (integer inputs promote to float)."
    return fn


# ----------------------------------------------------------------- arithmetic

add = _binary("add", "add", bool_pname="or")
subtract = _binary("subtract", "sub")
multiply = _binary("multiply", "mul", bool_pname="and")
maximum = _binary("maximum", "max", bool_pname="or")
minimum = _binary("minimum", "min", bool_pname="and")
true_divide = _binary("true_divide", "div", promote=U.promote_dtypes_inexact, fast=_F | _C)
divide = true_divide
arctan2 = _binary("arctan2", "atan2", promote=U.promote_dtypes_inexact, fast=_F)
nextafter = _binary("nextafter", "nextafter", promote=U.promote_dtypes_inexact, fast=_F)

equal = _binary("equal", "eq", fast=_ALL)
not_equal = _binary("not_equal", "ne", fast=_ALL)
less = _binary("less", "lt", fast=_ALL - _C)
less_equal = _binary("less_equal", "le", fast=_ALL - _C)
greater = _binary("greater", "gt", fast=_ALL - _C)
greater_equal = _binary("greater_equal", "ge", fast=_ALL - _C)

bitwise_and = _binary("bitwise_and", "and", fast=_I | _U | _B)
bitwise_or = _binary("bitwise_or", "or", fast=_I | _U | _B)
bitwise_xor = _binary("bitwise_xor", "xor", fast=_I | _U | _B)

sin = _unary("sin", "sin")
cos = _unary("cos", "cos")
tan = _unary("tan", "tan")
arcsin = _unary("arcsin", "asin")
arccos = _unary("arccos", "acos")
arctan = _unary("arctan", "atan")
sinh = _unary("sinh", "sinh")
cosh = _unary("cosh", "cosh")
tanh = _unary("tanh", "tanh")
arcsinh = _unary("arcsinh", "asinh")
arccosh = _unary("arccosh", "acosh")
arctanh = _unary("arctanh", "atanh")
exp = _unary("exp", "exp")
exp2 = _unary("exp2", "exp2")
expm1 = _unary("expm1", "expm1")
log = _unary("log", "log")
log1p = _unary("log1p", "log1p")
sqrt = _unary("sqrt", "sqrt")
cbrt = _unary("cbrt", "cbrt", accept=_F)
asin, acos, atan, atan2 = arcsin, arccos, arctan, arctan2
asinh, acosh, atanh = arcsinh, arccosh, arctanh


def _neg_like(name, pname):
    p = _try_prim(pname)

    def fn(x, /):
        nonlocal p
        if type(x) is Array and x._npy is not None and x._npy.dtype in _NUM:
            if p is None:
                p = prim(pname)
            if _state.trace is _EVAL:
                f = p._eager_fast or p.eager_fast()
                if f is not None:
                    return f(x.weak_type, x._npy)
            return p.bind(x)
        x = U.ensure_arraylike(name, x)
        (a,) = U.promote_dtypes(x)
        if a.dtype not in _NUM:
            raise TypeError(f"{pname} does not accept dtype {a.dtype.name}. Accepted dtypes are "
                            "subtypes of integer, floating, complexfloating.")
        return prim(pname).bind(a)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}``."
    return fn


negative = _neg_like("negative", "neg")


def sign(x, /):
    """-1, 0 or 1 by sign (unsigned: 0 or 1); NaN stays NaN."""
    x = U.ensure_arraylike("sign", x)
    (a,) = U.promote_dtypes(x)
    if a.dtype in _B:
        raise TypeError("sign does not accept dtype bool. Accepted dtypes are subtypes of "
                        "integer, floating, complexfloating.")
    if a.dtype in _U:
        return convert_bool(not_equal(a, _zero(a)), a)
    return _bind("sign", a)


def _zero(a):
    return U.to_array(0, a.dtype, a.weak_type)


def _const(a, v):
    return U.to_array(v, a.dtype, True)


def convert_bool(b, like):
    return U.convert(b, like.dtype, like.weak_type)


def positive(x, /):
    x = U.ensure_arraylike("positive", x)
    return U.to_array(x)


def absolute(x, /):
    """|x|; complex -> its real dtype; unsigned and bool unchanged."""
    x = U.ensure_arraylike("absolute", x)
    a = U.to_array(x)
    if a.dtype in _U | _B:
        return a
    return _bind("abs", a)


abs = absolute


def square(x, /):
    x = U.ensure_arraylike("square", x)
    (a,) = U.promote_dtypes_numeric(x)
    return _bind("square", a)            # lax.square, as JAX's jnp.square


def reciprocal(x, /):
    x = U.ensure_arraylike("reciprocal", x)
    (a,) = U.promote_dtypes_inexact(x)
    return lax.integer_pow(a, -1)      # as JAX's jnp.reciprocal


def _int_identity(name, pname):
    def fn(x, /):
        x = U.ensure_arraylike(name, x)
        a = U.to_array(x)
        if a.dtype in _I | _U | _B:
            return a
        if a.dtype in _C:
            raise TypeError(f"{name} does not support complex-valued inputs.")
        (a,) = U.promote_dtypes_inexact(a)
        return _bind(pname, a)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}``; integer inputs are returned unchanged."
    return fn


floor = _int_identity("floor", "floor")
ceil = _int_identity("ceil", "ceil")


def trunc(x, /):
    """Round toward zero; integers unchanged."""
    x = U.ensure_arraylike("trunc", x)
    a = U.to_array(x)
    if a.dtype in _I | _U | _B:
        return a
    return where(less(a, _zero(a)), ceil(a), floor(a))


fix = trunc


def rint(x, /):
    """Round half to even; integers become float (as JAX)."""
    x = U.ensure_arraylike("rint", x)
    (a,) = U.promote_dtypes_inexact(x)
    if a.dtype in _C:    # real and imaginary parts rounded separately, as JAX
        return lax.complex(lax.round(lax.real(a), 1), lax.round(lax.imag(a), 1))
    return lax.round(a, 1)


def round(a, decimals=0, out=None):
    """Round half to even to ``decimals`` places (integers: unchanged for decimals >= 0)."""
    a = U.ensure_arraylike("round", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to round is not supported.")
    decimals = U.static_int(decimals, "decimals")
    x = U.to_array(a)
    if x.dtype in _I | _U | _B:
        if decimals >= 0:
            return x
        f = _const(x, 10 ** -decimals)
        return multiply(_round_int_half_even(x, f), f)
    if decimals > np.log10(float(dtypes.finfo(x.dtype).max)):
        return x                      # finer than the dtype resolves: nothing to round
    if x.dtype in _C:
        return lax.complex(_round_float(lax.real(x), decimals),
                             _round_float(lax.imag(x), decimals))
    return _round_float(x, decimals)


def _round_float(x, decimals):
    """Half to even at ``decimals`` places by rescaling (float16 rescaled in float32,
    as JAX does, so the scale itself does not overflow or lose digits)."""
    if decimals == 0:
        return lax.round(x, 1)
    dt = x.dtype
    if dt == dtypes.float16:
        x = U.convert(x, dtypes.float32, x.weak_type)
    f = _const(x, 10.0 ** decimals)
    out = true_divide(lax.round(multiply(x, f), 1), f)
    return U.convert(out, dt, out.weak_type) if dt == dtypes.float16 else out


def _round_int_half_even(x, f):
    q = floor_divide(x, f)
    r = subtract(x, multiply(q, f))
    twice = multiply(r, _const(x, 2))
    up = logical_or(greater(twice, f), logical_and(equal(twice, f), not_equal(remainder(q, _const(x, 2)), _zero(x))))
    return where(up, add(q, _const(x, 1)), q)


around = round


def log2(x, /):
    x = U.ensure_arraylike("log2", x)
    (a,) = U.promote_dtypes_inexact(x)
    if a.dtype in _C:      # JAX's formula: the real and imaginary parts divided by log(2)
        r = _bind("log", a)
        re, im = _bind("real", r), _bind("imag", r)
        ln2 = _bind("log", _const(re, 2))
        return _bind("complex", _bind("div", re, ln2), _bind("div", im, ln2))
    return true_divide(log(a), log(_const(a, 2)))


def log10(x, /):
    x = U.ensure_arraylike("log10", x)
    (a,) = U.promote_dtypes_inexact(x)
    # JAX's formula: times 1/log(10) rounded to the real dtype (a non-weak constant)
    real_dt = np.finfo(a.dtype).dtype
    c = U.to_array(0.4342944819032518, real_dt, False)
    if a.dtype in _C:
        r = _bind("log", a)
        return _bind("complex", _bind("mul", _bind("real", r), c),
                     _bind("mul", _bind("imag", r), c))
    return _bind("mul", log(a), c)


def deg2rad(x, /):
    x = U.ensure_arraylike("deg2rad", x)
    (a,) = U.promote_dtypes_inexact(x)
    return multiply(a, _const(a, math.pi / 180))


def rad2deg(x, /):
    x = U.ensure_arraylike("rad2deg", x)
    (a,) = U.promote_dtypes_inexact(x)
    return multiply(a, _const(a, 180 / math.pi))


radians, degrees = deg2rad, rad2deg


# ----------------------------------------------------------------- division family

def _lax_args(name, *args):
    """``promote_args`` for operands of lax n-ary ops: rank-0 operands stay rank 0."""
    args = U.ensure_arraylike_tuple(name, args)
    return U.promote_shapes_lax(name, *U.promote_dtypes(*args))


def floor_divide(x1, x2, /):
    """Python ``//``: rounds toward negative infinity (integers and floats)."""
    a, b = _lax_args("floor_divide", *U.promote_dtypes_numeric(x1, x2))
    if a.dtype in _U:
        return _bind("div", a, b)
    if a.dtype in _I:
        q = _bind("div", a, b)
        # signs compared as JAX does (sign(0) = 0), so a zero divisor gives JAX's value
        fix_ = logical_and(not_equal(sign(a), sign(b)),
                           not_equal(_bind("rem", a, b), _zero(a)))
        return where(fix_, subtract(q, _const(q, 1)), q)
    if a.dtype in _C:
        raise TypeError("floor_divide does not support complex-valued inputs.")
    return _float_divmod(a, b)[0]


def _float_divmod(x1, x2):
    """CPython's float_divmod: correct the truncated quotient by the remainder's sign."""
    mod = _bind("rem", x1, x2)
    corrected = where(equal(x2, _zero(x2)), x1, subtract(x1, mod))
    div = true_divide(corrected, x2)
    ind = logical_and(not_equal(mod, _zero(mod)), not_equal(sign(x2), sign(mod)))
    mod = where(ind, add(mod, x2), mod)
    div = where(ind, subtract(div, _const(div, 1)), div)
    return lax.round(div, 0), mod


def remainder(x1, x2, /):
    """Python ``%``: the result has the sign of the divisor."""
    a, b = _lax_args("remainder", *U.promote_dtypes_numeric(x1, x2))
    if a.dtype in _U or a.dtype in _I:     # JAX: an integer x % 0 is 0 (divides by 1)
        b = where(equal(b, _zero(b)), _const(b, 1), b)
    if a.dtype in _U:
        return _bind("rem", a, b)
    if a.dtype in _C:
        raise TypeError("remainder does not support complex-valued inputs.")
    r = _bind("rem", a, b)
    fix_ = logical_and(not_equal(r, _zero(r)), not_equal(less(r, _zero(r)), less(b, _zero(b))))
    return where(fix_, add(r, b), r)


mod = remainder


def fmod(x1, x2, /):
    """C ``fmod``: the result has the sign of the dividend."""
    a, b = _lax_args("fmod", *U.promote_dtypes_numeric(x1, x2))
    if a.dtype in _U or a.dtype in _I:     # JAX: an integer fmod(x, 0) is 0
        b = where(equal(b, _zero(b)), _const(b, 1), b)
    return _bind("rem", a, b)


def divmod(x1, x2, /):
    return floor_divide(x1, x2), remainder(x1, x2)


# ----------------------------------------------------------------- power

def power(x1, x2, /):
    """``x1 ** x2`` with JAX's cases: a concrete integer scalar exponent uses repeated
    multiplication (``integer_pow``, which refuses negative powers of integers); integer
    bases with array exponents use JAX's six-step binary exponentiation (so its results for
    negative or >= 64 exponents are JAX's); otherwise ``pow``."""
    x1, x2 = U.ensure_arraylike("power", x1, x2)
    if not isinstance(x2, core.Tracer) and not isinstance(x2, bool):
        try:
            n = operator.index(x2)
        except TypeError:
            pass
        else:
            (a,) = U.promote_dtypes_numeric(x1)
            return lax.integer_pow(a, n)
    a, b = U.to_array(x1), U.to_array(x2)
    if a.dtype.kind in "fc" and b.dtype.kind in "iu":
        # an inexact base with an integer exponent binds pow without promoting the
        # exponent (JAX's case): its derivative in x is then defined at x = 0 (0 for y = 0)
        return _bind("pow", *U.promote_shapes_lax("power", a, b))
    a, b = U.promote_dtypes_numeric(x1, x2)
    if a.dtype in _I | _U or a.dtype == np.bool_:
        return _int_pow(*U.promote_args("power", a, b))
    return _bind("pow", *_lax_args("power", a, b))


def _int_pow(x, y):
    """JAX's integer power: six square-and-multiply steps over the low bits of ``y``
    (logical shifts, so a negative ``y`` reads as its two's complement bits); pow(0, y)
    is 0 for y != 0."""
    zero, one = _zero(y), _const(y, 1)
    acc = where(logical_and(equal(x, _zero(x)), not_equal(y, zero)), _zero(x),
                U.to_array(1, x.dtype, x.weak_type))
    acc = U.broadcast_to_shape(acc, np.broadcast_shapes(x.shape, y.shape))
    base, e = x, y
    for _ in range(6):
        acc = where(not_equal(bitwise_and(e, one), zero), multiply(acc, base), acc)
        base = multiply(base, base)
        e = lax.shift_right_logical(e, one)
    return acc


pow = power


def float_power(x1, x2, /):
    x1, x2 = U.ensure_arraylike("float_power", x1, x2)
    dt = dtypes.default_float_dtype()
    a, b = _lax_args("float_power", U.to_array(x1, _float_or_complex(x1, dt)),
                     U.to_array(x2, _float_or_complex(x2, dt)))
    return _bind("pow", a, b)


def _float_or_complex(x, dt):
    return dtypes.default_complex_dtype() if U.dtype_of(x) in _C else dt


# ----------------------------------------------------------------- comparisons & logic

def logical_not(x, /):
    x = U.ensure_arraylike("logical_not", x)
    return _bind("not", _as_bool(x))


def _as_bool(x):
    a = U.to_array(x)
    if a.dtype == dtypes.bool_:
        return a if not a.weak_type else U.convert(a, dtypes.bool_, False)
    return not_equal(a, _zero(a))


def _logical(name, pname):
    def fn(x1, x2, /):
        x1, x2 = U.ensure_arraylike(name, x1, x2)
        a, b = U.promote_shapes_lax(name, _as_bool(x1), _as_bool(x2))
        return _bind(pname, a, b)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` of the truth values."
    return fn


logical_and = _logical("logical_and", "and")
logical_or = _logical("logical_or", "or")
logical_xor = _logical("logical_xor", "xor")


def bitwise_not(x, /):
    x = U.ensure_arraylike("bitwise_not", x)
    a = U.to_array(x)
    if a.dtype not in _I | _U | _B:
        _reject("bitwise_not", a.dtype, _I | _U | _B)
    return _bind("not", a)


invert = bitwise_invert = bitwise_not


def left_shift(x1, x2, /):
    a, b = _lax_args("left_shift", *U.promote_dtypes_numeric(x1, x2))
    if a.dtype not in _I | _U:
        _reject("left_shift", a.dtype, _I | _U)
    return _bind("shift_left", a, b)


def right_shift(x1, x2, /):
    a, b = _lax_args("right_shift", *U.promote_dtypes_numeric(x1, x2))
    if a.dtype not in _I | _U:
        _reject("right_shift", a.dtype, _I | _U)
    return _bind("shift_right_logical" if a.dtype in _U else "shift_right_arithmetic", a, b)


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


# ----------------------------------------------------------------- float classification

def isfinite(x, /):
    x = U.ensure_arraylike("isfinite", x)
    a = U.to_array(x)
    if a.dtype in _F:
        return _bind("is_finite", a)
    if a.dtype in _C:
        return logical_and(isfinite(real(a)), isfinite(imag(a)))
    return _full_bool(a, True)


def _full_bool(a, v):
    return U.broadcast_to_shape(U.to_array(v, dtypes.bool_, False), a.shape)


def isinf(x, /):
    x = U.ensure_arraylike("isinf", x)
    a = U.to_array(x)
    if a.dtype in _F:
        return equal(absolute(a), _const(a, np.inf))
    if a.dtype in _C:
        return logical_or(isinf(real(a)), isinf(imag(a)))
    return _full_bool(a, False)


def isnan(x, /):
    x = U.ensure_arraylike("isnan", x)
    a = U.to_array(x)
    if a.dtype in _F | _C:
        return not_equal(a, a)
    return _full_bool(a, False)


def isposinf(x, /):
    a = U.to_array(x)
    return equal(a, _const(a, np.inf)) if a.dtype in _F else _full_bool(a, False)


def isneginf(x, /):
    a = U.to_array(x)
    return equal(a, _const(a, -np.inf)) if a.dtype in _F else _full_bool(a, False)


_SIGNED_OF_BITS = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def signbit(x, /):
    """True where the sign bit is set: negative numbers, -0.0, -inf and NaNs with the
    sign bit (-nan) -- read from the float's bits, as IEEE 754 and JAX do."""
    x = U.ensure_arraylike("signbit", x)
    a = U.to_array(x)
    if a.dtype in _U | _B:
        return _full_bool(a, False)
    if a.dtype in _I:
        return less(a, _zero(a))
    if a.dtype in _C:
        raise ValueError(f"signbit is not well defined for {a.dtype}")
    bits = dtypes.finfo(a.dtype).bits
    if bits not in _SIGNED_OF_BITS:
        raise NotImplementedError(f"signbit supports 8, 16, 32 and 64-bit floats, got "
                                  f"{a.dtype} ({bits} bits)")
    a = U.convert(a, a.dtype, False)
    as_int = lax.bitcast_convert_type(a, _SIGNED_OF_BITS[bits])
    return less(as_int, U.to_array(0, as_int.dtype, False))


def copysign(x1, x2, /):
    a, b = U.promote_args_inexact_lax("copysign", x1, x2)
    if a.dtype in _C:
        raise TypeError("copysign does not support complex-valued inputs")
    return where(signbit(b), negative(absolute(a)), absolute(a))


# ----------------------------------------------------------------- composites

def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``select(condition, x, y)`` with broadcasting; the one-argument form is ``nonzero``
    (``size``/``fill_value`` as there)."""
    if x is None and y is None:
        from xform.numpy._indexing import nonzero  # deferred: import cycle
        return nonzero(condition, size=size, fill_value=fill_value)
    if size is not None or fill_value is not None:
        raise ValueError("size and fill_value arguments cannot be used in three-term "
                         "where function.")
    if x is None or y is None:
        raise ValueError("Either both or neither of the x and y arguments should be provided "
                         "to xform.numpy.where.")
    condition, x, y = U.ensure_arraylike("where", condition, x, y)
    c = _as_bool(condition)
    a, b = U.promote_dtypes(x, y)
    if c.shape:
        c, a, b = U.promote_shapes("where", c, a, b)
    else:       # select_n takes a rank-0 predicate as is (JAX's _where)
        a, b = U.promote_shapes("where", a, b)
    return _bind("select_n", c, b, a)


def clip(arr=None, /, min=None, max=None, *, a=None, a_min=None, a_max=None):
    """Limit values to [min, max] (either bound may be None)."""
    if arr is None:
        arr = a
    min = a_min if min is None else min
    max = a_max if max is None else max
    arr = U.ensure_arraylike("clip", arr)
    if any(iscomplexobj(t) for t in (arr, min, max) if t is not None):
        raise ValueError("Clip received a complex value either through the input or the "
                         "min/max keywords. Complex values have no ordering and cannot be "
                         "clipped. Please convert to a real value or array by taking the "
                         "real or imaginary components via jax.numpy.real/imag "
                         "respectively.")
    out = U.to_array(arr)
    if min is not None:
        out = maximum(min, out)
    if max is not None:
        out = minimum(max, out)
    return out


def fmax(x1, x2, /):
    a, b = U.promote_args_lax("fmax", x1, x2)
    return where(isnan(b), a, where(isnan(a), b, maximum(a, b)))


def fmin(x1, x2, /):
    a, b = U.promote_args_lax("fmin", x1, x2)
    return where(isnan(b), a, where(isnan(a), b, minimum(a, b)))


def hypot(x1, x2, /):
    """sqrt(x1**2 + x2**2) without overflow: scale by the larger magnitude."""
    a, b = U.promote_args_inexact_lax("hypot", x1, x2)
    if a.dtype.kind == "c":
        raise ValueError("jnp.hypot is not well defined for complex-valued inputs. Please "
                         "convert to real values first, such as by using jnp.real or "
                         "jnp.imag to take the real or imaginary components respectively.")
    a, b = absolute(a), absolute(b)
    inf_ = logical_or(isinf(a), isinf(b))
    hi, lo = maximum(a, b), minimum(a, b)
    safe = where(equal(hi, _zero(hi)), _const(hi, 1), hi)
    r = true_divide(lo, safe)
    out = where(equal(hi, _zero(hi)), hi, multiply(hi, sqrt(add(_const(r, 1), multiply(r, r)))))
    return where(inf_, _const(out, np.inf), out)


def logaddexp(x1, x2, /):
    """log(exp(x1) + exp(x2)) computed as max + log1p(exp(-|x1 - x2|)); as JAX's, a
    custom-JVP function whose tangent is ``t1 * exp(x1 - out) + t2 * exp(x2 - out)`` (the
    differentiated formula would go through max/abs and round otherwise: numpyro's
    Beta-Bernoulli NUTS trajectories differed from JAX's in the last bits)."""
    a, b = U.promote_args_inexact_lax("logaddexp", x1, x2)
    return _logaddexp_custom(False)(a, b)


def logaddexp2(x1, x2, /):
    a, b = U.promote_args_inexact_lax("logaddexp2", x1, x2)
    return _logaddexp_custom(True)(a, b)


def _logaddexp_impl(a, b, base2):
    if a.dtype.kind == "c":
        return _logaddexp_complex(a, b, 1 / math.log(2) if base2 else 1.0)
    if a.dtype not in _F:
        name = "logaddexp2" if base2 else "logaddexp"
        raise ValueError(f"{name} requires floating-point or complex inputs; got {a.dtype}")
    amax = maximum(a, b)
    delta = subtract(a, b)
    e = negative(absolute(delta))
    if base2:
        out = add(amax, multiply(_const(a, 1 / math.log(2)), log1p(exp2(e))))
    else:
        out = add(amax, log1p(exp(e)))
    return where(isnan(delta), add(a, b), out)


def _replace_posinf(x):
    """``x`` with +inf (in its real part) replaced by 0, as the tangent rule needs."""
    return where(isposinf(real(x)), _zero(x), x)


_logaddexp_cjs = {}


def _logaddexp_custom(base2):
    """The custom-JVP logaddexp (or logaddexp2 with ``base2``), built once."""
    cj = _logaddexp_cjs.get(base2)
    if cj is None:
        from xform._custom_derivatives import custom_jvp

        def impl(a, b):
            return _logaddexp_impl(a, b, base2)
        impl.__name__ = impl.__qualname__ = "logaddexp2" if base2 else "logaddexp"
        cj = custom_jvp(impl)
        pow_ = exp2 if base2 else exp

        def rule(primals, tangents):
            (a, b), (ta, tb) = primals, tangents
            out = cj(a, b)
            ro = _replace_posinf(out)
            return out, add(multiply(ta, pow_(subtract(_replace_posinf(a), ro))),
                            multiply(tb, pow_(subtract(_replace_posinf(b), ro))))

        cj.defjvp(rule)
        _logaddexp_cjs[base2] = cj
    return cj


def _logaddexp_complex(a, b, scale):
    """Complex logaddexp (``scale`` 1) / logaddexp2 (``scale`` 1/ln 2), JAX's formula:
    ``m + scale * log1p(base**(a + b - 2m))`` with ``m`` the larger operand (complex
    order), the imaginary part wrapped into ``[-pi*scale, pi*scale)``."""
    m = lax.max(a, b)
    delta = lax.sub(lax.add(a, b), lax.mul(m, lax.full_like(m, 2)))
    e = lax.exp(delta) if scale == 1.0 else lax.exp2(delta)
    out = lax.add(m, lax.mul(lax.full_like(m, scale), lax.log1p(e)))
    im = lax.imag(out)
    half = lax.full_like(im, math.pi * scale)
    period = lax.full_like(im, 2 * math.pi * scale)
    r = lax.rem(lax.add(im, half), period)
    r = lax.select(lax.lt(r, lax.full_like(r, 0)), lax.add(r, period), r)
    return lax.complex(lax.real(out), lax.sub(r, half))


def heaviside(x1, x2, /):
    a, b = U.promote_args_inexact_lax("heaviside", x1, x2)
    return where(less(a, _zero(a)), _zero(a),
                 where(greater(a, _zero(a)), _const(a, 1), where(isnan(a), a, b)))


def sinc(x, /):
    (a,) = U.promote_dtypes_inexact(x)
    pix = multiply(a, _const(a, math.pi))
    safe = where(equal(a, _zero(a)), _const(a, 1), pix)
    return where(equal(a, _zero(a)), _const(a, 1), true_divide(sin(safe), safe))


def real(x, /):
    a = U.to_array(x)
    return _bind("real", a) if a.dtype in _C else a


def imag(x, /):
    a = U.to_array(x)
    if a.dtype in _C:
        return _bind("imag", a)
    return U.broadcast_to_shape(_zero(a), a.shape)


def conjugate(x, /):
    a = U.to_array(x)
    return _bind("conj", a) if a.dtype in _C else a


conj = conjugate


def angle(z, deg=False):
    a = U.to_array(z)
    if a.dtype in _C:
        out = arctan2(imag(a), real(a))
    else:
        (a,) = U.promote_dtypes_inexact(a)
        out = where(less(a, _zero(a)), _const(a, math.pi), _zero(a))
    return rad2deg(out) if deg else out


def iscomplexobj(x):
    if x is None:
        return False
    dt = getattr(x, "dtype", None)
    if dt is None:   # a Python value or a (nested) list: its dtype as NumPy infers it
        if isinstance(x, (list, tuple)):
            from xform.numpy._creation import asarray   # deferred: import cycle
            dt = asarray(x).dtype
        else:
            dt = U.dtype_of(x)
    return np.dtype(dt).kind == "c"


def isrealobj(x):
    return not iscomplexobj(x)


__all__ = [n for n in dir() if not n.startswith("_") and n not in (
    "annotations", "math", "np", "core", "dtypes", "Array", "ArrayOps", "U", "lax", "prim",
    "convert_bool", "operator")]

"""Elementwise primitives: arithmetic, transcendental, comparison, logical, casts.

Operands of an n-ary primitive have equal shapes and dtypes (``xform.numpy``
broadcasts and promotes before binding; the ``xform.lax`` functions at the end
of this module only turn Python scalars into arrays and broadcast rank-0 /
size-1 operands, as JAX's lax does).  Each block registers everything about
one primitive: abstract eval, NumPy reference implementation with XLA's
semantics, JVP, transpose (linear primitives) and batching.

The reference implementations are the specification the XLA lowering must
match, so where NumPy and XLA differ (integer division, ``rem``, shifts past
the bit width, float->int conversion, ``max`` of signed zeros, rounding,
``sign(-0.0)``) the impl spells XLA's behaviour out.  Impls never warn (XLA is
silent about inf/nan) and return exactly the dtype the abstract eval promises;
16-bit and 8-bit floats are computed in float32 and rounded back, as XLA's CPU
backend does.
"""
from __future__ import annotations

import builtins
import enum
import math

import numpy as np

from xform._src.interpreters import ad, batching, core, ir, passes, staging
from xform._src.interpreters import dtypes as D
from xform._src.interpreters.ad import Zero
from xform._src.interpreters.core import Array, Primitive, ShapedArray, Tracer
from xform._src.interpreters.tree_util import tree_map
from xform._src.primitives._rules import (bdim_at_front, broadcast_scalar, defbroadcasting, defjvp, defjvp2,
                               defjvp_zero, defvectorized, elementwise_aval, nary_shape,
                               unbroadcast)
import operator

# ================================================================ dtype classes
# JAX checks each operand against a set of numpy abstract classes; these are the
# same sets as frozensets of concrete dtypes (fast membership for the eager path).

# bfloat16 and the float8/6/4 types join _FLOATS (and every set built from it) when
# ml_dtypes is imported (``_add_narrow_floats``): sets, so they can grow in place.
_FLOATS = {D.float16, D.float32, D.float64}
_SMALL_FLOATS = {d for d in _FLOATS if d.itemsize < 4}
_COMPLEX = frozenset([D.complex64, D.complex128])
_SIGNED = frozenset([D.int8, D.int16, D.int32, D.int64])
_UNSIGNED = frozenset([D.uint8, D.uint16, D.uint32, D.uint64])
_INTS = _SIGNED | _UNSIGNED
_BOOL = frozenset([D.bool_])

# Operand dtypes for which a primitive's NumPy impl differs from XLA in the last bits
# (measured on random inputs): eager evaluation runs XLA's kernel for them
# (``Primitive.xla_eager_dtypes``, ``lowering/eager_kernels.py``).  Shared sets:
# bfloat16 joins the float sets when ml_dtypes is imported.
XLA_FLOATS = {D.float16, D.float32, D.float64}
XLA_COMPLEX = {D.complex64, D.complex128}
XLA_INEXACT = XLA_FLOATS | XLA_COMPLEX
D.on_ml_dtypes(lambda: (XLA_FLOATS.add(D.bfloat16), XLA_INEXACT.add(D.bfloat16)))

# (name in error messages, dtypes) -- JAX's wording.
_CLASSES = {"integer": _INTS, "signedinteger": _SIGNED, "floating": _FLOATS,
            "complexfloating": _COMPLEX, "bool": _BOOL,
            "float32": frozenset([D.float32]), "float64": frozenset([D.float64])}


class _Accepts:
    """A set of accepted dtypes plus JAX's description of it."""

    __slots__ = ("dtypes", "desc")

    def __init__(self, *names):
        self.dtypes = set().union(*(_CLASSES[n] for n in names))
        self.desc = ", ".join(names)
        if "floating" in names:
            _FLOAT_SETS.append(self.dtypes)


_FLOAT_SETS: list = []      # the sets that hold _FLOATS' members (see _add_narrow_floats)


_num = _Accepts("integer", "floating", "complexfloating")
_any = _Accepts("integer", "floating", "complexfloating", "bool")
_fc = _Accepts("floating", "complexfloating")
_float = _Accepts("floating")
_int = _Accepts("integer")
_bool_int = _Accepts("integer", "bool")
_ordered = _Accepts("integer", "floating", "bool")
_int_float = _Accepts("integer", "floating")
_complex = _Accepts("complexfloating")
_complex_elem = _Accepts("float32", "float64")
_conj_in = _Accepts("float32", "float64", "complexfloating")
_abs_in = _Accepts("signedinteger", "floating", "complexfloating")


def _check_dtypes(name, accepts, dts):
    """TypeError with JAX's message when an operand's dtype is not accepted."""
    unary = len(dts) == 1
    for i, (acc, dt) in enumerate(zip(accepts, dts)):
        if dt not in acc.dtypes:
            at = "" if unary else f" at position {i}"
            raise TypeError(f"{name} does not accept dtype {dt.name}{at}. "
                            f"Accepted dtypes{at} are subtypes of {acc.desc}.")


def _real_dtype(dt):
    return {D.complex64: D.float32, D.complex128: D.float64}.get(dt, dt)


def _complex_dtype(dt):
    return D.complex128 if dt in (D.float64, D.complex128) else D.complex64


# ================================================================ impl helpers

_quiet = core.quiet   # NumPy's error state "ignore" around an impl (XLA never warns)


def _f32(fn):
    """Evaluate ``fn`` in float32 for 16/8-bit floats (XLA's CPU backend upcasts too)."""
    def impl(x, *rest, **params):
        dt = x.dtype
        if dt in _SMALL_FLOATS:
            out = fn(x.astype(np.float32), *(r.astype(np.float32) for r in rest), **params)
            return np.asarray(out).astype(dt)
        return fn(x, *rest, **params)
    return impl


def _f64(scalar_fn):
    """A float64 per-element reference (special functions NumPy lacks), cast back."""
    vec = np.vectorize(scalar_fn, otypes=[np.float64])

    def impl(x):
        x = np.asarray(x)
        if x.size == 0:
            return np.zeros(x.shape, x.dtype)
        return np.asarray(vec(x.astype(np.float64))).astype(x.dtype)
    return impl


def _impl(prim, fn, small_floats_in_f32=True):
    prim.def_impl(_quiet(_f32(fn) if small_floats_in_f32 else fn))


# ================================================================ rule helpers


def _full_like(x, v):
    """A constant with ``x``'s shape and dtype (a broadcast view when concrete)."""
    a = core.get_aval(x)
    return _broadcast_to(Array(np.asarray(v, a.dtype)), a.shape)


def _scalar_like(x, v):
    """A rank-0 constant of ``x``'s dtype: an operand of an n-ary op next to ``x``
    (implicit scalar broadcasting; staged as a literal, as JAX's ``_one(x)``)."""
    return Array(np.asarray(v, core.get_aval(x).dtype))


def _aval(x):
    """The aval of a primal (or of an undefined primal, in a transpose rule)."""
    return x.aval if ad.is_undefined_primal(x) else core.get_aval(x)


def _broadcast_to(x, shape):
    """``x`` (rank 0 or same rank with 1s) broadcast to ``shape``."""
    a = core.get_aval(x)
    if a.shape == tuple(shape):
        return x
    if type(x) is Array and core.current_trace() is core.EVAL_TRACE:
        return Array(np.broadcast_to(x._value, shape), x.weak_type)
    s = _structural()
    dims = tuple(range(a.ndim)) if a.ndim else ()
    return s.broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=dims)


def _structural():
    from xform._src.primitives import structural  # deferred: import cycle (structural imports this module)
    return structural


def _replace_zero(x):
    """``x`` with zeros replaced by ones (keeps log/div in JVPs finite)."""
    return select_n_p.bind(eq_p.bind(x, _scalar_like(x, 0)), x, _full_like(x, 1))





def _unary(name, accepts=_any, out=None):
    return _std(name, (accepts,), out)


def _binary(name, accepts=_any, out=None, scalars=True):
    return _std(name, (accepts, accepts), out, scalars)


def _std(name, accepts, out=None, scalars=True):
    """A primitive whose abstract eval checks dtypes per position, then shapes.

    ``out(dtype) -> dtype`` gives a different output dtype; weak-typedness is
    "all inputs weak", JAX's standard rule.  Operands have equal shapes, except
    that rank-0 operands broadcast implicitly (JAX's lax n-ary ops) unless
    ``scalars=False``.
    """
    p = Primitive(name)
    # The rule reads only the operands' shapes, dtypes and weak types (not the params),
    # so a checked answer is remembered for one or two operands: large programs apply
    # the same operation to the same types over and over.  (Errors are not remembered.)
    memo = {}

    def abstract(*avals, **params):
        if len(avals) == 1:
            a = avals[0]
            key = (a.shape, a.dtype, a.weak_type)
        elif len(avals) == 2:
            a, b = avals
            key = (a.shape, a.dtype, a.weak_type, b.shape, b.dtype, b.weak_type)
        else:
            key = None
        if key is not None:
            try:
                r = memo.get(key)
            except TypeError:       # a dimension that is not hashable
                r = key = None
            if r is not None:
                return r
        _check_dtypes(name, accepts, [a.dtype for a in avals])
        aval = elementwise_aval(name, *avals, scalars=scalars)
        r = aval if out is None else aval.update(dtype=out(aval.dtype))
        if key is not None:
            if len(memo) > 1000:
                memo.clear()
            memo[key] = r
        return r
    p.def_abstract_eval(abstract)
    return p


def _compare(name, accepts, nargs=2):
    """Bool-valued; weak iff every operand is weak (JAX's rule: ``lax.eq(1.0, 2.0)`` is a
    weak bool)."""
    return _std(name, (accepts,) * nargs, out=lambda _: D.bool_)


# ================================================================ arithmetic

# --- add ------------------------------------------------------------------------------
add_p = _binary("add", _num)
add_p.def_impl(_quiet(np.add))


def _add_sub_jvp(prim, neg_y):
    """Tangent of ``x + y`` / ``x - y``: one nonzero tangent is broadcast to the result's
    shape (a rank-0 operand's tangent is rank 0); two are combined by the op itself."""
    def rule(primals, tangents):
        out = prim.bind(*primals)
        tx, ty = tangents
        if type(tx) is Zero and type(ty) is Zero:
            return out, Zero.from_primal(out)
        shape = core.get_aval(out).shape
        if type(tx) is Zero:
            return out, broadcast_scalar(neg_p.bind(ty) if neg_y else ty, shape)
        if type(ty) is Zero:
            return out, broadcast_scalar(tx, shape)
        return out, prim.bind(tx, ty)
    ad.jvp_rules[prim] = rule


def _add_transpose(ct, x, y):
    return [unbroadcast(_aval(x), ct) if ad.is_undefined_primal(x) else None,
            unbroadcast(_aval(y), ct) if ad.is_undefined_primal(y) else None]


_add_sub_jvp(add_p, False)
ad.transpose_rules[add_p] = _add_transpose
defbroadcasting(add_p)

# --- add_any: the sum of two tangents (never differentiated, only transposed) ---------
add_any_p = _binary("add_any", scalars=False)   # equal shapes: no implicit broadcasting
add_any_p.def_impl(_quiet(np.add))
defjvp(add_any_p, lambda t, x, y: t, lambda t, x, y: t)
ad.transpose_rules[add_any_p] = lambda ct, x, y: [ct, ct]


def _add_any_batch(axis_data, vals, dims):
    first = next(d for d in dims if d is not None)
    if all(d == first for d in dims):
        return add_any_p.bind(*vals), first
    return add_any_p.bind(*[bdim_at_front(v, d, axis_data.size) for v, d in zip(vals, dims)]), 0


batching.batch_rules[add_any_p] = _add_any_batch

# --- sub ------------------------------------------------------------------------------
sub_p = _binary("sub", _num)
sub_p.def_impl(_quiet(np.subtract))
_add_sub_jvp(sub_p, True)
ad.transpose_rules[sub_p] = lambda ct, x, y: [
    unbroadcast(_aval(x), ct) if ad.is_undefined_primal(x) else None,
    unbroadcast(_aval(y), neg_p.bind(ct)) if ad.is_undefined_primal(y) else None]
defbroadcasting(sub_p)

# --- mul ------------------------------------------------------------------------------
# ``out_dtype`` (an optional param, JAX's): the operands, which may then differ in dtype,
# are converted to it and multiplied in it
mul_p = _binary("mul", _num)
mul_p.xla_eager_dtypes = XLA_COMPLEX
ir.pp_rules[mul_p] = ir.pp_drop_none("out_dtype")
_mul_std_abstract = mul_p.abstract_eval


def _mul_abstract(x, y, out_dtype=None):
    if out_dtype is None:
        return _mul_std_abstract(x, y)
    _check_dtypes("mul", (_num, _num), [x.dtype, y.dtype])
    _check_dtypes("mul", (_num,), [np.dtype(out_dtype)])
    out = np.dtype(out_dtype)
    return elementwise_aval("mul", x.update(dtype=out), y.update(dtype=out)).update(
        weak_type=False)


def _mul_impl(x, y, out_dtype=None):
    if out_dtype is not None:
        x, y = np.asarray(x).astype(out_dtype), np.asarray(y).astype(out_dtype)
    return np.multiply(x, y)


mul_p.def_abstract_eval(_mul_abstract)
mul_p.def_impl(_quiet(_mul_impl))


defjvp(mul_p, lambda t, x, y, **p: mul_p.bind(t, y, **p),
       lambda t, x, y, **p: mul_p.bind(x, t, **p))


def _mul_transpose(ct, x, y, out_dtype=None):
    # the cotangent of an operand is in that operand's dtype (JAX's rule)
    if ad.is_undefined_primal(x):
        kw = {} if out_dtype is None else {"out_dtype": x.aval.dtype}
        return [unbroadcast(x.aval, mul_p.bind(ct, y, **kw)), None]
    kw = {} if out_dtype is None else {"out_dtype": y.aval.dtype}
    return [None, unbroadcast(y.aval, mul_p.bind(x, ct, **kw))]


ad.transpose_rules[mul_p] = _mul_transpose
defbroadcasting(mul_p)


# --- div: integers truncate toward zero; x/0 is -1 (all ones), INT_MIN/-1 wraps -------
def _int_divmod(x, y):
    """XLA's integer quotient (truncated) and remainder (sign of the dividend)."""
    zero = y == 0
    ys = np.where(zero, np.ones((), y.dtype), y)
    q = np.floor_divide(x, ys)
    r = x - q * ys                    # wraps like C for INT_MIN // -1
    fix = (r != 0) & ((x < 0) != (ys < 0))   # floor and trunc differ
    q = np.where(fix, q + np.ones((), q.dtype), q)
    r = np.where(fix, r - ys, r)
    q = np.where(zero, np.asarray(-1).astype(x.dtype), q)
    r = np.where(zero, x, r)
    return q.astype(x.dtype), r.astype(x.dtype)


def _div_impl(x, y):
    if x.dtype in _INTS:
        return _int_divmod(np.asarray(x), np.asarray(y))[0]
    return np.true_divide(x, y)


div_p = _binary("div", _num)
div_p.xla_eager_dtypes = XLA_COMPLEX
_impl(div_p, _div_impl)
defjvp(div_p, lambda t, x, y: div_p.bind(t, y),
       lambda t, x, y: mul_p.bind(mul_p.bind(neg_p.bind(t), x), integer_pow_p.bind(y, y=-2)))
ad.transpose_rules[div_p] = lambda ct, x, y: [unbroadcast(x.aval, div_p.bind(ct, y)), None]
defbroadcasting(div_p)


# --- rem: C fmod (sign of the dividend); x % 0 is x for integers, nan for floats ------
def _rem_impl(x, y):
    if x.dtype in _INTS:
        return _int_divmod(np.asarray(x), np.asarray(y))[1]
    return np.fmod(x, y)


rem_p = _binary("rem", _int_float)
_impl(rem_p, _rem_impl)
defjvp(rem_p, lambda t, x, y: broadcast_scalar(t, _out_shape("rem", x, y)),
       lambda t, x, y: mul_p.bind(neg_p.bind(t), round_p.bind(
           _trunc_div(x, y), rounding_method=0)))
defbroadcasting(rem_p)


def _out_shape(name, *xs):
    return nary_shape(name, [core.get_aval(x) for x in xs])


def _trunc_div(x, y):
    q = div_p.bind(x, y)
    return mul_p.bind(sign_p.bind(q), floor_p.bind(abs_p.bind(q)))


# --- pow: float/complex base; exponent of the same dtype or any integer dtype ----------
def _pow_abstract(x, y):
    _check_dtypes("pow", (_fc, _num), [x.dtype, y.dtype])
    if x.dtype != y.dtype and y.dtype not in _INTS:
        raise TypeError("the first argument to pow must have an inexact dtype (float or "
                        "complex), and the second argument must have an inexact or integer "
                        "dtype, and two inexact dtypes must match, but got "
                        f"{x.dtype} and {y.dtype} respectively.")
    return ShapedArray(nary_shape("pow", (x, y)), x.dtype, x.weak_type and y.weak_type)


def _pow_impl(x, y):
    y = np.asarray(y).astype(x.dtype)                   # XLA converts the exponent first
    out = np.power(x, y)
    if x.dtype.kind == "f":
        # C99 (and XLA): pow(-inf, y) is +inf for y > 0 and +0 for y < 0 unless y is an
        # odd integer; NumPy gives nan for non-integer y
        fix = np.isneginf(x) & (np.floor(y) != y) & np.isfinite(y)
        if np.any(fix):
            out = np.where(fix, np.where(y > 0, np.inf, 0.0).astype(out.dtype), out)
    return out


pow_p = Primitive("pow")
pow_p.xla_eager_dtypes = XLA_INEXACT
pow_p.def_abstract_eval(_pow_abstract)
_impl(pow_p, _pow_impl)


def _pow_jvp_x(t, ans, x, y):
    xa = core.get_aval(x)
    if core.get_aval(y).dtype in _INTS:
        yf = convert_element_type_p.bind(y, new_dtype=xa.dtype, weak_type=False)
        jac = mul_p.bind(yf, pow_p.bind(x, sub_p.bind(y, _scalar_like(y, 1))))
        jac = select_n_p.bind(eq_p.bind(y, _scalar_like(y, 0)), jac, _full_like(jac, 0))
    else:
        jac = mul_p.bind(y, pow_p.bind(x, sub_p.bind(y, _scalar_like(y, 1))))
    return mul_p.bind(t, jac)


defjvp2(pow_p, _pow_jvp_x,
        lambda t, ans, x, y: mul_p.bind(t, mul_p.bind(log_p.bind(_replace_zero(x)), ans)))
defbroadcasting(pow_p)


# --- integer_pow(x, y): repeated squaring in x's dtype, as XLA's lowering -------------
def _integer_pow_abstract(x, *, y):
    _check_dtypes("integer_pow", (_num,), [x.dtype])
    if y < 0 and x.dtype in _INTS:
        raise TypeError(f"Integers cannot be raised to negative powers, got "
                        f"integer_pow({core.aval_text(x)}, {y})")
    return x


def _integer_pow_impl(x, *, y):
    x = np.asarray(x)
    if y == 0:
        return np.ones(x.shape, x.dtype)
    n, acc = builtins.abs(y), None
    while n:
        if n & 1:
            acc = x if acc is None else acc * x
        n >>= 1
        if n:
            x = x * x
    return (np.ones((), acc.dtype) / acc).astype(acc.dtype) if y < 0 else acc


def _integer_pow_jvp(t, x, *, y):
    if y == 0:
        return _full_like(t, 0)
    if y == 1:
        return t
    xm = x if y == 2 else integer_pow_p.bind(x, y=y - 1)   # JAX's formula
    return mul_p.bind(t, mul_p.bind(_scalar_like(x, y), xm))


integer_pow_p = Primitive("integer_pow")
integer_pow_p.xla_eager_dtypes = XLA_COMPLEX
integer_pow_p.def_abstract_eval(_integer_pow_abstract)
_impl(integer_pow_p, _integer_pow_impl, small_floats_in_f32=False)
defjvp(integer_pow_p, _integer_pow_jvp)
defvectorized(integer_pow_p)

# --- square ---------------------------------------------------------------------------
square_p = _unary("square", _num)
square_p.xla_eager_dtypes = XLA_COMPLEX
_impl(square_p, lambda x: x * x, small_floats_in_f32=False)
defjvp(square_p, lambda t, x: mul_p.bind(t, mul_p.bind(_scalar_like(x, 2), x)))
defvectorized(square_p)


# --- max / min: NaN propagates; max(-0, 0) is 0 and min(-0, 0) is -0 -----------------
def _lex_gt(x, y):
    """Complex order used by XLA's max/min: lexicographic on (real, imag); NaN compares
    false, so the second operand wins."""
    return (x.real > y.real) | ((x.real == y.real) & (x.imag > y.imag))


def _max_impl(x, y):
    if x.dtype in _COMPLEX:
        return np.where(_lex_gt(x, y), x, y)
    out = np.maximum(x, y)
    if x.dtype in _FLOATS and (out == 0).any():   # signed zeros only matter where out is 0
        both0 = (x == 0) & (y == 0)
        out = np.where(both0, x + y, out)                   # -0 + 0 = 0
    return out


def _min_impl(x, y):
    if x.dtype in _COMPLEX:
        return np.where(_lex_gt(y, x), x, y)
    out = np.minimum(x, y)
    if x.dtype in _FLOATS and (out == 0).any():
        both0 = (x == 0) & (y == 0)
        out = np.where(both0, -((-x) + (-y)), out)          # -0 only if either is -0
    return out


def _balanced(x, y, ans):
    """Jacobian of max/min wrt x: 1 where x wins, 1/2 on ties, 0 elsewhere (JAX's
    ``(x == ans ? 1 : 0) / (y == ans ? 2 : 1)``)."""
    wins = eq_p.bind(x, ans)
    one, zero = _full_like(ans, 1), _full_like(ans, 0)
    num = select_n_p.bind(wins, zero, one)
    tie = eq_p.bind(y, ans)
    two, one = _full_like(ans, 2), _full_like(ans, 1)
    return div_p.bind(num, select_n_p.bind(tie, one, two))


max_p = _binary("max", _any)
_impl(max_p, _max_impl)
defjvp2(max_p, lambda t, ans, x, y: mul_p.bind(t, _balanced(x, y, ans)),
        lambda t, ans, x, y: mul_p.bind(t, _balanced(y, x, ans)))
defbroadcasting(max_p)

min_p = _binary("min", _any)
_impl(min_p, _min_impl)
defjvp2(min_p, lambda t, ans, x, y: mul_p.bind(t, _balanced(x, y, ans)),
        lambda t, ans, x, y: mul_p.bind(t, _balanced(y, x, ans)))
defbroadcasting(min_p)

# --- neg ------------------------------------------------------------------------------
neg_p = _unary("neg", _num)
neg_p.def_impl(_quiet(np.negative))
defjvp(neg_p, lambda t, x: neg_p.bind(t))
ad.transpose_rules[neg_p] = lambda ct, x: [neg_p.bind(ct)]
defvectorized(neg_p)


# --- sign: sign(-0.0) = -0.0, sign(nan) = nan; complex: x / |x| -----------------------
def _sign_impl(x):
    if x.dtype in _UNSIGNED:
        return (x != 0).astype(x.dtype)
    if x.dtype in _COMPLEX:
        a = np.abs(x)
        return np.where(a == 0, np.zeros((), x.dtype), x / np.where(a == 0, 1, a)).astype(x.dtype)
    s = np.sign(x)
    return np.where(x == 0, x, s).astype(x.dtype)


sign_p = _unary("sign", _num)
sign_p.xla_eager_dtypes = XLA_COMPLEX
_impl(sign_p, _sign_impl)
defjvp_zero(sign_p)
defvectorized(sign_p)

# --- floor / ceil ---------------------------------------------------------------------
floor_p = _unary("floor", _float)
_impl(floor_p, np.floor)
defjvp_zero(floor_p)
defvectorized(floor_p)

ceil_p = _unary("ceil", _float)
_impl(ceil_p, np.ceil)
defjvp_zero(ceil_p)
defvectorized(ceil_p)


# --- round(rounding_method): 0 = half away from zero (default), 1 = half to even ------
class RoundingMethod(enum.IntEnum):
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def _round_impl(x, *, rounding_method=0):
    if int(rounding_method) == 1:
        return np.rint(x)
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


round_p = _unary("round", _float)
_impl(round_p, _round_impl)
defjvp_zero(round_p)
defvectorized(round_p)

# --- is_finite ------------------------------------------------------------------------
is_finite_p = _compare("is_finite", _float, nargs=1)
_impl(is_finite_p, np.isfinite, small_floats_in_f32=False)
defjvp_zero(is_finite_p)
defvectorized(is_finite_p)

# ================================================================ transcendental

# --- exp / exp2 / log / log1p / expm1 -------------------------------------------------
exp_p = _unary("exp", _fc)
exp_p.xla_eager_dtypes = XLA_INEXACT
_impl(exp_p, np.exp)
defjvp2(exp_p, lambda t, ans, x: mul_p.bind(t, ans))
defvectorized(exp_p)

exp2_p = _unary("exp2", _fc)
exp2_p.xla_eager_dtypes = XLA_INEXACT
# XLA expands exp2(x) as exp(x * log(2)) with the product rounded to x's dtype.
_impl(exp2_p, lambda x: np.exp((x * np.asarray(math.log(2), x.dtype)).astype(x.dtype)),
      small_floats_in_f32=False)
defjvp2(exp2_p, lambda t, ans, x: mul_p.bind(log_p.bind(_scalar_like(x, 2)), mul_p.bind(t, ans)))
defvectorized(exp2_p)

log_p = _unary("log", _fc)
log_p.xla_eager_dtypes = XLA_INEXACT
_impl(log_p, np.log)
defjvp(log_p, lambda t, x: div_p.bind(t, x))
defvectorized(log_p)

log1p_p = _unary("log1p", _fc)
log1p_p.xla_eager_dtypes = XLA_INEXACT
_impl(log1p_p, np.log1p)
defjvp(log1p_p, lambda t, x: div_p.bind(t, add_p.bind(x, _scalar_like(x, 1))))
defvectorized(log1p_p)

expm1_p = _unary("expm1", _fc)
expm1_p.xla_eager_dtypes = XLA_INEXACT
_impl(expm1_p, np.expm1)
defjvp2(expm1_p, lambda t, ans, x: mul_p.bind(t, add_p.bind(ans, _scalar_like(x, 1))))
defvectorized(expm1_p)

# --- tanh / logistic ------------------------------------------------------------------
tanh_p = _unary("tanh", _fc)
tanh_p.xla_eager_dtypes = XLA_INEXACT
_impl(tanh_p, np.tanh)
# (t + t*y) * (1 - y): JAX's formula (the same equations as JAX under grad)
defjvp2(tanh_p, lambda t, ans, x: mul_p.bind(add_p.bind(t, mul_p.bind(t, ans)),
                                            sub_p.bind(_scalar_like(x, 1), ans)))
defvectorized(tanh_p)


def _logistic_impl(x):
    dt = x.dtype
    if dt.itemsize == 2:
        # XLA expands logistic to 1 / (1 + exp(-x)) and rounds f16/bf16 after each op.
        f = np.float32
        e = np.exp(-np.asarray(x, f)).astype(dt)
        d = (f(1) + e.astype(f)).astype(dt)
        return (f(1) / d.astype(f)).astype(dt)
    one = np.ones((), dt)
    return (one / (one + np.exp(-x))).astype(dt)


logistic_p = _unary("logistic", _fc)
logistic_p.xla_eager_dtypes = XLA_INEXACT
_impl(logistic_p, _logistic_impl, small_floats_in_f32=False)
defjvp2(logistic_p, lambda t, ans, x: mul_p.bind(
    t, mul_p.bind(ans, sub_p.bind(_scalar_like(x, 1), ans))))
defvectorized(logistic_p)

# --- sin / cos / tan ------------------------------------------------------------------
sin_p = _unary("sin", _fc)
sin_p.xla_eager_dtypes = XLA_INEXACT
_impl(sin_p, np.sin)
defjvp(sin_p, lambda t, x: mul_p.bind(t, cos_p.bind(x)))
defvectorized(sin_p)

cos_p = _unary("cos", _fc)
cos_p.xla_eager_dtypes = XLA_INEXACT
_impl(cos_p, np.cos)
defjvp(cos_p, lambda t, x: neg_p.bind(mul_p.bind(t, sin_p.bind(x))))
defvectorized(cos_p)

tan_p = _unary("tan", _fc)
tan_p.xla_eager_dtypes = XLA_INEXACT
_impl(tan_p, np.tan)
defjvp2(tan_p, lambda t, ans, x: mul_p.bind(t, add_p.bind(_scalar_like(x, 1),
                                                         square_p.bind(ans))))
defvectorized(tan_p)


# --- asin / acos / atan / atan2 -------------------------------------------------------
def _one_minus_sq(x):
    return sub_p.bind(_scalar_like(x, 1), square_p.bind(x))


asin_p = _unary("asin", _fc)
asin_p.xla_eager_dtypes = XLA_INEXACT
_impl(asin_p, np.arcsin)
defjvp(asin_p, lambda t, x: mul_p.bind(t, rsqrt_p.bind(_one_minus_sq(x))))
defvectorized(asin_p)

acos_p = _unary("acos", _fc)
acos_p.xla_eager_dtypes = XLA_INEXACT
_impl(acos_p, np.arccos)
defjvp(acos_p, lambda t, x: mul_p.bind(t, neg_p.bind(rsqrt_p.bind(_one_minus_sq(x)))))
defvectorized(acos_p)

atan_p = _unary("atan", _fc)
atan_p.xla_eager_dtypes = XLA_INEXACT
_impl(atan_p, np.arctan)
defjvp(atan_p, lambda t, x: div_p.bind(t, add_p.bind(_scalar_like(x, 1), square_p.bind(x))))
defvectorized(atan_p)


def _atan2_impl(x, y):
    if x.dtype in _COMPLEX:   # -i log((y + i x) / sqrt(x^2 + y^2)), as XLA's expansion
        return (-1j * np.log((y + 1j * x) / np.sqrt(x * x + y * y))).astype(x.dtype)
    return np.arctan2(x, y)


def _atan2_denom(x, y):
    return add_p.bind(square_p.bind(x), square_p.bind(y))


atan2_p = _binary("atan2", _fc)
atan2_p.xla_eager_dtypes = XLA_INEXACT
_impl(atan2_p, _atan2_impl)
defjvp(atan2_p, lambda t, x, y: mul_p.bind(t, div_p.bind(y, _atan2_denom(x, y))),
       lambda t, x, y: mul_p.bind(t, div_p.bind(neg_p.bind(x), _atan2_denom(x, y))))
defbroadcasting(atan2_p)

# --- sinh / cosh / asinh / acosh / atanh ----------------------------------------------
sinh_p = _unary("sinh", _fc)
sinh_p.xla_eager_dtypes = XLA_INEXACT
_impl(sinh_p, np.sinh)
defjvp(sinh_p, lambda t, x: mul_p.bind(t, cosh_p.bind(x)))
defvectorized(sinh_p)

cosh_p = _unary("cosh", _fc)
cosh_p.xla_eager_dtypes = XLA_INEXACT
_impl(cosh_p, np.cosh)
defjvp(cosh_p, lambda t, x: mul_p.bind(t, sinh_p.bind(x)))
defvectorized(cosh_p)

asinh_p = _unary("asinh", _fc)
asinh_p.xla_eager_dtypes = XLA_INEXACT
_impl(asinh_p, np.arcsinh)
defjvp(asinh_p, lambda t, x: mul_p.bind(t, rsqrt_p.bind(
    add_p.bind(square_p.bind(x), _scalar_like(x, 1)))))
defvectorized(asinh_p)

acosh_p = _unary("acosh", _fc)
acosh_p.xla_eager_dtypes = XLA_INEXACT
_impl(acosh_p, np.arccosh)
defjvp(acosh_p, lambda t, x: mul_p.bind(t, rsqrt_p.bind(mul_p.bind(
    sub_p.bind(x, _scalar_like(x, 1)), add_p.bind(x, _scalar_like(x, 1))))))
defvectorized(acosh_p)

atanh_p = _unary("atanh", _fc)
atanh_p.xla_eager_dtypes = XLA_INEXACT
_impl(atanh_p, np.arctanh)
defjvp(atanh_p, lambda t, x: mul_p.bind(
    integer_pow_p.bind(add_p.bind(_scalar_like(x, 1), x), y=-1),
    div_p.bind(t, sub_p.bind(_scalar_like(x, 1), x))))
defvectorized(atanh_p)

# --- sqrt / rsqrt / cbrt --------------------------------------------------------------
sqrt_p = _unary("sqrt", _fc)
sqrt_p.xla_eager_dtypes = XLA_COMPLEX
_impl(sqrt_p, np.sqrt)
defjvp2(sqrt_p, lambda t, ans, x: mul_p.bind(t, div_p.bind(_scalar_like(x, 0.5), ans)))
defvectorized(sqrt_p)

rsqrt_p = _unary("rsqrt", _fc)
rsqrt_p.xla_eager_dtypes = XLA_INEXACT
_impl(rsqrt_p, lambda x: (np.ones((), x.dtype) / np.sqrt(x)).astype(x.dtype))
defjvp2(rsqrt_p, lambda t, ans, x: mul_p.bind(t, mul_p.bind(_scalar_like(x, -0.5),
                                                           div_p.bind(ans, x))))
defvectorized(rsqrt_p)

cbrt_p = _unary("cbrt", _float)
cbrt_p.xla_eager_dtypes = XLA_FLOATS
_impl(cbrt_p, np.cbrt)
defjvp2(cbrt_p, lambda t, ans, x: mul_p.bind(t, mul_p.bind(
    _scalar_like(x, 1 / 3), integer_pow_p.bind(ans, y=-2))))
defvectorized(cbrt_p)


# --- abs: complex -> real; abs(INT_MIN) wraps to INT_MIN ------------------------------
def _abs_jvp(t, ans, x):
    if core.get_aval(x).dtype in _COMPLEX:
        d = convert_element_type_p.bind(_replace_zero(ans), new_dtype=core.get_aval(x).dtype,
                                        weak_type=False)
        return real_p.bind(mul_p.bind(t, div_p.bind(conj_p.bind(x), d)))
    return select_n_p.bind(ge_p.bind(x, _scalar_like(x, 0)), neg_p.bind(t), t)


abs_p = _unary("abs", _abs_in, out=_real_dtype)
_impl(abs_p, lambda x: np.abs(x).astype(_real_dtype(x.dtype)))
defjvp2(abs_p, _abs_jvp)
defvectorized(abs_p)


# --- special functions: float64 per-element references --------------------------------
def _lgamma1(v):
    try:
        return math.lgamma(v)
    except ValueError:       # poles: 0 and the negative integers
        return math.inf


def _digamma1(v):
    if math.isnan(v) or v == -math.inf:
        return math.nan
    if v == math.inf:
        return math.inf
    if v <= 0 and v == math.floor(v):
        return math.nan
    if v < 0:   # reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
        return _digamma1(1.0 - v) - math.pi / math.tan(math.pi * v)
    r = 0.0
    while v < 10.0:
        r -= 1.0 / v
        v += 1.0
    inv2 = 1.0 / (v * v)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
        1 / 240 - inv2 * (1 / 132 - inv2 * (691 / 32760 - inv2 / 12))))))
    return r + math.log(v) - 0.5 / v - series


_SQRT_PI = math.sqrt(math.pi)


def _erf_inv1(y):
    if math.isnan(y) or builtins.abs(y) > 1:
        return math.nan
    if builtins.abs(y) == 1:
        return math.copysign(math.inf, y)
    # Giles' single-precision approximation, then Newton steps in float64.
    w = -math.log((1.0 - y) * (1.0 + y))
    if w < 5.0:
        w -= 2.5
        cs = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
              0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
    else:
        w = math.sqrt(w) - 3.0
        cs = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
              0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
    p = 0.0
    for c in cs:
        p = p * w + c
    x = p * y
    for _ in range(4):
        if builtins.abs(y) > 0.5:   # residual via erfc keeps precision near +-1
            err = math.copysign(1.0, y) * ((1.0 - builtins.abs(y)) - math.erfc(builtins.abs(x)))
        else:
            err = math.erf(x) - y
        deriv = 2.0 / _SQRT_PI * math.exp(-x * x)
        if deriv == 0.0:
            break
        x -= err / deriv
    return x


erf_p = _unary("erf", _float)
erf_p.xla_eager_dtypes = XLA_FLOATS
_impl(erf_p, _f64(math.erf), small_floats_in_f32=False)
defjvp(erf_p, lambda t, x: mul_p.bind(_scalar_like(x, 2 / _SQRT_PI), mul_p.bind(
    t, exp_p.bind(neg_p.bind(square_p.bind(x))))))
defvectorized(erf_p)

erfc_p = _unary("erfc", _float)
erfc_p.xla_eager_dtypes = XLA_FLOATS
_impl(erfc_p, _f64(math.erfc), small_floats_in_f32=False)
defjvp(erfc_p, lambda t, x: mul_p.bind(_scalar_like(x, -2 / _SQRT_PI), mul_p.bind(
    t, exp_p.bind(neg_p.bind(square_p.bind(x))))))
defvectorized(erfc_p)

erf_inv_p = _unary("erf_inv", _float)
erf_inv_p.xla_eager_dtypes = XLA_FLOATS
_impl(erf_inv_p, _f64(_erf_inv1), small_floats_in_f32=False)
defjvp2(erf_inv_p, lambda t, ans, x: mul_p.bind(_scalar_like(x, _SQRT_PI / 2), mul_p.bind(
    t, exp_p.bind(square_p.bind(ans)))))
defvectorized(erf_inv_p)

lgamma_p = _unary("lgamma", _float)
lgamma_p.xla_eager_dtypes = XLA_FLOATS
_impl(lgamma_p, _f64(_lgamma1), small_floats_in_f32=False)
defjvp(lgamma_p, lambda t, x: mul_p.bind(t, digamma_p.bind(x)))
defvectorized(lgamma_p)

digamma_p = _unary("digamma", _float)   # JVP needs polygamma (not written): no rule
digamma_p.xla_eager_dtypes = XLA_FLOATS
_impl(digamma_p, _f64(_digamma1), small_floats_in_f32=False)
defvectorized(digamma_p)

# --- nextafter (no derivative, as JAX) ------------------------------------------------
nextafter_p = _binary("nextafter", _float)
nextafter_p.missing_rules["jvp"] = (
    "it is piecewise constant; JAX defines no derivative for it either")


def _nextafter(x, y):
    # C and XLA return y when x == y (nextafter(0, -0) is -0); NumPy's float16 loop
    # returns x there.
    out = np.nextafter(x, y)
    return np.where(np.asarray(x) == np.asarray(y), y, out).astype(out.dtype)


_impl(nextafter_p, _nextafter, small_floats_in_f32=False)
defbroadcasting(nextafter_p)

# ================================================================ complex parts
# JAX's pairing of a complex cotangent with a complex tangent is Re(sum(ct * t))
# (no conjugation); the transposes below are adjoints for that pairing.

real_p = _unary("real", _complex, out=_real_dtype)
real_p.def_impl(lambda x: np.real(x).astype(_real_dtype(x.dtype)))
imag_p = _unary("imag", _complex, out=_real_dtype)
imag_p.def_impl(lambda x: np.imag(x).astype(_real_dtype(x.dtype)))
complex_p = _binary("complex", _complex_elem, out=_complex_dtype)


def _complex_impl(x, y):
    out = np.empty(np.broadcast_shapes(np.shape(x), np.shape(y)), _complex_dtype(x.dtype))
    out.real, out.imag = x, y       # not x + 1j*y: that turns inf parts into nan
    return out


complex_p.def_impl(_complex_impl)
conj_p = _unary("conj", _conj_in, out=_complex_dtype)
conj_p.def_impl(lambda x: np.conj(x).astype(_complex_dtype(x.dtype)))


def _linear_jvp(prim):
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if all(type(t) is Zero for t in tangents):
            return out, Zero.from_primal(out)
        ts = [_full_like(p, 0) if type(t) is Zero else t for p, t in zip(primals, tangents)]
        return out, prim.bind(*ts, **params)
    ad.jvp_rules[prim] = rule


for _p in (real_p, imag_p, complex_p, conj_p):
    _linear_jvp(_p)
    (defvectorized if _p is not complex_p else defbroadcasting)(_p)

ad.transpose_rules[real_p] = lambda ct, x: [complex_p.bind(ct, _scalar_like(ct, 0))]
ad.transpose_rules[imag_p] = lambda ct, x: [complex_p.bind(_scalar_like(ct, 0), neg_p.bind(ct))]
ad.transpose_rules[complex_p] = lambda ct, x, y: [
    unbroadcast(_aval(x), real_p.bind(ct)) if ad.is_undefined_primal(x) else None,
    unbroadcast(_aval(y), neg_p.bind(imag_p.bind(ct))) if ad.is_undefined_primal(y) else None]
ad.transpose_rules[conj_p] = lambda ct, x: [
    conj_p.bind(ct) if x.aval.dtype in _COMPLEX else real_p.bind(ct)]

# ================================================================ comparisons
# Bool output (never weak), zero derivative; NaN compares unequal (IEEE, as XLA).

eq_p = _compare("eq", _any)
ne_p = _compare("ne", _any)
lt_p = _compare("lt", _ordered)
le_p = _compare("le", _ordered)
gt_p = _compare("gt", _ordered)
ge_p = _compare("ge", _ordered)
for _p, _fn in ((eq_p, np.equal), (ne_p, np.not_equal), (lt_p, np.less),
                (le_p, np.less_equal), (gt_p, np.greater), (ge_p, np.greater_equal)):
    _p.def_impl(_quiet(_fn))
    defjvp_zero(_p)
    defbroadcasting(_p)

# ================================================================ bitwise / logical
# On bool these are the logical operations; no derivatives (integer outputs).

and_p = _binary("and", _bool_int)
or_p = _binary("or", _bool_int)
xor_p = _binary("xor", _bool_int)
not_p = _unary("not", _bool_int)
for _p, _fn in ((and_p, np.bitwise_and), (or_p, np.bitwise_or), (xor_p, np.bitwise_xor)):
    _p.def_impl(_fn)
    defjvp_zero(_p)
    defbroadcasting(_p)
not_p.def_impl(np.invert)
defjvp_zero(not_p)
defvectorized(not_p)

# --- shifts: the amount is read as unsigned; amounts >= the bit width give 0
# (logical) or the sign fill (arithmetic), as XLA --------------------------------------
_UNSIGNED_OF = {d: np.dtype(f"uint{d.itemsize * 8}") for d in _INTS}
_SIGNED_OF = {d: np.dtype(f"int{d.itemsize * 8}") for d in _INTS}


def _shift_parts(x, y):
    x, y = np.asarray(x), np.asarray(y)
    bits = x.dtype.itemsize * 8
    amount = y.astype(_UNSIGNED_OF[y.dtype])
    big = amount >= bits
    return x, np.where(big, 0, amount).astype(x.dtype), big


def _shl_impl(x, y):
    x, s, big = _shift_parts(x, y)
    return np.where(big, np.zeros((), x.dtype), np.left_shift(x, s))


def _sra_impl(x, y):
    """Arithmetic shift of the bit pattern (unsigned values are shifted as signed)."""
    x, s, big = _shift_parts(x, y)
    sd = _SIGNED_OF[x.dtype]
    s = np.where(big, x.dtype.itemsize * 8 - 1, s).astype(sd)
    return np.right_shift(x.view(sd), s).view(x.dtype)


def _srl_impl(x, y):
    x, s, big = _shift_parts(x, y)
    u = _UNSIGNED_OF[x.dtype]
    out = np.right_shift(x.view(u), s.astype(u)).view(x.dtype)
    return np.where(big, np.zeros((), x.dtype), out)


shift_left_p = _binary("shift_left", _int)
shift_right_arithmetic_p = _binary("shift_right_arithmetic", _int)
shift_right_logical_p = _binary("shift_right_logical", _int)
for _p, _fn in ((shift_left_p, _shl_impl), (shift_right_arithmetic_p, _sra_impl),
                (shift_right_logical_p, _srl_impl)):
    _p.def_impl(_fn)
    defjvp_zero(_p)
    defbroadcasting(_p)


# --- population_count -----------------------------------------------------------------
def _popcount_impl(x):
    x = np.asarray(x)
    return np.bitwise_count(x.view(_UNSIGNED_OF[x.dtype])).astype(x.dtype)


population_count_p = _unary("population_count", _int)
population_count_p.def_impl(_popcount_impl)
defjvp_zero(population_count_p)
defvectorized(population_count_p)

# ================================================================ selection

# --- select_n(which, *cases): which is bool (<= 2 cases) or integer; scalar or case-shaped


def _select_n_abstract(which, *cases):
    if not cases:
        raise ValueError("select_n() must have at least one case")
    c0 = cases[0]
    if any(c.shape != c0.shape for c in cases):
        raise TypeError("select cases must have the same shapes, got "
                        f"[{', '.join(str(c.shape) for c in cases)}].")
    if any(c.dtype != c0.dtype for c in cases):
        raise TypeError("select cases must have the same dtypes, got "
                        f"[{', '.join(c.dtype.name for c in cases)}].")
    if which.dtype == D.bool_:
        if len(cases) > 2:
            raise TypeError("select with boolean `which` cannot have > 2 cases.")
    elif which.dtype not in _INTS:
        raise TypeError(f"select `which` must be boolean or integer type, got {which.dtype}.")
    if which.shape and which.shape != c0.shape:
        raise TypeError("select `which` must be scalar or have the same shape as cases, "
                        f"got `which` shape {which.shape} but case shape {c0.shape}.")
    return ShapedArray(c0.shape, c0.dtype, all(c.weak_type for c in cases))


def _select_n_impl(which, *cases):
    if len(cases) == 1:
        return np.array(cases[0], copy=True) if np.ndim(which) else cases[0]
    which = np.asarray(which)
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0])
    return np.choose(which.astype(np.int64), cases, mode="clip")


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n_p.bind(which, *cases)
    ts = tangents[1:]
    if all(type(t) is Zero for t in ts):
        return out, Zero.from_primal(out)
    ts = [_full_like(c, 0) if type(t) is Zero else t for c, t in zip(cases, ts)]
    return out, select_n_p.bind(which, *ts)


def _select_n_transpose(ct, which, *cases):
    zeros = _full_like(ct, 0)
    return [None] + [
        select_n_p.bind(which, *[ct if j == i else zeros for j in range(len(cases))])
        if ad.is_undefined_primal(c) else None for i, c in enumerate(cases)]


def _select_n_batch(axis_data, vals, dims):
    which, *cases = vals
    wdim, cdims = dims[0], dims[1:]
    wnd, cnd = core.get_aval(which).ndim, core.get_aval(cases[0]).ndim
    wscalar = wnd - (wdim is not None) == 0          # one predicate per example
    c0 = cdims[0]
    if c0 is not None and all(d == c0 for d in cdims):
        if (wdim is None and wscalar) or (wdim == c0 and wnd == cnd):
            return select_n_p.bind(which, *cases), c0
    size = axis_data.size
    cases = [bdim_at_front(c, d, size) for c, d in zip(cases, cdims)]
    if wdim is None and wscalar:
        return select_n_p.bind(which, *cases), 0
    which = bdim_at_front(which, wdim, size)
    shape = core.get_aval(cases[0]).shape
    if wscalar and len(shape) > 1:   # spread each example's predicate over its elements
        which = _structural().broadcast_in_dim_p.bind(which, shape=shape,
                                                      broadcast_dimensions=(0,))
    return select_n_p.bind(which, *cases), 0


select_n_p = Primitive("select_n")
select_n_p.def_abstract_eval(_select_n_abstract)
select_n_p.def_impl(_select_n_impl)
ad.jvp_rules[select_n_p] = _select_n_jvp
ad.transpose_rules[select_n_p] = _select_n_transpose
batching.batch_rules[select_n_p] = _select_n_batch


# --- clamp(min, x, max): min/max have x's shape or are scalars ------------------------
def _clamp_abstract(lo, x, hi):
    _check_dtypes("clamp", (_any, _any, _any), [lo.dtype, x.dtype, hi.dtype])
    if not (lo.dtype == x.dtype == hi.dtype):
        raise TypeError("clamp requires arguments to have the same dtypes, got "
                        f"{lo.dtype.name}, {x.dtype.name}, {hi.dtype.name}.")
    for nm, b in (("min", lo), ("max", hi)):
        if b.shape and b.shape != x.shape:
            raise TypeError(f"clamp requires {nm}.shape == operand.shape or {nm}.shape == (), "
                            f"got {nm}.shape={b.shape}, operand.shape={x.shape}.")
    return ShapedArray(x.shape, x.dtype, lo.weak_type and x.weak_type and hi.weak_type)


def _clamp_impl(lo, x, hi):
    return np.minimum(np.maximum(x, lo), hi).astype(x.dtype)


def _clamp_jvp(primals, tangents):
    lo, x, hi = primals
    out = clamp_p.bind(lo, x, hi)
    shape = core.get_aval(x).shape
    acc = None
    z = None
    # The comparisons broadcast rank-0 bounds implicitly; a rank-0 bound's tangent is
    # broadcast to the operand's shape (JAX's clamp JVP).
    for t, cond in ((tangents[0], lambda: and_p.bind(gt_p.bind(lo, x), lt_p.bind(lo, hi))),
                    (tangents[1], lambda: and_p.bind(gt_p.bind(x, lo), lt_p.bind(x, hi))),
                    (tangents[2], lambda: lt_p.bind(hi, x))):
        if type(t) is Zero:
            continue
        t = _broadcast_to(t, shape)
        z = _full_like(t, 0) if z is None else z
        c = select_n_p.bind(cond(), z, t)
        acc = c if acc is None else ad.add_tangents(acc, c)
    return out, (Zero.from_primal(out) if acc is None else acc)


def _clamp_batch(axis_data, vals, dims):
    lo, x, hi = vals
    dlo, dx, dhi = dims
    xnd = core.get_aval(x).ndim

    def lines_up(b, d):   # usable as is next to x batched at dx
        return (d is None and core.get_aval(b).ndim == 0) or \
            (d == dx and core.get_aval(b).ndim == xnd)
    if dx is not None and lines_up(lo, dlo) and lines_up(hi, dhi):
        return clamp_p.bind(lo, x, hi), dx
    size = axis_data.size
    x = bdim_at_front(x, dx, size)
    shape = core.get_aval(x).shape
    bounds = []
    for b, d in ((lo, dlo), (hi, dhi)):
        per_example_scalar = core.get_aval(b).ndim - (d is not None) == 0
        if d is None and per_example_scalar:
            bounds.append(b)                   # a true scalar bound stays a scalar
        elif per_example_scalar and len(shape) > 1:   # one bound per example: spread it
            bounds.append(_structural().broadcast_in_dim_p.bind(
                bdim_at_front(b, d, size), shape=shape, broadcast_dimensions=(0,)))
        else:
            bounds.append(bdim_at_front(b, d, size))
    return clamp_p.bind(bounds[0], x, bounds[1]), 0


clamp_p = Primitive("clamp")
clamp_p.def_abstract_eval(_clamp_abstract)
_impl(clamp_p, _clamp_impl, small_floats_in_f32=False)
ad.jvp_rules[clamp_p] = _clamp_jvp
batching.batch_rules[clamp_p] = _clamp_batch

# ================================================================ casts


# --- convert_element_type(new_dtype, weak_type) ---------------------------------------
def _convert_abstract(x, *, new_dtype, weak_type):
    return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_impl(x, *, new_dtype, weak_type):
    x = np.asarray(x)
    new_dtype = np.dtype(new_dtype)
    if x.dtype == new_dtype:
        return x
    if x.dtype in _COMPLEX and new_dtype not in _COMPLEX:
        x = np.real(x)              # XLA drops the imaginary part (also for bool)
    if new_dtype == D.bool_:
        return x != 0
    if new_dtype in _INTS and x.dtype not in _INTS and x.dtype != D.bool_:
        # float -> int: NaN -> 0, out-of-range saturates, otherwise truncate (XLA on CPU)
        f = x.astype(np.float64)
        info = np.iinfo(new_dtype)
        lo, hi = float(info.min), float(info.max)
        t = np.trunc(np.where(np.isnan(f), 0.0, f))
        # float(max) of a 64-bit type rounds up past the type's range: clip just below it
        # (values at or above it saturate in the ``where`` below).
        out = np.clip(t, lo, hi if hi < 2.0 ** 53 else np.nextafter(hi, 0.0)).astype(new_dtype)
        return np.where(t >= hi, info.max, np.where(t <= lo, info.min, out)).astype(new_dtype)
    if x.dtype in _SMALL_FLOATS and new_dtype in _INTS:
        x = x.astype(np.float32)
    return x.astype(new_dtype)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    x, = primals
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    t, = tangents
    if type(t) is Zero or ad.tangent_aval(core.get_aval(out)).dtype == ad.float0:
        return out, Zero.from_primal(out)
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type):
    old = x.aval
    if ad.tangent_aval(old).dtype == ad.float0:
        return [Zero(ad.tangent_aval(old))]
    return [convert_element_type_p.bind(ct, new_dtype=old.dtype, weak_type=old.weak_type)]


_convert_quiet = _quiet(_convert_impl)


def _convert_fold(trace, args, params):
    """Staging a conversion of a scalar literal gives a literal, as JAX's staging folds it
    (``x + jnp.array(0)`` inside a traced function adds ``0.0:f32[]``): the operand is a
    Python or NumPy scalar, or a scalar Array made while this trace ran (which the trace
    stages as a literal).  A weakly typed result folds only where it is its Python
    scalar's default dtype (JAX folds to that Python scalar); an Array closed over from
    outside the trace is a constant of the program and its conversion is staged."""
    x, = args
    new_dtype, weak = params["new_dtype"], params["weak_type"]
    t = type(x)
    if t is Array:
        if x.aval.shape != () or getattr(x, "_born", -1) < trace.tag or not x.on_host:
            return NotImplemented
        v = x._value
    elif t in (int, float, bool, complex) or isinstance(x, (np.ndarray, np.generic)):
        v = np.asarray(x)
        if v.shape != ():
            return NotImplemented
    else:
        return NotImplemented
    if not isinstance(new_dtype, np.dtype) or v.dtype.kind not in "biufc" \
            or not isinstance(v.dtype, np.dtype) or D.is_extended(v.dtype):
        return NotImplemented
    out = np.asarray(_convert_quiet(v, new_dtype=new_dtype, weak_type=weak))
    if weak and core.get_aval(out.item()).dtype != new_dtype:
        return NotImplemented
    return Array(out, weak)       # made under ``trace``: staged as a literal


convert_element_type_p = Primitive("convert_element_type")
convert_element_type_p.def_abstract_eval(_convert_abstract)
convert_element_type_p.def_impl(_convert_quiet)
staging.staging_rules[convert_element_type_p] = _convert_fold
ad.jvp_rules[convert_element_type_p] = _convert_jvp
ad.transpose_rules[convert_element_type_p] = _convert_transpose
defvectorized(convert_element_type_p)
passes.forwarding_rules[convert_element_type_p] = passes.identity_when_same_type(lambda p: True)
ir.pp_rules[convert_element_type_p] = ir.pp_with_defaults(drop=("sharding",))


# --- bitcast_convert_type(new_dtype): reinterpret bits; widths may differ -------------
def _bitcast_abstract(x, *, new_dtype):
    new_dtype = np.dtype(new_dtype)
    a, b = x.dtype.itemsize, new_dtype.itemsize
    if (x.dtype in _BOOL | _COMPLEX or new_dtype in _BOOL | _COMPLEX) and x.dtype != new_dtype:
        raise TypeError("lax.bitcast_convert_type does not support bool or complex values "
                        "unless the operand and destination types match. Got operand "
                        f"dtype={x.dtype}, new_dtype={new_dtype}.")
    if a == b:
        shape = x.shape
    elif a > b:
        shape = x.shape + (a // b,)
    else:
        if not x.shape or x.shape[-1] * a != b:
            raise ValueError(f"Attempting to convert array of shape {x.shape} from {x.dtype} of "
                             f"size {a * 8} bits to {new_dtype} of size {b * 8} bits, but the "
                             f"last dimension times {a * 8} != {b * 8}")
        shape = x.shape[:-1]
    return ShapedArray(shape, new_dtype, False)


def _bitcast_impl(x, *, new_dtype):
    x = np.asarray(x)
    shape = _bitcast_abstract(ShapedArray(x.shape, x.dtype), new_dtype=new_dtype).shape
    return np.ascontiguousarray(x).reshape(-1).view(np.dtype(new_dtype)).reshape(shape)


def _bitcast_batch(axis_data, vals, dims, *, new_dtype):
    x, = vals
    d = dims[0]
    a = core.get_aval(x)
    if np.dtype(new_dtype).itemsize < a.dtype.itemsize and d == a.ndim - 1:
        x, d = bdim_at_front(x, d, axis_data.size), 0
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


bitcast_convert_type_p = Primitive("bitcast_convert_type")
bitcast_convert_type_p.def_abstract_eval(_bitcast_abstract)
bitcast_convert_type_p.def_impl(_bitcast_impl)
defjvp_zero(bitcast_convert_type_p)
batching.batch_rules[bitcast_convert_type_p] = _bitcast_batch

# --- stop_gradient: identity whose derivative is a symbolic zero ----------------------
stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.def_abstract_eval(lambda x: x)
stop_gradient_p.def_impl(lambda x: x)
defjvp_zero(stop_gradient_p)
defvectorized(stop_gradient_p)

# ================================================================ xform.lax functions
# (They shadow the builtins abs, round, pow, max, min and complex in this module:
# code above uses builtins.abs.)
# JAX's lax does not promote or broadcast arrays: operands must have equal dtypes
# and shapes, except that rank-0 operands (and size-1 axes of equal-rank ones)
# broadcast.  A Python scalar becomes a weak array; it takes the dtype of the
# array operands when its kind fits (2 next to a float32 array is a weak float32,
# 2.5 next to an int32 array is not: that mismatch raises, as in JAX).

_PY_SCALAR_FITS = {bool: _BOOL, int: set(_INTS) | _FLOATS | _COMPLEX,
                   float: _FLOATS | _COMPLEX, complex: _COMPLEX}
_FLOAT_SETS += [_FLOATS, _PY_SCALAR_FITS[int], _PY_SCALAR_FITS[float]]


def _add_narrow_floats():
    new = (D.bfloat16,) + D._float8s
    for s in _FLOAT_SETS:
        s.update(new)
    _SMALL_FLOATS.update(d for d in new if d.itemsize < 4)


D.on_ml_dtypes(_add_narrow_floats)


def _scalar_to_array(v, like):
    t = type(v)
    dt = like if like is not None and like in _PY_SCALAR_FITS[t] else D.dtype_of(v)
    try:
        val = np.asarray(v, dt)
    except OverflowError:
        raise TypeError(f"Python {t.__name__} {v!r} is out of bounds for {dt.name}; pass an "
                        "array of a wider dtype instead") from None
    return Array(val, weak_type=t is not bool)


def _as_operand(x, name):
    """Arrays and tracers pass through; NumPy values become canonical Arrays."""
    if isinstance(x, (Array, Tracer)):
        return x
    if type(x) in _PY_SCALAR_FITS:
        return _scalar_to_array(x, None)
    if getattr(x, "__jax_array__", None) is not None:
        raise core.jax_array_error()
    if isinstance(x, (np.ndarray, np.generic)) or hasattr(x, "__array__"):
        v = np.asarray(x)
        return Array(np.array(v, D.dtype_of(v)))
    raise TypeError(f"{name}: value {x!r} of type {type(x).__name__} is not a valid array. "
                    "Use an xform Array, a NumPy array or a Python scalar.")


def _operands(name, args, same_dtypes=True, tip=None, implicit=True):
    """Convert scalars, check dtypes agree.  Rank-0 operands and (``implicit``) operands
    of equal rank with size-1 dims are left to the primitive's implicit broadcasting (as
    JAX's lax); with ``implicit=False`` the latter are broadcast to the common shape."""
    ops = [None if type(a) in _PY_SCALAR_FITS else _as_operand(a, name) for a in args]
    like = next((o.dtype for o in ops if o is not None), None)
    ops = [_scalar_to_array(a, like) if o is None else o for a, o in zip(args, ops)]
    dts = [o.dtype for o in ops]
    if same_dtypes and any(d != dts[0] for d in dts):
        hint = f" (Tip: xform.numpy.{tip} is a similar function that does automatic type " \
               "promotion on inputs)." if tip else ""
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                        f"{', '.join(d.name for d in dts)}.{hint}")
    shapes = [tuple(o.shape) for o in ops]
    if all(s == shapes[0] for s in shapes):
        return ops
    arrays = [s for s in shapes if s]
    if all(s == arrays[0] for s in arrays):
        return ops          # rank-0 operands broadcast implicitly (in the primitive)
    ranks = {len(s) for s in shapes if s}
    if len(ranks) > 1:
        raise TypeError(f"{name}: arrays must have the same number of dimensions (only rank-0 "
                        f"operands broadcast), got shapes {', '.join(map(str, shapes))}. "
                        "Reshape or broadcast explicitly, or use xform.numpy.")
    rank = ranks.pop()
    target = []
    for i in range(rank):
        sizes = {s[i] for s in shapes if s and s[i] != 1}
        if len(sizes) > 1:
            raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                            f"{', '.join(map(str, shapes))}.")
        target.append(sizes.pop() if sizes else 1)
    if implicit:
        return ops          # equal ranks: size-1 dims broadcast implicitly (in the primitive)
    return [_broadcast_to(o, tuple(target)) if o.shape else o for o in ops]


def _doc(fn, name, doc):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__module__ = "xform.lax"
    return fn


class AccuracyMode(__import__("enum").Enum):
    """Requested accuracy of a transcendental function (JAX's ``lax.AccuracyMode``)."""
    HIGHEST = 1
    DEFAULT = 2


class Tolerance:
    """Requested error bounds of a transcendental function (JAX's ``lax.Tolerance``)."""
    __slots__ = ("atol", "rtol", "ulps")

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        self.atol, self.rtol, self.ulps = atol, rtol, ulps

    def __repr__(self):
        return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


# The functions that take JAX's ``accuracy=`` argument.  It is a request to the compiler
# about the approximation it may use; xform's reference implementations are exact to the
# dtype and its lowering keeps XLA's default, which meets both modes on CPU, so the
# argument is checked and has no further effect.
_ACCURACY_FNS = frozenset({"exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic",
                           "sin", "cos", "tan", "sqrt", "rsqrt", "cbrt"})


def _check_accuracy(name, accuracy):
    if accuracy is None or isinstance(accuracy, (AccuracyMode, Tolerance)):
        return
    raise TypeError(f"lax.{name}: accuracy must be None, a lax.AccuracyMode or a "
                    f"lax.Tolerance, got {accuracy!r}")


def _unop(prim, name, doc):
    def fn(x):
        if type(x) is not Array and not isinstance(x, Tracer):
            x = _as_operand(x, name)
        return prim.bind(x)     # the shape rule checks the dtype (under every trace)
    if name in _ACCURACY_FNS:
        plain = fn

        def fn(x, accuracy=None):   # noqa: F811
            if accuracy is not None:
                _check_accuracy(name, accuracy)
            return plain(x)
    return _doc(fn, name, doc)


def _binop(prim, name, doc, tip=None):
    def fn(x, y):
        if not (type(x) is Array and type(y) is Array and x.dtype == y.dtype
                and x.shape == y.shape):
            x, y = _operands(name, (x, y), tip=tip)
        return prim.bind(x, y)  # the shape rule checks the dtypes (under every trace)
    return _doc(fn, name, doc)


_UNARY_FNS = [  # (lax name, primitive, docstring)
    ("neg", neg_p, "Elementwise negation: -x."),
    ("sign", sign_p, "Elementwise sign: -1, 0 or 1 (sign(-0.0) = -0.0; complex: x/|x|)."),
    ("floor", floor_p, "Elementwise floor."),
    ("ceil", ceil_p, "Elementwise ceiling."),
    ("is_finite", is_finite_p, "Elementwise: True where x is neither inf nor nan."),
    ("exp", exp_p, "Elementwise exponential e**x."),
    ("exp2", exp2_p, "Elementwise base-2 exponential 2**x."),
    ("log", log_p, "Elementwise natural logarithm."),
    ("log1p", log1p_p, "Elementwise log(1 + x), accurate near 0."),
    ("expm1", expm1_p, "Elementwise exp(x) - 1, accurate near 0."),
    ("tanh", tanh_p, "Elementwise hyperbolic tangent."),
    ("logistic", logistic_p, "Elementwise logistic sigmoid 1 / (1 + exp(-x))."),
    ("sin", sin_p, "Elementwise sine."),
    ("cos", cos_p, "Elementwise cosine."),
    ("tan", tan_p, "Elementwise tangent."),
    ("asin", asin_p, "Elementwise arc sine."),
    ("acos", acos_p, "Elementwise arc cosine."),
    ("atan", atan_p, "Elementwise arc tangent."),
    ("sinh", sinh_p, "Elementwise hyperbolic sine."),
    ("cosh", cosh_p, "Elementwise hyperbolic cosine."),
    ("asinh", asinh_p, "Elementwise inverse hyperbolic sine."),
    ("acosh", acosh_p, "Elementwise inverse hyperbolic cosine."),
    ("atanh", atanh_p, "Elementwise inverse hyperbolic tangent."),
    ("sqrt", sqrt_p, "Elementwise square root."),
    ("rsqrt", rsqrt_p, "Elementwise reciprocal square root 1/sqrt(x)."),
    ("cbrt", cbrt_p, "Elementwise cube root."),
    ("abs", abs_p, "Elementwise absolute value (complex -> real magnitude)."),
    ("square", square_p, "Elementwise square x * x."),
    ("erf", erf_p, "Elementwise error function."),
    ("erfc", erfc_p, "Elementwise complementary error function 1 - erf(x)."),
    ("erf_inv", erf_inv_p, "Elementwise inverse error function."),
    ("lgamma", lgamma_p, "Elementwise log of the absolute value of the gamma function."),
    ("digamma", digamma_p, "Elementwise digamma function (derivative of lgamma)."),
    ("real", real_p, "Elementwise real part of a complex array."),
    ("imag", imag_p, "Elementwise imaginary part of a complex array."),
    ("conj", conj_p, "Elementwise complex conjugate (float32/float64 become complex)."),
    ("bitwise_not", not_p, "Elementwise bitwise NOT (logical NOT on bool)."),
    ("population_count", population_count_p, "Elementwise number of set bits."),
]

_BINARY_FNS = [  # (lax name, primitive, docstring, xform.numpy counterpart)
    ("add", add_p, "Elementwise addition x + y.", "add"),
    ("sub", sub_p, "Elementwise subtraction x - y.", "subtract"),
    ("mul", mul_p, "Elementwise multiplication x * y.", "multiply"),
    ("div", div_p, "Elementwise division; integer division truncates toward zero.", "divide"),
    ("rem", rem_p, "Elementwise remainder with the sign of the dividend (C fmod).", "fmod"),
    ("max", max_p, "Elementwise maximum (NaN propagates).", "maximum"),
    ("min", min_p, "Elementwise minimum (NaN propagates).", "minimum"),
    ("atan2", atan2_p, "Elementwise arc tangent of x / y, quadrant-aware.", "arctan2"),
    ("nextafter", nextafter_p, "Next representable value after x in the direction of y.",
     "nextafter"),
    ("complex", complex_p, "Elementwise x + i*y from float32/float64 parts.", None),
    ("eq", eq_p, "Elementwise x == y.", "equal"),
    ("ne", ne_p, "Elementwise x != y.", "not_equal"),
    ("lt", lt_p, "Elementwise x < y.", "less"),
    ("le", le_p, "Elementwise x <= y.", "less_equal"),
    ("gt", gt_p, "Elementwise x > y.", "greater"),
    ("ge", ge_p, "Elementwise x >= y.", "greater_equal"),
    ("bitwise_and", and_p, "Elementwise bitwise AND (logical AND on bool).", "bitwise_and"),
    ("bitwise_or", or_p, "Elementwise bitwise OR (logical OR on bool).", "bitwise_or"),
    ("bitwise_xor", xor_p, "Elementwise bitwise XOR (logical XOR on bool).", "bitwise_xor"),
    ("shift_left", shift_left_p, "Elementwise x << y (0 when y >= the bit width).",
     "left_shift"),
    ("shift_right_arithmetic", shift_right_arithmetic_p,
     "Elementwise arithmetic x >> y (sign fill when y >= the bit width).", "right_shift"),
    ("shift_right_logical", shift_right_logical_p,
     "Elementwise logical x >> y (0 when y >= the bit width).", None),
]

for _n, _p, _d in _UNARY_FNS:
    globals()[_n] = _unop(_p, _n, _d)
for _n, _p, _d, _tip in _BINARY_FNS:
    globals()[_n] = _binop(_p, _n, _d, _tip)

_mul_plain = mul   # noqa: F821  (made by the _BINARY_FNS loop above)


def mul(x, y, *, out_dtype=None):
    """Elementwise multiplication x * y.  ``out_dtype``: the operands (which may then
    have different dtypes) are converted to it and multiplied in it (JAX's)."""
    if out_dtype is None:
        return _mul_plain(x, y)
    out = D.canonicalize_dtype(np.dtype(out_dtype))
    x, y = _operands("mul", (x, y), same_dtypes=False)
    _check_dtypes("mul", (_num, _num), [x.dtype, y.dtype])
    return mul_p.bind(x, y, out_dtype=out)


mul.__name__ = mul.__qualname__ = "mul"


def pow(x, y):  # noqa: A001  (JAX's name)
    """Elementwise x ** y: float/complex x; y of x's dtype or any integer dtype."""
    if type(x) in _PY_SCALAR_FITS and type(y) not in _PY_SCALAR_FITS:
        y = _as_operand(y, "pow")
        x = _scalar_to_array(x, None if y.dtype in _INTS else y.dtype)
    elif type(y) is int:                 # an int exponent stays an integer (JAX's pow(x, 2))
        x = _as_operand(x, "pow")
        y = _scalar_to_array(y, None)
    x, y = _operands("pow", (x, y), same_dtypes=False)
    _pow_abstract(core.get_aval(x), core.get_aval(y))
    return pow_p.bind(x, y)


def integer_pow(x, y):
    """Elementwise x ** y for a static Python integer y (repeated multiplication)."""
    try:
        y = operator.index(y)
    except TypeError:
        raise TypeError(f"integer_pow requires a static Python int exponent, got "
                        f"{type(y).__name__}; use lax.pow for array exponents") from None
    x = _as_operand(x, "integer_pow")
    _integer_pow_abstract(core.get_aval(x), y=y)
    return integer_pow_p.bind(x, y=y)


def reciprocal(x):
    """Elementwise 1 / x."""
    return integer_pow(x, -1)


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001
    """Elementwise rounding to an integral value; ties away from zero unless
    ``rounding_method=RoundingMethod.TO_NEAREST_EVEN`` (1)."""
    m = int(rounding_method)
    if m not in (0, 1):
        raise ValueError(f"rounding_method must be a RoundingMethod (0 or 1), got "
                         f"{rounding_method!r}")
    x = _as_operand(x, "round")
    return round_p.bind(x, rounding_method=m)


def select_n(which, *cases):
    """Elementwise ``cases[which]``: ``which`` is bool (two cases) or integer, and is a
    scalar or has the cases' shape; the cases have equal shapes and dtypes."""
    if not cases:
        raise ValueError("select_n() must have at least one case")
    which = _as_operand(which, "select_n")
    arrays = [None if type(c) in _PY_SCALAR_FITS else _as_operand(c, "select_n") for c in cases]
    first = next((a for a in arrays if a is not None), None)
    cases = [(_broadcast_to(_scalar_to_array(c, first.dtype), tuple(first.shape))
              if first is not None else _scalar_to_array(c, None)) if a is None else a
             for c, a in zip(cases, arrays)]
    _select_n_abstract(core.get_aval(which), *[core.get_aval(c) for c in cases])
    return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """Elementwise ``on_true if pred else on_false`` (``select_n(pred, on_false, on_true)``)."""
    return select_n(pred, on_false, on_true)


def clamp(min, x, max):  # noqa: A002  (JAX's names)
    """Elementwise ``min(max(x, min), max)``; ``min``/``max`` are x-shaped or scalars."""
    x = _as_operand(x, "clamp")
    lo, hi = (_scalar_to_array(b, x.dtype) if type(b) in _PY_SCALAR_FITS
              else _as_operand(b, "clamp") for b in (min, max))
    lo_a, x_a, hi_a = (core.get_aval(v) for v in (lo, x, hi))
    if not (lo_a.dtype == x_a.dtype == hi_a.dtype):
        raise TypeError("lax.clamp requires arguments to have the same dtypes, got "
                        f"{lo_a.dtype.name}, {x_a.dtype.name}, {hi_a.dtype.name}.")
    _clamp_abstract(lo_a, x_a, hi_a)
    return clamp_p.bind(lo, x, hi)


def convert_element_type(operand, new_dtype):
    """Elementwise cast to ``new_dtype`` (float->int truncates, saturates, NaN -> 0)."""
    new_dtype = D.dtype_of(new_dtype)
    m = getattr(operand, "__jax_array__", None)
    if m is not None and not isinstance(operand, (Array, Tracer)):
        operand = m()     # as JAX's convert_element_type (lax's only such conversion)
    if type(operand) is int and new_dtype.kind in "iu":
        # a Python int wraps around into the integer type, as JAX's conversion does
        try:
            v = np.asarray(operand, np.int64)
        except OverflowError:
            v = np.asarray(operand, np.uint64) if operand > 0 else None
        if v is not None:
            return core.Array(v.astype(new_dtype), False)
    if isinstance(operand, (bool, int, float, builtins.complex, np.generic)) and \
            new_dtype.kind in "biufc" and not (
                new_dtype.kind in "iub" and isinstance(operand, (float, builtins.complex,
                                                                 np.inexact))
                and not np.isfinite(operand)):
        # a host scalar is converted now, as JAX does (no equation is staged)
        try:
            with np.errstate(all="ignore"):
                return core.Array(np.asarray(operand, new_dtype), False)
        except (OverflowError, ValueError, TypeError):
            pass
    x = _as_operand(operand, "convert_element_type")
    if x.dtype == new_dtype and not core.is_weak(x):
        return x
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=False)


def bitcast_convert_type(operand, new_dtype):
    """Reinterpret the bits as ``new_dtype``; a narrower type adds a trailing axis, a
    wider one consumes the trailing axis."""
    new_dtype = D.dtype_of(new_dtype)
    x = _as_operand(operand, "bitcast_convert_type")
    _bitcast_abstract(core.get_aval(x), new_dtype=new_dtype)
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype)


def stop_gradient(x):
    """The identity, with a zero derivative, applied to every leaf of a pytree."""
    def stop(leaf):
        leaf = _as_operand(leaf, "stop_gradient")
        return stop_gradient_p.bind(leaf) if leaf.dtype in _FLOATS | _COMPLEX else leaf
    return tree_map(stop, x)


__all__ = [n for n, *_ in _UNARY_FNS] + [n for n, *_ in _BINARY_FNS] + [
    "pow", "integer_pow", "reciprocal", "round", "RoundingMethod", "select_n", "select",
    "clamp", "convert_element_type", "bitcast_convert_type", "stop_gradient",
    "AccuracyMode", "Tolerance"]
del _n, _p, _d, _tip

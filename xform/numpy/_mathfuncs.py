"""More elementwise math: frexp/ldexp/modf/spacing, gcd/lcm, i0, fabs, bitwise_count,
iscomplex/isreal, and the window functions (hanning, hamming, blackman, bartlett, kaiser).

Everything is composed from existing primitives (bitcasts, shifts, while_loop,
polynomials), so it works under jit/grad/vmap without rules of its own.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import dtypes
from xform.numpy import _ufuncs as F
from xform.numpy import _util as U
from xform.numpy._util import lax
from xform._ad_api import jvp as _jvp
from xform._custom_derivatives import custom_jvp
from xform._src.primitives.control_flow import while_loop
from xform.numpy._creation import zeros_like


def _c(v, x, weak=True):
    return U.to_array(v, x.dtype, weak)


def _float_arg(name, x):
    x = U.ensure_arraylike(name, x)
    (a,) = U.promote_dtypes_inexact(U.to_array(x))
    return a


_INT_OF_WIDTH = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


# ----------------------------------------------------------------- frexp / ldexp / modf


def _frexp_impl(x):
    dt = x.dtype
    info = dtypes.finfo(dt)
    nmant, nexp = int(info.nmant), int(info.nexp)
    bias = 1 - int(info.minexp)
    idt = np.dtype(_INT_OF_WIDTH[dt.itemsize])
    mask = (1 << nexp) - 1
    # Subnormals: scale into the normal range first, then correct the exponent.
    sub = F.less(F.absolute(x), _c(float(info.tiny), x))
    scale = float(2.0 ** nmant)
    if dt in (np.float32, np.float64):
        # XLA's CPU backend flushes float32/float64 subnormals to (signed) zero in the
        # scaling multiply, so JAX's frexp of one is (+-0.5, -149) (float64: -1074); the
        # same here, eagerly too
        xn = F.where(sub, F.multiply(x, _c(0.0, x)), x)
    else:
        xn = F.where(sub, F.multiply(x, _c(scale, x)), x)
    eadj = F.where(sub, U.to_array(-nmant, idt, False), U.to_array(0, idt, False))
    bits = lax.bitcast_convert_type(xn, idt)
    field = F.bitwise_and(lax.shift_right_logical(bits, U.to_array(nmant, idt, False)),
                          U.to_array(mask, idt, False))
    e = F.add(F.subtract(field, U.to_array(bias - 1, idt, False)), eadj)
    clear = U.to_array(np.array(~(mask << nmant)).astype(idt), idt, False)
    mbits = F.bitwise_or(F.bitwise_and(bits, clear),
                         U.to_array((bias - 1) << nmant, idt, False))
    m = lax.bitcast_convert_type(mbits, dt)
    special = F.logical_or(F.logical_or(F.isinf(x), F.isnan(x)), F.equal(x, _c(0, x)))
    if dtypes.is_bfloat16(dt):
        # bfloat16 is computed in float32, where its subnormals are subnormal too and
        # compare equal to 0 (flushed): JAX returns them unchanged with exponent 0
        special = F.logical_or(special, sub)
    e = F.where(special, U.to_array(0, idt, False), e)
    return F.where(special, x, m), U.to_array(e, np.int32, False)


_frexp_cj = None


def _frexp_custom():
    global _frexp_cj
    if _frexp_cj is None:

        cj = custom_jvp(_frexp_impl)

        def jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            m, e = cj(x)
            scale = F.power(_c(2.0, m), F.negative(U.to_array(e, m.dtype, False)))
            return (m, e), (F.multiply(t, scale), zeros_like(e, dtype=dtypes.float0)
                            if hasattr(dtypes, "float0") else zeros_like(e))

        cj.defjvp(jvp)
        _frexp_cj = cj
    return _frexp_cj


def frexp(x, /):
    """Decompose into mantissa in [0.5, 1) and int32 exponent: ``x == m * 2**e``."""
    x = U.ensure_arraylike("frexp", x)
    a = U.to_array(x)
    if a.dtype.kind == "c":
        raise TypeError("frexp does not support complex-valued inputs")
    (a,) = U.promote_dtypes_inexact(a)
    return _frexp_custom()(a)


def ldexp(x1, x2, /):
    """``x1 * 2**x2`` computed without intermediate overflow; ``x2`` must be integer."""
    x1, x2 = U.ensure_arraylike("ldexp", x1, x2)
    a, b = U.to_array(x1), U.to_array(x2)
    if a.dtype.kind == "c" or b.dtype.kind in "fc" or dtypes.is_bfloat16(b.dtype) or \
            dtypes.issubdtype(b.dtype, np.inexact):
        raise ValueError(f"ldexp not supported for input types {(a.dtype, b.dtype)}")
    (a,) = U.promote_dtypes_inexact(a)
    a, b = U.promote_shapes("ldexp", a, b)
    m, e = frexp(a)          # a = m * 2**e, 0.5 <= |m| < 1
    # m * 2**e1 * 2**e2 with e1 + e2 = e, each power of two built exactly from its bits
    # (normal range), so extreme exponents neither overflow early nor lose precision
    nmant, bias = _FLOAT_BITS[a.dtype.itemsize if not dtypes.is_bfloat16(a.dtype) else "bf"]
    idt = np.dtype(np.int64 if a.dtype.itemsize == 8 else np.int32)
    e = F.add(U.to_array(e, idt, False), U.to_array(b, idt, False))
    e = lax.clamp(np.array(2 * (1 - bias), idt), e, np.array(2 * bias, idt))
    e1 = F.floor_divide(e, U.to_array(2, idt, False))
    e2 = F.subtract(e, e1)
    out = m
    for k in (e1, e2):
        out = F.multiply(out, _pow2(k, a.dtype, nmant, bias))
    keep = F.logical_or(F.logical_or(F.isinf(a), F.isnan(a)), F.equal(a, _c(0, a)))
    return F.where(keep, a, out)


# itemsize (or "bf" for bfloat16) -> (mantissa bits, exponent bias)
_FLOAT_BITS = {2: (10, 15), "bf": (7, 127), 4: (23, 127), 8: (52, 1023)}


def _pow2(k, dt, nmant, bias):
    """2.0**k in ``dt`` for integer ``k`` in the normal range (exact: built from bits)."""
    udt = np.dtype({2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize])
    biased = lax.convert_element_type(F.add(k, U.to_array(bias, k.dtype, False)), udt)
    return lax.bitcast_convert_type(lax.shift_left(biased, np.array(nmant, udt)), dt)


def modf(x, /, out=None):
    """(fractional part, integral part), both with the sign of ``x``."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
    a = _float_arg("modf", x)
    whole = F.where(F.greater_equal(a, _c(0, a)), F.floor(a), F.ceil(a))
    return F.subtract(a, whole), whole


def spacing(x, /):
    """Distance from ``x`` to the next representable value away from zero."""
    a = _float_arg("spacing", x)
    if a.dtype.kind == "c":
        raise TypeError("spacing does not support complex-valued inputs")
    inf = _c(np.inf, a)
    if a.dtype == np.float16:
        return U.to_array(F.subtract(F.nextafter(a, inf), a), a.dtype, False)
    r = F.subtract(F.nextafter(a, F.copysign(inf, a)), a)
    tiny = _c(float(dtypes.finfo(a.dtype).smallest_subnormal), a)
    return U.to_array(F.where(F.equal(r, _c(0, r)), F.copysign(tiny, a), r), a.dtype, False)


def fabs(x, /):
    """Absolute value as a float (complex inputs are rejected)."""
    x = U.ensure_arraylike("fabs", x)
    a = U.to_array(x)
    if a.dtype.kind == "c":
        raise TypeError("ufunc 'fabs' does not support complex dtypes")
    (a,) = U.promote_dtypes_inexact(a)
    return F.absolute(a)


# ----------------------------------------------------------------- integer functions


def _int_pair(name, x1, x2):
    x1, x2 = U.ensure_arraylike(name, x1, x2)
    a, b = U.promote_args(name, x1, x2)
    if a.dtype.kind not in "iu":
        raise ValueError(f"Arguments to xform.numpy.{name} must be integers.")
    return a, b


def _gcd(a, b):

    zero = _c(0, a, a.weak_type)
    one = _c(1, a, a.weak_type)

    def cond(c):
        return lax.reduce_or(F.not_equal(c[1], zero), tuple(range(c[1].ndim))) \
            if c[1].ndim else F.not_equal(c[1], zero)

    def body(c):
        x, y = c
        ynz = F.not_equal(y, zero)
        r = lax.rem(x, F.where(ynz, y, one))
        return F.where(ynz, y, x), F.where(ynz, r, zero)

    return while_loop(cond, body, (a, b))[0]


def gcd(x1, x2, /):
    """Greatest common divisor of ``|x1|`` and ``|x2|`` (integers)."""
    a, b = _int_pair("gcd", x1, x2)
    return _gcd(F.absolute(a), F.absolute(b))


def lcm(x1, x2, /):
    """Least common multiple of ``|x1|`` and ``|x2|`` (integers; 0 if either is 0)."""
    a, b = _int_pair("lcm", x1, x2)
    a, b = F.absolute(a), F.absolute(b)
    d = _gcd(a, b)
    zero = _c(0, d, d.weak_type)
    safe = F.where(F.equal(d, zero), _c(1, d, d.weak_type), d)
    return F.where(F.equal(d, zero), zero, F.multiply(a, F.floor_divide(b, safe)))


def bitwise_count(x, /):
    """Number of 1 bits in ``|x|`` (uint8 result)."""
    x = U.ensure_arraylike("bitwise_count", x)
    a = U.to_array(x)
    if a.dtype.kind not in "iub" or dtypes.is_bfloat16(a.dtype):
        raise TypeError(f"bitwise_count requires an integer or boolean input, got {a.dtype}")
    if a.dtype.kind == "i":
        a = F.absolute(a)
    return U.to_array(lax.population_count(a), np.uint8, False)


# ----------------------------------------------------------------- complex predicates


def iscomplex(x):
    """True where the imaginary part is non-zero (False for real dtypes)."""
    x = U.ensure_arraylike("iscomplex", x)
    a = U.to_array(x)
    i = F.imag(a)
    return F.not_equal(i, U.to_array(0, i.dtype, i.weak_type))


def isreal(x):
    """True where the imaginary part is zero (True for real dtypes)."""
    x = U.ensure_arraylike("isreal", x)
    a = U.to_array(x)
    i = F.imag(a)
    return F.equal(i, U.to_array(0, i.dtype, i.weak_type))


# ----------------------------------------------------------------- i0 (Cephes Chebyshev)

# Chebyshev coefficients for exp(-x) I0(x) on [0, 8] and exp(-x) sqrt(x) I0(x) on (8, inf)
# (Cephes, as used by NumPy's i0).
_I0A = (-4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
        1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
        -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
        9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
        -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
        1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
        -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
        1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
        -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
        1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0B = (-7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
        3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
        1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
        -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
        7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
        -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
        3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
        2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
        8.04490411014108831608E-1)


def _chbevl(t, coeffs):
    b0 = _c(coeffs[0], t)
    b1 = _c(0.0, t)
    b2 = b1
    for c in coeffs[1:]:
        b2, b1 = b1, b0
        b0 = F.add(F.subtract(F.multiply(t, b1), b2), _c(c, t))
    return F.multiply(_c(0.5, t), F.subtract(b0, b2))


def i0e_real(ax):
    """``exp(-|x|) I0(|x|)`` for a non-negative float array ``ax``."""
    small = F.less_equal(ax, _c(8.0, ax))
    ta = F.subtract(F.multiply(ax, _c(0.5, ax)), _c(2.0, ax))
    safe = F.where(small, _c(8.0, ax), ax)
    tb = F.subtract(F.true_divide(_c(32.0, ax), safe), _c(2.0, ax))
    ya = _chbevl(ta, _I0A)
    yb = F.true_divide(_chbevl(tb, _I0B), F.sqrt(safe))
    return F.where(small, ya, yb)


def i0(x):
    """Modified Bessel function of the first kind, order 0 (real inputs)."""
    x = U.ensure_arraylike("i0", x)
    a = U.to_array(x)
    if a.dtype.kind == "c":
        raise NotImplementedError("i0 does not support complex-valued inputs")
    (a,) = U.promote_dtypes_inexact(a)
    comp = np.float32 if (a.dtype == dtypes.float16 or dtypes.is_bfloat16(a.dtype)) else a.dtype
    out = _i0_custom()(U.to_array(a, comp, a.weak_type))
    return U.to_array(out, a.dtype, a.weak_type)


def _i0_impl(x):
    ax = F.absolute(x)
    return F.multiply(F.exp(ax), i0e_real(ax))


_i0_cj = None


def _i0_custom():
    """i0 with an exactly-zero derivative at 0 (as JAX's)."""
    global _i0_cj
    if _i0_cj is None:

        cj = custom_jvp(_i0_impl)

        def rule(primals, tangents):
            (x,), (t,) = primals, tangents
            y, dy = _jvp(_i0_impl, (x,), (t,))
            return y, F.where(F.equal(x, _c(0, x)), _c(0, dy), dy)

        cj.defjvp(rule)
        _i0_cj = cj
    return _i0_cj


# ----------------------------------------------------------------- window functions


def _window_len(name, M):
    M = U.static_int(M, f"{name}: M")
    return M


def _window(name, M, fn):
    M = _window_len(name, M)
    dt = dtypes.default_float_dtype()
    if M <= 1:
        return U.to_array(np.ones(max(M, 0), dt))
    n = lax.iota(dt, M)
    return fn(n, M, dt)


def _cos_terms(n, M, dt, coeffs):
    """sum_k c_k cos(2 pi k n / (M-1))."""
    out = None
    for k, c in enumerate(coeffs):
        term = U.broadcast_to_shape(U.to_array(c, dt, False), n.shape) if k == 0 else \
            F.multiply(U.to_array(c, dt, False),
                       F.cos(F.multiply(n, U.to_array(2.0 * np.pi * k / (M - 1), dt, False))))
        out = term if out is None else F.add(out, term)
    return out


def hanning(M):
    """Hann window of length ``M``."""
    return _window("hanning", M, lambda n, M, dt: _cos_terms(n, M, dt, (0.5, -0.5)))


def hamming(M):
    """Hamming window of length ``M``."""
    return _window("hamming", M, lambda n, M, dt: _cos_terms(n, M, dt, (0.54, -0.46)))


def blackman(M):
    """Blackman window of length ``M``."""
    return _window("blackman", M, lambda n, M, dt: _cos_terms(n, M, dt, (0.42, -0.5, 0.08)))


def bartlett(M):
    """Bartlett (triangular) window of length ``M``."""
    def f(n, M, dt):
        half = U.to_array((M - 1) / 2.0, dt, False)
        return F.subtract(U.to_array(1.0, dt, False),
                          F.absolute(F.true_divide(F.subtract(n, half), half)))
    return _window("bartlett", M, f)


def kaiser(M, beta):
    """Kaiser window of length ``M`` with shape parameter ``beta``."""
    beta = U.ensure_arraylike("kaiser", beta)

    def f(n, M, dt):
        b = U.to_array(beta, dt, False)
        alpha = (M - 1) / 2.0
        r = F.true_divide(F.subtract(n, U.to_array(alpha, dt, False)),
                          U.to_array(alpha, dt, False))
        arg = F.multiply(b, F.sqrt(F.subtract(U.to_array(1.0, dt, False), F.square(r))))
        return F.true_divide(i0(arg), i0(b))
    return _window("kaiser", M, f)


__all__ = ["frexp", "ldexp", "modf", "spacing", "fabs", "gcd", "lcm", "bitwise_count",
           "iscomplex", "isreal", "i0", "hanning", "hamming", "blackman", "bartlett", "kaiser"]

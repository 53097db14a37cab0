"""``xform.scipy.special``: numerically stable special functions (JAX's names)."""
from __future__ import annotations

import numpy as np

from interpreters import dtypes
from xform import numpy as xnp
from xform.numpy import _ufuncs as F
from xform.numpy import _util as U
from xform.numpy._util import lax

__all__ = ["logsumexp", "erf", "erfc", "erfinv", "expit", "logit", "gammaln", "digamma",
           "xlogy", "xlog1py", "entr", "log_ndtr", "ndtr", "softmax", "log_softmax"]


def _inexact(name, *xs):
    U.check_arraylike(name, *xs)
    return U.promote_args_inexact(name, *xs)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """log(sum(b * exp(a))) computed as max + log(sum(b * exp(a - max))).

    The max is wrapped in stop_gradient (as JAX), so the gradient is the
    softmax and stays finite even where the max is -inf.
    """
    if b is not None:
        a, b = _inexact("logsumexp", a, b)
    else:
        (a,) = _inexact("logsumexp", a)
    axes = U.canonicalize_axes(axis, a.ndim)
    if where is not None:
        a = F.where(where, a, U.to_array(-np.inf, a.dtype))
    amax = xnp.max(a, axis=axes, keepdims=True) if a.size else \
        U.to_array(np.zeros((1,) * a.ndim, a.dtype))
    amax = lax().stop_gradient(F.where(F.isfinite(amax), amax, U.to_array(0, amax.dtype)))
    e = F.exp(F.subtract(a, amax))
    if b is not None:
        e = F.multiply(b, e)
    s = xnp.sum(e, axis=axes, keepdims=True)
    sign = F.sign(s) if (b is not None or return_sign) else None
    if b is not None or return_sign:
        s = F.absolute(s)
    out = F.add(F.log(s), amax)
    if not keepdims:
        out = xnp.squeeze(out, axes) if axes else out
        sign = xnp.squeeze(sign, axes) if (sign is not None and axes) else sign
    if return_sign:
        return out, sign
    if b is not None:
        out = F.where(F.less(sign, U.to_array(0, sign.dtype)), U.to_array(np.nan, out.dtype), out)
    return out


def erf(x):
    (x,) = _inexact("erf", x)
    return lax().erf(x)


def erfc(x):
    (x,) = _inexact("erfc", x)
    return lax().erfc(x)


def erfinv(x):
    (x,) = _inexact("erfinv", x)
    return lax().erf_inv(x)


def expit(x):
    (x,) = _inexact("expit", x)
    return lax().logistic(x)


def logit(x):
    (x,) = _inexact("logit", x)
    return F.log(F.true_divide(x, F.subtract(U.to_array(1, x.dtype, True), x)))


def gammaln(x):
    (x,) = _inexact("gammaln", x)
    return lax().lgamma(x)


def digamma(x):
    (x,) = _inexact("digamma", x)
    return lax().digamma(x)


def xlogy(x, y):
    """x * log(y), defined as 0 where x == 0 (even if y == 0)."""
    x, y = _inexact("xlogy", x, y)
    zero = U.to_array(0, x.dtype)
    safe_y = F.where(F.equal(x, zero), U.to_array(1, y.dtype), y)
    return F.where(F.equal(x, zero), zero, F.multiply(x, F.log(safe_y)))


def xlog1py(x, y):
    x, y = _inexact("xlog1py", x, y)
    zero = U.to_array(0, x.dtype)
    safe_y = F.where(F.equal(x, zero), zero, y)
    return F.where(F.equal(x, zero), zero, F.multiply(x, F.log1p(safe_y)))


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf for x < 0."""
    (x,) = _inexact("entr", x)
    zero = U.to_array(0, x.dtype)
    safe = F.where(F.greater(x, zero), x, U.to_array(1, x.dtype))
    out = F.negative(F.multiply(x, F.log(safe)))
    out = F.where(F.equal(x, zero), zero, out)
    return F.where(F.less(x, zero), U.to_array(-np.inf, x.dtype), out)


def ndtr(x):
    (x,) = _inexact("ndtr", x)
    half = U.to_array(0.5, x.dtype, True)
    return F.multiply(half, erfc(F.multiply(F.negative(x), U.to_array(1 / np.sqrt(2), x.dtype, True))))


def log_ndtr(x):
    return F.log(ndtr(x))


def softmax(x, axis=-1):
    from xform.nn import softmax as _s
    return _s(x, axis=axis)


def log_softmax(x, axis=-1):
    from xform.nn import log_softmax as _s
    return _s(x, axis=axis)

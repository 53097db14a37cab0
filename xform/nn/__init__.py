"""``xform.nn``: activation functions and friends (``jax.nn``'s names and defaults).

Written with ``xform.numpy`` in their numerically stable forms: softplus as
logaddexp(x, 0), log_sigmoid as -softplus(-x), softmax/log_softmax subtract
the (gradient-stopped) max.
"""
from __future__ import annotations

import math

import numpy as np

from xform._src.interpreters import core, dtypes
from xform import numpy as xnp
from xform.numpy import _ufuncs as F
from xform.numpy import _util as U
from xform.numpy._util import lax
from xform.scipy.special import logsumexp
from xform._custom_derivatives import custom_jvp
from xform.numpy import _jitted
import sys

__all__ = ["relu", "relu6", "gelu", "sigmoid", "silu", "swish", "softplus", "log_sigmoid",
           "elu", "leaky_relu", "softmax", "log_softmax", "logsumexp", "one_hot",
           "standardize", "tanh", "hard_tanh", "celu", "selu", "glu", "soft_sign",
           "hard_sigmoid", "hard_silu", "hard_swish", "sparse_plus", "mish", "identity"]


def _x(name, x):
    x = U.ensure_arraylike(name, x)
    return U.to_array(x)


def _c(x, v):
    return U.to_array(v, x.dtype, True)


def identity(x):
    return _x("identity", x)


def _relu_body(x):
    return F.maximum(x, 0)


def _relu6_body(x):
    return F.minimum(F.maximum(x, 0), 6.)


def _named(fn, name):
    def f(x):
        return fn(x)
    f.__name__ = f.__qualname__ = name
    return f


_custom = {}


def _custom_relu(name):
    """As JAX: ``custom_jvp(jit(body))`` whose derivative is 0 at the kinks (relu: at 0,
    relu6: at 0 and 6); the jit is staged only when a program is (xform.numpy._jitted)."""
    f = _custom.get(name)
    if f is None:
        if name == "relu":
            body = _relu_body
            live = lambda x: x > 0                                 # noqa: E731
        else:
            body = _relu6_body
            live = lambda x: F.logical_and(x > 0, x < 6)           # noqa: E731
        f = custom_jvp(_jitted.wrap(_named(body, name), name, ()))
        f.defjvps(lambda g, ans, x: lax.select(live(x), g, lax.full_like(g, 0)))
        _custom[name] = f
    return f


def relu(x):
    """max(x, 0); its derivative at 0 is 0 (as JAX: a custom_jvp around jit(relu))."""
    x = _x("relu", x)
    if core.current_trace() is core.EVAL_TRACE:    # eager: no derivative to customise
        return _relu_body(x)
    return _custom_relu("relu")(x)


def relu6(x):
    """min(max(x, 0), 6); its derivative at 0 and 6 is 0 (as JAX)."""
    x = _x("relu6", x)
    if core.current_trace() is core.EVAL_TRACE:
        return _relu6_body(x)
    return _custom_relu("relu6")(x)


def sigmoid(x):
    (x,) = U.promote_dtypes_inexact(_x("sigmoid", x))
    return lax.logistic(x)


def silu(x):
    (x,) = U.promote_dtypes_inexact(_x("silu", x))
    return F.multiply(x, sigmoid(x))


swish = silu


def softplus(x):
    (x,) = U.promote_dtypes_inexact(_x("softplus", x))
    return F.logaddexp(x, _c(x, 0))


def sparse_plus(x):
    (x,) = U.promote_dtypes_inexact(_x("sparse_plus", x))
    q = F.multiply(_c(x, 0.25), F.square(F.add(x, _c(x, 1))))
    return F.where(F.less_equal(x, _c(x, -1)), _c(x, 0), F.where(F.greater_equal(x, _c(x, 1)), x, q))


def soft_sign(x):
    (x,) = U.promote_dtypes_inexact(_x("soft_sign", x))
    return F.true_divide(x, F.add(F.absolute(x), _c(x, 1)))


def log_sigmoid(x):
    (x,) = U.promote_dtypes_inexact(_x("log_sigmoid", x))
    return F.negative(softplus(F.negative(x)))


def elu(x, alpha=1.0):
    (x,) = U.promote_dtypes_inexact(_x("elu", x))
    safe = F.where(F.greater(x, _c(x, 0)), _c(x, 0), x)
    return F.where(F.greater(x, _c(x, 0)), x, F.multiply(_c(x, alpha), F.expm1(safe)))


def celu(x, alpha=1.0):
    (x,) = U.promote_dtypes_inexact(_x("celu", x))
    a = _c(x, alpha)
    return F.add(F.maximum(x, _c(x, 0)),
                 F.multiply(a, F.expm1(F.true_divide(F.minimum(x, _c(x, 0)), a))))


def selu(x):
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return F.multiply(_c(U.to_array(elu(x, alpha)), scale), elu(x, alpha))


def leaky_relu(x, negative_slope=0.01):
    (x,) = U.promote_dtypes_inexact(_x("leaky_relu", x))
    return F.where(F.greater_equal(x, _c(x, 0)), x, F.multiply(_c(x, negative_slope), x))


def hard_tanh(x):
    x = _x("hard_tanh", x)
    return F.clip(x, _c(x, -1), _c(x, 1))


def hard_sigmoid(x):
    return F.true_divide(relu6(F.add(_x("hard_sigmoid", x), 3.0)), 6.0)


def hard_silu(x):
    x = _x("hard_silu", x)
    return F.multiply(x, hard_sigmoid(x))


hard_swish = hard_silu


def tanh(x):
    return F.tanh(x)


def mish(x):
    return F.multiply(x, F.tanh(softplus(x)))


def gelu(x, approximate=True):
    """Gaussian error linear unit; the tanh approximation by default (as JAX)."""
    (x,) = U.promote_dtypes_inexact(_x("gelu", x))
    if approximate:
        c = math.sqrt(2 / math.pi)
        inner = F.multiply(_c(x, c), F.add(x, F.multiply(_c(x, 0.044715), F.power(x, 3))))
        return F.multiply(x, F.multiply(_c(x, 0.5), F.add(_c(x, 1), F.tanh(inner))))
    return F.multiply(F.multiply(_c(x, 0.5), x),
                      F.add(_c(x, 1), lax.erf(F.multiply(x, _c(x, 1 / math.sqrt(2))))))


def glu(x, axis=-1):
    x = _x("glu", x)
    a, b = xnp.split(x, 2, axis)
    return F.multiply(a, sigmoid(b))


def _stable_shift(x, axis, where):
    m = xnp.max(x, axis=axis, keepdims=True, where=where,
                initial=-np.inf if where is not None else None)
    m = F.where(F.isfinite(m), m, _c(m, 0))
    return F.subtract(x, lax.stop_gradient(m))


def log_softmax(x, axis=-1, where=None):
    (x,) = U.promote_dtypes_inexact(_x("log_softmax", x))
    shifted = _stable_shift(x, axis, where)
    e = F.exp(shifted)
    s = xnp.sum(e, axis=axis, keepdims=True, where=where)
    out = F.subtract(shifted, F.log(s))
    if where is not None:
        out = F.where(where, out, _c(out, -np.inf))
    return out


def softmax(x, axis=-1, where=None):
    """JAX's (non-custom-JVP, default) softmax: shift by the stop-gradient max (with
    ``initial=-inf``), exp, divide by the keepdims sum; masked entries are 0."""
    (x,) = U.promote_dtypes_inexact(_x("softmax", x))
    x_max = xnp.max(x, axis=axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else F.where(where, x, _c(x, -np.inf))
    e = F.exp(F.subtract(x_safe, lax.stop_gradient(x_max)))
    out = F.true_divide(e, xnp.sum(e, axis=axis, where=where, keepdims=True))
    if where is not None:
        out = F.where(where, out, _c(out, 0))
    return out


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
    (x,) = U.promote_dtypes_inexact(_x("standardize", x))
    if mean is None:
        mean = xnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        variance = F.subtract(xnp.mean(F.square(x), axis, keepdims=True, where=where),
                              F.square(mean))
    return F.multiply(F.subtract(x, mean), lax.rsqrt(F.add(variance, _c(x, epsilon))))


def one_hot(x, num_classes, *, dtype=None, axis=-1):
    """``x[..., None] == arange(num_classes)`` as ``dtype`` (default float)."""
    x = _x("one_hot", x)
    num_classes = U.static_int(num_classes, "one_hot num_classes (must be static)")
    dt = U.canonical_dtype(dtype) or dtypes.default_float_dtype()
    out_nd = x.ndim + 1
    ax = U.canonicalize_axis(axis, out_nd)
    xe = xnp.expand_dims(x, ax)
    shape = tuple(num_classes if i == ax else 1 for i in range(out_nd))
    classes = lax.broadcasted_iota(x.dtype if x.dtype.kind in "iu" else dtypes.default_int_dtype(),
                                     shape, ax)
    return U.to_array(F.equal(xe, classes), dt, False)

# the rest of jax.nn
from xform.nn._extra import (dot_product_attention, get_scaled_dot_general_config,  # noqa: E402
                             log1mexp, logmeanexp, scaled_dot_general, scaled_matmul,
                             sparse_sigmoid, squareplus)
from xform.nn import initializers  # noqa: E402,F401
__all__ += ["dot_product_attention", "get_scaled_dot_general_config", "log1mexp", "logmeanexp",
            "scaled_dot_general", "scaled_matmul", "sparse_sigmoid", "squareplus",
            "initializers"]


# ---- jax.nn functions that JAX wraps in jit: nested jit equations when staged
def _install_jitted():
    _jitted.install(sys.modules[__name__], _jitted.NN_TABLE, prefix="xform.nn")
    _jitted.install(sys.modules[__name__], _jitted.NN_INLINE_TABLE, prefix="xform.nn",
                    inline=True)


_install_jitted()

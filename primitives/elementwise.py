"""Elementwise primitives: arithmetic, transcendental, comparison, logical.

Operands of an n-ary primitive have equal shapes and dtypes (``xform.numpy``
broadcasts and promotes before binding).  Each block registers everything
about one primitive.
"""
from __future__ import annotations

import numpy as np

from interpreters import ad
from interpreters.core import Primitive
from primitives._rules import (defbroadcasting, defjvp, defvectorized, elementwise_aval)


def _unary(name):
    p = Primitive(name)
    p.def_abstract_eval(lambda x, **_: elementwise_aval(name, x))
    return p


def _binary(name):
    p = Primitive(name)
    p.def_abstract_eval(lambda x, y, **_: elementwise_aval(name, x, y))
    return p


# --- add ------------------------------------------------------------------------------
add_p = _binary("add")
add_p.def_impl(np.add)
defjvp(add_p, lambda t, x, y: t, lambda t, x, y: t)
ad.transpose_rules[add_p] = lambda ct, x, y: [ct, ct]
defbroadcasting(add_p)

# --- add_any: the sum of two tangents (never differentiated, only transposed) ---------
add_any_p = _binary("add_any")
add_any_p.def_impl(np.add)
defjvp(add_any_p, lambda t, x, y: t, lambda t, x, y: t)
ad.transpose_rules[add_any_p] = lambda ct, x, y: [ct, ct]
defbroadcasting(add_any_p)

# --- mul ------------------------------------------------------------------------------
mul_p = _binary("mul")
mul_p.def_impl(np.multiply)
defjvp(mul_p, lambda t, x, y: mul_p.bind(t, y), lambda t, x, y: mul_p.bind(x, t))


def _mul_transpose(ct, x, y):
    if ad.is_undefined_primal(x):
        return [mul_p.bind(ct, y), None]
    return [None, mul_p.bind(x, ct)]


ad.transpose_rules[mul_p] = _mul_transpose
defbroadcasting(mul_p)

# --- sin ------------------------------------------------------------------------------
sin_p = _unary("sin")
sin_p.def_impl(np.sin)
defjvp(sin_p, lambda t, x: mul_p.bind(t, cos_p.bind(x)))
defvectorized(sin_p)

# --- cos ------------------------------------------------------------------------------
cos_p = _unary("cos")
cos_p.def_impl(np.cos)
defjvp(cos_p, lambda t, x: mul_p.bind(t, neg_p.bind(sin_p.bind(x))))
defvectorized(cos_p)

# --- neg ------------------------------------------------------------------------------
neg_p = _unary("neg")
neg_p.def_impl(np.negative)
defjvp(neg_p, lambda t, x: neg_p.bind(t))
ad.transpose_rules[neg_p] = lambda ct, x: [neg_p.bind(ct)]
defvectorized(neg_p)

"""``xform.custom_derivatives``: JAX's module of the same name."""
from xform._custom_derivatives import (CustomVJPPrimal, SymbolicZero, closure_convert,  # noqa
                                       custom_gradient, custom_jvp, custom_vjp,
                                       custom_vjp_primal_tree_values)
from xform import numpy as jnp
from xform._src.interpreters import ad, core
from xform.tree_util import tree_map

from xform._src.primitives.custom import custom_jvp_call_p, custom_vjp_call_p  # noqa: F401

__all__ = ["CustomVJPPrimal", "SymbolicZero", "closure_convert", "custom_gradient", "custom_jvp", "custom_vjp",
           "custom_jvp_call_p", "custom_vjp_call_p", "custom_vjp_primal_tree_values",
           "zero_from_primal"]


def zero_from_primal(val, symbolic_zeros=False):
    """Zero tangents shaped like ``val`` (float0 for integer leaves)."""
    import numpy as np


    def z(x):
        aval = core.get_aval(x)
        t = ad.tangent_aval(aval)
        if symbolic_zeros:
            return SymbolicZero(t)
        if t.dtype == ad.float0:
            return np.zeros(t.shape, ad.float0)
        return jnp.zeros(t.shape, t.dtype)
    return tree_map(z, val)

"""``jax._src.ad_util`` under the alias: the primitives and values of JAX's autodiff
utilities that libraries import from here, as xform's (lineax registers a transpose
rule on ``stop_gradient_p``; registering it through ``jax.interpreters.ad`` reaches
xform's rule tables).  ``add_jaxvals_p`` is xform's tangent sum, ``Zero`` its symbolic
zero tangent, ``SymbolicZero`` the one custom rules see."""
from __future__ import annotations

from xform.custom_derivatives import SymbolicZero  # noqa: F401
from xform.extend.core.primitives import add_jaxvals_p, stop_gradient_p  # noqa: F401
from xform.interpreters.ad import Zero, add_jaxvals, zeros_like_aval  # noqa: F401

__all__ = ["SymbolicZero", "Zero", "add_jaxvals", "add_jaxvals_p", "stop_gradient_p",
           "zeros_like_aval"]

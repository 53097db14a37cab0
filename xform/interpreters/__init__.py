"""``xform.interpreters``: JAX's ``jax.interpreters`` rule tables on xform's engine.

``ad`` (JVP and transpose rules), ``batching`` (vmap rules), ``mlir`` (lowering rules
for ``jit``) and ``partial_eval`` (staging a function into a program).  Assigning into
their tables (``ad.primitive_jvps[p] = rule``, ``batching.primitive_batchers[p] = rule``,
``mlir.register_lowering(p, mlir.lower_fun(f))``) registers the rule in xform's own rule
tables, which xform's interpreters read.  See docs/extending.md.
"""
from xform.interpreters import ad, batching, mlir, partial_eval, pxla, xla  # noqa: F401

__all__ = ["ad", "batching", "mlir", "partial_eval", "pxla", "xla"]

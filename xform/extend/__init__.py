"""``xform.extend``: JAX's extension API (``jax.extend``) on xform's engine.

* ``xform.extend.core``: ``Primitive``, the program classes (``Jaxpr``, ``ClosedJaxpr``,
  ``Var``, ``Literal``, ``JaxprEqn``), ``jaxpr_as_fun`` and the trace helpers;
  ``xform.extend.core.primitives``: the primitive objects xform binds, JAX's names.
* ``xform.extend.linear_util``: ``wrap_init`` and the function transformations that
  ``xform.api_util`` and libraries compose.
* ``xform.extend.random``: ``define_prng_impl`` (user-defined PRNG implementations),
  the built-in implementations and ``threefry_2x32``.
* ``xform.extend.source_info_util``: registering library files whose frames are not
  the user's location.

Rules for a new primitive are registered through ``xform.interpreters.ad``,
``batching`` and ``mlir``.  docs/extending.md walks through writing one.
"""
from xform.extend import core, linear_util, random, source_info_util  # noqa: F401

__all__ = ["core", "linear_util", "random", "source_info_util"]

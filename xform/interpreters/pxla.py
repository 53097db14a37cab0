"""``xform.interpreters.pxla``: the part of JAX's ``jax.interpreters.pxla`` that
libraries import at module level.

In JAX, ``pxla`` holds the machinery of sharded execution over IFRT
(``global_avals_to_results_handler`` wraps raw IFRT results of a compiled IFRT program
into ``jax.Array`` values).  xform executes through its own ``jit``/``shard_map`` on a
PjRt runtime and runs no raw IFRT programs, so these names exist (importing the module
works) and raise ``NotImplementedError`` naming what xform lacks when called.
"""
from __future__ import annotations

__all__ = ["global_avals_to_results_handler"]


def global_avals_to_results_handler(global_out_avals, shardings, committed):
    """Not available: xform runs no raw IFRT programs whose results need handlers."""
    raise NotImplementedError(
        "jax.interpreters.pxla.global_avals_to_results_handler: xform has no IFRT "
        "program execution (no raw IFRT results to wrap into arrays); compute with "
        "xform.jit / shard_map, whose results are already arrays.")


def __getattr__(name):
    raise AttributeError(
        f"module 'jax.interpreters.pxla' (aliased to xform) has no attribute {name!r}: "
        "xform serves only global_avals_to_results_handler (which raises when used); "
        "its sharded execution goes through xform.jit and xform.shard_map")

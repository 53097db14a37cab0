"""``xform.tree_util``: pytrees with JAX's semantics (``jax.tree_util``).

The implementation lives in ``interpreters/tree_util.py`` (plain Python, no engine
imports) so that the engine and the primitives' rules, which sit below ``xform``,
can flatten pytrees too; this module is its public face.
"""
from interpreters.tree_util import *  # noqa: F401,F403
from interpreters.tree_util import __all__  # noqa: F401

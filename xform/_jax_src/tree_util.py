"""``jax._src.tree_util`` under the alias: ``xform.tree_util`` plus its node registry
(``_registry``: the types registered as pytree nodes)."""
from __future__ import annotations

from xform._src.interpreters.tree_util import _registry  # noqa: F401
from xform.tree_util import *  # noqa: F401,F403
from xform.tree_util import flatten_one_level  # noqa: F401

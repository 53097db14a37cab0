"""``jax._src.state`` under the alias: array references.  xform has none (see
docs/compatibility.md), so only the types exist, and no xform value is an instance."""
from xform._jax_src.state import types  # noqa: F401

"""``jax._src.state.types`` under the alias.  xform has no array references (see
``xform.ref``): ``AbstractRef`` exists for type checks, and no xform value is one."""
from xform.ref import AbstractRef  # noqa: F401

"""``jax._src.core`` under the alias: ``xform.core``'s names (and
``xform.extend.core``'s), plus ``trace_state_clean`` and ``physical_aval``."""
from __future__ import annotations

from xform._src.interpreters import core as _core
from xform.core import *  # noqa: F401,F403
from xform.extend.core import *  # noqa: F401,F403
from xform._src.primitives import prng


def trace_state_clean() -> bool:
    """True when no transformation is running (the eager interpreter is current)."""
    return _core.current_trace() is _core.EVAL_TRACE


def physical_aval(aval):
    """The abstract value of an extended dtype's storage (typed PRNG keys: their
    ``uint32`` words); other avals as they are."""
    dt = aval.dtype
    if isinstance(dt, _core.ExtendedDType):
        return prng.physical_aval(aval)
    return aval


def get_aval(x):
    return _core.get_aval(x)



"""``xform.experimental``: JAX's experimental names that xform provides
(``io_callback``; ``enable_x64``/``disable_x64`` contexts; ``cur_qdd``, the layout of
a mutable high-level value: see ``xform.experimental.hijax``)."""
import contextlib as _contextlib

from xform._callbacks import io_callback  # noqa: F401
from xform._src.interpreters.config import config

__all__ = ["io_callback", "enable_x64", "disable_x64", "cur_qdd"]


@_contextlib.contextmanager
def enable_x64(new_val: bool = True):
    """Inside this context 64-bit dtypes are enabled (``jax_enable_x64``)."""
    with config.override("jax_enable_x64", bool(new_val)):
        yield


@_contextlib.contextmanager
def disable_x64():
    """Inside this context 64-bit dtypes are disabled."""
    with enable_x64(False):
        yield


def cur_qdd(x):
    """JAX's ``jax.experimental.cur_qdd``: the quasi-dynamic data (current layout) of a
    mutable high-level value (``xform.experimental.hijax``)."""
    from xform.experimental import hijax  # deferred: keeps `import xform` light
    return hijax.cur_qdd(x)
from xform.experimental import compilation_cache  # noqa: E402,F401  (JAX names it here)
from xform.experimental import multihost_utils  # noqa: E402,F401  (in dir(jax.experimental) once imported)

"""Stand-in for ``jax._src.config``: each option is a state object with ``.value`` (the
library's current setting) that, called with a value, is a context manager setting it
(through the library's public context manager where it has one, else
``jax.config.update`` and restore)."""
from __future__ import annotations

import contextlib

from . import Internal

_MISSING = object()


def read(option: str):
    import jax
    return getattr(jax.config, option)


@contextlib.contextmanager
def override(option: str, value):
    import jax
    short = option[len("jax_"):] if option.startswith("jax_") else option
    ctx = getattr(jax, short, None)
    if short in ("enable_x64", "numpy_dtype_promotion", "numpy_rank_promotion",
                 "default_matmul_precision", "enable_checks", "debug_nans", "debug_infs",
                 "check_tracer_leaks") and callable(ctx):
        with ctx(value):
            yield
        return
    old = read(option)
    jax.config.update(option, value)
    try:
        yield
    finally:
        jax.config.update(option, old)


class State:
    def __init__(self, option):
        self.option = option

    @property
    def value(self):
        return read(self.option)

    def __call__(self, value=True):
        return override(self.option, value)

    def __repr__(self):
        return f"<config state {self.option}>"


def parse_flags_with_absl():
    """JAX reads its flags from absl here; the layer's options come from the environment
    the library reads itself."""


ExplicitX64Mode = Internal("jax._src.config.ExplicitX64Mode")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return State(name if name.startswith("jax_") else "jax_" + name)

"""What ``jax._src`` means to code running under ``xform.compat.alias_jax()``.

``jax._src`` is JAX's private implementation.  Libraries built on JAX reach into a few
of its modules; under the alias each such module is either served by an xform module
with the same names and meaning, or refused with an ImportError naming the internal, so
that no object of real JAX's tracing machinery ever meets an xform value.  xform's own
runtime layer keeps using the real ``jax._src`` (it never goes through this package).

Served (the names libraries use): ``traceback_util`` (equinox, flax, jaxtyping),
``dtypes`` (``TypePromotionError``, ``extended``, ...), ``core`` (``jax.core``'s names
plus ``trace_state_clean``, ``physical_aval``), ``tree_util`` (``xform.tree_util`` plus
the node registry), ``dispatch`` (``wait_for_tokens``), ``distributed``
(``global_state``: the runtime's client and process id), ``compiler``
(``backend_compile_and_load``, which every xform compilation calls), ``state.types``
(``AbstractRef``: xform has no array references, so no value is one), ``checkify``
(``xform.experimental.checkify`` and its error classes), ``flatten_util``
(``ravel_pytree``: blackjax), ``ad_util`` (``stop_gradient_p``, ``Zero``, ...: lineax).
"""
from __future__ import annotations

import importlib

SERVED = ("ad_util", "checkify", "compiler", "core", "dispatch", "distributed", "dtypes",
          "flatten_util", "state", "traceback_util", "tree_util")


def refused(fullname: str) -> ImportError:
    served = ", ".join(f"jax._src.{n}" for n in SERVED)
    return ModuleNotFoundError(
        f"No module named {fullname!r}: `import jax` is aliased to xform "
        f"(xform.compat.alias_jax) and {fullname} is an internal module of JAX that "
        f"xform does not provide (it serves {served}). Use JAX's public API instead.",
        name=fullname)


def __getattr__(name):
    if name in SERVED:
        return importlib.import_module(f"{__name__}.{name}")
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(str(refused(f"jax._src.{name}")))

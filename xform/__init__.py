"""xform: composable transformations of NumPy-style programs (JAX's API).

``grad``, ``jvp``, ``vjp``, ``vmap`` and ``jit`` are interpreters over tracers;
staged programs are lowered to StableHLO and compiled by XLA.  Importing xform
does not import jax or jaxlib: the XLA layer loads on first use.
"""
import importlib as _importlib

from xform import _legacy_names
_legacy_names.install()
import xform._src.primitives as _primitives  # noqa: F401  (registers every primitive's rules)
from xform._src.interpreters.config import config
from xform._array_type import Array
from xform._src.interpreters.errors import (ConcretizationTypeError, TracerArrayConversionError,
                                 TracerBoolConversionError, TracerIntegerConversionError,
                                 UnexpectedTracerError)

__version__ = "0.1.0"

# Public modules; each defines ``__all__`` with what it contributes to the top level.
_API_MODULES = ("xform._operators", "xform._ad_api", "xform._custom_derivatives",
                "xform._checkpoint", "xform._vmap", "xform._jit", "xform._devices",
                "xform._api_extras", "xform._callbacks",
                "xform._sharding_api", "xform._pmap")

for _m in _API_MODULES:
    try:
        _mod = _importlib.import_module(_m)
    except ModuleNotFoundError as _e:  # a module not written yet
        if _e.name != _m:
            raise
        continue
    for _name in getattr(_mod, "__all__", ()):
        globals()[_name] = getattr(_mod, _name)

from xform import lax, numpy  # noqa: E402,F401

for _sub in ("tree_util", "nn", "scipy", "random", "debug", "ad_checkpoint", "testing", "profile", "dtypes",
             "tree", "flatten_util", "test_util", "custom_batching", "experimental", "errors",
             "typing", "stages", "monitoring", "profiler", "version", "example_libraries",
             "mixed_precision", "compat", "custom_derivatives", "ops", "sharding", "distributed"):
    try:
        globals()[_sub] = _importlib.import_module(f"xform.{_sub}")
    except ModuleNotFoundError as _e:
        if _e.name != f"xform.{_sub}":
            raise
# xform.export, xform.checkpointing, xform.dlpack (pure Python at import; jaxlib on first use)
for _sub in ("export", "checkpointing", "dlpack"):
    try:
        globals()[_sub] = _importlib.import_module(f"xform.{_sub}")
    except ModuleNotFoundError as _e:
        if _e.name != f"xform.{_sub}":
            raise
del _m, _sub, _importlib

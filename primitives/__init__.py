"""The primitive catalogue.  Importing this package registers every rule."""
import importlib as _importlib

from xform._src.primitives import _rules  # noqa: F401  (installs the AD/batching hooks)

_FAMILIES = ("elementwise", "structural", "reductions", "linalg", "sorting", "indexing",
             "collectives", "control_flow", "misc", "custom", "remat", "jit", "random", "prng",
             "convolution", "windowed", "fft")

for _fam in _FAMILIES:
    try:
        _importlib.import_module(f"xform._src.primitives.{_fam}")
    except ModuleNotFoundError as _e:  # a family not written yet
        if _e.name != f"xform._src.primitives.{_fam}":
            raise
_importlib.import_module("xform._src.primitives.linalg_decomp")  # h-linalg13: decompositions (lax.linalg)
_importlib.import_module("xform._src.primitives.spmd")  # h-shard14: sharding constraints, shard_map
_importlib.import_module("xform._src.primitives.linear_solve")  # h-linalg13: custom_linear_solve
del _fam, _importlib
from xform._src.primitives import special  # noqa: E402,F401  (special functions: igamma, zeta, ...)

"""``xform.lax``: the primitive-level API (JAX's names and signatures)."""
import importlib as _importlib

_FAMILIES = ("elementwise", "structural", "reductions", "linalg", "sorting", "indexing",
             "collectives", "control_flow", "misc", "random",
             "convolution", "windowed", "fft")

for _fam in _FAMILIES:
    try:
        _mod = _importlib.import_module(f"xform._src.primitives.{_fam}")
    except ModuleNotFoundError as _e:  # a family not written yet
        if _e.name != f"xform._src.primitives.{_fam}":
            raise
        continue
    for _name in getattr(_mod, "__all__", ()):
        globals()[_name] = getattr(_mod, _name)
del _fam, _importlib

from xform._src.primitives.special import *  # noqa: E402,F401,F403  (polygamma, igamma, betainc, ...)
from xform.lax import linalg  # noqa: E402,F401  (h-linalg13: xform.lax.linalg)
from xform._sharding_api import with_sharding_constraint  # noqa: E402,F401  (h-shard14)
from xform._src.primitives.spmd import ppermute, pshuffle, all_to_all, pbroadcast, pswapaxes  # noqa: E402,F401  (h-shard14)
from xform.lax._solves import custom_linear_solve, custom_root  # noqa: E402,F401  (h-linalg13)

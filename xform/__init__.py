"""xform: composable transformations of NumPy-style programs (JAX's API).

``grad``, ``jvp``, ``vjp``, ``vmap`` and ``jit`` are interpreters over tracers;
staged programs are lowered to StableHLO and compiled by XLA.  Importing xform
does not import jax or jaxlib: the XLA layer loads on first use.
"""
from xform import _legacy_names
_legacy_names.install()
import xform._src.primitives as _primitives  # noqa: F401  (registers every primitive's rules)
from xform._src.interpreters.config import config
from xform._array_type import Array
from xform import _placement  # noqa: F401  (answers Array.devices(), .sharding, __dlpack__)
from xform._src.interpreters.errors import (ConcretizationTypeError, TracerArrayConversionError,
                                 TracerBoolConversionError, TracerIntegerConversionError,
                                 UnexpectedTracerError)

__version__ = "0.1.0"
__version_info__ = tuple(int(p) for p in __version__.split("."))

# Public modules; each defines ``__all__`` with what it contributes to the top level.  The
# order matters: later modules add methods to ``Array`` that earlier ones define.
from xform import _operators, _ad_api, _custom_derivatives, _remat, _vmap  # noqa: E402
from xform import _jit, _devices, _api_extras, _callbacks  # noqa: E402
from xform.sharding import _api as _sharding_api, _pmap  # noqa: E402

for _mod in (_operators, _ad_api, _custom_derivatives, _remat, _vmap, _jit, _devices,
             _api_extras, _callbacks, _sharding_api, _pmap):
    for _name in _mod.__all__:
        globals()[_name] = getattr(_mod, _name)
del _mod, _name

# Public submodules.  ``export``, ``checkpointing`` and ``dlpack`` are pure Python at
# import; jaxlib loads on first use.
from xform import lax, numpy  # noqa: E402,F401
from xform.numpy._indexing import ds  # noqa: E402,F401  (jax.ds: dynamic-start slices)
from xform import tree_util, nn, scipy, random, debug, ad_checkpoint, testing  # noqa: E402,F401
from xform import profile, dtypes, tree, flatten_util, test_util, custom_batching  # noqa: E402,F401,E501
from xform import experimental, errors, typing, stages, monitoring, profiler, ffi  # noqa: E402,F401
from xform import version, example_libraries, mixed_precision, compat  # noqa: E402,F401
from xform import custom_derivatives, ops, sharding, distributed, image  # noqa: E402,F401
from xform import export, checkpointing, dlpack, lib  # noqa: E402,F401
from xform import core, extend, interpreters, api_util  # noqa: E402,F401  (JAX's extension API)
from xform import ref  # noqa: E402,F401  (mutable array references)
from xform.ref import Ref, new_ref, empty_ref, freeze, free_ref  # noqa: E402,F401

"""IR -> StableHLO -> XLA executables (jaxlib's PJRT runtime), devices and buffers.

The only layer that touches jax/jaxlib, and only on first use: ``import
xform`` import neither.  Attribute access loads the
submodule that defines a name:

* ``lowering.mlir``    (pure Python): ``lower_jaxpr``, ``lower_subjaxpr``,
  ``lowering_rules``, ``register``, type helpers.
* ``lowering.runtime`` (imports jaxlib; JAX's runtime layer only when needed -- see
  its docstring): ``compile_jaxpr``, ``Compiled``,
  ``devices``, ``default_backend``, ``device_put``, ``get_device``,
  ``device_impl_hook`` (installed into ``interpreters.core`` on import).
"""
import importlib as _importlib

_MLIR_NAMES = frozenset({"lower_jaxpr", "lower_module", "LoweredModule", "lower_subjaxpr", "call_subjaxpr", "lowering_rules",
                         "register", "sync_rules", "lookup_rule", "load_rule_modules",
                         "LoweringContext", "ModuleContext", "tensor_type", "element_type",
                         "dense_literal", "location"})
_RUNTIME_NAMES = frozenset({"compile_jaxpr", "compile_text", "Compiled", "devices",
                            "local_devices", "default_backend", "device_put", "get_device",
                            "device_impl_hook", "get_backend", "clear_caches", "cache_info",
                            "block_buffers", "compiler_options"})

__all__ = sorted(_MLIR_NAMES | _RUNTIME_NAMES)


def __getattr__(name):
    if name in _MLIR_NAMES:
        mod = _importlib.import_module("xform._src.lowering.mlir")
        if name == "lowering_rules":
            mod.sync_rules()
    elif name in _RUNTIME_NAMES:
        mod = _importlib.import_module("xform._src.lowering.runtime")
    else:
        raise AttributeError(f"module 'lowering' has no attribute {name!r}")
    value = getattr(mod, name)
    if name != "lowering_rules":   # cache: later lookups skip this function (hot jit path)
        globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | _MLIR_NAMES | _RUNTIME_NAMES)

"""The ``jax._src`` namespace the test files see (see the package docstring)."""
from __future__ import annotations

import importlib
import sys
import types

from . import Internal, internal_module


def _jax():
    import jax
    return jax


def _lazy_module(name, **lazy):
    """A module whose attributes in ``lazy`` are computed on first access (from the
    library under test); other attributes are Internal placeholders."""
    mod = types.ModuleType(name)

    def __getattr__(attr):
        if attr in lazy:
            value = lazy[attr]()
            setattr(mod, attr, value)
            return value
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Internal(f"{name}.{attr}")

    mod.__getattr__ = __getattr__
    return mod


def _primitive_type():
    """The public ``jax.extend.core.Primitive`` of the library under test."""
    ext = getattr(_jax(), "extend", None)
    if ext is None:
        ext = importlib.import_module("jax.extend")
        importlib.import_module("jax.extend.core")
    return ext.core.Primitive


def _shaped_array_type():
    jax = _jax()
    return type(jax.typeof(jax.numpy.zeros((), "float32")))


def _prng_impl_type():
    """``PRNGImpl(key_shape, seed, split, random_bits, fold_in, name=, tag=)`` of the
    library under test, through the public ``jax.extend.random.define_prng_impl`` (what it
    returns is what ``impl=`` accepts)."""
    importlib.import_module("jax.extend.random")
    define = _jax().extend.random.define_prng_impl

    def PRNGImpl(key_shape, seed, split, random_bits, fold_in, name="<unnamed>", tag="?"):
        return define(key_shape=key_shape, seed=seed, split=split, random_bits=random_bits,
                      fold_in=fold_in, name=name, tag=tag)
    return PRNGImpl


_HIJAX_NAMES = ("HiPrimitive", "HiType", "MutableHiType", "Box", "BoxTy", "new_box",
                "box_set", "box_get", "box_effect", "register_hitype", "ShapedArray", "Ty",
                "MappingSpec", "HiPspec", "VJPHiPrimitive", "AvalQDD", "AvalMutableQDD",
                "aval_method", "aval_property", "custom_vjp3", "Log")


def _hijax_module():
    """The library's high-level types and primitives: JAX's ``jax._src.hijax`` (loaded by
    the layer, not by the test file) or xform's ``xform.experimental.hijax``."""
    from . import library_name
    if library_name() == "xform":
        return importlib.import_module("jax.experimental.hijax")
    return importlib.import_module("jax._src.hijax")


def _hijax_attr(name):
    def get():
        mod = _hijax_module()
        if not hasattr(mod, name):
            return Internal(f"jax._src.hijax.{name}")
        return getattr(mod, name)
    return get


def _aval_mapping_handlers():
    from . import library_name
    if library_name() == "xform":
        return {}
    return importlib.import_module("jax._src.core").aval_mapping_handlers


def _build():
    from . import config, dtypes, lax_test_util, test_util, util
    root = types.ModuleType("jax._src")
    root.test_util = test_util
    root.config = config
    root.dtypes = dtypes
    root.util = util
    root.lax_reference = importlib.import_module("jax._src.lax_reference")
    root.core = _lazy_module(
        "jax._src.core", ShapedArray=_shaped_array_type,
        ConcretizationTypeError=lambda: _jax().errors.ConcretizationTypeError,
        typeof=lambda: _jax().typeof,
        Primitive=_primitive_type,
        # array references: JAX's public names are these very functions
        new_ref=lambda: _jax().new_ref, freeze=lambda: _jax().freeze,
        Ref=lambda: _jax().Ref,
        cur_qdd=lambda: _jax().experimental.cur_qdd,
        # vmap rules of high-level types (JAX's registry; xform has no vmap of them)
        aval_mapping_handlers=_aval_mapping_handlers,
        AbstractValue=lambda: _jax().experimental.hijax.AbstractValue)
    root.hijax = _lazy_module("jax._src.hijax",
                              **{n: _hijax_attr(n) for n in _HIJAX_NAMES})
    root.array = _lazy_module("jax._src.array",
                              ArrayImpl=lambda: type(_jax().numpy.zeros(())))
    root.errors = _lazy_module(
        "jax._src.errors",
        UnexpectedTracerError=lambda: _jax().errors.UnexpectedTracerError,
        ConcretizationTypeError=lambda: _jax().errors.ConcretizationTypeError,
        TracerIntegerConversionError=lambda: _jax().errors.TracerIntegerConversionError,
        TracerBoolConversionError=lambda: _jax().errors.TracerBoolConversionError)
    root.tree_util = _lazy_module(
        "jax._src.tree_util", tree_map=lambda: _jax().tree_util.tree_map,
        tree_flatten=lambda: _jax().tree_util.tree_flatten,
        tree_unflatten=lambda: _jax().tree_util.tree_unflatten,
        tree_leaves=lambda: _jax().tree_util.tree_leaves)
    root.sharding_impls = _lazy_module(
        "jax._src.sharding_impls",
        make_single_device_sharding=lambda: _jax().sharding.SingleDeviceSharding)
    itu = types.ModuleType("jax._src.internal_test_util")
    itu.lax_test_util = lax_test_util
    root.internal_test_util = itu
    lax_pkg = internal_module("jax._src.lax")
    for sub in ("lax", "utils", "windowed_reductions", "control_flow", "slicing"):
        setattr(lax_pkg, sub, internal_module(f"jax._src.lax.{sub}"))
    root.lax = lax_pkg
    np_pkg = internal_module("jax._src.numpy")
    for sub in ("hijax", "indexing", "util", "lax_numpy"):
        setattr(np_pkg, sub, internal_module(f"jax._src.numpy.{sub}"))
    root.numpy = np_pkg
    root.indexing = _lazy_module(
        "jax._src.indexing", Slice=lambda: type(_jax().ds(0, 1)), ds=lambda: _jax().ds,
        dslice=lambda: _jax().ds)
    rnd = internal_module("jax._src.random")
    rnd.prng = _lazy_module(
        "jax._src.random.prng", PRNGImpl=_prng_impl_type,
        random_seed=lambda: (lambda seeds, impl: _jax().random.key(seeds, impl=impl)))
    root.random = rnd
    for sub in ("literals", "api", "dispatch", "deprecations", "xla_bridge"):
        setattr(root, sub, internal_module(f"jax._src.{sub}"))
    interp = internal_module("jax._src.interpreters")
    for sub in ("mlir", "batching", "ad", "partial_eval", "pxla"):
        setattr(interp, sub, _public_module(f"jax.interpreters.{sub}",
                                            f"jax._src.interpreters.{sub}"))
    root.interpreters = interp
    cf = lax_pkg.control_flow
    cf.common = internal_module(
        "jax._src.lax.control_flow.common",
        _dedup_consts=_CacheOf("_dedup_consts"), _pad_constvars=_CacheOf("_pad_constvars"))
    return root


def _public_module(public, internal):
    """``jax._src.interpreters.X`` as the library's public ``jax.interpreters.X`` (JAX
    re-exports its extension names there: ``register_lowering``, ``primitive_batchers``,
    ``hlo``, ...); names the public module lacks are Internal placeholders."""
    mod = types.ModuleType(internal)

    def __getattr__(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        pub = importlib.import_module(public)
        if hasattr(pub, attr):
            return getattr(pub, attr)
        return Internal(f"{internal}.{attr}")

    mod.__getattr__ = __getattr__
    return mod


class _CacheOf:
    """``jax._src.lax.control_flow.common.<cache>``: the tests clear JAX's internal
    caches of a control-flow helper in ``setUp`` (test isolation). On JAX this clears
    the real cache; xform has no such cache, so there is nothing to clear."""

    def __init__(self, name):
        self._name = name

    def cache_clear(self):
        from . import library_name
        if library_name() == "jax":
            common = importlib.import_module("jax._src.lax.control_flow.common")
            getattr(common, self._name).cache_clear()


_ROOT = None
_INTERPRETERS = None


def src_root():
    global _ROOT
    if _ROOT is None:
        _ROOT = _build()
    return _ROOT


def interpreters_root():
    """``jax.interpreters`` for a library that has none of its own (xform)."""
    global _INTERPRETERS
    if _INTERPRETERS is None:
        _INTERPRETERS = internal_module("jax.interpreters")
        for sub in ("batching", "mlir", "pxla", "ad", "partial_eval", "xla"):
            setattr(_INTERPRETERS, sub, internal_module(f"jax.interpreters.{sub}"))
    return _INTERPRETERS


def resolve(name):
    """The layer's module for ``jax._src.X.Y`` / ``jax.interpreters.X``."""
    parts = name.split(".")
    if parts[:2] == ["jax", "_src"]:
        mod, rest, prefix = src_root(), parts[2:], "jax._src"
    else:
        mod, rest, prefix = interpreters_root(), parts[2:], "jax.interpreters"
    for p in rest:
        prefix = f"{prefix}.{p}"
        nxt = getattr(mod, p, None)
        if not isinstance(nxt, types.ModuleType):
            nxt = internal_module(prefix)
            setattr(mod, p, nxt)
        mod = nxt
    return mod


class _Top(types.ModuleType):
    """What ``import jax._src.x as y`` sees as ``jax``: the real top-level module, with
    ``_src`` (and ``interpreters``) from the layer."""

    def __getattr__(self, attr):
        return getattr(sys.modules["jax"], attr)


def top():
    t = _Top("jax")
    t._src = src_root()
    return t

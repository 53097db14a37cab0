"""Dtypes, canonicalization and JAX-style type promotion (JEP 9407).

Promotion works on a small lattice whose nodes are short names: the strong
dtypes ('b1', 'i8', ..., 'c128') plus the three weak Python kinds 'i*', 'f*'
and 'c*'.  ``a <= b`` means "a promotes to b"; the result of promoting a set of
nodes is their least upper bound.  With x64 off the single edge that would make
a 64-bit type out of 32-bit inputs (u32 -> i64) becomes u32 -> i32.

All caches are keyed by, or cleared on, the ``jax_enable_x64`` and
``jax_numpy_dtype_promotion`` options.
"""
from __future__ import annotations

import functools
import sys

import numpy as np

from xform._src.interpreters.config import config
import importlib.util

__all__ = [
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float16", "bfloat16", "float32", "float64", "complex64",
    "complex128", "float8_e4m3fn", "float8_e5m2", "float0",
    "TypePromotionError", "python_scalar_dtypes", "canonicalize_dtype",
    "default_float_dtype", "default_int_dtype", "default_uint_dtype",
    "default_complex_dtype", "is_weakly_typed", "dtype_of", "promote_types",
    "lattice_result_type", "result_type", "issubdtype", "is_float", "is_complex", "is_integer",
    "is_unsigned", "is_bool", "is_inexact", "finfo", "iinfo",
    "to_inexact_dtype", "to_complex_dtype", "short_name",
]

# ----------------------------------------------------------------- constants
bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in ("uint8", "uint16", "uint32", "uint64"))
float16, float32, float64 = (np.dtype(t) for t in ("float16", "float32", "float64"))
complex64, complex128 = np.dtype("complex64"), np.dtype("complex128")
# Tangent dtype of integer / boolean primals: a zero-size trivial vector space.
float0 = np.dtype([("float0", np.void, 0)])

# The narrow dtypes (bfloat16, float8/6/4 variants, sub-byte ints) are ml_dtypes' types, and
# importing ml_dtypes costs ~0.5 s.  No value of such a dtype can exist before ml_dtypes is
# imported, so every table below starts with NumPy's dtypes only and ``_load_ml_dtypes``
# extends it (in place, or by rebinding a module global read at call time) the moment
# ml_dtypes is imported -- by a name lookup here (``dtypes.bfloat16``, the module
# ``__getattr__``), by a dtype string ("bfloat16"), or by anyone else (jaxlib, user code:
# an import hook notices).  Other modules with narrow-dtype tables register
# ``on_ml_dtypes(fn)``.  The hot paths keep plain dict/set lookups.
_FLOAT8_NAMES = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                 "float8_e4m3b11fnuz", "float8_e4m3", "float8_e3m4", "float8_e8m0fnu",
                 # 4- and 6-bit floats behave like the 8-bit ones (no implicit promotion)
                 "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")
_NARROW_INT_NAMES = ("int1", "int2", "int4", "uint1", "uint2", "uint4")
# names only ml_dtypes defines (a dtype string naming one loads it)
ML_DTYPE_NAMES = frozenset(("bfloat16",) + _FLOAT8_NAMES + _NARROW_INT_NAMES)
_LAZY_NAMES = frozenset({"bfloat16", "float8_e4m3fn", "float8_e5m2"})   # module attributes

# 8-bit floats: floating per issubdtype; they absorb weak int/float but never
# promote implicitly with any other strong dtype.
_float8s: tuple = ()
_custom_floats: tuple = ()      # (bfloat16,) + _float8s: outside numpy's np.floating hierarchy
_custom_float_types: frozenset = frozenset()
# Sub-byte integers (ml_dtypes; NumPy kind 'V'): signed/unsigned integers for issubdtype,
# weak Python ints promote to them, and they promote to nothing else (as in JAX).
_NARROW_SIGNED: tuple = ()
_NARROW_UNSIGNED: tuple = ()
_narrow_ints: tuple = ()
_narrow_signed_types: frozenset = frozenset()
_narrow_unsigned_types: frozenset = frozenset()
_ml_loaded = [False]
_ml_hooks: list = []

# Python scalar type -> its (non-canonical, x64) dtype, as numpy sees it.
python_scalar_dtypes = {bool: bool_, int: int64, float: float64, complex: complex128}

_TO_32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


class extended(np.generic):
    """Abstract scalar type of JAX's *extended* dtypes (e.g. typed PRNG keys): the
    ``.type`` of such a dtype is a subclass.  No NumPy dtype is a subtype:
    ``issubdtype(np.float32, extended)`` is False.  (``xform.dtypes.extended``.)"""


class prng_key(extended):
    """Abstract scalar type of typed PRNG key dtypes (``jax.dtypes.prng_key``): a key
    array's ``dtype.type``.  (``xform.dtypes.prng_key``.)"""


extended.__module__ = prng_key.__module__ = "xform.dtypes"     # where users meet them


class ExtendedDType:
    """Base of dtypes that are not NumPy dtypes (typed PRNG keys: ``key<fry>``).

    An extended dtype carries ``name``, ``physical`` (the NumPy element dtype of
    its representation), ``key_shape`` (trailing physical axes) and ``struct``
    (the NumPy structured dtype of one element, used for concrete values).
    """

    __slots__ = ()


# structured NumPy dtype of concrete values -> the extended dtype they represent
extended_by_struct: dict = {}


def register_extended(dt: ExtendedDType) -> None:
    extended_by_struct[dt.struct] = dt


def is_extended(dtype) -> bool:
    return isinstance(dtype, ExtendedDType)


class TypePromotionError(ValueError):
    """No implicit promotion exists between the given dtypes (as JAX)."""


# ------------------------------------------------------------------ defaults
# Mirrors of the options read on hot paths (config attribute access is slow);
# kept current by the listeners registered at the bottom of this module.
_mode = {"x64": bool(config.read("jax_enable_x64")),
         "promotion": config.read("jax_numpy_dtype_promotion")}


def _x64() -> bool:
    return _mode["x64"]


def default_int_dtype() -> np.dtype:
    return int64 if _x64() else int32


def default_uint_dtype() -> np.dtype:
    return uint64 if _x64() else uint32


def default_float_dtype() -> np.dtype:
    return float64 if _x64() else float32


def default_complex_dtype() -> np.dtype:
    return complex128 if _x64() else complex64


_DEFAULT_BY_KIND = {"b": lambda: bool_, "i": default_int_dtype, "u": default_uint_dtype,
                    "f": default_float_dtype, "c": default_complex_dtype}


# ---------------------------------------------------------- canonicalization
_canon_cache: dict = {}


def _canonicalize_uncached(x) -> np.dtype:
    if x is int:
        return default_int_dtype()
    if x is float:
        return default_float_dtype()
    if x is complex:
        return default_complex_dtype()
    dt = _np_dtype(x)
    return dt if _x64() else _TO_32.get(dt, dt)


def _np_dtype(x) -> np.dtype:
    """``np.dtype(x)``; a string naming one of ml_dtypes' types ("bfloat16") loads them."""
    try:
        return np.dtype(x)
    except (TypeError, ValueError) as e:
        if isinstance(x, str) and x in ML_DTYPE_NAMES and not _ml_loaded[0]:
            _load_ml_dtypes()
            return np.dtype(x)
        raise TypeError(f"Cannot interpret {x!r} as a data type") from e


def canonicalize_dtype(dtype) -> np.dtype:
    """The dtype JAX would use for ``dtype``: 64-bit types become 32-bit without x64."""
    try:
        return _canon_cache[dtype]
    except KeyError:
        out = _canon_cache[dtype] = _canonicalize_uncached(dtype)
        return out
    except TypeError:  # unhashable input
        return _canonicalize_uncached(dtype)


# Dtypes that may appear as values (anything else is rejected by dtype_of).
_valid_dtypes = {bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                 float16, float32, float64, complex64, complex128, float0}


_valid_canon_cache: dict = {}


def _canonical_valid(dt: np.dtype, x) -> np.dtype:
    """canonicalize_dtype(dt), or TypeError if ``dt`` is not an array dtype we support."""
    try:
        return _valid_canon_cache[dt]
    except KeyError:
        pass
    if dt in extended_by_struct:   # concrete values of an extended dtype (typed keys)
        return extended_by_struct[dt]
    if not _ml_loaded[0]:
        _sync_ml_dtypes()
    if dt not in _valid_dtypes:
        raise TypeError(f"Value {x!r} with dtype {dt} is not a valid array type; "
                        "only numeric (and bool) dtypes are supported")
    out = _valid_canon_cache[dt] = canonicalize_dtype(dt)
    return out


def is_weakly_typed(x) -> bool:
    """Python int/float/complex values are weak; objects report their ``weak_type``."""
    t = type(x)
    if t is int or t is float or t is complex:
        return True
    w = getattr(x, "weak_type", None)
    if w is None:
        aval = getattr(x, "aval", None)
        w = getattr(aval, "weak_type", False) if aval is not None else False
    return bool(w)


def dtype_of(x) -> np.dtype:
    """Canonical dtype of a value (or of a dtype-like: type, string, np.dtype)."""
    t = type(x)
    dt = python_scalar_dtypes.get(t)
    if dt is not None:
        return canonicalize_dtype(dt)
    dt = getattr(x, "dtype", None)  # arrays, numpy scalars, tracers, avals
    if isinstance(dt, np.dtype):
        return _canonical_valid(dt, x)
    if isinstance(dt, ExtendedDType):
        return dt
    if isinstance(x, ExtendedDType):
        return x
    if isinstance(x, np.dtype):
        return _canonical_valid(x, x)
    if t is str:
        return _canonical_valid(_np_dtype(x), x)
    if t is type:
        if x in python_scalar_dtypes:
            return canonicalize_dtype(python_scalar_dtypes[x])
    if isinstance(x, type) and issubclass(x, np.generic):
        return _canonical_valid(np.dtype(x), x)
    # Subclasses of Python scalars (e.g. IntEnum members).
    for pt in (int, float, complex):
        if isinstance(x, pt):
            return canonicalize_dtype(python_scalar_dtypes[pt])
    raise TypeError(f"Cannot determine dtype of {x!r} of type {t.__name__}")


# ----------------------------------------------------------------- promotion
_STRONG = {"b1": bool_, "u8": uint8, "u16": uint16, "u32": uint32, "u64": uint64,
           "i8": int8, "i16": int16, "i32": int32, "i64": int64,
           "f16": float16, "f32": float32, "f64": float64,
           "c64": complex64, "c128": complex128}      # + "bf16", float8s, narrow ints (lazily)
_WEAK = {"i*": int64, "f*": float64, "c*": complex128}
_NODE_DTYPE = {**_STRONG, **_WEAK}
_DTYPE_NODE = {d: n for n, d in _STRONG.items()}
_WEAK_NODE_OF_KIND = {"i": "i*", "u": "i*", "f": "f*", "c": "c*"}
_F8_NODES: tuple = ()
_NARROW_NODES: tuple = ()


def _lattice(strict: bool, x64: bool) -> dict:
    """Each node -> the nodes directly above it."""
    bf16 = ["bf16"] if "bf16" in _STRONG else []
    if strict:  # only weak types promote, and only into their own kind
        out = {n: [] for n in _STRONG}
        out["i*"] = ["f*", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64",
                     *_NARROW_NODES]
        out["f*"] = ["c*", *_F8_NODES, *bf16, "f16", "f32", "f64"]
        out["c*"] = ["c64", "c128"]
        return out
    return {
        "b1": ["i*"], "i*": ["u8", "i8", *_NARROW_NODES],
        **{n: [] for n in _NARROW_NODES},
        "u8": ["i16", "u16"], "u16": ["i32", "u32"],
        "u32": ["i64", "u64"] if x64 else ["i32", "u64"], "u64": ["f*"],
        "i8": ["i16"], "i16": ["i32"], "i32": ["i64"], "i64": ["f*"],
        "f*": [*_F8_NODES, *bf16, "f16", "c*"],
        **{n: [] for n in _F8_NODES},
        **{n: ["f32"] for n in bf16}, "f16": ["f32"], "f32": ["f64", "c64"], "f64": ["c128"],
        "c*": ["c64"], "c64": ["c128"], "c128": [],
    }


@functools.lru_cache(maxsize=None)
def _upper_bounds(strict: bool, x64: bool) -> dict:
    """node -> frozenset of every node at or above it (reflexive-transitive closure)."""
    lat = _lattice(strict, x64)
    ubs: dict = {}

    def up(n):
        if n not in ubs:
            s = {n}
            for m in lat[n]:
                s |= up(m)
            ubs[n] = frozenset(s)
        return ubs[n]

    for n in lat:
        up(n)
    return ubs


def _promotion_mode() -> tuple:
    mode = _mode["promotion"]
    if mode == "standard":
        return False, _mode["x64"]
    if mode == "strict":
        return True, _mode["x64"]
    raise ValueError(f"Unexpected value of jax_numpy_dtype_promotion={mode!r}")


@functools.lru_cache(maxsize=2048)
def _lub(strict: bool, x64: bool, nodes: frozenset) -> str:
    ub = _upper_bounds(strict, x64)
    common = frozenset.intersection(*(ub[n] for n in nodes))
    least = [c for c in common if common <= ub[c]]
    if len(least) == 1:
        return least[0]
    names = tuple(str(_NODE_DTYPE[n]) if n in _STRONG else n for n in nodes)
    if strict:
        hint = " when jax_numpy_dtype_promotion=strict"
    elif any(n in _F8_NODES for n in nodes):
        hint = "; 8-bit floats do not support implicit promotion"
    else:
        hint = ""
    raise TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path{hint}. "
        "Try explicitly casting inputs to the desired output type.")


def _node_of_dtype(dt: np.dtype) -> str:
    try:
        return _DTYPE_NODE[dt]
    except (KeyError, TypeError):
        if not _ml_loaded[0] and "ml_dtypes" in sys.modules:
            _sync_ml_dtypes()
            return _node_of_dtype(dt)
        raise ValueError(f"dtype={dt!r} is not a valid dtype for type promotion") from None


def _promotion_node(dt: np.dtype, weak: bool) -> str:
    """Lattice node of a (dtype, weak) pair; weak bool stays bool."""
    if weak:
        if dt in _custom_floats:
            return "f*"
        node = _WEAK_NODE_OF_KIND.get(dt.kind)
        if node is not None:
            return node
    return _node_of_dtype(dt)


def promote_types(a, b) -> np.dtype:
    """Like ``jnp.promote_types``: the Python types int/float/complex are weak.

    As in JAX the inputs and the result are *not* canonicalized (e.g.
    ``promote_types(int, float)`` is float64 even with x64 off); use
    ``result_type`` for the canonical result.
    """
    na = "i*" if a is int else "f*" if a is float else "c*" if a is complex else None
    nb = "i*" if b is int else "f*" if b is float else "c*" if b is complex else None
    na = na or _node_of_dtype(_np_dtype(a))
    nb = nb or _node_of_dtype(_np_dtype(b))
    return _NODE_DTYPE[_lub(*_promotion_mode(), frozenset((na, nb)))]


def _dtype_and_weak(x) -> tuple:
    if isinstance(x, ExtendedDType):
        return x, False
    if isinstance(x, np.dtype):
        return _canonical_valid(x, x), False
    t = type(x)
    if t is int or t is float or t is complex:
        return canonicalize_dtype(python_scalar_dtypes[t]), True
    if x is int or x is float or x is complex:  # the weak Python types themselves
        return canonicalize_dtype(python_scalar_dtypes[x]), True
    return dtype_of(x), is_weakly_typed(x)


def lattice_result_type(*args) -> tuple:
    """``(dtype, weak_type)`` that jnp operations promote ``args`` to.

    This is what binary ops use (JAX's ``promote_dtypes``): a weak result keeps
    its dtype, e.g. weak bf16 + 1.0 is weak bf16.  The dtype is canonical.
    """
    if not args:
        raise ValueError("at least one array or dtype is required")
    pairs = tuple(map(_dtype_and_weak, args))
    if any(isinstance(d, ExtendedDType) for d, _ in pairs):
        dts = {d for d, _ in pairs}
        if len(dts) == 1:
            return pairs[0][0], False
        raise TypeError("operation does not accept dtypes "
                        + ", ".join(str(getattr(d, "name", d)) for d, _ in pairs)
                        + ": typed PRNG key arrays combine only with key arrays of the "
                        "same dtype")
    return _lattice_of_pairs(*_promotion_mode(), pairs)


@functools.lru_cache(maxsize=4096)
def _lattice_of_pairs(strict: bool, x64: bool, pairs: tuple) -> tuple:
    if not _ml_loaded[0]:
        _sync_ml_dtypes()
    dtypes = {d for d, _ in pairs}
    all_weak = all(w for _, w in pairs)
    if len(pairs) == 1:
        out, weak = pairs[0]
    elif len(dtypes) == 1 and not all_weak:
        out, weak = pairs[0][0], False
    elif all_weak and not strict:
        # Bound of the strong counterparts, made weak at the end.
        node = _lub(strict, x64, frozenset(_node_of_dtype(d) for d in dtypes))
        out, weak = canonicalize_dtype(_NODE_DTYPE[node]), True
    else:
        node = _lub(strict, x64, frozenset(_promotion_node(d, w) for d, w in pairs))
        out, weak = canonicalize_dtype(_NODE_DTYPE[node]), node in _WEAK
    return out, weak and out != bool_


def result_type(*args, return_weak_type_flag: bool = False):
    """``jax.dtypes.result_type``: the dtype of an operation on ``args``.

    Args are values or dtype-likes; Python scalars and the types int/float/
    complex are weak; ``None`` means the default float.  The result is
    canonical and weak only if the winning lattice node is weak; unlike
    ``lattice_result_type`` a weak result is widened to the default dtype of
    its kind (weak bf16 -> float32 without x64).
    """
    if not args:
        raise ValueError("at least one array or dtype is required")
    out, weak = lattice_result_type(*(default_float_dtype() if a is None else a for a in args))
    if weak:
        out = _DEFAULT_BY_KIND["f" if out in _custom_floats else out.kind]()
    return (out, weak) if return_weak_type_flag else out


# ------------------------------------------------------------ classification
_ANCESTORS_OF_CUSTOM_FLOAT = frozenset([np.floating, np.inexact, np.number, np.generic])


@functools.lru_cache(maxsize=1024)
def _issubdtype_cached(a, b) -> bool:
    if not _ml_loaded[0]:
        _sync_ml_dtypes()
    a = a if isinstance(a, type) and issubclass(a, np.generic) else _np_dtype(a).type
    b = b if isinstance(b, type) and issubclass(b, np.generic) else _np_dtype(b).type
    if a in _custom_float_types:
        return a is b or b in _ANCESTORS_OF_CUSTOM_FLOAT
    if a in _narrow_signed_types:
        return a is b or b in (np.signedinteger, np.integer, np.number, np.generic)
    if a in _narrow_unsigned_types:
        return a is b or b in (np.unsignedinteger, np.integer, np.number, np.generic)
    return bool(np.issubdtype(a, b))


def issubdtype(a, b) -> bool:
    """``np.issubdtype`` that also counts bfloat16 / float8 as ``np.floating``."""
    if isinstance(a, ExtendedDType) or isinstance(b, ExtendedDType):
        if isinstance(b, ExtendedDType):
            return a == b
        # extended dtypes belong only to the abstract ``extended`` / ``prng_key`` classes
        return getattr(b, "__name__", None) in ("extended", "prng_key")
    try:
        return _issubdtype_cached(a, b)
    except TypeError:  # unhashable (e.g. an object carrying a dtype)
        return _issubdtype_cached(np.dtype(a), np.dtype(b))


def is_float(dtype) -> bool:
    return issubdtype(dtype, np.floating)


def is_complex(dtype) -> bool:
    return issubdtype(dtype, np.complexfloating)


def is_integer(dtype) -> bool:
    return issubdtype(dtype, np.integer)


def is_unsigned(dtype) -> bool:
    return issubdtype(dtype, np.unsignedinteger)


def is_bool(dtype) -> bool:
    return issubdtype(dtype, np.bool_)


def is_inexact(dtype) -> bool:
    return issubdtype(dtype, np.inexact)


def finfo(dtype):
    """Machine limits of a float (or complex: of its real part); bf16/f8 work (ml_dtypes'
    finfo; NumPy's own dtypes are answered by NumPy's, without importing ml_dtypes)."""
    dt = _np_dtype(dtype)
    if dt.kind in "fc" and not _ml_loaded[0]:
        return np.finfo(dt)
    import ml_dtypes  # deferred: keeps `import xform` light
    return ml_dtypes.finfo(dt)


def iinfo(dtype):
    dt = _np_dtype(dtype)
    if dt.kind in "iub" and not _ml_loaded[0]:
        return np.iinfo(dt)
    import ml_dtypes  # deferred: keeps `import xform` light
    return ml_dtypes.iinfo(dt)


def to_inexact_dtype(dtype) -> np.dtype:
    """Dtype that a transcendental function of ``dtype`` returns (``jnp.sin``).

    As JAX: bool and integers up to 32 bits go to float32 (not a width-matched
    float), 64-bit integers to float64; inexact dtypes are unchanged.  The
    result is canonicalized.
    """
    dt = np.dtype(dtype)
    if dt.kind in "biu":
        dt = float64 if dt.itemsize == 8 else float32
    return canonicalize_dtype(dt)


def to_complex_dtype(dtype) -> np.dtype:
    """Complex dtype holding ``to_inexact_dtype(dtype)`` (c128 only for 64-bit)."""
    dt = to_inexact_dtype(dtype)
    return canonicalize_dtype(complex128 if dt in (float64, complex128) else complex64)


@functools.lru_cache(maxsize=None)
def _short_name(dt: np.dtype) -> str:
    if dt == float0:
        return "float0"
    return (dt.name.replace("float", "f").replace("uint", "u")
            .replace("int", "i").replace("complex", "c"))


def short_name(dtype) -> str:
    """Jaxpr-style name: f32, bf16, i32, u8, bool, c64, f8_e4m3fn, float0."""
    if isinstance(dtype, ExtendedDType):
        return dtype.name
    return _short_name(_np_dtype(dtype))


def _on_x64_change(value) -> None:
    _mode["x64"] = bool(value)
    _canon_cache.clear()
    _valid_canon_cache.clear()


def _on_promotion_change(value) -> None:
    _mode["promotion"] = value


config.on_change("jax_enable_x64", _on_x64_change)
config.on_change("jax_numpy_dtype_promotion", _on_promotion_change)


# ------------------------------------------------------------ ml_dtypes, lazily


def _load_ml_dtypes() -> None:
    """Import ml_dtypes and extend every table with its dtypes (once)."""
    global bfloat16, float8_e4m3fn, float8_e5m2, _float8s, _custom_floats
    global _custom_float_types, _NARROW_SIGNED, _NARROW_UNSIGNED, _narrow_ints
    global _narrow_signed_types, _narrow_unsigned_types, _F8_NODES, _NARROW_NODES
    if _ml_loaded[0]:
        return
    import ml_dtypes  # deferred: keeps `import xform` light
    if _ml_loaded[0]:         # the import hook ran it meanwhile
        return
    bfloat16 = np.dtype(ml_dtypes.bfloat16)
    float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
    float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
    _float8s = tuple(np.dtype(getattr(ml_dtypes, n)) for n in _FLOAT8_NAMES
                     if hasattr(ml_dtypes, n))
    _custom_floats = (bfloat16,) + _float8s
    _custom_float_types = frozenset(d.type for d in _custom_floats)
    _NARROW_SIGNED = tuple(np.dtype(getattr(ml_dtypes, n)) for n in ("int1", "int2", "int4")
                           if hasattr(ml_dtypes, n))
    _NARROW_UNSIGNED = tuple(np.dtype(getattr(ml_dtypes, n)) for n in ("uint1", "uint2", "uint4")
                             if hasattr(ml_dtypes, n))
    _narrow_ints = _NARROW_SIGNED + _NARROW_UNSIGNED
    _narrow_signed_types = frozenset(d.type for d in _NARROW_SIGNED)
    _narrow_unsigned_types = frozenset(d.type for d in _NARROW_UNSIGNED)
    _valid_dtypes.update(_custom_floats, _narrow_ints)
    new = {"bf16": bfloat16, **{d.name: d for d in _float8s}, **{d.name: d for d in _narrow_ints}}
    _STRONG.update(new)
    _NODE_DTYPE.update(new)
    _DTYPE_NODE.update({d: n for n, d in new.items()})
    _F8_NODES = tuple(d.name for d in _float8s)
    _NARROW_NODES = tuple(d.name for d in _narrow_ints)
    for f in (_upper_bounds, _lub, _lattice_of_pairs, _issubdtype_cached):
        f.cache_clear()
    _canon_cache.clear()
    _valid_canon_cache.clear()
    _ml_loaded[0] = True
    for fn in _ml_hooks:
        fn()


def _sync_ml_dtypes() -> None:
    """Load the narrow dtypes if someone imported ml_dtypes (cheap when nobody has)."""
    if not _ml_loaded[0] and "ml_dtypes" in sys.modules and \
            hasattr(sys.modules["ml_dtypes"], "bfloat16"):
        _load_ml_dtypes()


def on_ml_dtypes(fn) -> None:
    """Call ``fn()`` once ml_dtypes' dtypes are loaded (now, if they are): how modules keep
    their own narrow-dtype tables lazy."""
    if _ml_loaded[0]:
        fn()
    else:
        _ml_hooks.append(fn)


def ml_dtypes_loaded() -> bool:
    return _ml_loaded[0]


def is_bfloat16(dtype) -> bool:
    """``dtype == bfloat16`` without importing ml_dtypes (no bfloat16 can exist before)."""
    if not _ml_loaded[0]:
        if "ml_dtypes" not in sys.modules:
            return False
        _sync_ml_dtypes()
    return dtype == bfloat16


def __getattr__(name):
    if name in _LAZY_NAMES:
        _load_ml_dtypes()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _MlDtypesWatcher:
    """A ``sys.meta_path`` finder that loads our narrow-dtype tables right after anyone
    imports ml_dtypes (jaxlib does, in C++, on its first host-to-device transfer)."""

    def find_spec(self, name, path=None, target=None):
        if name != "ml_dtypes":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        class _Loader:
            def __getattr__(self, attr):      # everything else: the real loader's
                return getattr(loader, attr)

            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                exec_module(module)
                _load_ml_dtypes()

        spec.loader = _Loader()
        return spec

    def invalidate_caches(self):
        pass


if "ml_dtypes" in sys.modules:
    _load_ml_dtypes()
else:
    sys.meta_path.insert(0, _MlDtypesWatcher())

"""``jit``, ``make_jaxpr``, ``eval_shape``: staging Python functions into programs.

``jit(f)(*args)`` flattens the arguments, builds a cache key from the pytree
structure, each leaf's abstract value (shape, dtype, weak type), the static
arguments and the x64 flag, and looks it up in a cache shared by every jit of
the same function (held by weak reference, so it dies with the function):

* hit (the hot path, kept short): call the compiled executable, unflatten;
* miss: trace ``f`` with staging tracers into a ClosedJaxpr (its closed-over
  constants hoisted into leading arguments), simplify it (forwarding, CSE,
  DCE), compile it with XLA through ``lowering`` and store it;
* under another transformation (the current trace is not the eager one), the
  program is not run but bound as the ``jit`` primitive, whose rules
  (primitives/jit.py) differentiate, batch and transpose it.

``xform.config.update("jax_explain_cache_misses", True)`` logs why a call
retraced (logger ``"xform"``, WARNING), like JAX.
"""
from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import itertools
import logging
import sys
import threading
import weakref

import numpy as np

from xform._wrapping import wraps as _wraps
from xform._src.interpreters import core, errors, passes
from xform._src.interpreters import staging as _staging_mod
from xform._src.interpreters.config import config
from xform._src.interpreters.core import EVAL_TRACE, Array, ShapedArray, Tracer
from xform._src.interpreters.dtypes import canonicalize_dtype
from xform._src.interpreters.ir import ClosedJaxpr
from xform._src.interpreters.staging import trace_to_jaxpr
import xform._src.primitives.jit as _jit_prim
from xform._src.primitives.jit import _hoist, compile_program, jit_p
from xform.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten
from xform._src.lowering.dispatch import MISS, make_packed_caller, pack_plan, tree_codegen_ok
from xform import _devices, sharding as S
from xform._src import lowering
from xform._src.interpreters import dtypes as _dt
from xform._src.primitives.jit import check_outputs_or_rerun
from xform.sharding._jit import ShardedJit
from xform.tree_util import tree_leaves, tree_map
from xform._src.interpreters import refs as _refs
from xform._src.interpreters.refs import Ref as _Ref
from xform import _jit_refs
from xform import _jit_hijax
from xform._src.interpreters.hijax import hi_type as _hi_aval
from xform._src.interpreters.hijax import NewHiClosure as _NewHiClosure

__all__ = ["jit", "make_jaxpr", "eval_shape", "ShapeDtypeStruct", "disable_jit"]

_log = logging.getLogger("xform")
_state = core._state
_tracing: dict = {}               # (cache id, key) -> (thread id, Event) of a trace running
_tracing_lock = threading.Lock()
_compiling: dict = {}             # id(entry) -> Lock held while that entry compiles
_CACHE_SIZE = 1024

# ----------------------------------------------------------------- flags read on every call

_flags = {"x64": bool(config.jax_enable_x64), "disable": bool(config.jax_disable_jit)}
_scalar_keys: dict = {}


def _refresh_scalar_keys(_=None):
    _flags["x64"] = bool(config.jax_enable_x64)
    for t in (bool, int, float, complex):
        a = core.get_aval(t(0))
        _scalar_keys[t] = (a.shape, a.dtype, a.weak_type)


def _set_disable(v):
    _flags["disable"] = bool(v)


config.on_change("jax_enable_x64", _refresh_scalar_keys)
config.on_change("jax_disable_jit", _set_disable)
_refresh_scalar_keys()


@contextlib.contextmanager
def disable_jit(disable: bool = True):
    """Run jitted functions eagerly (op by op) inside this context, for debugging."""
    with config.override("jax_disable_jit", disable):
        yield


# ----------------------------------------------------------------- ShapeDtypeStruct


class ShapeDtypeStruct:
    """An abstract array (shape, dtype, weak_type, sharding): arguments to ``eval_shape``,
    ``jit(f).lower``, ``make_jaxpr``, ``pure_callback`` result specs, and what
    ``eval_shape`` returns.  Immutable and hashable, like JAX's."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding", "is_ref", "_layout")

    def __init__(self, shape, dtype, *, sharding=None, weak_type=False, is_ref=False):
        layout = None
        if type(sharding).__name__ == "Format":       # a layout.Format: layout + sharding
            from xform.experimental.layout import Format, _check_supported  # deferred: keeps `import xform` light
            if isinstance(sharding, Format):
                _check_supported(sharding.layout, "ShapeDtypeStruct")
                layout, sharding = sharding.layout, sharding.sharding
        try:
            shape = tuple(d if getattr(type(d), "_is_symbolic_dim", False) else int(d)
                          for d in shape)   # symbolic dims: xform.export
        except TypeError:
            raise TypeError(f"ShapeDtypeStruct: shape must be a sequence of ints, got {shape!r}") \
                from None
        if dtype is None:
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")
        if not _dt.is_extended(dtype):        # typed PRNG key dtypes stay as they are
            dtype = np.dtype(dtype)
        for name, value in (("shape", shape), ("dtype", dtype), ("weak_type", bool(weak_type)),
                            ("sharding", sharding), ("is_ref", bool(is_ref)),
                            ("_layout", layout)):
            object.__setattr__(self, name, value)

    @property
    def format(self):
        """The layout and sharding (``xform.experimental.layout.Format``)."""
        from xform.experimental.layout import Format  # deferred: keeps `import xform` light
        return Format(self._layout, self.sharding)

    def __setattr__(self, name, value):
        raise RuntimeError(f"Cannot reassign attributes ({name}) of immutable ShapeDtypeStruct "
                           "objects; make a new one with .update(...)")

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @classmethod
    def like(cls, x) -> "ShapeDtypeStruct":
        """The ShapeDtypeStruct of an array, tracer, or anything with shape and dtype."""
        aval = getattr(x, "aval", None)
        if aval is None and not (hasattr(x, "shape") and hasattr(x, "dtype")):
            aval = core.get_aval(x)
        src = aval if aval is not None else x
        return cls(src.shape, src.dtype, weak_type=bool(getattr(src, "weak_type", False)),
                   sharding=getattr(x, "sharding", None) if not isinstance(x, Tracer) else None)

    def update(self, **kwargs) -> "ShapeDtypeStruct":
        """A copy with some of shape/dtype/weak_type/sharding/is_ref replaced."""
        unknown = set(kwargs) - {"shape", "dtype", "weak_type", "sharding", "is_ref"}
        if unknown:
            raise TypeError(f"ShapeDtypeStruct.update() got unexpected keyword arguments "
                            f"{sorted(unknown)}")
        fields = {k: getattr(self, k) for k in ("shape", "dtype", "weak_type", "sharding",
                                                "is_ref")}
        if self._layout is not None and "sharding" not in kwargs:
            fields["sharding"] = self.format
        fields.update(kwargs)
        return ShapeDtypeStruct(fields.pop("shape"), fields.pop("dtype"), **fields)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type
                and self.sharding == other.sharding and self.is_ref == other.is_ref
                and self._layout == other._layout)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type, self.is_ref))

    def __repr__(self):
        name = getattr(self.dtype, "name", str(self.dtype))
        sh = f", sharding={self.sharding}" if self.sharding is not None else ""
        weak = ", weak_type=True" if self.weak_type else ""
        ref = ", is_ref=True" if self.is_ref else ""
        fmt = f", format={self._layout}" if self._layout is not None else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={name}{sh}{fmt}{weak}{ref})"


def _sds(aval):
    return ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type)


# A ShapeDtypeStruct met while tracing (a function returning or closing over one) is an
# abstract value with no data, as in JAX: abstract tracing (eval_shape, make_jaxpr)
# takes it as a constant of its shape and dtype; running it raises JAX's TypeError.
core.pytype_aval_mappings[ShapeDtypeStruct] = lambda s: core.ShapedArray(
    s.shape, s.dtype, s.weak_type)


def _no_value(self, *a, **k):
    raise TypeError("A ShapeDtypeStruct does not have a value and cannot be used as a "
                    "constant in a JAX function.")


ShapeDtypeStruct.__array__ = _no_value


# ----------------------------------------------------------------- leaves -> cache keys


class _InvalidLeaf(Exception):
    def __init__(self, index, value):
        self.index, self.value = index, value


def _leaf_key(x):
    """(shape, dtype, weak_type) of an argument leaf; the fast cases first."""
    t = type(x)
    if t is Array:
        return (x.shape, x.dtype, x.weak_type)
    k = _scalar_keys.get(t)
    if k is not None:
        return k
    if t is np.ndarray:
        return (x.shape, canonicalize_dtype(x.dtype), False)
    return _leaf_key_slow(x)


def _leaf_key_slow(x):
    if isinstance(x, (Tracer, Array)):
        a = x.aval
        if getattr(a, "is_high", False):     # a tracer of a high-level value
            raise _InvalidLeaf(None, x)
        return (a.shape, a.dtype, a.weak_type)
    if _hi_aval(x) is not None:              # a high-level value: _jit_hijax lowers it
        raise _InvalidLeaf(None, x)
    if isinstance(x, np.ma.MaskedArray):    # (its mask would be silently dropped)
        raise ValueError("numpy masked arrays are not supported as direct inputs to JAX "
                         "functions. Use arr.filled() to convert the value to a standard "
                         "numpy array.")
    if isinstance(x, (np.ndarray, np.generic)):
        return (x.shape, canonicalize_dtype(x.dtype), False)
    if isinstance(x, ShapeDtypeStruct):
        return (x.shape, canonicalize_dtype(x.dtype), x.weak_type)
    for t, k in _scalar_keys.items():      # subclasses of Python scalars (IntEnum, ...)
        if isinstance(x, t):
            return k
    if getattr(x, "__jax_array__", None) is not None:
        raise core.jax_array_error()       # as JAX: register such a class as a pytree
    if hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "__array__"):
        return (tuple(x.shape), canonicalize_dtype(np.dtype(x.dtype)),
                bool(getattr(x, "weak_type", False)))
    raise _InvalidLeaf(None, x)


def _leaf_keys(leaves):
    try:
        return tuple([_leaf_key(x) for x in leaves])
    except _InvalidLeaf as e:
        for i, x in enumerate(leaves):
            if x is e.value:
                e.index = i
        raise


_NOT_ARRAY = object()
_flat_treedefs: dict = {}


def _flat_treedef(n):
    """The treedef of an n-tuple of leaves (what tree_flatten gives for n Arrays)."""
    t = _flat_treedefs.get(n)
    if t is None:
        t = _flat_treedefs[n] = tree_flatten(tuple(range(n)))[1]
    return t


# ----------------------------------------------------------------- argument names


def _signature(fun):
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):
        return None


def _fun_name(fun):
    f = fun
    while isinstance(f, functools.partial):
        f = f.func
    return getattr(f, "__name__", type(f).__name__)


def _fun_location(fun):
    f = fun
    while isinstance(f, functools.partial):
        f = f.func
    f = getattr(f, "__func__", f)
    code = getattr(f, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code else "<unknown>"


def _leaf_names(fun, dyn_args, dyn_kwargs, dyn_argnums):
    """A readable name per flat leaf ("x", "params['w']", "args[2]")."""
    sig = _signature(fun)
    names = []
    params = list(sig.parameters.values()) if sig is not None else []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)

    def argname(i):
        if i < len(positional):
            return positional[i].name
        if varargs is not None:
            return f"{varargs}[{i - len(positional)}]"
        return f"args[{i}]"

    for i, a in zip(dyn_argnums, dyn_args):
        base = argname(i)
        for path, _ in tree_flatten_with_path(a)[0]:
            names.append(base + keystr(path))
    for k in sorted(dyn_kwargs):
        for path, _ in tree_flatten_with_path(dyn_kwargs[k])[0]:
            names.append(k + keystr(path))
    return names


def _invalid_arg_error(fun, dyn_args, dyn_kwargs, dyn_argnums, e: _InvalidLeaf):
    try:
        name = _leaf_names(fun, dyn_args, dyn_kwargs, dyn_argnums)[e.index]
    except Exception:
        name = f"#{e.index}"
    return TypeError(f"Argument '{name}' of type {type(e.value)} is not a valid JAX type. "
                     "Pass arrays, NumPy arrays or Python scalars (or pytrees of them); mark "
                     "non-array arguments static with static_argnums/static_argnames.")


def _resolve_argnums(fun, argnums, argnames, what):
    """JAX's rule: static/donated argnums and argnames complete each other through the
    signature."""
    if argnums is None:
        argnums = ()
    elif isinstance(argnums, int):
        argnums = (argnums,)
    if argnames is None:
        argnames = ()
    elif isinstance(argnames, str):
        argnames = (argnames,)
    try:
        argnums, argnames = tuple(argnums), tuple(argnames)
    except TypeError:
        raise TypeError(f"jit: {what}_argnums must be an int or a sequence of ints and "
                        f"{what}_argnames a str or a sequence of str; got "
                        f"{what}_argnums={argnums!r}, {what}_argnames={argnames!r}") from None
    for a in argnums:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"jit: {what}_argnums must be ints, got {a!r}")
    for a in argnames:
        if not isinstance(a, str):
            raise TypeError(f"jit: {what}_argnames must be strings, got {a!r}")
    sig = _signature(fun)
    if sig is None:
        return tuple(int(a) for a in argnums), argnames
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    n = len(positional)
    has_varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    has_varkw = any(p.kind == p.VAR_KEYWORD for p in params)
    if not has_varargs and any(not -n <= int(a) < n for a in argnums):
        raise ValueError(f"Jitted function has {what}_argnums={tuple(int(a) for a in argnums)},"
                         f" but only accepts {n} positional arguments.")
    nameable = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    posonly = {p.name for p in params if p.kind == p.POSITIONAL_ONLY}
    bad = set(argnames) - nameable
    if bad & posonly:
        raise ValueError(f"Jitted function has invalid argnames {bad & posonly} in "
                         f"{what}_argnames. These are positional-only")
    if bad and not has_varkw:
        raise ValueError(f"Jitted function has invalid argnames {bad} in {what}_argnames. "
                         "Function does not take these args.")
    nums = set()
    for a in argnums:
        a = int(a)
        if a < 0:
            a += n
        nums.add(a)
    names = set(argnames)
    for i, p in enumerate(positional):
        if i in nums and p.kind == p.POSITIONAL_OR_KEYWORD:
            names.add(p.name)
        if p.name in names:
            nums.add(i)
    return tuple(sorted(nums)), tuple(sorted(names))


# ----------------------------------------------------------------- the per-function cache

_fun_caches: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _shared_cache(fun, options):
    """One LRU (plus its all-Array fast table) per (function, jit options), freed with
    the function."""
    try:
        per_fun = _fun_caches.get(fun)
        if per_fun is None:
            per_fun = _fun_caches[fun] = {}
    except TypeError:           # not weak-referenceable: the wrapper owns its cache
        return _LRU(), _FastTable()
    pair = per_fun.get(options)
    if pair is None:
        pair = per_fun[options] = (_LRU(), _FastTable())
    return pair


class _FastTable(dict):
    """The all-Array fast table ({avals key: entry}) plus the monomorphic cache
    ``mono`` (a runtime fast caller, see ``JitWrapped.__call__``); clearing the
    table drops both.  Flags that change what a call means (x64, disable_jit,
    debug_nans/infs) drop every table's ``mono``."""

    __slots__ = ("mono", "tree_mono", "__weakref__")

    def __init__(self):
        super().__init__()
        self.mono = None
        self.tree_mono = None     # (treedef, fast caller over the flat leaves)
        _fast_tables[next(_table_ids)] = self

    def clear(self):
        super().clear()
        self.mono = None
        self.tree_mono = None


_fast_tables: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()
_table_ids = itertools.count()


def _drop_monos(_=None):
    for t in list(_fast_tables.values()):
        t.mono = None
        t.tree_mono = None


for _flag in ("jax_enable_x64", "jax_disable_jit", "jax_debug_nans", "jax_debug_infs"):
    config.on_change(_flag, _drop_monos)


class _LRU(collections.OrderedDict):
    """The tracing cache: evicting an entry also clears the fast table."""

    fast = None

    def trim(self, maxsize):
        while len(self) > maxsize:
            self.popitem(last=False)
            if self.fast is not None:
                self.fast.clear()


class _Entry:
    """One traced (and, once called eagerly, compiled) specialisation."""

    __slots__ = ("closed", "const_args", "out_tree", "compiled", "dev_consts", "donated",
                 "in_avals", "key", "names", "fast")

    def __init__(self, closed, const_args, out_tree, donated, in_avals, key, names):
        self.closed = closed
        self.const_args = const_args
        self.out_tree = out_tree
        self.compiled = None
        self.dev_consts = ()
        self.donated = donated
        self.in_avals = in_avals
        self.key = key
        self.names = names
        self.fast = None      # {tree-shaped?: generated call path or False}, built on use


# ----------------------------------------------------------------- jit


class JitWrapped:
    """What ``jit(f)`` returns: callable, plus ``lower``, ``trace``, ``eval_shape``."""

    def __init__(self, fun, *, in_shardings=None, out_shardings=None, static_argnums=(),
                 static_argnames=(), donate_argnums=(), donate_argnames=(), keep_unused=False,
                 device=None, backend=None, inline=False, compiler_options=None):
        if not callable(fun):
            raise TypeError(f"jit: expected a callable value, got {fun!r} of type "
                            f"{type(fun).__name__}")
        functools.update_wrapper(self, fun, updated=())
        self._fun = fun
        self._static_argnums, self._static_argnames = _resolve_argnums(
            fun, static_argnums, static_argnames, "static")
        self._donate_argnums, self._donate_argnames = _resolve_argnums(
            fun, donate_argnums, donate_argnames, "donate")
        both_names = set(self._static_argnames) & set(self._donate_argnames)
        if both_names:
            raise ValueError("static_argnames and donate_argnames cannot intersect. Argument "
                             f"names {both_names} appear in both static_argnames and "
                             "donate_argnames (a static argument is not an array and cannot "
                             "be donated).")
        both = set(self._static_argnums) & set(self._donate_argnums)
        if both:
            raise ValueError("static_argnums and donate_argnums cannot intersect. Argument "
                             f"positions {sorted(both)} appear in both (a static argument is "
                             "not an array and cannot be donated).")
        self._keep_unused = bool(keep_unused)
        self._inline = bool(inline)
        if device is not None and backend is not None:
            raise ValueError("jit: pass either device or backend, not both")
        self._device = device
        self._backend = backend
        self._name = _fun_name(fun)
        self._has_static = bool(self._static_argnums or self._static_argnames)
        options = (self._static_argnums, self._static_argnames, self._donate_argnums,
                   self._donate_argnames, self._keep_unused, self._inline, device, backend)
        self._cache, self._fast = _shared_cache(fun, options)
        self._cache.fast = self._fast
        self._trace_count = 0
        self._refjit = None       # the impure path (Ref arguments or closed-over Refs)

    # -- the hot path
    def __call__(self, *args, **kwargs):
        if self._refjit is not None:
            return self._refjit(args, kwargs)
        hj = self.__dict__.get("_hijit")
        if hj is not None and hj.closure:
            return hj(args, kwargs)
        # Monomorphic inline cache: the generated call path (lowering/dispatch.py) of
        # the specialisation last called with positional arguments checks the new
        # arguments' structure and leaves against its exact signature as it takes
        # them apart (no key to build or hash) and returns MISS on any difference.
        # It lives on the fast table, so whatever clears that (eviction,
        # clear_cache, flag changes) drops it too.
        mono = self._fast.mono
        if mono is not None and not kwargs and _state.trace is EVAL_TRACE:
            out = mono(args)
            if out is not MISS:
                return out
        if _flags["disable"]:
            return self._fun(*args, **kwargs)
        if self._has_static or kwargs:
            return self._call_general(args, kwargs)
        # Pytrees with custom nodes: the same inline cache over the flat leaves, keyed
        # on the tree structure.
        tree_mono = self._fast.tree_mono
        if tree_mono is not None and _state.trace is EVAL_TRACE:
            leaves, treedef = tree_flatten(args)
            if treedef == tree_mono[0]:
                out = tree_mono[1](leaves)
                if out is not MISS:
                    return out
        # Common case: positional Array arguments only.  The fast table is keyed on
        # the avals alone (no pytree structure to hash or compare).
        fkey = (tuple([(x.shape, x.dtype, x.weak_type) if type(x) is Array else _NOT_ARRAY
                       for x in args]), _flags["x64"])
        entry = self._fast.get(fkey)
        if entry is not None and _state.trace is EVAL_TRACE:
            self._set_mono(entry, args, args)
            try:
                outs = entry.compiled(*entry.dev_consts, *args)
            except TypeError as e:
                if type(e).__name__ == "ShardedArgument":
                    return self._sharded(args, kwargs)
                self._check_leaked(args)
                raise
            if core._debug_checks_on:
                self._debug_check(entry, args, outs)
            return entry.out_tree.unflatten(outs)
        try:
            leaves, treedef = tree_flatten(args)
            key = (treedef, tuple([_leaf_key(x) for x in leaves]), (), _flags["x64"])
        except _InvalidLeaf:
            return self._call_general(args, kwargs)
        entry = self._cache.get(key)
        if entry is not None and entry.compiled is not None and _state.trace is EVAL_TRACE:
            self._cache.move_to_end(key)
            if treedef == _flat_treedef(len(args)) and _NOT_ARRAY not in fkey[0]:
                self._fast[fkey] = entry
            self._set_mono(entry, args, leaves, treedef)
            try:
                outs = entry.compiled(*entry.dev_consts, *leaves)
            except TypeError as e:
                if type(e).__name__ == "ShardedArgument":
                    return self._sharded(args, kwargs)
                self._check_leaked(leaves)
                raise
            if core._debug_checks_on:
                self._debug_check(entry, leaves, outs)
            return entry.out_tree.unflatten(outs)
        return self._call_general(args, kwargs)

    def _fast_caller(self, entry, tree, leaves):
        """The generated call path of ``entry`` (built once per kind of call): over the
        positional argument tuple when ``tree`` (its structure) has only built-in
        containers, else (``tree=None``) over the flat leaves; leaves that are NumPy
        arrays now are tested for that first.  False when there is none."""
        fast = entry.fast
        if fast is None:
            fast = entry.fast = {}
        host = tuple(i for i, x in enumerate(leaves) if type(x) is np.ndarray)
        slot = (tree is not None, host)
        caller = fast.get(slot)
        if caller is None:
            maker = getattr(entry.compiled, "fast_caller", None)
            caller = None
            if maker is not None:
                try:
                    caller = maker(entry.dev_consts, [a.weak_type for a in entry.in_avals],
                                   in_tree=tree, out_tree=entry.out_tree, host_leaves=host,
                                   on_hot=self._packer(entry, tree, host, slot))
                except Exception:      # never let an optimisation break a call
                    caller = None
            if len(fast) > 8:
                fast.clear()
            caller = fast[slot] = caller or False
        return caller

    def _packer(self, entry, tree, host, slot):
        """``on_hot`` for a call path whose calls pass small NumPy arrays: once called
        (after ``dispatch.PACK_AFTER`` such calls), compile in a background thread a
        variant of the program taking those arrays as one packed byte buffer -- one
        host-to-device transfer per call instead of one per array -- and make it the
        call path (the inline cache too, if it still is the old one).  None when
        packing does not pay (fewer than two small NumPy leaves)."""
        plan = pack_plan(entry.closed.in_avals, len(entry.const_args), host)
        if not plan:
            return None
        table, name, fast, started = self._fast, self._name, entry.fast, []
        weaks = [a.weak_type for a in entry.in_avals]

        def work():
            old = fast.get(slot)
            try:
                caller = make_packed_caller(entry.compiled, passes.simplify(entry.closed),
                                            entry.dev_consts, weaks, tree, entry.out_tree,
                                            plan, name)
            except Exception:          # an optimisation only: keep the working path
                return
            if not caller or fast.get(slot) is not old:
                return
            fast[slot] = caller
            if table.mono is old:
                table.mono = caller
            tm = table.tree_mono
            if tm is not None and tm[1] is old:
                table.tree_mono = (tm[0], caller)

        def on_hot():
            if not started:
                started.append(True)
                threading.Thread(target=work, name=f"xform-jit-pack-{name}").start()
        return on_hot

    def _set_mono(self, entry, args, leaves, treedef=None):
        """Make ``entry``'s generated call path this wrapper's inline cache if the
        call (a cache hit with positional arguments only) passed Arrays / NumPy
        arrays as leaves."""
        if core._debug_checks_on:
            return
        for x in leaves:
            if type(x) is not Array and type(x) is not np.ndarray:
                return
        if treedef is None:
            treedef = _flat_treedef(len(args))
        if tree_codegen_ok(treedef):
            fast = self._fast_caller(entry, treedef, leaves)
            if fast:
                self._fast.mono = fast
        else:
            fast = self._fast_caller(entry, None, leaves)
            if fast:
                self._fast.tree_mono = (treedef, fast)

    # -- everything else
    def _split(self, args, kwargs):
        """(dynamic args, their positions, dynamic kwargs, static key)."""
        statics = []
        dyn_args, dyn_argnums = [], []
        snums = self._static_argnums
        for i, a in enumerate(args):
            if i in snums:
                statics.append((i, self._hashable(a, i)))
            else:
                dyn_args.append(a)
                dyn_argnums.append(i)
        dyn_kwargs = {}
        for k, v in kwargs.items():
            if k in self._static_argnames:
                statics.append((k, self._hashable(v, k)))
            else:
                dyn_kwargs[k] = v
        return dyn_args, dyn_argnums, dyn_kwargs, tuple(statics)

    def _hashable(self, v, where):
        try:
            hash(v)
        except TypeError as e:
            raise ValueError(
                f"Non-hashable static arguments are not supported. An error occurred while "
                f"trying to hash an object of type {type(v)}, {v!r}. The error was:\n"
                f"TypeError: {e}\n(static argument {where!r} of jit({self._name}); pass a "
                "tuple instead of a list, or make the argument dynamic.)") from None
        return _StaticKey(v)

    def _prepare(self, args, kwargs):
        dyn_args, dyn_argnums, dyn_kwargs, statics = self._split(args, kwargs)
        if dyn_kwargs:
            leaves, treedef = tree_flatten((tuple(dyn_args), dyn_kwargs))
        else:
            leaves, treedef = tree_flatten(tuple(dyn_args))
        try:
            leaf_keys = _leaf_keys(leaves)
        except _InvalidLeaf as e:
            if isinstance(e.value, _Ref):
                raise _jit_refs.HasRefs() from None
            if _hi_aval(e.value) is not None:
                raise _jit_hijax.HasHi() from None
            raise _invalid_arg_error(self._fun, dyn_args, dyn_kwargs, dyn_argnums, e) from None
        key = (treedef, leaf_keys, statics, _flags["x64"])
        return key, leaves, (dyn_args, dyn_argnums, dyn_kwargs, statics)

    def _get_entry(self, args, kwargs):
        key, leaves, info = self._prepare(args, kwargs)
        try:
            entry = self._cache.get(key)
        except TypeError as e:    # a static argument whose __eq__/__hash__ misbehaves
            raise ValueError(f"jit({self._name}): static arguments must be hashable and "
                             f"comparable: {e}") from None
        if entry is None:
            entry = self._trace_once(key, args, kwargs, info)
        return entry, leaves

    def _trace_once(self, key, args, kwargs, info):
        """Trace on a cache miss -- once: a thread that finds the same function being
        traced for the same key by another thread waits for that entry instead of
        tracing (and compiling) it again.  A recursive trace on the same thread
        proceeds (and fails as it would have)."""
        me = threading.get_ident()
        slot = (id(self._cache), key)
        with _tracing_lock:
            entry = self._cache.get(key)
            if entry is not None:
                return entry
            owner = _tracing.get(slot)
            if owner is None:
                _tracing[slot] = (me, threading.Event())
        if owner is not None:
            if owner[0] == me:
                return self._trace(key, args, kwargs, info)
            owner[1].wait()
            entry = self._cache.get(key)
            return entry if entry is not None else self._trace_once(key, args, kwargs, info)
        try:
            return self._trace(key, args, kwargs, info)
        finally:   # also on errors and KeyboardInterrupt
            with _tracing_lock:
                _tracing.pop(slot)[1].set()

    def _sharded(self, args, kwargs):
        """Arguments laid out over several devices: the partitioned path (XLA chooses
        the output shardings)."""
        sj = self.__dict__.get("_sharded_jit")
        if sj is None:
            sj = self.__dict__["_sharded_jit"] = ShardedJit(self)
        return sj(*args, **kwargs)

    def _call_general(self, args, kwargs):
        try:
            entry, leaves = self._get_entry(args, kwargs)
        except _jit_refs.HasRefs:
            if _flags["disable"]:
                return self._fun(*args, **kwargs)
            self._refjit = _jit_refs.RefJit(self)
            return self._refjit(args, kwargs)
        except (_jit_hijax.HasHi, _NewHiClosure) as e:
            if _flags["disable"]:
                return self._fun(*args, **kwargs)
            hj = self.__dict__.get("_hijit")
            if hj is None:
                hj = self.__dict__["_hijit"] = _jit_hijax.HiJit(self)
            if isinstance(e, _NewHiClosure):
                hj.add_closure(e.objs)
            return hj(args, kwargs)
        if _state.trace is EVAL_TRACE and not self._check_leaked(leaves, entry.const_args):
            for x in leaves:
                if type(x) is Array and x._buf is not None and not x._deleted and \
                        len(x._buf._sharding.device_set) > 1:
                    return self._sharded(args, kwargs)
            if entry.compiled is None:
                self._compile(entry)
            outs = entry.compiled(*entry.dev_consts, *leaves)
            if core._debug_checks_on:
                self._debug_check(entry, leaves, outs)
        else:
            n = len(entry.const_args)
            outs = jit_p.bind(*entry.const_args, *leaves, jaxpr=entry.closed, name=self._name,
                              donated_invars=(False,) * n + entry.donated, inline=self._inline,
                              keep_unused=self._keep_unused)
        return entry.out_tree.unflatten(outs)

    def _check_leaked(self, leaves, consts=()):
        """At the eager level a tracer argument is a leaked one: bind so the eval trace
        raises UnexpectedTracerError naming where it was created."""
        for x in list(consts) + list(leaves):
            if isinstance(x, Tracer):
                EVAL_TRACE.check_foreign_tracer(x)
        return False

    def _trace(self, key, args, kwargs, info):
        dyn_args, dyn_argnums, dyn_kwargs, statics = info
        if config.jax_explain_cache_misses:
            self._explain_miss(key, dyn_args, dyn_kwargs, dyn_argnums)
        treedef = key[0]
        in_avals = [ShapedArray(*k) for k in key[1]]
        store = {}
        fun = self._fun
        static_pos = {k: v.value for k, v in statics if isinstance(k, int)}
        static_kw = {k: v.value for k, v in statics if isinstance(k, str)}
        n_args = len(dyn_args) + len(static_pos)

        def flat_fun(*tracers):
            tree = treedef.unflatten(tracers)
            dargs, dkw = (tree, {}) if not dyn_kwargs else tree
            it = iter(dargs)
            full = [static_pos[i] if i in static_pos else next(it) for i in range(n_args)]
            with _refs.Scope("jit") as scope:
                scope.hi_adopt = True
                out = fun(*full, **dkw, **static_kw)
            if scope.order:           # it touched references of its caller: impure
                raise _jit_refs.HasRefs()
            out_leaves, store["tree"] = tree_flatten(out)
            for i, o in enumerate(out_leaves):
                if isinstance(o, _Ref):
                    raise _jit_refs.returned_ref_error(
                        f"function {self._name} at {_fun_location(self._fun)} traced for jit",
                        o)
                if not isinstance(o, (Tracer, Array, np.ndarray, np.generic, bool, int, float,
                                      complex)):
                    if _hi_aval(o) is not None:     # a high-level result: _jit_hijax
                        raise _jit_hijax.HasHi()
                    raise TypeError(
                        f"jit({self._name}): output leaf {i} has type {type(o)}, which is not a "
                        "valid JAX type; a jitted function must return arrays, scalars or "
                        "pytrees of them.")
            return out_leaves

        try:
            with core.gc_paused():
                jaxpr, consts = trace_to_jaxpr(flat_fun, in_avals, name=f"jit({self._name})")
        except errors.ConcretizationTypeError as e:
            e.args = (f"{e.args[0]}\nThe error occurred while tracing the function "
                      f"{self._name} at {_fun_location(self._fun)} for jit.",) + e.args[1:]
            raise
        self._trace_count += 1
        closed, const_args = _hoist(jaxpr, consts)
        donated = self._donated(dyn_args, dyn_argnums, dyn_kwargs, len(in_avals))
        entry = _Entry(closed, const_args, store["tree"], donated, in_avals, key, None)
        if not any(isinstance(c, Tracer) for c in const_args):
            self._cache[key] = entry
            self._cache.trim(_CACHE_SIZE)
        return entry

    def _donated(self, dyn_args, dyn_argnums, dyn_kwargs, n):
        if not (self._donate_argnums or self._donate_argnames):
            return (False,) * n
        out = []
        for i, a in zip(dyn_argnums, dyn_args):
            out += [i in self._donate_argnums] * len(tree_flatten(a)[0])
        for k in sorted(dyn_kwargs):
            out += [k in self._donate_argnames] * len(tree_flatten(dyn_kwargs[k])[0])
        return tuple(out)

    def _target_device(self):
        if self._device is not None:
            return self._device
        if self._backend is not None:
            return lowering.devices(self._backend)[0]
        return None

    def _compile(self, entry):
        with _tracing_lock:      # one lock per entry: concurrent first calls compile once
            lock = _compiling.setdefault(id(entry), threading.Lock())
        try:
            with lock:
                if entry.compiled is not None:
                    return entry.compiled
                closed = passes.simplify(entry.closed)
                donated = (False,) * len(entry.const_args) + entry.donated
                device = self._target_device()
                compiled = compile_program(closed, donated, device, self._name)
                entry.dev_consts = tuple(_to_device(c, getattr(compiled, "device", None))
                                         for c in entry.const_args)
                try:
                    compiled._route_sharded = True    # sharded args: partitioned path
                except AttributeError:
                    pass
                entry.compiled = compiled
                return compiled
        finally:
            with _tracing_lock:
                _compiling.pop(id(entry), None)

    def _debug_check(self, entry, leaves, outs):
        check_outputs_or_rerun(entry.closed, list(entry.const_args) + list(leaves), outs,
                               self._name)

    # -- explaining cache misses
    def _explain_miss(self, key, dyn_args, dyn_kwargs, dyn_argnums):
        where = errors.user_location(3)
        head = (f"TRACING CACHE MISS at {where} because:\n"
                f"  for {self._name} defined at {_fun_location(self._fun)}\n")
        if not self._cache:
            _log.warning(head + "  never seen function (or never seen these jit options)")
            return
        treedef, leaf_keys, statics, x64 = key
        best, best_score = None, None
        for k in self._cache:
            score = (k[0] != treedef, k[3] != x64, k[2] != statics,
                     sum(a != b for a, b in zip(k[1], leaf_keys)) if k[0] == treedef else 0)
            if best_score is None or score < best_score:
                best, best_score = k, score
        lines = ["  all previously seen cache keys differ. For the closest previous key:"]
        if best[3] != x64:
            lines.append(f"  * jax_enable_x64 was {best[3]} and now is {x64}")
        if best[0] != treedef:
            lines.append(f"  different input pytree:\n  * the arguments' structure was "
                         f"{best[0]} and now is {treedef}")
        elif best[2] != statics:
            old, new = dict(best[2]), dict(statics)
            for k in sorted(set(old) | set(new), key=str):
                if old.get(k) != new.get(k):
                    lines.append(f"  different static argument {k!r}: was "
                                 f"{_static_repr(old.get(k))} and now is "
                                 f"{_static_repr(new.get(k))}")
        else:
            names = _leaf_names(self._fun, dyn_args, dyn_kwargs, dyn_argnums)
            lines.append("  different input types:")
            for name, old, new in zip(names, best[1], leaf_keys):
                if old != new:
                    o, n = ShapedArray(*old), ShapedArray(*new)
                    what = ("weak type" if core.same_type(o, n) else "shape/dtype")
                    lines.append(f"  * for {self._name}, argument {name} had {what} "
                                 f"{_aval_str(o)} and now {_aval_str(n)}")
        _log.warning(head + "\n".join(lines))

    # -- AOT-style API
    def _aot_entry(self, args, kwargs, what):
        try:
            return self._get_entry(args, kwargs)[0]
        except (_jit_hijax.HasHi, _NewHiClosure):
            raise TypeError(
                f"jit({self._name}).{what}: its arguments include high-level (hijax) "
                "values, which xform's jit supports only when the jitted function is "
                "called (jax.experimental.hijax: ahead-of-time lowering of high-level "
                "arguments is not implemented); call it instead") from None
        except _jit_refs.HasRefs:
            raise TypeError(
                f"jit({self._name}).{what}: the function uses array references of its "
                "caller (Ref arguments or closed-over Refs), which xform supports only when "
                "the jitted function is called; call it, or pass the references' values "
                "(ref[...]) and return the new ones") from None

    def lower(self, *args, **kwargs):
        hj = self.__dict__.get("_hijit")
        if hj is not None and hj.closure:
            return hj.lower(args, kwargs)
        try:
            return Lowered(self, self._get_entry(args, kwargs)[0])
        except (_jit_hijax.HasHi, _NewHiClosure) as e:
            # high-level arguments or closed-over objects: the lowered function's program
            if hj is None:
                hj = self.__dict__["_hijit"] = _jit_hijax.HiJit(self)
            if isinstance(e, _NewHiClosure):
                hj.add_closure(e.objs)
            return hj.lower(args, kwargs)
        except _jit_refs.HasRefs:
            return Lowered(self, self._aot_entry(args, kwargs, "lower"))

    def trace(self, *args, **kwargs):
        return Traced(self, self._aot_entry(args, kwargs, "trace"))

    def eval_shape(self, *args, **kwargs):
        entry = self._aot_entry(args, kwargs, "eval_shape")
        return entry.out_tree.unflatten([_sds(a) for a in entry.closed.out_avals])

    def _cache_size(self):
        return len(self._cache)

    def clear_cache(self):
        self._cache.clear()
        self._fast.clear()

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self):
        return f"<PjitFunction of {self._fun!r}>"


# JAX's name for the type of what jit returns (`type(jax.jit(f)).__name__`, and its repr
# `<PjitFunction of f>`): code that recognises a jitted function by its type's name
# (chex's assert_max_traces refusing to wrap one) recognises xform's
JitWrapped.__name__ = JitWrapped.__qualname__ = "PjitFunction"
PjitFunction = JitWrapped


class _StaticKey:
    """A static argument in a cache key: compared with ``==`` like JAX, and never
    equal to a value of another type (``1`` vs ``True`` vs ``1.0`` retrace)."""

    __slots__ = ("value", "_hash")

    def __init__(self, value):
        self.value = value
        self._hash = hash((type(value), value))

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        if type(other) is not _StaticKey or type(other.value) is not type(self.value):
            return False
        r = self.value == other.value
        if not isinstance(r, (bool, np.bool_)):
            try:
                r = bool(r)
            except Exception:
                return False
        return bool(r)

    def __repr__(self):
        return repr(self.value)


def _static_repr(s):
    return "<absent>" if s is None else repr(s)


def _aval_str(a):
    return a.str_short() + ("{weak_type=True}" if a.weak_type else "")


def _to_device(c, device):
    if device is None or isinstance(c, Tracer):
        return c
    try:
        return lowering.device_put(c, device)
    except Exception:
        return c


class Lowered:
    """``jit(f).lower(*args)``: the StableHLO of one specialisation."""

    def __init__(self, wrapped, entry):
        self._wrapped = wrapped
        self._entry = entry

    def _program_text(self, debug_info=True):
        """The StableHLO text a call compiles (and the persistent cache keys on): the
        simplified program in MLIR's generic syntax, with locations by default."""
        w, e = self._wrapped, self._entry
        donated = (False,) * len(e.const_args) + e.donated
        return lowering.lower_jaxpr(passes.simplify(e.closed), name=w._name,
                                    donated_invars=donated, keep_unused=w._keep_unused,
                                    debug_info=debug_info)

    def as_text(self, dialect=None, debug_info=False):
        """The lowered program as text: StableHLO in MLIR's syntax (``dialect`` None or
        ``'stablehlo'``), or XLA's HLO text (``'hlo'``), as JAX's ``Lowered.as_text``."""
        if dialect == "hlo":
            return _compiler_ir(self._program_text(False), "hlo").as_hlo_text()
        if dialect not in (None, "stablehlo"):
            raise ValueError(f"unknown dialect: {dialect!r}; use 'stablehlo' or 'hlo'")
        return _pretty_mlir(self._program_text(debug_info), debug_info)

    def compiler_ir(self, dialect=None):
        """The lowered program as an object: ``'stablehlo'`` (default) an MLIR module
        (``jaxlib.mlir.ir.Module``), ``'hlo'`` an XLA computation (``as_hlo_text()``)."""
        return _compiler_ir(self.as_text(), dialect)

    def compile(self, compiler_options=None):
        w, e = self._wrapped, self._entry
        if compiler_options:   # XLA options: a separate executable, not the cached one
            own = _Entry(e.closed, e.const_args, e.out_tree, e.donated, e.in_avals, e.key,
                         e.names)
            with lowering.compiler_options(compiler_options):
                w._compile(own)
            return CompiledCall(w, own)
        if e.compiled is None:
            w._compile(e)
        return CompiledCall(w, e)

    @property
    def out_info(self):
        return self._entry.out_tree.unflatten([_sds(a) for a in self._entry.closed.out_avals])

    @property
    def in_avals(self):
        return list(self._entry.in_avals)


class Traced:
    """``jit(f).trace(*args)``: the staged program (``.jaxpr``) of one specialisation."""

    def __init__(self, wrapped, entry):
        self._wrapped = wrapped
        self._entry = entry

    @property
    def jaxpr(self) -> ClosedJaxpr:
        return self._entry.closed

    @property
    def out_info(self):
        return self._entry.out_tree.unflatten([_sds(a) for a in self._entry.closed.out_avals])

    def lower(self):
        return Lowered(self._wrapped, self._entry)


class CompiledCall:
    """``jit(f).lower(*args).compile()``: call it with the dynamic arguments only."""

    def __init__(self, wrapped, entry):
        self._wrapped = wrapped
        self._entry = entry

    def __call__(self, *args, **kwargs):
        e = self._entry
        leaves, treedef = tree_flatten((tuple(args), kwargs) if kwargs else tuple(args))
        if treedef != e.key[0]:
            raise TypeError(f"Compiled function called with an argument structure {treedef} "
                            f"but it was compiled for {e.key[0]} (static arguments are not "
                            "passed to a compiled function).")
        keys = _leaf_keys(leaves)
        for i, (k, a) in enumerate(zip(keys, e.in_avals)):
            if ShapedArray(*k).strip_weak_type() != a.strip_weak_type():
                raise TypeError(f"Compiled function argument {i} has type "
                                f"{ShapedArray(*k).str_short()} but it was compiled for "
                                f"{a.str_short()}; call jit(f) instead to retrace.")
        outs = e.compiled(*e.dev_consts, *leaves)
        return e.out_tree.unflatten(outs)

    def as_text(self):
        return self._entry.compiled.compiled_text()

    def cost_analysis(self):
        return self._entry.compiled.cost_analysis()

    def memory_analysis(self):
        return self._entry.compiled.memory_analysis()

    @property
    def input_formats(self):
        """((one Format per positional argument's leaves), {}) (default layouts)."""
        from xform.experimental.layout import Format, default_layout  # deferred: keeps `import xform` light
        e = self._entry
        fmts = [Format(default_layout(len(a.shape)), _default_sharding())
                for a in e.in_avals]
        tree = e.key[0].unflatten(fmts)
        if isinstance(tree, tuple) and len(tree) == 2 and isinstance(tree[0], tuple) and \
                isinstance(tree[1], dict) and tree[1]:     # called with keyword arguments
            return (tuple(tree[0]), dict(tree[1]))
        return (tuple(tree), {})

    @property
    def output_formats(self):
        from xform.experimental.layout import Format, default_layout  # deferred: keeps `import xform` light
        e = self._entry
        return e.out_tree.unflatten([Format(default_layout(len(a.shape)), _default_sharding())
                                     for a in e.closed.out_avals])

    @property
    def out_info(self):
        return self._entry.out_tree.unflatten([_sds(a) for a in self._entry.closed.out_avals])


def jit(fun=None, in_shardings=None, out_shardings=None, static_argnums=None,
        static_argnames=None, donate_argnums=None, donate_argnames=None, keep_unused=False,
        device=None, backend=None, inline=False, compiler_options=None):
    """Compile ``fun`` with XLA (the same API and semantics as JAX's jit): trace once per argument signature,
    then call the cached executable.  Usable as ``@jit``, ``@jit(static_argnums=...)``
    or with ``functools.partial(jit, ...)``.  ``in_shardings``/``out_shardings`` are
    accepted for compatibility and ignored (single-device programs)."""
    kw = dict(in_shardings=in_shardings, out_shardings=out_shardings,
              static_argnums=static_argnums, static_argnames=static_argnames,
              donate_argnums=donate_argnums, donate_argnames=donate_argnames,
              keep_unused=keep_unused, device=device, backend=backend, inline=inline,
              compiler_options=compiler_options)
    if in_shardings is not None or out_shardings is not None:
        from xform.experimental.layout import strip_formats  # deferred: keeps `import xform` light
        in_shardings = strip_formats(in_shardings, "jit in_shardings")
        out_shardings = strip_formats(out_shardings, "jit out_shardings")
        one = _single_device_of(in_shardings, out_shardings)
        if one is not False:          # None or one device's shardings only: a plain jit
            kw.update(in_shardings=None, out_shardings=None,
                      device=device if one is None else one)
            return (lambda f: JitWrapped(f, **kw)) if fun is None else JitWrapped(fun, **kw)
    if in_shardings is not None or out_shardings is not None:
        kw.update(in_shardings=None, out_shardings=None)
        make = lambda f: ShardedJit(JitWrapped(f, **kw), in_shardings, out_shardings)  # noqa
        return make if fun is None else make(fun)
    if fun is None:
        return lambda f: JitWrapped(f, **kw)
    return JitWrapped(fun, **kw)


def _pretty_mlir(text, debug_info):
    """The module in MLIR's custom (pretty) syntax, as JAX's ``Lowered.as_text()`` prints
    it (xform emits the generic syntax; both parse to the same module)."""
    from xform._src.lowering import export_mlir  # deferred: keeps `import xform` light
    try:
        module = export_mlir.stablehlo_module(text)
    except Exception:       # a module the MLIR parser refuses: its text as emitted
        return text
    return module.operation.get_asm(enable_debug_info=bool(debug_info))


def _compiler_ir(text, dialect):
    from xform._src.lowering import export_mlir  # deferred: keeps `import xform` light
    if dialect is None or dialect == "stablehlo":
        return export_mlir.stablehlo_module(text)
    if dialect == "hlo":
        return export_mlir.hlo_computation(text)
    raise ValueError(f"unknown dialect: {dialect}")


def _default_sharding():
    return S.SingleDeviceSharding(_devices.local_devices()[0])


def _single_device_of(*trees):
    """The one device if every sharding in ``trees`` is None or a SingleDeviceSharding
    of that device (None if all are None); False otherwise."""
    devs = set()
    for t in trees:
        for s in tree_leaves(t, is_leaf=lambda s: s is None or isinstance(
                s, (S.Sharding, S.PartitionSpec))):
            if s is None:
                continue
            if not isinstance(s, S.SingleDeviceSharding):
                return False
            devs.add(s._device)
    if len(devs) > 1:
        return False
    return next(iter(devs)) if devs else None


# ----------------------------------------------------------------- make_jaxpr / eval_shape


def _abstract_trace(fun, args, kwargs, static_argnums=(), name="make_jaxpr"):
    """Trace ``fun`` on the avals of ``args`` (statics passed through): (ClosedJaxpr,
    out_tree)."""
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    static_argnums = tuple(i + len(args) if i < 0 else i for i in static_argnums)
    dyn_idx = [i for i in range(len(args)) if i not in static_argnums]
    dyn_args = [args[i] for i in dyn_idx]
    leaves, treedef = tree_flatten((tuple(dyn_args), kwargs))
    # a high-level argument is traced as its arrays (_jit_hijax), raised again inside
    hi = None
    if any(_hi_aval(x) is not None for x in leaves):
        leaves, layout, muts = _jit_hijax.lower_args(leaves)
        hi = (layout, tuple((a, q, n) for _, a, q, n in muts))
    # a reference argument is traced as its value, inside a reference of the trace
    ref_pos = {i for i, x in enumerate(leaves) if isinstance(x, _Ref)}
    leaves = [_refs.read(x, name) if i in ref_pos else x for i, x in enumerate(leaves)]
    try:
        keys = _leaf_keys(leaves)
    except _InvalidLeaf as e:
        raise _invalid_arg_error(fun, dyn_args, kwargs, dyn_idx, e) from None
    avals = [ShapedArray(*k) for k in keys]
    store = {}

    def flat_fun(*tracers):
        # (what it writes into its caller's references is not applied: nothing runs)
        with _refs.Scope(name):
            tracers = [_Ref._make(t, t.aval) if i in ref_pos else t
                       for i, t in enumerate(tracers)]
            if hi is not None:
                tracers, _ = _jit_hijax.raise_args(tracers, *hi)
            dargs, dkw = treedef.unflatten(tracers)
            full = list(args)
            for i, a in zip(dyn_idx, dargs):
                full[i] = a
            out = fun(*full, **dkw)
        out_leaves, store["tree"] = tree_flatten(out)
        if name == "make_jaxpr" and any(_hi_aval(o) is not None for o in out_leaves):
            # the printed program returns the arrays of immutable high-level results
            out_leaves, _ = _jit_hijax.lower_outs(
                out_leaves, f"function {_fun_name(fun)} traced for {name}")
            store["tree"] = tree_flatten(tuple(out_leaves))[1]
        for i, o in enumerate(out_leaves):
            if isinstance(o, _Ref):
                raise _jit_refs.returned_ref_error(f"function {_fun_name(fun)} traced for "
                                                   f"{name}", o)
            if _hi_aval(o) is not None:
                raise TypeError(
                    f"{name}: function {_fun_name(fun)} returned a high-level value of type "
                    f"{_hi_aval(o)!s} (output leaf {i}); {name} of a function returning "
                    "high-level (hijax) values is not implemented by xform: return arrays")
        return out_leaves

    jaxpr, consts = trace_to_jaxpr(flat_fun, avals, name=name)
    return ClosedJaxpr(jaxpr, consts), store["tree"]


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False,
               abstracted_axes=None):
    """``make_jaxpr(f)(*args)`` -> the ClosedJaxpr ``f`` stages to (JAX's API).  Arguments
    may be arrays, scalars, ShapeDtypeStructs or pytrees of them."""
    if not callable(fun):
        raise TypeError(f"make_jaxpr: expected a callable, got {fun!r}")
    if abstracted_axes is not None:
        raise NotImplementedError("make_jaxpr(abstracted_axes=...): dynamic shapes are not "
                                  "supported; trace with concrete shapes.")
    if axis_env:
        raise NotImplementedError("make_jaxpr(axis_env=...): wrap the function in "
                                  "xform.vmap(..., axis_name=...) instead.")

    @_wraps(fun)
    def make(*args, **kwargs):
        # Equations staged on behalf of make_jaxpr itself (``make_jaxpr(jit(f))``'s jit)
        # have no user source, as in JAX: the caller's frame is not theirs.
        bounds = _staging_mod.source_boundaries()
        bounds.append(sys._getframe(1))
        try:
            closed, out_tree = _abstract_trace(fun, args, kwargs, static_argnums)
        finally:
            bounds.pop()
        if return_shape:
            return closed, out_tree.unflatten([_sds(a) for a in closed.out_avals])
        return closed
    return make


def eval_shape(fun, *args, **kwargs):
    """The output shapes/dtypes of ``fun(*args)`` as ShapeDtypeStructs, without running it."""
    if not callable(fun):
        raise TypeError(f"eval_shape: expected a callable, got {fun!r}")
    args, kwargs = tree_map(_as_shape_dtype, (args, kwargs))
    closed, out_tree = _abstract_trace(fun, args, kwargs, (), name="eval_shape")
    return out_tree.unflatten([_sds(a) for a in closed.out_avals])


def _as_shape_dtype(x):
    """eval_shape takes anything with a shape and a dtype (an aval such as ``ShapedArray``
    included, as JAX's does), not only arrays and ShapeDtypeStructs."""
    if isinstance(x, ShapedArray):
        return ShapeDtypeStruct(x.shape, x.dtype, weak_type=x.weak_type)
    return x


def _compile_with_xla(closed, **kwargs):
    from xform._src import lowering   # lazily: importing xform must not import jax/jaxlib
    return lowering.compile_jaxpr(closed, **kwargs)


_jit_prim.compiler = _compile_with_xla


def _xla_kernel(prim, vals, params, avals):
    """The eval trace's XLA kernel for a primitive whose NumPy bits differ from XLA's
    (``core.xla_kernel_hook``): loads ``lowering.eager_kernels`` on first use, which then
    installs its own ``run`` in place of this trampoline."""
    from xform._src.lowering import eager_kernels   # lazily: importing xform must not import jaxlib
    return eager_kernels.run(prim, vals, params, avals)


core.xla_kernel_hook = _xla_kernel

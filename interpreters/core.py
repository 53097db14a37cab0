"""The engine: abstract values, primitives, traces and tracers (stackless).

``Primitive.bind`` hands an operation to the *current* trace, held in a
thread-local.  Every transformation creates a trace whose ``parent`` is the
trace that was current when it started; while the user's function runs under
it, its rules re-bind primitives with the parent made current.  A tracer
belongs to exactly one trace; a value a trace does not own (a concrete array,
a constant, or a tracer of an ancestor trace) is lifted, so a closed-over outer
tracer is a constant to an inner transformation (no perturbation confusion).

The root is the eager ``EvalTrace``: it runs a primitive's NumPy reference
implementation on host arrays (or, for arrays that live on an accelerator, a
single-primitive XLA executable supplied by the lowering layer).
"""
from __future__ import annotations

import contextlib
import gc
import itertools
import sys
import threading
import types

import numpy as np

from xform._src.interpreters import errors
from xform._src.interpreters import interrupts as _interrupts
from xform._src.interpreters.config import config
from xform._src.interpreters.dtypes import ExtendedDType, extended_by_struct
from xform._src.interpreters.dtypes import canonicalize_dtype
from xform._src.interpreters.dtypes import dtype_of
from xform._src.interpreters.dtypes import short_name

# ----------------------------------------------------------------- abstract values


type_sharding_impl = None   # set by xform.sharding: aval -> its type-level sharding


class ShapedArray:
    """An abstract value: what every tracer carries and every cache is keyed on."""

    __slots__ = ("shape", "dtype", "weak_type")

    @property
    def sharding(self):
        """The sharding that is part of this type (``xform.typeof(x).sharding``): unsharded
        over the current abstract mesh (xform.sharding supplies it)."""
        f = type_sharding_impl
        return None if f is None else f(self)

    def __init__(self, shape, dtype, weak_type=False, *, sharding=None, manual_axis_type=None,
                 memory_space=None):
        # JAX's keywords are accepted for code written against its constructor (flax's
        # scan rebuilds avals with the sharding it read from one): xform's types carry no
        # sharding of their own; the ``sharding`` property gives the one every value has.
        if type(shape) is not tuple:
            shape = tuple(shape)
        self.shape = shape
        if isinstance(dtype, np.dtype) and dtype.kind != "V":
            self.dtype = dtype
        elif isinstance(dtype, ExtendedDType):
            self.dtype = dtype
        else:
            dt = np.dtype(dtype)
            # a structured dtype that represents an extended one (concrete key arrays)
            self.dtype = extended_by_struct.get(dt, dt) if dt.kind == "V" else dt
        self.weak_type = weak_type if weak_type is False or weak_type is True \
            else bool(weak_type)
        # Every abstract value passes here, under every trace: refuse shapes whose element
        # count or byte size int64 cannot hold before XLA sees them (it aborts the process).
        n = _prod(shape)
        if type(n) is not int or not 0 < n < _EXTENT_FAST:
            _check_extent(shape, self.dtype)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def update(self, shape=None, dtype=None, weak_type=None):
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def strip_weak_type(self):
        return self if not self.weak_type else ShapedArray(self.shape, self.dtype, False)

    def to_tangent_aval(self):
        """The type of this type's tangents (JAX's name): the same shape and inexact
        dtype, not weak; ``float0`` for integer and boolean values."""
        from xform._src.interpreters.ad import tangent_aval  # deferred: import cycle
        return tangent_aval(self)

    # the hijax type interface (``jax.experimental.hijax``): an array type is its own
    # single low-level type, so a high-level type made of arrays lowers through these
    is_high = False
    has_qdd = False

    def normalize(self):
        """This type without its weak type (JAX's ``normalize``)."""
        return self.strip_weak_type()

    def lo_ty(self):
        return [self]

    def lower_val(self, x):
        return [x]

    def raise_val(self, x):
        return x

    def __eq__(self, other):
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def str_short(self, short_dtypes=True):
        dt = short_name(self.dtype) if short_dtypes else str(self.dtype.name)
        return f"{dt}[{','.join(str(d) for d in self.shape)}]"

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short(short_dtypes=False)}{weak})"


_INT64_MAX = (1 << 63) - 1
_EXTENT_FAST = 1 << 31       # below this many elements no dtype can overflow int64 bytes
_index = __import__("operator").index
_prod = __import__("math").prod


def _check_extent(shape, dtype):
    """Raise ValueError when a shape's dimensions, element count or byte size overflow
    int64 (the slow half of ``ShapedArray``'s check)."""
    try:
        dims = [_index(d) for d in shape]      # NumPy integers as exact Python ints
    except TypeError:                          # a symbolic dimension (shape polymorphism)
        return
    n = _prod(dims)
    if isinstance(dtype, ExtendedDType):
        phys = np.dtype(dtype.physical)
        itemsize = phys.itemsize * int(np.prod(getattr(dtype, "key_shape", ()) or (1,)))
    else:
        itemsize = dtype.itemsize
    if n < 0:       # negative dimensions are each primitive's own error; here only size
        return
    what = None
    if any(d > _INT64_MAX for d in dims):
        what = "a dimension larger than int64 can hold"
    elif n > _INT64_MAX:
        what = f"{n} elements, more than int64 can count"
    elif n * max(itemsize, 1) > _INT64_MAX:
        what = f"{n} elements of {itemsize} bytes ({n * itemsize} bytes), more than int64 " \
               "can address"
    if what is not None:
        name = getattr(dtype, "name", str(dtype))
        raise ValueError(f"array shape {tuple(dims)} with dtype {name} is too large: {what}. "
                         "No array this big can exist; check the shape computation (a "
                         "broadcast, tile, pad or outer product of large dimensions).")


def same_type(a: ShapedArray, b: ShapedArray) -> bool:
    """Shape and dtype equal (weak types may differ)."""
    return a.shape == b.shape and a.dtype == b.dtype


# ----------------------------------------------------------------- the current trace


class _State(threading.local):
    def __init__(self):
        self.trace = EVAL_TRACE


_gc_pause = {"depth": 0, "disabled": False}
_gc_lock = threading.Lock()


@contextlib.contextmanager
def gc_paused():
    """No cyclic garbage collection while tracing, simplifying or lowering a program.

    These phases allocate many long-lived objects (equations, variables, tracers, text)
    and no cyclic garbage; the collector's passes over the growing heap made them grow
    faster than linearly in the program's size.  Nests, across threads too: the
    collector is turned back on (if it was on) when the last pause ends."""
    with _gc_lock:
        if _gc_pause["depth"] == 0:
            _gc_pause["disabled"] = gc.isenabled()
            if _gc_pause["disabled"]:
                gc.disable()
        _gc_pause["depth"] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pause["depth"] -= 1
            if _gc_pause["depth"] == 0 and _gc_pause["disabled"]:
                _gc_pause["disabled"] = False
                gc.enable()


def current_trace() -> "Trace":
    return _state.trace


@contextlib.contextmanager
def set_current_trace(trace: "Trace"):
    prev = _state.trace
    _state.trace = trace
    try:
        yield trace
    finally:
        _state.trace = prev


# ----------------------------------------------------------------- primitives

impl_rules: dict = {}            # prim -> f(*numpy values, **params) -> numpy value(s)
abstract_eval_rules: dict = {}   # prim -> f(*avals, **params) -> aval or [avals]


class Primitive:
    """A named operation; every interpreter gives it a meaning through its rule table.

    ``multiple_results``: bind returns a list.  ``impl_takes_arrays``: the eager
    rule receives the original arguments (Arrays) instead of NumPy values and
    returns final outputs; used by higher-order primitives (jit, cond, scan)
    whose eager rule evaluates sub-programs or calls XLA.

    Flags the passes read (set by the primitive's own block in ``primitives/``):
    ``effectful`` (never removed as dead code, never merged), ``cse`` (False: two equal
    equations are still two calls, e.g. random or host callbacks), ``pp_name`` (the name
    the printed IR shows, when it differs from ``name``), ``missing_rules`` (rule kind
    -- ``"jvp"``, ``"batching"``, ``"lowering"`` -- to the reason this primitive has no
    such rule; the error for the missing rule quotes it, and the rule-coverage test
    accepts it).

    ``xla_eager_dtypes``: the operand dtypes (of the first operand) for which the NumPy
    impl's bits differ from XLA's (transcendentals, complex arithmetic, sums, dots): the
    eval trace then runs XLA's compiled kernel for this one primitive instead
    (``xla_kernel_hook``), so eager results equal ``jit``'s and JAX's bit for bit; the
    impl stays the reference (``xform_eager_numpy_numerics`` runs it eagerly again).
    """

    __slots__ = ("name", "multiple_results", "impl", "abstract_eval",
                 "impl_takes_arrays", "effectful", "cse", "pp_name", "missing_rules",
                 "xla_eager_dtypes", "_eager_fast",
                 "__weakref__")

    def __init__(self, name: str, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        self.impl = None
        self.abstract_eval = None
        self.impl_takes_arrays = False
        self.effectful = False
        self.cse = True
        self.pp_name = name
        self.missing_rules = {}
        self.xla_eager_dtypes = frozenset()

    def __setattr__(self, name, value):
        # Any change of a rule invalidates the cached eager fast path (see ``eager_fast``).
        object.__setattr__(self, name, value)
        if name != "_eager_fast":
            object.__setattr__(self, "_eager_fast", None)

    def __repr__(self):
        return self.name

    def bind(self, *args, **params):
        return _state.trace.process_primitive(self, args, params)

    def eager_fast(self):
        """``f(weak, *numpy values) -> Array``: ``EvalTrace.process_primitive``'s common
        case for a param-less call on host values, minus the generic argument loop.

        ``weak`` says whether every operand is weakly typed, which the caller knows from
        its operands without building a tuple; the callers pass operands of one shape
        and one dtype the primitive accepts (so its shape rule cannot fail), and the
        result's weak type is the shape rule's answer for that flag, asked once per
        flag.  Exists only for primitives with a NumPy impl, a shape rule and one
        result; ``None`` otherwise.  Eager fast paths (the ``xform.numpy`` ufuncs and
        the Python operators, on host Arrays under the eval trace) call this instead
        of ``bind`` so the semantics stay here, next to the eval trace.
        """
        f = self._eager_fast
        if f is None:
            if (self.impl is None or self.impl_takes_arrays or self.multiple_results
                    or self.abstract_eval is None):
                f = False
            else:
                f = _make_eager_fast(self)
            object.__setattr__(self, "_eager_fast", f)
        return f or None

    def def_impl(self, fn):
        self.impl = fn
        impl_rules[self] = fn
        return fn

    def get_bind_params(self, params):
        """The params to re-bind an equation of this primitive with
        (``prim.bind(*args, **prim.get_bind_params(eqn.params))``, JAX 0.10's interface:
        xform's equations hold programs, never functions, so they are the params)."""
        return params

    def def_abstract_eval(self, fn):
        self.abstract_eval = fn
        abstract_eval_rules[self] = fn
        return fn


# ----------------------------------------------------------------- traces and tracers

_trace_ids = itertools.count()


class Trace:
    """One running transformation.  ``level`` is its depth below the eval root."""

    def __init__(self, parent: "Trace | None", name: str = ""):
        self.parent = parent
        self.level = 0 if parent is None else parent.level + 1
        self.valid = True
        self.tag = next(_trace_ids)
        self.name = name
        self.origin = errors.user_location(2) if parent is not None else ""

    def process_primitive(self, prim, args, params):
        raise NotImplementedError

    def invalidate(self):
        self.valid = False

    @property
    def main(self):
        """What identifies this transformation (JAX's name; libraries compare
        ``tracer._trace.main is main`` to find their own tracers)."""
        return self

    def check_foreign_tracer(self, x: "Tracer"):
        """A tracer not owned by this trace must belong to a live ancestor."""
        t = x._trace
        if not t.valid or t.level >= self.level:
            raise errors.UnexpectedTracerError(
                f"Encountered an unexpected tracer {x.aval.str_short()} from a "
                f"{t.name or type(t).__name__} transformation that was started at {t.origin} "
                f"{'and has already finished' if not t.valid else 'and is not active here'}. "
                "A traced value escaped its transformation (stored in a global, a closure, "
                "or a Python object that outlived the call). Return the value from the "
                "transformed function instead of storing it.")

    def __repr__(self):
        return f"{type(self).__name__}(level={self.level})"


class ArrayOps:
    """Operator surface shared by ``Array`` and every ``Tracer``.

    The methods are installed by ``xform`` at import time (they are written in
    terms of ``xform.numpy``, a higher layer).
    """

    __slots__ = ()
    __array_priority__ = 100

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d array)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            kind = "key " if isinstance(self.dtype, ExtendedDType) else ""
            raise TypeError(f"iteration over a 0-d {kind}array")
        if type(self) is Array and self._npy is not None:
            # concrete host values: rows directly (what ``self[i]`` computes, without
            # binding slice + reshape per row); e.g. ``k1, k2 = random.split(key)``
            v, w = self._npy, self.weak_type
            return (Array(v[i, ...], w) for i in range(v.shape[0]))
        return (self[i] for i in range(self.shape[0]))


_TRACER_OWN = frozenset({"aval", "_trace", "primal", "tangent", "val", "batch_dim", "py"})


class Tracer(ArrayOps):
    """A value inside a transformation.  Subclasses provide ``aval``."""

    __slots__ = ("_trace",)

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    def __getattr__(self, name):
        # A tracer of a high-level (hijax) value forwards to its type: an
        # ``aval_method`` is called with the tracer, an ``aval_property`` read from it,
        # any other attribute of the type returned (JAX's ``Tracer.__getattr__``).
        missing = AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        if name.startswith("__") or name in _TRACER_OWN:
            raise missing
        try:
            aval = self.aval
        except Exception:
            raise missing from None
        if not getattr(aval, "is_high", False):
            raise missing
        try:
            attr = getattr(aval, name)
        except AttributeError:
            raise missing from None
        kind = getattr(type(attr), "_xform_aval_kind", None)
        if kind == "method":
            return types.MethodType(attr.fun, self)
        if kind == "property":
            return attr.fget(self)
        return attr

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return len(self.aval.shape)

    @property
    def size(self):
        return self.aval.size

    @property
    def weak_type(self):
        return self.aval.weak_type

    def to_concrete_value(self):
        """A concrete NumPy value if this tracer knows one (JVP of a concrete primal)."""
        return None

    def _concrete(self, error_cls, context):
        v = self.to_concrete_value()
        if v is None:
            raise error_cls(self, context)
        return v

    def __bool__(self):
        if self.size != 1:
            raise ValueError(f"The truth value of an array with shape {self.shape} is ambiguous. "
                             "Use a.any() or a.all().")
        return bool(self._concrete(errors.TracerBoolConversionError,
                                   "the truth value of a traced array (Python `if`, `while`, "
                                   "`and`/`or`, or bool())"))

    def __int__(self):
        return int(self._concrete(errors.TracerIntegerConversionError,
                                  "int() of a traced array"))

    def __index__(self):
        if self.dtype.kind not in "iub":
            raise TypeError(f"only integer arrays can be used as an index; got {self.aval.str_short()}")
        return int(self._concrete(errors.TracerIntegerConversionError,
                                  "a traced array used as a Python index (operator.index)"))

    def __float__(self):
        return float(self._concrete(errors.ConcretizationTypeError, "float() of a traced array"))

    def __complex__(self):
        return complex(self._concrete(errors.ConcretizationTypeError, "complex() of a traced array"))

    def item(self):
        return self._concrete(errors.ConcretizationTypeError, ".item() of a traced array").item()

    def __copy__(self):
        # a traced value is immutable: its copy is itself (a fresh buffer comes out of the
        # compiled program); copying the tracer object would detach it from its trace
        return self

    def __deepcopy__(self, memo):
        return self

    def tolist(self):
        return np.asarray(self._concrete(
            errors.ConcretizationTypeError,
            "The tolist() method was called on traced array: .tolist() of a traced "
            "array")).tolist()

    def tobytes(self, order="C"):
        return np.asarray(self._concrete(
            errors.ConcretizationTypeError,
            "The tobytes() method was called on traced array: .tobytes() of a traced "
            "array")).tobytes(order)

    def __array__(self, dtype=None, copy=None):
        v = self.to_concrete_value()
        if v is None:
            raise errors.TracerArrayConversionError(
                f"The numpy.ndarray conversion method __array__() was called on a traced array "
                f"{self.aval.str_short()} (at {errors.user_location(2)}). NumPy functions cannot "
                "run on traced values: use the xform.numpy equivalent instead of numpy.")
        return np.asarray(v, dtype=dtype)

    def __hash__(self):
        raise TypeError(f"unhashable type: traced array {self.aval.str_short()}. Traced arrays "
                        "cannot be dictionary keys, set members or static arguments.")

    def __setitem__(self, idx, value):
        raise TypeError(
            "xform arrays are immutable and do not support in-place item assignment. "
            "Instead of x[idx] = y, use x = x.at[idx].set(y).")

    def __repr__(self):
        return f"Traced<{self.aval!r}>with<{type(self._trace).__name__}>"

    __str__ = __repr__


def aval_text(aval, weak=True) -> str:
    """``float32[3,4]`` (``~float32[]`` when weakly typed), as JAX's tracer reprs show avals."""
    mark = "~" if weak and aval.weak_type else ""
    return f"{mark}{aval.str_short(short_dtypes=False)}"


def value_text(x) -> str:
    """A value inside a tracer repr: tracers as their repr, arrays as NumPy prints them."""
    if isinstance(x, Tracer):
        return repr(x)
    if isinstance(x, Array):
        x = x._value if x._value is not None else np.asarray(x)
    return str(np.asarray(x))


# ----------------------------------------------------------------- concrete arrays


KEY_CONVERSION_MESSAGE = (
    "JAX array with PRNGKey dtype cannot be converted to a NumPy array. Use "
    "jax.random.key_data(arr) if you wish to extract the underlying integer array.")


ALWAYS_LITERAL = sys.maxsize    # the ``_born`` of an Array staged as a literal by every trace


class Array(ArrayOps):
    """The concrete, immutable array users hold.

    Backed by a NumPy array (host, the eager path) and/or a device buffer from
    the lowering layer (jit outputs, arrays placed on an accelerator).  The
    NumPy view is materialised lazily and cached.
    """

    # ``_born``: the tag of the trace that was current when the Array was made
    # (``ALWAYS_LITERAL`` for ``internal_constant``s, -1 for executables' results).  A staging
    # trace stages a scalar Array made under itself (or under a trace started inside it)
    # as a literal: it stands for what is a constant-folded tracer in JAX (``x * 2.0``'s
    # promoted ``2.0``, a cotangent seed, a loop counter's start).  An Array made before
    # the trace began is a concrete array the function closes over, a constant of the
    # program whatever its shape, as in JAX.
    __slots__ = ("_npy", "_buf", "weak_type", "_committed", "_deleted", "_born",
                 "__weakref__")

    def __init__(self, value=None, weak_type=False, buf=None, committed=False):
        self._npy = value
        self._buf = buf
        self.weak_type = weak_type
        self._committed = committed
        self._deleted = False
        self._born = _state.trace.tag

    @classmethod
    def internal_constant(cls, value, weak_type=False):
        """A scalar constant that xform's own functions keep and reuse (``mean``'s element
        count): staged as a literal under every trace, as the NumPy scalar JAX's
        functions use there would be, wherever it was first made."""
        a = cls(value, weak_type)
        a._born = ALWAYS_LITERAL
        return a

    @classmethod
    def _from_buf(cls, buf, weak_type=False, committed=False):
        """An Array over a device buffer (jit outputs): the constructor's fields set
        directly, without argument defaults (the jit dispatch path makes one per output)."""
        a = _new_array(cls)
        a._npy = None
        a._buf = buf
        a.weak_type = weak_type
        a._committed = committed
        a._deleted = False
        a._born = -1            # computed eagerly by an executable: never a literal
        return a

    # -- storage
    @property
    def _value(self):
        v = self._npy
        if v is None:
            if self._deleted:
                raise self._deleted_error()
            try:
                v = buffer_to_host(self._buf)
            except Exception:
                b = self._buf
                if getattr(b, "is_deleted", None) is not None and b.is_deleted():
                    self._mark_deleted()       # donated through another Array on this buffer
                    raise self._deleted_error() from None
                raise
            self._npy = v
        return v

    # -- deletion (``delete()``, or donation to a jitted computation).  A deleted Array
    #    keeps its shape and dtype (as JAX's does); every use of its value or storage
    #    raises the error below.
    def _mark_deleted(self):
        """Drop the storage, remembering shape and dtype (``_deleted`` holds them)."""
        if not self._deleted:
            meta = (self.shape, self.dtype)
            self._npy = None
            self._deleted = meta

    def _deleted_error(self, what=None):
        """JAX's RuntimeError for any use of a deleted Array; ``what`` names the use."""
        use = f" (in {what})" if what else ""
        return RuntimeError(
            f"Array has been deleted with shape={self.aval.str_short(False)}{use}. It was "
            "donated to a jitted computation (donate_argnums) or deleted with .delete(); use "
            "the computation's output instead, or do not donate this argument.")

    @property
    def on_host(self) -> bool:
        """True when eager ops can run on it with NumPy (no accelerator buffer)."""
        return self._buf is None or _buffer_is_cpu(self._buf)

    @property
    def shape(self):
        v = self._npy
        if v is not None:
            return v.shape
        b = self._buf
        return tuple(b.aval.shape) if b is not None else self._deleted[0]

    @property
    def dtype(self):
        v = self._npy
        if v is not None:
            dt = v.dtype
        else:
            b = self._buf
            if b is None:
                return self._deleted[1]
            dt = np.dtype(b.aval.dtype)
        if dt.kind == "V" and dt in extended_by_struct:   # a typed PRNG key array
            return extended_by_struct[dt]
        return dt

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        v = self._npy
        return v.size if v is not None else int(np.prod(self.shape, dtype=np.int64))

    @property
    def aval(self):
        return ShapedArray(self.shape, self.dtype, self.weak_type)

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def itemsize(self):
        return self.dtype.itemsize

    def to_concrete_value(self):
        return self._value

    # -- Python protocol on concrete values
    def _is_key_array(self):
        v = self._npy
        if v is None and self._buf is None:   # deleted
            return False
        dt = v.dtype if v is not None else np.dtype(self._buf.aval.dtype)
        return dt.kind == "V" and dt in extended_by_struct

    def _refuse_key_conversion(self, exc=TypeError):
        """Typed PRNG key arrays are not data: like JAX, they refuse to become NumPy
        arrays or Python scalars (their words are reachable through ``key_data``)."""
        if self._is_key_array():
            raise exc(KEY_CONVERSION_MESSAGE)

    def __array__(self, dtype=None, copy=None):
        self._refuse_key_conversion()
        v = np.asarray(self._value)
        if v.flags.writeable:
            v = v.view()
            v.flags.writeable = False
        if dtype is not None and np.dtype(dtype) != v.dtype:
            return v.astype(dtype)
        if copy:
            return v.copy()
        return v

    def __bool__(self):
        if self._is_key_array():
            raise TypeError("key array cannot be converted to boolean.")
        if self.size != 1:
            raise ValueError(f"The truth value of an array with shape {self.shape} is ambiguous. "
                             "Use a.any() or a.all().")
        return bool(self._value)

    def __int__(self):
        self._refuse_key_conversion()
        return int(self._value)

    def __float__(self):
        self._refuse_key_conversion()
        return float(self._value)

    def __complex__(self):
        self._refuse_key_conversion()
        return complex(self._value)

    def __index__(self):
        self._refuse_key_conversion()
        if self.dtype.kind not in "iub":
            raise TypeError(f"only integer arrays can be used as an index; got dtype {self.dtype}")
        return int(self._value)

    def item(self, *args):
        self._refuse_key_conversion()
        return np.asarray(self._value).item(*args)

    def tolist(self):
        self._refuse_key_conversion()
        return np.asarray(self._value).tolist()

    def tobytes(self, order="C"):
        self._refuse_key_conversion()
        return np.asarray(self._value).tobytes(order)

    def __hash__(self):
        raise TypeError("unhashable type: 'Array'. Arrays are mutable-looking values; use a "
                        "tuple of Python numbers or x.item() as a key.")

    def __setitem__(self, idx, value):
        raise TypeError(
            "'Array' object does not support item assignment: xform arrays are immutable. "
            "Instead of x[idx] = y, use x = x.at[idx].set(y).")

    def __reduce__(self):
        return (_rebuild_array, (np.asarray(self._value), self.weak_type))

    def block_until_ready(self):
        if _closing[0]:
            _interrupts.check_open("wait for an array")
        if self._deleted:
            raise self._deleted_error("block_until_ready()")
        if self._buf is not None:
            self._buf.block_until_ready()
        return self

    def copy_to_host_async(self):
        """Start copying the array to host memory without waiting (a later
        ``np.asarray(x)`` then finds it there).  Returns None."""
        self._refuse_key_conversion()
        if self._deleted:
            raise self._deleted_error("copy_to_host_async()")
        start = getattr(self._buf, "copy_to_host_async", None)
        if start is not None:
            start()

    # -- placement (JAX's names).  The engine knows no devices: the runtime above it
    #    answers these through the placement it installs (``set_placement``).
    def devices(self):
        """The set of devices holding this array."""
        if self._deleted:
            raise self._deleted_error("devices()")
        return _placement().devices(self)

    @property
    def device(self):
        """The device holding this array (its sharding, when it spans several)."""
        return _placement().device(self)

    @property
    def committed(self):
        return self._committed

    @property
    def sharding(self):
        return _placement().sharding(self)

    @property
    def format(self):
        """The array's layout and sharding (``xform.experimental.layout.Format``)."""
        return _placement().format(self)

    @property
    def addressable_shards(self):
        if self._deleted:
            raise self._deleted_error("addressable_shards")
        return _placement().addressable_shards(self)

    global_shards = addressable_shards

    def addressable_data(self, index):
        return self.addressable_shards[index].data

    @property
    def is_fully_replicated(self):
        return self.sharding.is_fully_replicated

    @property
    def is_fully_addressable(self):
        return self.sharding.is_fully_addressable

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self._refuse_key_conversion()
        if self._deleted:
            raise self._deleted_error("__dlpack__")
        return _placement().dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        return _placement().dlpack_device(self)

    def unsafe_buffer_pointer(self):
        """The address of the array's device buffer, as JAX's (an array held on the host
        is placed on the default device first and keeps that buffer)."""
        self._refuse_key_conversion()
        if self._deleted:
            raise self._deleted_error("unsafe_buffer_pointer()")
        return _placement().unsafe_buffer_pointer(self)

    def is_deleted(self):
        return bool(self._deleted)

    def delete(self):
        if self._buf is not None:
            self._buf.delete()
        self._mark_deleted()

    def copy(self):
        return Array(np.array(self._value), self.weak_type)

    def __copy__(self):        # a new buffer, as JAX's copy.copy of an array
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __format__(self, spec):
        if self._is_key_array():   # JAX formats key arrays as their repr
            return format(str(self), spec)
        if self.ndim == 0:
            return format(self._value.item(), spec)
        return format(str(self), spec)

    def __repr__(self):
        if self._deleted:      # printable (for debuggers and error messages), not readable
            return f"Array(<deleted>, shape={self.shape}, dtype={self.dtype.name})"
        v = np.asarray(self._value)
        if v.dtype.kind == "V" and v.dtype in extended_by_struct:   # typed keys, as JAX
            words = np.ascontiguousarray(v[v.dtype.names[0]])
            return (f"Array({v.shape}, dtype={extended_by_struct[v.dtype].name}) overlaying:\n"
                    f"{words}")
        prefix = "Array("
        dtype_str = f"dtype={v.dtype.name}" + (", weak_type=True" if self.weak_type else "")
        line_width = np.get_printoptions()["linewidth"]
        if v.size == 0:
            body = f"[], shape={v.shape}"
        else:
            body = np.array2string(v, prefix=prefix, suffix=",", separator=", ",
                                   max_line_width=line_width)
        # JAX's layout: when the dtype does not fit on the last line, the separator is
        # len(prefix) spaces (sic, on the same line)
        last_line_len = len(body) - body.rfind("\n") + 1
        sep = " " * len(prefix) if last_line_len + len(dtype_str) + 2 > line_width else " "
        return f"{prefix}{body},{sep}{dtype_str})"

    def __str__(self):
        v = np.asarray(self._value)
        if v.dtype.kind == "V" and v.dtype in extended_by_struct:   # typed keys, as JAX
            return repr(self)
        return str(v)

    def _repr_html_(self):
        import html  # deferred: keeps `import xform` light
        return f"<pre>{html.escape(repr(self))}</pre>"


_new_array = object.__new__
_closing = _interrupts.closing


def _rebuild_array(value, weak_type):
    return Array(value, weak_type)


def buffer_to_host(buf):
    """A device buffer's value as a read-only NumPy array (``lowering.runtime`` installs
    its version, which also reads dtypes NumPy's buffer protocol does not know)."""
    return np.asarray(buf)


def _buffer_is_cpu(buf) -> bool:
    try:
        if len(buf._sharding.device_set) > 1:   # sharded: eager ops run partitioned
            return False
        return buf.platform() == "cpu" if callable(getattr(buf, "platform", None)) else \
            next(iter(buf.devices())).platform == "cpu"
    except Exception:
        return True


def is_weak(x) -> bool:
    if type(x) in (int, float, complex, bool):
        return True
    return bool(getattr(x, "weak_type", False))


# Python type -> function giving a value of that type its abstract value (JAX's
# ``jax.core.pytype_aval_mappings``): get_aval consults it for types it does not know
# itself, looking along the type's MRO, so libraries can register array-like types.
pytype_aval_mappings: dict = {}


def registered_aval(x):
    """The abstract value ``pytype_aval_mappings`` gives ``x`` (by its type's MRO), or
    None if its type is not registered."""
    for base in type(x).__mro__:
        rule = pytype_aval_mappings.get(base)
        if rule is not None:
            return rule(x)
    return None


def get_aval(x) -> ShapedArray:
    """The abstract value of any array-like the engine accepts as an argument."""
    if isinstance(x, (Tracer, Array)):
        return x.aval
    t = type(x)
    if t in (int, float, complex, bool):
        return ShapedArray((), dtype_of(x), t is not bool)
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(x.shape, canonicalize_dtype(x.dtype), False)
    aval = registered_aval(x)
    if aval is not None:
        return aval
    if getattr(x, "__jax_array__", None) is not None:
        raise jax_array_error()
    if getattr(t, "_xform_not_an_array", False):     # an array reference (refs.Ref)
        raise TypeError(f"Value {x!r} of type {t.__name__} is not a valid xform array "
                        "type: read an array reference's value first (ref[...]).")
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return ShapedArray(x.shape, x.dtype, bool(getattr(x, "weak_type", False)))
    raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid xform array type. "
                    "Use an xform Array, a NumPy array or a Python scalar.")


def jax_array_error():
    """JAX's error for an object with ``__jax_array__`` where an array's abstract value is
    needed (a primitive's operand, a transformation's argument): only the ``numpy``
    functions (and ``convert_element_type``) convert such objects."""
    return ValueError(
        "Triggering __jax_array__() during abstractification is no longer supported. To "
        "avoid this error, either explicitly convert your object using xform.numpy.array(), "
        "or register your object as a pytree.")


# ----------------------------------------------------------------- eager evaluation

device_impl_hook = None   # set by lowering: f(prim, args, params) for non-CPU arrays

# Set by xform (a trampoline that loads ``lowering.eager_kernels``, which installs itself):
# ``f(prim, vals, params, avals) -> value(s) or None``: the primitive run by XLA's
# compiled kernel on host values (None: run the NumPy impl).  For primitives whose
# ``xla_eager_dtypes`` holds the first operand's dtype.
xla_kernel_hook = None

_placement_impl = None    # set by xform: answers Array.devices()/.sharding/__dlpack__/...


def set_placement(impl):
    """Install the object that answers ``Array``'s placement properties."""
    global _placement_impl
    _placement_impl = impl


def _placement():
    if _placement_impl is None:
        raise RuntimeError("Array placement (devices, sharding, DLPack) needs the xform "
                           "runtime: import xform first.")
    return _placement_impl


class EvalTrace(Trace):
    """The root interpreter: run each primitive's reference implementation now."""

    def __init__(self):
        super().__init__(None, "eval")

    def process_primitive(self, prim, args, params):
        if prim.impl_takes_arrays:
            for a in args:
                if isinstance(a, Tracer):
                    self.check_foreign_tracer(a)
            return prim.impl(*args, **params)
        vals = []
        on_device = False
        for a in args:
            ta = type(a)
            if ta is Array:
                if a._npy is None:
                    if a._deleted:
                        raise a._deleted_error(prim.name)
                    if not _buffer_is_cpu(a._buf):
                        on_device = True
                        continue
                vals.append(a._value)
            elif isinstance(a, Tracer):
                self.check_foreign_tracer(a)
            else:
                vals.append(a)
        # The shape rule runs eagerly too: misuse gets the rule's error (not NumPy's),
        # and the results' weak types are the rule's, as under every other trace.
        rule = prim.abstract_eval
        avals = [get_aval(a) for a in args]
        out_aval = rule(*avals, **params) if rule is not None else None
        if on_device:
            return device_impl_hook(prim, args, params)
        out = None
        if prim.xla_eager_dtypes and _xla_numerics and xla_kernel_hook is not None and \
                avals and getattr(avals[0], "dtype", None) in prim.xla_eager_dtypes:
            out = xla_kernel_hook(prim, vals, params, avals)
        if out is None:
            out = prim.impl(*vals, **params)
        if prim.multiple_results:
            if out_aval is None:
                weaks = [_all_weak(args)] * len(out)
            else:
                weaks = [getattr(o, "weak_type", False) for o in out_aval]
            outs = [Array(o, w) for o, w in zip(out, weaks)]
            if _debug_checks_on:
                for o in outs:
                    _check_nans(prim, o)
            return outs
        weak = _all_weak(args) if out_aval is None else getattr(out_aval, "weak_type", False)
        res = Array(out, weak)
        if _debug_checks_on:
            _check_nans(prim, res)
        return res

    def check_foreign_tracer(self, x):
        t = x._trace
        raise errors.UnexpectedTracerError(
            f"Encountered an unexpected tracer {x.aval.str_short()} outside of any transformation. "
            f"It was created by a {t.name or type(t).__name__} transformation started at "
            f"{t.origin}, which has already finished: a traced value escaped (stored in a global, "
            "a closure or an object). Return values from the transformed function instead.")


# NumPy warns on overflow/invalid/divide where XLA is silent, so reference impls run
# with NumPy's error state set to "ignore".  np.errstate costs ~2us; setting NumPy's
# error-state context variable directly costs ~0.2us.
try:
    from numpy._core._multiarray_umath import _make_extobj as _mk_extobj
    from numpy._core._ufunc_config import _extobj_contextvar as _np_errvar
    _NP_IGNORE = _mk_extobj(all="ignore")
    _errset, _errreset = _np_errvar.set, _np_errvar.reset
except ImportError:  # pragma: no cover  (other NumPy layouts)
    _errset = None


def quiet(fn):
    """``fn`` run with NumPy floating-point warnings off (an impl wrapper).

    The unwrapped function stays reachable as ``quiet_fn`` so the eager fast
    path (``Primitive.eager_fast``) can set the error state itself, one call
    frame shorter.
    """
    if _errset is None:  # pragma: no cover
        impl = np.errstate(all="ignore")(fn)
    else:
        def impl(*args, **params):
            tok = _errset(_NP_IGNORE)
            try:
                return fn(*args, **params)
            finally:
                _errreset(tok)
    impl.__name__ = getattr(fn, "__name__", "impl")
    impl.quiet_fn = fn
    return impl


def _make_eager_fast(prim):
    impl = prim.impl
    inner = getattr(impl, "quiet_fn", None) if _errset is not None else None
    rule = prim.abstract_eval
    weak_out = {}      # operands' weak flag -> the result's, as the shape rule says

    def out_weak(weak, vals):
        w = weak_out.get(weak)
        if w is None:
            avals = [ShapedArray(np.shape(v), v.dtype, weak) for v in vals]
            w = weak_out[weak] = bool(rule(*avals).weak_type)
        return w

    if inner is None:
        def eager_fast(weak, *vals):
            out = Array(impl(*vals), out_weak(weak, vals))
            if _debug_checks_on:
                _check_nans(prim, out)
            return out
    else:
        def eager_fast(weak, *vals):
            tok = _errset(_NP_IGNORE)
            try:
                out = inner(*vals)
            finally:
                _errreset(tok)
            out = Array(out, out_weak(weak, vals))
            if _debug_checks_on:
                _check_nans(prim, out)
            return out
    if prim.xla_eager_dtypes:
        numpy_fast, xla_dtypes, no_params = eager_fast, prim.xla_eager_dtypes, {}

        def eager_fast(weak, *vals):
            h = xla_kernel_hook
            if _xla_numerics and h is not None and vals[0].dtype in xla_dtypes:
                out = h(prim, vals, no_params, None)
                if out is not None:
                    out = Array(out, out_weak(weak, vals))
                    if _debug_checks_on:
                        _check_nans(prim, out)
                    return out
            return numpy_fast(weak, *vals)
    eager_fast.__name__ = f"{prim.name}_eager_fast"
    return eager_fast


def _all_weak(args):
    if not args:
        return False
    for a in args:
        if not getattr(a, "weak_type", False):
            return False
    return True


_debug_checks_on = False


def _update_debug_flag(_=None):
    global _debug_checks_on
    _debug_checks_on = bool(config.jax_debug_nans or config.jax_debug_infs)


config.on_change("jax_debug_nans", _update_debug_flag)
config.on_change("jax_debug_infs", _update_debug_flag)

_xla_numerics = not config.xform_eager_numpy_numerics   # see Primitive.xla_eager_dtypes


def _update_xla_numerics(value):
    global _xla_numerics
    _xla_numerics = not value


config.on_change("xform_eager_numpy_numerics", _update_xla_numerics)


def _check_nans(prim, arr):
    v = np.asarray(arr._value)
    if v.dtype.kind not in "fc" and "float" not in v.dtype.name:
        return
    vv = v.astype(np.complex128 if v.dtype.kind == "c" else np.float64)
    if config.jax_debug_nans and np.isnan(vv).any():
        raise FloatingPointError(f"invalid value (nan) encountered in {prim.name}")
    if config.jax_debug_infs and np.isinf(vv).any():
        raise FloatingPointError(f"divide by zero or overflow (inf) encountered in {prim.name}")


EVAL_TRACE = EvalTrace()
_state = _State()


@contextlib.contextmanager
def running(trace: Trace):
    """Make ``trace`` current while the user's function runs; invalidate it after."""
    prev = _state.trace
    _state.trace = trace
    try:
        yield trace
    finally:
        _state.trace = prev
        trace.invalidate()


# ----------------------------------------------------------------- helpers for rules


def concrete_or_error(x, context: str = ""):
    """The concrete NumPy value of ``x`` or a ConcretizationTypeError (for static params)."""
    if isinstance(x, Tracer):
        v = x.to_concrete_value()
        if v is None:
            raise errors.ConcretizationTypeError(x, context)
        return np.asarray(v)
    if isinstance(x, Array):
        return np.asarray(x._value)
    return x

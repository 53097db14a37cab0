"""``xform.ref`` (JAX's ``jax.ref``): mutable array references.

``xform.new_ref(x)`` makes a ``Ref``: a mutable box holding an array of a fixed type
(``Ref{float32[3]}``).  Read it with ``ref[idx]`` (``get``), write it with
``ref[idx] = v`` (``set``), ``swap`` (write and return the old value) and
``addupdate`` (``ref[idx] += v``); ``freeze`` returns its value, ``free_ref`` ends its
life.  Refs work eagerly, under ``jit`` (as arguments, closed over, or created inside),
in the bodies of ``scan``/``fori_loop``/``while_loop``/``cond``, and under ``grad``/
``vmap`` as JAX allows.  How their effects are discharged while tracing is described
in the engine's ``interpreters/refs.py``; the restrictions are JAX's (no returning a
reference from ``jit`` or a loop body, no aliasing, no writing differentiated or
batched values into references the transformation closes over).
"""
from __future__ import annotations

import builtins

import numpy as np

from xform._src.interpreters import core as _core
from xform._src.interpreters import refs as _refs
from xform._src.interpreters.refs import AbstractRef, Ref

__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get",
           "new_ref", "set", "swap"]


def _xnp():
    import xform.numpy as xnp     # (xform.numpy imports this module's package first)
    return xnp


def _is_whole(idx):
    if idx is None or idx is Ellipsis:
        return True
    return type(idx) is tuple and (len(idx) == 0 or (len(idx) == 1 and idx[0] is Ellipsis))


def _check_index(ref, idx):
    """The indexers JAX's references accept: integers, integer arrays, slices with a
    positive step and one ``...``; no ``None`` inside a tuple, no boolean masks."""
    if _is_whole(idx):
        return
    t = idx if type(idx) is tuple else (idx,)
    if sum(i is Ellipsis for i in t) > 1:
        raise ValueError("Only one ellipsis is supported.")
    for i in t:
        if i is None:
            raise ValueError(
                f"Indexing an array reference with None (np.newaxis) is not supported: "
                f"indices={t!r}, shape={ref._aval.shape}. Read the value first "
                "(ref[...][None]).")
        if isinstance(i, slice) and i.step is not None and \
                not isinstance(i.step, (_core.Tracer,)) and int(i.step) < 1:
            raise ValueError(f"slice must have a step >= 1 (found: {i.step})")
        dt = getattr(i, "dtype", None)
        if dt is not None and np.dtype(dt) == np.bool_ or isinstance(i, builtins.bool):
            from xform.errors import NonConcreteBooleanIndexError   # an IndexError
            shape = getattr(i, "shape", ())
            raise NonConcreteBooleanIndexError(
                f"Array boolean indices must be concrete; got bool{list(shape)}: an array "
                "reference is indexed as under a trace. Use integer indices "
                "(jnp.nonzero(mask)) or read the value first (ref[...][mask]).")
    n = sum(i is not Ellipsis for i in t)
    if n > len(ref._aval.shape):
        raise ValueError(f"`indices` must not be longer than `shape`: indices={t!r}, "
                         f"shape={ref._aval.shape}")


def _check_ref(ref, fname):
    if not isinstance(ref, Ref):
        raise ValueError(f"Can only call `{fname}` on a `Ref`: {ref!r}.")


def _as_value(x):
    if isinstance(x, Ref):
        raise ValueError("Cannot store a Ref into another Ref. Did you forget to load from "
                         "it using `[...]`?")
    if isinstance(x, (_core.Array, _core.Tracer)):
        return x
    return _xnp().asarray(x)


def _implicit_cast(dtype, v):
    """JAX's rule: a weakly typed value of the same kind (float into float, int into int)
    takes the reference's dtype; anything else must already have it."""
    a = v.aval
    if a.weak_type and (
            (np.issubdtype(dtype, np.floating) and np.issubdtype(a.dtype, np.floating)) or
            (np.issubdtype(dtype, np.integer) and np.issubdtype(a.dtype, np.integer))):
        from xform._src.primitives.elementwise import convert_element_type_p
        return convert_element_type_p.bind(v, new_dtype=np.dtype(dtype), weak_type=False)
    return v


def _index_aval(ref, val, idx):
    return val if _is_whole(idx) else val[idx]


def _strong(v):
    """What a write stores is never weakly typed (as JAX's: only ``new_ref`` of a Python
    scalar makes a weakly typed reference value)."""
    if v.aval.weak_type:
        from xform._src.primitives.elementwise import convert_element_type_p
        v = convert_element_type_p.bind(v, new_dtype=v.aval.dtype, weak_type=False)
    return v


def _check_update(ref, cur, v, idx, what):
    expected = _index_aval(ref, cur, idx).aval
    if expected.shape != v.aval.shape:
        raise ValueError(f"Invalid shape for `{what}`. Ref shape: {ref._aval.shape}. "
                         f"Expected shape: {expected.shape}. Value shape: {v.aval.shape}. "
                         f"Transforms: {_transforms(idx)}. ")
    if expected.dtype != v.aval.dtype:
        if what == "swap":
            raise ValueError(f"Invalid dtype for `swap`. Ref dtype: {expected.dtype}. "
                             f"Value dtype: {v.aval.dtype}. ")
        raise ValueError(f"Invalid dtype for `addupdate`. Ref dtype: {ref._aval.dtype}. "
                         f"Value shape: {v.aval.dtype}. ")


def _transforms(idx):
    return "()" if _is_whole(idx) else f"(NDIndexer({idx!r}),)"


def _to_ref_value(x, what):
    if isinstance(x, Ref):
        raise ValueError(f"{what}: cannot make a reference to a reference (no higher-order "
                         "refs); pass the array value instead (ref[...])")
    v = x if isinstance(x, (_core.Array, _core.Tracer)) else _xnp().asarray(x)
    if isinstance(x, (builtins.bool, int, float, complex)) and not isinstance(x, np.generic) \
            and not isinstance(v, _core.Tracer) and not v.aval.weak_type and \
            type(x) is not builtins.bool:
        from xform._src.primitives.elementwise import convert_element_type_p
        v = convert_element_type_p.bind(v, new_dtype=v.aval.dtype, weak_type=True)
    return v


def new_ref(init_val, *, memory_space=None, kind=None):
    """A new mutable array reference holding ``init_val`` (JAX's ``jax.new_ref``)."""
    v = _to_ref_value(init_val, "jax.new_ref")
    r = Ref._make(v, v.aval)
    r._kind = kind       # 'no_grad_no_remat': plumbing that differentiation leaves alone
    return r


def empty_ref(ty, memory_space=None):
    """A new reference of type ``ty`` (a ``ShapeDtypeStruct`` or an aval) whose contents
    are unspecified until written (xform fills it with zeros)."""
    shape, dtype = getattr(ty, "shape", None), getattr(ty, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"jax.empty_ref: expected a type with a shape and a dtype (a "
                        f"ShapeDtypeStruct), got {ty!r}")
    v = _xnp().zeros(tuple(shape), dtype)
    return Ref._make(v, v.aval)


def freeze(ref):
    """The value of ``ref`` as an Array (JAX's ``jax.freeze``)."""
    _check_ref(ref, "freeze")
    return _refs.read(ref, "jax.freeze")


def free_ref(ref):
    """End the life of ``ref``: using it afterwards (or freeing it again) raises."""
    _check_ref(ref, "free_ref")
    _refs.free(ref)


def get(ref, idx=None):
    """``ref[idx]``: read (part of) the referenced array (JAX's ``jax.ref.get``)."""
    _check_ref(ref, "ref_get")
    _check_index(ref, idx)
    val = _refs.read(ref, "jax.ref.get")
    return val if _is_whole(idx) else val[idx]


def swap(ref, idx, value, _function_name="ref_swap"):
    """Write ``value`` at ``ref[idx]`` and return the previous value there."""
    _check_ref(ref, _function_name)
    _check_index(ref, idx)
    value = _implicit_cast(ref._aval.dtype, _as_value(value))
    cur = _refs.read(ref, "jax.ref.swap")
    _check_update(ref, cur, value, idx, "swap")
    if _is_whole(idx):
        old, new = cur, value
    else:
        old = cur[idx]
        new = cur.at[idx].set(value)
    _refs.write(ref, _strong(new), "jax.ref.swap")
    return old


def set(ref, idx, value):  # noqa: A001  (JAX's name)
    """``ref[idx] = value`` (JAX's ``jax.ref.set``)."""
    swap(ref, idx, value, "ref_set")


def addupdate(ref, idx, x):
    """``ref[idx] += x`` in one operation (JAX's ``jax.ref.addupdate``)."""
    _check_ref(ref, "ref_addupdate")
    _check_index(ref, idx)
    x = _as_value(x)
    cur = _refs.read(ref, "jax.ref.addupdate")
    _check_update(ref, cur, x, idx, "addupdate")
    new = cur + x if _is_whole(idx) else cur.at[idx].add(x)
    _refs.write(ref, _strong(new), "jax.ref.addupdate")


# --------------------------------------------------------------- the Ref type's methods


def _ref_repr(self):
    if self._freed:
        return f"Ref(<freed>, {self._aval.str_short(short_dtypes=False)})"
    try:
        v = _refs.read(self, "repr")
    except Exception:        # (a reference whose scope ended: printable, not readable)
        return f"Ref{{{self._aval.str_short(short_dtypes=False)}}}"
    if type(v) is _core.Array:
        r = repr(v)
        return "Ref" + r[len("Array"):] if r.startswith("Array") else f"Ref({r})"
    return f"Ref({v!r})"


def _ref_len(self):
    if not self._aval.shape:
        raise TypeError("len() of unsized object")
    return self._aval.shape[0]


def _ref_at(self):
    raise NotImplementedError(
        "Ref.at: indexed views of array references are not supported (as in JAX 0.10.2); "
        "index the reference directly: ref[idx], ref[idx] = v")


def _unsafe_buffer_pointer(self):
    v = _refs.read(self, "unsafe_buffer_pointer")
    return v.unsafe_buffer_pointer()


Ref.__repr__ = _ref_repr
Ref.__str__ = _ref_repr
Ref.__len__ = _ref_len
Ref.__getitem__ = lambda self, idx: get(self, idx)
Ref.__setitem__ = lambda self, idx, v: set(self, idx, v)
Ref.at = property(_ref_at)
Ref.aval = property(lambda self: AbstractRef(self._aval))
Ref.shape = property(lambda self: self._aval.shape)
Ref.dtype = property(lambda self: self._aval.dtype)
Ref.weak_type = property(lambda self: self._aval.weak_type)
Ref.ndim = property(lambda self: len(self._aval.shape))
Ref.size = property(lambda self: int(np.prod(self._aval.shape, dtype=np.int64)))
Ref.addupdate = lambda self, x, idx=None: addupdate(self, idx, x)
Ref.unsafe_buffer_pointer = _unsafe_buffer_pointer
Ref.__hash__ = object.__hash__
Ref._xform_not_an_array = True

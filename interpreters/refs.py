"""Mutable array references (JAX's ``jax.Ref``): the box, its abstract value, and the
scopes that discharge its effects.

A ``Ref`` is a mutable box holding one value of a fixed aval: an ``Array`` eagerly, a
tracer while a function that owns the box is being traced.  Reads and writes replace
the boxed value functionally (the public operations in ``xform/ref.py`` index and
update the value with ordinary primitives), so no interpreter needs to know about
references: their effects are *discharged at trace time*.

What makes this sound under tracing is the **scope**.  Every place that traces a
function body (``jit``, the bodies of ``scan``/``while_loop``/``cond``, the functions
``grad``/``vmap`` differentiate or batch) runs it inside a ``Scope``.  A reference
belongs to the scope it was created in.  When code running in scope S reads or writes a
reference of an enclosing scope, the value is not stored in the box (it would leak a
tracer of S into the outer world) but in S's *shadow*: S records the value it first
saw and the value it last wrote.  When the body has been traced the construct that
owns S asks which outer references the body touched; it then traces the body again
with those references' values as extra inputs and their final values as extra outputs
(a loop carries them, ``cond`` passes them through every branch, ``jit`` takes them as
arguments and returns them), binds its primitive as usual, and writes the results back
into the references at its own level.  That is JAX's state discharge, done while
tracing: staged programs stay pure, and every transformation rule applies unchanged.
"""
from __future__ import annotations

import threading

from xform._src.interpreters.core import ShapedArray

__all__ = ["AbstractRef", "Ref", "Scope", "current_scope", "read", "write", "owned_here",
           "RefRetrace", "ref_error"]


class AbstractRef:
    """The abstract value of a mutable array reference: ``Ref{float32[3]}`` (JAX's
    ``jax._src.state.types.AbstractRef``); ``inner_aval`` is the referenced array's."""

    __slots__ = ("inner_aval", "memory_space", "kind")

    def __init__(self, inner_aval, memory_space=None, kind=None):
        if not isinstance(inner_aval, ShapedArray):
            raise TypeError(f"AbstractRef: expected a ShapedArray, got {inner_aval!r} of "
                            f"type {type(inner_aval).__name__}")
        self.inner_aval = inner_aval
        self.memory_space = memory_space
        self.kind = kind

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    weak_type = property(lambda self: self.inner_aval.weak_type)
    ndim = property(lambda self: len(self.inner_aval.shape))

    @property
    def size(self):
        n = 1
        for d in self.inner_aval.shape:
            n *= d
        return n

    def str_short(self, short_dtypes=False):
        return f"Ref{{{self.inner_aval.str_short(short_dtypes=short_dtypes)}}}"

    def __str__(self):
        return self.str_short()

    __repr__ = __str__

    def __eq__(self, other):
        return (type(other) is AbstractRef and self.inner_aval == other.inner_aval
                and self.memory_space == other.memory_space)

    def __hash__(self):
        return hash((AbstractRef, self.inner_aval, self.memory_space))


def ref_error(ref):
    return f"Ref{{{ref._aval.str_short(short_dtypes=False)}}}"


class Scope:
    """One traced body: the outer references it touched, in first-touch order, with
    the value each had when first touched (``inputs``) and its current value here
    (``shadow``).  ``preset`` references arrive with their values already (the second
    trace of a body, where they are extra inputs)."""

    __slots__ = ("parent", "shadow", "inputs", "order", "name", "lower", "used", "hi_owned",
                 "hi_adopt")

    def __init__(self, name, preset=(), lower=None):
        self.parent = None
        self.name = name
        self.shadow = {}
        self.inputs = {}
        self.order = []
        self.lower = lower          # transforms (grad, vmap): value -> parent-level value
        self.used = set()           # ids of the outer references actually read or written
        self.hi_owned = None        # id -> mutable high-level value made here (hijax.py)
        self.hi_adopt = False       # a jit trace: takes closed-over ones as its own
        for ref, val in preset:
            self._touch(ref, val)

    def _touch(self, ref, val):
        k = id(ref)
        if k not in self.shadow:
            self.order.append(ref)
            self.inputs[k] = val
            self.shadow[k] = val

    def touched(self):
        """The outer references this body read or wrote, in first-touch order."""
        return list(self.order)

    def final(self, ref):
        return self.shadow[id(ref)]

    def __enter__(self):
        stack = _stack()
        self.parent = stack[-1] if stack else None
        stack.append(self)
        return self

    def __exit__(self, *exc):
        stack = _stack()
        if stack and stack[-1] is self:
            stack.pop()
        else:                          # unbalanced (an error unwound past an inner scope)
            while stack and stack[-1] is not self:
                stack.pop()
            if stack:
                stack.pop()
        return False


class RefRetrace(Exception):
    """Raised from a traced body that touched outer references its construct does not
    thread yet: the construct adds them and traces again.  Never reaches a user."""

    def __init__(self, scope, refs):
        super().__init__("internal: body touched outer array references")
        self.scope, self.refs = scope, refs


_local = threading.local()


def _stack():
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def current_scope():
    s = _stack()
    return s[-1] if s else None


class Ref:
    """A mutable array reference (JAX's ``jax.Ref``), made by ``xform.new_ref``.  Read
    with ``ref[idx]``/``xform.ref.get``, write with ``ref[idx] = v``/``set``/``swap``/
    ``addupdate``; the public operations live in ``xform/ref.py``."""

    __slots__ = ("_val", "_aval", "_scope", "_freed", "_created", "_kind", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("jax.Ref cannot be constructed directly; use jax.new_ref(value) "
                        "(or jax.empty_ref(type)) to make an array reference")

    @classmethod
    def _make(cls, val, aval):
        r = object.__new__(cls)
        r._val = val
        r._aval = aval
        r._scope = current_scope()
        r._freed = False
        r._kind = None
        r._created = _user_line() if r._scope is not None else None
        return r


def _user_line():
    """``file:line`` of the innermost frame outside xform (where a traced function made a
    reference), for error messages."""
    import sys
    f = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        if "/xform/" not in fn and "/interpreters/" not in fn and "/primitives/" not in fn:
            return f"{fn}:{f.f_lineno}"
        f = f.f_back
    return None


def _reachable(ref, scope):
    """Is ``ref``'s scope ``scope`` or one enclosing it?"""
    s = scope
    while s is not None:
        if s is ref._scope:
            return True
        s = s.parent
    return ref._scope is None


def _check(ref, what):
    if ref._freed:
        raise ValueError(f"{what}: the array reference of type {ref_error(ref)} was freed "
                         "with jax.free_ref; it cannot be used afterwards")
    if not _reachable(ref, current_scope()):
        from xform._src.interpreters.errors import UnexpectedTracerError
        raise UnexpectedTracerError(
            f"{what}: the array reference of type {ref_error(ref)} was created inside a "
            "traced function (jit, a loop or cond body, a transformed function) that has "
            "finished; a reference cannot outlive the function that created it. Create it "
            "outside, pass it in as an argument, or return its value (jax.freeze).")


def owned_here(ref):
    return ref._scope is current_scope()


def read(ref, what="get"):
    """The value of ``ref`` as seen by the current scope."""
    _check(ref, what)
    s = current_scope()
    if s is ref._scope:
        return ref._val
    s.used.add(id(ref))
    v = s.shadow.get(id(ref), _MISSING)
    if v is not _MISSING:
        return v
    p = s.parent
    while p is not ref._scope:
        v = p.shadow.get(id(ref), _MISSING)
        if v is not _MISSING:
            break
        p = p.parent
    if v is _MISSING:
        v = ref._val
    s._touch(ref, v)
    return v


def write(ref, val, what="set"):
    """Replace the whole value of ``ref`` (already of its aval) in the current scope."""
    _check(ref, what)
    s = current_scope()
    if s is ref._scope:
        ref._val = val
        return
    if id(ref) not in s.shadow:
        read(ref, what)
    s.used.add(id(ref))
    s.shadow[id(ref)] = val


def free(ref):
    _check(ref, "jax.free_ref")
    ref._freed = True
    ref._val = None


_MISSING = object()


def discharge_transform(scope):
    """After the function a non-staging transformation (``jvp``/``linearize``/``vmap``)
    runs has returned, with that transformation's trace still current: write what the
    function wrote into its caller's references back at the caller's level.  A value
    carrying this transformation's information cannot go there (JAX's errors): a
    differentiated value into a reference the differentiated function closes over, a
    batched value into one the vmapped function closes over."""
    from xform._src.interpreters import ad, batching, core
    tr = core.current_trace()
    for ref in scope.touched():
        v = scope.final(ref)
        if v is scope.inputs[id(ref)]:
            continue
        if isinstance(tr, ad.JVPTrace):
            p, t = tr.unpack(v)
            if type(t) is not ad.Zero and ref._kind != "no_grad_no_remat":
                write(ref, p)         # (JAX has written the primal value when it refuses)
                raise Exception(
                    "performing a set/swap operation with a differentiated value on a "
                    f"non-differentiated array reference of type {ref_error(ref)}. Move the "
                    "array reference to be an argument of the differentiated function?")
            v = p
        elif isinstance(tr, batching.BatchTrace) and isinstance(v, batching.BatchTracer) \
                and v._trace is tr:
            if v.batch_dim is not None:
                raise Exception(
                    "performing a set/swap operation with vmapped value on an unbatched "
                    f"array reference of type {ref_error(ref)}. Move the array reference to "
                    "be an argument to the vmapped function?")
            v = v.val
        write(ref, v)

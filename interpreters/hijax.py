"""High-level (hijax) types and primitives: the engine half of
``jax.experimental.hijax`` (the public names are in ``xform/experimental/hijax.py``).

A *high-level value* is a Python object of a type registered with ``register_hitype``;
its abstract value (a ``HiType``, or a ``MutableHiType`` whose current layout is its
*quasi-dynamic data*, ``cur_qdd``) says how it is made of ordinary arrays: ``lo_ty``,
``lower_val``/``raise_val`` (immutable) or ``lo_ty_qdd``/``read_loval``/
``new_from_loval``/``update_from_loval`` (mutable).  A ``HiPrimitive`` is an operation on
such values whose meaning is its ``to_lojax`` method (written with ordinary operations
on the arrays inside the values) and whose derivative is its ``jvp`` method.

xform runs high-level primitives the way it runs array references (``refs.py``): their
effects are discharged *while tracing*, so no staged program ever holds a high-level
value.  Binding a ``HiPrimitive``:

- under a ``JVPTrace`` with one of its tracers among the operands: the trace calls the
  primitive's ``jvp`` method (registered as its JVP rule) with its parent current;
- otherwise its ``to_lojax`` runs right away, under whatever trace is current, on the
  Python objects themselves: the array operations it binds are evaluated, staged,
  differentiated or batched like any others, and a mutation is a Python attribute
  update of the object.

Transformation boundaries lower high-level arguments to arrays and raise them again
inside (``xform/_jit_hijax.py`` for ``jit``).  What keeps a traced body from leaking
tracers into a mutable high-level object of its caller is the ownership rule of
references: an object belongs to the scope (``refs.Scope``) in which a primitive made
it.  When a body touches an object of an enclosing scope, the object's arrays are
mirrored by one array reference each (``MirrorRef``, whose value *is* the object's
array at its owner's level), the body's scope reads and writes those references as it
would any closed-over reference, and the object holds the scope's values only while
the primitive runs.  Every construct that threads closed-over references (``jit``, loop
and cond bodies, ``grad``, ``vmap``, ``checkpoint``) therefore threads closed-over
high-level objects too, and writes their final values back at the owner's level.
"""
from __future__ import annotations

import collections
import threading

import weakref

import numpy as np

from xform._src.interpreters import core, refs

__all__ = ["HiPrimitive", "aval_method", "aval_property", "hi_aval", "is_mutable_hi",
           "cur_qdd", "raw", "own", "bind_hi", "same_qdd", "NewHiClosure"]


class aval_method(collections.namedtuple("aval_method", ["fun"])):
    """Marks a method of a high-level type that its values' tracers expose: on a tracer
    ``t`` of that type, ``t.name(*a)`` calls ``fun(t, *a)`` (JAX's ``aval_method``)."""
    __slots__ = ()
    _xform_aval_kind = "method"


class aval_property(collections.namedtuple("aval_property", ["fget"])):
    """Marks a property of a high-level type that its values' tracers expose:
    ``t.name`` is ``fget(t)`` (JAX's ``aval_property``)."""
    __slots__ = ()
    _xform_aval_kind = "property"


def hi_aval(x):
    """The high-level type of ``x`` if it is a value of a registered high-level type (not
    a tracer), else None."""
    if isinstance(x, (core.Tracer, core.Array, np.ndarray, int, float, complex, bool)):
        return None
    try:
        a = core.registered_aval(x)
    except Exception:
        return None
    return a if a is not None and getattr(a, "is_high", False) else None


def hi_type(x):
    """``hi_aval``, and for a tracer the high-level type it carries (a ``JVPTracer`` of a
    ``Box`` under ``jvp``), or None."""
    if isinstance(x, core.Tracer):
        try:
            a = x.aval
        except Exception:
            return None
        return a if getattr(a, "is_high", False) else None
    return hi_aval(x)


def is_mutable_hi(x):
    a = hi_aval(x)
    return a is not None and bool(getattr(a, "has_qdd", False))


_local = threading.local()


class raw:
    """Inside, binding a high-level primitive runs its ``to_lojax`` directly (no
    ownership checks): how this module reads and writes an object's own state."""

    def __enter__(self):
        _local.raw = getattr(_local, "raw", 0) + 1

    def __exit__(self, *exc):
        _local.raw -= 1
        return False


def _unwrap(x):
    from xform._src.interpreters import ad, batching
    while isinstance(x, core.Tracer):
        if isinstance(x, ad.JVPTracer):
            x = x.primal
        elif isinstance(x, batching.BatchTracer):
            x = x.val
        else:
            break
    return x


def cur_qdd(x):
    """The quasi-dynamic data (current layout) of a mutable high-level value (JAX's
    ``jax.experimental.cur_qdd``)."""
    v = _unwrap(x)
    aval = hi_aval(v)
    if aval is None or not getattr(aval, "has_qdd", False):
        raise TypeError(f"cur_qdd: expected a value of a mutable high-level type "
                        f"(jax.experimental.hijax.MutableHiType), got {type(x).__name__}")
    with raw():
        return v.cur_qdd()


def _normalized(q):
    n = getattr(q, "normalize", None)
    if n is None:
        return q
    try:
        return n()
    except Exception:
        return q


def same_qdd(a, b):
    """Equal layouts, weak types aside (a value written back is never weak)."""
    return a == b or _normalized(a) == _normalized(b)


# --------------------------------------------------------------------- ownership

def _installed():
    s = getattr(_local, "installed", None)
    if s is None:
        s = _local.installed = {}
    return s


def own(x, scope=None):
    """Record that the mutable high-level value ``x`` was made in ``scope`` (default:
    the current one)."""
    s = refs.current_scope() if scope is None else scope
    if s is None:
        return x
    if s.hi_owned is None:
        s.hi_owned = {}
    s.hi_owned[id(x)] = [x, None]
    return x


def _owner(x):
    """(owning scope or None for the top level, its record or None)."""
    k = id(x)
    s = refs.current_scope()
    while s is not None:
        d = s.hi_owned
        if d is not None:
            rec = d.get(k)
            if rec is not None and rec[0] is x:
                return s, rec
        s = s.parent
    return None, None


# ------------------------------------------------------------------------ mirrors

class _Mirror:
    __slots__ = ("_obj", "aval", "qdd", "refs", "__weakref__")

    @property
    def obj(self):
        """The object (a top-level mirror holds it weakly: whatever traced it, a jitted
        function's closure, keeps it alive while the mirror can be used)."""
        o = self._obj
        return o() if type(o) is weakref.ref else o


class MirrorRef(refs.Ref):
    """The array reference standing for one array of a mutable high-level object while
    a traced body of an enclosing scope uses the object: its value at the owner's level
    is read from and written to the object itself."""

    __slots__ = ("_mirror", "_index")

    def _get(self):
        m = self._mirror
        with raw():
            if not same_qdd(m.obj.cur_qdd(), m.qdd):
                # a mirror of a layout the object no longer has: a jit that closed over
                # it still passes it in (unused, its body now reads a newer mirror)
                a = self._aval
                return np.zeros(a.shape, a.dtype)
            return m.aval.read_loval(m.qdd, m.obj)[self._index]

    def _set(self, v):
        m = self._mirror
        with raw():
            if not same_qdd(m.obj.cur_qdd(), m.qdd):
                return
            vals = list(m.aval.read_loval(m.qdd, m.obj))
            vals[self._index] = v
            m.aval.update_from_loval(m.qdd, m.obj, *vals)

    _val = property(_get, _set)


_top_mirrors: dict = {}


def _make_mirror(obj, aval, qdd, owner):
    m = _Mirror()
    m._obj, m.aval, m.qdd = obj, aval, qdd
    with raw():
        vals = aval.read_loval(qdd, obj)
    rs = []
    for i, v in enumerate(vals):
        r = object.__new__(MirrorRef)
        r._mirror, r._index = m, i
        r._aval = core.get_aval(v)
        r._scope = owner
        r._freed = False
        r._kind = None
        r._created = None
        rs.append(r)
    m.refs = rs
    return m


def _mirror(obj, aval):
    owner, rec = _owner(obj)
    with raw():
        qdd = obj.cur_qdd()
    if owner is None:
        # kept while the object lives (a jit that closed over the object keeps the
        # mirror's references in its closure, and the object in the function's)
        i = id(obj)
        m = _top_mirrors.get(i)
        if m is None or m.obj is not obj or not same_qdd(m.qdd, qdd):
            m = _make_mirror(obj, aval, qdd, None)
            try:
                m._obj = weakref.ref(obj, lambda _, i=i: _top_mirrors.pop(i, None))
            except TypeError:      # a type without weak references: kept for good
                pass
            _top_mirrors[i] = m
        return m
    m = rec[1]
    if m is None or not same_qdd(m.qdd, qdd):
        m = rec[1] = _make_mirror(obj, aval, qdd, owner)
    return m


class _Swap:
    """While a primitive runs in a body that does not own ``objs``: each object holds
    the body's values (read through its mirror), and afterwards what the primitive
    wrote goes to the body's scope and the object gets its owner's values back."""

    def __init__(self, objs):
        self.objs = objs

    def __enter__(self):
        inst = _installed()
        self.saved = []
        try:
            for o in self.objs:
                aval = hi_aval(o)
                m = _mirror(o, aval)
                inner = [refs.read(r, "hijax") for r in m.refs]
                with raw():
                    outer = aval.read_loval(m.qdd, o)
                    aval.update_from_loval(m.qdd, o, *inner)
                self.saved.append((o, aval, m, inner, outer))
                inst[id(o)] = inst.get(id(o), 0) + 1
        except BaseException:
            self._restore()
            raise
        return self

    def _restore(self):
        inst = _installed()
        for o, aval, m, _, outer in self.saved:
            with raw():
                aval.update_from_loval(m.qdd, o, *outer)
            n = inst.get(id(o), 0) - 1
            if n <= 0:
                inst.pop(id(o), None)
            else:
                inst[id(o)] = n

    def __exit__(self, exc_type, exc, tb):
        writes = []
        try:
            if exc_type is None:
                for o, aval, m, inner, _ in self.saved:
                    with raw():
                        q = o.cur_qdd()
                        if not same_qdd(q, m.qdd):
                            where = getattr(refs.current_scope(), "name", "")
                            if where in ("scan", "while_loop", "cond", "switch",
                                         "fori_loop"):
                                # JAX's rule for loop and cond bodies
                                raise TypeError(f"type-changing mutations not allowed in "
                                                f"{where} body")
                            raise NotImplementedError(
                                f"a high-level value of type {aval!s} changed its type "
                                f"(from {m.qdd} to {q}) inside a traced function "
                                "(jit, a loop or cond body, grad, vmap) that closes over "
                                "it; xform supports changing the type of a mutable "
                                "high-level value only where it was made or when it is "
                                "passed to jit as an argument")
                        new = aval.read_loval(q, o)
                    for r, a, b in zip(m.refs, inner, new):
                        if a is not b:
                            writes.append((r, b))
        finally:
            self._restore()
        for r, v in writes:
            refs.write(r, v, "hijax")
        return False


# ------------------------------------------------------------------------- binding

class NewHiClosure(Exception):
    """Raised from a ``jit`` trace whose function touches mutable high-level objects of
    an enclosing scope it does not take yet: the jit takes them (its trace adopts them,
    so they may change type) and traces again.  Never reaches a user."""

    def __init__(self, objs):
        super().__init__("internal: jit body closes over mutable high-level values")
        self.objs = objs


def _foreign(args):
    scope = refs.current_scope()
    if scope is None:
        return []
    inst = _installed()
    out = []
    for a in args:
        if id(a) in inst or not is_mutable_hi(a):
            continue
        owner, _ = _owner(a)
        if owner is not scope and not any(a is b for b in out):
            out.append(a)
    if out and scope.hi_adopt:
        raise NewHiClosure(out)
    return out


def _register_outputs(prim, out, args):
    scope = refs.current_scope()
    if scope is None:
        return
    outs = out if prim.multiple_results and isinstance(out, (list, tuple)) else (out,)
    for o in outs:
        if is_mutable_hi(o) and not any(o is a for a in args) and _owner(o)[0] is None:
            own(o, scope)


def bind_hi(prim, args, params):
    """Bind the high-level primitive ``prim`` (see the module docstring)."""
    if getattr(_local, "raw", 0):
        return prim.to_lojax(*args, **params)
    from xform._src.interpreters import ad
    trace = core.current_trace()
    if isinstance(trace, ad.JVPTrace) and any(
            isinstance(a, ad.JVPTracer) and a._trace is trace for a in args):
        return trace.process_primitive(prim, args, params)
    from xform._src.interpreters import batching
    if isinstance(trace, batching.BatchTrace) and _touches(trace, args, batched=True):
        # as JAX: a high-level primitive has no batching rule
        raise NotImplementedError(
            f"Batching rule for '{prim.name}' not implemented: a high-level primitive "
            "(jax.experimental.hijax.HiPrimitive) cannot be applied to batched values "
            "under vmap")
    args = tuple(_unwrap_hi(a) for a in args)
    if isinstance(trace, ad.LinearizeTrace) and _overrides_transpose(prim) and \
            _touches(trace, args):
        raise NotImplementedError(
            f"reverse-mode differentiation (grad, vjp, linearize) through the high-level "
            f"primitive '{prim.name}' applied to tangents: JAX transposes it with its "
            f"transpose rule, which xform does not implement for high-level primitives "
            "(jax.experimental.hijax); use forward mode (jvp), or express the function "
            "with xform.custom_vjp")
    if staged_hook is not None and not _touches_mutable(args):
        from xform._src.interpreters.staging import StagingTrace
        if isinstance(trace, StagingTrace) and not isinstance(trace, ad.LinearizeTrace) \
                and type(prim).jvp is not HiPrimitive.jvp:
            # staged (a jit or loop body): a differentiation of the program from outside
            # must still use the primitive's jvp rule, so the expansion is staged with it
            out = staged_hook(prim, args, params)
            if out is not NotImplemented:
                return out
    foreign = _foreign(args)
    if foreign:
        with _Swap(foreign):
            out = prim.to_lojax(*args, **params)
    else:
        out = prim.to_lojax(*args, **params)
    _register_outputs(prim, out, args)
    return out


# installed by xform.experimental.hijax: (prim, args, params) -> outputs, the expansion
# staged as a custom_jvp whose rule is the primitive's jvp (NotImplemented: not applicable)
staged_hook = None


def _touches_mutable(args):
    return any(is_mutable_hi(_unwrap(a)) for a in args)


def _overrides_transpose(prim):
    return type(prim).transpose is not HiPrimitive.transpose


def _touches(trace, args, batched=False):
    """Does a tracer of ``trace`` (with a batch axis, when ``batched``) appear among
    ``args`` or the arrays of their high-level values?"""
    for a in args:
        a_hi = hi_aval(_unwrap(a)) if batched else hi_aval(a)
        if a_hi is None:
            vals = [a]
        else:
            v = _unwrap(a) if batched else a
            try:
                if getattr(a_hi, "has_qdd", False):
                    if not batched:
                        continue
                    with raw():
                        vals = a_hi.read_loval(v.cur_qdd(), v)
                else:
                    vals = a_hi.lower_val(v)
            except Exception:
                continue
            if batched and v is not a:
                vals = list(vals) + [a]
        for v in vals:
            if isinstance(v, core.Tracer) and v._trace is trace and \
                    (not batched or getattr(v, "batch_dim", None) is not None):
                return True
    return False


def _unwrap_hi(a):
    """A tracer of another transformation wrapping a high-level value, when it is not
    this primitive's to differentiate: the value itself (its arrays carry the rest)."""
    if isinstance(a, core.Tracer):
        v = _unwrap(a)
        if hi_aval(v) is not None:
            return v
    return a


class HiPrimitive(core.Primitive):
    """A user-defined high-level primitive (JAX's ``HiPrimitive``): subclasses define
    ``abstract_eval``, ``to_lojax`` (its meaning in ordinary operations), ``jvp`` and,
    for a primitive linear in some operands, ``transpose``."""

    multiple_results = False

    def __init__(self, name):
        # (``multiple_results`` stays the class's: subclasses set it as a class attribute)
        object.__setattr__(self, "name", name)
        for k, v in (("impl", None), ("abstract_eval", None), ("impl_takes_arrays", False),
                     ("effectful", True), ("cse", False), ("pp_name", name),
                     ("missing_rules", {}), ("xla_eager_dtypes", frozenset()),
                     ("_eager_fast", False)):
            if k not in type(self).__dict__ and not _defined_above(type(self), k):
                object.__setattr__(self, k, v)
        from xform._src.interpreters import ad
        ad.jvp_rules[self] = self._jvp_rule

    def _jvp_rule(self, primals, tangents, **params):
        return self.jvp(primals, tangents, **params)

    def bind(self, *args, **params):
        return bind_hi(self, args, params)

    def is_high(self, *avals, **params):
        return True

    def is_effectful(self, params):
        return False

    def to_lojax(self, *args, **params):
        raise NotImplementedError(
            f"high-level primitive '{self.name}' has no to_lojax rule: define "
            f"to_lojax in {type(self).__name__} (its meaning in ordinary operations)")

    def jvp(self, primals, tangents, **params):
        raise NotImplementedError(
            f"Differentiation rule for '{self.name}' not implemented: define jvp in "
            f"{type(self).__name__}")

    def transpose(self, *args, **params):
        raise NotImplementedError(
            f"Transpose rule for '{self.name}' not implemented: define transpose in "
            f"{type(self).__name__}")

    def __repr__(self):
        return self.name

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


def _defined_above(cls, k):
    """Is ``k`` a plain (non-slot) attribute of a subclass between ``cls`` and
    HiPrimitive (a user subclass's class attribute, e.g. ``impl``)?"""
    for c in cls.__mro__:
        if c is HiPrimitive:
            return False
        if k in c.__dict__:
            return True
    return False


# --------------------------------------------------- control flow: lowered operands

def lower_operands(leaves, what):
    """High-level leaves of a loop carry or ``cond`` operands as arrays: (lo leaves,
    layout) with one layout entry per leaf -- None (an array), ``("imm", type, n)`` or
    ``("mut", obj)`` (a mutable object passed through as it is: the bodies use it as
    they would one they close over).  ``what`` names the construct for errors."""
    lo, layout = [], []
    for x in leaves:
        a = hi_type(x)
        if a is None:
            lo.append(x)
            layout.append(None)
        elif getattr(a, "has_qdd", False):
            if isinstance(x, core.Tracer):
                raise TypeError(f"{what}: a traced mutable high-level value of type {a!s} "
                                "cannot be passed through it")
            layout.append(("mut", x))
        else:
            if isinstance(x, core.Tracer):
                raise TypeError(f"{what}: a traced high-level value of type {a!s} cannot "
                                "be passed through it")
            vals = list(a.lower_val(x))
            lo += vals
            layout.append(("imm", a, len(vals)))
    return lo, tuple(layout)


def raise_operands(lo, layout):
    it = iter(lo)
    out = []
    for spec in layout:
        if spec is None:
            out.append(next(it))
        elif spec[0] == "mut":
            out.append(spec[1])
        else:
            out.append(spec[1].raise_val(*[next(it) for _ in range(spec[2])]))
    return out


def has_hi(leaves):
    return any(hi_type(x) is not None for x in leaves)

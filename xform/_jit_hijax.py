"""``jit`` of functions whose arguments or results are high-level (hijax) values.

A high-level argument is lowered to arrays at the call (``lower_val`` for an immutable
type; ``cur_qdd`` and ``read_loval`` for a mutable one) and raised again inside the
traced function (``raise_val``; ``new_from_loval``, which makes a fresh object owned by
the trace).  A mutable argument's final arrays and layout (which may differ from its
initial one: a ``Box`` set to a new type, a variable holding a dict that gains a key)
come back as extra results, and after the call ``update_from_loval`` writes them into the
caller's object.  An immutable high-level result is lowered inside and raised outside;
a mutable one cannot be returned (as in JAX).  The lowered function is jitted by an
ordinary ``JitWrapped`` per layout of high-level arguments (their types and layouts are
its static argument), so caching, lowering and every transformation of ``jit`` apply
unchanged; high-level objects the function closes over are threaded by the inner
``jit`` as closed-over array references (``interpreters/hijax.py``).
"""
from __future__ import annotations

from xform._src.interpreters import hijax as _hj
from xform.tree_util import register_static, tree_flatten


class HasHi(Exception):
    """A plain ``jit`` found high-level values among its arguments (internal)."""


@register_static
class _Static:
    """Hashable trace-time information carried through ``jit`` as a static result."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return type(other) is _Static and self.value == other.value

    def __hash__(self):
        return hash(self.value)


def _take(it, n):
    return [next(it) for _ in range(n)]


def lower_args(leaves):
    """(lo leaves, layout, mutable objects): each high-level leaf replaced by its arrays.
    ``layout`` has one entry per leaf: None (an ordinary leaf), ``("mut", k)`` (the k-th
    distinct mutable object) or ``("imm", type, n)``; ``muts`` lists (object, type,
    layout, n)."""
    lo, layout, muts = [], [], []
    for x in leaves:
        a = _hj.hi_type(x)
        if a is None:
            layout.append(None)
            lo.append(x)
        elif getattr(a, "has_qdd", False):
            k = next((i for i, m in enumerate(muts) if m[0] is x), None)
            if k is None:
                q = _hj.cur_qdd(x)
                vals = list(a.read_loval(q, x))
                k = len(muts)
                muts.append((x, a, q, len(vals)))
                lo += vals
            layout.append(("mut", k))
        else:
            vals = list(a.lower_val(x))
            layout.append(("imm", a, len(vals)))
            lo += vals
    return lo, tuple(layout), muts


def raise_args(lo, layout, mut_types):
    """Inside the trace: the leaves again, mutable objects made fresh (owned here)."""
    it = iter(lo)
    inner = []
    leaves = []
    for spec in layout:
        if spec is None:
            leaves.append(next(it))
        elif spec[0] == "mut":
            k = spec[1]
            if k == len(inner):          # first appearance: its arrays are here
                a, q, n = mut_types[k]
                inner.append(_hj.own(a.new_from_loval(q, *_take(it, n))))
            leaves.append(inner[k])
        else:
            leaves.append(spec[1].raise_val(*_take(it, spec[2])))
    return leaves, inner


def lower_outs(out_leaves, where):
    lo, layout = [], []
    for i, o in enumerate(out_leaves):
        a = _hj.hi_aval(o)
        if a is None:
            layout.append(None)
            lo.append(o)
        elif getattr(a, "has_qdd", False):
            raise TypeError(
                f"{where} returned a mutable high-level value of type {a!s} (output leaf "
                f"{i}); a mutable high-level value cannot be returned from jit (as in "
                "JAX): return its contents, or pass the object in as an argument and "
                "mutate it")
        else:
            vals = list(a.lower_val(o))
            layout.append((a, len(vals)))
            lo += vals
    return lo, tuple(layout)


def raise_outs(lo, layout):
    it = iter(lo)
    return [next(it) if s is None else s[0].raise_val(*_take(it, s[1])) for s in layout]


class HiJit:
    """The high-level path of one ``JitWrapped``: high-level arguments and results, and
    the mutable high-level objects its function closes over (``closure``), which its
    trace *adopts*: they come in as arrays, hold the trace's values while it runs (so
    they may change type, as a jit argument may), and their final arrays and layouts
    come back and are written into them."""

    def __init__(self, wrapped):
        self.w = wrapped
        self.inner = {}
        self.closure = []

    def add_closure(self, objs):
        for o in objs:
            if not any(o is c for c in self.closure):
                self.closure.append(o)
        self.inner.clear()

    def _where(self):
        from xform._jit import _fun_location
        return f"function {self.w._name} at {_fun_location(self.w._fun)} traced for jit"

    def _make_inner(self, n_args, static_pos, treedef, layout, mut_types, closure,
                    clo_types):
        from xform._jit import JitWrapped
        w = self.w
        fun = w._fun
        where = self._where()
        n_clo = sum(n for _, _, n in clo_types)

        def lowered(statics, *lo):
            clo_lo, lo = lo[:n_clo], lo[n_clo:]
            it = iter(clo_lo)
            saved = []
            try:
                for o, (a, q, n) in zip(closure, clo_types):   # adopt the closure
                    vals = _take(it, n)
                    with _hj.raw():
                        saved.append((o, a, q, a.read_loval(q, o)))
                        a.update_from_loval(q, o, *vals)
                    _hj.own(o)
                leaves, inner = raise_args(lo, layout, mut_types)
                dargs, dkw = treedef.unflatten(leaves)
                it2 = iter(dargs)
                full = [statics[static_pos.index(i)] if i in static_pos else next(it2)
                        for i in range(n_args)]
                kw = dict(dkw)
                kw.update(dict(statics[len(static_pos):]))
                out = fun(*full, **kw)
                out_leaves, out_tree = tree_flatten(out)
                out_lo, out_layout = lower_outs(out_leaves, where)
                finals, qdds = [], []
                for obj, a in [(o, t[0]) for o, t in zip(closure, clo_types)] + \
                        [(o, t[0]) for o, t in zip(inner, mut_types)]:
                    q = _hj.cur_qdd(obj)
                    finals.append(list(a.read_loval(q, obj)))
                    qdds.append(q)
            finally:
                for o, a, q, vals in saved:     # the objects get their own values back
                    with _hj.raw():
                        a.update_from_loval(q, o, *vals)
            return out_lo, _Static((out_tree, out_layout, tuple(qdds))), finals

        lowered.__name__ = w._name
        lowered.__qualname__ = getattr(fun, "__qualname__", w._name)
        return JitWrapped(lowered, static_argnums=(0,), keep_unused=w._keep_unused,
                          device=w._device, backend=w._backend, inline=w._inline)

    def lower(self, args, kwargs):
        """``jit(f).lower(...)`` with high-level arguments: the lowered function's
        program; ``compile()`` gives a callable that takes the high-level arguments."""
        return self._run(args, kwargs, lower=True)

    def __call__(self, args, kwargs):
        return self._run(args, kwargs)

    def _prepare(self, args, kwargs):
        w = self.w
        static_pos = tuple(i for i in sorted(w._static_argnums) if i < len(args))
        static_kw = tuple(sorted((k, v) for k, v in kwargs.items()
                                 if k in w._static_argnames))
        dargs = tuple(a for i, a in enumerate(args) if i not in static_pos)
        dkw = {k: v for k, v in kwargs.items() if k not in w._static_argnames}
        leaves, treedef = tree_flatten((dargs, dkw))
        lo, layout, muts = lower_args(leaves)
        closure = list(self.closure)
        for m in muts:
            if any(m[0] is c for c in closure):
                raise ValueError(
                    f"when tracing {self._where()}, a mutable high-level value of "
                    f"type {m[1]!s} was both closed over and passed as an argument")
        clo_lo, clo_types = [], []
        for o in closure:
            a = _hj.hi_type(o)
            q = _hj.cur_qdd(o)
            vals = list(a.read_loval(q, o))
            clo_lo += vals
            clo_types.append((a, q, len(vals)))
        mut_types = tuple((a, q, n) for _, a, q, n in muts)
        key = (len(args), static_pos, treedef, layout, mut_types, len(closure),
               tuple(clo_types))
        statics = tuple(args[i] for i in static_pos) + static_kw
        return key, statics, closure, clo_lo + lo, muts

    def _finish(self, key, closure, muts, out_lo, info, finals):
        out_tree, out_layout, qdds = info.value
        clo_types = key[-1]
        objs = [(o, t[0]) for o, t in zip(closure, clo_types)] + \
            [(m[0], m[1]) for m in muts]
        for (obj, a), q, vals in zip(objs, qdds, finals):
            a.update_from_loval(q, obj, *vals)
        return out_tree.unflatten(raise_outs(out_lo, out_layout))

    def _run(self, args, kwargs, lower=False):
        while True:
            key, statics, closure, lo, muts = self._prepare(args, kwargs)
            inner = self.inner.get(key)
            if inner is None:
                if len(self.inner) > 64:
                    self.inner.clear()
                n_args, static_pos, treedef, layout, mut_types, _, clo_types = key
                inner = self.inner[key] = self._make_inner(
                    n_args, static_pos, treedef, layout, mut_types, closure, clo_types)
            try:
                if lower:
                    return HiLowered(self, key, closure, inner.lower(statics, *lo))
                out_lo, info, finals = inner(statics, *lo)
            except _hj.NewHiClosure as e:
                if not all(any(o is c for c in closure) for o in e.objs) and \
                        not any(any(o is m[0] for m in muts) for o in e.objs):
                    self.add_closure(e.objs)
                    continue
                raise
            return self._finish(key, closure, muts, out_lo, info, finals)


class HiLowered:
    """``jit(f).lower(...)`` of a function with high-level arguments or closed-over
    objects: the program of its lowered function (arrays in, arrays out)."""

    def __init__(self, hijit, key, closure, lowered):
        self._hijit, self._key, self._closure, self._lowered = hijit, key, closure, lowered

    def as_text(self, dialect=None, debug_info=False):
        return self._lowered.as_text(dialect, debug_info)

    def compiler_ir(self, dialect=None):
        return self._lowered.compiler_ir(dialect)

    @property
    def in_avals(self):
        return self._lowered.in_avals

    def compile(self, compiler_options=None):
        return HiCompiled(self, self._lowered.compile(compiler_options))


class HiCompiled:
    """A compiled function with high-level arguments: lowers them as its ``jit`` does,
    runs the executable and writes mutable arguments (and closed-over objects) back."""

    def __init__(self, lowered, compiled):
        self._l, self._compiled = lowered, compiled

    def __call__(self, *args, **kwargs):
        l = self._l
        key, _, closure, lo, muts = l._hijit._prepare(args, kwargs)
        if key != l._key or any(a is not b for a, b in zip(closure, l._closure)):
            raise TypeError("Compiled function called with high-level arguments of other "
                            "types or layouts than it was compiled for; call jit(f) instead "
                            "to retrace.")
        out_lo, info, finals = self._compiled(*lo)
        return l._hijit._finish(key, closure, muts, out_lo, info, finals)

    def as_text(self):
        return self._compiled.as_text()

"""The IR ("jaxpr"): typed variables, literals, equations, programs.

A ``Jaxpr`` is a list of equations in SSA form over ``Var``s, with constant
variables (``constvars``), inputs and outputs.  A ``ClosedJaxpr`` pairs it with
the constants' values.  Higher-order primitives (jit, cond, scan, custom rules)
hold ``ClosedJaxpr``s in their params; the printer, type checker and evaluator
recurse into them generically, so new higher-order primitives need no change
here.
"""
from __future__ import annotations

import itertools
import re
import threading

import numpy as np

from xform._src.interpreters import core, errors
from xform._src.interpreters.core import ShapedArray
import collections

_var_ids = itertools.count()


class Var:
    """A program variable; identity is the variable (names are assigned when printing)."""

    __slots__ = ("aval", "id")

    def __init__(self, aval: ShapedArray):
        self.aval = aval
        self.id = next(_var_ids)

    def __repr__(self):
        return f"Var({self.id}:{self.aval.str_short()})"


class DropVar(Var):
    """An output nobody reads (printed as ``_``)."""

    __slots__ = ()


class Literal:
    """An inline scalar constant."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self):
        return f"Literal({self.val!r})"

    @property
    def value(self):
        """The literal as an argument to ``bind``: an Array when weakly typed, so
        evaluating a program keeps JAX's weak types (``c * 2.0`` stays weak)."""
        if self.aval.weak_type:
            return core.Array(np.asarray(self.val), True)
        return self.val

    def pretty(self):
        v = np.asarray(self.val)
        s = str(v.item()) if v.ndim == 0 else "[...]"
        return f"{s}:{self.aval.str_short()}"


Atom = "Var | Literal"


class Eqn:
    """``outvars = primitive[params] invars``."""

    __slots__ = ("primitive", "invars", "outvars", "params", "source_info", "_holds")

    def __init__(self, primitive, invars, outvars, params, source_info=None):
        self.primitive = primitive
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.params = params
        self.source_info = source_info
        self._holds = None      # (params, holds_programs(params)), see eqn_holds_programs

    @property
    def effects(self):
        """JAX's field: the equation's effects (a one-element set naming the primitive
        when it is effectful, else empty)."""
        return frozenset((self.primitive.name,)) if self.primitive.effectful else frozenset()

    @property
    def ctx(self):
        return None

    def replace(self, **kw):
        new = Eqn(self.primitive, self.invars, self.outvars, self.params, self.source_info)
        for k, v in kw.items():
            setattr(new, k, v)
        return new

    def __repr__(self):
        return f"Eqn({self.primitive.name}, {self.invars} -> {self.outvars})"


class DebugInfo:
    """What a program was traced from (the function's name), for printing."""

    __slots__ = ("func_name",)

    def __init__(self, func_name):
        self.func_name = func_name

    def __repr__(self):
        return f"DebugInfo(func_name={self.func_name!r})"


class Jaxpr:
    __slots__ = ("constvars", "invars", "outvars", "eqns", "debug_info")

    def __init__(self, constvars, invars, outvars, eqns, debug_info=None):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)
        self.debug_info = debug_info

    @property
    def in_avals(self):
        return [v.aval for v in self.invars]

    @property
    def effects(self):
        """The union of the equations' effects (JAX's field)."""
        out = frozenset()
        for e in self.eqns:
            out |= e.effects
        return out

    @property
    def out_avals(self):
        return [v.aval for v in self.outvars]

    def __str__(self):
        return pp_jaxpr(self)

    __repr__ = __str__

    def pretty_print(self, *, source_info=False, print_shapes=True, custom_pp_eqn_rules=True,
                     name_stack=False, print_effects=False, width=80, use_color=False):
        """The printed program (JAX's ``Jaxpr.pretty_print``): ``print_shapes=False``
        drops binder types, ``custom_pp_eqn_rules=False`` prints every param sorted,
        ``width`` is the line width, ``source_info=True`` adds each equation's user
        source (``# file:line:column (qualified function name)``, aligned as JAX does);
        output is never colored (``name_stack``/``print_effects`` add nothing here)."""
        return pp_jaxpr(self, print_shapes=print_shapes,
                        custom_pp_eqn_rules=custom_pp_eqn_rules, width=width,
                        source_info=source_info)

    def _repr_html_(self):
        import html  # deferred: keeps `import xform` light
        return f"<pre>{html.escape(str(self))}</pre>"


class ClosedJaxpr:
    """A program plus the values of its constant variables."""

    __slots__ = ("jaxpr", "consts")

    def __init__(self, jaxpr: Jaxpr, consts):
        if len(consts) != len(jaxpr.constvars):
            raise ValueError(f"ClosedJaxpr: {len(jaxpr.constvars)} constvars but "
                             f"{len(consts)} constants")
        self.jaxpr = jaxpr
        self.consts = list(consts)

    @property
    def in_avals(self):
        return self.jaxpr.in_avals

    @property
    def out_avals(self):
        return self.jaxpr.out_avals

    @property
    def eqns(self):
        return self.jaxpr.eqns

    def __call__(self, *args):
        return eval_jaxpr(self.jaxpr, self.consts, *args)

    def __str__(self):
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__

    def pretty_print(self, **kwargs):
        """See ``Jaxpr.pretty_print``."""
        return self.jaxpr.pretty_print(**kwargs)

    def _repr_html_(self):
        import html  # deferred: keeps `import xform` light
        return f"<pre>{html.escape(str(self))}</pre>"


# ----------------------------------------------------------------- sub-program discovery


def subjaxprs_of_params(params):
    """Yield (name, Jaxpr) for every program held in an equation's params."""
    for k, v in params.items():
        for j in _iter_jaxprs(v):
            yield k, j


def _holds(seq) -> bool:
    for x in seq:
        t = type(x)
        if t is ClosedJaxpr or t is Jaxpr or ((t is tuple or t is list) and x and _holds(x)):
            return True
    return False


_tuple_holds: dict = {}    # hashable tuple params known to hold no program -> False


def holds_programs(params) -> bool:
    """Whether an equation's params hold any program (what ``subjaxprs_of_params``
    would yield): the cheap test the passes run on every equation (several times)."""
    for v in params.values():
        t = type(v)
        if t is ClosedJaxpr or t is Jaxpr:
            return True
        if t is tuple and v:
            # Programs compare by identity, so a tuple equal to one that held none holds
            # none: that answer is remembered per tuple value (only that one, so the
            # memo keeps no program alive).
            try:
                h = _tuple_holds.get(v)
            except TypeError:       # an unhashable element
                h = _holds(v)
            else:
                if h is None:
                    h = _holds(v)
                    if not h:
                        if len(_tuple_holds) > 10_000:
                            _tuple_holds.clear()
                        _tuple_holds[v] = False
            if h:
                return True
        elif t is list and v and _holds(v):
            return True
    return False


def eqn_holds_programs(eqn) -> bool:
    """``holds_programs(eqn.params)``, remembered on the equation (the passes ask it of
    every equation several times) for as long as its params are the same object."""
    h = eqn._holds
    params = eqn.params
    if h is not None and h[0] is params:
        return h[1]
    r = holds_programs(params)
    eqn._holds = (params, r)
    return r


def _iter_jaxprs(v):
    if isinstance(v, ClosedJaxpr):
        yield v.jaxpr
    elif isinstance(v, Jaxpr):
        yield v
    elif isinstance(v, (tuple, list)):
        for x in v:
            yield from _iter_jaxprs(x)


# ----------------------------------------------------------------- evaluation


def eval_jaxpr(jaxpr: Jaxpr, consts, *args):
    """Run a program by binding each equation's primitive under the current trace.

    Because it binds, evaluating under a transformation transforms the program
    (this is how program-to-program rules are built).
    """
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"program expects {len(jaxpr.invars)} arguments, got {len(args)}")
    env = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    for v, x in zip(jaxpr.invars, args):
        env[v] = x

    def read(a):
        return a.value if type(a) is Literal else env[a]

    ctx = source_context
    entry = ctx.src
    try:
        for eqn in jaxpr.eqns:
            invals = [read(a) for a in eqn.invars]
            # what this equation stages (transformed) keeps its source location, as JAX
            ctx.src = eqn.source_info or entry
            outs = eqn.primitive.bind(*invals, **eqn.params)
            if eqn.primitive.multiple_results:
                for v, o in zip(eqn.outvars, outs):
                    env[v] = o
            else:
                env[eqn.outvars[0]] = outs
    finally:
        ctx.src = entry
    return [read(a) for a in jaxpr.outvars]


class _SourceContext(threading.local):
    src = None   # the source location of the equation being interpreted, if any


# While an equation is interpreted (eval_jaxpr, the backward pass), the equations
# staged for it record its source location instead of the interpreter's caller's.
source_context = _SourceContext()


# ----------------------------------------------------------------- type checking


def check_jaxpr(jaxpr: Jaxpr) -> None:
    """Raise ``JaxprTypeError`` unless every variable is defined once before use and
    every equation's output types equal its primitive's abstract evaluation."""
    defined = set()

    def define(v, where):
        if isinstance(v, DropVar):
            return
        if not isinstance(v, Var):
            raise errors.JaxprTypeError(f"{where}: expected a Var, got {v!r}")
        if v in defined:
            raise errors.JaxprTypeError(f"{where}: variable {v!r} defined twice")
        defined.add(v)

    def use(a, where):
        if isinstance(a, Literal):
            return
        if a not in defined:
            raise errors.JaxprTypeError(f"{where}: variable {a!r} used before it is defined")

    for v in jaxpr.constvars:
        define(v, "constvars")
    for v in jaxpr.invars:
        define(v, "invars")
    for i, eqn in enumerate(jaxpr.eqns):
        where = f"equation {i} ({eqn.primitive.name})"
        for a in eqn.invars:
            use(a, where)
        rule = core.abstract_eval_rules.get(eqn.primitive)
        if rule is None:
            raise errors.JaxprTypeError(f"{where}: primitive has no abstract evaluation rule")
        try:
            out = rule(*[a.aval for a in eqn.invars], **eqn.params)
        except (TypeError, ValueError) as e:
            raise errors.JaxprTypeError(f"{where}: {e}") from e
        outs = out if eqn.primitive.multiple_results else [out]
        if len(outs) != len(eqn.outvars):
            raise errors.JaxprTypeError(f"{where}: rule gives {len(outs)} outputs, equation "
                                        f"binds {len(eqn.outvars)}")
        for v, a in zip(eqn.outvars, outs):
            if not core.same_type(v.aval, a):
                raise errors.JaxprTypeError(
                    f"{where}: output declared {v.aval.str_short()} but the rule gives "
                    f"{a.str_short()}")
        for _, sub in subjaxprs_of_params(eqn.params):
            check_jaxpr(sub)
        for v in eqn.outvars:
            define(v, where)
    for a in jaxpr.outvars:
        use(a, "outvars")


# ----------------------------------------------------------------- pretty printing
#
# The printed form follows JAX's: a small Wadler/Lindig-style document layout
# (text, breaks, groups, nesting) at width 80, so a short program prints on one
# line and a long one breaks every equation; names are global across nested
# programs; per-primitive tables below hide default-valued params and print
# params in JAX's order and format.

_WIDTH = 80


def _d_text(s, annotation=None):
    """Text; an ``annotation`` (a source location) is printed after the text's line as
    ``# annotation``, aligned with the other annotations (JAX's annotated documents)."""
    return ("t", s) if annotation is None else ("t", s, annotation)


def _d_cat(*docs):
    return ("c", [d for d in docs if d is not None])


def _d_brk(s=" "):
    return ("b", s)


def _d_group(doc):
    return ("g", doc)


def _d_nest(n, doc):
    return ("n", n, doc)


def _d_join(sep, docs):
    out = []
    for i, d in enumerate(docs):
        if i:
            out.append(sep)
        out.append(d)
    return ("c", out)


def _fits(doc, room):
    """Whether ``doc`` laid out flat takes at most ``room`` columns (only the group
    itself is measured, not what follows it)."""
    stack = [doc]
    while stack:
        d = stack.pop()
        kind = d[0]
        if kind == "t" or kind == "b":
            room -= len(d[1])
            if room < 0:
                return False
        elif kind == "c":
            stack.extend(reversed(d[1]))
        elif kind == "g":
            stack.append(d[1])
        else:
            stack.append(d[2])
    return room >= 0


def _format_doc(doc, width=_WIDTH):
    out = []
    col = 0
    notes = {}                          # line number -> [annotations]
    line = 0
    agenda = [(0, False, doc)]          # (indent, flat?, doc)
    while agenda:
        ind, flat, d = agenda.pop()
        kind = d[0]
        if kind == "t":
            out.append(d[1])
            col += len(d[1])
            if len(d) > 2:
                notes.setdefault(line, []).append(d[2])
        elif kind == "c":
            agenda.extend((ind, flat, x) for x in reversed(d[1]))
        elif kind == "b":
            if flat:
                out.append(d[1])
                col += len(d[1])
            else:
                out.append("\n" + " " * ind)
                col = ind
                line += 1
        elif kind == "g":
            agenda.append((ind, flat or _fits(d[1], width - col), d[1]))
        else:
            agenda.append((ind + d[1], flat, d[2]))
    text = "".join(out)
    if not notes:
        return text
    # Annotations start in one column, after the widest line; a line with several
    # has the later ones on lines of their own.
    lines = text.split("\n")
    w = max(len(ln) for ln in lines)
    for i, anns in notes.items():
        first = lines[i].ljust(w) + " # " + anns[0]
        lines[i] = "\n".join([first] + [" " * w + " # " + a for a in anns[1:]])
    return "\n".join(lines)


def _alpha_name(n):
    s = ""
    while not s or n:
        n, i = divmod(n, 26)
        s = chr(97 + i) + s
    return s


class _Names:
    """Globally unique names across nested programs, assigned in print order."""

    def __init__(self, preset=None, reserved=(), shapes=True, rules=True, source_info=False):
        self.shapes = shapes
        self.rules = rules
        self.source_info = source_info
        self.names = dict(preset or {})
        self.reserved = set(reserved)
        self.count = 0
        self.shared = {}            # Jaxpr -> name of a hoisted ``let`` program

    def fresh(self):
        while True:
            n = _alpha_name(self.count)
            self.count += 1
            if n not in self.reserved:
                return n

    def __call__(self, v):
        if isinstance(v, Literal):
            return v.pretty()
        if isinstance(v, DropVar):
            return "_"
        n = self.names.get(v)
        if n is None:
            n = self.names[v] = self.fresh()
        return n

    def suggest(self, for_vars, like_vars):
        """Name ``for_vars`` (an inner program's binders) like ``like_vars``."""
        if len(for_vars) != len(like_vars):
            return
        used = set()
        for f, l in zip(for_vars, like_vars):
            if (isinstance(l, Var) and l not in used and isinstance(f, Var)
                    and f not in self.names):
                used.add(l)
                self.names[f] = self(l)


def _aval_str(a):
    return a.str_short()


def _pp_vars(vs, names, sep="", shapes=False):
    items = [_d_text(f"{names(v)}:{_aval_str(v.aval)}" if shapes else names(v)) for v in vs]
    return _d_nest(2, _d_group(_d_join(_d_cat(_d_text(sep), _d_group(_d_brk())), items)))


def _param_str(v):
    if isinstance(v, np.dtype):
        return v.name
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    if isinstance(v, frozenset):
        return "frozenset({" + ", ".join(repr(e) for e in sorted(v)) + "})"
    # Like JAX: str() of the value, with object addresses masked so texts compare.
    return re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m.group(1)), str(v))


def _pp_param_value(v, names):
    if isinstance(v, tuple) and v and all(isinstance(j, (Jaxpr, ClosedJaxpr)) for j in v):
        return _d_group(_d_cat(
            _d_nest(2, _d_cat(_d_text("("), _d_brk(""),
                              _d_join(_d_brk(), [_pp_program(j, names) for j in v]))),
            _d_brk(""), _d_text(")")))
    if isinstance(v, (Jaxpr, ClosedJaxpr)):
        return _pp_program(v, names)
    return _d_text(_param_str(v))


def _pp_params(items, names):
    if not items:
        return None
    return _d_group(_d_cat(
        _d_nest(2, _d_cat(_d_text("["), _d_brk(""), _d_join(
            _d_brk(), [_d_cat(_d_text(f"{k}="), _pp_param_value(v, names)) for k, v in items]))),
        _d_brk(""), _d_text("]")))


# -- per-primitive param printing (JAX's pp rules).  A primitive whose printed params
#    differ from its sorted params registers ``pp_rules[prim] = rule`` in its own block;
#    ``rule(eqn, names) -> [(key, value)]`` gives the ordered pairs JAX prints.  The
#    helpers below build the common rules.

pp_rules: dict = {}   # Primitive -> rule(eqn, names) -> [(key, value)]


def _sorted_items(params, drop=(), add=None):
    p = {k: v for k, v in params.items() if k not in drop}
    if add:
        for k, v in add.items():
            p.setdefault(k, v)
    return sorted(p.items())


def _unjaxpr(v):
    return v.jaxpr if isinstance(v, ClosedJaxpr) else v


def pp_fn_name(v, default):
    """The name JAX prints for a function-valued param (a program's or a callable's)."""
    if v is None:
        return default
    if isinstance(v, (Jaxpr, ClosedJaxpr)):
        di = _unjaxpr(v).debug_info
        return getattr(di, "func_name", None) or default
    return getattr(v, "__name__", None) or default


def pp_share_names(names, inner, invars, outvars):
    """Print a sub-program's (unshared) variables with the names of the equation's own
    operands and results, as JAX does for ``jit``'s body."""
    inner = _unjaxpr(inner)
    if inner is not None and inner not in names.shared:
        names.suggest(inner.invars, invars)
        names.suggest(inner.outvars, outvars)


def pp_drop_none(*keys):
    """Rule: sorted params, leaving out ``keys`` whose value is None."""
    def rule(eqn, names):
        return sorted((k, v) for k, v in eqn.params.items() if not (k in keys and v is None))
    return rule


def pp_with_defaults(drop=(), **add):
    """Rule: sorted params without ``drop``, plus ``add``'s entries where absent."""
    def rule(eqn, names):
        return _sorted_items(eqn.params, drop, add)
    return rule


def _pp_eqn(eqn, names):
    rule = pp_rules.get(eqn.primitive) if names.rules else None
    items = rule(eqn, names) if rule is not None else sorted(eqn.params.items())
    lhs = _pp_vars(eqn.outvars, names, shapes=names.shapes) if eqn.outvars else None
    rhs = _d_cat(_d_text(eqn.primitive.pp_name if names.rules else eqn.primitive.name),
                 _pp_params(items, names),
                 _d_text(" "), _pp_vars(eqn.invars, names))
    if not eqn.outvars:
        return rhs
    ann = None
    if names.source_info:
        si = eqn.source_info
        ann = (si.summary() if hasattr(si, "summary") else f"{si[0]}:{si[1]} ({si[2]})") \
            if si else ""
    return _d_cat(lhs, _d_text(" = ", ann), rhs)


def _pp_program(jaxpr, names):
    jaxpr = _unjaxpr(jaxpr)
    shared = names.shared.get(jaxpr)
    if shared is not None:
        return _d_text(shared)
    return _pp_skeleton(jaxpr, names)


def _pp_skeleton(jaxpr, names):
    constvars = _pp_vars(jaxpr.constvars, names, shapes=names.shapes)
    invars = _pp_vars(jaxpr.invars, names, shapes=names.shapes)
    eqns = _d_join(_d_brk("; "), [_pp_eqn(e, names) for e in jaxpr.eqns])
    outvars = _d_cat(_d_text("("), _pp_vars(jaxpr.outvars, names, sep=","),
                     _d_text(",)" if len(jaxpr.outvars) == 1 else ")"))
    return _d_group(_d_cat(_d_nest(2, _d_cat(
        _d_text("{ lambda "), constvars, _d_text("; "), invars, _d_text(". let"),
        _d_nest(2, _d_cat(_d_brk(), eqns)), _d_brk(), _d_text("in "), outvars)),
        _d_text(" }")))


def _subprograms(params):
    for v in params.values():
        for x in (v if isinstance(v, tuple) else (v,)):
            if isinstance(x, (Jaxpr, ClosedJaxpr)):
                yield _unjaxpr(x)


def pp_jaxpr(jaxpr: Jaxpr, *, print_shapes=True, custom_pp_eqn_rules=True, width=_WIDTH,
             source_info=False) -> str:
    """The program as JAX prints it (``str(jax.make_jaxpr(f)(...))``)."""
    jaxpr = _unjaxpr(jaxpr)
    # Top-level outputs nobody reads print as ``_``.
    preset = {}
    used = {a for a in jaxpr.outvars if isinstance(a, Var)}
    for eqn in reversed(jaxpr.eqns):
        for v in eqn.outvars:
            if v not in used:
                preset[v] = "_"
        used.update(a for a in eqn.invars if isinstance(a, Var))
    # Sub-programs used more than once, or longer than 10 equations, are printed
    # first as ``let name = { ... } in`` and referred to by name.
    counts = collections.Counter()
    prog_names = {}
    queue = collections.deque([jaxpr])
    while queue:
        j = queue.popleft()
        counts[j] += 1
        if j is not jaxpr and len(j.eqns) > 10:
            counts[j] += 1
        for eqn in j.eqns:
            name = eqn.params.get("name")
            subs = list(_subprograms(eqn.params))
            queue.extend(subs)
            if isinstance(name, str):
                for s in subs:
                    prog_names.setdefault(s, name.strip("<>"))
    name_counts = collections.Counter()
    shared = []
    names = _Names(preset, shapes=print_shapes, rules=custom_pp_eqn_rules,
                   source_info=source_info)
    for j, c in counts.items():
        if c == 1:
            continue
        name = prog_names.get(j, "jaxpr")
        k = name_counts[name]
        if k > 0:
            name_counts[name] += 1
            name += str(k)
        name_counts[name] += 1
        names.reserved.add(name)
        names.shared[j] = name
        shared.append((name, j))
    docs = []
    for name, j in shared:
        docs.append(_d_cat(_d_text(f"let {name} = "), _pp_skeleton(j, names),
                           _d_text(" in"), _d_brk()))
    docs.append(_pp_skeleton(jaxpr, names))
    return _format_doc(_d_cat(*docs), width)


# ----------------------------------------------------------------- construction helpers


def count_eqns(jaxpr, recursive: bool = True) -> int:
    """Equations of a (Closed)Jaxpr, with those of its sub-programs when ``recursive``."""
    jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    n = len(jaxpr.eqns)
    if recursive:
        for eqn in jaxpr.eqns:
            if eqn_holds_programs(eqn):
                for _, sub in subjaxprs_of_params(eqn.params):
                    n += count_eqns(sub)
    return n

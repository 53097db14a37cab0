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

import numpy as np

from interpreters import core, errors
from interpreters.core import ShapedArray

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
        if v.dtype == np.bool_:
            s = "True" if v else "False"
        elif v.dtype.kind in "iu":
            s = str(int(v))
        elif v.dtype.kind == "c":
            s = repr(complex(v))
        else:
            s = repr(float(v))
        return f"{s}:{self.aval.str_short()}"


Atom = "Var | Literal"


class Eqn:
    """``outvars = primitive[params] invars``."""

    __slots__ = ("primitive", "invars", "outvars", "params", "source_info")

    def __init__(self, primitive, invars, outvars, params, source_info=None):
        self.primitive = primitive
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.params = params
        self.source_info = source_info

    def replace(self, **kw):
        new = Eqn(self.primitive, self.invars, self.outvars, self.params, self.source_info)
        for k, v in kw.items():
            setattr(new, k, v)
        return new

    def __repr__(self):
        return f"Eqn({self.primitive.name}, {self.invars} -> {self.outvars})"


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
    def out_avals(self):
        return [v.aval for v in self.outvars]

    def __str__(self):
        return pp_jaxpr(self)

    __repr__ = __str__

    def _repr_html_(self):
        import html
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

    def _repr_html_(self):
        import html
        return f"<pre>{html.escape(str(self))}</pre>"


# ----------------------------------------------------------------- sub-program discovery


def subjaxprs_of_params(params):
    """Yield (name, Jaxpr) for every program held in an equation's params."""
    for k, v in params.items():
        for j in _iter_jaxprs(v):
            yield k, j


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

    for eqn in jaxpr.eqns:
        invals = [read(a) for a in eqn.invars]
        outs = eqn.primitive.bind(*invals, **eqn.params)
        if eqn.primitive.multiple_results:
            for v, o in zip(eqn.outvars, outs):
                env[v] = o
        else:
            env[eqn.outvars[0]] = outs
    return [read(a) for a in jaxpr.outvars]


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


class _Names:
    def __init__(self, drop=()):
        self.names = {}
        self.count = 0
        self.drop = drop   # variables printed as ``_`` (never read), as JAX does

    def __call__(self, v):
        if isinstance(v, Literal):
            return v.pretty()
        if isinstance(v, DropVar) or v in self.drop:
            return "_"
        n = self.names.get(v)
        if n is None:
            n = _name_for(self.count)
            self.count += 1
            self.names[v] = n
        return n


def _name_for(i):
    letters = "abcdefghijklmnopqrstuvwxyz"
    s = ""
    i += 1
    while i > 0:
        i, r = divmod(i - 1, 26)
        s = letters[r] + s
    return s


_PP_WIDTH = 80   # JAX's pretty-printer width: a jaxpr that fits is printed on one line


def _pp_param(v, names, indent, col=None):
    """A parameter value; ``indent``: the indentation of the line the parameter starts on
    (its item line when params are broken), ``col``: the column it starts at."""
    if isinstance(v, ClosedJaxpr):
        return _pp(v.jaxpr, names, indent + 2, col)
    if isinstance(v, Jaxpr):
        return _pp(v, names, indent + 2, col)
    if isinstance(v, (tuple, list)) and any(isinstance(x, (Jaxpr, ClosedJaxpr)) for x in v):
        inner = ("\n" + " " * (indent + 4)).join(
            _pp_param(x, names, indent + 2, indent + 4) for x in v)
        return "(\n" + " " * (indent + 4) + inner + "\n" + " " * (indent + 2) + ")"
    if isinstance(v, np.dtype):
        return v.name
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    return str(v)


def _pp(jaxpr: Jaxpr, names: _Names, indent: int, col=None) -> str:
    """``indent``: the indentation of the jaxpr's body (equations at ``indent + 4``);
    ``col``: the column its ``{`` starts at (for the one-line form, as JAX)."""
    def decl(v):
        return f"{names(v)}:{v.aval.str_short()}"

    pad = " " * indent
    head = "{ lambda " + " ".join(decl(v) for v in jaxpr.constvars) + "; " + \
        " ".join(decl(v) for v in jaxpr.invars) + ". let"
    eqns = []
    for eqn in jaxpr.eqns:
        lhs = " ".join(decl(v) for v in eqn.outvars)
        params = ""
        if eqn.params:
            items = []
            for k, v in sorted(eqn.params.items()):
                items.append(f"{k}={_pp_param(v, names, indent + 4, indent + 7 + len(k))}")
            joined = " ".join(items)
            if "\n" in joined or len(joined) > 70:
                params = "[\n" + "\n".join(pad + "      " + it for it in items) + "\n" + pad + "    ]"
            else:
                params = "[" + joined + "]"
        rhs = " ".join(names(a) for a in eqn.invars)
        eqns.append(f"{lhs} = {eqn.primitive.name}{params} {rhs}".rstrip().lstrip())
    outs = ", ".join(names(a) for a in jaxpr.outvars)
    tail = f"in ({outs}{',' if len(jaxpr.outvars) == 1 else ''}) }}"
    if all("\n" not in e for e in eqns):
        # as JAX prints it: `{ lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = ... in (c,) }`
        flat = f"{head} {'; '.join(eqns)} {tail}"
        if (indent if col is None else col) + len(flat) <= _PP_WIDTH:
            return flat
    lines = [head] + [f"{pad}    {e}" for e in eqns] + [f"{pad}  {tail}"]
    return "\n".join(lines)


def _unused_outvars(jaxpr: Jaxpr) -> set:
    """Equation outputs of ``jaxpr`` (top level only) that nothing reads."""
    used = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
    drop = set()
    for eqn in reversed(jaxpr.eqns):
        drop.update(v for v in eqn.outvars if v not in used)
        used.update(v for v in eqn.invars if not isinstance(v, Literal))
    return drop


def pp_jaxpr(jaxpr: Jaxpr) -> str:
    return _pp(jaxpr, _Names(_unused_outvars(jaxpr)), 0)


# ----------------------------------------------------------------- construction helpers


def count_eqns(jaxpr, recursive: bool = True) -> int:
    """Equations of a (Closed)Jaxpr, with those of its sub-programs when ``recursive``."""
    jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    n = len(jaxpr.eqns)
    if recursive:
        for eqn in jaxpr.eqns:
            for _, sub in subjaxprs_of_params(eqn.params):
                n += count_eqns(sub)
    return n

"""Symbolic dimensions (shape polymorphism): ``symbolic_shape``, ``SymbolicScope`` and
the dimension expressions export traces with."""
from __future__ import annotations

import re
import numpy as np

from xform._jit import ShapeDtypeStruct
from xform._src.interpreters import tree_util as _tu


class SymbolicScope:
    """A namespace of dimension variables plus their constraints (``a >= b`` ...)."""

    def __init__(self, constraints_str=()):
        if isinstance(constraints_str, str):
            raise ValueError("The symbolic constraints should be a sequence of strings. "
                             f"Got {constraints_str!r}")
        self.constraints = tuple(constraints_str)
        self._parsed = []             # (lhs - rhs as a _DimExpr or int, text): must be >= 0
        for c in self.constraints:
            if not isinstance(c, str):
                raise ValueError(f"The symbolic constraints should be strings, got {c!r}")
            for op in (">=", "<=", "=="):
                if op in c:
                    lhs, rhs = c.split(op, 1)
                    break
            else:
                raise ValueError("Constraint parsing error: must contain one of '==' or '>=' "
                                 "or '<='")
            lhs, rhs = _parse_dim(lhs, self), _parse_dim(rhs, self)
            if op == "==":
                self._parsed.append(("==", _lift(lhs) - rhs, c))
            else:
                diff = _lift(lhs) - rhs if op == ">=" else _lift(rhs) - lhs
                self._parsed.append((">=", diff, c))

    def __repr__(self):
        return f"SymbolicScope({list(self.constraints)})"

class _DimExpr:
    """A polynomial in dimension variables with integer coefficients (``2*b + 1``, ``a*b``).

    Only its arithmetic, printing, parsing and equality are provided: xform does
    not trace programs with symbolic shapes (see ``export``'s docstring); these
    describe the avals of shape-polymorphic artifacts (e.g. written by JAX).
    """
    __slots__ = ("terms", "scope")
    _is_symbolic_dim = True

    def __init__(self, terms, scope=None):
        self.terms = {m: c for m, c in terms.items() if c != 0}   # monomial -> coefficient
        self.scope = scope

    @staticmethod
    def var(name, scope=None):
        return _DimExpr({((name, 1),): 1}, scope)

    def _const(self):
        if not self.terms:
            return 0
        if list(self.terms) == [()]:
            return self.terms[()]
        return None

    @staticmethod
    def _lift(x):
        if isinstance(x, _DimExpr):
            return x
        if isinstance(x, (int, np.integer)):
            return _DimExpr({(): int(x)})
        return None

    def __add__(self, other):
        o = self._lift(other)
        if o is None:
            return NotImplemented
        t = dict(self.terms)
        for m, c in o.terms.items():
            t[m] = t.get(m, 0) + c
        return _DimExpr(t, self.scope or o.scope)._norm()

    __radd__ = __add__

    def __neg__(self):
        return _DimExpr({m: -c for m, c in self.terms.items()}, self.scope)

    def __sub__(self, other):
        o = self._lift(other)
        return NotImplemented if o is None else self + (-o)

    def __rsub__(self, other):
        o = self._lift(other)
        return NotImplemented if o is None else o + (-self)

    def __mul__(self, other):
        o = self._lift(other)
        if o is None:
            return NotImplemented
        t = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in o.terms.items():
                powers = dict(m1)
                for v, p in m2:
                    powers[v] = powers.get(v, 0) + p
                m = tuple(sorted(powers.items()))
                t[m] = t.get(m, 0) + c1 * c2
        return _DimExpr(t, self.scope or o.scope)._norm()

    __rmul__ = __mul__

    def _norm(self):
        c = self._const()
        return c if c is not None else self

    def __eq__(self, other):
        o = self._lift(other)
        return o is not None and self.terms == o.terms

    def __hash__(self):
        return hash(tuple(sorted(self.terms.items())))

    def __int__(self):
        c = self._const()
        if c is None:
            raise TypeError(f"symbolic dimension {self} has no constant value; shapes with "
                            "dimension variables cannot be turned into integers")
        return c

    __index__ = __int__

    def variables(self):
        return sorted({v for m in self.terms for v, _ in m})

    def __str__(self):
        def mono(m):
            return "*".join(v if p == 1 else f"{v}^{p}" for v, p in m)
        parts = []
        # JAX's order: higher degree first, then monomials in decreasing order ("- b + a")
        for m in sorted(self.terms, key=lambda m: (sum(p for _, p in m), m), reverse=True):
            c = self.terms[m]
            if not m:
                s = str(abs(c))
            elif abs(c) == 1:
                s = mono(m)
            else:
                s = f"{abs(c)}*{mono(m)}"
            parts.append(("- " if c < 0 else "+ ") + s)
        out = " ".join(parts) if parts else "0"
        return out[2:] if out.startswith("+ ") else out   # JAX prints "- b + a"

    __repr__ = __str__

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\S))")

def _parse_dim(text, scope):
    toks = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            break
        pos = m.end()
        if m.group(1):
            toks.append(("int", int(m.group(1))))
        elif m.group(2):
            toks.append(("var", m.group(2)))
        else:
            toks.append(("op", m.group(3)))
    i = [0]

    def peek():
        return toks[i[0]] if i[0] < len(toks) else ("end", None)

    def err(msg):
        return ValueError(f"syntax error in symbolic shape {text!r}: {msg}")

    def atom():
        kind, v = peek()
        i[0] += 1
        if kind == "int":
            return v
        if kind == "var":
            return _DimExpr.var(v, scope)
        if (kind, v) == ("op", "("):
            e = expr()
            if peek() != ("op", ")"):
                raise err("expected ')'")
            i[0] += 1
            return e
        if (kind, v) == ("op", "-"):
            return -_lift(atom())
        raise err(f"unexpected {v!r}" if v is not None else "unexpected end")

    def power():
        a = atom()
        if peek() == ("op", "^"):
            i[0] += 1
            k = atom()
            if not isinstance(k, int) or k < 1:
                raise err("exponents must be positive integer literals")
            r = 1
            for _ in range(k):
                r = _lift(a) * r
            return r
        return a

    def term():
        a = power()
        while peek() == ("op", "*"):
            i[0] += 1
            a = _lift(a) * power()
        return a

    def expr():
        a = term()
        while peek() in (("op", "+"), ("op", "-")):
            op = peek()[1]
            i[0] += 1
            b = term()
            a = _lift(a) + b if op == "+" else _lift(a) - b
        return a

    if not toks:
        raise err("empty dimension")
    e = expr()
    if i[0] != len(toks):
        raise err(f"unexpected {peek()[1]!r}")
    if isinstance(e, _DimExpr) and e._const() is not None:
        e = e._const()
    return e

def _lift(x):
    return x if isinstance(x, _DimExpr) else _DimExpr({(): int(x)})

def symbolic_shape(shape_spec, *, constraints=(), scope=None, like=None):
    """Parse ``"b, 4"`` (or ``"(b, 2*a)"``) into a tuple of ints and symbolic dimensions.

    Dimension variables of one scope are the same variables; ``constraints``
    (``"a >= b"`` ...) are recorded in the scope.  ``like``: a concrete shape to
    take ``_`` dimensions from.
    """
    if shape_spec is None:
        raise ValueError("symbolic_shape: shape_spec must be a string, got None")
    if not isinstance(shape_spec, str):
        raise ValueError(f"polymorphic shape spec should be a string, got {shape_spec!r}")
    if scope is not None and constraints:
        raise ValueError("Cannot specify both a `scope` and `constraints`.")
    if scope is None:
        scope = SymbolicScope(constraints)
    spec = shape_spec.strip()
    if spec.startswith("(") and spec.endswith(")"):
        spec = spec[1:-1]
    if not spec.strip():
        return ()
    parts = [p for p in spec.split(",")]
    if parts and not parts[-1].strip():
        parts = parts[:-1]
    out = []
    for k, p in enumerate(parts):
        p = p.strip()
        if p == "_":
            if like is None or k >= len(like):
                raise ValueError(f"polymorphic shape {shape_spec!r} has '_' for dimension {k} "
                                 "but no 'like' shape gives its value")
            out.append(int(like[k]))
        else:
            out.append(_parse_dim(p, scope))
    return tuple(out)

def symbolic_args_specs(args, shapes_specs, constraints=(), scope=None):
    """ShapeDtypeStructs for ``args`` (a pytree) with symbolic shapes ``shapes_specs``."""
    leaves, tree = _tu.tree_flatten(args)
    if isinstance(shapes_specs, (str, type(None))):
        specs = [shapes_specs] * len(leaves)
    else:
        specs = tree.flatten_up_to(shapes_specs)
    if scope is None:
        scope = SymbolicScope(constraints)
    out = []
    for x, s in zip(leaves, specs):
        shape, dtype = np.shape(x), np.result_type(x)
        if s is None:
            out.append(ShapeDtypeStruct(shape, dtype))
        else:
            out.append(ShapeDtypeStruct(symbolic_shape(s, scope=scope, like=shape), dtype))
    return tree.unflatten(out)

def is_symbolic_dim(p) -> bool:
    """True for a symbolic dimension (a dimension variable expression)."""
    return isinstance(p, _DimExpr)

def _is_symbolic(shape):
    return any(isinstance(d, _DimExpr) for d in shape)

def _eval_mono(m, env):
    r = 1
    for v, p in m:
        r *= env[v] ** p
    return r

def _shape_str(shape):
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"

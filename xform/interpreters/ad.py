"""``xform.interpreters.ad``: JVP and transpose rules (JAX's ``jax.interpreters.ad``).

``primitive_jvps`` and ``primitive_transposes`` read and write xform's rule tables (the
rules have JAX's signatures):

* ``primitive_jvps[p] = rule``: ``rule(primals, tangents, **params) -> (primal_out,
  tangent_out)``; a tangent may be the symbolic zero ``Zero(aval)``, and ``tangent_out``
  may be one (lists for ``multiple_results`` primitives).
* ``primitive_transposes[p] = rule``: ``rule(ct, *args, **params) -> cotangents``, one
  per argument: the linear arguments arrive as ``UndefinedPrimal(aval)``
  (``is_undefined_primal``), the others as values, whose cotangent is ``None``.

``defjvp``, ``defjvp2``, ``deflinear``, ``deflinear2``, ``defbilinear`` and
``defjvp_zero`` build rules from per-argument pieces, as in JAX.
"""
from __future__ import annotations

from xform._src.interpreters import ad as _ad
from xform._src.interpreters.ad import (JVPTrace, JVPTracer, UndefinedPrimal, Zero,
                                        is_undefined_primal)
from xform._src.primitives import _rules
from xform._src.primitives.elementwise import add_any_p

__all__ = ["JVPTrace", "JVPTracer", "UndefinedPrimal", "Zero", "add_jaxvals",
           "add_jaxvals_p", "add_tangents", "defbilinear", "defjvp", "defjvp2",
           "defjvp_zero", "deflinear", "deflinear2", "get_primitive_transpose",
           "instantiate_zeros", "is_undefined_primal", "primitive_jvps",
           "primitive_transposes", "zeros_like_aval"]

class _JVPTable(dict):
    """``primitive_jvps``: reads xform's JVP rule table; ``table[p] = rule`` registers
    ``rule`` there, called as JAX calls it (primals and tangents as tuples)."""

    def __getitem__(self, prim):
        return _ad.jvp_rules[prim]

    def get(self, prim, default=None):
        return _ad.jvp_rules.get(prim, default)

    def __contains__(self, prim):
        return prim in _ad.jvp_rules

    def __setitem__(self, prim, rule):
        def jvp(primals, tangents, **params):
            return rule(tuple(primals), tuple(tangents), **params)
        jvp.__wrapped__ = rule
        _ad.jvp_rules[prim] = jvp
        # as JAX calls it: Python-scalar primals (jvp of Python floats) reach it as they are
        _ad.python_scalar_rules.add(prim)

    def __delitem__(self, prim):
        del _ad.jvp_rules[prim]
        _ad.python_scalar_rules.discard(prim)

    def __iter__(self):
        return iter(_ad.jvp_rules)

    def __len__(self):
        return len(_ad.jvp_rules)

    def keys(self):
        return _ad.jvp_rules.keys()

    def values(self):
        return _ad.jvp_rules.values()

    def items(self):
        return _ad.jvp_rules.items()

    def __repr__(self):
        return f"<JVP rules of {len(self)} primitives>"


primitive_jvps = _JVPTable()
primitive_transposes: dict = _ad.transpose_rules


def instantiate_zeros(tangent):
    """A symbolic ``Zero`` as an array of zeros; any other tangent as is."""
    return _ad.instantiate(tangent)


def zeros_like_aval(aval):
    """An array of zeros of ``aval``'s shape and dtype."""
    return _ad.zeros_like_aval(aval)


def add_tangents(x, y):
    """``x + y`` for tangents, either of which may be a symbolic ``Zero``."""
    return _ad.add_maybe_zero(x, y)


def add_jaxvals(x, y):
    return _ad.add_tangents(x, y)


def __getattr__(name):
    if name == "add_jaxvals_p":
        return add_any_p
    if name == "reducing_transposes":
        raise AttributeError(
            "jax.interpreters.ad.reducing_transposes was deprecated in v0.9.0. and removed "
            "in v0.10.0. It has been unused since JAX v0.4.38.")
    raise AttributeError(f"module 'xform.interpreters.ad' (jax.interpreters.ad) has no "
                         f"attribute {name!r}: xform serves {', '.join(__all__)}")


def get_primitive_transpose(p):
    """The transpose rule of primitive ``p``."""
    try:
        return _ad.transpose_rules[p]
    except KeyError:
        raise NotImplementedError(
            f"Transpose rule (for reverse-mode differentiation) for '{p.name}' not "
            "implemented") from None


def defjvp(primitive, *jvprules):
    """JVP from one rule per argument: ``jvprules[i](g, *primals, **params)`` is the
    output tangent's part from argument ``i``'s tangent ``g`` (``None``: no
    dependence).  The parts are summed."""
    return _rules.defjvp(primitive, *jvprules)


def defjvp2(primitive, *jvprules):
    """As ``defjvp``; each rule also gets the primal output:
    ``jvprules[i](g, ans, *primals, **params)``."""
    return _rules.defjvp2(primitive, *jvprules)


def defjvp_zero(primitive):
    """The output's tangent is always zero (piecewise constant or not differentiable)."""
    return _rules.defjvp_zero(primitive)


def _linear_jvp(primitive):
    def jvp(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if all(type(t) is Zero for t in tangents):
            zero = [Zero.from_primal(o) for o in out] if primitive.multiple_results \
                else Zero.from_primal(out)
            return out, zero
        return out, primitive.bind(*[instantiate_zeros(t) for t in tangents], **params)
    return jvp


def deflinear(primitive, transpose_rule):
    """``primitive`` is linear in all its arguments: its JVP applies it to the tangents;
    ``transpose_rule(ct, **params)`` returns one cotangent per argument."""
    _ad.jvp_rules[primitive] = _linear_jvp(primitive)

    def transpose(ct, *args, **params):
        if type(ct) is Zero:
            return [None if not is_undefined_primal(a) else Zero(a.aval) for a in args]
        return transpose_rule(ct, **params)
    _ad.transpose_rules[primitive] = transpose


def deflinear2(primitive, transpose_rule):
    """As ``deflinear``; ``transpose_rule(ct, *args, **params)`` also gets the
    arguments (``UndefinedPrimal`` for the linear ones)."""
    _ad.jvp_rules[primitive] = _linear_jvp(primitive)

    def transpose(ct, *args, **params):
        if type(ct) is Zero:
            return [None if not is_undefined_primal(a) else Zero(a.aval) for a in args]
        return transpose_rule(ct, *args, **params)
    _ad.transpose_rules[primitive] = transpose


def defbilinear(prim, lhs_rule, rhs_rule):
    """``prim(x, y)`` is bilinear: its JVP is ``prim(tx, y) + prim(x, ty)``;
    ``lhs_rule(ct, x, y, **params)`` / ``rhs_rule(ct, x, y, **params)`` give the
    cotangent of ``x`` / ``y`` (the other argument is known)."""
    def jvp(primals, tangents, **params):
        x, y = primals
        tx, ty = tangents
        out = prim.bind(x, y, **params)
        t = None
        if type(tx) is not Zero:
            t = prim.bind(tx, y, **params)
        if type(ty) is not Zero:
            part = prim.bind(x, ty, **params)
            t = part if t is None else _ad.add_tangents(t, part)
        return out, (Zero.from_primal(out) if t is None else t)

    def transpose(ct, x, y, **params):
        if type(ct) is Zero:
            return [Zero(a.aval) if is_undefined_primal(a) else None for a in (x, y)]
        cx = lhs_rule(ct, x, y, **params) if is_undefined_primal(x) else None
        cy = rhs_rule(ct, x, y, **params) if is_undefined_primal(y) else None
        return [cx, cy]
    _ad.jvp_rules[prim] = jvp
    _ad.transpose_rules[prim] = transpose


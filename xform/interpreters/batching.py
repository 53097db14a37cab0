"""``xform.interpreters.batching``: vmap rules (JAX's ``jax.interpreters.batching``).

* ``primitive_batchers[p] = rule``: ``rule(batched_args, batch_dims, **params) ->
  (out, out_dims)``; ``batch_dims[i]`` is the batched axis of argument ``i`` or
  ``not_mapped`` (``None``).  The rule runs only when some argument is batched.
* ``fancy_primitive_batchers[p] = rule``: ``rule(axis_data, batched_args, batch_dims,
  **params)``; ``axis_data.size`` and ``axis_data.name`` describe the vmapped axis.
  This table *is* xform's own (``batch_rules``).
* ``axis_primitive_batchers[p] = rule``: the older ``rule(axis_size, axis_name,
  trace_type, batched_args, batch_dims, **params)``.

``defvectorized(p)`` (the primitive acts elementwise on one operand, or on operands
batched alike) and ``defbroadcasting(p)`` (n-ary elementwise) cover the common cases.
"""
from __future__ import annotations

from xform._src.interpreters import batching as _b
from xform._src.interpreters.batching import AxisData, BatchTrace, BatchTracer, not_mapped
from xform._src.primitives import _rules
from xform._src.primitives.reductions import reduce_sum_p

__all__ = ["AxisData", "BatchTrace", "BatchTracer", "axis_primitive_batchers",
           "bdim_at_front", "broadcast", "defbroadcasting", "defvectorized",
           "fancy_primitive_batchers", "matchaxis", "moveaxis", "not_mapped",
           "primitive_batchers"]

fancy_primitive_batchers: dict = _b.batch_rules


class _BatcherTable:
    """Assigning ``table[p] = rule`` registers an adapted rule in xform's batching table."""

    _signature = ""

    def __init__(self):
        self._rules = {}

    def _adapt(self, prim, rule):
        raise NotImplementedError

    def __setitem__(self, prim, rule):
        self._rules[prim] = rule
        _b.batch_rules[prim] = self._adapt(prim, rule)

    def __getitem__(self, prim):
        try:
            return self._rules[prim]
        except KeyError:
            raise KeyError(f"no batching rule with the signature {self._signature} was "
                           f"registered for {prim!r} here; xform's own rules are in "
                           "fancy_primitive_batchers") from None

    def __delitem__(self, prim):
        del self._rules[prim]
        _b.batch_rules.pop(prim, None)

    def __contains__(self, prim):
        return prim in self._rules

    def get(self, prim, default=None):
        return self._rules.get(prim, default)


class _PrimitiveBatchers(_BatcherTable):
    _signature = "rule(batched_args, batch_dims, **params)"

    def _adapt(self, prim, rule):
        def batch(axis_data, vals, dims, **params):
            return rule(tuple(vals), tuple(dims), **params)
        batch.__wrapped__ = rule
        return batch


class _AxisPrimitiveBatchers(_BatcherTable):
    _signature = "rule(axis_size, axis_name, trace_type, batched_args, batch_dims, **params)"

    def _adapt(self, prim, rule):
        def batch(axis_data, vals, dims, **params):
            return rule(axis_data.size, axis_data.name, None, tuple(vals), tuple(dims),
                        **params)
        batch.__wrapped__ = rule
        return batch


primitive_batchers = _PrimitiveBatchers()
axis_primitive_batchers = _AxisPrimitiveBatchers()


def defvectorized(prim):
    """``prim`` applies independently to each element (its operands batched alike):
    the batched result is ``prim`` itself, batched along the operands' axis."""
    def rule(axis_data, vals, dims, **params):
        d = next(x for x in dims if x is not None)
        vals = [v if x == d else _move_or_broadcast(v, x, d, axis_data.size)
                for v, x in zip(vals, dims)]
        return prim.bind(*vals, **params), d
    _b.batch_rules[prim] = rule


def _move_or_broadcast(x, src, dst, size):
    if src is None:
        return _rules.broadcast_batched(x, size, dst)
    return _rules.moveaxis(x, src, dst)


def defbroadcasting(prim):
    """``prim`` is n-ary elementwise with rank-0 broadcasting (as ``lax.add``)."""
    _rules.defbroadcasting(prim)


def moveaxis(x, src, dst):
    """``x`` with its axis ``src`` moved to ``dst``."""
    return _rules.moveaxis(x, src, dst)


def broadcast(x, sz, axis, mesh_axis=None):
    """``x`` with a new axis of length ``sz`` at ``axis`` (a batch axis materialised)."""
    return _rules.broadcast_batched(x, sz, axis)


def bdim_at_front(x, bdim, size, mesh_axis=None):
    """``x`` with its batch axis ``bdim`` first (materialised when ``not_mapped``)."""
    return _rules.bdim_at_front(x, bdim, size)


def matchaxis(axis_data, src, dst, x, sum_match=False):
    """``x`` batched along ``src`` moved (or materialised) to batch axis ``dst``."""
    if src == dst:
        return x
    if dst is None:
        if sum_match:
            return reduce_sum_p.bind(x, axes=(src,))
        raise ValueError(f"matchaxis: cannot unbatch a value batched along axis {src}")
    return _move_or_broadcast(x, src, dst, axis_data.size)

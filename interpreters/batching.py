"""The batching interpreter (vmap): a tracer carries a value and its batch axis.

Rule table (filled by ``primitives/``):
  batch_rules[prim](axis_data, vals, dims, **params) -> (out, out_dim)
      ``dims[i]`` is the batch axis of ``vals[i]`` or ``not_mapped`` (None);
      for multiple-result primitives ``out`` and ``out_dim`` are lists.
      ``axis_data`` has ``.size`` and ``.name`` (for collectives and rules that
      must materialise a batch axis).
"""
from __future__ import annotations

from interpreters import core
from interpreters.core import Tracer

batch_rules: dict = {}
not_mapped = None

# Set by primitives/: move a batch axis / materialise one.
moveaxis = None          # (x, src, dst) -> x
broadcast_batched = None  # (x, size, axis) -> x with a new axis of ``size`` at ``axis``


class AxisData:
    __slots__ = ("size", "name", "spmd_name")

    def __init__(self, size, name=None, spmd_name=None):
        self.size = size
        self.name = name
        self.spmd_name = spmd_name

    def __repr__(self):
        return f"AxisData(size={self.size}, name={self.name!r})"


class BatchTracer(Tracer):
    __slots__ = ("val", "batch_dim")

    def __init__(self, trace, val, batch_dim):
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim

    @property
    def aval(self):
        a = core.get_aval(self.val)
        if self.batch_dim is None:
            return a
        shape = a.shape[:self.batch_dim] + a.shape[self.batch_dim + 1:]
        return core.ShapedArray(shape, a.dtype, a.weak_type)


class BatchTrace(core.Trace):
    def __init__(self, parent, axis_data: AxisData, name="vmap"):
        super().__init__(parent, name)
        self.axis_data = axis_data

    def unpack(self, x):
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.batch_dim
        if isinstance(x, Tracer):
            self.check_foreign_tracer(x)
        return x, not_mapped

    def process_primitive(self, prim, args, params):
        vals, dims = [], []
        batched = False
        for a in args:
            v, d = self.unpack(a)
            vals.append(v)
            dims.append(d)
            batched = batched or d is not None
        if not batched and not getattr(prim, "is_collective", False):
            with core.set_current_trace(self.parent):
                return prim.bind(*vals, **params)
        rule = batch_rules.get(prim)
        if rule is None:
            raise NotImplementedError(f"Batching rule for '{prim.name}' not implemented")
        with core.set_current_trace(self.parent):
            out, out_dim = rule(self.axis_data, vals, dims, **params)
        if prim.multiple_results:
            return [self.wrap(o, d) for o, d in zip(out, out_dim)]
        return self.wrap(out, out_dim)

    def wrap(self, v, d):
        if d is None:
            return v
        return BatchTracer(self, v, d)

    def find_axis(self, name):
        """The innermost active BatchTrace (this or an ancestor) bound to ``name``."""
        t = self
        while t is not None:
            if isinstance(t, BatchTrace) and t.axis_data.name == name:
                return t
            t = t.parent
        return None

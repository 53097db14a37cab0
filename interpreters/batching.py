"""The batching interpreter (vmap): a tracer carries a value and its batch axis.

Rule table (filled by ``primitives/``):
  batch_rules[prim](axis_data, vals, dims, **params) -> (out, out_dim)
      ``dims[i]`` is the batch axis of ``vals[i]`` or ``not_mapped`` (None);
      for multiple-result primitives ``out`` and ``out_dim`` are lists.
      ``axis_data`` has ``.size`` and ``.name`` (for collectives and rules that
      must materialise a batch axis).  Rules run with the parent trace current,
      so they simply bind other primitives on the values they get.

A primitive with ``is_collective = True`` (psum, axis_index, ...) reaches its
rule even when no input is batched: whether it acts depends on its axis name,
not on its inputs.  Named axes are found by walking the trace chain
(``bound_axes``), so there is no separate axis environment to keep in sync.

Entry points for transformations built on top: ``batch_flat`` (run a flat
function batched, used by ``xform.vmap``) and ``batch_jaxpr`` (program to
program, for higher-order primitives such as jit/cond/scan).
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from xform._src.interpreters import core
from xform._src.interpreters.core import Tracer
from xform._src.interpreters import ir, staging

batch_rules: dict = {}
not_mapped = None

# Set by primitives/: move a batch axis / materialise one.
moveaxis = None          # (x, src, dst) -> x
broadcast_batched = None  # (x, size, axis) -> x with a new axis of ``size`` at ``axis``


class AxisData:
    """What a rule may know about the axis being vectorised over."""

    __slots__ = ("size", "name", "spmd_name")
    explicit_mesh_axis = None   # JAX's field: xform's meshes have no explicit axes

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

    def __repr__(self):
        return (f"VmapTracer(aval={core.aval_text(self.aval, weak=False)}, "
                f"batched={core.aval_text(core.get_aval(self.val), weak=False)})")

    __str__ = __repr__


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
        if not batched and not getattr(prim, "is_collective", False) and not (
                self.axis_data.name is not None and params and ir.holds_programs(params)
                and _names_axis(params, self.axis_data.name)):
            with core.set_current_trace(self.parent):
                return prim.bind(*vals, **params)
        rule = batch_rules.get(prim)
        if rule is None:
            why = prim.missing_rules.get("batching", "this primitive cannot be used under "
                                         "xform.vmap yet")
            raise NotImplementedError(
                f"Batching rule for '{prim.name}' not implemented: {why} (inputs: "
                + ", ".join(f"{core.get_aval(a).str_short()}" for a in args) + ").")
        with core.set_current_trace(self.parent):
            out, out_dim = rule(self.axis_data, vals, dims, **params)
        if prim.multiple_results:
            return [self.wrap(o, d) for o, d in zip(out, out_dim)]
        return self.wrap(out, out_dim)

    def wrap(self, v, d):
        if d is None:
            return v
        return BatchTracer(self, v, d)

def _names_axis(params, name) -> bool:
    """Whether a sub-program in ``params`` runs a collective over axis ``name``: then the
    equation depends on the axis even with no batched operand (a jitted function or a
    loop reading ``axis_index('i')``), and goes through its batching rule, as in JAX."""
    for _, j in ir.subjaxprs_of_params(params):
        key = id(j)
        hit = _axis_uses.get(key)
        if hit is None or hit[0] is not j:
            if len(_axis_uses) > 4096:
                _axis_uses.clear()
            hit = _axis_uses[key] = (j, _collective_axes(j))
        if name in hit[1]:
            return True
    return False


_axis_uses: dict = {}     # id(jaxpr) -> (the jaxpr, the axis names its collectives use)


def _collective_axes(j) -> frozenset:
    jaxpr = j.jaxpr if hasattr(j, "jaxpr") else j
    names = set()
    for e in jaxpr.eqns:
        if getattr(e.primitive, "is_collective", False):
            n = e.params.get("axes", e.params.get("axis_name"))
            names.update(n if isinstance(n, (tuple, list)) else (n,))
        if e.params and ir.holds_programs(e.params):
            for _, sub in ir.subjaxprs_of_params(e.params):
                names |= _collective_axes(sub)
    return frozenset(names)


# ----------------------------------------------------------------- named axes


class _AxisEnv(threading.local):
    def __init__(self):
        self.extra = []


_axis_env = _AxisEnv()


@contextlib.contextmanager
def extend_axis_env(axis_env):
    """Treat ``[(name, size), ...]`` as bound while staging (``make_jaxpr(axis_env=...)``):
    collectives over them are recorded instead of raising NameError."""
    prev = _axis_env.extra
    _axis_env.extra = list(axis_env) + prev
    try:
        yield
    finally:
        _axis_env.extra = prev


def bound_axes(trace=None) -> list:
    """``[(name, size), ...]`` of the named axes active at ``trace`` (innermost first):
    the vmaps on the trace chain, then any ``extend_axis_env`` entries."""
    t = core.current_trace() if trace is None else trace
    out = []
    while t is not None:
        if isinstance(t, BatchTrace) and t.axis_data.name is not None:
            out.append((t.axis_data.name, t.axis_data.size))
        t = t.parent
    return out + _axis_env.extra


def axis_size(name) -> int:
    """Size of the innermost active named axis ``name`` (NameError if none binds it)."""
    for n, s in bound_axes():
        if n == name:
            return s
    raise unbound_axis_error(name)


def unbound_axis_error(name, what: str = "a collective") -> NameError:
    names = [n for n, _ in bound_axes()]
    bound = ", ".join(repr(n) for n in names) if names else "none"
    return NameError(
        f"unbound axis name: {name}. {what} refers to axis {name!r}, but no enclosing "
        f"xform.vmap binds that name (axis names bound here: {bound}). Pass "
        f"axis_name={name!r} to the vmap that maps the axis to reduce over.")


# ----------------------------------------------------------------- moving batch axes


def canonicalize_axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


class SpecMatchError(ValueError):
    """An output's batch axis cannot be put where ``out_axes`` asks (out_axes=None)."""

    def __init__(self, index, src, dst):
        super().__init__(f"output {index} was batched on axis {src} but out_axes is {dst}")
        self.index, self.src, self.dst = index, src, dst


def matchaxis(axis_data: AxisData, src, dst, x, index: int = 0):
    """Put the batch axis of ``x`` (at ``src``, or None) at ``dst`` (or None = unmapped)."""
    if src == dst:
        return x
    if dst is None:
        raise SpecMatchError(index, src, dst)
    nd = core.get_aval(x).ndim + (src is None)
    d = canonicalize_axis(dst, nd)
    if not 0 <= d < nd:
        raise ValueError(f"vmap out_axes={dst} is out of bounds for output {index}, whose "
                         f"batched rank is {nd} (valid: {-nd} .. {nd - 1}).")
    if src is None:
        return broadcast_batched(_canonical(x), axis_data.size, d)
    return moveaxis(x, src, d)


def _canonical(x):
    """Python scalars / NumPy values as engine arrays of canonical dtype (weak for scalars)."""
    if type(x) in (int, float, complex, bool) or isinstance(x, (np.ndarray, np.generic)):
        aval = core.get_aval(x)
        return core.Array(np.asarray(x, aval.dtype), weak_type=aval.weak_type)
    return x


def batch_flat(fun, axis_data: AxisData, in_vals, in_dims, out_dims=None):
    """Run ``fun(*flat) -> flat list`` batched over ``axis_data``.

    ``in_dims[i]`` is the (non-negative) batch axis of ``in_vals[i]`` or None.
    Returns ``(outs, dims)``.  ``out_dims``: a list of destinations (int or None)
    or a callable ``(n_outputs) -> list`` evaluated after the call; when given,
    every output is moved there (None leaves it unmapped, which is an error for a
    batched output: ``SpecMatchError``) and the returned dims equal it.
    """
    parent = core.current_trace()
    trace = BatchTrace(parent, axis_data)
    args = [x if d is None else BatchTracer(trace, x, d) for x, d in zip(in_vals, in_dims)]
    with core.running(trace):
        outs = fun(*args)
    outs = list(outs)
    vals, dims = [], []
    for o in outs:
        v, d = trace.unpack(o)
        vals.append(v)
        dims.append(d)
    if out_dims is None:
        return vals, dims
    if callable(out_dims):
        out_dims = out_dims(len(vals))
    with core.set_current_trace(parent):
        vals = [matchaxis(axis_data, s, d, v, i)
                for i, (v, s, d) in enumerate(zip(vals, dims, out_dims))]
    return vals, list(out_dims)


def batch_jaxpr(closed, axis_data: AxisData, in_dims, out_dims=None):
    """Program-to-program batching for higher-order primitives.

    ``closed``: a ``ClosedJaxpr``; ``in_dims``: batch axis per input (None =
    unbatched).  Returns ``(batched ClosedJaxpr, out_dims)``; with ``out_dims``
    given (ints/None per output), outputs are forced there (use 0 everywhere to
    get a uniform program, e.g. for loop carries).
    """
    in_avals = []
    for a, d in zip(closed.in_avals, in_dims):
        if d is None:
            in_avals.append(a)
        else:
            in_avals.append(a.update(shape=a.shape[:d] + (axis_data.size,) + a.shape[d:]))
    found = []

    def fun(*args):
        outs, dims = batch_flat(lambda *xs: ir.eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                                axis_data, args, in_dims, out_dims)
        found.extend(dims)
        return outs

    new = staging.trace_to_closed_jaxpr(fun, in_avals, name="vmap")
    return new, found

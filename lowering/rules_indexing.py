"""Lowering rules: ``gather`` and the ``scatter`` family (``stablehlo.gather`` / ``scatter``).

XLA's native out-of-bounds behaviour is ``promise_in_bounds``: gathers clamp
each start index so the window fits, scatters skip windows that do not fit.
The other modes are spelled out around the native op, as JAX does:
``clip`` scatters clamp their indices first; ``fill`` gathers compute an
in-bounds mask per index vector and select ``fill_value`` where it is false.
A scatter's combiner is its update-computation region (``set`` returns the
update).  Index vectors are always the last axis of the indices.
"""
from __future__ import annotations

import numpy as np

from xform._src.primitives.indexing import (
    gather_p, scatter_add_p, scatter_max_p, scatter_min_p, scatter_mul_p, scatter_p)
from xform._src.lowering.mlir import i64_array, register, tensor_type
from xform._src.primitives.indexing import default_fill_value


def _dims(xs):
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


def _attr(kind, fields):
    body = ", ".join(f"{k} = {_dims(v)}" for k, v in fields[:-1] if len(v))
    k, v = fields[-1]
    return f"#stablehlo.{kind}<{body}{', ' if body else ''}{k} = {int(v)}>"


def _mode(eqn):
    return eqn.params["mode"].name      # CLIP / FILL_OR_DROP / PROMISE_IN_BOUNDS


def _upper_bounds(ctx, idx_aval, bounds):
    """``bounds`` (one per index component) broadcast to the indices' shape, in their dtype."""
    dt = idx_aval.dtype
    hi = np.iinfo(dt).max
    b = ctx.constant(np.minimum(np.asarray(bounds, np.int64), hi).astype(dt))
    return ctx.op1("stablehlo.broadcast_in_dim", [b], idx_aval,
                   f"broadcast_dimensions = {i64_array([idx_aval.ndim - 1])}")


def _in_bounds(ctx, idx, idx_aval, bounds):
    """(batch...) bool: every component of the index vector lies in [0, bound]."""
    dt = idx_aval.dtype
    ok = ctx.compare(idx, _upper_bounds(ctx, idx_aval, bounds), "LE", dt)
    if dt.kind == "i":
        ok = ctx.op1("stablehlo.and", [ok, ctx.compare(idx, ctx.full_like(0, idx_aval), "GE",
                                                       dt)], ctx.types[ok])
    b = tensor_type((), np.bool_)
    region = ctx.region([b, b], lambda c, x, y: [c.op1("stablehlo.and", [x, y], b)])
    return ctx.op1("stablehlo.reduce", [ok, ctx.constant(np.array(True))],
                   tensor_type(idx_aval.shape[:-1], np.bool_),
                   f"dimensions = {i64_array([idx_aval.ndim - 1])}", [region])


@register(gather_p)
def _gather(ctx, eqn, x, idx):
    p = eqn.params
    dn, sizes = p["dimension_numbers"], p["slice_sizes"]
    xa, ia = ctx.in_avals
    out = ctx.out_avals[0]
    if out.size == 0:
        # An empty result needs no gather; and XLA refuses one whose slice size 1 on a
        # batching or collapsed dimension exceeds an empty operand dimension (a solve
        # under vmap of zero examples), so none is emitted (as JAX does).
        return [ctx.full_like(0, out)]
    attr = _attr("gather", [("offset_dims", dn.offset_dims),
                            ("collapsed_slice_dims", dn.collapsed_slice_dims),
                            ("operand_batching_dims", dn.operand_batching_dims),
                            ("start_indices_batching_dims", dn.start_indices_batching_dims),
                            ("start_index_map", dn.start_index_map),
                            ("index_vector_dim", ia.ndim - 1)])
    y = ctx.op1("stablehlo.gather", [x, idx], out,
                f"dimension_numbers = {attr}, slice_sizes = {i64_array(sizes)}, "
                f"indices_are_sorted = {'true' if p['indices_are_sorted'] else 'false'}")
    if _mode(eqn) != "FILL_OR_DROP":
        return [y]
    ok = _in_bounds(ctx, idx, ia, [xa.shape[d] - sizes[d] for d in dn.start_index_map])
    batch_pos = [q for q in range(out.ndim) if q not in dn.offset_dims]
    ok = ctx.op1("stablehlo.broadcast_in_dim", [ok], tensor_type(out.shape, np.bool_),
                 f"broadcast_dimensions = {i64_array(batch_pos)}")
    fv = default_fill_value(out.dtype) if p["fill_value"] is None else p["fill_value"]
    return [ctx.select(ok, y, ctx.full_like(fv, out))]


def _set(c, a, b, st):
    return b


_COMBINERS = {   # name -> (op for numbers, op for bool)
    scatter_p: None,
    scatter_add_p: ("stablehlo.add", None),
    scatter_mul_p: ("stablehlo.multiply", None),
    scatter_min_p: ("stablehlo.minimum", "stablehlo.and"),
    scatter_max_p: ("stablehlo.maximum", "stablehlo.or"),
}


def _scatter_rule(name):
    ops = _COMBINERS[name]

    def rule(ctx, eqn, x, idx, upd):
        p = eqn.params
        dn = p["dimension_numbers"]
        xa, ia, ua = ctx.in_avals
        if _mode(eqn) == "CLIP":     # clamp each start so that its window fits
            window = [1] * xa.ndim
            wins = iter(dn.update_window_dims)
            for a in range(xa.ndim):
                if a not in dn.inserted_window_dims and a not in dn.operand_batching_dims:
                    window[a] = ua.shape[next(wins)]
            hi = _upper_bounds(ctx, ia, [xa.shape[d] - window[d]
                                         for d in dn.scatter_dims_to_operand_dims])
            idx = ctx.op1("stablehlo.clamp", [ctx.full_like(0, ia), idx, hi], ia)
        attr = _attr("scatter", [
            ("update_window_dims", dn.update_window_dims),
            ("inserted_window_dims", dn.inserted_window_dims),
            ("input_batching_dims", dn.operand_batching_dims),
            ("scatter_indices_batching_dims", dn.scatter_indices_batching_dims),
            ("scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims),
            ("index_vector_dim", ia.ndim - 1)])
        st = tensor_type((), xa.dtype)
        if ops is None:
            body = lambda c, a, b: [b]  # noqa: E731
        else:
            op = ops[1] if xa.dtype == np.bool_ else ops[0]
            body = lambda c, a, b: [c.op1(op, [a, b], st)]  # noqa: E731
        region = ctx.region([st, st], body)
        return [ctx.op1("stablehlo.scatter", [x, idx, upd], ctx.out_avals[0],
                        f"scatter_dimension_numbers = {attr}, indices_are_sorted = "
                        f"{'true' if p['indices_are_sorted'] else 'false'}, unique_indices = "
                        f"{'true' if p['unique_indices'] else 'false'}", [region])]
    return rule


for _name in _COMBINERS:
    register(_name)(_scatter_rule(_name))

"""Windowed reductions (XLA's ReduceWindow, SelectAndScatter) and generic reductions with a
user computation.

Window parameters (every primitive here): ``window_dimensions``, ``window_strides``,
``padding`` ((low, high) per axis; negative crops), ``base_dilation`` (holes between
operand elements, filled with the init value) and ``window_dilation``.

* ``reduce_window_sum`` (linear; its transpose pads/dilates the cotangent and sums again),
  ``reduce_window_max`` / ``reduce_window_min`` (JVP: ``select_and_gather_add`` picks the
  tangent at each window's chosen element).
* ``select_and_gather_add(t, x)``: linear in ``t``; transpose is ``select_and_scatter_add``
  (the max-pool gradient: each window's cotangent lands on the element the window chose),
  whose transpose is again ``select_and_gather_add``.  Ties: the first element in window
  order wins (XLA's select_and_scatter semantics with ``>=`` / ``<=``).
* ``reduce_window`` / ``reduce``: any (variadic) computation given as a program on scalars;
  JVP by running the JVP of the computation over (primal, tangent) pairs.  Forward mode
  only (their tangent is not a linear primitive), as in JAX.

Every batching rule adds a size-1, stride-1 window axis for the batch (no loops).
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from xform._src.interpreters import ad, batching, core, dtypes
from xform._src.interpreters.ad import Zero, is_undefined_primal
from xform._src.interpreters.core import Primitive, ShapedArray
from xform._src.interpreters.ir import ClosedJaxpr
from xform._src.primitives._rules import bdim_at_front, moveaxis
from xform._src.primitives.structural import as_operand, pad_p, slice_p
from xform._src.interpreters import ir, staging
from xform._src.interpreters import jaxpr_transforms as jt
from xform._src.interpreters.tree_util import tree_flatten, tree_unflatten
from xform._src.primitives import elementwise
from xform._src.primitives import reductions as R
from xform._src.primitives.convolution import _vjp_lhs_padding as f
from xform._src.primitives.convolution import padtype_to_pads
from xform._src.primitives.reductions import _identity as ident
from xform._src.primitives.reductions import _wide
from xform._src.primitives import structural as S

__all__ = ["reduce_window", "reduce_window_shape_tuple", "reduce", "select_and_scatter_add",
           "select_and_gather_add", "reduce_window_sum_p", "reduce_window_max_p",
           "reduce_window_min_p", "reduce_window_p", "reduce_p", "select_and_scatter_add_p",
           "select_and_gather_add_p"]


def _ew():
    return elementwise


def _dilate(d, r):
    return 0 if d == 0 else 1 + r * (d - 1)


def _dilate_dim(d, r):
    return d if r == 1 else builtins.max(0, 1 + r * (d - 1))


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
    """The output shape of a window reduction, as JAX computes it: plain arithmetic on
    the sizes (a -1 placeholder batch size gives 0), each size at least 0."""
    if base_dilation is not None:
        operand_shape = tuple(_dilate_dim(d, r) for d, r in zip(operand_shape, base_dilation))
    if window_dilation is not None:
        window_dimensions = tuple(_dilate_dim(w, r)
                                  for w, r in zip(window_dimensions, window_dilation))
    return tuple(builtins.max(0, (d + lo + hi - w) // s + 1) for d, (lo, hi), w, s in
                 zip(operand_shape, padding, window_dimensions, window_strides))


def _check_window(name, shape, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation):
    nd = len(shape)
    for what, v in (("window_dimensions", window_dimensions),
                    ("window_strides", window_strides), ("padding", padding),
                    ("base_dilation", base_dilation), ("window_dilation", window_dilation)):
        if len(v) != nd:
            raise TypeError(f"{name}: {what} {tuple(v)} must have one entry per operand "
                            f"dimension (operand shape {tuple(shape)})")
    for what, v in (("window_dimensions", window_dimensions),
                    ("window_strides", window_strides), ("base_dilation", base_dilation),
                    ("window_dilation", window_dilation)):
        if any(int(x) < 1 for x in v):
            raise TypeError(f"{name} {what} must have every element be strictly positive, "
                            f"got {tuple(v)}.")
    for d, (lo, hi), b in zip(shape, padding, base_dilation):
        if _dilate(d, b) + lo + hi < 0:
            raise ValueError(f"reduce_window: padding {tuple(padding)} crops more than the "
                             f"operand shape {tuple(shape)}")
    return reduce_window_shape_tuple(shape, window_dimensions, window_strides, padding,
                                     base_dilation, window_dilation)


def _windows(x, fill, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
    """View of shape out_shape + window_dimensions: every window's elements."""
    x = np.asarray(x)
    nd = x.ndim
    if any(b != 1 for b in base_dilation):
        z = np.full([_dilate(d, b) for d, b in zip(x.shape, base_dilation)], fill, x.dtype)
        z[tuple(slice(None, None, b) for b in base_dilation)] = x
        x = z
    if nd:     # (np.pad refuses the empty padding of a 0-d operand)
        x = np.pad(x, [(max(lo, 0), max(hi, 0)) for lo, hi in padding], constant_values=fill)
    x = x[tuple(slice(max(-lo, 0), x.shape[i] - max(-hi, 0))
                for i, (lo, hi) in enumerate(padding))]
    out = reduce_window_shape_tuple(x.shape, window_dimensions, window_strides,
                                    [(0, 0)] * nd, None, window_dilation)
    if 0 in out:
        return np.zeros(out + tuple(window_dimensions), x.dtype)
    eff = [_dilate(w, d) for w, d in zip(window_dimensions, window_dilation)]
    v = np.lib.stride_tricks.sliding_window_view(x, eff)
    v = v[tuple(slice(None, None, s) for s in window_strides)
          + tuple(slice(None, None, d) for d in window_dilation)]
    return v[tuple(slice(0, o) for o in out)]


def _add_batch_window(params, d):
    """Window params with a trivial entry inserted at axis ``d`` (for a batch axis)."""
    ins = lambda t, v: tuple(t[:d]) + (v,) + tuple(t[d:])
    p = dict(params)
    p["window_dimensions"] = ins(params["window_dimensions"], 1)
    p["window_strides"] = ins(params["window_strides"], 1)
    p["padding"] = ins(params["padding"], (0, 0))
    if "base_dilation" in params:
        p["base_dilation"] = ins(params["base_dilation"], 1)
        p["window_dilation"] = ins(params["window_dilation"], 1)
    return p


def _identity(kind, dt):
    return ident(kind, dt)


# ----------------------------------------------------------------- sum / max / min

def _monoid_prim(name, kind):
    p = Primitive(name)

    def abstract(x, **params):
        if kind == "sum" and x.dtype == np.bool_:
            raise TypeError(f"{name} does not accept dtype bool; cast the operand first")
        return ShapedArray(_check_window(name, x.shape, **params), x.dtype, x.weak_type)

    def impl(x, **params):
        x = np.asarray(x)
        dt = x.dtype
        fill = _identity(kind, dt)
        v = _windows(x, fill, **params)
        axes = tuple(range(x.ndim, 2 * x.ndim))
        if kind == "sum":
            return np.sum(v, axis=axes, dtype=_wide(dt)).astype(dt)
        f = np.max if kind == "max" else np.min
        return np.asarray(f(v, axis=axes, initial=fill), dt)

    def batch(axis_data, vals, dims, **params):
        d = dims[0]
        return p.bind(vals[0], **_add_batch_window(params, d)), d

    p.def_abstract_eval(abstract)
    p.def_impl(impl)
    batching.batch_rules[p] = batch
    return p


reduce_window_sum_p = _monoid_prim("reduce_window_sum", "sum")
reduce_window_sum_p.xla_eager_dtypes = elementwise.XLA_INEXACT   # NumPy's bits differ from XLA's
reduce_window_max_p = _monoid_prim("reduce_window_max", "max")
reduce_window_min_p = _monoid_prim("reduce_window_min", "min")


def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
    return f(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil)


def _rw_sum_transpose(ct, x, *, window_dimensions, window_strides, padding, base_dilation,
                      window_dilation):
    shape = x.aval.shape
    if type(ct) is Zero:
        return [Zero(x.aval)]
    pads = _vjp_lhs_padding(shape, window_dimensions, window_strides, core.get_aval(ct).shape,
                            padding, base_dilation, window_dilation)
    cfg = tuple((lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides))
    dt = core.get_aval(ct).dtype
    padded = pad_p.bind(ct, np.zeros((), dt), padding_config=cfg)
    ones = (1,) * len(shape)
    out = reduce_window_sum_p.bind(padded, window_dimensions=tuple(window_dimensions),
                                   window_strides=tuple(base_dilation),
                                   padding=((0, 0),) * len(shape), base_dilation=ones,
                                   window_dilation=tuple(window_dilation))
    return [out]


def _rw_sum_jvp(primals, tangents, **params):
    out = reduce_window_sum_p.bind(primals[0], **params)
    t = tangents[0]
    if type(t) is Zero:
        return out, Zero.from_primal(out)
    return out, reduce_window_sum_p.bind(t, **params)


ad.jvp_rules[reduce_window_sum_p] = _rw_sum_jvp
ad.transpose_rules[reduce_window_sum_p] = _rw_sum_transpose


def _chooser_jvp(select_prim, prim):
    def rule(primals, tangents, **params):
        x, = primals
        t, = tangents
        out = prim.bind(x, **params)
        if type(t) is Zero:
            return out, Zero.from_primal(out)
        return out, select_and_gather_add_p.bind(t, x, select_prim=select_prim, **params)
    return rule


ad.jvp_rules[reduce_window_max_p] = _chooser_jvp("ge", reduce_window_max_p)
ad.jvp_rules[reduce_window_min_p] = _chooser_jvp("le", reduce_window_min_p)

# ----------------------------------------------------------------- select_and_gather_add


def _select_identity(select_prim, dt):
    return _identity("max" if select_prim == "ge" else "min", dt)


def _chosen_offsets(x, select_prim, window_dimensions, window_strides, padding, base_dilation,
                    window_dilation):
    """(windows of x, flat index of the chosen element within each window)."""
    fill = _select_identity(select_prim, np.asarray(x).dtype)
    v = _windows(x, fill, window_dimensions, window_strides, padding, base_dilation,
                 window_dilation)
    nd = np.ndim(x)
    flat = v.reshape(v.shape[:nd] + (int(np.prod(v.shape[nd:], dtype=np.int64)),))
    if flat.shape[-1] == 0 or 0 in flat.shape:
        return v, np.zeros(flat.shape[:-1], np.int64)
    pick = np.argmax if select_prim == "ge" else np.argmin
    return v, pick(flat, axis=-1)


select_and_gather_add_p = Primitive("select_and_gather_add")


def _sga_abstract(t, x, *, select_prim, **params):
    if t.shape != x.shape or t.dtype != x.dtype:
        raise TypeError(f"select_and_gather_add: tangent {t.str_short()} and operand "
                        f"{x.str_short()} must have equal shapes and dtypes")
    return ShapedArray(_check_window("select_and_gather_add", x.shape, **params), t.dtype,
                       t.weak_type)


def _sga_impl(t, x, *, select_prim, **params):
    t, x = np.asarray(t), np.asarray(x)
    _, idx = _chosen_offsets(x, select_prim, **params)
    tv = _windows(t, np.zeros((), t.dtype), **params)
    flat = tv.reshape(tv.shape[:t.ndim] + (int(np.prod(tv.shape[t.ndim:], dtype=np.int64)),))
    if flat.shape[-1] == 0 or 0 in flat.shape:
        return np.zeros(flat.shape[:-1], t.dtype)
    return np.take_along_axis(flat, idx[..., None], axis=-1)[..., 0].astype(t.dtype)


def _sga_jvp(primals, tangents, **params):
    t, x = primals
    out = select_and_gather_add_p.bind(t, x, **params)
    g = tangents[0]
    if type(g) is Zero:
        return out, Zero.from_primal(out)
    return out, select_and_gather_add_p.bind(g, x, **params)


def _sga_transpose(ct, t, x, *, select_prim, window_dimensions, window_strides, padding,
                   base_dilation, window_dilation):
    if is_undefined_primal(x):
        raise ValueError("select_and_gather_add is linear only in its first operand")
    if any(d != 1 for d in window_dilation):
        raise NotImplementedError(
            "VJP not implemented for select_and_gather (MaxPool) with window dilation, got "
            f"window_dilation={tuple(window_dilation)} (as in JAX); use window_dilation=1")
    if type(ct) is Zero:
        return [Zero(t.aval), None]
    has_base = any(d != 1 for d in base_dilation)
    if has_base:
        xdt = core.get_aval(x).dtype
        x = pad_p.bind(x, _select_identity(select_prim, xdt),
                       padding_config=tuple((0, 0, d - 1) for d in base_dilation))
    res = select_and_scatter_add_p.bind(ct, x, select_prim=select_prim,
                                        window_dimensions=tuple(window_dimensions),
                                        window_strides=tuple(window_strides),
                                        padding=tuple(padding))
    if has_base:
        shape = core.get_aval(res).shape
        res = slice_p.bind(res, start_indices=(0,) * len(shape), limit_indices=shape,
                           strides=tuple(base_dilation))
    return [res, None]


def _pair_batch(prim):
    def rule(axis_data, vals, dims, **params):
        a, b = (bdim_at_front(v, d, axis_data.size) for v, d in zip(vals, dims))
        return prim.bind(a, b, **_add_batch_window(params, 0)), 0
    return rule


select_and_gather_add_p.def_abstract_eval(_sga_abstract)
select_and_gather_add_p.def_impl(_sga_impl)
ad.jvp_rules[select_and_gather_add_p] = _sga_jvp
ad.transpose_rules[select_and_gather_add_p] = _sga_transpose
batching.batch_rules[select_and_gather_add_p] = _pair_batch(select_and_gather_add_p)

# ----------------------------------------------------------------- select_and_scatter_add

select_and_scatter_add_p = Primitive("select_and_scatter_add")
select_and_scatter_add_p.xla_eager_dtypes = elementwise.XLA_INEXACT   # NumPy's bits differ from XLA's


def _ssa_abstract(source, x, *, select_prim, window_dimensions, window_strides, padding):
    nd = x.ndim
    out = _check_window("select_and_scatter_add", x.shape, window_dimensions, window_strides,
                        padding, (1,) * nd, (1,) * nd)
    if source.shape != out or source.dtype != x.dtype:
        raise TypeError(f"select_and_scatter_add: source {source.str_short()} must have the "
                        f"window output shape {out} and the operand dtype {x.dtype}")
    return ShapedArray(x.shape, source.dtype, source.weak_type)


def _ssa_impl(source, x, *, select_prim, window_dimensions, window_strides, padding):
    source, x = np.asarray(source), np.asarray(x)
    nd = x.ndim
    ones = (1,) * nd
    _, idx = _chosen_offsets(x, select_prim, window_dimensions, window_strides, padding,
                             ones, ones)
    acc_dt = np.float64 if source.dtype.kind == "f" or dtypes.is_bfloat16(source.dtype) \
        else source.dtype
    out = np.zeros(x.shape, acc_dt)
    if source.size:
        offs = np.unravel_index(idx, tuple(window_dimensions))
        grid = np.indices(source.shape)
        # window coordinates -> operand index (padding low ``lo``: operand 0 sits at ``lo``)
        pos = [grid[i] * window_strides[i] + offs[i] - padding[i][0] for i in range(nd)]
        ok = np.ones(source.shape, bool)
        for i in range(nd):
            ok &= (pos[i] >= 0) & (pos[i] < x.shape[i])
        np.add.at(out, tuple(p[ok] for p in pos), source[ok].astype(acc_dt))
    return out.astype(source.dtype)


def _ssa_jvp(primals, tangents, **params):
    s, x = primals
    out = select_and_scatter_add_p.bind(s, x, **params)
    g = tangents[0]
    if type(g) is Zero:
        return out, Zero.from_primal(out)
    return out, select_and_scatter_add_p.bind(g, x, **params)


def _ssa_transpose(ct, s, x, *, select_prim, window_dimensions, window_strides, padding):
    if is_undefined_primal(x):
        raise ValueError("select_and_scatter_add is linear only in its first operand")
    if type(ct) is Zero:
        return [Zero(s.aval), None]
    ones = (1,) * len(window_dimensions)
    return [select_and_gather_add_p.bind(ct, x, select_prim=select_prim,
                                         window_dimensions=window_dimensions,
                                         window_strides=window_strides, padding=padding,
                                         base_dilation=ones, window_dilation=ones), None]


select_and_scatter_add_p.def_abstract_eval(_ssa_abstract)
select_and_scatter_add_p.def_impl(_ssa_impl)
ad.jvp_rules[select_and_scatter_add_p] = _ssa_jvp
ad.transpose_rules[select_and_scatter_add_p] = _ssa_transpose
batching.batch_rules[select_and_scatter_add_p] = _pair_batch(select_and_scatter_add_p)


def select_and_gather_add(tangents, operand, select_prim, window_dimensions, window_strides,
                          padding, base_dilation, window_dilation):
    """Each window's tangent at the element ``select_prim`` ('ge' = max, 'le' = min) picks."""
    return select_and_gather_add_p.bind(as_operand(tangents), as_operand(operand),
                        select_prim=_select_name(select_prim),
                        window_dimensions=tuple(window_dimensions),
                        window_strides=tuple(window_strides),
                        padding=tuple(tuple(p) for p in padding),
                        base_dilation=tuple(base_dilation),
                        window_dilation=tuple(window_dilation))


def select_and_scatter_add(source, operand, select_prim, window_dimensions, window_strides,
                           padding):
    """Scatter-add each window's ``source`` value onto the element ``select_prim`` picks."""
    return select_and_scatter_add_p.bind(as_operand(source), as_operand(operand),
                        select_prim=_select_name(select_prim),
                        window_dimensions=tuple(window_dimensions),
                        window_strides=tuple(window_strides),
                        padding=tuple(tuple(p) for p in padding))


def _select_name(p):
    name = getattr(p, "name", p)
    if name in ("ge", "le"):
        return name
    raise ValueError(f"select_prim must be lax.ge_p or lax.le_p ('ge'/'le'), got {p!r}")


# ----------------------------------------------------------------- generic computations


def _apply_computation(closed: ClosedJaxpr, lefts, rights):
    """The scalar computation applied elementwise to equal-shape NumPy arrays (batched)."""
    shape = np.shape(lefts[0])
    n = int(np.prod(shape, dtype=np.int64))
    args = [core.Array(np.ascontiguousarray(a).reshape(n)) for a in list(lefts) + list(rights)]
    if n == 0:
        return [np.zeros(shape, a.dtype) for a in closed.out_avals]
    outs, dims = batching.batch_flat(lambda *xs: ir.eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                                     batching.AxisData(n), args, [0] * len(args), [0] * len(
                                         closed.out_avals))
    return [np.asarray(o).reshape(shape).astype(a.dtype) for o, a in zip(outs,
                                                                          closed.out_avals)]


def _check_computation(name, closed, operand_avals, init_avals):
    n = len(operand_avals)
    if len(init_avals) != n:
        raise TypeError(f"{name}: got {n} operands but {len(init_avals)} init values")
    want = [ShapedArray((), a.dtype) for a in operand_avals]
    for a, i in zip(operand_avals, init_avals):
        if i.shape != () or i.dtype != a.dtype:
            raise TypeError(f"{name}: init values must be scalars of the operand dtypes, got "
                            f"{i.str_short()} for operand {a.str_short()}")
    ins = [ShapedArray(a.shape, a.dtype) for a in closed.in_avals]
    outs = [ShapedArray(a.shape, a.dtype) for a in closed.out_avals]
    if ins != want + want or outs != want:
        raise TypeError(f"{name}: the computation must map two tuples of scalars "
                        f"{[a.str_short() for a in want]} to one such tuple, got "
                        f"{[a.str_short() for a in closed.in_avals]} -> "
                        f"{[a.str_short() for a in closed.out_avals]}")


reduce_window_p = Primitive("reduce_window", multiple_results=True)


def _rw_abstract(*args, jaxpr, **params):
    n = len(args) // 2
    xs, inits = args[:n], args[n:]
    _check_computation("reduce_window", jaxpr, xs, inits)
    shapes = {a.shape for a in xs}
    if len(shapes) != 1:
        raise TypeError("reduce_window: operands must have equal shapes, got "
                        + ", ".join(a.str_short() for a in xs))
    out = _check_window("reduce_window", xs[0].shape, **params)
    return [ShapedArray(out, a.dtype) for a in xs]


def _rw_impl(*args, jaxpr, **params):
    n = len(args) // 2
    xs, inits = [np.asarray(a) for a in args[:n]], [np.asarray(a) for a in args[n:]]
    views = [_windows(x, i, **params) for x, i in zip(xs, inits)]
    nd = xs[0].ndim
    out_shape = views[0].shape[:nd]
    acc = [np.broadcast_to(i, out_shape).copy() for i in inits]
    for off in np.ndindex(*params["window_dimensions"]):
        cur = [v[(Ellipsis,) + off] for v in views]
        acc = _apply_computation(jaxpr, acc, cur)
    return acc


def _generic_jvp(prim):
    def rule(primals, tangents, *, jaxpr, **params):
        n = len(primals) // 2
        xs, inits = primals[:n], primals[n:]
        txs, tinits = tangents[:n], tangents[n:]
        if not all(type(t) is Zero for t in tinits):
            raise TypeError(f"{prim.name} jvp does not support non-zero init value tangents")
        if all(type(t) is Zero for t in txs):
            outs = prim.bind(*primals, jaxpr=jaxpr, **params)
            return outs, [Zero.from_primal(o) for o in outs]
        # computation over (primal, tangent) pairs: (pl, tl), (pr, tr) -> (p, t)
        jvp_c, _ = jt.jvp_jaxpr(jaxpr, (True,) * (2 * n), True)

        def pair_comp(*vals):
            pl, tl, pr, tr = vals[:n], vals[n:2 * n], vals[2 * n:3 * n], vals[3 * n:]
            return ir.eval_jaxpr(jvp_c.jaxpr, jvp_c.consts, *pl, *pr, *tl, *tr)
        avals = [ShapedArray((), core.get_aval(x).dtype) for x in xs]
        pair = staging.trace_to_closed_jaxpr(pair_comp, avals * 4, name=prim.name + "_jvp")
        txs = [ad.instantiate(t) for t in txs]
        zeros = [np.zeros((), core.get_aval(x).dtype) for x in xs]
        # primal outputs from a primal-only reduction, so they stay known under linearize
        primal_outs = prim.bind(*xs, *inits, jaxpr=jaxpr, **params)
        outs = prim.bind(*xs, *txs, *inits, *zeros, jaxpr=pair, **params)
        return primal_outs, outs[n:]
    return rule


def _rw_batch(axis_data, vals, dims, *, jaxpr, **params):
    n = len(vals) // 2
    if any(d is not None for d in dims[n:]):
        raise NotImplementedError("reduce_window batching is not implemented for batched "
                                  "initial values (as in JAX)")
    xs = [bdim_at_front(v, d, axis_data.size) for v, d in zip(vals[:n], dims[:n])]
    outs = reduce_window_p.bind(*xs, *vals[n:], jaxpr=jaxpr, **_add_batch_window(params, 0))
    return outs, [0] * n


reduce_window_p.def_abstract_eval(_rw_abstract)
reduce_window_p.def_impl(_rw_impl)
ad.jvp_rules[reduce_window_p] = _generic_jvp(reduce_window_p)
batching.batch_rules[reduce_window_p] = _rw_batch

reduce_p = Primitive("reduce", multiple_results=True)


def _reduce_abstract(*args, jaxpr, dimensions):
    n = len(args) // 2
    xs, inits = args[:n], args[n:]
    _check_computation("reduce", jaxpr, xs, inits)
    if len({a.shape for a in xs}) != 1:
        raise TypeError("reduce: operands must have equal shapes, got "
                        + ", ".join(a.str_short() for a in xs))
    nd = xs[0].ndim
    if len(set(dimensions)) != len(dimensions) or any(not 0 <= d < nd for d in dimensions):
        raise ValueError(f"reduce: dimensions {dimensions} must be unique axes of the operand "
                         f"{xs[0].str_short()}")
    shape = tuple(s for i, s in enumerate(xs[0].shape) if i not in dimensions)
    return [ShapedArray(shape, a.dtype) for a in xs]


def _reduce_impl(*args, jaxpr, dimensions):
    n = len(args) // 2
    xs, inits = [np.asarray(a) for a in args[:n]], [np.asarray(a) for a in args[n:]]
    nd = xs[0].ndim
    kept = [i for i in range(nd) if i not in dimensions]
    xs = [np.transpose(x, kept + list(dimensions)) for x in xs]
    out_shape = xs[0].shape[:len(kept)]
    acc = [np.broadcast_to(i, out_shape).copy() for i in inits]
    red = xs[0].shape[len(kept):]
    for off in np.ndindex(*red):
        acc = _apply_computation(jaxpr, acc, [x[(Ellipsis,) + off] for x in xs])
    return acc


def _reduce_batch(axis_data, vals, dims, *, jaxpr, dimensions):
    n = len(vals) // 2
    if any(d is not None for d in dims[n:]):
        raise NotImplementedError("reduce batching is not implemented for batched initial "
                                  "values (as in JAX)")
    xs = [bdim_at_front(v, d, axis_data.size) for v, d in zip(vals[:n], dims[:n])]
    outs = reduce_p.bind(*xs, *vals[n:], jaxpr=jaxpr,
                         dimensions=tuple(d + 1 for d in dimensions))
    return outs, [0] * n


def _reduce_jvp(primals, tangents, *, jaxpr, dimensions):
    """The tangent of a general reduction, built from the computation's own JVP.

    The reduced axes are flattened into one leading axis of length m, which a balanced
    tree of applications of the computation (vectorised over the rows and the kept
    elements) folds to one row; the initial value is combined last.  That equals the
    fold ``reduce`` computes for an associative, commutative computation (the only
    kind whose reduction is well defined) and, unlike a ``reduce`` over (primal,
    tangent) pairs, its tangent part is linear and made of the computation's
    primitives, so it transposes (reverse mode) and differentiates again (higher
    orders).  The initial values' tangents count too (JAX requires them to be zero)."""
    n = len(primals) // 2
    xs = primals[:n]
    outs = reduce_p.bind(*primals, jaxpr=jaxpr, dimensions=dimensions)
    if all(type(t) is Zero for t in tangents):
        return outs, [Zero.from_primal(o) for o in outs]
    shape = core.get_aval(xs[0]).shape
    kept = [i for i in range(len(shape)) if i not in dimensions]
    kshape = tuple(shape[i] for i in kept)
    m = int(np.prod([shape[d] for d in dimensions], dtype=np.int64))
    k = int(np.prod(kshape, dtype=np.int64))
    if m == 0 or k == 0:
        # nothing to fold: the result is the initial value broadcast
        tans = [Zero.from_primal(o) if type(t) is Zero else
                S.broadcast_in_dim(t, kshape, ()) for o, t in zip(outs, tangents[n:])]
        return outs, tans

    def apply(args, size, dims):
        res, _ = batching.batch_flat(
            lambda *a: ir.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *a),
            batching.AxisData(size), args, dims, [0] * n)
        return res

    def tree(*vals):
        cur = [S.reshape(S.transpose(x, tuple(dimensions) + tuple(kept)), (m * k,))
               for x in vals[:n]]            # row-major: row r is cur[r*k:(r+1)*k]
        rows = m
        while rows > 1:
            h = rows // 2
            left = [S.slice(c, (0,), (h * k,)) for c in cur]
            right = [S.slice(c, (h * k,), (2 * h * k,)) for c in cur]
            red = apply(left + right, h * k, [0] * (2 * n))
            if rows % 2:
                red = [S.concatenate([r, S.slice(c, (2 * h * k,), (rows * k,))], 0)
                       for r, c in zip(red, cur)]
            cur, rows = red, rows - h
        out = apply(list(vals[n:]) + cur, k, [None] * n + [0] * n)
        return [S.reshape(o, kshape) for o in out]

    _, tans = ad.jvp_flat(tree, list(primals), list(tangents))
    return outs, tans


reduce_p.def_abstract_eval(_reduce_abstract)
reduce_p.def_impl(_reduce_impl)
ad.jvp_rules[reduce_p] = _reduce_jvp
batching.batch_rules[reduce_p] = _reduce_batch

# ================================================================= xform.lax functions

_MONOIDS = {"add": ("sum", reduce_window_sum_p), "max": ("max", reduce_window_max_p),
            "min": ("min", reduce_window_min_p)}


class _Unflatten:
    """``xs -> tree_unflatten(tree, xs)``, keeping ``tree`` for the output check."""

    def __init__(self, tree):
        self.tree = tree

    def __call__(self, xs):
        return tree_unflatten(self.tree, list(xs))


def _trace_computation(name, computation, flat_ops, flat_inits, in_tree_unflatten):
    avals = [ShapedArray((), core.get_aval(x).dtype) for x in flat_ops]
    n = len(avals)
    out_tree = []

    def fun(*xs):
        out = computation(in_tree_unflatten(xs[:n]), in_tree_unflatten(xs[n:]))
        leaves, tree = tree_flatten(out)
        out_tree.append(tree)
        return [as_operand(leaf) for leaf in leaves]
    closed = staging.trace_to_closed_jaxpr(fun, avals + avals, name=name)
    if name == "reduce_window" and out_tree and out_tree[0] != in_tree_unflatten.tree:
        raise ValueError(f"reduce_window output must have the same tree structure as the "
                         f"operands {in_tree_unflatten.tree} vs. {out_tree[0]}")
    outs = closed.out_avals
    if len(outs) != n or any(o.dtype != a.dtype or o.shape != () for o, a in zip(outs, avals)):
        raise TypeError(f"{name}: computation must return {n} scalar(s) of dtypes "
                        f"{[a.dtype.name for a in avals]}, got "
                        f"{[o.str_short() for o in outs]}")
    return closed


def _monoid_of(closed):
    """'add' / 'max' / 'min' if the computation is exactly that binary op of its inputs."""
    j = closed.jaxpr
    if len(j.invars) != 2 or len(j.eqns) != 1 or closed.consts:
        return None
    e = j.eqns[0]
    if e.primitive.name in _MONOIDS and list(e.invars) in (list(j.invars),
                                                           list(j.invars)[::-1]) \
            and list(j.outvars) == list(e.outvars):
        return e.primitive.name
    return None


def _check_init_tree(operand_tree, init_values, n_ops):
    """JAX's checks of the init values against the operands (ValueError)."""
    flat, init_tree = tree_flatten(init_values)
    if init_tree != operand_tree:
        raise ValueError(f"Operands must have the same tree structure as init_values: "
                         f"{operand_tree} vs. {init_tree}")
    if len(flat) != n_ops:
        raise ValueError(f"Must have same total number of operands as init_values:  {n_ops} "
                         f"vs. {len(flat)}")
    return [core.get_aval(as_operand(v)).shape for v in flat]


def _init_scalars(init_value, ops):
    flat, _ = tree_flatten(init_value)
    if len(flat) != len(ops):
        raise TypeError(f"reduce: got {len(ops)} operands but {len(flat)} init values")
    out = []
    for v, x in zip(flat, ops):
        dt = core.get_aval(x).dtype
        v = as_operand(v)
        if core.get_aval(v).dtype != dt:
            v = _ew().convert_element_type_p.bind(v, new_dtype=dt, weak_type=False)
        out.append(v)
    return out


def _concrete_scalar(v):
    if isinstance(v, core.Array):
        return np.asarray(v)
    if isinstance(v, core.Tracer):
        return None
    return np.asarray(v)


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """Reduce every window of ``operand`` with ``computation`` (pytrees of operands allowed).

    ``lax.add``/``lax.max``/``lax.min`` with their identity as init use the fast
    ``reduce_window_sum/max/min`` primitives (differentiable in reverse mode).
    """
    flat_ops, tree = tree_flatten(operand)
    if not flat_ops:
        raise TypeError("reduce_window: operand must contain at least one array")
    flat_ops = [as_operand(x) for x in flat_ops]
    shape = core.get_aval(flat_ops[0]).shape
    nd = len(shape)
    try:
        window_dimensions = tuple(operator.index(w) for w in window_dimensions)
        window_strides = (1,) * nd if window_strides is None else tuple(
            operator.index(s) for s in window_strides)
        base_dilation = (1,) * nd if base_dilation is None else tuple(
            operator.index(b) for b in base_dilation)
        window_dilation = (1,) * nd if window_dilation is None else tuple(
            operator.index(b) for b in window_dilation)
    except TypeError:
        raise TypeError("reduce_window: window_dimensions, window_strides and dilations must "
                        "be sequences of integers") from None
    if len(window_dimensions) != nd:
        raise TypeError(f"reduce_window: window_dimensions {window_dimensions} must have one "
                        f"entry per operand dimension (operand shape {shape})")
    if isinstance(padding, str):
        eff = [_dilate(w, d) for w, d in zip(window_dimensions, window_dilation)]
        padding = tuple(padtype_to_pads(shape, eff, window_strides, padding))
    else:
        padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    init_shapes = _check_init_tree(tree, init_value, len(flat_ops))
    if any(sh != () for sh in init_shapes):
        raise TypeError(f"reduce_window expected init_values to be scalars but init_values "
                        f"have shapes {[tuple(sh) for sh in init_shapes]}.")
    inits = _init_scalars(init_value, flat_ops)
    params = dict(window_dimensions=window_dimensions, window_strides=window_strides,
                  padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)
    closed = _trace_computation("reduce_window", computation, flat_ops, inits,
                                _Unflatten(tree))
    if len(flat_ops) == 1:
        kind = _monoid_of(closed)
        if kind is not None:
            kname, prim = _MONOIDS[kind]
            iv = _concrete_scalar(inits[0])
            dt = core.get_aval(flat_ops[0]).dtype
            if iv is not None and bool(iv == _identity(kname, dt)):
                return tree_unflatten(tree, [prim.bind(flat_ops[0], **params)])
    outs = reduce_window_p.bind(*flat_ops, *inits, jaxpr=closed, **params)
    return tree_unflatten(tree, list(outs))


def reduce(operands, init_values, computation, dimensions):
    """Reduce ``operands`` (pytree) over ``dimensions`` with ``computation`` from
    ``init_values``; monoids (add/mul/max/min/and/or/xor with identity) use the fast
    reduction primitives."""
    flat_ops, tree = tree_flatten(operands)
    if not flat_ops:
        raise TypeError("reduce: operands must contain at least one array")
    flat_ops = [as_operand(x) for x in flat_ops]
    nd = core.get_aval(flat_ops[0]).ndim
    try:
        dims = tuple(operator.index(d) for d in dimensions)
    except TypeError:
        raise TypeError(f"reduce: dimensions must be integers, got {dimensions!r}") from None
    dims = tuple(d + nd if d < 0 else d for d in dims)
    init_shapes = _check_init_tree(tree, init_values, len(flat_ops))
    if any(sh != () for sh in init_shapes):
        raise ValueError(f"reduce found non-scalar initial value: "
                         f"{[tuple(sh) for sh in init_shapes]}")
    inits = _init_scalars(init_values, flat_ops)
    closed = _trace_computation("reduce", computation, flat_ops, inits, _Unflatten(tree))
    if len(flat_ops) == 1:
        j = closed.jaxpr
        table = {"add": ("sum", R.reduce_sum_p), "mul": ("prod", R.reduce_prod_p),
                 "max": ("max", R.reduce_max_p), "min": ("min", R.reduce_min_p),
                 "and": ("and", R.reduce_and_p), "or": ("or", R.reduce_or_p),
                 "xor": ("xor", R.reduce_xor_p)}
        if (len(j.eqns) == 1 and not closed.consts and j.eqns[0].primitive.name in table
                and sorted(map(id, j.eqns[0].invars)) == sorted(map(id, j.invars))
                and list(j.outvars) == list(j.eqns[0].outvars)):
            kind, prim = table[j.eqns[0].primitive.name]
            iv = _concrete_scalar(inits[0])
            dt = core.get_aval(flat_ops[0]).dtype
            if iv is not None and np.asarray(iv == _identity(kind, dt)).all():
                try:
                    prim.abstract_eval(core.get_aval(flat_ops[0]), axes=dims)
                except TypeError:
                    pass
                else:
                    return tree_unflatten(tree, [prim.bind(flat_ops[0], axes=dims)])
    outs = reduce_p.bind(*flat_ops, *inits, jaxpr=closed, dimensions=dims)
    return tree_unflatten(tree, list(outs))

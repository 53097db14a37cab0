"""Reductions (sum, max, min, prod, and, or, xor, argmax, argmin) and cumulative
reductions (cumsum, cumprod, cummax, cummin, cumlogsumexp).

Reference impls pass ``dtype=`` to NumPy (NumPy widens int32 sums to int64) and
reduce empty axes to the identity like XLA (max of nothing is -inf / INT_MIN).
Non-linear cumulative JVPs are first-order linear recurrences
``h[i] = a[i] * h[i-1] + b[i]`` (``a`` primal-only, ``b`` linear in the
tangent), solved with a log-depth Hillis-Steele scan of pads and slices, so the
tangent program stays linear and transposes with existing rules.
"""
from __future__ import annotations

import operator

import numpy as np

from xform._src.interpreters import ad, batching, core, dtypes, ir, passes
from xform._src.interpreters.ad import Zero
from xform._src.interpreters.core import Primitive, ShapedArray
from xform._src.primitives._rules import defjvp2, defjvp_zero, deflinear
from xform._src.primitives.structural import (as_operand, broadcast_in_dim_p, canonicalize_axis,
                                   pad_p, reshape_p, slice_p, transpose_p)
from xform._src.primitives import elementwise

__all__ = ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
           "reduce_xor", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin",
           "cumlogsumexp"]


def _ew():
    return elementwise


def _identity(kind, dt):
    """XLA's init value of a reduction of kind ``kind`` for dtype ``dt``."""
    dt = np.dtype(dt)
    if kind in ("sum", "or", "xor"):
        return np.zeros((), dt)
    if kind == "prod":
        return np.ones((), dt)
    if kind == "and":
        return np.asarray(True) if dt == np.bool_ else np.asarray(-1).astype(dt)
    lo = kind == "max"
    if dt == np.bool_:
        return np.asarray(not lo)
    if dtypes.is_integer(dt):
        info = np.iinfo(dt)
        return np.asarray(info.min if lo else info.max, dt)
    return np.asarray(-np.inf if lo else np.inf, dt)


def _wide(dt):
    """NumPy accumulation dtype for a reference reduction: f16/bf16/f32 accumulate in f64
    and c64 in c128, then round once -- NumPy's f32 accumulation along a strided axis is
    sequential (relative error ~n*eps, 1e-6 over 1e4 terms), far from XLA's and JAX's
    results (thinking_in_jax page: eager vs jit norm(X) differed by more than 1e-6)."""
    dt = np.dtype(dt)
    if dtypes.is_float(dt) and dt.itemsize <= 4:
        return np.dtype(np.float64)
    if dt == np.complex64:
        return np.dtype(np.complex128)
    return dt


# ----------------------------------------------------------------- monoid reductions


_BOOL = np.dtype(np.bool_)


def _reduce_abstract(name, kinds):
    memo = {}   # (shape, dtype, weak type, axes) -> checked result (errors not remembered)

    def rule(x, *, axes):
        key = (x.shape, x.dtype, x.weak_type, axes)
        try:
            r = memo.get(key)
        except TypeError:       # unhashable axes or dimensions
            key = r = None
        if r is None:
            r = _rule(x, axes)
            if key is not None:
                if len(memo) > 1000:
                    memo.clear()
                memo[key] = r
        return r

    def _rule(x, axes):
        nd = len(x.shape)
        if len(set(axes)) != len(axes):
            raise ValueError(f"duplicate value in 'axes' of reduction: {axes}")
        if any(not 0 <= a < nd for a in axes):
            raise ValueError(f"{name}: axes {axes} must be dimensions of operand "
                             f"{x.str_short()}")
        if kinds == "number" and x.dtype == _BOOL:
            raise TypeError(f"{name} does not accept dtype bool. Accepted dtypes are numbers; "
                            "cast the operand first")
        if kinds == "intbool" and not (x.dtype == np.bool_ or dtypes.is_integer(x.dtype)):
            raise TypeError(f"{name} requires a boolean or integer operand, got {x.str_short()}")
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, x.dtype, x.weak_type and kinds != "intbool")
    return rule


def _np_reduce(kind):
    def impl(x, *, axes):
        x = np.asarray(x)
        dt = x.dtype
        if kind == "sum":
            return np.sum(x, axis=axes, dtype=_wide(dt)).astype(dt)
        if kind == "prod":
            return np.prod(x, axis=axes, dtype=_wide(dt)).astype(dt)
        if kind in ("max", "min"):
            f = np.max if kind == "max" else np.min
            return np.asarray(f(x, axis=axes, initial=_identity(kind, dt)), dt)
        if dt == np.bool_:
            f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[kind]
        else:
            f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind]
        return np.asarray(f.reduce(x, axis=axes, initial=_identity(kind, dt)), dt)
    return impl


def _reducer_batch(prim):
    """Reductions over ``axes``: renumber around the batch axis (JAX's defreducer)."""
    def rule(axis_data, vals, dims, *, axes, **params):
        d = dims[0]
        new_axes = tuple(a + (a >= d) for a in axes)
        out_d = d - sum(1 for a in new_axes if a < d)
        return prim.bind(vals[0], axes=new_axes, **params), out_d
    batching.batch_rules[prim] = rule


def _reduce_prim(name, kind, dtypes_ok):
    p = Primitive(name)
    p.def_abstract_eval(_reduce_abstract(name, dtypes_ok))
    p.def_impl(core.quiet(_np_reduce(kind)))   # impls never warn (XLA is silent)
    _reducer_batch(p)
    return p


def _forward_over_no_axes(p):
    """The simplifier drops a reduction over no axes of its own dtype (the identity)."""
    passes.forwarding_rules[p] = passes.identity_when_same_type(lambda q: tuple(q["axes"]) == ())


# --- reduce_sum: linear; transpose broadcasts back ----------------------------------
reduce_sum_p = _reduce_prim("reduce_sum", "sum", "number")
reduce_sum_p.xla_eager_dtypes = elementwise.XLA_INEXACT   # NumPy's bits differ from XLA's
_forward_over_no_axes(reduce_sum_p)
ir.pp_rules[reduce_sum_p] = ir.pp_with_defaults(out_sharding=None)


def _reduce_sum_transpose(ct, x, *, axes):
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [broadcast_in_dim_p.bind(ct, shape=shape, broadcast_dimensions=kept)]


deflinear(reduce_sum_p, _reduce_sum_transpose)

# --- reduce_max / reduce_min: tangent averaged over tied locations (JAX's rule) -----
reduce_max_p = _reduce_prim("reduce_max", "max", "any")
reduce_min_p = _reduce_prim("reduce_min", "min", "any")
_forward_over_no_axes(reduce_max_p)
_forward_over_no_axes(reduce_min_p)


def _chooser_jvp(t, ans, x, *, axes):
    ew = _ew()
    shape = core.get_aval(x).shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    ans_b = broadcast_in_dim_p.bind(ans, shape=shape, broadcast_dimensions=kept)
    tdt = core.get_aval(t).dtype
    loc = ew.convert_element_type_p.bind(ew.eq_p.bind(x, ans_b), new_dtype=tdt, weak_type=False)
    counts = reduce_sum_p.bind(loc, axes=axes)
    return ew.div_p.bind(reduce_sum_p.bind(ew.mul_p.bind(t, loc), axes=axes), counts)


defjvp2(reduce_max_p, _chooser_jvp)
defjvp2(reduce_min_p, _chooser_jvp)

# --- reduce_prod: JVP of a pairwise product tree (exact with zeros) -------------------
reduce_prod_p = _reduce_prim("reduce_prod", "prod", "number")
reduce_prod_p.xla_eager_dtypes = elementwise.XLA_INEXACT   # NumPy's bits differ from XLA's
_forward_over_no_axes(reduce_prod_p)


def _reduce_prod_jvp(primals, tangents, *, axes):
    x, = primals
    t, = tangents
    out = reduce_prod_p.bind(x, axes=axes)
    if type(t) is Zero:
        return out, Zero.from_primal(out)
    ew = _ew()
    a = core.get_aval(x)
    kept = tuple(i for i in range(a.ndim) if i not in axes)
    out_shape = tuple(a.shape[i] for i in kept)
    n = int(np.prod([a.shape[i] for i in axes], dtype=np.int64))
    if n == 0:
        return out, Zero.from_primal(out)
    perm = tuple(axes) + kept
    flat = lambda v: reshape_p.bind(transpose_p.bind(v, permutation=perm),
                                    new_sizes=(n,) + out_shape, dimensions=None)
    x, t = flat(x), flat(t)
    one, zero = np.ones((), a.dtype), np.zeros((), a.dtype)
    rest = tuple((0, 0, 0) for _ in out_shape)
    while n > 1:
        if n % 2:
            x = pad_p.bind(x, one, padding_config=((0, 1, 0),) + rest)
            t = pad_p.bind(t, zero, padding_config=((0, 1, 0),) + rest)
            n += 1
        h = n // 2
        half = lambda v, lo: slice_p.bind(v, start_indices=(lo,) + (0,) * len(out_shape),
                                          limit_indices=(lo + h,) + out_shape, strides=None)
        x0, x1, t0, t1 = half(x, 0), half(x, h), half(t, 0), half(t, h)
        t = ew.add_any_p.bind(ew.mul_p.bind(t0, x1), ew.mul_p.bind(x0, t1))
        x = ew.mul_p.bind(x0, x1)
        n = h
    return out, reshape_p.bind(t, new_sizes=out_shape, dimensions=None)


ad.jvp_rules[reduce_prod_p] = _reduce_prod_jvp

# --- logical / bitwise reductions: integer-valued, zero tangent -----------------------
reduce_and_p = _reduce_prim("reduce_and", "and", "intbool")
reduce_or_p = _reduce_prim("reduce_or", "or", "intbool")
reduce_xor_p = _reduce_prim("reduce_xor", "xor", "intbool")
for _p in (reduce_and_p, reduce_or_p, reduce_xor_p):
    defjvp_zero(_p)

# ----------------------------------------------------------------- argmax / argmin


def _argminmax_abstract(name):
    def rule(x, *, axes, index_dtype):
        if len(axes) != 1:
            raise ValueError(f"{name}: invalid axes {axes} for operand {x.str_short()}")
        axis, = axes
        if not 0 <= axis < x.ndim:
            raise ValueError(f"Invalid axis {axis} for operand shape {tuple(x.shape)}")
        if x.shape[axis] < 1:
            raise ValueError("argmin and argmax require non-empty reduced dimension. "
                             f"operand.shape={tuple(x.shape)} axis={axis}")
        if not dtypes.is_integer(index_dtype):
            raise TypeError(f"{name}: index_dtype must be an integer type, got {index_dtype}")
        if dtypes.is_complex(x.dtype):
            raise TypeError(f"{name} does not support complex operands, got {x.str_short()}")
        shape = tuple(d for i, d in enumerate(x.shape) if i != axes[0])
        return ShapedArray(shape, index_dtype, False)
    return rule


def _argminmax_impl(f):
    def impl(x, *, axes, index_dtype):
        x = np.asarray(x)
        if x.dtype != np.bool_ and not dtypes.is_integer(x.dtype):
            x = x.astype(np.float64)      # bf16 etc.; NumPy picks the first NaN, as XLA
        return np.asarray(f(x, axis=axes[0]), index_dtype)
    return impl


argmax_p = Primitive("argmax")
argmin_p = Primitive("argmin")
for _p, _f in ((argmax_p, np.argmax), (argmin_p, np.argmin)):
    _p.def_abstract_eval(_argminmax_abstract(_p.name))
    _p.def_impl(_argminmax_impl(_f))
    defjvp_zero(_p)
    _reducer_batch(_p)

# ----------------------------------------------------------------- cumulative reductions


def _cum_abstract(name):
    def rule(x, *, axis, reverse):
        if not 0 <= axis < x.ndim:
            raise ValueError(f"{name}: axis {axis} is out of bounds for operand {x.str_short()}")
        if name in ("cumsum", "cumprod") and x.dtype == np.bool_:
            raise TypeError(f"{name} does not accept dtype bool; cast the operand first")
        if name == "cumlogsumexp" and not dtypes.is_inexact(x.dtype):
            raise TypeError(f"cumlogsumexp requires a floating operand, got {x.str_short()}")
        return ShapedArray(x.shape, x.dtype, x.weak_type)
    return rule


def _cum_impl(ufunc):
    def impl(x, *, axis, reverse):
        x = np.asarray(x)
        dt = x.dtype
        y = np.flip(x, axis) if reverse else x
        if ufunc is np.logaddexp:
            out = ufunc.accumulate(y.astype(_wide(dt)), axis=axis)
        else:
            out = ufunc.accumulate(y, axis=axis, dtype=_wide(dt) if ufunc in (np.add, np.multiply)
                                   else None)
        out = np.asarray(out).astype(dt)
        return np.flip(out, axis).copy() if reverse else out
    return impl


def _cum_batch(prim):
    def rule(axis_data, vals, dims, *, axis, reverse):
        d = dims[0]
        return prim.bind(vals[0], axis=axis + (axis >= d), reverse=reverse), d
    batching.batch_rules[prim] = rule


def _cum_prim(name, ufunc):
    p = Primitive(name)
    p.def_abstract_eval(_cum_abstract(name))
    p.def_impl(_cum_impl(ufunc))
    _cum_batch(p)
    return p


def _shift(x, s, fill, axis, reverse):
    """``y[i] = x[i - s]`` along ``axis`` (``x[i + s]`` if reverse), ``fill`` outside."""
    a = core.get_aval(x)
    s = min(s, a.shape[axis])
    lo, hi = (-s, s) if reverse else (s, -s)
    cfg = tuple((lo, hi, 0) if i == axis else (0, 0, 0) for i in range(a.ndim))
    return pad_p.bind(x, np.asarray(fill, a.dtype), padding_config=cfg)


def linear_recurrence(a, b, axis, reverse):
    """Solve ``h[i] = a[i] * h[i-1] + b[i]`` (h[-1] = 0) along ``axis`` in log depth.

    Linear in ``b``; ``a`` is treated as a constant (it only multiplies).
    """
    ew = _ew()
    n = core.get_aval(b).shape[axis]
    s = 1
    while s < n:
        b = ew.add_any_p.bind(ew.mul_p.bind(a, _shift(b, s, 0, axis, reverse)), b)
        if 2 * s < n:
            a = ew.mul_p.bind(a, _shift(a, s, 1, axis, reverse))
        s *= 2
    return b


# --- cumsum: linear; transpose is the cumsum in the other direction -------------------
cumsum_p = _cum_prim("cumsum", np.add)
cumsum_p.xla_eager_dtypes = elementwise.XLA_INEXACT   # NumPy's bits differ from XLA's
deflinear(cumsum_p, lambda ct, x, *, axis, reverse: [
    cumsum_p.bind(ct, axis=axis, reverse=not reverse)])

# --- cumprod: d out[i] = x[i] d out[i-1] + out[i-1] t[i] ------------------------------
cumprod_p = _cum_prim("cumprod", np.multiply)
cumprod_p.xla_eager_dtypes = elementwise.XLA_INEXACT   # NumPy's bits differ from XLA's


def _cumprod_jvp(t, ans, x, *, axis, reverse):
    prev = _shift(ans, 1, 1, axis, reverse)
    return linear_recurrence(x, _ew().mul_p.bind(prev, t), axis, reverse)


defjvp2(cumprod_p, _cumprod_jvp)

# --- cummax / cummin: carry the tangent of the element that set the running extreme ---
cummax_p = _cum_prim("cummax", np.maximum)
cummin_p = _cum_prim("cummin", np.minimum)


def _cumchooser_jvp(t, ans, x, *, axis, reverse):
    """Forward-fill the tangent of each element that attains the running extreme.

    With ties the latest attaining element wins; JAX's rule (the JVP of its
    associative scan) averages some ties by scan-tree position instead.  They agree
    whenever the running extreme is attained once.
    """
    ew = _ew()
    dt = core.get_aval(t).dtype
    hit = ew.eq_p.bind(x, ans)      # x[i] is (one of) the running extreme(s)
    zeros = broadcast_in_dim_p.bind(np.zeros((), dt), shape=core.get_aval(t).shape,
                                    broadcast_dimensions=())
    keep = ew.convert_element_type_p.bind(ew.not_p.bind(hit), new_dtype=dt, weak_type=False)
    return linear_recurrence(keep, ew.select_n_p.bind(hit, zeros, t), axis, reverse)


defjvp2(cummax_p, _cumchooser_jvp)
defjvp2(cummin_p, _cumchooser_jvp)

# --- cumlogsumexp: d out[i] = exp(out[i-1]-out[i]) d out[i-1] + exp(x[i]-out[i]) t[i] -
cumlogsumexp_p = _cum_prim("cumlogsumexp", np.logaddexp)
cumlogsumexp_p.xla_eager_dtypes = elementwise.XLA_INEXACT   # NumPy's bits differ from XLA's


def _cumlogsumexp_jvp(t, ans, x, *, axis, reverse):
    ew = _ew()
    prev = _shift(ans, 1, -np.inf, axis, reverse)
    a = ew.exp_p.bind(ew.sub_p.bind(prev, ans))
    w = ew.exp_p.bind(ew.sub_p.bind(x, ans))
    return linear_recurrence(a, ew.mul_p.bind(w, t), axis, reverse)


defjvp2(cumlogsumexp_p, _cumlogsumexp_jvp)

# ================================================================= xform.lax functions


def _axes(name, operand, axes):
    nd = core.get_aval(operand).ndim
    if type(axes) is tuple:     # already canonical: distinct in-range Python ints
        for a in axes:
            if type(a) is not int or not 0 <= a < nd:
                break
        else:
            if len(set(axes)) == len(axes):
                return axes
    try:
        axes = tuple(canonicalize_axis(a, nd, f"{name}: axis") for a in axes)
    except TypeError:
        raise TypeError(f"{name}: axes must be a sequence of Python ints, got {axes!r}") from None
    if len(set(axes)) != len(axes):
        raise ValueError(f"duplicate value in 'axes' of reduction: {axes}")
    return axes


def _reducer(prim):
    def fn(operand, axes):
        operand = as_operand(operand)
        return prim.bind(operand, axes=_axes(prim.name, operand, axes))
    fn.__name__ = prim.name
    fn.__doc__ = f"``lax.{prim.name}(operand, axes)``: reduce over ``axes``."
    return fn


reduce_sum = _reducer(reduce_sum_p)
reduce_max = _reducer(reduce_max_p)
reduce_min = _reducer(reduce_min_p)
reduce_prod = _reducer(reduce_prod_p)
reduce_and = _reducer(reduce_and_p)
reduce_or = _reducer(reduce_or_p)
reduce_xor = _reducer(reduce_xor_p)


def argmax(operand, axis, index_dtype):
    """Index of the maximum along ``axis`` (a non-negative axis, as JAX's lax.argmax)."""
    operand = as_operand(operand)
    return argmax_p.bind(operand, axes=(operator.index(axis),),
                        index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(operand, axis, index_dtype):
    """Index of the minimum along ``axis`` (a non-negative axis, as JAX's lax.argmin)."""
    operand = as_operand(operand)
    return argmin_p.bind(operand, axes=(operator.index(axis),),
                        index_dtype=dtypes.canonicalize_dtype(index_dtype))


def _cumulative(prim):
    def fn(operand, axis=0, reverse=False):
        operand = as_operand(operand)
        a = core.get_aval(operand)
        if a.ndim == 0:
            raise ValueError(f"{prim.name}: operand must have at least one dimension, got "
                             f"{a.str_short()}")
        return prim.bind(operand, axis=canonicalize_axis(axis, a.ndim),
                            reverse=bool(operator.index(reverse)))
    fn.__name__ = prim.name
    fn.__doc__ = f"``lax.{prim.name}(operand, axis=0, reverse=False)``."
    return fn


cumsum = _cumulative(cumsum_p)
cumprod = _cumulative(cumprod_p)
cummax = _cumulative(cummax_p)
cummin = _cumulative(cummin_p)
cumlogsumexp = _cumulative(cumlogsumexp_p)

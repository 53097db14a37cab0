"""Reductions: sum, prod, max, min, any, all, mean, var, std, arg*, cum*, nan*.

Dtype rules follow JAX: sum/prod promote bool and narrow integers to the
default integer of their signedness (``promote_integers``); 16-bit floats are
accumulated in float32 and cast back; mean/var/std of integers are float.
Results are never weakly typed.  ``where=`` masks with the identity.
"""
from __future__ import annotations

import builtins

import numpy as np

from xform._src.interpreters import dtypes
from xform._src.interpreters import core as _core
from xform._src.interpreters.core import ArrayOps
from xform.numpy import _ufuncs as F
from xform.numpy import _util as U
from xform.numpy._util import lax
from xform.numpy._creation import _staging
from xform.numpy._shape import ravel, sort, take_static

_LOWP = [dtypes.float16]        # + bfloat16, once ml_dtypes is imported
dtypes.on_ml_dtypes(lambda: _LOWP.append(dtypes.bfloat16))


def _prep(name, a):
    a = U.ensure_arraylike(name, a)
    x = U.to_array(a)
    if x.weak_type:
        x = U.convert(x, x.dtype, False)
    return x


def _check_where(name, where):
    """JAX: ``where`` must be None or a boolean array (an integer mask is refused)."""
    if where is None:
        return None
    where = U.ensure_arraylike(name, where)
    w = U.to_array(where)
    if w.dtype != dtypes.bool_:
        raise ValueError(f"jnp.{name}: where must be None or a boolean array; "
                         f"got where.dtype={w.dtype!r}.")
    return w


def _keep(out, x_shape, axes, keepdims):
    if not keepdims:
        return out
    # JAX's expand_dims: a broadcast_in_dim (what size-1-dim broadcasting then consumes)
    kept = tuple(i for i in range(len(x_shape)) if i not in axes)
    return lax.broadcast_in_dim(out, tuple(1 if i in axes else d for i, d in
                                             enumerate(x_shape)), kept)


def _promoted_int(dt, promote_integers=True):
    if dt == dtypes.bool_:
        return dtypes.default_int_dtype()
    if promote_integers and dt.kind == "i" and dt.itemsize < dtypes.default_int_dtype().itemsize:
        return dtypes.default_int_dtype()
    if promote_integers and dt.kind == "u" and dt.itemsize < dtypes.default_uint_dtype().itemsize:
        return dtypes.default_uint_dtype()
    return dt


def _reduction(name, a, axis, dtype, keepdims, initial, where, *, lax_fn, identity, binop,
               result_dtype, upcast_f16=True, has_identity=True):
    x = _prep(name, a)
    where = _check_where(name, where)
    axes = U.canonicalize_axes(axis, x.ndim)
    out_dt = U.canonical_dtype(dtype) or result_dtype(x.dtype)
    # JAX computes float16/bfloat16 sums in float32 unless a dtype is asked for
    comp = dtypes.float32 if upcast_f16 and dtype is None and out_dt in _LOWP else out_dt
    x = U.to_array(x, comp, False)
    if where is not None:
        if identity is None and initial is None:
            raise ValueError(f"reduction operation {name} does not have an identity, so to use "
                             "a where mask one has to specify 'initial'")
        ident = identity(comp) if identity is not None else initial
        x = F.where(where, x, U.to_array(ident, comp, False))
    if not has_identity and initial is None and builtins.any(x.shape[i] == 0 for i in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    # an empty reduction is the identity: elided eagerly, staged as JAX stages it
    out = lax_fn(x, axes) if axes or _staging() else x
    if initial is not None:
        init = U.to_array(initial, comp, False)
        if init.shape != ():
            raise ValueError(f"initial value must be a scalar. Got array of shape "
                             f"{init.shape}")
        out = binop(init, out)   # JAX's op(initial, result)
    out = _keep(out, x.shape, axes, keepdims)
    return U.to_array(out, out_dt, False)


def _sum_id(dt):
    return 0


def _prod_id(dt):
    return 1


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):
    _no_out(out, "sum")
    if dtype is None and initial is None and where is None and _plain_inexact(a):
        axes = U.canonicalize_axes(axis, len(a.shape))
        if axes:       # the general path's one reduce_sum, without its argument handling
            return _keep(lax.reduce_sum(a, axes), a.shape, axes, keepdims)
    return _reduction("sum", a, axis, dtype, keepdims, initial, where,
                      lax_fn=lambda x, ax: lax.reduce_sum(x, ax), identity=_sum_id,
                      binop=F.add, result_dtype=lambda d: _promoted_int(d, promote_integers))


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
    _no_out(out, "prod")
    return _reduction("prod", a, axis, dtype, keepdims, initial, where,
                      lax_fn=lambda x, ax: lax.reduce_prod(x, ax), identity=_prod_id,
                      binop=F.multiply,
                      result_dtype=lambda d: _promoted_int(d, promote_integers))


def _no_out(out, name):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to {name} is not supported: xform "
                                  "arrays are immutable.")


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _no_out(out, "max")
    return _reduction("max", a, axis, None, keepdims, initial, where,
                      lax_fn=lambda x, ax: lax.reduce_max(x, ax), identity=None,
                      binop=F.maximum, result_dtype=lambda d: d, upcast_f16=False,
                      has_identity=False)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _no_out(out, "min")
    return _reduction("min", a, axis, None, keepdims, initial, where,
                      lax_fn=lambda x, ax: lax.reduce_min(x, ax), identity=None,
                      binop=F.minimum, result_dtype=lambda d: d, upcast_f16=False,
                      has_identity=False)


amax, amin = max, min


def _bool_reduce(name, a, axis, keepdims, where, fn, ident):
    x = _prep(name, a)
    where = _check_where(name, where)
    if x.dtype != dtypes.bool_:
        x = F.not_equal(x, U.to_array(0, x.dtype, False))
    axes = U.canonicalize_axes(axis, x.ndim)
    if where is not None:
        x = F.where(where, x, U.to_array(ident, dtypes.bool_, False))
    out = fn(x, axes) if axes or _staging() else x
    return _keep(out, x.shape, axes, keepdims)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    _no_out(out, "any")
    return _bool_reduce("any", a, axis, keepdims, where, lambda x, ax: lax.reduce_or(x, ax),
                        False)


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    _no_out(out, "all")
    return _bool_reduce("all", a, axis, keepdims, where, lambda x, ax: lax.reduce_and(x, ax),
                        True)


_counts: dict = {}


def _count(x, axes, where, keepdims, dt):
    if where is None:
        n = 1
        for i in axes:
            n *= int(x.shape[i])
        if type(n) is int and isinstance(dt, np.dtype):
            # one immutable host scalar per (count, dtype): large programs take the mean
            # of equal shapes again and again
            key = (n, dt)
            c = _counts.get(key)
            if c is None:
                c = _core.Array.internal_constant(np.asarray(n, dt))
                if len(_counts) > 1000:
                    _counts.clear()
                _counts[key] = c
            return c
        return U.to_array(n, dt, False)
    m = U.broadcast_to_shape(U.to_array(where), x.shape) if U.shape_of(where) != x.shape \
        else U.to_array(where)
    return sum(m, axis=axes, dtype=dt, keepdims=keepdims)


def _inexact_dt(dt):
    return dtypes.to_inexact_dtype(dt) if dt.kind in "biu" else dt


def _plain_inexact(a):
    """Whether ``a`` is an array whose dtype a sum or mean keeps as it is: not weakly
    typed, a canonical float or complex dtype of at least 32 bits (16-bit floats are
    summed in float32)."""
    if not isinstance(a, ArrayOps) or a.weak_type:
        return False
    dt = a.dtype
    return (isinstance(dt, np.dtype) and dt.kind in "fc" and dt not in _LOWP
            and dtypes.canonicalize_dtype(dt) == dt)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    _no_out(out, "mean")
    if dtype is None and where is None and _plain_inexact(a):
        # What the general path below computes for this case, without its repeated
        # argument handling: one reduce_sum, divided by the element count.
        nd = len(a.shape)
        axes = U.canonicalize_axes(axis, nd)
        if axes:
            s = _keep(lax.reduce_sum(a, axes), a.shape, axes, keepdims)
            return F.true_divide(s, _count(a, axes, None, keepdims, a.dtype))
    x = _prep("mean", a)
    where = _check_where("mean", where)
    axes = U.canonicalize_axes(axis, x.ndim)
    out_dt = U.canonical_dtype(dtype) or _inexact_dt(x.dtype)
    comp = dtypes.float32 if dtype is None and out_dt in _LOWP else _inexact_dt(out_dt)
    s = sum(x, axis=axes, dtype=comp, keepdims=keepdims, where=where)
    n = _count(x, axes, where, keepdims, comp)
    return U.to_array(F.true_divide(s, n), out_dt, False)


def _ddof(ddof, correction):
    if correction is None:
        return ddof
    if not isinstance(ddof, int) or ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
    _no_out(out, "var")
    correction = _ddof(ddof, correction)
    x = _prep("var", a)
    return _var_jitted(x, axis=_axis_arg(axis), dtype=dtype, correction=correction,
                       keepdims=keepdims, where=where, a_mean=mean)


def _axis_arg(axis):
    """An axis list as a tuple (a static argument of the jitted implementations)."""
    return tuple(axis) if isinstance(axis, list) else axis


def _var_jitted(a, *, axis=None, dtype=None, correction=0, keepdims=False, where=None,
                a_mean=None):
    """JAX's ``_var``: jitted (``_jitted.IMPL_TABLE``) with ``axis``/``dtype``/``keepdims``
    static and ``correction`` traced, so the count minus the correction is a runtime
    divisor, as in JAX's compiled program."""
    where = _check_where("var", where)
    return _var("var", a, axis, dtype, correction, keepdims, where, a_mean)


def _var_dtypes(x, dtype):
    """(computation dtype, result dtype) of var/std/nanvar/nanstd, as JAX promotes them."""
    if dtype is not None and x.dtype.kind == "c" and U.canonical_dtype(dtype).kind != "c":
        raise ValueError(
            "jax.numpy.var does not yet support real dtype parameters when computing the "
            "variance of an array of complex values. The semantics of numpy.var seem "
            "unclear in this case. Please comment on "
            "https://github.com/jax-ml/jax/issues/2283 if this behavior is important to "
            "you.")
    out_dt = U.canonical_dtype(dtype) or _inexact_dt(x.dtype)
    if out_dt in dtypes._custom_floats or out_dt == dtypes.float16:
        comp = dtypes.float32
    else:
        comp = _inexact_dt(out_dt)
    if x.dtype in (dtypes.complex64, dtypes.complex128):
        comp = x.dtype
    if dtype is None and out_dt.kind == "c":        # complex input: a real variance
        out_dt = np.dtype(np.array(0, out_dt).real.dtype)
    return comp, out_dt


def _squared_magnitude(c):
    return F.real(F.multiply(c, F.conjugate(c))) if c.dtype.kind == "c" else F.square(c)


def _var(name, x, axis, dtype, correction, keepdims, where, a_mean):
    """JAX's variance: the mean (given or computed) subtracted, squared magnitudes summed,
    divided by (count - correction); NaN where that divisor is not positive."""
    axes = U.canonicalize_axes(axis, x.ndim)
    comp, out_dt = _var_dtypes(x, dtype)
    xc = U.to_array(x, comp, False)
    if a_mean is None:
        m = mean(xc, axis=axes, dtype=comp, keepdims=True, where=where)
    else:
        a_mean = U.ensure_arraylike(name, a_mean)
        m = U.to_array(U.to_array(a_mean), comp, False)
    sq = _squared_magnitude(F.subtract(xc, m))
    rdt = sq.dtype
    normalizer = _count(xc, axes, where, keepdims, rdt)
    normalizer = F.subtract(normalizer, U.to_array(correction, rdt, False))
    s = sum(sq, axis=axes, dtype=rdt, keepdims=keepdims, where=where)
    res = U.to_array(lax.div(s, lax.broadcast_in_dim(normalizer, s.shape, ())
                             if U.shape_of(normalizer) != s.shape else normalizer),
                     out_dt, False)
    positive = F.greater(normalizer, U.to_array(0, rdt, False))
    return F.where(positive, res, U.to_array(np.nan, res.dtype, False))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
    _no_out(out, "std")
    correction = _ddof(ddof, correction)
    x = _prep("std", a)
    return _std_jitted(x, axis=_axis_arg(axis), dtype=dtype, correction=correction,
                       keepdims=keepdims, where=where, mean=mean)


def _std_jitted(a, *, axis=None, dtype=None, correction=0, keepdims=False, where=None,
                mean=None):
    """JAX's ``_std``: the square root of ``var`` in one jitted program (see _var_jitted)."""
    where = _check_where("std", where)
    if dtype is not None:
        dt = U.canonical_dtype(dtype)
        if dt.kind not in "fc":
            raise ValueError(f"dtype argument to jnp.std must be inexact; got {dt}")
    return F.sqrt(var(a, axis=axis, dtype=dtype, correction=correction, keepdims=keepdims,
                      where=where, mean=mean))


def _argminmax(name, a, axis, keepdims, lax_fn):
    x = _prep(name, a)
    if axis is None:
        shape0 = x.shape
        x = ravel(x)
        ax = 0
    else:
        ax = U.canonicalize_axis(axis, x.ndim)
        shape0 = x.shape
    if x.shape[ax] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    out = lax_fn(x, ax, dtypes.default_int_dtype())
    if keepdims:
        if axis is None:
            out = lax.broadcast_in_dim(out, (1,) * len(shape0), ())
        else:
            out = _keep(out, shape0, (ax,), True)
    return out


def argmax(a, axis=None, out=None, keepdims=None):
    _no_out(out, "argmax")
    return _argminmax("argmax", a, axis, keepdims, lambda x, ax, dt: lax.argmax(x, ax, dt))


def argmin(a, axis=None, out=None, keepdims=None):
    _no_out(out, "argmin")
    return _argminmax("argmin", a, axis, keepdims, lambda x, ax, dt: lax.argmin(x, ax, dt))


def _cumulative(name, a, axis, dtype, lax_fn, nan_fill=None, promote_integers=False):
    """A cumulative reduction as JAX computes it: a scalar or ``axis=None`` works on the
    flattened array; without ``dtype`` bool (and, with ``promote_integers``, every
    integer narrower than the default of its signedness) accumulates in the default
    integer; ``dtype=bool`` accumulates ``a != 0`` in integers and casts back."""
    x = _prep(name, a)
    if axis is None or x.ndim == 0:
        x = ravel(x)
    if axis is None:
        axis = 0
    ax = U.canonicalize_axis(axis, x.ndim)
    if nan_fill is not None:
        x = F.where(F.isnan(x), U.to_array(nan_fill, x.dtype, False), x)
    dt = U.canonical_dtype(dtype)
    if dt is None:
        out_dt = _promoted_int(x.dtype, promote_integers)
        acc_dt = out_dt
    elif dt == dtypes.bool_:
        out_dt = dt
        if x.dtype != dtypes.bool_:
            x = F.not_equal(x, U.to_array(0, x.dtype, False))
        acc_dt = _promoted_int(dt)
    else:
        out_dt = acc_dt = dt
    out = lax_fn(U.to_array(x, acc_dt, False), ax)
    return U.to_array(out, out_dt, False)


def cumsum(a, axis=None, dtype=None, out=None):
    _no_out(out, "cumsum")
    return _cumulative("cumsum", a, axis, dtype, lambda x, ax: lax.cumsum(x, ax))


def cumprod(a, axis=None, dtype=None, out=None):
    _no_out(out, "cumprod")
    return _cumulative("cumprod", a, axis, dtype, lambda x, ax: lax.cumprod(x, ax))


def nancumsum(a, axis=None, dtype=None, out=None):
    _no_out(out, "nancumsum")
    return _cumulative("nancumsum", a, axis, dtype, lambda x, ax: lax.cumsum(x, ax), 0)


def nancumprod(a, axis=None, dtype=None, out=None):
    _no_out(out, "nancumprod")
    return _cumulative("nancumprod", a, axis, dtype, lambda x, ax: lax.cumprod(x, ax), 1)


def _array_api_cumulative(name, what, x, axis, dtype, include_initial, lax_fn, initial,
                          promote_integers):
    x = U.ensure_arraylike(name, x)
    a = U.to_array(x)
    if a.ndim == 0:
        raise ValueError(f"The input must be non-scalar to take a cumulative {what}, "
                         "however a scalar value or scalar array was given.")
    if axis is None:
        if a.ndim > 1:
            raise ValueError(
                f"The input array has rank {a.ndim}, however axis was not set to "
                "an explicit value. The axis argument is only optional for one-dimensional "
                "arrays.")
        axis = 0
    ax = U.canonicalize_axis(axis, a.ndim)
    out = _cumulative(name, a, ax, dtype, lax_fn, promote_integers=promote_integers)
    if include_initial:
        shape = list(a.shape)
        shape[ax] = 1
        first = lax.full(tuple(shape), initial, out.dtype)
        out = lax.concatenate([first, out], ax)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """The Array API's cumulative sum: ``axis`` may be omitted only for 1-D input;
    integers narrower than the default of their signedness accumulate in it (uint8 in
    the default unsigned integer); ``include_initial`` prepends the zero."""
    return _array_api_cumulative("cumulative_sum", "sum", x, axis, dtype, include_initial,
                                 lambda v, ax: lax.cumsum(v, ax), 0, True)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """The Array API's cumulative product: ``axis`` may be omitted only for 1-D input;
    the dtype is the input's (bool accumulates in the default integer), as in JAX;
    ``include_initial`` prepends the one."""
    return _array_api_cumulative("cumulative_prod", "product", x, axis, dtype,
                                 include_initial, lambda v, ax: lax.cumprod(v, ax), 1, False)


# ----------------------------------------------------------------- NaN-aware


def _nan_to(a, v):
    x = U.to_array(a)
    if x.dtype.kind not in "fc" and x.dtype not in _LOWP:
        return x
    return F.where(F.isnan(x), U.to_array(v, x.dtype, False), x)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    where = _check_where("nansum", where)
    return sum(_nan_to(_prep("nansum", a), 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    where = _check_where("nanprod", where)
    return prod(_nan_to(_prep("nanprod", a), 1), axis, dtype, out, keepdims, initial, where)


def _nan_extreme(name, a, axis, keepdims, fill, fn, initial=None, where=None):
    """JAX's nanmax/nanmin: NaNs replaced by ``fill`` for ``fn`` (with ``initial`` and
    ``where``); all-NaN slices give NaN unless ``initial`` is given."""
    x = _prep(name, a)
    where = _check_where(name, where)
    if x.dtype.kind not in "fc" and x.dtype not in _LOWP:
        return fn(x, axis=axis, keepdims=keepdims, initial=initial, where=where)
    nan = F.isnan(x)
    out = fn(F.where(nan, U.to_array(fill, x.dtype, False), x), axis=axis, keepdims=keepdims,
             initial=initial, where=where)
    if initial is not None:
        return out
    return F.where(all(nan, axis=axis, keepdims=keepdims), U.to_array(np.nan, x.dtype), out)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _no_out(out, "nanmax")
    return _nan_extreme("nanmax", a, axis, keepdims, -np.inf, max, initial, where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _no_out(out, "nanmin")
    return _nan_extreme("nanmin", a, axis, keepdims, np.inf, min, initial, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    x = _prep("nanmean", a)
    where = _check_where("nanmean", where)
    if x.dtype.kind not in "fc" and x.dtype not in _LOWP:
        return mean(x, axis, dtype, keepdims=keepdims, where=where)
    ok = F.logical_not(F.isnan(x))
    if where is not None:
        ok = F.logical_and(ok, where)
    return mean(x, axis, dtype, keepdims=keepdims, where=ok)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None,
           mean=None):
    """JAX's ``nanvar`` (jitted as a whole, ``ddof`` traced): NaNs centred to zero and
    left out of the count."""
    _no_out(out, "nanvar")
    x = _prep("nanvar", a)
    where = _check_where("nanvar", where)
    axes = U.canonicalize_axes(axis, x.ndim)
    comp, out_dt = _var_dtypes(x, dtype)
    xc = U.to_array(x, comp, False)
    if mean is None:
        m = nanmean(xc, axis=axes, dtype=comp, keepdims=True, where=where)
    else:
        mean = U.ensure_arraylike("nanvar", mean)
        m = U.to_array(U.to_array(mean), comp, False)
    nan = F.isnan(xc)
    centered = F.where(nan, U.to_array(0, comp, False), F.subtract(xc, m))
    sq = _squared_magnitude(centered)
    normalizer = sum(F.logical_not(nan), axis=axes, keepdims=keepdims, where=where)
    normalizer = F.subtract(normalizer, ddof)
    empty = F.less_equal(normalizer, U.to_array(0, normalizer.dtype, False))
    s = sum(sq, axis=axes, keepdims=keepdims, where=where)
    s = F.where(empty, U.to_array(np.nan, s.dtype, False), s)
    divisor = F.where(empty, U.to_array(1, normalizer.dtype, False), normalizer)
    res = lax.div(s, U.to_array(divisor, s.dtype, False))
    return U.to_array(res, out_dt, False)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None,
           mean=None):
    _no_out(out, "nanstd")
    where = _check_where("nanstd", where)
    return F.sqrt(nanvar(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where,
                         mean=mean))


def nanargmax(a, axis=None, out=None, keepdims=None):
    x = _prep("nanargmax", a)
    return argmax(_nan_to(x, -np.inf), axis, keepdims=keepdims)


def nanargmin(a, axis=None, out=None, keepdims=None):
    x = _prep("nanargmin", a)
    return argmin(_nan_to(x, np.inf), axis, keepdims=keepdims)


# ----------------------------------------------------------------- others


def ptp(a, axis=None, out=None, keepdims=False):
    _no_out(out, "ptp")
    return F.subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def count_nonzero(a, axis=None, keepdims=False):
    x = _prep("count_nonzero", a)
    return sum(F.not_equal(x, U.to_array(0, x.dtype, False)), axis=axis,
               dtype=dtypes.default_int_dtype(), keepdims=keepdims)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    x = _prep("average", a)
    if weights is None:
        avg = mean(x, axis, keepdims=keepdims)
        axes = U.canonicalize_axes(axis, x.ndim)
        cnt = U.to_array(int(np.prod([x.shape[i] for i in axes], dtype=np.int64)), avg.dtype)
        wsum = U.broadcast_to_shape(cnt, avg.shape)
    else:
        w = U.to_array(weights)
        x, w = U.promote_dtypes_inexact(x, w)
        if x.shape != w.shape:
            if axis is None:
                raise ValueError(f"Axis must be specified when shapes of a {x.shape} and "
                                 f"weights {w.shape} differ.")
            # weights span the given axes, in the order given (NumPy 2 / JAX)
            axes = tuple(U.canonicalize_axis(ax, x.ndim) for ax in
                         (axis if isinstance(axis, (tuple, list)) else (axis,)))
            if w.shape != tuple(x.shape[ax] for ax in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 f"specified axis: weights {w.shape}, a {x.shape}, axis "
                                 f"{axis}.")
            order = tuple(int(i) for i in np.argsort(axes))
            if order != tuple(range(len(axes))):
                w = lax.transpose(w, order)
            w = lax.broadcast_in_dim(w, x.shape, tuple(sorted(axes)))
        wsum = sum(w, axis, keepdims=keepdims)
        avg = F.true_divide(sum(F.multiply(x, w), axis, keepdims=keepdims), wsum)
    if returned:
        return avg, U.broadcast_to_shape(U.to_array(wsum, avg.dtype), avg.shape)
    return avg


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Middle value (mean of the two middle values for even counts); NaN if any NaN."""
    x = _prep("median", a)
    shape0 = x.shape
    if axis is None:
        x, ax = ravel(x), 0
    else:
        ax = U.canonicalize_axis(axis, x.ndim)
    (x,) = U.promote_dtypes_inexact(x)
    n = x.shape[ax]
    if n == 0:
        return U.to_array(np.nan, x.dtype)
    s = sort(x, axis=ax)
    lo = take_static(s, np.asarray((n - 1) // 2), ax)
    hi = take_static(s, np.asarray(n // 2), ax)
    out = F.true_divide(F.add(lo, hi), U.to_array(2, x.dtype, True)) if n % 2 == 0 else lo
    out = F.where(any(F.isnan(x), axis=ax), U.to_array(np.nan, x.dtype), out)
    if keepdims:
        out = lax.reshape(out, (1,) * len(shape0) if axis is None else
                            tuple(1 if i == ax else d for i, d in enumerate(shape0)))
    return out


__all__ = [n for n in dir() if not n.startswith("_") and n not in (
    "annotations", "builtins", "np", "dtypes", "ArrayOps", "F", "U", "lax", "take_static")]

"""Numerical checks: ``assert_allclose`` and derivative checks against finite differences.

Why finite differences: they need nothing from the AD system, so they are an
independent oracle for every JVP and VJP rule (including the user's own
``custom_jvp``/``custom_vjp`` rules).  ``check_grads`` applies the check
recursively to the derivative functions themselves, so second-order
derivatives (JVP of a JVP, VJP of a VJP) are validated the same way.

All random directions come from a NumPy RNG seeded by ``seed`` (default 0):
a failing check fails the same way every time.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import core, dtypes as _dtypes
from xform._src.interpreters.ad import float0
from xform._ad_api import as_value
from xform.tree_util import tree_flatten

__all__ = ["assert_allclose", "check_grads", "check_jvp", "check_vjp", "default_tolerance",
           "default_gradient_tolerance", "default_eps", "tolerance"]

_F16, _F32, _F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
_C64, _C128 = np.dtype(np.complex64), np.dtype(np.complex128)
_F8: list = []      # float8_e4m3fn, float8_e5m2 -- and bfloat16's entries below -- are added
#                     when ml_dtypes is imported (``_add_narrow``; it costs ~0.5 s to import)

# Tolerances for comparing two computations of the same value (as JAX's public_test_util).
default_tolerance = {np.dtype(np.bool_): 0, _F16: 1e-3, _F32: 1e-6, _F64: 1e-15,
                     _C64: 1e-6, _C128: 1e-15}
# Tolerances for AD vs central differences (truncation + roundoff of the difference quotient).
default_gradient_tolerance = {_F16: 5e-2, _F32: 2e-3, _F64: 1e-5, _C64: 2e-3, _C128: 1e-5}
# Central-difference step: roughly cbrt(machine epsilon), balancing truncation and roundoff.
default_eps = {_F16: 3e-2, _F32: 1e-3, _F64: 1e-5, _C64: 1e-3, _C128: 1e-5}

_PRECISION_ORDER = [_F16, _F32, _C64, _F64, _C128]


def _add_narrow():
    bf16 = _dtypes.bfloat16
    f8 = [_dtypes.float8_e4m3fn, _dtypes.float8_e5m2]
    _F8.extend(f8)
    default_tolerance.update({bf16: 1e-2, **{d: 1e-1 for d in f8}})
    default_gradient_tolerance[bf16] = 2e-1
    default_eps[bf16] = 1e-1
    _PRECISION_ORDER[:0] = [*f8, bf16]


_dtypes.on_ml_dtypes(_add_narrow)


def __getattr__(name):
    if name == "_BF16":
        return _dtypes.bfloat16
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _is_inexact(dt) -> bool:
    dt = np.dtype(dt)
    return dt.kind in "fc" or _dtypes.is_bfloat16(dt) or dt in _F8


def _least_precise(dtypes_):
    """The least precise inexact dtype among ``dtypes_`` (None if none is inexact)."""
    inexact = [np.dtype(d) for d in dtypes_ if _is_inexact(d)]
    if not inexact:
        return None
    return min(inexact, key=lambda d: _PRECISION_ORDER.index(d) if d in _PRECISION_ORDER else 99)


def tolerance(dtype, tol=None, table=None):
    """``tol`` if given (a number, or a dict dtype -> number), else the table's entry."""
    table = default_tolerance if table is None else table
    dtype = np.dtype(dtype)
    if isinstance(tol, dict):
        tol = {np.dtype(k): v for k, v in tol.items()}.get(dtype)
    if tol is not None:
        return float(tol)
    if not _is_inexact(dtype):
        return 0.0
    return float(table.get(dtype, 1e-6))


# ----------------------------------------------------------------- comparing arrays


def _to_numpy(x):
    if isinstance(x, core.Tracer):
        raise TypeError(f"cannot compare a traced value {x.aval.str_short()}: call the testing "
                        "helpers outside of transformations, on concrete arrays.")
    return np.asarray(x)


def _wide(x):
    """float64/complex128 (or int64/bool) copy for error arithmetic."""
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    if x.dtype.kind in "biu":
        return x.astype(np.float64) if x.dtype.kind != "b" else x
    return x.astype(np.float64)


class Comparison:
    """Result of comparing two arrays: max abs/rel error, where, and whether within tol."""

    __slots__ = ("ok", "max_abs", "max_rel", "index", "atol", "rtol", "actual", "desired",
                 "reason")

    def __init__(self, ok, max_abs, max_rel, index, atol, rtol, actual=None, desired=None,
                 reason=""):
        self.ok, self.max_abs, self.max_rel, self.index = ok, max_abs, max_rel, index
        self.atol, self.rtol, self.actual, self.desired = atol, rtol, actual, desired
        self.reason = reason

    def describe(self) -> str:
        if self.reason:
            return self.reason
        where = ""
        if self.index is not None and self.max_abs > 0:
            where = (f" (worst at index {self.index}: actual {self.actual!r}, "
                     f"desired {self.desired!r})")
        return (f"max abs error {self.max_abs:.3g}, max rel error {self.max_rel:.3g}{where}; "
                f"tolerance atol={self.atol:.3g}, rtol={self.rtol:.3g}")


def compare(actual, desired, atol, rtol) -> Comparison:
    """Elementwise ``|a - d| <= atol + rtol * |d|``; NaNs must match NaNs, infs match exactly."""
    a, d = _to_numpy(actual), _to_numpy(desired)
    if a.shape != d.shape:
        return Comparison(False, np.inf, np.inf, None, atol, rtol,
                          reason=f"shape mismatch: actual {a.shape} vs desired {d.shape}")
    if a.size == 0:
        return Comparison(True, 0.0, 0.0, None, atol, rtol)
    aw, dw = _wide(a), _wide(d)
    if aw.dtype == np.bool_ or dw.dtype == np.bool_:
        aw, dw = aw.astype(np.float64), dw.astype(np.float64)
    both_nan = np.isnan(aw) & np.isnan(dw)
    same_inf = np.isinf(aw) & np.isinf(dw) & (aw == dw)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(aw - dw)
        err = np.where(both_nan | same_inf, 0.0, err)
        err = np.where(np.isnan(err), np.inf, err)        # NaN on one side only
        bound = atol + rtol * np.abs(dw)
        rel = np.where(err == 0, 0.0, err / np.where(np.abs(dw) > 0, np.abs(dw), np.inf))
        rel = np.where((err > 0) & (np.abs(dw) == 0), np.inf, rel)
    bad = err > bound
    excess = np.where(bad, err - bound, -np.inf)
    idx = np.unravel_index(int(np.argmax(excess if bad.any() else err)), err.shape)
    return Comparison(not bad.any(), float(err.max()), float(rel.max()),
                      tuple(int(i) for i in idx), atol, rtol, a[idx].item(), d[idx].item())


def _tree_leaves(tree):
    return tree_flatten(tree)


def assert_allclose(actual, desired, *, atol=None, rtol=None, err_msg=""):
    """Assert two arrays (or pytrees of arrays) are equal within per-dtype tolerances.

    ``atol``/``rtol`` default to ``default_tolerance`` of the less precise of the two
    dtypes (f16 1e-3, bf16 1e-2, f32 1e-6, f64 1e-15; exact for ints and bools);
    each may also be a dict ``{dtype: tol}``.  Shapes must match exactly.
    """
    a_leaves, a_tree = _tree_leaves(actual)
    d_leaves, d_tree = _tree_leaves(desired)
    prefix = f"{err_msg}: " if err_msg else ""
    if a_tree != d_tree:
        raise AssertionError(f"{prefix}pytree structures differ: actual {a_tree} vs desired "
                             f"{d_tree}")
    for i, (a, d) in enumerate(zip(a_leaves, d_leaves)):
        an, dn = _to_numpy(a), _to_numpy(d)
        dt = _least_precise([an.dtype, dn.dtype]) or an.dtype
        c = compare(an, dn, tolerance(dt, atol), tolerance(dt, rtol))
        if not c.ok:
            leaf = f"leaf {i} " if len(a_leaves) > 1 else ""
            raise AssertionError(f"{prefix}arrays not close: {leaf}{an.dtype.name}{list(an.shape)}"
                                 f" vs {dn.dtype.name}{list(dn.shape)}: {c.describe()}")


# ----------------------------------------------------------------- derivative checks


def _as_array(x):
    return as_value(x)


def _float0_like(x):
    return np.zeros(np.shape(x), float0)


def _rand_like(rng, x):
    """A random direction shaped like ``x``: normal for inexact leaves, float0 otherwise."""
    x = np.asarray(x)
    if not _is_inexact(x.dtype):
        return _float0_like(x)
    if x.dtype.kind == "c":
        v = rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)
    else:
        v = rng.standard_normal(x.shape)
    return _as_array(np.asarray(v).astype(x.dtype))


def _flat(tree):
    leaves, treedef = tree_flatten(tree)
    return leaves, treedef


def _inner(xs, ys):
    """sum_i Re(x_i . y_i) over inexact leaves (float0/None leaves contribute nothing);
    also returns the magnitude sum |x_i||y_i| (the scale of the rounding error).

    The pairing is the real part of the bilinear product: a VJP is the transpose of the
    JVP as a map between real vector spaces (C viewed as R^2), as in JAX.  So for
    ``real``, whose JVP is ``t -> Re t`` and VJP ``c -> c + 0j``, <vjp(c), t> and
    <c, jvp(t)> agree in their real parts only; holomorphic functions agree in both."""
    total, scale = 0.0, 0.0
    for x, y in zip(xs, ys):
        if x is None or y is None:
            continue
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype == float0 or y.dtype == float0 or not _is_inexact(x.dtype):
            continue
        xw, yw = _wide(x), _wide(y)
        total = total + float(np.real(np.sum(xw * yw)))
        scale += float(np.sum(np.abs(xw) * np.abs(yw)))
    return total, scale


def _numerical_jvp(f, leaves, tangents, eps):
    """(f(x + eps t) - f(x - eps t)) / 2 eps, per output leaf, in float64 arithmetic."""
    def shifted(sign):
        out = []
        for x, t in zip(leaves, tangents):
            xv = np.asarray(x)
            if np.asarray(t).dtype == float0:
                out.append(x)
            else:
                out.append(_as_array((_wide(xv) + sign * eps * _wide(np.asarray(t)))
                                     .astype(xv.dtype)))
        return out
    plus, _ = _flat(f(*shifted(+1)))
    minus, _ = _flat(f(*shifted(-1)))
    res = []
    for p, m in zip(plus, minus):
        p, m = np.asarray(p), np.asarray(m)
        res.append((_wide(p) - _wide(m)) / (2 * eps) if _is_inexact(p.dtype) else None)
    return res


def _dtype_of_leaves(leaves):
    return _least_precise([np.asarray(x).dtype for x in leaves
                           if np.asarray(x).dtype != float0]) or _F32


def _fail(where, what, comparison, extra=""):
    raise AssertionError(f"{where}: {what} mismatch: {comparison.describe()}{extra}")


def _check_leaves(where, what, actual, desired, atol, rtol, table):
    """Compare matching output leaves (skipping float0 / integer ones)."""
    if len(actual) != len(desired):
        raise AssertionError(f"{where}: {what}: {len(actual)} output leaves vs {len(desired)}")
    for i, (a, d) in enumerate(zip(actual, desired)):
        if d is None or a is None:
            continue
        a, d = np.asarray(a), np.asarray(d)
        if a.dtype == float0 or d.dtype == float0:
            continue
        dt = _least_precise([a.dtype, d.dtype]) or a.dtype
        c = compare(a, d, tolerance(dt, atol, table), tolerance(dt, rtol, table))
        if not c.ok:
            leaf = f" (output leaf {i}, {a.dtype.name}{list(a.shape)})" if len(actual) > 1 else \
                f" ({a.dtype.name}{list(a.shape)})"
            _fail(where, what + leaf, c)


def _check_scalar(where, what, got, want, scale, atol, rtol):
    """|got - want| <= atol + rtol * max(|want|, scale); scale = sum of |terms| (cancellation-safe)."""
    if np.isnan(got) and np.isnan(want):
        return  # both sides undefined (outside the function's domain): NaN matches NaN
    err = abs(complex(got) - complex(want))
    bound = atol + rtol * max(abs(complex(want)), scale)
    if not err <= bound:
        raise AssertionError(
            f"{where}: {what} mismatch: got {complex(got).real if np.isrealobj(got) else got!r} "
            f"vs expected {complex(want).real if np.isrealobj(want) else want!r}: abs error "
            f"{err:.3g}, rel error {err / max(abs(complex(want)), 1e-300):.3g}; tolerance "
            f"atol={atol:.3g}, rtol={rtol:.3g} (relative to max(|expected|, sum|terms|)="
            f"{max(abs(complex(want)), scale):.3g})")


def _prepare(args, what):
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"{what}: `args` must be a tuple or list of arguments, got "
                        f"{type(args).__name__}; wrap a single argument as (x,).")
    leaves, treedef = _flat(tuple(args))
    leaves = [_as_array(x) for x in leaves]
    if not any(_is_inexact(core.get_aval(x).dtype) for x in leaves):
        raise TypeError(f"{what}: no floating-point argument to differentiate; argument dtypes "
                        f"are {[core.get_aval(x).dtype.name for x in leaves]}.")
    return leaves, treedef


def _eps_for(leaves, eps):
    return eps if eps is not None else default_eps.get(_dtype_of_leaves(leaves), 1e-3)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=None, err_msg="", *, seed=0):
    """Check ``f_jvp(primals, tangents) -> (out, tangent_out)`` against central differences.

    ``f_jvp`` is usually ``functools.partial(xform.jvp, f)``.  The primal output must
    equal ``f(*args)``; the tangent output must equal the difference quotient along a
    random (seeded) direction.  Raises AssertionError naming the error and tolerance.
    """
    where = err_msg or "check_jvp"
    leaves, treedef = _prepare(args, where)
    _check_jvp_flat(lambda *ls: f(*treedef.unflatten(ls)),
                    lambda ps, ts: f_jvp(tuple(treedef.unflatten(ps)),
                                         tuple(treedef.unflatten(ts))),
                    leaves, atol, rtol, eps, where, np.random.RandomState(seed))


def _check_jvp_flat(f, f_jvp, leaves, atol, rtol, eps, where, rng):
    eps = _eps_for(leaves, eps)
    tangents = [_rand_like(rng, x) for x in leaves]
    out, tout = f_jvp(leaves, tangents)
    want, want_tree = _flat(f(*leaves))
    got, got_tree = _flat(out)
    if got_tree != want_tree:
        raise AssertionError(f"{where}: the JVP's primal output has structure {got_tree} but "
                             f"f returns {want_tree}")
    _check_leaves(where, "JVP primal output vs f(*args)", got, want, atol, rtol,
                  default_gradient_tolerance)
    num = _numerical_jvp(f, leaves, tangents, eps)
    touts, _ = _flat(tout)
    _check_leaves(where, f"JVP tangent output vs central differences (eps={eps:g})", touts, num,
                  atol, rtol, default_gradient_tolerance)
    return tangents, touts


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=None, err_msg="", *, f_jvp=None,
              seed=0):
    """Check ``f_vjp(*args) -> (out, vjp_fn)``.

    Two tests along random (seeded) tangent ``t`` and cotangent ``ct``:
    ``<vjp_fn(ct), t> == <ct, (f(x + eps t) - f(x - eps t)) / 2 eps>`` (VJP vs finite
    differences) and, when ``f_jvp`` (``partial(xform.jvp, f)``) is given, the
    dot-product test ``<vjp_fn(ct), t> == <ct, jvp(t)>`` at a tight tolerance (the VJP
    must be the exact transpose of the JVP).
    """
    where = err_msg or "check_vjp"
    leaves, treedef = _prepare(args, where)
    jvp_flat = None
    if f_jvp is not None:
        def jvp_flat(ps, ts):
            return f_jvp(tuple(treedef.unflatten(ps)), tuple(treedef.unflatten(ts)))

    def vjp_flat(*ls):
        out, fn = f_vjp(*treedef.unflatten(ls))
        return out, lambda ct: _flat(fn(ct))[0]
    _check_vjp_flat(lambda *ls: f(*treedef.unflatten(ls)), vjp_flat, leaves, atol, rtol, eps,
                    where, np.random.RandomState(seed), jvp_flat)


def _check_vjp_flat(f, f_vjp, leaves, atol, rtol, eps, where, rng, f_jvp=None):
    eps = _eps_for(leaves, eps)
    out, vjp_fn = f_vjp(*leaves)
    want, want_tree = _flat(f(*leaves))
    got, got_tree = _flat(out)
    if got_tree != want_tree:
        raise AssertionError(f"{where}: the VJP's primal output has structure {got_tree} but "
                             f"f returns {want_tree}")
    _check_leaves(where, "VJP primal output vs f(*args)", got, want, atol, rtol,
                  default_gradient_tolerance)
    tangents = [_rand_like(rng, x) for x in leaves]
    cts = [_rand_like(rng, o) for o in got]
    ct_in = vjp_fn(want_tree.unflatten(cts))
    if len(ct_in) != len(leaves):
        raise AssertionError(f"{where}: vjp_fn returned {len(ct_in)} cotangent leaves for "
                             f"{len(leaves)} argument leaves")
    lhs, lhs_scale = _inner(ct_in, tangents)
    num = _numerical_jvp(f, leaves, tangents, eps)
    rhs, rhs_scale = _inner(cts, num)
    dt = _dtype_of_leaves(leaves)
    _check_scalar(where, f"VJP vs central differences (eps={eps:g}): <vjp(ct), t> vs "
                  "<ct, (f(x+eps t)-f(x-eps t))/2eps>", lhs, rhs, max(lhs_scale, rhs_scale),
                  tolerance(dt, atol, default_gradient_tolerance),
                  tolerance(dt, rtol, default_gradient_tolerance))
    if f_jvp is not None:
        _, tout = f_jvp(leaves, tangents)
        jv, jv_scale = _inner(cts, _flat(tout)[0])
        tight = tolerance(dt, None, default_tolerance) * 100
        _check_scalar(where, "dot-product test <vjp(ct), t> vs <ct, jvp(t)> (the VJP is not "
                      "the transpose of the JVP)", lhs, jv, max(lhs_scale, jv_scale),
                      tolerance(dt, atol, {dt: tight}), tolerance(dt, rtol, {dt: tight}))


_MODES = ("fwd", "rev")


def check_grads(f, args, order=1, modes=("fwd", "rev"), atol=None, rtol=None, eps=None, *,
                seed=0):
    """Check ``f``'s derivatives up to ``order`` against finite differences.

    ``modes`` picks forward (``xform.jvp``) and/or reverse (``xform.vjp``) mode.  For
    ``order > 1`` the derivative functions are checked in turn: the JVP map
    ``(x, t) -> jvp(f, x, t)`` (fwd) and ``x -> vjp(f, x)[1](ct)`` at a fixed random
    cotangent (rev), recursively.  Default tolerances and steps depend on the dtype
    (``default_gradient_tolerance``, ``default_eps``).  Raises AssertionError naming the
    mode and order, the max error and the tolerance.

    >>> check_grads(xform.numpy.sin, (1.0,), order=2)
    """
    if not callable(f):
        raise TypeError(f"check_grads: expected a callable, got {f!r}")
    if isinstance(modes, str):
        modes = (modes,)
    bad = [m for m in modes if m not in _MODES]
    if bad or not modes:
        raise ValueError(f"check_grads: modes must be a non-empty subset of {_MODES}, got "
                         f"{tuple(modes)!r}")
    if not isinstance(order, int) or order < 0:
        raise ValueError(f"check_grads: order must be a non-negative int, got {order!r}")
    leaves, treedef = _prepare(args, "check_grads")
    rng = np.random.RandomState(seed)
    _check_grads(lambda *ls: f(*treedef.unflatten(ls)), leaves, order, tuple(modes), atol,
                 rtol, eps, rng, 1, "")


def _check_grads(f, leaves, order, modes, atol, rtol, eps, rng, level, path):
    from xform import jvp, vjp  # deferred: import cycle
    if order == 0:
        return
    tag = f"check_grads order {level}" + (f" (derivative of {path})" if path else "")

    def f_jvp(ps, ts):
        return jvp(f, list(ps), list(ts))

    if "fwd" in modes:
        _check_jvp_flat(f, f_jvp, leaves, atol, rtol, eps, f"{tag}, fwd mode (JVP)", rng)
        if order > 1:
            # the JVP map (x, t_inexact) -> (f(x), df(x)[t]); integer args get float0 tangents
            inexact = [i for i, x in enumerate(leaves) if _is_inexact(core.get_aval(x).dtype)]
            ts = [_rand_like(rng, leaves[i]) for i in inexact]
            n = len(leaves)

            def jvp_map(*xs):
                primals, tans = list(xs[:n]), [_float0_like(x) for x in xs[:n]]
                for k, i in enumerate(inexact):
                    tans[i] = xs[n + k]
                return jvp(f, primals, tans)
            _check_grads(jvp_map, leaves + ts, order - 1, modes, atol, rtol, eps, rng,
                         level + 1, (path + "∘" if path else "") + "fwd")
    if "rev" in modes:
        def f_vjp(*xs):
            out, fn = vjp(f, *xs)
            return out, lambda ct: _flat(fn(ct))[0]
        _check_vjp_flat(f, f_vjp, leaves, atol, rtol, eps, f"{tag}, rev mode (VJP)", rng,
                        f_jvp if "fwd" in modes else None)
        if order > 1:
            out_leaves, out_tree = _flat(f(*leaves))
            cts = out_tree.unflatten([_rand_like(rng, o) for o in out_leaves])

            def vjp_map(*xs):
                _, fn = vjp(f, *xs)
                return [c for c, x in zip(_flat(fn(cts))[0], xs)
                        if _is_inexact(core.get_aval(x).dtype)]
            _check_grads(vjp_map, leaves, order - 1, modes, atol, rtol, eps, rng, level + 1,
                         (path + "∘" if path else "") + "rev")

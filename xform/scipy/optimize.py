"""``xform.scipy.optimize``: ``minimize`` (BFGS, L-BFGS) and a strong-Wolfe
``line_search``, as ``jax.scipy.optimize`` has them.

Everything is written with ``lax.while_loop``/``fori_loop`` so it runs under ``jit``
and ``vmap``.  Gradients come from ``xform.value_and_grad``.

* ``line_search``: Nocedal & Wright's Algorithm 3.5 (bracketing by doubling the step)
  with Algorithm 3.6 (zoom: safeguarded cubic, then quadratic interpolation, then
  bisection), as one loop that does one function evaluation per trip: the state says
  whether it is still bracketing or already zooming.
* ``minimize(method="BFGS")``: Algorithm 6.1 with the dense inverse-Hessian update.
* ``minimize(method="l-bfgs-experimental-do-not-rely-on-this")`` (JAX's name; "l-bfgs"
  is accepted too): Algorithm 7.5, the two-loop recursion over the last ``maxcor``
  (s, y) pairs.  Real variables only.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from xform import lax
from xform import numpy as jnp

__all__ = ["minimize", "line_search", "OptimizeResults"]


def _jnp():
    return jnp


def _lax():
    return lax


class LineSearchResults(NamedTuple):
    """failed: True if no step satisfying the strong Wolfe conditions was found;
    nit: bracketing iterations; nfev/ngev: evaluations; k: nit + 1; a_k: the step;
    f_k/g_k: value and gradient there; status: 0 ok, 1 zoom failed, 3 maxiter."""
    failed: Any
    nit: Any
    nfev: Any
    ngev: Any
    k: Any
    a_k: Any
    f_k: Any
    g_k: Any
    status: Any


class _LS(NamedTuple):
    done: Any
    failed: Any
    zooming: Any
    i: Any
    j: Any
    a_prev: Any
    phi_prev: Any
    dphi_prev: Any
    a_lo: Any
    phi_lo: Any
    dphi_lo: Any
    a_hi: Any
    phi_hi: Any
    dphi_hi: Any
    a_rec: Any
    phi_rec: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any
    nfev: Any
    ngev: Any


def _cubic_min(a, fa, fpa, b, fb, c, fc):
    """Minimiser of the cubic through (a, fa) with slope fpa at a, (b, fb), (c, fc)."""
    jnp = _jnp()
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    rb = fb - fa - fpa * db
    rc = fc - fa - fpa * dc
    A = (dc ** 2 * rb - db ** 2 * rc) / denom
    B = (-dc ** 3 * rb + db ** 3 * rc) / denom
    return a + (-B + jnp.sqrt(B * B - 3.0 * A * fpa)) / (3.0 * A)


def _quad_min(a, fa, fpa, b, fb):
    """Minimiser of the parabola through (a, fa) with slope fpa at a and (b, fb)."""
    db = b - a
    B = (fb - fa - fpa * db) / (db ** 2)
    return a - fpa / (2.0 * B)


def line_search(f, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1=1e-4, c2=0.9,
                maxiter=20):
    """Find a step ``a`` along the descent direction ``pk`` from ``xk`` satisfying the
    strong Wolfe conditions (sufficient decrease with ``c1``, curvature with ``c2``).

    ``old_fval``/``gfk``: ``f(xk)`` and its gradient if known; ``old_old_fval``: the
    previous iterate's value (sets the first trial step as SciPy does).  Returns
    ``LineSearchResults``.
    """
    import xform  # deferred: import cycle
    jnp, lax = _jnp(), _lax()
    xk, pk = jnp.asarray(xk), jnp.asarray(pk)
    dt = jnp.result_type(xk, pk, jnp.float32)
    xk, pk = xk.astype(dt), pk.astype(dt)
    vg = xform.value_and_grad(f)

    def phi_dphi(a):
        v, g = vg(xk + a.astype(dt) * pk)
        return v, jnp.real(jnp.dot(g, pk)), g

    if old_fval is None or gfk is None:
        phi0, dphi0, g0 = phi_dphi(jnp.zeros((), dt))
        n0 = 1
    else:
        phi0, g0 = jnp.asarray(old_fval), jnp.asarray(gfk).astype(dt)
        dphi0 = jnp.real(jnp.dot(g0, pk))
        n0 = 0
    if old_old_fval is not None:
        cand = 1.01 * 2 * (phi0 - old_old_fval) / dphi0
        start = jnp.where(cand > 1, 1.0, cand).astype(dt)
    else:
        start = jnp.ones((), dt)
    rdt = jnp.real(jnp.zeros((), dt)).dtype
    width_tol = 1e-5 if np.dtype(rdt).itemsize < 8 else 1e-10
    zero = jnp.zeros((), rdt)
    phi0 = phi0.astype(rdt) if hasattr(phi0, "astype") else jnp.asarray(phi0, rdt)
    dphi0 = dphi0.astype(rdt)

    def armijo_fails(a, phi):
        return phi > phi0 + c1 * a * dphi0

    def curvature_ok(dphi):
        return jnp.abs(dphi) <= -c2 * dphi0

    def sel(c, new, old):
        return jnp.where(c, new, old)

    def trial(s):
        # bracketing: the first step, then doubling
        a_br = jnp.where(s.i == 1, start.astype(rdt), s.a_prev * 2.0)
        # zooming: safeguarded interpolation between lo and hi
        d = s.a_hi - s.a_lo
        lo_end, hi_end = jnp.minimum(s.a_hi, s.a_lo), jnp.maximum(s.a_hi, s.a_lo)
        ac = _cubic_min(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi, s.a_rec, s.phi_rec)
        use_c = (s.j > 0) & (ac > lo_end + 0.2 * jnp.abs(d)) & (ac < hi_end - 0.2 * jnp.abs(d))
        aq = _quad_min(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi)
        use_q = ~use_c & (aq > lo_end + 0.1 * jnp.abs(d)) & (aq < hi_end - 0.1 * jnp.abs(d))
        a_zm = jnp.where(use_c, ac, jnp.where(use_q, aq, (s.a_lo + s.a_hi) / 2.0))
        return jnp.where(s.zooming, a_zm, a_br)

    def body(s):
        a = trial(s)
        phi, dphi, g = phi_dphi(a)
        phi, dphi = phi.astype(rdt), dphi.astype(rdt)
        s = s._replace(nfev=s.nfev + 1, ngev=s.ngev + 1)
        # -- bracketing step
        z1 = armijo_fails(a, phi) | ((phi >= s.phi_prev) & (s.i > 1))
        ok = curvature_ok(dphi) & ~z1
        z2 = (dphi >= 0.0) & ~z1 & ~ok
        br_lo_a = jnp.where(z1, s.a_prev, a)
        br_lo_phi = jnp.where(z1, s.phi_prev, phi)
        br_lo_dphi = jnp.where(z1, s.dphi_prev, dphi)
        br_hi_a = jnp.where(z1, a, s.a_prev)
        br_hi_phi = jnp.where(z1, phi, s.phi_prev)
        br_hi_dphi = jnp.where(z1, dphi, s.dphi_prev)
        start_zoom = z1 | z2
        # -- zoom step
        to_hi = armijo_fails(a, phi) | (phi >= s.phi_lo)
        zok = curvature_ok(dphi) & ~to_hi
        hi_to_lo = (dphi * (s.a_hi - s.a_lo) >= 0.0) & ~to_hi & ~zok
        lo_to_j = ~to_hi & ~zok
        z_a_hi = sel(to_hi, a, sel(hi_to_lo, s.a_lo, s.a_hi))
        z_phi_hi = sel(to_hi, phi, sel(hi_to_lo, s.phi_lo, s.phi_hi))
        z_dphi_hi = sel(to_hi, dphi, sel(hi_to_lo, s.dphi_lo, s.dphi_hi))
        z_a_rec = sel(to_hi | hi_to_lo, s.a_hi, sel(lo_to_j, s.a_lo, s.a_rec))
        z_phi_rec = sel(to_hi | hi_to_lo, s.phi_hi, sel(lo_to_j, s.phi_lo, s.phi_rec))
        z_a_lo = sel(lo_to_j, a, s.a_lo)
        z_phi_lo = sel(lo_to_j, phi, s.phi_lo)
        z_dphi_lo = sel(lo_to_j, dphi, s.dphi_lo)
        z_fail = (jnp.abs(s.a_hi - s.a_lo) <= width_tol) | (s.j + 1 >= 30)

        zm = s.zooming
        accept = jnp.where(zm, zok, ok)
        new_lo_a = jnp.where(zm, z_a_lo, br_lo_a)
        new_lo_phi = jnp.where(zm, z_phi_lo, br_lo_phi)
        new_lo_dphi = jnp.where(zm, z_dphi_lo, br_lo_dphi)
        new_hi_a = jnp.where(zm, z_a_hi, br_hi_a)
        new_hi_phi = jnp.where(zm, z_phi_hi, br_hi_phi)
        new_hi_dphi = jnp.where(zm, z_dphi_hi, br_hi_dphi)
        new_rec_a = jnp.where(zm, z_a_rec, (br_lo_a + br_hi_a) / 2.0)
        new_rec_phi = jnp.where(zm, z_phi_rec, (br_lo_phi + br_hi_phi) / 2.0)
        failed = zm & z_fail & ~accept
        # a failed zoom returns the best point found (lo: sufficient decrease holds)
        star_a = jnp.where(accept, a, jnp.where(failed, new_lo_a, s.a_star))
        star_phi = jnp.where(accept, phi, jnp.where(failed, new_lo_phi, s.phi_star))
        star_dphi = jnp.where(accept, dphi, jnp.where(failed, new_lo_dphi, s.dphi_star))
        star_g = jnp.where(accept, g, s.g_star)
        return _LS(done=accept, failed=failed, zooming=zm | start_zoom,
                   i=jnp.where(zm, s.i, s.i + 1), j=jnp.where(zm, s.j + 1, 0),
                   a_prev=jnp.where(zm, s.a_prev, a), phi_prev=jnp.where(zm, s.phi_prev, phi),
                   dphi_prev=jnp.where(zm, s.dphi_prev, dphi),
                   a_lo=new_lo_a, phi_lo=new_lo_phi, dphi_lo=new_lo_dphi,
                   a_hi=new_hi_a, phi_hi=new_hi_phi, dphi_hi=new_hi_dphi,
                   a_rec=new_rec_a, phi_rec=new_rec_phi, a_star=star_a, phi_star=star_phi,
                   dphi_star=star_dphi, g_star=star_g, nfev=s.nfev, ngev=s.ngev)

    init = _LS(done=jnp.asarray(False), failed=jnp.asarray(False), zooming=jnp.asarray(False),
               i=jnp.asarray(1), j=jnp.asarray(0), a_prev=zero, phi_prev=phi0,
               dphi_prev=dphi0, a_lo=zero, phi_lo=phi0, dphi_lo=dphi0, a_hi=zero,
               phi_hi=phi0, dphi_hi=dphi0, a_rec=zero, phi_rec=phi0, a_star=zero,
               phi_star=phi0, dphi_star=dphi0, g_star=g0, nfev=jnp.asarray(n0),
               ngev=jnp.asarray(n0))
    s = lax.while_loop(lambda s: ~s.done & ~s.failed & (s.zooming | (s.i <= maxiter)),
                       body, init)
    status = jnp.where(s.failed, 1, jnp.where(~s.done & (s.i > maxiter), 3, 0))
    a_k = s.a_star
    if np.dtype(rdt).itemsize < 8:
        a_k = jnp.where(jnp.abs(a_k) < 1e-8, jnp.sign(a_k) * 1e-8, a_k)
    return LineSearchResults(failed=s.failed | ~s.done, nit=s.i - 1, nfev=s.nfev,
                             ngev=s.ngev, k=s.i, a_k=a_k, f_k=s.phi_star, g_k=s.g_star,
                             status=status)


class OptimizeResults(NamedTuple):
    """x: the solution; success; status (BFGS: 0 converged, 1 maxiter, 2 + line-search
    status when it failed; L-BFGS: 0 converged, 1 maxiter, 2 maxfun, 3 maxgrad,
    4 ftol reached, 5 line search failed); fun/jac at x; hess_inv (BFGS only);
    nfev/njev/nit."""
    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _norm(g, ord):
    jnp = _jnp()
    return jnp.linalg.norm(g, ord=ord)


def _bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
    import xform  # deferred: import cycle
    jnp, lax = _jnp(), _lax()
    n = x0.shape[0]
    maxiter = n * 200 if maxiter is None else maxiter
    f0, g0 = xform.value_and_grad(fun)(x0)
    eye = jnp.eye(n, dtype=x0.dtype)

    def cond(s):
        conv, failed, k = s[0], s[1], s[2]
        return ~conv & ~failed & (k < maxiter)

    def body(s):
        conv, failed, k, nfev, ngev, x, f, g, H, f_old, ls_status = s
        p = -(H @ g)
        ls = line_search(fun, x, p, old_fval=f, old_old_fval=f_old, gfk=g,
                         maxiter=line_search_maxiter)
        step = ls.a_k.astype(x.dtype) * p
        x1 = x + step
        y = ls.g_k - g
        rho = 1.0 / jnp.dot(y, step)
        V = eye - rho * jnp.outer(step, y)
        H1 = V @ H @ V.T + rho * jnp.outer(step, step)
        H1 = jnp.where(jnp.isfinite(rho), H1, H)
        return (_norm(ls.g_k, norm) < gtol, ls.failed, k + 1, nfev + ls.nfev,
                ngev + ls.ngev, x1, ls.f_k.astype(f.dtype), ls.g_k.astype(g.dtype), H1, f,
                ls.status)

    init = (_norm(g0, norm) < gtol, jnp.asarray(False), jnp.asarray(0), jnp.asarray(1),
            jnp.asarray(1), x0, f0, g0, eye, f0 + jnp.linalg.norm(g0) / 2, jnp.asarray(0))
    conv, failed, k, nfev, ngev, x, f, g, H, _, ls_status = lax.while_loop(cond, body, init)
    status = jnp.where(conv, 0, jnp.where(k == maxiter, 1,
                                          jnp.where(failed, 2 + ls_status, -1)))
    return OptimizeResults(x=x, success=conv & ~failed, status=status, fun=f, jac=g,
                           hess_inv=H, nfev=nfev, njev=ngev, nit=k)


def _lbfgs(fun, x0, maxiter=None, norm=np.inf, maxcor=10, ftol=2.220446049250313e-09,
           gtol=1e-05, maxfun=None, maxgrad=None, maxls=20):
    import xform  # deferred: import cycle
    jnp, lax = _jnp(), _lax()
    n = x0.shape[0]
    dt = x0.dtype
    if maxiter is None and maxfun is None and maxgrad is None:
        maxiter = n * 200
    maxiter = np.inf if maxiter is None else maxiter
    maxfun = np.inf if maxfun is None else maxfun
    maxgrad = np.inf if maxgrad is None else maxgrad
    f0, g0 = xform.value_and_grad(fun)(x0)

    def direction(g, S, Y, R, gamma):
        # Two-loop recursion, newest pair last; unused slots hold zeros (no effect).
        def back(t, c):
            q, al = c
            i = maxcor - 1 - t
            a = R[i] * jnp.dot(S[i], q)
            return q - a * Y[i], al.at[i].set(a)
        q, al = lax.fori_loop(0, maxcor, back, (-g, jnp.zeros((maxcor,), dt)))
        q = gamma * q

        def fwd(i, q):
            b = R[i] * jnp.dot(Y[i], q)
            return q + (al[i] - b) * S[i]
        return lax.fori_loop(0, maxcor, fwd, q)

    def push(hist, new):
        return jnp.concatenate([hist[1:], new[None]], axis=0)

    def cond(s):
        return ~s[0] & ~s[1]

    def body(s):
        conv, failed, k, nfev, ngev, x, f, g, S, Y, R, gamma, status, ls_status = s
        p = direction(g, S, Y, R, gamma)
        ls = line_search(fun, x, p, old_fval=f, gfk=g, maxiter=maxls)
        step = ls.a_k.astype(dt) * p
        x1 = x + step
        f1, g1 = ls.f_k.astype(f.dtype), ls.g_k.astype(dt)
        y = g1 - g
        sy = jnp.dot(y, step)
        st = jnp.asarray(0)
        st = jnp.where(f - f1 < ftol, 4, st)
        st = jnp.where(ngev >= maxgrad, 3, st)
        st = jnp.where(nfev >= maxfun, 2, st)
        st = jnp.where(k >= maxiter, 1, st)
        st = jnp.where(ls.failed, 5, st)
        c = _norm(g1, norm) < gtol
        return (c, (st > 0) & ~c, k + 1, nfev + ls.nfev, ngev + ls.ngev, x1, f1, g1,
                push(S, step), push(Y, y), push(R, (1.0 / sy)[None].astype(dt)[0]),
                (sy / jnp.dot(y, y)).astype(dt), jnp.where(c, 0, st), ls.status)

    init = (jnp.asarray(False), jnp.asarray(False), jnp.asarray(0), jnp.asarray(1),
            jnp.asarray(1), x0, f0, g0, jnp.zeros((maxcor, n), dt), jnp.zeros((maxcor, n), dt),
            jnp.zeros((maxcor,), dt), jnp.ones((), dt), jnp.asarray(0), jnp.asarray(0))
    conv, failed, k, nfev, ngev, x, f, g, *_, status, _ = lax.while_loop(cond, body, init)
    return OptimizeResults(x=x, success=conv & ~failed, status=status, fun=f, jac=g,
                           hess_inv=None, nfev=nfev, njev=ngev, nit=k)


_LBFGS_NAMES = ("l-bfgs-experimental-do-not-rely-on-this", "l-bfgs")


def minimize(fun, x0, args=(), *, method, tol=None, options=None):
    """Minimise ``fun(x, *args)`` over a 1-D ``x`` starting at ``x0``.

    ``method``: ``"BFGS"`` or ``"l-bfgs-experimental-do-not-rely-on-this"`` (JAX's name
    for L-BFGS; ``"l-bfgs"`` also works).  ``tol``: the gradient-norm tolerance
    (``gtol``) unless ``options`` sets one.  ``options``: ``maxiter``, ``norm``, ``gtol``,
    ``line_search_maxiter`` (BFGS); ``maxiter``, ``norm``, ``maxcor``, ``ftol``, ``gtol``,
    ``maxfun``, ``maxgrad``, ``maxls`` (L-BFGS).  Works under ``jit``.
    """
    jnp = _jnp()
    options = dict(options or {})
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to xform.scipy.optimize.minimize must be a tuple, "
                        f"got {args!r}")
    if not isinstance(method, str):
        raise TypeError(f"minimize: method must be a string, got {method!r}")
    x0 = jnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"minimize: x0 must be a 1-D array, got shape {x0.shape}; ravel "
                         "it (xform.flatten_util.ravel_pytree) first")
    if not jnp.issubdtype(x0.dtype, jnp.floating):
        x0 = x0.astype(jnp.result_type(x0, jnp.float32))
    if tol is not None:
        options.setdefault("gtol", tol)

    def f(x):
        return fun(x, *args)
    m = method.lower()
    try:
        if m == "bfgs":
            return _bfgs(f, x0, **options)
        if m in _LBFGS_NAMES:
            return _lbfgs(f, x0, **options)
    except TypeError as e:
        if "unexpected keyword" in str(e):
            raise TypeError(f"minimize: unknown option for method {method!r}: {e}") from None
        raise
    raise ValueError(f'Method {method} not recognized; use "BFGS" or '
                     f'"{_LBFGS_NAMES[0]}"')

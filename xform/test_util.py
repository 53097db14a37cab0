"""``xform.test_util``: JAX's ``jax.test_util`` (``check_grads``, ``check_jvp``,
``check_vjp``) with JAX's documented semantics, so test suites written against
``jax.test_util`` pass and fail as they do on JAX.

What those semantics are (and where ``xform.testing``'s own checks differ on purpose):
one random direction per check from ``np.random.RandomState(0)`` (a fresh generator per
check); central differences with step ``EPS = 1e-4`` whatever the dtype, computed in the
arguments' dtypes; tolerances per dtype (``default_gradient_tolerance``) *multiplied by
the number of elements* of each compared array; reverse mode checked by the inner
product ``<t, vjp(c)> == <jvp(t), c>``; ``check_grads`` of order ``n`` checks the JVP of
``f`` at ``(args, args)`` and the VJP map ``x -> vjp(f, x)(f(x))`` at ``args`` to order
``n - 1``.  ``xform.testing.check_grads`` instead compares element by element, in
float64, with steps chosen per dtype, and names the worst element.
"""
from __future__ import annotations

import functools

import numpy as np

__all__ = ["check_grads", "check_jvp", "check_vjp"]

EPS = 1e-4

default_gradient_tolerance = {
    np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
}


def _x():
    import xform   # deferred: xform imports this module
    return xform


def _dtype(x):
    d = getattr(x, "dtype", None)
    if d is not None and np.dtype(d).name == "float0":
        return np.dtype(d)
    return np.dtype(_x().dtypes.canonicalize_dtype(_x().numpy.result_type(x)))


def _is_py_scalar(x):
    return not isinstance(x, np.generic) and isinstance(x, (bool, int, float, complex))


def _tol(dtype, tol):
    if tol is None:
        tol = {}
    if not isinstance(tol, dict):
        return tol
    table = dict(default_gradient_tolerance)
    table.update({np.dtype(k): v for k, v in tol.items()})
    if dtype.name == "bfloat16":
        return table.get(dtype, 1e-1)
    return table.get(dtype, 0)


def _close(a, b, atol, rtol, err_msg):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise AssertionError(f"{err_msg}: shapes differ: {a.shape} vs {b.shape}")
    if a.dtype.name == "float0" or b.dtype.name == "float0":
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    at = max(_tol(_dtype(a), atol), _tol(_dtype(b), atol))
    rt = max(_tol(_dtype(a), rtol), _tol(_dtype(b), rtol))
    if a.dtype.name == "bfloat16":
        a = a.astype(np.float32)
    if b.dtype.name == "bfloat16":
        b = b.astype(np.float32)
    kw = {k: v for k, v in (("atol", at * a.size), ("rtol", rt * b.size)) if v}
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(a, b, err_msg=err_msg, **kw)


def _check_close(xs, ys, atol, rtol, err_msg):
    tu = _x().tree_util
    tu.tree_map(lambda a, b: _close(a, b, atol, rtol, err_msg), xs, ys)


def _check_dtypes(xs, ys):
    def same(x, y):
        if _dtype(x) != _dtype(y):
            raise AssertionError(f"dtype mismatch: {_dtype(x)} vs {_dtype(y)}")
    _x().tree_util.tree_map(same, xs, ys)


def _direction(rng, x):
    """A normal random value shaped and typed like ``x`` (JAX's ``rand_like``)."""
    dt = _dtype(x)
    draw = lambda: np.asarray(rng.randn(*np.shape(x)), dtype=dt)  # noqa: E731
    v = draw() + dt.type(1j) * draw() if dt.kind == "c" else draw()
    return v.item() if _is_py_scalar(x) else v


def _in_dtype(op):
    def f(*xs):
        out = np.array(op(*[np.asarray(x) for x in xs]), dtype=_dtype(xs[0]))
        return out.item() if all(_is_py_scalar(x) for x in xs) else out
    return f


def _scaled(xs, a):
    def f(x):
        dt = _dtype(x)
        out = np.multiply(np.asarray(x), np.array(a, dt), dtype=dt)
        return out.item() if _is_py_scalar(x) else out
    return _x().tree_util.tree_map(f, xs)


def _difference(x, y):
    dt = _dtype(x)
    x, y = np.asarray(x), np.asarray(y)
    with np.errstate(invalid="ignore"):
        return np.where(np.equal(x, y), np.array(0, dt), np.subtract(x, y, dtype=dt))


def numerical_jvp(f, primals, tangents, eps=EPS):
    """``(f(x + eps t) - f(x - eps t)) / (2 eps)``, in the values' own dtypes."""
    tm = _x().tree_util.tree_map
    step = _scaled(tangents, eps)
    plus = f(*tm(_in_dtype(np.add), primals, step))
    minus = f(*tm(_in_dtype(np.subtract), primals, step))
    return _scaled(tm(_difference, plus, minus), 0.5 / eps)


def _inner(xs, ys):
    tu = _x().tree_util
    parts = tu.tree_leaves(tu.tree_map(
        lambda x, y: np.real(np.dot(np.conj(np.asarray(x)).reshape(-1),
                                    np.asarray(y).reshape(-1))), xs, ys))
    return functools.reduce(np.add, parts)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check ``f_jvp`` (``partial(xform.jvp, f)``) against central differences along one
    random direction; raises AssertionError on a mismatch."""
    rng = np.random.RandomState(0)
    tangent = _x().tree_util.tree_map(functools.partial(_direction, rng), args)
    v_out, t_out = f_jvp(args, tangent)
    _check_dtypes(v_out, t_out)
    v_want = f(*args)
    _check_dtypes(v_out, v_want)
    t_want = numerical_jvp(f, args, tangent, eps=eps)
    _check_close(v_out, v_want, atol, rtol, f"{err_msg} primal" if err_msg else "primal")
    _check_close(t_out, t_want, atol, rtol, f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check ``f_vjp`` (``partial(xform.vjp, f)``) by ``<t, vjp(c)> == <jvp(t), c>`` with the
    JVP from central differences; raises AssertionError on a mismatch."""
    tm = _x().tree_util.tree_map
    v_out, vjp_fn = f_vjp(*args)
    v_want = f(*args)
    _check_close(v_out, v_want, atol, rtol, f"{err_msg} primal" if err_msg else "primal")
    rng = np.random.RandomState(0)
    tangent = tm(functools.partial(_direction, rng), args)
    t_out = numerical_jvp(f, args, tangent, eps=eps)
    cotangent = tm(functools.partial(_direction, rng), v_out)
    ct_out = tm(_in_dtype(np.conj), vjp_fn(tm(_in_dtype(np.conj), cotangent)))
    got, want = _inner(tangent, ct_out), _inner(t_out, cotangent)
    _check_close(got, want, atol, rtol,
                 f"{err_msg} cotangent projection" if err_msg else "cotangent projection")


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check ``f``'s derivatives up to ``order`` (forward and/or reverse mode) against
    finite differences at ``args``; raises AssertionError on a mismatch."""
    X = _x()
    args = tuple(args)
    eps = eps or EPS

    def rec(f, args, order, msg):
        if "fwd" in modes:
            m = f"JVP of {msg}" if msg else "JVP"
            check_jvp(f, functools.partial(X.jvp, f), args, atol, rtol, eps, m)
            if order > 1:
                rec(functools.partial(X.jvp, f), (args, args), order - 1, m)
        if "rev" in modes:
            m = f"VJP of {msg}" if msg else "VJP"
            check_vjp(f, functools.partial(X.vjp, f), args, atol, rtol, eps, m)
            if order > 1:
                def vjp_map(*xs):
                    out, back = X.vjp(f, *xs)
                    return back(out)
                rec(vjp_map, args, order - 1, m)
        if "lin" in modes:
            m = f"LIN of {msg}" if msg else "LIN"

            def jvp_by_lin(primals, tangents):
                out, lin = X.linearize(f, *primals)
                return out, lin(*tangents)
            check_jvp(f, jvp_by_lin, args, atol, rtol, eps, m)
            if order > 1:
                rec(jvp_by_lin, (args, args), order - 1, m)
    rec(f, args, order, "")

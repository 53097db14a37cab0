"""Shared checks for primitive tests: JAX comparison, finite differences, the
dot-product test for transposes, and batching against a Python loop.

The batching driver is a tiny local vmap (the public ``xform.vmap`` is built
elsewhere): it wraps arguments in ``BatchTracer``s of a fresh ``BatchTrace``.
"""
from __future__ import annotations

import contextlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import settings

import xform  # noqa: F401  (registers every primitive)
from xform._src.interpreters import ad, batching, core, ir, staging
from xform._src.interpreters.config import config

BF16 = np.dtype(ml_dtypes.bfloat16)

TOL = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 1e-5, np.dtype(np.float16): 2e-3,
       BF16: 1.6e-2}


def examples(n):
    """``n`` examples under the default profile (25), scaled with the active profile."""
    return settings(max_examples=max(1, n * settings.default.max_examples // 25))


def tol_of(dt):
    return TOL.get(np.dtype(dt), 0)


@contextlib.contextmanager
def x64_enabled():
    import jax
    old_ours, old_jax = config.jax_enable_x64, jax.config.jax_enable_x64
    config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        config.update("jax_enable_x64", old_ours)
        jax.config.update("jax_enable_x64", old_jax)


@pytest.fixture
def x64():
    with x64_enabled():
        yield


def rand(rng, shape, dtype, low=-3, high=3):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(low, high, size=shape).astype(dt)
    return rng.uniform(low, high, size=shape).astype(dt)


def assert_close(ours, ref, dtype=None, rtol=None, atol=None):
    ours = np.asarray(ours)
    ref = np.asarray(ref)
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    dt = np.dtype(dtype if dtype is not None else ref.dtype)
    assert ours.dtype == ref.dtype, (ours.dtype, ref.dtype)
    t = tol_of(dt) if rtol is None else rtol
    if t == 0:
        np.testing.assert_array_equal(ours, ref)
    else:
        np.testing.assert_allclose(ours.astype(np.float64), ref.astype(np.float64), rtol=t,
                                   atol=t if atol is None else atol, equal_nan=True)


def check_vs_jax(ours_fn, jax_fn, args, rtol=None, atol=None):
    """Eager results of ours and JAX agree in shape, dtype and values; the staged
    program (abstract eval) promises exactly the eager avals and recomputes the values."""
    arrs = [core.Array(np.asarray(a)) for a in args]
    outs = _listify(ours_fn)(*arrs)
    refs = _listify(jax_fn)(*args)
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        assert isinstance(o, core.Array), type(o)
        assert_close(o, np.asarray(r), rtol=rtol, atol=atol)
    check_staged(ours_fn, arrs, outs)


def check_staged(fn, arrs, eager_outs):
    jaxpr, consts = staging.trace_to_jaxpr(_listify(fn), [a.aval for a in arrs])
    ir.check_jaxpr(jaxpr)
    for v, o in zip(jaxpr.outvars, eager_outs):
        assert v.aval.shape == o.shape and v.aval.dtype == o.dtype, (v.aval, o.aval)
        if not isinstance(v, ir.Literal):
            assert v.aval.weak_type == o.weak_type, (v.aval, o.aval)
    staged = ir.eval_jaxpr(jaxpr, consts, *arrs)
    for s, o in zip(staged, eager_outs):
        s, o = np.asarray(s), np.asarray(o)
        if o.dtype == BF16 or o.dtype.kind == "f":
            s, o = s.astype(np.float64), o.astype(np.float64)
        np.testing.assert_array_equal(s, o)


def _listify(f):
    def g(*xs):
        out = f(*xs)
        return list(out) if isinstance(out, (list, tuple)) else [out]
    return g


def check_jvp(f, args, rng, eps=1e-6, rtol=1e-6, atol=1e-6, diff=None):
    """JVP of ``f`` (on float64 args, x64 on) against central finite differences.

    ``diff``: indices of the differentiated args (others get symbolic-zero tangents).
    """
    f = _listify(f)
    diff = list(range(len(args))) if diff is None else diff
    args = [np.asarray(a) for a in args]
    tans = [rng.standard_normal(a.shape) if i in diff else None for i, a in enumerate(args)]
    tangents = [ad.Zero(ad.tangent_aval(core.get_aval(a))) if t is None else core.Array(t)
                for a, t in zip(args, tans)]
    _, touts = ad.jvp_flat(f, [core.Array(a) for a in args], tangents)
    plus = f(*[core.Array(a + eps * t if t is not None else a) for a, t in zip(args, tans)])
    minus = f(*[core.Array(a - eps * t if t is not None else a) for a, t in zip(args, tans)])
    for to, p, m in zip(touts, plus, minus):
        fd = (np.asarray(p, np.float64) - np.asarray(m, np.float64)) / (2 * eps)
        t = np.zeros(fd.shape) if type(to) is ad.Zero else np.asarray(ad.instantiate(to))
        np.testing.assert_allclose(t, fd, rtol=rtol, atol=atol)


def check_transpose(f, args, rng, lin=None, rtol=1e-10):
    """Dot-product test <ct, L t> == <L^T ct, t> for the linearization of ``f``.

    ``lin``: indices of args to linearize over (others closed over as constants).
    """
    f = _listify(f)
    args = [np.asarray(a) for a in args]
    lin = list(range(len(args))) if lin is None else lin

    def g(*ls):
        full = list(map(core.Array, args))
        for i, v in zip(lin, ls):
            full[i] = v
        return f(*full)

    primals = [core.Array(args[i]) for i in lin]
    outs, lf = ad.linearize_flat(g, primals)
    ts = [rng.standard_normal(args[i].shape) for i in lin]
    cts = [rng.standard_normal(np.shape(o)) for o in outs]
    louts = lf(*[core.Array(t) for t in ts])
    lhs = sum(float(np.vdot(c, np.asarray(lo, np.float64))) for c, lo in zip(cts, louts))
    tin = lf.transpose([core.Array(c) for c in cts])
    rhs = sum(float(np.vdot(np.asarray(ad.instantiate(ti), np.float64), t))
              for ti, t in zip(tin, ts) if type(ti) is not ad.Zero)
    assert np.isclose(lhs, rhs, rtol=rtol, atol=1e-9), (lhs, rhs)
    return lf


def vmap_local(f, args, in_dims, size):
    """Batch ``f`` with the engine's BatchTrace; outputs have the batch axis at 0."""
    f = _listify(f)
    trace = batching.BatchTrace(core.current_trace(), batching.AxisData(size))
    ins = [batching.BatchTracer(trace, core.Array(np.asarray(a)), d) if d is not None
           else core.Array(np.asarray(a)) for a, d in zip(args, in_dims)]
    with core.running(trace):
        outs = f(*ins)
    res = []
    for o in outs:
        v, d = trace.unpack(o)
        v = np.asarray(v)
        res.append(np.broadcast_to(v, (size,) + v.shape) if d is None else np.moveaxis(v, d, 0))
    return res


def check_batch(f, args, in_dims, size, rtol=0.0):
    """``args[i]`` is already batched along ``in_dims[i]`` (or unbatched for None).

    The rule is checked on the NumPy reference (``xform_eager_numpy_numerics``), whose
    elements do not depend on the array's size: XLA's kernels may round the elements of
    a (4, 3) array and of a (3,) one differently (JAX's vmap and loop differ alike)."""
    fl = _listify(f)
    with xform.config.override("xform_eager_numpy_numerics", True):
        got = vmap_local(f, args, in_dims, size)
        refs = [fl(*[core.Array(np.take(np.asarray(a), b, axis=d)) if d is not None
                     else core.Array(np.asarray(a)) for a, d in zip(args, in_dims)])
                for b in range(size)]
    for b, ref in enumerate(refs):
        for g, r in zip(got, ref):
            r = np.asarray(r)
            assert g[b].shape == r.shape and g[b].dtype == r.dtype, (g[b].shape, r.shape,
                                                                     g[b].dtype, r.dtype)
            if rtol:
                np.testing.assert_allclose(g[b].astype(np.float64), r.astype(np.float64),
                                           rtol=rtol, atol=rtol)
            else:
                np.testing.assert_array_equal(g[b], r)


def batch_args(rng, shapes, dtype, size, maybe_unbatched=True):
    """Random batch positions (some args unbatched) for unbatched shapes ``shapes``."""
    args, dims = [], []
    for i, s in enumerate(shapes):
        if maybe_unbatched and i > 0 and rng.random() < 0.3:
            args.append(rand(rng, s, dtype))
            dims.append(None)
            continue
        d = int(rng.integers(0, len(s) + 1))
        full = rand(rng, (size,) + tuple(s), dtype)
        args.append(np.moveaxis(full, 0, d))
        dims.append(d)
    if all(d is None for d in dims):
        return batch_args(rng, shapes, dtype, size, False)
    return args, dims

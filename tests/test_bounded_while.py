"""``lax.while_loop(..., max_steps=N)``: reverse-mode while loops (xform's extension).

JAX refuses to reverse-differentiate while_loop; the reference here is the same
computation as a fori_loop (scan) with the trip count found by running the loop,
plus finite differences.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xform
import xform.numpy as xnp
from xform import lax


def body(c):
    i, v = c
    return i + 1, xnp.sin(v) * 1.05 + 0.05 * v * v


def bounded(x, limit, max_steps, checkpoint=None):
    """Loop while the sum of squares stays under ``limit`` (a data-dependent trip count)."""
    out = lax.while_loop(lambda c: (c[1] * c[1]).sum() < limit, body, (0, x),
                         max_steps=max_steps, checkpoint=checkpoint)
    return (out[1] ** 2).sum() + out[0].astype(xnp.float32)


def trips(x, limit, max_steps):
    n, v = 0, np.asarray(x, np.float32)
    while n < max_steps and float((v * v).sum()) < limit:
        n, v = body((n, xnp.asarray(v)))
        v = np.asarray(v)
    return n


def scan_reference(x, n):
    out = lax.fori_loop(0, n, lambda i, c: body(c), (0, x))
    return (out[1] ** 2).sum() + out[0].astype(xnp.float32)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**16), limit=st.floats(0.5, 60.0), max_steps=st.integers(1, 40),
       checkpoint=st.sampled_from([None, "sqrt", 1, 3, 7]))
def test_grad_equals_the_scan_with_the_same_trips(seed, limit, max_steps, checkpoint):
    x = xnp.asarray(np.random.default_rng(seed).uniform(-1, 1, 3).astype(np.float32))
    n = trips(x, limit, max_steps)
    want_v, want_g = xform.value_and_grad(scan_reference)(x, n)
    got_v, got_g = xform.value_and_grad(bounded)(x, limit, max_steps, checkpoint)
    np.testing.assert_allclose(np.asarray(got_v), np.asarray(want_v), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(got_g), np.asarray(want_g), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("max_steps", [1, 10, 1000])
@pytest.mark.parametrize("checkpoint", [None, "sqrt"])
def test_long_loops_under_jit(max_steps, checkpoint):
    """1 to 1000 trips: the loop stops by its condition (or at max_steps)."""
    x = xnp.asarray([0.01, -0.02, 0.015], xnp.float32)
    f = xform.jit(xform.grad(lambda x: bounded(x, 50.0, max_steps, checkpoint)))
    n = trips(x, 50.0, max_steps)
    want = xform.grad(lambda x: scan_reference(x, n))(x)
    np.testing.assert_allclose(np.asarray(f(x)), np.asarray(want), rtol=1e-4, atol=1e-6)


def test_grad_matches_finite_differences():
    x = np.array([0.3, -0.4, 0.2], np.float64)
    with xform.enable_x64():
        f = lambda v: bounded(v, 8.0, 30, "sqrt")            # noqa: E731
        g = np.asarray(xform.grad(f)(xnp.asarray(x)))
        eps = 1e-6
        fd = [(float(f(xnp.asarray(x + eps * e))) - float(f(xnp.asarray(x - eps * e)))) / (2 * eps)
              for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)


def test_vmap_with_different_trip_counts():
    xs = xnp.asarray([[0.1, 0.1, 0.1], [0.9, -0.8, 0.7], [1.5, 1.2, -1.1]], xnp.float32)
    got = xform.jit(xform.vmap(xform.grad(lambda x: bounded(x, 6.0, 25, 5))))(xs)
    for row, x in zip(np.asarray(got), xs):
        n = trips(x, 6.0, 25)
        want = xform.grad(lambda v: scan_reference(v, n))(x)
        np.testing.assert_allclose(row, np.asarray(want), rtol=2e-5, atol=1e-6)


def test_max_steps_stops_the_loop():
    out = lax.while_loop(lambda i: i < 100, lambda i: i + 1, 0, max_steps=7)
    assert int(out) == 7
    assert int(lax.while_loop(lambda i: i < 3, lambda i: i + 1, 0, max_steps=7)) == 3
    assert int(lax.while_loop(lambda i: i < 3, lambda i: i + 1, 0, max_steps=0)) == 0


def test_sqrt_checkpoint_saves_less():
    from xform.ad_checkpoint import saved_residuals
    x = xnp.ones(64, xnp.float32) * 0.01

    def total_bytes(checkpoint):
        res = saved_residuals(lambda v: bounded(v, 1e9, 400, checkpoint), x)
        return sum(int(np.prod(a.shape)) * np.dtype(a.dtype).itemsize for a, _ in res)
    plain, sqrt = total_bytes(None), total_bytes("sqrt")
    # plain stores per-trip values for 400 trips; sqrt stores ~20 segment carries
    assert sqrt * 8 < plain, (sqrt, plain)


def test_errors():
    with pytest.raises(TypeError, match="max_steps must be a static Python int"):
        lax.while_loop(lambda i: i < 3, lambda i: i + 1, 0, max_steps=2.5)
    with pytest.raises(ValueError, match="max_steps must be >= 0"):
        lax.while_loop(lambda i: i < 3, lambda i: i + 1, 0, max_steps=-1)
    with pytest.raises(ValueError, match="checkpoint= needs max_steps"):
        lax.while_loop(lambda i: i < 3, lambda i: i + 1, 0, checkpoint="sqrt")
    with pytest.raises(ValueError, match="checkpoint must be"):
        lax.while_loop(lambda i: i < 3, lambda i: i + 1, 0, max_steps=3, checkpoint="log")
    with pytest.raises(ValueError, match="max_steps=N"):
        xform.grad(lambda x: lax.while_loop(lambda v: v < 5.0, lambda v: v * 2, x))(1.0)

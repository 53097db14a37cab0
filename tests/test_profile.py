"""xform.profile: the dispatch-tax arithmetic against worked examples (a small MLP's
dispatch tax, a compile's break-even), and dispatch_report on small functions (oracles: JAX's staged program for
equation counts, 2mnk for matmul flops, the report's own formulas recomputed)."""
import math

import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform import lax, profile


# ----------------------------------------------------------------- pure arithmetic


def test_overhead_ratio_small_mlp_worked_example():
    # A small MLP: 6 ops x 15 us = 90 us of dispatch vs 2.6 us of device time -> 34.6.
    assert profile.overhead_ratio(6, 15e-6, 2.6e-6, 0.0) == pytest.approx(34.6, abs=0.05)
    # Split between compute and memory does not matter, only the sum.
    assert profile.overhead_ratio(6, 15e-6, 1.0e-6, 1.6e-6) == pytest.approx(90 / 2.6)


def test_tax_share_examples():
    # 15 us of tax on a 1 us op: 15 / (15 + 1) ~ 94 %; on a 100 us matmul ~ 13 %.
    for work, share in ((1e-6, 0.94), (100e-6, 0.13)):
        r = profile.overhead_ratio(1, 15e-6, work, 0)
        assert r / (1 + r) == pytest.approx(share, abs=0.005)


def test_break_even_worked_example():
    # A 30 s compile, 1450 -> 2150 img/s: N = 30 / (1/1450 - 1/2150) ~ 134,000.
    n = profile.break_even(30.0, 1 / 1450, 1 / 2150)
    assert n == pytest.approx(30 / (1 / 1450 - 1 / 2150))
    assert round(n, -3) == 134_000


def test_edge_cases():
    assert profile.break_even(1.0, 1e-3, 1e-3) == math.inf       # compiled not faster
    assert profile.break_even(1.0, 1e-3, 2e-3) == math.inf
    assert profile.break_even(0.0, 2e-3, 1e-3) == 0.0
    assert profile.overhead_ratio(3, 1e-6, 0, 0) == math.inf      # no device work
    assert profile.overhead_ratio(0, 1e-6, 0, 0) == 0.0
    with pytest.raises(ValueError, match="t_dispatch"):
        profile.overhead_ratio(1, -1e-6, 1e-6, 0)
    with pytest.raises(ValueError, match="t_compile"):
        profile.break_even(float("nan"), 1, 0)
    with pytest.raises(TypeError, match="n_ops"):
        profile.overhead_ratio("six", 1e-6, 1e-6, 0)


def test_device_time_and_profiles():
    tc, tm = profile.device_time(2e12, 3e9, profile.A100)
    assert tc == pytest.approx(2e12 / 19.5e12) and tm == pytest.approx(3e9 / 1.555e12)
    tc, tm = profile.device_time(192e9, 20e9, profile.CPU)
    assert (tc, tm) == pytest.approx((1.0, 1.0))
    mine = profile.DeviceProfile("mine", 1e9, 1e9)
    assert profile.device_time(5e8, 0, mine) == (0.5, 0.0)
    with pytest.raises(ValueError, match="peak_flops"):
        profile.DeviceProfile("bad", 0, 1e9)
    with pytest.raises(TypeError, match="DeviceProfile"):
        profile.device_time(1, 1, "a100")


# ----------------------------------------------------------------- count_ops


def test_count_ops_matches_jax_on_flat_program():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")

    def f(np_, x, y):
        return np_.sin(x) * y + np_.cos(y) - np_.tanh(x * y)
    x = np.random.default_rng(0).standard_normal(8).astype(np.float32)
    ours = profile.count_ops(xform.make_jaxpr(lambda a, b: f(xnp, a, b))(x, x))
    theirs = len(jax.make_jaxpr(lambda a, b: f(jnp, a, b))(x, x).jaxpr.eqns)
    assert ours == theirs == 7


def test_count_ops_recurses_into_bodies():
    def inner(x):
        return xnp.sin(x) * x                  # 2 equations

    def body(c, x):
        return c + xnp.cos(x), c               # 2 equations

    def f(x):
        y = xform.jit(inner)(x)                # 1 + 2
        c, _ = lax.scan(body, y, xnp.stack([x, x]))   # stack + scan(1 + 2)
        return c
    x = xnp.asarray(np.arange(1, 5, dtype=np.float32))
    closed = xform.make_jaxpr(f)(x)
    top = len(closed.jaxpr.eqns)
    assert profile.count_ops(closed) == top + 2 + 2


# ----------------------------------------------------------------- dispatch_report


def _small_mlp_args():
    r = np.random.default_rng(1)
    shapes = [(16, 32), (32,), (32, 4), (4,), (8, 16)]
    return [xnp.asarray(r.standard_normal(s).astype(np.float32)) for s in shapes]


def small_mlp(W1, b1, W2, b2, x):
    return xnp.sum(xform.nn.relu(x @ W1 + b1) @ W2 + b2)


def test_dispatch_report_small_mlp():
    args = _small_mlp_args()
    rep = profile.dispatch_report(small_mlp, *args, n_iter=3, t_dispatch=15e-6)
    assert rep.n_ops == profile.count_ops(xform.make_jaxpr(small_mlp)(*args))
    assert rep.n_ops >= 6
    assert rep.t_dispatch == 15e-6
    assert rep.t_eager > 0 and rep.t_jit > 0 and rep.t_compile > 0
    # XLA's cost analysis counts at least the two matmuls' 2mnk flops.
    assert rep.flops >= 2 * 8 * 16 * 32 + 2 * 8 * 32 * 4
    assert rep.bytes_accessed >= 4 * (16 * 32 + 32 + 32 * 4 + 4 + 8 * 16)
    tc, tm = profile.device_time(rep.flops, rep.bytes_accessed, profile.CPU)
    assert (rep.t_compute, rep.t_memory) == (tc, tm)
    assert rep.overhead_ratio == profile.overhead_ratio(rep.n_ops, 15e-6, tc, tm)
    assert rep.break_even == profile.break_even(rep.t_compile, rep.t_eager, rep.t_jit)
    d = rep.as_dict()
    for key in ("n_ops", "t_dispatch", "t_eager", "t_jit", "t_compile", "flops",
                "bytes_accessed", "t_compute", "t_memory", "overhead_ratio", "break_even",
                "profile", "overhead_fraction"):
        assert key in d
    text = str(rep)
    assert "overhead ratio" in text and "break-even" in text and "N_ops" in text


def test_dispatch_report_matmul_flops_and_a100_profile():
    r = np.random.default_rng(2)
    a = xnp.asarray(r.standard_normal((8, 16)).astype(np.float32))
    b = xnp.asarray(r.standard_normal((16, 32)).astype(np.float32))
    rep = profile.dispatch_report(lambda x, y: x @ y, a, b, n_iter=2, profile=profile.A100)
    assert rep.n_ops == 1
    assert rep.flops == 2 * 8 * 16 * 32
    assert rep.t_compute == pytest.approx(rep.flops / 19.5e12)
    assert rep.profile is profile.A100
    assert rep.t_dispatch > 0          # measured


def test_dispatch_report_errors():
    with pytest.raises(TypeError, match="callable"):
        profile.dispatch_report(3, 1.0)
    with pytest.raises(ValueError, match="n_iter"):
        profile.dispatch_report(xnp.sin, 1.0, n_iter=0)
    with pytest.raises(TypeError, match="DeviceProfile"):
        profile.dispatch_report(xnp.sin, 1.0, profile="cpu")


def test_measure_dispatch_positive():
    assert profile.measure_dispatch(n_iter=20) > 0

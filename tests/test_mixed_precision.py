"""xform.mixed_precision: policies, loss scales, and the float16 training behaviour."""
import numpy as np
import pytest

import jax.numpy as jnp
import xform
import xform.numpy as xnp
from xform import mixed_precision as mp

BF16 = np.dtype(jnp.bfloat16)


def test_policy_parse_and_cast():
    p = mp.get_policy("params=float32,compute=bfloat16,output=float32")
    assert (p.param_dtype, p.compute_dtype, p.output_dtype) == (np.float32, BF16, np.float32)
    assert mp.get_policy("p=f32,c=f16,o=bf16") == mp.Policy(np.float32, np.float16, BF16)
    assert mp.get_policy("bf16") == mp.Policy(BF16, BF16, BF16)
    assert mp.get_policy(str(p)) == p
    tree = {"w": xnp.ones((2, 2)), "n": xnp.arange(3), "flag": True, "s": "name",
            "h": np.ones(2, np.float16)}
    c = p.cast_to_compute(tree)
    assert c["w"].dtype == BF16 and c["h"].dtype == BF16
    assert c["n"].dtype == np.int32 and c["flag"] is True and c["s"] == "name"
    assert p.cast_to_param(c)["w"].dtype == np.float32
    assert p.with_output_dtype("float16").cast_to_output(c)["w"].dtype == np.float16
    for bad in ("params=float32,compute=int8", "weights=f32", "params"):
        with pytest.raises(ValueError):
            mp.get_policy(bad)
    # casting is differentiable and works under jit
    g = xform.grad(lambda w: p.cast_to_output(p.cast_to_compute(w) * 2).sum())(xnp.ones(3))
    np.testing.assert_array_equal(np.asarray(g), [2.0, 2.0, 2.0])


def test_all_finite_select_tree():
    t = {"a": xnp.ones(3), "b": (xnp.zeros(2), xnp.arange(3))}
    assert bool(mp.all_finite(t))
    bad = {"a": xnp.asarray([1.0, np.inf, 0.0]), "b": (xnp.zeros(2), xnp.arange(3))}
    assert not bool(mp.all_finite(bad))
    assert not bool(xform.jit(mp.all_finite)({"x": xnp.asarray([np.nan])}))
    s = mp.select_tree(xnp.asarray(False), t, bad)
    np.testing.assert_array_equal(np.asarray(s["a"]), np.asarray(bad["a"]))
    with pytest.raises(ValueError):
        mp.select_tree(xnp.asarray(True), t, [1.0])


def test_static_and_noop_loss_scale():
    s = mp.StaticLossScale(2.0 ** 10)
    g = {"w": xnp.ones(2, xnp.float16)}
    scaled = s.scale(g)
    assert scaled["w"].dtype == np.float16 and float(scaled["w"][0]) == 1024.0
    assert float(s.unscale(scaled)["w"][0]) == 1.0
    assert s.adjust(xnp.asarray(False)) is s
    n = mp.NoOpLossScale()
    assert n.scale(g) is g and n.unscale(g) is g and n.loss_scale == 1


def test_dynamic_loss_scale_skips_on_inf_and_recovers():
    ls = mp.DynamicLossScale(xnp.asarray(2.0 ** 15), period=3)
    params = xnp.asarray([1.0, 2.0])

    @xform.jit
    def step(params, ls, inject_inf):
        grads = ls.scale(xnp.asarray([0.5, 0.25]))
        grads = xnp.where(inject_inf, xnp.inf, grads)
        grads = ls.unscale(grads)
        finite = mp.all_finite(grads)
        new = mp.select_tree(finite, params - 0.1 * grads, params)
        return new, ls.adjust(finite)

    scales = []
    for i, bad in enumerate([False, True, False, False, False, True, True]):
        new_params, ls = step(params, ls, bad)
        if bad:   # the step is skipped
            np.testing.assert_array_equal(np.asarray(new_params), np.asarray(params))
        else:
            np.testing.assert_allclose(np.asarray(new_params),
                                       np.asarray(params) - 0.1 * np.array([0.5, 0.25]))
        params = new_params
        scales.append(float(ls.loss_scale))
    s = 2.0 ** 15
    want = [s, s / 2, s / 2, s / 2, s, s / 2, s / 4]   # halve on inf, x2 after 3 good
    assert scales == want
    low = mp.DynamicLossScale(xnp.asarray(1.0), min_loss_scale=1.0)
    assert float(low.adjust(xnp.asarray(False)).loss_scale) == 1.0
    leaves = xform.tree_util.tree_leaves(ls)
    assert len(leaves) == 2


def test_float16_gradients_underflow_without_loss_scaling():
    """A tiny-gradient float16 computation: unscaled gradients flush to zero, scaled
    ones survive (and match float32 after unscaling)."""
    x = xnp.asarray(np.full(4, 1e-4, np.float16))
    w = xnp.asarray(np.ones(4, np.float16))

    def loss(w, x):
        return xnp.sum((w * x) * 1e-4)   # d/dw = 1e-4 * x = 1e-8 < float16's smallest 6e-8
    g16 = xform.grad(loss)(w, x)
    assert g16.dtype == np.float16
    assert float(xnp.max(xnp.abs(g16))) == 0.0          # underflow
    ls = mp.StaticLossScale(2.0 ** 12)
    g_scaled = xform.grad(lambda w, x: ls.scale(loss(w, x)))(w, x)
    g = ls.unscale(g_scaled.astype(xnp.float32))
    np.testing.assert_allclose(np.asarray(g), np.full(4, 1e-8), rtol=1e-2)


def test_matmul_f32_accumulation():
    a = xnp.asarray(np.ones((4, 4096), np.float16) * 0.1)
    b = xnp.asarray(np.ones((4096, 4), np.float16))
    out = xnp.dot(a, b, preferred_element_type=xnp.float32)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), 409.6 * np.float32(np.float16(0.1)) / 0.1,
                               rtol=1e-3)

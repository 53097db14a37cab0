"""conv_general_dilated and friends: values, gradients and batching against real JAX and
math (finite differences, the dot-product test, Python loops)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xform
import xform.lax as lax
import xform.numpy as xnp
from _conv_fft_specs import random_conv
from prim_testutil import check_batch, check_jvp, check_transpose, examples, x64_enabled

def _close(a, b, tol=2e-4):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    scale = max(1.0, float(np.abs(b).max(initial=0)))
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale)


# Default run: 3 draws; the slow step runs 8 (the _exhaustive twin).
@examples(3)
@given(seed=st.integers(0, 2**31 - 1))
def test_forward_and_gradients_match_jax(seed):
    _test_forward_and_gradients_match_jax(seed)


@pytest.mark.slow
@examples(8)
@given(seed=st.integers(0, 2**31 - 1))
def test_forward_and_gradients_match_jax_exhaustive(seed):
    _test_forward_and_gradients_match_jax(seed)


def _test_forward_and_gradients_match_jax(seed):
    """Eager, jitted, and both VJPs (every padding mode, strides, dilations, groups, 1-3 D)."""
    rng = np.random.default_rng(seed)
    lhs, rhs, kw = random_conv(rng)
    ours = lax.conv_general_dilated(lhs, rhs, **kw)
    want = jax.lax.conv_general_dilated(lhs, rhs, **kw)
    assert ours.dtype == want.dtype
    _close(ours, want)
    f = lambda a, b: lax.conv_general_dilated(a, b, **kw)
    _close(xform.jit(f)(lhs, rhs), want)
    ct = rng.standard_normal(want.shape).astype(np.float32)
    _, vjp = xform.vjp(f, lhs, rhs)
    _, jvjp = jax.vjp(lambda a, b: jax.lax.conv_general_dilated(a, b, **kw), lhs, rhs)
    for g, jg in zip(vjp(ct), jvjp(ct)):
        _close(g, jg)


@pytest.mark.parametrize("nsp", [1, 2, 3])
@pytest.mark.parametrize("padding", ["SAME", "SAME_LOWER", "VALID", "explicit"])
def test_jitted_gradients_match_jax(nsp, padding):
    groups = [(1, 1), (2, 1), (1, 2)][(nsp + len(padding)) % 3]
    rng = np.random.default_rng(nsp * 100 + groups[0] * 10 + groups[1] + len(padding))
    lhs, rhs, kw = random_conv(rng, nsp, groups, string_padding=padding != "explicit")
    if padding != "explicit":
        kw["padding"] = padding

    def loss(f, conv):
        return lambda a, b: f.sum(f.sin(conv(a, b, **kw)))
    g = xform.jit(xform.grad(loss(xnp, lax.conv_general_dilated), argnums=(0, 1)))(lhs, rhs)
    jg = jax.grad(loss(jnp, jax.lax.conv_general_dilated), argnums=(0, 1))(lhs, rhs)
    for a, b in zip(g, jg):
        _close(a, b)


@examples(6)
@given(seed=st.integers(0, 2**31 - 1))
def test_jvp_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    lhs, rhs, kw = random_conv(rng)
    with x64_enabled():
        check_jvp(lambda a, b: lax.conv_general_dilated(a, b, **kw),
                  [lhs.astype(np.float64), rhs.astype(np.float64)], rng, rtol=1e-6, atol=1e-6)


@examples(8)
@given(seed=st.integers(0, 2**31 - 1))
def test_transposes_pass_dot_product_test(seed):
    rng = np.random.default_rng(seed)
    lhs, rhs, kw = random_conv(rng)
    with x64_enabled():
        args = [lhs.astype(np.float64), rhs.astype(np.float64)]
        f = lambda a, b: lax.conv_general_dilated(a, b, **kw)
        check_transpose(f, args, rng, lin=[0])
        check_transpose(f, args, rng, lin=[1])


@examples(6)
@given(seed=st.integers(0, 2**31 - 1), which=st.sampled_from(["lhs", "rhs", "both"]))
def test_batching_matches_loop_and_jax_vmap(seed, which):
    rng = np.random.default_rng(seed)
    lhs, rhs, kw = random_conv(rng)
    size = 3
    f = lambda a, b: lax.conv_general_dilated(a, b, **kw)
    args, dims = [], []
    for x, batched in ((lhs, which in ("lhs", "both")), (rhs, which in ("rhs", "both"))):
        if batched:
            d = int(rng.integers(0, x.ndim + 1))
            full = rng.standard_normal((size,) + x.shape).astype(np.float32)
            args.append(np.moveaxis(full, 0, d))
            dims.append(d)
        else:
            args.append(x)
            dims.append(None)
    check_batch(f, args, dims, size, rtol=2e-4)
    ours = xform.vmap(f, in_axes=tuple(dims))(*args)
    want = jax.vmap(lambda a, b: jax.lax.conv_general_dilated(a, b, **kw),
                    in_axes=tuple(dims))(*args)
    _close(ours, want)


def test_dtypes_precision_and_preferred_element_type():
    rng = np.random.default_rng(0)
    x = rng.integers(-5, 5, (2, 3, 5, 5)).astype(np.int32)
    w = rng.integers(-5, 5, (4, 3, 2, 2)).astype(np.int32)
    for args in [(x, w), (x.astype(np.float16), w.astype(np.float16))]:
        for pet in (None, np.float32):
            kw = dict(window_strides=(1, 1), padding="SAME", precision="highest",
                      preferred_element_type=pet)
            if args[0].dtype == np.int32 and pet is not None:
                pet = np.int32
                kw["preferred_element_type"] = pet
            o = lax.conv_general_dilated(*args, **kw)
            j = jax.lax.conv_general_dilated(*args, **kw)
            assert o.dtype == j.dtype
            _close(o, j, 2e-3)
            _close(xform.jit(lambda a, b: lax.conv_general_dilated(a, b, **kw))(*args), j, 2e-3)


def test_convenience_wrappers_match_jax():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    _close(lax.conv(x, w, (1, 2), "SAME"), jax.lax.conv(x, w, (1, 2), "SAME"))
    _close(lax.conv_with_general_padding(x, w, (2, 1), [(1, 0), (2, 1)], (2, 1), (1, 2)),
           jax.lax.conv_with_general_padding(x, w, (2, 1), [(1, 0), (2, 1)], (2, 1), (1, 2)))
    xh = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
    wh = rng.standard_normal((3, 2, 3, 4)).astype(np.float32)
    for pad in ("SAME", "VALID", [(1, 2), (0, 1)]):
        for tk in (False, True):
            for cons in (False, True):
                if tk:
                    whk = rng.standard_normal((3, 2, 4, 3)).astype(np.float32)
                else:
                    whk = wh
                kw = dict(transpose_kernel=tk, use_consistent_padding=cons)
                _close(lax.conv_transpose(xh, whk, (2, 1), pad, **kw),
                       jax.lax.conv_transpose(xh, whk, (2, 1), pad, **kw))
    for dn in (None, ("NHWC", "HWIO", "NCHW")):
        lhs = xh if dn else x
        _close(lax.conv_general_dilated_patches(lhs, (2, 3), (1, 2), "SAME",
                                                dimension_numbers=dn),
               jax.lax.conv_general_dilated_patches(lhs, (2, 3), (1, 2), "SAME",
                                                    dimension_numbers=dn))
    # locally connected: kernel per output position
    out_sp = jax.lax.conv_general_dilated_patches(x, (3, 2), (1, 1), "VALID").shape[2:]
    k = rng.standard_normal((3 * 3 * 2, 5) + out_sp).astype(np.float32)
    _close(lax.conv_general_dilated_local(x, k, (1, 1), "VALID", (3, 2),
                                          dimension_numbers=("NCHW", "IOHW", "NCHW")),
           jax.lax.conv_general_dilated_local(x, k, (1, 1), "VALID", (3, 2),
                                              dimension_numbers=("NCHW", "IOHW", "NCHW")))
    assert lax.conv_dimension_numbers(x.shape, w.shape, ("NHWC", "HWIO", "NHWC")) == \
        tuple(jax.lax.conv_dimension_numbers(x.shape, w.shape, ("NHWC", "HWIO", "NHWC")))
    assert lax.conv_general_shape_tuple(x.shape, w.shape, (1, 2), "SAME",
                                        ("NCHW", "OIHW", "NCHW")) == \
        tuple(jax.lax.conv_general_shape_tuple(x.shape, w.shape, (1, 2), "SAME",
                                               ("NCHW", "OIHW", "NCHW")))
    assert list(lax.padtype_to_pads((5, 6), (3, 2), (2, 1), "SAME_LOWER")) == \
        list(jax.lax.padtype_to_pads((5, 6), (3, 2), (2, 1), "SAME_LOWER"))


@pytest.mark.parametrize("bad, exc", [
    (dict(feature_group_count=2), ValueError),          # 3 features not divisible by 2
    (dict(padding="FULL"), ValueError),
    (dict(window_strides=(1,)), ValueError),
    (dict(dimension_numbers=("NCHW", "OIHW")), TypeError),
    (dict(dimension_numbers=("NCHW", "OIHX", "NCHW")), TypeError),
    (dict(feature_group_count=3, batch_group_count=2), ValueError),
])
def test_errors_match_jax(bad, exc):
    x = np.ones((2, 3, 5, 5), np.float32)
    w = np.ones((6, 3, 2, 2), np.float32)
    kw = dict(window_strides=(1, 1), padding="SAME")
    kw.update(bad)
    with pytest.raises((exc, RuntimeError)):   # JAX: RuntimeError for an unknown padding
        jax.lax.conv_general_dilated(x, w, **kw)
    with pytest.raises(exc):
        lax.conv_general_dilated(x, w, **kw)


def test_dtype_mismatch_is_a_type_error():
    with pytest.raises(TypeError, match="same dtypes"):
        lax.conv_general_dilated(np.ones((1, 1, 3), np.float32), np.ones((1, 1, 2), np.int32),
                                 (1,), "VALID")

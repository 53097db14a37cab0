"""What ``checkpoint`` saves around control flow: the same residuals as JAX.

A scan/cond/fori_loop inside ``checkpoint`` is recomputed in the backward pass
(nothing of it is saved under the default policy); outside, its residuals are
stacked per iteration.  Compared by shape with JAX's ``saved_residuals``.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.ad_checkpoint import saved_residuals as jax_saved

import xform
import xform.numpy as xnp
from xform.ad_checkpoint import saved_residuals as xform_saved


def programs(api, np_mod):
    lax = api.lax

    def inner_scan(c):
        return lax.scan(lambda c, _: (np_mod.sin(c) * 1.1, None), c, None, length=5)[0]

    def inner_cond(c):
        return lax.cond(c.sum() > 0, np_mod.sin, np_mod.cos, c)

    def inner_fori(c):
        return lax.fori_loop(0, 3, lambda i, v: np_mod.tanh(v) * 2.0, c)

    return {
        "checkpoint(scan)": lambda x: api.checkpoint(inner_scan)(x).sum(),
        "scan of checkpoint(scan)": lambda x: lax.scan(
            lambda c, _: (api.checkpoint(inner_scan)(c), None), x, None, length=4)[0].sum(),
        "scan of scan": lambda x: lax.scan(
            lambda c, _: (inner_scan(c), None), x, None, length=4)[0].sum(),
        "checkpoint(cond)": lambda x: api.checkpoint(inner_cond)(x).sum(),
        "checkpoint(fori)": lambda x: api.checkpoint(inner_fori)(x).sum(),
        "checkpoint(sin . scan)": lambda x: api.checkpoint(
            lambda v: inner_scan(np_mod.sin(v)))(x).sum(),
    }


@pytest.mark.parametrize("name", sorted(programs(xform, xnp)))
def test_saved_residual_shapes_match_jax(name):
    x = np.linspace(0.1, 0.8, 8).astype(np.float32)
    got = sorted(tuple(a.shape) for a, _ in xform_saved(programs(xform, xnp)[name], xnp.asarray(x)))
    want = sorted(tuple(a.shape) for a, _ in jax_saved(programs(jax, jnp)[name], x))
    assert got == want
    g = xform.grad(programs(xform, xnp)[name])(xnp.asarray(x))
    w = jax.grad(programs(jax, jnp)[name])(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-6)

"""Tests for checkpoint/remat, its policies, checkpoint_name and residual reports.

The point of checkpointing is measurable: the linearized program's residuals
(its constants) shrink as the policy saves less, while every derivative stays
identical (compared with the un-checkpointed function and with real JAX).
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
from xform._src.interpreters import ad
from xform import lax as xl
from xform._ad_api import as_value
from xform.ad_checkpoint import checkpoint_name

P = xform.checkpoint_policies
f32 = np.float32


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=tol, atol=tol)


def params(seed=0, n=4, d=8, batch=4):
    rng = np.random.RandomState(seed)
    Ws = [(rng.randn(d, d) * 0.4).astype(f32) for _ in range(n)]
    bs = [(rng.randn(d) * 0.1).astype(f32) for _ in range(n)]
    x = rng.randn(batch, d).astype(f32)
    return Ws, bs, x


def mlp_x(Ws, bs, x, named=False):
    h = x
    for i, (W, b) in enumerate(zip(Ws, bs)):
        z = xl.add(xl.dot(h, W), xl.broadcast_in_dim(b, (h.shape[0], b.shape[0]), (1,)))
        if named:
            z = checkpoint_name(z, f"pre{i}")
        h = xl.tanh(z)
    return xl.reduce_sum(xl.mul(h, h), (0, 1))


def mlp_j(Ws, bs, x):
    h = x
    for W, b in zip(Ws, bs):
        h = jnp.tanh(h @ W + b)
    return jnp.sum(h * h)


def lin_of(f, *args):
    leaves, tree = jax.tree_util.tree_flatten(args)
    vals = [as_value(v) for v in leaves]
    _, lin = ad.linearize_flat(lambda *xs: [f(*jax.tree_util.tree_unflatten(tree, xs))], vals)
    return lin


POLICIES = [None, P.nothing_saveable, P.dots_saveable, P.checkpoint_dots,
            P.dots_with_no_batch_dims_saveable, P.everything_saveable]


@pytest.mark.parametrize("policy", POLICIES)
def test_same_gradients_as_without_checkpoint_and_jax(policy):
    Ws, bs, x = params()
    f = xform.checkpoint(mlp_x, policy=policy)
    close(f(Ws, bs, x), mlp_x(Ws, bs, x))
    g = xform.grad(f, argnums=(0, 1, 2))(Ws, bs, x)
    g0 = xform.grad(mlp_x, argnums=(0, 1, 2))(Ws, bs, x)
    gj = jax.grad(mlp_j, argnums=(0, 1, 2))(Ws, bs, x)
    for a, b, c in zip(jax.tree_util.tree_leaves(g), jax.tree_util.tree_leaves(g0),
                       jax.tree_util.tree_leaves(gj)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        close(a, c, 1e-4)


def test_residuals_shrink_with_policy():
    Ws, bs, x = params()
    counts = {}
    for name, f in [("plain", mlp_x),
                    ("everything", xform.checkpoint(mlp_x, policy=P.everything_saveable)),
                    ("dots", xform.checkpoint(mlp_x, policy=P.dots_saveable)),
                    ("nothing", xform.checkpoint(mlp_x, policy=P.nothing_saveable)),
                    ("default", xform.checkpoint(mlp_x))]:
        lin = lin_of(f, Ws, bs, x)
        counts[name] = (lin.num_residuals, lin.residual_bytes)
    n, d, b = 4, 8, 4
    # nothing_saveable keeps only the checkpointed function's inputs
    assert counts["nothing"] == counts["default"] == (2 * n + 1, (n * d * d + n * d + b * d) * 4)
    assert counts["nothing"][0] < counts["dots"][0] <= counts["everything"][0]
    assert counts["nothing"][1] < counts["dots"][1] < counts["everything"][1]
    assert counts["everything"] == counts["plain"]
    # dots_saveable saves exactly the 4 matmul outputs on top of the inputs
    assert counts["dots"][0] - counts["nothing"][0] == n
    assert counts["dots"][1] - counts["nothing"][1] == n * b * d * 4


def test_recomputation_is_in_the_linear_program():
    Ws, bs, x = params()
    lin = lin_of(xform.checkpoint(mlp_x, policy=P.nothing_saveable), Ws, bs, x)
    text = str(lin.jaxpr)
    assert "remat2[" in text and "differentiated=True" in text
    # the recomputation: the primal tanh calls live inside the linear program
    assert text.count("tanh") == 4
    assert "tanh" not in str(lin_of(mlp_x, Ws, bs, x).jaxpr)
    # and the backward program (transposed) is printable
    _, f_vjp = xform.vjp(xform.checkpoint(mlp_x), Ws, bs, x)
    assert "tanh" in str(f_vjp.transpose_jaxpr())


def test_named_policies():
    Ws, bs, x = params()
    f_all = xform.checkpoint(lambda *a: mlp_x(*a, named=True),
                             policy=P.save_only_these_names("pre0", "pre1", "pre2", "pre3"))
    f_two = xform.checkpoint(lambda *a: mlp_x(*a, named=True),
                             policy=P.save_only_these_names("pre1", "pre3"))
    f_none = xform.checkpoint(lambda *a: mlp_x(*a, named=True),
                              policy=P.save_any_names_but_these("pre0", "pre1", "pre2", "pre3"))
    def named(f):
        return sorted(s.split("'")[1] for _, s in xform.ad_checkpoint.saved_residuals(
            f, Ws, bs, x) if s.startswith("named"))
    assert named(f_all) == ["pre0", "pre1", "pre2", "pre3"]
    assert named(f_two) == ["pre1", "pre3"]
    assert named(f_none) == []
    b_all, b_two, b_none = (lin_of(f, Ws, bs, x).residual_bytes
                            for f in (f_all, f_two, f_none))
    # a saved pre-activation (4x8) replaces a bias (8) needed to recompute it
    assert b_all - b_none == 4 * (32 - 8) * 4 and b_two - b_none == 2 * (32 - 8) * 4
    g = xform.grad(f_two)(Ws, bs, x)
    gj = jax.grad(mlp_j)(Ws, bs, x)
    for a, c in zip(g, gj):
        close(a, c, 1e-4)
    # checkpoint_name is the identity (and differentiable) outside checkpoint too
    assert float(xform.grad(lambda v: xl.mul(checkpoint_name(v, "n"), v))(f32(3))) == 6.0
    both = P.save_from_both_policies(P.dots_saveable, P.save_only_these_names("pre0"))
    fb = xform.checkpoint(lambda *a: mlp_x(*a, named=True), policy=both)
    res = xform.ad_checkpoint.saved_residuals(fb, Ws, bs, x)
    # layer 0's matmul output is not needed: its pre-activation is saved instead
    assert sum(s.startswith("output of dot_general") for _, s in res) == 3
    assert sum(s.startswith("named 'pre0'") for _, s in res) == 1


def test_print_saved_residuals(capsys):
    Ws, bs, x = params()
    f = xform.checkpoint(lambda Ws, bs, x: mlp_x(Ws, bs, x, named=True),
                         policy=P.save_only_these_names("pre2"))
    xform.ad_checkpoint.print_saved_residuals(f, Ws, bs, x)
    out = capsys.readouterr().out.strip().splitlines()
    assert any("from the argument Ws[0]" in ln and ln.startswith("f32[8,8]") for ln in out)
    assert any("from the argument x" in ln for ln in out)
    res = xform.ad_checkpoint.saved_residuals(f, Ws, bs, x)
    assert len(res) == len(out) == lin_of(f, Ws, bs, x).num_residuals
    assert [s for _, s in res if s.startswith("named")][0].startswith("named 'pre2' from ")


def test_static_argnums_and_kwargs():
    def f(x, n, scale=f32(1.0)):
        for _ in range(n):
            x = xl.sin(x)
        return xl.mul(x, scale)
    fc = xform.checkpoint(f, static_argnums=(1,))
    x = f32(0.4)
    close(fc(x, 3, scale=f32(2.0)), f(x, 3, scale=f32(2.0)))
    close(xform.grad(fc, argnums=0)(x, 3, scale=f32(2.0)), 2 * xform.grad(f)(x, 3))
    close(xform.grad(fc)(x, 3), jax.grad(lambda x: jnp.sin(jnp.sin(jnp.sin(x))))(x))
    with pytest.raises(TypeError, match="policy"):
        xform.checkpoint(f, policy=3)


def test_checkpoint_composes():
    f = xform.checkpoint(lambda x: xl.mul(xl.sin(x), xl.cos(x)))
    fj = lambda x: jnp.sin(x) * jnp.cos(x)
    x = f32(0.3)
    close(xform.jvp(f, (x,), (f32(1),))[1], jax.jvp(fj, (x,), (f32(1),))[1])
    close(xform.grad(xform.grad(f))(x), jax.grad(jax.grad(fj))(x))
    close(xform.grad(xform.grad(xform.grad(f)))(x), jax.grad(jax.grad(jax.grad(fj)))(x))
    close(xform.hessian(f)(x), jax.hessian(fj)(x))
    # nested checkpoints
    g = xform.checkpoint(lambda x: f(f(x)), policy=P.everything_saveable)
    close(xform.grad(g)(x), jax.grad(lambda x: fj(fj(x)))(x))
    # closure over an outer differentiated value
    h = lambda a: xform.checkpoint(lambda x: xl.mul(xl.sin(x), a))(f32(2))
    close(xform.grad(h)(x), np.sin(2))
    if hasattr(xform, "vmap"):
        xs = np.linspace(-1, 1, 5).astype(f32)
        close(xform.vmap(xform.grad(f))(xs), jax.vmap(jax.grad(fj))(xs))
        close(xform.grad(lambda v: xl.reduce_sum(xform.vmap(f)(v), (0,)))(xs),
              jax.grad(lambda v: jnp.sum(jax.vmap(fj)(v)))(xs))


def test_remat_alias_and_decorator_form():
    assert xform.remat is xform.checkpoint

    @xform.checkpoint
    def f(x):
        return xl.sin(x)

    @xform.remat(policy=P.nothing_saveable)
    def g(x):
        return xl.sin(x)
    close(xform.grad(f)(f32(1)), np.cos(1))
    close(xform.grad(g)(f32(1)), np.cos(1))


def test_policies_answering_recompute_saveable_offloadable_as_jax():
    """A policy may answer JAX's Recompute / Saveable / Offloadable(src, dst) objects
    (Recompute is truthy in JAX but means: do not save)."""
    import jax
    import jax.ad_checkpoint as JA
    import xform.ad_checkpoint as XA

    def f(lib, x):
        return lib.numpy.sin(lib.numpy.sin(x) * 2.0).sum()

    x = np.linspace(0.1, 1.0, 4).astype(np.float32)
    for xans, jans in [(XA.Recompute, JA.Recompute), (XA.Saveable, JA.Saveable),
                       (XA.Offloadable("device", "pinned_host"),
                        JA.Offloadable("device", "pinned_host"))]:
        xres = XA.saved_residuals(xform.checkpoint(lambda x: f(xform, x),
                                                   policy=lambda *_, **__: xans), x)
        from jax._src.ad_checkpoint import saved_residuals as jax_saved_residuals
        jres = jax_saved_residuals(jax.checkpoint(lambda x: f(jax, x),
                                                 policy=lambda *_, **__: jans), x)
        assert len(xres) == len(jres), (xans, xres, jres)
        g = xform.grad(xform.checkpoint(lambda x: f(xform, x), policy=lambda *_, **__: xans))
        np.testing.assert_allclose(np.asarray(g(x)), np.asarray(jax.grad(lambda x: f(jax, x))(x)),
                                   rtol=1e-5)
    assert repr(XA.Offloadable("device", "pinned_host")) == \
        "Offloadable(src='device', dst='pinned_host')"

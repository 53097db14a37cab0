"""Reverse mode and linearize through every higher-order primitive, nested, against JAX.

The split that ``checkpoint`` and ``linearize`` rely on (``partial_eval_jaxpr``) must
handle cond/switch/scan/fori_loop/while_loop/custom_jvp/custom_vjp/nested jit/nested
checkpoint under every policy; these are the compositions real models use
(checkpointed layers inside a scan, control flow inside custom rules, ...).
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform._src.interpreters import ad
from xform import lax as xlax

f32 = np.float32
X = np.array([0.3, -1.2, 0.8], f32)
T = np.array([1.0, 0.5, -2.0], f32)


def close(a, b, tol=2e-5):
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=tol, atol=tol)


def both(make):
    return make(xform, xnp, xlax), make(jax, jnp, jax.lax)


POLICY_NAMES = ["nothing_saveable", "dots_saveable", None]


def policy(api, name):
    return None if name is None else getattr(api.checkpoint_policies, name)


def layer_model(api, np_, lax, pol):
    """A scan over layers whose step is checkpointed, with a cond inside."""
    Ws = np.stack([np.eye(3, dtype=f32) * 0.5 + 0.1 * k for k in range(4)])

    def step(h, W):
        z = np_.dot(h, W)
        h = lax.cond(np_.sum(z) > 0, np_.tanh, lambda v: np_.sin(v) * 0.5, z)
        return h, np_.sum(h * h)
    step = api.checkpoint(step, policy=pol)

    def f(x):
        h, ys = lax.scan(step, x, np_.asarray(Ws))
        return np_.sum(h) + np_.sum(ys)
    return f


@pytest.mark.parametrize("pol", POLICY_NAMES)
def test_checkpointed_scan_step_with_cond(pol):
    fx, fj = both(lambda api, np_, lax: layer_model(api, np_, lax, policy(api, pol)))
    g = jax.jit(jax.grad(fj))(X)
    close(xform.grad(fx)(X), g)
    close(xform.jit(xform.grad(fx))(X), g)
    close(xform.hessian(fx)(X), jax.jit(jax.hessian(fj))(X), 1e-4)
    close(xform.vmap(xform.grad(fx))(np.stack([X, -X])),
          jax.jit(jax.vmap(jax.grad(fj)))(np.stack([X, -X])))


def custom_vjp_with_control_flow(api, np_, lax):
    @api.custom_vjp
    def f(x):
        return lax.fori_loop(0, 3, lambda i, c: np_.sin(c) + 0.1 * i, x)

    def fwd(x):
        y, ys = lax.scan(lambda c, _: (np_.sin(c), c), x, None, length=3)
        return y + 0.1 * 3, (ys,)

    def bwd(res, g):
        (ys,) = res

        def back(k, g):
            c = ys[2 - k]
            return lax.cond(np_.sum(c) > -10.0, lambda g: g * np_.cos(c), lambda g: g, g)
        return (lax.fori_loop(0, 3, back, g),)
    f.defvjp(fwd, bwd)
    return lambda x: np_.sum(api.checkpoint(f)(x) ** 2)


def test_custom_vjp_with_control_flow_in_fwd_and_bwd():
    fx, fj = both(custom_vjp_with_control_flow)
    g = jax.jit(jax.grad(fj))(X)
    close(xform.grad(fx)(X), g)
    close(xform.jit(xform.grad(fx))(X), g)
    close(xform.vmap(xform.grad(fx))(np.stack([X, T])),
          jax.jit(jax.vmap(jax.grad(fj)))(np.stack([X, T])))
    with pytest.raises(TypeError, match="forward-mode"):
        xform.jvp(fx, (X,), (T,))


def custom_jvp_with_loop(api, np_, lax):
    @api.custom_jvp
    def f(x):
        return lax.fori_loop(0, 2, lambda i, c: np_.tanh(c), x)

    @f.defjvp
    def f_jvp(p, t):
        (x,), (dx,) = p, t
        y, dy = lax.fori_loop(0, 2, lambda i, c: (np_.tanh(c[0]),
                                                  (1 - np_.tanh(c[0]) ** 2) * c[1]), (x, dx))
        return y, dy

    def g(x):
        return np_.sum(lax.switch((np_.sum(x) > 0).astype(np_.int32),
                                  [f, lambda v: api.jit(f)(v) * 2.0], x))
    return g


def test_custom_jvp_with_loops_inside_switch_and_jit():
    fx, fj = both(custom_jvp_with_loop)
    jg = jax.jit(jax.grad(fj))
    jh = jax.jit(jax.hessian(fj))
    jjg = jax.jit(lambda x, t: jax.jvp(jax.grad(fj), (x,), (t,)))
    for x in (X, -X):
        close(xform.grad(fx)(x), jg(x))
        close(xform.hessian(fx)(x), jh(x), 1e-4)
        close(xform.jvp(xform.grad(fx), (x,), (T,)), jjg(x, T))
        close(xform.grad(xform.checkpoint(fx))(x), jg(x))


def nested_checkpoints(api, np_, lax, outer, inner):
    W = np.array([[0.5, -0.2, 0.1], [0.3, 0.8, -0.4], [0.0, 0.2, 0.9]], f32)

    def block(h):
        return np_.tanh(np_.dot(h, np_.asarray(W)))

    def body(h):
        h = api.checkpoint(block, policy=inner)(h)
        h = api.jit(lambda v: lax.cond(np_.sum(v) > 0, block, np_.sin, v))(h)
        return lax.fori_loop(0, 2, lambda i, c: api.checkpoint(block, policy=inner)(c), h)
    return lambda x: np_.sum(api.checkpoint(body, policy=outer)(x) ** 2)


@pytest.mark.parametrize("outer,inner", [("nothing_saveable", "everything_saveable"),
                                         ("dots_saveable", None),
                                         ("everything_saveable", "nothing_saveable")])
def test_nested_checkpoints_jit_cond_fori(outer, inner):
    fx, fj = both(lambda api, np_, lax: nested_checkpoints(
        api, np_, lax, policy(api, outer), policy(api, inner)))
    close(xform.grad(fx)(X), jax.jit(jax.grad(fj))(X))
    close(xform.jacrev(xform.grad(fx))(X), jax.jit(jax.jacrev(jax.grad(fj)))(X), 1e-4)
    y, lin = xform.linearize(fx, X)
    close((y, lin(T)), jax.jit(lambda x, t: (fj(x), jax.linearize(fj, x)[1](t)))(X, T))


def test_policy_saves_less_inside_scan():
    """Residuals of grad(checkpoint(scan)) shrink with the policy, gradients equal."""
    def make(pol):
        return layer_model(xform, xnp, xlax, pol)
    P = xform.checkpoint_policies

    def lin(f):
        return ad.linearize_flat(lambda x: [f(x)], [xform.numpy.asarray(X)])[1]
    plain = lin(layer_model(xform, xnp, xlax, P.everything_saveable))
    nothing = lin(make(P.nothing_saveable))
    dots = lin(make(P.dots_saveable))
    assert nothing.residual_bytes < plain.residual_bytes
    assert dots.residual_bytes < plain.residual_bytes
    # nothing_saveable: only the step's inputs -- the weights and the per-step carry
    assert nothing.residual_bytes == (4 * 3 * 3 + 4 * 3) * 4
    close(xform.grad(make(P.nothing_saveable))(X), xform.grad(make(P.everything_saveable))(X))


def while_model(api, np_, lax, pol):
    def body(c):
        i, h = c
        h = lax.cond(np_.sum(h) > 0, np_.sin, np_.tanh, h) * 1.1
        return i + 1, h

    def f(x):
        return lax.while_loop(lambda c: (c[0] < 4) & (np_.sum(c[1] ** 2) < 50.), body, (0, x))[1]
    return api.checkpoint(f, policy=pol)


@pytest.mark.parametrize("pol", ["nothing_saveable", "everything_saveable"])
def test_linearize_while_inside_checkpoint_and_jit(pol):
    fx, fj = both(lambda api, np_, lax: while_model(api, np_, lax, policy(api, pol)))
    y, lin = xform.linearize(fx, X)
    yj, linj = jax.linearize(fj, X)
    close((y, lin(T)), (yj, linj(T)))
    close(xform.jit(lambda x, t: xform.linearize(fx, x)[1](t))(X, T), linj(T))
    close(xform.jacfwd(fx)(X), jax.jacfwd(fj)(X))
    close(xform.vmap(lambda t: xform.jvp(fx, (X,), (t,))[1])(np.stack([T, X])),
          jax.vmap(lambda t: jax.jvp(fj, (X,), (t,))[1])(np.stack([T, X])))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        xform.grad(lambda x: xnp.sum(fx(x)))(X)

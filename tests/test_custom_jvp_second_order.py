"""Higher-order AD through custom_jvp / custom_vjp functions inside control flow.

JAX documents that "each application of a differentiation transform will use the custom
JVP rule if and only if the rule calls the original f to compute the primal outputs".
xform follows that at every order and inside every higher-order primitive.  JAX 0.10.2
does too, except for reverse-then-forward derivatives of a ``scan`` (and so of a
``fori_loop`` with static bounds), where its loop-invariant residual hoisting inlines
the custom_jvp function in the primal loop (see ``jax_documented_custom_jvp`` in
``test_differential_programs.py``, which runs JAX with that inlining off).  These tests check against closed-form math and
against JAX where JAX obeys its documented rule (no scan, or forward-over-forward).
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp

X = np.array([0.3, -0.7, 1.1], np.float32)


def _make(api, np_, lax):
    @api.custom_jvp
    def f(x):
        return np_.sin(x) * 0.5 + x * 0.3

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        # deliberately not f's true derivative (0.5 cos + 0.3): the rule must be used
        return f(x), (np_.cos(x) * 0.5 + 0.4) * t

    return {
        "python": lambda h: f(f(h)).sum(),
        "scan": lambda h: lax.scan(lambda c, _: (f(c), None), h, None, length=2)[0].sum(),
        "fori": lambda h: lax.fori_loop(0, 2, lambda i, c: f(c), h).sum(),
        "scan_unrolled": lambda h: lax.scan(lambda c, _: (f(c), None), h, None, length=2,
                                            unroll=True)[0].sum(),
        "cond": lambda h: lax.cond(h.sum() > 0, lambda v: f(f(v)), lambda v: f(f(v)),
                                   h).sum(),
        "checkpoint_scan": lambda h: api.checkpoint(
            lambda v: lax.scan(lambda c, _: (f(c), None), v, None, length=2)[0])(h).sum(),
        "checkpoint_saving_scan": lambda h: api.checkpoint(
            lambda v: lax.scan(lambda c, _: (f(c), None), v, None, length=2)[0],
            policy=api.checkpoint_policies.everything_saveable)(h).sum(),
    }


def _hessian_diag_math(x):
    """d2/dx2 of f(f(x)) with f' := the rule's 0.5 cos x + 0.4, f'' := its derivative."""
    x = x.astype(np.float64)
    f = np.sin(x) * 0.5 + 0.3 * x
    d1 = lambda u: 0.5 * np.cos(u) + 0.4      # noqa: E731
    d2 = lambda u: -0.5 * np.sin(u)           # noqa: E731
    return d2(f) * d1(x) ** 2 + d1(f) * d2(x)


XF = _make(xform, xnp, xform.lax)
JX = _make(jax, jnp, jax.lax)


def _second_order(api, g):
    """stack name -> thunk giving the diagonal of the second derivative (JAX's run under
    one jit: same semantics, one compile instead of many eager dispatches)."""
    stacks = {
        "hessian": lambda x: jnp_diag(api, api.hessian(g)(x)),
        "grad(grad)": lambda x: api.grad(lambda h: api.grad(g)(h).sum())(x),
        "jvp(grad)": lambda x: api.jvp(api.grad(g), (x,), (x * 0 + 1,))[1],
        "jacfwd(jacfwd)": lambda x: jnp_diag(api, api.jacfwd(api.jacfwd(g))(x)),
        "jacrev(jacrev)": lambda x: jnp_diag(api, api.jacrev(api.jacrev(g))(x)),
    }
    if api is xform:
        stacks["jit(hessian)"] = lambda x: jnp_diag(api, xform.jit(api.hessian(g))(x))
        return {k: (lambda fn=fn: np.asarray(fn(X))) for k, fn in stacks.items()}
    return {k: (lambda fn=fn: np.asarray(jax.jit(fn)(X))) for k, fn in stacks.items()}


def jnp_diag(api, m):
    return (xnp if api is xform else jnp).diag(m)


@pytest.mark.parametrize("prog", sorted(XF))
def test_second_order_uses_the_rule_at_every_order(prog):
    want = _hessian_diag_math(X)
    for stack, fn in _second_order(xform, XF[prog]).items():
        np.testing.assert_allclose(np.asarray(fn()), want, rtol=2e-5, atol=1e-6,
                                   err_msg=f"{prog} {stack}")


@pytest.mark.parametrize("prog", ["python", "cond"])
def test_second_order_matches_jax_outside_scan(prog):
    got, want = _second_order(xform, XF[prog]), _second_order(jax, JX[prog])
    for stack in want:
        np.testing.assert_allclose(got[stack](), want[stack](), rtol=2e-5, atol=1e-6,
                                   err_msg=stack)


def test_scan_matches_jax_forward_over_forward_and_its_python_loop():
    """JAX's own forward-over-forward of the scan, and its reverse-then-forward of the same
    loop written in Python, both give xform's value for every stack."""
    want_ff = _second_order(jax, JX["scan"])["jacfwd(jacfwd)"]()
    want_py = _second_order(jax, JX["python"])["hessian"]()
    np.testing.assert_allclose(want_ff, want_py, rtol=2e-5)
    for stack, fn in _second_order(xform, XF["scan"]).items():
        np.testing.assert_allclose(np.asarray(fn()), want_py, rtol=2e-5, atol=1e-6,
                                   err_msg=stack)


def test_scan_matches_jax_keeping_the_rule_in_partial_eval():
    from test_differential_programs import jax_documented_custom_jvp
    for prog in ("scan", "fori", "checkpoint_scan", "checkpoint_saving_scan"):
        got = _second_order(xform, XF[prog])
        with jax_documented_custom_jvp():
            want = {k: np.asarray(v()) for k, v in _second_order(jax, JX[prog]).items()}
        for stack in want:
            np.testing.assert_allclose(got[stack](), want[stack], rtol=2e-5,
                                       atol=1e-6, err_msg=f"{prog} {stack}")


def test_custom_vjp_in_scan_second_order_matches_jax():
    def make(api, np_, lax):
        @api.custom_vjp
        def v(x):
            return np_.tanh(x)
        v.defvjp(lambda x: (np_.tanh(x), (np_.tanh(x),)),
                 lambda r, ct: ((1 - r[0] ** 2) * ct * 0.9,))
        return lambda h: lax.scan(lambda c, x: (v(c * x), v(c)), h,
                                  np_.array([1.0, 0.5], np_.float32))[1].sum()
    g, gj = make(xform, xnp, xform.lax), make(jax, jnp, jax.lax)
    for stack in ("grad(grad)", "jacrev(jacrev)"):
        np.testing.assert_allclose(np.asarray(_second_order(xform, g)[stack]()),
                                   np.asarray(_second_order(jax, gj)[stack]()), rtol=2e-5,
                                   atol=1e-6, err_msg=stack)

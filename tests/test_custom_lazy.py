"""custom_jvp / custom_vjp are lazy, as in JAX: the primal function runs only where it
is needed.

Under eager grad/jvp/vjp/linearize only the rules run, on concrete primals, so a primal
body (or rule) with Python control flow on values works there; under jit, vmap and
jit(grad) -- where JAX traces the primal too -- such a body fails with a concretization
error, in both.  Each case runs the same code with ``xform`` and with ``jax`` and
compares the values, or that both fail; the side-effect logs of JAX's custom-derivatives
tutorial ("called f!", "called f_jvp!") must match JAX's call for call.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform import errors as xerrors

F32 = np.float32


def _run(thunk):
    try:
        return np.asarray(thunk()), None
    except Exception as e:  # noqa: BLE001  (the failure is the result)
        return None, e


def _same(make, contexts, *args):
    """``make(api, np) -> f``; every context ``ctx(api, f) -> thunk`` gives JAX's result in
    xform (value, or a concretization error where JAX raises one)."""
    for name, ctx in contexts.items():
        want, jerr = _run(ctx(jax, make(jax, jnp), *args))
        got, xerr = _run(ctx(xform, make(xform, xnp), *args))
        if jerr is not None:
            if isinstance(jerr, jax.errors.ConcretizationTypeError):
                assert isinstance(xerr, xerrors.ConcretizationTypeError), (name, xerr, jerr)
            else:   # forward mode of a custom_vjp function
                assert "forward-mode" in str(jerr), (name, jerr)
                assert isinstance(xerr, TypeError) and "forward-mode" in str(xerr), (name, xerr)
            continue
        assert xerr is None, (name, xerr)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=name)


CONTEXTS = {
    "call": lambda api, f, x: lambda: f(x),
    "grad": lambda api, f, x: lambda: api.grad(f)(x),
    "jvp": lambda api, f, x: lambda: api.jvp(f, (x,), (F32(1.5),)),
    "vjp": lambda api, f, x: lambda: api.vjp(f, x)[1](F32(1.0)),
    "linearize": lambda api, f, x: lambda: api.linearize(f, x)[1](F32(2.0)),
    "grad(grad)": lambda api, f, x: lambda: api.grad(api.grad(f))(x),
    "jit": lambda api, f, x: lambda: api.jit(f)(x),
    "vmap": lambda api, f, x: lambda: api.vmap(f)(np.array([x, -x], F32)),
    "jit(grad)": lambda api, f, x: lambda: api.jit(api.grad(f))(x),
    "vmap(grad)": lambda api, f, x: lambda: api.vmap(api.grad(f))(np.array([x, -x], F32)),
    "grad(jit)": lambda api, f, x: lambda: api.grad(api.jit(f))(x),
}


def _tutorial_control_flow(api, np_):
    """JAX's tutorial: "You can use Python control flow with jax.custom_jvp"."""
    @api.custom_jvp
    def f(x):
        if x > 0:
            return np_.sin(x)
        else:
            return np_.cos(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        x, = primals
        x_dot, = tangents
        ans = f(x)
        if x > 0:
            return ans, 2 * x_dot
        else:
            return ans, 3 * x_dot
    return f


def _control_flow_primal_only(api, np_):
    """Control flow in the primal only; the rule never calls it (so under jit(grad)
    nothing traces the primal, in JAX either)."""
    @api.custom_jvp
    def f(x):
        return np_.sin(x) if x > 0 else np_.cos(x) * 2.0

    @f.defjvp
    def f_jvp(primals, tangents):
        x, = primals
        t, = tangents
        return np_.where(x > 0, np_.sin(x), np_.cos(x) * 2.0), 5.0 * x * t
    return f


def _custom_vjp_control_flow(api, np_):
    @api.custom_vjp
    def f(x):
        if x > 0:
            return np_.sin(x)
        return np_.cos(x)

    def fwd(x):
        return f(x), (x, x > 0)

    def bwd(res, g):
        x, pos = res
        if pos:
            return (2.0 * g * x,)
        return (3.0 * g,)
    f.defvjp(fwd, bwd)
    return f


@pytest.mark.parametrize("x", [F32(1.0), F32(-1.0)])
def test_tutorial_python_control_flow(x):
    _same(_tutorial_control_flow, CONTEXTS, x)


@pytest.mark.parametrize("x", [F32(0.7), F32(-0.4)])
def test_control_flow_in_primal_only(x):
    _same(_control_flow_primal_only, CONTEXTS, x)


@pytest.mark.parametrize("x", [F32(0.7), F32(-0.4)])
def test_custom_vjp_python_control_flow(x):
    _same(_custom_vjp_control_flow, CONTEXTS, x)


def test_tutorial_primal_control_flow_values():
    """The tutorial's printed values (grad(f)(1.) = 2., grad(f)(-1.) = 3.)."""
    f = _tutorial_control_flow(xform, xnp)
    assert float(xform.grad(f)(1.)) == 2.0
    assert float(xform.grad(f)(-1.)) == 3.0


# ----------------------------------------------------------------- side effects


def _logged_jvp(api, np_, log):
    @api.custom_jvp
    def f(x):
        log.append("f")
        return np_.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        log.append("f_jvp")
        x, = primals
        t, = tangents
        return f(x), np_.cos(x) * t
    return f


def _logged_vjp(api, np_, log):
    @api.custom_vjp
    def f(x):
        log.append("f")
        return np_.sin(x)

    def f_fwd(x):
        log.append("f_fwd")
        return f(x), np_.cos(x)

    def f_bwd(cos_x, y_bar):
        log.append("f_bwd")
        return (cos_x * y_bar,)
    f.defvjp(f_fwd, f_bwd)
    return f


LOG_CONTEXTS = {
    "call": lambda api, f: f(F32(3.0)),
    "vmap": lambda api, f: api.vmap(f)(np.arange(3, dtype=F32)),
    "jit": lambda api, f: api.jit(f)(F32(3.0)),
    "grad": lambda api, f: api.grad(f)(F32(3.0)),
    "vjp": lambda api, f: api.vjp(f, F32(3.0))[1](F32(1.0)),
    "grad(grad)": lambda api, f: api.grad(api.grad(f))(F32(3.0)),
}


@pytest.mark.parametrize("make", [_logged_jvp, _logged_vjp])
def test_tutorial_side_effects_match_jax(make):
    """Which of f / its rules run, how often and in what order, is JAX's."""
    contexts = dict(LOG_CONTEXTS)
    if make is _logged_jvp:
        contexts["jvp"] = lambda api, f: api.jvp(f, (F32(3.0),), (F32(1.0),))
    for name, ctx in contexts.items():
        jlog, xlog = [], []
        want, jerr = _run(lambda: ctx(jax, make(jax, jnp, jlog)))
        got, xerr = _run(lambda: ctx(xform, make(xform, xnp, xlog)))
        assert (jerr is None) == (xerr is None), (name, jerr, xerr)
        assert xlog == jlog, name
        if want is not None:
            for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)

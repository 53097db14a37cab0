"""Derivatives found wrong or missing by running JAX's own ``lax_autodiff_test.py``
against xform (tools/jax_tests), each compared with real JAX or finite differences."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xform
import xform.numpy as xnp
from xform import lax
from xform.testing import check_grads


# ---------------------------------------------------------------- x ** n, traced integer n

@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("x", [0.0, 1.5, -2.0])
def test_power_with_traced_integer_exponent_differentiable_at_zero(x, n):
    # jnp.power binds pow with the integer exponent unpromoted, so d/dx x**0 is 0 at x = 0
    def f(lib):
        return lib.jit(lambda x, n: x ** n)
    assert float(xform.grad(f(xform))(x, n)) == pytest.approx(float(jax.grad(f(jax))(x, n)))
    if x != 0.0:   # at 0 JAX's second derivative is NaN for n = 0, 1 (x ** -1 at 0 times 0)
        g2 = float(xform.grad(xform.grad(f(xform)))(x, n))
        assert g2 == pytest.approx(float(jax.grad(jax.grad(f(jax)))(x, n)))


@pytest.mark.parametrize("base, exp", [
    (2.0, np.arange(3, dtype=np.int32)),
    (np.ones(3, np.float32), np.arange(3, dtype=np.int32)),
    (np.ones((2, 1), np.float32), np.arange(3, dtype=np.int8)),
    (np.float32(2), np.arange(3, dtype=np.uint8)),
])
def test_power_inexact_base_integer_exponent_matches_jax(base, exp):
    got = xnp.power(base, xnp.asarray(exp))
    want = jnp.power(base, jnp.asarray(exp))
    assert (got.dtype, got.weak_type, got.shape) == (want.dtype, want.weak_type, want.shape)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))
    jp = xform.make_jaxpr(xnp.power)(base, exp).eqns[-1].primitive.name
    assert jp == jax.make_jaxpr(jnp.power)(base, exp).eqns[-1].primitive.name == "pow"


@settings(max_examples=25, deadline=None)
@given(st.floats(-3, 3).filter(lambda v: abs(v) > 0.05), st.integers(-3, 4))
def test_power_integer_exponent_gradients_by_finite_differences(x, n):
    check_grads(lambda x: xnp.power(x, xnp.asarray(np.int32(n))), (np.float32(x),), order=2,
                modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)

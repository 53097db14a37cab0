"""float0 (the tangent type of integer and bool values) through compiled programs: as
program inputs and outputs, as literals and as loop carries, compared with JAX."""
import jax
import jax.numpy as jnp
import numpy as np

import xform
import xform.numpy as xnp
from xform import lax as xlax


def _same_float0(a, b):
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    assert a.dtype == xform.dtypes.float0 and b.dtype == jax.dtypes.float0
    assert a.shape == b.shape


def test_jit_of_grad_with_integer_argument():
    f = lambda x, y: x * 2.0 + y
    got = xform.jit(xform.grad(f, argnums=(0, 1), allow_int=True))(1.0, 2)
    want = jax.jit(jax.grad(f, argnums=(0, 1), allow_int=True))(1.0, 2)
    np.testing.assert_allclose(got[0], want[0])
    _same_float0(got[1], want[1])


def test_float0_program_input_and_output():
    z = np.zeros((2, 3), xform.dtypes.float0)
    got = xform.jit(lambda t, x: (t, x * 2))(z, 1.0)
    want = jax.jit(lambda t, x: (t, x * 2))(np.zeros((2, 3), jax.dtypes.float0), 1.0)
    _same_float0(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1])
    # a second call takes the cached program
    _same_float0(xform.jit(lambda t, x: (t, x * 2))(z, 3.0)[0], want[0])


def _scan_vjp(lib, lax, jnp_):
    def f(carry, x):
        c1, c2 = carry
        return (c1 + 1, c2 - 1), 2 * x + c1

    def run(init, xs):
        final, ys = lax.scan(f, init, xs)
        return ys, final

    @lib.jit
    def g(init, xs):
        _, vjp_fn, _ = lib.vjp(run, init, xs, has_aux=True)
        return vjp_fn(jnp_.arange(4.0) + 1)
    return g((0, 2), jnp_.arange(4.0))


def test_vjp_of_scan_with_integer_carry_under_jit():
    # the transpose of the scan carries float0 cotangents for the integer carries
    (gi, gj), gx = _scan_vjp(xform, xlax, xnp)
    (wi, wj), wx = _scan_vjp(jax, jax.lax, jnp)
    _same_float0(gi, wi)
    _same_float0(gj, wj)
    np.testing.assert_allclose(gx, wx)


def test_float0_scan_carry_and_cond_under_jit():
    def body(lib, np_):
        def step(c, x):
            return c, x + 1.0
        def f(x):
            t = np_.zeros((3,), lib.dtypes.float0)
            c, ys = lib.lax.scan(step, t, x)
            c2 = lib.lax.cond(x[0] > 0, lambda: c, lambda: c)
            return c2, ys
        return lib.jit(f)
    got = body(xform, np)(np.arange(4.0, dtype=np.float32))
    want = body(jax, np)(np.arange(4.0, dtype=np.float32))
    _same_float0(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1])

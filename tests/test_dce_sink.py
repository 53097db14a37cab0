"""lax.dce_sink: keeps its operand's computation alive; prints and transforms as JAX's."""
import numpy as np

import jax
import xform
import xform.numpy as xnp
from xform._src.interpreters import passes


def _f(lax_, np_):
    def f(x):
        y = np_.sin(x)
        lax_.dce_sink({"y": y})
        unused = np_.cos(x)  # noqa: F841
        return x * 2
    return f


def test_jaxpr_matches_jax_and_survives_dce():
    x = np.ones(3, np.float32)
    got = xform.make_jaxpr(_f(xform.lax, xnp))(x)
    want = jax.make_jaxpr(_f(jax.lax, jax.numpy))(x)
    assert str(got) == str(want)
    assert xform.lax.dce_sink_p in [e.primitive for e in got.eqns]
    pruned = passes.dce_jaxpr(got.jaxpr)
    pruned = pruned[0] if isinstance(pruned, tuple) else pruned
    prims = [e.primitive.name for e in pruned.eqns]
    assert prims == ["sin", "dce_sink", "mul"], prims


def test_transformations():
    x = np.arange(3.0, dtype=np.float32)
    f = _f(xform.lax, xnp)
    np.testing.assert_array_equal(np.asarray(xform.jit(f)(x)), 2 * x)
    np.testing.assert_array_equal(np.asarray(xform.grad(lambda v: f(v).sum())(x)), 2.0)
    np.testing.assert_array_equal(np.asarray(xform.vmap(f)(np.stack([x, x]))), 2 * np.stack([x, x]))
    _, t = xform.jvp(f, (x,), (x,))
    np.testing.assert_array_equal(np.asarray(t), 2 * x)
    assert xform.lax.dce_sink(x, prevent_mlir_dce=True) is None

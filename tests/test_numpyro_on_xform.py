"""What numpyro's (and TensorFlow Probability's JAX substrate's) own tests found: each
behaviour compared with real JAX, either directly or by running the same code under the
alias in another process (the alias and real JAX cannot share one)."""
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import xform

ROOT = Path(__file__).parents[1]


def _run_aliased(code, timeout=600):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", "import xform; xform.compat.alias_jax()\n"
                           + code], cwd=str(ROOT), capture_output=True, text=True,
                          timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_pytype_aval_mappings_and_xla_canonicalize_handlers_as_in_jax():
    """``jax.core.pytype_aval_mappings`` (deprecated) and
    ``jax.interpreters.xla.canonicalize_dtype_handlers``: the tables libraries extend with
    their own array types (TensorFlow Probability registers its ``NumpyVariable``)."""
    import jax
    import jax.interpreters.xla as jxla
    from xform.interpreters import xla

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        jmap = jax.core.pytype_aval_mappings
        xmap = xform.core.pytype_aval_mappings

    class Box:   # an array-like type JAX does not know until registered
        def __init__(self, v):
            self.v = np.asarray(v, np.float32)
    xmap[Box] = lambda b: xmap[np.ndarray](b.v)
    try:
        for t in (np.ndarray, np.float32, np.int64, float, int, bool, complex):
            x = np.ones((2, 3), np.float64) if t is np.ndarray else t(1)
            want, got = jmap[t](x), xmap[t](x)
            assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype,
                                                             want.weak_type), t
        assert xform.typeof(Box([1.0, 2.0])) == xform.core.ShapedArray((2,), np.float32)
    finally:
        del xmap[Box]
    for t in (np.ndarray, np.float64, int, float):
        assert t in xla.canonicalize_dtype_handlers   # (JAX's is a mapping without `in`)
        x = t(2) if t is not np.ndarray else np.arange(3.0)
        want = np.asarray(jxla.canonicalize_dtype_handlers[t](x))
        got = xla.canonicalize_dtype_handlers[t](x)
        assert got.dtype == want.dtype and np.array_equal(got, want), t
    args = (np.float32(0.5), np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(xla.apply_primitive(xform.lax.add_p, *args),
                                  jxla.apply_primitive(jax.lax.add_p, *args))


def test_tensorflow_probability_jax_substrate_imports_and_runs_under_the_alias():
    """numpyro's ``StudentT.icdf`` and its ``contrib.tfp`` use TFP's JAX substrate, which
    registers its ``NumpyVariable`` in ``jax.interpreters.xla`` and ``jax.core`` at import."""
    pytest.importorskip("tensorflow_probability")
    code = '''
import json
import jax.numpy as jnp
from tensorflow_probability.substrates import jax as tfp
print(json.dumps([float(tfp.distributions.StudentT(3., 0., 1.).log_prob(1.0)),
                  float(tfp.math.betaincinv(2., 3., 0.3)),
                  float(jnp.sum(tfp.bijectors.Softplus().forward(jnp.arange(3.0))))]))
'''
    got = _run_aliased(code)
    from tensorflow_probability.substrates import jax as tfp
    import jax.numpy as jnp
    want = [float(tfp.distributions.StudentT(3., 0., 1.).log_prob(1.0)),
            float(tfp.math.betaincinv(2., 3., 0.3)),
            float(jnp.sum(tfp.bijectors.Softplus().forward(jnp.arange(3.0))))]
    np.testing.assert_allclose(got, want, rtol=2e-6)


def test_eager_loops_run_compiled_with_xlas_numerics():
    """An eager ``fori_loop``/``while_loop``/``scan`` on concrete values runs as one compiled
    program, as in JAX: thousands of iterations of a body (numpyro's tests run an SVI step
    10000 times in an eager ``fori_loop``) take no longer than under ``jit``, and the
    results are XLA's bits, JAX's (interpreted op by op with NumPy's ``exp``/``tanh`` they
    differ in the last bits)."""
    import jax
    import jax.numpy as jnp
    import xform.numpy as xnp

    def body(np_, i, c):
        return np_.tanh(np_.exp(c * 0.3) - 1.0) * 0.9 + 0.01 * i

    x = np.linspace(-2.0, 2.0, 7, dtype=np.float32)
    want = jax.lax.fori_loop(0, 20000, lambda i, c: body(jnp, i, c), x)
    got = xform.lax.fori_loop(0, 20000, lambda i, c: body(xnp, i, c), x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.dtype == want.dtype and got.weak_type == want.weak_type

    def wbody(np_, c):
        return c[0] + 1, np_.exp(np_.sin(c[1])) * 0.7
    want = jax.lax.while_loop(lambda c: c[0] < 5000, lambda c: wbody(jnp, c), (0, x))
    got = xform.lax.while_loop(lambda c: c[0] < 5000, lambda c: wbody(xnp, c), (0, x))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        assert g.dtype == w.dtype and g.weak_type == w.weak_type

    def sbody(np_, c, xs):
        return np_.log1p(np_.exp(c * xs)), np_.expm1(c)
    xs = np.linspace(0.1, 1.0, 3000, dtype=np.float32)
    want = jax.lax.scan(lambda c, v: sbody(jnp, c, v), np.float32(0.5), xs)
    got = xform.lax.scan(lambda c, v: sbody(xnp, c, v), np.float32(0.5), xs)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    # what cannot run compiled is interpreted, with the same results as before
    with xform.disable_jit():
        got = xform.lax.fori_loop(0, 50, lambda i, c: body(xnp, i, c), x)
    want = jax.lax.fori_loop(0, 50, lambda i, c: body(jnp, i, c), x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)

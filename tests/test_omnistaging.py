"""Omnistaging: creation functions stage iota/broadcast equations while tracing.

Inside ``jit``/``make_jaxpr`` nothing is computed on the host: ``jnp.zeros``, ``eye``,
``arange``... become equations (as JAX's jaxprs show), so programs carry no
constants and a trace allocates no big host buffers.
"""
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp

# name -> f(np_module, x) creating arrays inside a traced function
CREATORS = {
    "zeros": lambda m, x: m.zeros((3, 3)) + x,
    "ones_int": lambda m, x: m.ones((2, 4), m.int32) * 2 + x,
    "full": lambda m, x: m.full((2,), 7) * x,
    "empty": lambda m, x: m.empty((2, 2)) * 0 + x,
    "zeros_like": lambda m, x: m.zeros_like(m.ones((2, 3))) + x,
    "ones_like_weak": lambda m, x: m.ones_like(x) + x,
    "full_like": lambda m, x: m.full_like(m.ones(3), 2.5) * x,
    "arange_stop": lambda m, x: m.arange(3.0) * x,
    "arange_int": lambda m, x: m.arange(1, 10, 2) * x,
    "arange_neg_step": lambda m, x: m.arange(10, 1, -3) * x,
    "arange_dtype": lambda m, x: m.arange(5, dtype=m.int32) + x,
    "linspace": lambda m, x: m.linspace(0, 1, 5) * x,
    "linspace_noend": lambda m, x: m.linspace(-2.0, 3.0, 7, endpoint=False) * x,
    "eye": lambda m, x: m.eye(3) * x,
    "eye_rect_k": lambda m, x: m.eye(3, 5, k=1) * x,
    "eye_neg_k": lambda m, x: m.eye(4, k=-2) * x,
    "identity": lambda m, x: m.identity(2) * x,
    "tri": lambda m, x: m.tri(3, 4, -1) * x,
    "tril": lambda m, x: m.tril(m.ones((3, 3))) * x,
    "triu": lambda m, x: m.triu(m.ones((3, 4)), 1) * x,
    "meshgrid": lambda m, x: m.meshgrid(m.arange(2), m.arange(3))[0] * x,
    "diag": lambda m, x: m.diag(m.arange(3.0), 1) * x,
}


@pytest.mark.parametrize("name", sorted(CREATORS))
def test_traced_creation_has_no_constants_and_matches_jax(name):
    f = CREATORS[name]
    closed = xform.make_jaxpr(lambda x: f(xnp, x))(1.5)
    assert closed.consts == [] and closed.jaxpr.constvars == [], str(closed)
    got = xform.jit(lambda x: f(xnp, x))(1.5)
    want = jax.jit(lambda x: f(jnp, x))(1.5)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    eager = f(xnp, 1.5)     # the NumPy path gives the same values (XLA may contract a*b+c
    # into one FMA where NumPy rounds twice: a few ulp of the endpoints (|3|*1.5) for linspace)
    np.testing.assert_allclose(np.asarray(eager), np.asarray(want), rtol=4 * 1.2e-7,
                               atol=4 * 1.2e-7 * 4.5)


def test_creation_under_grad_and_vmap():
    g = lambda m, api: api.grad(lambda x: (m.eye(3) * x + m.arange(3.0)).sum())(2.0)  # noqa
    assert float(g(xnp, xform)) == float(g(jnp, jax))
    v = lambda m, api: api.vmap(lambda x: m.tril(m.ones((3, 3))) * x)(m.arange(4.0))  # noqa
    np.testing.assert_array_equal(np.asarray(v(xnp, xform)), np.asarray(v(jnp, jax)))


TRACE_BIG = r"""
import resource, sys
import xform, xform.numpy as xnp
xform.make_jaxpr(lambda x: xnp.zeros((8, 8)) + x)(1.0)       # warm up imports and caches
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
n = 4096
def f(x):
    buf = xnp.zeros((n, n)) + x
    mask = xnp.tril(xnp.ones((n, n)))
    return buf * mask + xnp.eye(n) + xnp.arange(n * n).reshape(n, n)
lowered = xform.jit(f).lower(1.0)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) // 1024)   # MiB (ru_maxrss is KiB on Linux)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss units are Linux's")
def test_tracing_a_big_buffer_allocates_nothing_on_the_host():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", TRACE_BIG], cwd=root, capture_output=True,
                         text=True, timeout=120, env=dict(os.environ, PYTHONPATH=root))
    assert out.returncode == 0, out.stderr
    grown_mib = int(out.stdout.strip().splitlines()[-1])
    # Four 4096x4096 arrays would be >= 256 MiB on the host; staged, tracing and
    # lowering need only a few MiB.
    assert grown_mib < 32, grown_mib

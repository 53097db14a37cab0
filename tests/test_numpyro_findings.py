"""Behaviours found by running numpyro's own test suite on xform
(tools/library_tests/run.py numpyro), each written in plain xform API and compared with
real JAX in the same process."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp


@pytest.mark.parametrize("lib,n", [(jax, jnp), (xform, xnp)], ids=["jax", "xform"])
def test_jit_with_key_argument_keeps_weak_types(lib, n):
    # numpyro's SVI step counter: a weakly typed int32 next to a PRNG key in the state;
    # a program over keys is compiled over their words, and re-tracing it must keep the
    # literal `1` of `i + 1` weak, or the next step's argument types differ and the
    # step function is traced (and its warnings issued) again.
    i = n.array(0)
    k = lib.random.key(0)
    out = lib.jit(lambda i, k: (i + 1, lib.random.split(k)[0]))(i, k)
    out2 = lib.jit(lambda i: (lib.random.normal(lib.random.key(1)), i * 2))(i)
    assert out[0].weak_type is True and out2[1].weak_type is True


def test_jit_with_key_argument_weak_types_match_jax():
    def f(lib, n):
        i = n.array(3)
        return lib.jit(lambda i, x, k: (i + 1, x * 2.0, i.astype(n.float32) + 1.5))(
            i, n.float32(1.0), lib.random.key(0))
    ours, theirs = f(xform, xnp), f(jax, jnp)
    assert [o.weak_type for o in ours] == [t.weak_type for t in theirs]
    assert [o.dtype for o in ours] == [t.dtype for t in theirs]
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(o), np.asarray(t))

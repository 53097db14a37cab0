"""debug.breakpoint driven by a scripted stdin, compared with JAX's text debugger."""
import io

import numpy as np
import pytest

import jax
import jax.numpy as jnp
import xform
import xform.numpy as xnp


def _session(mod, np_, use_jit, script):
    out = io.StringIO()

    def f(x):
        y = x * 2 + np_.ones_like(x)
        k = 7  # noqa: F841
        mod.debug.breakpoint(stdin=io.StringIO(script), stdout=out)
        return y + 1

    g = mod.jit(f) if use_jit else f
    r = g(np.arange(3.0, dtype=np.float32))
    np.asarray(r)
    if mod is jax:
        jax.effects_barrier()
    else:
        xform.effects_barrier()
    return out.getvalue(), np.asarray(r)


SCRIPT = "p k\np y\npp y.shape\np nope\nw\nu\nd\nd\nc\n"


@pytest.mark.parametrize("use_jit", [False, True])
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_breakpoint_session_matches_jax(use_jit):
    # both from one line, so the captured caller frames are the same
    (got, rx), (want, rj) = [_session(m, n, use_jit, SCRIPT) for m, n in ((xform, xnp), (jax, jnp))]
    assert got == want
    assert "Array([1., 3., 5.], dtype=float32)" in got
    np.testing.assert_array_equal(rx, rj)


def test_breakpoint_runs_at_each_execution_under_jit_and_quits():
    out, script = io.StringIO(), io.StringIO("p x.sum()\nc\n" * 2)   # one session per run
    calls = []

    @xform.jit
    def f(x):
        xform.debug.breakpoint(stdin=script, stdout=out)
        calls.append(1)
        return x

    f(np.ones(2, np.float32))
    f(np.ones(2, np.float32) * 3)
    xform.effects_barrier()
    assert len(calls) == 1                       # traced once ...
    assert out.getvalue().count("Array(") == 2   # ... stopped at both runs
    assert "Array(6., dtype=float32)" in out.getvalue()
    with pytest.raises(SystemExit):
        xform.debug.breakpoint(stdin=io.StringIO("q\n"), stdout=io.StringIO())
    with pytest.raises(TypeError, match="unexpected keyword"):
        xform.debug.breakpoint(colour=True)

"""Fault injection: absurd shapes, deep pytrees, corrupted checkpoint archives and export
artifacts, concurrent writers, killed writers, Ctrl-C during the first jit, threads still
dispatching at interpreter exit.  What each promise is: docs/reliability.md.

Anything that could take the process down (an abort in XLA, a signal, interpreter exit)
runs in a fresh interpreter, so a regression fails one test instead of the whole run.
The big random sweeps are ``@pytest.mark.slow``.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import xform
import xform.numpy as jnp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_python(code, *, timeout=300, env=None):
    """Run ``code`` in a fresh interpreter with this checkout first on ``sys.path``."""
    e = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.pop("XLA_FLAGS", None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=e,
                          capture_output=True, text=True, timeout=timeout)


def lines_of(p):
    """The ``RESULT ...`` lines a child printed, failing with its stderr when it crashed."""
    out = [ln[7:] for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0, (f"the child exited with {p.returncode}:\n{p.stdout[-3000:]}\n"
                               f"{p.stderr[-3000:]}")
    return out


# ----------------------------------------------------------------- absurd shapes

_HUGE_SHAPES = {
    # name: (function of no arguments building the shape under a trace)
    "ones": "lambda: jnp.ones((2**40, 2**40))",
    "broadcast": "lambda: jnp.broadcast_to(jnp.float32(1), (2**40, 2**40))",
    "iota_past_int64": "lambda: lax.iota(np.int32, 2**64)",
    "bytes_overflow": "lambda: jnp.ones((2**30, 2**30, 4), jnp.float32)",
    "tile": "lambda: jnp.tile(jnp.ones(1), (2**40, 2**40))",
    "pad": "lambda: lax.pad(jnp.ones((1, 1)), 0.0, [(0, 2**62, 0), (0, 2**62, 0)])",
}


def test_shapes_overflowing_int64_are_refused_under_every_trace():
    """Element counts or byte sizes past int64 raise ValueError from the shape rules under
    eager evaluation, jit, vmap, eval_shape and make_jaxpr: never an abort inside XLA."""
    code = """
        import numpy as np, xform, xform.numpy as jnp
        from xform import lax
        cases = {%s}
        traces = {
            "jit": lambda f: xform.jit(f)(),
            "eval_shape": lambda f: xform.eval_shape(f),
            "make_jaxpr": lambda f: xform.make_jaxpr(f)(),
            "vmap": lambda f: xform.vmap(lambda _: f())(np.zeros(2)),
            "grad": lambda f: xform.grad(lambda s: (f() * s).sum())(1.0),
        }
        for name, f in cases.items():
            for t, run in traces.items():
                try:
                    run(f)
                    r = "no error"
                except ValueError as e:
                    r = "ValueError" if "too large" in str(e) or "too big" in str(e) else repr(e)
                except Exception as e:
                    r = repr(e)[:200]
                print("RESULT", name, t, r, flush=True)
    """ % ", ".join(f"{k!r}: {v}" for k, v in _HUGE_SHAPES.items())
    got = lines_of(run_python(code))
    assert len(got) == 5 * len(_HUGE_SHAPES)
    bad = [ln for ln in got if not ln.endswith(" ValueError")]
    assert not bad, bad


def test_huge_shape_message_names_shape_and_dtype():
    with pytest.raises(ValueError, match=r"\(2147483648, 2147483648\) with dtype float32"):
        xform.eval_shape(lambda: jnp.ones((2**31, 2**31), jnp.float32))
    with pytest.raises(ValueError, match="too large"):
        xform.ShapeDtypeStruct  # noqa: B018  (the public spelling)
        xform.jit(lambda a: a).lower(xform.ShapeDtypeStruct((2**40, 2**40), np.float32))
    # eager NumPy-backed creation refuses too (NumPy's own ValueError)
    with pytest.raises(ValueError):
        jnp.zeros((2**40, 2**40))
    # the largest legal shapes still trace: 2**31 elements of 8 bytes, zero-size giants
    assert xform.eval_shape(lambda: jnp.ones((2**31,), jnp.float32)).shape == (2**31,)
    assert xform.eval_shape(lambda: jnp.ones((0, 2**62))).shape == (0, 2**62)


@pytest.mark.parametrize("limit", [None, 60000])
def test_deep_pytrees_raise_recursion_error_or_work(limit):
    """Depth-5000 lists, dicts and tuples through the tree utilities and the transforms:
    RecursionError (default limit) or a result (raised limit), never a crash."""
    code = f"""
        import sys, numpy as np, xform, xform.numpy as jnp
        from xform import tree_util as tu
        if {limit!r}:
            sys.setrecursionlimit({limit!r})
        for kind in ("list", "dict", "tuple"):
            t = np.float32(1.0)
            for _ in range(5000):
                t = [t] if kind == "list" else ({{"a": t}} if kind == "dict" else (t,))
            uses = {{
                "flatten": lambda: tu.tree_flatten(t), "map": lambda: tu.tree_map(lambda x: x, t),
                "structure": lambda: str(tu.tree_structure(t)),
                "jit": lambda: xform.jit(lambda z: z)(t),
                "grad": lambda: xform.grad(lambda z: jnp.sum(tu.tree_leaves(z)[0]))(t),
                "eval_shape": lambda: xform.eval_shape(lambda z: z, t),
                "device_put": lambda: xform.device_put(t),
                "with_path": lambda: tu.tree_flatten_with_path(t),
            }}
            for name, use in uses.items():
                try:
                    use()
                    r = "ok"
                except RecursionError:
                    r = "RecursionError"
                except Exception as e:
                    r = repr(e)[:200]
                print("RESULT", kind, name, r, flush=True)
    """
    got = lines_of(run_python(code))
    assert len(got) == 24
    bad = [ln for ln in got if not ln.endswith((" ok", " RecursionError"))]
    assert not bad, bad

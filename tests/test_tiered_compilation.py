"""Tiered compilation (``xform_tiered_compilation``): the quick tier runs first, the
optimized tier compiles in a background thread and is swapped in; the persistent cache
holds only the optimized tier; each program is compiled once per tier; an interpreter
that exits during the background compile exits cleanly.

The programs here are elementwise chains, which the bit-identity study
(``benchmarks/tier_study.py``, docs/performance.md) found identical in both tiers; the
swap must then change nothing in the results."""
import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform import profile
from xform._src import lowering
from xform._src.interpreters.config import config
from xform._src.lowering import compilation_cache as pcache
from xform._src.lowering import runtime as rt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def tiered(tmp_path):
    saved = {k: config.read(k) for k in ("xform_tiered_compilation", "jax_compilation_cache_dir",
                                         "jax_persistent_cache_min_compile_time_secs")}
    config.update("jax_compilation_cache_dir", str(tmp_path))
    config.update("jax_persistent_cache_min_compile_time_secs", 0)
    config.update("xform_tiered_compilation", True)
    lowering.clear_caches()
    yield tmp_path
    for k, v in saved.items():
        config.update(k, v)


def chain(seed, n=40):
    ops = [random.Random(seed).choice(("sin", "cos", "tanh", "mul", "add")) for _ in range(n)]

    def f(x, y):
        h = x
        for op in ops:
            h = h * y if op == "mul" else h + y if op == "add" else getattr(xnp, op)(h)
        return h
    return f


def entries(d):
    return sorted(p for p in os.listdir(d) if p.endswith(".xlaexe"))


def args():
    rng = np.random.default_rng(0)
    return (xform.device_put(rng.standard_normal(64).astype(np.float32)),
            xform.device_put(rng.uniform(0.5, 1.5, 64).astype(np.float32)))


def test_quick_tier_runs_first_then_the_optimized_tier_bit_identically(tiered):
    x, y = args()
    f = xform.jit(chain(1))
    first = np.asarray(f(x, y))
    info = profile.compile_tiers(f, x, y)
    assert info["compile_s"]["quick"] is not None and info["compile_s"]["quick"] > 0
    for _ in range(5):           # the generated call path is installed on the quick tier
        np.asarray(f(x, y))
    info = profile.compile_tiers(f, x, y, wait=60)
    assert info == {"tier": "optimized", "pending": False, "error": None,
                    "compile_s": {"quick": info["compile_s"]["quick"],
                                  "optimized": info["compile_s"]["optimized"]}}
    assert info["compile_s"]["optimized"] > 0
    after = np.asarray(f(x, y))
    assert first.tobytes() == after.tobytes()
    # the generated call path now runs the optimized executable
    compiled = f.lower(x, y)._entry.compiled
    assert f._fast.mono.__globals__["_ex"].__self__ is compiled._exe
    # and the result is the optimized tier's, compiled alone
    config.update("xform_tiered_compilation", False)
    lowering.clear_caches()
    ref = np.asarray(xform.jit(chain(1))(x, y))
    assert ref.tobytes() == after.tobytes()


def test_persistent_cache_stores_only_the_optimized_tier(tiered):
    x, y = args()
    f = xform.jit(chain(2))
    f(x, y)
    assert profile.compile_tiers(f, x, y, wait=60)["tier"] == "optimized"
    text = f.lower(x, y)._program_text()     # what the call compiled (as_text pretty-prints)
    dev = rt._default_device()
    keys = {tier: pcache.cache_key(text, rt._compile_options(dev, tier).SerializeAsString(),
                                   (False, False), dev) for tier in ("quick", "optimized")}
    assert keys["quick"] != keys["optimized"]
    assert entries(tiered) == [keys["optimized"] + ".xlaexe"]
    # a process that finds the optimized tier on disk never compiles the quick one
    lowering.clear_caches()
    before = rt.tier_stats()["quick_compiles"]
    g = xform.jit(chain(2))
    out = np.asarray(g(x, y))
    assert rt.tier_stats()["quick_compiles"] == before
    assert profile.compile_tiers(g, x, y)["tier"] == "optimized"
    assert profile.compile_tiers(g, x, y)["compile_s"] == {"quick": None, "optimized": None}
    assert out.tobytes() == np.asarray(f(x, y)).tobytes()


def test_each_program_compiles_once_per_tier(tiered):
    x, y = args()
    misses0 = lowering.cache_info()["misses"]
    quick0 = rt.tier_stats()["quick_compiles"]
    f = xform.jit(chain(3))
    f(x, y)
    # an AOT compile of the same program while (or after) the background compile runs
    # waits for it / reuses it instead of compiling the optimized tier again
    c = xform.jit(chain(3)).lower(x, y).compile()
    np.asarray(c(x, y))
    profile.compile_tiers(f, x, y, wait=60)
    h = xform.jit(chain(3))
    h(x, y)
    assert rt.tier_stats()["quick_compiles"] - quick0 == 1
    assert lowering.cache_info()["misses"] - misses0 == 2      # one quick, one optimized
    assert len(entries(tiered)) == 1


def test_off_by_default_and_explicit_tiers():
    assert config.read("xform_tiered_compilation") is False
    x, y = args()
    f = xform.jit(chain(4))
    f(x, y)
    assert profile.compile_tiers(f, x, y)["tier"] == "optimized"
    with pytest.raises(ValueError, match="unknown compilation tier"):
        rt._compile_options(rt._default_device(), "fastest")
    with pytest.raises(TypeError, match="xform.jit"):
        profile.compile_tiers(chain(4), x, y)


EXIT_SCRIPT = textwrap.dedent(r"""
    import sys, time, numpy as np
    import xform, xform.numpy as xnp
    from xform._src.interpreters.config import config
    from xform._src.lowering import runtime as rt
    config.update("jax_compilation_cache_dir", sys.argv[1])
    config.update("jax_persistent_cache_min_compile_time_secs", 0)
    config.update("xform_tiered_compilation", True)
    real = rt.compile_text
    def slow(text, device=None, donated=(), host_callbacks=(), tier="optimized"):
        if tier == "optimized":
            time.sleep(1.0)            # the optimized compile is surely running at exit
        return real(text, device, donated, host_callbacks, tier)
    rt.compile_text = slow
    def f(x):
        for _ in range(30):
            x = xnp.sin(x) * 1.01 + xnp.cos(x)
        return x
    out = xform.jit(f)(np.arange(16.0, dtype=np.float32))
    # (NumPy's sum: an eager xform sum compiles XLA's kernel, which the slowed compile
    # above would hold up until the background compile is done)
    print(float(np.asarray(out).sum()), rt.tier_stats()["background_running"], flush=True)
""")


def test_interpreter_exit_during_background_compile_is_clean(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("XLA_FLAGS", None)
    res = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, str(tmp_path)], env=env,
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "Fatal" not in res.stderr and "Abort" not in res.stderr, res.stderr[-2000:]
    value, running = res.stdout.split()
    assert np.isfinite(float(value))
    assert running == "1"                 # the compile was still running at exit ...
    assert len(entries(tmp_path)) == 1    # ... finished, and stored the optimized tier


def test_eager_device_ops_are_not_tiered(tiered):
    x, y = args()
    before = rt.tier_stats()["quick_compiles"]
    out = np.asarray(xnp.sin(x) * y + 3.5)
    assert rt.tier_stats()["quick_compiles"] == before
    want = np.asarray(xform.jit(lambda a, b: xnp.sin(a) * b + 3.5)(x, y))
    np.testing.assert_allclose(out, want, rtol=1e-6)

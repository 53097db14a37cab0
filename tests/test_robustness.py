"""Robustness: threads, bounded caches, interrupted compiles.

* 8 threads calling the same and different jitted functions (and eager/grad code)
  get the right answers, and each distinct program is traced and compiled once.
* Caches stay bounded: jitting 1,500 (10,000 in the slow run) distinct lambdas keeps the executable LRU at
  its size bound and frees per-function caches with the functions.
* KeyboardInterrupt during a compile leaves the caches usable.
"""
import gc
import threading

import numpy as np
import pytest

from xform._src import lowering
import xform
import xform.numpy as xnp
from xform._src.lowering import runtime
from xform import _jit


def _run_threads(work, n=8):
    errors = []

    def wrap(t):
        try:
            work(t)
        except BaseException as e:  # noqa: BLE001  (report any failure from the thread)
            errors.append(e)
    threads = [threading.Thread(target=wrap, args=(t,)) for t in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_concurrent_calls_give_right_answers_and_compile_once():
    lowering.clear_caches()
    scale = 1.0 + np.random.default_rng().random()     # fresh programs for this run
    fs = [xform.jit(lambda x, k=k: xnp.sin(x) * (k + scale) + x.sum()) for k in range(4)]
    shared = xform.jit(lambda x: xnp.cos(x) @ x * scale)

    def eager_grad(x):
        return xform.grad(lambda v: (xnp.tanh(v) ** 2).sum())(x)
    for n in (1, 2, 3):   # the eager kernels (tanh, sum) compile once per shape, first
        eager_grad(np.ones(n, np.float32))
    before = lowering.cache_info()["misses"]
    counts = {}

    def work(t):
        rng = np.random.default_rng(t)
        for _ in range(25):
            n = int(rng.integers(1, 4))
            x = rng.standard_normal(n).astype(np.float32)
            k = int(rng.integers(0, 4))
            np.testing.assert_allclose(np.asarray(fs[k](x)), np.sin(x) * (k + scale) + x.sum(),
                                       rtol=1e-5, atol=1e-5)
            m = rng.standard_normal((n, n)).astype(np.float32)
            np.testing.assert_allclose(np.asarray(shared(m)), np.cos(m) @ m * scale,
                                       rtol=1e-4, atol=1e-4)
            g = eager_grad(x)
            np.testing.assert_allclose(np.asarray(g), 2 * np.tanh(x) * (1 - np.tanh(x) ** 2),
                                       rtol=1e-4, atol=1e-5)
    _run_threads(work)
    # every (function, shape) pair traced once and every program compiled once
    for f in fs + [shared]:
        counts[f] = f._trace_count
    assert all(c <= 3 for c in counts.values()), counts        # shapes n = 1, 2, 3
    programs = sum(counts.values())
    assert lowering.cache_info()["misses"] - before == programs


@pytest.mark.parametrize("n", [1_500, pytest.param(10_000, marks=pytest.mark.slow)])
def test_many_lambdas_keep_caches_bounded(n):
    lowering.clear_caches()
    gc.collect()
    before = len(_jit._fun_caches)          # other tests' live jitted functions
    x = xnp.ones(3)
    for i in range(n):
        f = xform.jit(lambda v: v * 2.0 + 1.0)      # a new function object every time
        f(x)
    del f
    gc.collect()
    info = lowering.cache_info()
    assert info["size"] <= info["maxsize"]
    # the per-function trace caches die with their functions
    assert len(_jit._fun_caches) - before < 10, (before, len(_jit._fun_caches))


def test_distinct_programs_respect_the_executable_bound(monkeypatch):
    monkeypatch.setattr(runtime, "_EXE_CACHE_SIZE", 8)
    lowering.clear_caches()
    for i in range(20):
        xform.jit(lambda v, i=i: v * float(i) + 0.5)(xnp.ones(2))
    assert lowering.cache_info()["size"] <= 8


def test_interrupted_compile_leaves_caches_usable(monkeypatch):
    real = runtime._compile_uncached
    calls = {"n": 0}

    def interrupt_once(*a, **k):
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyboardInterrupt
        return real(*a, **k)
    monkeypatch.setattr(runtime, "_compile_uncached", interrupt_once)
    f = xform.jit(lambda v: xnp.exp(v) * 3.25 - 1.0)
    with pytest.raises(KeyboardInterrupt):
        f(xnp.ones(3))
    assert not runtime._in_flight and not _jit._tracing and not _jit._compiling
    np.testing.assert_allclose(np.asarray(f(xnp.ones(3))), np.exp(1.0) * 3.25 - 1.0, rtol=1e-6)

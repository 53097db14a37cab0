"""The persistent compilation cache: a second process loads instead of compiling.

Each case runs fresh interpreters (the in-memory executable cache must be empty)
pointed at a temporary cache directory through JAX's environment variable.
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A program that takes XLA a noticeable time to compile; prints the persistent
# cache counters and the result so runs can be compared.
PROGRAM = r"""
import ast, json, sys
import xform, xform.numpy as xnp
from xform._src.interpreters.config import config
for kv in sys.argv[1:]:
    k, v = kv.split("=", 1)
    try:
        v = ast.literal_eval(v)
    except (ValueError, SyntaxError):
        pass
    config.update(k, v)

def f(x):
    for i in range(60):
        x = xnp.sin(x) * 1.01 + xnp.cos(x * 0.5)
    return x.sum()

out = float(xform.jit(f)(xnp.arange(64.0)))
from xform._src import lowering
info = lowering.cache_info()["persistent"]
print(json.dumps({"out": out, **info}))
"""


def run(cache_dir, *settings):
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=str(cache_dir), PYTHONPATH=ROOT)
    env.pop("XLA_FLAGS", None)
    res = subprocess.run([sys.executable, "-c", PROGRAM,
                          "jax_persistent_cache_min_compile_time_secs=0", *settings],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def entries(cache_dir):
    return sorted(p for p in os.listdir(cache_dir) if p.endswith(".xlaexe"))


def test_second_process_loads_instead_of_compiling(tmp_path):
    first = run(tmp_path)
    assert first["hits"] == 0 and first["writes"] == 1
    assert len(entries(tmp_path)) == 1
    second = run(tmp_path)
    assert second["hits"] == 1 and second["writes"] == 0
    assert second["out"] == first["out"]


def test_corrupt_entry_is_ignored_and_rewritten(tmp_path):
    first = run(tmp_path)
    (name,) = entries(tmp_path)
    path = tmp_path / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF           # damage the payload: the digest no longer matches
    path.write_bytes(bytes(data))
    second = run(tmp_path)
    assert second["corrupt"] == 1 and second["hits"] == 0 and second["writes"] == 1
    assert second["out"] == first["out"]
    third = run(tmp_path)
    assert third["hits"] == 1


def test_foreign_file_is_ignored(tmp_path):
    first = run(tmp_path)
    (name,) = entries(tmp_path)
    (tmp_path / name).write_bytes(b"not an executable at all")
    second = run(tmp_path)
    assert second["corrupt"] == 1 and second["out"] == first["out"]


def test_off_when_config_says_so(tmp_path):
    off = run(tmp_path, "jax_compilation_cache_dir=None")
    assert off["dir"] is None and off["writes"] == 0
    assert not os.path.exists(tmp_path) or entries(tmp_path) == []
    off = run(tmp_path, "jax_enable_compilation_cache=False")
    assert off["writes"] == 0 and entries(tmp_path) == []


def test_min_compile_time_threshold(tmp_path):
    res = run(tmp_path, "jax_persistent_cache_min_compile_time_secs=1000")
    assert res["writes"] == 0 and entries(tmp_path) == []


def test_size_bound_evicts_least_recently_used(tmp_path):
    from xform._src.lowering import compilation_cache as pcache
    from xform._src.interpreters.config import config
    with config.override("jax_compilation_cache_dir", str(tmp_path)), \
            config.override("jax_compilation_cache_max_size", 3200), \
            config.override("jax_persistent_cache_min_compile_time_secs", 0.0):
        for i, key in enumerate(["a" * 64, "b" * 64, "c" * 64]):
            assert pcache.store(key, bytes([i]) * 1000, 1.0)
            os.utime(tmp_path / (key + ".xlaexe"), (1000 + i, 1000 + i))
        # touching "a" (a hit) makes "b" the least recently used
        assert pcache.load("a" * 64) == b"\0" * 1000
        assert pcache.store("d" * 64, b"\3" * 1000, 1.0)
        names = entries(tmp_path)
    assert ("b" * 64 + ".xlaexe") not in names
    assert ("a" * 64 + ".xlaexe") in names and ("d" * 64 + ".xlaexe") in names
    total = sum(os.path.getsize(tmp_path / n) for n in names)
    assert total <= 3200


@pytest.mark.parametrize("bad", [b"", b"xform-xla-cache-v1\n" + b"\0" * 10])
def test_truncated_entries_are_misses(tmp_path, bad):
    from xform._src.lowering import compilation_cache as pcache
    from xform._src.interpreters.config import config
    with config.override("jax_compilation_cache_dir", str(tmp_path)):
        os.makedirs(tmp_path, exist_ok=True)
        (tmp_path / ("e" * 64 + ".xlaexe")).write_bytes(bad)
        assert pcache.load("e" * 64) is None
        assert not (tmp_path / ("e" * 64 + ".xlaexe")).exists()


def test_directory_is_measured_once_per_sixteenth_of_the_bound(tmp_path, monkeypatch):
    """A full cache holds tens of thousands of entries: measuring it on every write made
    each compile pay a scan of the whole directory.  A process measures on its first
    write, then after writing 1/16 of the bound, and an eviction trims to 1/16 below."""
    from xform._src.lowering import compilation_cache as pcache
    from xform._src.interpreters.config import config
    scans = []
    real = os.scandir

    def counting(path):
        scans.append(path)
        return real(path)
    monkeypatch.setattr(pcache.os, "scandir", counting)
    monkeypatch.setattr(pcache, "_written_since_scan", {})
    bound = 16 * 10_000
    with config.override("jax_compilation_cache_dir", str(tmp_path)), \
            config.override("jax_compilation_cache_max_size", bound), \
            config.override("jax_persistent_cache_min_compile_time_secs", 0.0):
        for i in range(9):                       # 9 x ~1 KB: below 1/16 of the bound
            assert pcache.store(f"{i:064d}", b"x" * 1000, 1.0)
        assert len(scans) == 1
        for i in range(9, 200):                  # ~200 KB written in all: over the bound
            assert pcache.store(f"{i:064d}", b"x" * 1000, 1.0)
        assert 1 < len(scans) <= 1 + 200_000 // 10_000 + 1
        total = sum(os.path.getsize(tmp_path / n) for n in entries(tmp_path))
    assert total <= bound + 10_000               # at most one sixteenth over, between scans
    assert pcache.stats["evictions"] > 0

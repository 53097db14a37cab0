"""Global configuration with JAX's option names (``xform.config.update``).

JAX code calls ``jax.config.update("jax_enable_x64", True)``; the same call works
here.  Unknown names raise ``AttributeError`` like JAX's "Unrecognized config
option" so typos are not silently ignored.
"""
from __future__ import annotations

import contextlib
import os

# name -> default.  Names are JAX's; values we do not act on are still stored so
# JAX programs that set them run unchanged.
_DEFAULTS = {
    "jax_enable_x64": False,
    "jax_explain_cache_misses": False,
    "jax_debug_nans": False,
    "jax_debug_infs": False,
    "jax_disable_jit": False,
    "jax_default_matmul_precision": None,
    "jax_numpy_rank_promotion": "allow",
    "jax_numpy_dtype_promotion": "standard",
    "jax_platforms": None,
    "jax_platform_name": None,
    "jax_default_device": None,
    "jax_log_compiles": False,
    "jax_check_tracer_leaks": False,
    "jax_traceback_filtering": "auto",
    "jax_default_prng_impl": "threefry2x32",
    "jax_threefry_partitionable": True,
    # The persistent compilation cache (lowering/compilation_cache.py) is on by
    # default in xform, in a per-user cache directory; None turns it off.
    "jax_compilation_cache_dir": os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "xform", "compilation_cache"),
    "jax_enable_compilation_cache": True,
    "jax_persistent_cache_min_compile_time_secs": 0.05,
    "jax_persistent_cache_min_entry_size_bytes": 0,
    "jax_compilation_cache_max_size": 1 << 30,
    "jax_num_cpu_devices": -1,
    "jax_cpu_collectives_implementation": None,   # 'gloo' for multi-process CPU
    "jax_cpu_enable_async_dispatch": True,
    "jax_dynamic_shapes": False,
    "jax_legacy_prng_key": "allow",
    "jax_enable_custom_prng": False,
    "jax_enable_checks": False,
    "jax_raise_persistent_cache_errors": False,
    # xform's own: compile a program's first call in XLA's quick tier and the optimized
    # tier in the background (lowering/runtime.py; docs/performance.md says why it is
    # off by default: the tiers' results are not always bit-identical).
    "xform_tiered_compilation": False,
}


def _env_default(name, default):
    raw = os.environ.get(name.upper())
    if raw is None:
        return default
    if isinstance(default, bool):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    return raw


class Config:
    """Attribute and ``update`` access to options: ``config.jax_enable_x64``."""

    def __init__(self):
        object.__setattr__(self, "_values", {k: _env_default(k, v) for k, v in _DEFAULTS.items()})
        object.__setattr__(self, "_listeners", {})

    def update(self, name: str, value) -> None:
        if name not in self._values:
            raise AttributeError(
                f"Unrecognized config option: {name!r}. Known options: "
                + ", ".join(sorted(self._values)))
        self._values[name] = value
        for fn in self._listeners.get(name, ()):
            fn(value)

    def read(self, name: str):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"Unrecognized config option: {name!r}") from None

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"Unrecognized config option: {name!r}")

    def __setattr__(self, name, value):
        raise AttributeError("use xform.config.update(name, value) to change an option")

    def on_change(self, name: str, fn) -> None:
        """Register ``fn(value)`` to run after ``update(name, ...)`` (caches depend on x64)."""
        self._listeners.setdefault(name, []).append(fn)

    def parse_flags_with_absl(self) -> None:
        """Apply ``--jax_<option>=<value>`` command-line arguments (``sys.argv``), as
        JAX's test files call at import; other arguments are left alone."""
        import sys
        for arg in sys.argv[1:]:
            if not arg.startswith("--jax_"):
                continue
            name, sep, raw = arg[2:].partition("=")
            if name.startswith("jax_no") and name[len("jax_no"):] and \
                    "jax_" + name[len("jax_no"):] in self._values and not sep:
                name, raw, sep = "jax_" + name[len("jax_no"):], "false", "="
            if name not in self._values:
                continue
            default = _DEFAULTS.get(name)
            if isinstance(default, bool):
                value = (raw.strip().lower() in ("1", "true", "yes", "on")) if sep else True
            elif isinstance(default, int) and not isinstance(default, bool):
                value = int(raw)
            elif isinstance(default, float):
                value = float(raw)
            else:
                value = raw
            self.update(name, value)

    @contextlib.contextmanager
    def override(self, name: str, value):
        old = self.read(name)
        self.update(name, value)
        try:
            yield
        finally:
            self.update(name, old)


config = Config()

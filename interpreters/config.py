"""Global configuration with JAX's option names (``xform.config.update``).

JAX code calls ``jax.config.update("jax_enable_x64", True)``; the same call works
here.  Unknown names raise ``AttributeError`` like JAX's "Unrecognized config
option" so typos are not silently ignored.
"""
from __future__ import annotations

import contextlib
import os
import sys

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
    # xform bounds-checks static integer indices whatever its value (docs/semantics.md);
    # JAX checks them only when it is True (then with the same IndexError)
    "jax_check_static_indices": False,
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
    "jax_enable_preemption_service": True,        # multihost_utils.reached_preemption_...
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
    # xform's own: eager operations whose NumPy result differs from XLA's (transcendental
    # functions, complex arithmetic, sums, products, dot products) run XLA's compiled
    # kernel, so eager results are bit-identical to jit's and JAX's; True runs NumPy's
    # (faster per call, last-digit differences).  docs/semantics.md.
    "xform_eager_numpy_numerics": False,
}

# JAX 0.10.2's other options, with JAX's defaults.  These tune parts of JAX that xform
# does not have or does differently (GPU/TPU and Pallas settings, PGLE, jax2tf, IR
# dumps, compiler internals): accepted and stored, with no effect here.
_INERT = {
    'check_vma': False,
    'eager_constant_folding': False,
    'jax2tf_associative_scan_reductions': False,
    'jax2tf_default_native_serialization': True,
    'jax_allow_f16_reductions': True,
    'jax_auto_pcast': True,
    'jax_backend_target': '',
    'jax_bcoo_cusparse_lowering': False,
    'jax_captured_constants_report_frames': 0,
    'jax_captured_constants_warn_bytes': 2000000000,
    'jax_check_proxy_envs': True,
    'jax_compilation_cache_check_contents': False,
    'jax_compilation_cache_expect_pgle': False,
    'jax_compilation_cache_include_metadata_in_key': False,
    'jax_compiler_detailed_logging_min_ops': 10,
    'jax_compiler_enable_remat_pass': True,
    'jax_cpu_get_global_topology_timeout_minutes': 5,
    'jax_cpu_get_local_topology_timeout_minutes': 2,
    'jax_cross_host_transfer_socket_address': '',
    'jax_cross_host_transfer_timeout_seconds': None,
    'jax_cross_host_transfer_transfer_size': None,
    'jax_cross_host_transport_addresses': '',
    'jax_cuda_visible_devices': 'all',
    'jax_custom_vjp3': False,
    'jax_debug_leaked_clients_on_clear_backends': False,
    'jax_debug_log_modules': '',
    'jax_disable_bwd_checks': False,
    'jax_disable_most_optimizations': False,
    'jax_disable_vmap_shmap_error': False,
    'jax_disallow_mesh_context_manager': False,
    'jax_distributed_debug': False,
    'jax_dump_ir_modes': 'stablehlo',
    'jax_dump_ir_to': '',
    'jax_embedded_constants_max_bytes': 32,
    'jax_enable_pgle': False,
    'jax_enable_recoverability': False,
    'jax_exec_time_optimization_effort': 0.0,
    'jax_experimental_unsafe_xla_runtime_errors': False,
    'jax_export_calling_convention_version': 10,
    'jax_export_ignore_forward_compatibility': False,
    'jax_force_dcn_cross_host_transfers': False,
    'jax_hlo_source_file_canonicalization_regex': None,
    'jax_include_debug_info_in_dumps': True,
    'jax_include_full_tracebacks_in_locations': True,
    'jax_log_checkpoint_residuals': False,
    'jax_logging_level': 'NOTSET',
    'jax_memory_fitting_effort': 0.0,
    'jax_memory_fitting_level': 'O2',
    'jax_mock_gpu_topology': '',
    'jax_mosaic_allow_hlo': False,
    'jax_mutable_array_checks': True,
    'jax_oneapi_visible_devices': 'all',
    'jax_optimization_level': 'UNKNOWN',
    'jax_pallas_enable_debug_checks': False,
    'jax_pallas_poison_buffers': False,
    'jax_pallas_use_mosaic_gpu': True,
    'jax_pallas_verbose_errors': False,
    'jax_persistent_cache_enable_xla_caches': 'xla_gpu_per_fusion_autotune_cache_dir',
    'jax_pgle_aggregation_percentile': 90,
    'jax_pgle_profiling_runs': 3,
    'jax_pjrt_client_create_options': None,
    'jax_pprint_use_color': True,
    'jax_ragged_dot_use_gpu_pallas_triton_lowering': False,
    'jax_ragged_dot_use_ragged_dot_instruction': True,
    'jax_refs_to_pins': False,
    'jax_remat3': False,
    'jax_remove_custom_partitioning_ptr_from_cache_key': False,
    'jax_remove_size_one_mesh_axis_from_type': False,
    'jax_rocm_visible_devices': 'all',
    'jax_scan3': False,
    'jax_send_traceback_to_runtime': 'off',
    'jax_serialization_version': 0,
    'jax_share_binary_between_hosts': False,
    'jax_share_binary_between_hosts_timeout_ms': 1200000,
    'jax_sort_devices_by_process_index': True,
    'jax_source_url_schema': None,
    'jax_thread_guard': False,
    'jax_threefry_gpu_kernel_lowering': False,
    'jax_traceback_in_locations_limit': 100,
    'jax_tracer_error_num_traceback_frames': 5,
    'jax_use_direct_linearize': True,
    'jax_use_emit_pipeline_primitive': False,
    'jax_use_magma': 'auto',
    'jax_use_shardy_partitioner': True,
    'jax_use_simplified_jaxpr_constants': False,
    'jax_xla_backend': '',
    'jax_xla_profile_version': 0,
    'mock_num_gpu_processes': 0,
}

# Options that would change results or checks in ways xform does not implement:
# reading them gives JAX's default; setting another value raises NotImplementedError
# (with what to use instead, where xform has it).
_UNSUPPORTED = {
    'jax_array_garbage_collection_guard': None,
    'jax_debug_key_reuse': False,
    'jax_error_checking_behavior_divide': 'ignore',
    'jax_error_checking_behavior_nan': 'ignore',
    'jax_error_checking_behavior_oob': 'ignore',
    'jax_explicit_x64_dtypes': 1,
    'jax_high_dynamic_range_gumbel': False,
    'jax_no_execution': False,
    'jax_no_tracing': False,
    'jax_random_seed_offset': 0,
    'jax_softmax_custom_jvp': False,
    'jax_transfer_guard': None,
    'jax_transfer_guard_device_to_device': None,
    'jax_transfer_guard_device_to_host': None,
    'jax_transfer_guard_host_to_device': None,
}
_INSTEAD = {
    "jax_transfer_guard": "the context manager xform.transfer_guard(level)",
    "jax_transfer_guard_device_to_device": "xform.transfer_guard_device_to_device(level)",
    "jax_transfer_guard_device_to_host": "xform.transfer_guard_device_to_host(level)",
    "jax_transfer_guard_host_to_device": "xform.transfer_guard_host_to_device(level)",
    "jax_error_checking_behavior_divide": "xform.experimental.checkify",
    "jax_error_checking_behavior_nan": "jax_debug_nans or xform.experimental.checkify",
    "jax_error_checking_behavior_oob": "xform.experimental.checkify",
}


# JAX's PRNG implementations; xform implements the first three (xform.random)
_PRNG_IMPLS = ["threefry2x32", "rbg", "unsafe_rbg"]
_PRNG_IMPLS_JAX = ["threefry2x32", "threefry4x32", "rbg", "unsafe_rbg", "philox2x32",
                   "philox4x32"]


def _check_prng_impl(value):
    if value in _PRNG_IMPLS:
        return
    if value in _PRNG_IMPLS_JAX:
        raise ValueError(f"jax_default_prng_impl={value!r}: xform implements the PRNG "
                         f"implementations {_PRNG_IMPLS}, not {value!r}")
    raise ValueError(f"new enum value must be in {_PRNG_IMPLS_JAX}, got {value} of type "
                     f"{type(value)}.")


_CHECKS = {"jax_default_prng_impl": _check_prng_impl}


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
        vals = {k: _env_default(k, v) for k, v in {**_INERT, **_UNSUPPORTED}.items()}
        vals.update({k: _env_default(k, v) for k, v in _DEFAULTS.items()})
        object.__setattr__(self, "_values", vals)
        object.__setattr__(self, "_listeners", {})

    def update(self, name: str, value) -> None:
        if name not in self._values:
            raise AttributeError(
                f"Unrecognized config option: {name!r}. Known options: "
                + ", ".join(sorted(self._values)))
        if name in _UNSUPPORTED and value != _UNSUPPORTED[name]:
            instead = _INSTEAD.get(name)
            raise NotImplementedError(
                f"config option {name!r}={value!r} is not supported by xform (only its default "
                f"{_UNSUPPORTED[name]!r})" + (f"; use {instead} instead" if instead else ""))
        check = _CHECKS.get(name)
        if check is not None:
            check(value)
        self._values[name] = value
        for fn in self._listeners.get(name, ()):
            fn(value)

    def read(self, name: str):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"Unrecognized config option: {name!r}") from None

    @property
    def values(self) -> dict:
        """Every option and its current value (a copy)."""
        return dict(self._values)

    @property
    def x64_enabled(self) -> bool:
        """Whether 64-bit dtypes are enabled (``jax_enable_x64``)."""
        return bool(self._values["jax_enable_x64"])

    def _read(self, name: str):
        return self.read(name)

    def parse_flags_with_absl(self):
        """JAX reads ``--jax_*`` command-line flags through absl here; xform reads options
        from ``JAX_*`` environment variables at start-up and ``update`` only."""

    def config_with_absl(self):
        """See ``parse_flags_with_absl``: nothing to do in xform."""

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

"""Many processes: jaxlib's distributed runtime (coordination service + client).

``initialize`` starts the coordination service (process 0) and connects this
process's client through JAX's runtime-level ``jax.distributed`` module, which
the PJRT CPU client then uses to see every process's devices; cross-process CPU
collectives use jaxlib's gloo implementation (JAX's config name
``jax_cpu_collectives_implementation``).  Must run before the first computation.
"""
from __future__ import annotations

from jax._src import config as _jcfg   # _src: the real modules even under compat.alias_jax
from jax._src import distributed as _jd
from xform._src.interpreters.config import config


def _client_exists() -> bool:
    from jax._src import xla_bridge  # deferred: keeps `import xform` light
    return bool(getattr(xla_bridge, "_backends", None))


def initialize(coordinator_address=None, num_processes=None, process_id=None,
               local_device_ids=None, cluster_detection_method=None,
               initialization_timeout=300, coordinator_bind_address=None,
               cpu_collectives="gloo", **kwargs):
    if _client_exists():
        raise RuntimeError("xform.distributed.initialize() must be called before any "
                           "computation or device query (the runtime client already exists).")
    if config.jax_cpu_collectives_implementation is not None:
        cpu_collectives = config.jax_cpu_collectives_implementation
    if cpu_collectives is not None:
        _jcfg.config.update("jax_cpu_collectives_implementation", cpu_collectives)
    _jcfg.config.update("jax_enable_preemption_service",
                        bool(config.jax_enable_preemption_service))
    _jd.initialize(coordinator_address=coordinator_address, num_processes=num_processes,
                   process_id=process_id, local_device_ids=local_device_ids,
                   cluster_detection_method=cluster_detection_method,
                   initialization_timeout=initialization_timeout,
                   coordinator_bind_address=coordinator_bind_address, **kwargs)


def shutdown():
    _jd.shutdown()


def is_initialized() -> bool:
    return _jd.is_initialized()


def reached_preemption_sync_point(step_id: int) -> bool:
    """Whether every process has reached the step at which to save after a preemption
    notice (the runtime's preemption sync manager); False when not distributed."""
    gs = _jd.global_state
    if gs.client is None:
        return False
    manager = gs.preemption_sync_manager
    if manager is None:
        raise RuntimeError("Preemption sync manager has not been initialized. Make sure the "
                           "'jax_enable_preemption_service' config is enabled.")
    return bool(manager.reached_sync_point(int(step_id)))


def runtime_state():
    """The distributed runtime's state: ``client`` (None unless initialized),
    ``process_id``, ``num_processes``, ``coordinator_address``, ``service``."""
    return _jd.global_state

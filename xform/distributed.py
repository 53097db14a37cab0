"""``xform.distributed``: run one program over several processes (JAX's API).

``initialize(coordinator_address, num_processes, process_id)`` connects this
process to the others through jaxlib's distributed runtime (call it first, before
any computation); afterwards ``xform.devices()`` lists every process's devices,
``xform.local_devices()`` this process's, ``process_index()``/``process_count()``
say where we are, and meshes/shardings/jit span processes.  Cross-process CPU
collectives use gloo (config ``jax_cpu_collectives_implementation``).
"""
from __future__ import annotations

__all__ = ["initialize", "shutdown", "is_initialized"]


def initialize(coordinator_address=None, num_processes=None, process_id=None,
               local_device_ids=None, cluster_detection_method=None,
               initialization_timeout=300, coordinator_bind_address=None, **kwargs):
    """Connect to the coordinator at ``coordinator_address`` ('host:port'; process 0
    also serves it) as process ``process_id`` of ``num_processes``."""
    if num_processes is not None and (not isinstance(num_processes, int) or num_processes < 1):
        raise ValueError(f"distributed.initialize: num_processes must be a positive int, got "
                         f"{num_processes!r}")
    if process_id is not None and num_processes is not None and \
            not 0 <= int(process_id) < num_processes:
        raise ValueError(f"distributed.initialize: process_id {process_id} is out of range "
                         f"for num_processes={num_processes}")
    from xform._src.lowering import distributed  # deferred: keeps `import xform` light
    distributed.initialize(coordinator_address, num_processes, process_id, local_device_ids,
                           cluster_detection_method, initialization_timeout,
                           coordinator_bind_address, **kwargs)


def shutdown():
    """Disconnect from the other processes (and stop the coordinator on process 0)."""
    from xform._src.lowering import distributed  # deferred: keeps `import xform` light
    distributed.shutdown()


def is_initialized() -> bool:
    from xform._src.lowering import distributed  # deferred: keeps `import xform` light
    return distributed.is_initialized()

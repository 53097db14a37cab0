"""``xform.experimental.colocated_python``: run Python on the host next to the devices.

JAX's colocated Python runs a Python function (or the methods of a Python object) on
the host that owns the CPU devices of its array arguments, possibly a remote host.
xform runs one process: the colocated host *is* this process, so

* ``colocated_cpu_devices(devices_or_mesh)`` returns the CPU device matching each
  device (a CPU device is returned as-is; for a mesh, a mesh of the same shape and
  axes with CPU devices), as JAX's fallback pairing does (per process, in order);
* ``colocated_python(fun)`` returns a callable with ``specialize(in_specs=,
  out_specs_fn=, devices=)``; calling it checks its arguments (``xform.Array``
  leaves, all on one CPU device list, matching ``in_specs`` if given), runs ``fun``
  here on those arrays and checks the outputs (arrays, matching the output specs if
  given, placed on their shardings).  Execution is synchronous;
* ``colocated_python_class(cls)`` wraps a class: its instance is created on first
  method use and each method runs as a colocated function.

Multi-host execution (IFRT proxies, Pathways) is outside xform's runtime.
"""
from xform.experimental.colocated_python.api import (  # noqa: F401
    colocated_cpu_devices, colocated_python, colocated_python_class)

__all__ = ["colocated_cpu_devices", "colocated_python", "colocated_python_class"]

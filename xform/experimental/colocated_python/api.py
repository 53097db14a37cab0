"""The colocated Python entry points (see the package docstring)."""
from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from xform.experimental.colocated_python.func import make_callable
from xform.experimental.colocated_python.obj import wrap_class
from xform.sharding import Mesh

__all__ = ["colocated_cpu_devices", "colocated_python", "colocated_python_class"]


def _cpu_devices_for(devices: tuple) -> list:
    import xform  # deferred: import cycle
    if not devices:
        return []
    if all(d.platform == "cpu" for d in devices):
        return list(devices)
    pool = collections.defaultdict(list)
    for d in xform.devices("cpu"):
        pool[d.process_index].append(d)
    for lst in pool.values():
        lst.reverse()
    out = []
    for d in devices:
        if d.platform == "cpu":
            out.append(d)
            continue
        try:
            out.append(pool[d.process_index].pop())
        except IndexError:
            raise ValueError(
                f"colocated_cpu_devices: process {d.process_index} does not have enough "
                f"local CPU devices for {len(devices)} devices") from None
    return out


def colocated_cpu_devices(devices_or_mesh):
    """The CPU devices colocated with ``devices_or_mesh`` (a sequence of devices, or a
    ``Mesh``: then a mesh of the same shape, axis names and axis types).  Order is kept;
    a CPU device maps to itself."""
    if isinstance(devices_or_mesh, Mesh):
        mesh = devices_or_mesh
        flat = _cpu_devices_for(tuple(mesh.devices.flat))
        return Mesh(np.array(flat, dtype=object).reshape(mesh.devices.shape),
                    mesh.axis_names, axis_types=mesh.axis_types)
    return _cpu_devices_for(tuple(devices_or_mesh))


def colocated_python(fun: Callable[..., Any]):
    """A colocated Python callable running ``fun`` on the host of its arguments'
    devices (here: this process).  Use ``.specialize(in_specs=, out_specs_fn=,
    devices=)`` to fix input specs, output specs or the devices of an argument-less
    call."""
    if not callable(fun):
        raise TypeError(f"colocated_python expects a callable, got {type(fun).__name__}")
    return make_callable(fun)


def colocated_python_class(cls: type) -> type:
    """A wrapper class whose instance lives on the host of the arguments' devices
    (here: this process), created on the first method call."""
    if not isinstance(cls, type):
        raise TypeError(f"colocated_python_class expects a class, got {type(cls).__name__}")
    return wrap_class(cls)

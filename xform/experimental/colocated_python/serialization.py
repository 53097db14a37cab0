"""Pickling of colocated callables and their specs, devices by id.

JAX ships colocated callables and specs to the colocated host with cloudpickle,
writing each device (in a ``Mesh``, ``NamedSharding``, ``SingleDeviceSharding`` or
``DeviceList``) as its id and looking the id up among the CPU devices on the other
side.  xform executes colocated functions in-process and does not need to ship them;
this module serves the same reducers (``_reduce_mesh``, ``_reduce_device_list``,
``_reduce_single_device_sharding``, ``_reduce_named_sharding``), the CPU-device lookup
(``_get_cpu_device_map``) and ``_serialize``/``_deserialize`` for libraries that use or
patch them.
"""
from __future__ import annotations

import collections
import io
import types
from collections.abc import Sequence
from typing import Any

import numpy as np
from xform.sharding import Mesh, NamedSharding, SingleDeviceSharding
import sys

__all__ = ["DeviceList"]


class DeviceList(tuple):
    """An ordered, hashable list of devices."""

    def __repr__(self):
        return f"DeviceList({', '.join(map(repr, self))})"


def _local_devices():
    import xform  # deferred: import cycle
    return xform.local_devices()


def _backends():
    import xform  # deferred: import cycle
    return {d.platform: d.client for d in xform.devices()}


# JAX's module reaches the backends through ``xla_bridge``; the same two queries:
xb = types.SimpleNamespace(local_devices=_local_devices, backends=_backends)


def _get_cpu_device_map() -> dict:
    """Device id -> CPU device, over the default backend (then all backends)."""
    out: dict = {}
    clients = [xb.local_devices()[0].client] + list(xb.backends().values())
    for client in clients:
        for d in client._get_all_devices():
            if d.device_kind == "cpu" or d.platform == "cpu":
                if d.id in out and out[d.id] is not d:
                    raise ValueError(f"Multiple CPU devices with id {d.id} found: "
                                     f"{out[d.id]} and {d}")
                out[d.id] = d
        if out:
            return out
    return out


def _lookup_cpu_device(cpu_device_map: dict, device_id: int):
    d = cpu_device_map.get(int(device_id))
    if d is None:
        raise ValueError(f"Invalid device ID {device_id}. Device list must contain only "
                         "CPU devices.")
    return d


def _lookup_all(ids):
    m = _get_cpu_device_map()
    flat = [_lookup_cpu_device(m, i) for i in np.ravel(ids)]
    arr = np.empty(len(flat), dtype=object)
    arr[:] = flat
    return arr.reshape(np.shape(ids))


def _reduce_mesh(mesh):
    ids = np.vectorize(lambda d: d.id, otypes=[int])(mesh.devices)
    return _unreduce_mesh, (ids, mesh.axis_names, mesh.axis_types)


def _unreduce_mesh(ids, axis_names, axis_types):
    return Mesh(_lookup_all(ids), axis_names, axis_types=axis_types)


def _reduce_named_sharding(sharding):
    return _unreduce_named_sharding, (_reduce_mesh(sharding.mesh), sharding.spec,
                                      sharding.memory_kind)


def _unreduce_named_sharding(reduced_mesh, spec, memory_kind):
    mesh = reduced_mesh[0](*reduced_mesh[1])
    return NamedSharding(mesh, spec, memory_kind=memory_kind)


def _reduce_device_list(device_list):
    return _unreduce_device_list, ([d.id for d in device_list],)


def _unreduce_device_list(device_ids: Sequence[int]) -> DeviceList:
    return DeviceList(tuple(_lookup_all(list(device_ids))))


def _reduce_single_device_sharding(sharding):
    return _unreduce_single_device_sharding, (next(iter(sharding.device_set)).id,
                                              sharding.memory_kind)


def _unreduce_single_device_sharding(device_id, memory_kind):
    return SingleDeviceSharding(_lookup_cpu_device(_get_cpu_device_map(), device_id),
                                memory_kind=memory_kind)


def _serialize(obj: Any) -> bytes:
    """Pickles ``obj`` (callables by value, devices by id).  For colocated execution
    only: the bytes are ephemeral and read back by the same installation."""
    import cloudpickle  # deferred: keeps `import xform` light
    mod = sys.modules[__name__]   # reducers looked up at call time (libraries patch them)

    class _Pickler(cloudpickle.Pickler):
        dispatch_table = collections.ChainMap(
            {Mesh: lambda m: mod._reduce_mesh(m),
             NamedSharding: lambda s: mod._reduce_named_sharding(s),
             DeviceList: lambda d: mod._reduce_device_list(d),
             SingleDeviceSharding: lambda s: mod._reduce_single_device_sharding(s)},
            cloudpickle.CloudPickler.dispatch_table)

    with io.BytesIO() as f:
        _Pickler(f).dump(obj)
        return f.getvalue()


def _deserialize(serialized: bytes) -> Any:
    """Reads back what ``_serialize`` wrote."""
    import cloudpickle  # deferred: keeps `import xform` light
    return cloudpickle.loads(serialized)

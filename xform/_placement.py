"""Where an Array lives: its devices, sharding, shards and DLPack export.

``interpreters.core.Array`` declares these properties (``devices()``, ``device``,
``sharding``, ``addressable_shards``, ``__dlpack__``, ...) and forwards them to the
placement installed here, because the engine knows no devices: the answers come from
the runtime (``lowering.runtime`` for one device, ``lowering.spmd`` for arrays over
several).  jaxlib loads on the first question, not on ``import xform``.
"""
from __future__ import annotations

from xform._src.interpreters import core
from xform import sharding as S
from xform._src import lowering

__all__ = ["Shard"]

_kDLCPU = 1


def _lowering():
    return lowering


def _spmd():
    from xform._src.lowering import spmd  # deferred: keeps `import xform` light
    return spmd


class Shard:
    """One addressable piece of a global Array: ``device``, ``index`` (a tuple of
    slices into the global array), ``replica_id`` and ``data`` (an Array)."""

    __slots__ = ("device", "index", "replica_id", "_data")

    def __init__(self, device, index, replica_id, data):
        self.device, self.index, self.replica_id, self._data = device, index, replica_id, data

    @property
    def data(self):
        return self._data

    def __repr__(self):
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self._data!r})")


class Placement:
    """The runtime's answers to ``core.Array``'s placement properties."""

    @staticmethod
    def _sharded(arr):
        b = arr._buf
        return b is not None and _spmd().is_sharded_buf(b)

    def devices(self, arr):
        if self._sharded(arr):
            return set(arr._buf._sharding.device_set)
        return {_lowering().get_device(arr)}

    def device(self, arr):
        if self._sharded(arr):
            return self.sharding(arr)
        return _lowering().get_device(arr)

    def sharding(self, arr):
        b = arr._buf
        if b is None:
            from xform import _devices  # deferred: import cycle
            return S.SingleDeviceSharding(_devices.local_devices(backend="cpu")[0])
        return _spmd().buf_sharding(b)

    def format(self, arr):
        from xform.experimental.layout import array_format  # deferred: keeps `import xform` light
        return array_format(arr)

    def addressable_shards(self, arr):
        b = arr._buf
        if arr._deleted:
            raise arr._deleted_error("addressable_shards")
        if b is None:
            from xform import _devices  # deferred: import cycle
            d = _devices.local_devices(backend="cpu")[0]
            return [Shard(d, tuple(slice(None) for _ in arr.shape), 0, arr)]
        return [Shard(dev, idx, rid, core.Array._from_buf(buf, arr.weak_type, True))
                for dev, idx, buf, rid in _spmd().shards(b)]

    def dlpack(self, arr, stream, max_version, dl_device, copy):
        if arr._deleted:
            raise arr._deleted_error("__dlpack__")
        kw = {}
        if max_version is not None:
            kw["max_version"] = max_version
        if dl_device is not None:
            kw["dl_device"] = dl_device
        if copy is not None:
            kw["copy"] = copy
        if arr._buf is not None:
            if not hasattr(type(arr._buf), "__dlpack__"):   # JAX's ArrayImpl methods not loaded
                from xform._src.lowering.runtime import buffer_dlpack  # deferred: keeps `import xform` light
                return buffer_dlpack(arr._buf, stream, max_version, dl_device, copy)
            return arr._buf.__dlpack__(stream=stream, **kw)
        if stream is not None and stream != -1:
            raise BufferError(f"__dlpack__: stream={stream!r} is not supported for CPU arrays; "
                              "pass stream=None")
        return arr._npy.__dlpack__(**kw)

    def unsafe_buffer_pointer(self, arr):
        if self._sharded(arr):
            raise ValueError("unsafe_buffer_pointer() is supported only for unsharded arrays; "
                             "use x.addressable_shards[i].data.unsafe_buffer_pointer() for "
                             "one shard's buffer.")
        if arr._buf is None:    # held on the host: give it its device buffer for good
            arr._buf = _lowering().device_put(arr)._buf
        return arr._buf.unsafe_buffer_pointer()

    def dlpack_device(self, arr):
        if arr._buf is not None and hasattr(type(arr._buf), "__dlpack_device__"):
            return arr._buf.__dlpack_device__()
        return (_kDLCPU, 0)   # host storage, or the own runtime's CPU buffer


core.set_placement(Placement())

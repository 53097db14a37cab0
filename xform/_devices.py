"""Devices and data placement (JAX's names), thin over ``lowering``'s runtime.

``devices``, ``local_devices``, ``default_backend``, ``device_put``,
``device_get``, ``block_until_ready``.  jaxlib loads on the first call, not on ``import
xform``.  (``Array.devices()``/``.device`` are answered by ``xform._placement``.)
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import core
from xform._src.interpreters.core import Array, Tracer
from xform.tree_util import tree_map
from xform import sharding as _S
from xform._src import lowering
from xform.sharding._api import device_put_sharded_tree
from xform.tree_util import tree_leaves

__all__ = ["devices", "local_devices", "default_backend", "device_put", "device_get",
           "block_until_ready", "device_count", "local_device_count"]


def _lowering():
    return lowering


def devices(backend=None) -> list:
    """All devices of ``backend`` ('cpu', 'gpu', 'tpu'; default: the default backend)."""
    return _lowering().devices(backend)


def local_devices(process_index=None, backend=None) -> list:
    return _lowering().local_devices(backend)


def device_count(backend=None) -> int:
    return len(devices(backend))


def local_device_count(backend=None) -> int:
    return len(local_devices(backend=backend))


def default_backend() -> str:
    """The platform name ('cpu', 'gpu' or 'tpu') computations run on by default."""
    return _lowering().default_backend()


def _put_leaf(x, device):
    if isinstance(x, Tracer):
        return x           # inside a transformation placement is a no-op (as in JAX)
    return _lowering().device_put(x, device)


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Place every leaf of the pytree ``x`` on ``device`` (default device if None): a
    device, a sharding or a ``Format`` (layout and sharding), or a pytree of those."""
    if _has_format(device):
        from xform.experimental.layout import strip_formats   # deferred: import cycle
        device = strip_formats(device, "device_put")
    if isinstance(device, _S.Sharding) or (
            isinstance(device, (list, tuple, dict)) and any(
                isinstance(d, _S.Sharding) for d in _leaves_of_shardings(device))):
        return device_put_sharded_tree(x, device)
    if isinstance(device, (list, tuple)):
        raise TypeError("device_put: pass one device (multi-device shardings are not "
                        "supported); use device_put_replicated-style loops instead.")
    return tree_map(lambda leaf: _put_leaf(leaf, device), x)


def _has_format(device) -> bool:
    if device is None or type(device).__name__ not in ("Format", "list", "tuple", "dict"):
        return False
    from xform.experimental.layout import Format   # deferred: import cycle
    return any(isinstance(d, Format) for d in _leaves_of_formats(device, Format))


def _leaves_of_formats(tree, fmt):
    return tree_leaves(tree, is_leaf=lambda s: s is None or isinstance(s, fmt))


def _get_leaf(x):
    if isinstance(x, Tracer):   # as JAX: a traced value has no host copy; it is returned
        return x                # as it is (chex's without_device variant calls it in jit)
    if isinstance(x, Array):
        if x._is_key_array():   # key arrays are not data: JAX returns them unchanged
            return x
        return np.asarray(x._value)
    to_array = getattr(x, "__array__", None)   # NumPy scalars and arrays, array-likes
    return x if to_array is None else to_array()


def device_get(x):
    """NumPy copies (host values) of every array leaf of ``x``; other leaves unchanged."""
    for leaf in _leaves(x):
        if isinstance(leaf, Array) and leaf._buf is not None and not leaf._deleted:
            leaf._buf.copy_to_host_async() if hasattr(leaf._buf, "copy_to_host_async") else None
    return tree_map(_get_leaf, x)


def _collect_bufs(x, out):
    """Device buffers of a tree of Arrays in lists/tuples/dicts (the common result
    shapes), appended to ``out``; False if anything else is in it."""
    t = type(x)
    if t is Array:
        b = x._buf
        if b is not None and not x._deleted:
            out.append(b)
        return True
    if t is list or t is tuple:
        for c in x:
            if not _collect_bufs(c, out):
                return False
        return True
    if t is dict:
        for c in x.values():
            if not _collect_bufs(c, out):
                return False
        return True
    return x is None


def block_until_ready(x):
    """Wait until every array in the pytree ``x`` is computed; returns ``x``."""
    bufs = []
    if _collect_bufs(x, bufs):       # Arrays in built-in containers: no generic flatten
        if len(bufs) == 1:
            bufs[0].block_until_ready()
        elif bufs:
            lowering.block_buffers(bufs)
        return x
    for leaf in _leaves(x):
        if isinstance(leaf, Array):
            leaf.block_until_ready()
        elif hasattr(leaf, "block_until_ready") and not isinstance(leaf, Tracer):
            leaf.block_until_ready()
    return x


def _leaves_of_shardings(device):
    return tree_leaves(device, is_leaf=lambda s: isinstance(s, _S.Sharding))


def _leaves(x):
    return tree_leaves(x)

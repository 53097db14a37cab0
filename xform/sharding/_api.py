"""Sharded arrays (JAX's names): ``device_put(x, sharding)``, ``make_array_from_*``,
``with_sharding_constraint`` and ``debug.visualize_array_sharding``.

An Array over several devices holds one jaxlib global array (``_buf``) made of
per-device shards; its host value is assembled on demand (``np.asarray``).
jaxlib loads on first use.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import core
from xform._src.interpreters.core import Array, Tracer
from xform import sharding as S
from xform.tree_util import tree_flatten, tree_map, tree_unflatten

from xform._placement import Shard
from xform.sharding._jit import reshard, with_sharding_constraint  # noqa: E402
from xform.sharding._shard_map import shard_map  # noqa: E402

__all__ = ["Shard", "reshard", "shard_map", "with_sharding_constraint", "make_array_from_callback", "make_array_from_single_device_arrays",
           "make_array_from_process_local_data", "P", "NamedSharding", "process_index",
           "process_count", "make_mesh", "set_mesh"]

make_mesh = S.make_mesh
set_mesh = S.set_mesh

P = S.PartitionSpec
NamedSharding = S.NamedSharding


def _spmd():
    from xform._src.lowering import spmd  # deferred: keeps `import xform` light
    return spmd


def process_index(backend=None) -> int:
    """This process's index among the processes of a distributed run (0 alone)."""
    return _spmd().process_index()


def process_count(backend=None) -> int:
    """How many processes take part (1 unless xform.distributed.initialize was called)."""
    return _spmd().process_count()


# ----------------------------------------------------------------- Array surface




def _check_shape(sharding, shape):
    if isinstance(sharding, S.NamedSharding):
        sharding.shard_shape(shape)     # raises ValueError naming the dimension


def put_leaf(x, sharding):
    """``device_put`` of one leaf with a (Named/SingleDevice) sharding."""
    if isinstance(x, Tracer):
        return with_sharding_constraint(x, sharding) if isinstance(sharding, S.NamedSharding) \
            else x
    if isinstance(sharding, S.NamedSharding):
        _check_shape(sharding, np.shape(x))
    if isinstance(x, Array) and x._is_key_array():
        # typed PRNG key arrays live on the host (compiled programs take and give their
        # uint32 words): placing one leaves it as it is, as single-device device_put does
        return x
    return _spmd().put(x, sharding)


def is_sharding(s):
    return isinstance(s, S.Sharding)


# ----------------------------------------------------------------- building global arrays


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
    """A global Array of ``shape`` laid out as ``sharding``; ``data_callback(index)``
    returns the data of the shard at ``index`` (a tuple of slices)."""
    shape = tuple(shape)
    if not is_sharding(sharding):
        raise TypeError(f"make_array_from_callback: sharding must be a Sharding, got {sharding!r}")
    _check_shape(sharding, shape)
    idx_map = sharding.addressable_devices_indices_map(shape)
    spmd = _spmd()
    bufs, dt = [], dtype
    for d, idx in idx_map.items():
        v = data_callback(idx)
        v = np.asarray(v._value if isinstance(v, Array) else v)
        if dt is not None:
            v = v.astype(dt)
        dt = v.dtype
        want = tuple(len(range(*s.indices(n))) for s, n in zip(idx, shape))
        if v.shape != want:
            raise ValueError(f"make_array_from_callback: data_callback returned shape {v.shape} "
                             f"for index {idx}, expected {want}")
        bufs.append(spmd.single_device_buf(v, d))
    if isinstance(sharding, S.SingleDeviceSharding):
        return Array._from_buf(bufs[0], False, True)
    return spmd.assemble(shape, dt, sharding, bufs)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
    """A global Array from one single-device Array per addressable device of
    ``sharding`` (in ``sharding.addressable_devices_indices_map`` order or any order:
    each is matched to its device)."""
    shape = tuple(shape)
    if not is_sharding(sharding):
        raise TypeError(f"make_array_from_single_device_arrays: sharding must be a Sharding, "
                        f"got {sharding!r}")
    _check_shape(sharding, shape)
    arrays = list(arrays)
    idx_map = sharding.addressable_devices_indices_map(shape)
    if len(arrays) != len(idx_map):
        raise ValueError(f"make_array_from_single_device_arrays: expected {len(idx_map)} arrays "
                         f"(one per addressable device of the sharding), got {len(arrays)}")
    spmd = _spmd()
    want_shape = sharding.shard_shape(shape)
    by_dev = {}
    for a in arrays:
        if not isinstance(a, Array):
            raise TypeError(f"make_array_from_single_device_arrays: expected xform Arrays, got "
                            f"{type(a).__name__}")
        if a.shape != want_shape:
            raise ValueError(f"make_array_from_single_device_arrays: an array has shape "
                             f"{a.shape}, but the sharding's shard shape is {want_shape}")
        by_dev[a.device] = a
    if set(by_dev) != set(idx_map):
        bufs = [spmd.single_device_buf(a, d) for a, d in zip(arrays, idx_map)]
    else:
        bufs = [spmd.single_device_buf(by_dev[d], d) for d in idx_map]
    dt = dtype if dtype is not None else arrays[0].dtype
    return spmd.assemble(shape, dt, sharding, bufs, arrays[0].weak_type)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """A global Array from this process's part of the data: the rows (dimension 0
    first) that this process's devices hold.  With one process it is the whole array."""
    if not is_sharding(sharding):
        raise TypeError(f"make_array_from_process_local_data: sharding must be a Sharding, "
                        f"got {sharding!r}")
    local = np.asarray(local_data._value if isinstance(local_data, Array) else local_data)
    if global_shape is None:
        n = _spmd().process_count()
        global_shape = (local.shape[0] * n,) + local.shape[1:] if n > 1 and local.ndim else \
            local.shape
    global_shape = tuple(global_shape)
    _check_shape(sharding, global_shape)
    idx_map = sharding.addressable_devices_indices_map(global_shape)
    # the process's block of the global array: the hull of its devices' indices
    lo = [min(s.indices(n)[0] for s in (idx[k] for idx in idx_map.values()))
          for k, n in enumerate(global_shape)]
    hi = [max(s.indices(n)[1] for s in (idx[k] for idx in idx_map.values()))
          for k, n in enumerate(global_shape)]
    block = tuple(h - l for l, h in zip(lo, hi))
    if local.shape != block:
        raise ValueError(f"make_array_from_process_local_data: local_data has shape "
                         f"{local.shape} but this process's devices hold a block of shape "
                         f"{block} of the global shape {global_shape}")

    def cb(idx):
        return local[tuple(slice(s.indices(n)[0] - l, s.indices(n)[1] - l)
                           for s, n, l in zip(idx, global_shape, lo))]
    return make_array_from_callback(global_shape, sharding, cb)


# ----------------------------------------------------------------- debug


def visualize_array_sharding(arr, *, use_color=False, scale=1.0, min_width=9, max_width=80,
                             color_map=None):
    """Print which devices hold which block of a 1-D or 2-D array."""
    visualize_sharding(arr.shape, arr.sharding, use_color=use_color, scale=scale,
                       min_width=min_width, max_width=max_width, color_map=color_map)


def visualize_sharding(shape, sharding, *, use_color=False, scale=1.0, min_width=9,
                       max_width=80, color_map=None):
    """Print which devices ``sharding`` puts each block of a 1-D or 2-D ``shape`` on (a
    text grid: one cell per block, labelled with its devices' ids)."""
    shape = tuple(int(d) for d in shape)
    if len(shape) not in (1, 2):
        raise ValueError(f"visualize_sharding only supports 1-D and 2-D shapes, got shape "
                         f"{shape}")
    if not is_sharding(sharding):
        raise TypeError(f"visualize_sharding needs an xform.sharding.Sharding, got "
                        f"{sharding!r}")
    sh = sharding
    m = sh.devices_indices_map(shape)
    shape2 = shape if len(shape) == 2 else (1,) + shape
    blocks = {}
    for d, idx in m.items():
        idx2 = idx if len(shape) == 2 else (slice(None),) + tuple(idx)
        key = tuple(s.indices(n)[:2] for s, n in zip(idx2, shape2))
        blocks.setdefault(key, []).append(d.id)
    rows = sorted({k[0] for k in blocks})
    cols = sorted({k[1] for k in blocks})
    labels = {k: ("CPU " if True else "") + ",".join(str(i) for i in sorted(v))
              for k, v in blocks.items()}
    w = max(min_width, max(len(t) for t in labels.values()) + 2)
    lines = []
    sep = "+" + "+".join("-" * w for _ in cols) + "+"
    lines.append(sep)
    for r in rows:
        lines.append("|" + "|".join(labels.get((r, c), "").center(w) for c in cols) + "|")
        lines.append(sep)
    print("\n".join(lines))


def device_put_sharded_tree(x, device):
    """device_put with shardings: a sharding for every leaf, or a pytree prefix of them."""
    if is_sharding(device):
        return tree_map(lambda leaf: put_leaf(leaf, device), x)
    # a pytree of shardings matching (a prefix of) x
    leaves, treedef = tree_flatten(device, is_leaf=lambda s: s is None or is_sharding(s))
    subtrees = treedef.flatten_up_to(x)
    out = []
    for s, sub in zip(leaves, subtrees):
        if s is None:
            out.append(sub)
        elif is_sharding(s):
            out.append(tree_map(lambda leaf, s=s: put_leaf(leaf, s), sub))
        else:
            from xform import _devices  # deferred: import cycle
            out.append(_devices.device_put(sub, s))
    return tree_unflatten(treedef, out)

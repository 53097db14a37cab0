"""TensorStore reading and writing of ``xform.Array`` shards (see the package doc)."""
from __future__ import annotations

import asyncio
import functools
import math
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from os import PathLike
from typing import Any

import numpy as np
import tensorstore as ts

__all__ = ["async_serialize", "async_deserialize", "get_tensorstore_spec",
           "estimate_read_memory_footprint", "is_tensorstore_spec_leaf",
           "merge_nested_ts_specs", "verify_tensorstore_spec", "combine_kvstores"]

Future = ts.Future
Transaction = ts.Transaction

_TS_ARRAY_DRIVER = "zarr3"
_TS_CONTEXT = ts.Context({
    "file_io_concurrency": {"limit": 128},
    "cache_pool": {"total_bytes_limit": 10_000_000_000},
    "cache_pool#remote": {"total_bytes_limit": 10_000_000_000},
    "data_copy_concurrency": {"limit": 128},
})
_TS_CHUNK_LAYOUT = ts.ChunkLayout(chunk=ts.ChunkLayout.Grid(elements=100_000_000))
_DEFAULT_BASE_DRIVER = "file"
_PROCESS_DIR_FORMAT = "process_{}"
_FILE_SIZE_TARGET = 2 * 1024 ** 3


class _LimitInFlightBytes:
    """Bounds the bytes being read at once (an asyncio condition on a counter)."""

    def __init__(self, num_bytes: int):
        self._max_bytes = num_bytes
        self._available = num_bytes
        self._cv = asyncio.Condition(lock=asyncio.Lock())

    async def wait_for_bytes(self, requested: int):
        if requested > self._max_bytes:
            raise ValueError(f"Requested more bytes than we reserved space for: "
                             f"{requested} > {self._max_bytes}")
        async with self._cv:
            await self._cv.wait_for(lambda: self._available >= requested)
            self._available -= requested

    async def release_bytes(self, requested: int):
        async with self._cv:
            self._available += requested
            self._cv.notify_all()


def is_tensorstore_spec_leaf(leaf: Any) -> bool:
    """A TensorStore spec (a dict with a driver or kvstore) or None."""
    return leaf is None or (isinstance(leaf, dict) and ("driver" in leaf or "kvstore" in leaf))


def _prime_factors(n: int) -> list:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


@functools.lru_cache(maxsize=1024)
def _compute_chunk_shape(local_shape: tuple, dtype, file_size_target: int = _FILE_SIZE_TARGET):
    """A chunk dividing ``local_shape`` of at most ~``file_size_target`` bytes (10% slack):
    repeatedly divide, by its smallest remaining prime factor, the axis whose smallest
    remaining factor is smallest (the first such axis), never splitting an axis down to
    its last prime factor."""
    shape = list(local_shape)
    if not shape or math.prod(shape) == 0:
        return [max(z, 1) for z in shape]
    size = math.prod(shape) * np.dtype(dtype).itemsize
    factors = [_prime_factors(z) for z in shape]
    while size > 1.1 * file_size_target:
        best = None
        for i, f in enumerate(factors):
            if len(f) > 1 and (best is None or f[0] < factors[best][0]):
                best = i
        if best is None:
            break
        d = factors[best].pop(0)
        shape[best] //= d
        size //= d
    return shape


def _dtype_name(dtype) -> str:
    return np.dtype(dtype).name


def _get_tensorstore_metadata(arr, is_remote: bool = False,
                              file_size_target: int = _FILE_SIZE_TARGET,
                              driver: str = _TS_ARRAY_DRIVER) -> dict:
    """The zarr/zarr3 metadata for ``arr``: its shape, dtype and a chunk per shard."""
    shape = tuple(arr.shape)
    sharding = getattr(arr, "sharding", None)
    local = tuple(sharding.shard_shape(shape)) if sharding is not None else shape
    if driver == "zarr3":
        return {"codecs": [{"name": "zstd"}] if is_remote else [],
                "shape": shape, "data_type": _dtype_name(arr.dtype),
                "chunk_grid": {"name": "regular", "configuration": {
                    "chunk_shape": _compute_chunk_shape(local, _dtype_name(arr.dtype),
                                                        file_size_target)}}}
    if driver == "zarr":
        return {"compressor": {"id": "zstd"}, "shape": shape,
                "chunks": [max(1, z) for z in local]}
    raise ValueError(f"Unsupported driver: {driver}")


def merge_nested_ts_specs(dict1: dict, dict2: dict | None) -> dict:
    """``dict1`` updated recursively by ``dict2``."""
    if dict2 is None:
        return dict1
    out = dict(dict1)
    for k, v in dict2.items():
        out[k] = (merge_nested_ts_specs(out[k], v)
                  if isinstance(v, dict) and isinstance(out.get(k), dict) else v)
    return out


def verify_tensorstore_spec(spec: dict, arr=None, path=None, ocdbt: bool = False,
                            check_metadata: bool = True) -> None:
    """Checks that ``spec`` has a driver and kvstore, and metadata agreeing with ``arr``."""
    if not isinstance(spec, dict):
        raise ValueError(f"A TensorStore spec must be a dict, got {type(spec).__name__}")
    if "driver" not in spec or "kvstore" not in spec:
        raise ValueError(f"A TensorStore spec needs 'driver' and 'kvstore' keys: {spec}")
    if arr is not None and check_metadata and "metadata" in spec:
        md = spec["metadata"]
        if "shape" in md and tuple(md["shape"]) != tuple(arr.shape):
            raise ValueError(f"Spec shape {tuple(md['shape'])} does not match the array's "
                             f"shape {tuple(arr.shape)}")


def _spec_has_metadata(tree) -> bool:
    if not isinstance(tree, dict):
        return False
    return "metadata" in tree or any(_spec_has_metadata(v) for v in tree.values())


def get_tensorstore_spec(ckpt_path: str | PathLike, ocdbt: bool = True,
                         process_idx: int | None = None, arr=None,
                         driver: str = _TS_ARRAY_DRIVER) -> dict:
    """The TensorStore spec of an array stored at ``ckpt_path`` (a local path, or
    ``gs://``/``s3://``); with ``ocdbt`` the array is the entry named by the last path
    component inside an OCDBT store at the parent directory."""
    path = os.path.normpath(str(ckpt_path))
    path = re.sub(r"^(gs|s3):/", r"\1://", path)
    if process_idx is not None:
        parent, name = os.path.split(path)
        path = os.path.join(parent, _PROCESS_DIR_FORMAT.format(process_idx), name)
    remote = path.startswith(("gs://", "s3://"))
    entry = None
    if ocdbt:
        full = path
        path, entry = os.path.split(path)
        if remote and re.fullmatch(r"^(gs|s3)://([^/]*)/(.*)$", path) is None:
            raise ValueError("Using OCDBT requires the bucket name, the directory name "
                             f"and the array name, your path is: {full}")
    if path.startswith("gs://"):
        m = re.fullmatch(r"^gs://([^/]*)/(.*)$", path)
        if m is None:
            raise ValueError(f"The ckpt_path should contain the bucket name and the file "
                             f"path inside the bucket. Got: {path}")
        base = {"driver": "gcs", "bucket": m.group(1), "path": m.group(2)}
    elif path.startswith("s3://"):
        m = re.fullmatch(r"^s3://([^/]*)/(.*)$", path)
        if m is None:
            raise ValueError(f"The ckpt_path should contain the bucket name and the file "
                             f"path inside the bucket. Got: {path}")
        base = {"driver": "s3", "bucket": m.group(1), "path": m.group(2)}
    else:
        base = {"driver": _DEFAULT_BASE_DRIVER, "path": path}
    spec: dict = {"driver": driver, "kvstore": {}}
    if ocdbt:
        if not remote and not os.path.isabs(path):
            raise ValueError(f"Checkpoint path should be absolute. Got {path}")
        spec["kvstore"] = {"driver": "ocdbt", "base": base, "path": entry}
    else:
        spec["kvstore"] = base
    if arr is not None:
        spec["metadata"] = _get_tensorstore_metadata(arr, driver=str(spec["driver"]))
    return spec


async def combine_kvstores(combined_kvstore: dict, kvstores: list,
                           context: ts.Context | None = _TS_CONTEXT) -> None:
    """Copies every key of ``kvstores`` into ``combined_kvstore`` in one transaction."""
    combined, opened = await asyncio.gather(
        ts.KvStore.open(combined_kvstore, context=context),
        asyncio.gather(*(ts.KvStore.open(k, context=context) for k in kvstores)))
    tx = ts.Transaction()
    await asyncio.gather(*(k.experimental_copy_range_to(combined.with_transaction(tx))
                           for k in opened))
    await tx.commit_async()


def _host_copy(data) -> np.ndarray:
    return np.asarray(data)


async def async_serialize(arr_inp, tensorstore_spec, commit_future=None,
                          context=_TS_CONTEXT, chunk_layout=_TS_CHUNK_LAYOUT,
                          primary_host: int | None = None, replica_id: int = 0,
                          transaction: ts.Transaction | None = None):
    """Writes ``arr_inp`` (an ``xform.Array`` or NumPy array) to ``tensorstore_spec``:
    each addressable shard with ``replica_id`` goes to its index.  With a
    ``commit_future`` list, the commit futures are appended to it (to be awaited by the
    caller) and this returns once the data is copied; otherwise it waits for the
    commit."""
    import xform  # deferred: import cycle
    if not _spec_has_metadata(tensorstore_spec):
        tensorstore_spec["metadata"] = _get_tensorstore_metadata(
            arr_inp, driver=tensorstore_spec["driver"])
    if tensorstore_spec["driver"] == "zarr" and "dtype" not in tensorstore_spec:
        tensorstore_spec["dtype"] = _dtype_name(arr_inp.dtype)
    if primary_host is None or xform.process_index() == primary_host:
        open_future = ts.open(ts.Spec(tensorstore_spec), create=True, open=True,
                              context=context, chunk_layout=chunk_layout,
                              transaction=transaction)
        if commit_future is not None:
            if not isinstance(commit_future, list):
                raise TypeError("commit_future must be a list (the commit futures are "
                                f"appended to it), got {type(commit_future).__name__}")
            commit_future.append(open_future)
        else:
            await open_future
    t = await ts.open(ts.Spec(tensorstore_spec), open=True, assume_metadata=True,
                      context=context, chunk_layout=chunk_layout, transaction=transaction)
    if isinstance(arr_inp, xform.Array):
        shards = [(s.index, s.replica_id, s.data) for s in arr_inp.addressable_shards]
    else:
        shards = [(tuple(slice(None) for _ in np.shape(arr_inp)), 0, arr_inp)]

    async def write(index, rid, data):
        if rid != replica_id:
            return
        host = _host_copy(data)
        await asyncio.sleep(0)
        fut = t[index].write(host, can_reference_source_data_indefinitely=True)
        if commit_future is not None:
            commit_future.append(fut.commit)
            await fut.copy
        else:
            await fut.commit

    return await asyncio.gather(*(write(*s) for s in shards))


def _run_serialization(arrays, tensorstore_specs):
    """Writes each array to its spec and waits."""
    async def run():
        await asyncio.gather(*(async_serialize(a, s)
                               for a, s in zip(arrays, tensorstore_specs)))
    asyncio.run(run())


def estimate_read_memory_footprint(t: ts.TensorStore, domain: ts.IndexDomain) -> int:
    """Bytes read to load ``domain`` of ``t``: whole chunks covering it."""
    nbytes = t.dtype.numpy_dtype.itemsize
    if domain is None:
        domain = t.domain
    tmpl = t.chunk_layout.read_chunk_template
    if any(not tmpl[i].finite for i in range(t.rank)):
        return domain.size * nbytes
    for i in range(t.rank):
        lo = domain.origin[i] - tmpl.origin[i]
        hi = lo + domain.shape[i]
        c = tmpl.shape[i]
        nbytes *= (-(-hi // c) * c) - (lo // c * c)
    return nbytes


def _sharding_and_dtype(in_type, dtype):
    from xform.experimental.layout import Format  # deferred: keeps `import xform` light
    import xform  # deferred: import cycle
    if isinstance(in_type, Format):
        return in_type.sharding, dtype
    if isinstance(in_type, xform.ShapeDtypeStruct):
        return in_type.sharding, (in_type.dtype if dtype is None else dtype)
    if not isinstance(in_type, xform.sharding.Sharding):
        raise TypeError("sharding passed to deserialization should be specified, concrete "
                        f"and an instance of `jax.sharding.Sharding`. Got {in_type}")
    return in_type, dtype


async def async_deserialize(in_type, tensorstore_spec, global_shape: Sequence[int] | None = None,
                            dtype=None, byte_limiter: _LimitInFlightBytes | None = None,
                            context=_TS_CONTEXT, chunk_layout=_TS_CHUNK_LAYOUT,
                            assume_metadata: bool = False):
    """Reads the array at ``tensorstore_spec`` onto ``in_type`` (a ``Sharding``, a
    ``Format`` or a ``ShapeDtypeStruct`` with a sharding), one read per addressable
    device.  ``global_shape`` larger than the stored shape pads with zeros (smaller
    truncates); ``dtype`` casts on the host."""
    import xform  # deferred: import cycle
    sharding, dtype = _sharding_and_dtype(in_type, dtype)
    t = await ts.open(tensorstore_spec, open=True, assume_metadata=assume_metadata,
                      context=context, chunk_layout=chunk_layout)
    shape = tuple(t.shape if global_shape is None else global_shape)
    shard_shape = tuple(sharding.shard_shape(shape))
    index_map = sharding.devices_indices_map(shape)
    devices = [d for d in index_map if d.process_index == xform.process_index()]

    async def read(device):
        index = index_map[device]
        want = ts.IndexTransform(input_shape=shape)[index].domain
        have = t.domain.intersect(want)
        nbytes = estimate_read_memory_footprint(t, have)
        if byte_limiter is not None:
            await byte_limiter.wait_for_bytes(nbytes)
        out = np.zeros(shard_shape, dtype=t.dtype.numpy_dtype)
        await ts.array(out)[ts.d[:].translate_to[want.origin]][have].write(t[have])
        if dtype is not None:
            out = out.astype(dtype)
        res = xform.device_put(out, xform.sharding.SingleDeviceSharding(device))
        if byte_limiter is not None:
            await byte_limiter.release_bytes(nbytes)
        return res

    pieces = await asyncio.gather(*(read(d) for d in devices))
    out_dtype = xform.dtypes.canonicalize_dtype(dtype if dtype is not None
                                                else t.dtype.numpy_dtype)
    return xform.make_array_from_single_device_arrays(shape, sharding, pieces,
                                                      dtype=out_dtype)


def _run_deserialization(shardings, tensorstore_specs, global_shapes=None, dtypes=None,
                         concurrent_gb: int = 32):
    """Reads each spec onto its sharding (optionally shape/dtype) and returns the list."""
    n = len(list(tensorstore_specs))
    shapes = [None] * n if global_shapes is None else list(global_shapes)
    dts = [None] * n if dtypes is None else list(dtypes)

    async def run():
        limiter = _LimitInFlightBytes(concurrent_gb * 10 ** 9)
        return await asyncio.gather(*(
            async_deserialize(s, sp, g, d, byte_limiter=limiter)
            for s, sp, g, d in zip(shardings, tensorstore_specs, shapes, dts)))
    return list(asyncio.run(run()))

"""``xform.experimental.multihost_utils``: JAX's helpers for programs that run as several
processes (``xform.distributed.initialize``): gather, broadcast, barriers and the
conversion between per-process ("host-local") arrays and global arrays over a mesh.

Written for any number of processes: the cross-process steps are ``jit`` programs
over a mesh of every process's devices (one row per process), whose collectives XLA
runs (gloo between CPU processes).  With one process each function takes its
trivial path (a gather stacks the input once, a broadcast returns it, host-local and
global arrays coincide).
"""
from __future__ import annotations

import zlib

import numpy as np

from xform import sharding as S
from xform.tree_util import tree_flatten, tree_map, tree_unflatten
from xform._src.interpreters.core import Array
from xform._src.interpreters.core import Tracer
from xform.sharding._api import make_array_from_single_device_arrays
from xform.sharding._jit import _broadcast_prefix
from xform import dtypes

__all__ = ["broadcast_one_to_all", "process_allgather", "sync_global_devices",
           "assert_equal", "host_local_array_to_global_array",
           "global_array_to_host_local_array", "reached_preemption_sync_point"]


def _xf():
    """The xform package (its public names), which imports this module itself."""
    import xform  # deferred: import cycle (xform/__init__ imports xform.experimental)
    return xform


def _is_global_array(x):
    """A concrete Array some of whose shards live in other processes."""
    return type(x) is Array and x._buf is not None and not x.is_fully_addressable


def _process_mesh():
    """Every device, one row per process: axes ('processes', 'local_devices')."""
    xf = _xf()
    devs = sorted(xf.devices(), key=lambda d: (d.process_index, d.id))
    return S.Mesh(np.array(devs, dtype=object).reshape(xf.process_count(),
                                                       xf.local_device_count()),
                  ("processes", "local_devices"), (S.AxisType.Auto,) * 2)


def _identity(x):
    return x


def _sum0(xs):
    return tree_map(lambda x: _xf().numpy.sum(x, axis=0, dtype=x.dtype), xs)


def _stack_over_processes(host):
    """The global array whose row p is process p's ``host`` (shape (P,) + host.shape)."""
    xf = _xf()
    mesh = _process_mesh()
    sharding = S.NamedSharding(mesh, S.PartitionSpec("processes"))
    host = np.expand_dims(np.asarray(host), 0)
    bufs = [xf.device_put(host, d) for d in xf.local_devices()]
    return mesh, make_array_from_single_device_arrays(
        (xf.process_count(),) + host.shape[1:], sharding, bufs)


def _allgather_leaf(x, tiled):
    xf = _xf()
    if _is_global_array(x):
        if not tiled:
            raise ValueError("Gathering global non-fully-addressable arrays only supports "
                             "tiled=True")
        mesh = x.sharding.mesh
        out = xf.jit(_identity, out_shardings=S.NamedSharding(mesh, S.PartitionSpec()))(x)
        return np.asarray(out.addressable_data(0))
    host = np.asarray(x)
    if xf.process_count() == 1:
        return host if tiled else np.expand_dims(host, 0)
    mesh, g = _stack_over_processes(host)
    with S.set_mesh(mesh):
        out = xf.jit(_identity, out_shardings=S.PartitionSpec())(g)
    out = np.asarray(out.addressable_data(0))
    if tiled and host.ndim:                      # concatenate instead of stacking
        out = out.reshape((-1,) + host.shape[1:])
    return out


def process_allgather(in_tree, tiled: bool = False):
    """Every process's value of each leaf, as NumPy arrays: stacked on a new leading
    axis (``tiled=False``) or concatenated along axis 0 (``tiled=True``; scalars are
    stacked).  A global array spanning processes is returned whole (``tiled=True``)."""
    return tree_map(lambda x: _allgather_leaf(x, tiled), in_tree)


def broadcast_one_to_all(in_tree, is_source: bool | None = None):
    """Each leaf's value on the source process (process 0 unless ``is_source`` says),
    on every process (NumPy arrays; every process passes the same shapes)."""
    xf = _xf()
    if xf.process_count() == 1:
        return tree_map(np.asarray, in_tree)
    if is_source is None:
        is_source = xf.process_index() == 0
    leaves, treedef = tree_flatten(in_tree)
    mesh = _process_mesh()
    glob = []
    for x in leaves:
        v = np.asarray(x)
        mesh, g = _stack_over_processes(v if is_source else np.zeros_like(v))
        glob.append(g)
    with S.set_mesh(mesh):
        out = xf.jit(_sum0, out_shardings=S.PartitionSpec())(glob)
    return tree_unflatten(treedef, [np.asarray(o.addressable_data(0)) for o in out])


def assert_equal(in_tree, fail_message: str = ""):
    """Raise AssertionError (with ``fail_message``) unless every process holds the same
    values in ``in_tree``."""
    xf = _xf()

    def expected(x):
        if _is_global_array(x):
            return np.asarray(x.addressable_data(0))
        x = np.asarray(x)
        if x.ndim == 0:
            x = np.expand_dims(x, 0)
        return np.concatenate([x] * xf.process_count())

    out = process_allgather(in_tree, tiled=True)
    want = tree_map(expected, in_tree)
    same = tree_map(lambda a, b: bool(np.all(np.equal(a, b))), want, out)
    if not all(tree_flatten(same)[0]):
        raise AssertionError(f"{fail_message}. Expected: {out}; got: {in_tree}.")


def sync_global_devices(name: str):
    """A barrier across every process (and device): returns once all have called it
    with the same ``name`` (a different name on some process raises AssertionError)."""
    h = np.uint32(zlib.crc32(name.encode()))
    assert_equal(h, f"sync_global_devices name mismatch ('{name}')")


def reached_preemption_sync_point(step_id: int) -> bool:
    """True at the step where every process should save a checkpoint after a preemption
    notice (SIGTERM) reached some process: call it at every step from the same starting
    step on all processes.  False when not running as several processes; RuntimeError
    if the preemption service is off (``jax_enable_preemption_service``)."""
    from xform._src.lowering import distributed  # deferred: keeps `import xform` light
    return distributed.reached_preemption_sync_point(step_id)


def _pspecs_per_leaf(name, tree, pspecs):
    flat = _broadcast_prefix(pspecs, tree, name,
                             is_leaf=lambda s: s is None or isinstance(s, S.PartitionSpec))
    for p in flat:
        if p is None:
            raise ValueError("`None` is not a valid input to the pspecs argument. Please use "
                             "jax.sharding.PartitionSpec() if you wanted to replicate your "
                             "input.")
    return flat


def _dim_factor(global_mesh, local_mesh, pspec, ndim):
    """Per dimension: global size / host-local size (the mesh axes it is split over
    that span several processes)."""
    out = []
    spec = tuple(pspec) + (None,) * (ndim - len(pspec))
    for p in spec[:ndim]:
        axes = () if p is None else ((p,) if isinstance(p, str) else tuple(p))
        f = 1
        for a in axes:
            f *= global_mesh.shape[a] // local_mesh.shape[a]
        out.append(f)
    return out


def _check_traced(x, global_mesh, pspec, who):
    if isinstance(x, Tracer):
        if any(f != 1 for f in _dim_factor(global_mesh, global_mesh.local_mesh, pspec,
                                           x.ndim)):
            raise ValueError(f"{who}: under a transformation the host-local and global "
                             "shapes must coincide (one process, or dimensions not split "
                             "over processes); call it outside jit/vmap/grad.")
        return True
    return False


def _is_key(x):
    dt = getattr(x, "dtype", None)
    return dt is not None and dtypes.issubdtype(dt, dtypes.prng_key)


def _via_key_data(convert, x, pspec):
    """``convert`` applied to a typed key array's words (one trailing axis, not split),
    re-wrapped as keys."""
    xf = _xf()
    out = convert(xf.random.key_data(x), S.PartitionSpec(*(tuple(pspec) + (None,) * (
        x.ndim - len(pspec))), None))
    sh = getattr(out, "sharding", None)
    if sh is not None and len(sh.device_set) > 1:
        raise NotImplementedError(
            "xform's typed key arrays live on one device: a key array cannot be laid out "
            f"over {len(sh.device_set)} devices. Convert its words instead "
            "(xform.random.key_data(keys), then xform.random.wrap_key_data where the keys "
            "are used on one device).")
    return xf.random.wrap_key_data(out)


def host_local_array_to_global_array(local_inputs, global_mesh, pspecs):
    """A global Array over ``global_mesh`` laid out as ``pspecs`` (a prefix pytree of
    PartitionSpecs) from each process's host-local part of it: this process's block,
    split over its own devices as ``pspecs`` says."""
    if not isinstance(global_mesh, S.Mesh):
        raise TypeError(f"host_local_array_to_global_array: global_mesh must be a Mesh, got "
                        f"{type(global_mesh).__name__}")
    leaves, treedef = tree_flatten(local_inputs)
    specs = _pspecs_per_leaf("host_local_array_to_global_array pspecs", local_inputs, pspecs)
    xf = _xf()
    out = []
    for x, pspec in zip(leaves, specs):
        if _is_global_array(x):
            out.append(x)
            continue
        if _is_key(x):
            out.append(_via_key_data(lambda d, p: host_local_array_to_global_array(
                d, global_mesh, p), x, pspec))
            continue
        sharding = S.NamedSharding(global_mesh, pspec)
        if _check_traced(x, global_mesh, pspec, "host_local_array_to_global_array"):
            out.append(xf.lax.with_sharding_constraint(x, sharding))
            continue
        local_mesh = global_mesh.local_mesh
        arr = x if isinstance(x, xf.Array) else xf.numpy.asarray(x)
        local_sharding = S.NamedSharding(local_mesh, pspec)
        gshape = tuple(n * f for n, f in zip(arr.shape, _dim_factor(
            global_mesh, local_mesh, pspec, arr.ndim)))
        sharding.shard_shape(gshape)
        pieces = [xf.device_put(arr[idx], d)
                  for d, idx in local_sharding.devices_indices_map(arr.shape).items()]
        out.append(make_array_from_single_device_arrays(gshape, sharding, pieces))
    return tree_unflatten(treedef, out)


def global_array_to_host_local_array(global_inputs, global_mesh, pspecs):
    """This process's host-local part of each global Array (the inverse of
    ``host_local_array_to_global_array``): an Array over this process's devices."""
    if not isinstance(global_mesh, S.Mesh):
        raise TypeError(f"global_array_to_host_local_array: global_mesh must be a Mesh, got "
                        f"{type(global_mesh).__name__}")
    leaves, treedef = tree_flatten(global_inputs)
    specs = _pspecs_per_leaf("global_array_to_host_local_array pspecs", global_inputs, pspecs)
    xf = _xf()
    from xform._src.lowering import spmd  # deferred: keeps `import xform` light
    out = []
    for x, pspec in zip(leaves, specs):
        if _is_key(x):
            out.append(_via_key_data(lambda d, p: global_array_to_host_local_array(
                d, global_mesh, p), x, pspec))
            continue
        if _check_traced(x, global_mesh, pspec, "global_array_to_host_local_array"):
            out.append(x)
            continue
        if not _is_global_array(x):
            out.append(x if isinstance(x, xf.Array) else xf.numpy.asarray(x))
            continue
        sharding = S.NamedSharding(global_mesh, pspec)
        if not x.sharding.is_equivalent_to(sharding, x.ndim):
            x = xf.device_put(x, sharding)
        local_mesh = global_mesh.local_mesh
        lshape = tuple(n // f for n, f in zip(x.shape, _dim_factor(
            global_mesh, local_mesh, pspec, x.ndim)))
        local_sharding = S.NamedSharding(local_mesh, pspec)
        by_dev = {s.device: s.data for s in x.addressable_shards}
        bufs = [spmd.single_device_buf(by_dev[d], d)
                for d in local_sharding.addressable_devices_indices_map(lshape)]
        out.append(spmd.assemble(lshape, x.dtype, local_sharding, bufs))
    return tree_unflatten(treedef, out)

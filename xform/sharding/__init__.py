"""Shardings with JAX's names: ``Mesh``, ``PartitionSpec``, ``NamedSharding``,
``SingleDeviceSharding``, ``make_mesh``, ``set_mesh``.

Pure Python at import (no jaxlib): a mesh holds the runtime's device objects,
which only exist once the runtime is loaded, and conversion to the runtime's
sharding objects happens in ``lowering.spmd`` on first use.  The SPMD work itself
(partitioning programs, collectives) is XLA's: we annotate programs and compile
them with the mesh's devices.
"""
from __future__ import annotations

import contextlib
import enum
import itertools
import math
import threading

import numpy as np

__all__ = ["Mesh", "PartitionSpec", "NamedSharding", "SingleDeviceSharding", "Sharding",
           "make_mesh", "set_mesh", "use_mesh", "get_mesh", "AxisType"]


class _Unconstrained:
    def __repr__(self):
        return "UNCONSTRAINED"


UNCONSTRAINED = _Unconstrained()


class AxisType(str, enum.Enum):
    """Mesh axis kinds (JAX's names, printed bare as JAX prints them); xform treats
    every axis as ``Auto``.  Members equal their names as strings."""
    Auto = "Auto"
    Explicit = "Explicit"
    Manual = "Manual"

    def __repr__(self):
        return self.name

    __str__ = __repr__


def _canon_part(p, i):
    if p is None or p is UNCONSTRAINED or isinstance(p, str):
        return p
    if isinstance(p, (tuple, list)):
        for q in p:
            if not isinstance(q, str):
                raise TypeError(f"PartitionSpec entry {i}: a tuple of mesh axis names must hold "
                                f"strings, got {q!r} in {tuple(p)!r}")
        return tuple(p) if len(p) else None
    raise TypeError(f"PartitionSpec entry {i} must be None, a mesh axis name (str) or a tuple "
                    f"of names, got {p!r} of type {type(p).__name__}")


class PartitionSpec(tuple):
    """How each array dimension is split over mesh axes: ``P('x', None)`` splits
    dimension 0 over mesh axis ``x`` and replicates dimension 1; ``P(('x', 'y'))``
    splits dimension 0 over both axes; missing trailing entries mean ``None``."""

    UNCONSTRAINED = UNCONSTRAINED

    def __new__(cls, *parts):
        return tuple.__new__(cls, tuple(_canon_part(p, i) for i, p in enumerate(parts)))

    def __repr__(self):                       # JAX's form: P('x',), P('x', None), P()
        return "P(" + repr(tuple(self))[1:-1] + ")"

    def _normalized(self) -> tuple:
        t = list(self)
        while t and t[-1] is None:
            t.pop()
        return tuple(t)

    def __eq__(self, other):
        if isinstance(other, PartitionSpec):
            return self._normalized() == other._normalized()
        if isinstance(other, tuple):
            return self._normalized() == PartitionSpec(*other)._normalized()
        return NotImplemented

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash(self._normalized())

    def __reduce__(self):
        return (PartitionSpec, tuple(self))

    def axes(self) -> list:
        """Every mesh axis name this spec mentions, in order."""
        out = []
        for p in self:
            if isinstance(p, str):
                out.append(p)
            elif isinstance(p, tuple):
                out.extend(p)
        return out


P = PartitionSpec

# ----------------------------------------------------------------- meshes

_mesh_state = threading.local()


class Mesh:
    """An n-d array of devices with a name per axis."""

    def __init__(self, devices, axis_names, axis_types=None):
        devs = np.array(devices, dtype=object)
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_names = tuple(axis_names)
        if devs.ndim != len(axis_names):
            raise ValueError(f"Mesh: devices has {devs.ndim} dimensions {devs.shape} but "
                             f"{len(axis_names)} axis names were given {axis_names}; pass one "
                             "name per device-array dimension.")
        for n in axis_names:
            if not isinstance(n, str):
                raise TypeError(f"Mesh axis names must be strings, got {n!r}")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh axis names must be unique, got {axis_names}")
        ids = [d.id for d in devs.flat]
        if len(set(ids)) != len(ids):
            raise ValueError(f"Mesh: devices must be distinct, got ids {ids}")
        self.devices = devs
        self.axis_names = axis_names
        if isinstance(axis_types, (str, AxisType)):
            axis_types = (axis_types,)
        self.axis_types = tuple(AxisType(str(t).rsplit(".", 1)[-1]) for t in axis_types) \
            if axis_types is not None else (AxisType.Auto,) * len(axis_names)
        self._key = (tuple(ids), axis_names, devs.shape)
        self._prev = []

    @property
    def shape(self) -> dict:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple:
        return tuple(self.devices.shape)

    @property
    def shape_tuple(self):
        return tuple(zip(self.axis_names, self.devices.shape))

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def empty(self) -> bool:
        return self.devices.size == 0

    @property
    def device_ids(self):
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self):
        return [d for d in self.devices.flat if _is_local(d)]

    @property
    def is_multi_process(self) -> bool:
        return len({d.process_index for d in self.devices.flat}) > 1

    @property
    def abstract_mesh(self):
        return self

    def __eq__(self, other):
        return isinstance(other, Mesh) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __str__(self):
        names = "".join(f"'{n}': {s}, " for n, s in self.shape.items())
        return f"Mesh({names}axis_types={tuple(self.axis_types)!r})"

    def __repr__(self):
        return (f"Mesh(axis_sizes={self.devices.shape!r}, axis_names={self.axis_names!r}, "
                f"axis_types={tuple(self.axis_types)!r})")

    # `with mesh:` makes it the current mesh (as set_mesh does)
    def __enter__(self):
        self._prev.append(get_mesh())
        _mesh_state.mesh = self
        return self

    def __exit__(self, *exc):
        _mesh_state.mesh = self._prev.pop()
        return False


def _is_local(d):
    from xform._src.lowering import spmd
    return d.process_index == spmd.process_index()


def get_mesh():
    """The mesh set by ``set_mesh``/``with mesh`` (None if none)."""
    return getattr(_mesh_state, "mesh", None)


class _MeshContext:
    def __init__(self, mesh):
        self._prev = get_mesh()
        self.mesh = mesh
        _mesh_state.mesh = mesh

    def __enter__(self):
        return self.mesh

    def __exit__(self, *exc):
        _mesh_state.mesh = self._prev
        return False


def set_mesh(mesh):
    """Make ``mesh`` the current mesh; usable as a context manager that restores the
    previous one on exit."""
    if mesh is not None and not isinstance(mesh, Mesh):
        raise TypeError(f"set_mesh expects a Mesh (or None), got {type(mesh).__name__}")
    return _MeshContext(mesh)


@contextlib.contextmanager
def use_mesh(mesh):
    with set_mesh(mesh):
        yield mesh


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None):
    """A mesh of ``prod(axis_shapes)`` devices (the first ones of ``xform.devices()``)."""
    axis_shapes = tuple(int(s) for s in axis_shapes)
    if isinstance(axis_names, str):
        axis_names = (axis_names,)
    axis_names = tuple(axis_names)
    if len(axis_shapes) != len(axis_names):
        raise ValueError(f"make_mesh: axis_shapes {axis_shapes} and axis_names {axis_names} "
                         "must have the same length")
    if devices is None:
        from xform import _devices
        devices = _devices.devices()
    devices = list(devices)
    n = math.prod(axis_shapes)
    if n > len(devices):
        raise ValueError(f"make_mesh: the mesh shape {axis_shapes} needs {n} devices but only "
                         f"{len(devices)} are available; on CPU set "
                         f"XLA_FLAGS=--xla_force_host_platform_device_count={n} before the "
                         "first computation.")
    if n != len(devices) and devices is not None:
        devices = devices[:n]
    return Mesh(np.array(devices, dtype=object).reshape(axis_shapes), axis_names, axis_types)


# ----------------------------------------------------------------- shardings


class Sharding:
    """Base class of shardings: how a global array's elements map to devices."""

    memory_kind = None

    def devices_indices_map(self, global_shape) -> dict:
        raise NotImplementedError

    def addressable_devices_indices_map(self, global_shape) -> dict:
        return {d: i for d, i in self.devices_indices_map(global_shape).items() if _is_local(d)}

    @property
    def addressable_devices(self) -> set:
        return {d for d in self.device_set if _is_local(d)}

    @property
    def is_fully_addressable(self) -> bool:
        return all(_is_local(d) for d in self.device_set)

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    def with_memory_kind(self, kind):
        return self

    def is_equivalent_to(self, other, ndim) -> bool:
        shape = (8 * 9 * 5 * 7,) * ndim
        return self.devices_indices_map(shape) == other.devices_indices_map(shape)


def _slices_key(idx):
    return tuple((s.start, s.stop) for s in idx)


def _canonical_memory_kind(device, kind):
    """``kind``, or the device's default memory kind when None (JAX canonicalizes the
    same way, so a default sharding prints ``memory_kind=device``); a kind the device
    cannot address raises JAX's ValueError."""
    default = getattr(device, "default_memory", None)
    if default is None:
        return kind
    try:
        kinds = [m.kind for m in device.addressable_memories()]
        default_kind = default().kind
    except Exception:       # a runtime without memory spaces: keep what was given
        return kind
    if kind is None:
        return default_kind
    if kind not in kinds:
        raise ValueError(f"Could not find memory addressable by device "
                         f"{getattr(device, 'device_kind', device)}. Device "
                         f"{getattr(device, 'device_kind', device)} can address the following "
                         f"memory kinds: {', '.join(kinds)}. Got memory kind: {kind}")
    return kind


class SingleDeviceSharding(Sharding):
    def __init__(self, device, *, memory_kind=None):
        self._device = device
        self.memory_kind = _canonical_memory_kind(device, memory_kind)

    @property
    def device_set(self):
        return {self._device}

    @property
    def is_fully_replicated(self):
        return True

    def devices_indices_map(self, global_shape):
        return {self._device: tuple(slice(None) for _ in global_shape)}

    def shard_shape(self, global_shape):
        return tuple(global_shape)

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other._device == self._device \
            and other.memory_kind == self.memory_kind

    def __hash__(self):
        return hash(("sds", self._device.id, self.memory_kind))

    def __repr__(self):
        mem = "" if self.memory_kind is None else f", memory_kind={self.memory_kind}"
        return f"SingleDeviceSharding(device={self._device!r}{mem})"

    def with_memory_kind(self, kind):
        return SingleDeviceSharding(self._device, memory_kind=kind)


class NamedSharding(Sharding):
    """Shards an array over ``mesh`` as ``spec`` says."""

    def __init__(self, mesh, spec=PartitionSpec(), *, memory_kind=None):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding: mesh must be a Mesh, got {type(mesh).__name__}")
        if spec is None:
            spec = PartitionSpec()
        elif not isinstance(spec, PartitionSpec):
            if isinstance(spec, (tuple, list)):
                spec = PartitionSpec(*spec)
            else:
                raise TypeError(f"NamedSharding: spec must be a PartitionSpec, got {spec!r}")
        seen = set()
        for a in spec.axes():
            if a not in mesh.shape:
                raise ValueError(f"Resource axis: {a} of {spec} is not found in mesh: "
                                 f"{tuple(mesh.axis_names)}.")
            if a in seen:
                raise ValueError(f"A single NamedSharding spec specification can map every mesh "
                                 f"axis to at most one positional dimension, but {spec} has "
                                 f"duplicate entries for `{a}`")
            seen.add(a)
        self.mesh = mesh
        self.spec = spec
        self.memory_kind = _canonical_memory_kind(mesh.devices.flat[0], memory_kind) \
            if mesh.devices.size else memory_kind

    def __eq__(self, other):
        return isinstance(other, NamedSharding) and self.mesh == other.mesh and \
            self.spec == other.spec and self.memory_kind == other.memory_kind

    def __hash__(self):
        return hash((self.mesh, self.spec, self.memory_kind))

    def __repr__(self):
        mem = "" if self.memory_kind is None else f", memory_kind={self.memory_kind}"
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}{mem})"

    def with_memory_kind(self, kind):
        return NamedSharding(self.mesh, self.spec, memory_kind=kind)

    @property
    def device_set(self):
        return set(self.mesh.devices.flat)

    @property
    def _device_assignment(self):
        return list(self.mesh.devices.flat)

    @property
    def is_fully_replicated(self):
        return all(self.mesh.shape[a] == 1 for a in self.spec.axes())

    def _dim_parts(self, ndim):
        spec = tuple(self.spec)
        if len(spec) > ndim:
            raise ValueError(f"One of the sharding specs {self.spec} has {len(spec)} entries "
                             f"but the array has rank {ndim}; a PartitionSpec needs at most one "
                             "entry per dimension.")
        out = []
        for p in spec + (None,) * (ndim - len(spec)):
            if p is None or p is UNCONSTRAINED:
                out.append(())
            elif isinstance(p, str):
                out.append((p,))
            else:
                out.append(tuple(p))
        return out

    def shard_shape(self, global_shape):
        global_shape = tuple(global_shape)
        parts = self._dim_parts(len(global_shape))
        out = []
        for d, (n, axes) in enumerate(zip(global_shape, parts)):
            k = math.prod(self.mesh.shape[a] for a in axes)
            if n % k:
                raise ValueError(
                    f"The sharding {self.spec} splits dimension {d} of an array of shape "
                    f"{global_shape} over mesh axes {axes}, which implies that the global size "
                    f"of its dimension {d} should be divisible by {k}, but it is equal to {n}; "
                    f"choose a shape divisible by {k} or another PartitionSpec.")
            out.append(n // k)
        return tuple(out)

    def devices_indices_map(self, global_shape):
        global_shape = tuple(global_shape)
        shard = self.shard_shape(global_shape)
        parts = self._dim_parts(len(global_shape))
        names = self.mesh.axis_names
        sizes = self.mesh.devices.shape
        out = {}
        for pos in itertools.product(*[range(s) for s in sizes]):
            coord = dict(zip(names, pos))
            idx = []
            for d, axes in enumerate(parts):
                if not axes:
                    idx.append(slice(None))
                    continue
                k = 0
                for a in axes:          # the first axis is the slowest
                    k = k * self.mesh.shape[a] + coord[a]
                idx.append(slice(k * shard[d], (k + 1) * shard[d]))
            out[self.mesh.devices[pos]] = tuple(idx)
        return out


__all__ += ["reshard"]


def get_abstract_mesh():
    """The current mesh (xform's meshes double as their abstract form)."""
    return get_mesh()


def use_abstract_mesh(mesh):
    return set_mesh(mesh)


def make_single_device_sharding(device):
    return SingleDeviceSharding(device)


__all__ += ["get_abstract_mesh", "use_abstract_mesh", "make_single_device_sharding"]


def _install():
    """Hand this module's classes to the layers below (they must not import xform)."""
    import sys

    import xform._src.primitives.spmd as _ps
    _ps.PartitionSpec = PartitionSpec
    _ps.sharding_api = sys.modules[__name__]


_install()


# ``reshard`` and ``with_sharding_constraint`` (one definition, in ``_jit``) read the types
# above at call time only, so the submodule can load once they exist.
from xform.sharding._jit import reshard, with_sharding_constraint  # noqa: E402,F401

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
import collections
import enum
import itertools
import math
import threading
import weakref

import numpy as np
from xform._src.interpreters import core
from xform._src.interpreters import core as _core
from xform._src.interpreters.core import ShapedArray as _SA
import xform._src.primitives.spmd as _ps
import functools
import sys

__all__ = ["Mesh", "PartitionSpec", "NamedSharding", "SingleDeviceSharding", "Sharding",
           "make_mesh", "set_mesh", "use_mesh", "get_mesh", "AxisType", "AbstractMesh",
           "AbstractDevice"]


class _Unconstrained:
    def __repr__(self):
        return "UNCONSTRAINED"


UNCONSTRAINED = _Unconstrained()


class AxisType(enum.Enum):
    """How a mesh axis is partitioned (JAX's ``jax.sharding.AxisType``).

    ``Auto``: XLA's partitioner chooses how values are split over the axis (shardings
    are constraints); ``Explicit``: the user says how (``reshard``), and the sharding is
    kept as given; ``Manual``: code inside ``shard_map`` sees per-device shards.  A mesh
    records one per axis; ``Mesh.are_all_axes_explicit`` and friends read them."""
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


def _normalize_axis_types(axis_names, axis_types, who):
    if axis_types is None:
        axis_types = (AxisType.Auto,) * len(axis_names)
    if not isinstance(axis_types, tuple):
        axis_types = (axis_types,) if isinstance(axis_types, AxisType) else \
            (tuple(axis_types) if isinstance(axis_types, list) else (axis_types,))
    if not all(isinstance(a, AxisType) for a in axis_types):
        raise TypeError(f"axis_types passed to {who} must be of type `jax.sharding.AxisType`."
                        f" Got {axis_types} of type {tuple(type(a) for a in axis_types)}")
    if len(axis_names) != len(axis_types):
        raise ValueError("Number of axis names should match the number of axis_types. Got"
                         f" axis_names={axis_names} and axis_types={axis_types}")
    return axis_types


class _BaseMesh:
    """What concrete and abstract meshes share: axis names, sizes and types."""

    @property
    def shape(self) -> "collections.OrderedDict":
        return collections.OrderedDict(self.shape_tuple)

    @property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.axis_sizes))

    def _all(self, t):
        return bool(self.axis_types) and all(a == t for a in self.axis_types)

    def _names_of(self, t):
        return tuple(n for n, a in zip(self.axis_names, self.axis_types) if a == t)

    are_all_axes_auto = property(lambda self: self._all(AxisType.Auto))
    are_all_axes_explicit = property(lambda self: self._all(AxisType.Explicit))
    are_all_axes_manual = property(lambda self: self._all(AxisType.Manual))
    auto_axes = property(lambda self: self._names_of(AxisType.Auto))
    explicit_axes = property(lambda self: self._names_of(AxisType.Explicit))
    manual_axes = property(lambda self: self._names_of(AxisType.Manual))
    _any_axis_auto = property(lambda self: AxisType.Auto in self.axis_types)
    _any_axis_explicit = property(lambda self: AxisType.Explicit in self.axis_types)
    _any_axis_manual = property(lambda self: AxisType.Manual in self.axis_types)

    @property
    def _name_to_type(self) -> dict:
        return dict(zip(self.axis_names, self.axis_types))


class AbstractDevice:
    """The kind of device an abstract mesh stands for (no device object)."""
    __slots__ = ("device_kind", "num_cores", "platform")

    def __init__(self, device_kind, num_cores=None, platform=None):
        self.device_kind, self.num_cores, self.platform = device_kind, num_cores, platform

    def _key(self):
        return (self.device_kind, self.num_cores, self.platform)

    def __eq__(self, other):
        return isinstance(other, AbstractDevice) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _repr(self):
        return (f"device_kind={self.device_kind}, num_cores={self.num_cores}, "
                f"platform={self.platform}")

    def __repr__(self):
        return f"AbstractDevice({self._repr()})"


_interned_meshes = weakref.WeakValueDictionary()


class AbstractMesh(_BaseMesh):
    """A mesh without devices: axis sizes, names and types (JAX's ``AbstractMesh``).

    What code sees as the current mesh inside ``jit`` (``get_abstract_mesh()``) and what
    shardings over a mesh of any devices of that shape can name; ``Mesh.abstract_mesh``
    gives a mesh's.  Equal arguments make equal (and equally hashed) meshes."""

    __slots__ = ("axis_sizes", "axis_names", "axis_types", "abstract_device", "size")

    def __new__(cls, axis_sizes, axis_names, axis_types=None, *, abstract_device=None):
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_sizes, axis_names = tuple(axis_sizes), tuple(axis_names)
        if len(axis_sizes) != len(axis_names):
            raise ValueError(f"AbstractMesh: {len(axis_sizes)} axis sizes {axis_sizes} but "
                             f"{len(axis_names)} axis names {axis_names}; give one name per "
                             "size.")
        for n in axis_names:
            if not isinstance(n, str):
                raise TypeError(f"AbstractMesh axis names must be strings, got {n!r}")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"AbstractMesh axis names must be unique, got {axis_names}")
        axis_types = _normalize_axis_types(axis_names, axis_types, "AbstractMesh")
        key = (axis_sizes, axis_names, axis_types, abstract_device)
        obj = _interned_meshes.get(key)      # equal arguments: the same object, as JAX
        if obj is None:
            obj = object.__new__(cls)
            for k, v in zip(("axis_sizes", "axis_names", "axis_types", "abstract_device"), key):
                object.__setattr__(obj, k, v)
            object.__setattr__(obj, "size", math.prod(axis_sizes) if axis_sizes else 0)
            _interned_meshes[key] = obj
        return obj

    def __setattr__(self, name, value):
        raise AttributeError(f"AbstractMesh is immutable: cannot set {name!r}; use "
                             ".update(...) for a changed copy")

    def _key(self):
        return (self.axis_sizes, self.axis_names, self.axis_types, self.abstract_device)

    def __eq__(self, other):
        return isinstance(other, AbstractMesh) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __reduce__(self):
        return (_make_abstract_mesh, (self.axis_sizes, self.axis_names, self.axis_types,
                                      self.abstract_device))

    def __repr__(self):
        body = ", ".join(f"'{n}': {v}" for n, v in self.shape_tuple) or "()"
        ad = "" if self.abstract_device is None else f", {self.abstract_device._repr()}"
        return f"AbstractMesh({body}, axis_types={self.axis_types}{ad})"

    def update(self, axis_sizes=None, axis_names=None, axis_types=None, **kwargs):
        kwargs.setdefault("abstract_device", self.abstract_device)
        return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                            self.axis_names if axis_names is None else axis_names,
                            self.axis_types if axis_types is None else axis_types, **kwargs)

    def update_axis_types(self, name_to_type: dict):
        return self.update(axis_types=tuple(name_to_type.get(n, t) for n, t in
                                            zip(self.axis_names, self.axis_types)))

    @property
    def empty(self) -> bool:
        return self.size == 0

    @property
    def abstract_mesh(self):
        return self

    def _no(name):
        def f(self, *a):
            raise ValueError(f"AbstractMesh does not implement {name}")
        return f

    devices = property(_no("devices"))
    device_ids = property(_no("device_ids"))
    is_multi_process = property(_no("is_multi_process"))
    local_devices = property(_no("local_devices"))
    local_mesh = property(_no("local_mesh"))
    __enter__ = _no("__enter__")
    __exit__ = _no("__exit__")
    del _no


def _make_abstract_mesh(sizes, names, types, device):
    return AbstractMesh(sizes, names, types, abstract_device=device)


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


class Mesh(_BaseMesh):
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
        empty = not axis_names and devs.flat[0] is None    # JAX's empty mesh
        ids = [] if empty else [d.id for d in devs.flat]
        if len(set(ids)) != len(ids):
            raise ValueError(f"Mesh: devices must be distinct, got ids {ids}")
        self.devices = devs
        self.axis_names = axis_names
        self.axis_types = _normalize_axis_types(axis_names, axis_types, "Mesh")
        self._key = (tuple(ids), axis_names, devs.shape, self.axis_types)
        self._prev = []

    @property
    def axis_sizes(self) -> tuple:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return 0 if not self._key[0] else int(self.devices.size)

    @property
    def empty(self) -> bool:
        return self.size == 0

    @property
    def device_ids(self):
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self):
        return [d for d in self.devices.flat if _is_local(d)]

    @property
    def local_mesh(self) -> "Mesh":
        """The sub-mesh of this process's devices (they must form a box of the mesh)."""
        if self.empty or not self.is_multi_process:
            return self
        from xform._src.lowering import spmd  # deferred: keeps `import xform` light
        me = spmd.process_index()
        local = np.vectorize(lambda d: d.process_index == me, otypes=[bool])(self.devices)
        box = []
        for ax in range(local.ndim):
            hit = np.flatnonzero(local.any(axis=tuple(a for a in range(local.ndim) if a != ax)))
            box.append(slice(int(hit.min()), int(hit.max()) + 1))
        if not local[tuple(box)].all():
            raise ValueError("When passing host local inputs to pjit, devices connected to a "
                             "single host must form a contiguous subcube of the global device "
                             "mesh")
        return Mesh(self.devices[tuple(box)], self.axis_names, self.axis_types)

    @property
    def is_multi_process(self) -> bool:
        return len({d.process_index for d in self.devices.flat}) > 1

    @property
    def abstract_mesh(self) -> AbstractMesh:
        """This mesh without its devices (the kind of device is kept)."""
        if not self.axis_names:
            return AbstractMesh((), ())
        d = self.devices.flat[0]
        platform = getattr(d, "platform", None)
        cores = getattr(d, "num_cores", None) if platform == "tpu" else \
            getattr(d, "core_count", None) if platform == "gpu" else None
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types,
                            abstract_device=AbstractDevice(getattr(d, "device_kind", platform),
                                                           cores, platform))

    def __eq__(self, other):
        return isinstance(other, Mesh) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __str__(self):
        if self.empty:
            return "Mesh()"
        names = ", ".join(f"'{n}': {s}" for n, s in self.shape.items())
        return f"Mesh({names}, axis_types={tuple(self.axis_types)!r})"

    def __repr__(self):
        if self.empty:
            return "Mesh(axis_sizes=(), axis_names=())"
        return (f"Mesh(axis_sizes={self.devices.shape!r}, axis_names={self.axis_names!r}, "
                f"axis_types={tuple(self.axis_types)!r})")

    # `with mesh:` makes it the current mesh (as set_mesh does)
    def __enter__(self):
        self._prev.append((_context_mesh(), getattr(_mesh_state, "abstract", None)))
        _mesh_state.mesh = self
        _mesh_state.abstract = None
        return self

    def __exit__(self, *exc):
        _mesh_state.mesh, _mesh_state.abstract = self._prev.pop()
        return False


def _is_local(d):
    from xform._src.lowering import spmd  # deferred: keeps `import xform` light
    return d.process_index == spmd.process_index()


def _context_mesh():
    """The concrete mesh set by ``set_mesh``/``with mesh`` (None if none)."""
    return getattr(_mesh_state, "mesh", None)


def get_mesh():
    """The concrete mesh set by ``set_mesh``/``with mesh`` (an empty ``Mesh`` if none).
    Outside transformations only: under ``jit`` use ``get_abstract_mesh()``."""
    if core.current_trace() is not core.EVAL_TRACE:
        raise ValueError("`get_mesh` can only be used outside of `jax.jit`. Maybe you want "
                         "`jax.sharding.get_abstract_mesh()`?")
    m = _context_mesh()
    return Mesh(np.empty((), dtype=object), ()) if m is None else m


def get_abstract_mesh():
    """The current mesh without devices: the one ``use_abstract_mesh`` set, else the
    abstract form of the concrete mesh ``set_mesh`` set, else an empty ``AbstractMesh``
    (``.empty`` is True)."""
    am = getattr(_mesh_state, "abstract", None)
    if am is not None:
        return am
    m = _context_mesh()
    return AbstractMesh((), ()) if m is None else m.abstract_mesh


class _MeshContext:
    def __init__(self, mesh):
        self._prev = (_context_mesh(), getattr(_mesh_state, "abstract", None))
        self.mesh = mesh
        _mesh_state.mesh = mesh
        _mesh_state.abstract = None

    def __enter__(self):
        return self.mesh

    def __exit__(self, *exc):
        _mesh_state.mesh, _mesh_state.abstract = self._prev
        return False


def set_mesh(mesh):
    """Make ``mesh`` the current mesh (``get_mesh``, ``get_abstract_mesh``, bare
    PartitionSpecs in ``jit``/``reshard`` read it); usable as a context manager that
    restores the previous one on exit."""
    if mesh is not None and not isinstance(mesh, Mesh):
        raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)} (an "
                         "AbstractMesh goes to use_abstract_mesh)")
    if core.current_trace() is not core.EVAL_TRACE:
        raise ValueError("`set_mesh` can only be used outside of `jax.jit`.")
    if mesh is not None and mesh._any_axis_manual:
        raise ValueError(f"mesh {mesh} contains manual axes which is not allowed when using "
                         "`jax.set_mesh`. Please use `jax.shard_map` to enter into `Manual` "
                         "mode instead.")
    return _MeshContext(mesh)


@contextlib.contextmanager
def use_mesh(mesh):
    with set_mesh(mesh):
        yield mesh


@contextlib.contextmanager
def use_abstract_mesh(mesh):
    """Within the block, ``get_abstract_mesh()`` is ``mesh`` (an ``AbstractMesh``)."""
    if not isinstance(mesh, AbstractMesh):
        raise ValueError(f"Expected mesh of type `jax.sharding.AbstractMesh`. Got "
                         f"{type(mesh)}")
    cur = get_abstract_mesh()
    if not cur.empty and not mesh.empty and cur.size != mesh.size:
        raise ValueError(f"use_abstract_mesh cannot change the size of the mesh. Got new mesh: "
                         f"{mesh} with size={mesh.size} and prev mesh: {cur} with "
                         f"size={cur.size}")
    with _abstract_mesh_scope(mesh):
        yield


@contextlib.contextmanager
def _abstract_mesh_scope(mesh):
    """``get_abstract_mesh()`` is ``mesh`` within (no size check: shard_map/pmap bodies
    over a mesh of their own)."""
    prev = getattr(_mesh_state, "abstract", None)
    _mesh_state.abstract = mesh
    try:
        yield
    finally:
        _mesh_state.abstract = prev


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
        from xform import _devices  # deferred: import cycle
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
    if axis_types is None:                   # JAX's default: every axis Explicit
        axis_types = (AxisType.Explicit,) * len(axis_shapes)
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

    @property
    def _device_assignment(self) -> list:
        """The devices in the sharding's order (JAX's private name, which checkpointing
        libraries read); by device id unless a subclass has its own order."""
        return sorted(self.device_set, key=lambda d: d.id)

    @property
    def _addressable_device_assignment(self) -> list:
        """``_device_assignment``'s devices that belong to this process, in order."""
        return [d for d in self._device_assignment if _is_local(d)]

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

    @property
    def _device_assignment(self):
        return [self._device]

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
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"NamedSharding: mesh must be a Mesh or an AbstractMesh, got "
                            f"{type(mesh).__name__}")
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
            if isinstance(mesh, Mesh) and mesh.devices.size else memory_kind

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

    def update(self, *, mesh=None, spec=None, memory_kind=None):
        """This sharding with ``mesh``/``spec``/``memory_kind`` replaced (JAX's ``update``;
        a tuple ``spec`` becomes a PartitionSpec)."""
        return NamedSharding(self.mesh if mesh is None else mesh,
                             self.spec if spec is None else spec,
                             memory_kind=self.memory_kind if memory_kind is None
                             else memory_kind)

    @property
    def device_set(self):
        return set(self.mesh.devices.flat)

    def _concrete(self, mesh):
        """This sharding over the concrete ``mesh`` when its mesh is abstract (a mesh
        of the same axis names and sizes)."""
        if isinstance(self.mesh, Mesh):
            return self
        if mesh is None or mesh.axis_names != self.mesh.axis_names or \
                mesh.axis_sizes != self.mesh.axis_sizes:
            raise ValueError(f"{self!r} names an abstract mesh; it needs a concrete mesh of the "
                             f"same axis names and sizes in context (set_mesh), got "
                             f"{mesh if mesh is not None else 'none'}")
        return NamedSharding(mesh, self.spec, memory_kind=self.memory_kind)

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


def make_single_device_sharding(device, *, memory_kind=None):
    """``SingleDeviceSharding(device, memory_kind=memory_kind)``."""
    return SingleDeviceSharding(device, memory_kind=memory_kind)


__all__ += ["get_abstract_mesh", "use_abstract_mesh", "make_single_device_sharding",
            "auto_axes", "explicit_axes"]


def _axis_mode(fun, axes, mode, who, need_mesh):
    """``fun`` run with ``axes`` (every mesh axis if None) of the current mesh as
    ``mode`` (what ``get_abstract_mesh()`` reports inside)."""
    am = get_abstract_mesh()
    if am.empty:
        if need_mesh:
            raise ValueError("Context mesh cannot be empty. Please use `jax.set_mesh` API to "
                             f"enter into a mesh context when using `{who}` API.")
        return None
    names = am.axis_names if axes is None else ((axes,) if isinstance(axes, str)
                                                else tuple(axes))
    for n in names:
        if n not in am.axis_names:
            raise ValueError(f"{who}: axis {n!r} is not an axis of the current mesh {am}")
    return am.update_axis_types({n: mode for n in names})


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
    """``f`` with mesh ``axes`` in ``Auto`` mode inside (XLA chooses how values are split
    over them); its outputs are resharded to ``out_sharding`` (given here or as a
    keyword argument of the call)."""
    if f is None:
        return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        out_sh = out_sharding
        if out_sh is None:
            if "out_sharding" not in kwargs:
                raise TypeError("Missing required keyword argument: 'out_sharding'")
            out_sh = kwargs.pop("out_sharding")
        new = _axis_mode(f, axes, AxisType.Auto, "auto_axes", False)
        if new is None:
            return f(*args, **kwargs)
        with use_abstract_mesh(new):
            out = f(*args, **kwargs)
        return reshard(out, out_sh)
    return wrapped


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
    """``f`` with mesh ``axes`` in ``Explicit`` mode inside; its arguments are resharded
    to ``in_sharding`` (given here or as a keyword argument of the call) first."""
    if f is None:
        return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        in_sh = in_sharding
        if in_sh is None:
            if "in_sharding" not in kwargs:
                raise TypeError("Missing required keyword argument: 'in_sharding'")
            in_sh = kwargs.pop("in_sharding")
        new = _axis_mode(f, axes, AxisType.Explicit, "explicit_axes", True)
        with use_abstract_mesh(new):
            return f(*reshard(args, in_sh), **kwargs)
    return wrapped


def _type_sharding(aval):
    """The sharding that is part of an abstract value's type: with xform's shardings
    decided by XLA's partitioner, an unsharded spec over the current abstract mesh
    (what JAX reports for Auto axes)."""
    return NamedSharding(get_abstract_mesh(), PartitionSpec(*(None,) * len(aval.shape)))


def _typeof_sharding(x, aval):
    """``typeof(x)`` for a concrete array laid out over a mesh with Explicit axes: its
    type carries the array's sharding over those axes (``float32[8@x,4]``)."""
    js = getattr(getattr(x, "_buf", None), "_sharding", None)     # the runtime's sharding
    if type(js).__name__ != "NamedSharding":        # one device, no mesh: the type is plain
        return aval
    sh = x.sharding
    if not isinstance(sh, NamedSharding) or not isinstance(sh.mesh, Mesh) or \
            not sh.mesh._any_axis_explicit:
        return aval
    explicit = set(sh.mesh.explicit_axes)
    parts = []
    for p in tuple(sh.spec) + (None,) * (len(aval.shape) - len(sh.spec)):
        if p is None or p is UNCONSTRAINED:
            parts.append(None)
        else:
            q = tuple(a for a in ((p,) if isinstance(p, str) else p) if a in explicit)
            parts.append(None if not q else q[0] if len(q) == 1 else q)
    return _make_sharded_aval(aval, NamedSharding(sh.mesh.abstract_mesh, PartitionSpec(*parts)))


_sharded_aval_cls = None


def _make_sharded_aval(aval, sharding):
    global _sharded_aval_cls
    if _sharded_aval_cls is None:

        class ShapedArrayWithSharding(_SA):
            """A ``ShapedArray`` whose type includes a sharding over Explicit mesh axes."""
            __slots__ = ("_sharding",)

            def __init__(self, aval, sharding):
                _SA.__init__(self, aval.shape, aval.dtype, aval.weak_type)
                self._sharding = sharding

            @property
            def sharding(self):
                return self._sharding

            def strip_sharding(self):
                return _SA(self.shape, self.dtype, self.weak_type)

            def __eq__(self, other):
                return isinstance(other, _SA) and self.shape == other.shape and \
                    self.dtype == other.dtype and self.weak_type == other.weak_type and \
                    self.sharding == other.sharding

            def __hash__(self):
                return hash((self.shape, self.dtype, self.weak_type, self._sharding))

            def str_short(self, short_dtypes=True):
                base = _SA.str_short(self, short_dtypes)
                dims = [str(d) if p is None else
                        f"{d}@{p if isinstance(p, str) else '(' + ','.join(p) + ')'}"
                        for d, p in zip(self.shape, tuple(self._sharding.spec))]
                return f"{base[:base.index('[')]}[{','.join(dims)}]"

            def __str__(self):
                return self.str_short(short_dtypes=False)

            def __repr__(self):
                return f"ShapedArray({self})"

        _sharded_aval_cls = ShapedArrayWithSharding
    return _sharded_aval_cls(aval, sharding)


def _install():
    """Hand this module's classes to the layers below (they must not import xform)."""

    _ps.PartitionSpec = PartitionSpec
    _ps.sharding_api = sys.modules[__name__]
    _core.type_sharding_impl = _type_sharding


_install()


# ``reshard`` and ``with_sharding_constraint`` (one definition, in ``_jit``) read the types
# above at call time only, so the submodule can load once they exist.
from xform.sharding._jit import reshard, with_sharding_constraint  # noqa: E402,F401

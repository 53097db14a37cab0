"""The data an export records, in plain form: calling-convention versions and platforms,
safety checks, pytrees (and the registry of custom node types), avals, meshes and
shardings (``NamedSharding`` over an ``AbstractMesh``); the FlatBuffer itself is
``lowering/export_flatbuf.py``."""
from __future__ import annotations

import json
import numpy as np

from xform._src.interpreters import tree_util as _tu
from xform._src.interpreters.core import ShapedArray
from xform._src.lowering import export_flatbuf as _fb
from xform import sharding
from xform._src import lowering
from xform._src.interpreters import dtypes
from xform._src.interpreters.dtypes import float0
from xform._src.interpreters.dtypes import is_extended
from xform._src.primitives.prng import KEY_DTYPE
from xform.sharding import NamedSharding
from xform.export._shape_poly import _parse_dim


def _em():
    """xform._src.lowering.export_mlir (imported on first use; importing it registers the lowering
    rule of ``call_exported``)."""
    from xform._src.lowering import export_mlir  # deferred: keeps `import xform` light
    return export_mlir

minimum_supported_calling_convention_version = 9

maximum_supported_calling_convention_version = 10

_CALLING_CONVENTION_VERSION = 10

_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")

class DisabledSafetyCheck:
    """A safety check that should be skipped on (de)serialization (JAX's class)."""

    def __init__(self, _impl):
        self._impl = _impl

    @classmethod
    def platform(cls):
        return cls("platform")

    @classmethod
    def custom_call(cls, target_name):
        return cls(f"custom_call:{target_name}")

    @classmethod
    def shape_assertions(cls):
        return cls("shape_assertions")

    def is_custom_call(self):
        return self._impl[len("custom_call:"):] if self._impl.startswith("custom_call:") else None

    def __eq__(self, other):
        return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

    def __hash__(self):
        return hash(self._impl)

    def __str__(self):
        return self._impl

    __repr__ = __str__

def _check_to_data(c):
    t = c.is_custom_call()
    if t is not None:
        return (_fb.DISABLED_CHECK_CUSTOM_CALL, t)
    if c == DisabledSafetyCheck.platform():
        return (_fb.DISABLED_CHECK_PLATFORM, None)
    return (_fb.DISABLED_CHECK_SHAPE_ASSERTIONS, None)

def _check_from_data(kind, target):
    if kind == _fb.DISABLED_CHECK_CUSTOM_CALL:
        return DisabledSafetyCheck.custom_call(target)
    if kind == _fb.DISABLED_CHECK_PLATFORM:
        return DisabledSafetyCheck.platform()
    if kind == _fb.DISABLED_CHECK_SHAPE_ASSERTIONS:
        return DisabledSafetyCheck.shape_assertions()
    raise ValueError(f"Cannot deserialize DisabledSafetyCheck with unknown kind: {kind}")

_serialization_registry: dict = {}     # type -> (name, serialize_auxdata)

_deserialization_registry: dict = {}   # name -> (type, deserialize_auxdata, from_children)

def register_pytree_node_serialization(nodetype, *, serialized_name, serialize_auxdata,
                                       deserialize_auxdata, from_children=None):
    """Make pytree nodes of ``nodetype`` serializable in ``in_tree``/``out_tree``."""
    if nodetype in _serialization_registry:
        raise ValueError(f"Duplicate serialization registration for type `{nodetype}`. "
                         "Previous registration was with serialized_name "
                         f"`{_serialization_registry[nodetype][0]}`.")
    if serialized_name in _deserialization_registry:
        raise ValueError("Duplicate serialization registration for serialized_name "
                         f"`{serialized_name}`. Previous registration was for type "
                         f"`{_deserialization_registry[serialized_name][0]}`.")
    if from_children is None:
        kind = _tu._registry.get(nodetype)
        if kind is None or getattr(kind, "unflatten", None) is None:
            raise ValueError("If `from_children` is not present, you must call first"
                             f"`jax.tree_util.register_pytree_node` for `{nodetype}`")
        unflat = kind.unflatten

        def from_children(aux, children):
            return unflat(aux, children)
    _serialization_registry[nodetype] = (serialized_name, serialize_auxdata)
    _deserialization_registry[serialized_name] = (nodetype, deserialize_auxdata, from_children)
    return nodetype

def register_namedtuple_serialization(nodetype, *, serialized_name):
    """Make a ``collections.namedtuple`` type serializable (auxdata: its field names, JSON)."""
    if not (issubclass(nodetype, tuple) and hasattr(nodetype, "_fields")):
        raise ValueError("Use `jax.export.register_pytree_node_serialization` for "
                         "types other than `collections.namedtuple`.")

    def ser(_):
        return json.dumps(nodetype._fields).encode("utf-8")

    def deser(b):
        return json.loads(bytes(b).decode("utf-8"))

    def from_children(keys, children):
        return nodetype(**dict(zip(keys, children)))
    return register_pytree_node_serialization(nodetype, serialized_name=serialized_name,
                                              serialize_auxdata=ser, deserialize_auxdata=deser,
                                              from_children=from_children)

def _tree_to_data(t):
    nd = t.node_data()
    if nd is None:
        return ("leaf",)
    typ, aux = nd
    kids = [_tree_to_data(c) for c in t.children()]
    if typ is type(None):
        return ("none",)
    if typ is tuple:
        return ("tuple", kids)
    if typ is list:
        return ("list", kids)
    if typ is dict:
        for k in aux:
            if not isinstance(k, str):
                raise TypeError("Serialization is supported only for dictionaries with string "
                                f"keys. Found key {k} of type {type(k)}.")
        return ("dict", list(aux), kids)
    if typ in _serialization_registry:
        name, ser = _serialization_registry[typ]
        b = ser(aux)
        if not isinstance(b, (bytes, bytearray)):
            raise ValueError("The custom serialization function for `node_type` must "
                             f"return a `bytes` object. It returned a {type(b)}.")
        return ("custom", name, bytes(b), kids)
    raise ValueError(f"Cannot serialize PyTreeDef containing an unregistered type `{typ}`. "
                     "Use `export.register_pytree_node_serialization` or "
                     "`export.register_namedtuple_serialization`.")

def _tree_from_data(node):
    def build(n):
        tag = n[0]
        if tag == "leaf":
            return 0.0
        if tag == "none":
            return None
        if tag == "tuple":
            return tuple(build(k) for k in n[1])
        if tag == "list":
            return [build(k) for k in n[1]]
        if tag == "dict":
            return dict(zip(n[1], [build(k) for k in n[2]]))
        name = n[1]
        if name not in _deserialization_registry:
            raise ValueError("Cannot deserialize a PyTreeDef containing an unregistered type "
                             f"`{name}`. Use `export.register_pytree_node_serialization` or "
                             "`export.register_namedtuple_serialization`.")
        _, deser, from_children = _deserialization_registry[name]
        return from_children(deser(n[2]), [build(k) for k in n[3]])
    return _tu.tree_structure(build(node))

_FLOAT0 = np.dtype([("float0", np.void, 0)])

def _is_key_dtype(dt) -> bool:
    return not isinstance(dt, np.dtype) and is_extended(dt)

def _aval_to_data(a):
    if _is_key_dtype(a.dtype):
        name = str(a.dtype)
    else:
        name = "float0" if np.dtype(a.dtype) == _FLOAT0 else np.dtype(a.dtype).name
    return (tuple(str(d) for d in a.shape), name)

def _physical(aval):
    """What travels in the module (JAX's physical representation): float0 as bool
    (``i1``) tensors, typed PRNG keys as their ``uint32[..., 2]`` key data."""
    if _is_key_dtype(aval.dtype):
        return ShapedArray(tuple(aval.shape) + tuple(aval.dtype.key_shape), aval.dtype.physical)
    return ShapedArray(aval.shape, np.bool_, aval.weak_type) if aval.dtype == _FLOAT0 else aval

def _aval_from_data(d, scope):
    shape_strs, dtype = d
    if dtype.startswith("key<"):
        if dtype != str(KEY_DTYPE):
            raise ValueError(f"the serialized Exported has an argument of PRNG key dtype "
                             f"{dtype}; xform supports {KEY_DTYPE} (threefry2x32) keys only")
        return ShapedArray(tuple(_parse_dim(s, scope) for s in shape_strs), KEY_DTYPE)
    if dtype == "float0":
        dt = float0
    else:
        dt = _np_dtype(dtype)
    return ShapedArray(tuple(_parse_dim(s, scope) for s in shape_strs), dt)

def _np_dtype(name):
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes  # deferred: keeps `import xform` light
        return np.dtype(getattr(ml_dtypes, name))

_AXIS_TYPE_CODES = {"Auto": _fb.AXIS_TYPE_AUTO, "Explicit": _fb.AXIS_TYPE_EXPLICIT,
                    "Manual": _fb.AXIS_TYPE_MANUAL}

_AXIS_TYPE_NAMES = {v: k for k, v in _AXIS_TYPE_CODES.items()}

def _abstract_mesh_of(mesh):
    """``mesh``'s abstract form as exports record it: axes plus the kind of its devices."""
    S = _xs()
    d = mesh.devices.flat[0]
    return S.AbstractMesh(mesh.axis_sizes, mesh.axis_names, mesh.axis_types,
                          abstract_device=S.AbstractDevice(
                              str(getattr(d, "device_kind", d.platform)), None,
                              str(d.platform)))

def _mesh_to_data(am):
    dev = am.abstract_device
    return (tuple(am.axis_sizes), tuple(am.axis_names),
            tuple(_AXIS_TYPE_CODES.get(t.name, _fb.AXIS_TYPE_AUTO) for t in am.axis_types),
            None if dev is None else (dev.device_kind, dev.num_cores, dev.platform))

def _mesh_from_data(d):
    S = _xs()
    sizes, names, types, device = d
    return S.AbstractMesh(sizes, names,
                          tuple(S.AxisType[_AXIS_TYPE_NAMES.get(t, "Auto")] for t in types),
                          abstract_device=None if device is None else S.AbstractDevice(*device))

def _sharding_to_data(ns):
    spec = tuple(() if p is None else ((p,) if isinstance(p, str) else tuple(p))
                 for p in ns.spec)
    return (_mesh_to_data(ns.mesh), spec, (), (), ns.memory_kind)

def _sharding_from_data(d):
    """A recorded sharding: a ``NamedSharding`` over the export's ``AbstractMesh``."""
    mesh, spec, reduced, unreduced, memory_kind = d
    if reduced or unreduced:
        raise ValueError(f"the serialized Exported has a sharding with reduced {reduced} / "
                         f"unreduced {unreduced} mesh axes, which xform does not support")
    parts = [None if not p else (p[0] if len(p) == 1 else tuple(p)) for p in spec]
    S = _xs()
    return S.NamedSharding(_mesh_from_data(mesh), S.PartitionSpec(*parts),
                           memory_kind=memory_kind)

def _on_mesh(ns, mesh):
    """The recorded sharding ``ns`` over the concrete ``mesh`` (same axis names and sizes)."""
    if ns is None:
        return None
    if tuple(mesh.axis_names) != tuple(ns.mesh.axis_names) or \
            tuple(mesh.axis_sizes) != tuple(ns.mesh.axis_sizes):
        raise ValueError(f"NamedSharding new mesh {mesh} does not match the mesh used for "
                         f"export {ns.mesh}.")
    return NamedSharding(mesh, ns.spec)

def _export_mesh(exported):
    """The abstract mesh of ``exported``'s shardings (None if it has no named one)."""
    for s in exported._in_named_shardings + exported._out_named_shardings:
        if s is not None and not s.mesh.empty:
            return s.mesh
    return None

def _canonical_platform(p):
    p = str(p).lower()
    if p == "gpu":
        kind = lowering.get_backend("gpu").platform_version.lower()
        return "rocm" if "rocm" in kind else "cuda"
    return p

def _xs():
    return sharding

def _is_float(dtype):
    return dtypes.issubdtype(dtype, np.inexact)

"""``xform.export``: staged programs that outlive the process (``jax.export``'s API).

``export(jit(f))(*args)`` traces ``f`` for the given argument shapes (arrays or
``ShapeDtypeStruct``s), lowers it to StableHLO and stores it as a portable
artifact (versioned VHLO bytecode) in an :class:`Exported`, together with its
calling convention: flat argument/result avals, input/output pytrees,
platforms.  ``Exported.serialize()`` writes JAX's FlatBuffer format, so the
bytes are read by ``jax.export.deserialize`` (and an artifact written by
``jax.export`` is read by :func:`deserialize` here); ``Exported.call`` runs it
(eagerly, under ``jit``, under ``grad`` through the exported VJP, under
``vmap`` as a loop over the batch).

Calling convention (JAX's, version 10): the module's public ``main`` takes the
flattened array arguments (after a leading ``i32`` platform index when several
platforms are exported) and returns the flattened results.  A
shape-polymorphic module (dimension variables in ``in_avals``) computes its
dimension variables from the argument shapes itself; calling it specialises
the module to the concrete shapes with jaxlib's shape refinement, which also
checks the exporter's shape assertions.
"""
from __future__ import annotations

import json
import re

import numpy as np

from xform._src.interpreters import core, ir
from xform._src.interpreters import tree_util as _tu
from xform._src.interpreters.core import ShapedArray
from xform._src.lowering import export_flatbuf as _fb
from xform._src.primitives.call_exported import call_exported_p
from xform import numpy as xnp
from xform import random as _random
from xform import sharding
from xform._ad_api import vjp as _vjp
from xform._custom_derivatives import custom_vjp
from xform._jit import JitWrapped
from xform._jit import ShapeDtypeStruct
from xform._jit import ShapeDtypeStruct, jit
from xform._src import lowering
from xform._src.interpreters import dtypes
from xform._src.interpreters import passes
from xform._src.interpreters import staging
from xform._src.interpreters.dtypes import float0
from xform._src.interpreters.dtypes import is_extended
from xform._src.primitives import prng
from xform._src.primitives.prng import KEY_DTYPE
from xform.sharding import NamedSharding
from xform.sharding import PartitionSpec
from xform.sharding._jit import ShardedJit

__all__ = ["export", "deserialize", "Exported", "DisabledSafetyCheck", "symbolic_shape",
           "symbolic_args_specs", "default_export_platform", "call", "call_exported",
           "register_pytree_node_serialization", "register_namedtuple_serialization",
           "minimum_supported_calling_convention_version", "is_symbolic_dim",
           "maximum_supported_calling_convention_version", "SymbolicScope"]

def _em():
    """xform._src.lowering.export_mlir (imported on first use; importing it registers the lowering
    rule of ``call_exported``)."""
    from xform._src.lowering import export_mlir  # deferred: keeps `import xform` light
    return export_mlir


minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10
_CALLING_CONVENTION_VERSION = 10
_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")

# ----------------------------------------------------------------- symbolic dimensions


class SymbolicScope:
    """A namespace of dimension variables plus their constraints (``a >= b`` ...)."""

    def __init__(self, constraints_str=()):
        if isinstance(constraints_str, str):
            raise ValueError("The symbolic constraints should be a sequence of strings. "
                             f"Got {constraints_str!r}")
        self.constraints = tuple(constraints_str)
        self._parsed = []             # (lhs - rhs as a _DimExpr or int, text): must be >= 0
        for c in self.constraints:
            if not isinstance(c, str):
                raise ValueError(f"The symbolic constraints should be strings, got {c!r}")
            for op in (">=", "<=", "=="):
                if op in c:
                    lhs, rhs = c.split(op, 1)
                    break
            else:
                raise ValueError("Constraint parsing error: must contain one of '==' or '>=' "
                                 "or '<='")
            lhs, rhs = _parse_dim(lhs, self), _parse_dim(rhs, self)
            if op == "==":
                self._parsed.append(("==", _lift(lhs) - rhs, c))
            else:
                diff = _lift(lhs) - rhs if op == ">=" else _lift(rhs) - lhs
                self._parsed.append((">=", diff, c))

    def __repr__(self):
        return f"SymbolicScope({list(self.constraints)})"


class _DimExpr:
    """A polynomial in dimension variables with integer coefficients (``2*b + 1``, ``a*b``).

    Only its arithmetic, printing, parsing and equality are provided: xform does
    not trace programs with symbolic shapes (see ``export``'s docstring); these
    describe the avals of shape-polymorphic artifacts (e.g. written by JAX).
    """
    __slots__ = ("terms", "scope")
    _is_symbolic_dim = True

    def __init__(self, terms, scope=None):
        self.terms = {m: c for m, c in terms.items() if c != 0}   # monomial -> coefficient
        self.scope = scope

    @staticmethod
    def var(name, scope=None):
        return _DimExpr({((name, 1),): 1}, scope)

    def _const(self):
        if not self.terms:
            return 0
        if list(self.terms) == [()]:
            return self.terms[()]
        return None

    @staticmethod
    def _lift(x):
        if isinstance(x, _DimExpr):
            return x
        if isinstance(x, (int, np.integer)):
            return _DimExpr({(): int(x)})
        return None

    def __add__(self, other):
        o = self._lift(other)
        if o is None:
            return NotImplemented
        t = dict(self.terms)
        for m, c in o.terms.items():
            t[m] = t.get(m, 0) + c
        return _DimExpr(t, self.scope or o.scope)._norm()

    __radd__ = __add__

    def __neg__(self):
        return _DimExpr({m: -c for m, c in self.terms.items()}, self.scope)

    def __sub__(self, other):
        o = self._lift(other)
        return NotImplemented if o is None else self + (-o)

    def __rsub__(self, other):
        o = self._lift(other)
        return NotImplemented if o is None else o + (-self)

    def __mul__(self, other):
        o = self._lift(other)
        if o is None:
            return NotImplemented
        t = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in o.terms.items():
                powers = dict(m1)
                for v, p in m2:
                    powers[v] = powers.get(v, 0) + p
                m = tuple(sorted(powers.items()))
                t[m] = t.get(m, 0) + c1 * c2
        return _DimExpr(t, self.scope or o.scope)._norm()

    __rmul__ = __mul__

    def _norm(self):
        c = self._const()
        return c if c is not None else self

    def __eq__(self, other):
        o = self._lift(other)
        return o is not None and self.terms == o.terms

    def __hash__(self):
        return hash(tuple(sorted(self.terms.items())))

    def __int__(self):
        c = self._const()
        if c is None:
            raise TypeError(f"symbolic dimension {self} has no constant value; shapes with "
                            "dimension variables cannot be turned into integers")
        return c

    __index__ = __int__

    def variables(self):
        return sorted({v for m in self.terms for v, _ in m})

    def __str__(self):
        def mono(m):
            return "*".join(v if p == 1 else f"{v}^{p}" for v, p in m)
        parts = []
        # JAX's order: higher degree first, then monomials in decreasing order ("- b + a")
        for m in sorted(self.terms, key=lambda m: (sum(p for _, p in m), m), reverse=True):
            c = self.terms[m]
            if not m:
                s = str(abs(c))
            elif abs(c) == 1:
                s = mono(m)
            else:
                s = f"{abs(c)}*{mono(m)}"
            parts.append(("- " if c < 0 else "+ ") + s)
        out = " ".join(parts) if parts else "0"
        return out[2:] if out.startswith("+ ") else out   # JAX prints "- b + a"

    __repr__ = __str__


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\S))")


def _parse_dim(text, scope):
    toks = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            break
        pos = m.end()
        if m.group(1):
            toks.append(("int", int(m.group(1))))
        elif m.group(2):
            toks.append(("var", m.group(2)))
        else:
            toks.append(("op", m.group(3)))
    i = [0]

    def peek():
        return toks[i[0]] if i[0] < len(toks) else ("end", None)

    def err(msg):
        return ValueError(f"syntax error in symbolic shape {text!r}: {msg}")

    def atom():
        kind, v = peek()
        i[0] += 1
        if kind == "int":
            return v
        if kind == "var":
            return _DimExpr.var(v, scope)
        if (kind, v) == ("op", "("):
            e = expr()
            if peek() != ("op", ")"):
                raise err("expected ')'")
            i[0] += 1
            return e
        if (kind, v) == ("op", "-"):
            return -_lift(atom())
        raise err(f"unexpected {v!r}" if v is not None else "unexpected end")

    def power():
        a = atom()
        if peek() == ("op", "^"):
            i[0] += 1
            k = atom()
            if not isinstance(k, int) or k < 1:
                raise err("exponents must be positive integer literals")
            r = 1
            for _ in range(k):
                r = _lift(a) * r
            return r
        return a

    def term():
        a = power()
        while peek() == ("op", "*"):
            i[0] += 1
            a = _lift(a) * power()
        return a

    def expr():
        a = term()
        while peek() in (("op", "+"), ("op", "-")):
            op = peek()[1]
            i[0] += 1
            b = term()
            a = _lift(a) + b if op == "+" else _lift(a) - b
        return a

    if not toks:
        raise err("empty dimension")
    e = expr()
    if i[0] != len(toks):
        raise err(f"unexpected {peek()[1]!r}")
    if isinstance(e, _DimExpr) and e._const() is not None:
        e = e._const()
    return e


def _lift(x):
    return x if isinstance(x, _DimExpr) else _DimExpr({(): int(x)})


def symbolic_shape(shape_spec, *, constraints=(), scope=None, like=None):
    """Parse ``"b, 4"`` (or ``"(b, 2*a)"``) into a tuple of ints and symbolic dimensions.

    Dimension variables of one scope are the same variables; ``constraints``
    (``"a >= b"`` ...) are recorded in the scope.  ``like``: a concrete shape to
    take ``_`` dimensions from.
    """
    if shape_spec is None:
        raise ValueError("symbolic_shape: shape_spec must be a string, got None")
    if not isinstance(shape_spec, str):
        raise ValueError(f"polymorphic shape spec should be a string, got {shape_spec!r}")
    if scope is not None and constraints:
        raise ValueError("Cannot specify both a `scope` and `constraints`.")
    if scope is None:
        scope = SymbolicScope(constraints)
    spec = shape_spec.strip()
    if spec.startswith("(") and spec.endswith(")"):
        spec = spec[1:-1]
    if not spec.strip():
        return ()
    parts = [p for p in spec.split(",")]
    if parts and not parts[-1].strip():
        parts = parts[:-1]
    out = []
    for k, p in enumerate(parts):
        p = p.strip()
        if p == "_":
            if like is None or k >= len(like):
                raise ValueError(f"polymorphic shape {shape_spec!r} has '_' for dimension {k} "
                                 "but no 'like' shape gives its value")
            out.append(int(like[k]))
        else:
            out.append(_parse_dim(p, scope))
    return tuple(out)


def symbolic_args_specs(args, shapes_specs, constraints=(), scope=None):
    """ShapeDtypeStructs for ``args`` (a pytree) with symbolic shapes ``shapes_specs``."""
    leaves, tree = _tu.tree_flatten(args)
    if isinstance(shapes_specs, (str, type(None))):
        specs = [shapes_specs] * len(leaves)
    else:
        specs = tree.flatten_up_to(shapes_specs)
    if scope is None:
        scope = SymbolicScope(constraints)
    out = []
    for x, s in zip(leaves, specs):
        shape, dtype = np.shape(x), np.result_type(x)
        if s is None:
            out.append(ShapeDtypeStruct(shape, dtype))
        else:
            out.append(ShapeDtypeStruct(symbolic_shape(s, scope=scope, like=shape), dtype))
    return tree.unflatten(out)


def is_symbolic_dim(p) -> bool:
    """True for a symbolic dimension (a dimension variable expression)."""
    return isinstance(p, _DimExpr)


def _is_symbolic(shape):
    return any(isinstance(d, _DimExpr) for d in shape)


# ----------------------------------------------------------------- safety checks


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


# ----------------------------------------------------------------- pytree (de)serialization

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


# ----------------------------------------------------------------- avals <-> data


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
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))


# ----------------------------------------------------------------- shardings of an export

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


# ----------------------------------------------------------------- Exported


class Exported:
    """An exported function: its StableHLO (serialized) and calling convention.

    Fields as in ``jax.export.Exported``: ``fun_name``, ``in_tree``, ``in_avals``,
    ``out_tree``, ``out_avals``, ``in_shardings_hlo``, ``out_shardings_hlo``,
    ``nr_devices``, ``platforms``, ``ordered_effects``, ``unordered_effects``,
    ``disabled_safety_checks``, ``mlir_module_serialized``,
    ``calling_convention_version``, ``module_kept_var_idx``, ``uses_global_constants``.
    """

    def __init__(self, *, fun_name, in_tree, in_avals, out_tree, out_avals, nr_devices,
                 platforms, ordered_effects, unordered_effects, disabled_safety_checks,
                 mlir_module_serialized, calling_convention_version, module_kept_var_idx,
                 uses_global_constants, in_shardings_hlo=None, out_shardings_hlo=None,
                 _get_vjp=None, _in_named_shardings=None, _out_named_shardings=None):
        self.fun_name = fun_name
        self.in_tree = in_tree
        self.in_avals = tuple(in_avals)
        self.out_tree = out_tree
        self.out_avals = tuple(out_avals)
        self._in_named_shardings = tuple(_in_named_shardings or (None,) * len(self.in_avals))
        self._out_named_shardings = tuple(_out_named_shardings or (None,) * len(self.out_avals))
        self._in_hlo = None if in_shardings_hlo is None else tuple(in_shardings_hlo)
        self._out_hlo = None if out_shardings_hlo is None else tuple(out_shardings_hlo)
        self.nr_devices = int(nr_devices)
        self.platforms = tuple(platforms)
        self.ordered_effects = tuple(ordered_effects)
        self.unordered_effects = tuple(unordered_effects)
        self.disabled_safety_checks = tuple(disabled_safety_checks)
        self.mlir_module_serialized = bytes(mlir_module_serialized)
        self.calling_convention_version = int(calling_convention_version)
        self.module_kept_var_idx = tuple(module_kept_var_idx)
        self.uses_global_constants = bool(uses_global_constants)
        self._get_vjp = _get_vjp
        self._vjp_cache = None
        self._call_fn = None


    # the calling convention of the ``call_exported`` primitive (primitives/call_exported.py)
    def call_abstract_eval(self, in_avals):
        return _call_abstract_eval(in_avals, self)

    def call_eager(self, args):
        return _call_impl(args, self)

    def __str__(self):
        return f"Exported(fun_name={self.fun_name}, ...)"

    __repr__ = __str__

    def mlir_module(self) -> str:
        """The StableHLO module as text."""
        return _em().module_text(self.mlir_module_serialized)

    @property
    def in_shardings_hlo(self):
        """The input shardings as jaxlib ``HloSharding``s (None: unspecified), as JAX gives
        them for a deserialized Exported."""
        if self._in_hlo is None:
            self._in_hlo = _hlo_shardings(self._in_named_shardings, self.in_avals)
        return self._in_hlo

    @property
    def out_shardings_hlo(self):
        """The output shardings as jaxlib ``HloSharding``s (None: unspecified)."""
        if self._out_hlo is None:
            self._out_hlo = _hlo_shardings(self._out_named_shardings, self.out_avals)
        return self._out_hlo

    def in_shardings_jax(self, mesh):
        """The input shardings as ``NamedSharding``s over ``mesh`` (a mesh with the axis
        names and sizes of the export's), for ``device_put`` or ``jit``; None: unspecified."""
        return tuple(_on_mesh(s, mesh) for s in self._in_named_shardings)

    def out_shardings_jax(self, mesh):
        """The output shardings as ``NamedSharding``s over ``mesh`` (see in_shardings_jax)."""
        return tuple(_on_mesh(s, mesh) for s in self._out_named_shardings)

    def has_vjp(self) -> bool:
        return self._get_vjp is not None

    def vjp(self) -> "Exported":
        """The Exported of the VJP: ``(*primals_flat, *out_cts_flat) -> in_cts_flat``."""
        if self._get_vjp is None:
            raise ValueError(
                "No VJP is available for this Exported: it was deserialized from bytes "
                "serialized with vjp_order=0. Serialize with "
                "exported.serialize(vjp_order=1) to differentiate the deserialized function.")
        if self._vjp_cache is None:
            self._vjp_cache = self._get_vjp(self)
        return self._vjp_cache

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """JAX's FlatBuffer bytes; ``vjp_order`` levels of VJPs are included."""
        return bytearray(_fb.serialize_exported(_to_data(self), vjp_order))

    def call(self, *args, **kwargs):
        """Run the exported function (usable eagerly, under jit, grad and vmap)."""
        if self._call_fn is None:
            self._call_fn = call(self)
        return self._call_fn(*args, **kwargs)

    def _symbolic_constraints(self):
        """[(lhs - rhs as a dimension expression, text)]: the ``>=`` constraints of the
        input shapes' scopes, else those recorded in the module (xform's artifacts)."""
        if getattr(self, "_constraints", None) is None:
            found, seen = [], set()
            for a in self.in_avals:
                for d in a.shape:
                    sc = getattr(d, "scope", None)
                    if isinstance(d, _DimExpr) and sc is not None and id(sc) not in seen:
                        seen.add(id(sc))
                        found += [(diff, text) for op, diff, text in sc._parsed if op == ">="]
            if not found and self.uses_global_constants:
                found = [(diff, text) for diff, text in
                         _em().module_constraints(self.mlir_module_serialized)]
            self._constraints = found
        return self._constraints

    def _platform_index(self, lowering_platform):
        """The value of the platform-index argument for ``lowering_platform`` (None if the
        module has no such argument); an error if the platform was not exported."""
        p = _canonical_platform(lowering_platform)
        if p not in self.platforms and DisabledSafetyCheck.platform() not in \
                self.disabled_safety_checks:
            raise ValueError(f"Function '{self.fun_name}' was exported for platforms "
                             f"'{self.platforms}' but it is used on '{(p,)}'.")
        if len(self.platforms) <= 1:
            return None
        return self.platforms.index(p) if p in self.platforms else 0


def _hlo_shardings(named, avals):
    out = []
    for s, a in zip(named, avals):
        if s is None:
            out.append(None)
        else:
            out.append(_em().hlo_sharding(s.mesh.axis_sizes, s.mesh.axis_names, tuple(s.spec),
                                          len(_physical(a).shape)))
    return tuple(out)


def _to_data(e: Exported) -> dict:
    for a in e.in_avals + e.out_avals:
        if not isinstance(a, ShapedArray):
            raise ValueError(f"cannot serialize an Exported with aval {a!r}")
    return {
        "fun_name": e.fun_name, "in_tree": _tree_to_data(e.in_tree),
        "out_tree": _tree_to_data(e.out_tree),
        "in_avals": [_aval_to_data(a) for a in e.in_avals],
        "out_avals": [_aval_to_data(a) for a in e.out_avals],
        "nr_devices": e.nr_devices, "platforms": list(e.platforms),
        "ordered_effects": [str(x) for x in e.ordered_effects],
        "unordered_effects": [str(x) for x in e.unordered_effects],
        "disabled_checks": [_check_to_data(c) for c in e.disabled_safety_checks],
        "mlir_module_serialized": e.mlir_module_serialized,
        "calling_convention_version": e.calling_convention_version,
        "module_kept_var_idx": list(e.module_kept_var_idx),
        "uses_global_constants": e.uses_global_constants,
        "in_shardings": [None if x is None else _sharding_to_data(x) for x in e._in_named_shardings],
        "out_shardings": [None if x is None else _sharding_to_data(x) for x in e._out_named_shardings],
        "vjp": (lambda: _to_data(e.vjp())) if e.has_vjp() else None,
    }


def _from_data(d: dict) -> Exported:
    v = d["calling_convention_version"]
    if not (minimum_supported_calling_convention_version <= v
            <= maximum_supported_calling_convention_version):
        raise ValueError(f"The exported function uses calling convention version {v}, which "
                         "is outside the range of supported versions "
                         f"[{minimum_supported_calling_convention_version}.."
                         f"{maximum_supported_calling_convention_version}]")
    if d["ordered_effects"]:
        raise ValueError(f"the exported function has ordered effects {d['ordered_effects']}, "
                         "which xform cannot call")
    scope = SymbolicScope()
    in_avals = [_aval_from_data(a, scope) for a in d["in_avals"]]
    out_avals = [_aval_from_data(a, scope) for a in d["out_avals"]]
    vjp = d["vjp"]
    return Exported(
        fun_name=d["fun_name"], in_tree=_tree_from_data(d["in_tree"]), in_avals=in_avals,
        out_tree=_tree_from_data(d["out_tree"]), out_avals=out_avals,
        nr_devices=d["nr_devices"] or 1, platforms=d["platforms"],
        ordered_effects=d["ordered_effects"], unordered_effects=d["unordered_effects"],
        disabled_safety_checks=[_check_from_data(*c) for c in d["disabled_checks"]],
        mlir_module_serialized=d["mlir_module_serialized"],
        calling_convention_version=v, module_kept_var_idx=d["module_kept_var_idx"],
        uses_global_constants=d["uses_global_constants"],
        _in_named_shardings=[None if x is None else _sharding_from_data(x)
                             for x in d.get("in_shardings") or ()],
        _out_named_shardings=[None if x is None else _sharding_from_data(x)
                              for x in d.get("out_shardings") or ()],
        _get_vjp=(lambda _: _checked(lambda: vjp())) if vjp is not None else None)


def _check_module(exp: Exported) -> None:
    """The embedded module decodes and verifies (in a child process, cached by hash:
    ``lowering/export_check.py``) and its ``main`` matches the calling convention."""
    from xform._src.lowering import export_check
    ins, outs = export_check.check_module(exp.mlir_module_serialized)
    if ins is None:                   # a module this process serialized
        return
    n_plat = 1 if len(exp.platforms) > 1 else 0
    n_tok = len(exp.ordered_effects)
    want_in = n_plat + n_tok + len(exp.module_kept_var_idx)
    want_out = n_tok + len(exp.out_avals)
    if len(ins) != want_in or len(outs) != want_out:
        raise ValueError(f"the exported module's main takes {len(ins)} arguments and returns "
                         f"{len(outs)} results, but the calling convention says {want_in} "
                         f"and {want_out} ({len(exp.module_kept_var_idx)} kept arguments of "
                         f"{len(exp.in_avals)}, {len(exp.platforms)} platforms)")
    kept = [exp.in_avals[i] for i in exp.module_kept_var_idx]
    for what, avals, types in (("argument", kept, ins[n_plat + n_tok:]),
                               ("result", exp.out_avals, outs[n_tok:])):
        for i, (a, t) in enumerate(zip(avals, types)):
            want = _mlir_tensor_type(a)
            if want is not None and want != _strip_encoding(t):
                raise ValueError(f"the exported module's main has {what} {i} of type {t}, but "
                                 f"the Exported says {a.str_short()} ({want})")


_MLIR_ELEMENT = {"bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
                 "uint8": "ui8", "uint16": "ui16", "uint32": "ui32", "uint64": "ui64",
                 "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
                 "complex64": "complex<f32>", "complex128": "complex<f64>"}


def _mlir_tensor_type(aval):
    """The MLIR type a static-shaped aval of a common dtype lowers to (None: not checked)."""
    el = _MLIR_ELEMENT.get(getattr(aval.dtype, "name", None)) \
        if isinstance(aval.dtype, np.dtype) else None
    if el is None or not all(type(d) is int for d in aval.shape):
        return None
    return "tensor<" + "".join(f"{d}x" for d in aval.shape) + el + ">"


def _strip_encoding(t):
    """``tensor<8xf32, #enc>`` -> ``tensor<8xf32>``."""
    if t.startswith("tensor<") and ", " in t:
        depth = 0
        for j, c in enumerate(t):
            depth += c == "<"
            depth -= c == ">"
            if c == "," and depth == 1:
                return t[:j] + ">"
    return t


_BAD_DATA_ERRORS = (TypeError, KeyError, IndexError, AttributeError, RecursionError,
                    OverflowError, UnicodeDecodeError, MemoryError, ArithmeticError)


def _checked(read):
    """``read()`` (the plain data of a serialized Exported) as an Exported whose embedded
    module has been checked; any malformation a ValueError."""
    try:
        exp = _from_data(read())
    except ValueError:
        raise
    except _BAD_DATA_ERRORS as e:
        raise ValueError(f"not a serialized Exported (inconsistent data: "
                         f"{type(e).__name__}: {str(e)[:200]})") from None
    _check_module(exp)
    return exp


def deserialize(blob) -> Exported:
    """An Exported from bytes written by ``Exported.serialize`` or ``jax.export``.

    Untrusted bytes are refused with a ValueError here, not later: the FlatBuffer
    structure is bounds-checked, the fields cross-checked, and the embedded StableHLO
    module is decoded and verified in a separate process (once per distinct module per
    process; modules this process exported need no check), so corrupted or crafted
    bytes cannot crash or corrupt this process.  A valid module may still call any
    custom call jaxlib knows: only run artifacts whose source you trust.
    See docs/reliability.md.
    """
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"deserialize() expects bytes or bytearray, got {type(blob).__name__}")
    return _checked(lambda: _fb.deserialize_exported(blob))


# ----------------------------------------------------------------- export


def _canonical_platform(p):
    p = str(p).lower()
    if p == "gpu":
        kind = lowering.get_backend("gpu").platform_version.lower()
        return "rocm" if "rocm" in kind else "cuda"
    return p


def default_export_platform() -> str:
    """The platform exports target by default: one of 'cpu', 'cuda', 'rocm', 'tpu'."""
    return _canonical_platform(lowering.default_backend())


def export(fun_jit, *, platforms=None, disabled_checks=()):
    """``export(jit(f))(*args, **kwargs) -> Exported``; args may be ShapeDtypeStructs.

    ``platforms``: a subset of ('cpu', 'cuda', 'rocm', 'tpu') (default: the
    default backend's); with several, the module takes a platform index first.
    """
    if not isinstance(fun_jit, (JitWrapped, ShardedJit)):
        raise ValueError(f"Function to be exported must be the result of `jit` but is: "
                         f"{fun_jit}")
    if platforms is not None:
        if isinstance(platforms, str):
            raise ValueError(f"platforms must be a sequence of strings, got {platforms!r}")
        platforms = tuple(_canonical_platform(p) for p in platforms)
        for p in platforms:
            if p not in _PLATFORMS:
                raise ValueError(f"Unsupported platform {p!r} for export; expected one of "
                                 f"{_PLATFORMS}")
        if len(set(platforms)) != len(platforms):
            raise ValueError(f"platforms must not repeat, got {platforms}")
    disabled_checks = tuple(disabled_checks)

    def do_export(*args_specs, **kwargs_specs) -> Exported:
        plats = platforms if platforms is not None else (default_export_platform(),)
        inner = fun_jit._inner if isinstance(fun_jit, ShardedJit) else fun_jit
        dyn_args, _, dyn_kwargs, _ = inner._split(args_specs, kwargs_specs)
        leaves, in_tree = _tu.tree_flatten((tuple(dyn_args), dict(dyn_kwargs)))
        symbolic = any(_is_symbolic(getattr(leaf, "shape", ())) for leaf in leaves)
        if isinstance(fun_jit, ShardedJit) or any(_has_named_sharding(x) for x in leaves):
            sj = fun_jit if isinstance(fun_jit, ShardedJit) else ShardedJit(fun_jit)
            if symbolic:
                return _export_polymorphic(inner, args_specs, kwargs_specs, leaves, in_tree,
                                           plats, disabled_checks, sharded=sj)
            return _export_sharded(sj, args_specs, kwargs_specs, in_tree, plats,
                                   disabled_checks)
        if symbolic:
            return _export_polymorphic(fun_jit, args_specs, kwargs_specs, leaves, in_tree,
                                       plats, disabled_checks)
        traced = fun_jit.trace(*args_specs, **kwargs_specs)
        entry = traced._entry
        closed = _unhoist(entry.closed, entry.const_args)
        return _export_closed(closed, fun_jit._name, in_tree, entry.out_tree, plats,
                              disabled_checks)
    return do_export


def _has_named_sharding(x):
    """An argument laid out over a mesh: a sharded Array, or a ShapeDtypeStruct with a
    NamedSharding."""
    if isinstance(getattr(x, "sharding", None), NamedSharding) and not isinstance(x, core.Array):
        return True
    if type(x) is core.Array and x._buf is not None and not x._deleted:
        return len(x._buf._sharding.device_set) > 1
    return False


def _spmd_plan(sj, args_specs, kwargs_specs):
    """(closed program, out tree, mesh, in specs, out specs) of the sharded jit ``sj``
    for these arguments (hoisted constants back in the program)."""
    entry, _, mesh, in_sh, out_sh = sj._plan(args_specs, kwargs_specs)
    closed = passes.simplify(_unhoist(entry.closed, entry.const_args))

    def spec(s):
        if s is None:
            return None
        return s.spec if isinstance(s, NamedSharding) else _xs().PartitionSpec()
    return closed, entry.out_tree, mesh, [spec(s) for s in in_sh], [spec(s) for s in out_sh]


def _spmd_text(closed, mesh, in_specs, out_specs, name, platform, debug_info=True):
    from xform._src.lowering import spmd  # deferred: keeps `import xform` light
    text, cbs = spmd.lower_spmd(closed, mesh, in_specs, out_specs, None, f"jit_{name}",
                                platform=_lowering_platform(platform))
    if cbs:
        raise ValueError(
            f"Cannot serialize code with custom calls whose targets have no compatibility "
            f"guarantees: the function {name!r} uses Python host callbacks (debug.print, "
            "pure_callback, ...), which cannot be part of an exported artifact.")
    return text


def _sharded_exported(mesh, in_specs, out_specs, **fields) -> Exported:
    """An Exported whose shardings are ``in_specs``/``out_specs`` over ``mesh``'s
    abstract form (None: unspecified)."""
    S = _xs()
    amesh = _abstract_mesh_of(mesh)

    def named(p):
        if p is None:
            return None
        return S.NamedSharding(amesh, p if isinstance(p, S.PartitionSpec) else
                               S.PartitionSpec(*p), memory_kind="device")
    return Exported(nr_devices=mesh.size, _in_named_shardings=[named(p) for p in in_specs],
                    _out_named_shardings=[named(p) for p in out_specs], **fields)


def _export_sharded(sj, args_specs, kwargs_specs, in_tree, platforms,
                    disabled_checks) -> Exported:
    """Export a function partitioned over a mesh (``jit`` with in/out shardings, or
    sharded arguments): the module carries JAX's Shardy annotations (``sdy.mesh``,
    ``sdy.sharding`` on ``main``'s arguments and results, ``mhlo.num_partitions``)."""
    closed, out_tree, mesh, in_specs, out_specs = _spmd_plan(sj, args_specs, kwargs_specs)
    name = sj._inner._name
    for a in closed.in_avals + closed.out_avals:
        if a.dtype == _FLOAT0:
            raise ValueError("export: float0 arguments/results (cotangents of integer values) "
                             "cannot be exported; differentiate with respect to float inputs")
    logical = closed
    if prng.jaxpr_has_keys(closed):
        closed = prng.physicalize_closed(closed)
    texts = [_spmd_text(closed, mesh, in_specs, out_specs, name, p) for p in platforms]
    if len(set(texts)) > 1:
        raise ValueError(f"export: the sharded function {name!r} lowers differently for the "
                         f"platforms {platforms} (platform-specific kernels); export it for one "
                         "platform at a time")
    blob = _em().serialize_module(texts[0], result_info=_result_info(out_tree),
                                  platform_index_arg=len(platforms) > 1)
    in_avals = [a.strip_weak_type() for a in logical.in_avals]

    def get_vjp(primal: Exported) -> Exported:
        def flat_primal(*xs):
            return list(ir.eval_jaxpr(logical.jaxpr, logical.consts, *xs))
        return _export_vjp(flat_primal, name, primal, platforms, disabled_checks, mesh=mesh)

    return _sharded_exported(
        mesh, in_specs, out_specs,
        fun_name=name, in_tree=in_tree, in_avals=in_avals, out_tree=out_tree,
        out_avals=list(logical.out_avals), platforms=platforms, ordered_effects=(),
        unordered_effects=(), disabled_safety_checks=disabled_checks,
        mlir_module_serialized=blob, calling_convention_version=_CALLING_CONVENTION_VERSION,
        module_kept_var_idx=tuple(range(len(in_avals))), uses_global_constants=False,
        _get_vjp=get_vjp)


def _xs():
    return sharding


def _export_polymorphic(fun_jit, args_specs, kwargs_specs, leaves, in_tree, platforms,
                        disabled_checks, sharded=None) -> Exported:
    """Export for every value of the dimension variables (see ``lowering.export_poly``)."""
    from xform._src.lowering import export_poly  # deferred: keeps `import xform` light
    variables = []
    for leaf in leaves:
        for d in getattr(leaf, "shape", ()):
            if isinstance(d, _DimExpr):
                for v in d.variables():
                    if v not in variables:
                        variables.append(v)
                for m in d.terms:
                    if any(p > 1 for _, p in m):
                        raise ValueError(f"export: the symbolic dimension {d} has a power of a "
                                         "variable; only multilinear dimensions are supported")
    variables.sort()
    constraints, seen = [], set()
    for leaf in leaves:
        for d in getattr(leaf, "shape", ()):
            scope = getattr(d, "scope", None)
            if isinstance(d, _DimExpr) and scope is not None and id(scope) not in seen:
                seen.add(id(scope))
                for op, diff, text in scope._parsed:
                    if op == "==":
                        raise ValueError(
                            f"export: the equality constraint {text!r} is not supported by "
                            "xform (it traces at sample sizes); use '>=' / '<=' constraints or "
                            "express one dimension through the other in the shapes")
                    constraints.append((_dim_poly(diff), text))
    points = export_poly.sample_points(variables, [c for c, _ in constraints])
    texts, first = [], None
    for env in points:
        def concrete(x):
            shape = getattr(x, "shape", None)
            if shape is None or not _is_symbolic(shape):
                return x
            dims = tuple(_eval_dim(d, env) for d in shape)
            return ShapeDtypeStruct(dims, x.dtype, sharding=getattr(x, "sharding", None))
        a = _tu.tree_map(concrete, args_specs,
                         is_leaf=lambda x: isinstance(x, ShapeDtypeStruct))
        k = _tu.tree_map(concrete, kwargs_specs,
                         is_leaf=lambda x: isinstance(x, ShapeDtypeStruct))
        if sharded is not None:       # lowered for the mesh at each sample size
            try:
                closed, tree, mesh, in_specs, out_specs = _spmd_plan(sharded, a, k)
            except ValueError as e:
                raise ValueError(
                    f"export: xform traces symbolic shapes at sample sizes ({env}), which "
                    f"must split evenly over the mesh: write a sharded dimension as a multiple "
                    f"of its mesh axes' size (e.g. '8*b' over 8 devices). {e}") from None
            if first is None:
                first = (closed, tree, mesh, in_specs, out_specs)
            texts.append(_spmd_text(closed, mesh, in_specs, out_specs, fun_jit._name,
                                    platforms[0]))
            continue
        traced = fun_jit.trace(*a, **k)
        closed = passes.simplify(_unhoist(traced._entry.closed, traced._entry.const_args))
        if first is None:
            first = (closed, traced._entry.out_tree)
        lowered = lowering.lower_module(closed, name=f"jit_{fun_jit._name}", debug_info=False,
                                        platform=_lowering_platform(platforms[0]))
        if first[0] is closed:
            for p in platforms[1:]:
                other = lowering.lower_module(closed, name=f"jit_{fun_jit._name}",
                                              debug_info=False, platform=_lowering_platform(p))
                if other.text != lowered.text:
                    raise ValueError(
                        f"export: {fun_jit._name} lowers differently for {platforms[0]} and "
                        f"{p} (platform-specific kernels); with symbolic shapes export for one "
                        "platform at a time")
        if lowered.host_callbacks:
            raise ValueError("Cannot serialize code with custom calls whose targets have no "
                             "compatibility guarantees: the function uses Python host callbacks.")
        texts.append(lowered.text)
    closed, out_tree = first[:2]
    if sharded is not None and len(platforms) > 1:
        raise ValueError("export: with symbolic shapes and shardings export for one platform "
                         "at a time")
    if sharded is not None and any("sdy.manual_computation" in t for t in texts):
        raise ValueError(f"export: {fun_jit._name} uses shard_map, which xform exports for "
                         "concrete shapes only (not with symbolic shapes)")
    arg_specs = [[_dim_poly(d) for d in getattr(leaf, "shape", ())] for leaf in leaves]
    paths = _arg_paths(in_tree)
    spec_text = ",".join(f"{p}.shape = {_shape_str(getattr(leaf, 'shape', ()))}"
                         for p, leaf in zip(paths, leaves)
                         if _is_symbolic(getattr(leaf, "shape", ())))
    text, result_shapes = export_poly.generalize(texts, variables, arg_specs, spec_text,
                                                       paths, points, constraints)
    blob = _em().serialize_module(text, uses_shape_polymorphism=True,
                                         result_info=_result_info(out_tree),
                                         constraints=[(export_poly.poly_str(c), t)
                                                      for c, t in constraints],
                                         platform_index_arg=len(platforms) > 1)
    in_avals = [ShapedArray(tuple(getattr(leaf, "shape", ())), np.dtype(leaf.dtype))
                for leaf in leaves]
    out_avals = [ShapedArray(tuple(_poly_dim(d) for d in shape), a.dtype)
                 for shape, a in zip(result_shapes, closed.out_avals)]
    name = fun_jit._name

    mesh = first[2] if sharded is not None else None

    def get_vjp(primal: Exported) -> Exported:
        def flat_primal(*xs):
            args, kwargs = in_tree.unflatten(list(xs))
            return _tu.tree_leaves(fun_jit(*args, **kwargs))
        return _export_vjp(flat_primal, name, primal, platforms, disabled_checks, mesh=mesh)

    fields = dict(
        fun_name=name, in_tree=in_tree, in_avals=in_avals, out_tree=out_tree,
        out_avals=out_avals, platforms=platforms, ordered_effects=(),
        unordered_effects=(), disabled_safety_checks=disabled_checks,
        mlir_module_serialized=blob, calling_convention_version=_CALLING_CONVENTION_VERSION,
        module_kept_var_idx=tuple(range(len(in_avals))), uses_global_constants=True,
        _get_vjp=get_vjp)
    if sharded is not None:
        return _sharded_exported(mesh, first[3], first[4], **fields)
    return Exported(nr_devices=1, **fields)


def _eval_dim(d, env):
    if not isinstance(d, _DimExpr):
        return int(d)
    return sum(c * _eval_mono(m, env) for m, c in d.terms.items())


def _dim_poly(d):
    """A _DimExpr as export_poly's polynomial dict; ints stay ints."""
    if not isinstance(d, _DimExpr):
        return int(d)
    return {tuple(sorted(v for v, _ in m)): c for m, c in d.terms.items()}


def _poly_dim(p):
    if isinstance(p, int):
        return p
    e = _DimExpr({tuple((v, 1) for v in m): c for m, c in p.items()})
    return e._norm()


def _arg_paths(in_tree):
    paths = [_tu.keystr(p) for p, _ in _tu.tree_flatten_with_path(
        in_tree.unflatten([0] * in_tree.num_leaves))[0]]
    out = []
    for p in paths:
        if p.startswith("[0]"):
            p = "args" + p[3:]
        elif p.startswith("[1]"):
            p = "kwargs" + p[3:]
        out.append(p)
    return out


def _unhoist(closed, const_args):
    """The jit entry's program with its hoisted constants turned back into constants."""
    n = len(const_args)
    if not n:
        return closed
    j = closed.jaxpr
    jaxpr = ir.Jaxpr(list(j.constvars) + list(j.invars[:n]), j.invars[n:], j.outvars, j.eqns,
                     j.debug_info)
    return ir.ClosedJaxpr(jaxpr, list(closed.consts) + list(const_args))


def _lowering_platform(p):
    return "gpu" if p in ("cuda", "rocm") else p


def _result_info(out_tree):
    paths = [_tu.keystr(p) for p, _ in _tu.tree_flatten_with_path(
        out_tree.unflatten([0] * out_tree.num_leaves))[0]]
    return [f"result{p}" for p in paths]


def _export_closed(closed, name, in_tree, out_tree, platforms, disabled_checks) -> Exported:
    closed = passes.simplify(closed)
    for a in closed.in_avals + closed.out_avals:
        if a.dtype == _FLOAT0:
            raise ValueError("export: float0 arguments/results (cotangents of integer values) "
                             "cannot be exported; differentiate with respect to float inputs")
    logical = closed
    if prng.jaxpr_has_keys(closed):        # typed PRNG keys travel as their key data
        closed = prng.physicalize_closed(closed)
    lowereds = [lowering.lower_module(closed, name=f"jit_{name}", debug_info=True,
                                      platform=_lowering_platform(p)) for p in platforms]
    for lowered in lowereds:
        if lowered.host_callbacks:
            raise ValueError(
                f"Cannot serialize code with custom calls whose targets have no compatibility "
                f"guarantees: the function {name!r} uses Python host callbacks (debug.print, "
                "pure_callback, ...), which cannot be part of an exported artifact.")
    texts = [lw.text for lw in lowereds]
    info = _result_info(out_tree)
    if len(set(texts)) <= 1:
        blob = _em().serialize_module(texts[0], result_info=info,
                                      platform_index_arg=len(platforms) > 1)
    else:     # platform-specific lowerings (e.g. LAPACK vs cusolver): a case on the index
        text = _em().multi_platform_module(texts, f"jit_{name}")
        blob = _em().serialize_module(text, result_info=info)
    in_avals = [a.strip_weak_type() for a in logical.in_avals]
    out_avals = list(logical.out_avals)
    closed = logical

    def get_vjp(primal: Exported) -> Exported:
        def flat_primal(*xs):
            return list(ir.eval_jaxpr(closed.jaxpr, closed.consts, *xs))
        return _export_vjp(flat_primal, name, primal, platforms, disabled_checks)

    return Exported(
        fun_name=name, in_tree=in_tree, in_avals=in_avals, out_tree=out_tree,
        out_avals=out_avals, nr_devices=1, platforms=platforms, ordered_effects=(),
        unordered_effects=(), disabled_safety_checks=disabled_checks,
        mlir_module_serialized=blob, calling_convention_version=_CALLING_CONVENTION_VERSION,
        module_kept_var_idx=tuple(range(len(in_avals))), uses_global_constants=False,
        _get_vjp=get_vjp)


def _export_vjp(flat_primal, name, primal, platforms, disabled_checks, mesh=None) -> Exported:
    """Export ``(*primals, *out_cts) -> in_cts`` of ``flat_primal`` (JAX's convention).

    Cotangents of integer/bool values are float0 in the avals and ``i1`` tensors in the
    module (JAX's physical representation of float0)."""
    n = len(primal.in_avals)
    in_float = [_is_float(a.dtype) for a in primal.in_avals]
    out_float = [_is_float(a.dtype) for a in primal.out_avals]

    def fun_vjp(*args_and_cts):
        primals, cts = args_and_cts[:n], args_and_cts[n:]
        _, pullback = _vjp(flat_primal, *primals)
        cts = [c if f else np.zeros(np.shape(c), float0) for c, f in zip(cts, out_float)]
        in_cts = list(pullback(list(cts)))
        return [c if f else xnp.zeros(np.shape(x), bool)
                for c, f, x in zip(in_cts, in_float, primals)]
    fun_vjp.__name__ = f"vjp_{name}"

    def spec(a, is_float):
        dt = a.dtype if is_float else np.dtype(bool)
        return ShapeDtypeStruct(a.shape, dt)
    specs = [spec(a, True) for a in primal.in_avals] + \
            [spec(a, f) for a, f in zip(primal.out_avals, out_float)]
    if mesh is None:
        jitted = jit(fun_vjp)
    else:      # a sharded primal: the VJP takes the primal's (in + out) shardings, returns
        # cotangents laid out as the primal inputs (JAX's convention)
        def on(s):
            return _on_mesh(s, mesh)
        jitted = jit(fun_vjp, in_shardings=tuple(
            on(s) for s in primal._in_named_shardings + primal._out_named_shardings),
            out_shardings=[on(s) for s in primal._in_named_shardings])
    exp = export(jitted, platforms=platforms, disabled_checks=disabled_checks)(*specs)
    exp.in_avals = tuple(list(exp.in_avals[:n]) + [
        a if f else ShapedArray(a.shape, float0) for a, f in zip(exp.in_avals[n:], out_float)])
    exp.out_avals = tuple(a if f else ShapedArray(a.shape, float0)
                          for a, f in zip(exp.out_avals, in_float))
    return exp


def _is_float(dtype):
    return dtypes.issubdtype(dtype, np.inexact)


# ----------------------------------------------------------------- calling


def _pp_arg(exported, arg_idx, dim_idx=None):
    paths = [_tu.keystr(p) for p, _ in _tu.tree_flatten_with_path(
        exported.in_tree.unflatten([0] * exported.in_tree.num_leaves))[0]]
    p = paths[arg_idx] if arg_idx < len(paths) else f"[{arg_idx}]"
    # JAX prints args[i] / kwargs['k'] for the ((args), {kwargs}) tree
    if p.startswith("[0]"):
        p = "args" + p[3:]
    elif p.startswith("[1]"):
        p = "kwargs" + p[3:]
    return p + ("" if dim_idx is None else f".shape[{dim_idx}]")


def _call_abstract_eval(in_avals, exported):
    if len(in_avals) != len(exported.in_avals):
        raise ValueError(f"the exported function {exported.fun_name!r} takes "
                         f"{len(exported.in_avals)} arrays, got {len(in_avals)}")
    symbolic = False
    for i, (exp, act) in enumerate(zip(exported.in_avals, in_avals)):
        exp = _physical(exp)
        if len(exp.shape) != len(act.shape):
            raise ValueError(f"Rank mismatch for {_pp_arg(exported, i)}: expected "
                             f"{_shape_str(exp.shape)} and called with {_shape_str(act.shape)}")
        if _physical(exp).dtype != _physical(act).dtype:
            raise ValueError(f"Dtype mismatch for {_pp_arg(exported, i)}: expected {exp.dtype} "
                             f"and called with {act.dtype}")
        for k, d in enumerate(exp.shape):
            if isinstance(d, _DimExpr):
                symbolic = True
            elif d != act.shape[k]:
                raise ValueError(f"Shape mismatch for {_pp_arg(exported, i, k)} (expected same "
                                 f"constant): expected {_shape_str(exp.shape)} and called with "
                                 f"{_shape_str(act.shape)}")
    if symbolic:
        _check_dim_vars(exported, in_avals)
    if not symbolic and not any(_is_symbolic(a.shape) for a in exported.out_avals):
        return [_physical(ShapedArray(a.shape, a.dtype, a.weak_type)) for a in exported.out_avals]
    # Shape polymorphism: refine the module for these shapes (also checks its assertions).
    from xform._src.lowering.mlir import aval_type  # deferred: keeps `import xform` light
    platform = _canonical_platform(lowering.default_backend())
    _, _, out_types = _em().specialize(
        exported.mlir_module_serialized,
        tuple(aval_type(in_avals[i]) for i in exported.module_kept_var_idx),
        exported._platform_index(platform))
    from xform._src.lowering.mlir import _shape_of  # deferred: keeps `import xform` light
    return [_physical(ShapedArray(_shape_of(t), a.dtype, a.weak_type))
            for t, a in zip(out_types, exported.out_avals)]


def _check_dim_vars(exported, in_avals):
    """Solve the dimension variables from the argument shapes and check them statically,
    with JAX's error texts (a variable is >= 1 and takes one value everywhere)."""
    env, origin = {}, {}
    specs = ",".join(f"{_pp_arg(exported, i)}.shape = {_shape_str(a.shape)}"
                     for i, a in enumerate(exported.in_avals) if _is_symbolic(a.shape))

    def fail(what, head="Input shapes do not match the polymorphic shapes specification. "):
        obtained = "".join(f"'{v}' = {env[v]} from specification '{v}' for dimension "
                           f"{_pp_arg(exported, *origin[v])} (= {env[v]}), " for v in env)
        raise ValueError(
            head + what +
            f" Using the following polymorphic shapes specifications: {specs}. Obtained "
            f"dimension variables: {obtained}. Please see "
            "https://docs.jax.dev/en/latest/export/shape_poly.html#shape-assertion-errors for "
            "more details.")

    dims = [(i, k, d, act.shape[k]) for i, (exp, act) in enumerate(zip(exported.in_avals, in_avals))
            for k, d in enumerate(exp.shape) if isinstance(d, _DimExpr)]
    pending = list(dims)
    progress = True
    while pending and progress:           # solve dims linear in one unknown variable
        progress = False
        for item in list(pending):
            i, k, d, val = item
            unknown = [v for v in d.variables() if v not in env]
            if len(unknown) != 1:
                continue
            v = unknown[0]
            coeff, rest = 0, 0
            for m, c in d.terms.items():
                if m == ((v, 1),):
                    coeff += c
                elif any(x == v for x, _ in m):
                    coeff = None
                    break
                else:
                    rest += c * _eval_mono(m, env)
            if not coeff:
                continue
            q, r = divmod(val - rest, coeff)
            if r:
                fail(f"Division had remainder {r} when computing the value of '{v}'.")
            env[v], origin[v] = q, (i, k)
            pending.remove(item)
            progress = True
    for v in env:
        if env[v] < 1:
            fail(f"Expected value >= 1 for dimension variable '{v}'.")
    for i, k, d, val in dims:
        if all(v in env for v in d.variables()):
            got = sum(c * _eval_mono(m, env) for m, c in d.terms.items())
            if got != val:
                fail(f"Found inconsistency between dimension size {_pp_arg(exported, i, k)} "
                     f"(= {val}) and the specification '{d}' (= {got}).")
    for diff, text in exported._symbolic_constraints():
        if isinstance(diff, str):
            diff = _parse_dim(diff, None)
        terms = diff.terms if isinstance(diff, _DimExpr) else {(): int(diff)}
        if all(v in env for m in terms for v, _ in m):
            got = sum(c * _eval_mono(m, env) for m, c in terms.items())
            if got < 0:
                fail(f"Expected '{diff}' to be greater or equal to 0, but found {got}. ",
                     head=f"Input shapes do not match the symbolic shape constraint {text}. ")


def _eval_mono(m, env):
    r = 1
    for v, p in m:
        r *= env[v] ** p
    return r


def _shape_str(shape):
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _call_impl(args, exported):
    _em()
    if exported.nr_devices > 1:
        return _call_sharded(args, exported)
    from xform._src.lowering.runtime import device_impl_hook  # deferred: keeps `import xform` light
    return device_impl_hook(call_exported_p, args, {"exported": exported})


def _devices_error(exported, n):
    return ValueError(f"Function {exported.fun_name} was exported for {exported.nr_devices} "
                      f"devices and is called in a context with {n} devices, which is not "
                      "allowed.")


def _context_mesh(args):
    """The mesh an eager call runs in: that of the first argument laid out over a mesh,
    else the current mesh (``set_mesh`` / ``with mesh``), else None (one device)."""
    S = _xs()
    for a in args:
        if type(a) is core.Array and a._buf is not None and not a._deleted and \
                len(a._buf._sharding.device_set) > 1:
            s = a.sharding
            if isinstance(s, S.NamedSharding):
                return s.mesh
            raise ValueError(f"an argument of type {a.aval.str_short()} is laid out as {s}, "
                             "which has no mesh; device_put it with a NamedSharding before "
                             "calling the exported function")
    return S._context_mesh()


def _run_mesh(exported, mesh):
    """``mesh``'s devices (in order) arranged as the export's abstract mesh."""
    am = _export_mesh(exported)
    if am is None or (tuple(mesh.axis_names) == am.axis_names and
                      tuple(mesh.axis_sizes) == am.axis_sizes):
        return mesh
    S = _xs()
    devs = np.array(list(mesh.devices.flat), dtype=object).reshape(am.axis_sizes)
    return S.Mesh(devs, am.axis_names, am.axis_types)


def _call_sharded(args, exported):
    """Run a multi-device export eagerly: a program partitioned over the context's mesh
    (arranged as the export's mesh) whose inputs are placed as the export's
    in_shardings say and whose outputs are laid out as its out_shardings."""
    from xform._src.lowering import spmd  # deferred: keeps `import xform` light
    S = _xs()
    ctx = _context_mesh(args)
    n = ctx.size if ctx is not None else 1
    if n != exported.nr_devices:
        raise _devices_error(exported, n)
    mesh = _run_mesh(exported, ctx)
    in_specs = []
    for a, s in zip(args, exported._in_named_shardings):
        if s is not None and not s.mesh.empty:
            in_specs.append(s.spec)
            continue
        # unspecified in the export: keep the argument's layout over this mesh, else
        # replicate it (always valid; XLA's free choice might have no PartitionSpec)
        cur = a.sharding if type(a) is core.Array and a._buf is not None and \
            not a._deleted else None
        in_specs.append(cur.spec if isinstance(cur, S.NamedSharding) and cur.mesh == mesh
                        else S.PartitionSpec())
    out_specs = tuple(s.spec if s is not None and not s.mesh.empty else None
                      for s in exported._out_named_shardings)
    avals = tuple(core.get_aval(a) for a in args)
    key = (avals, mesh, tuple(in_specs), out_specs)
    cache = exported.__dict__.setdefault("_spmd_cache", {})
    comp = cache.get(key)
    if comp is None:
        def fun(*xs):
            return list(call_exported_p.bind(*xs, exported=exported))
        with core.set_current_trace(core.EVAL_TRACE):
            jaxpr, consts = staging.trace_to_jaxpr(fun, avals)
        comp = cache[key] = spmd.SpmdCompiled(ir.ClosedJaxpr(jaxpr, consts), mesh,
                                              tuple(in_specs), out_specs, None,
                                              f"call_exported_{exported.fun_name}")
    return comp(*args)


def call(exported: Exported):
    """A function that calls ``exported`` with pytree arguments (JAX's ``export.call``)."""
    if not isinstance(exported, Exported):
        raise ValueError(f"The exported argument must be an export.Exported. Found {exported}.")
    _em()     # the lowering rule of call_exported

    @custom_vjp
    def f_flat(*args_flat):
        return tuple(call_exported_p.bind(*args_flat, exported=exported))

    def fwd(*args_flat):
        return f_flat(*args_flat), args_flat

    def bwd(residual, ct_res):
        exp_vjp = exported.vjp()
        n = len(residual)
        cts = [np.zeros(a.shape, np.bool_) if a.dtype == _FLOAT0 else c
               for c, a in zip(ct_res, exp_vjp.in_avals[n:])]
        in_cts = call_exported_p.bind(*residual, *cts, exported=exp_vjp)
        return tuple(c if _is_float(a.dtype) else None
                     for c, a in zip(in_cts, exported.in_avals))

    f_flat.defvjp(fwd, bwd)

    has_keys = any(_is_key_dtype(a.dtype) for a in exported.in_avals + exported.out_avals)

    def f_imported(*args, **kwargs):
        leaves, in_tree = _tu.tree_flatten((args, kwargs))
        if in_tree != exported.in_tree:
            raise ValueError(
                "The invocation args and kwargs must have the same pytree structure as when "
                f"the function '{exported.fun_name}' was exported, but they have the "
                f"following structural differences: the invocation has structure {in_tree} "
                f"and the export {exported.in_tree}.")
        leaves = [x if isinstance(x, (core.Array, core.Tracer, int, float, complex, bool))
                  else core.Array(np.asarray(x)) for x in leaves]
        leaves = [np.zeros(np.shape(x), np.bool_) if getattr(x, "dtype", None) == _FLOAT0 else x
                  for x in leaves]
        if has_keys:
            leaves = [_random.key_data(x) if _is_key_dtype(getattr(x, "dtype", None)) else x
                      for x in leaves]
        if core.current_trace() is core.EVAL_TRACE and not any(
                isinstance(x, core.Tracer) for x in leaves):
            res = list(call_exported_p.bind(*leaves, exported=exported))  # eager: no AD needed
        else:
            res = list(f_flat(*leaves))
        if has_keys:
            res = [_random.wrap_key_data(r) if _is_key_dtype(a.dtype) else r
                   for r, a in zip(res, exported.out_avals)]
        return exported.out_tree.unflatten(res)
    return f_imported


call_exported = call

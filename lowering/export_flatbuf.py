"""JAX's ``Exported`` flatbuffer layout, read and written in plain Python.

``jax.export.serialize`` writes an ``Exported`` as a FlatBuffer whose schema
is JAX's ``serialization.fbs`` (tables ``Exported``, ``PyTreeDef``,
``AbstractValue``, ``Sharding``, ``Effect``, ``DisabledSafetyCheck``).  We
write and read the same bytes without the ``flatbuffers`` runtime (which JAX
does not depend on), so an artifact made by ``xform.export`` is read by
``jax.export.deserialize`` and the reverse.

The FlatBuffer wire format in brief (little endian):

* the buffer starts with a ``u32`` offset to the root table;
* a table starts with an ``i32`` ``soffset``: ``vtable = table - soffset``;
  the vtable is ``u16 vtable_size, u16 table_size, u16 field_offset[slot]``
  (0 = field absent, the reader then uses the field's default);
* scalar fields are stored inline; a string, vector or sub-table field holds
  a ``u32`` offset *forward* from the field's own position;
* a string is ``u32 length, bytes, NUL``; a vector ``u32 count, elements``
  (tables and strings as ``u32`` forward offsets from each element).

This writer lays objects out front to back: a table, then the objects it
refers to (so every offset is positive), patching the offsets as it goes.

Pure Python (no jax import).  The schema-level functions exchange plain
dicts / tuples; ``xform.export`` maps them to its own types.
"""
from __future__ import annotations

import struct

# ----------------------------------------------------------------- schema constants (serialization.fbs)

PYTREE_LEAF, PYTREE_NONE, PYTREE_TUPLE, PYTREE_LIST, PYTREE_DICT, PYTREE_CUSTOM = range(6)

# DType enum of the schema, by the name NumPy / ml_dtypes give the dtype.
DTYPE_CODES = {
    "bool": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4,
    "uint8": 5, "uint16": 6, "uint32": 7, "uint64": 8,
    "float16": 9, "float32": 10, "float64": 11, "complex64": 12, "complex128": 13,
    "bfloat16": 14, "int4": 15, "uint4": 16, "float8_e4m3b11fnuz": 17,
    "float8_e4m3fn": 18, "float8_e4m3fnuz": 19, "float8_e5m2": 20,
    "float8_e5m2fnuz": 21, "float0": 22, "float8_e4m3": 23, "float8_e3m4": 24,
    "float8_e8m0fnu": 25, "float4_e2m1fn": 26,
    "key<fry>": 27, "key<rbg>": 28, "key<unsafe_rbg>": 29,
}
DTYPE_NAMES = {v: k for k, v in DTYPE_CODES.items()}

MEMORY_SPACE_DEVICE = 1
DISABLED_CHECK_PLATFORM, DISABLED_CHECK_CUSTOM_CALL, DISABLED_CHECK_SHAPE_ASSERTIONS = 0, 1, 2

# The serialization_version field: JAX 0.10.2 writes 3 (older readers accepted only 2/3).
SERIALIZATION_VERSION_FIELD = 3

# ----------------------------------------------------------------- generic writer


class _Table:
    """A table to write: ``fields`` = [(slot, kind, value)]."""
    __slots__ = ("fields",)

    def __init__(self, fields):
        self.fields = [f for f in fields if f[2] is not None]


_SCALARS = {"bool": ("<B", 1), "i8": ("<b", 1), "u8": ("<B", 1), "i16": ("<h", 2),
            "u16": ("<H", 2), "i32": ("<i", 4), "u32": ("<I", 4)}
_VEC_ELEMS = {"vec_u8": ("<B", 1), "vec_u16": ("<H", 2), "vec_u32": ("<I", 4)}


class _Writer:
    def __init__(self):
        self.buf = bytearray(4)          # root offset, patched at the end

    def _align(self, n):
        pad = (-len(self.buf)) % n
        self.buf += b"\0" * pad

    def _patch(self, at, target):
        assert target > at
        struct.pack_into("<I", self.buf, at, target - at)

    def table(self, t: _Table) -> int:
        fields = sorted(t.fields, key=lambda f: f[0])
        # inline layout: soffset, then each field aligned to its size (references: 4 bytes)
        layout, size = [], 4
        for slot, kind, value in fields:
            width = _SCALARS[kind][1] if kind in _SCALARS else 4
            size += (-size) % width
            layout.append((slot, kind, value, size))
            size += width
        size += (-size) % 4
        nslots = (max(f[0] for f in fields) + 1) if fields else 0
        offsets = [0] * nslots
        for slot, _, _, off in layout:
            offsets[slot] = off
        self._align(4)
        vtable = len(self.buf)
        self.buf += struct.pack(f"<HH{nslots}H", 4 + 2 * nslots, size, *offsets)
        self._align(4)
        pos = len(self.buf)
        self.buf += b"\0" * size
        struct.pack_into("<i", self.buf, pos, pos - vtable)
        pending = []
        for slot, kind, value, off in layout:
            at = pos + off
            if kind in _SCALARS:
                struct.pack_into(_SCALARS[kind][0], self.buf, at, int(value))
            else:
                pending.append((at, kind, value))
        for at, kind, value in pending:
            self._patch(at, self.obj(kind, value))
        return pos

    def obj(self, kind, value) -> int:
        if kind == "table":
            return self.table(value)
        if kind == "str":
            data = value.encode("utf-8")
            self._align(4)
            pos = len(self.buf)
            self.buf += struct.pack("<I", len(data)) + data + b"\0"
            return pos
        if kind in _VEC_ELEMS:
            fmt, _ = _VEC_ELEMS[kind]
            value = list(value) if not isinstance(value, (bytes, bytearray)) else value
            self._align(4)
            pos = len(self.buf)
            self.buf += struct.pack("<I", len(value))
            if kind == "vec_u8":
                self.buf += bytes(value)
            else:
                self.buf += struct.pack(f"<{len(value)}{fmt[1]}", *value)
            return pos
        if kind in ("vec_table", "vec_str"):
            self._align(4)
            pos = len(self.buf)
            self.buf += struct.pack("<I", len(value)) + b"\0" * (4 * len(value))
            sub = "table" if kind == "vec_table" else "str"
            for i, v in enumerate(value):
                self._patch(pos + 4 + 4 * i, self.obj(sub, v))
            return pos
        raise TypeError(f"unknown flatbuffer field kind {kind!r}")

    def finish(self, root: _Table) -> bytes:
        pos = self.table(root)
        struct.pack_into("<I", self.buf, 0, pos)
        return bytes(self.buf)


# ----------------------------------------------------------------- generic reader


class _Corrupt(ValueError):
    """The bytes are not a well-formed FlatBuffer of the Exported schema."""


class _Reader:
    """A view of one table in ``buf`` at ``pos``.

    Every offset, size and count is checked against the buffer before it is used (the
    bytes may be untrusted): a table, vtable, field, string or vector that does not lie
    inside the buffer raises ``_Corrupt`` (a ValueError).  ``budget`` (shared by all the
    readers of one parse) bounds the number of tables visited, so a crafted buffer whose
    vectors point many times at the same table cannot make the parse explode.
    """
    __slots__ = ("buf", "pos", "_vt", "_vtsize", "_tsize", "_budget")

    def __init__(self, buf, pos, budget=None):
        n = len(buf)
        if budget is None:
            budget = [n // 4 + 16]
        budget[0] -= 1
        if budget[0] < 0:
            raise _Corrupt("more tables are referenced than the buffer can hold (shared or "
                           "cyclic references)")
        if pos % 4 or not 4 <= pos <= n - 4:
            raise _Corrupt(f"a table offset {pos} lies outside the {n}-byte buffer")
        vt = pos - struct.unpack_from("<i", buf, pos)[0]
        if vt % 2 or not 0 <= vt <= n - 4:
            raise _Corrupt(f"the table at {pos} has its vtable at {vt}, outside the buffer")
        vtsize, tsize = struct.unpack_from("<HH", buf, vt)
        if vtsize < 4 or vtsize % 2 or vt + vtsize > n:
            raise _Corrupt(f"the vtable at {vt} has an invalid size {vtsize}")
        if tsize < 4 or pos + tsize > n:
            raise _Corrupt(f"the table at {pos} has an invalid size {tsize}")
        self.buf, self.pos, self._vt, self._vtsize, self._tsize = buf, pos, vt, vtsize, tsize
        self._budget = budget

    def _field(self, slot, width=4):
        o = 4 + 2 * slot
        if o >= self._vtsize:
            return None
        off = struct.unpack_from("<H", self.buf, self._vt + o)[0]
        if not off:
            return None
        if off < 4 or off + width > self._tsize:
            raise _Corrupt(f"field {slot} of the table at {self.pos} lies outside the table")
        return self.pos + off

    def _deref(self, at):
        t = at + struct.unpack_from("<I", self.buf, at)[0]
        if t > len(self.buf) - 4:
            raise _Corrupt(f"the offset at {at} points past the end of the buffer")
        return t

    def scalar(self, slot, kind, default=0):
        fmt, width = _SCALARS[kind]
        at = self._field(slot, width)
        return default if at is None else struct.unpack_from(fmt, self.buf, at)[0]

    def string(self, slot):
        at = self._field(slot)
        return None if at is None else _read_str(self.buf, self._deref(at))

    def table(self, slot):
        at = self._field(slot)
        return None if at is None else _Reader(self.buf, self._deref(at), self._budget)

    def _vector(self, slot, elem_size):
        at = self._field(slot)
        if at is None:
            return None, 0
        v = self._deref(at)
        count = struct.unpack_from("<I", self.buf, v)[0]
        if v + 4 + count * elem_size > len(self.buf):
            raise _Corrupt(f"the vector at {v} has {count} elements, more than the buffer "
                           "holds")
        return v + 4, count

    def numbers(self, slot, kind):
        fmt, size = _VEC_ELEMS[kind]
        start, n = self._vector(slot, size)
        if start is None:
            return b"" if kind == "vec_u8" else []
        if kind == "vec_u8":
            return bytes(self.buf[start:start + n])
        return list(struct.unpack_from(f"<{n}{fmt[1]}", self.buf, start))

    def tables(self, slot):
        start, n = self._vector(slot, 4)
        return [] if start is None else [
            _Reader(self.buf, self._deref(start + 4 * i), self._budget) for i in range(n)]

    def strings(self, slot):
        start, n = self._vector(slot, 4)
        return [] if start is None else [
            _read_str(self.buf, self._deref(start + 4 * i)) for i in range(n)]


def _read_str(buf, at):
    n = struct.unpack_from("<I", buf, at)[0]
    if at + 4 + n > len(buf):
        raise _Corrupt(f"the string at {at} has length {n}, past the end of the buffer")
    return bytes(buf[at + 4:at + 4 + n]).decode("utf-8")


# ----------------------------------------------------------------- the Exported schema
#
# Plain-data form used by xform.export:
#   pytree node: ("leaf",) | ("none",) | ("tuple", kids) | ("list", kids)
#                | ("dict", keys, kids) | ("custom", name, auxdata_bytes, kids)
#   aval: (shape as a tuple of dimension strings, dtype name)
#   exported: dict with keys fun_name, in_tree, out_tree, in_avals, out_avals,
#     nr_devices, platforms, ordered_effects, unordered_effects, disabled_checks
#     ([(kind, target or None)]), mlir_module_serialized, calling_convention_version,
#     module_kept_var_idx, uses_global_constants, vjp (dict or None),
#     in_shardings / out_shardings: per argument / result None (unspecified) or a
#       named sharding (see below).
#   named sharding: (mesh, spec, reduced, unreduced, memory_kind) with
#     mesh = (axis_sizes, axis_names, axis_types, device): an abstract mesh (JAX's
#       AbstractMesh); axis_types as the schema's AxisType codes; device = None or
#       (device_kind, num_cores or None, platform);
#     spec = one tuple of mesh axis names per partitioned dimension (() = None);
#     reduced / unreduced = tuples of axis names; memory_kind = str or None.
#   All plain tuples, so equal shardings are equal (the writer shares them).

AXIS_TYPE_AUTO, AXIS_TYPE_EXPLICIT, AXIS_TYPE_MANUAL = 1, 2, 3


def _pytree_table(node) -> _Table:
    tag = node[0]
    if tag == "leaf":
        return _Table([(0, "i8", PYTREE_LEAF)])
    if tag == "none":
        return _Table([(0, "i8", PYTREE_NONE)])
    if tag in ("tuple", "list"):
        kids = [_pytree_table(k) for k in node[1]]
        return _Table([(0, "i8", PYTREE_TUPLE if tag == "tuple" else PYTREE_LIST),
                       (1, "vec_table", kids)])
    if tag == "dict":
        keys, kids = node[1], node[2]
        return _Table([(0, "i8", PYTREE_DICT), (1, "vec_table", [_pytree_table(k) for k in kids]),
                       (2, "vec_str", list(keys))])
    if tag == "custom":
        name, aux, kids = node[1], node[2], node[3]
        return _Table([(0, "i8", PYTREE_CUSTOM), (1, "vec_table", [_pytree_table(k) for k in kids]),
                       (3, "str", name), (4, "vec_u8", bytes(aux))])
    raise ValueError(f"unknown pytree node {tag!r}")


def _read_pytree(r: _Reader):
    kind = r.scalar(0, "i8")
    kids = [_read_pytree(c) for c in r.tables(1)]
    if kind == PYTREE_LEAF:
        return ("leaf",)
    if kind == PYTREE_NONE:
        return ("none",)
    if kind == PYTREE_TUPLE:
        return ("tuple", kids)
    if kind == PYTREE_LIST:
        return ("list", kids)
    if kind == PYTREE_DICT:
        keys = r.strings(2)
        if len(keys) != len(kids):
            raise _Corrupt(f"a dict PyTreeDef has {len(keys)} keys and {len(kids)} children")
        return ("dict", keys, kids)
    if kind == PYTREE_CUSTOM:
        return ("custom", r.string(3), r.numbers(4, "vec_u8"), kids)
    raise ValueError(f"Cannot deserialize PyTreeDef with unknown kind: {kind}")


def _aval_table(aval) -> _Table:
    shape, dtype = aval
    if dtype not in DTYPE_CODES:
        raise ValueError(f"dtype {dtype} cannot be serialized in an Exported")
    return _Table([(0, "i8", 0), (1, "vec_str", [str(d) for d in shape]),
                   (2, "i8", DTYPE_CODES[dtype]), (3, "i8", MEMORY_SPACE_DEVICE)])


def _read_aval(r: _Reader):
    if r.scalar(0, "i8") != 0:
        raise ValueError("the serialized Exported has an abstract token argument; "
                         "only array arguments are supported")
    code = r.scalar(2, "i8")
    if code not in DTYPE_NAMES:
        raise ValueError(f"the serialized Exported uses an unknown dtype code {code}")
    return tuple(r.strings(1)), DTYPE_NAMES[code]


def _mesh_table(mesh) -> _Table:
    sizes, names, types, device = mesh
    fields = [(0, "vec_u32", list(sizes)), (1, "vec_str", list(names)),
              (2, "vec_u8", bytes(types))]
    if device is not None:
        kind, cores, platform = device
        fields.append((3, "table", _Table([(0, "str", kind),
                                           (1, "u32", cores),
                                           (2, "str", platform)])))
    return _Table(fields)


def _read_mesh(r: _Reader):
    sizes = tuple(r.numbers(0, "vec_u32"))
    names = tuple(r.strings(1))
    types = tuple(r.numbers(2, "vec_u8"))
    if len(sizes) != len(names):
        raise ValueError(f"the serialized Exported has an abstract mesh with axis sizes {sizes} "
                         f"and axis names {names} of different lengths")
    d = r.table(3)
    device = None
    if d is not None:
        cores = d.scalar(1, "u32", None)
        device = (d.string(0) or "", cores, d.string(2))
    return sizes, names, types or (AXIS_TYPE_AUTO,) * len(sizes), device


def _named_sharding_table(s, mesh_idx) -> _Table:
    mesh, spec, reduced, unreduced, memory_kind = s
    spec_t = _Table([(0, "vec_table", [_Table([(0, "vec_str", list(p))]) for p in spec]),
                     (1, "vec_str", list(reduced)), (2, "vec_str", list(unreduced))])
    return _Table([(0, "table", _mesh_table(mesh)), (1, "table", spec_t),
                   (2, "str", memory_kind), (3, "u32", mesh_idx)])


def _read_named_sharding(r: _Reader, meshes):
    if meshes:
        i = r.scalar(3, "u32")
        if i >= len(meshes):
            raise _Corrupt(f"a named sharding refers to mesh {i} of {len(meshes)}")
        mesh = meshes[i]
    else:
        m = r.table(0)
        if m is None:
            raise ValueError("the serialized Exported has a named sharding without a mesh")
        mesh = _read_mesh(m)
    sp = r.table(1)
    spec = tuple(tuple(t.strings(0)) for t in sp.tables(0)) if sp is not None else ()
    reduced = tuple(sp.strings(1)) if sp is not None else ()
    unreduced = tuple(sp.strings(2)) if sp is not None else ()
    return mesh, spec, reduced, unreduced, r.string(2)


def _read_sharding(r: _Reader, meshes):
    """A legacy ``Sharding`` table: a named sharding, or None (unspecified)."""
    named = r.table(2)
    if named is not None:
        return _read_named_sharding(named, meshes)
    if r.numbers(1, "vec_u8"):
        raise ValueError("the serialized Exported carries HloSharding protos (a multi-device "
                         "export written before JAX serialized named shardings, January "
                         "2026); xform reads named shardings only: re-export it with a "
                         "current JAX")
    return None


def _exported_table(e: dict, vjp_order: int) -> _Table:
    uniques, index = [], {}
    for a in list(e["in_avals"]) + list(e["out_avals"]):
        if a not in index:
            index[a] = len(uniques)
            uniques.append(a)
    n_in, n_out = len(e["in_avals"]), len(e["out_avals"])
    in_sh = list(e.get("in_shardings") or [None] * n_in)
    out_sh = list(e.get("out_shardings") or [None] * n_out)
    meshes, mesh_index, shardings, sh_index = [], {}, [], {}
    for s in in_sh + out_sh:
        if s is None:
            continue
        if s[0] not in mesh_index:
            mesh_index[s[0]] = len(meshes)
            meshes.append(s[0])
        if s not in sh_index:
            sh_index[s] = len(shardings)
            shardings.append(s)

    def legacy(s):
        return _Table([]) if s is None else \
            _Table([(2, "table", _named_sharding_table(s, mesh_index[s[0]]))])
    fields = [
        (0, "u16", SERIALIZATION_VERSION_FIELD),
        (1, "str", e["fun_name"]),
        (2, "table", _pytree_table(e["in_tree"])),
        (3, "vec_table", [_aval_table(a) for a in e["in_avals"]]),
        (4, "table", _pytree_table(e["out_tree"])),
        (5, "vec_table", [_aval_table(a) for a in e["out_avals"]]),
        (7, "vec_table", [legacy(s) for s in in_sh]),
        (8, "vec_table", [legacy(s) for s in out_sh]),
        (9, "vec_str", list(e["platforms"])),
        (10, "vec_table", [_Table([(0, "str", n)]) for n in e["ordered_effects"]]),
        (11, "vec_table", [_Table([(0, "str", n)]) for n in e["unordered_effects"]]),
        (12, "vec_table", [_Table([(0, "i8", k)] + ([(1, "str", t)] if t is not None else []))
                           for k, t in e["disabled_checks"]]),
        (13, "vec_u8", bytes(e["mlir_module_serialized"])),
        (14, "u16", e["calling_convention_version"]),
        (15, "vec_u16", list(e["module_kept_var_idx"])),
        (16, "bool", bool(e["uses_global_constants"])),
        (18, "u32", e["nr_devices"]),
        (19, "vec_table", [_aval_table(a) for a in uniques]),
        (20, "vec_table", [_mesh_table(m) for m in meshes]),
        (21, "vec_table", [_named_sharding_table(s, mesh_index[s[0]]) for s in shardings]),
        (22, "vec_u32", [index[a] for a in e["in_avals"]]),
        (23, "vec_u32", [index[a] for a in e["out_avals"]]),
        (24, "vec_u32", [0 if s is None else 1 + sh_index[s] for s in in_sh]),
        (25, "vec_u32", [0 if s is None else 1 + sh_index[s] for s in out_sh]),
    ]
    if vjp_order > 0:
        vjp = e.get("vjp")
        if vjp is None:
            raise ValueError("serialization of an Exported that does not have vjps of "
                             "high-enough order")
        fields.append((17, "table", _exported_table(vjp(), vjp_order - 1)))
    return _Table(fields)


def serialize_exported(e: dict, vjp_order: int = 0) -> bytes:
    """FlatBuffer bytes of ``e`` (see the plain-data form above); ``e["vjp"]`` is a
    callable returning the VJP's dict (needed when ``vjp_order > 0``)."""
    return _Writer().finish(_exported_table(e, vjp_order))


def deserialize_exported(blob) -> dict:
    """The plain-data form of a serialized Exported (JAX's or ours).

    Untrusted bytes are fine: every offset is bounds-checked and any malformation
    (structure, required field, index, count) raises ValueError here, before anything
    is built from the data; the vjp's tables are checked too."""
    buf = bytes(blob)
    if len(buf) < 12:
        raise ValueError(f"not a serialized Exported: only {len(buf)} bytes")
    try:
        return _read_exported(_Reader(buf, struct.unpack_from("<I", buf, 0)[0]))
    except _Corrupt as e:
        raise ValueError(f"not a serialized Exported (corrupt FlatBuffer: {e})") from None
    except (struct.error, IndexError, UnicodeDecodeError, RecursionError, OverflowError,
            MemoryError) as e:
        raise ValueError(f"not a serialized Exported (corrupt FlatBuffer: "
                         f"{type(e).__name__}: {str(e)[:200]})") from None


def _count_leaves(node):
    tag = node[0]
    if tag == "leaf":
        return 1
    if tag == "none":
        return 0
    return sum(_count_leaves(k) for k in node[-1])


_MLIR_BYTECODE_MAGIC = b"ML\xefR"


def _check_exported(d: dict) -> None:
    """Cross-field consistency of a read Exported (each message names the problem)."""
    n_in, n_out = len(d["in_avals"]), len(d["out_avals"])
    if _count_leaves(d["in_tree"]) != n_in:
        raise _Corrupt(f"in_tree has {_count_leaves(d['in_tree'])} leaves but there are "
                       f"{n_in} in_avals")
    if _count_leaves(d["out_tree"]) != n_out:
        raise _Corrupt(f"out_tree has {_count_leaves(d['out_tree'])} leaves but there are "
                       f"{n_out} out_avals")
    kept = d["module_kept_var_idx"]
    if list(kept) != sorted(set(kept)) or any(i >= n_in for i in kept):
        raise _Corrupt(f"module_kept_var_idx {list(kept)[:8]} is not a sorted list of distinct "
                       f"argument indices below {n_in}")
    if not d["platforms"] or not all(d["platforms"]):
        raise _Corrupt(f"the platforms {d['platforms']!r} are empty")
    for k, _ in d["disabled_checks"]:
        if k not in (DISABLED_CHECK_PLATFORM, DISABLED_CHECK_CUSTOM_CALL,
                     DISABLED_CHECK_SHAPE_ASSERTIONS):
            raise _Corrupt(f"unknown disabled safety check kind {k}")
    mod = d["mlir_module_serialized"]
    if not mod.startswith(_MLIR_BYTECODE_MAGIC):
        raise _Corrupt(f"the embedded module ({len(mod)} bytes) is not MLIR bytecode (it "
                       f"starts with {bytes(mod[:4])!r})")


def _read_exported(r: _Reader) -> dict:
    unique = [_read_aval(t) for t in r.tables(19)]
    in_idx, out_idx = r.numbers(22, "vec_u32"), r.numbers(23, "vec_u32")
    if any(i >= len(unique) for i in list(in_idx) + list(out_idx)):
        raise _Corrupt(f"an aval index is past the {len(unique)} unique avals")
    if in_idx or not r.tables(3):
        in_avals = [unique[i] for i in in_idx]
    else:
        in_avals = [_read_aval(t) for t in r.tables(3)]
    if out_idx or not r.tables(5):
        out_avals = [unique[i] for i in out_idx]
    else:
        out_avals = [_read_aval(t) for t in r.tables(5)]
    meshes = [_read_mesh(t) for t in r.tables(20)]
    shardings = [_read_named_sharding(t, meshes) for t in r.tables(21)]

    def read_shardings(idx_slot, legacy_slot, n):
        idx = r.numbers(idx_slot, "vec_u32")
        if idx:
            if any(i > len(shardings) for i in idx):
                raise _Corrupt(f"a sharding index is past the {len(shardings)} shardings")
            return [None if i == 0 else shardings[i - 1] for i in idx]
        legacy = r.tables(legacy_slot)
        if legacy:
            return [_read_sharding(t, meshes) for t in legacy]
        return [None] * n
    in_shardings = read_shardings(24, 7, len(in_avals))
    out_shardings = read_shardings(25, 8, len(out_avals))
    if len(in_shardings) != len(in_avals) or len(out_shardings) != len(out_avals):
        raise ValueError("the serialized Exported has a different number of shardings "
                         f"({len(in_shardings)} in, {len(out_shardings)} out) and avals "
                         f"({len(in_avals)} in, {len(out_avals)} out)")
    vjp_r = r.table(17)
    if vjp_r is not None:         # check the vjp's structure now; build it on demand
        _read_exported(_Reader(vjp_r.buf, vjp_r.pos))
    trees = {}
    for slot, name in ((2, "in_tree"), (4, "out_tree")):
        t = r.table(slot)
        if t is None:
            raise _Corrupt(f"the Exported has no {name}")
        trees[name] = _read_pytree(t)
    d = {
        "fun_name": r.string(1) or "",
        "in_tree": trees["in_tree"],
        "out_tree": trees["out_tree"],
        "in_avals": in_avals,
        "out_avals": out_avals,
        "nr_devices": r.scalar(18, "u32") or r.scalar(6, "i16"),
        "platforms": r.strings(9),
        "ordered_effects": [t.string(0) for t in r.tables(10)],
        "unordered_effects": [t.string(0) for t in r.tables(11)],
        "disabled_checks": [(t.scalar(0, "i8"), t.string(1)) for t in r.tables(12)],
        "mlir_module_serialized": r.numbers(13, "vec_u8"),
        "calling_convention_version": r.scalar(14, "u16"),
        "module_kept_var_idx": r.numbers(15, "vec_u16"),
        "uses_global_constants": bool(r.scalar(16, "bool")),
        "in_shardings": in_shardings,
        "out_shardings": out_shardings,
        "vjp": ((lambda: _read_exported(_Reader(vjp_r.buf, vjp_r.pos)))
                if vjp_r is not None else None),
    }
    _check_exported(d)
    return d

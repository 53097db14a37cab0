"""Pytree checkpoints: ``save(path, pytree)`` / ``restore(path, target=None)``.

The names follow Orbax's ``PyTreeCheckpointer.save(path, item)`` /
``restore(path, item=...)`` (and Flax's ``restore_checkpoint(..., target)``):
``target`` gives the structure, shapes and dtypes the checkpoint must have.

Format (no pickle, no dependency beyond NumPy): one ``.zip`` file (stored, not
compressed) holding

* ``manifest.json``: ``{"format": "xform.checkpoint", "version": 1, "tree":
  <structure>, "leaves": [{"path", "file", "dtype", "shape", "python"}]}``;
  the structure is nested JSON: ``{"leaf": i}``, ``null`` (None),
  ``{"list": [...]}``, ``{"tuple": [...]}``, ``{"dict": [[key, node], ...]}``
  (``str``/``int`` keys, ``"key_type"`` says which), ``{"namedtuple": name,
  "fields": [...], "children": [...]}`` and ``{"node": "module.Type",
  "children": [...]}`` for other registered pytree nodes;
* ``arrays/<i>.npy``: leaf ``i`` in NumPy's ``.npy`` format.  Dtypes NumPy
  cannot describe in a ``.npy`` header (bfloat16, float8, int4 of
  ``ml_dtypes``) are stored as their raw bits (a same-width unsigned integer
  view) and the manifest's ``dtype`` names the real dtype, so every dtype
  round-trips bit-exactly, NaN payloads and negative zeros included.

Why this format: ``.npy`` is NumPy's documented, versioned array format, so a
checkpoint is readable with ``zipfile`` + ``numpy.load`` alone, in any
language with a zip and an npy reader; nothing in it executes code on load
(``allow_pickle=False``), unlike pickle.  safetensors would also do, but it
adds a dependency and has no bfloat16-free way to spell float8/int4 dtypes
in NumPy; the zip keeps one file per checkpoint, which makes the save atomic.

Atomic writes: the zip is written to a temporary file in the destination's
directory, flushed and fsync'ed, then ``os.replace``'d onto ``path`` (atomic on
POSIX and Windows); an interrupted save leaves the previous checkpoint intact.
Temporary files are named ``.<name>.xform-tmp.<host>.<pid>.<random>.tmp``; a save
removes the ones in its directory left by processes of this host that no longer run
(a save killed mid-write).

Last call wins: saves to one path (``save`` and ``save_async``, from any thread of
this process) are numbered when called; a save that finishes after a later-issued one
has been written does not replace it, so the file always ends up holding the last
checkpoint asked for.

Untrusted files: ``restore`` validates the zip, the manifest (against the schema
above: types, leaf indices, member names inside ``arrays/``, sizes) and every array
header before building anything, and reports any problem as ``CheckpointError`` (a
ValueError) naming the file and what is wrong.  See docs/reliability.md.

Typed PRNG key arrays (``xform.random.key``) are stored as their ``uint32`` key
data with the dtype (``key<fry>``) and the implementation's name in the
manifest, and come back as typed keys (``random.wrap_key_data``); raw
``uint32`` keys (``random.PRNGKey``) round-trip like any array.
"""
from __future__ import annotations

import io
import itertools
import json
import os
import re
import socket
import tempfile
import threading
import zipfile

import numpy as np

from xform._src.interpreters import tree_util as _tu
from xform import random as _random
from xform._src.interpreters.core import Array, Tracer
from xform._src.interpreters.dtypes import is_extended
from xform.sharding import Sharding
import collections

__all__ = ["save", "save_async", "restore", "CheckpointError", "FORMAT", "VERSION"]


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read: not a zip, truncated, corrupted, a manifest
    that does not follow the schema, a missing or unsafe archive member, an array header
    or size that contradicts the manifest.  The message names the file and the problem."""

FORMAT = "xform.checkpoint"
VERSION = 1

_RAW_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _npy_native(dtype) -> bool:
    """Can NumPy describe ``dtype`` in a ``.npy`` header (and read it back, no pickle)?"""
    return dtype.kind in "biufc" and type(dtype).__module__.startswith("numpy")


def _dtype_from_name(name):
    try:
        dt = np.dtype(name)
        if _npy_native(dt):
            return dt
    except TypeError:
        pass
    import ml_dtypes  # deferred: keeps `import xform` light
    try:
        return np.dtype(getattr(ml_dtypes, name))
    except AttributeError:
        raise ValueError(f"checkpoint uses unknown dtype {name!r}") from None


def _is_key(x) -> bool:
    """A typed PRNG key array (``xform.random.key``): an extended dtype."""
    dt = getattr(x, "dtype", None)
    return dt is not None and not isinstance(dt, np.dtype) and is_extended(dt)


def _leaf_to_numpy(path, x):
    if isinstance(x, Tracer):
        raise TypeError(f"save(): leaf {path} is a traced value {x.aval.str_short()}; save "
                        "concrete arrays (outside jit/grad/vmap).")
    if type(x) in (bool, int, float, complex):
        return np.asarray(x), type(x).__name__
    if isinstance(x, (Array, np.ndarray, np.generic)) or hasattr(x, "__array__"):
        a = np.asarray(x)
        if not (_npy_native(a.dtype) or type(a.dtype).__module__.startswith("ml_dtypes")):
            raise TypeError(f"save(): leaf {path} has dtype {a.dtype}, which is not an array "
                            "dtype; checkpoints hold numeric/bool arrays and Python scalars.")
        return a, None
    raise TypeError(f"save(): leaf {path} has type {type(x).__name__}, which is not an array "
                    "or a Python scalar; checkpoints hold arrays (xform/NumPy/JAX), Python "
                    "scalars and None, in lists/tuples/dicts/namedtuples/registered nodes.")


def _structure(treedef, counter):
    nd = treedef.node_data()
    if nd is None:
        i = counter[0]
        counter[0] += 1
        return {"leaf": i}
    typ, aux = nd
    kids = [_structure(c, counter) for c in treedef.children()]
    if typ is type(None):
        return None
    if typ is list:
        return {"list": kids}
    if typ is tuple:
        return {"tuple": kids}
    if typ is dict:
        keys = list(aux)
        if all(isinstance(k, str) for k in keys):
            kt = "str"
        elif all(isinstance(k, int) and not isinstance(k, bool) for k in keys):
            kt = "int"
        else:
            raise TypeError(f"save(): dict keys must be all str or all int, got {keys!r}")
        return {"dict": [[k, c] for k, c in zip(keys, kids)], "key_type": kt}
    if issubclass(typ, tuple) and hasattr(typ, "_fields"):
        return {"namedtuple": typ.__name__, "fields": list(typ._fields), "children": kids}
    return {"node": f"{typ.__module__}.{typ.__qualname__}", "children": kids}


def save(path, pytree, *, overwrite: bool = True) -> None:
    """Write ``pytree`` (arrays, Python scalars, None in containers) to ``path`` atomically.

    ``overwrite=False``: a ValueError if ``path`` exists.  When several saves to one
    path overlap (``save_async``), the one called last wins.
    """
    _write(*_prepare(path, pytree, overwrite, copy=False))


def save_async(path, pytree, *, overwrite: bool = True):
    """Like ``save``, but only the snapshot (device -> host copies of the leaves) happens
    now; the file is written by a background thread.  Returns a
    ``concurrent.futures.Future`` (``.result()`` waits and re-raises a failure).

    Saves to one path are ordered by call: if an earlier save finishes after this one,
    it does not overwrite this one's file (its future still succeeds)."""
    import concurrent.futures  # deferred: keeps `import xform` light
    job = _prepare(path, pytree, overwrite, copy=True)
    fut = concurrent.futures.Future()

    def run():
        try:
            _write(*job)
            fut.set_result(os.fspath(path))
        except BaseException as e:        # noqa: BLE001  (reported through the future)
            fut.set_exception(e)
    threading.Thread(target=run, name="xform-checkpoint-save", daemon=False).start()
    return fut


def _prepare(path, pytree, overwrite, copy):
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ValueError(f"save(): {path!r} is a directory; give a file path "
                         "(e.g. 'ckpt/step_100.ckpt')")
    if not overwrite and os.path.exists(path):
        raise ValueError(f"save(): {path!r} exists and overwrite=False")
    with_path, treedef = _tu.tree_flatten_with_path(pytree)
    tree = _structure(treedef, [0])
    leaves_meta, arrays = [], []
    for i, (kp, x) in enumerate(with_path):
        p = _tu.keystr(kp) or "<root>"
        if _is_key(x):        # typed PRNG keys: their uint32 key data + the impl's name
            words = np.asarray(_random.key_data(x))
            leaves_meta.append({"path": p, "file": f"arrays/{i}.npy", "dtype": str(x.dtype),
                                "shape": list(x.shape), "python": None,
                                "key_impl": str(_random.key_impl(x))})
            arrays.append(words)
            continue
        a, py = _leaf_to_numpy(p, x)
        dt = a.dtype
        if not _npy_native(dt):
            if dt.itemsize not in _RAW_BITS:
                raise TypeError(f"save(): leaf {p} has dtype {dt} of unsupported width")
            # (np.ascontiguousarray would make 0-d arrays 1-d)
            stored = np.array(a, order="C", copy=True).view(_RAW_BITS[dt.itemsize]) \
                .reshape(a.shape)
        else:
            stored = np.array(a, copy=True) if copy else a
        leaves_meta.append({"path": p, "file": f"arrays/{i}.npy", "dtype": dt.name,
                            "shape": list(a.shape), "python": py})
        arrays.append(stored)
    manifest = {"format": FORMAT, "version": VERSION, "tree": tree, "leaves": leaves_meta}
    return path, manifest, leaves_meta, arrays, _issue(path)


# -- ordering of saves to one path: numbered at call time; a save only replaces the file
#    when no later-numbered save to that path has replaced it already.
_seq = itertools.count(1)
_order_lock = threading.Lock()
_committed: dict = {}          # real path -> number of the save whose file is there
_path_locks: dict = {}         # real path -> lock serialising the replace step


def _key(path):
    return os.path.realpath(os.path.abspath(path))


def _issue(path):
    return next(_seq)


# -- temporary files: recognisable names carrying host and pid, so a later save can tell
#    a dead writer's leftovers from a live writer's file.
_TMP_TAG = ".xform-tmp."
_HOST = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:64] or "host"
_TMP_RE = re.compile(r"^\..*\.xform-tmp\.(?P<host>[A-Za-z0-9_-]+)\.(?P<pid>\d+)\.[^.]+\.tmp$")


def _pid_alive(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _clean_stale_temporaries(d):
    """Remove temporary files in ``d`` left by saves of this host's dead processes."""
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        if _TMP_TAG not in name:
            continue
        m = _TMP_RE.match(name)
        if m is None or m.group("host") != _HOST or _pid_alive(int(m.group("pid"))):
            continue
        try:
            os.unlink(os.path.join(d, name))
        except OSError:
            pass


def _write(path, manifest, leaves_meta, arrays, seq):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    _clean_stale_temporaries(d)
    fd, tmp = tempfile.mkstemp(
        dir=d, prefix=f".{os.path.basename(path)}{_TMP_TAG}{_HOST}.{os.getpid()}.",
        suffix=".tmp")
    key = _key(path)
    try:
        with os.fdopen(fd, "wb") as f:
            with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
                z.writestr("manifest.json", json.dumps(manifest, indent=1))
                for meta, a in zip(leaves_meta, arrays):
                    buf = io.BytesIO()
                    np.save(buf, a, allow_pickle=False)
                    z.writestr(meta["file"], buf.getvalue())
            f.flush()
            os.fsync(f.fileno())
        with _order_lock:
            lock = _path_locks.setdefault(key, threading.Lock())
        with lock:
            if _committed.get(key, 0) > seq:
                return               # a later-issued save is already in place: it wins
            os.replace(tmp, path)
            tmp = None
            _committed[key] = seq
        try:
            dfd = os.open(d, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:       # directories cannot be fsync'ed everywhere (Windows)
            pass
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


_EXCEPTIONS_OF_BAD_BYTES = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError,
                            ValueError, TypeError, KeyError, IndexError, UnicodeDecodeError,
                            NotImplementedError, RecursionError, OverflowError, MemoryError,
                            __import__("struct").error, __import__("zlib").error,
                            __import__("lzma").LZMAError)
_PYTHON_KINDS = (None, "bool", "int", "float", "complex")
_MAX_NPY_HEADER = 1 << 16


def _bad(path, what):
    return CheckpointError(f"restore(): {path!r} is not an xform checkpoint this version can "
                           f"read (corrupted, truncated or crafted): {what}")


def _safe_member(name):
    """An archive member name that stays inside the archive's own namespace (relative,
    no ``..``, no drive or backslash, no NUL)."""
    return (isinstance(name, str) and name and not name.startswith(("/", "\\")) and
            "\\" not in name and "\0" not in name and ":" not in name and
            all(part not in ("", ".", "..") for part in name.split("/")))


def _is_int(x):
    return type(x) is int


def _validate_manifest(path, manifest, names):
    """Check ``manifest`` against the schema in this module's docstring; raise
    CheckpointError naming the first problem.  Nothing is read from the arrays yet."""
    if not isinstance(manifest, dict):
        raise _bad(path, f"manifest.json is a JSON {type(manifest).__name__}, not an object")
    if manifest.get("format") != FORMAT:
        raise _bad(path, f"manifest format is {manifest.get('format')!r}, not {FORMAT!r}")
    version = manifest.get("version", 0)
    if not _is_int(version) or version < 0:
        raise _bad(path, f"manifest version {version!r} is not a non-negative integer")
    if version > VERSION:
        raise CheckpointError(f"restore(): {path!r}: checkpoint format version {version} is "
                              f"newer than this xform reads ({VERSION}); upgrade xform")
    for k in ("tree", "leaves"):
        if k not in manifest:
            raise _bad(path, f"manifest has no {k!r} entry")
    leaves = manifest["leaves"]
    if not isinstance(leaves, list):
        raise _bad(path, "manifest 'leaves' is not a list")
    files = set()
    for i, meta in enumerate(leaves):
        where = f"manifest leaf {i}"
        if not isinstance(meta, dict):
            raise _bad(path, f"{where} is not an object")
        for k, typ in (("path", str), ("file", str), ("dtype", str), ("shape", list)):
            if not isinstance(meta.get(k), typ):
                raise _bad(path, f"{where} has no valid {k!r} (expected a {typ.__name__}, got "
                                 f"{meta.get(k)!r:.60})")
        f = meta["file"]
        if not _safe_member(f):
            raise _bad(path, f"{where} names the member {f!r:.80}, which escapes the archive")
        if f not in names:
            raise _bad(path, f"{where} names the member {f!r:.80}, which the archive lacks")
        if f in files:
            raise _bad(path, f"{where} reuses the member {f!r:.80}")
        files.add(f)
        shape = meta["shape"]
        if not all(_is_int(n) and n >= 0 for n in shape) or len(shape) > 64:
            raise _bad(path, f"{where} has an invalid shape {shape!r:.80}")
        if meta.get("python") not in _PYTHON_KINDS:
            raise _bad(path, f"{where} has an invalid 'python' entry {meta.get('python')!r:.40}")
        if meta.get("python") and shape:
            raise _bad(path, f"{where} is a Python scalar with shape {shape}")
        impl = meta.get("key_impl")
        if impl is not None and not isinstance(impl, str):
            raise _bad(path, f"{where} has an invalid 'key_impl' {impl!r:.40}")
        if impl is None:
            try:
                dt = _dtype_from_name(meta["dtype"])
            except (ValueError, TypeError, ImportError):
                raise _bad(path, f"{where} has an unknown dtype {meta['dtype']!r:.40}") from None
            py = meta.get("python")
            if py and dt.kind not in {"bool": "b", "int": "iu", "float": "f",
                                      "complex": "c"}[py]:
                raise _bad(path, f"{where} is a Python {py} stored with dtype {dt}")
    used = []
    _validate_tree(path, manifest["tree"], len(leaves), used, 0)
    if sorted(used) != list(range(len(leaves))):
        raise _bad(path, f"the manifest tree refers to leaves {sorted(used)[:10]}... but the "
                         f"manifest lists {len(leaves)} leaves, each to be used once"
                   if len(used) > 10 else
                   f"the manifest tree refers to leaves {sorted(used)} but the manifest "
                   f"lists {len(leaves)} leaves, each to be used once")


def _validate_tree(path, node, n, used, depth):
    if depth > 900:
        raise _bad(path, "the manifest tree is nested too deeply")
    if node is None:
        return
    if not isinstance(node, dict):
        raise _bad(path, f"the manifest tree has a node {node!r:.60} that is not an object")
    if "leaf" in node:
        i = node["leaf"]
        if not _is_int(i) or not 0 <= i < n:
            raise _bad(path, f"the manifest tree has leaf index {i!r:.40}, but there are {n} "
                             "leaves")
        used.append(i)
        return
    for kind in ("list", "tuple"):
        if kind in node:
            kids = node[kind]
            if not isinstance(kids, list):
                raise _bad(path, f"the manifest tree has a {kind} node that is not a list")
            for c in kids:
                _validate_tree(path, c, n, used, depth + 1)
            return
    if "dict" in node:
        items, kt = node["dict"], node.get("key_type", "str")
        if kt not in ("str", "int") or not isinstance(items, list):
            raise _bad(path, "the manifest tree has a malformed dict node")
        for item in items:
            if not (isinstance(item, list) and len(item) == 2 and
                    (isinstance(item[0], str) if kt == "str" else _is_int(item[0]))):
                raise _bad(path, f"the manifest tree has a malformed dict entry {item!r:.60}")
            _validate_tree(path, item[1], n, used, depth + 1)
        return
    if "namedtuple" in node:
        name, fields, kids = node["namedtuple"], node.get("fields"), node.get("children")
        if not (isinstance(name, str) and name.isidentifier() and isinstance(fields, list)
                and all(isinstance(f, str) and f.isidentifier() and not f.startswith("_")
                        for f in fields)
                and len(set(fields)) == len(fields) and isinstance(kids, list)
                and len(kids) == len(fields)):
            raise _bad(path, f"the manifest tree has a malformed namedtuple node {name!r:.40}")
        for c in kids:
            _validate_tree(path, c, n, used, depth + 1)
        return
    if "node" in node:
        kids = node.get("children")
        if not isinstance(node["node"], str) or not isinstance(kids, list):
            raise _bad(path, "the manifest tree has a malformed custom node")
        for c in kids:
            _validate_tree(path, c, n, used, depth + 1)
        return
    raise _bad(path, f"the manifest tree has a node of unknown kind {sorted(node)[:4]!r:.60}")


def _read(path):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"restore(): no checkpoint at {path!r}")
    try:
        return _read_checked(path)
    except (CheckpointError, FileNotFoundError):
        raise
    except _EXCEPTIONS_OF_BAD_BYTES as e:
        raise _bad(path, f"{type(e).__name__}: {str(e)[:200]}") from None


def _read_checked(path):
    try:
        z = zipfile.ZipFile(path, "r")
    except zipfile.BadZipFile:
        raise CheckpointError(f"restore(): {path!r} is not an xform checkpoint (not a zip "
                              "file)") from None
    with z:
        infos = {i.filename: i for i in z.infolist()}
        for name in infos:
            if not _safe_member(name):
                raise _bad(path, f"the archive has a member {name!r:.80} that escapes it")
        if "manifest.json" not in infos:
            raise CheckpointError(f"restore(): {path!r} has no manifest.json; not an xform "
                                  "checkpoint")
        if infos["manifest.json"].file_size > (64 << 20):
            raise _bad(path, "manifest.json is larger than 64 MiB")
        try:
            manifest = json.loads(z.read("manifest.json"))
        except (ValueError, UnicodeDecodeError) as e:
            raise _bad(path, f"manifest.json is not valid JSON ({e})") from None
        _validate_manifest(path, manifest, infos)
        leaves = []
        for meta in manifest["leaves"]:
            leaves.append((meta, _read_leaf(path, z, infos[meta["file"]], meta)))
    return manifest, leaves


def _read_leaf(path, z, info, meta):
    """One leaf's array, its size checked against the manifest before reading."""
    where = f"leaf {meta['path']!r:.80} ({meta['file']})"
    key = bool(meta.get("key_impl"))
    n = int(np.prod(meta["shape"], dtype=object))
    itemsize = 16 if key else _dtype_from_name(meta["dtype"]).itemsize
    # key data: shape + trailing key words (a few uint32 each); .npy: a header, then data
    limit = _MAX_NPY_HEADER + n * itemsize * (8 if key else 1)
    if info.file_size > limit:
        raise _bad(path, f"{where} is {info.file_size} bytes, more than the manifest's shape "
                         f"{tuple(meta['shape'])} and dtype {meta['dtype']} allow")
    raw = z.read(info)
    try:
        a = np.load(io.BytesIO(raw), allow_pickle=False)
    except (ValueError, EOFError, OSError) as e:
        raise _bad(path, f"{where} is not a valid .npy array ({e})") from None
    if not isinstance(a, np.ndarray) or a.dtype.hasobject or a.dtype.kind not in "biufc":
        raise _bad(path, f"{where} holds a non-numeric array (dtype {a.dtype})")
    if key:
        if list(a.shape[:len(meta["shape"])]) != list(meta["shape"]) or a.dtype != np.uint32:
            raise _bad(path, f"key leaf {meta['path']} has key data of shape {a.shape} and "
                             f"dtype {a.dtype}")
        return a
    dt = _dtype_from_name(meta["dtype"])
    if a.dtype != dt:
        if a.dtype.itemsize != dt.itemsize or a.dtype.kind not in "u":
            raise _bad(path, f"{where} stores dtype {a.dtype}, which cannot hold the "
                             f"manifest's {dt}")
        a = a.view(dt).reshape(a.shape)
    if list(a.shape) != list(meta["shape"]):
        raise _bad(path, f"corrupt checkpoint: leaf {meta['path']} has shape {a.shape}, "
                         f"manifest says {tuple(meta['shape'])}")
    return a


def _build(node, leaves):
    if node is None:
        return None
    if "leaf" in node:
        return leaves[node["leaf"]]
    if "list" in node:
        return [_build(c, leaves) for c in node["list"]]
    if "tuple" in node:
        return tuple(_build(c, leaves) for c in node["tuple"])
    if "dict" in node:
        conv = int if node.get("key_type") == "int" else str
        return {conv(k): _build(c, leaves) for k, c in node["dict"]}
    if "namedtuple" in node:
        cls = collections.namedtuple(node["namedtuple"], node["fields"])
        return cls(*[_build(c, leaves) for c in node["children"]])
    raise ValueError(f"restore(): the checkpoint holds a custom pytree node {node['node']!r}; "
                     "pass target= (a pytree of that structure) to restore it")


def _to_value(meta, a, as_numpy):
    if meta.get("key_impl"):
        return _random.wrap_key_data(a, impl=meta["key_impl"])
    if meta.get("python"):
        return {"bool": bool, "int": int, "float": float, "complex": complex}[meta["python"]](
            a[()])
    if as_numpy:
        return a
    return Array(np.array(a))


def _to_value_checked(path, meta, a, as_numpy):
    try:
        return _to_value(meta, a, as_numpy)
    except _EXCEPTIONS_OF_BAD_BYTES as e:     # e.g. a key implementation name no one has
        raise _bad(path, f"leaf {meta['path']!r:.80}: {type(e).__name__}: {str(e)[:200]}") \
            from None


def restore(path, target=None, *, as_numpy: bool = False):
    """The pytree saved at ``path``.

    ``target``: a pytree (arrays or ShapeDtypeStructs as leaves) the checkpoint
    must match in structure, shapes and dtypes (a ValueError names the first
    mismatching key path); the result has ``target``'s structure (container
    types, namedtuple classes, custom nodes).  Without it the structure is
    rebuilt from the checkpoint (namedtuples as same-named namedtuple classes).
    Arrays come back as xform Arrays (``as_numpy=True``: NumPy arrays), Python
    scalars as Python scalars.  A file that is not a readable checkpoint (truncated,
    corrupted, crafted) raises ``CheckpointError``; a missing one FileNotFoundError.
    A target leaf with a ``sharding`` (a sharded Array, or
    ``ShapeDtypeStruct(shape, dtype, sharding=...)``) puts the restored array onto that
    sharding (across its mesh's devices).
    """
    manifest, leaves = _read(path)
    if target is None:
        vals = [_to_value_checked(path, m, a, as_numpy) for m, a in leaves]
        return _build(manifest["tree"], vals)
    t_with_path, t_def = _tu.tree_flatten_with_path(target)
    saved_paths = [m["path"] for m, _ in leaves]
    t_paths = [_tu.keystr(kp) or "<root>" for kp, _ in t_with_path]
    if saved_paths != t_paths or _structure(t_def, [0]) != _normalize(manifest["tree"]):
        raise ValueError(_structure_error(saved_paths, t_paths, manifest["tree"], t_def))
    out = []
    for (meta, a), (kp, t) in zip(leaves, t_with_path):
        p = meta["path"]
        t_shape = tuple(np.shape(t)) if not hasattr(t, "shape") else tuple(t.shape)
        a_shape = tuple(meta["shape"])
        if a_shape != t_shape:
            raise ValueError(f"restore(): leaf {p} has shape {a_shape} in the checkpoint "
                             f"but {t_shape} in target")
        t_dtype = _target_dtype(t)
        if t_dtype is not None and _dtype_str(t_dtype) != meta["dtype"]:
            raise ValueError(f"restore(): leaf {p} has dtype {meta['dtype']} in the checkpoint "
                             f"but {_dtype_str(t_dtype)} in target")
        out.append(_place(_to_value_checked(path, meta, a, as_numpy), t, as_numpy))
    return t_def.unflatten(out)


def _place(value, t, as_numpy):
    """Put a restored array where the target leaf says: its ``sharding`` (a sharded or
    single-device Array, or a ``ShapeDtypeStruct(..., sharding=...)``)."""
    sharding = getattr(t, "sharding", None)
    if as_numpy or sharding is None or not hasattr(value, "shape"):
        return value
    if not isinstance(sharding, Sharding):
        return value
    from xform import device_put  # deferred: import cycle
    return device_put(value, sharding)


def _normalize(tree):
    return json.loads(json.dumps(tree))


def _dtype_str(dt):
    if not isinstance(dt, np.dtype) and is_extended(dt):
        return str(dt)
    return np.dtype(dt).name


def _target_dtype(t):
    if type(t) in (bool, int, float, complex):
        return None           # Python scalars: any saved scalar/0-d array dtype is accepted
    dt = getattr(t, "dtype", None)
    return dt if dt is not None else np.asarray(t).dtype


def _structure_error(saved, target, saved_tree, t_def) -> str:
    s, t = set(saved), set(target)
    missing = [p for p in target if p not in s]
    extra = [p for p in saved if p not in t]
    if missing:
        return (f"restore(): target has key path {missing[0]} that the checkpoint lacks "
                f"(checkpoint leaves: {len(saved)}, target leaves: {len(target)}); restore "
                "without target to see the saved structure")
    if extra:
        return (f"restore(): the checkpoint has key path {extra[0]} that target lacks "
                f"(checkpoint leaves: {len(saved)}, target leaves: {len(target)})")
    for i, (a, b) in enumerate(zip(saved, target)):
        if a != b:
            return f"restore(): leaf {i} is {a} in the checkpoint but {b} in target"
    return ("restore(): the checkpoint's container types differ from target's at the same key "
            f"paths: saved {saved_tree!r}, target {t_def}")

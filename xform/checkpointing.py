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

Typed PRNG key arrays (``xform.random.key``) are stored as their ``uint32`` key
data with the dtype (``key<fry>``) and the implementation's name in the
manifest, and come back as typed keys (``random.wrap_key_data``); raw
``uint32`` keys (``random.PRNGKey``) round-trip like any array.
"""
from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile

import numpy as np

from xform._src.interpreters import tree_util as _tu
from xform import random as _random
from xform._src.interpreters.core import Array
from xform._src.interpreters.core import Array, Tracer
from xform._src.interpreters.dtypes import is_extended
from xform.sharding import Sharding

__all__ = ["save", "save_async", "restore", "FORMAT", "VERSION"]

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
    import ml_dtypes
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

    ``overwrite=False``: a ValueError if ``path`` exists.
    """
    _write(*_prepare(path, pytree, overwrite, copy=False))


def save_async(path, pytree, *, overwrite: bool = True):
    """Like ``save``, but only the snapshot (device -> host copies of the leaves) happens
    now; the file is written by a background thread.  Returns a
    ``concurrent.futures.Future`` (``.result()`` waits and re-raises a failure)."""
    import concurrent.futures
    import threading
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
    return path, manifest, leaves_meta, arrays


def _write(path, manifest, leaves_meta, arrays):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
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
        os.replace(tmp, path)
        tmp = None
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


def _read(path):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"restore(): no checkpoint at {path!r}")
    try:
        z = zipfile.ZipFile(path, "r")
    except zipfile.BadZipFile:
        raise ValueError(f"restore(): {path!r} is not an xform checkpoint (not a zip file)") \
            from None
    with z:
        try:
            manifest = json.loads(z.read("manifest.json"))
        except KeyError:
            raise ValueError(f"restore(): {path!r} has no manifest.json; not an xform "
                             "checkpoint") from None
        if manifest.get("format") != FORMAT:
            raise ValueError(f"restore(): {path!r} is not an xform checkpoint "
                             f"(format {manifest.get('format')!r})")
        if manifest.get("version", 0) > VERSION:
            raise ValueError(f"restore(): checkpoint format version {manifest['version']} is "
                             f"newer than this xform reads ({VERSION}); upgrade xform")
        leaves = []
        for meta in manifest["leaves"]:
            a = np.load(io.BytesIO(z.read(meta["file"])), allow_pickle=False)
            if meta.get("key_impl"):
                if list(a.shape[:len(meta["shape"])]) != list(meta["shape"]):
                    raise ValueError(f"restore(): corrupt checkpoint: key leaf {meta['path']} "
                                     f"has key data of shape {a.shape}")
                leaves.append((meta, a))
                continue
            dt = _dtype_from_name(meta["dtype"])
            if a.dtype != dt:
                a = a.view(dt).reshape(a.shape)
            if list(a.shape) != list(meta["shape"]):
                raise ValueError(f"restore(): corrupt checkpoint: leaf {meta['path']} has shape "
                                 f"{a.shape}, manifest says {tuple(meta['shape'])}")
            leaves.append((meta, a))
    return manifest, leaves


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
        import collections
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


def restore(path, target=None, *, as_numpy: bool = False):
    """The pytree saved at ``path``.

    ``target``: a pytree (arrays or ShapeDtypeStructs as leaves) the checkpoint
    must match in structure, shapes and dtypes (a ValueError names the first
    mismatching key path); the result has ``target``'s structure (container
    types, namedtuple classes, custom nodes).  Without it the structure is
    rebuilt from the checkpoint (namedtuples as same-named namedtuple classes).
    Arrays come back as xform Arrays (``as_numpy=True``: NumPy arrays), Python
    scalars as Python scalars.  A target leaf with a ``sharding`` (a sharded Array, or
    ``ShapeDtypeStruct(shape, dtype, sharding=...)``) puts the restored array onto that
    sharding (across its mesh's devices).
    """
    manifest, leaves = _read(path)
    if target is None:
        vals = [_to_value(m, a, as_numpy) for m, a in leaves]
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
        out.append(_place(_to_value(meta, a, as_numpy), t, as_numpy))
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

"""The persistent compilation cache: compiled XLA executables kept on disk.

A fresh process pays XLA's compile time for every program it runs once; with this
cache, the second process to compile the same program loads the serialized
executable instead (milliseconds instead of tens to hundreds of milliseconds).

Options keep JAX's names (``xform.config.update(name, value)``, or the upper-case
environment variable of the same name):

* ``jax_compilation_cache_dir``: the directory; ``None`` turns the cache off.
  xform's default is on: ``$XDG_CACHE_HOME/xform/compilation_cache`` (else
  ``~/.cache/xform/compilation_cache``).  ``JAX_COMPILATION_CACHE_DIR`` sets it.
* ``jax_enable_compilation_cache``: ``False`` turns it off whatever the directory.
* ``jax_persistent_cache_min_compile_time_secs``: programs that compiled faster are
  not written (xform's default 0.05 s: below that a load saves little).
* ``jax_persistent_cache_min_entry_size_bytes``: smaller entries are not written.
* ``jax_compilation_cache_max_size``: size bound in bytes (xform's default 1 GiB;
  -1 = unbounded, 0 = off); least recently used entries are evicted on write, down to
  1/16 below the bound.  A process measures the directory on its first write and then
  after each 1/16 of the bound it writes (not on every write: a full cache holds tens
  of thousands of entries), so other processes' writes may overshoot the bound by that
  much until the next measurement.

The key is a SHA-256 of the StableHLO text, the serialized compile options, the
donation vector, jaxlib's version, the platform and its version, and the device
kind and id.  Programs with Python host callbacks are never cached (the callback
pointers belong to one process).

Entries are ``MAGIC + sha256(payload) + payload`` written to a temporary file and
renamed into place (atomic on POSIX), so concurrent processes never see half an
entry.  An entry whose header or digest does not match, or that the runtime refuses
to load, is ignored and rewritten after the compile.  A hit refreshes the file's
modification time, which is what LRU eviction orders by.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import threading

from xform._src.interpreters.config import config

MAGIC = b"xform-xla-cache-v1\n"
_DIGEST = 32
_SUFFIX = ".xlaexe"

stats = {"hits": 0, "misses": 0, "writes": 0, "corrupt": 0, "evictions": 0}
_lock = threading.Lock()


def cache_dir() -> str | None:
    """The active cache directory, or None when the cache is off."""
    if not config.jax_enable_compilation_cache:
        return None
    path = config.jax_compilation_cache_dir
    if not path or int(config.jax_compilation_cache_max_size) == 0:
        return None
    return os.path.expanduser(str(path))


def cache_key(text: str, options_bytes: bytes, donated, device) -> str:
    import jaxlib  # deferred: keeps `import xform` light
    h = hashlib.sha256()
    for part in ("xform-cc-v1", jaxlib.__version__, device.platform,
                 getattr(device.client, "platform_version", ""),
                 getattr(device, "device_kind", ""), str(device.id), repr(tuple(donated))):
        h.update(part.encode())
        h.update(b"\0")
    h.update(options_bytes)
    h.update(b"\0")
    h.update(text.encode())
    return h.hexdigest()


def _path(directory: str, key: str) -> str:
    return os.path.join(directory, key + _SUFFIX)


def load(key: str) -> bytes | None:
    """The serialized executable stored under ``key``, or None (miss or bad entry)."""
    directory = cache_dir()
    if directory is None:
        return None
    path = _path(directory, key)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        with _lock:
            stats["misses"] += 1
        return None
    head = len(MAGIC)
    payload = data[head + _DIGEST:]
    if data[:head] != MAGIC or hashlib.sha256(payload).digest() != data[head:head + _DIGEST]:
        discard(key)
        return None
    try:
        os.utime(path)          # LRU: a hit makes the entry the most recently used
    except OSError:
        pass
    with _lock:
        stats["hits"] += 1
    return payload


def peek(key: str) -> bytes | None:
    """``load`` without counting a miss (tiered compilation asks before compiling; the
    compile that follows a miss counts it)."""
    directory = cache_dir()
    if directory is None or not os.path.exists(_path(directory, key)):
        return None
    return load(key)


def discard(key: str) -> None:
    """Forget a corrupt or unloadable entry (it is rewritten after the compile)."""
    with _lock:
        stats["corrupt"] += 1
        stats["misses"] += 1
    directory = cache_dir()
    if directory is not None:
        try:
            os.remove(_path(directory, key))
        except OSError:
            pass


def store(key: str, payload: bytes, compile_secs: float) -> bool:
    """Write an entry atomically (if it passes the size/time thresholds); evict LRU."""
    directory = cache_dir()
    if directory is None:
        return False
    if compile_secs < float(config.jax_persistent_cache_min_compile_time_secs):
        return False
    data = MAGIC + hashlib.sha256(payload).digest() + payload
    if len(data) < int(config.jax_persistent_cache_min_entry_size_bytes):
        return False
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, _path(directory, key))
        except BaseException:
            try:
                os.remove(tmp)
            except OSError:
                pass
            raise
    except OSError:
        return False            # a read-only or full disk must never break a compile
    with _lock:
        stats["writes"] += 1
    _evict(directory, len(data))
    return True


# directory -> bytes this process has written there since it last measured the directory.
# Measuring stats every entry (tens of thousands in a full cache: ~0.1-0.5 s), so a
# process measures on its first write and then only after writing 1/16 of the bound;
# an eviction pass trims to 1/16 below the bound, so passes stay that far apart.
_written_since_scan: dict = {}


def _evict(directory: str, nbytes: int) -> None:
    bound = int(config.jax_compilation_cache_max_size)
    if bound < 0:
        return
    slack = bound // 16
    with _lock:
        since = _written_since_scan.get(directory)
        if since is not None and since + nbytes < slack:
            _written_since_scan[directory] = since + nbytes
            return
        _written_since_scan[directory] = 0
    entries, total = [], 0
    try:
        with os.scandir(directory) as it:
            for e in it:
                if e.name.endswith(_SUFFIX):
                    try:
                        st = e.stat()
                    except OSError:
                        continue
                    entries.append((st.st_mtime, st.st_size, e.path))
                    total += st.st_size
    except OSError:
        return
    if total <= bound:
        return
    entries.sort()
    target = bound - slack
    for _, size, path in entries:
        if total <= target:
            break
        try:
            os.remove(path)
        except OSError:
            continue
        total -= size
        with _lock:
            stats["evictions"] += 1


def clear() -> None:
    """Delete every entry of the active cache directory."""
    directory = cache_dir()
    if directory is None or not os.path.isdir(directory):
        return
    for name in os.listdir(directory):
        if name.endswith(_SUFFIX) or name.startswith(".tmp-"):
            try:
                os.remove(os.path.join(directory, name))
            except OSError:
                pass

"""Array serialization with TensorStore (JAX's ``array_serialization.serialization``)."""
from __future__ import annotations

import abc
import asyncio
import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from xform.experimental.array_serialization import tensorstore_impl as ts_impl
from xform.experimental.array_serialization.tensorstore_impl import (  # noqa: F401
    _DEFAULT_BASE_DRIVER as _DEFAULT_DRIVER, _LimitInFlightBytes,
    _TS_CONTEXT as TS_CONTEXT, _run_deserialization as run_deserialization,
    _run_serialization as run_serialization, async_deserialize, async_serialize)
from xform import monitoring
from xform import tree
from xform import tree_util

__all__ = ["GlobalAsyncCheckpointManagerBase", "AsyncManager",
           "GlobalAsyncCheckpointManager", "async_serialize", "async_deserialize",
           "run_serialization", "run_deserialization", "get_tensorstore_spec",
           "is_remote_storage", "BarrierTimeoutError", "TS_CONTEXT"]

logger = logging.getLogger(__name__)

_get_metadata = functools.partial(ts_impl._get_tensorstore_metadata, driver="zarr")
get_tensorstore_spec = functools.partial(ts_impl.get_tensorstore_spec, driver="zarr",
                                         ocdbt=False)
_module_unique_count = itertools.count()
_REMOTE_URL_PREFIXES = ("gs://", "s3://")
_REMOTE_DRIVERS = ("gcs", "s3")


class BarrierTimeoutError(Exception):
    """Processes did not reach a checkpoint barrier in time."""


def is_remote_storage(tspec: dict[str, Any] | str) -> bool:
    """Whether a spec (or path) points at remote storage (GCS or S3)."""
    if isinstance(tspec, str):
        return tspec.startswith(_REMOTE_URL_PREFIXES)
    if isinstance(tspec, dict):
        if tspec.get("driver") in _REMOTE_DRIVERS:
            return True
        path = tspec.get("path")
        if isinstance(path, str) and path.startswith(_REMOTE_URL_PREFIXES):
            return True
        return any(is_remote_storage(v) for v in tspec.values() if isinstance(v, dict))
    return False


class GlobalAsyncCheckpointManagerBase(abc.ABC):
    """The interface of an asynchronous checkpoint manager: ``serialize`` starts writing
    (returning before the commit), ``wait_until_finished`` blocks until it is done,
    ``check_for_errors`` re-raises an error from the background commit,
    ``deserialize`` reads arrays back."""

    @abc.abstractmethod
    def check_for_errors(self):
        """Raises the background commit's exception, if any (non-blocking)."""

    @abc.abstractmethod
    def wait_until_finished(self):
        """Blocks until the pending commit is finished."""

    @abc.abstractmethod
    def serialize(self, arrays, tensorstore_specs, *, on_commit_callback: Callable[[], None]):
        """Starts writing ``arrays`` to ``tensorstore_specs``."""

    @abc.abstractmethod
    def deserialize(self, shardings, tensorstore_specs, global_shapes=None, dtypes=None):
        """Reads arrays from ``tensorstore_specs`` onto ``shardings``."""


class AsyncManager:
    """Runs a commit (awaiting TensorStore futures, then a callback) in a thread."""

    def __init__(self, timeout_secs: int = 300):
        import xform  # deferred: import cycle
        if xform.process_count() > 1:
            raise ValueError("Please initialize the distributed system via "
                             "`jax.distributed.initialize()` at the start of your program.")
        self._timeout_secs = timeout_secs
        self._commit_futures = None
        self._thread = None
        self._exception = None
        self._count = None
        self._on_commit_callback = None

    def __del__(self):
        t = getattr(self, "_thread", None)
        if t is not None and t.is_alive():
            logger.warning("Please add `.wait_until_finished()` in the main thread before "
                           "your program finishes: errors raised while writing can be lost "
                           "if this manager is deleted before writing completes.")

    def _thread_func(self):
        try:
            start = time.time()
            for future in self._commit_futures or ():
                future.result()
            if self._on_commit_callback is not None:
                self._on_commit_callback()
            monitoring.record_event_duration_secs(
                "/jax/checkpoint/write/async/thread_duration_sec", time.time() - start)
        except Exception as e:  # re-raised by check_for_errors
            self._exception = e

    def _start_async_commit(self, on_commit_callback):
        self._count = next(_module_unique_count)
        self._on_commit_callback = on_commit_callback
        self._thread = threading.Thread(target=self._thread_func)
        self._thread.start()

    def check_for_errors(self):
        if self._exception is not None:
            exc, self._exception = self._exception, None
            raise exc

    def wait_until_finished(self):
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.check_for_errors()

    def _add_futures(self, futures: Sequence):
        self._commit_futures = futures


class GlobalAsyncCheckpointManager(AsyncManager, GlobalAsyncCheckpointManagerBase):
    """Writes arrays with TensorStore; the commit finishes in a background thread."""

    def serialize(self, arrays, tensorstore_specs, *,
                  on_commit_callback: Callable[[], None] | None = None,
                  transaction=None):
        """Copies ``arrays`` out, then commits them to ``tensorstore_specs`` in the
        background and runs ``on_commit_callback`` after (e.g. an atomic rename)."""
        self.wait_until_finished()
        commit_futures: list = []

        async def run():
            writers = tree_util.tree_map(
                lambda a, s: ts_impl.async_serialize(a, s, commit_future=commit_futures,
                                                     transaction=transaction),
                arrays, tensorstore_specs)
            return await asyncio.gather(*writers)
        asyncio.run(run())
        self._add_futures(commit_futures)
        self._start_async_commit(on_commit_callback)

    def serialize_with_paths(self, arrays, paths, *, on_commit_callback=None,
                             transaction=None):
        return self.serialize(arrays, tree.map(get_tensorstore_spec, paths),
                              on_commit_callback=on_commit_callback, transaction=transaction)

    def deserialize(self, shardings, tensorstore_specs, global_shapes=None, dtypes=None,
                    concurrent_gb: int = 32):
        self.wait_until_finished()
        return ts_impl._run_deserialization(shardings, tensorstore_specs, global_shapes,
                                            dtypes, concurrent_gb)

    def deserialize_with_paths(self, shardings, paths, global_shapes=None, dtypes=None,
                               concurrent_gb: int = 32):
        return self.deserialize(shardings, tree.map(get_tensorstore_spec, paths),
                                global_shapes, dtypes, concurrent_gb)

"""``xform.experimental.array_serialization``: write and read arrays with TensorStore.

``serialization`` (JAX's module of the same name): ``async_serialize`` /
``async_deserialize`` write each addressable shard of an ``xform.Array`` to a
TensorStore (zarr / zarr3, on a local file kvstore, optionally inside OCDBT) and read
arrays back onto a sharding, shard by shard; ``get_tensorstore_spec`` builds the spec
for a path; ``GlobalAsyncCheckpointManager`` runs the commit in a background thread
(``serialize``, ``deserialize``, ``wait_until_finished``, ``check_for_errors``).
``tensorstore_impl`` holds the TensorStore side.  Needs the ``tensorstore`` package
(imported when these modules are imported).  xform runs one process, so the
multi-process barrier of JAX's manager is never needed.
"""

"""``jax._src.distributed`` under the alias: ``global_state``, the distributed runtime's
state that ``xform.distributed.initialize`` sets up (``client`` is None in a single
process; ``process_id``, ``num_processes``, ``coordinator_address``)."""
from __future__ import annotations

__all__ = ["global_state"]

_FIELDS = ("client", "service", "process_id", "num_processes", "coordinator_address",
           "preemption_sync_manager", "slice_index")


class _GlobalState:
    """A read-only view of the runtime's distributed state."""

    def __getattr__(self, name):
        if name not in _FIELDS:
            raise AttributeError(
                f"jax._src.distributed.global_state has no attribute {name!r} under the "
                f"xform alias (it serves {', '.join(_FIELDS)})")
        from xform._src.lowering import distributed  # deferred: keeps `import xform` light
        return getattr(distributed.runtime_state(), name, None)

    def __repr__(self):
        return f"<distributed state: process {self.process_id} of {self.num_processes}>"


global_state = _GlobalState()

"""``xform.experimental.shard_map.shard_map`` (JAX 0.10.2's deprecated spelling)."""
from xform.sharding._shard_map import shard_map as _shard_map

__all__ = ["shard_map"]


def shard_map(f, mesh, in_specs, out_specs, check_rep=True, auto=frozenset()):
    """``shard_map(f, mesh, in_specs, out_specs, check_rep)``; see ``xform.shard_map``."""
    return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                      check_vma=check_rep)

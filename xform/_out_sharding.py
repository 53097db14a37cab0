"""JAX's ``out_sharding=`` keyword for functions that make arrays (``random`` samplers,
``numpy`` creation, ``dot``/``einsum``/``reshape``, ...): the result laid out with that
sharding, via ``xform.sharding.reshard`` (a copy eagerly, a sharding constraint under
jit).  ``None``, or a sharding over a mesh with no axes (what ``typeof(x).sharding`` is
outside any mesh, as flax passes it), lays nothing out, as in JAX."""
from __future__ import annotations

import functools
import inspect
from xform.sharding import reshard


def with_out_sharding(fn):
    """``fn`` with a keyword-only ``out_sharding=None`` appended to its signature."""

    @functools.wraps(fn)
    def wrapper(*args, out_sharding=None, **kwargs):
        out = fn(*args, **kwargs)
        mesh = getattr(out_sharding, "mesh", None)
        if out_sharding is None or (mesh is not None and not tuple(mesh.axis_names)):
            return out
        if mesh is not None and _all_manual(mesh):
            # inside shard_map/pmap (what typeof(x).sharding is there, as flax's Dropout
            # passes it): values are per-shard, there is nothing to lay out
            return out
        return reshard(out, out_sharding)

    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    kw = [p for p in params if p.kind is inspect.Parameter.VAR_KEYWORD]
    params = [p for p in params if p.kind is not inspect.Parameter.VAR_KEYWORD]
    params.append(inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY,
                                    default=None))
    wrapper.__signature__ = sig.replace(parameters=params + kw)
    return wrapper


def _all_manual(mesh):
    types = tuple(getattr(mesh, "axis_types", ()) or ())
    return bool(types) and all(getattr(t, "name", str(t)) == "Manual" for t in types)

"""``jit`` over meshes: ``in_shardings``/``out_shardings`` and sharded arguments.

The function is traced by an ordinary ``JitWrapped`` (same cache, same
programs); only compilation differs: the program is lowered with Shardy
annotations for the given shardings (None: XLA chooses) and compiled by
``lowering.spmd`` with ``num_partitions = mesh.size``.  Outputs are global
Arrays carrying the sharding XLA chose.
"""
from __future__ import annotations

import threading

import numpy as np

from xform._src.interpreters import core, passes, tree_util
from xform._src.interpreters.core import EVAL_TRACE, Array, Tracer
from xform import sharding as S
from xform.tree_util import tree_flatten, tree_map, tree_unflatten
from xform._src.primitives.spmd import sharding_constraint_p

__all__ = ["with_sharding_constraint", "reshard"]


def _is_spec_leaf(s):
    return s is None or isinstance(s, (S.Sharding, S.PartitionSpec))


def _to_named(s, mesh, what):
    if isinstance(s, S.NamedSharding) and isinstance(s.mesh, S.AbstractMesh):
        return s._concrete(mesh)
    if s is None or isinstance(s, S.Sharding):
        return s
    if isinstance(s, S.PartitionSpec):
        if mesh is None:
            raise ValueError(f"{what}: a bare PartitionSpec {s} needs a mesh: pass a "
                             "NamedSharding(mesh, spec) or set one with xform.sharding.set_mesh "
                             "(or `with mesh:`).")
        return S.NamedSharding(mesh, s)
    raise TypeError(f"{what} must be a Sharding, a PartitionSpec or None, got {s!r} of type "
                    f"{type(s).__name__}")


def _broadcast_prefix(prefix, tree, what, is_leaf=_is_spec_leaf):
    """One sharding per leaf of ``tree`` from a pytree prefix of shardings."""
    try:
        return tree_util.broadcast_prefix(prefix, tree, is_leaf=is_leaf)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{what} is not a pytree prefix of the arguments/outputs it describes "
                         f"({e}); pass one sharding, or one per argument.") from None


def _leaf_named(x):
    if type(x) is Array and x._buf is not None and not x._deleted:
        from xform._src.lowering import spmd  # deferred: keeps `import xform` light
        if spmd.is_sharded_buf(x._buf):
            s = spmd.buf_sharding(x._buf)
            if isinstance(s, S.NamedSharding):
                return s
    elif type(x) is not Array and isinstance(getattr(x, "sharding", None), S.NamedSharding):
        from xform._jit import ShapeDtypeStruct  # deferred: import cycle
        if isinstance(x, ShapeDtypeStruct):     # an abstract argument laid out over a mesh
            return x.sharding
    return None


class ShardedJit:
    """What ``jit(f, in_shardings=..., out_shardings=...)`` returns (and what a
    plain jit hands sharded arguments to)."""

    def __init__(self, inner, in_shardings=None, out_shardings=None):
        self._inner = inner
        self._in = in_shardings
        self._out = out_shardings
        self._compiled = {}
        self._fast = {}
        self._lock = threading.Lock()
        self.__wrapped__ = inner._fun
        self.__name__ = getattr(inner, "__name__", "fun")
        self.__doc__ = getattr(inner._fun, "__doc__", None)

    def _mesh(self, leaves):
        for tree in (self._in, self._out):
            if tree is None:
                continue
            for s in tree_flatten(tree, is_leaf=_is_spec_leaf)[0]:
                if isinstance(s, S.NamedSharding):
                    return s.mesh
        for x in leaves:
            s = _leaf_named(x)
            if s is not None:
                return s.mesh
        return S._context_mesh()

    def _plan(self, args, kwargs):
        inner = self._inner
        entry, leaves = inner._get_entry(args, kwargs)
        mesh = self._mesh(leaves)
        dyn_args, _, dyn_kwargs, _ = inner._split(args, kwargs)
        n_pos = len(tree_flatten(tuple(dyn_args))[0])
        if self._in is None:
            in_sh = [None] * len(leaves)
        else:
            spec = self._in
            if isinstance(spec, list):
                spec = tuple(spec)
            if isinstance(spec, tuple) and not isinstance(spec, S.PartitionSpec) and \
                    len(spec) != len(dyn_args):
                raise ValueError(f"jit: in_shardings has {len(spec)} entries but the function "
                                 f"was called with {len(dyn_args)} positional (non-static) "
                                 "arguments; pass one sharding per argument or a single one.")
            if isinstance(spec, tuple) and not isinstance(spec, S.PartitionSpec):
                in_sh = _broadcast_prefix(spec, tuple(dyn_args), "in_shardings")
            else:
                in_sh = [spec] * n_pos
            in_sh += [None] * (len(leaves) - n_pos)
        in_sh = [_to_named(s, mesh, "in_shardings") for s in in_sh]
        for i, (s, x) in enumerate(zip(in_sh, leaves)):
            if s is None:
                in_sh[i] = _leaf_named(x)
        out_leaves_n = len(entry.closed.jaxpr.outvars)
        if self._out is None:
            out_sh = [None] * out_leaves_n
        else:
            dummy = tree_unflatten(entry.out_tree, [0] * out_leaves_n)
            out_sh = _broadcast_prefix(self._out, dummy, "out_shardings")
        out_sh = [_to_named(s, mesh, "out_shardings") for s in out_sh]
        if mesh is None:
            raise ValueError("jit: no mesh for this call: give NamedShardings in in_shardings/"
                             "out_shardings or set a mesh with xform.sharding.set_mesh.")
        for s in in_sh + out_sh:
            if isinstance(s, S.NamedSharding) and s.mesh != mesh:
                raise ValueError(f"jit: all shardings must use one mesh; got {s.mesh} and {mesh}")
        for i, (s, a) in enumerate(zip(in_sh, entry.in_avals)):
            if isinstance(s, S.NamedSharding):
                s.shard_shape(a.shape)
        for s, a in zip(out_sh, entry.closed.out_avals):
            if isinstance(s, S.NamedSharding):
                s.shard_shape(a.shape)
        return entry, leaves, mesh, in_sh, out_sh

    def _get_compiled(self, entry, mesh, in_sh, out_sh):
        spec = lambda s: None if s is None else (  # noqa: E731
            s.spec if isinstance(s, S.NamedSharding) else S.PartitionSpec())
        in_specs = tuple([S.PartitionSpec()] * len(entry.const_args) + [spec(s) for s in in_sh])
        out_specs = tuple(spec(s) for s in out_sh)
        key = (id(entry), mesh, in_specs, out_specs)
        c = self._compiled.get(key)
        if c is None:
            from xform._src.lowering import spmd  # deferred: keeps `import xform` light
            closed = passes.simplify(entry.closed)
            donated = (False,) * len(entry.const_args) + tuple(entry.donated)
            c = spmd.SpmdCompiled(closed, mesh, in_specs, out_specs, donated,
                                  self._inner._name)
            c._entry = entry          # keep the entry (and its id) alive with the executable
            self._compiled[key] = c
        return c

    def __call__(self, *args, **kwargs):
        if core.current_trace() is not EVAL_TRACE:
            return self._traced_call(args, kwargs)
        fast = not kwargs and not self._inner._has_static
        if fast:
            # fast path: the flat arguments' (shape, dtype, weak type, buffer sharding)
            # and the tree structure select the executable directly
            leaves, treedef = tree_flatten(args)
            sig = [treedef, S._context_mesh()]
            for x in leaves:
                if type(x) is Array:
                    b = x._buf
                    sig.append((x.shape, x.dtype, x.weak_type,
                                b._sharding if b is not None else None))
                elif type(x) is np.ndarray:
                    sig.append((x.shape, x.dtype))
                else:
                    fast = False
                    break
            if fast:
                sig = tuple(sig)
                hit = self._fast.get(sig)
                if hit is not None:
                    c, entry = hit
                    return entry.out_tree.unflatten(c(*entry.const_args, *leaves))
        entry, leaves, mesh, in_sh, out_sh = self._plan(args, kwargs)
        c = self._get_compiled(entry, mesh, in_sh, out_sh)
        outs = c(*entry.const_args, *leaves)
        if fast and len(self._fast) < 64:
            self._fast[sig] = (c, entry)
        return entry.out_tree.unflatten(outs)

    def _traced_call(self, args, kwargs):
        """Inside another transformation: the shardings become constraints."""
        inner = self._inner
        mesh = self._mesh([])
        if self._in is not None and mesh is not None:
            dyn_args, _, _, _ = inner._split(args, kwargs)
            sh = self._in if not isinstance(self._in, list) else tuple(self._in)
            if isinstance(sh, tuple) and not isinstance(sh, S.PartitionSpec):
                args = list(args)
                it = iter(sh)
                for i in range(len(args)):
                    if i in inner._static_argnums:
                        continue
                    s = next(it, None)
                    if s is not None:
                        args[i] = with_sharding_constraint(args[i], _to_named(s, mesh, "in"))
            else:
                s = _to_named(sh, mesh, "in_shardings")
                args = [a if i in inner._static_argnums else with_sharding_constraint(a, s)
                        for i, a in enumerate(args)]
        out = inner(*args, **kwargs)
        if self._out is not None and mesh is not None:
            if _is_spec_leaf(self._out):
                s = _to_named(self._out, mesh, "out_shardings")
                out = tree_map(lambda o: with_sharding_constraint(o, s), out)
            else:
                out = tree_map(lambda s, o: o if s is None else with_sharding_constraint(
                    o, _to_named(s, mesh, "out_shardings")), self._out, out,
                    is_leaf=_is_spec_leaf)
        return out

    def lower(self, *args, **kwargs):
        entry, leaves, mesh, in_sh, out_sh = self._plan(args, kwargs)
        return _LoweredSpmd(self._get_compiled(entry, mesh, in_sh, out_sh), entry)

    def trace(self, *args, **kwargs):
        return self._inner.trace(*args, **kwargs)

    def eval_shape(self, *args, **kwargs):
        return self._inner.eval_shape(*args, **kwargs)

    def clear_cache(self):
        self._compiled.clear()
        self._fast.clear()
        self._inner.clear_cache()

    def __repr__(self):
        return f"<ShardedJit of {self._inner._fun!r}>"


class _LoweredSpmd:
    def __init__(self, compiled, entry):
        self._c, self._entry = compiled, entry

    def as_text(self, dialect=None, debug_info=False):
        return self._c.text

    def compile(self, compiler_options=None):
        return self

    def compiler_ir(self, dialect=None):
        from xform._jit import _compiler_ir  # deferred: import cycle
        return _compiler_ir(self._c.text, dialect)

    def compiled_text(self):
        return self._c.compiled_text()

    @property
    def input_shardings(self):
        n = len(self._entry.const_args)
        return (tuple(self._c.in_shardings[n:]), {})

    @property
    def output_shardings(self):
        return self._entry.out_tree.unflatten(self._c.out_shardings)

    def __call__(self, *args):
        leaves = tree_flatten(args)[0]
        outs = self._c(*self._entry.const_args, *leaves)
        return self._entry.out_tree.unflatten(outs)


# ----------------------------------------------------------------- with_sharding_constraint


def with_sharding_constraint(x, shardings):
    """Ask XLA's partitioner to lay ``x`` (a pytree) out as ``shardings`` (one
    sharding or PartitionSpec, or a pytree prefix of them)."""
    mesh = S._context_mesh()
    per_leaf = _broadcast_prefix(shardings, x, "with_sharding_constraint shardings")
    leaves, treedef = tree_flatten(x)
    out = []
    for leaf, s in zip(leaves, per_leaf):
        s = _to_named(s, mesh, "with_sharding_constraint")
        if s is None or isinstance(s, S.SingleDeviceSharding):
            out.append(leaf)
            continue
        if not isinstance(s, S.NamedSharding):
            raise TypeError(f"with_sharding_constraint: unsupported sharding {s!r}")
        s.shard_shape(core.get_aval(leaf).shape)
        if isinstance(leaf, Tracer):
            out.append(sharding_constraint_p.bind(leaf, sharding=s))
        else:
            from xform.sharding._api import put_leaf  # deferred: import cycle
            out.append(put_leaf(leaf, s))
    return tree_unflatten(treedef, out)


def reshard(x, out_shardings):
    """``x`` (a pytree) laid out as ``out_shardings``: a copy eagerly, a sharding
    constraint inside ``jit``."""
    return with_sharding_constraint(x, out_shardings)

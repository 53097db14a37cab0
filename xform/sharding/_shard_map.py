"""``shard_map``: run a function on every shard of a mesh, with collectives.

The function is traced once at the per-device (local) shapes with the mesh's
axes bound as named axes (so ``psum``/``all_gather``/``ppermute``/... over them
stage collective primitives) and bound as one ``shard_map`` equation over the
global arrays.  Programs holding it are compiled as partitioned programs
(``lowering.spmd``): the body becomes an ``sdy.manual_computation`` region whose
collectives are StableHLO collectives over the mesh's partitions.
"""
from __future__ import annotations

import threading

import numpy as np

from xform._src.interpreters import batching, core
from xform._src.interpreters.core import Array
from xform._src.interpreters.ir import ClosedJaxpr, Jaxpr
from xform._src.interpreters.staging import trace_to_jaxpr
import xform._src.primitives.jit as _jit_prim
import xform._src.primitives.spmd as _sp
from xform._src.primitives.jit import _hoist
from xform import sharding as S
from xform.sharding._jit import _broadcast_prefix
from xform.tree_util import tree_flatten, tree_unflatten
from xform._src.primitives import prng

__all__ = ["shard_map"]


def _is_spec(s):
    return s is None or isinstance(s, S.PartitionSpec)


def _spec_prefix(specs, tree, what):
    if isinstance(specs, S.PartitionSpec) or specs is None:
        return [specs] * len(tree_flatten(tree)[0])
    return _broadcast_prefix(specs, tree, what, is_leaf=_is_spec)


class _Infer:
    def __repr__(self):
        return "Infer"


Infer = _Infer()


def shard_map(f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(),
              check_vma=True, check_rep=None):
    """Map ``f`` over the shards of its arguments on ``mesh`` (JAX's ``jax.shard_map``).

    ``in_specs``/``out_specs``: PartitionSpecs (pytree prefixes of the arguments /
    results) saying how each global array is split over mesh axes; ``f`` sees the
    per-device blocks.  An output whose spec leaves out a mesh axis claims to be
    equal on every device along it (``check_vma`` verifies that statically).
    """
    if check_rep is not None:
        check_vma = bool(check_rep)
    if f is None:
        return lambda g: shard_map(g, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                   axis_names=axis_names, check_vma=check_vma)
    if not isinstance(axis_names, (set, frozenset, list, tuple)):
        raise TypeError(f"shard_map: axis_names must be a set of mesh axis names, got "
                        f"{axis_names!r}")
    if not callable(f):
        raise TypeError(f"shard_map: expected a callable, got {f!r}")
    axis_names = frozenset(axis_names or ())
    return _ShardMapped(f, mesh, in_specs, out_specs, bool(check_vma), axis_names)


class _ShardMapped:
    def __init__(self, f, mesh, in_specs, out_specs, check_vma, axis_names=frozenset()):
        self._f, self._mesh, self._in, self._out, self._check = (f, mesh, in_specs, out_specs,
                                                                 check_vma)
        # axis_names: the axes the body is manual over (default all).  xform makes every
        # mesh axis manual; values are the same (the other axes only replicate), so the
        # names are validated: specs may only split over them.
        self._axis_names = axis_names
        self.__wrapped__ = f
        self.__name__ = getattr(f, "__name__", "shard_map_fun")

    def __call__(self, *args):
        mesh = self._mesh if self._mesh is not None else S._context_mesh()
        if mesh is None:
            raise ValueError("shard_map: no mesh: pass mesh=... or set one with "
                             "xform.sharding.set_mesh")
        if not isinstance(mesh, S.Mesh):
            raise TypeError(f"shard_map: mesh must be a Mesh, got {type(mesh).__name__}")
        leaves, treedef = tree_flatten(args)
        if self._in is Infer or self._in is None:
            specs = []
            for x in leaves:
                s = getattr(x, "sharding", None) if isinstance(x, Array) else None
                specs.append(s.spec if isinstance(s, S.NamedSharding) else S.PartitionSpec())
        else:
            ins = self._in
            if isinstance(ins, list):
                ins = tuple(ins)
            if isinstance(ins, tuple) and not isinstance(ins, S.PartitionSpec) and \
                    len(ins) != len(args):
                raise ValueError(f"shard_map in_specs has {len(ins)} entries but the function "
                                 f"was called with {len(args)} arguments; in_specs must be a "
                                 "tuple with one entry (a pytree prefix) per argument.")
            specs = _spec_prefix(ins, args, "shard_map in_specs")
        specs = [s if s is not None else S.PartitionSpec() for s in specs]
        if self._axis_names:
            unknown = [a for a in self._axis_names if a not in mesh.shape]
            if unknown:
                raise ValueError(f"shard_map axis_names {sorted(self._axis_names)} name axes "
                                 f"{unknown} that are not in the mesh {tuple(mesh.axis_names)}")
            for s in specs:
                bad = [a for a in s.axes() if a not in self._axis_names]
                if bad:
                    raise ValueError(f"shard_map in_specs {s} splits over mesh axes {bad}, "
                                     f"which are not in axis_names {sorted(self._axis_names)}")
        for s in specs:
            for a in s.axes():
                if a not in mesh.shape:
                    raise ValueError(f"shard_map in_specs {s} refers to axis {a!r}, which is "
                                     f"not in the mesh (axes {tuple(mesh.axis_names)})")
        vals, avals = [], []
        for i, x in enumerate(leaves):
            aval = core.get_aval(x)
            if isinstance(x, (int, float, complex, bool)):
                x = Array(np.asarray(x, aval.dtype), weak_type=aval.weak_type)
            vals.append(x)
            avals.append(_sp.local_aval(aval, specs[i], mesh, f"argument {i}"))
        store = {}
        f = self._f

        def flat(*xs):
            out = f(*treedef.unflatten(xs))
            out_leaves, store["tree"] = tree_flatten(out)
            return out_leaves

        # inside the body the mesh's axes in axis_names (all by default) are Manual, as
        # get_abstract_mesh() reports in JAX
        manual = self._axis_names or mesh.axis_names
        inner = mesh.abstract_mesh.update_axis_types({a: S.AxisType.Manual for a in manual})
        with batching.extend_axis_env(list(mesh.shape.items())), \
                S._abstract_mesh_scope(inner):
            jaxpr, consts = trace_to_jaxpr(flat, avals, name=f"shard_map({self.__name__})")
        closed, const_args = _hoist(jaxpr, consts)
        out_tree = store["tree"]
        out_specs = _spec_prefix(self._out, tree_unflatten(out_tree, [0] * out_tree.num_leaves),
                                 "shard_map out_specs")
        out_specs = [s if s is not None else S.PartitionSpec() for s in out_specs]
        for s in out_specs:
            for a in s.axes():
                if a not in mesh.shape:
                    raise ValueError(f"shard_map out_specs {s} refers to axis {a!r}, which is "
                                     f"not in the mesh (axes {tuple(mesh.axis_names)})")
        for i, (s, a) in enumerate(zip(out_specs, closed.out_avals)):
            if len(tuple(s)) > a.ndim:
                raise ValueError(f"shard_map out_specs[{i}] is {s}, which has {len(tuple(s))} "
                                 f"entries, but the output {a.str_short()} has rank {a.ndim}; "
                                 "a spec needs at most one entry per dimension.")
        in_specs = [S.PartitionSpec()] * len(const_args) + specs
        if self._check:
            _check_vma(closed.jaxpr, in_specs, out_specs, mesh, self.__name__)
        outs = _sp.shard_map_p.bind(*const_args, *vals, jaxpr=closed, mesh=mesh,
                                    in_specs=tuple(in_specs), out_specs=tuple(out_specs),
                                    check_vma=self._check)
        return out_tree.unflatten(outs)


# ----------------------------------------------------------------- replication check

# all_gather's result stays "varying" for the check, as in JAX (all_gather_invariant differs)
_REDUCING = {"psum": "axes", "pmax": "axes", "pmin": "axes"}


def _names(n):
    return set(n) if isinstance(n, (tuple, list)) else {n}


def _varying(jaxpr, in_vary):
    env = dict(zip(jaxpr.invars, in_vary))

    def get(v):
        return env.get(v, frozenset()) if hasattr(v, "aval") and not hasattr(v, "val") \
            else frozenset()
    for eqn in jaxpr.eqns:
        ins = frozenset().union(*[get(v) for v in eqn.invars]) if eqn.invars else frozenset()
        name = eqn.primitive.name
        if name in _REDUCING:
            out = ins - _names(eqn.params[_REDUCING[name]])
        elif name == "axis_index":
            out = frozenset({eqn.params["axis_name"]})
        elif name == "reduce_scatter":
            out = ins | _names(eqn.params["axis_name"])
        elif name in ("ppermute", "all_to_all"):
            out = ins | _names(eqn.params["axis_name"])
        else:
            out = ins
        for o in eqn.outvars:
            env[o] = out
    return [get(v) for v in jaxpr.outvars]


def _check_vma(jaxpr, in_specs, out_specs, mesh, name):
    in_vary = [frozenset(s.axes()) for s in in_specs]
    outs = _varying(jaxpr, in_vary)
    for i, (vary, spec) in enumerate(zip(outs, out_specs)):
        missing = sorted(vary - set(spec.axes()), key=list(mesh.axis_names).index)
        if missing:
            raise ValueError(
                f"shard_map applied to the function '{name}' was given out_specs which require "
                f"replication which can't be statically inferred given the mesh:\n\n"
                f"The mesh given has shape {tuple(mesh.devices.shape)} with corresponding axis "
                f"names {tuple(mesh.axis_names)}.\n\nout_specs[{i}] is {spec} which implies "
                f"that the corresponding output value is replicated across mesh axes "
                f"{tuple(missing)}, but could not infer replication over any axes: the value "
                f"varies over {tuple(missing)} (it depends on inputs split over them and no "
                "psum/pmax/pmin/all_gather over them). Check out_specs, add a collective, or "
                "pass check_vma=False to disable this check.")


# ----------------------------------------------------------------- eager evaluation and compilation

_eager_cache: dict = {}
_eager_lock = threading.Lock()


def _eager_runner(args, params):
    from xform._src.lowering import spmd  # deferred: keeps `import xform` light
    avals = tuple(core.get_aval(a).update(weak_type=False) for a in args)
    key = (id(params["jaxpr"]), params["mesh"], params["in_specs"], params["out_specs"], avals)
    hit = _eager_cache.get(key)
    if hit is None:
        def fun(*xs):
            return _sp.shard_map_p.bind(*xs, **params)
        jaxpr, consts = trace_to_jaxpr(fun, list(avals), name="shard_map")
        closed = ClosedJaxpr(jaxpr, consts)
        c = spmd.SpmdCompiled(closed, params["mesh"], params["in_specs"],
                              params["out_specs"], None, "shard_map")
        hit = _eager_cache[key] = (c, params["jaxpr"])
    return hit[0](*args)


def _find_mesh(jaxpr):
    """The mesh a program's shard_map / sharding constraints use (None if none)."""
    jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "shard_map":
            return eqn.params["mesh"]
        if name == "sharding_constraint":
            s = eqn.params["sharding"]
            if s.mesh.size > 1:
                return s.mesh
        for v in eqn.params.values():
            if isinstance(v, (ClosedJaxpr, Jaxpr)):
                m = _find_mesh(v)
                if m is not None:
                    return m
            elif isinstance(v, (tuple, list)):
                for w in v:
                    if isinstance(w, (ClosedJaxpr, Jaxpr)):
                        m = _find_mesh(w)
                        if m is not None:
                            return m
    return None


def _spmd_compiler(closed, donated_invars, name):
    mesh = _find_mesh(closed)
    if mesh is None:
        return None
    from xform._src.lowering import spmd  # deferred: keeps `import xform` light
    if prng.jaxpr_has_keys(closed):   # typed PRNG keys: partition the program over their words
        from xform._src.lowering.runtime import KeyedCompiled  # deferred: keeps `import xform` light
        inner = _spmd_compiler(prng.physicalize_closed(closed), donated_invars, name)
        return KeyedCompiled(inner, closed.in_avals, closed.out_avals)
    n = len(closed.jaxpr.invars)
    return spmd.SpmdCompiled(closed, mesh, (None,) * n, (None,) * len(closed.jaxpr.outvars),
                             donated_invars, name)


_sp.eager_runner = _eager_runner
_jit_prim.spmd_compiler = _spmd_compiler

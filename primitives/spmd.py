"""Primitives of partitioned programs: ``sharding_constraint`` (``with_sharding_constraint``).

The sharding is a parameter (an ``xform.sharding.NamedSharding``, hashable); the
value is unchanged, so evaluation is the identity, the rule is linear (it
transposes to itself) and batching inserts an unsplit dimension into the spec.
The lowering (``lowering/rules_spmd.py``) emits ``sdy.sharding_constraint`` in a
partitioned module and nothing in a single-device one.
"""
from __future__ import annotations

from xform._src.interpreters import batching
from xform._src.interpreters.core import Primitive
from xform._src.primitives._rules import deflinear
from xform._src.interpreters.batching import AxisData, batch_jaxpr, moveaxis
from xform._src.primitives import collectives, elementwise
from xform._src.primitives import structural
from xform._src.primitives import prng
from xform._src.primitives.collectives import _tree_map, axis_size
from xform._src.primitives.collectives import axis_size as _asz

__all__ = ["sharding_constraint_p"]

sharding_constraint_p = Primitive("sharding_constraint")
sharding_constraint_p.def_abstract_eval(lambda x, *, sharding: x)
sharding_constraint_p.def_impl(lambda x, *, sharding: x)
deflinear(sharding_constraint_p,
          lambda ct, x, *, sharding: [sharding_constraint_p.bind(ct, sharding=sharding)])


def _physical(in_avals, out_avals, x, *, sharding):
    # a typed PRNG key array's words: the spec names the key's (leading) dimensions, the
    # trailing word dimension stays unsharded, as JAX lays key data out
    return [sharding_constraint_p.bind(x, sharding=sharding)]


prng.physical_rules["sharding_constraint"] = _physical


def _batch(axis_data, vals, dims, *, sharding):
    (x,), (d,) = vals, dims
    if d is None:
        return sharding_constraint_p.bind(x, sharding=sharding), None
    spec = list(tuple(sharding.spec))
    ndim = len(x.shape) - 1
    spec = spec + [None] * (ndim - len(spec))
    spec.insert(d, None)
    new = type(sharding)(sharding.mesh, type(sharding.spec)(*spec))
    return sharding_constraint_p.bind(x, sharding=new), d


batching.batch_rules[sharding_constraint_p] = _batch


# ----------------------------------------------------------------- shard_map
#
# ``shard_map_p``: params ``jaxpr`` (the per-device body over local avals), ``mesh``,
# ``in_specs``/``out_specs`` (one PartitionSpec per flat input/output), ``check_vma``.
# Its operands and results are global arrays; every mesh axis is manual inside.

import math  # noqa: E402

import numpy as np  # noqa: E402

from xform._src.interpreters import ad, core, jaxpr_transforms as jt  # noqa: E402
from xform._src.interpreters.ir import eval_jaxpr  # noqa: E402
from xform._src.interpreters.staging import trace_to_jaxpr  # noqa: E402

__all__ += ["shard_map_p", "ppermute_p", "all_to_all_p", "ppermute", "pshuffle",
            "all_to_all", "local_aval", "global_aval"]

shard_map_p = Primitive("shard_map", multiple_results=True)
shard_map_p.impl_takes_arrays = True

# Installed by ``xform`` (it needs the compiler): run one shard_map equation eagerly.
eager_runner = None


def _spec_dims(spec, ndim):
    spec = tuple(spec) + (None,) * (ndim - len(spec))
    out = []
    for p in spec[:ndim]:
        out.append(() if p is None else ((p,) if isinstance(p, str) else tuple(p)))
    return out


def _factor(mesh, axes):
    return math.prod(mesh.shape[a] for a in axes)


def local_aval(aval, spec, mesh, where="argument"):
    if len(tuple(spec)) > aval.ndim:
        raise ValueError(f"shard_map: {where} of shape {aval.str_short()} has rank {aval.ndim} "
                         f"but its spec {spec} has {len(tuple(spec))} entries; a spec needs at "
                         "most one entry per dimension.")
    shape = []
    for d, (n, axes) in enumerate(zip(aval.shape, _spec_dims(spec, aval.ndim))):
        for a in axes:
            if a not in mesh.shape:
                raise ValueError(f"shard_map: {where} spec {spec} names axis {a!r}, which is not "
                                 f"in the mesh (axes {tuple(mesh.axis_names)})")
        k = _factor(mesh, axes)
        if n % k:
            raise ValueError(f"shard_map: {where} of shape {aval.str_short()} has dimension {d} "
                             f"of size {n}, which is not divisible by {k}, the total size of "
                             f"mesh axes {axes} its spec {spec} splits it over.")
        shape.append(n // k)
    return aval.update(shape=tuple(shape))


def global_aval(aval, spec, mesh):
    shape = [n * _factor(mesh, axes) for n, axes in zip(aval.shape, _spec_dims(spec, aval.ndim))]
    return aval.update(shape=tuple(shape), weak_type=False)


def _unmentioned(mesh, spec):
    used = set()
    for p in spec:
        if isinstance(p, str):
            used.add(p)
        elif isinstance(p, tuple):
            used.update(p)
    return tuple(a for a in mesh.axis_names if a not in used)


def _sm_abstract(*avals, jaxpr, mesh, in_specs, out_specs, check_vma):
    return [global_aval(a, s, mesh) for a, s in zip(jaxpr.out_avals, out_specs)]


shard_map_p.def_abstract_eval(_sm_abstract)


def _sm_impl(*args, **params):
    if eager_runner is None:
        raise RuntimeError("shard_map needs the XLA runtime (import xform)")
    return eager_runner(args, params)


shard_map_p.def_impl(_sm_impl)


# xform.sharding installs its PartitionSpec class here when it is imported (imports point
# down: this layer never imports xform), as xform/_jit.py installs jit's compiler.
PartitionSpec = None
sharding_api = None     # the xform.sharding module itself (read by lowering/spmd.py)


def _P(*parts):
    return PartitionSpec(*parts)


def _sm_jvp(primals, tangents, *, jaxpr, mesh, in_specs, out_specs, check_vma):
    nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
    jclosed, out_nz = jt.jvp_jaxpr(jaxpr, nonzeros, False)
    nonzeros = tuple(nz and ad.is_differentiable(core.get_aval(p))
                     for nz, p in zip(nonzeros, primals))
    live = [t for t, nz in zip(tangents, nonzeros) if nz]
    t_specs = tuple(s for s, nz in zip(in_specs, nonzeros) if nz)
    to_specs = tuple(s for s, nz in zip(out_specs, out_nz) if nz)
    outs = shard_map_p.bind(*primals, *live, jaxpr=jclosed, mesh=mesh,
                            in_specs=tuple(in_specs) + t_specs,
                            out_specs=tuple(out_specs) + to_specs, check_vma=check_vma)
    m = len(jaxpr.out_avals)
    it = iter(outs[m:])
    touts = [next(it) if nz else ad.Zero(ad.tangent_aval(core.get_aval(o)))
             for nz, o in zip(out_nz, outs[:m])]
    return outs[:m], touts


ad.jvp_rules[shard_map_p] = _sm_jvp


def _reshape(x, shape):
    return structural.reshape(x, tuple(shape))


def _sm_partial_eval(trace, args, params):
    closed, mesh = params["jaxpr"], params["mesh"]
    in_specs, out_specs = params["in_specs"], params["out_specs"]
    unknown = [trace.is_unknown(a) for a in args]
    known, uclosed, out_unknown, res_avals, _ = jt.partial_eval_jaxpr(closed, unknown, False)
    nk = len(known.out_avals) - len(res_avals)
    all_axes = _P(tuple(mesh.axis_names))

    # known part: residuals leave the manual region stacked along a new leading
    # dimension split over every mesh axis (one slot per device)
    def kfun(*xs):
        outs = eval_jaxpr(known.jaxpr, known.consts, *xs)
        return list(outs[:nk]) + [_reshape(r, (1,) + tuple(a.shape))
                                  for r, a in zip(outs[nk:], res_avals)]
    k_in = [a for a, u in zip(closed.in_avals, unknown) if not u]
    kj, kc = trace_to_jaxpr(kfun, k_in, name="shard_map_known")
    kclosed = jt._closed(kj, kc)
    known_args = [a for a, u in zip(args, unknown) if not u]
    k_in_specs = tuple(s for s, u in zip(in_specs, unknown) if not u)
    k_out_specs = tuple(s for s, u in zip(out_specs, out_unknown) if not u) + \
        (all_axes,) * len(res_avals)
    with core.set_current_trace(trace.parent):
        kvals = shard_map_p.bind(*known_args, jaxpr=kclosed, mesh=mesh, in_specs=k_in_specs,
                                 out_specs=k_out_specs, check_vma=params["check_vma"])
    known_vals, res_vals = kvals[:nk], kvals[nk:]
    jt.note_residuals(list(res_vals))

    nres = len(res_avals)

    def ufun(*xs):
        res = [_reshape(r, a.shape) for r, a in zip(xs[:nres], res_avals)]
        return eval_jaxpr(uclosed.jaxpr, uclosed.consts, *res, *xs[nres:])
    u_in = [a.update(shape=(1,) + tuple(a.shape)) for a in res_avals] + \
        [a for a, u in zip(closed.in_avals, unknown) if u]
    uj, uc = trace_to_jaxpr(ufun, u_in, name="shard_map_unknown")
    u2 = jt._closed(uj, uc)
    u_args = list(res_vals) + [a for a, u in zip(args, unknown) if u]
    u_in_specs = (all_axes,) * nres + tuple(s for s, u in zip(in_specs, unknown) if u)
    u_out_specs = tuple(s for s, u in zip(out_specs, out_unknown) if u)
    atoms = [trace.to_atom(a) for a in u_args]
    u_params = dict(params, jaxpr=u2, in_specs=u_in_specs, out_specs=u_out_specs)
    u_out_avals = _sm_abstract(*[core.get_aval(a) for a in u_args], **u_params)
    tracers = trace.add_eqn(shard_map_p, atoms, u_out_avals, u_params)
    kv, uv = iter(known_vals), iter(tracers)
    return [next(uv) if u else next(kv) for u in out_unknown]


ad.partial_eval_rules[shard_map_p] = _sm_partial_eval


def _sm_transpose(cts, *args, jaxpr, mesh, in_specs, out_specs, check_vma):
    linear = [ad.is_undefined_primal(a) for a in args]
    body_t = jt.transpose_jaxpr(jaxpr, linear)
    nonlin = [a for a, lin in zip(args, linear) if not lin]
    cts = [ad.instantiate(c) if type(c) is ad.Zero else c for c in cts]
    cts = [c if not (type(c) in (int, float)) else c for c in cts]
    nk = len(nonlin)
    lin_specs = tuple(s for s, lin in zip(in_specs, linear) if lin)

    def fun(*xs):
        cs = []
        for c, s in zip(xs[nk:], out_specs):
            n = _factor(mesh, _unmentioned(mesh, s))
            if n > 1 and core.get_aval(c).dtype.kind in "fc":
                c = elementwise.div_p.bind(c, np.asarray(n, core.get_aval(c).dtype))
            cs.append(c)
        outs = eval_jaxpr(body_t.jaxpr, body_t.consts, *xs[:nk], *cs)
        res = []
        for o, s in zip(outs, lin_specs):
            axes = _unmentioned(mesh, s)
            if axes and core.get_aval(o).dtype.kind in "fc":
                o = collectives.psum_p.bind(o, axes=axes, axis_index_groups=None)
            res.append(o)
        return res
    t_in = [core.get_aval(v) for v in jaxpr.in_avals if True][:0]
    t_in = [a for a, lin in zip(jaxpr.in_avals, linear) if not lin] + \
        [ad.tangent_aval(a) for a in jaxpr.out_avals]
    tj, tc = trace_to_jaxpr(fun, t_in, name="shard_map_transpose")
    outs = shard_map_p.bind(*nonlin, *cts, jaxpr=jt._closed(tj, tc), mesh=mesh,
                            in_specs=tuple(s for s, lin in zip(in_specs, linear) if not lin)
                            + tuple(out_specs), out_specs=lin_specs, check_vma=check_vma)
    it = iter(outs)
    return [next(it) if lin else None for lin in linear]


ad.transpose_rules[shard_map_p] = _sm_transpose


def _sm_batch(axis_data, vals, dims, *, jaxpr, mesh, in_specs, out_specs, check_vma):
    xs, in_dims, new_in = [], [], []
    for v, d, s in zip(vals, dims, in_specs):
        if d is None:
            xs.append(v)
            in_dims.append(None)
            new_in.append(s)
        else:
            xs.append(moveaxis(v, d, 0) if d != 0 else v)
            in_dims.append(0)
            new_in.append(_P(None, *tuple(s)))
    bclosed, _ = batch_jaxpr(jaxpr, AxisData(axis_data.size, axis_data.name), in_dims,
                             [0] * len(jaxpr.out_avals))
    new_out = tuple(_P(None, *tuple(s)) for s in out_specs)
    outs = shard_map_p.bind(*xs, jaxpr=bclosed, mesh=mesh, in_specs=tuple(new_in),
                            out_specs=new_out, check_vma=check_vma)
    return outs, [0] * len(outs)


batching.batch_rules[shard_map_p] = _sm_batch


# ----------------------------------------------------------------- ppermute / all_to_all

from xform._src.primitives.collectives import CollectivePrimitive, _check_bound, _names  # noqa: E402

ppermute_p = CollectivePrimitive("ppermute")
ppermute_p.def_abstract_eval(lambda x, *, axis_name, perm: x)


def _unbound(api):
    def impl(*a, **p):
        raise batching.unbound_axis_error(_names(p["axis_name"])[0], f"{api} (evaluated outside "
                                          "any vmap/shard_map)")
    return impl


ppermute_p.def_impl(_unbound("ppermute"))
deflinear(ppermute_p, lambda ct, x, *, axis_name, perm: [
    ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((d, s) for s, d in perm))])


def _ppermute_batch(axis_data, vals, dims, *, axis_name, perm):
    (x,), (d,) = vals, dims
    if axis_data.name not in _names(axis_name):
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
    n = axis_data.size
    if d is None:
        x = batching.broadcast_batched(x, n, 0)
        d = 0
    x = batching.moveaxis(x, d, 0) if d else x
    src_of = {dst: src for src, dst in perm}
    rows = []
    for i in range(n):
        s = src_of.get(i)
        if s is None:
            rows.append(ad.zeros_like_aval(core.get_aval(x).update(
                shape=(1,) + core.get_aval(x).shape[1:], weak_type=False)))
        else:
            rows.append(structural.slice_in_dim(x, s, s + 1, axis=0)
                        if hasattr(structural, "slice_in_dim") else x[s:s + 1])
    return structural.concatenate(rows, 0), 0


batching.batch_rules[ppermute_p] = _ppermute_batch


def ppermute(x, axis_name, perm):
    """Send ``x`` from position ``src`` to ``dst`` of the named axis for each
    ``(src, dst)`` in ``perm``; positions receiving nothing get zeros."""
    names = _names(axis_name)
    _check_bound(names, "ppermute")
    perm = tuple((int(s), int(d)) for s, d in perm)
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute: perm {perm} sends from or to a position twice")
    n = axis_size(names)
    for s, d in perm:
        if not (0 <= s < n and 0 <= d < n):
            raise ValueError(f"ppermute: perm entry {(s, d)} is out of range for axis "
                             f"{axis_name!r} of size {n}")
    name = names[0] if len(names) == 1 else names
    return _tree_map(lambda v: ppermute_p.bind(v, axis_name=name, perm=perm), x)


def pshuffle(x, axis_name, perm):
    """``ppermute`` where ``perm[i]`` is the source of position ``i``."""
    return ppermute(x, axis_name, [(s, d) for d, s in enumerate(perm)])


all_to_all_p = CollectivePrimitive("all_to_all")


def _a2a_abstract(x, *, axis_name, split_axis, concat_axis, axis_size, tiled):
    shape = list(x.shape)
    if shape[split_axis] % axis_size:
        raise ValueError(f"all_to_all: dimension {split_axis} of {x.str_short()} must be "
                         f"divisible by the size {axis_size} of axis {axis_name!r}")
    shape[split_axis] //= axis_size
    shape[concat_axis] *= axis_size
    return x.update(shape=tuple(shape))


all_to_all_p.def_abstract_eval(_a2a_abstract)
all_to_all_p.def_impl(_unbound("all_to_all"))
deflinear(all_to_all_p, lambda ct, x, *, axis_name, split_axis, concat_axis, axis_size, tiled: [
    all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis, concat_axis=split_axis,
                      axis_size=axis_size, tiled=tiled)])


def _a2a_batch(axis_data, vals, dims, *, axis_name, split_axis, concat_axis, axis_size, tiled):
    (x,), (d,) = vals, dims
    if axis_data.name in _names(axis_name):
        raise NotImplementedError("all_to_all over a vmap axis: use it inside shard_map")
    if d is None:
        return all_to_all_p.bind(x, axis_name=axis_name, split_axis=split_axis,
                                 concat_axis=concat_axis, axis_size=axis_size, tiled=tiled), None
    x = batching.moveaxis(x, d, 0) if d else x
    return all_to_all_p.bind(x, axis_name=axis_name, split_axis=split_axis + 1,
                             concat_axis=concat_axis + 1, axis_size=axis_size, tiled=tiled), 0


batching.batch_rules[all_to_all_p] = _a2a_batch


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Split ``split_axis`` into axis-size chunks, send chunk ``i`` to position ``i``
    and concatenate the received chunks along ``concat_axis`` (with ``tiled=False``
    the split axis must equal the axis size and is replaced by it, as in JAX)."""
    names = _names(axis_name)
    _check_bound(names, "all_to_all")
    n = _asz(names)
    name = names[0] if len(names) == 1 else names

    def leaf(v):
        aval = core.get_aval(v)
        sa, ca = split_axis % aval.ndim, concat_axis % aval.ndim
        if tiled:
            return all_to_all_p.bind(v, axis_name=name, split_axis=sa, concat_axis=ca,
                                     axis_size=n, tiled=True)
        if aval.shape[sa] != n:
            raise ValueError(f"all_to_all: dimension {sa} of {aval.str_short()} must equal "
                             f"the size {n} of axis {axis_name!r} (or pass tiled=True)")
        p = ca if ca <= sa else ca + 1
        shape1 = list(aval.shape)
        shape1.insert(p, 1)
        sa1 = sa + (p <= sa)
        y = all_to_all_p.bind(structural.reshape(v, tuple(shape1)), axis_name=name,
                              split_axis=sa1, concat_axis=p, axis_size=n, tiled=True)
        final = list(aval.shape)
        final.pop(sa)
        final.insert(ca, n)
        return structural.reshape(y, tuple(final))
    return _tree_map(leaf, x)


def pbroadcast(x, axis_name, source):
    """Every position of the named axis gets position ``source``'s value (JAX's
    definition: ``psum(where(axis_index == source, x, 0))``)."""
    names = _names(axis_name)
    _check_bound(names, "pbroadcast")
    n = collectives.axis_size(names)
    if not 0 <= int(source) < n:
        raise ValueError(f"pbroadcast: source {source} is out of range for axis {axis_name!r} "
                         f"of size {n}")

    def leaf(v):
        aval = core.get_aval(v)
        if isinstance(v, (int, float, complex, bool)):
            v = collectives._full(v, aval)
        idx = collectives.axis_index(axis_name)
        is_src = elementwise.eq_p.bind(idx, np.asarray(int(source), np.int32))
        mask = structural.broadcast_in_dim(is_src, aval.shape, ()) if aval.shape else is_src
        zero = ad.zeros_like_aval(aval.update(weak_type=False))
        masked = elementwise.select_n_p.bind(mask, zero, v)
        return collectives.psum_p.bind(masked, axes=names, axis_index_groups=None)
    return _tree_map(leaf, x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swap the named axis with positional axis ``axis`` (whose size must equal the
    named axis's): ``all_to_all`` with ``split_axis = concat_axis = axis``."""
    return all_to_all(x, axis_name, axis, axis)


__all__ += ["pbroadcast", "pswapaxes"]

"""Lowering of partitioned-program primitives to Shardy (``sdy``) ops."""
from __future__ import annotations

from xform._src.primitives.collectives import (
    all_gather_p, axis_index_p, pmax_p, pmin_p, psum_p, reduce_scatter_p)
from xform._src.primitives.spmd import all_to_all_p, ppermute_p, shard_map_p, sharding_constraint_p
from xform._src.lowering.mlir import register


def _spmd_mesh(ctx):
    return getattr(ctx.module, "spmd_mesh", None)


@register(sharding_constraint_p)
def _sharding_constraint(ctx, eqn, x):
    mesh = _spmd_mesh(ctx)
    if mesh is None or getattr(ctx.module, "manual_mesh", None) is not None:
        return [x]            # single-device program / inside shard_map: nothing to constrain
    from xform._src.lowering.spmd import dims_text  # deferred: keeps `import xform` light
    s = eqn.params["sharding"]
    ndim = len(eqn.invars[0].aval.shape)
    attr = f"sharding = #sdy.sharding<@mesh, {dims_text(s.spec, ndim)}>"
    return ctx.op("sdy.sharding_constraint", [x], [ctx.types[x]], attr)


# ----------------------------------------------------------------- shard_map

import itertools  # noqa: E402

import numpy as np  # noqa: E402

from xform._src.lowering.mlir import aval_type, element_type, lower_subjaxpr  # noqa: E402


def _per_value(specs, avals):
    from xform._src.lowering.spmd import dims_text  # deferred: keeps `import xform` light
    return "#sdy.sharding_per_value<[" + ", ".join(
        f"<@mesh, {dims_text(s, len(a.shape))}>" for s, a in zip(specs, avals)) + "]>"


@register(shard_map_p)
def _shard_map(ctx, eqn, *args):
    p = eqn.params
    mesh, closed = p["mesh"], p["jaxpr"]
    if _spmd_mesh(ctx) is None:
        raise NotImplementedError("shard_map must be compiled as a partitioned program")
    if _spmd_mesh(ctx) != mesh:
        raise ValueError(f"shard_map over {mesh} inside a program partitioned over "
                         f"{_spmd_mesh(ctx)}: use one mesh per program")
    if getattr(ctx.module, "manual_mesh", None) is not None:
        raise NotImplementedError("nested shard_map")
    local_in = closed.in_avals
    local_out = closed.out_avals
    c = ctx.child()
    names = [c.fresh_arg(aval_type(a), "m") for a in local_in]
    ctx.module.manual_mesh = mesh
    try:
        outs = lower_subjaxpr(c, closed, names)
    finally:
        ctx.module.manual_mesh = None
    c.ret(outs, "sdy.return")
    head = "{\n" + " " * (ctx.indent + 2) + "^bb0(" + ", ".join(
        f"{n}: {aval_type(a)}" for n, a in zip(names, local_in)) + "):\n"
    region = head + "\n".join(c.lines) + "\n" + " " * ctx.indent + "}"
    axes = ", ".join(f'"{a}"' for a in mesh.axis_names)
    attrs = (f"in_shardings = {_per_value(p['in_specs'], [v.aval for v in eqn.invars])}, "
             f"out_shardings = {_per_value(p['out_specs'], [v.aval for v in eqn.outvars])}, "
             f"manual_axes = #sdy<manual_axes{{{axes}}}>")
    return ctx.op("sdy.manual_computation", list(args), [v.aval for v in eqn.outvars], attrs,
                  [region])


# ----------------------------------------------------------------- collectives


def _mesh_of(ctx, what):
    mesh = getattr(ctx.module, "manual_mesh", None)
    if mesh is None:
        raise NotImplementedError(
            f"{what} over a mesh axis outside shard_map: collectives run inside shard_map (or "
            "vmap/pmap with an axis_name)")
    return mesh


def _axes(name):
    return tuple(name) if isinstance(name, (tuple, list)) else (name,)


def _groups(mesh, axes):
    """Partition ids grouped by the coordinates of the other axes; in each group the
    ids are ordered by the row-major index over ``axes`` (in the given order)."""
    names = list(mesh.axis_names)
    for a in axes:
        if a not in names:
            raise ValueError(f"collective over axis {a!r}, which is not in the mesh "
                             f"{tuple(names)}")
    sizes = mesh.devices.shape
    ids = np.arange(mesh.size).reshape(sizes)
    order = [names.index(a) for a in axes]
    rest = [i for i in range(len(names)) if i not in order]
    t = np.transpose(ids, rest + order)
    return t.reshape(-1, math.prod(sizes[i] for i in order) if order else 1)


import math  # noqa: E402


def _groups_attr(g):
    rows = ", ".join("[" + ", ".join(str(int(v)) for v in r) + "]" for r in g)
    return f"replica_groups = dense<[{rows}]> : tensor<{g.shape[0]}x{g.shape[1]}xi64>"


def _channel(ctx):
    m = ctx.module
    m._spmd_channel = getattr(m, "_spmd_channel", 0) + 1
    return f"channel_handle = #stablehlo.channel_handle<handle = {m._spmd_channel}, type = 1>"


def _scalar_region(ctx, dtype, opname):
    st = f"tensor<{element_type(dtype)}>"

    def body(c, a, b):
        return c.op("stablehlo." + opname, [a, b], [st])
    return ctx.region([st, st], body)


def _all_reduce(opname):
    def rule(ctx, eqn, x):
        mesh = _mesh_of(ctx, eqn.primitive.name)
        axes = _axes(eqn.params["axes"])
        g = _groups(mesh, axes)
        aval = eqn.invars[0].aval
        op = opname
        if aval.dtype == np.bool_:
            op = {"add": "or", "maximum": "or", "minimum": "and"}[opname]
        attrs = f"{_channel(ctx)}, {_groups_attr(g)}, use_global_device_ids"
        return ctx.op("stablehlo.all_reduce", [x], [ctx.types[x]], attrs,
                      [_scalar_region(ctx, aval.dtype, op)])
    return rule


register(psum_p)(_all_reduce("add"))
register(pmax_p)(_all_reduce("maximum"))
register(pmin_p)(_all_reduce("minimum"))


@register(axis_index_p)
def _axis_index(ctx, eqn):
    mesh = _mesh_of(ctx, "axis_index")
    name = eqn.params["axis_name"]
    names = list(mesh.axis_names)
    if name not in names:
        raise ValueError(f"axis_index: axis {name!r} is not in the mesh {tuple(names)}")
    k = names.index(name)
    sizes = mesh.devices.shape
    stride = math.prod(sizes[k + 1:])
    pid = ctx.op1("stablehlo.partition_id", [], "tensor<ui32>")
    pid = ctx.op1("stablehlo.convert", [pid], "tensor<i32>")
    if stride > 1:
        pid = ctx.op1("stablehlo.divide", [pid, ctx.constant(np.int32(stride))], "tensor<i32>")
    pid = ctx.op1("stablehlo.remainder", [pid, ctx.constant(np.int32(sizes[k]))], "tensor<i32>")
    return [pid]


@register(all_gather_p)
def _all_gather(ctx, eqn, x):
    mesh = _mesh_of(ctx, "all_gather")
    p = eqn.params
    g = _groups(mesh, _axes(p["axis_name"]))
    aval, out = eqn.invars[0].aval, eqn.outvars[0].aval
    dim = p["all_gather_dimension"]
    if not p["tiled"]:
        shape1 = aval.shape[:dim] + (1,) + aval.shape[dim:]
        x = ctx.op1("stablehlo.reshape", [x], aval_type(aval.update(shape=shape1)))
    attrs = (f"all_gather_dim = {dim} : i64, {_channel(ctx)}, {_groups_attr(g)}, "
             "use_global_device_ids")
    return ctx.op("stablehlo.all_gather", [x], [out], attrs)


@register(reduce_scatter_p)
def _reduce_scatter(ctx, eqn, x):
    mesh = _mesh_of(ctx, "psum_scatter")
    p = eqn.params
    g = _groups(mesh, _axes(p["axis_name"]))
    aval, out = eqn.invars[0].aval, eqn.outvars[0].aval
    dim = p["scatter_dimension"]
    n = p["axis_size"]
    tiled_shape = aval.shape[:dim] + (aval.shape[dim] // n,) + aval.shape[dim + 1:]
    attrs = (f"scatter_dimension = {dim} : i64, {_channel(ctx)}, {_groups_attr(g)}, "
             "use_global_device_ids")
    r = ctx.op1("stablehlo.reduce_scatter", [x], aval_type(aval.update(shape=tiled_shape)),
                attrs, [_scalar_region(ctx, aval.dtype, "add")])
    if not p["tiled"]:
        r = ctx.op1("stablehlo.reshape", [r], aval_type(out))
    return [r]


@register(ppermute_p)
def _ppermute(ctx, eqn, x):
    mesh = _mesh_of(ctx, "ppermute")
    p = eqn.params
    g = _groups(mesh, _axes(p["axis_name"]))
    pairs = []
    for row in g:
        for s, d in p["perm"]:
            pairs.append((int(row[s]), int(row[d])))
    txt = ", ".join(f"[{s}, {d}]" for s, d in pairs)
    attrs = (f"{_channel(ctx)}, source_target_pairs = dense<[{txt}]> : "
             f"tensor<{len(pairs)}x2xi64>")
    if not pairs:
        return [ctx.full_like(0, eqn.outvars[0].aval)]
    return ctx.op("stablehlo.collective_permute", [x], [ctx.types[x]], attrs)


@register(all_to_all_p)
def _all_to_all(ctx, eqn, x):
    mesh = _mesh_of(ctx, "all_to_all")
    p = eqn.params
    g = _groups(mesh, _axes(p["axis_name"]))
    attrs = (f"split_dimension = {p['split_axis']} : i64, concat_dimension = "
             f"{p['concat_axis']} : i64, split_count = {p['axis_size']} : i64, "
             f"{_groups_attr(g)}, {_channel(ctx)}")
    return ctx.op("stablehlo.all_to_all", [x], [eqn.outvars[0].aval], attrs)

"""``export(jit(f))(*args)``: trace, lower and package a function for the given argument
shapes, including shape-polymorphic and multi-device (sharded) exports and the VJP that
``grad`` of the call uses."""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import core, ir
from xform._src.interpreters import tree_util as _tu
from xform._src.interpreters.core import ShapedArray
from xform import numpy as xnp
from xform._ad_api import vjp as _vjp
from xform._jit import JitWrapped
from xform._jit import ShapeDtypeStruct, jit
from xform._src import lowering
from xform._src.interpreters import passes
from xform._src.interpreters.dtypes import float0
from xform._src.primitives import prng
from xform.sharding import NamedSharding
from xform.sharding._jit import ShardedJit
from xform.export._serialization import (
    _CALLING_CONVENTION_VERSION, _FLOAT0, _PLATFORMS, _abstract_mesh_of,
    _canonical_platform, _em, _is_float, _on_mesh, _xs,
)
from xform.export._shape_poly import _DimExpr, _eval_mono, _is_symbolic, _shape_str
from xform.export._exported import Exported


def default_export_platform() -> str:
    """The platform exports target by default: one of 'cpu', 'cuda', 'rocm', 'tpu'."""
    return _canonical_platform(lowering.default_backend())

def export(fun_jit, *, platforms=None, disabled_checks=()):
    """``export(jit(f))(*args, **kwargs) -> Exported``; args may be ShapeDtypeStructs.

    ``platforms``: a subset of ('cpu', 'cuda', 'rocm', 'tpu') (default: the
    default backend's); with several, the module takes a platform index first.
    """
    if not isinstance(fun_jit, (JitWrapped, ShardedJit)):
        raise ValueError(f"Function to be exported must be the result of `jit` but is: "
                         f"{fun_jit}")
    if platforms is not None:
        if isinstance(platforms, str):
            raise ValueError(f"platforms must be a sequence of strings, got {platforms!r}")
        platforms = tuple(_canonical_platform(p) for p in platforms)
        for p in platforms:
            if p not in _PLATFORMS:
                raise ValueError(f"Unsupported platform {p!r} for export; expected one of "
                                 f"{_PLATFORMS}")
        if len(set(platforms)) != len(platforms):
            raise ValueError(f"platforms must not repeat, got {platforms}")
    disabled_checks = tuple(disabled_checks)

    def do_export(*args_specs, **kwargs_specs) -> Exported:
        plats = platforms if platforms is not None else (default_export_platform(),)
        inner = fun_jit._inner if isinstance(fun_jit, ShardedJit) else fun_jit
        dyn_args, _, dyn_kwargs, _ = inner._split(args_specs, kwargs_specs)
        leaves, in_tree = _tu.tree_flatten((tuple(dyn_args), dict(dyn_kwargs)))
        symbolic = any(_is_symbolic(getattr(leaf, "shape", ())) for leaf in leaves)
        if isinstance(fun_jit, ShardedJit) or any(_has_named_sharding(x) for x in leaves):
            sj = fun_jit if isinstance(fun_jit, ShardedJit) else ShardedJit(fun_jit)
            if symbolic:
                return _export_polymorphic(inner, args_specs, kwargs_specs, leaves, in_tree,
                                           plats, disabled_checks, sharded=sj)
            return _export_sharded(sj, args_specs, kwargs_specs, in_tree, plats,
                                   disabled_checks)
        if symbolic:
            return _export_polymorphic(fun_jit, args_specs, kwargs_specs, leaves, in_tree,
                                       plats, disabled_checks)
        traced = fun_jit.trace(*args_specs, **kwargs_specs)
        entry = traced._entry
        closed = _unhoist(entry.closed, entry.const_args)
        return _export_closed(closed, fun_jit._name, in_tree, entry.out_tree, plats,
                              disabled_checks)
    return do_export

def _has_named_sharding(x):
    """An argument laid out over a mesh: a sharded Array, or a ShapeDtypeStruct with a
    NamedSharding."""
    if isinstance(getattr(x, "sharding", None), NamedSharding) and not isinstance(x, core.Array):
        return True
    if type(x) is core.Array and x._buf is not None and not x._deleted:
        return len(x._buf._sharding.device_set) > 1
    return False

def _spmd_plan(sj, args_specs, kwargs_specs):
    """(closed program, out tree, mesh, in specs, out specs) of the sharded jit ``sj``
    for these arguments (hoisted constants back in the program)."""
    entry, _, mesh, in_sh, out_sh = sj._plan(args_specs, kwargs_specs)
    closed = passes.simplify(_unhoist(entry.closed, entry.const_args))

    def spec(s):
        if s is None:
            return None
        return s.spec if isinstance(s, NamedSharding) else _xs().PartitionSpec()
    return closed, entry.out_tree, mesh, [spec(s) for s in in_sh], [spec(s) for s in out_sh]

def _spmd_text(closed, mesh, in_specs, out_specs, name, platform, debug_info=True):
    from xform._src.lowering import spmd  # deferred: keeps `import xform` light
    text, cbs = spmd.lower_spmd(closed, mesh, in_specs, out_specs, None, f"jit_{name}",
                                platform=_lowering_platform(platform))
    if cbs:
        raise ValueError(
            f"Cannot serialize code with custom calls whose targets have no compatibility "
            f"guarantees: the function {name!r} uses Python host callbacks (debug.print, "
            "pure_callback, ...), which cannot be part of an exported artifact.")
    return text

def _sharded_exported(mesh, in_specs, out_specs, **fields) -> Exported:
    """An Exported whose shardings are ``in_specs``/``out_specs`` over ``mesh``'s
    abstract form (None: unspecified)."""
    S = _xs()
    amesh = _abstract_mesh_of(mesh)

    def named(p):
        if p is None:
            return None
        return S.NamedSharding(amesh, p if isinstance(p, S.PartitionSpec) else
                               S.PartitionSpec(*p), memory_kind="device")
    return Exported(nr_devices=mesh.size, _in_named_shardings=[named(p) for p in in_specs],
                    _out_named_shardings=[named(p) for p in out_specs], **fields)

def _export_sharded(sj, args_specs, kwargs_specs, in_tree, platforms,
                    disabled_checks) -> Exported:
    """Export a function partitioned over a mesh (``jit`` with in/out shardings, or
    sharded arguments): the module carries JAX's Shardy annotations (``sdy.mesh``,
    ``sdy.sharding`` on ``main``'s arguments and results, ``mhlo.num_partitions``)."""
    closed, out_tree, mesh, in_specs, out_specs = _spmd_plan(sj, args_specs, kwargs_specs)
    name = sj._inner._name
    for a in closed.in_avals + closed.out_avals:
        if a.dtype == _FLOAT0:
            raise ValueError("export: float0 arguments/results (cotangents of integer values) "
                             "cannot be exported; differentiate with respect to float inputs")
    logical = closed
    if prng.jaxpr_has_keys(closed):
        closed = prng.physicalize_closed(closed)
    texts = [_spmd_text(closed, mesh, in_specs, out_specs, name, p) for p in platforms]
    if len(set(texts)) > 1:
        raise ValueError(f"export: the sharded function {name!r} lowers differently for the "
                         f"platforms {platforms} (platform-specific kernels); export it for one "
                         "platform at a time")
    blob = _em().serialize_module(texts[0], result_info=_result_info(out_tree),
                                  platform_index_arg=len(platforms) > 1)
    in_avals = [a.strip_weak_type() for a in logical.in_avals]

    def get_vjp(primal: Exported) -> Exported:
        def flat_primal(*xs):
            return list(ir.eval_jaxpr(logical.jaxpr, logical.consts, *xs))
        return _export_vjp(flat_primal, name, primal, platforms, disabled_checks, mesh=mesh)

    return _sharded_exported(
        mesh, in_specs, out_specs,
        fun_name=name, in_tree=in_tree, in_avals=in_avals, out_tree=out_tree,
        out_avals=list(logical.out_avals), platforms=platforms, ordered_effects=(),
        unordered_effects=(), disabled_safety_checks=disabled_checks,
        mlir_module_serialized=blob, calling_convention_version=_CALLING_CONVENTION_VERSION,
        module_kept_var_idx=tuple(range(len(in_avals))), uses_global_constants=False,
        _get_vjp=get_vjp)

def _export_polymorphic(fun_jit, args_specs, kwargs_specs, leaves, in_tree, platforms,
                        disabled_checks, sharded=None) -> Exported:
    """Export for every value of the dimension variables (see ``lowering.export_poly``)."""
    from xform._src.lowering import export_poly  # deferred: keeps `import xform` light
    variables = []
    for leaf in leaves:
        for d in getattr(leaf, "shape", ()):
            if isinstance(d, _DimExpr):
                for v in d.variables():
                    if v not in variables:
                        variables.append(v)
                for m in d.terms:
                    if any(p > 1 for _, p in m):
                        raise ValueError(f"export: the symbolic dimension {d} has a power of a "
                                         "variable; only multilinear dimensions are supported")
    variables.sort()
    constraints, seen = [], set()
    for leaf in leaves:
        for d in getattr(leaf, "shape", ()):
            scope = getattr(d, "scope", None)
            if isinstance(d, _DimExpr) and scope is not None and id(scope) not in seen:
                seen.add(id(scope))
                for op, diff, text in scope._parsed:
                    if op == "==":
                        raise ValueError(
                            f"export: the equality constraint {text!r} is not supported by "
                            "xform (it traces at sample sizes); use '>=' / '<=' constraints or "
                            "express one dimension through the other in the shapes")
                    constraints.append((_dim_poly(diff), text))
    points = export_poly.sample_points(variables, [c for c, _ in constraints])
    texts, first = [], None
    for env in points:
        def concrete(x):
            shape = getattr(x, "shape", None)
            if shape is None or not _is_symbolic(shape):
                return x
            dims = tuple(_eval_dim(d, env) for d in shape)
            return ShapeDtypeStruct(dims, x.dtype, sharding=getattr(x, "sharding", None))
        a = _tu.tree_map(concrete, args_specs,
                         is_leaf=lambda x: isinstance(x, ShapeDtypeStruct))
        k = _tu.tree_map(concrete, kwargs_specs,
                         is_leaf=lambda x: isinstance(x, ShapeDtypeStruct))
        if sharded is not None:       # lowered for the mesh at each sample size
            try:
                closed, tree, mesh, in_specs, out_specs = _spmd_plan(sharded, a, k)
            except ValueError as e:
                raise ValueError(
                    f"export: xform traces symbolic shapes at sample sizes ({env}), which "
                    f"must split evenly over the mesh: write a sharded dimension as a multiple "
                    f"of its mesh axes' size (e.g. '8*b' over 8 devices). {e}") from None
            if first is None:
                first = (closed, tree, mesh, in_specs, out_specs)
            texts.append(_spmd_text(closed, mesh, in_specs, out_specs, fun_jit._name,
                                    platforms[0]))
            continue
        traced = fun_jit.trace(*a, **k)
        closed = passes.simplify(_unhoist(traced._entry.closed, traced._entry.const_args))
        if first is None:
            first = (closed, traced._entry.out_tree)
        lowered = lowering.lower_module(closed, name=f"jit_{fun_jit._name}", debug_info=False,
                                        platform=_lowering_platform(platforms[0]))
        if first[0] is closed:
            for p in platforms[1:]:
                other = lowering.lower_module(closed, name=f"jit_{fun_jit._name}",
                                              debug_info=False, platform=_lowering_platform(p))
                if other.text != lowered.text:
                    raise ValueError(
                        f"export: {fun_jit._name} lowers differently for {platforms[0]} and "
                        f"{p} (platform-specific kernels); with symbolic shapes export for one "
                        "platform at a time")
        if lowered.host_callbacks:
            raise ValueError("Cannot serialize code with custom calls whose targets have no "
                             "compatibility guarantees: the function uses Python host callbacks.")
        texts.append(lowered.text)
    closed, out_tree = first[:2]
    if sharded is not None and len(platforms) > 1:
        raise ValueError("export: with symbolic shapes and shardings export for one platform "
                         "at a time")
    if sharded is not None and any("sdy.manual_computation" in t for t in texts):
        raise ValueError(f"export: {fun_jit._name} uses shard_map, which xform exports for "
                         "concrete shapes only (not with symbolic shapes)")
    arg_specs = [[_dim_poly(d) for d in getattr(leaf, "shape", ())] for leaf in leaves]
    paths = _arg_paths(in_tree)
    spec_text = ",".join(f"{p}.shape = {_shape_str(getattr(leaf, 'shape', ()))}"
                         for p, leaf in zip(paths, leaves)
                         if _is_symbolic(getattr(leaf, "shape", ())))
    text, result_shapes = export_poly.generalize(texts, variables, arg_specs, spec_text,
                                                       paths, points, constraints)
    blob = _em().serialize_module(text, uses_shape_polymorphism=True,
                                         result_info=_result_info(out_tree),
                                         constraints=[(export_poly.poly_str(c), t)
                                                      for c, t in constraints],
                                         platform_index_arg=len(platforms) > 1)
    in_avals = [ShapedArray(tuple(getattr(leaf, "shape", ())), np.dtype(leaf.dtype))
                for leaf in leaves]
    out_avals = [ShapedArray(tuple(_poly_dim(d) for d in shape), a.dtype)
                 for shape, a in zip(result_shapes, closed.out_avals)]
    name = fun_jit._name

    mesh = first[2] if sharded is not None else None

    def get_vjp(primal: Exported) -> Exported:
        def flat_primal(*xs):
            args, kwargs = in_tree.unflatten(list(xs))
            return _tu.tree_leaves(fun_jit(*args, **kwargs))
        return _export_vjp(flat_primal, name, primal, platforms, disabled_checks, mesh=mesh)

    fields = dict(
        fun_name=name, in_tree=in_tree, in_avals=in_avals, out_tree=out_tree,
        out_avals=out_avals, platforms=platforms, ordered_effects=(),
        unordered_effects=(), disabled_safety_checks=disabled_checks,
        mlir_module_serialized=blob, calling_convention_version=_CALLING_CONVENTION_VERSION,
        module_kept_var_idx=tuple(range(len(in_avals))), uses_global_constants=True,
        _get_vjp=get_vjp)
    if sharded is not None:
        return _sharded_exported(mesh, first[3], first[4], **fields)
    return Exported(nr_devices=1, **fields)

def _eval_dim(d, env):
    if not isinstance(d, _DimExpr):
        return int(d)
    return sum(c * _eval_mono(m, env) for m, c in d.terms.items())

def _dim_poly(d):
    """A _DimExpr as export_poly's polynomial dict; ints stay ints."""
    if not isinstance(d, _DimExpr):
        return int(d)
    return {tuple(sorted(v for v, _ in m)): c for m, c in d.terms.items()}

def _poly_dim(p):
    if isinstance(p, int):
        return p
    e = _DimExpr({tuple((v, 1) for v in m): c for m, c in p.items()})
    return e._norm()

def _arg_paths(in_tree):
    paths = [_tu.keystr(p) for p, _ in _tu.tree_flatten_with_path(
        in_tree.unflatten([0] * in_tree.num_leaves))[0]]
    out = []
    for p in paths:
        if p.startswith("[0]"):
            p = "args" + p[3:]
        elif p.startswith("[1]"):
            p = "kwargs" + p[3:]
        out.append(p)
    return out

def _unhoist(closed, const_args):
    """The jit entry's program with its hoisted constants turned back into constants."""
    n = len(const_args)
    if not n:
        return closed
    j = closed.jaxpr
    jaxpr = ir.Jaxpr(list(j.constvars) + list(j.invars[:n]), j.invars[n:], j.outvars, j.eqns,
                     j.debug_info)
    return ir.ClosedJaxpr(jaxpr, list(closed.consts) + list(const_args))

def _lowering_platform(p):
    return "gpu" if p in ("cuda", "rocm") else p

def _result_info(out_tree):
    paths = [_tu.keystr(p) for p, _ in _tu.tree_flatten_with_path(
        out_tree.unflatten([0] * out_tree.num_leaves))[0]]
    return [f"result{p}" for p in paths]

def _export_closed(closed, name, in_tree, out_tree, platforms, disabled_checks) -> Exported:
    closed = passes.simplify(closed)
    for a in closed.in_avals + closed.out_avals:
        if a.dtype == _FLOAT0:
            raise ValueError("export: float0 arguments/results (cotangents of integer values) "
                             "cannot be exported; differentiate with respect to float inputs")
    logical = closed
    if prng.jaxpr_has_keys(closed):        # typed PRNG keys travel as their key data
        closed = prng.physicalize_closed(closed)
    lowereds = [lowering.lower_module(closed, name=f"jit_{name}", debug_info=True,
                                      platform=_lowering_platform(p)) for p in platforms]
    for lowered in lowereds:
        if lowered.host_callbacks:
            raise ValueError(
                f"Cannot serialize code with custom calls whose targets have no compatibility "
                f"guarantees: the function {name!r} uses Python host callbacks (debug.print, "
                "pure_callback, ...), which cannot be part of an exported artifact.")
    texts = [lw.text for lw in lowereds]
    info = _result_info(out_tree)
    if len(set(texts)) <= 1:
        blob = _em().serialize_module(texts[0], result_info=info,
                                      platform_index_arg=len(platforms) > 1)
    else:     # platform-specific lowerings (e.g. LAPACK vs cusolver): a case on the index
        text = _em().multi_platform_module(texts, f"jit_{name}")
        blob = _em().serialize_module(text, result_info=info)
    in_avals = [a.strip_weak_type() for a in logical.in_avals]
    out_avals = list(logical.out_avals)
    closed = logical

    def get_vjp(primal: Exported) -> Exported:
        def flat_primal(*xs):
            return list(ir.eval_jaxpr(closed.jaxpr, closed.consts, *xs))
        return _export_vjp(flat_primal, name, primal, platforms, disabled_checks)

    return Exported(
        fun_name=name, in_tree=in_tree, in_avals=in_avals, out_tree=out_tree,
        out_avals=out_avals, nr_devices=1, platforms=platforms, ordered_effects=(),
        unordered_effects=(), disabled_safety_checks=disabled_checks,
        mlir_module_serialized=blob, calling_convention_version=_CALLING_CONVENTION_VERSION,
        module_kept_var_idx=tuple(range(len(in_avals))), uses_global_constants=False,
        _get_vjp=get_vjp)

def _export_vjp(flat_primal, name, primal, platforms, disabled_checks, mesh=None) -> Exported:
    """Export ``(*primals, *out_cts) -> in_cts`` of ``flat_primal`` (JAX's convention).

    Cotangents of integer/bool values are float0 in the avals and ``i1`` tensors in the
    module (JAX's physical representation of float0)."""
    n = len(primal.in_avals)
    in_float = [_is_float(a.dtype) for a in primal.in_avals]
    out_float = [_is_float(a.dtype) for a in primal.out_avals]

    def fun_vjp(*args_and_cts):
        primals, cts = args_and_cts[:n], args_and_cts[n:]
        _, pullback = _vjp(flat_primal, *primals)
        cts = [c if f else np.zeros(np.shape(c), float0) for c, f in zip(cts, out_float)]
        in_cts = list(pullback(list(cts)))
        return [c if f else xnp.zeros(np.shape(x), bool)
                for c, f, x in zip(in_cts, in_float, primals)]
    fun_vjp.__name__ = f"vjp_{name}"

    def spec(a, is_float):
        dt = a.dtype if is_float else np.dtype(bool)
        return ShapeDtypeStruct(a.shape, dt)
    specs = [spec(a, True) for a in primal.in_avals] + \
            [spec(a, f) for a, f in zip(primal.out_avals, out_float)]
    if mesh is None:
        jitted = jit(fun_vjp)
    else:      # a sharded primal: the VJP takes the primal's (in + out) shardings, returns
        # cotangents laid out as the primal inputs (JAX's convention)
        def on(s):
            return _on_mesh(s, mesh)
        jitted = jit(fun_vjp, in_shardings=tuple(
            on(s) for s in primal._in_named_shardings + primal._out_named_shardings),
            out_shardings=[on(s) for s in primal._in_named_shardings])
    exp = export(jitted, platforms=platforms, disabled_checks=disabled_checks)(*specs)
    exp.in_avals = tuple(list(exp.in_avals[:n]) + [
        a if f else ShapedArray(a.shape, float0) for a, f in zip(exp.in_avals[n:], out_float)])
    exp.out_avals = tuple(a if f else ShapedArray(a.shape, float0)
                          for a, f in zip(exp.out_avals, in_float))
    return exp

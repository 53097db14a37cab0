"""StableHLO portable artifacts for ``xform.export`` (jaxlib, imported lazily).

* ``serialize_module(text, ...)``: our StableHLO text -> versioned VHLO
  bytecode (``serialize_portable_artifact``, targeting the StableHLO version
  that is four weeks old, as JAX does), with JAX's module attributes.
* ``module_text(blob)``: the bytecode back to StableHLO text.
* ``specialize(blob, in_types, ...)``: an exported module (ours or JAX's,
  possibly shape polymorphic, possibly multi-platform) specialised to concrete
  argument types: a wrapper ``main`` converts the concrete arguments to the
  exported types, passes the platform index, calls the exported ``main``;
  jaxlib's shape refinement then resolves every dynamic shape and checks the
  shape assertions (with the exporter's error messages).  Returns the refined
  module's top-level ops as generic-syntax text with renamed symbols, ready
  to be inlined into a module we lower, and the result types.
* the lowering rule of ``call_exported`` (registered by name; inlines the
  specialised functions and emits a ``func.call``).

Importing this module imports nothing from jax/jaxlib.
"""
from __future__ import annotations

import functools
import io
import threading

from xform._src.primitives.call_exported import call_exported_p
from xform._src.lowering.mlir import register
from xform._src.interpreters import interrupts

_lock = threading.Lock()


_sdy_done = []


def _ctx():
    """The runtime's MLIR context, with the Shardy (``sdy``) dialect registered too:
    sharded exports carry ``sdy.mesh`` / ``sdy.sharding`` (JAX's format)."""
    from xform._src.lowering.runtime import _mlir_context  # deferred: keeps `import xform` light
    ctx = _mlir_context()
    if not _sdy_done:
        sdy = interrupts.import_module("jaxlib.mlir.dialects.sdy")
        sdy.register_dialect(ctx)
        _sdy_done.append(True)
    return ctx


def _ir():
    return interrupts.import_module("jaxlib.mlir.ir")


def target_version() -> str:
    from jaxlib.mlir.dialects import stablehlo  # deferred: keeps `import xform` light
    return str(stablehlo.get_version_from_compatibility_requirement(
        stablehlo.StablehloCompatibilityRequirement.WEEK_4))


def _bytecode(module) -> bytes:
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return buf.getvalue()


def _call_text(callee, arg_names, in_types, out_types, indent="    "):
    """``func.call`` + ``func.return`` lines (generic syntax)."""
    res = ", ".join(out_types)
    ins = ", ".join(in_types)
    n = len(out_types)
    if n == 0:
        return [f'{indent}"func.call"({", ".join(arg_names)}) {{callee = @{callee}}} '
                f': ({ins}) -> ()', f'{indent}"func.return"() : () -> ()']
    rets = ["%r"] if n == 1 else [f"%r#{i}" for i in range(n)]
    lhs = "%r" if n == 1 else f"%r:{n}"
    return [f'{indent}{lhs} = "func.call"({", ".join(arg_names)}) {{callee = @{callee}}} '
            f': ({ins}) -> ({res})',
            f'{indent}"func.return"({", ".join(rets)}) : ({res}) -> ()']


def _add_platform_index(text: str) -> str:
    """Wrap ``main`` so that it takes a leading ``i32`` platform index (multi-platform
    calling convention); our lowering is the same on every platform, so it is unused."""
    ir = _ir()
    module = ir.Module.parse(text)
    old_main = ir.SymbolTable(module.operation)["main"]
    ins, outs = _func_types(old_main)

    def attrs(name, n):     # the argument / result attributes (e.g. shardings) of main
        if name not in old_main.attributes:
            return [""] * n
        return ["" if str(a) == "{}" else " " + str(a) for a in ir.ArrayAttr(
            old_main.attributes[name])]
    in_attrs, out_attrs = attrs("arg_attrs", len(ins)), attrs("res_attrs", len(outs))
    head = "func.func public @main("
    if text.count(head) != 1:
        raise ValueError("cannot find the public main function of the lowered module")
    text = text.replace(head, "func.func private @_wrapped_jax_export_main(", 1)
    args = ['%plat: tensor<i32> {jax.global_constant = "_platform_index"}'] + \
        [f"%a{i}: {t}{a}" for i, (t, a) in enumerate(zip(ins, in_attrs))]
    res = [f"{t}{a}" for t, a in zip(outs, out_attrs)]
    body = _call_text("_wrapped_jax_export_main", [f"%a{i}" for i in range(len(ins))], ins, outs)
    main = (f"  func.func public @main({', '.join(args)}) -> ({', '.join(res)}) {{\n"
            + "\n".join(body) + "\n  }\n")
    end = text.rstrip().rfind("}")
    return text[:end] + main + text[end:]


def multi_platform_module(texts, name: str) -> str:
    """One module for several platforms whose lowerings differ (JAX's convention):
    ``main(%platform_index: i32, *args)`` runs a ``stablehlo.case`` over the
    per-platform programs (each lowering's functions renamed ``_xf_p{i}_*``)."""
    ir = _ir()
    ops, sig = [], None
    with _lock, _ctx():
        for i, text in enumerate(texts):
            m = ir.Module.parse(text)
            names = [ir.StringAttr(op.attributes["sym_name"]).value
                     for op in m.body.operations if "sym_name" in op.attributes]
            for n in names:
                ir.SymbolTable.replace_all_symbol_uses(n, f"_xf_p{i}_{n}", m.operation)
            symtab = ir.SymbolTable(m.operation)
            for op in list(m.body.operations):
                if "sym_name" in op.attributes:
                    n = ir.StringAttr(op.attributes["sym_name"]).value
                    symtab.set_symbol_name(op, f"_xf_p{i}_{n}")
                    if op.name == "func.func":
                        op.attributes["sym_visibility"] = ir.StringAttr.get("private")
                    if n == "main":
                        s_ = _func_types(op)
                        if sig is not None and s_ != sig:
                            raise ValueError("the per-platform lowerings have different "
                                             "signatures")
                        sig = s_
            ops += [op.get_asm(print_generic_op_form=True, enable_debug_info=False)
                    for op in m.body.operations]
    ins, outs = sig
    args = ['%plat: tensor<i32> {jax.global_constant = "_platform_index"}'] + \
        [f"%a{i}: {t}" for i, t in enumerate(ins)]
    regions = []
    for i in range(len(texts)):
        call = _call_text(f"_xf_p{i}_main", [f"%a{k}" for k in range(len(ins))], ins, outs,
                          indent="        ")
        ret = call[1].replace('"func.return"', '"stablehlo.return"')
        regions.append("{\n" + call[0] + "\n" + ret + "\n      }")
    res = ", ".join(outs)
    n = len(outs)
    lhs = "" if n == 0 else ("%c = " if n == 1 else f"%c:{n} = ")
    rets = [] if n == 0 else (["%c"] if n == 1 else [f"%c#{k}" for k in range(n)])
    main = (f"  func.func public @main({', '.join(args)}) -> ({res}) {{\n"
            f'    {lhs}"stablehlo.case"(%plat) ({", ".join(regions)}) : (tensor<i32>) -> ({res})\n'
            f'    "func.return"({", ".join(rets)}) : ({res}) -> ()\n  }}\n')
    mod = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return (f"module @{mod} attributes {{mhlo.num_partitions = 1 : i32, "
            f"mhlo.num_replicas = 1 : i32}} {{\n{main}" + "\n".join("  " + o for o in ops)
            + "\n}\n")


def serialize_module(text: str, *, uses_shape_polymorphism: bool = False,
                     result_info=None, platform_index_arg: bool = False,
                     constraints=()) -> bytes:
    """VHLO bytecode of the StableHLO module ``text`` (a portable artifact)."""
    from jaxlib import _jax  # deferred: keeps `import xform` light
    ir = _ir()
    with _lock, _ctx():
        if platform_index_arg:
            text = _add_platform_index(text)
        module = ir.Module.parse(text)
        module.operation.attributes["jax.uses_shape_polymorphism"] = \
            ir.BoolAttr.get(bool(uses_shape_polymorphism))
        if constraints:     # symbolic constraints (JAX does not serialize them; we keep them)
            module.operation.attributes["xform.symbolic_constraints"] = ir.ArrayAttr.get(
                [ir.StringAttr.get(f"{d}\n{t}") for d, t in constraints])
        if result_info is not None:
            main = ir.SymbolTable(module.operation)["main"]
            attrs = list(ir.ArrayAttr(main.result_attrs)) if "res_attrs" in main.attributes \
                else [ir.DictAttr.get({}) for _ in result_info]
            new = []
            for a, info in zip(attrs, result_info):
                d = {n.name: n.attr for n in ir.DictAttr(a)}
                d["jax.result_info"] = ir.StringAttr.get(info)
                new.append(ir.DictAttr.get(d))
            main.attributes["res_attrs"] = ir.ArrayAttr.get(new)
        module.operation.verify()
        # a sharded module keeps its Shardy ops in the artifact (JAX's mixed serialization)
        sharded = "sdy.mesh" in text
        blob = bytes(_jax.mlir.serialize_portable_artifact(_bytecode(module), target_version(),
                                                           sharded))
    from xform._src.lowering import export_check  # deferred: keeps `import xform` light
    export_check.mark_trusted(blob)       # made here: deserializing it needs no check
    return blob


def hlo_sharding(axis_sizes, axis_names, spec, ndim):
    """jaxlib's ``HloSharding`` of a PartitionSpec ``spec`` (entries None / name / tuple of
    names) over an abstract mesh, for a rank-``ndim`` array (what JAX computes for the
    shardings of a deserialized Exported)."""
    from jax._src.mesh import AbstractMesh  # deferred: keeps `import xform` light
    from jax._src.named_sharding import NamedSharding  # deferred: keeps `import xform` light
    from jax._src.partition_spec import PartitionSpec  # deferred: keeps `import xform` light
    mesh = AbstractMesh(tuple(axis_sizes), tuple(axis_names))
    return NamedSharding(mesh, PartitionSpec(*spec))._to_xla_hlo_sharding(ndim)


def _deserialize(blob):
    from jaxlib import _jax  # deferred: keeps `import xform` light
    try:
        return _jax.mlir.deserialize_portable_artifact(bytes(blob), context=_ctx())
    except Exception as e:
        raise ValueError(f"cannot read the exported StableHLO module: {e}") from None


def module_text(blob, *, debug_info: bool = False) -> str:
    """The StableHLO text of a serialized module."""
    with _lock, _ctx():
        return _deserialize(blob).operation.get_asm(enable_debug_info=debug_info)


def module_constraints(blob):
    """[(lhs - rhs, text)] recorded by ``serialize_module(constraints=...)``."""
    ir = _ir()
    with _lock, _ctx():
        attrs = _deserialize(blob).operation.attributes
        if "xform.symbolic_constraints" not in attrs:
            return []
        out = []
        for a in ir.ArrayAttr(attrs["xform.symbolic_constraints"]):
            d, t = ir.StringAttr(a).value.split("\n", 1)
            out.append((d, t))
        return out


def _func_types(op):
    ir = _ir()
    ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
    return [str(t) for t in ft.inputs], [str(t) for t in ft.results]


_counter = [0]


@functools.lru_cache(maxsize=256)
def specialize(blob: bytes, in_types: tuple, platform_index):
    """Refine the exported module ``blob`` for arguments of types ``in_types``.

    ``platform_index``: None, or the value of the leading platform-index
    argument (multi-platform exports).  Returns ``(ops, main_symbol,
    result_types)``: the refined module's top-level operations (generic
    syntax, symbols prefixed so they cannot clash with ours) and its entry.
    """
    from jaxlib import _jax  # deferred: keeps `import xform` light
    ir = _ir()
    with _lock, _ctx():
        module = _deserialize(blob)
        symtab = ir.SymbolTable(module.operation)
        main = symtab["main"]
        exp_in, exp_out = _func_types(main)
        n_plat = 0 if platform_index is None else 1
        if len(exp_in) != len(in_types) + n_plat:
            raise ValueError(
                f"the exported module's main takes {len(exp_in)} arguments "
                f"({', '.join(exp_in)}) but it is called with {len(in_types)} array arguments"
                + (" and a platform index" if n_plat else "")
                + "; exports with ordered effects (token arguments) are not supported.")
        if any(t.startswith("!stablehlo.token") for t in exp_in):
            raise ValueError("calling an Exported with ordered effects (token arguments) "
                             "is not supported")
        _counter[0] += 1
        inner = f"xf_exported_{_counter[0]}_main"
        main.attributes["sym_visibility"] = ir.StringAttr.get("private")
        ir.SymbolTable.replace_all_symbol_uses("main", inner, module.operation)
        symtab.set_symbol_name(main, inner)
        body_ops = [op.get_asm(print_generic_op_form=True, enable_debug_info=False)
                    for op in module.body.operations]
        lines, args, call_args = [], [], []
        if n_plat:
            lines.append(f'    %plat = "stablehlo.constant"() {{value = dense<{int(platform_index)}> '
                         f': {exp_in[0]}}} : () -> {exp_in[0]}')
            call_args.append("%plat")
        for i, (t, et) in enumerate(zip(in_types, exp_in[n_plat:])):
            args.append(f"%a{i}: {t}")
            if t == et:
                call_args.append(f"%a{i}")
            else:
                lines.append(f'    %c{i} = "stablehlo.convert"(%a{i}) : ({t}) -> {et}')
                call_args.append(f"%c{i}")
        res = ", ".join(exp_out)
        lines += _call_text(inner, call_args, exp_in, exp_out)
        wrapper = ("module @xf_specialize attributes {jax.uses_shape_polymorphism = true, "
                   "mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n"
                   f"  func.func public @main({', '.join(args)}) -> ({res}) {{\n"
                   + "\n".join(lines) + "\n  }\n" + "\n".join(body_ops) + "\n}\n")
        try:
            wm = ir.Module.parse(wrapper)
        except Exception as e:
            raise ValueError(f"the exported module cannot be called with arguments of types "
                             f"({', '.join(in_types)}): {e}") from None
        try:
            refined = _jax.mlir.refine_polymorphic_shapes(
                _bytecode(wm), enable_shape_assertions=True, validate_static_shapes=True)
        except Exception as e:
            raise ValueError(_refine_error(str(e))) from None
        rm = ir.Module.parse(refined)
        rsym = ir.SymbolTable(rm.operation)
        tag = f"xf_x{_counter[0]}_"
        ops = []
        names = [ir.StringAttr(op.attributes["sym_name"]).value for op in rm.body.operations
                 if "sym_name" in op.attributes]
        for n in names:
            ir.SymbolTable.replace_all_symbol_uses(n, tag + n, rm.operation)
        for op in list(rm.body.operations):
            if "sym_name" in op.attributes:
                rsym.set_symbol_name(op, tag + ir.StringAttr(op.attributes["sym_name"]).value)
            if op.name == "func.func":
                op.attributes["sym_visibility"] = ir.StringAttr.get("private")
        entry = next(op for op in rm.body.operations if "sym_name" in op.attributes
                     and ir.StringAttr(op.attributes["sym_name"]).value == tag + "main")
        _, out_types = _func_types(entry)
        for op in rm.body.operations:
            ops.append(op.get_asm(print_generic_op_form=True, enable_debug_info=False))
        return tuple(ops), tag + "main", tuple(out_types)


def _refine_error(msg: str) -> str:
    """The shape-assertion message of a failed refinement (JAX's text), if any."""
    i = msg.find("Input shapes do not match")
    if i >= 0:
        text = msg[i:]
        for stop in ("\n", " @ "):
            j = text.find(stop)
            if j > 0:
                text = text[:j]
        return text
    return f"Error refining shapes of the exported module: {msg}"


def _ensure_kernels(platform):
    """JAX's exports call jaxlib's LAPACK / cusolver FFI kernels by name: register them
    with XLA (as our own linear-algebra lowering does) before compiling such a call."""
    from xform._src.lowering.rules_linalg_decomp import _ensure_targets  # deferred: keeps `import xform` light
    p = (platform or "cpu").lower()
    _ensure_targets({"gpu": "cuda", "host": "cpu"}.get(p, p))


def _check_devices(ctx, exported):
    """JAX's rule: an export for N > 1 devices runs only in a program partitioned over N
    devices (a single-device export runs anywhere)."""
    mesh = getattr(ctx.module, "spmd_mesh", None)
    n = mesh.size if mesh is not None else 1
    if exported.nr_devices != 1 and n != exported.nr_devices:
        raise ValueError(f"Function {exported.fun_name} was exported for "
                         f"{exported.nr_devices} devices and is called in a context with {n} "
                         "devices, which is not allowed.")
    if exported.nr_devices != 1 and getattr(ctx.module, "manual_mesh", None) is not None:
        raise ValueError(f"Function {exported.fun_name} was exported for "
                         f"{exported.nr_devices} devices and cannot be called inside shard_map "
                         "(where each device runs its own shard)")
    return mesh


def _mesh_symbol(ctx, amesh):
    """A module-level ``sdy.mesh`` with the axes of the abstract mesh ``amesh``."""
    mod = ctx.module
    key = ("sdy_mesh", amesh.axis_sizes, amesh.axis_names)
    sym = mod.func_names.get(key)
    if sym is None:
        outer = getattr(mod, "spmd_mesh", None)
        if outer is not None and tuple(outer.axis_names) == amesh.axis_names and \
                tuple(outer.axis_sizes) == amesh.axis_sizes:
            sym = "mesh"                    # the program's own mesh
        else:
            sym = f"xf_export_mesh_{len(mod.func_names)}"
            axes = ", ".join(f'"{n}"={s}' for n, s in zip(amesh.axis_names, amesh.axis_sizes))
            mod.functions.append(f"  sdy.mesh @{sym} = <[{axes}]>")
        mod.func_names[key] = sym
    return sym


def _constrain(ctx, names, avals, shardings):
    """``sdy.sharding_constraint`` of each value to its export sharding (JAX applies the
    export's in/out shardings around the call the same way)."""
    from xform._src.lowering.spmd import dims_text  # deferred: keeps `import xform` light
    out = []
    for x, a, s in zip(names, avals, shardings):
        if s is None or s.mesh.empty:
            out.append(x)
            continue
        sym = _mesh_symbol(ctx, s.mesh)
        attr = f"sharding = #sdy.sharding<@{sym}, {dims_text(tuple(s.spec), len(a.shape))}>"
        out.append(ctx.op1("sdy.sharding_constraint", [x], ctx.types[x], attr))
    return out


@register(call_exported_p)
def _call_exported_lowering(ctx, eqn, *args):
    exported = eqn.params["exported"]
    mesh = _check_devices(ctx, exported)
    kept = exported.module_kept_var_idx
    args = [args[i] for i in kept]     # unused inputs were dropped
    in_types = tuple(ctx.types[a] for a in args)
    ops, entry, out_types = specialize(exported.mlir_module_serialized, in_types,
                                       exported._platform_index(ctx.module.platform))
    mod = ctx.module
    key = ("call_exported", exported.mlir_module_serialized, in_types, ctx.module.platform)
    if any("custom_call" in o for o in ops):
        _ensure_kernels(ctx.module.platform)
    if key not in mod.func_names:
        mod.func_names[key] = entry
        mod.functions.extend("  " + o for o in ops)
    from xform._src.lowering.mlir import aval_type  # deferred: keeps `import xform` light
    want = [aval_type(a) for a in ctx.out_avals]
    if list(out_types) != want:
        raise ValueError(f"the exported function {exported.fun_name!r} returns "
                         f"({', '.join(out_types)}) for these arguments, but "
                         f"({', '.join(want)}) was expected")
    sharded = mesh is not None and getattr(ctx.module, "manual_mesh", None) is None
    if sharded:
        in_sh = [exported._in_named_shardings[i] for i in kept]
        args = _constrain(ctx, args, [eqn.invars[i].aval for i in kept], in_sh)
    outs = ctx.op("func.call", list(args), list(out_types), f"callee = @{entry}")
    if sharded:
        outs = _constrain(ctx, outs, ctx.out_avals, exported._out_named_shardings)
    return outs


# ----------------------------------------------------------------- compiler IR objects


def stablehlo_module(text: str):
    """The StableHLO ``text`` as an MLIR module object (``jaxlib.mlir.ir.Module``), what
    ``Lowered.compiler_ir('stablehlo')`` returns in JAX."""
    with _ctx():
        return _ir().Module.parse(text)


def hlo_computation(text: str):
    """The StableHLO ``text`` converted to an XLA HLO computation (``as_hlo_text()``,
    ``as_hlo_module()``, ...), what ``Lowered.compiler_ir('hlo')`` returns in JAX."""
    try:
        from jaxlib import _jax  # deferred: keeps `import xform` light
    except ImportError:          # older jaxlib layouts
        from jaxlib import xla_extension as _jax  # deferred: keeps `import xform` light
    return _jax.mlir.mlir_module_to_xla_computation(text, use_tuple_args=False)

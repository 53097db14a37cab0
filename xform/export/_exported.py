"""``Exported``: an exported function (its StableHLO and calling convention), its
serialization (``serialize``/``deserialize``, with the artifact's structure and module
checked before use) and calling it (``call``: eagerly, under ``jit``, ``grad`` through
the exported VJP, ``vmap``)."""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import core, ir
from xform._src.interpreters import tree_util as _tu
from xform._src.interpreters.core import ShapedArray
from xform._src.lowering import export_flatbuf as _fb
from xform._src.primitives.call_exported import call_exported_p
from xform import random as _random
from xform._custom_derivatives import custom_vjp
from xform._src import lowering
from xform._src.interpreters import staging
from xform.export._serialization import (
    DisabledSafetyCheck, _FLOAT0, _aval_from_data, _aval_to_data, _canonical_platform,
    _check_from_data, _check_to_data, _em, _export_mesh, _is_float, _is_key_dtype,
    _on_mesh, _physical, _sharding_from_data, _sharding_to_data, _tree_from_data,
    _tree_to_data, _xs, maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version,
)
from xform.export._shape_poly import (
    SymbolicScope, _DimExpr, _eval_mono, _is_symbolic, _parse_dim, _shape_str,
)


class Exported:
    """An exported function: its StableHLO (serialized) and calling convention.

    Fields as in ``jax.export.Exported``: ``fun_name``, ``in_tree``, ``in_avals``,
    ``out_tree``, ``out_avals``, ``in_shardings_hlo``, ``out_shardings_hlo``,
    ``nr_devices``, ``platforms``, ``ordered_effects``, ``unordered_effects``,
    ``disabled_safety_checks``, ``mlir_module_serialized``,
    ``calling_convention_version``, ``module_kept_var_idx``, ``uses_global_constants``.
    """

    def __init__(self, *, fun_name, in_tree, in_avals, out_tree, out_avals, nr_devices,
                 platforms, ordered_effects, unordered_effects, disabled_safety_checks,
                 mlir_module_serialized, calling_convention_version, module_kept_var_idx,
                 uses_global_constants, in_shardings_hlo=None, out_shardings_hlo=None,
                 _get_vjp=None, _in_named_shardings=None, _out_named_shardings=None):
        self.fun_name = fun_name
        self.in_tree = in_tree
        self.in_avals = tuple(in_avals)
        self.out_tree = out_tree
        self.out_avals = tuple(out_avals)
        self._in_named_shardings = tuple(_in_named_shardings or (None,) * len(self.in_avals))
        self._out_named_shardings = tuple(_out_named_shardings or (None,) * len(self.out_avals))
        self._in_hlo = None if in_shardings_hlo is None else tuple(in_shardings_hlo)
        self._out_hlo = None if out_shardings_hlo is None else tuple(out_shardings_hlo)
        self.nr_devices = int(nr_devices)
        self.platforms = tuple(platforms)
        self.ordered_effects = tuple(ordered_effects)
        self.unordered_effects = tuple(unordered_effects)
        self.disabled_safety_checks = tuple(disabled_safety_checks)
        self.mlir_module_serialized = bytes(mlir_module_serialized)
        self.calling_convention_version = int(calling_convention_version)
        self.module_kept_var_idx = tuple(module_kept_var_idx)
        self.uses_global_constants = bool(uses_global_constants)
        self._get_vjp = _get_vjp
        self._vjp_cache = None
        self._call_fn = None


    # the calling convention of the ``call_exported`` primitive (primitives/call_exported.py)
    def call_abstract_eval(self, in_avals):
        return _call_abstract_eval(in_avals, self)

    def call_eager(self, args):
        return _call_impl(args, self)

    def __str__(self):
        return f"Exported(fun_name={self.fun_name}, ...)"

    __repr__ = __str__

    def mlir_module(self) -> str:
        """The StableHLO module as text."""
        return _em().module_text(self.mlir_module_serialized)

    @property
    def in_shardings_hlo(self):
        """The input shardings as jaxlib ``HloSharding``s (None: unspecified), as JAX gives
        them for a deserialized Exported."""
        if self._in_hlo is None:
            self._in_hlo = _hlo_shardings(self._in_named_shardings, self.in_avals)
        return self._in_hlo

    @property
    def out_shardings_hlo(self):
        """The output shardings as jaxlib ``HloSharding``s (None: unspecified)."""
        if self._out_hlo is None:
            self._out_hlo = _hlo_shardings(self._out_named_shardings, self.out_avals)
        return self._out_hlo

    def in_shardings_jax(self, mesh):
        """The input shardings as ``NamedSharding``s over ``mesh`` (a mesh with the axis
        names and sizes of the export's), for ``device_put`` or ``jit``; None: unspecified."""
        return tuple(_on_mesh(s, mesh) for s in self._in_named_shardings)

    def out_shardings_jax(self, mesh):
        """The output shardings as ``NamedSharding``s over ``mesh`` (see in_shardings_jax)."""
        return tuple(_on_mesh(s, mesh) for s in self._out_named_shardings)

    def has_vjp(self) -> bool:
        return self._get_vjp is not None

    def vjp(self) -> "Exported":
        """The Exported of the VJP: ``(*primals_flat, *out_cts_flat) -> in_cts_flat``."""
        if self._get_vjp is None:
            raise ValueError(
                "No VJP is available for this Exported: it was deserialized from bytes "
                "serialized with vjp_order=0. Serialize with "
                "exported.serialize(vjp_order=1) to differentiate the deserialized function.")
        if self._vjp_cache is None:
            self._vjp_cache = self._get_vjp(self)
        return self._vjp_cache

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """JAX's FlatBuffer bytes; ``vjp_order`` levels of VJPs are included."""
        return bytearray(_fb.serialize_exported(_to_data(self), vjp_order))

    def call(self, *args, **kwargs):
        """Run the exported function (usable eagerly, under jit, grad and vmap)."""
        if self._call_fn is None:
            self._call_fn = call(self)
        return self._call_fn(*args, **kwargs)

    def _symbolic_constraints(self):
        """[(lhs - rhs as a dimension expression, text)]: the ``>=`` constraints of the
        input shapes' scopes, else those recorded in the module (xform's artifacts)."""
        if getattr(self, "_constraints", None) is None:
            found, seen = [], set()
            for a in self.in_avals:
                for d in a.shape:
                    sc = getattr(d, "scope", None)
                    if isinstance(d, _DimExpr) and sc is not None and id(sc) not in seen:
                        seen.add(id(sc))
                        found += [(diff, text) for op, diff, text in sc._parsed if op == ">="]
            if not found and self.uses_global_constants:
                found = [(diff, text) for diff, text in
                         _em().module_constraints(self.mlir_module_serialized)]
            self._constraints = found
        return self._constraints

    def _platform_index(self, lowering_platform):
        """The value of the platform-index argument for ``lowering_platform`` (None if the
        module has no such argument); an error if the platform was not exported."""
        p = _canonical_platform(lowering_platform)
        if p not in self.platforms and DisabledSafetyCheck.platform() not in \
                self.disabled_safety_checks:
            raise ValueError(f"Function '{self.fun_name}' was exported for platforms "
                             f"'{self.platforms}' but it is used on '{(p,)}'.")
        if len(self.platforms) <= 1:
            return None
        return self.platforms.index(p) if p in self.platforms else 0

def _hlo_shardings(named, avals):
    out = []
    for s, a in zip(named, avals):
        if s is None:
            out.append(None)
        else:
            out.append(_em().hlo_sharding(s.mesh.axis_sizes, s.mesh.axis_names, tuple(s.spec),
                                          len(_physical(a).shape)))
    return tuple(out)

def _to_data(e: Exported) -> dict:
    for a in e.in_avals + e.out_avals:
        if not isinstance(a, ShapedArray):
            raise ValueError(f"cannot serialize an Exported with aval {a!r}")
    return {
        "fun_name": e.fun_name, "in_tree": _tree_to_data(e.in_tree),
        "out_tree": _tree_to_data(e.out_tree),
        "in_avals": [_aval_to_data(a) for a in e.in_avals],
        "out_avals": [_aval_to_data(a) for a in e.out_avals],
        "nr_devices": e.nr_devices, "platforms": list(e.platforms),
        "ordered_effects": [str(x) for x in e.ordered_effects],
        "unordered_effects": [str(x) for x in e.unordered_effects],
        "disabled_checks": [_check_to_data(c) for c in e.disabled_safety_checks],
        "mlir_module_serialized": e.mlir_module_serialized,
        "calling_convention_version": e.calling_convention_version,
        "module_kept_var_idx": list(e.module_kept_var_idx),
        "uses_global_constants": e.uses_global_constants,
        "in_shardings": [None if x is None else _sharding_to_data(x) for x in e._in_named_shardings],
        "out_shardings": [None if x is None else _sharding_to_data(x) for x in e._out_named_shardings],
        "vjp": (lambda: _to_data(e.vjp())) if e.has_vjp() else None,
    }

def _from_data(d: dict) -> Exported:
    v = d["calling_convention_version"]
    if not (minimum_supported_calling_convention_version <= v
            <= maximum_supported_calling_convention_version):
        raise ValueError(f"The exported function uses calling convention version {v}, which "
                         "is outside the range of supported versions "
                         f"[{minimum_supported_calling_convention_version}.."
                         f"{maximum_supported_calling_convention_version}]")
    if d["ordered_effects"]:
        raise ValueError(f"the exported function has ordered effects {d['ordered_effects']}, "
                         "which xform cannot call")
    scope = SymbolicScope()
    in_avals = [_aval_from_data(a, scope) for a in d["in_avals"]]
    out_avals = [_aval_from_data(a, scope) for a in d["out_avals"]]
    vjp = d["vjp"]
    return Exported(
        fun_name=d["fun_name"], in_tree=_tree_from_data(d["in_tree"]), in_avals=in_avals,
        out_tree=_tree_from_data(d["out_tree"]), out_avals=out_avals,
        nr_devices=d["nr_devices"] or 1, platforms=d["platforms"],
        ordered_effects=d["ordered_effects"], unordered_effects=d["unordered_effects"],
        disabled_safety_checks=[_check_from_data(*c) for c in d["disabled_checks"]],
        mlir_module_serialized=d["mlir_module_serialized"],
        calling_convention_version=v, module_kept_var_idx=d["module_kept_var_idx"],
        uses_global_constants=d["uses_global_constants"],
        _in_named_shardings=[None if x is None else _sharding_from_data(x)
                             for x in d.get("in_shardings") or ()],
        _out_named_shardings=[None if x is None else _sharding_from_data(x)
                              for x in d.get("out_shardings") or ()],
        _get_vjp=(lambda _: _checked(lambda: vjp())) if vjp is not None else None)

def _check_module(exp: Exported) -> None:
    """The embedded module decodes and verifies (in a child process, cached by hash:
    ``lowering/export_check.py``) and its ``main`` matches the calling convention."""
    from xform._src.lowering import export_check  # deferred: keeps `import xform` light
    ins, outs = export_check.check_module(exp.mlir_module_serialized)
    if ins is None:                   # a module this process serialized
        return
    n_plat = 1 if len(exp.platforms) > 1 else 0
    n_tok = len(exp.ordered_effects)
    want_in = n_plat + n_tok + len(exp.module_kept_var_idx)
    want_out = n_tok + len(exp.out_avals)
    if len(ins) != want_in or len(outs) != want_out:
        raise ValueError(f"the exported module's main takes {len(ins)} arguments and returns "
                         f"{len(outs)} results, but the calling convention says {want_in} "
                         f"and {want_out} ({len(exp.module_kept_var_idx)} kept arguments of "
                         f"{len(exp.in_avals)}, {len(exp.platforms)} platforms)")
    kept = [exp.in_avals[i] for i in exp.module_kept_var_idx]
    for what, avals, types in (("argument", kept, ins[n_plat + n_tok:]),
                               ("result", exp.out_avals, outs[n_tok:])):
        for i, (a, t) in enumerate(zip(avals, types)):
            want = _mlir_tensor_type(a)
            if want is not None and want != _strip_encoding(t):
                raise ValueError(f"the exported module's main has {what} {i} of type {t}, but "
                                 f"the Exported says {a.str_short()} ({want})")

_MLIR_ELEMENT = {"bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
                 "uint8": "ui8", "uint16": "ui16", "uint32": "ui32", "uint64": "ui64",
                 "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
                 "complex64": "complex<f32>", "complex128": "complex<f64>"}

def _mlir_tensor_type(aval):
    """The MLIR type a static-shaped aval of a common dtype lowers to (None: not checked)."""
    el = _MLIR_ELEMENT.get(getattr(aval.dtype, "name", None)) \
        if isinstance(aval.dtype, np.dtype) else None
    if el is None or not all(type(d) is int for d in aval.shape):
        return None
    return "tensor<" + "".join(f"{d}x" for d in aval.shape) + el + ">"

def _strip_encoding(t):
    """``tensor<8xf32, #enc>`` -> ``tensor<8xf32>``."""
    if t.startswith("tensor<") and ", " in t:
        depth = 0
        for j, c in enumerate(t):
            depth += c == "<"
            depth -= c == ">"
            if c == "," and depth == 1:
                return t[:j] + ">"
    return t

_BAD_DATA_ERRORS = (TypeError, KeyError, IndexError, AttributeError, RecursionError,
                    OverflowError, UnicodeDecodeError, MemoryError, ArithmeticError)

def _checked(read):
    """``read()`` (the plain data of a serialized Exported) as an Exported whose embedded
    module has been checked; any malformation a ValueError."""
    try:
        exp = _from_data(read())
    except ValueError:
        raise
    except _BAD_DATA_ERRORS as e:
        raise ValueError(f"not a serialized Exported (inconsistent data: "
                         f"{type(e).__name__}: {str(e)[:200]})") from None
    _check_module(exp)
    return exp

def deserialize(blob) -> Exported:
    """An Exported from bytes written by ``Exported.serialize`` or ``jax.export``.

    Untrusted bytes are refused with a ValueError here, not later: the FlatBuffer
    structure is bounds-checked, the fields cross-checked, and the embedded StableHLO
    module is decoded and verified in a separate process (once per distinct module per
    process; modules this process exported need no check), so corrupted or crafted
    bytes cannot crash or corrupt this process.  A valid module may still call any
    custom call jaxlib knows: only run artifacts whose source you trust.
    See docs/reliability.md.
    """
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"deserialize() expects bytes or bytearray, got {type(blob).__name__}")
    return _checked(lambda: _fb.deserialize_exported(blob))

def _pp_arg(exported, arg_idx, dim_idx=None):
    paths = [_tu.keystr(p) for p, _ in _tu.tree_flatten_with_path(
        exported.in_tree.unflatten([0] * exported.in_tree.num_leaves))[0]]
    p = paths[arg_idx] if arg_idx < len(paths) else f"[{arg_idx}]"
    # JAX prints args[i] / kwargs['k'] for the ((args), {kwargs}) tree
    if p.startswith("[0]"):
        p = "args" + p[3:]
    elif p.startswith("[1]"):
        p = "kwargs" + p[3:]
    return p + ("" if dim_idx is None else f".shape[{dim_idx}]")

def _call_abstract_eval(in_avals, exported):
    if len(in_avals) != len(exported.in_avals):
        raise ValueError(f"the exported function {exported.fun_name!r} takes "
                         f"{len(exported.in_avals)} arrays, got {len(in_avals)}")
    symbolic = False
    for i, (exp, act) in enumerate(zip(exported.in_avals, in_avals)):
        exp = _physical(exp)
        if len(exp.shape) != len(act.shape):
            raise ValueError(f"Rank mismatch for {_pp_arg(exported, i)}: expected "
                             f"{_shape_str(exp.shape)} and called with {_shape_str(act.shape)}")
        if _physical(exp).dtype != _physical(act).dtype:
            raise ValueError(f"Dtype mismatch for {_pp_arg(exported, i)}: expected {exp.dtype} "
                             f"and called with {act.dtype}")
        for k, d in enumerate(exp.shape):
            if isinstance(d, _DimExpr):
                symbolic = True
            elif d != act.shape[k]:
                raise ValueError(f"Shape mismatch for {_pp_arg(exported, i, k)} (expected same "
                                 f"constant): expected {_shape_str(exp.shape)} and called with "
                                 f"{_shape_str(act.shape)}")
    if symbolic:
        _check_dim_vars(exported, in_avals)
    if not symbolic and not any(_is_symbolic(a.shape) for a in exported.out_avals):
        return [_physical(ShapedArray(a.shape, a.dtype, a.weak_type)) for a in exported.out_avals]
    # Shape polymorphism: refine the module for these shapes (also checks its assertions).
    from xform._src.lowering.mlir import aval_type  # deferred: keeps `import xform` light
    platform = _canonical_platform(lowering.default_backend())
    _, _, out_types = _em().specialize(
        exported.mlir_module_serialized,
        tuple(aval_type(in_avals[i]) for i in exported.module_kept_var_idx),
        exported._platform_index(platform))
    from xform._src.lowering.mlir import _shape_of  # deferred: keeps `import xform` light
    return [_physical(ShapedArray(_shape_of(t), a.dtype, a.weak_type))
            for t, a in zip(out_types, exported.out_avals)]

def _check_dim_vars(exported, in_avals):
    """Solve the dimension variables from the argument shapes and check them statically,
    with JAX's error texts (a variable is >= 1 and takes one value everywhere)."""
    env, origin = {}, {}
    specs = ",".join(f"{_pp_arg(exported, i)}.shape = {_shape_str(a.shape)}"
                     for i, a in enumerate(exported.in_avals) if _is_symbolic(a.shape))

    def fail(what, head="Input shapes do not match the polymorphic shapes specification. "):
        obtained = "".join(f"'{v}' = {env[v]} from specification '{v}' for dimension "
                           f"{_pp_arg(exported, *origin[v])} (= {env[v]}), " for v in env)
        raise ValueError(
            head + what +
            f" Using the following polymorphic shapes specifications: {specs}. Obtained "
            f"dimension variables: {obtained}. Please see "
            "https://docs.jax.dev/en/latest/export/shape_poly.html#shape-assertion-errors for "
            "more details.")

    dims = [(i, k, d, act.shape[k]) for i, (exp, act) in enumerate(zip(exported.in_avals, in_avals))
            for k, d in enumerate(exp.shape) if isinstance(d, _DimExpr)]
    pending = list(dims)
    progress = True
    while pending and progress:           # solve dims linear in one unknown variable
        progress = False
        for item in list(pending):
            i, k, d, val = item
            unknown = [v for v in d.variables() if v not in env]
            if len(unknown) != 1:
                continue
            v = unknown[0]
            coeff, rest = 0, 0
            for m, c in d.terms.items():
                if m == ((v, 1),):
                    coeff += c
                elif any(x == v for x, _ in m):
                    coeff = None
                    break
                else:
                    rest += c * _eval_mono(m, env)
            if not coeff:
                continue
            q, r = divmod(val - rest, coeff)
            if r:
                fail(f"Division had remainder {r} when computing the value of '{v}'.")
            env[v], origin[v] = q, (i, k)
            pending.remove(item)
            progress = True
    for v in env:
        if env[v] < 1:
            fail(f"Expected value >= 1 for dimension variable '{v}'.")
    for i, k, d, val in dims:
        if all(v in env for v in d.variables()):
            got = sum(c * _eval_mono(m, env) for m, c in d.terms.items())
            if got != val:
                fail(f"Found inconsistency between dimension size {_pp_arg(exported, i, k)} "
                     f"(= {val}) and the specification '{d}' (= {got}).")
    for diff, text in exported._symbolic_constraints():
        if isinstance(diff, str):
            diff = _parse_dim(diff, None)
        terms = diff.terms if isinstance(diff, _DimExpr) else {(): int(diff)}
        if all(v in env for m in terms for v, _ in m):
            got = sum(c * _eval_mono(m, env) for m, c in terms.items())
            if got < 0:
                fail(f"Expected '{diff}' to be greater or equal to 0, but found {got}. ",
                     head=f"Input shapes do not match the symbolic shape constraint {text}. ")

def _call_impl(args, exported):
    _em()
    if exported.nr_devices > 1:
        return _call_sharded(args, exported)
    from xform._src.lowering.runtime import device_impl_hook  # deferred: keeps `import xform` light
    return device_impl_hook(call_exported_p, args, {"exported": exported})

def _devices_error(exported, n):
    return ValueError(f"Function {exported.fun_name} was exported for {exported.nr_devices} "
                      f"devices and is called in a context with {n} devices, which is not "
                      "allowed.")

def _context_mesh(args):
    """The mesh an eager call runs in: that of the first argument laid out over a mesh,
    else the current mesh (``set_mesh`` / ``with mesh``), else None (one device)."""
    S = _xs()
    for a in args:
        if type(a) is core.Array and a._buf is not None and not a._deleted and \
                len(a._buf._sharding.device_set) > 1:
            s = a.sharding
            if isinstance(s, S.NamedSharding):
                return s.mesh
            raise ValueError(f"an argument of type {a.aval.str_short()} is laid out as {s}, "
                             "which has no mesh; device_put it with a NamedSharding before "
                             "calling the exported function")
    return S._context_mesh()

def _run_mesh(exported, mesh):
    """``mesh``'s devices (in order) arranged as the export's abstract mesh."""
    am = _export_mesh(exported)
    if am is None or (tuple(mesh.axis_names) == am.axis_names and
                      tuple(mesh.axis_sizes) == am.axis_sizes):
        return mesh
    S = _xs()
    devs = np.array(list(mesh.devices.flat), dtype=object).reshape(am.axis_sizes)
    return S.Mesh(devs, am.axis_names, am.axis_types)

def _call_sharded(args, exported):
    """Run a multi-device export eagerly: a program partitioned over the context's mesh
    (arranged as the export's mesh) whose inputs are placed as the export's
    in_shardings say and whose outputs are laid out as its out_shardings."""
    from xform._src.lowering import spmd  # deferred: keeps `import xform` light
    S = _xs()
    ctx = _context_mesh(args)
    n = ctx.size if ctx is not None else 1
    if n != exported.nr_devices:
        raise _devices_error(exported, n)
    mesh = _run_mesh(exported, ctx)
    in_specs = []
    for a, s in zip(args, exported._in_named_shardings):
        if s is not None and not s.mesh.empty:
            in_specs.append(s.spec)
            continue
        # unspecified in the export: keep the argument's layout over this mesh, else
        # replicate it (always valid; XLA's free choice might have no PartitionSpec)
        cur = a.sharding if type(a) is core.Array and a._buf is not None and \
            not a._deleted else None
        in_specs.append(cur.spec if isinstance(cur, S.NamedSharding) and cur.mesh == mesh
                        else S.PartitionSpec())
    out_specs = tuple(s.spec if s is not None and not s.mesh.empty else None
                      for s in exported._out_named_shardings)
    avals = tuple(core.get_aval(a) for a in args)
    key = (avals, mesh, tuple(in_specs), out_specs)
    cache = exported.__dict__.setdefault("_spmd_cache", {})
    comp = cache.get(key)
    if comp is None:
        def fun(*xs):
            return list(call_exported_p.bind(*xs, exported=exported))
        with core.set_current_trace(core.EVAL_TRACE):
            jaxpr, consts = staging.trace_to_jaxpr(fun, avals)
        comp = cache[key] = spmd.SpmdCompiled(ir.ClosedJaxpr(jaxpr, consts), mesh,
                                              tuple(in_specs), out_specs, None,
                                              f"call_exported_{exported.fun_name}")
    return comp(*args)

def call(exported: Exported):
    """A function that calls ``exported`` with pytree arguments (JAX's ``export.call``)."""
    if not isinstance(exported, Exported):
        raise ValueError(f"The exported argument must be an export.Exported. Found {exported}.")
    _em()     # the lowering rule of call_exported

    @custom_vjp
    def f_flat(*args_flat):
        return tuple(call_exported_p.bind(*args_flat, exported=exported))

    def fwd(*args_flat):
        return f_flat(*args_flat), args_flat

    def bwd(residual, ct_res):
        exp_vjp = exported.vjp()
        n = len(residual)
        cts = [np.zeros(a.shape, np.bool_) if a.dtype == _FLOAT0 else c
               for c, a in zip(ct_res, exp_vjp.in_avals[n:])]
        in_cts = call_exported_p.bind(*residual, *cts, exported=exp_vjp)
        return tuple(c if _is_float(a.dtype) else None
                     for c, a in zip(in_cts, exported.in_avals))

    f_flat.defvjp(fwd, bwd)

    has_keys = any(_is_key_dtype(a.dtype) for a in exported.in_avals + exported.out_avals)

    def f_imported(*args, **kwargs):
        leaves, in_tree = _tu.tree_flatten((args, kwargs))
        if in_tree != exported.in_tree:
            raise ValueError(
                "The invocation args and kwargs must have the same pytree structure as when "
                f"the function '{exported.fun_name}' was exported, but they have the "
                f"following structural differences: the invocation has structure {in_tree} "
                f"and the export {exported.in_tree}.")
        leaves = [x if isinstance(x, (core.Array, core.Tracer, int, float, complex, bool))
                  else core.Array(np.asarray(x)) for x in leaves]
        leaves = [np.zeros(np.shape(x), np.bool_) if getattr(x, "dtype", None) == _FLOAT0 else x
                  for x in leaves]
        if has_keys:
            leaves = [_random.key_data(x) if _is_key_dtype(getattr(x, "dtype", None)) else x
                      for x in leaves]
        if core.current_trace() is core.EVAL_TRACE and not any(
                isinstance(x, core.Tracer) for x in leaves):
            res = list(call_exported_p.bind(*leaves, exported=exported))  # eager: no AD needed
        else:
            res = list(f_flat(*leaves))
        if has_keys:
            res = [_random.wrap_key_data(r) if _is_key_dtype(a.dtype) else r
                   for r, a in zip(res, exported.out_avals)]
        return exported.out_tree.unflatten(res)
    return f_imported

call_exported = call

"""IR -> StableHLO as MLIR text.

Why text: it is the cheapest form to produce in Python and the most robust
across jaxlib versions (text compiles on every jaxlib tried, while the MLIR Python
bindings' API and module names have changed between releases).  Everything here is pure
Python + NumPy; nothing imports jax, so lowering a program (``as_text``) works
without the runtime.

Ops are written in MLIR's *generic* syntax (``"stablehlo.add"(%a, %b) {attrs}
: (types) -> type``): one uniform shape for every op, depending only on op and
attribute names.  A lowering rule is ``rule(ctx, eqn, *operands) -> [results]``
where operands/results are SSA names (``%12``); ``ctx.op`` emits one op and
knows every SSA value's type, so rules only state what is specific to them.

Constants of the closed jaxpr are embedded in the module as hex
``dense<"0x..">`` literals (bit exact for every dtype), whatever their size:
the executable's interface is then exactly the jaxpr's invars.  (Large
constants make the text large; XLA folds them into the executable once.)
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np

from xform._src.interpreters import core, dtypes as _dtypes
from xform._src.interpreters.ir import ClosedJaxpr, Jaxpr, Literal
from xform._src.primitives._rules import scalar_broadcasting as _SCALAR_BROADCASTING
from xform._src import lowering
import importlib

# ----------------------------------------------------------------- types

_ELEMENT_TYPES = {
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "ui8", np.dtype(np.uint16): "ui16", np.dtype(np.uint32): "ui32",
    np.dtype(np.uint64): "ui64",
    np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "complex<f32>", np.dtype(np.complex128): "complex<f64>",
    # the tangent type of integers and bools holds no data: XLA carries it as booleans
    # (always false), as JAX does; compiled programs take and give back float0 values
    # at their interface (``runtime.compile_jaxpr``)
    _dtypes.float0: "i1",
}
# ml_dtypes' narrow types join once ml_dtypes is imported (no value of them can exist before;
# importing it costs ~0.5 s): see ``_add_ml_dtypes``.
_ML_ELEMENT_TYPES = (("int4", "i4"), ("uint4", "ui4"), ("bfloat16", "bf16"),
                     ("float8_e4m3fn", "f8E4M3FN"), ("float8_e5m2", "f8E5M2"),
                     ("int2", "i2"), ("uint2", "ui2"), ("float8_e4m3fnuz", "f8E4M3FNUZ"),
                     ("float8_e5m2fnuz", "f8E5M2FNUZ"), ("float8_e4m3b11fnuz", "f8E4M3B11FNUZ"),
                     ("float8_e4m3", "f8E4M3"), ("float8_e3m4", "f8E3M4"),
                     ("float8_e8m0fnu", "f8E8M0FNU"), ("float4_e2m1fn", "f4E2M1FN"),
                     ("float6_e2m3fn", "f6E2M3FN"), ("float6_e3m2fn", "f6E3M2FN"))
_NARROW_FLOATS: set = set()
_NARROW_INTS: set = set()


def _add_ml_dtypes():
    import ml_dtypes  # deferred: keeps `import xform` light
    for name, mlir in _ML_ELEMENT_TYPES:
        if hasattr(ml_dtypes, name):
            d = np.dtype(getattr(ml_dtypes, name))
            _ELEMENT_TYPES[d] = mlir
            (_NARROW_FLOATS if mlir[0] in "fb" else _NARROW_INTS).add(d)


_dtypes.on_ml_dtypes(_add_ml_dtypes)


def element_type(dtype) -> str:
    try:
        return _ELEMENT_TYPES[np.dtype(dtype)]
    except KeyError:
        if not _dtypes.ml_dtypes_loaded():
            _dtypes._sync_ml_dtypes()
            if _dtypes.ml_dtypes_loaded():
                return element_type(dtype)
        raise TypeError(f"dtype {np.dtype(dtype)} cannot be lowered to XLA; supported: "
                        + ", ".join(d.name for d in _ELEMENT_TYPES)) from None


def tensor_type(shape, dtype) -> str:
    """(3, 4), float32 -> 'tensor<3x4xf32>'."""
    return "tensor<" + "".join(f"{int(d)}x" for d in shape) + element_type(dtype) + ">"


_aval_types: dict = {}     # (shape, dtype) -> tensor type text


def aval_type(aval) -> str:
    key = (aval.shape, aval.dtype)
    try:
        return _aval_types[key]
    except KeyError:
        pass
    except TypeError:        # an unhashable shape
        return tensor_type(aval.shape, aval.dtype)
    t = tensor_type(aval.shape, aval.dtype)
    if len(_aval_types) > 10_000:
        _aval_types.clear()
    _aval_types[key] = t
    return t


def is_float(dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype in _NARROW_FLOATS


def is_complex(dtype) -> bool:
    return np.dtype(dtype).kind == "c"


def compare_type(dtype) -> str:
    """XLA compare type: signless i32 is signed, so say which one we mean."""
    dtype = np.dtype(dtype)
    if is_float(dtype) or is_complex(dtype):
        return "FLOAT"
    if dtype.kind == "i" or (dtype in _NARROW_INTS and _ELEMENT_TYPES[dtype][0] == "i"):
        return "SIGNED"
    return "UNSIGNED"  # unsigned ints and bool


def dense_literal(x) -> str:
    """Bit-exact payload for ``dense<...>``: little-endian bytes in hex (i1/i4: a byte each)."""
    x = np.ascontiguousarray(x)
    if x.dtype == np.bool_ or x.dtype in _NARROW_INTS:
        x = x.astype(np.int8 if _ELEMENT_TYPES.get(x.dtype, "i")[0] == "i" else np.uint8)
    if x.dtype.byteorder == ">":
        x = x.astype(x.dtype.newbyteorder("<"))
    return '"0x' + x.tobytes().hex().upper() + '"'


def i64_array(xs) -> str:
    return "array<i64" + (": " + ", ".join(str(int(v)) for v in xs) if len(xs) else "") + ">"


def _quote(s: str) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


_locations: dict = {}      # (name, source_info) -> location text


def location(name: str, source_info=None) -> str:
    """``loc("name"("file":line:0))``: shows up as op_name / source in compiled HLO metadata."""
    key = (name, source_info)
    try:
        return _locations[key]
    except (KeyError, TypeError):
        pass
    text = _location(name, source_info)
    try:
        if len(_locations) > 100_000:
            _locations.clear()
        _locations[key] = text
    except TypeError:
        pass
    return text


def _location(name, source_info):
    if source_info:
        file, line, fn = source_info
        return f'loc({_quote(f"{fn}/{name}" if fn else name)}({_quote(file)}:{int(line)}:0))'
    return f"loc({_quote(name)})"


# ----------------------------------------------------------------- the rule table

lowering_rules: dict = {}   # Primitive -> rule(ctx, eqn, *operand_names) -> [result names]


def register(*prims):
    """Decorator: the lowering rule of these primitives (``Primitive`` objects)."""
    for p in prims:
        if not isinstance(p, core.Primitive):
            raise TypeError(f"register() takes Primitive objects, got {p!r}")

    def deco(fn):
        for p in prims:
            lowering_rules[p] = fn
        return fn
    return deco


_rule_modules_loaded = False


def load_rule_modules():
    """Import every ``lowering/rules_*.py`` module (each registers its rules on import),
    and the export module's rule; discovered, so a new rule module needs no edit here."""
    global _rule_modules_loaded
    if _rule_modules_loaded:
        return
    import pkgutil  # deferred: keeps `import xform` light
    for m in pkgutil.iter_modules(lowering.__path__):
        if m.name.startswith("rules_") or m.name == "export_mlir":
            importlib.import_module(f"{lowering.__name__}.{m.name}")
    _rule_modules_loaded = True


def sync_rules() -> dict:
    """The complete rule table (every rule module imported)."""
    load_rule_modules()
    return lowering_rules


def lookup_rule(prim):
    rule = lowering_rules.get(prim)
    if rule is None:
        load_rule_modules()
        rule = lowering_rules.get(prim)
        if rule is None:
            why = prim.missing_rules.get("lowering", "so it cannot run under jit or on an "
                                         "accelerator")
            raise NotImplementedError(
                f"primitive {prim.name!r} has no XLA lowering rule, {why}. Run it eagerly on "
                "CPU (outside jit) instead.")
    return rule


# ----------------------------------------------------------------- emission context


class ModuleContext:
    """State shared by all functions of one module: private functions emitted so far."""

    def __init__(self, platform: str = "cpu", debug_info: bool = True):
        self.functions: list[str] = []        # text of private functions
        self.func_names: dict = {}            # (id(jaxpr), ...) -> symbol
        self._keepalive: list = []            # jaxprs whose ids are keys above
        self.symbols: set = set()
        self.platform = platform
        self.debug_info = debug_info
        self.host_callbacks: list = []        # Python callables the program calls, by index

    def add_host_callback(self, fn) -> int:
        """Register ``fn`` (numpy arrays in, tuple of numpy arrays out); its index."""
        self.host_callbacks.append(fn)
        return len(self.host_callbacks) - 1

    def fresh_symbol(self, base: str, keep: str = "") -> str:
        """An unused symbol name from ``base`` (characters other than letters, digits, "_"
        and those in ``keep`` replaced by "_")."""
        base = "".join(c if c.isalnum() or c == "_" or c in keep else "_"
                       for c in (base or "fn"))
        sym, i = base, 0
        while sym in self.symbols or sym == "main":
            i += 1
            sym = f"{base}_{i}"
        self.symbols.add(sym)
        return sym


class _Scope(dict):
    """A name table that falls back to its enclosing scope's: a region sees every name
    of the function around it without copying the table (a copy per region made
    lowering quadratic in the program's size)."""

    __slots__ = ("parent",)

    def __init__(self, parent=None):
        super().__init__()
        self.parent = parent

    def __missing__(self, key):
        if self.parent is None:
            raise KeyError(key)
        return self.parent[key]

    def lookup(self, key):
        """``self[key]`` or None, without raising."""
        s = self
        while s is not None:
            v = dict.get(s, key)
            if v is not None:
                return v
            s = s.parent
        return None


class LoweringContext:
    """Emits the body of one function (or region).

    ``types`` maps every SSA name in scope to its tensor type, so ``op`` can
    write operand types itself.  While a rule runs, ``in_avals``/``out_avals``
    are its equation's avals and ``loc`` its debug location.
    """

    def __init__(self, module: ModuleContext, indent: int = 4, parent: "LoweringContext" = None):
        self.module = module
        self.lines: list[str] = []
        self.indent = indent
        self.types: dict = _Scope(parent.types if parent is not None else None)
        # SSA numbers, shared with nested regions (next(self._ids): 1, 2, ...)
        self._ids = parent._ids if parent is not None else itertools.count(1)
        self.in_avals = self.out_avals = ()
        self.loc = ""
        self.name_stack = parent.name_stack if parent is not None else ""
        # implicit scalar broadcasts emitted in this scope (visible to nested regions)
        self.bcast_cache = _Scope(parent.bcast_cache if parent is not None else None)

    # -- names
    def fresh(self) -> str:
        return f"%{next(self._ids)}"

    def fresh_arg(self, type_: str, prefix: str = "arg") -> str:
        n = f"%{prefix}{next(self._ids)}"
        self.types[n] = type_
        return n

    def child(self, indent_more: int = 4) -> "LoweringContext":
        c = LoweringContext(self.module, self.indent + indent_more, self)
        c.loc = self.loc
        return c

    # -- emission
    def op(self, name: str, operands, out_types, attrs: str = "", regions=None) -> list[str]:
        """Emit ``"name"(operands) ({regions}) {attrs} : (in types) -> out types``.

        ``out_types``: a list of tensor types (or avals).  Returns the result names.
        """
        out_types = [t if type(t) is str else aval_type(t) for t in out_types]
        n = len(out_types)
        if n == 1:
            return [self.op1(name, operands, out_types[0], attrs, regions)]
        types = self.types
        in_types = ", ".join([types[o] for o in operands])
        if n == 0:
            lhs, results = "", []
        else:
            r = self.fresh()
            lhs, results = f"{r}:{n} = ", [f"{r}#{i}" for i in range(n)]
        for res, t in zip(results, out_types):
            types[res] = t
        reg = " (" + ", ".join(regions) + ")" if regions else ""
        attr = f" {{{attrs}}}" if attrs else ""
        loc = self.loc
        self.lines.append(f"{' ' * self.indent}{lhs}\"{name}\"({', '.join(operands)}){reg}{attr} "
                          f": ({in_types}) -> ({', '.join(out_types)})"
                          + (" " + loc if loc else ""))
        return results

    def op1(self, name, operands, out_type, attrs="", regions=None) -> str:
        """``op`` with one result (the common case, written out: it runs per operation)."""
        if type(out_type) is not str:
            out_type = aval_type(out_type)
        types = self.types
        in_types = ", ".join([types[o] for o in operands])
        r = f"%{next(self._ids)}"
        types[r] = out_type
        loc = self.loc
        if regions or attrs:
            self.lines.append(
                f"{' ' * self.indent}{r} = \"{name}\"({', '.join(operands)})"
                + (" (" + ", ".join(regions) + ")" if regions else "")
                + (f" {{{attrs}}}" if attrs else "")
                + f" : ({in_types}) -> {out_type}" + (" " + loc if loc else ""))
        elif loc:
            self.lines.append(f"{' ' * self.indent}{r} = \"{name}\"({', '.join(operands)}) "
                              f": ({in_types}) -> {out_type} {loc}")
        else:
            self.lines.append(f"{' ' * self.indent}{r} = \"{name}\"({', '.join(operands)}) "
                              f": ({in_types}) -> {out_type}")
        return r

    def constant(self, value, dtype=None, shape=None) -> str:
        """A constant tensor of ``dtype`` (broadcast to ``shape`` as a splat)."""
        v = np.asarray(value, dtype=dtype)
        if v.dtype == _dtypes.float0:
            v = np.zeros(v.shape, np.bool_)
        if v.size <= 16:    # small constants (literals, identities) repeat: text memoised
            key = (v.dtype, v.shape, None if shape is None else tuple(shape), v.tobytes())
            try:
                ta = _small_constants.get(key)
            except TypeError:       # a dimension that is not hashable
                ta = key = None
            if ta is None:
                ta = _constant_text(v, shape)
                if key is not None:
                    if len(_small_constants) > 10_000:
                        _small_constants.clear()
                    _small_constants[key] = ta
        else:
            ta = _constant_text(v, shape)
        return self.op1("stablehlo.constant", [], ta[0], ta[1])

    def full_like(self, value, aval) -> str:
        """``value`` broadcast to ``aval`` (via a splat constant)."""
        if aval.dtype == _dtypes.float0:
            return self.constant(False, np.bool_, shape=aval.shape)
        return self.constant(np.asarray(value).astype(aval.dtype), shape=aval.shape)

    def ret(self, names, op="stablehlo.return"):
        types = ", ".join(self.types[n] for n in names)
        self.lines.append(f"{' ' * self.indent}\"{op}\"({', '.join(names)}) : ({types}) -> ()")

    def region(self, arg_types, body) -> str:
        """A one-block region ``^bb0(args): body(ctx, *args) -> results; return``."""
        c = self.child()
        args = [c.fresh_arg(t, "r") for t in arg_types]
        results = body(c, *args)
        c.ret(results)
        head = "{\n" + " " * (self.indent + 2) + "^bb0(" + ", ".join(
            f"{a}: {t}" for a, t in zip(args, arg_types)) + "):\n"
        return head + "\n".join(c.lines) + "\n" + " " * self.indent + "}"

    def binary_region(self, op_name: str, type_: str) -> str:
        """``region([t, t], lambda c, a, b: [c.op1(op_name, [a, b], t)])`` (a reduction's
        monoid), written directly: the same text without a child context."""
        ids = self._ids
        a, b, r = f"%r{next(ids)}", f"%r{next(ids)}", f"%{next(ids)}"
        pad = " " * (self.indent + 4)
        loc = self.loc
        return ("{\n" + " " * (self.indent + 2) + f"^bb0({a}: {type_}, {b}: {type_}):\n"
                + f'{pad}{r} = "{op_name}"({a}, {b}) : ({type_}, {type_}) -> {type_}'
                + (" " + loc if loc else "") + "\n"
                + f'{pad}"stablehlo.return"({r}) : ({type_}) -> ()\n' + " " * self.indent + "}")

    # -- common helpers for rules
    def convert(self, x: str, dtype, shape=None) -> str:
        t = self.types[x]
        shape = _shape_of(t) if shape is None else shape
        out = tensor_type(shape, dtype)
        return x if out == t else self.op1("stablehlo.convert", [x], out)

    def compare(self, x, y, direction, dtype, ctype=None) -> str:
        shape = _shape_of(self.types[x])
        return self.op1("stablehlo.compare", [x, y], tensor_type(shape, np.bool_),
                        f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
                        f"compare_type = #stablehlo<comparison_type {ctype or compare_type(dtype)}>")

    def select(self, pred, on_true, on_false) -> str:
        return self.op1("stablehlo.select", [pred, on_true, on_false], self.types[on_true])


_small_constants: dict = {}    # (dtype, shape, splat shape, bytes) -> (type, attribute)


def _constant_text(v, shape):
    """``(tensor type, value attribute)`` of constant ``v`` (splatted to ``shape``)."""
    t = tensor_type(v.shape if shape is None else shape, v.dtype)
    if shape is not None and tuple(shape) != v.shape:
        if v.size != 1:
            raise ValueError(f"constant of shape {v.shape} cannot be splatted to {shape}")
        v = v.reshape(())
    return t, f"value = dense<{dense_literal(v)}> : {t}"


def _shape_of(type_str: str) -> tuple:
    body = type_str[len("tensor<"):-1]
    if body.startswith("complex"):
        return ()
    parts = body.split("x")
    dims = []
    for p in parts[:-1]:
        if not p.isdigit():
            break
        dims.append(int(p))
    return tuple(dims)


# ----------------------------------------------------------------- jaxpr -> function body


def lower_eqns(ctx: LoweringContext, jaxpr: Jaxpr, env: dict):
    """Emit every equation of ``jaxpr``; ``env`` maps Vars to SSA names (filled in place)."""
    def read(a):
        if type(a) is Literal:
            return ctx.constant(np.asarray(a.val, a.aval.dtype), shape=a.aval.shape)
        return env[a]

    rules = lowering_rules
    debug = ctx.module.debug_info
    for eqn in jaxpr.eqns:
        prim = eqn.primitive
        rule = rules.get(prim) or lookup_rule(prim)
        invars, outvars = eqn.invars, eqn.outvars
        if prim in _SCALAR_BROADCASTING and outvars[0].aval.shape:
            ins = None          # read below, with rank-0 operands broadcast
        else:
            ins = [read(a) if type(a) is Literal else env[a] for a in invars]
            ctx.in_avals = [a.aval for a in invars]
        ctx.out_avals = [v.aval for v in outvars]
        saved_loc = ctx.loc
        if debug:
            try:
                ctx.loc = _locations[(prim.name, eqn.source_info)]
            except (KeyError, TypeError):
                ctx.loc = location(prim.name, eqn.source_info)
        else:
            ctx.loc = ""
        if ins is None:
            ins = _read_broadcasting(ctx, eqn, env)
        try:
            outs = rule(ctx, eqn, *ins)
        except (TypeError, ValueError, NotImplementedError):
            raise
        except Exception as e:  # a rule bug must not surface as KeyError/AttributeError
            raise NotImplementedError(
                f"lowering {prim.name} with params {eqn.params} on "
                f"{[a.str_short() for a in ctx.in_avals]} failed: {type(e).__name__}: {e}") from e
        finally:
            ctx.loc = saved_loc
        if len(outs) != len(outvars):
            raise NotImplementedError(f"lowering rule of {prim.name} returned "
                                      f"{len(outs)} results for {len(outvars)} outputs")
        if len(outvars) == 1:
            env[outvars[0]] = outs[0]
        else:
            for v, o in zip(outvars, outs):
                env[v] = o
    return [read(a) for a in jaxpr.outvars]


def _read_broadcasting(ctx, eqn, env):
    """Operands of an n-ary elementwise op with implicit broadcasting: StableHLO
    wants equal shapes, so a rank-0 operand (or one of equal rank with size-1 dims) is ``broadcast_in_dim``-ed to the result's
    shape, as JAX's lowering does (a rank-0 literal stays a scalar constant, which keeps
    its value a scalar for shape-polymorphic export).  Each distinct broadcast is
    emitted once per scope (``x * 2.0 + 2.0`` broadcasts ``2.0`` once).
    ``ctx.in_avals`` are the broadcast avals."""
    shape = ctx.out_avals[0].shape
    cache = ctx.bcast_cache
    ins, avals = [], []
    for a in eqn.invars:
        av = a.aval
        if av.shape == shape:
            x = ctx.constant(np.asarray(a.val, av.dtype)) if type(a) is Literal else env[a]
        else:
            av = av.update(shape=shape)
            if type(a) is Literal:
                val = np.asarray(a.val, av.dtype)
                key = (val.dtype, val.tobytes(), shape)
            else:
                key = (env[a], shape)
            x = cache.lookup(key)
            if x is None:
                src = ctx.constant(val) if type(a) is Literal else env[a]
                # rank 0: no operand dims; equal rank: identity dims (size-1 dims expand)
                bd = ", ".join(str(i) for i in range(len(a.aval.shape)))
                x = cache[key] = ctx.op1("stablehlo.broadcast_in_dim", [src], av,
                                         "broadcast_dimensions = array<i64" +
                                         (f": {bd}>" if bd else ">"))
        ins.append(x)
        avals.append(av)
    ctx.in_avals = avals
    return ins


def _bind_consts(ctx, jaxpr, consts, env):
    for v, c in zip(jaxpr.constvars, consts):
        val = np.asarray(c._value if isinstance(c, core.Array) else c)
        if val.dtype != v.aval.dtype:
            val = val.astype(v.aval.dtype)
        env[v] = ctx.constant(val)


def lower_subjaxpr(ctx: LoweringContext, closed_jaxpr, operand_names) -> list[str]:
    """Inline a (closed) sub-program into the current function/region."""
    if isinstance(closed_jaxpr, ClosedJaxpr):
        jaxpr, consts = closed_jaxpr.jaxpr, closed_jaxpr.consts
    else:
        jaxpr, consts = closed_jaxpr, []
    if len(operand_names) != len(jaxpr.invars):
        raise TypeError(f"sub-program expects {len(jaxpr.invars)} operands, got {len(operand_names)}")
    env = dict(zip(jaxpr.invars, operand_names))
    _bind_consts(ctx, jaxpr, consts, env)
    saved = (ctx.in_avals, ctx.out_avals, ctx.loc)
    try:
        return lower_eqns(ctx, jaxpr, env)
    finally:
        ctx.in_avals, ctx.out_avals, ctx.loc = saved


def _function_text(module, sym, closed_jaxpr, visibility, arg_attrs=None, result_attrs=None):
    return "\n".join(_function_lines(module, sym, closed_jaxpr, visibility, arg_attrs,
                                     result_attrs))


def _function_lines(module, sym, closed_jaxpr, visibility, arg_attrs=None, result_attrs=None):
    """The function's text as a list of lines (joined once, with the whole module)."""
    jaxpr = closed_jaxpr.jaxpr if isinstance(closed_jaxpr, ClosedJaxpr) else closed_jaxpr
    ctx = LoweringContext(module)
    args, sig = [], []
    for i, v in enumerate(jaxpr.invars):
        t = aval_type(v.aval)
        n = f"%arg{i}"
        ctx.types[n] = t
        args.append(n)
        attr = (arg_attrs or {}).get(i)
        sig.append(f"{n}: {t}" + (f" {{{attr}}}" if attr else ""))
    outs = lower_subjaxpr(ctx, closed_jaxpr, args)
    ctx.loc = ""
    ctx.ret(outs, "func.return")
    res = []
    for i, v in enumerate(jaxpr.outvars):
        attr = (result_attrs or {}).get(i)
        res.append(aval_type(v.aval) + (f" {{{attr}}}" if attr else ""))
    lines = ctx.lines
    lines.insert(0, f"  func.func {visibility} @{sym}({', '.join(sig)}) -> ({', '.join(res)}) {{")
    lines.append("  }")
    return lines


def call_subjaxpr(ctx: LoweringContext, closed_jaxpr, operand_names, name="fn") -> list[str]:
    """``func.call`` of a private function holding ``closed_jaxpr`` (emitted once per jaxpr)."""
    mod = ctx.module
    jaxpr = closed_jaxpr.jaxpr if isinstance(closed_jaxpr, ClosedJaxpr) else closed_jaxpr
    consts = closed_jaxpr.consts if isinstance(closed_jaxpr, ClosedJaxpr) else []
    key = (id(jaxpr), tuple(id(c) for c in consts))
    sym = mod.func_names.get(key)
    if sym is None:
        sym = mod.fresh_symbol(name)
        mod.func_names[key] = sym
        mod._keepalive.append(closed_jaxpr)
        mod.functions.append(_function_text(mod, sym, closed_jaxpr, "private"))
    out_types = [aval_type(v.aval) for v in jaxpr.outvars]
    return ctx.op("func.call", list(operand_names), out_types, f"callee = @{sym}")


class LoweredModule:
    """MLIR text plus the host callbacks its custom calls refer to (by index)."""

    __slots__ = ("text", "host_callbacks", "unusable_donations")

    def __init__(self, text, host_callbacks, unusable_donations=()):
        self.text = text
        self.host_callbacks = tuple(host_callbacks)
        # donated inputs no output can reuse: not donated (the caller keeps them)
        self.unusable_donations = tuple(unusable_donations)


def _aval_text(aval):
    """``float32[2,3]``: an aval as JAX's messages print it."""
    shape = getattr(aval, "shape", None)
    if shape is None:
        return str(aval)
    return f"{np.dtype(aval.dtype).name}[{','.join(str(d) for d in shape)}]"


def lower_jaxpr(closed_jaxpr, *, name: str = "main", donated_invars=None,
                keep_unused: bool = True, debug_info: bool = True, platform: str = "cpu") -> str:
    """MLIR text of ``closed_jaxpr`` (see ``lower_module``)."""
    return lower_module(closed_jaxpr, name=name, donated_invars=donated_invars,
                        keep_unused=keep_unused, debug_info=debug_info, platform=platform).text


def lower_module(closed_jaxpr, *, name: str = "main", donated_invars=None,
                 keep_unused: bool = True, debug_info: bool = True,
                 platform: str = "cpu") -> LoweredModule:
    """MLIR text of a module whose public ``@main`` computes ``closed_jaxpr``.

    ``donated_invars[i]``: input i may be reused for an output of the same
    type: it gets ``tf.aliasing_output = k`` (first unclaimed matching output),
    else, when an output not aliased has as many elements, ``jax.buffer_donor =
    true`` (as JAX); a donated input no output can use is not donated, with JAX's
    warning ("Some donated buffers were not usable"), and is listed in the result's
    ``unusable_donations``.  Unused inputs always stay in the signature (the
    executable's interface is the jaxpr's), whatever ``keep_unused`` says; XLA drops
    them internally.
    """
    if isinstance(closed_jaxpr, Jaxpr):
        closed_jaxpr = ClosedJaxpr(closed_jaxpr, [])
    jaxpr = closed_jaxpr.jaxpr
    arg_attrs = {}
    unusable = []
    if donated_invars is not None:
        donated_invars = tuple(donated_invars)
        if len(donated_invars) != len(jaxpr.invars):
            raise ValueError(f"donated_invars has {len(donated_invars)} entries for "
                             f"{len(jaxpr.invars)} inputs")
        out_types = [aval_type(v.aval) for v in jaxpr.outvars]
        claimed = set()
        left = []
        for i, (d, v) in enumerate(zip(donated_invars, jaxpr.invars)):
            if not d:
                continue
            t = aval_type(v.aval)
            k = next((k for k, ot in enumerate(out_types) if ot == t and k not in claimed), None)
            if k is None:
                left.append(i)
            else:
                claimed.add(k)
                arg_attrs[i] = f"tf.aliasing_output = {k} : i32"
        # what no output aliases goes to XLA as a buffer donor when an output left over
        # has as many elements (each output serves one donor)
        sizes = [getattr(v.aval, "size", None) for v in jaxpr.outvars]
        for i in left:
            size = getattr(jaxpr.invars[i].aval, "size", None)
            k = next((k for k, n in enumerate(sizes) if n is not None and n == size
                      and k not in claimed), None)
            if k is None:
                unusable.append(i)
            else:
                claimed.add(k)
                arg_attrs[i] = "jax.buffer_donor = true"
        if unusable:
            warnings.warn(
                "Some donated buffers were not usable: "
                + ", ".join(_aval_text(jaxpr.invars[i].aval) for i in unusable)
                + ".\nNo output of the computation has an input's shape and dtype (or "
                  "its number of elements); those inputs are not donated and stay "
                  "valid. Donate only arguments an output can reuse.", stacklevel=2)
    module = ModuleContext(platform, debug_info)
    with core.gc_paused():
        main = _function_lines(module, "main", closed_jaxpr, "public", arg_attrs)
    mod_name = "".join(c if c.isalnum() or c == "_" else "_" for c in (name or "main"))
    # One join for the whole module: large programs' text is tens of MB, and each
    # intermediate concatenation would be another copy at the peak.
    main.insert(0, f"module @{mod_name} attributes {{mhlo.num_partitions = 1 : i32, "
                   f"mhlo.num_replicas = 1 : i32}} {{")
    main.extend(module.functions)
    main.append("}\n")
    text = "\n".join(main)
    del main
    return LoweredModule(text, module.host_callbacks, unusable)

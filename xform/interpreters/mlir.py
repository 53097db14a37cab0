"""``xform.interpreters.mlir``: lowering rules for ``jit`` (JAX's
``jax.interpreters.mlir``).

The portable way to give a primitive a lowering, in JAX and in xform, is to write it in
terms of existing operations::

    mlir.register_lowering(my_p, mlir.lower_fun(lambda x, y: lax.add(x, y),
                                                multiple_results=False))

``lower_fun(fun)`` stages ``fun`` (called with the equation's operands and params) into
an xform program and inlines that program's lowering where the primitive appears.

A rule written against JAX's MLIR builder API (``ctx``, ``ir.Value``s, ``hlo.AddOp``...)
has nothing to run on here: xform emits StableHLO itself and hands no MLIR objects to
rules.  Registering one is accepted (libraries do it at import time) and recorded, and
``jit`` then runs the primitive with its eager rule (``def_impl``) inside an
equation-by-equation interpretation of the program; the MLIR-builder names JAX exports
(``ir``, ``ir_constant``, ``aval_to_ir_type``, ...) raise an error saying so.
"""
from __future__ import annotations

from xform._src.interpreters import core as _core
from xform._src.interpreters import staging

__all__ = ["lower_fun", "register_lowering", "LoweredFun"]


class LoweredFun:
    """A lowering rule made by ``lower_fun``: ``fun`` staged on the equation's operands."""

    __slots__ = ("fun", "multiple_results")

    def __init__(self, fun, multiple_results):
        self.fun = fun
        self.multiple_results = multiple_results

    def __call__(self, *args, **kwargs):
        raise TypeError("a lowering rule made by xform.interpreters.mlir.lower_fun is "
                        "registered with mlir.register_lowering, not called")

    def __repr__(self):
        name = getattr(self.fun, "__name__", repr(self.fun))
        return f"lower_fun({name}, multiple_results={self.multiple_results})"


def lower_fun(fun, multiple_results: bool = True) -> LoweredFun:
    """A lowering rule that lowers ``fun(*operands, **params)`` (written with xform
    operations) in place of the primitive."""
    return LoweredFun(fun, multiple_results)


def _staged_rule(lowered: LoweredFun, prim):
    def rule(ctx, eqn, *operands):
        from xform._src.lowering import mlir as _lmlir  # deferred: keeps `import xform` light
        in_avals = [a.aval for a in eqn.invars]

        def f(*args):
            out = lowered.fun(*args, **eqn.params)
            return list(out) if lowered.multiple_results else [out]

        with _core.set_current_trace(_core.EVAL_TRACE):
            closed = staging.trace_to_closed_jaxpr(f, in_avals, name=prim.name)
        want = [v.aval for v in eqn.outvars]
        got = closed.jaxpr.out_avals
        if len(got) != len(want) or any(not _core.same_type(g, w) for g, w in zip(got, want)):
            raise TypeError(
                f"the lowering of primitive {prim.name!r} (mlir.lower_fun({lowered!r})) "
                f"computes {[a.str_short() for a in got]} but its abstract evaluation rule "
                f"promises {[a.str_short() for a in want]}; make the two agree")
        return _lmlir.lower_subjaxpr(ctx, closed, list(operands))
    rule.__wrapped__ = lowered.fun
    return rule


class _PlatformRules:
    """The lowering rule of one primitive, per platform (``None``: every platform)."""

    def __init__(self, prim):
        self.prim = prim
        self.rules = {}

    def __call__(self, ctx, eqn, *operands):
        platform = getattr(ctx.module, "platform", None)
        rule = self.rules.get(platform, self.rules.get(None))
        if rule is None:
            raise NotImplementedError(
                f"primitive {self.prim.name!r} has no lowering for platform {platform!r} "
                f"(registered for {sorted(str(p) for p in self.rules)})")
        return rule(ctx, eqn, *operands)


def register_lowering(prim, rule, platform: str | None = None, **kwargs):
    """Register ``rule`` as ``prim``'s lowering (on ``platform``; ``None``: all).

    ``rule`` made by ``lower_fun`` or ``xform.ffi.ffi_lowering`` is lowered by xform.
    Any other rule is written for JAX's MLIR builder and cannot run here: it is recorded,
    and under ``jit`` the primitive runs with its eager rule instead (see the module
    docstring)."""
    if not isinstance(prim, _core.Primitive):
        raise TypeError(f"register_lowering takes a Primitive, got {prim!r}")
    from xform._src.lowering import mlir as _lmlir  # deferred: keeps `import xform` light
    platform = _canonical_platform(platform)
    native = getattr(rule, "xform_lowering_rule", False)   # xform.ffi.ffi_lowering's rules
    if isinstance(rule, LoweredFun) or native:
        entry = _lmlir.lowering_rules.get(prim)
        if not isinstance(entry, _PlatformRules):
            entry = _PlatformRules(prim)
            _lmlir.lowering_rules[prim] = entry
        entry.rules[platform] = rule if native else _staged_rule(rule, prim)
        prim.missing_rules.pop("lowering", None)
    else:
        name = getattr(rule, "__qualname__", None) or repr(rule)
        if prim not in _lmlir.lowering_rules:
            prim.missing_rules["lowering"] = (
                f"its lowering rule {name} is written for JAX's MLIR builder, which xform "
                "does not provide (register mlir.lower_fun(f) to compile it); under jit "
                "it runs with its eager rule")
    return rule


def _canonical_platform(p):
    if p is None:
        return None
    p = str(p).lower()
    return {"cuda": "gpu", "rocm": "gpu"}.get(p, p)


_BUILDER_NAMES = {
    "ir", "hlo", "ir_constant", "ir_constants", "ir_attribute", "aval_to_ir_type",
    "aval_to_ir_types", "dtype_to_ir_type", "dense_int_array", "dense_int_elements",
    "i32_attr", "i64_attr", "LoweringRuleContext", "ModuleContext", "jaxpr_subcomp",
    "lower_jaxpr_to_fun", "lower_jaxpr_to_module", "make_ir_context", "shape_tensor",
    "token_type", "flatten_ir_values", "flatten_ir_types", "custom_call",
    "emit_python_callback", "core_call_lowering", "module_to_string",
    "module_to_bytecode", "merge_mlir_modules", "Value", "LoweringRule",
    "LoweringParameters", "LoweringResult", "register_constant_handler",
}


def __getattr__(name):
    if name in _BUILDER_NAMES:
        raise AttributeError(
            f"jax.interpreters.mlir.{name} is part of JAX's MLIR builder API, which xform "
            "does not provide (it emits StableHLO itself). Give the primitive a lowering "
            "with mlir.register_lowering(prim, mlir.lower_fun(f)) instead.")
    raise AttributeError(f"module 'xform.interpreters.mlir' (jax.interpreters.mlir) has no "
                         f"attribute {name!r}")

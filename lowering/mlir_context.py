"""A new MLIR context with the dialects xform's programs use.

jaxlib's upstream dialects (func, arith, ...), StableHLO and CHLO, and Shardy (``sdy``)
when asked for (sharded exports carry ``sdy.mesh`` / ``sdy.sharding``).  This module
imports nothing at module level and nothing from xform, because two kinds of process
use it: the runtime (``runtime._mlir_context``, through ``interrupts.import_module`` so
Ctrl-C waits for dialect registration) and the short-lived child that checks untrusted
exported modules (``export_check``), which loads this file by path without importing
xform.
"""
from __future__ import annotations

import importlib


def new_mlir_context(import_module=importlib.import_module, shardy=False):
    ir = import_module("jaxlib.mlir.ir")
    stablehlo = import_module("jaxlib.mlir.dialects.stablehlo")
    chlo = import_module("jaxlib.mlir.dialects.chlo")
    try:
        upstream = import_module("jaxlib.mlir._mlir_libs._jax_mlir_ext")
    except ImportError:  # jaxlib <= 0.6
        upstream = import_module("jaxlib.mlir._mlir_libs.register_jax_dialects")
    ctx = ir.Context()
    registry = ir.DialectRegistry()
    upstream.register_dialects(registry)
    ctx.append_dialect_registry(registry)
    ctx.load_all_available_dialects()
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    if shardy:
        import_module("jaxlib.mlir.dialects.sdy").register_dialect(ctx)
    return ctx

"""Lowering rules: higher-order primitives whose params hold programs.

``jit`` (params: jaxpr, name, donated_invars, inline, keep_unused) becomes a
``func.call`` of a private function emitted once per distinct ClosedJaxpr, or
is inlined.  cond/while/scan go here too: their rules build regions with
``ctx.region`` and fill them with ``lower_subjaxpr``.
"""
from __future__ import annotations

from xform._src.primitives.callbacks import debug_callback_p
from xform._src.primitives.custom import custom_jvp_call_p, custom_vjp_call_p
from xform._src.primitives.debug_print import debug_print_p
from xform._src.primitives.jit import closed_call_p, jit_p
from xform._src.primitives.remat import remat_p
from xform._src.lowering.mlir import call_subjaxpr, lower_subjaxpr, register
from xform._src.interpreters import core
from xform._src.primitives.debug_print import print_now
import numpy as np


@register(jit_p, closed_call_p, custom_jvp_call_p, custom_vjp_call_p, remat_p)
def _call(ctx, eqn, *args):
    p = eqn.params
    closed = p.get("jaxpr") or p.get("call_jaxpr") or p.get("fun_jaxpr")
    if closed is None:
        raise NotImplementedError(f"{eqn.primitive.name}: no 'jaxpr'/'call_jaxpr' param to lower")
    if p.get("inline", False):
        return lower_subjaxpr(ctx, closed, list(args))
    return call_subjaxpr(ctx, closed, list(args), name=p.get("name") or eqn.primitive.name)


# ----------------------------------------------------------------- host callbacks


@register(debug_callback_p)
def _debug_callback(ctx, eqn, *operands):
    """``xform.debug.callback`` inside a compiled program: an XLA custom call back into
    Python (jaxlib's FFI python-callback target), side-effecting so XLA keeps it.

    The callable is handed to the PJRT compile call with the module (by index).
    """
    callback = eqn.params["callback"]
    return _side_effect_callback(ctx, operands, lambda arrays: callback(*arrays))


def _side_effect_callback(ctx, operands, fn):
    """A side-effecting custom call that hands the operands (as xform Arrays) to ``fn`` on
    the host and returns nothing."""

    def host_fn(*arrays):
        fn([core.Array(np.array(a)) for a in arrays])
        return ()

    index = ctx.module.add_host_callback(host_fn)
    device = "gpu" if ctx.module.platform in ("cuda", "rocm", "gpu") else "cpu"
    ctx.op("stablehlo.custom_call", list(operands), [],
           f'call_target_name = "xla_ffi_python_{device}_callback", api_version = 4 : i32, '
           f"has_side_effect = true, backend_config = {{index = {index} : ui64}}")
    return []


@register(debug_print_p)
def _debug_print(ctx, eqn, *operands):
    """``xform.debug.print`` (JAX's ``debug_print`` primitive): the same host callback,
    formatting with the equation's params when the program runs."""
    params = eqn.params
    return _side_effect_callback(ctx, operands, lambda arrays: print_now(arrays, **params))

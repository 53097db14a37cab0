"""One adapter per library, so each benchmark program is written once against
the JAX API and run unchanged on xform and on JAX (NumPy gets hand-written
equivalents where a transformation is needed).

``Lib`` fields: ``np`` (the NumPy-like module), ``asarray`` (how a user makes
an array for eager code), ``put`` (a device-resident array for jitted code:
``jax.device_put`` / ``xform.device_put``), the transformations (``None`` when
the library has none) and ``block`` (wait for every leaf of an output).

JAX is imported here and only here, lazily, by the benchmark runner: it is
the yardstick, never a dependency of the package.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np


@dataclasses.dataclass
class Lib:
    name: str
    np: Any
    asarray: Callable
    put: Callable
    block: Callable
    jit: Callable | None = None
    grad: Callable | None = None
    value_and_grad: Callable | None = None
    vmap: Callable | None = None
    checkpoint: Callable | None = None
    scan: Callable | None = None
    relu: Callable | None = None
    log_softmax: Callable | None = None
    saved_residuals: Callable | None = None
    version: str = ""


def _blocker(tree_leaves):
    def block(out):
        b = getattr(out, "block_until_ready", None)
        if b is not None:                  # a lone array: no pytree walk
            b()
            return out
        for leaf in tree_leaves(out):
            b = getattr(leaf, "block_until_ready", None)
            if b is not None:
                b()
        return out
    return block


def _numpy_lib() -> Lib:
    def relu(x):
        return np.maximum(x, 0)

    def log_softmax(x, axis=-1):
        s = x - x.max(axis=axis, keepdims=True)
        return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))
    return Lib("numpy", np, np.asarray, np.asarray, lambda out: out, relu=relu,
               log_softmax=log_softmax, version=np.__version__)


def _xform_lib(device: bool) -> Lib:
    import atexit
    import shutil
    import tempfile

    import xform
    # A fresh persistent compilation cache, so first calls measure cold compiles
    # (the compile cases measure warm ones explicitly).
    cache = tempfile.mkdtemp(prefix="xform-bench-cc-")
    atexit.register(shutil.rmtree, cache, ignore_errors=True)
    xform.config.update("jax_compilation_cache_dir", cache)
    import xform.numpy as xnp
    from xform.tree_util import tree_leaves
    put = getattr(xform, "device_put", None) or xnp.asarray
    sr = getattr(getattr(xform, "ad_checkpoint", None), "saved_residuals", None)
    lax = getattr(xform, "lax", None)
    nn = getattr(xform, "nn", None)
    block = getattr(xform, "block_until_ready", None) or _blocker(tree_leaves)
    return Lib("xform_dev" if device else "xform", xnp, put if device else xnp.asarray, put,
               block, jit=getattr(xform, "jit", None),
               grad=getattr(xform, "grad", None),
               value_and_grad=getattr(xform, "value_and_grad", None),
               vmap=getattr(xform, "vmap", None), checkpoint=getattr(xform, "checkpoint", None),
               scan=getattr(lax, "scan", None), relu=getattr(nn, "relu", None),
               log_softmax=getattr(nn, "log_softmax", None), saved_residuals=sr,
               version=xform.__version__)


def _jax_lib() -> Lib:
    import jax
    import jax.numpy as jnp
    # First calls are measured cold: JAX's persistent cache stays off even where the
    # environment (JAX_COMPILATION_CACHE_DIR) turns it on.
    try:
        jax.config.update("jax_enable_compilation_cache", False)
    except Exception:  # noqa: BLE001
        pass
    try:   # the function behind jax.ad_checkpoint.print_saved_residuals
        from jax._src.ad_checkpoint import saved_residuals
    except ImportError:
        saved_residuals = None
    return Lib("jax", jnp, jnp.asarray, jax.device_put, jax.block_until_ready, jit=jax.jit,
               grad=jax.grad, value_and_grad=jax.value_and_grad, vmap=jax.vmap,
               checkpoint=jax.checkpoint, scan=jax.lax.scan, relu=jax.nn.relu,
               log_softmax=jax.nn.log_softmax, saved_residuals=saved_residuals,
               version=jax.__version__)


def load_libs() -> dict:
    """{name: Lib or skip-reason str} for xform, xform_dev (device-resident eager),
    jax and numpy."""
    out = {}
    for name, make in (("xform", lambda: _xform_lib(False)), ("xform_dev", lambda: _xform_lib(True)),
                       ("jax", _jax_lib), ("numpy", _numpy_lib)):
        try:
            out[name] = make()
        except Exception as e:  # noqa: BLE001
            out[name] = f"{name} unavailable: {type(e).__name__}: {e}"
    return out

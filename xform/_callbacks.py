"""``xform.pure_callback`` and ``xform.experimental.io_callback``: Python on the host,
inside transformed and compiled programs.

Two primitives with results (``debug.callback`` has none):

* ``pure_callback`` -- a pure function: may be removed when its results are unused,
  merged with an identical call, or called once per batch element.  Under ``vmap``
  the ``vmap_method`` says how (JAX's four methods; none given: NotImplementedError).
  Not differentiable: wrap it in ``custom_jvp``/``custom_vjp`` to give it derivatives.
* ``io_callback`` -- effectful: never removed or merged.  ``ordered=True`` keeps
  ordered callbacks in program order (a data dependence chains them in the compiled
  program); ordered callbacks cannot be ``vmap``-ed.

Eagerly the callable runs now; under ``jit`` both lower to XLA's python-callback
custom call, as ``debug.callback`` does; the primitives are in
``primitives/callbacks.py``.  The callable
gets ``xform.Array``s and must return values matching ``result_shape_dtypes`` (shape
and dtype; 64-bit results are canonicalised like JAX when x64 is off).
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import core, dtypes
from xform._src.primitives import callbacks as _callbacks_prims
from xform._src.primitives.callbacks import FlatCallback, io_callback_p, pure_callback_p
from xform._ad_api import as_value
from xform.tree_util import tree_flatten
from xform.tree_util import tree_unflatten
import traceback

__all__ = ["pure_callback"]


def _eager_error(exc):
    """An eager pure/io callback that raised: JAX's JaxRuntimeError, its message holding
    the callback's traceback (as the compiled call's error does)."""
    from xform._src.lowering import runtime     # deferred: import xform stays light
    return runtime.JaxRuntimeError("INTERNAL: CpuCallback error calling callback: "
                                   + "".join(traceback.format_exception(exc)))


_callbacks_prims.eager_error[0] = _eager_error

_VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized", None)


def _result_avals(result_shape_dtypes, what):
    leaves, tree = tree_flatten(result_shape_dtypes)
    avals = []
    for l in leaves:
        if not (hasattr(l, "shape") and hasattr(l, "dtype")):
            raise TypeError(f"{what}: every leaf of result_shape_dtypes needs .shape and "
                            f".dtype (use xform.ShapeDtypeStruct), got {l!r}")
        dt = np.dtype(l.dtype)
        if dtypes.canonicalize_dtype(dt) != dt:
            raise ValueError(f"{what}: result_shape_dtypes cannot specify 64-bit types "
                             f"({dt}) when jax_enable_x64 is disabled")
        avals.append(core.ShapedArray(tuple(int(d) for d in l.shape), dt))
    return tuple(avals), tree


def _flat_args(args, kwargs):
    leaves, tree = tree_flatten((args, kwargs))
    return [as_value(x) for x in leaves], tree


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  **kwargs):
    """Call the pure host function ``callback(*args, **kwargs)``; works under ``jit`` and
    ``vmap`` (per ``vmap_method``) and inside ``custom_jvp``/``custom_vjp`` functions.

    ``result_shape_dtypes``: a pytree of ``ShapeDtypeStruct`` (anything with shape and
    dtype) describing what ``callback`` returns.  ``sharding`` is accepted for JAX
    compatibility (one device: the callback runs on the host either way).
    """
    if not callable(callback):
        raise TypeError(f"pure_callback: expected a callable, got {callback!r}")
    if vmap_method not in _VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods "
                         f"{list(_VMAP_METHODS)}, but got: {vmap_method}")
    avals, out_tree = _result_avals(result_shape_dtypes, "pure_callback")
    leaves, in_tree = _flat_args(args, kwargs)
    outs = pure_callback_p.bind(*leaves, callback=FlatCallback(callback, in_tree,
                                                               "pure_callback"),
                                result_avals=avals, vmap_method=vmap_method)
    return tree_unflatten(out_tree, outs)


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False,
                **kwargs):
    """Call the impure host function ``callback(*args, **kwargs)``; never removed or
    merged; with ``ordered=True`` calls happen in program order (no ``vmap``).
    ``result_shape_dtypes`` may be None for a callback returning nothing."""
    if not callable(callback):
        raise TypeError(f"io_callback: expected a callable, got {callback!r}")
    avals, out_tree = _result_avals(result_shape_dtypes, "io_callback")
    leaves, in_tree = _flat_args(args, kwargs)
    outs = io_callback_p.bind(*leaves, callback=FlatCallback(callback, in_tree, "io_callback"),
                              result_avals=avals, ordered=bool(ordered))
    return tree_unflatten(out_tree, outs)

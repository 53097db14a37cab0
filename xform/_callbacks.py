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
custom call (``lowering/rules_callbacks.py``), as ``debug.callback`` does.  The callable
gets ``xform.Array``s and must return values matching ``result_shape_dtypes`` (shape
and dtype; 64-bit results are canonicalised like JAX when x64 is off).
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import ad, batching, core, dtypes
from xform._src.interpreters.core import Primitive
from xform._src.primitives.host_callback import run_host

__all__ = ["pure_callback"]

_VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized", None)


class FlatCallback:
    """The user's callable over flat leaves -> flat results (hashable by identity)."""

    __slots__ = ("fn", "tree", "what", "__weakref__")

    def __init__(self, fn, tree, what):
        self.fn, self.tree, self.what = fn, tree, what

    def __call__(self, *leaves):
        from xform.tree_util import tree_leaves
        args, kwargs = self.tree.unflatten([_to_array(x) for x in leaves])
        return tree_leaves(self.fn(*args, **kwargs))

    @property
    def __name__(self):
        return getattr(self.fn, "__name__", "callback")


def _to_array(x):
    if isinstance(x, core.Array):
        return x
    if isinstance(x, core.Tracer):
        v = x.to_concrete_value()
        return core.Array(np.asarray(v)) if v is not None else x
    return core.Array(np.asarray(x))


def _result_avals(result_shape_dtypes, what):
    from xform.tree_util import tree_flatten
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
    from xform._ad_api import as_value
    from xform.tree_util import tree_flatten
    leaves, tree = tree_flatten((args, kwargs))
    return [as_value(x) for x in leaves], tree


def _move_front(vals, dims):
    from xform._src.primitives._rules import moveaxis
    return [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]


def _sequential(prim, vals, dims, unroll, **params):
    """One call per batch element, as a scan over the batched arguments."""
    from xform._src.primitives.control_flow import scan
    vals = _move_front(vals, dims)
    batched = [d is not None for d in dims]
    fixed = [v for v, b in zip(vals, batched) if not b]
    xs = [v for v, b in zip(vals, batched) if b]

    def body(carry, x):
        fi, xi = iter(fixed), iter(x)
        return carry, prim.bind(*[next(xi) if b else next(fi) for b in batched], **params)
    _, outs = scan(body, (), xs, unroll=unroll)
    return list(outs), [0] * len(outs)


# ================================================================ pure_callback

pure_callback_p = Primitive("pure_callback", multiple_results=True)
pure_callback_p.impl_takes_arrays = True


@pure_callback_p.def_impl
def _pure_impl(*args, callback, result_avals, vmap_method):
    return [core.Array(v) for v in run_host(callback, result_avals, args)]


pure_callback_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))
pure_callback_p.weak_rule = lambda args, params: False


def _pure_jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `xform.custom_jvp` to use "
                     "callbacks while taking gradients.")


def _pure_transpose(*args, **params):
    raise ValueError("Pure callbacks do not support transpose. Please use `xform.custom_vjp` "
                     "to use callbacks while taking gradients.")


ad.jvp_rules[pure_callback_p] = _pure_jvp
ad.transpose_rules[pure_callback_p] = _pure_transpose


def _pure_batch(axis_data, vals, dims, *, callback, result_avals, vmap_method):
    size = axis_data.size
    batched_avals = tuple(core.ShapedArray((size,) + a.shape, a.dtype) for a in result_avals)
    if vmap_method in ("sequential", "sequential_unrolled"):
        return _sequential(pure_callback_p, vals, dims, vmap_method == "sequential_unrolled",
                           callback=callback, result_avals=result_avals,
                           vmap_method=vmap_method)
    if vmap_method in ("expand_dims", "broadcast_all", "legacy_vectorized"):
        from xform._src.primitives.structural import broadcast_in_dim_p
        vals = _move_front(vals, dims)
        if vmap_method != "legacy_vectorized":
            n = size if vmap_method == "broadcast_all" else 1
            vals = [v if d is not None else broadcast_in_dim_p.bind(
                v, shape=(n,) + core.get_aval(v).shape,
                broadcast_dimensions=tuple(range(1, core.get_aval(v).ndim + 1)))
                for v, d in zip(vals, dims)]
        outs = pure_callback_p.bind(*vals, callback=callback, result_avals=batched_avals,
                                    vmap_method=vmap_method)
        return outs, [0] * len(outs)
    raise NotImplementedError(
        "vmap is only supported for the pure_callback primitive when vmap_method is one of "
        "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all' or "
        f"'legacy_vectorized'; got vmap_method={vmap_method!r}. Pass vmap_method= to "
        "xform.pure_callback.")


batching.batch_rules[pure_callback_p] = _pure_batch


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  **kwargs):
    """Call the pure host function ``callback(*args, **kwargs)``; works under ``jit`` and
    ``vmap`` (per ``vmap_method``) and inside ``custom_jvp``/``custom_vjp`` functions.

    ``result_shape_dtypes``: a pytree of ``ShapeDtypeStruct`` (anything with shape and
    dtype) describing what ``callback`` returns.  ``sharding`` is accepted for JAX
    compatibility (one device: the callback runs on the host either way).
    """
    from xform.tree_util import tree_unflatten
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


# ================================================================ io_callback

io_callback_p = Primitive("io_callback", multiple_results=True)
io_callback_p.impl_takes_arrays = True
io_callback_p.effectful = True


@io_callback_p.def_impl
def _io_impl(*args, callback, result_avals, ordered):
    return [core.Array(v) for v in run_host(callback, result_avals, args)]


io_callback_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))
io_callback_p.weak_rule = lambda args, params: False


def _io_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


def _io_transpose(*args, **params):
    raise ValueError("IO callbacks do not support transpose.")


ad.jvp_rules[io_callback_p] = _io_jvp
ad.transpose_rules[io_callback_p] = _io_transpose


def _io_batch(axis_data, vals, dims, *, callback, result_avals, ordered):
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    return _sequential(io_callback_p, vals, dims, 1, callback=callback,
                       result_avals=result_avals, ordered=False)


batching.batch_rules[io_callback_p] = _io_batch


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False,
                **kwargs):
    """Call the impure host function ``callback(*args, **kwargs)``; never removed or
    merged; with ``ordered=True`` calls happen in program order (no ``vmap``).
    ``result_shape_dtypes`` may be None for a callback returning nothing."""
    from xform.tree_util import tree_unflatten
    if not callable(callback):
        raise TypeError(f"io_callback: expected a callable, got {callback!r}")
    avals, out_tree = _result_avals(result_shape_dtypes, "io_callback")
    leaves, in_tree = _flat_args(args, kwargs)
    outs = io_callback_p.bind(*leaves, callback=FlatCallback(callback, in_tree, "io_callback"),
                              result_avals=avals, ordered=bool(ordered))
    return tree_unflatten(out_tree, outs)

"""Host callbacks: Python functions called from inside transformed and compiled programs.

Three primitives, all lowered to XLA's python-callback custom call
(``lowering/rules_callbacks.py``, ``lowering/rules_calls.py``):

* ``pure_callback`` -- a pure function with results: may be removed when its results
  are unused, or called once per batch element.  Under ``vmap`` its ``vmap_method``
  param says how (JAX's methods).  Not differentiable (JAX's errors).
* ``io_callback`` -- effectful, with results: never removed or merged; ``ordered=True``
  calls keep program order and cannot be ``vmap``-ed.
* ``debug_callback`` -- effectful, no results (``xform.debug.callback``): called with
  primal values under ``grad``, once per batch element under ``vmap``.

None of them is ever merged by CSE (``cse = False``).  ``run_host`` runs a callback on
concrete values and checks its results the same way eagerly and compiled.  The public
functions are ``xform.pure_callback``, ``xform.experimental.io_callback`` and
``xform.debug.callback``.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import ad, batching, core, dtypes, tree_util
from xform._src.interpreters.core import Primitive
from xform._src.primitives._rules import moveaxis
from xform._src.primitives.control_flow import scan
from xform._src.primitives.structural import broadcast_in_dim_p, index_in_dim

__all__: list = []


def run_host(callback, result_avals, args):
    """Call ``callback`` on concrete values; NumPy results checked against the avals."""
    outs = callback(*args)
    if len(outs) != len(result_avals):
        raise RuntimeError(f"Mismatched number of outputs from {callback.what} "
                           f"{callback.__name__!r}. Expected: {len(result_avals)}, "
                           f"Actual: {len(outs)}")
    vals = []
    for i, (o, a) in enumerate(zip(outs, result_avals)):
        v = np.asarray(o)
        v = v.astype(dtypes.canonicalize_dtype(v.dtype), copy=False)
        if v.shape != a.shape:
            raise RuntimeError(f"Incorrect output shape for return value #{i} of "
                               f"{callback.what}: Expected: {a.shape}, Actual: {v.shape}")
        if v.dtype != a.dtype:
            raise RuntimeError(f"Incorrect output dtype for return value #{i} of "
                               f"{callback.what}: Expected: {a.dtype}, Actual: {v.dtype}")
        vals.append(v)
    return vals


# Eagerly a failing pure or io callback raises what it raises compiled (JAX runs even an
# eager call as a compiled program): ``eager_error[0](exc)`` makes that exception (the
# xform layer installs it: jaxlib's JaxRuntimeError)
eager_error = [None]


def _run_eager(callback, result_avals, args):
    try:
        return run_host(callback, result_avals, args)
    except Exception as e:
        if eager_error[0] is None:
            raise
        raise eager_error[0](e) from None


class FlatCallback:
    """The user's callable over flat leaves -> flat results (hashable by identity)."""

    __slots__ = ("fn", "tree", "what", "__weakref__")

    def __init__(self, fn, tree, what):
        self.fn, self.tree, self.what = fn, tree, what

    def __call__(self, *leaves):
        args, kwargs = self.tree.unflatten([_to_array(x) for x in leaves])
        return tree_util.tree_leaves(self.fn(*args, **kwargs))

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


def _move_front(vals, dims):
    return [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]


def _sequential(prim, vals, dims, unroll, **params):
    """One call per batch element, as a scan over the batched arguments."""
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
pure_callback_p.cse = False
pure_callback_p.impl_takes_arrays = True


@pure_callback_p.def_impl
def _pure_impl(*args, callback, result_avals, vmap_method):
    return [core.Array(v) for v in _run_eager(callback, result_avals, args)]


pure_callback_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))


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


# ================================================================ io_callback

io_callback_p = Primitive("io_callback", multiple_results=True)
io_callback_p.cse = False
io_callback_p.impl_takes_arrays = True
io_callback_p.effectful = True


@io_callback_p.def_impl
def _io_impl(*args, callback, result_avals, ordered):
    return [core.Array(v) for v in _run_eager(callback, result_avals, args)]


io_callback_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))


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


# ================================================================ debug_callback

debug_callback_p = Primitive("debug_callback", multiple_results=True)
debug_callback_p.cse = False
debug_callback_p.effectful = True
debug_callback_p.impl_takes_arrays = True


class DebugCallback:
    """The user's callback over flat leaves (compared by identity, hashable)."""

    __slots__ = ("fn", "tree", "__weakref__")

    def __init__(self, fn, tree):
        self.fn = fn
        self.tree = tree

    def __call__(self, *leaves):
        args, kwargs = self.tree.unflatten([_concrete(x) for x in leaves])
        self.fn(*args, **kwargs)

    @property
    def __name__(self):
        return getattr(self.fn, "__name__", "callback")


def _concrete(x):
    if isinstance(x, core.Array) or not isinstance(x, core.Tracer):
        return x
    v = x.to_concrete_value()
    return core.Array(v) if v is not None else x


@debug_callback_p.def_impl
def _callback_impl(*args, callback, ordered):
    callback(*args)
    return []


debug_callback_p.def_abstract_eval(lambda *avals, callback, ordered: [])


def _callback_jvp(primals, tangents, *, callback, ordered):
    debug_callback_p.bind(*primals, callback=callback, ordered=ordered)
    return [], []


ad.jvp_rules[debug_callback_p] = _callback_jvp


def _callback_batch(axis_data, vals, dims, *, callback, ordered):
    for i in range(axis_data.size):
        row = [v if d is None else index_in_dim(v, i, d, keepdims=False)
               for v, d in zip(vals, dims)]
        debug_callback_p.bind(*row, callback=callback, ordered=ordered)
    return [], []


batching.batch_rules[debug_callback_p] = _callback_batch

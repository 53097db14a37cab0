"""Foreign function calls: ``ffi_call``, a call of a compiled XLA FFI handler.

The handler is a C/C++ function registered with XLA under a target name
(``xform.ffi.register_ffi_target``); ``ffi_call`` is lowered to a
``stablehlo.custom_call`` of that target (``lowering/rules_ffi.py``), with the
call's keyword arguments as the handler's attributes.  XLA runs it: there is no
NumPy reference, so eagerly the one-equation program is compiled and run
(``core.device_impl_hook``).  Params are JAX's:

* ``target_name``, ``result_avals`` (the results' ``ShapedArray``s),
* ``has_side_effect`` (the call is never removed as dead code nor merged),
* ``vmap_method`` (how ``vmap`` calls it: JAX's methods, as ``pure_callback``),
* ``input_layouts`` / ``output_layouts`` (minor-to-major dimension orders),
* ``input_output_aliases`` (``(input, output)`` pairs sharing a buffer),
* ``custom_call_api_version`` (4: the typed FFI), ``legacy_backend_config``,
* ``attributes`` (sorted ``(name, value)`` pairs; arrays and dicts wrapped hashable).

Not differentiable (JAX's error names ``custom_jvp``/``custom_vjp``).
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import ad, batching, core
from xform._src.interpreters.core import Primitive
from xform._src.primitives.callbacks import _move_front, _sequential
from xform._src.primitives.structural import broadcast_in_dim_p
from xform._src.interpreters import staging
from xform._src.primitives import jit

__all__: list = []


class HashableArray:
    """A NumPy attribute value held by value in a (hashable) param."""

    __slots__ = ("val",)

    def __init__(self, val):
        self.val = np.array(val, copy=True)
        self.val.setflags(write=False)

    def __hash__(self):
        return hash((self.val.shape, self.val.dtype, self.val.tobytes()))

    def __eq__(self, other):
        return (isinstance(other, HashableArray) and self.val.shape == other.val.shape
                and self.val.dtype == other.val.dtype
                and self.val.tobytes() == other.val.tobytes())

    def __repr__(self):
        return f"HashableArray({self.val!r})"


class FrozenDict:
    """A dict attribute value (a struct of attributes) held by value in a param."""

    __slots__ = ("_d", "_items")

    def __init__(self, d):
        self._d = dict(d)
        self._items = tuple(sorted(wrap_attributes(self._d)))

    def __hash__(self):
        return hash(self._items)

    def __eq__(self, other):
        return isinstance(other, FrozenDict) and self._items == other._items

    def __repr__(self):
        return f"FrozenDict({self._d!r})"


def wrap_attributes(kwargs) -> tuple:
    """Keyword arguments as sorted, hashable ``(name, value)`` pairs."""
    out = []
    for k, v in sorted(kwargs.items()):
        if isinstance(v, np.ndarray):
            out.append((k, HashableArray(v)))
        elif isinstance(v, dict):
            out.append((k, FrozenDict(v)))
        else:
            try:
                hash(v)
            except TypeError:
                raise TypeError(f"Non-hashable keyword argument to ffi_call {k}: {v!r}; "
                                "attributes are scalars, strings, NumPy arrays or dicts "
                                "of those") from None
            out.append((k, v))
    return tuple(out)


def unwrap_attributes(attributes) -> dict:
    return {k: v.val if isinstance(v, HashableArray) else
            v._d if isinstance(v, FrozenDict) else v for k, v in attributes}


ffi_call_p = Primitive("ffi_call", multiple_results=True)
ffi_call_p.impl_takes_arrays = True


def _ffi_abstract(*avals, result_avals, **_):
    return list(result_avals)


_programs: dict = {}   # (params, input avals) -> the one-equation program


def _ffi_impl(*args, **params):
    # XLA runs the handler: compile the one-equation program (once) and run it
    args = [a if isinstance(a, core.Array) else core.Array(np.asarray(a)) for a in args]
    avals = tuple(core.get_aval(a) for a in args)
    key = (tuple(sorted(params.items())), avals)
    closed = _programs.get(key)
    if closed is None:
        with core.set_current_trace(core.EVAL_TRACE):
            closed = staging.trace_to_closed_jaxpr(
                lambda *xs: list(ffi_call_p.bind(*xs, **params)), list(avals),
                name="ffi_call")
        if len(_programs) > 256:
            _programs.clear()
        _programs[key] = closed
    prog = jit.get_program(closed, (False,) * len(args), None, params["target_name"])
    return list(prog(*args))


ffi_call_p.def_abstract_eval(_ffi_abstract)
ffi_call_p.def_impl(_ffi_impl)


def _not_differentiable(*_, target_name, **__):
    raise ValueError(f"The FFI call to `{target_name}` cannot be differentiated. You can use "
                     "`xform.custom_jvp` or `xform.custom_vjp` to add support.")


def _ffi_jvp(primals, tangents, *, target_name, **params):
    _not_differentiable(target_name=target_name)


ad.jvp_rules[ffi_call_p] = _ffi_jvp
ad.transpose_rules[ffi_call_p] = _not_differentiable


def _batch_layouts(layouts):
    # the new leading (slowest) axis comes last in minor-to-major order
    return tuple(None if lay is None else tuple(n + 1 for n in lay) + (0,) for lay in layouts)


def _ffi_batch(axis_data, vals, dims, *, vmap_method, result_avals, **params):
    size = axis_data.size
    if vmap_method in ("sequential", "sequential_unrolled"):
        return _sequential(ffi_call_p, vals, dims, vmap_method == "sequential_unrolled",
                           vmap_method=vmap_method, result_avals=result_avals, **params)
    if vmap_method not in ("expand_dims", "broadcast_all", "legacy_vectorized"):
        raise NotImplementedError(
            "vmap is only supported for the ffi_call primitive when vmap_method is one of "
            "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all' or "
            f"'legacy_vectorized'; got vmap_method={vmap_method!r}. Pass vmap_method= to "
            "xform.ffi.ffi_call.")
    batched_avals = tuple(core.ShapedArray((size,) + a.shape, a.dtype) for a in result_avals)
    params = dict(params, output_layouts=_batch_layouts(params["output_layouts"]))
    vals = _move_front(vals, dims)
    if vmap_method == "legacy_vectorized":
        params["input_layouts"] = tuple(
            lay if d is None else _batch_layouts((lay,))[0]
            for lay, d in zip(params["input_layouts"], dims))
    else:
        n = size if vmap_method == "broadcast_all" else 1
        vals = [v if d is not None else broadcast_in_dim_p.bind(
            v, shape=(n,) + core.get_aval(v).shape,
            broadcast_dimensions=tuple(range(1, core.get_aval(v).ndim + 1)))
            for v, d in zip(vals, dims)]
        params["input_layouts"] = _batch_layouts(params["input_layouts"])
    outs = ffi_call_p.bind(*vals, vmap_method=vmap_method, result_avals=batched_avals,
                           **params)
    return outs, [0] * len(outs)


batching.batch_rules[ffi_call_p] = _ffi_batch

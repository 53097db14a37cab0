"""``xform.vmap``: the user-facing vectorising map (JAX's signature and errors).

The work is done by ``interpreters.batching``; this module turns pytrees of
arguments and ``in_axes``/``out_axes`` prefixes into flat lists of values and
batch axes, checks them, and reports misuse in JAX's words (naming the
offending argument) before any tracing starts.
"""
from __future__ import annotations

import collections
import functools
import inspect

import numpy as np

from xform._wrapping import wraps as _wraps
from xform._src.interpreters import refs as _refs
from xform._src.interpreters import batching, core
from xform._src.interpreters.dtypes import canonicalize_dtype
from xform import tree_util

__all__ = ["vmap"]


def _none_leaf(x):
    return x is None


# Types that vmap maps as a whole rather than leaf by leaf (JAX's
# batching.register_vmappable), e.g. a BCOO array: its leaves (data, indices) are mapped
# along the same axis and the object's own metadata (its shape) loses / gains that axis.
#   type -> (in_axis(x, axis) -> canonical axis or raise,
#            out_axis(elt, axis) -> canonical axis or raise,
#            to_elt(x, axis) -> the per-element object (its leaves already per element),
#            from_elt(elt, axis_size, axis) -> the batched object)
_VMAPPABLE: dict = {}


def register_vmappable(cls, in_axis, out_axis, to_elt, from_elt):
    """Make ``vmap`` map instances of ``cls`` as a whole (see ``_VMAPPABLE``)."""
    _VMAPPABLE[cls] = (in_axis, out_axis, to_elt, from_elt)


def _is_vmappable(x):
    return type(x) in _VMAPPABLE


def _vmappable_axes(tree, dims, out):
    """The vmappable nodes of ``tree`` as (coarse position, handler, axis), their leaves'
    entries of ``dims`` set to the node's canonical axis."""
    coarse = tree_util.tree_leaves(tree, is_leaf=_is_vmappable)
    spec, i = [], 0
    for pos, node in enumerate(coarse):
        n = len(tree_util.tree_leaves(node))
        if _is_vmappable(node):
            handler = _VMAPPABLE[type(node)]
            axes = set(dims[i:i + n])
            if len(axes) > 1:
                raise ValueError(f"vmap: a {type(node).__name__} must be mapped along one "
                                 f"axis, got axes {sorted(axes, key=str)} for its leaves")
            d = axes.pop() if axes else None
            if d is not None:
                d = (handler[1] if out else handler[0])(node, d)
                dims[i:i + n] = [d] * n
            spec.append((pos, handler, d))
        i += n
    return spec


def _rebuild(tree, spec, fn):
    coarse, ctree = tree_util.tree_flatten(tree, is_leaf=_is_vmappable)
    for pos, handler, d in spec:
        if d is not None:
            coarse[pos] = fn(handler, coarse[pos], d)
    return tree_util.tree_unflatten(ctree, coarse)


def _check_axes_spec(name, spec, what):
    for leaf in tree_util.tree_leaves(spec, is_leaf=_none_leaf):
        if not (leaf is None or type(leaf) is int):
            raise TypeError(f"vmap {name} must be an int, None, or (nested) container with "
                            f"those types as leaves, but got {what}.")


def _flatten_axes(name, spec, tree, shown=None):
    """Broadcast the prefix ``spec`` (ints/None) against ``tree``: one axis per leaf.

    ``shown``: the (spec, tree) pair to describe in the error (in_axes against
    the positional arguments only, as JAX reports it)."""
    try:
        return tree_util.broadcast_prefix(spec, tree, is_leaf=_none_leaf)
    except ValueError:
        spec, tree = shown or (spec, tree)
        try:
            tree_util.broadcast_prefix(spec, tree, is_leaf=_none_leaf)
            detail = ""
        except ValueError as e:
            detail = "\n  " + str(e).replace("broadcast_prefix prefix_tree", f"vmap {name}")
        raise ValueError(f"vmap {name} specification must be a tree prefix of the "
                         f"corresponding value, got specification {spec} for value tree "
                         f"{tree_util.tree_structure(tree)}.{detail}") from None


def _type_str(x):
    if isinstance(x, _refs.Ref):
        return _refs.ref_error(x)
    try:
        return core.get_aval(x).str_short(short_dtypes=False)
    except TypeError:
        return "unknown"


def _leaf_names(fun, args, kwargs):
    """A readable description per flat leaf: 'argument x[1] of type float32[3]'."""
    try:
        params = list(inspect.signature(fun).bind(*args, **kwargs).signature.parameters)
    except (TypeError, ValueError):
        params = None
    out = []
    for path, x in tree_util.tree_flatten_with_path(args)[0]:
        i = path[0].idx
        if params is None or i >= len(params):
            where = f"args{tree_util.keystr(path)}"
        else:
            where = f"argument {params[i]}{tree_util.keystr(path[1:])}"
        out.append(f"{where} of type {_type_str(x)}")
    for path, x in tree_util.tree_flatten_with_path(kwargs)[0]:
        out.append(f"kwargs{tree_util.keystr(path)} of type {_type_str(x)}")
    return out


def _as_value(x):
    """Mapped leaves become arrays the engine accepts (NumPy dtypes canonicalised)."""
    if isinstance(x, (core.Array, core.Tracer)):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        dt = canonicalize_dtype(x.dtype)
        return core.Array(np.asarray(x, dt))
    return x


def _mapped_size(fun, args, kwargs, leaves, dims, axis_size):
    """Canonical in-dims and the common mapped size (JAX's checks and messages)."""
    names = None
    sizes, canon = [], []
    for i, (x, d) in enumerate(zip(leaves, dims)):
        if d is None:
            sizes.append(None)
            canon.append(None)
            continue
        try:
            shape = core.get_aval(x).shape
        except TypeError:
            names = names or _leaf_names(fun, args, kwargs)
            raise TypeError(f"vmap was requested to map {names[i].split(' of type')[0]} "
                            f"along axis {d}, but it is a {type(x).__name__}, not an array. "
                            "Pass an array, or use in_axes=None for that argument.") from None
        nd = len(shape)
        if not -nd <= d < nd:
            names = names or _leaf_names(fun, args, kwargs)
            min_rank = d + 1 if d >= 0 else -d
            raise ValueError(
                f"vmap was requested to map its argument along axis {d}, which implies that "
                f"its rank should be at least {min_rank}, but is only {nd} (its shape is "
                f"{shape}): {names[i]}. Use in_axes to pick an existing axis or None to not "
                "map it.")
        d = d % nd
        canon.append(d)
        sizes.append(shape[d])
    present = [s for s in sizes if s is not None]
    distinct = set(present) | ({axis_size} if axis_size is not None else set())
    if len(distinct) == 1:
        return canon, distinct.pop()
    if not distinct:
        if not leaves:
            raise ValueError("vmap wrapped function must be passed at least one argument "
                             "containing an array or axis_size must be specified, got empty "
                             f"*args={args} and **kwargs={kwargs}")
        raise ValueError("vmap must have at least one non-None value in in_axes or axis_size "
                         "must be specified (no argument is mapped, so the size of the mapped "
                         "axis is unknown)")
    names = names or _leaf_names(fun, args, kwargs)
    msg = ["vmap got inconsistent sizes for array axes to be mapped:\n"]
    if axis_size is not None:
        msg.append(f"  * the `axis_size` argument was {axis_size};\n")
    counts = collections.Counter(present).most_common()
    for k, (sz, ct) in enumerate(counts):
        i = sizes.index(sz)
        if ct == 1:
            msg.append(f"  * one axis had size {sz}: axis {dims[i]} of {names[i]};\n")
        elif k == 0:
            msg.append(f"  * most axes ({ct} of them) had size {sz}, e.g. axis {dims[i]} of "
                       f"{names[i]};\n")
        else:
            msg.append(f"  * some axes ({ct} of them) had size {sz}, e.g. axis {dims[i]} of "
                       f"{names[i]};\n")
    raise ValueError("".join(msg)[:-2])


def _check_ref_aliases(fun, refs):
    seen = set()
    for r in refs:
        if id(r) in seen:
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                f"function, but when tracing {getattr(fun, '__name__', fun)} for vmap the "
                f"mutable array reference of type {_refs.ref_error(r)} appeared more than "
                "once.")
        seen.add(id(r))


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """Vectorising map: ``fun`` mapped over an axis of its arguments.

    ``in_axes``: an int, None, or a tuple with one pytree prefix (ints / None)
    per positional argument; keyword arguments are always mapped over axis 0
    (as JAX).  ``out_axes``: a prefix of the output (None keeps an unmapped
    output unmapped).  ``axis_name`` names the axis for collectives
    (``xform.lax.psum`` ...); ``axis_size`` is needed when no argument is mapped.
    ``spmd_axis_name`` is accepted for compatibility (single device: no effect).
    """
    if not callable(fun):
        raise TypeError(f"vmap requires a callable as its first argument, got {fun!r} of "
                        f"type {type(fun).__name__}.")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (in_axes is None or type(in_axes) in (int, tuple)):
        raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding "
                        f"to the positional arguments passed to the function, but got {in_axes}.")
    _check_axes_spec("in_axes", in_axes, in_axes)
    _check_axes_spec("out_axes", out_axes, out_axes)
    if axis_size is not None and (not isinstance(axis_size, (int, np.integer))
                                  or isinstance(axis_size, bool) or axis_size < 0):
        raise TypeError(f"vmap axis_size must be a non-negative int, got {axis_size!r}.")

    @_wraps(fun)
    def vmap_f(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError("vmap in_axes must be an int, None, or a tuple of entries "
                             "corresponding to the positional arguments passed to the function, "
                             f"but got len(in_axes)={len(in_axes)}, len(args)={len(args)}")
        leaves, in_tree = tree_util.tree_flatten((args, kwargs))
        dims = _flatten_axes("in_axes", (in_axes, 0), (args, kwargs), (in_axes, args))
        in_spec = _vmappable_axes((args, kwargs), dims, False) if _VMAPPABLE else []
        # references mapped along an axis: their values are batched in, and the final
        # values come back out (with the same axis) and are written back
        ref_pos = [i for i, (x, d) in enumerate(zip(leaves, dims))
                   if d is not None and isinstance(x, _refs.Ref)]
        ref_objs = [leaves[i] for i in ref_pos]
        if ref_pos:
            _check_ref_aliases(fun, [x for x in leaves if isinstance(x, _refs.Ref)])
            leaves = list(leaves)
            for i in ref_pos:
                leaves[i] = _refs.read(leaves[i], "vmap")
        dims, size = _mapped_size(fun, args, kwargs, leaves, dims, axis_size)
        leaves = [x if d is None else _as_value(x) for x, d in zip(leaves, dims)]
        ref_dims = [dims[i] for i in ref_pos]
        axis_data = batching.AxisData(int(size), axis_name, spmd_axis_name)
        out_tree = []

        def flat_fun(*flat):
            with _refs.Scope("vmap") as scope:
                if ref_pos:
                    flat = list(flat)
                    local = []
                    for i in ref_pos:
                        flat[i] = _refs.Ref._make(flat[i], flat[i].aval)
                        local.append(flat[i])
                a, k = tree_util.tree_unflatten(in_tree, flat)
                if in_spec:
                    a, k = _rebuild((a, k), in_spec, lambda h, x, d: h[2](x, d))
                out = fun(*a, **k)
                ref_finals = [_refs.read(r, "vmap") for r in local] if ref_pos else []
            if scope.order:       # it used references it closes over
                _refs.discharge_transform(scope)
            out_leaves, tree = tree_util.tree_flatten(out)
            for o in out_leaves:
                if isinstance(o, _refs.Ref):
                    raise ValueError(
                        f"the function vmapped by vmap returned a mutable array reference "
                        f"of type {_refs.ref_error(o)}, but mutable array references cannot "
                        "be returned; return its value (ref[...]) instead")
                if not isinstance(o, (core.Tracer, core.Array, np.ndarray, np.generic,
                                      int, float, complex, bool)):
                    raise TypeError(f"Output from batched function {o!r} with type "
                                    f"{type(o)} is not a valid xform array type.")
            out_tree.append((out, tree))
            return out_leaves + ref_finals

        out_spec = []

        def out_dims(n):
            out, _ = out_tree[0]
            dims = _flatten_axes("out_axes", out_axes, out)
            if _VMAPPABLE:
                out_spec[:] = _vmappable_axes(out, dims, True)
            return list(dims) + ref_dims

        try:
            outs, _ = batching.batch_flat(flat_fun, axis_data, leaves, dims, out_dims)
        except batching.SpecMatchError as e:
            if axis_name is not None:
                raise ValueError(f"vmap has mapped output (axis_name={axis_name}) but out_axes "
                                 f"is {e.dst}") from None
            out, _ = out_tree[0]
            path = tree_util.tree_flatten_with_path(out)[0][e.index][0]
            raise ValueError(f"at vmap out_axes{tree_util.keystr(path)}, got axis spec "
                             f"{e.dst} but output was batched on axis {e.src}") from None
        if ref_pos:
            outs = list(outs)
            for r, v in zip(ref_objs, outs[len(outs) - len(ref_pos):]):
                _refs.write(r, v, "vmap")
            del outs[len(outs) - len(ref_pos):]
        res = tree_util.tree_unflatten(out_tree[0][1], outs)
        if out_spec:
            res = _rebuild(res, out_spec, lambda h, x, d: h[3](x, int(size), d))
        return res

    doc = (f"Vectorized version of {getattr(fun, '__name__', fun)}. Takes similar arguments "
           f"as {getattr(fun, '__name__', fun)} but with additional array axes over which it "
           "is mapped.")
    if getattr(fun, "__doc__", None):
        doc += "\n\nOriginal documentation:\n\n" + fun.__doc__
    vmap_f.__doc__ = doc
    return vmap_f

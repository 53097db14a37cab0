"""Collectives over named axes: psum, pmax, pmin, all_gather, psum_scatter, axis_index.

On one device a named axis exists only inside ``xform.vmap(..., axis_name=n)``,
so a collective's meaning is its batching rule: when the rule's axis is one
of the names, reduce (or gather, or index) over the batch dimension; otherwise
re-bind at the parent trace with the batch dimension kept, where an outer vmap
may own the name.  The primitives are marked ``is_collective`` so the batching
interpreter calls the rule even when nothing is batched (``psum(1., 'i')``
is the axis size; ``axis_index('i')`` has no inputs at all).

Eager evaluation means no vmap bound the name: the impl raises ``NameError``.
The user-level functions check names up front (walking the trace chain) so
the error lists the axis names that *are* bound.

Semantics follow JAX: psum is linear and transposes to psum (it is psum +
broadcast); all_gather transposes to psum_scatter and back; pmax/pmin have no
derivative; psum of booleans counts (int32); pmean of integers is a float.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import batching, core
from xform._src.interpreters.core import Primitive
from xform._src.interpreters.dtypes import default_float_dtype, int32
from xform._src.primitives._rules import deflinear
from xform._src.interpreters import tree_util
from xform._src.primitives import elementwise
from xform._src.primitives import reductions
from xform._src.primitives import structural

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "axis_index",
           "axis_size"]


class CollectivePrimitive(Primitive):
    """A primitive over named axes: its batching rule runs even for unbatched inputs."""

    is_collective = True


def _s():
    return structural


def _red():
    return reductions


def _ew():
    return elementwise


def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _check_bound(names, api):
    bound = {n for n, _ in batching.bound_axes()}
    for n in names:
        if n not in bound:
            raise batching.unbound_axis_error(n, f"xform.lax.{api}")


def _unbound_impl(api):
    def impl(*args, **params):
        name = params.get("axes", params.get("axis_name"))
        name = _names(name)[0] if name is not None else "?"
        raise batching.unbound_axis_error(name, f"{api} (evaluated outside any vmap)")
    return impl


def _tree_map(f, tree):
    return tree_util.tree_map(f, tree)


def _no_groups(axis_index_groups):
    if axis_index_groups is not None:
        raise NotImplementedError("axis_index_groups is not supported by vmap collectives "
                                  "(xform runs collectives on one device via vmap); reduce "
                                  "over the whole named axis instead.")


def _full(value, aval):
    """An array of ``aval``'s shape, dtype and weak type filled with ``value``."""
    scalar = core.Array(np.asarray(value, aval.dtype), weak_type=aval.weak_type)
    return _s().broadcast_in_dim(scalar, aval.shape, ()) if aval.shape else scalar


def _to_front(x, d):
    return batching.moveaxis(x, d, 0)


# --- psum / pmax / pmin ----------------------------------------------------------------


def _reduction_rule(prim, reducer, if_unmapped):
    """Reduce over the batch dim when this vmap's name is among ``axes``; pass the
    remaining names (and non-matching ones) on to the parent trace."""
    def rule(axis_data, vals, dims, *, axes, axis_index_groups):
        (x,), (d,) = vals, dims
        if axis_data.name not in axes:
            return prim.bind(x, axes=axes, axis_index_groups=axis_index_groups), d
        _no_groups(axis_index_groups)
        y = if_unmapped(x, axis_data.size) if d is None else reducer(x, (d,))
        rest = tuple(a for a in axes if a != axis_data.name)
        if rest:
            y = prim.bind(y, axes=rest, axis_index_groups=None)
        return y, None
    return rule


def _times_size(x, size):
    aval = core.get_aval(x)
    return _ew().mul_p.bind(x if not isinstance(x, (int, float, complex, bool))
                            else _full(x, aval), _full(size, aval))


def _reduction_prim(name, reducer, if_unmapped):
    p = CollectivePrimitive(name)
    p.def_abstract_eval(lambda x, *, axes, axis_index_groups: x)
    p.def_impl(_unbound_impl(name))
    batching.batch_rules[p] = _reduction_rule(p, reducer, if_unmapped)
    return p


psum_p = _reduction_prim("psum", lambda x, axes: _red().reduce_sum(x, axes), _times_size)
deflinear(psum_p, lambda ct, x, *, axes, axis_index_groups:
             [psum_p.bind(ct, axes=axes, axis_index_groups=axis_index_groups)])

pmax_p = _reduction_prim("pmax", lambda x, axes: _red().reduce_max(x, axes), lambda x, n: x)
pmax_p.missing_rules["jvp"] = (
    "the maximum over devices is not differentiable here; JAX defines no derivative for "
    "it either")
pmin_p = _reduction_prim("pmin", lambda x, axes: _red().reduce_min(x, axes), lambda x, n: x)
pmin_p.missing_rules["jvp"] = (
    "the minimum over devices is not differentiable here; JAX defines no derivative for "
    "it either")


def _allreduce(prim, api, x, axis_name, axis_index_groups):
    names = _names(axis_name)
    _no_groups(axis_index_groups)
    _check_bound(names, api)
    if not names:
        return x

    def leaf(v):
        aval = core.get_aval(v)
        if aval.dtype == np.bool_ and prim is psum_p:
            v = _ew().convert_element_type(v, int32)
        elif isinstance(v, (int, float, complex, bool)):
            v = _full(v, aval)
        return prim.bind(v, axes=names, axis_index_groups=None)
    return _tree_map(leaf, x)


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum of ``x`` over the named vmap axis (or tuple of axes); pytrees leafwise.

    A value that does not vary along the axis is multiplied by its size, so
    ``psum(1, 'i')`` is the size of axis ``i``.  Booleans are counted (int32).
    """
    return _allreduce(psum_p, "psum", x, axis_name, axis_index_groups)


def pmax(x, axis_name, *, axis_index_groups=None):
    """Maximum of ``x`` over the named axis (or axes)."""
    return _allreduce(pmax_p, "pmax", x, axis_name, axis_index_groups)


def pmin(x, axis_name, *, axis_index_groups=None):
    """Minimum of ``x`` over the named axis (or axes)."""
    return _allreduce(pmin_p, "pmin", x, axis_name, axis_index_groups)


def axis_size(axis_name) -> int:
    """The size of a named axis (product over a tuple of names): a Python int."""
    n = 1
    for name in _names(axis_name):
        n *= batching.axis_size(name)
    return n


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean of ``x`` over the named axis (or axes): ``psum(x) / axis_size``.

    Integer and boolean inputs give floats (true division, as JAX)."""
    names = _names(axis_name)
    _no_groups(axis_index_groups)
    _check_bound(names, "pmean")
    n = axis_size(names)

    def leaf(v):
        aval = core.get_aval(v)
        if aval.dtype.kind in "biu":
            v = _ew().convert_element_type(v, default_float_dtype())
            aval = core.get_aval(v)
        elif isinstance(v, (int, float, complex)):
            v = _full(v, aval)
        s = psum_p.bind(v, axes=names, axis_index_groups=None) if names else v
        return _ew().div_p.bind(s, _full(n, aval))
    return _tree_map(leaf, x)


# --- axis_index -------------------------------------------------------------------------

axis_index_p = CollectivePrimitive("axis_index")
axis_index_p.missing_rules["jvp"] = (
    "its result is an integer index; JAX defines no derivative for it either")
axis_index_p.def_abstract_eval(lambda *, axis_name: core.ShapedArray((), int32))
axis_index_p.def_impl(_unbound_impl("axis_index"))


def _axis_index_rule(axis_data, vals, dims, *, axis_name):
    if axis_data.name != axis_name:
        return axis_index_p.bind(axis_name=axis_name), None
    return _s().iota(int32, axis_data.size), 0


batching.batch_rules[axis_index_p] = _axis_index_rule


def axis_index(axis_name):
    """This example's position along the named axis (int32).  For a tuple of names,
    the row-major linear index over them (the first name is the slowest)."""
    names = _names(axis_name)
    _check_bound(names, "axis_index")
    idx = None
    for name in names:
        i = axis_index_p.bind(axis_name=name)
        if idx is None:
            idx = i
        else:
            n = np.asarray(batching.axis_size(name), int32)
            idx = _ew().add_p.bind(_ew().mul_p.bind(idx, n), i)
    return idx if idx is not None else np.int32(0)


# --- all_gather / psum_scatter ----------------------------------------------------------


def _merge(x, axis):
    """Fold ``axis`` into ``axis + 1`` (the tiled layout): shape[axis] * shape[axis+1]."""
    shape = core.get_aval(x).shape
    new = shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2:]
    return _s().reshape(x, new)


def _split(x, axis, n):
    """Split ``axis`` into (n, shape[axis] // n)."""
    shape = core.get_aval(x).shape
    new = shape[:axis] + (n, shape[axis] // n) + shape[axis + 1:]
    return _s().reshape(x, new)


def _all_gather_abstract(x, *, all_gather_dimension, axis_name, axis_index_groups, axis_size,
                         tiled):
    g = all_gather_dimension
    if tiled:
        shape = x.shape[:g] + (x.shape[g] * axis_size,) + x.shape[g + 1:]
    else:
        shape = x.shape[:g] + (axis_size,) + x.shape[g:]
    return x.update(shape=shape)


all_gather_p = CollectivePrimitive("all_gather")
all_gather_p.def_abstract_eval(_all_gather_abstract)
all_gather_p.def_impl(_unbound_impl("all_gather"))


def _all_gather_rule(axis_data, vals, dims, *, all_gather_dimension, axis_name,
                     axis_index_groups, axis_size, tiled):
    (x,), (d,) = vals, dims
    g = all_gather_dimension
    if axis_data.name not in axis_name:
        if d is None:
            return all_gather_p.bind(x, all_gather_dimension=g, axis_name=axis_name,
                                     axis_index_groups=axis_index_groups,
                                     axis_size=axis_size, tiled=tiled), None
        return all_gather_p.bind(_to_front(x, d), all_gather_dimension=g + 1,
                                 axis_name=axis_name, axis_index_groups=axis_index_groups,
                                 axis_size=axis_size, tiled=tiled), 0
    if d is None:
        y = batching.broadcast_batched(x, axis_data.size, g)
    else:
        y = batching.moveaxis(x, d, g)
    return (_merge(y, g) if tiled else y), None


batching.batch_rules[all_gather_p] = _all_gather_rule


def _reduce_scatter_abstract(x, *, scatter_dimension, axis_name, axis_index_groups, axis_size,
                             tiled):
    s = scatter_dimension
    n = x.shape[s]
    if tiled:
        if n % axis_size:
            raise ValueError(f"psum_scatter: dimension {s} of {x.str_short()} (size {n}) must "
                             f"be divisible by the size {axis_size} of axis {axis_name!r}.")
        shape = x.shape[:s] + (n // axis_size,) + x.shape[s + 1:]
    else:
        if n != axis_size:
            raise ValueError(f"psum_scatter: dimension {s} of {x.str_short()} (size {n}) must "
                             f"equal the size {axis_size} of axis {axis_name!r} (or pass "
                             "tiled=True).")
        shape = x.shape[:s] + x.shape[s + 1:]
    return x.update(shape=shape)


reduce_scatter_p = CollectivePrimitive("reduce_scatter")
reduce_scatter_p.def_abstract_eval(_reduce_scatter_abstract)
reduce_scatter_p.def_impl(_unbound_impl("psum_scatter"))


def _reduce_scatter_rule(axis_data, vals, dims, *, scatter_dimension, axis_name,
                         axis_index_groups, axis_size, tiled):
    (x,), (d,) = vals, dims
    s = scatter_dimension
    params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups,
                  axis_size=axis_size, tiled=tiled)
    if axis_data.name not in axis_name:
        if d is None:
            return reduce_scatter_p.bind(x, scatter_dimension=s, **params), None
        return reduce_scatter_p.bind(_to_front(x, d), scatter_dimension=s + 1, **params), 0
    # Example b receives block b of the sum over all examples: the scattered
    # dimension of the sum *is* the new batch dimension.
    y = _times_size(x, axis_data.size) if d is None else _red().reduce_sum(x, (d,))
    if tiled:
        y = _split(y, s, axis_data.size)
    return y, s


batching.batch_rules[reduce_scatter_p] = _reduce_scatter_rule

deflinear(all_gather_p, lambda ct, x, *, all_gather_dimension, axis_name, axis_index_groups,
             axis_size, tiled: [reduce_scatter_p.bind(
                 ct, scatter_dimension=all_gather_dimension, axis_name=axis_name,
                 axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)])
deflinear(reduce_scatter_p, lambda ct, x, *, scatter_dimension, axis_name, axis_index_groups,
             axis_size, tiled: [all_gather_p.bind(
                 ct, all_gather_dimension=scatter_dimension, axis_name=axis_name,
                 axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)])


def _one_name(axis_name, api):
    names = _names(axis_name)
    if len(names) != 1:
        raise NotImplementedError(f"xform.lax.{api} over several axes {names} is not "
                                  "supported; nest one call per axis name.")
    return names[0]


def _canon_dim(dim, ndim, api, what, aval):
    """``dim`` in ``[-ndim, ndim)`` made non-negative (ndim counts a new axis if any)."""
    if not -ndim <= dim < ndim:
        raise ValueError(f"xform.lax.{api}: {what}={dim} is out of bounds for an input "
                         f"{aval.str_short()} (valid: {-ndim} .. {ndim - 1}).")
    return dim % ndim


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
    """Stack (or, with ``tiled``, concatenate) ``x`` from every position of the named axis
    along a new axis ``axis`` of the result."""
    name = _one_name(axis_name, "all_gather")
    _no_groups(axis_index_groups)
    _check_bound((name,), "all_gather")
    n = batching.axis_size(name)

    def leaf(v):
        aval = core.get_aval(v)
        if isinstance(v, (int, float, complex, bool)):
            v = _full(v, aval)
        if tiled and aval.ndim == 0:
            raise ValueError("xform.lax.all_gather(tiled=True) needs an array of rank >= 1, "
                             f"got {aval.str_short()}.")
        g = _canon_dim(axis, aval.ndim + (not tiled), "all_gather", "axis", aval)
        return all_gather_p.bind(v, all_gather_dimension=g, axis_name=(name,),
                                 axis_index_groups=None, axis_size=n, tiled=bool(tiled))
    return _tree_map(leaf, x)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """Sum over the named axis, each position keeping only its own block of
    ``scatter_dimension`` (which must have the axis size, or a multiple if ``tiled``)."""
    name = _one_name(axis_name, "psum_scatter")
    _no_groups(axis_index_groups)
    _check_bound((name,), "psum_scatter")
    n = batching.axis_size(name)

    def leaf(v):
        aval = core.get_aval(v)
        if aval.ndim == 0:
            raise ValueError("xform.lax.psum_scatter needs an array of rank >= 1, got "
                             f"{aval.str_short()}.")
        s = _canon_dim(scatter_dimension, aval.ndim, "psum_scatter", "scatter_dimension",
                       aval)
        params = dict(scatter_dimension=s, axis_name=(name,), axis_index_groups=None,
                      axis_size=n, tiled=bool(tiled))
        _reduce_scatter_abstract(aval, **params)  # shape check before any rule runs
        return reduce_scatter_p.bind(v, scatter_dimension=s, axis_name=name,
                                     axis_index_groups=None, axis_size=n, tiled=bool(tiled))
    return _tree_map(leaf, x)

"""``xform.experimental.layout``: JAX's ``Layout``, ``Format`` and ``with_layout_constraint``.

A ``Layout`` says how an array's elements are ordered in device memory
(``major_to_minor``: the dimensions from slowest- to fastest-varying, plus an
optional tiling); a ``Format`` pairs a layout with a sharding.  ``Array.format`` and
``jit(f).lower(...).compile().input_formats``/``output_formats`` report them.

xform lays every array out in the default (row-major, untiled) layout, which is what
XLA's CPU backend uses by default: ``Format(Layout.AUTO | None | default Layout,
sharding)`` is accepted wherever JAX accepts a sharding in ``jit``'s
``in_shardings``/``out_shardings``; a non-default concrete layout raises a
``ValueError`` saying so.  ``with_layout_constraint`` checks its layouts against the
values and returns them unchanged (a layout never changes values).
"""
from __future__ import annotations
from xform.sharding import Sharding
from xform.sharding._jit import _broadcast_prefix
from xform.tree_util import tree_leaves
from xform.tree_util import tree_map

__all__ = ["Layout", "Format", "with_layout_constraint"]


class _AutoLayout:
    def __repr__(self):
        return "AUTO"


AutoLayout = _AutoLayout()


class Layout:
    """``major_to_minor``: dimension indices from the slowest- to the fastest-varying;
    ``tiling``: tile shapes (None: untiled); ``sub_byte_element_size_in_bits``: the
    packed size of sub-byte elements (0: the dtype's own)."""

    AUTO = AutoLayout

    def __init__(self, major_to_minor, tiling=None, sub_byte_element_size_in_bits=0):
        self.major_to_minor = tuple(major_to_minor)
        self.tiling = None if tiling is None else tuple(map(tuple, tiling))
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    def __repr__(self):
        return (f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
                f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})")

    def _key(self):
        return (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, Layout) and self._key() == other._key()

    def update(self, **kwargs):
        for k in kwargs:
            if k not in ("major_to_minor", "tiling", "sub_byte_element_size_in_bits"):
                raise TypeError(f"Layout.update() got an unexpected keyword argument {k!r}")
        return Layout(kwargs.get("major_to_minor", self.major_to_minor),
                      kwargs.get("tiling", self.tiling),
                      kwargs.get("sub_byte_element_size_in_bits",
                                 self.sub_byte_element_size_in_bits))

    def check_compatible_aval(self, aval_shape):
        if len(self.major_to_minor) != len(aval_shape):
            raise ValueError("Length of major_to_minor and the rank of the value should "
                             f"match. Got major_to_minor={self.major_to_minor} and "
                             f"shape={tuple(aval_shape)}")

    def _is_default(self):
        return self.major_to_minor == tuple(range(len(self.major_to_minor))) and \
            not self.tiling and not self.sub_byte_element_size_in_bits


def default_layout(ndim) -> Layout:
    """The layout xform gives an array of rank ``ndim`` (row-major, as XLA's CPU
    backend reports it: ``tiling=()``)."""
    return Layout(tuple(range(ndim)), (), 0)


class Format:
    """A layout (a ``Layout``, ``Layout.AUTO`` or None) and a sharding (a ``Sharding``
    or None); a concrete layout needs a concrete sharding, as in JAX."""

    __slots__ = ("layout", "sharding")

    def __init__(self, layout=None, sharding=None):
        if isinstance(layout, Layout) and sharding is None:
            raise ValueError(
                f"Sharding has to be concrete when layout is of type {type(layout)}. Please "
                "pass a `jax.sharding.NamedSharding` or `jax.sharding.SingleDeviceSharding` "
                f"to the sharding argument. Got sharding {sharding}")
        if not isinstance(layout, (Layout, type(None), _AutoLayout)):
            raise TypeError("Invalid value received for the layout argument. Expected values "
                            f"are `None`, `Layout.AUTO` or an instance of `Layout`. Got "
                            f"{layout} of type {type(layout)}")
        if not isinstance(sharding, (Sharding, type(None))):
            raise TypeError("Invalid value received for the sharding argument. Expected "
                            "values are `None` or an instance of `jax.Sharding`. Got "
                            f"{sharding} of type {type(sharding)}")
        self.layout = layout
        self.sharding = sharding

    def __repr__(self):
        return f"Format(layout={self.layout}, sharding={self.sharding})"

    def __hash__(self):
        return hash((self.layout, self.sharding))

    def __eq__(self, other):
        return isinstance(other, Format) and self.layout == other.layout and \
            self.sharding == other.sharding


def _check_supported(layout, where):
    if isinstance(layout, Layout) and not layout._is_default():
        raise ValueError(
            f"{where}: the layout {layout} is not the default row-major layout; xform lays "
            "every array out row-major (major_to_minor=(0, 1, ..., ndim-1), untiled), so "
            "pass Layout.AUTO, None or the default layout.")


def strip_formats(tree, where):
    """``tree`` (shardings, PartitionSpecs, Formats, None) with every ``Format``
    replaced by its sharding, after checking its layout is one xform produces."""

    def one(s):
        if isinstance(s, Format):
            _check_supported(s.layout, where)
            return s.sharding
        return s
    return tree_map(one, tree, is_leaf=lambda s: s is None or isinstance(s, Format))


def array_format(arr) -> Format:
    """``Array.format``: the array's layout (always the default) and sharding."""
    return Format(default_layout(arr.ndim), arr.sharding)


def with_layout_constraint(x, layouts):
    """``x`` (a pytree) with its layout constrained to ``layouts`` (one ``Layout`` or a
    pytree prefix of them): checked against each value's rank; values are unchanged."""
    leaves = tree_leaves(x)
    per_leaf = _broadcast_prefix(layouts, x, "with_layout_constraint layouts",
                                 is_leaf=lambda s: isinstance(s, Layout))
    if any(not isinstance(lay, Layout) for lay in per_leaf):
        raise ValueError("layouts passed to `with_layout_constraint` must be of type "
                         f"`Layout`. Got {[type(lay) for lay in per_leaf]}")
    for leaf, lay in zip(leaves, per_leaf):
        lay.check_compatible_aval(getattr(leaf, "shape", ()))
        _check_supported(lay, "with_layout_constraint")
    return x

"""``xform.tree``: the modern spelling of the pytree utilities (``jax.tree``)."""
from __future__ import annotations

import dataclasses

from xform import tree_util as _tu

__all__ = ["all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path",
           "map", "map_with_path", "reduce", "reduce_associative", "static", "structure",
           "transpose", "unflatten"]

_none = _tu._NoIdentity


def all(tree, *, is_leaf=None) -> bool:  # noqa: A001
    """True when every leaf of ``tree`` is truthy."""
    return _tu.tree_all(tree, is_leaf=is_leaf)


def flatten(tree, is_leaf=None):
    """``(leaves, treedef)`` of ``tree``."""
    return _tu.tree_flatten(tree, is_leaf)


def leaves(tree, is_leaf=None):
    """The leaves of ``tree``, left to right."""
    return _tu.tree_leaves(tree, is_leaf)


def map(f, tree, *rest, is_leaf=None):  # noqa: A001
    """``f`` applied leafwise over ``tree`` and the same-structured ``rest``."""
    return _tu.tree_map(f, tree, *rest, is_leaf=is_leaf)


def reduce(function, tree, initializer=_tu._NoIdentity, is_leaf=None):
    """``functools.reduce(function, leaves(tree)[, initializer])``."""
    if initializer is _tu._NoIdentity:
        return _tu.tree_reduce(function, tree, is_leaf=is_leaf)
    return _tu.tree_reduce(function, tree, initializer, is_leaf=is_leaf)


def reduce_associative(operation, tree, *, identity=_tu._NoIdentity, is_leaf=None):
    """Reduce the leaves with an associative ``operation`` in a balanced tree
    (logarithmic depth); ``identity`` is returned for an empty tree."""
    return _tu.tree_reduce_associative(operation, tree, identity=identity, is_leaf=is_leaf)


def structure(tree, is_leaf=None):
    """The ``PyTreeDef`` of ``tree``."""
    return _tu.tree_structure(tree, is_leaf)


def transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Swap the outer and inner levels of a tree of trees."""
    return _tu.tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)


def unflatten(treedef, leaves):
    """Rebuild a tree of ``treedef``'s structure from ``leaves``."""
    return _tu.tree_unflatten(treedef, leaves)


def flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """``([(key_path, leaf), ...], treedef)``."""
    return _tu.tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path=is_leaf_takes_path)


def leaves_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """``[(key_path, leaf), ...]``."""
    return _tu.tree_leaves_with_path(tree, is_leaf, is_leaf_takes_path=is_leaf_takes_path)


def map_with_path(f, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
    """``f(key_path, leaf, *rest_leaves)`` leafwise."""
    return _tu.tree_map_with_path(f, tree, *rest, is_leaf=is_leaf,
                                  is_leaf_takes_path=is_leaf_takes_path)


def broadcast(prefix_tree, full_tree, is_leaf=None):
    """``prefix_tree``'s leaves repeated over the matching subtrees of ``full_tree``."""
    return _tu.tree_broadcast(prefix_tree, full_tree, is_leaf=is_leaf)


def static(**kwargs):
    """``dataclasses.field`` marked static for ``tree_util.register_dataclass``."""
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)

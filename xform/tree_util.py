"""``xform.tree_util``: pytrees with JAX's semantics (``jax.tree_util``).

The implementation lives in ``interpreters/tree_util.py`` (plain Python, no engine
imports) so that the engine and the primitives' rules, which sit below ``xform``,
can flatten pytrees too; this module is its public face.
"""
from typing import Any, TypeVar

from xform._src.interpreters.tree_util import *  # noqa: F401,F403
from xform._src.interpreters.tree_util import __all__ as _engine_all
from xform._src.interpreters import tree_util as _impl

__all__ = list(_engine_all) + [
    "tree_broadcast", "tree_reduce_associative", "flatten_one_level_with_keys",
    "KeyEntry", "KeyPath", "default_registry"]

KeyEntry = TypeVar("KeyEntry", bound=Any)
KeyPath = tuple[KeyEntry, ...]


class _NoIdentityType:
    __slots__ = ()

    def __repr__(self):
        return "<no identity>"


_NoIdentity = _NoIdentityType()


def _balanced_reduce(seq, op, identity):
    n = len(seq)
    if n == 0:
        if identity is _NoIdentity:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    if n == 1:
        return seq[0]
    h = n // 2
    return op(_balanced_reduce(seq[:h], op, identity), _balanced_reduce(seq[h:], op, identity))


def tree_reduce_associative(operation, tree, *, identity=_NoIdentity, is_leaf=None):
    """Reduce the leaves with an associative ``operation`` as a balanced binary tree."""
    return _balanced_reduce(tree_leaves(tree, is_leaf), operation, identity)  # noqa: F405


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """``prefix_tree``'s leaves broadcast into the structure of ``full_tree``."""
    leaves = broadcast_prefix(prefix_tree, full_tree, is_leaf=is_leaf)  # noqa: F405
    return tree_structure(full_tree).unflatten(leaves)  # noqa: F405


def flatten_one_level_with_keys(tree):
    """``([(key, child), ...], aux_data)`` of a node; ValueError for a leaf."""
    kind = _impl._kind_of(tree)
    if kind is _impl._LEAF_KIND:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    keyed, aux = kind.flatten_with_keys(tree)
    return list(keyed), aux


class _Registry:
    """``tree_util.default_registry``: the registry every pytree function consults
    (None is a node; tuples, lists, dicts and namedtuples are built in)."""

    def flatten(self, tree, leaf_predicate=None):
        return tree_flatten(tree, leaf_predicate)  # noqa: F405

    def flatten_one_level(self, tree):
        children, aux = flatten_one_level(tree)  # noqa: F405
        return list(children), aux

    def flatten_one_level_with_keys(self, tree):
        return flatten_one_level_with_keys(tree)

    def register_node(self, nodetype, to_iterable, from_iterable, to_iterable_with_keys=None):
        register_pytree_node(nodetype, to_iterable, from_iterable,  # noqa: F405
                             to_iterable_with_keys)

    def __repr__(self):
        return "xform.tree_util.default_registry"


default_registry = _Registry()

"""Pytrees: nested containers whose leaves the transformations act on.

Same names and semantics as ``jax.tree_util`` so JAX programs run unchanged.

Design
------
A tree's structure is stored as nested Python tuples ("nodes"):

* a leaf is the sentinel ``_LEAF``;
* every other node is ``(kind, aux, children)`` where ``kind`` is the
  :class:`_NodeKind` describing the container type (one object per type, so
  identity comparison is type comparison), ``aux`` is the static data the
  container needs to be rebuilt (dict keys, a custom class's aux data) and
  ``children`` is a tuple of nodes.

Plain tuples make ``PyTreeDef`` equality and hashing run in C, which matters
because ``jit`` looks treedefs up in its cache on every call.  Container types
are found with one dict lookup keyed by exact ``type(x)`` (subclasses of
registered types are leaves, as in JAX); types seen for the first time are
classified once and cached, including the "is a leaf" answer.
"""
from __future__ import annotations

import collections
import dataclasses
import difflib
import functools
import textwrap
from typing import Any, Callable, Hashable, Iterable, Sequence

__all__ = [
    "PyTreeDef", "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves",
    "tree_structure", "tree_reduce", "tree_all", "tree_flatten_with_path",
    "tree_leaves_with_path", "tree_map_with_path", "tree_transpose", "keystr",
    "SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey",
    "register_pytree_node", "register_pytree_with_keys",
    "register_pytree_node_class", "register_pytree_with_keys_class",
    "register_dataclass", "register_static", "Partial", "treedef_is_leaf",
    "all_leaves", "treedef_children", "treedef_tuple", "is_tree_node",
    "flatten_one_level", "broadcast_prefix", "equality_errors",
]


# ----------------------------------------------------------------------------
# Key path entries (what ``tree_flatten_with_path`` reports for each child).
# Frozen dataclasses give JAX's ``SequenceKey(idx=0)`` repr, equality, hashing
# and ``match`` support for free; ``__str__`` gives the path syntax.


@dataclasses.dataclass(frozen=True, slots=True)
class SequenceKey:
    """Child ``idx`` of a tuple or list; prints as ``[0]``."""
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class DictKey:
    """Entry ``key`` of a dict-like node; prints as ``['a']``."""
    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class GetAttrKey:
    """Attribute ``name`` (namedtuple fields, dataclass fields); prints ``.name``."""
    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True, slots=True)
class FlattenedIndexKey:
    """Position ``key`` among the children of a node registered without keys."""
    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


def keystr(keys: Sequence[Any], *, simple: bool = False, separator: str = "") -> str:
    """Joins a key path into a string, e.g. ``[0]['a'].x``.

    ``simple=True`` prints only the raw index/key/name of each entry (``0a x``
    with ``separator``), which is shorter but ambiguous.
    """
    to_str = _simple_key_str if simple else str
    return separator.join(map(to_str, keys))


def _simple_key_str(key: Any) -> str:
    if isinstance(key, SequenceKey):
        return str(key.idx)
    if isinstance(key, (DictKey, FlattenedIndexKey)):
        return str(key.key)
    if isinstance(key, GetAttrKey):
        return str(key.name)
    return str(key)


# ----------------------------------------------------------------------------
# Node kinds and the registry.


class _NodeKind:
    """How to take apart and rebuild one container type.

    ``flatten(x) -> (children, aux)``; ``unflatten(aux, children_list) -> x``;
    ``flatten_with_keys(x) -> ([(key, child), ...], aux)``.  ``style`` selects
    the repr (``(*, *)`` vs ``CustomNode(...)``) and the error wording.
    """
    __slots__ = ("type", "flatten", "unflatten", "flatten_with_keys", "style")

    def __init__(self, typ, flatten, unflatten, flatten_with_keys, style):
        self.type = typ
        self.flatten = flatten
        self.unflatten = unflatten
        self.flatten_with_keys = flatten_with_keys
        self.style = style  # 'tuple' 'list' 'dict' 'none' 'namedtuple' 'custom'

    def __repr__(self):
        return f"<pytree node kind {self.type.__qualname__}>"


_LEAF = object()        # node for a leaf inside a treedef
_LEAF_KIND = object()   # dispatch answer: "this type is a leaf type"

# Explicitly registered types (builtins included), for duplicate detection.
_registry: dict[type, _NodeKind] = {}
# Cache: type -> _NodeKind or _LEAF_KIND.  Holds registered types, namedtuple
# classes and leaf types seen so far, so classifying a value is one lookup.
_dispatch: dict[type, Any] = {}
_dispatch_get = _dispatch.get
_DISPATCH_CACHE_LIMIT = 4096  # keeps dynamically created leaf types from piling up


def _classify(t: type):
    """Slow path for a type not in ``_dispatch``: decide and cache."""
    kind = _registry.get(t)
    if kind is None:
        if issubclass(t, tuple) and hasattr(t, "_fields"):
            kind = _namedtuple_kind(t)
        else:
            kind = _LEAF_KIND
    if len(_dispatch) >= _DISPATCH_CACHE_LIMIT:
        _dispatch.clear()
        _dispatch.update(_registry)
    _dispatch[t] = kind
    return kind


def _kind_of(x):
    t = type(x)
    return _dispatch_get(t) or _classify(t)


def _register_kind(kind: _NodeKind) -> None:
    if kind.type in _registry:
        raise ValueError(
            f"Duplicate custom PyTreeDef type registration for {kind.type}.")
    _registry[kind.type] = kind
    _dispatch[kind.type] = kind  # overrides a cached "leaf" answer


def _sorted_keys(d) -> list:
    try:
        return sorted(d)
    except Exception:
        raise ValueError(
            "Comparator raised exception while sorting pytree dictionary keys."
        ) from None


def _flatten_dict(d):
    keys = _sorted_keys(d)
    return [d[k] for k in keys], tuple(keys)


def _flatten_dict_with_keys(d):
    keys = _sorted_keys(d)
    return [(DictKey(k), d[k]) for k in keys], tuple(keys)


def _flatten_sequence_with_keys(xs):
    return [(SequenceKey(i), x) for i, x in enumerate(xs)], None


_TUPLE = _NodeKind(tuple, lambda x: (x, None), lambda _, xs: tuple(xs),
                   _flatten_sequence_with_keys, "tuple")
_LIST = _NodeKind(list, lambda x: (x, None), lambda _, xs: xs,
                  _flatten_sequence_with_keys, "list")
_DICT = _NodeKind(dict, _flatten_dict, lambda keys, xs: dict(zip(keys, xs)),
                  _flatten_dict_with_keys, "dict")
_NONE = _NodeKind(type(None), lambda x: ((), None), lambda _, xs: None,
                  lambda x: ((), None), "none")
for _kind in (_TUPLE, _LIST, _DICT, _NONE):
    _register_kind(_kind)


def _namedtuple_kind(cls) -> _NodeKind:
    """Namedtuples are nodes without registration; children are their fields."""
    fields = cls._fields

    def flatten_with_keys(x):
        return [(GetAttrKey(f), v) for f, v in zip(fields, x)], None

    return _NodeKind(cls, lambda x: (x, None), lambda _, xs: cls(*xs),
                     flatten_with_keys, "namedtuple")


# ----------------------------------------------------------------------------
# Flattening and unflattening.


def _flatten(x, leaves: list, is_leaf):
    """Appends x's leaves to ``leaves`` (in order) and returns x's node."""
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    t = type(x)
    kind = _dispatch_get(t) or _classify(t)
    if kind is _LEAF_KIND:
        leaves.append(x)
        return _LEAF
    children, aux = kind.flatten(x)
    return (kind, aux, tuple([_flatten(c, leaves, is_leaf) for c in children]))


def _flatten_with_path(x, path: tuple, out: list, is_leaf):
    """Like ``_flatten`` but collects ``(key_path, leaf)`` pairs.

    ``is_leaf`` here always takes ``(path, x)``.
    """
    if is_leaf is not None and is_leaf(path, x):
        out.append((path, x))
        return _LEAF
    kind = _kind_of(x)
    if kind is _LEAF_KIND:
        out.append((path, x))
        return _LEAF
    keyed, aux = kind.flatten_with_keys(x)
    return (kind, aux, tuple([_flatten_with_path(c, (*path, k), out, is_leaf)
                              for k, c in keyed]))


def _unflatten(node, it):
    kind, aux, children = node
    return kind.unflatten(
        aux, [next(it) if c is _LEAF else _unflatten(c, it) for c in children])


def _count(node) -> tuple[int, int]:
    """(num_leaves, num_nodes) of a node."""
    if node is _LEAF:
        return 1, 1
    leaves, nodes = 0, 1
    for c in node[2]:
        l, n = _count(c)
        leaves += l
        nodes += n
    return leaves, nodes


def _strip_aux(node):
    """The node with custom aux data removed, for hashing unhashable aux."""
    if node is _LEAF:
        return node
    return (node[0], None, tuple(map(_strip_aux, node[2])))


class PyTreeDef:
    """The structure of a pytree: everything except the leaves.

    Hashable and comparable so it can key caches (``jit`` does).  Made by
    ``tree_flatten`` / ``tree_structure``; not meant to be constructed directly.
    """
    __slots__ = ("_node", "_num_leaves", "_num_nodes", "_hash")

    def __init__(self, node, num_leaves: int | None = None):
        self._node = node
        self._num_leaves = num_leaves
        self._num_nodes = None
        self._hash = None

    @property
    def num_leaves(self) -> int:
        if self._num_leaves is None:
            self._num_leaves, self._num_nodes = _count(self._node)
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        if self._num_nodes is None:
            self._num_leaves, self._num_nodes = _count(self._node)
        return self._num_nodes

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """Builds the pytree with this structure from ``leaves`` (in order)."""
        if type(leaves) is not list and type(leaves) is not tuple:
            leaves = list(leaves)
        expected = self.num_leaves
        if len(leaves) != expected:
            if len(leaves) < expected:
                raise ValueError(f"Too few leaves for PyTreeDef; expected "
                                 f"{expected}, got {len(leaves)}")
            raise ValueError(
                f"Too many leaves for PyTreeDef; expected {expected}.")
        node = self._node
        if node is _LEAF:
            return leaves[0]
        return _unflatten(node, iter(leaves))

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """Splits ``tree`` into the subtrees sitting at this treedef's leaves.

        This treedef must be a prefix of ``tree``'s structure; otherwise a
        ValueError names the key path of the first mismatch.
        """
        return _flatten_up_to(self, tree, "tree")

    def children(self) -> list[PyTreeDef]:
        """Treedefs of the root's immediate children (``[]`` for a leaf)."""
        if self._node is _LEAF:
            return []
        return [PyTreeDef(c) for c in self._node[2]]

    def node_data(self):
        """``(type, aux_data)`` of the root node, or None for a leaf."""
        if self._node is _LEAF:
            return None
        kind, aux, _ = self._node
        if kind.style == "dict":
            aux = list(aux)
        return kind.type, aux

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """This structure with every leaf replaced by ``inner``'s structure."""
        def sub(node):
            if node is _LEAF:
                return inner._node
            kind, aux, children = node
            return (kind, aux, tuple(map(sub, children)))
        return PyTreeDef(sub(self._node))

    def __eq__(self, other):
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        return self._node == other._node

    def __hash__(self):
        h = self._hash
        if h is None:
            try:
                h = hash(self._node)
            except TypeError:  # unhashable aux data; JAX tolerates it too
                h = hash(_strip_aux(self._node))
            self._hash = h
        return h

    def __repr__(self):
        return f"PyTreeDef({_node_repr(self._node)})"

    __str__ = __repr__

    def __reduce__(self):
        # Kinds hold lambdas and are compared by identity, so pickle (and
        # deepcopy) store container types and look the kinds up again.
        return _treedef_from_typed, (_node_to_typed(self._node),)


def _node_to_typed(node):
    if node is _LEAF:
        return None
    kind, aux, children = node
    return (kind.type, aux, tuple(map(_node_to_typed, children)))


def _node_from_typed(typed):
    if typed is None:
        return _LEAF
    typ, aux, children = typed
    kind = _dispatch_get(typ) or _classify(typ)
    if kind is _LEAF_KIND:
        raise ValueError(f"{typ} is not a registered pytree node type.")
    return (kind, aux, tuple(map(_node_from_typed, children)))


def _treedef_from_typed(typed):
    return PyTreeDef(_node_from_typed(typed))


def _node_repr(node) -> str:
    if node is _LEAF:
        return "*"
    kind, aux, children = node
    style = kind.style
    parts = [_node_repr(c) for c in children]
    if style == "tuple":
        return "(" + parts[0] + ",)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"
    if style == "list":
        return "[" + ", ".join(parts) + "]"
    if style == "dict":
        return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(aux, parts)) + "}"
    if style == "none":
        return "None"
    name = (f"namedtuple[{kind.type.__name__}]" if style == "namedtuple"
            else f"{kind.type.__name__}[{aux}]")
    return f"CustomNode({name}, [{', '.join(parts)}])"


# ----------------------------------------------------------------------------
# Prefix matching (tree_map with several trees) and its errors.


class _Mismatch(Exception):
    """Internal: raised where a treedef is not a prefix of a value.

    ``path`` collects key entries innermost-first as the exception unwinds, so
    the fast path pays nothing for key paths unless there is an error.
    """

    def __init__(self, reason, node, full):
        self.reason = reason  # 'types' 'lengths' 'children' 'metadata'
        self.node = node
        self.full = full
        self.path = []


def _up_to(node, x, out: list) -> None:
    kind, aux, children = node
    t = type(x)
    if (_dispatch_get(t) or _classify(t)) is not kind:
        raise _Mismatch("types", node, x)
    xchildren, xaux = kind.flatten(x)
    if kind.style == "custom":
        xchildren = tuple(xchildren)
    if len(xchildren) != len(children):
        style = kind.style
        raise _Mismatch("lengths" if style in ("tuple", "list", "namedtuple")
                        else "children", node, x)
    if xaux is not aux and xaux != aux:
        raise _Mismatch("metadata", node, x)
    for i, c in enumerate(children):
        if c is _LEAF:
            out.append(xchildren[i])
        else:
            try:
                _up_to(c, xchildren[i], out)
            except _Mismatch as e:
                e.path.append(kind.flatten_with_keys(x)[0][i][0])
                raise


def _flatten_up_to(treedef: PyTreeDef, tree: Any, name: str) -> list[Any]:
    node = treedef._node
    if node is _LEAF:
        return [tree]
    out: list = []
    try:
        _up_to(node, tree, out)
    except _Mismatch as e:
        raise _prefix_error(e, name) from None
    return out


def _node_keys(node) -> list:
    """Child keys of a treedef node (rebuilding it with dummy leaves if needed)."""
    kind, aux, children = node
    if kind.style == "dict":
        return [DictKey(k) for k in aux]
    try:
        dummy = PyTreeDef(node)
        value = dummy.unflatten([object()] * dummy.num_leaves)
        return [k for k, _ in kind.flatten_with_keys(value)[0]]
    except Exception:
        return [FlattenedIndexKey(i) for i in range(len(children))]


def _prefix_error(e: _Mismatch, name: str) -> ValueError:
    """JAX's wording for "prefix tree does not match full tree" errors."""
    kind, aux, children = e.node
    full = e.full
    where = f"    {name}{keystr(e.path[::-1])}\n"
    if e.reason == "types":
        return ValueError(
            "pytree structure error: different types at key path\n" + where +
            f"At that key path, the prefix pytree {name} has a subtree of type\n"
            f"    {kind.type}\n"
            "but at the same key path the full pytree has a subtree of "
            f"different type\n    {type(full)}.")
    if e.reason == "lengths":
        ty = kind.type.__name__
        return ValueError(
            f"pytree structure error: different lengths of {ty} at key path\n"
            + where +
            f"At that key path, the prefix pytree {name} has a subtree of type "
            f"{ty} of length {len(children)}, but the full pytree has a subtree "
            f"of the same type but of length {len(full)}.")
    if e.reason == "children":
        prefix_keys = _node_keys(e.node)
        full_keys = [k for k, _ in kind.flatten_with_keys(full)[0]]
        simple = lambda ks: " ".join(map(_simple_key_str, ks))
        try:
            diff = set(prefix_keys).symmetric_difference(full_keys)
        except TypeError:
            diff = None
        return ValueError(
            "pytree structure error: different numbers of pytree children at "
            "key path\n" + where +
            f"At that key path, the prefix pytree {name} has a subtree of type\n"
            f"    {kind.type}\n"
            f"with {len(prefix_keys)} child keys\n    {simple(prefix_keys)}\n"
            "but at the same key path the full pytree has a subtree of the same "
            f"type but with {len(full_keys)} child keys\n    {simple(full_keys)}\n"
            + ("" if diff is None else
               f"so the symmetric difference on key sets is\n    {simple(diff)}"))
    # metadata
    prefix_meta = str(aux)
    full_meta = str(kind.flatten(full)[1])
    meta_diff = textwrap.indent(
        "\n".join(difflib.ndiff(prefix_meta.splitlines(),
                                full_meta.splitlines())), "    ")
    return ValueError(
        "pytree structure error: different pytree metadata at key path\n"
        + where +
        f"At that key path, the prefix pytree {name} has a subtree of type\n"
        f"    {kind.type}\nwith metadata\n    {prefix_meta}\n"
        "but at the same key path the full pytree has a subtree of the same "
        f"type but with metadata\n    {full_meta}\n"
        f"so the diff in the metadata at these pytree nodes is\n{meta_diff}")


# ----------------------------------------------------------------------------
# Public functional API.


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Any], PyTreeDef]:
    """Returns ``(leaves, treedef)``; ``is_leaf(x)`` True stops descent at x."""
    leaves: list = []
    node = _flatten(tree, leaves, is_leaf)
    return leaves, PyTreeDef(node, len(leaves))


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Inverse of ``tree_flatten``."""
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of ``tree`` in flattening order."""
    leaves: list = []
    _flatten(tree, leaves, is_leaf)
    return leaves


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The treedef of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Applies ``f`` leafwise; ``tree`` must be a prefix of each of ``rest``.

    A leaf of ``tree`` pairs with the whole corresponding subtree of each tree
    in ``rest``.
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    others = [_flatten_up_to(treedef, r, "tree_map tree") for r in rest]
    return treedef.unflatten([f(*xs) for xs in zip(leaves, *others)])


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any,
                initializer: Any = ..., is_leaf: Callable[[Any], bool] | None = None
                ) -> Any:
    """``functools.reduce`` over the leaves (``initializer`` optional)."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is ...:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if every leaf is truthy."""
    return all(tree_leaves(tree, is_leaf))


def _path_is_leaf(is_leaf, is_leaf_takes_path):
    if is_leaf is None or is_leaf_takes_path:
        return is_leaf
    return lambda _, x: is_leaf(x)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[tuple, Any]], PyTreeDef]:
    """Like ``tree_flatten`` but each leaf comes with its key path."""
    out: list = []
    node = _flatten_with_path(tree, (), out,
                              _path_is_leaf(is_leaf, is_leaf_takes_path))
    return out, PyTreeDef(node, len(out))


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple[tuple, Any]]:
    """``(key_path, leaf)`` pairs in flattening order."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """Like ``tree_map`` but calls ``f(key_path, leaf, *other_subtrees)``."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = [_flatten_up_to(treedef, r, "tree_map_with_path tree") for r in rest]
    return treedef.unflatten(
        [f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
    """Turns an outer-structure tree of inner-structure trees inside out.

    ``inner_treedef=None`` infers it from the first outer leaf.
    """
    leaves, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        first = outer_treedef.flatten_up_to(pytree_to_transpose)[0]
        inner_treedef = tree_structure(first)
    n_inner, n_outer = inner_treedef.num_leaves, outer_treedef.num_leaves
    if treedef.num_leaves != n_inner * n_outer:
        expected = outer_treedef.compose(inner_treedef)
        raise TypeError(f"Mismatch\n{treedef}\n != \n{expected}")
    # leaves[o * n_inner + i] is inner leaf i of outer leaf o.
    outer_trees = [outer_treedef.unflatten(leaves[i::n_inner])
                   for i in range(n_inner)]
    return inner_treedef.unflatten(outer_trees)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True for a single-node treedef (a leaf, or an empty node like None)."""
    return treedef.num_nodes == 1


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """Treedefs of the root's immediate children."""
    return treedef.children()


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The treedef of a tuple whose children have the given structures."""
    return PyTreeDef((_TUPLE, None, tuple(t._node for t in treedefs)))


def all_leaves(iterable: Iterable[Any],
               is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if no element of ``iterable`` is a pytree node.

    With ``is_leaf``, the answer is whether flattening the list of elements
    gives back exactly those elements; like JAX this also consults
    ``is_leaf`` on that list itself.
    """
    if is_leaf is None:
        return all(_kind_of(x) is _LEAF_KIND for x in iterable)
    items = list(iterable)
    leaves = tree_leaves(items, is_leaf)
    return len(leaves) == len(items) and all(
        a is b for a, b in zip(leaves, items))


def is_tree_node(typ: type) -> bool:
    """True if values of exactly this type are pytree nodes (not leaves)."""
    return (_dispatch_get(typ) or _classify(typ)) is not _LEAF_KIND


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
    """``(children, aux_data)`` of a node; ValueError for a leaf."""
    kind = _kind_of(tree)
    if kind is _LEAF_KIND:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return kind.flatten(tree)


def equality_errors(tree1: Any, tree2: Any) -> Iterable[tuple[tuple, str, str, str]]:
    """Where two pytrees of different structure first differ, per branch: yields
    ``(key path, what tree1 has there, what tree2 has there, why they differ)`` in JAX's
    words (``tuple of length 2`` / ``tuple of length 3``, ``the lengths do not match``).
    Used by the control-flow errors that explain a carry or branch-output mismatch."""
    yield from _equality_errors((), tree1, tree2)


def _equality_errors(path, t1, t2):
    k1, k2 = _kind_of(t1), _kind_of(t2)
    if k1 is _LEAF_KIND and k2 is _LEAF_KIND:
        return
    if type(t1) is not type(t2):
        yield (path, "pytree leaf" if k1 is _LEAF_KIND else str(type(t1)),
               "pytree leaf" if k2 is _LEAF_KIND else str(type(t2)),
               "their Python types differ")
        return
    if isinstance(t1, (list, tuple)) and len(t1) != len(t2):
        name = type(t1).__name__
        yield (path, f"{name} of length {len(t1)}", f"{name} of length {len(t2)}",
               "the lengths do not match")
        return
    kc1, meta1 = k1.flatten_with_keys(t1)
    kc2, meta2 = k2.flatten_with_keys(t2)
    if len(kc1) != len(kc2):
        keys1, keys2 = [k for k, _ in kc1], [k for k, _ in kc2]
        try:
            diff = " ".join(repr(getattr(k, "key", k))
                            for k in set(keys1).symmetric_difference(keys2))
        except TypeError:      # unhashable keys
            diff = ""

        def things(n):
            return f"{type(t1)} with {n} child{'ren' if n > 1 else ''}"
        yield (path, things(len(kc1)), things(len(kc2)),
               "the numbers of children do not match"
               + (f", with the symmetric difference of key sets: {{{diff}}}" if diff else ""))
        return
    if meta1 is not meta2 and meta1 != meta2:
        yield (path, f"{type(t1)} with pytree metadata {meta1}",
               f"{type(t2)} with pytree metadata {meta2}",
               "the pytree node metadata does not match")
        return
    for (k, c1), (_, c2) in zip(kc1, kc2):
        yield from _equality_errors((*path, k), c1, c2)


def broadcast_prefix(prefix_tree: Any, full_tree: Any,
                     is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """Repeats each leaf of ``prefix_tree`` once per leaf of the matching
    subtree of ``full_tree`` (used for ``in_axes``-style arguments)."""
    leaves, treedef = tree_flatten(prefix_tree, is_leaf)
    subtrees = _flatten_up_to(treedef, full_tree, "broadcast_prefix prefix_tree")
    out: list = []
    for leaf, sub in zip(leaves, subtrees):
        out.extend([leaf] * len(tree_leaves(sub)))
    return out


# ----------------------------------------------------------------------------
# Registration.


def _indexed_keys(flatten):
    """flatten_with_keys for nodes registered without keys."""
    def flatten_with_keys(x):
        children, aux = flatten(x)
        return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux
    return flatten_with_keys


def _custom_kind(nodetype, flatten_func, unflatten_func, flatten_with_keys_func):
    return _NodeKind(nodetype, flatten_func,
                     lambda aux, xs: unflatten_func(aux, tuple(xs)),
                     flatten_with_keys_func or _indexed_keys(flatten_func),
                     "custom")


def register_pytree_node(nodetype: type, flatten_func: Callable,
                         unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Makes ``nodetype`` a pytree node.

    ``flatten_func(x) -> (children, aux_data)`` where aux_data is hashable
    static data; ``unflatten_func(aux_data, children) -> x``.
    """
    _register_kind(_custom_kind(nodetype, flatten_func, unflatten_func,
                                flatten_with_keys_func))


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
    """Like ``register_pytree_node`` but ``flatten_with_keys(x)`` returns
    ``([(key, child), ...], aux_data)`` so key paths use your keys.
    ``flatten_func`` is an optional faster keyless version."""
    if flatten_func is None:
        def flatten_func(x):
            keyed, aux = flatten_with_keys(x)
            return [c for _, c in keyed], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func,
                         flatten_with_keys)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: uses ``x.tree_flatten()`` and
    ``cls.tree_unflatten(aux, children)``."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: uses ``x.tree_flatten_with_keys()`` (and
    ``x.tree_flatten()`` if defined) plus ``cls.tree_unflatten``."""
    flatten = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(),
                              cls.tree_unflatten, flatten)
    return cls


def register_dataclass(nodetype: type, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> type:
    """Registers a dataclass-like type; data fields are children, meta fields
    are static aux data.  Returns ``nodetype`` so it works as a decorator.

    For a dataclass both field lists may be omitted: init fields are data
    unless declared with ``field(metadata=dict(static=True))``.
    """
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields must both be "
                f"specified when either is specified. Got {data_fields=} "
                f"{meta_fields=}.")
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields are required "
                f"when nodetype is not a dataclass. Got {nodetype=}.")
        fields = [f for f in dataclasses.fields(nodetype)
                  if f.init and f.name not in drop_fields]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    # Tuples: the caller may mutate the lists they passed.
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}
        init_fields.difference_update(drop_fields)
        given = {*data_fields, *meta_fields}
        if given != init_fields:
            msg = ("data_fields and meta_fields must include all dataclass "
                   "fields with ``init=True`` and only them.")
            if missing := init_fields - given:
                msg += (f" Missing fields: {missing}. Add them to drop_fields "
                        "to suppress this error.")
            if unexpected := given - init_fields:
                msg += f" Unexpected fields: {unexpected}."
            raise ValueError(msg)
    if overlap := set(data_fields) & set(meta_fields):
        raise ValueError("data_fields and meta_fields must not overlap. "
                         f"Overlapping fields: {overlap}.")
    if nodetype in _registry:
        raise ValueError("Duplicate custom dataclass PyTreeDef type "
                         f"registration for {nodetype}.")

    keys = tuple(GetAttrKey(n) for n in data_fields)

    def flatten(x):
        return (tuple([getattr(x, n) for n in data_fields]),
                tuple([getattr(x, n) for n in meta_fields]))

    def flatten_with_keys(x):
        children, aux = flatten(x)
        return list(zip(keys, children)), aux

    def unflatten(meta, data):
        return nodetype(**dict(zip(meta_fields, meta)),
                        **dict(zip(data_fields, data)))

    register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
    return nodetype


def register_static(cls: type) -> type:
    """Makes instances of ``cls`` leafless nodes: the whole value is aux data
    (so it must be hashable) and is treated as static by ``jit``."""
    register_pytree_with_keys(cls, lambda x: ((), x), lambda x, _: x)
    return cls


register_pytree_with_keys(
    collections.OrderedDict,
    lambda d: ([(DictKey(k), v) for k, v in d.items()], tuple(d)),
    lambda keys, xs: collections.OrderedDict(zip(keys, xs)),
    lambda d: (list(d.values()), tuple(d)))


def _flatten_defaultdict(d):
    keys = _sorted_keys(d)
    return [d[k] for k in keys], (d.default_factory, tuple(keys))


def _flatten_defaultdict_with_keys(d):
    children, aux = _flatten_defaultdict(d)
    return list(zip(map(DictKey, aux[1]), children)), aux


register_pytree_with_keys(
    collections.defaultdict,
    _flatten_defaultdict_with_keys,
    lambda aux, xs: collections.defaultdict(aux[0], zip(aux[1], xs)),
    _flatten_defaultdict)


# ----------------------------------------------------------------------------
# Partial.


class _WrappedPartial:
    """Holds a ``functools.partial`` passed as ``Partial``'s func.

    ``functools.partial.__new__`` would merge a partial func's arguments into
    the new object, turning static bound arguments into pytree children.  This
    wrapper is not a partial, so they stay part of the (static) func.  Hash and
    equality delegate so treedef comparison still sees the real function.
    """
    __slots__ = ("fun", "func", "args", "keywords")

    def __init__(self, fun):
        self.fun = fun

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def __hash__(self):
        return hash(self.fun)

    def __eq__(self, other):
        if isinstance(other, _WrappedPartial):
            return self.fun == other.fun
        return self.fun == other

    def __repr__(self):
        return f"_WrappedPartial({self.fun!r})"


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree.

    The function is static aux data; the bound positional and keyword
    arguments are children, so ``Partial(f, x)`` can be passed through ``jit``
    and ``x`` gets traced.
    """

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):
            wrapped = _WrappedPartial(func)
            out = super().__new__(cls, wrapped, *args, **kwargs)
            # Set only after construction: the pure-Python partial merges any
            # func that has a ``func`` attribute.
            wrapped.func, wrapped.args, wrapped.keywords = (
                func.func, func.args, func.keywords)
            return out
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]))

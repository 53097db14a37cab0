"""xform.tree_util checked against jax.tree_util (the oracle).

Random nested containers come from hypothesis; every property compares our
answer with JAX's on the same input, so a divergence fails the test.
"""
import collections
import copy
import re
import dataclasses
import functools
import pickle
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import jax.tree_util as jtu
from xform import tree_util as xtu

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

NT1 = collections.namedtuple("NT1", ["a"])
NT2 = collections.namedtuple("NT2", ["x", "y"])

# ----------------------------------------------------------------------------
# Strategies and helpers.

leaf_st = st.one_of(
    st.integers(-1000, 1000),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)
str_keys = st.sampled_from(["a", "b", "c", "d", "e"])


def _containers(children):
    return st.one_of(
        st.lists(children, max_size=4).map(tuple),
        st.lists(children, max_size=4),
        st.dictionaries(str_keys, children, max_size=4),
        st.dictionaries(st.integers(0, 9), children, max_size=3),
        st.builds(NT1, children),
        st.builds(NT2, children, children),
        st.dictionaries(str_keys, children, max_size=4).map(collections.OrderedDict),
        st.tuples(st.sampled_from([list, int]),
                  st.dictionaries(str_keys, children, max_size=3)).map(
                      lambda fd: collections.defaultdict(*fd)),
    )


tree_st = st.recursive(st.none() | leaf_st, _containers, max_leaves=16)


def assert_same(a, b):
    """Strict equality: same types everywhere, same dict key order."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, dict):
        assert list(a) == list(b), (a, b)
        if isinstance(a, collections.defaultdict):
            assert a.default_factory is b.default_factory
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        assert a == b, (a, b)


def _mutations(tree):
    """Trees differing from ``tree`` at exactly one node (for error tests)."""
    out = []
    if tree is None:
        out += [0, ()]
    elif isinstance(tree, (int, float)):
        out += [None, [tree]]
    elif type(tree) in (list, tuple):
        out += [type(tree)([*tree, 1]), list(tree) if type(tree) is tuple else tuple(tree)]
        if tree:
            out.append(type(tree)(tree[:-1]))
    elif isinstance(tree, tuple):  # namedtuple
        out += [tuple(tree)]
    elif type(tree) is collections.defaultdict:
        other = int if tree.default_factory is list else list
        out += [collections.defaultdict(other, tree), dict(tree)]
    elif isinstance(tree, dict):
        out += [type(tree)({**tree, "zz": 1})]
        if tree:
            k = next(iter(tree))
            renamed = {("q" if k != "q" else "r"): v for kk, v in tree.items()
                       if kk == k}
            out.append(type(tree)({**{kk: v for kk, v in tree.items() if kk != k},
                                   **renamed}))
            if isinstance(k, int):
                out.pop()  # renaming an int key to a str would be unsortable
    # Recurse into one child to put the mismatch below the root.
    children = []
    if type(tree) in (list, tuple):
        children = [(i, c) for i, c in enumerate(tree)]
    elif isinstance(tree, tuple):
        children = [(i, c) for i, c in enumerate(tree)]
    elif isinstance(tree, dict):
        children = list(tree.items())
    for key, child in children[:2]:
        for m in _mutations(child)[:2]:
            if isinstance(tree, dict):
                new = tree.copy()
                new[key] = m
            elif type(tree) in (list, tuple):
                new = type(tree)(m if i == key else c for i, c in enumerate(tree))
            else:
                new = type(tree)(*(m if i == key else c for i, c in enumerate(tree)))
            out.append(new)
    return out


def _call(fn, *args, **kwargs):
    try:
        return "ok", fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - we compare exception types
        return "err", e


def _normalize_message(msg):
    """Makes two structure-error messages comparable.

    * Sets print in arbitrary order: the symmetric-difference line is compared
      as a sorted list of words.
    * jax 0.10.2's ``flatten_one_level_with_keys`` labels every namedtuple
      child with the first field's name (e.g. ``.x`` for both fields of
      ``NT2(x, y)``), so its error paths name the wrong attribute.  Attribute
      names in the path line are masked; the rest of the path still counts.
    """
    lines = msg.split("\n")
    for i, line in enumerate(lines):
        if i > 0 and lines[i - 1].startswith("so the symmetric difference"):
            lines[i] = sorted(line.split())
    if len(lines) > 1:
        lines[1] = re.sub(r"\.[A-Za-z_]\w*", ".<attr>", lines[1])
    return lines


# ----------------------------------------------------------------------------
# Flattening, structure, round trips.


@SETTINGS
@given(tree_st)
def test_flatten_matches_jax(tree):
    leaves, td = xtu.tree_flatten(tree)
    jleaves, jtd = jtu.tree_flatten(tree)
    assert leaves == jleaves
    assert [type(x) for x in leaves] == [type(x) for x in jleaves]
    assert td.num_leaves == jtd.num_leaves
    assert td.num_nodes == jtd.num_nodes
    assert repr(td) == repr(jtd)
    assert str(td) == str(jtd)
    assert xtu.tree_leaves(tree) == jtu.tree_leaves(tree)
    assert repr(xtu.tree_structure(tree)) == repr(jtd)


@SETTINGS
@given(tree_st)
def test_round_trip_matches_jax(tree):
    leaves, td = xtu.tree_flatten(tree)
    new_leaves = [("leaf", i) for i in range(len(leaves))]
    ours = xtu.tree_unflatten(td, new_leaves)
    theirs = jtu.tree_unflatten(jtu.tree_structure(tree), new_leaves)
    assert_same(ours, theirs)
    assert_same(xtu.tree_unflatten(td, leaves), jtu.tree_unflatten(
        jtu.tree_structure(tree), leaves))
    # A generator of leaves works too.
    assert_same(td.unflatten(x for x in new_leaves), theirs)


@SETTINGS
@given(tree_st)
def test_children_and_node_data_match_jax(tree):
    td, jtd = xtu.tree_structure(tree), jtu.tree_structure(tree)
    assert [repr(c) for c in td.children()] == [repr(c) for c in jtd.children()]
    assert [repr(c) for c in xtu.treedef_children(td)] == [
        repr(c) for c in jtu.treedef_children(jtd)]
    assert xtu.treedef_is_leaf(td) == jtu.treedef_is_leaf(jtd)
    assert td.node_data() == jtd.node_data()
    rebuilt = xtu.treedef_tuple(td.children())
    assert repr(rebuilt) == repr(jtu.treedef_tuple(jtd.children()))


@SETTINGS
@given(tree_st, tree_st)
def test_treedef_equality_and_hash_match_jax(a, b):
    ta, tb = xtu.tree_structure(a), xtu.tree_structure(b)
    ja, jb = jtu.tree_structure(a), jtu.tree_structure(b)
    assert (ta == tb) == (ja == jb)
    assert (ta != tb) == (ja != jb)
    if ta == tb:
        assert hash(ta) == hash(tb)
    assert ta == xtu.tree_structure(a) and hash(ta) == hash(xtu.tree_structure(a))


@SETTINGS
@given(tree_st)
def test_treedef_pickle_and_deepcopy(tree):
    td = xtu.tree_structure(tree)
    for copy_ in (pickle.loads(pickle.dumps(td)), copy.deepcopy(td), copy.copy(td)):
        assert copy_ == td and hash(copy_) == hash(td)
        assert repr(copy_) == repr(jtu.tree_structure(tree))
        assert copy_.num_leaves == td.num_leaves


def test_treedef_equality_details():
    # Same dict keys in a different insertion order: same structure.
    assert xtu.tree_structure({"a": 1, "b": 2}) == xtu.tree_structure({"b": 2, "a": 1})
    assert xtu.tree_structure([1]) != xtu.tree_structure((1,))
    assert xtu.tree_structure(NT2(1, 2)) != xtu.tree_structure((1, 2))
    other = collections.namedtuple("NT2", ["x", "y"])  # same name, other class
    assert xtu.tree_structure(NT2(1, 2)) != xtu.tree_structure(other(1, 2))
    assert jtu.tree_structure(NT2(1, 2)) != jtu.tree_structure(other(1, 2))
    assert xtu.tree_structure(1) != 1


@SETTINGS
@given(tree_st)
def test_paths_match_jax(tree):
    ours, td = xtu.tree_flatten_with_path(tree)
    theirs, jtd = jtu.tree_flatten_with_path(tree)
    assert [xtu.keystr(p) for p, _ in ours] == [jtu.keystr(p) for p, _ in theirs]
    assert [repr(p) for p, _ in ours] == [repr(p) for p, _ in theirs]
    assert [x for _, x in ours] == [x for _, x in theirs]
    assert repr(td) == repr(jtd)
    assert [xtu.keystr(p, simple=True, separator="/") for p, _ in ours] == [
        jtu.keystr(p, simple=True, separator="/") for p, _ in theirs]
    assert [xtu.keystr(p) for p, _ in xtu.tree_leaves_with_path(tree)] == [
        jtu.keystr(p) for p, _ in jtu.tree_leaves_with_path(tree)]


def test_key_classes_match_jax():
    pairs = [
        (xtu.SequenceKey(3), jtu.SequenceKey(3)),
        (xtu.DictKey("a"), jtu.DictKey("a")),
        (xtu.DictKey(7), jtu.DictKey(7)),
        (xtu.GetAttrKey("w"), jtu.GetAttrKey("w")),
        (xtu.FlattenedIndexKey(2), jtu.FlattenedIndexKey(2)),
    ]
    for ours, theirs in pairs:
        assert str(ours) == str(theirs)
        assert repr(ours) == repr(theirs)
        assert xtu.keystr((ours,), simple=True) == jtu.keystr((theirs,), simple=True)
    assert xtu.SequenceKey(1) == xtu.SequenceKey(1)
    assert xtu.SequenceKey(1) != xtu.DictKey(1)
    assert hash(xtu.DictKey("a")) == hash(xtu.DictKey("a"))
    assert xtu.keystr(()) == jtu.keystr(()) == ""
    match xtu.GetAttrKey("q"):
        case xtu.GetAttrKey(name=n):
            assert n == "q"


# ----------------------------------------------------------------------------
# tree_map and friends.


@SETTINGS
@given(tree_st)
def test_tree_map_matches_jax(tree):
    f = lambda x: ("mapped", x)
    assert_same(xtu.tree_map(f, tree), jtu.tree_map(f, tree))
    g = lambda x, y: (x, y)
    assert_same(xtu.tree_map(g, tree, tree), jtu.tree_map(g, tree, tree))
    h = lambda p, x: (jtu.keystr(p), x)
    hx = lambda p, x: (xtu.keystr(p), x)
    assert_same(xtu.tree_map_with_path(hx, tree), jtu.tree_map_with_path(h, tree))


def _truncate(tree, depth):
    """Replaces every subtree at ``depth`` by a leaf, giving a tree prefix."""
    if depth == 0:
        return "P"
    if type(tree) in (list, tuple):
        return type(tree)(_truncate(c, depth - 1) for c in tree)
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*(_truncate(c, depth - 1) for c in tree))
    if type(tree) is collections.defaultdict:
        return collections.defaultdict(
            tree.default_factory, {k: _truncate(v, depth - 1) for k, v in tree.items()})
    if isinstance(tree, dict):
        return type(tree)((k, _truncate(v, depth - 1)) for k, v in tree.items())
    return tree


@SETTINGS
@given(tree_st, st.integers(0, 4))
def test_tree_map_prefix_matches_jax(tree, depth):
    prefix = _truncate(tree, depth)
    f = lambda p, sub: (p, repr(jtu.tree_structure(sub)), jtu.tree_leaves(sub))
    assert_same(xtu.tree_map(f, prefix, tree), jtu.tree_map(f, prefix, tree))
    assert xtu.broadcast_prefix(prefix, tree) == [
        p for p, sub in zip(jtu.tree_leaves(prefix),
                            jtu.tree_structure(prefix).flatten_up_to(tree))
        for _ in jtu.tree_leaves(sub)]


def _compare_mismatch(a, b):
    ours = _call(xtu.tree_map, lambda *xs: xs, a, b)
    theirs = _call(jtu.tree_map, lambda *xs: xs, a, b)
    assert ours[0] == theirs[0], (a, b, ours, theirs)
    if ours[0] == "ok":
        assert_same(ours[1], theirs[1])
        return
    assert type(ours[1]) is ValueError
    assert type(theirs[1]) is ValueError
    jmsg = str(theirs[1])
    if jmsg.startswith("pytree structure error"):
        assert _normalize_message(str(ours[1])) == _normalize_message(jmsg)


# Default run: 25 draws (each compares error messages with JAX's); the slow step runs 150
# (the _exhaustive twin).
@settings(SETTINGS, max_examples=25)
@given(tree_st, st.data())
def test_tree_map_mismatch_errors_match_jax(tree, data):
    _test_tree_map_mismatch_errors_match_jax(tree, data)


@pytest.mark.slow
@SETTINGS
@given(tree_st, st.data())
def test_tree_map_mismatch_errors_match_jax_exhaustive(tree, data):
    _test_tree_map_mismatch_errors_match_jax(tree, data)


def _test_tree_map_mismatch_errors_match_jax(tree, data):
    mutations = _mutations(tree)
    if not mutations:
        return
    other = data.draw(st.sampled_from(mutations))
    _compare_mismatch(tree, other)
    _compare_mismatch(other, tree)


@SETTINGS
@given(tree_st, tree_st)
def test_tree_map_random_pairs_match_jax(a, b):
    _compare_mismatch(a, b)


def test_tree_map_mismatch_messages():
    with pytest.raises(ValueError, match=r"different types at key path\n"
                                         r"    tree_map tree\[1\]"):
        xtu.tree_map(lambda a, b: a, (1, [2, 3]), (1, (2, 3)))
    with pytest.raises(ValueError, match=r"different lengths of list"):
        xtu.tree_map(lambda a, b: a, [1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match=r"tree_map tree\['a'\]\.y"):
        xtu.tree_map(lambda a, b: a, {"a": NT2(1, None)}, {"a": NT2(1, 2)})
    with pytest.raises(ValueError, match=r"tree_map_with_path tree\[0\]"):
        xtu.tree_map_with_path(lambda p, a, b: a, [[1]], [[1, 2]])


def test_flatten_up_to_errors_name_path():
    td = xtu.tree_structure({"a": [1, (2, 3)]})
    assert td.flatten_up_to({"a": [[5], (6, {"k": 7})]}) == [[5], 6, {"k": 7}]
    with pytest.raises(ValueError, match=r"tree\['a'\]\[1\]"):
        td.flatten_up_to({"a": [1, (2, 3, 4)]})
    with pytest.raises(ValueError, match=r"tree\['a'\]"):
        td.flatten_up_to({"a": (1, (2, 3))})
    with pytest.raises(ValueError, match="metadata"):
        td.flatten_up_to({"b": [1, (2, 3)]})
    with pytest.raises(ValueError, match=r"tree\[0\]"):
        xtu.tree_structure([None]).flatten_up_to([1])  # None is not a leaf
    # The same inputs fail in JAX.
    with pytest.raises(ValueError):
        jtu.tree_structure([None]).flatten_up_to([1])


def test_unflatten_leaf_count_errors_match_jax():
    tree = {"a": [1, 2], "b": 3}
    for leaves in ([1, 2], [1, 2, 3, 4]):
        with pytest.raises(ValueError) as ours:
            xtu.tree_structure(tree).unflatten(leaves)
        with pytest.raises(ValueError) as theirs:
            jtu.tree_structure(tree).unflatten(leaves)
        assert str(ours.value) == str(theirs.value)


def test_unsortable_dict_keys_match_jax():
    with pytest.raises(ValueError) as ours:
        xtu.tree_flatten({1: 1, "b": 2})
    with pytest.raises(ValueError) as theirs:
        jtu.tree_flatten({1: 1, "b": 2})
    assert str(ours.value) == str(theirs.value)


def _is_list(x):
    return isinstance(x, list)


@SETTINGS
@given(tree_st)
def test_is_leaf_matches_jax(tree):
    for is_leaf in (_is_list, lambda x: x is None, lambda x: isinstance(x, dict)):
        leaves, td = xtu.tree_flatten(tree, is_leaf=is_leaf)
        jleaves, jtd = jtu.tree_flatten(tree, is_leaf=is_leaf)
        assert_same(leaves, jleaves)
        assert repr(td) == repr(jtd)
        f = lambda x: ("m", x)
        assert_same(xtu.tree_map(f, tree, is_leaf=is_leaf),
                    jtu.tree_map(f, tree, is_leaf=is_leaf))
        ours = xtu.tree_flatten_with_path(tree, is_leaf=is_leaf)[0]
        theirs = jtu.tree_flatten_with_path(tree, is_leaf=is_leaf)[0]
        assert [xtu.keystr(p) for p, _ in ours] == [jtu.keystr(p) for p, _ in theirs]
        assert xtu.all_leaves(leaves, is_leaf=is_leaf) == jtu.all_leaves(
            jleaves, is_leaf=is_leaf)
    takes_path = lambda p, x: len(p) >= 2
    ours = xtu.tree_flatten_with_path(tree, takes_path, is_leaf_takes_path=True)
    theirs = jtu.tree_flatten_with_path(tree, takes_path, is_leaf_takes_path=True)
    assert [xtu.keystr(p) for p, _ in ours[0]] == [jtu.keystr(p) for p, _ in theirs[0]]
    assert repr(ours[1]) == repr(theirs[1])


@SETTINGS
@given(tree_st)
def test_reduce_all_all_leaves_match_jax(tree):
    add = lambda a, b: a + b
    assert xtu.tree_reduce(add, tree, 0) == jtu.tree_reduce(add, tree, 0)
    ours, theirs = _call(xtu.tree_reduce, add, tree), _call(jtu.tree_reduce, add, tree)
    assert ours[0] == theirs[0]
    if ours[0] == "ok":
        assert ours[1] == theirs[1]
    else:
        assert type(ours[1]) is type(theirs[1])
    assert xtu.tree_all(tree) == jtu.tree_all(tree)
    items = [tree, 1, None]
    assert xtu.all_leaves(items) == jtu.all_leaves(items)
    leaves = jtu.tree_leaves(tree)
    assert xtu.all_leaves(leaves) == jtu.all_leaves(leaves)


@SETTINGS
@given(st.lists(tree_st, min_size=1, max_size=3), st.integers(1, 3))
def test_tree_transpose_matches_jax(inners, n_outer):
    inner = inners[0]
    # Outer list of n_outer copies of an inner structure with distinct leaves.
    leaves, _ = jtu.tree_flatten(inner)
    jinner = jtu.tree_structure(inner)
    outer_list = [jinner.unflatten([(o, i) for i in range(len(leaves))])
                  for o in range(n_outer)]
    xouter = xtu.tree_structure([0] * n_outer)
    jouter = jtu.tree_structure([0] * n_outer)
    for xin, jin in ((xtu.tree_structure(inner), jinner), (None, None)):
        ours = _call(xtu.tree_transpose, xouter, xin, outer_list)
        theirs = _call(jtu.tree_transpose, jouter, jin, outer_list)
        assert ours[0] == theirs[0]
        if ours[0] == "ok":
            assert_same(ours[1], theirs[1])


def test_tree_transpose_mismatch_is_type_error():
    outer = xtu.tree_structure([0, 0])
    inner = xtu.tree_structure((0, 0, 0))
    with pytest.raises(TypeError) as ours:
        xtu.tree_transpose(outer, inner, [(1, 2, 3), (4, 5)])
    with pytest.raises(TypeError) as theirs:
        jtu.tree_transpose(jtu.tree_structure([0, 0]), jtu.tree_structure((0, 0, 0)),
                           [(1, 2, 3), (4, 5)])
    assert str(ours.value) == str(theirs.value)


def test_none_is_empty_node():
    leaves, td = xtu.tree_flatten([None, 1, (None,)])
    assert leaves == [1]
    assert repr(td) == "PyTreeDef([None, *, (None,)])"
    assert xtu.tree_leaves(None) == [] and xtu.tree_structure(None).num_nodes == 1
    assert xtu.tree_leaves([None], is_leaf=lambda x: x is None) == [None]


def test_subclasses_of_containers_are_leaves_like_jax():
    class MyList(list):
        pass

    class MyDict(dict):
        pass

    tree = [MyList([1, 2]), MyDict(a=1)]
    assert xtu.tree_leaves(tree) == jtu.tree_leaves(tree)
    assert repr(xtu.tree_structure(tree)) == repr(jtu.tree_structure(tree))


# ----------------------------------------------------------------------------
# Registration APIs, each type registered in both libraries.


def _check_same_behaviour(tree):
    leaves, td = xtu.tree_flatten(tree)
    jleaves, jtd = jtu.tree_flatten(tree)
    assert leaves == jleaves
    assert repr(td) == repr(jtd)
    assert td.num_nodes == jtd.num_nodes
    ours = xtu.tree_flatten_with_path(tree)[0]
    theirs = jtu.tree_flatten_with_path(tree)[0]
    assert [repr(p) for p, _ in ours] == [repr(p) for p, _ in theirs]
    new = [("n", i) for i in range(len(leaves))]
    return td.unflatten(new), jtd.unflatten(new)


class Point:
    def __init__(self, x, y, tag):
        self.x, self.y, self.tag = x, y, tag

    def __eq__(self, other):
        return (type(other) is Point and
                (self.x, self.y, self.tag) == (other.x, other.y, other.tag))

    def __repr__(self):
        return f"Point({self.x}, {self.y}, {self.tag})"


_point_flatten = lambda p: ((p.x, p.y), p.tag)
_point_unflatten = lambda tag, xy: Point(xy[0], xy[1], tag)
xtu.register_pytree_node(Point, _point_flatten, _point_unflatten)
jtu.register_pytree_node(Point, _point_flatten, _point_unflatten)


def test_register_pytree_node_matches_jax():
    tree = {"p": Point(1, [2, None], "t"), "q": [Point(3, 4, "u")]}
    ours, theirs = _check_same_behaviour(tree)
    assert ours == theirs
    # Different aux data => different structure, and a metadata error.
    assert xtu.tree_structure(Point(1, 2, "a")) != xtu.tree_structure(Point(1, 2, "b"))
    _compare_mismatch(Point(1, 2, "a"), Point(1, 2, "b"))
    _compare_mismatch([Point(1, 2, "a")], [Point(1, (2, 3), "a")])


def test_duplicate_registration_is_value_error():
    for lib in (xtu, jtu):
        with pytest.raises(ValueError, match="Duplicate custom PyTreeDef"):
            lib.register_pytree_node(Point, _point_flatten, _point_unflatten)
        with pytest.raises(ValueError, match="Duplicate"):
            lib.register_pytree_node(tuple, _point_flatten, _point_unflatten)
        with pytest.raises(ValueError, match="Duplicate"):
            lib.register_pytree_node(collections.OrderedDict, _point_flatten,
                                     _point_unflatten)


class Keyed:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __eq__(self, other):
        return type(other) is Keyed and (self.a, self.b) == (other.a, other.b)


for _lib in (xtu, jtu):
    _lib.register_pytree_with_keys(
        Keyed,
        lambda k, lib=_lib: (((lib.GetAttrKey("a"), k.a), (lib.GetAttrKey("b"), k.b)), None),
        lambda _, ch: Keyed(*ch))


def test_register_pytree_with_keys_matches_jax():
    ours, theirs = _check_same_behaviour([Keyed(1, {"z": 2}), Keyed(None, (3,))])
    assert ours == theirs
    paths = [xtu.keystr(p) for p, _ in xtu.tree_leaves_with_path([Keyed(1, 2)])]
    assert paths == ["[0].a", "[0].b"]


class Box:
    def __init__(self, items, name):
        self.items, self.name = items, name

    def tree_flatten(self):
        return (self.items,), self.name

    @classmethod
    def tree_unflatten(cls, name, children):
        return cls(children[0], name)

    def __eq__(self, other):
        return type(other) is Box and (self.items, self.name) == (other.items, other.name)


assert xtu.register_pytree_node_class(Box) is Box
jtu.register_pytree_node_class(Box)


def test_register_pytree_node_class_matches_jax():
    ours, theirs = _check_same_behaviour(Box([1, (2, 3)], "box"))
    assert ours == theirs
    assert xtu.tree_map(lambda x: x * 10, Box([1, 2], "n")) == Box([10, 20], "n")


@dataclasses.dataclass
class DC:
    x: object
    y: object
    op: str = dataclasses.field(default="add", metadata=dict(static=True))


xtu.register_dataclass(DC)
jtu.register_dataclass(DC)


@dataclasses.dataclass
class DC2:
    w: object
    n: int


xtu.register_dataclass(DC2, data_fields=["w"], meta_fields=["n"])
jtu.register_dataclass(DC2, data_fields=["w"], meta_fields=["n"])


def test_register_dataclass_matches_jax():
    ours, theirs = _check_same_behaviour([DC(1, [2, 3], "mul"), DC2((4, None), 7)])
    assert ours == theirs
    assert xtu.tree_structure(DC(1, 2, "a")) != xtu.tree_structure(DC(1, 2, "b"))

    @xtu.register_dataclass
    @dataclasses.dataclass
    class Decorated:
        a: object
        s: int = dataclasses.field(default=0, metadata=dict(static=True))

    assert xtu.tree_leaves(Decorated([1, 2], 5)) == [1, 2]
    assert repr(xtu.tree_structure(Decorated(1, 5))) == \
        "PyTreeDef(CustomNode(Decorated[(5,)], [*]))"


def test_register_dataclass_errors_match_jax():
    def make():
        @dataclasses.dataclass
        class F:
            x: int
            y: int
        return F

    class NotDC:
        pass

    cases = [
        lambda lib: lib.register_dataclass(make(), data_fields=["x"], meta_fields=[]),
        lambda lib: lib.register_dataclass(make(), data_fields=["x"],
                                           meta_fields=["y", "w"]),
        lambda lib: lib.register_dataclass(make(), data_fields=["x"]),
        lambda lib: lib.register_dataclass(NotDC),
        lambda lib: lib.register_dataclass(make(), data_fields=["x", "y"],
                                           meta_fields=["y"]),
        lambda lib: lib.register_dataclass(DC2, data_fields=["w"], meta_fields=["n"]),
    ]
    for case in cases:
        ours, theirs = _call(case, xtu), _call(case, jtu)
        assert ours[0] == theirs[0] == "err"
        assert type(ours[1]) is type(theirs[1])
        if "Overlapping" not in str(theirs[1]) and "Unexpected" not in str(theirs[1]):
            assert str(ours[1]) == str(theirs[1])


def test_register_dataclass_non_dataclass_with_fields():
    class Plain:
        def __init__(self, a, m):
            self.a, self.m = a, m

    assert xtu.register_dataclass(Plain, ["a"], ["m"]) is Plain
    jtu.register_dataclass(Plain, ["a"], ["m"])
    p = Plain([1, 2], "meta")
    assert xtu.tree_leaves(p) == jtu.tree_leaves(p)
    assert repr(xtu.tree_structure(p)) == repr(jtu.tree_structure(p))
    q = xtu.tree_map(lambda v: v + 1, p)
    assert (q.a, q.m) == ([2, 3], "meta")


class StaticThing:
    def __init__(self, v):
        self.v = v

    def __hash__(self):
        return hash(self.v)

    def __eq__(self, other):
        return isinstance(other, StaticThing) and self.v == other.v

    def __repr__(self):
        return f"StaticThing({self.v})"


assert xtu.register_static(StaticThing) is StaticThing
jtu.register_static(StaticThing)


def test_register_static_matches_jax():
    tree = [StaticThing(1), 2, {"s": StaticThing("x")}]
    ours, theirs = _check_same_behaviour(tree)
    assert ours == theirs
    assert ours[0] is tree[0]
    assert xtu.tree_structure(StaticThing(1)) == xtu.tree_structure(StaticThing(1))
    assert xtu.tree_structure(StaticThing(1)) != xtu.tree_structure(StaticThing(2))


def _add3(a, b, c=0):
    return a + b + c


def test_partial_matches_jax():
    xp = xtu.Partial(_add3, 1, c=10)
    jp = jtu.Partial(_add3, 1, c=10)
    assert isinstance(xp, functools.partial)
    assert xp(2) == jp(2) == 13
    assert xtu.tree_leaves(xp) == jtu.tree_leaves(jp) == [1, 10]
    assert repr(xtu.tree_structure(xp)) == repr(jtu.tree_structure(jp))
    assert [repr(p) for p, _ in xtu.tree_leaves_with_path(xp)] == [
        repr(p) for p, _ in jtu.tree_leaves_with_path(jp)]
    mapped = xtu.tree_map(lambda v: v * 2, xp)
    assert type(mapped) is xtu.Partial
    assert mapped(0) == jtu.tree_map(lambda v: v * 2, jp)(0) == 22
    assert repr(mapped) == repr(jtu.tree_map(lambda v: v * 2, jp)).replace(
        "jax.tree_util.", "xform.tree_util.")
    assert xtu.tree_structure(xtu.Partial(_add3)) == xtu.tree_structure(
        xtu.Partial(_add3))


def test_partial_of_partial_keeps_inner_args_static_like_jax():
    inner = functools.partial(_add3, 1)
    xp, jp = xtu.Partial(inner, 2), jtu.Partial(inner, 2)
    assert xtu.tree_leaves(xp) == jtu.tree_leaves(jp) == [2]
    assert xp(3) == jp(3) == 6
    assert xp.func.args == jp.func.args == (1,)
    nested = xtu.Partial(xtu.Partial(_add3, 1), 2)
    assert xtu.tree_leaves(nested) == jtu.tree_leaves(
        jtu.Partial(jtu.Partial(_add3, 1), 2)) == [2]
    assert nested(3) == 6


def test_is_tree_node_and_flatten_one_level_match_jax():
    for typ in (tuple, list, dict, type(None), int, NT2, Point, DC,
                collections.OrderedDict, float):
        assert xtu.is_tree_node(typ) == jtu.is_tree_node(typ), typ
    for x in ((1, 2), None, {"b": 1, "a": 2}, Point(1, 2, "t")):
        children, aux = xtu.flatten_one_level(x)
        jchildren, jaux = jtu.flatten_one_level(x)
        assert list(children) == list(jchildren)
        assert aux == jaux or list(aux) == list(jaux)
    with pytest.raises(ValueError) as ours:
        xtu.flatten_one_level(1)
    with pytest.raises(ValueError) as theirs:
        jtu.flatten_one_level(1)
    assert str(ours.value) == str(theirs.value)


# ----------------------------------------------------------------------------
# Non-functional requirements.


def test_module_does_not_import_jax():
    code = ("import sys, xform.tree_util as t; t.tree_flatten((1, [2]));"
            "assert not any(m == 'jax' or m.startswith('jax.') for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)

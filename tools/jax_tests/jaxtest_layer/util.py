"""Stand-in for the small pure-Python helpers of ``jax._src.util`` the tests import."""
from __future__ import annotations

import builtins


def safe_zip(*args):
    """zip that requires equal lengths."""
    args = [list(a) for a in args]
    n = len(args[0]) if args else 0
    for a in args[1:]:
        if len(a) != n:
            raise ValueError(f"safe_zip: length mismatch {[len(x) for x in args]}")
    return list(builtins.zip(*args))


def safe_map(f, *args):
    """map that requires equal lengths and returns a list."""
    args = [list(a) for a in args]
    n = len(args[0]) if args else 0
    for a in args[1:]:
        if len(a) != n:
            raise ValueError(f"safe_map: length mismatch {[len(x) for x in args]}")
    return list(builtins.map(f, *args))


def subvals(lst, replace):
    """A tuple of ``lst`` with the (index, value) pairs of ``replace`` substituted."""
    out = list(lst)
    for i, v in replace:
        out[i] = v
    return tuple(out)


def tuple_update(t, idx, val):
    """``t`` with position ``idx`` replaced by ``val``."""
    return t[:idx] + (val,) + t[idx + 1:]


def tuple_insert(t, idx, val):
    return t[:idx] + (val,) + t[idx:]


def tuple_delete(t, idx):
    return t[:idx] + t[idx + 1:]


def unzip2(pairs):
    """Two tuples from a sequence of pairs: the firsts and the seconds."""
    firsts, seconds = [], []
    for a, b in pairs:
        firsts.append(a)
        seconds.append(b)
    return tuple(firsts), tuple(seconds)


def split_list(args, ns):
    """``args`` cut into consecutive pieces of the lengths ``ns``, plus the rest."""
    args = list(args)
    pieces = []
    for n in ns:
        pieces.append(args[:n])
        args = args[n:]
    pieces.append(args)
    return pieces

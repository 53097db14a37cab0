"""Contraction order for ``jnp.einsum`` and ``jnp.einsum_path``.

A path is opt_einsum's format (which JAX's einsum takes and returns): a list of position
tuples into the current operand list; the contracted operands are removed and their result
is appended at the end.  Strategies: ``'optimal'`` (exhaustive over pair orders, fewest
FLOPs; used by ``'auto'`` up to four operands), ``'greedy'`` (repeatedly the pair whose
result removes the most elements, ties by FLOPs; ``'auto'`` beyond four operands, ``True``
and opt_einsum's other names), ``False`` (left to right), or an explicit path (whose
tuples may name more than two operands).  Paths may differ from opt_einsum's where its heuristics
differ; the contraction's value does not.
"""
from __future__ import annotations

import itertools
import math

import numpy as np


def _result_labels(a, b, rest, out):
    keep = set(out).union(*map(set, rest))
    return "".join(c for c in dict.fromkeys(a + b) if c in keep)


def _size(labels, sizes):
    return math.prod(sizes[c] for c in labels)


def _flops(a, b, sizes):
    return _size(set(a) | set(b), sizes)


def _step(subs, i, j, out):
    rest = [s for k, s in enumerate(subs) if k not in (i, j)]
    return rest + [_result_labels(subs[i], subs[j], rest, out)]


def _greedy(subs, out, sizes):
    path = []
    while len(subs) > 1:
        best = None
        for i, j in itertools.combinations(range(len(subs)), 2):
            rest = [s for k, s in enumerate(subs) if k not in (i, j)]
            r = _result_labels(subs[i], subs[j], rest, out)
            removed = _size(r, sizes) - _size(subs[i], sizes) - _size(subs[j], sizes)
            key = (removed, _flops(subs[i], subs[j], sizes), i, j)
            best = key if best is None or key < best else best
        i, j = best[2], best[3]
        path.append((i, j))
        subs = _step(subs, i, j, out)
    return path


def _optimal(subs, out, sizes):
    def search(subs):
        if len(subs) == 1:
            return 0, []
        best = None
        for i, j in itertools.combinations(range(len(subs)), 2):
            cost, rest_path = search(_step(subs, i, j, out))
            cost += _flops(subs[i], subs[j], sizes)
            if best is None or cost < best[0]:
                best = (cost, [(i, j)] + rest_path)
        return best
    return search(list(subs))[1]


def contraction_path(subs, out, sizes, optimize):
    """The path for operands labelled ``subs`` (strings) with label ``sizes``."""
    n = len(subs)
    if isinstance(optimize, (list, tuple)):
        path = [tuple(p) for p in optimize if p != "einsum_path"]
        left = n
        for p in path:
            if not p or len(set(p)) != len(p) or any(
                    not isinstance(k, (int, np.integer)) or not 0 <= k < left for k in p):
                raise ValueError(f"einsum: invalid contraction {p!r} in the explicit path "
                                 f"{list(optimize)!r} ({left} operands left at that step)")
            left -= len(p) - 1
        if left != 1:
            raise ValueError(f"einsum: the explicit path {list(optimize)!r} leaves {left} "
                             "operands; it must contract all of them to one")
        return path
    if n <= 2:
        return [tuple(range(n))]
    if optimize is False:
        return [(0, 1)] * (n - 1)
    if optimize == "optimal" or (optimize == "auto" and n <= 4):
        return _optimal(subs, out, sizes)
    if optimize in ("greedy", "auto", True, "dp", "branch-all", "branch-2", "branch-1",
                    "auto-hq"):
        return _greedy(subs, out, sizes)
    raise ValueError(f"einsum: unknown optimize={optimize!r}; use 'auto', 'greedy', "
                     "'optimal', True, False or an explicit path")


def report(subscripts, subs, out, sizes, path):
    """The text ``einsum_path`` returns beside the path (opt_einsum's summary layout)."""
    naive = _size(set("".join(subs)) | set(out), sizes) * max(len(subs) - 1, 1)
    cur, rows, opt, largest, scalings = list(subs), [], 0, 0, []
    for group in path:
        parts = [cur[k] for k in group]
        rest = [t for k, t in enumerate(cur) if k not in group]
        keep = set(out).union(*map(set, rest))
        res = "".join(c for c in dict.fromkeys("".join(parts)) if c in keep)
        cur = rest + [res]
        f = _size(set("".join(parts)), sizes)
        opt += f
        largest = max(largest, _size(res, sizes))
        scalings.append(len(set("".join(parts))))
        rows.append(f"{scalings[-1]:>4}    {','.join(parts) + '->' + res:<24}"
                    f"{','.join(cur) + '->' + out}")
    scaling = len(set("".join(subs)) | set(out))
    lines = [f"  Complete contraction:  {subscripts}",
             f"         Naive scaling:  {scaling}",
             f"     Optimized scaling:  {max(scalings, default=scaling)}",
             f"      Naive FLOP count:  {naive:.3e}",
             f"  Optimized FLOP count:  {max(opt, 1):.3e}",
             f"   Theoretical speedup:  {naive / max(opt, 1):.3f}",
             f"  Largest intermediate:  {largest:.3e} elements",
             "-" * 74,
             "scaling   current                 remaining",
             "-" * 74] + rows
    return "\n".join(lines)

"""``lax.while_loop(..., max_steps=N)``: a while loop that reverse mode can differentiate.

JAX cannot reverse-differentiate ``while_loop`` (jax-ml/jax#1954): the trip count is
only known at run time, so there is no fixed-size place to store residuals.  With a
static bound ``N`` the loop becomes a ``scan`` of ``N`` trips carrying an ``active``
flag: a trip runs ``body_fun`` (inside ``cond``, so inactive trips cost only the
predicate and produce no NaN gradients) while ``active and cond_fun(val)``, and
otherwise passes ``val`` through.  ``scan`` lowers to a single XLA while loop and has
every transformation rule, so jit/vmap/jvp/grad/vjp all follow.

Memory (``checkpoint``): a plain scan stores residuals for all ``N`` trips.  With
``checkpoint="sqrt"`` (or an int segment length ``k``) the ``N`` trips are split into
``ceil(N / k)`` fixed segments (``k = ceil(sqrt(N))``); the outer scan stores only the
carry at each segment boundary and each segment is a rematerialized (``checkpoint``)
inner scan, recomputed during the backward pass: O(N/k + k) = O(sqrt(N)) memory for
about one extra forward pass.  Fixed segments are simpler than binomial (treeverse)
checkpointing and within a constant factor of it at this memory budget.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from xform._src.interpreters import core
from xform._src.primitives import elementwise as ew
from xform._src.primitives.control_flow import _flatten_args, _trace, _tu
from xform._src.primitives.control_flow import cond, scan
from xform._src.primitives.remat import remat_p


def _static_bound(max_steps):
    try:
        n = operator.index(max_steps)
    except TypeError:
        raise TypeError(f"lax.while_loop: max_steps must be a static Python int, got "
                        f"{max_steps!r} of type {type(max_steps).__name__}") from None
    if n < 0:
        raise ValueError(f"lax.while_loop: max_steps must be >= 0, got {n}")
    return n


def _segment_length(checkpoint, n):
    if checkpoint is None:
        return None
    if checkpoint == "sqrt":
        return max(1, math.isqrt(max(n - 1, 0)) + 1)      # ceil(sqrt(n))
    if isinstance(checkpoint, (int, np.integer)) and not isinstance(checkpoint, bool):
        if checkpoint < 1:
            raise ValueError(f"lax.while_loop: checkpoint segment length must be >= 1, "
                             f"got {checkpoint}")
        return int(checkpoint)
    raise ValueError(f"lax.while_loop: checkpoint must be None, 'sqrt' or a positive int "
                     f"segment length, got {checkpoint!r}")


def _remat(fun, carry):
    """``checkpoint(fun)(carry)`` with the remat primitive (nothing saved inside)."""
    tu = _tu()
    leaves, tree = _flatten_args(carry, "lax.while_loop carry")
    in_tree = tu.tree_structure((carry,))
    closed, consts, out_tree = _trace(fun, in_tree, [core.get_aval(x) for x in leaves],
                                      "lax.while_loop checkpointed segment")
    # ``closed`` takes the hoisted constants first, then the carry leaves
    outs = remat_p.bind(*consts, *leaves, jaxpr=closed, prevent_cse=True,
                        differentiated=False, policy=None)
    return tu.tree_unflatten(out_tree, outs)


def bounded_while(cond_fun, body_fun, init_val, max_steps, checkpoint):
    n = _static_bound(max_steps)
    k = _segment_length(checkpoint, n)

    def trip(carry):
        active, count, val = carry
        go = ew.and_p.bind(active, ew.and_p.bind(ew.lt_p.bind(count, np.int32(n)),
                                                   _pred(cond_fun(val))))
        val = cond(go, body_fun, lambda v: v, val)
        return go, ew.add_p.bind(count, np.int32(1)), val

    carry = (np.bool_(True), np.int32(0), init_val)
    if k is None or k >= n:
        carry, _ = scan(lambda c, _: (trip(c), None), carry, None, length=n)
        return carry[2]

    def segment(c):
        out, _ = scan(lambda c, _: (trip(c), None), c, None, length=k)
        return out

    carry, _ = scan(lambda c, _: (_remat(segment, c), None), carry, None,
                    length=-(-n // k))
    return carry[2]


def _pred(p):
    aval = core.get_aval(p)
    if aval.shape != () or aval.dtype != np.bool_:
        raise TypeError(f"lax.while_loop: cond_fun must return a boolean scalar, but got "
                        f"output type {aval.str_short()}")
    return p

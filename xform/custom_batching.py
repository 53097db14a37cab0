"""``xform.custom_batching``: functions with a user-defined ``vmap`` rule.

``custom_vmap(fun)`` behaves like ``fun`` everywhere except under ``vmap``, where the
rule registered with ``def_vmap`` runs instead::

    @custom_vmap
    def f(x): return x.sum()

    @f.def_vmap
    def f_vmap(axis_size, in_batched, x):
        x_batched, = in_batched
        return x.sum(axis=1), x_batched      # (outputs, which outputs are batched)

The rule gets the batch size, a pytree of bools matching the arguments (True: that
leaf has the batch axis, at position 0) and the arguments; it returns the outputs and
a pytree (or prefix) of bools saying which outputs carry a leading batch axis.
As in JAX, the JVP of a ``custom_vmap`` function is again one: outside ``vmap`` it is
``fun``'s JVP; under ``vmap`` it is the JVP of the rule (arguments whose primal and
tangent are both batched go to the rule as batched; other batching is mapped over).
With integer arguments or results, or a closure over differentiated values, the primal
goes through the rule and the tangents come from ``fun``'s JVP batched as usual.
Reverse mode (``grad``) works too (JAX's ``custom_vmap`` has none): it linearizes the
JVP.  ``sequential_vmap(f)``
is a ``custom_vmap`` whose rule maps ``f`` over the batch with ``lax.map``.
"""
from __future__ import annotations

import functools

from xform._src.interpreters import core
from xform._src.primitives.custom_vmap import UserRule, custom_vmap_call_p
from xform._ad_api import as_value
from xform._src.primitives.control_flow import map as lax_map
from xform._src.primitives.custom import trace_flat
from xform.tree_util import tree_flatten
from xform.tree_util import tree_map

__all__ = ["custom_vmap", "sequential_vmap"]

class custom_vmap:
    """A function with a custom ``vmap`` rule (see the module docstring)."""

    def __init__(self, fun):
        if not callable(fun):
            raise TypeError(f"custom_vmap: expected a callable, got {fun!r}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule = None

    def def_vmap(self, vmap_rule):
        """Register ``vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)``."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args, **kwargs):
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function "
                                 f"{getattr(self.fun, '__name__', self.fun)} using def_vmap.")
        leaves, in_tree = tree_flatten((args, kwargs))
        leaves = [as_value(x) for x in leaves]
        store = {}

        def flat(*xs):
            a, k = in_tree.unflatten(list(xs))
            o, store["tree"] = tree_flatten(self.fun(*a, **k))
            return o
        closed, consts = trace_flat(flat, [core.get_aval(x) for x in leaves],
                                    name="custom_vmap")
        out_tree = store["tree"]
        outs = custom_vmap_call_p.bind(*consts, *leaves, call_jaxpr=closed,
                                       rule=UserRule(self.vmap_rule, in_tree, out_tree),
                                       num_consts=len(consts))
        return out_tree.unflatten(outs)


def sequential_vmap(f):
    """A ``custom_vmap`` of ``f`` whose rule applies ``f`` to one batch element at a
    time (``lax.map``), for functions that should not be vectorized."""
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        batched = [a for a, b in zip(args, in_batched) if b]
        idx = [i for i, b in enumerate(in_batched) if b]

        def one(bs):
            full = list(args)
            for i, v in zip(idx, bs):
                full[i] = v
            return f.fun(*full)
        out = lax_map(one, tuple(batched))
        return out, tree_map(lambda _: True, out)
    return f

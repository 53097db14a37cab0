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
Differentiation goes through ``fun``; the primal stays a ``custom_vmap`` call, so
``vmap`` of ``grad`` still uses the rule for the primal part.  ``sequential_vmap(f)``
is a ``custom_vmap`` whose rule maps ``f`` over the batch with ``lax.map``.
"""
from __future__ import annotations

import functools

from interpreters import ad, batching, core
from interpreters.core import Primitive
from interpreters.ir import eval_jaxpr

__all__ = ["custom_vmap", "sequential_vmap"]

custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True)
custom_vmap_call_p.impl_takes_arrays = True


@custom_vmap_call_p.def_impl
def _impl(*args, call_jaxpr, rule, in_tree, out_tree, num_consts):
    return eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


custom_vmap_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **_: list(call_jaxpr.out_avals))


def _jvp(primals, tangents, *, call_jaxpr, rule, in_tree, out_tree, num_consts):
    outs = custom_vmap_call_p.bind(*primals, call_jaxpr=call_jaxpr, rule=rule,
                                   in_tree=in_tree, out_tree=out_tree, num_consts=num_consts)
    _, t_out = ad.jvp_flat(lambda *a: eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *a),
                           list(primals), list(tangents))
    return outs, list(t_out)


ad.jvp_rules[custom_vmap_call_p] = _jvp


def _batch(axis_data, vals, dims, *, call_jaxpr, rule, in_tree, out_tree, num_consts):
    from primitives._rules import moveaxis
    from xform.tree_util import broadcast_prefix, tree_flatten
    if any(d is not None for d in dims[:num_consts]):
        raise ValueError("custom_vmap: the function closes over a value batched by this "
                         "vmap; pass it as an argument instead")
    args = [v if d is None else moveaxis(v, d, 0)
            for v, d in zip(vals[num_consts:], dims[num_consts:])]
    in_batched = [d is not None for d in dims[num_consts:]]
    a_args, a_kwargs = in_tree.unflatten(args)
    b_args, _ = in_tree.unflatten(in_batched)
    res = rule(axis_data.size, list(b_args), *a_args, **a_kwargs)
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise TypeError("custom_vmap: the vmap rule must return a pair (outputs, "
                        f"out_batched), got {type(res).__name__}")
    out, out_batched = res
    out_leaves, tree = tree_flatten(out)
    if tree != out_tree:
        raise ValueError(f"custom_vmap: the vmap rule's output structure {tree} differs "
                         f"from the function's {out_tree}")
    try:
        flags = broadcast_prefix(out_batched, out)
    except ValueError as e:
        raise ValueError("custom_vmap: out_batched must be a pytree prefix of the rule's "
                         f"outputs (bools): {e}") from None
    for l, b, a in zip(out_leaves, flags, call_jaxpr.out_avals):
        want = ((axis_data.size,) + a.shape) if b else a.shape
        if tuple(core.get_aval(l).shape) != want:
            raise ValueError(f"custom_vmap: the vmap rule returned an output of shape "
                             f"{core.get_aval(l).shape} marked batched={bool(b)}; expected "
                             f"{want}")
    return out_leaves, [0 if b else None for b in flags]


batching.batch_rules[custom_vmap_call_p] = _batch


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
        from primitives.custom import trace_flat
        from xform._ad_api import as_value
        from xform.tree_util import tree_flatten
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
                                       rule=self.vmap_rule, in_tree=in_tree,
                                       out_tree=out_tree, num_consts=len(consts))
        return out_tree.unflatten(outs)


def sequential_vmap(f):
    """A ``custom_vmap`` of ``f`` whose rule applies ``f`` to one batch element at a
    time (``lax.map``), for functions that should not be vectorized."""
    from primitives.control_flow import map as lax_map
    from xform.tree_util import tree_map
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

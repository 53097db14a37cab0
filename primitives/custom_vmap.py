"""``custom_vmap_call``: a function whose batching rule is the user's (``xform.custom_batching``).

Outside ``vmap`` it evaluates its program; under ``vmap`` it calls the user's rule
(``UserRule``); its JVP is again a ``custom_vmap_call`` (``_JVPRule``), so batching a
JVP also uses the user's rule; its transpose linearizes the JVP.
"""
from __future__ import annotations

from xform._src.interpreters import ad, batching, core, dtypes
from xform._src.interpreters.core import Primitive
from xform._src.interpreters.ir import eval_jaxpr
from xform._src.interpreters.tree_util import broadcast_prefix, tree_flatten
from xform._src.primitives._rules import moveaxis
from xform._src.primitives.custom import trace_flat

__all__: list = []

custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True)
custom_vmap_call_p.impl_takes_arrays = True


@custom_vmap_call_p.def_impl
def _impl(*args, call_jaxpr, rule, num_consts):
    return eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


custom_vmap_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **_: list(call_jaxpr.out_avals))


class UserRule:
    """The user's rule over flat leaves: ``(axis_size, in_batched, *leaves) ->
    (out_leaves, out_batched_leaves)`` (hashable by identity)."""

    __slots__ = ("rule", "in_tree", "out_tree", "__weakref__")

    def __init__(self, rule, in_tree, out_tree):
        self.rule, self.in_tree, self.out_tree = rule, in_tree, out_tree

    def __call__(self, axis_size, in_batched, *vals):
        a_args, a_kwargs = self.in_tree.unflatten(list(vals))
        b_args, _ = self.in_tree.unflatten(list(in_batched))
        res = self.rule(axis_size, list(b_args), *a_args, **a_kwargs)
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError("custom_vmap: the vmap rule must return a pair (outputs, "
                            f"out_batched), got {type(res).__name__}")
        out, out_batched = res
        out_leaves, tree = tree_flatten(out)
        if tree != self.out_tree:
            raise ValueError(f"custom_vmap: the vmap rule's output structure {tree} differs "
                             f"from the function's {self.out_tree}")
        try:
            flags = broadcast_prefix(out_batched, out)
        except ValueError as e:
            raise ValueError("custom_vmap: out_batched must be a pytree prefix of the rule's "
                             f"outputs (bools): {e}") from None
        return out_leaves, [bool(b) for b in flags]


class _JVPRule:
    """The vmap rule of a custom_vmap function's JVP (as JAX defines it): arguments whose
    primal and tangent are both batched go to the original rule; the extra batching of
    only-primal or only-tangent arguments is handled by ``vmap`` over the rule's JVP."""

    __slots__ = ("rule", "n", "tangents_only", "__weakref__")

    def __init__(self, rule, n, tangents_only=False):
        self.rule, self.n, self.tangents_only = rule, n, tangents_only

    def __call__(self, axis_size, in_batched, *vals):
        n = self.n
        ps, ts = list(vals[:n]), list(vals[n:])
        bp, bt = in_batched[:n], in_batched[n:]
        mutual = [p and t for p, t in zip(bp, bt)]
        extra_p = [0 if p and not t else None for p, t in zip(bp, bt)]
        extra_t = [0 if t and not p else None for p, t in zip(bp, bt)]
        store = {}

        def to_jvp(*prims):
            outs, flags = self.rule(axis_size, mutual, *prims)
            store["flags"] = flags
            return list(outs)

        def inner(*flat):
            o, t = ad.jvp_flat(to_jvp, list(flat[:n]), list(flat[n:]))
            return list(o) + [ad.instantiate(x) for x in t]
        if any(e is not None for e in extra_p + extra_t):
            outs, _ = batching.batch_flat(inner, batching.AxisData(int(axis_size), None, None),
                                          ps + ts, extra_p + extra_t,
                                          out_dims=lambda k: [0] * k)
            fp = ft = [True] * (len(outs) // 2)
        else:
            outs = inner(*ps, *ts)
            fp = ft = list(store["flags"])
        out_p, out_t = outs[:len(outs) // 2], outs[len(outs) // 2:]
        if self.tangents_only:
            return list(out_t), ft
        return list(out_p) + list(out_t), fp + ft


def _jvp(primals, tangents, *, call_jaxpr, rule, num_consts):

    def f(*a):
        return eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *a)
    consts, ps = list(primals[:num_consts]), list(primals[num_consts:])
    ts = list(tangents[num_consts:])
    simple = all(type(t) is ad.Zero for t in tangents[:num_consts]) and all(
        dtypes.is_inexact(core.get_aval(p).dtype) for p in ps) and all(
        dtypes.is_inexact(a.dtype) for a in call_jaxpr.out_avals)
    if not simple:
        # integer arguments/results or a differentiated closure: primal through the rule,
        # tangents from the function's own JVP
        outs = custom_vmap_call_p.bind(*primals, call_jaxpr=call_jaxpr, rule=rule,
                                       num_consts=num_consts)
        _, t_out = ad.jvp_flat(f, list(primals), list(tangents))
        return outs, list(t_out)
    ts = [ad.instantiate(t) for t in ts]
    n = len(ps)
    # primal: the call itself (its rule applies under vmap); tangent: a second
    # custom_vmap call, linear in the tangents, whose rule is the JVP of the rule
    outs = custom_vmap_call_p.bind(*primals, call_jaxpr=call_jaxpr, rule=rule,
                                   num_consts=num_consts)

    def tangent_fun(*xs):
        c, p, t = xs[:num_consts], xs[num_consts:num_consts + n], xs[num_consts + n:]
        _, to = ad.jvp_flat(f, list(c) + list(p),
                            [ad.Zero(ad.tangent_aval(core.get_aval(x))) for x in c] + list(t))
        return [ad.instantiate(x) for x in to]
    closed, hoisted = trace_flat(tangent_fun, [core.get_aval(x) for x in consts + ps + ts],
                                 name="custom_vmap_jvp")
    t_out = custom_vmap_call_p.bind(*hoisted, *consts, *ps, *ts, call_jaxpr=closed,
                                    rule=_JVPRule(rule, n, tangents_only=True),
                                    num_consts=len(hoisted) + num_consts)
    return outs, t_out


ad.jvp_rules[custom_vmap_call_p] = _jvp


def _batch(axis_data, vals, dims, *, call_jaxpr, rule, num_consts):
    if any(d is not None for d in dims[:num_consts]):
        raise ValueError("custom_vmap: the function closes over a value batched by this "
                         "vmap; pass it as an argument instead")
    args = [v if d is None else moveaxis(v, d, 0)
            for v, d in zip(vals[num_consts:], dims[num_consts:])]
    in_batched = [d is not None for d in dims[num_consts:]]
    out_leaves, flags = rule(axis_data.size, in_batched, *args)
    for l, b, a in zip(out_leaves, flags, call_jaxpr.out_avals):
        want = ((axis_data.size,) + a.shape) if b else a.shape
        if tuple(core.get_aval(l).shape) != want:
            raise ValueError(f"custom_vmap: the vmap rule returned an output of shape "
                             f"{core.get_aval(l).shape} marked batched={bool(b)}; expected "
                             f"{want}")
    return list(out_leaves), [0 if b else None for b in flags]


batching.batch_rules[custom_vmap_call_p] = _batch


def _transpose(cts, *args, call_jaxpr, rule, num_consts):
    """The tangent call is linear in its tangent inputs: transpose its program (the
    custom rule plays no part in reverse mode)."""
    return ad.backward_pass_partial(call_jaxpr.jaxpr, call_jaxpr.consts, list(args),
                                    list(cts))


ad.transpose_rules[custom_vmap_call_p] = _transpose

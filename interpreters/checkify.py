"""The checkify interpreter: run a program while threading a functional error value.

``checkify`` (``xform.experimental.checkify``) stages the user's function into a program
and then interprets it here: each equation is evaluated by its *checkify rule*
(``checkify_rules[prim](error, enabled_errors, *args, **params) -> (error, outs)``), a
rule that binds the primitive (under whatever trace is current, so checkify composes
with ``jit``, ``vmap`` and ``grad``) and returns an updated error value.  Equations
without a rule are bound unchanged and leave the error alone.

The engine knows no particular primitive and nothing of the error value's layout: the
error is any pytree (``primitives/checkify.py`` defines ``Error``), flattened to its
leaves wherever a sub-program has to carry it as extra inputs and outputs.  The rules
for ``check`` itself, for the automatic NaN/division/index checks and for the
higher-order primitives (``jit``, ``cond``, ``while``, ``scan``, custom derivatives,
``checkpoint``) live next to ``Error`` in ``primitives/checkify.py``.
"""
from __future__ import annotations

from xform._src.interpreters import core, ir, staging, tree_util
from xform._src.interpreters import jaxpr_transforms as jt
from xform._src.interpreters.ir import ClosedJaxpr, Literal

# prim -> rule(error, enabled_errors, *invals, **params) -> (error, out)
# (``out`` is a list for primitives with multiple results)
checkify_rules: dict = {}


def _default_rule(prim, error, enabled_errors, *invals, **params):
    return error, prim.bind(*invals, **params)


def checkify_jaxpr_flat(jaxpr, consts, enabled_errors, err_tree, *args):
    """Evaluate ``jaxpr`` on ``args`` (the error's leaves first, then the program's
    inputs) under the current trace; returns ``(error, outputs)``."""
    n = err_tree.num_leaves
    error = tree_util.tree_unflatten(err_tree, list(args[:n]))
    env = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args[n:]))

    def read(a):
        return core.Array(a.value, a.aval.weak_type) if type(a) is Literal else env[a]

    ctx = ir.source_context
    entry = ctx.src
    try:
        for eqn in jaxpr.eqns:
            invals = [read(a) for a in eqn.invars]
            ctx.src = eqn.source_info or entry
            rule = checkify_rules.get(eqn.primitive)
            if rule is None:
                error, outs = _default_rule(eqn.primitive, error, enabled_errors, *invals,
                                            **eqn.params)
            else:
                error, outs = rule(error, enabled_errors, *invals, **eqn.params)
            if eqn.primitive.multiple_results:
                env.update(zip(eqn.outvars, outs))
            else:
                env[eqn.outvars[0]] = outs
    finally:
        ctx.src = entry
    return error, [read(a) for a in jaxpr.outvars]


def checkify_jaxpr(closed: ClosedJaxpr, enabled_errors, error, *args):
    """``(error, outputs)`` of ``closed`` applied to ``args``, starting from ``error``."""
    leaves, tree = tree_util.tree_flatten(error)
    return checkify_jaxpr_flat(closed.jaxpr, closed.consts, enabled_errors, tree,
                               *leaves, *args)


_memo = jt.Memo(maxsize=256)


def checkify_jaxpr_to_jaxpr(closed: ClosedJaxpr, enabled_errors, err_tree, in_avals):
    """The program ``(error leaves, inputs) -> (error leaves, outputs)`` that checkifies
    ``closed``, for an incoming error of structure ``err_tree`` whose leaves and the
    program's inputs have ``in_avals``.  Returns ``(ClosedJaxpr, out_tree)`` where
    ``out_tree`` is the structure of ``(error, outputs)``: unflatten the outputs with it
    (the outgoing error's structure may hold more error kinds than the incoming one)."""
    in_avals = tuple(in_avals)
    key = (id(closed), enabled_errors, err_tree, in_avals)
    hit = _memo.get(key)
    if hit is not None:
        return hit
    store = []

    def fun(*args):
        error, outs = checkify_jaxpr_flat(closed.jaxpr, closed.consts, enabled_errors,
                                          err_tree, *args)
        leaves, tree = tree_util.tree_flatten((error, outs))
        store.append(tree)
        return leaves

    jaxpr, consts = staging.trace_to_jaxpr(fun, in_avals, name="checkify")
    result = (ClosedJaxpr(jaxpr, consts), store[0])
    return _memo.put(key, closed, result)


def trace_and_checkify(fun, args, enabled_errors, init_error):
    """Stage ``fun(*args)`` and checkify the program.  ``args`` is a flat list: its
    ``Array`` entries become the program's inputs (so array values are data, as in
    JAX, not static); anything else is closed over and stays static.
    Returns ``(error, flat outputs, output tree)``."""
    dyn = [i for i, a in enumerate(args) if isinstance(a, core.Array)]
    store = []

    def flat(*tracers):
        vals = list(args)
        for i, t in zip(dyn, tracers):
            vals[i] = t
        leaves, tree = tree_util.tree_flatten(fun(*vals))
        store.append(tree)
        return leaves

    jaxpr, consts = staging.trace_to_jaxpr(flat, [args[i].aval for i in dyn], name="checkify")
    error, outs = checkify_jaxpr(ClosedJaxpr(jaxpr, consts), enabled_errors, init_error,
                                 *[args[i] for i in dyn])
    return error, outs, store[0]

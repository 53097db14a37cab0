"""Custom derivative rules as higher-order primitives.

``custom_jvp_call``  carries the primal program (``call_jaxpr``) and the user's JVP
                     rule (a flat Python callable).  Eager: evaluate the program.
                     JVP: call the rule.  Batching: batch the program and the rule.
``custom_vjp_call``  carries the primal program plus flat ``fwd``/``bwd`` callables.
                     JVP: run ``fwd`` now and return a tangent made by ``custom_lin``.
``custom_lin``       linear in its tangent inputs, holding ``bwd`` and the residuals;
                     its transpose calls ``bwd``.  It is never evaluated forward
                     (forward-mode of a custom_vjp function is an error, as in JAX).

Laziness (as in JAX): the user-facing wrappers bind these primitives with the primal
function still a Python callable (a ``LazyPrimal`` in ``call_jaxpr``).  Only where
the primal is needed is it run: evaluated on concrete values eagerly, batched under
vmap, staged into a program when the call is recorded (``staging.completion_rules``).
Under JVP only the user's rule runs, so a primal body with Python control flow on
values works under eager grad/jvp/vjp, and fails under jit/vmap where JAX's does.

Programs hold no constants: the caller hoists them into the first ``num_consts``
arguments, so values closed over from outer transformations flow as arguments
and every trace sees them.  The user-facing wrappers live in
``xform/_custom_derivatives.py``; they flatten pytrees and check the rules'
outputs, so the flat callables here see lists of arrays and ``ad.Zero``.
"""
from __future__ import annotations

import collections

from xform._src.interpreters import ad, batching, core, ir, staging
from xform._src.interpreters.ad import Zero
from xform._src.interpreters.core import Primitive
from xform._src.interpreters.ir import ClosedJaxpr, eval_jaxpr, subjaxprs_of_params
from xform._src.interpreters.staging import convert_constvars_to_invars, trace_to_jaxpr

__all__: list = []


# ----------------------------------------------------------------- shared helpers


def hoist_consts(jaxpr, consts):
    """(Jaxpr with constvars, consts) -> (const-free ClosedJaxpr, consts as leading args)."""
    return ClosedJaxpr(convert_constvars_to_invars(jaxpr), []), list(consts)


def trace_flat(fun, in_avals, name="staging"):
    """Stage ``fun`` and hoist its constants: returns (ClosedJaxpr, consts)."""
    jaxpr, consts = trace_to_jaxpr(fun, in_avals, name=name)
    return hoist_consts(jaxpr, consts)


def _at_front(axis_data, vals, dims):
    return [batching.matchaxis(axis_data, d, 0, v) for v, d in zip(vals, dims)]


def batched_aval(aval, size):
    return aval.update(shape=(size,) + aval.shape)


def unbatched_aval(aval):
    return aval.update(shape=aval.shape[1:])


def batch_at_front(fun, axis_data):
    """``fun`` lifted to arguments and results that all carry the batch axis at 0.

    ``ad.Zero`` arguments pass through (with the batch axis stripped from their
    type); ``Zero`` results come back with it added.
    """
    def batched(*vals):
        live = [v for v in vals if type(v) is not Zero]
        zeros = [Zero(unbatched_aval(v.aval)) if type(v) is Zero else None for v in vals]
        zero_out = []

        def inner(*xs):
            it = iter(xs)
            args = [z if z is not None else next(it) for z in zeros]
            outs = list(fun(*args))
            zero_out[:] = [o if type(o) is Zero else None for o in outs]
            return [o for o in outs if type(o) is not Zero]

        outs, _ = batching.batch_flat(inner, axis_data, live, [0] * len(live),
                                      lambda n: [0] * n)
        it = iter(outs)
        return [Zero(batched_aval(z.aval, axis_data.size)) if z is not None else next(it)
                for z in zero_out]
    return batched


class LazyPrimal:
    """A custom function's primal not staged yet: ``fun(*flat args) -> flat outputs``.

    Equality is identity (a param of a bound, never recorded, call)."""

    __slots__ = ("fun", "name")

    def __init__(self, fun, name):
        self.fun = fun
        self.name = name

    def __repr__(self):
        return f"LazyPrimal({self.name})"


def _is_lazy(call_jaxpr):
    return type(call_jaxpr) is LazyPrimal


def _complete_lazy(trace, args, params):
    """Stage a lazy primal where the call is recorded; closed-over values become leading
    arguments (``num_consts``)."""
    lazy = params["call_jaxpr"]
    if not _is_lazy(lazy):
        return args, params
    closed, consts = trace_flat(lazy.fun, [core.get_aval(a) for a in args], name=lazy.name)
    closed.jaxpr.debug_info = ir.DebugInfo(lazy.name)
    params = dict(params, call_jaxpr=closed, num_consts=len(consts) + params["num_consts"])
    return [*consts, *args], params


def batch_lazy(fun, axis_data, dims):
    """``fun`` over values carrying the batch axis at ``dims`` (None: unbatched, as
    concrete as they came): outputs at axis 0.  ``ad.Zero`` arguments pass through as
    unbatched zeros; ``Zero`` results come back with the batch axis added."""
    def batched(*vals):
        keep = [type(v) is not Zero for v in vals]
        live = [v for v, k in zip(vals, keep) if k]
        live_dims = [d for d, k in zip(dims, keep) if k]
        zeros = [None if k else Zero(v.aval if d is None else unbatched_aval_at(v.aval, d))
                 for v, d, k in zip(vals, dims, keep)]
        zero_out = []

        def inner(*xs):
            it = iter(xs)
            outs = list(fun(*[z if z is not None else next(it) for z in zeros]))
            zero_out[:] = [o if type(o) is Zero else None for o in outs]
            return [o for o in outs if type(o) is not Zero]

        outs, _ = batching.batch_flat(inner, axis_data, live, live_dims,
                                      lambda n: [0] * n)
        it = iter(outs)
        return [Zero(batched_aval(z.aval, axis_data.size)) if z is not None else next(it)
                for z in zero_out]
    return batched


def unbatched_aval_at(aval, d):
    return aval.update(shape=aval.shape[:d] + aval.shape[d + 1:])


def _eval_closed(closed):
    return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)


# ----------------------------------------------------------------- custom_jvp_call

custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)


def _pp_custom_jvp(eqn, names):
    # JAX: name= (the primal function) first, the rule shown by its function name,
    # num_consts only when nonzero.
    p = dict(eqn.params)
    if not p.get("num_consts"):
        p.pop("num_consts", None)
    p["jvp"] = ir.pp_fn_name(p.get("jvp"), "jvp")
    return [("name", ir.pp_fn_name(p.get("call_jaxpr"), "<unnamed>"))] + sorted(p.items())


ir.pp_rules[custom_jvp_call_p] = _pp_custom_jvp
custom_jvp_call_p.impl_takes_arrays = True


@custom_jvp_call_p.def_impl
def _custom_jvp_call_impl(*args, call_jaxpr, jvp, num_consts, symbolic_zeros):
    if _is_lazy(call_jaxpr):
        return list(call_jaxpr.fun(*args))
    return eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


def _custom_call_abstract_eval(*avals, call_jaxpr, **_):
    if _is_lazy(call_jaxpr):     # staging completes the params first (completion_rules)
        raise TypeError(f"internal: the primal of custom function {call_jaxpr.name} was "
                        "not staged before its abstract evaluation")
    return list(call_jaxpr.out_avals)


custom_jvp_call_p.def_abstract_eval(_custom_call_abstract_eval)
staging.completion_rules[custom_jvp_call_p] = _complete_lazy


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, symbolic_zeros):
    # A closed-over value of *this* differentiation (a const with a tangent) is not
    # covered by the user's rule, which only knows the explicit arguments: fall back
    # to differentiating the primal program.
    if not _is_lazy(call_jaxpr) and any(type(t) is not Zero for t in tangents[:num_consts]):
        primals = [ad._py_to_array(p) if type(p) in ad._PY_SCALARS else p for p in primals]
        tangents = [ad._py_to_array(t, p) if type(t) in ad._PY_SCALARS else t
                    for p, t in zip(primals, tangents)]
        return ad.jvp_flat(_eval_closed(call_jaxpr), list(primals), list(tangents))
    outs, touts = jvp(list(primals[num_consts:]), list(tangents[num_consts:]))
    return list(outs), list(touts)


ad.jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp
ad.python_scalar_rules.add(custom_jvp_call_p)   # the user's rule sees Python floats, as in JAX


def _custom_jvp_call_transpose(cts, *args, call_jaxpr, jvp, num_consts, symbolic_zeros):
    """A custom-JVP function applied to tangents (its JVP rule calls it on the tangent,
    as equinox's ``nondifferentiable``-style wrappers and optimistix's ``_asarray`` do)
    is linear where its primal program is: transpose that program.  JAX reaches the same
    result by replacing such a call with its primal program when it builds the linear
    function (``linearize``, ``linear_transpose``); the custom rule plays no part in
    reverse mode."""
    if _is_lazy(call_jaxpr):     # stage the primal (closed-over values lead its inputs)
        closed, consts = trace_flat(call_jaxpr.fun,
                                    [a.aval if type(a) is ad.UndefinedPrimal
                                     else core.get_aval(a) for a in args],
                                    name=call_jaxpr.name)
        return ad.backward_pass_partial(closed.jaxpr, closed.consts, [*consts, *args],
                                        list(cts))[len(consts):]
    return ad.backward_pass_partial(call_jaxpr.jaxpr, call_jaxpr.consts, list(args),
                                    list(cts))


ad.transpose_rules[custom_jvp_call_p] = _custom_jvp_call_transpose


def _jvp_concat(jvp, xs):
    n = len(xs) // 2
    po, to = jvp(list(xs[:n]), list(xs[n:]))
    return list(po) + list(to)


def _keep_names(old_jaxpr, new_jaxpr, *rules):
    """A batched custom call keeps the user's function and rule names (for printing)."""
    if new_jaxpr is not None:
        new_jaxpr.jaxpr.debug_info = old_jaxpr.jaxpr.debug_info
    for old, new in rules:
        new.__name__ = getattr(old, "__name__", new.__name__)


def _custom_jvp_call_batch(axis_data, vals, dims, *, call_jaxpr, jvp, num_consts,
                           symbolic_zeros):
    if _is_lazy(call_jaxpr):
        # batch the Python functions themselves (unbatched arguments stay as they are)
        def batched_jvp(primals, tangents):
            outs = batch_lazy(lambda *xs: _jvp_concat(jvp, xs), axis_data,
                              list(dims) + list(dims))(*primals, *tangents)
            m = len(outs) // 2
            return outs[:m], outs[m:]
        lazy = LazyPrimal(batch_lazy(call_jaxpr.fun, axis_data, dims), call_jaxpr.name)
        _keep_names(None, None, (jvp, batched_jvp))
        outs = custom_jvp_call_p.bind(*vals, call_jaxpr=lazy, jvp=batched_jvp,
                                      num_consts=num_consts, symbolic_zeros=symbolic_zeros)
        return outs, [0] * len(outs)
    # unbatched arguments stay unbatched (as in JAX: a predicate computed from them stays
    # a scalar, so a cond inside still takes one branch); outputs all at axis 0
    in_dims = [None if d is None else 0 for d in dims]
    vals = [v if d is None else batching.matchaxis(axis_data, d, 0, v)
            for v, d in zip(vals, dims)]
    new_jaxpr, _ = batching.batch_jaxpr(call_jaxpr, axis_data, in_dims,
                                        [0] * len(call_jaxpr.out_avals))
    closed, consts = hoist_consts(new_jaxpr.jaxpr, new_jaxpr.consts)
    n = len(vals) - num_consts

    def jvp_rule(*xs):
        po, to = jvp(list(xs[:n]), list(xs[n:]))
        return list(po) + list(to)
    arg_dims = in_dims[num_consts:]
    lifted = batch_lazy(jvp_rule, axis_data, arg_dims + arg_dims)

    def batched_jvp(primals, tangents):
        outs = lifted(*primals, *tangents)
        m = len(outs) // 2
        return outs[:m], outs[m:]

    _keep_names(call_jaxpr, closed, (jvp, batched_jvp))
    outs = custom_jvp_call_p.bind(*consts, *vals, call_jaxpr=closed, jvp=batched_jvp,
                                  num_consts=len(consts) + num_consts,
                                  symbolic_zeros=symbolic_zeros)
    return outs, [0] * len(outs)


batching.batch_rules[custom_jvp_call_p] = _custom_jvp_call_batch


# ----------------------------------------------------------------- custom_vjp_call

custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)


def _pp_custom_vjp(eqn, names):
    p = dict(eqn.params)
    if not p.get("num_consts"):
        p.pop("num_consts", None)
    p["fwd"] = ir.pp_fn_name(p.get("fwd"), "fwd")
    p["bwd"] = ir.pp_fn_name(p.get("bwd"), "bwd")
    return [("name", ir.pp_fn_name(p.get("call_jaxpr"), "<unnamed>"))] + sorted(p.items())


ir.pp_rules[custom_vjp_call_p] = _pp_custom_vjp
custom_vjp_call_p.impl_takes_arrays = True


@custom_vjp_call_p.def_impl
def _custom_vjp_call_impl(*args, call_jaxpr, fwd, bwd, num_consts, symbolic_zeros):
    if _is_lazy(call_jaxpr):
        return list(call_jaxpr.fun(*args))
    return eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


custom_vjp_call_p.def_abstract_eval(_custom_call_abstract_eval)
staging.completion_rules[custom_vjp_call_p] = _complete_lazy

CLOSED_OVER_MSG = (
    "Detected differentiation of a custom_vjp function with respect to a closed-over value. "
    "That isn't supported because the custom VJP rule only specifies how to differentiate "
    "the custom_vjp function with respect to explicit input parameters. Pass the value as an "
    "explicit argument of the custom_vjp function (and return its cotangent from bwd), or use "
    "xform.closure_convert.")


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts,
                         symbolic_zeros):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise TypeError(CLOSED_OVER_MSG)
    args, targs = list(primals[num_consts:]), list(tangents[num_consts:])
    nz = tuple(type(t) is not Zero for t in targs)
    # ``fwd(args, perturbed)``: which arguments have a tangent (a rule defined with
    # symbolic_zeros=True sees them as CustomVJPPrimal(value, perturbed))
    outs, res = fwd(args, list(nz))
    primal_avals = ([core.get_aval(o) for o in outs] if _is_lazy(call_jaxpr)
                    else call_jaxpr.out_avals)
    out_avals = tuple(ad.tangent_aval(a) for a in primal_avals)
    live = [t for t in targs if type(t) is not Zero]
    touts = custom_lin_p.bind(*res, *live, num_res=len(res), bwd=bwd, out_avals=out_avals,
                              nz=nz, symbolic_zeros=symbolic_zeros)
    touts = [Zero(a) if not ad.is_differentiable(p) else t
             for t, a, p in zip(touts, out_avals, primal_avals)]
    return list(outs), touts


ad.jvp_rules[custom_vjp_call_p] = _custom_vjp_call_jvp


def _custom_vjp_call_batch(axis_data, vals, dims, *, call_jaxpr, fwd, bwd, num_consts,
                           symbolic_zeros):
    vals = _at_front(axis_data, vals, dims)
    n_res, n_out_cell = [], []
    if _is_lazy(call_jaxpr):
        def fun_counting(*xs):
            outs = list(call_jaxpr.fun(*xs))
            n_out_cell[:] = [len(outs)]
            return outs
        closed = LazyPrimal(batch_at_front(fun_counting, axis_data), call_jaxpr.name)
        consts = []
    else:
        new_jaxpr, _ = batching.batch_jaxpr(call_jaxpr, axis_data, [0] * len(vals),
                                            [0] * len(call_jaxpr.out_avals))
        closed, consts = hoist_consts(new_jaxpr.jaxpr, new_jaxpr.consts)
        n_out_cell[:] = [len(call_jaxpr.out_avals)]

    perturbed_cell = [None]

    def fwd_flat(*xs):
        outs, res = fwd(list(xs), perturbed_cell[0])
        n_res[:] = [len(res)]
        n_out_cell[:] = [len(outs)]
        return list(outs) + list(res)
    fwd_lifted = batch_at_front(fwd_flat, axis_data)

    def batched_fwd(args, perturbed=None):
        perturbed_cell[0] = perturbed
        outs = fwd_lifted(*args)
        n_out = n_out_cell[0]
        return outs[:n_out], outs[n_out:]

    def bwd_flat(*xs):
        k = n_res[0]
        return bwd(list(xs[:k]), list(xs[k:]))
    bwd_lifted = batch_at_front(bwd_flat, axis_data)

    def batched_bwd(res, cts):
        return bwd_lifted(*res, *cts)

    _keep_names(call_jaxpr, None if _is_lazy(closed) else closed, (fwd, batched_fwd),
                (bwd, batched_bwd))
    outs = custom_vjp_call_p.bind(*consts, *vals, call_jaxpr=closed, fwd=batched_fwd,
                                  bwd=batched_bwd, num_consts=len(consts) + num_consts,
                                  symbolic_zeros=symbolic_zeros)
    return outs, [0] * len(outs)


batching.batch_rules[custom_vjp_call_p] = _custom_vjp_call_batch


# ----------------------------------------------------------------- custom_lin

custom_lin_p = Primitive("custom_lin", multiple_results=True)
custom_lin_p.missing_rules["lowering"] = (
    "it exists only between linearization and transposition inside one differentiation "
    "and never reaches a lowered program")


def _custom_lin_forward(*args, **params):
    # JAX's message exactly (programs print it); what to do instead is a note, shown
    # with the traceback
    e = TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")
    e.add_note("A custom_vjp function only has a reverse-mode rule: use xform.vjp/xform.grad "
               "(or jacrev), or define the function with xform.custom_jvp instead.")
    raise e


custom_lin_p.def_impl(_custom_lin_forward)

_forward_ok: collections.OrderedDict = collections.OrderedDict()


def _holds_custom_lin(jaxpr) -> bool:
    for e in jaxpr.eqns:
        if e.primitive is custom_lin_p:
            return True
        if any(_holds_custom_lin(j) for _, j in subjaxprs_of_params(e.params)):
            return True
    return False


def check_forward_evaluable(*programs):
    """Raise (as evaluating ``custom_lin`` does) if a program holds a ``custom_lin``
    anywhere -- the JVP of a custom_vjp function.  Called by the eager rules of
    higher-order primitives that may skip a sub-program (an untaken cond branch, a while
    loop that runs zero times), so forward mode of a custom_vjp function fails whichever
    branch runs, as in JAX.  (A zero-length scan runs nothing, and JAX does not fail
    there either.)"""
    for c in programs:
        j = c.jaxpr if isinstance(c, ClosedJaxpr) else c
        hit = _forward_ok.get(id(j))
        if hit is None:
            hit = _forward_ok[id(j)] = (j, not _holds_custom_lin(j))
            if len(_forward_ok) > 512:
                _forward_ok.popitem(last=False)
        if not hit[1]:
            _custom_lin_forward()
custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **_: list(out_avals))
ad.jvp_rules[custom_lin_p] = _custom_lin_forward
# Evaluating custom_lin forward (under vmap too) only happens for jvp of a custom_vjp function.
batching.batch_rules[custom_lin_p] = lambda axis_data, vals, dims, **params: _custom_lin_forward()


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, nz, symbolic_zeros):
    res = list(args[:num_res])
    cts_in = bwd(res, list(cts))
    it = iter(c for c, m in zip(cts_in, nz) if m)
    return [None] * num_res + [next(it) for _ in range(len(args) - num_res)]


ad.transpose_rules[custom_lin_p] = _custom_lin_transpose

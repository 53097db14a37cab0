"""``custom_jvp`` and ``custom_vjp``: user-defined differentiation rules.

Calling a decorated function binds the ``custom_jvp_call`` / ``custom_vjp_call``
primitive (``primitives/custom.py``) with the primal function and the user's
rules wrapped as *flat* callables, lazily as in JAX: under eager grad/jvp/vjp only
the rule runs (on concrete primals), so a primal body with Python control flow on
values works there; the primal is staged only where a program is recorded (jit,
make_jaxpr, a loop body) and batched under vmap, where such a body fails as in JAX.

A function closing over a value differentiated by an enclosing transformation is
staged at the call instead (its closed-over values become explicit arguments):
custom_jvp then differentiates the primal there (the rule only knows the explicit
arguments); custom_vjp raises JAX's error.  The wrappers here own the
pytree handling and check the rules' outputs against what the primal function
promises, naming expected vs. received structure, shapes and dtypes.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from xform._wrapping import wraps as _wraps
from xform._src.interpreters import ad, core, errors, ir
from xform._src.interpreters.ad import Zero, float0
from xform._src.primitives.custom import LazyPrimal, custom_jvp_call_p, custom_vjp_call_p, trace_flat
from xform._ad_api import _as_value_in, _zeros, as_value
from xform.tree_util import tree_flatten, tree_map, tree_structure, tree_unflatten
from xform._src.interpreters.ir import eval_jaxpr
from xform._src.interpreters import refs as _refs
from xform._src.interpreters.refs import Ref as _Ref
from xform.lax import convert_element_type

__all__ = ["custom_jvp", "custom_vjp", "custom_gradient", "closure_convert"]


class SymbolicZero:
    """A zero tangent/cotangent passed to rules defined with ``symbolic_zeros=True``."""

    def __init__(self, aval):
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)

    def instantiate(self):
        return _zeros(self.aval)

    def __repr__(self):
        return f"SymbolicZero({self.aval.str_short()})"


class _MissingRule(AttributeError, TypeError):
    """No rule defined (AttributeError in JAX; also a TypeError)."""


def _resolve_args(fun, args, kwargs):
    """Keyword arguments become positional (rules see the same argument list)."""
    if not kwargs:
        return tuple(args)
    try:
        ba = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{getattr(fun, '__name__', fun)}: could not resolve keyword "
                        f"arguments for a custom-derivative function: {e}") from None
    ba.apply_defaults()
    if ba.kwargs:
        raise TypeError("keyword-only arguments are not supported by custom_jvp/custom_vjp "
                        f"functions (got {sorted(ba.kwargs)}); pass them positionally.")
    return tuple(ba.args)


def _split_nondiff(nondiff_argnums, args):
    n = len(args)
    for i in nondiff_argnums:
        if not -n <= i < n:
            raise ValueError(f"nondiff_argnums={nondiff_argnums} out of range for a call with "
                             f"{n} positional arguments")
    nd = {i % n for i in nondiff_argnums}
    static = [(i, args[i]) for i in sorted(nd)]
    dyn = [a for i, a in enumerate(args) if i not in nd]
    return static, dyn


def _merge(static, dyn):
    out = list(dyn)
    for i, v in static:
        out.insert(i, v)
    return out


def _avals_str(avals):
    return "[" + ", ".join(a.str_short() for a in avals) + "]"


def _eager(dyn):
    """True at the top level (no transformation active, no traced argument): there, as in
    JAX, a custom_jvp / custom_vjp function is just its Python function."""
    return core.current_trace() is core.EVAL_TRACE and not any(
        isinstance(x, core.Tracer) for x in tree_flatten(tuple(dyn))[0])


class _Flat:
    """The primal function over flat leaves; remembers its output structure and types
    (filled by whichever of the primal or a rule runs first)."""

    def __init__(self, fun, static, dyn, name):
        leaves, self.in_tree = tree_flatten(tuple(dyn))
        self.leaves = [_as_value_in(x, "custom derivative argument") for x in leaves]
        self.fun, self.static, self.name = fun, static, name
        self.out_tree = None
        self.out_avals = None

    def __call__(self, *xs):
        out = self.fun(*_merge(self.static, tree_unflatten(self.in_tree, xs)))
        ls, tree = tree_flatten(out)
        vals = [_as_value_in(o, "function output") for o in ls]
        self.note_out(tree, vals)
        return vals

    def note_out(self, tree, vals):
        if self.out_tree is None:
            self.out_tree = tree
            self.out_avals = [core.get_aval(v) for v in vals]


def _lazy_or_staged(bind_lazy, bind_staged):
    """Bind lazily; a primal or rule that reads a value differentiated by a
    transformation *inside* this call's context fails there (an unexpected tracer):
    then stage at the call, where those values become explicit arguments."""
    try:
        return bind_lazy()
    except errors.UnexpectedTracerError:
        return bind_staged()


def _to_flat_tangent(t, aval, what):
    """A rule's tangent leaf -> value or ``ad.Zero`` (checking its type)."""
    if t is None or isinstance(t, (SymbolicZero, Zero)):
        return Zero(ad.tangent_aval(aval))
    if isinstance(t, np.ndarray) and t.dtype == float0:
        ta = core.ShapedArray(t.shape, float0)
    else:
        t = _as_value_in(t, what)
        ta = core.get_aval(t)
    expected = ad.tangent_aval(aval)
    if ta.shape != expected.shape or (ta.dtype != expected.dtype and not (
            ta.weak_type and ta.dtype.kind == expected.dtype.kind)):
        return _TypeMismatch(ta, expected, aval)
    if ta.dtype == float0:
        return Zero(expected)
    if ta.dtype != expected.dtype:  # a weakly typed value: take the expected dtype
        t = convert_element_type(t, expected.dtype)
    return t


class _TypeMismatch:
    def __init__(self, got, expected, primal):
        self.got, self.expected, self.primal = got, expected, primal


# ----------------------------------------------------------------- custom_jvp


class custom_jvp:
    """A function with a user-defined JVP rule (``defjvp`` / ``defjvps``)."""

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None
        self.symbolic_zeros = False

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def defjvp(self, jvp, symbolic_zeros=False):
        """``jvp(primals, tangents) -> (primal_out, tangent_out)`` (nondiff args first)."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps):
        """One ``fn(tangent_i, primal_out, *primals)`` per argument (None: no dependence)."""
        if self.nondiff_argnums:
            raise TypeError("defjvps is not supported with nondiff_argnums; use defjvp.")

        def jvp(primals, tangents):
            ans = self(*primals)
            acc = None
            for fn, t in zip(jvps, tangents):
                if fn is None or isinstance(t, SymbolicZero):
                    continue
                c = fn(t, ans, *primals)
                acc = c if acc is None else tree_map(ad.add_tangents, acc, c)
            if acc is None:
                acc = tree_map(lambda o: SymbolicZero(core.get_aval(o)), ans)
            return ans, acc
        self.defjvp(jvp)   # as JAX: zero tangents reach the rules instantiated

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "fun")
        if self.jvp is None:
            raise _MissingRule(f"No JVP defined for custom_jvp function {name} using defjvp.")
        args = _resolve_args(self.fun, args, kwargs)
        static, dyn = _split_nondiff(self.nondiff_argnums, args)
        if _eager(dyn):
            return self.fun(*args)
        rule, symbolic = self.jvp, self.symbolic_zeros
        nondiff = [v for _, v in static]
        flat = _Flat(self.fun, static, dyn, name)
        in_tree = flat.in_tree

        def jvp_flat(primals, tangents):
            # a program's literal reaches the rule as a NumPy value (eval_jaxpr of a
            # checkpointed program): the rule gets arrays, as in JAX
            primals = [core.Array(np.asarray(p)) if isinstance(p, (np.ndarray, np.generic))
                       else p for p in primals]
            ps = tree_unflatten(in_tree, primals)
            if symbolic:
                ts = [SymbolicZero(t.aval) if type(t) is Zero else t for t in tangents]
            else:
                ts = [_zeros(t.aval) if type(t) is Zero else t for t in tangents]
            out = rule(*nondiff, tuple(ps), tuple(tree_unflatten(in_tree, ts)))
            # from Python-scalar primals (jvp of Python floats) Python-scalar results
            # stay as they are, as in JAX
            keep = any(type(p) in _PY_SCALARS for p in primals)
            return _check_jvp_out(name, out, flat, keep)

        _name_for_printing(None, name, jvp_flat=(jvp_flat, rule))

        def lazy():
            return custom_jvp_call_p.bind(*flat.leaves, call_jaxpr=LazyPrimal(flat, name),
                                          jvp=jvp_flat, num_consts=0,
                                          symbolic_zeros=symbolic)

        def staged():
            closed, consts = trace_flat(flat, [core.get_aval(x) for x in flat.leaves],
                                        name=name)
            _name_for_printing(closed, name)
            return custom_jvp_call_p.bind(*consts, *flat.leaves, call_jaxpr=closed,
                                          jvp=jvp_flat, num_consts=len(consts),
                                          symbolic_zeros=symbolic)
        outs = _lazy_or_staged(lazy, staged)
        return tree_unflatten(flat.out_tree, outs)


def _name_for_printing(closed, name, **wrappers):
    """Printed jaxprs name the primal function and the user's rules (as JAX's do)."""
    if closed is not None:
        closed.jaxpr.debug_info = ir.DebugInfo(name)
    for wrapper, user in wrappers.values():
        wrapper.__name__ = getattr(user, "__name__", wrapper.__name__)


def _is_zero_leaf(x):
    return isinstance(x, SymbolicZero) or x is None


def _check_jvp_out(name, out, flat, keep_py_scalars=False):
    """Check a JVP rule's output against the primal function's (when it has run or been
    staged; otherwise the rule's primal output defines the types, as in JAX)."""
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"Custom JVP rule for function {name} must produce a pair (list or "
                        "tuple of length two) representing primal and tangent outputs, but "
                        f"got {out!r}.")
    p, t = out
    p_leaves, p_tree = tree_flatten(p)
    t_leaves, t_tree = tree_flatten(t)
    if t_tree != p_tree:   # a None tangent for an array output means a zero (None in
        # the primal output is an empty subtree, and so is its tangent: JAX's rule)
        t_leaves, t_tree = tree_flatten(t, is_leaf=_is_zero_leaf)
    p_vals = [_as_value_in(x, "custom JVP primal output") for x in p_leaves]
    flat.note_out(p_tree, p_vals)
    out_tree, out_avals = flat.out_tree, flat.out_avals
    if p_tree != out_tree:
        raise TypeError(f"Custom JVP rule for function {name} must produce primal outputs "
                        f"with the same container (pytree) structure as the primal function "
                        f"returns: expected {out_tree}, but got {p_tree}.")
    if t_tree != p_tree:
        raise TypeError(f"Custom JVP rule for function {name} must produce primal and tangent "
                        "outputs with equal container (pytree) structures, but got "
                        f"{p_tree} and {t_tree} respectively.")
    got = [core.get_aval(x) for x in p_vals]
    if any(not core.same_type(g, e) for g, e in zip(got, out_avals)):
        raise TypeError(f"Custom JVP rule for function {name} must produce primal outputs "
                        "with the same shapes and dtypes as the primal function: expected "
                        f"{_avals_str(out_avals)}, but got {_avals_str(got)}.")
    t_vals = []
    for tl, a in zip(t_leaves, out_avals):
        v = _to_flat_tangent(tl, a, "custom JVP tangent output")
        if isinstance(v, _TypeMismatch):
            raise TypeError(
                f"Custom JVP rule for function {name} must produce primal and tangent outputs "
                f"with corresponding shapes and dtypes. Expected {v.expected.str_short()} "
                f"(tangent type of {v.primal.str_short()}) but got {v.got.str_short()}.")
        t_vals.append(v)
    if keep_py_scalars:
        p_vals = [x if type(x) in _PY_SCALARS else v for x, v in zip(p_leaves, p_vals)]
        t_vals = [x if type(x) in _PY_SCALARS and type(p) in _PY_SCALARS else v
                  for x, p, v in zip(t_leaves, p_vals, t_vals)]
    return p_vals, t_vals


# ----------------------------------------------------------------- custom_vjp


class CustomVJPPrimal:
    """A primal argument of a ``custom_vjp``'s forward rule when the rule was defined with
    ``symbolic_zeros=True``: ``value`` and whether it is ``perturbed`` (has a tangent)."""

    __slots__ = ("value", "perturbed")

    def __init__(self, value, perturbed):
        self.value = value
        self.perturbed = perturbed

    def __repr__(self):
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed!r})"


def custom_vjp_primal_tree_values(tree):
    """``tree`` with each ``CustomVJPPrimal`` leaf replaced by its ``value``."""
    return tree_map(lambda x: x.value if type(x) is CustomVJPPrimal else x, tree,
                    is_leaf=lambda x: type(x) is CustomVJPPrimal)


_PY_SCALARS = (bool, int, float, complex)


class custom_vjp:
    """A function with a user-defined VJP: ``defvjp(fwd, bwd)``.

    ``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals, ct_out)``
    returns a tuple with one cotangent per (differentiable) argument.
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = None
        self.bwd = None
        self.symbolic_zeros = False

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
        self.fwd = fwd
        self.bwd = bwd
        self.symbolic_zeros = symbolic_zeros   # returns None, as JAX's defvjp

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "fun")
        if self.fwd is None or self.bwd is None:
            raise _MissingRule(f"No VJP defined for custom_vjp function {name} using defvjp.")
        args = _resolve_args(self.fun, args, kwargs)
        if any(isinstance(a, _Ref) for a in args):
            return _call_with_refs(self, name, args)
        static, dyn = _split_nondiff(self.nondiff_argnums, args)
        if _eager(dyn):
            return self.fun(*args)
        flat = _Flat(self.fun, static, dyn, name)
        in_tree = flat.in_tree
        in_avals = [core.get_aval(x) for x in flat.leaves]
        fwd, bwd, symbolic = self.fwd, self.bwd, self.symbolic_zeros
        nondiff = [v for _, v in static]
        res_tree_cell = {}

        def fwd_flat(primals, perturbed=None):
            if symbolic:      # as JAX: each leaf a CustomVJPPrimal(value, perturbed)
                flags = perturbed if perturbed is not None else [True] * len(primals)
                primals = [CustomVJPPrimal(v, bool(f)) for v, f in zip(primals, flags)]
            res = fwd(*_merge(static, tree_unflatten(in_tree, primals)))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise TypeError(
                    f"Custom VJP fwd rule for function {name} must produce a pair (list or "
                    "tuple of length two) where the first element represents the primal "
                    "output and the second the residuals, but got "
                    f"{type(res).__name__} {res!r:.200}.")
            out, r = res
            o_leaves, o_tree = tree_flatten(out)
            o_vals = [_as_value_in(x, "custom VJP fwd output") for x in o_leaves]
            flat.note_out(o_tree, o_vals)   # lazily, fwd's output defines the types
            out_tree, out_avals = flat.out_tree, flat.out_avals
            if o_tree != out_tree:
                raise TypeError(
                    f"Custom VJP fwd rule for function {name} must produce a pair whose first "
                    f"element has the structure of the primal output {out_tree}, but got "
                    f"{o_tree}.")
            got = [core.get_aval(x) for x in o_vals]
            if any(not core.same_type(g, e) for g, e in zip(got, out_avals)):
                raise TypeError(
                    f"Custom VJP fwd rule for function {name} must produce primal outputs with "
                    f"the same shapes and dtypes as the primal function: expected "
                    f"{_avals_str(out_avals)}, but got {_avals_str(got)}.")
            r_leaves, r_tree = tree_flatten(r)
            # Python scalars among the residuals reach bwd as they are, as in JAX (a
            # bool flag stays a bool); the rest travel as values
            scalars = {i: x for i, x in enumerate(r_leaves) if type(x) in _PY_SCALARS}
            res_tree_cell["tree"], res_tree_cell["scalars"] = r_tree, scalars
            r_vals = [_as_value_in(x, "custom VJP residual")
                      for i, x in enumerate(r_leaves) if i not in scalars]
            return o_vals, r_vals

        def bwd_flat(res, cts):
            scalars, res = res_tree_cell["scalars"], iter(res)
            n = res_tree_cell["tree"].num_leaves
            res = [scalars[i] if i in scalars else next(res) for i in range(n)]
            r = tree_unflatten(res_tree_cell["tree"], res)
            if symbolic:
                cs = [SymbolicZero(c.aval) if type(c) is Zero else c for c in cts]
            else:
                cs = [_zeros(c.aval) if type(c) is Zero else c for c in cts]
            out = bwd(*nondiff, r, tree_unflatten(flat.out_tree, cs))
            return _check_bwd_out(name, out, dyn, in_tree, in_avals)

        _name_for_printing(None, name, fwd_flat=(fwd_flat, fwd), bwd_flat=(bwd_flat, bwd))

        def lazy():
            return custom_vjp_call_p.bind(*flat.leaves, call_jaxpr=LazyPrimal(flat, name),
                                          fwd=fwd_flat, bwd=bwd_flat, num_consts=0,
                                          symbolic_zeros=symbolic)

        def staged():
            closed, consts = trace_flat(flat, in_avals, name=name)
            _name_for_printing(closed, name)
            return custom_vjp_call_p.bind(*consts, *flat.leaves, call_jaxpr=closed,
                                          fwd=fwd_flat, bwd=bwd_flat, num_consts=len(consts),
                                          symbolic_zeros=symbolic)
        outs = _lazy_or_staged(lazy, staged)
        return tree_unflatten(flat.out_tree, outs)


def _arg_names(fun, n):
    try:
        ps = [p.name for p in inspect.signature(fun).parameters.values()]
    except (TypeError, ValueError):
        ps = []
    return [ps[i] if i < len(ps) else f"args[{i}]" for i in range(n)]


def _no_refs_in(tree, what):
    for o in tree_flatten(tree)[0]:
        if isinstance(o, _Ref):
            raise ValueError(f"{what} returned a mutable array reference of type "
                             f"{_refs.ref_error(o)}, but mutable array references cannot be "
                             "returned.")


def _call_with_refs(cv, name, args):
    """A custom_vjp function called with array references among its (top-level)
    arguments: they are plumbing, not differentiated.  The function, its fwd and its bwd
    see the references (closed over by a custom_vjp of the other arguments; their
    effects are discharged like any closed-over reference's), fwd may return its
    reference arguments among its residuals (JAX's allowance: the same references reach
    bwd), and bwd's cotangents for them are dropped."""
    ref_pos = [i for i, a in enumerate(args) if isinstance(a, _Ref)]
    names = _arg_names(cv.fun, len(args))
    seen = {}
    for i in ref_pos:
        if id(args[i]) in seen:
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                f"function, but when tracing {name} for custom_vjp the mutable array "
                f"reference of type {_refs.ref_error(args[i])} appeared at both "
                f"{names[seen[id(args[i])]]} and {names[i]}.")
        seen[id(args[i])] = i
    if any(i in cv.nondiff_argnums for i in ref_pos):
        ref_pos_nd = [i for i in ref_pos if i in cv.nondiff_argnums]
    else:
        ref_pos_nd = []
    refs = {i: args[i] for i in ref_pos}
    keep = [i for i in range(len(args)) if i not in refs]
    n = len(args)

    def full(rest):
        it = iter(rest)
        return [refs[i] if i in refs else next(it) for i in range(n)]

    def fun2(*rest):
        out = cv.fun(*full(rest))
        _no_refs_in(out, f"custom_vjp primal function {name}")
        return out

    cell = {}

    def fwd2(*rest):
        res = cv.fwd(*full(rest))
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            return res        # (custom_vjp's own error about fwd's output)
        out, r = res
        _no_refs_in(out, f"custom_vjp fwd function {name}")
        leaves, tree = tree_flatten(r)
        ref_slots = {}
        for j, x in enumerate(leaves):
            if isinstance(x, _Ref):
                if not any(x is a for a in refs.values()):
                    raise ValueError(
                        f"custom_vjp fwd function {name} returned a mutable array reference "
                        f"of type {_refs.ref_error(x)} among its residuals that is not one of "
                        "its arguments; a fwd rule may only return its own reference "
                        "arguments (to share them with bwd)")
                ref_slots[j] = x
        cell["tree"], cell["slots"] = tree, ref_slots
        return out, [x for j, x in enumerate(leaves) if j not in ref_slots]

    nd_new = tuple(keep.index(i) for i in cv.nondiff_argnums if i in keep)
    n_nd = len(nd_new)

    def bwd2(*a):
        nondiff, r, g = a[:n_nd], a[n_nd], a[n_nd + 1]
        it = iter(r)
        tree, slots = cell["tree"], cell["slots"]
        leaves = [slots[j] if j in slots else next(it) for j in range(tree.num_leaves)]
        cts = cv.bwd(*nondiff, tree_unflatten(tree, leaves), g)
        if not isinstance(cts, (tuple, list)):
            return cts            # (custom_vjp's own error about bwd's output)
        diff = [i for i in range(n) if i not in cv.nondiff_argnums]
        if len(cts) != len(diff):
            return cts
        return tuple(c for i, c in zip(diff, cts) if i not in refs)

    functools.update_wrapper(fun2, cv.fun)
    inner = custom_vjp(fun2, nondiff_argnums=nd_new)
    inner.defvjp(fwd2, bwd2, symbolic_zeros=cv.symbolic_zeros)
    return inner(*[args[i] for i in keep])


def _check_bwd_out(name, out, dyn, in_tree, in_avals):
    n = len(dyn)
    if not isinstance(out, (tuple, list)) or len(out) != n:
        got = (f"a {type(out).__name__} of length {len(out)}"
               if isinstance(out, (tuple, list)) else f"{type(out).__name__} {out!r:.100}")
        raise TypeError(
            f"Custom VJP bwd rule for function {name} must produce a tuple with one cotangent "
            f"per differentiable argument of the primal function, i.e. a tuple of length "
            f"{n} (structure {in_tree}), but got {got}.")
    flat = []
    it = iter(in_avals)
    for i, (arg, ct) in enumerate(zip(dyn, out)):
        arg_tree = tree_structure(arg)
        avals = [next(it) for _ in range(arg_tree.num_leaves)]
        if ct is None:
            flat.extend(Zero(ad.tangent_aval(a)) for a in avals)
            continue
        c_leaves, c_tree = tree_flatten(ct)
        if c_tree != arg_tree:   # None for an array argument: a zero cotangent
            c_leaves, c_tree = tree_flatten(ct, is_leaf=_is_zero_leaf)
        if c_tree != arg_tree:
            c_leaves = _broadcast_prefix_cotangent(ct, arg)
            if c_leaves is None:
                raise TypeError(
                    f"Custom VJP bwd rule for function {name} must produce an output with the "
                    f"same container (pytree) structure as the args tuple of the primal "
                    f"function, but for argument {i} it produced {c_tree} where the argument "
                    f"has {arg_tree}.")
        for cl, a in zip(c_leaves, avals):
            v = _to_flat_tangent(cl, a, "custom VJP bwd output")
            if isinstance(v, _TypeMismatch):
                raise ValueError(
                    f"Custom VJP bwd rule for function {name} must produce an output with the "
                    f"same shape/dtypes as the args tuple of the primal function, but for "
                    f"argument {i} it produced an output of shape/dtype {v.got.str_short()} "
                    f"corresponding to an input of shape/dtype {v.primal.str_short()} "
                    f"(expected {v.expected.str_short()}).")
            flat.append(v)
    return flat


def _broadcast_prefix_cotangent(ct, arg):
    """The flat cotangents of ``arg``'s leaves when the bwd output ``ct`` is a pytree prefix
    of ``arg`` (as JAX allows): a leaf of ``ct`` stands for every leaf of the subtree of
    ``arg`` it meets, None for zeros there (e.g. flax.nnx returns a plain array where the
    argument held a Variable node around one array). None when ``ct`` is no prefix."""
    flat = []

    def append(c, sub):
        flat.extend([c] * len(tree_flatten(sub)[0]))

    try:
        tree_map(append, ct, arg, is_leaf=lambda x: x is None)
    except (ValueError, TypeError):
        return None
    return flat


# ----------------------------------------------------------------- conveniences


def custom_gradient(fun):
    """``fun(*args) -> (out, vjp_fn)`` becomes a function whose VJP is ``vjp_fn``."""
    @custom_vjp
    def wrapped(*args):
        out, _ = fun(*args)
        return out

    def fwd(*args):
        out, vjp_fn = fun(*args)
        # the pullback is a Python closure: keep it out of the residual pytree
        return out, _Closure(vjp_fn)

    def bwd(res, ct):
        cts = res.fn(ct)
        return tuple(cts) if isinstance(cts, (tuple, list)) else (cts,)

    wrapped.defvjp(fwd, bwd)
    return _wraps(fun)(lambda *args: wrapped(*args))


class _Closure:
    """An opaque (leaf-free) residual: a pytree node with no children."""

    def __init__(self, fn):
        self.fn = fn


def _closure_flatten(c):
    return (), c.fn


def _closure_unflatten(fn, _):
    return _Closure(fn)


from xform.tree_util import register_pytree_node  # noqa: E402

register_pytree_node(_Closure, _closure_flatten, _closure_unflatten)


def closure_convert(fun, *example_args):
    """``fun`` with its closed-over arrays made explicit: returns (converted, consts) where
    ``converted(*args, *consts) == fun(*args)``."""
    leaves, in_tree = tree_flatten(example_args)
    leaves = [_as_value_in(x, "closure_convert") for x in leaves]
    store = {}

    def flat(*xs):
        out = fun(*tree_unflatten(in_tree, xs))
        ls, store["tree"] = tree_flatten(out)
        return ls
    closed, consts = trace_flat(flat, [core.get_aval(x) for x in leaves])
    n_consts = len(consts)

    def converted(*args):
        a_leaves, tree = tree_flatten(args[:len(args) - n_consts])
        if tree != in_tree:
            raise TypeError(f"closure_convert: expected arguments with structure {in_tree}, "
                            f"got {tree}")
        outs = eval_jaxpr(closed.jaxpr, [], *args[len(args) - n_consts:], *a_leaves)
        return tree_unflatten(store["tree"], outs)
    return converted, list(consts)

"""Gradient checkpointing: ``checkpoint`` / ``remat``, policies, saved-residual reports.

``checkpoint(f)`` stages ``f`` and binds the ``remat`` primitive
(``primitives/remat.py``) on it.  Nothing changes for evaluation; when the
function is linearized (``grad``, ``vjp``, ``linearize``), the forward pass
keeps only the values the ``policy`` says are saveable and the backward pass
recomputes the rest from them: less memory, more compute.

A policy is ``policy(prim, *in_avals, **params) -> bool`` ("may this
equation's output be saved?"), called on each primal equation of the
differentiated function.
"""
from __future__ import annotations

import dataclasses
import functools
import types

from xform._wrapping import wraps as _wraps
from xform._src.interpreters import ad, core
from xform._src.interpreters.ir import Var
from xform._src.interpreters.staging import trace_to_jaxpr
from xform._src.interpreters import refs as _refs
from xform._src.primitives.custom import trace_flat
from xform._src.primitives.remat import name_p, remat_p
from xform._ad_api import _as_value_in
from xform.tree_util import tree_flatten, tree_unflatten
from xform.tree_util import keystr, tree_flatten_with_path
from xform._src.interpreters.jaxpr_transforms import policy_saves
import inspect

__all__ = ["checkpoint", "remat", "checkpoint_policies"]


# ----------------------------------------------------------------- policies


def everything_saveable(*_, **__):
    """Save everything (as if there were no checkpoint)."""
    return True


def nothing_saveable(*_, **__):
    """Save nothing but the checkpointed function's inputs; recompute the rest."""
    return False


def _is_dot(prim):
    return prim.name in ("dot_general", "conv_general_dilated")


# The policies JAX implements as frozen dataclasses are dataclasses here too, with JAX's
# names and reprs: printed programs show them alike (``policy=DotsSaveable(...)``; the
# names as a frozenset, in its iteration order, as JAX's), and equal policies are equal
# (so programs split under them are reused).

@dataclasses.dataclass(frozen=True)
class DotsSaveable:
    """Save the results of matrix multiplications (and convolutions); with
    ``only_if_no_batch_dims``, only of ``dot_general``s without batch dimensions."""
    only_if_no_batch_dims: bool

    def __call__(self, prim, *_, **params):
        if self.only_if_no_batch_dims:
            if prim.name != "dot_general":
                return False
            (_, _), (lhs_b, rhs_b) = params["dimension_numbers"]
            return not lhs_b and not rhs_b
        return _is_dot(prim)


@dataclasses.dataclass(frozen=True)
class SaveOnlyTheseNames:
    """Save only values named (``checkpoint_name``) with one of ``saveable_names``."""
    saveable_names: frozenset

    def __call__(self, prim, *_, **params):
        return prim is name_p and params["name"] in self.saveable_names


@dataclasses.dataclass(frozen=True)
class SaveAnyNamesButThese:
    """Save only named values, except those named with one of ``names``."""
    names: frozenset

    def __call__(self, prim, *_, **params):
        return prim is name_p and params["name"] not in self.names


dots_saveable = checkpoint_dots = DotsSaveable(False)
dots_with_no_batch_dims_saveable = DotsSaveable(True)


def save_only_these_names(*names):
    """Save only values named (``checkpoint_name``) with one of ``names``."""
    return SaveOnlyTheseNames(frozenset(names))


def save_any_names_but_these(*names):
    """Save only named values, except those named with one of ``names``."""
    return SaveAnyNamesButThese(frozenset(names))


def save_anything_except_these_names(*names):
    """Save everything except values named with one of ``names``."""
    names = frozenset(names)
    return lambda prim, *_, **params: not (prim is name_p and params["name"] in names)


def save_from_both_policies(policy_1, policy_2):
    """Saveable iff either policy says so."""
    def policy(prim, *args, **params):
        return policy_saves(policy_1(prim, *args, **params)) or \
            policy_saves(policy_2(prim, *args, **params))
    return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=checkpoint_dots,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_only_these_names=save_only_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_anything_except_these_names=save_anything_except_these_names,
    save_from_both_policies=save_from_both_policies,
)


# ----------------------------------------------------------------- checkpoint


def checkpoint(fun=None, *, prevent_cse=True, policy=None, static_argnums=()):
    """Make ``fun`` recompute (rather than save) its intermediates for the backward pass.

    ``policy`` chooses what may be saved (default: nothing but the inputs);
    ``static_argnums`` marks arguments that are Python values, not arrays.
    """
    if fun is None:
        return functools.partial(checkpoint, prevent_cse=prevent_cse, policy=policy,
                                 static_argnums=static_argnums)
    if not callable(fun):
        raise TypeError(f"checkpoint requires a callable, got {fun!r}")
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint policy must be callable (see xform.checkpoint_policies), "
                        f"got {policy!r}")
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    static_argnums = tuple(static_argnums)

    @_wraps(fun)
    def fun_remat(*args, **kwargs):
        n = len(args)
        for i in static_argnums:
            if not -n <= i < n:
                raise ValueError(f"checkpoint: static_argnums={static_argnums} out of range "
                                 f"for a call with {n} positional arguments")
        static = {i % n for i in static_argnums}
        dyn = [a for i, a in enumerate(args) if i not in static]
        leaves, in_tree = tree_flatten((tuple(dyn), kwargs))
        # array references among the arguments reach the function as they are; their
        # effects (and those of references it closes over) are threaded through the
        # checkpointed program as extra inputs and outputs, written back once
        arg_refs = {i: x for i, x in enumerate(leaves) if isinstance(x, _refs.Ref)}
        leaves = [x if i in arg_refs else _as_value_in(x, "checkpoint argument")
                  for i, x in enumerate(leaves)]
        dyn_pos = [i for i in range(len(leaves)) if i not in arg_refs]
        known = []
        while True:
            store = {}
            ref_vals = [_refs.read(r, "checkpoint") for r in known]
            written = set()

            def flat(*xs, _known=tuple(known)):
                vals = list(xs[len(dyn_pos):])
                full_leaves = list(leaves)
                for i, x in zip(dyn_pos, xs[:len(dyn_pos)]):
                    full_leaves[i] = x
                d, kw = tree_unflatten(in_tree, full_leaves)
                it = iter(d)
                full = [args[i] if i in static else next(it) for i in range(n)]
                with _refs.Scope("checkpoint", preset=zip(_known, vals)) as sc:
                    out = fun(*full, **kw)
                new = [r for r in sc.touched() if not any(r is k for k in _known)]
                if new:
                    raise _NewRefs(new)
                ls, store["tree"] = tree_flatten(out)
                for o in ls:
                    if isinstance(o, _refs.Ref):
                        raise ValueError(
                            "the function checkpointed by checkpoint/remat returned a mutable "
                            f"array reference of type {_refs.ref_error(o)}, but mutable array "
                            "references cannot be returned")
                finals = []
                for r, v0 in zip(_known, vals):
                    v = sc.final(r)
                    if v is not v0:
                        written.add(id(r))
                    finals.append(v)
                return [_as_value_in(o, "checkpointed function output") for o in ls] + finals

            ins = [leaves[i] for i in dyn_pos] + ref_vals
            try:
                closed, consts = trace_flat(flat, [core.get_aval(x) for x in ins],
                                            name="checkpoint")
            except _NewRefs as e:
                for r in e.refs:
                    if not any(r is k for k in known):
                        known.append(r)
                continue
            break
        outs = remat_p.bind(*consts, *ins, jaxpr=closed, prevent_cse=bool(prevent_cse),
                            differentiated=False, policy=policy)
        m = len(outs) - len(known)
        for r, v in zip(known, outs[m:]):
            if id(r) in written:
                _refs.write(r, v, "checkpoint")
        return tree_unflatten(store["tree"], outs[:m])
    return fun_remat


class _NewRefs(Exception):
    def __init__(self, refs):
        super().__init__("internal: a checkpointed function touched outer array references")
        self.refs = refs


remat = checkpoint


def checkpoint_name(x, name):
    """Identity that tags ``x`` (every leaf) with ``name`` for checkpoint policies."""
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [name_p.bind(_as_value_in(v, "checkpoint_name"), name=name)
                                 for v in leaves])


# ----------------------------------------------------------------- residual reports


def saved_residuals(f, *args, **kwargs):
    """``[(aval, description), ...]``: what ``vjp(f, *args)`` saves for the backward pass."""
    leaves, in_tree = tree_flatten((args, kwargs))
    leaves = [_as_value_in(x, "saved_residuals argument") for x in leaves]
    found = []

    def probe(*xs):
        a, kw = tree_unflatten(in_tree, xs)

        def flat(*ys):
            out = f(*tree_unflatten(in_tree, ys)[0], **tree_unflatten(in_tree, ys)[1])
            return [_as_value_in(o, "output") for o in tree_flatten(out)[0]]
        _, lin = ad.linearize_flat(flat, list(xs))
        found.extend(lin.residuals)
        return list(lin.residuals)

    jaxpr, consts = trace_to_jaxpr(probe, [core.get_aval(x) for x in leaves],
                                   name="saved_residuals")
    arg_names = _arg_names(f, args, kwargs, in_tree)
    # JAX's order: literals, constants, arguments (in argument order), then the values
    # computed by the program in program order -- each saved value once.
    out = [(a.aval, "from a literal") for a in jaxpr.outvars if not isinstance(a, Var)]
    saved = {a for a in jaxpr.outvars if isinstance(a, Var)}
    # a residual rounded to its own format (reduce_precision) is reported as its producer
    rounded = {e.outvars[0]: e.invars[0] for e in jaxpr.eqns
               if e.primitive.name == "reduce_precision"}
    saved = {rounded.get(v, v) for v in saved}
    out += [(v.aval, "from a constant") for v in jaxpr.constvars if v in saved]
    out += [(v.aval, f"from the argument {arg_names[i]}")
            for i, v in enumerate(jaxpr.invars) if v in saved]
    for e in jaxpr.eqns:
        for v in e.outvars:
            if v in saved:
                src = _src(e)
                if e.primitive is name_p:
                    out.append((v.aval, f"named '{e.params['name']}' from {src}"))
                else:
                    out.append((v.aval, f"output of {e.primitive.pp_name} "
                                        f"from {src}"))
    return out


def _src(eqn):
    si = eqn.source_info
    if not si:
        return "<unknown>"
    if hasattr(si, "summary"):      # JAX's file:line:column (qualified name)
        return si.summary()
    fname, line, func = si
    return f"{fname}:{line} ({func})"


def _arg_names(f, args, kwargs, in_tree):
    try:
        sig = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        sig = []
    params, var = [], None      # positional names; (name, index) of a ``*args`` parameter
    for p in sig:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            var = (p.name, len(params))
            break
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            params.append(p.name)
    names = []
    for path, _ in tree_flatten_with_path((args, kwargs))[0]:
        top, rest = path[0], path[1:]
        if getattr(top, "idx", None) == 0 and rest:
            i = rest[0].idx
            if i < len(params):
                base = params[i]
            elif var is not None:           # JAX: the *args tuple's path, ``a[0]``
                base = f"{var[0]}[{i - var[1]}]"
            else:
                base = f"args[{i}]"
            names.append(base + keystr(rest[1:]))
        else:
            names.append(keystr(path[1:]))
    return names


def print_saved_residuals(f, *args, **kwargs):
    """Print one line per saved residual: its type and where it comes from."""
    for aval, src in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {src}")

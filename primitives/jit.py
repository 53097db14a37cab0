"""``jit`` as a higher-order primitive: an equation that calls a staged program.

Params (JAX's pjit names): ``jaxpr`` (a ClosedJaxpr, normally const-free: its
constants are hoisted into leading arguments), ``name``, ``donated_invars``
(one bool per argument), ``inline`` (lower into the caller instead of a
``func.call``) and ``keep_unused``.

Every rule is program-to-program, so ``jit`` composes with every
transformation in any order:

* eager (``impl``): compile the program with XLA (``lowering.compile_jaxpr``,
  cached per program identity, donation and device) and run it.  A program
  holding a primitive that has no lowering rule (e.g. a host callback) is
  interpreted equation by equation instead;
* JVP: trace ``eval_jaxpr`` under ``ad.jvp_flat`` into a new program over
  (primals, nonzero tangents) and call that;
* partial evaluation (linearize/vjp/grad): split into a *known* jit, run now
  (known outputs + residuals), and an *unknown* jit recorded in the linear
  program (residuals + unknown inputs -> unknown outputs);
* transpose: stage ``ad.backward_pass_partial`` of the program into a new jit;
* batching: ``batching.batch_jaxpr`` and call the batched program.

Transformed programs are memoised per (program identity, what is
transformed), so ``grad(jit(f))`` called in a loop re-uses one compiled
executable.
"""
from __future__ import annotations

import logging

import numpy as np

from xform._src.interpreters import ad, batching, core, ir, passes, staging
from xform._src.interpreters import jaxpr_transforms as jt
from xform._src.interpreters.ad import Zero
from xform._src.interpreters.core import Primitive
from xform._src.interpreters.ir import ClosedJaxpr, Literal, Var, eval_jaxpr
from xform._src.interpreters.staging import convert_constvars_to_invars, trace_to_jaxpr
from xform._src.interpreters.config import config

__all__: list = []

_log = logging.getLogger("xform")

jit_p = Primitive("jit", multiple_results=True)


def _pp_jit(eqn, names):
    """JAX's printing of jit: ``name=`` first, default-valued params left out, the body's
    variables named after the equation's operands and results."""
    p = dict(eqn.params)
    p.pop("inline", None)
    if not any(p.get("donated_invars", ()) or ()):
        p.pop("donated_invars", None)
    if not p.get("keep_unused", False):
        p.pop("keep_unused", None)
    for k in ("in_shardings", "out_shardings", "in_layouts", "out_layouts",
              "compiler_options_kvs", "ctx_mesh", "device", "backend"):
        if k in p and (p[k] is None or (isinstance(p[k], (tuple, list)) and
                                        all(x is None for x in p[k]))):
            p.pop(k)
    ir.pp_share_names(names, p.get("jaxpr"), eqn.invars, eqn.outvars)
    name = p.pop("name", None)
    return ([("name", name)] if name is not None else []) + sorted(p.items())


ir.pp_rules[jit_p] = _pp_jit
jit_p.impl_takes_arrays = True


def _hoist(jaxpr, consts):
    """(Jaxpr with constvars, consts) -> (const-free ClosedJaxpr, consts as leading args)."""
    return ClosedJaxpr(convert_constvars_to_invars(jaxpr), []), list(consts)


def trace_hoisted(fun, in_avals, name="jit"):
    """Stage ``fun`` into a const-free ClosedJaxpr; returns (closed, const_args)."""
    jaxpr, consts = trace_to_jaxpr(fun, in_avals, name=name)
    return _hoist(jaxpr, consts)


# ----------------------------------------------------------------- eager: compile and run

_programs = jt.Memo(maxsize=512)
_no_lowering_warned: set = set()


class EagerProgram:
    """Fallback executable: interpret the program equation by equation (used when a
    primitive in it has no XLA lowering, e.g. a host callback)."""

    def __init__(self, closed, reason=""):
        self.closed = closed
        self.reason = reason

    def __call__(self, *args):
        with core.set_current_trace(core.EVAL_TRACE):
            return eval_jaxpr(self.closed.jaxpr, self.closed.consts, *args)

    def as_text(self):
        return f"// not lowered ({self.reason}); interpreted eagerly\n{self.closed}"

    compiled_text = as_text

    def cost_analysis(self):
        return {}

    def memory_analysis(self):
        return None


# The XLA compiler: ``compiler(closed, donated_invars=, device=, name=)``.  Compiling
# is the lowering layer's job, which sits above this one, so ``xform`` installs it
# (``xform/_jit.py``); without it programs are interpreted.
compiler = None


spmd_compiler = None   # installed by xform.sharding._shard_map: programs over a mesh


def compile_program(closed, donated_invars=None, device=None, name="main"):
    """The installed compiler, with the eager fallback for unlowerable programs."""
    if compiler is None:
        return EagerProgram(closed, "no XLA compiler installed (import xform)")
    if spmd_compiler is not None and device is None:   # shard_map / sharding constraints
        prog = spmd_compiler(closed, donated_invars, name)
        if prog is not None:
            return prog
    try:
        return compiler(closed, donated_invars=donated_invars, device=device, name=name)
    except NotImplementedError as e:
        msg = str(e)
        if msg not in _no_lowering_warned:
            _no_lowering_warned.add(msg)
            _log.debug("jit(%s): interpreting eagerly: %s", name, msg)
        return EagerProgram(closed, msg)


def get_program(closed, donated_invars, device=None, name="main"):
    key = (id(closed), donated_invars, device)
    prog = _programs.get(key)
    if prog is None:
        prog = _programs.put(key, closed, compile_program(closed, donated_invars, device, name))
    return prog


def _jit_impl(*args, jaxpr, name, donated_invars, inline, keep_unused):
    prog = get_program(jaxpr, tuple(donated_invars), None, name)
    outs = prog(*args)
    if core._debug_checks_on:
        check_outputs_or_rerun(jaxpr, args, outs, name)
    return outs


def _jit_staging(trace, args, params):
    """``jit(f, inline=True)`` is inlined where it is staged, as JAX does."""
    if not params["inline"]:
        return NotImplemented
    closed = params["jaxpr"]
    return staging.inline_jaxpr(trace, closed.jaxpr, closed.consts, args)


jit_p.def_impl(_jit_impl)
staging.staging_rules[jit_p] = _jit_staging
jit_p.def_abstract_eval(lambda *avals, jaxpr, **_: list(jaxpr.out_avals))


# ----------------------------------------------------------------- debug_nans / debug_infs


def _bad(v):
    a = v._value if isinstance(v, core.Array) else np.asarray(v)
    if a.dtype.kind not in "fc" and "float" not in a.dtype.name:
        return None
    a = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    if config.jax_debug_nans and np.isnan(a).any():
        return "invalid value (nan)"
    if config.jax_debug_infs and np.isinf(a).any():
        return "divide by zero or overflow (inf)"
    return None


def _where(eqn):
    si = eqn.source_info
    return f" at {si[0]}:{si[1]} (in {si[2]})" if si else ""


def _nan_error(kind, prim_name, eqn, name):
    """JAX's FloatingPointError text; where the primitive was called is a note (shown in
    the traceback, not part of the message, which stays JAX's)."""
    err = FloatingPointError(f"{kind} encountered in {prim_name}")
    err.add_note(f"raised by the primitive {prim_name}{_where(eqn)}, re-run op by op "
                 f"inside jit({name})")
    return err


def check_outputs_or_rerun(closed, args, outs, name):
    """jax_debug_nans/infs: if an output is bad, re-run the program one equation at a
    time (announcing it with JAX's message) and raise FloatingPointError naming the first
    primitive producing it."""
    if not any(_bad(o._value if isinstance(o, core.Array) else o) for o in outs):
        return
    print("Invalid nan value encountered in the output of a jax.jit function. "
          "Calling the de-optimized version.")
    env = {}
    read = lambda a: a.value if type(a) is Literal else env[a]   # noqa: E731
    jaxpr = closed.jaxpr
    env.update(zip(jaxpr.constvars, closed.consts))
    # Python scalars and NumPy arguments become Arrays of the types the program was traced at.
    env.update((v, a if isinstance(a, core.Array) else
                core.Array(np.asarray(a, dtype=v.aval.dtype), weak_type=v.aval.weak_type))
               for v, a in zip(jaxpr.invars, args))
    with core.set_current_trace(core.EVAL_TRACE):
        for eqn in jaxpr.eqns:
            try:
                res = eqn.primitive.bind(*[read(a) for a in eqn.invars], **eqn.params)
            except FloatingPointError as e:
                if getattr(e, "__notes__", None):   # located by an inner jit already
                    raise
                err = FloatingPointError(str(e))
                err.add_note(f"raised{_where(eqn)}, re-run op by op inside jit({name})")
                raise err from None
            res = res if eqn.primitive.multiple_results else [res]
            for v, r in zip(eqn.outvars, res):
                env[v] = r
                kind = _bad(r._value if isinstance(r, core.Array) else r)
                if kind:
                    raise _nan_error(kind, eqn.primitive.name, eqn, name) from None
    raise FloatingPointError(
        f"an output of jit({name}) is nan/inf, but re-running the program op by op did not "
        "reproduce it (it may be an input passed through); disable jax_debug_nans to continue.")


# ----------------------------------------------------------------- JVP

_jvp_memo = jt.Memo(maxsize=256)


def _jvp_program(jaxpr, nonzeros):
    key = (id(jaxpr), nonzeros)
    hit = _jvp_memo.get(key)
    if hit is not None:
        return hit
    n = len(jaxpr.in_avals)
    out_nz = []
    tangent_avals = [ad.tangent_aval(a) for a, nz in zip(jaxpr.in_avals, nonzeros) if nz]

    def jvp_fun(*xs):
        it = iter(xs[n:])
        ts = [next(it) if nz else Zero(ad.tangent_aval(a))
              for a, nz in zip(jaxpr.in_avals, nonzeros)]
        po, to = ad.jvp_flat(lambda *a: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *a),
                             list(xs[:n]), ts)
        to = [Zero(ad.tangent_aval(core.get_aval(p))) if _is_float0(t) else t
              for p, t in zip(po, to)]
        out_nz[:] = [type(t) is not Zero for t in to]
        return list(po) + [t for t in to if type(t) is not Zero]

    closed, consts = trace_hoisted(jvp_fun, list(jaxpr.in_avals) + tangent_avals, "jvp")
    return _jvp_memo.put(key, jaxpr, (closed, consts, tuple(out_nz)))


def _is_float0(t):
    return type(t) is not Zero and core.get_aval(t).dtype == ad.float0


def _jit_jvp(primals, tangents, *, jaxpr, name, donated_invars, inline, keep_unused):
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    closed, consts, out_nz = _jvp_program(jaxpr, nonzeros)
    live = [t for t in tangents if type(t) is not Zero]
    outs = jit_p.bind(*consts, *primals, *live, jaxpr=closed, name=name,
                      donated_invars=(False,) * (len(consts) + len(primals) + len(live)),
                      inline=inline, keep_unused=keep_unused)
    m = len(jaxpr.out_avals)
    it = iter(outs[m:])
    touts = [next(it) if nz else Zero(ad.tangent_aval(a)) for nz, a in zip(out_nz, jaxpr.out_avals)]
    return outs[:m], touts


ad.jvp_rules[jit_p] = _jit_jvp


# ----------------------------------------------------------------- partial evaluation


def _jit_partial_eval(trace, args, params):
    """Split the program (``partial_eval_jaxpr``): the known jit computes the known
    outputs and the residuals, the unknown jit (residuals + unknown inputs -> unknown
    outputs) is recorded in the linear program.  Residuals that are just known inputs
    are passed as they are rather than returned by the known jit."""
    closed = params["jaxpr"]
    name = params["name"]
    unknown = [trace.is_unknown(a) for a in args]
    known_args = [a for a, u in zip(args, unknown) if not u]
    known, uclosed, out_unknown, res_avals, res_fwd = jt.partial_eval_jaxpr(
        closed, unknown, False)
    nk = len(known.out_avals) - len(res_avals)
    kclosed = passes.dce_closed(known, [True] * nk + [f is None for f in res_fwd])
    kclosed, kconst_args = _hoist(kclosed.jaxpr, kclosed.consts)
    n_args = len(kconst_args) + len(known_args)
    # The known jit runs now (or is staged by an enclosing jit).
    with core.set_current_trace(trace.parent):
        if kclosed.jaxpr.eqns:
            kvals = jit_p.bind(*kconst_args, *known_args, jaxpr=kclosed, name=name,
                               donated_invars=(False,) * n_args, inline=params["inline"],
                               keep_unused=params["keep_unused"])
        else:
            kvals = eval_jaxpr(kclosed.jaxpr, [], *kconst_args, *known_args)
    known_vals, saved = kvals[:nk], iter(kvals[nk:])
    res_vals = [known_args[f] if f is not None else next(saved) for f in res_fwd]
    jt.note_residuals([r for r, f in zip(res_vals, res_fwd) if f is None])

    # The unknown jit is recorded in the linear program.
    u_args = list(res_vals) + [a for a, u in zip(args, unknown) if u]
    atoms = [trace.to_atom(a) for a in u_args]
    tracers = trace.add_eqn(jit_p, atoms, list(uclosed.out_avals),
                            dict(params, jaxpr=uclosed, donated_invars=(False,) * len(atoms)))
    kv, uv = iter(known_vals), iter(tracers)
    return [next(uv) if u else next(kv) for u in out_unknown]


ad.partial_eval_rules[jit_p] = _jit_partial_eval


# ----------------------------------------------------------------- transpose

_transpose_memo = jt.Memo(maxsize=256)


def _jit_transpose(cts, *args, jaxpr, name, donated_invars, inline, keep_unused):
    lin_mask = tuple(ad.is_undefined_primal(a) for a in args)
    ct_nz = tuple(type(c) is not Zero for c in cts)
    known = [a for a, lin in zip(args, lin_mask) if not lin]
    key = (id(jaxpr), lin_mask, ct_nz, tuple(core.get_aval(k) for k in known))
    hit = _transpose_memo.get(key)
    if hit is None:
        zero_out = []

        def bwd(*xs):
            kit = iter(xs[:len(known)])
            cit = iter(xs[len(known):])
            bargs = [ad.UndefinedPrimal(a) if lin else next(kit)
                     for a, lin in zip(jaxpr.in_avals, lin_mask)]
            bcts = [next(cit) if nz else Zero(ad.tangent_aval(a))
                    for nz, a in zip(ct_nz, jaxpr.out_avals)]
            res = ad.backward_pass_partial(jaxpr.jaxpr, jaxpr.consts, bargs, bcts)
            res = [r for r, lin in zip(res, lin_mask) if lin]
            zero_out[:] = [type(r) is Zero or r is None for r in res]
            return [r for r, z in zip(res, zero_out) if not z]

        in_avals = [core.get_aval(k) for k in known] + \
            [ad.tangent_aval(a) for a, nz in zip(jaxpr.out_avals, ct_nz) if nz]
        closed, consts = trace_hoisted(bwd, in_avals, "transpose")
        hit = _transpose_memo.put(key, jaxpr, (closed, consts, tuple(zero_out)))
    closed, consts, zero_out = hit
    live_cts = [c for c in cts if type(c) is not Zero]
    n = len(consts) + len(known) + len(live_cts)
    outs = iter(jit_p.bind(*consts, *known, *live_cts, jaxpr=closed,
                           name=name, donated_invars=(False,) * n,
                           inline=inline, keep_unused=keep_unused))
    lin_avals = [a for a, lin in zip(jaxpr.in_avals, lin_mask) if lin]
    lin_cts = iter([Zero(ad.tangent_aval(a)) if z else next(outs)
                    for a, z in zip(lin_avals, zero_out)])
    return [next(lin_cts) if lin else None for lin in lin_mask]


ad.transpose_rules[jit_p] = _jit_transpose


# ----------------------------------------------------------------- batching

_batch_memo = jt.Memo(maxsize=256)


def _jit_batch(axis_data, vals, dims, *, jaxpr, name, donated_invars, inline, keep_unused):
    key = (id(jaxpr), tuple(dims), axis_data.size, axis_data.name, axis_data.spmd_name)
    hit = _batch_memo.get(key)
    if hit is None:
        new, out_dims = batching.batch_jaxpr(jaxpr, axis_data, list(dims))
        closed, consts = _hoist(new.jaxpr, new.consts)
        # Programs that close over outer tracers (collectives over an outer axis) are
        # not memoised: their constants belong to one trace.
        if not any(isinstance(c, core.Tracer) for c in consts):
            _batch_memo.put(key, jaxpr, (closed, consts, out_dims))
    else:
        closed, consts, out_dims = hit
    outs = jit_p.bind(*consts, *vals, jaxpr=closed, name=name,
                      donated_invars=(False,) * len(consts) + tuple(donated_invars),
                      inline=inline, keep_unused=keep_unused)
    return outs, list(out_dims)


batching.batch_rules[jit_p] = _jit_batch


# ----------------------------------------------------------------- IR passes


def _jit_dce(eqn, used_outputs):
    """Prune the program's unused outputs and then its unused inputs (the call's)."""
    closed = eqn.params["jaxpr"]
    inner, used_inputs = passes.dce_jaxpr(closed.jaxpr, used_outputs, prune_invars=True)
    if not any(used_outputs) and not passes.has_effects(inner):
        return None, [False] * len(eqn.invars)
    new_closed = passes.prune_consts(inner, closed.consts)
    donated = tuple(d for d, u in zip(eqn.params["donated_invars"], used_inputs) if u)
    new_eqn = eqn.replace(
        invars=[a for a, u in zip(eqn.invars, used_inputs) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
        params=dict(eqn.params, jaxpr=new_closed, donated_invars=donated))
    return new_eqn, used_inputs


def _jit_forward(eqn):
    """Outputs of the call that are just (unchanged) inputs of it."""
    jaxpr = eqn.params["jaxpr"].jaxpr
    pos = {v: i for i, v in enumerate(jaxpr.invars)}
    out = []
    for v in jaxpr.outvars:
        i = pos.get(v) if isinstance(v, Var) else None
        out.append(eqn.invars[i] if i is not None else None)
    return out


passes.call_dce_rules[jit_p] = _jit_dce
passes.forwarding_rules[jit_p] = _jit_forward


# ----------------------------------------------------------------- closed_call / call
# JAX's call primitives.  xform's own transformations never bind them (``xform.jit``
# stages ``jit_p``), but libraries bind them or match equations against them, so they are
# real primitives: ``closed_call_p.bind(*args, call_jaxpr=closed)`` calls a closed program
# with no compilation boundary (inlined where it is staged, like ``jit(..., inline=True)``),
# and ``call_p.bind(fun, *args)`` traces ``fun`` and binds ``closed_call_p``.  Both also
# take their function the way JAX's call primitives do: JAX 0.10.2's
# ``bind(*args, subfuns=(fun,))`` and, before 0.9.2, ``bind(fun, *args)`` (libraries pick
# the form from ``jax.__version__``, which under the alias is xform's own; numpyro's
# ``eval_provenance`` tests bind both primitives so).


def _call_function(name, args, params):
    """The function a call primitive's ``bind`` was given and the remaining arguments:
    ``subfuns=(fun,)`` (JAX 0.10.2) or a function first (JAX before 0.9.2); ``None`` when
    neither (the program form, ``call_jaxpr=``)."""
    if "subfuns" in params:
        subfuns = params["subfuns"]
        rest = sorted(k for k in params if k != "subfuns")
        if rest:
            raise TypeError(f"{name}.bind takes no parameters besides its function; got "
                            f"{rest}")
        if not isinstance(subfuns, (tuple, list)) or len(subfuns) != 1:
            raise TypeError(f"{name}.bind expects subfuns=(fun,), one function; got "
                            f"{subfuns!r}")
        fun = subfuns[0]
    elif args and (hasattr(args[0], "call_wrapped") or
                   (callable(args[0]) and not isinstance(args[0], core.Tracer))):
        if params:
            raise TypeError(f"{name}.bind takes no parameters besides its function; got "
                            f"{sorted(params)}")
        fun, args = args[0], args[1:]
    else:
        return None, args
    f = getattr(fun, "call_wrapped", fun)
    if not callable(f):
        raise TypeError(f"{name}.bind expects a function (subfuns=(fun,) or the first "
                        f"argument), got {type(fun).__name__}")
    return f, args


def _stage_call(f, args):
    avals = [core.get_aval(a) for a in args]
    return staging.trace_to_closed_jaxpr(lambda *xs: list(f(*xs)), avals, name="call")


class _ClosedCallPrimitive(Primitive):
    """``closed_call_p``: ``bind(*args, call_jaxpr=closed)`` calls the program; given a
    function instead (``subfuns=(fun,)`` or first), stages it for the arguments' types
    and calls that program."""

    def bind(self, *args, **params):
        f, args = _call_function("closed_call_p", args, params)
        if f is None:
            if set(params) != {"call_jaxpr"}:
                raise TypeError(
                    f"closed_call_p.bind expects a function (subfuns=(fun,)) or "
                    f"call_jaxpr=, a ClosedJaxpr; got parameters {sorted(params)}")
            return super().bind(*args, **params)
        return super().bind(*args, call_jaxpr=_stage_call(f, args))


closed_call_p = _ClosedCallPrimitive("closed_call", multiple_results=True)


def _as_inline_jit(call_jaxpr):
    return dict(jaxpr=call_jaxpr, name="closed_call", inline=True, keep_unused=False,
                donated_invars=(False,) * len(call_jaxpr.in_avals))


def _closed_call_staging(trace, args, params):
    closed = params["call_jaxpr"]
    return staging.inline_jaxpr(trace, closed.jaxpr, closed.consts, args)


closed_call_p.def_impl(lambda *args, call_jaxpr: eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts,
                                                            *args))
closed_call_p.def_abstract_eval(lambda *avals, call_jaxpr: list(call_jaxpr.out_avals))
staging.staging_rules[closed_call_p] = _closed_call_staging
ad.jvp_rules[closed_call_p] = (
    lambda primals, tangents, *, call_jaxpr: _jit_jvp(primals, tangents,
                                                      **_as_inline_jit(call_jaxpr)))
ad.transpose_rules[closed_call_p] = (
    lambda cts, *args, call_jaxpr: _jit_transpose(cts, *args, **_as_inline_jit(call_jaxpr)))
batching.batch_rules[closed_call_p] = (
    lambda axis_data, vals, dims, *, call_jaxpr: _jit_batch(axis_data, vals, dims,
                                                            **_as_inline_jit(call_jaxpr)))
ad.partial_eval_rules[closed_call_p] = (
    lambda trace, args, params: _jit_partial_eval(trace, args,
                                                  _as_inline_jit(params["call_jaxpr"])))


class _CallPrimitive(Primitive):
    """``call_p``: ``bind(*args, subfuns=(fun,))`` (JAX 0.10.2) or ``bind(fun, *args)``
    (JAX before 0.9.2) takes a function (a callable, or a ``linear_util.WrappedFun``),
    stages it for the arguments' types and binds ``closed_call_p`` on the program, so no
    interpreter ever sees ``call_p`` itself."""

    def bind(self, *args, **params):
        f, args = _call_function("call_p", args, params)
        if f is None:
            raise TypeError(
                "call_p.bind expects a function first, bind(fun, *args), or as "
                "subfuns=(fun,) (JAX 0.10.2's form); got "
                f"{type(args[0]).__name__ if args else 'no arguments'}"
                + (f" and parameters {sorted(params)}" if params else ""))
        return closed_call_p.bind(*args, call_jaxpr=_stage_call(f, args))


call_p = _CallPrimitive("call", multiple_results=True)
for _kind in ("jvp", "batching", "lowering"):
    call_p.missing_rules[_kind] = ("call_p.bind stages its function and binds closed_call_p; "
                                   "call_p itself never reaches an interpreter")

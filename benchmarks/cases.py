"""The benchmark cases: each is written once against the JAX API (``L.np``,
``L.jit``, ``L.grad``...) and run on xform and JAX; NumPy runs the same
computation eagerly, with hand-written gradients where one is needed.

Every case returns a record::

    {"group", "description", "params",
     "metrics": {metric: {lib: value}},      # seconds -> reported in us/ms, or bytes
     "skipped": {lib: reason}}               # a lib with no value says why

``CASES`` lists the cases in run order; ``EXPECTED_METRICS`` names the metric
keys each case always reports (the test checks the JSON against it).
"""
from __future__ import annotations

import math
import random

import numpy as np

from benchmarks import timing
from benchmarks.timing import Skip

F32 = np.float32
STEADY = ("steady", "first_call")                 # metrics of a steady-state case
PHASES = ("trace", "lower", "compile", "first_call", "warm_first_call", "steady")


class Ctx:
    """Run settings: quick or full sizes, rounds, target seconds per timing round."""

    def __init__(self, libs, quick=False, rounds=None, seed=0, profile=None):
        from xform import profile as _profile
        self.libs, self.quick = libs, quick
        self.profile = profile or _profile.CPU
        # Full mode: many short rounds (24 x ~12.5 ms) rather than few long ones -- on a
        # shared, loaded machine the median of finely interleaved rounds is the stable
        # one; 24 is a whole number of forward + backward blocks for 2, 3 and 4
        # libraries (see timing._order).
        self.rounds = rounds or (3 if quick else 24)
        self.target_s = 0.01 if quick else 0.0125
        self.rng = np.random.default_rng(seed)

    def size(self, full, quick):
        return quick if self.quick else full

    def randn(self, *shape, scale=1.0):
        """Fresh standard-normal f32 data (never zeros), the same for every library."""
        return (self.rng.standard_normal(shape) * scale).astype(F32)

    def one_hot(self, n, k):
        return np.eye(k, dtype=F32)[self.rng.integers(0, k, n)]

    def lib(self, name, *needs):
        """The Lib, or raise Skip naming what it lacks."""
        L = self.libs.get(name)
        if L is None or isinstance(L, str):
            raise Skip(L or f"{name} not loaded")
        missing = [n for n in needs if getattr(L, n) is None]
        if missing:
            raise Skip(f"{name} has no {', '.join(missing)} yet")
        return L


CASES = []


def case(name, group, description, metrics=STEADY, libs=("xform", "jax", "numpy")):
    def deco(fn):
        CASES.append((name, group, description, tuple(metrics), tuple(libs), fn))
        return fn
    return deco


def _thunks(ctx, libs, make):
    """{lib: thunk or skip reason}: ``make(L)`` builds the blocked zero-arg callable."""
    out = {}
    for name in libs:
        try:
            out[name] = make(name)
        except Exception as e:  # noqa: BLE001
            out[name] = timing.reason_of(e)
    return out


def steady_record(ctx, libs, make, params=None):
    thunks = _thunks(ctx, libs, make)
    times, first, skipped = timing.steady(thunks, ctx.rounds, ctx.target_s)
    return {"params": params or {}, "skipped": skipped,
            "metrics": {"steady": times, "first_call": first}}


# ----------------------------------------------------------------- shared programs


def mlp_params(ctx, sizes, scale=None):
    return [(ctx.randn(a, b, scale=scale or 1 / math.sqrt(a)), ctx.randn(b, scale=0.1))
            for a, b in zip(sizes[:-1], sizes[1:])]


def mlp_loss(L, params, x, y):
    """Softmax cross-entropy of a ReLU MLP, mean over the batch."""
    h = x
    for W, b in params[:-1]:
        h = L.relu(h @ W + b)
    W, b = params[-1]
    return -L.np.mean(L.np.sum(L.log_softmax(h @ W + b) * y, axis=-1))


def np_mlp_grads(params, x, y):
    """Hand-written backward pass of ``mlp_loss`` (NumPy has no autodiff)."""
    hs, zs, h = [x], [], x
    for W, b in params[:-1]:
        z = h @ W + b
        h = np.maximum(z, 0)
        zs.append(z)
        hs.append(h)
    W, b = params[-1]
    logits = h @ W + b
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    g = (p - y) / x.shape[0]
    grads = []
    for i in reversed(range(len(params))):
        grads.append((hs[i].T @ g, g.sum(0)))
        if i:
            g = (g @ params[i][0].T) * (zs[i - 1] > 0)
    return grads[::-1]


def sgd(params, grads, lr=0.01):
    return [(W - lr * gW, b - lr * gb) for (W, b), (gW, gb) in zip(params, grads)]


def as_lib(L, tree, put=False):
    conv = L.put if put else L.asarray
    if isinstance(tree, (list, tuple)):
        return type(tree)(as_lib(L, t, put) for t in tree)
    return conv(tree)


# ----------------------------------------------------------------- eager dispatch

EAGER_LIBS = ("xform", "xform_dev", "jax", "numpy")


def eager_case(name, description):
    return case(name, "eager", description, libs=EAGER_LIBS)


def _chain6(L, x):
    y = L.np.sin(x)
    y = y * x
    y = L.np.cos(y)
    y = y + x
    y = L.np.tanh(y)
    return y * x


@eager_case("eager/add_f32[8]", "x + y on f32[8], op by op (the per-op dispatch tax)")
def eager_add(ctx):
    a, b = ctx.randn(8), ctx.randn(8)

    def make(name):
        L = ctx.lib(name)
        x, y = L.asarray(a), L.asarray(b)
        return lambda: L.block(x + y)
    return steady_record(ctx, EAGER_LIBS, make, {"shape": [8], "dtype": "float32"})


@eager_case("eager/sin_f32[8]", "sin(x) on f32[8], op by op")
def eager_sin(ctx):
    a = ctx.randn(8)

    def make(name):
        L = ctx.lib(name)
        x = L.asarray(a)
        return lambda: L.block(L.np.sin(x))
    return steady_record(ctx, EAGER_LIBS, make, {"shape": [8], "dtype": "float32"})


@eager_case("eager/chain6_f32[8]", "6-op elementwise chain (sin, mul, cos, add, tanh, mul) "
      "on f32[8], op by op")
def eager_chain(ctx):
    a = ctx.randn(8)

    def make(name):
        L = ctx.lib(name)
        x = L.asarray(a)
        return lambda: L.block(_chain6(L, x))
    return steady_record(ctx, EAGER_LIBS, make, {"shape": [8], "ops": 6})


def _small_mlp_data(ctx):
    return mlp_params(ctx, [16, 32, 4]), ctx.randn(8, 16), ctx.one_hot(8, 4)


@eager_case("eager/grad_small_mlp", "grad of a 16-32-4 MLP loss (batch 8) without jit; "
      "NumPy: hand-written backward")
def eager_grad(ctx):
    params, x, y = _small_mlp_data(ctx)

    def make(name):
        if name == "numpy":
            return lambda: np_mlp_grads(params, x, y)
        L = ctx.lib(name, "grad", "relu", "log_softmax")
        p, xx, yy = as_lib(L, params), L.asarray(x), L.asarray(y)
        g = L.grad(lambda p_: mlp_loss(L, p_, xx, yy))
        return lambda: L.block(g(p))
    return steady_record(ctx, EAGER_LIBS, make, {"sizes": [16, 32, 4], "batch": 8})


# ----------------------------------------------------------------- jit dispatch

JIT_LIBS = ("xform", "jax", "numpy")
# The jit dispatch rows also time the "floor": the bare jaxlib calls for the same
# compiled program (host-to-device puts for NumPy arguments, execute, the runtime's
# result handlers) with the argument buffers made ahead -- what any Python
# dispatcher over jaxlib's public execution API pays at least.
DISPATCH_LIBS = JIT_LIBS + ("floor",)
FLOOR_NOTE = ("floor: the bare jaxlib execute call of xform's compiled program (plus one "
              "host-to-device put per NumPy argument), buffers prepared ahead")


def _floor_thunk(ctx, fn, arrays, np_args):
    """A thunk timing the bare runtime calls for xform's compiled ``fn``."""
    L = ctx.lib("xform", "jit")
    from xform._src.lowering import runtime as rt
    from xform.tree_util import tree_leaves
    args = list(arrays) if np_args else [as_lib(L, a, put=True) for a in arrays]
    jf = L.jit(lambda *a: fn(L, *a))
    for _ in range(2):
        L.block(jf(*args))
    entry = next(iter(jf._cache.values()))
    comp = entry.compiled
    consts = [c._buf for c in entry.dev_consts]
    ex, hs = comp._exe.execute_sharded, comp._handlers
    leaves = tree_leaves(args)
    if not np_args:
        bufs = consts + [x._buf for x in leaves]

        def run():
            for o in ex(bufs).consume_with_handlers(hs):
                o.block_until_ready()
        return run
    put, sh, dl, hbs = rt._put, comp._sh, comp._devlist, rt._HBS
    avals = [sp[2] for sp in comp._specs[len(consts):]]
    pairs = list(zip(avals, leaves))

    def run_np():
        bufs = consts + [put(a, sh, [x], dl, True, False, hbs, True) for a, x in pairs]
        for o in ex(bufs).consume_with_handlers(hs):
            o.block_until_ready()
    return run_np


def _jit_case(ctx, fn, arrays, np_args=False, needs=("jit",), np_fn=None):
    def make(name):
        if name == "numpy":
            args = list(arrays)
            f = np_fn or (lambda *a: fn(ctx.libs["numpy"], *a))
            return lambda: f(*args)
        if name == "floor":
            return _floor_thunk(ctx, fn, arrays, np_args)
        L = ctx.lib(name, *needs)
        args = list(arrays) if np_args else [as_lib(L, a, put=True) for a in arrays]
        jf = L.jit(lambda *a: fn(L, *a))
        if name == "xform":
            _settle(lambda: L.block(jf(*args)))
        return lambda: L.block(jf(*args))
    return make


def _settle(call, n=100):
    """Warm-up past xform's adaptive dispatch steps (small NumPy arguments are packed
    into one transfer after a few dozen calls, compiled in a background thread), so the
    timed rounds see the steady state and not that compile."""
    import threading
    for _ in range(n):
        call()
    for t in threading.enumerate():
        if t.name.startswith("xform-jit-pack"):
            t.join(120)


def dispatch_case(name, description):
    return case(name, "jit", description, metrics=("steady",), libs=DISPATCH_LIBS)


def _dispatch_record(ctx, make, params):
    """Steady state only: the first call of a dispatch row is not a cold one (xform's
    call is warmed past its adaptive steps and the floor shares its program); cold
    first calls are the compile/ rows."""
    rec = steady_record(ctx, DISPATCH_LIBS, make, dict(params, floor=FLOOR_NOTE))
    rec["metrics"].pop("first_call", None)
    return rec


@dispatch_case("jit/one_arg", "jit(sin)(x), f32[8]: the cost of one compiled call; "
               "NumPy: np.sin eagerly")
def jit_one(ctx):
    make = _jit_case(ctx, lambda L, x: L.np.sin(x), [ctx.randn(8)])
    return _dispatch_record(ctx, make, {"shape": [8]})


@dispatch_case("jit/four_args_two_outputs", "jit(f)(a, b, c, d) -> (a*b + c, c - d), f32[8]")
def jit_four(ctx):
    make = _jit_case(ctx, lambda L, a, b, c, d: (a * b + c, c - d),
                     [ctx.randn(8) for _ in range(4)])
    return _dispatch_record(ctx, make, {"shape": [8]})


@dispatch_case("jit/numpy_args", "jit(f)(x, y) called with NumPy arrays (host -> device "
               "transfer on every call), f32[8]")
def jit_np(ctx):
    make = _jit_case(ctx, lambda L, x, y: L.np.sin(x) * y, [ctx.randn(8), ctx.randn(8)],
                     np_args=True)
    return _dispatch_record(ctx, make, {"shape": [8]})


def _pytree_params(ctx):
    return {f"layer{i}": {"w": ctx.randn(4, 4), "b": ctx.randn(4)} for i in range(4)}


def _apply_tree(L, p, x):
    for i in range(4):
        x = L.np.tanh(x @ p[f"layer{i}"]["w"] + p[f"layer{i}"]["b"])
    return x


@dispatch_case("jit/pytree_params", "jit(apply)(params, x): params a dict of 4 layers "
               "{'w': f32[4,4], 'b': f32[4]} (8 leaves), x f32[2,4]")
def jit_pytree(ctx):
    make = _jit_case(ctx, _apply_tree, [_pytree_params(ctx), ctx.randn(2, 4)])
    return _dispatch_record(ctx, make, {"leaves": 9})


@dispatch_case("jit/grad_small_mlp", "jit(grad(loss)) of the 16-32-4 MLP (batch 8); NumPy: "
               "hand-written backward")
def jit_grad(ctx):
    params, x, y = _small_mlp_data(ctx)
    make = _jit_case(ctx, lambda L, p, xx, yy: L.grad(lambda q: mlp_loss(L, q, xx, yy))(p),
                     [params, x, y], needs=("jit", "grad", "relu", "log_softmax"),
                     np_fn=lambda p, xx, yy: np_mlp_grads(p, xx, yy))
    return _dispatch_record(ctx, make, {"sizes": [16, 32, 4], "batch": 8})


# ----------------------------------------------------------------- first call / compile

_CHAIN_OPS = (lambda L, h, x: L.np.sin(h), lambda L, h, x: h * x, lambda L, h, x: L.np.cos(h),
              lambda L, h, x: h + x, lambda L, h, x: L.np.tanh(h))


def chain_program(n_ops, variant):
    """An n-op elementwise program on (x,); ``variant`` picks a distinct op sequence
    (same for every library), so no compilation cache can serve a later round."""
    rnd = random.Random(variant)
    ops = [rnd.choice(_CHAIN_OPS) for _ in range(n_ops)]

    def make(L):
        def program(x):
            h = x
            for op in ops:
                h = op(L, h, x)
            return h
        program.__name__ = f"chain{n_ops}_v{variant}"
        return program
    return make


def _compile_factory(ctx, name, n_ops, x_np, keep):
    """factory(round) -> {phase: seconds} for one library.  ``keep[name]`` receives the
    last first-called jitted program, reused (warm) for the steady-state timing."""
    clock = timing.clock
    L = ctx.lib(name, "jit")
    x = L.put(x_np)

    def xform_phases(r):
        from xform._src import lowering
        prog = chain_program(n_ops, 2 * r)(L)
        t0 = clock()
        traced = L.jit(prog).trace(x)
        t1 = clock()
        text = traced.lower().as_text()
        t2 = clock()
        lowering.compile_text(text)
        t3 = clock()
        first = L.jit(chain_program(n_ops, 2 * r + 1)(L))
        t4 = clock()
        L.block(first(x))
        t5 = clock()
        # Warm first call: a new process would have empty in-memory caches but find
        # the executable in the persistent compilation cache (pointed at a fresh
        # directory by the benchmark's xform adapter, so the cold calls are cold).
        lowering.clear_caches()
        again = L.jit(chain_program(n_ops, 2 * r + 1)(L))
        t6 = clock()
        L.block(again(x))
        t7 = clock()
        keep[name] = first
        return {"trace": t1 - t0, "lower": t2 - t1, "compile": t3 - t2, "first_call": t5 - t4,
                "warm_first_call": t7 - t6}

    def jax_phases(r):
        prog = chain_program(n_ops, 2 * r)(L)
        t0 = clock()
        traced = L.jit(prog).trace(x)
        t1 = clock()
        lowered = traced.lower()
        t2 = clock()
        lowered.compile()
        t3 = clock()
        first = L.jit(chain_program(n_ops, 2 * r + 1)(L))
        t4 = clock()
        L.block(first(x))
        t5 = clock()
        keep[name] = first
        return {"trace": t1 - t0, "lower": t2 - t1, "compile": t3 - t2, "first_call": t5 - t4}
    return xform_phases if name == "xform" else jax_phases


def _count_eqns(name, L, n_ops, x_np):
    """Equations in the staged program (recursive), per library."""
    from xform.profile import count_ops
    if name == "xform":
        import xform
        return count_ops(xform.make_jaxpr(chain_program(n_ops, 0)(L))(L.put(x_np)))
    import jax
    return count_ops(jax.make_jaxpr(chain_program(n_ops, 0)(L))(x_np))


def _compile_case(n_ops):
    @case(f"compile/chain_{n_ops}_ops", "compile",
          f"first call of a {n_ops}-op elementwise program on f32[8]: trace / lower / XLA "
          "compile separately, then a fresh first call end to end (cold); warm_first_call = "
          "xform's first call served by its persistent compilation cache vs JAX's cold first "
          "call (JAX's persistent cache is off by default); steady = the compiled "
          "call (NumPy: the program run eagerly); floor: XLA's compile alone",
          metrics=PHASES, libs=("xform", "jax", "numpy", "floor"))
    def run(ctx):
        x_np = ctx.randn(8)
        if ctx.quick and n_ops >= 3000:
            why = ("skipped in --quick mode: XLA takes ~20 s per library to compile a "
                   "3000-op transcendental chain on CPU; run the full suite")
            return {"params": {"n_ops": n_ops}, "metrics": {},
                    "skipped": {lib: why for lib in ("xform", "jax", "numpy", "floor")}}
        # XLA compile time grows faster than linearly: large programs get one round.
        rounds = 1 if n_ops >= 3000 or (ctx.quick and n_ops >= 300) else ctx.rounds
        factories, keep = {}, {}
        for name in ("xform", "jax"):
            try:
                factories[name] = _compile_factory(ctx, name, n_ops, x_np, keep)
            except Exception as e:  # noqa: BLE001
                factories[name] = timing.reason_of(e)
        got, skipped = timing.phases(factories, rounds)
        metrics = {p: {lib: v[p] for lib, v in got.items() if p in v} for p in PHASES[:5]}
        skipped["numpy"] = "NumPy does not trace or compile (steady = eager run)"
        if "jax" in got:     # warm_first_call is xform's; compare it with JAX's (cold) first_call
            metrics["warm_first_call"]["jax"] = got["jax"]["first_call"]
        if "xform" in got:   # no first call can beat XLA's compile of its program
            metrics["first_call"]["floor"] = got["xform"]["compile"]
        skipped.setdefault("floor", "measured for first_call only (XLA's compile alone)")
        eqns = {}
        for name in ("xform", "jax"):
            if name in got:
                try:
                    eqns[name] = _count_eqns(name, ctx.libs[name], n_ops, x_np)
                except Exception as e:  # noqa: BLE001
                    eqns[name] = timing.reason_of(e)

        def make(name):
            L = ctx.lib(name)
            prog = chain_program(n_ops, 10_000)(L)
            if name == "numpy":
                return lambda: prog(x_np)
            xx = L.put(x_np)
            jf = keep.get(name) or L.jit(prog)
            return lambda: L.block(jf(xx))
        steady = steady_record(ctx, ("xform", "jax", "numpy"), make)
        metrics["steady"] = steady["metrics"]["steady"]
        for lib, why in steady["skipped"].items():
            skipped.setdefault(lib, why)
        bound = {}
        if "xform" in got and "jax" in got:
            bound["best first_call ratio (floor/JAX)"] = round(
                got["xform"]["compile"] / got["jax"]["first_call"], 2)
        return {"params": {"n_ops": n_ops, "staged_equations": eqns, "rounds": rounds,
                           **bound, "floor": FIRST_CALL_FLOOR_NOTE},
                "metrics": metrics, "skipped": skipped}
    return run


FIRST_CALL_FLOOR_NOTE = (
    "first_call floor: XLA's compile of the program alone (lowering.compile_text of "
    "xform's StableHLO, which is JAX's program); a first call pays it whatever the "
    "library, so xform/floor - 1 is all that tracing, lowering and the run add, and "
    "floor/JAX bounds the best first_call ratio any library could reach with this XLA")


for _n in (30, 300, 3000):
    _compile_case(_n)


# ----------------------------------------------------------------- tiered compilation

TIERED_PROGRAMS = ("chain_30", "chain_300", "mlp_train_step")
TIERED_METRICS = tuple(f"{m}_{p}" for p in TIERED_PROGRAMS
                       for m in ("first_call", "first_call_tiered", "steady_tiered"))


def _tiered_program(ctx, prog, r):
    """(make(L), numpy args) of a first-call program distinct for round ``r`` (so no
    executable cache can serve it)."""
    if prog.startswith("chain_"):
        return chain_program(int(prog.split("_")[1]), 1000 + r), [ctx.randn(8)]
    width, batch = ctx.size(512, 128), ctx.size(128, 32)
    sizes = [784, width, width, 10]
    data = (mlp_params(ctx, sizes), ctx.randn(batch, 784), ctx.one_hot(batch, 10))
    lr = 0.01 + 1e-4 * r

    def make(L):
        return lambda p, xx, yy: sgd(p, L.grad(lambda q: mlp_loss(L, q, xx, yy))(p), lr)
    return make, list(data)


def _wait_background():
    """Untimed: let background optimized compiles of earlier rounds finish."""
    import threading
    for t in threading.enumerate():
        if t.name == "xform-tier-optimize":
            t.join(600)


@case("tiered/first_call", "tiered", "cold first call with xform_tiered_compilation on "
      "(XLA's quick tier compiled and run first, the optimized tier compiled in a background "
      "thread and swapped in): first_call = tiering off, first_call_tiered = on (JAX: its "
      "ordinary first call in both columns); steady_tiered = the call after the swap; "
      "programs: 30- and 300-op chains, the MLP training step (quick: smaller MLP)",
      metrics=TIERED_METRICS, libs=("xform", "jax"))
def tiered_first_call(ctx):
    from xform._src.interpreters.config import config
    rounds = 1 if ctx.quick else min(ctx.rounds, 5)
    skipped, metrics = {}, {m: {} for m in TIERED_METRICS}
    for prog in TIERED_PROGRAMS:
        def factory(name):
            try:
                L = ctx.lib(name, "jit", "grad", "relu", "log_softmax")
            except Skip as e:
                return str(e)

            def run(r):
                out = {}
                modes = ((False, "first_call"), (True, "first_call_tiered")) \
                    if name == "xform" else ((None, "first_call"),)
                for k, (tiered, metric) in enumerate(modes):
                    make, np_args = _tiered_program(ctx, prog, 2 * r + k)
                    args = [as_lib(L, a, put=True) for a in np_args]
                    if tiered is not None:
                        config.update("xform_tiered_compilation", tiered)
                    try:
                        f = L.jit(make(L))
                        t0 = timing.clock()
                        L.block(f(*args))
                        out[metric] = timing.clock() - t0
                    finally:
                        if tiered is not None:
                            config.update("xform_tiered_compilation", False)
                    _wait_background()
                if name == "jax":
                    out["first_call_tiered"] = out["first_call"]
                return out
            return run
        got, sk = timing.phases({n: factory(n) for n in ("xform", "jax")}, rounds)
        for lib, why in sk.items():
            skipped.setdefault(lib, why)
        for lib, v in got.items():
            metrics[f"first_call_{prog}"][lib] = v["first_call"]
            metrics[f"first_call_tiered_{prog}"][lib] = v["first_call_tiered"]

        def make_steady(name):
            L = ctx.lib(name, "jit", "grad", "relu", "log_softmax")
            mk, np_args = _tiered_program(ctx, prog, 99_999)
            args = [as_lib(L, a, put=True) for a in np_args]
            if name == "xform":
                config.update("xform_tiered_compilation", True)
            try:
                f = L.jit(mk(L))
                L.block(f(*args))
            finally:
                config.update("xform_tiered_compilation", False)
            if name == "xform":
                from xform import profile
                info = profile.compile_tiers(f, *args, wait=600)
                if info["tier"] != "optimized":
                    raise RuntimeError(f"the optimized tier was not swapped in: {info}")
                _settle(lambda: L.block(f(*args)), 5)
            return lambda: L.block(f(*args))
        st = steady_record(ctx, ("xform", "jax"), make_steady)
        metrics[f"steady_tiered_{prog}"] = st["metrics"]["steady"]
        for lib, why in st["skipped"].items():
            skipped.setdefault(lib, why)
    return {"params": {"rounds": rounds, "programs": list(TIERED_PROGRAMS),
                       "quick_tier": "XLA backend optimization level 0 (QUICK_TIER_OPTIONS); "
                                     "not bit-identical to the optimized tier on every "
                                     "program, so opt-in (docs/performance.md)"},
            "metrics": metrics, "skipped": skipped}


# ----------------------------------------------------------------- large programs

LARGE_METRICS = ("trace", "lower", "trace_lower", "compile", "steady", "peak_host_memory")
LARGE_LIBS = ("xform", "jax")


def _large_record(ctx, program, size, compile_why=None, steady_note=""):
    """trace / lower (several interleaved rounds), XLA compile and the compiled call
    (one round: XLA's compile of 10,000 small ops takes tens of seconds) and the peak
    host memory of trace + lower (fresh processes) of ``benchmarks.large`` program
    ``program`` at ``size``, xform vs JAX."""
    from benchmarks import large
    from xform.profile import count_ops
    rng = np.random.default_rng(0)
    _, np_args = large.build(program, size, rng)
    dev_args = {}
    skipped = {}
    for name in LARGE_LIBS:
        try:
            L = ctx.lib(name, "jit")
            dev_args[name] = large.to_lib(L, np_args)
        except Exception as e:  # noqa: BLE001
            skipped[name] = timing.reason_of(e)

    def factory(name):
        if name in skipped:
            return skipped[name]
        L = ctx.libs[name]

        def run(r):
            make, _ = large.build(program, size, rng, variant=r)
            (t_trace, t_lower), _, _ = large.trace_lower(L, make(L), dev_args[name],
                                                         timing._steady_clock[0])
            return {"trace": t_trace, "lower": t_lower, "trace_lower": t_trace + t_lower}
        return run

    rounds = 1 if ctx.quick else min(ctx.rounds, 5)
    got, sk = timing.phases({n: factory(n) for n in LARGE_LIBS}, rounds)
    skipped.update(sk)
    metrics = {m: {lib: v[m] for lib, v in got.items()} for m in ("trace", "lower", "trace_lower")}
    metrics["compile"], metrics["steady"] = {}, {}
    if compile_why:
        for name in LARGE_LIBS:
            skipped.setdefault(name, compile_why)
    else:
        thunks = {}
        for name in LARGE_LIBS:
            if name in skipped:
                continue
            L = ctx.libs[name]
            try:
                make, _ = large.build(program, size, rng, variant=10_000)
                args = dev_args[name]
                _, jf, lowered = large.trace_lower(L, make(L), args)
                t0 = timing.clock()
                if name == "jax":
                    compiled = lowered.compile()
                else:
                    from xform._src import lowering
                    lowering.compile_text(lowered)
                    compiled = jf          # its first call finds the executable cached
                metrics["compile"][name] = timing.clock() - t0
                thunks[name] = (lambda c, a, L: lambda: L.block(c(*a)))(compiled, args, L)
            except Exception as e:  # noqa: BLE001
                skipped[name] = timing.reason_of(e)
        times, _, sk = timing.steady(thunks, ctx.rounds, ctx.target_s)
        metrics["steady"] = times
        for lib, why in sk.items():
            skipped.setdefault(lib, why)
    metrics["peak_host_memory"] = {}
    for name in LARGE_LIBS:
        if name in skipped and not got.get(name):
            continue
        try:
            metrics["peak_host_memory"][name] = large.peak_memory(name, program, size)
        except Exception as e:  # noqa: BLE001
            skipped.setdefault(name, timing.reason_of(e))
    eqns = {}
    for name in LARGE_LIBS:
        if name in dev_args:
            try:
                L = ctx.libs[name]
                make, _ = large.build(program, size, rng)
                mj = __import__("xform" if name == "xform" else "jax").make_jaxpr
                eqns[name] = count_ops(mj(make(L))(*dev_args[name]))
            except Exception as e:  # noqa: BLE001
                eqns[name] = timing.reason_of(e)
    params = {"size": size, "staged_equations": eqns, "rounds": rounds,
              "clock": "trace and lower: the run's --clock; compile: wall time",
              "lower": "xform: simplify passes + StableHLO text with locations (what a first "
                       "call compiles); JAX: Traced.lower() (its MLIR module)",
              "peak_host_memory": "peak RSS of trace + lower over the process's RSS before, "
                                  "in a fresh process per library"}
    if steady_note:
        params["steady"] = steady_note
    return {"params": params, "metrics": metrics, "skipped": skipped}


def large_case(name, description):
    return case(name, "large", description, metrics=LARGE_METRICS, libs=LARGE_LIBS)


_XLA_SLOW = ("XLA's compile of this many small ops takes minutes and grows faster than "
             "linearly (about 30 s at 10,000 equations on 2 cores); trace, lower and memory "
             "are the host-side costs measured here")


@large_case("large/loop_10k_eqns", "jit of a 2000-iteration Python loop of h = tanh(h @ w); "
            "h = h - mean(h) on f32[8,8] (10,000 equations; quick: 200 iterations, no compile)")
def large_loop_10k(ctx):
    return _large_record(ctx, "loop", ctx.size(2000, 200),
                         compile_why="skipped in --quick mode" if ctx.quick else None,
                         steady_note="the compiled program's call (xform: jit; JAX: "
                                     "Compiled), same XLA program")


@large_case("large/loop_50k_eqns", "jit of a 10000-iteration loop of the same ops (50,000 "
            "equations; quick: 1000 iterations): trace, lower and memory only")
def large_loop_50k(ctx):
    return _large_record(ctx, "loop", ctx.size(10_000, 1000), compile_why=_XLA_SLOW)


@large_case("large/transformer_48_layers", "jit(value_and_grad) of an unrolled stack of 48 "
            "pre-LN transformer blocks, seq 16, width 64, 4 heads (about 10,700 equations; "
            "quick: 4 layers, no compile)")
def large_transformer(ctx):
    return _large_record(ctx, "transformer", ctx.size(48, 4),
                         compile_why="skipped in --quick mode" if ctx.quick else None,
                         steady_note="the compiled program's call (xform: jit; JAX: "
                                     "Compiled), same XLA program")


@large_case("large/pytree_5000_leaves", "jit(tree_map(lambda a: a * 0.999, params)) with "
            "params a dict of 100 lists of 25 {'w': f32[4], 'b': f32[4]} (5,000 leaves in and "
            "out; quick: 500); steady = the call's dispatch of 5,000 arguments and results")
def large_pytree(ctx):
    return _large_record(ctx, "tree", ctx.size(100, 10),
                         steady_note="the call with 5,000 leaves (xform: jit; JAX: Compiled, "
                                     "its C++ call path)")


GROWTH_SIZES = (1000, 2000, 5000, 10000, 20000, 50000)


@case("large/growth_trace_lower", "large", "trace + lower of the loop program at 1k, 2k, "
      "5k, 10k, 20k and 50k equations (quick: 500, 1k, 2k): the growth curve; exponent = "
      "log-log slope between sizes (1 = linear); xform's us/eqn split into trace, simplify "
      "passes and StableHLO emission",
      metrics=tuple(f"trace_lower_{n}" for n in GROWTH_SIZES), libs=LARGE_LIBS)
def large_growth(ctx):
    from benchmarks import large
    sizes = (500, 1000, 2000) if ctx.quick else GROWTH_SIZES
    rng = np.random.default_rng(0)
    skipped, dev = {}, {}
    for name in LARGE_LIBS:
        try:
            dev[name] = large.to_lib(ctx.lib(name, "jit"), large.loop_args(rng))
        except Exception as e:  # noqa: BLE001
            skipped[name] = timing.reason_of(e)

    def factory(name):
        if name in skipped:
            return skipped[name]
        L = ctx.libs[name]

        def run(r):
            out = {}
            for n in sizes:
                make = large.loop_program(n // large.LOOP_EQNS_PER_ITER, variant=r)
                (a, b), _, _ = large.trace_lower(L, make(L), dev[name], timing._steady_clock[0])
                out[n] = a + b
            return out
        return run
    got, sk = timing.phases({n: factory(n) for n in LARGE_LIBS}, 1 if ctx.quick else 3)
    skipped.update(sk)
    metrics = {f"trace_lower_{n}": {lib: v[n] for lib, v in got.items()} for n in sizes}
    # xform's per-equation split (one more run per size, best of the rounds' clock)
    split = {}
    if "xform" in got:
        L = ctx.libs["xform"]
        for n in sizes:
            make = large.loop_program(n // large.LOOP_EQNS_PER_ITER, variant=-2)
            split[n] = large.xform_breakdown(make(L), dev["xform"], timing._steady_clock[0])
    for n in GROWTH_SIZES:
        if n not in sizes:
            metrics[f"trace_lower_{n}"] = {}
            for lib in LARGE_LIBS:
                skipped.setdefault(lib, "sizes above 2000 equations: full mode only")
    lines = [f"{'equations':>10}" + "".join(f"{lib + ' ms':>11}{lib + ' us/eqn':>14}"
                                            f"{lib + ' exp':>10}" for lib in got)
             + f"{'xform/jax':>11}"
             + ("   xform us/eqn: trace / passes / emit" if split else "")]
    prev = {}
    for n in sizes:
        row = f"{n:>10}"
        for lib, v in got.items():
            t = v[n]
            exp = (f"{math.log(t / prev[lib][1]) / math.log(n / prev[lib][0]):.2f}"
                   if lib in prev else "-")
            prev[lib] = (n, t)
            row += f"{t * 1e3:>11.1f}{t / n * 1e6:>14.1f}{exp:>10}"
        if "xform" in got and "jax" in got:
            row += f"{got['xform'][n] / got['jax'][n]:>10.2f}x"
        if n in split:
            row += "   " + " / ".join(f"{t / n * 1e6:.1f}" for t in split[n])
        lines.append(row)
    rec = {"params": {"sizes": list(sizes), "program": "loop (5 equations per iteration)",
                      "xform_split_us_per_eqn": {
                          n: dict(zip(("trace", "passes", "emit"),
                                      (round(t / n * 1e6, 2) for t in split[n])))
                          for n in split}},
           "metrics": metrics, "skipped": skipped}
    rec["growth_table"] = "\n".join(lines)
    return rec



# ----------------------------------------------------------------- steady state

STEADY_LIBS = ("xform", "jax", "numpy")


@case("steady/mlp_train_step", "steady", "jit(SGD step) of a 784-512-512-10 ReLU MLP, "
      "softmax cross-entropy, batch 128 (quick: 784-128-128-10, batch 32)")
def mlp_step(ctx):
    width, batch = ctx.size(512, 128), ctx.size(128, 32)
    sizes = [784, width, width, 10]
    params, x, y = mlp_params(ctx, sizes), ctx.randn(batch, 784), ctx.one_hot(batch, 10)

    def make(name):
        if name == "numpy":
            return lambda: sgd(params, np_mlp_grads(params, x, y))
        L = ctx.lib(name, "jit", "grad", "relu", "log_softmax")
        step = L.jit(lambda p, xx, yy: sgd(p, L.grad(lambda q: mlp_loss(L, q, xx, yy))(p)))
        args = [as_lib(L, a, put=True) for a in (params, x, y)]
        return lambda: L.block(step(*args))
    return steady_record(ctx, STEADY_LIBS, make, {"sizes": sizes, "batch": batch})


def _pe_loss(L, p, x, y):
    (W1, b1), (W2, b2) = p
    return -L.np.sum(L.log_softmax(L.np.tanh(x @ W1 + b1) @ W2 + b2) * y)


def _np_per_example(p, x, y):
    (W1, b1), (W2, b2) = p
    h = np.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    e = np.exp(logits - logits.max(-1, keepdims=True))
    d = e / e.sum(-1, keepdims=True) - y
    dz = (d @ W2.T) * (1 - h * h)
    return [(np.einsum("bi,bh->bih", x, dz), dz), (np.einsum("bh,bo->bho", h, d), d)]


@case("steady/per_example_grads", "steady", "jit(vmap(grad(loss), in_axes=(None, 0, 0))) "
      "of a 64-128-10 tanh MLP over batch 128 (quick: 32); NumPy: hand-vectorised einsum")
def per_example(ctx):
    batch = ctx.size(128, 32)
    params, x, y = mlp_params(ctx, [64, 128, 10]), ctx.randn(batch, 64), ctx.one_hot(batch, 10)

    def make(name):
        if name == "numpy":
            return lambda: _np_per_example(params, x, y)
        L = ctx.lib(name, "jit", "grad", "vmap", "log_softmax")
        f = L.jit(L.vmap(L.grad(lambda p, xi, yi: _pe_loss(L, p, xi, yi)), in_axes=(None, 0, 0)))
        args = [as_lib(L, a, put=True) for a in (params, x, y)]
        return lambda: L.block(f(*args))
    return steady_record(ctx, STEADY_LIBS, make, {"sizes": [64, 128, 10], "batch": batch})


def _rnn_loss(L, p, h0, xs):
    W, U, b = p

    def cell(h, x):
        h = L.np.tanh(h @ W + x @ U + b)
        return h, h
    _, hs = L.scan(cell, h0, xs)
    return L.np.sum(hs * hs) / (hs.shape[0] * hs.shape[1])


def _np_rnn(p, h0, xs):
    W, U, b = p
    hs = [h0]
    for x in xs:
        hs.append(np.tanh(hs[-1] @ W + x @ U + b))
    T, B = xs.shape[0], xs.shape[1]
    loss = sum(float(np.sum(h * h)) for h in hs[1:]) / (T * B)
    gW, gU, gb = np.zeros_like(W), np.zeros_like(U), np.zeros_like(b)
    carry = np.zeros_like(h0)
    for t in reversed(range(T)):
        h = hs[t + 1]
        dz = (2 * h / (T * B) + carry) * (1 - h * h)
        gW += hs[t].T @ dz
        gU += xs[t].T @ dz
        gb += dz.sum(0)
        carry = dz @ W.T
    return loss, (gW, gU, gb)


@case("steady/scan_rnn_fwd_bwd", "steady", "jit(value_and_grad) of a tanh RNN run by "
      "lax.scan for 200 steps (quick: 50), batch 16, input 32, hidden 128; NumPy: "
      "hand-written backprop through time")
def scan_rnn(ctx):
    T, B, I, H = ctx.size(200, 50), 16, 32, 128
    p = (ctx.randn(H, H, scale=1 / math.sqrt(H)), ctx.randn(I, H, scale=1 / math.sqrt(I)),
         ctx.randn(H, scale=0.1))
    h0, xs = ctx.randn(B, H, scale=0.1), ctx.randn(T, B, I)

    def make(name):
        if name == "numpy":
            return lambda: _np_rnn(p, h0, xs)
        L = ctx.lib(name, "jit", "value_and_grad", "scan")
        f = L.jit(L.value_and_grad(lambda q, a, b: _rnn_loss(L, q, a, b)))
        args = [as_lib(L, a, put=True) for a in (p, h0, xs)]
        return lambda: L.block(f(*args))
    return steady_record(ctx, STEADY_LIBS, make, {"steps": T, "batch": B, "input": I,
                                                  "hidden": H})


def _layer_norm(L, x, g, b):
    m = L.np.mean(x, axis=-1, keepdims=True)
    v = L.np.mean((x - m) * (x - m), axis=-1, keepdims=True)
    return (x - m) / L.np.sqrt(v + 1e-5) * g + b


def transformer_block(L, p, x, heads):
    g1, b1, wqkv, wo, g2, b2, w1, w2 = p
    S, D = x.shape
    dh = D // heads
    qkv = _layer_norm(L, x, g1, b1) @ wqkv

    def split(t):
        return L.np.transpose(L.np.reshape(t, (S, heads, dh)), (1, 0, 2))
    q, k, v = split(qkv[:, :D]), split(qkv[:, D:2 * D]), split(qkv[:, 2 * D:])
    s = q @ L.np.transpose(k, (0, 2, 1)) / math.sqrt(dh)
    e = L.np.exp(s - L.np.max(s, axis=-1, keepdims=True))
    a = (e / L.np.sum(e, axis=-1, keepdims=True)) @ v
    x = x + L.np.reshape(L.np.transpose(a, (1, 0, 2)), (S, D)) @ wo
    h = _layer_norm(L, x, g2, b2) @ w1
    h = 0.5 * h * (1 + L.np.tanh(0.7978845608 * (h + 0.044715 * h * h * h)))   # gelu (tanh)
    return x + h @ w2


@case("steady/transformer_block", "steady", "jit of a pre-LN transformer block forward "
      "(4-head attention + layer norm + GELU MLP x4), seq 128, width 256 (quick: 32, 64)")
def transformer(ctx):
    S, D, heads = ctx.size(128, 32), ctx.size(256, 64), 4
    sc = 1 / math.sqrt(D)
    p = (1 + ctx.randn(D, scale=0.1), ctx.randn(D, scale=0.1), ctx.randn(D, 3 * D, scale=sc),
         ctx.randn(D, D, scale=sc), 1 + ctx.randn(D, scale=0.1), ctx.randn(D, scale=0.1),
         ctx.randn(D, 4 * D, scale=sc), ctx.randn(4 * D, D, scale=1 / math.sqrt(4 * D)))
    x = ctx.randn(S, D)

    def make(name):
        if name == "numpy":
            return lambda: transformer_block(ctx.libs["numpy"], p, x, heads)
        L = ctx.lib(name, "jit")
        f = L.jit(lambda q, xx: transformer_block(L, q, xx, heads))
        args = [as_lib(L, a, put=True) for a in (p, x)]
        return lambda: L.block(f(*args))
    return steady_record(ctx, STEADY_LIBS, make, {"seq": S, "width": D, "heads": heads,
                                                  "mlp": 4 * D})


# ----------------------------------------------------------------- dense compute


def _lax_of(L):
    """The lax module matching a Lib (``xform.lax`` / ``jax.lax``)."""
    import importlib
    return importlib.import_module("jax.lax" if L.name == "jax" else "xform.lax")


def convnet_params(ctx, side, c1=16, c2=32):
    pooled = side // 4
    return {"conv1": (ctx.randn(3, 3, 1, c1, scale=1 / 3), ctx.randn(c1, scale=0.1)),
            "conv2": (ctx.randn(3, 3, c1, c2, scale=1 / math.sqrt(9 * c1)),
                      ctx.randn(c2, scale=0.1)),
            "dense": (ctx.randn(pooled * pooled * c2, 10,
                                scale=1 / math.sqrt(pooled * pooled * c2)),
                      ctx.randn(10, scale=0.1))}


def convnet_loss(L, params, x, y):
    """conv3x3-relu-maxpool2 x2, dense; NHWC / HWIO; softmax cross-entropy."""
    lax = _lax_of(L)
    for name in ("conv1", "conv2"):
        w, b = params[name]
        x = lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        x = lax.reduce_window(L.relu(x + b), -L.np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                              "VALID")
    w, b = params["dense"]
    logits = x.reshape(x.shape[0], -1) @ w + b
    return -L.np.mean(L.np.sum(L.log_softmax(logits) * y, axis=-1))


def _convnet_sgd(params, grads, lr=0.01):
    return {k: (params[k][0] - lr * grads[k][0], params[k][1] - lr * grads[k][1])
            for k in params}


def _convnet_args(ctx):
    side, batch = ctx.size(28, 8), 64
    return side, batch, convnet_params(ctx, side), ctx.randn(batch, side, side, 1), \
        ctx.one_hot(batch, 10)


def _as_lib_tree(L, tree, put):
    conv = L.put if put else L.asarray
    return {k: tuple(conv(a) for a in v) for k, v in tree.items()}


@case("steady/convnet_train_step", "steady", "jit(SGD step) of a CNN (conv3x3x16-relu-"
      "maxpool-conv3x3x32-relu-maxpool-dense), 28x28x1 inputs (quick: 8x8), batch 64",
      libs=("xform", "jax"))
def convnet_step(ctx):
    side, batch, params, x, y = _convnet_args(ctx)

    def make(name):
        L = ctx.lib(name, "jit", "grad", "relu", "log_softmax")
        step = L.jit(lambda p, xx, yy: _convnet_sgd(
            p, L.grad(lambda q: convnet_loss(L, q, xx, yy))(p)))
        args = [_as_lib_tree(L, params, True), L.put(x), L.put(y)]
        return lambda: L.block(step(*args))
    return steady_record(ctx, ("xform", "jax"), make, {"side": side, "batch": batch})


@case("eager/convnet_grad", "eager", "value_and_grad of the steady/convnet_train_step CNN "
      "loss without jit (op-by-op dispatch of convs, pooling and their gradients)",
      libs=("xform", "xform_dev", "jax"))
def convnet_eager(ctx):
    side, batch, params, x, y = _convnet_args(ctx)

    def make(name):
        L = ctx.lib(name, "value_and_grad", "relu", "log_softmax")
        f = L.value_and_grad(lambda q, xx, yy: convnet_loss(L, q, xx, yy))
        put = name != "xform"
        args = [_as_lib_tree(L, params, put), (L.put if put else L.asarray)(x),
                (L.put if put else L.asarray)(y)]
        return lambda: L.block(f(*args))
    return steady_record(ctx, ("xform", "xform_dev", "jax"), make,
                         {"side": side, "batch": batch})


@case("steady/fft_2^16", "steady", "jit(fft) of 2**16 complex64 points (quick: 2**12); "
      "NumPy: numpy.fft.fft (complex128 internally)")
def fft_case(ctx):
    n = 2 ** ctx.size(16, 12)
    x = (ctx.randn(n) + 1j * ctx.randn(n)).astype(np.complex64)

    def make(name):
        if name == "numpy":
            return lambda: np.fft.fft(x)
        L = ctx.lib(name, "jit")
        f = L.jit(L.np.fft.fft)
        xa = L.put(x)
        return lambda: L.block(f(xa))
    return steady_record(ctx, STEADY_LIBS, make, {"n": n})


# ----------------------------------------------------------------- archetypes
# Three workloads measured for the dispatch-tax trade-off (docs/performance.md): a long
# elementwise chain, softmax attention and a sparse embedding gradient.

ARCH_LIBS = ("xform", "jax", "numpy")
ARCH_METRICS = ("eager", "steady", "first_call", "break_even_n", "overhead_ratio")
ARCH_METHOD = ("eager = the step op by op without jit (NumPy: the same NumPy code); steady = "
               "the jitted step per call; first_call = trace + lower + compile + run of a "
               "fresh jit (cold caches); break_even_n = (first_call - steady) / (eager - "
               "steady), the calls after which compiling has paid (profile.break_even); "
               "overhead_ratio = (eager - steady) / steady, the measured form of "
               "profile.overhead_ratio (N_ops * t_dispatch over the compiled step's compute "
               "+ memory time)")


def archetype_record(ctx, make_eager, make_jit, params):
    """``make_eager(name)`` / ``make_jit(name)`` -> blocked thunks; eager for every library
    (NumPy runs its own code), jit for xform and JAX; derived break-even and overhead."""
    eager = _thunks(ctx, ARCH_LIBS, make_eager)
    jitted = _thunks(ctx, ("xform", "jax"), make_jit)
    t_eager, _, skipped = timing.steady(eager, ctx.rounds, ctx.target_s)
    t_jit, first, sk2 = timing.steady(jitted, ctx.rounds, ctx.target_s)
    for lib, why in sk2.items():
        skipped.setdefault(lib, why)
    metrics = {m: {} for m in ARCH_METRICS}
    metrics["eager"] = t_eager
    metrics["steady"] = t_jit
    metrics["first_call"] = first
    for lib in ("xform", "jax"):
        if lib in t_eager and lib in t_jit and lib in first:
            gain = t_eager[lib] - t_jit[lib]
            if gain > 0:
                metrics["break_even_n"][lib] = max(first[lib] - t_jit[lib], 1e-9) / gain
                metrics["overhead_ratio"][lib] = gain / t_jit[lib]
            else:
                skipped.setdefault(lib, "jit is not faster than eager at this size (no "
                                        "break-even)")
    skipped.setdefault("numpy", "NumPy has no jit: eager column only")
    return {"params": dict(params, method=ARCH_METHOD), "metrics": metrics,
            "skipped": skipped}


def _arch_pair(ctx, fn, arrays, put_jit=True):
    def make_eager(name):
        L = ctx.libs["numpy"] if name == "numpy" else ctx.lib(name)
        args = [as_lib(L, a) for a in arrays]
        return lambda: L.block(fn(L, *args))

    def make_jit(name):
        L = ctx.lib(name, "jit")
        args = [as_lib(L, a, put=put_jit) for a in arrays]
        jf = L.jit(lambda *a: fn(L, *a))
        return lambda: L.block(jf(*args))
    return make_eager, make_jit


def _gelu_chain(L, x, b):
    """A 16-op elementwise chain (bias, GELU(tanh), scale, residual, clip): one fused
    loop when compiled, 16 passes over memory eagerly."""
    h = x + b
    g = 0.5 * h * (1.0 + L.np.tanh(0.7978845608 * (h + 0.044715 * h * h * h)))
    y = g * 1.702 - x
    return L.np.clip(y * y + 0.5 * x, -3.0, 3.0)


@case("archetype/bandwidth_elementwise_chain", "archetype", "bandwidth-bound: a 16-op "
      "elementwise chain (bias + GELU + residual + clip) on f32[2**20] (quick: 2**14)",
      metrics=ARCH_METRICS, libs=ARCH_LIBS)
def arch_chain(ctx):
    n = 2 ** ctx.size(20, 14)
    e, j = _arch_pair(ctx, _gelu_chain, [ctx.randn(n), ctx.randn(n)])
    return archetype_record(ctx, e, j, {"n": n, "ops": 16})


def _attention(L, q, k, v):
    s = q @ L.np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    e = L.np.exp(s - L.np.max(s, axis=-1, keepdims=True))
    return (e / L.np.sum(e, axis=-1, keepdims=True)) @ v


@case("archetype/bandwidth_attention", "archetype", "bandwidth-bound: softmax(q k^T / "
      "sqrt(d)) v, 4 heads, seq 256, head dim 64 (quick: seq 64, dim 16)",
      metrics=ARCH_METRICS, libs=ARCH_LIBS)
def arch_attention(ctx):
    S, D = ctx.size(256, 64), ctx.size(64, 16)
    arrays = [ctx.randn(4, S, D), ctx.randn(4, S, D), ctx.randn(4, S, D)]
    e, j = _arch_pair(ctx, _attention, arrays)
    return archetype_record(ctx, e, j, {"heads": 4, "seq": S, "head_dim": D})


def _embed_loss(L, table, idx, w):
    return L.np.sum(L.np.tanh(table[idx] @ w))


def _np_embed_grad(table, idx, w):
    z = table[idx] @ w
    g = (1 - np.tanh(z) ** 2) @ w.T
    out = np.zeros_like(table)
    np.add.at(out, idx, g)
    return out


@case("archetype/sparse_embedding_grad", "archetype", "sparse gather: grad of "
      "sum(tanh(table[idx] @ w)) w.r.t. an embedding table f32[50000,64] for 4096 "
      "indices (quick: 5000 rows, 512 indices): a gather forward, a scatter-add backward; "
      "NumPy: hand-written (np.add.at)", metrics=ARCH_METRICS, libs=ARCH_LIBS)
def arch_embedding(ctx):
    V, B, D = ctx.size(50_000, 5_000), ctx.size(4096, 512), 64
    table, w = ctx.randn(V, D, scale=0.1), ctx.randn(D, 8, scale=0.1)
    idx = ctx.rng.integers(0, V, B).astype(np.int32)

    def make_eager(name):
        if name == "numpy":
            return lambda: _np_embed_grad(table, idx, w)
        L = ctx.lib(name, "grad")
        args = [L.asarray(table), L.asarray(idx), L.asarray(w)]
        g = L.grad(lambda t, i, ww: _embed_loss(L, t, i, ww))
        return lambda: L.block(g(*args))

    def make_jit(name):
        L = ctx.lib(name, "jit", "grad")
        args = [L.put(table), L.put(idx), L.put(w)]
        g = L.jit(L.grad(lambda t, i, ww: _embed_loss(L, t, i, ww)))
        return lambda: L.block(g(*args))
    return archetype_record(ctx, make_eager, make_jit, {"rows": V, "indices": B, "dim": D})


# ----------------------------------------------------------------- memory

MEMORY_METHOD = ("sum of shape x itemsize over saved_residuals(f, params, x): xform "
                 "xform.ad_checkpoint.saved_residuals, JAX jax._src.ad_checkpoint."
                 "saved_residuals (the function behind jax.ad_checkpoint.print_saved_residuals)"
                 "; both count what vjp keeps for the backward pass, arguments included")


def _deep_loss(L, params, x, remat, segment=4):
    """tanh MLP; with ``remat`` every ``segment`` consecutive layers form one
    ``checkpoint``-ed block, so only block inputs are saved for the backward pass."""
    def block(Ws, h):
        for W in Ws:
            h = L.np.tanh(h @ W)
        return h
    if remat:
        block = L.checkpoint(block)
    h = x
    for i in range(0, len(params), segment):
        h = block(list(params[i:i + segment]), h)
    return L.np.sum(h * h)


@case("memory/deep_mlp_residuals", "memory", "residual bytes saved for the backward pass of "
      "a 16-layer tanh MLP, width 128, batch 512 (quick: 8 layers, batch 128), without and "
      "with checkpoint on every 4-layer block",
      metrics=("residual_bytes", "residual_bytes_checkpoint"))
def memory(ctx):
    depth, width, batch = ctx.size(16, 8), 128, ctx.size(512, 128)
    params = [ctx.randn(width, width, scale=1 / math.sqrt(width)) for _ in range(depth)]
    x = ctx.randn(batch, width)
    metrics = {"residual_bytes": {}, "residual_bytes_checkpoint": {}}
    skipped = {"numpy": "NumPy has no autodiff (nothing saved)"}
    for name in ("xform", "jax"):
        try:
            L = ctx.lib(name, "checkpoint", "saved_residuals")
            p, xx = as_lib(L, params), L.asarray(x)
            for key, remat in (("residual_bytes", False), ("residual_bytes_checkpoint", True)):
                res = L.saved_residuals(lambda q, a: _deep_loss(L, q, a, remat), p, xx)
                metrics[key][name] = int(sum(int(np.prod(a.shape)) * np.dtype(a.dtype).itemsize
                                             for a, _ in res))
        except Exception as e:  # noqa: BLE001
            skipped[name] = timing.reason_of(e)
            for m in metrics.values():
                m.pop(name, None)
    arg_bytes = (depth * width * width + batch * width) * 4
    return {"params": {"depth": depth, "width": width, "batch": batch, "segment": 4,
                       "argument_bytes": arg_bytes, "method": MEMORY_METHOD},
            "metrics": metrics, "skipped": skipped}


# ----------------------------------------------------------------- dispatch-tax reports


def _report(ctx, fn_of_L, arrays, name):
    from xform import profile
    L = ctx.lib("xform", "jit")
    args = [as_lib(L, a) for a in arrays]
    rep = profile.dispatch_report(fn_of_L(L), *args, n_iter=ctx.size(20, 3), name=name,
                                  profile=ctx.profile)
    return rep


@case("report/small_mlp_6op", "report", "dispatch report (xform.profile) of a 6-source-op "
      "MLP: sum(relu(x@W1+b1)@W2+b2), 16-32-4, batch 8", metrics=("dispatch_report",),
      libs=("xform",))
def report_small(ctx):
    (W1, b1), (W2, b2) = mlp_params(ctx, [16, 32, 4])
    x = ctx.randn(8, 16)

    def f(L):
        def small_mlp(W1, b1, W2, b2, x):
            return L.np.sum(L.relu(x @ W1 + b1) @ W2 + b2)
        return small_mlp
    return _report_record(ctx, f, [W1, b1, W2, b2, x], "small MLP (6 source ops)")


@case("report/mlp_train_step", "report", "dispatch report (xform.profile) of the "
      "steady/mlp_train_step SGD step", metrics=("dispatch_report",), libs=("xform",))
def report_mlp(ctx):
    width, batch = ctx.size(512, 128), ctx.size(128, 32)
    params, x, y = (mlp_params(ctx, [784, width, width, 10]), ctx.randn(batch, 784),
                    ctx.one_hot(batch, 10))

    def f(L):
        def mlp_step(p, xx, yy):
            return sgd(p, L.grad(lambda q: mlp_loss(L, q, xx, yy))(p))
        return mlp_step
    return _report_record(ctx, f, [params, x, y], f"MLP SGD step 784-{width}-{width}-10, "
                          f"batch {batch}")


def _report_record(ctx, f, arrays, name):
    try:
        rep = _report(ctx, f, arrays, name)
        return {"params": {}, "metrics": {"dispatch_report": {"xform": rep.as_dict()}},
                "skipped": {}, "text": str(rep)}
    except Exception as e:  # noqa: BLE001
        return {"params": {}, "metrics": {"dispatch_report": {}},
                "skipped": {"xform": timing.reason_of(e)}}


# ----------------------------------------------------------------- random (xform.random)

RANDOM_LIBS = ("xform", "jax")


def _random_mod(ctx, name):
    import importlib
    ctx.lib(name)
    if name not in ("xform", "jax"):
        raise Skip(f"{name} has no random module")
    return importlib.import_module(f"{name}.random")


@case("random/eager_split_normal8", "random", "eager: k, s = split(key); normal(s, (8,)) per "
      "call (target: <= 0.5x JAX)", libs=RANDOM_LIBS)
def random_eager_split_normal(ctx):
    def make(name):
        R = _random_mod(ctx, name)
        L = ctx.lib(name)
        key = R.key(0)

        def step():
            k, s = R.split(key)
            return L.block(R.normal(s, (8,)))
        return step
    return steady_record(ctx, RANDOM_LIBS, make, {"shape": [8]})


@case("random/jit_normal_1000x1000", "random", "jit(normal)(key) of f32[1000,1000] steady "
      "state (target: <= 1.05x JAX)", libs=RANDOM_LIBS)
def random_jit_normal(ctx):
    n = ctx.size(1000, 200)

    def make(name):
        R = _random_mod(ctx, name)
        L = ctx.lib(name, "jit")
        key = R.key(0)
        f = L.jit(lambda k: R.normal(k, (n, n)))
        return lambda: L.block(f(key))
    return steady_record(ctx, RANDOM_LIBS, make, {"shape": [n, n]})


@case("random/first_call_jit_sampler", "random", "first call of a freshly jitted sampler "
      "(trace + lower + compile + run of jit(lambda k: uniform(k, (128,)) * 2))",
      libs=RANDOM_LIBS)
def random_first_call(ctx):
    def make(name):
        R = _random_mod(ctx, name)
        L = ctx.lib(name, "jit")
        key = R.key(0)

        def first():
            f = L.jit(lambda k: R.uniform(k, (128,)) * 2.0)   # a new function: a cache miss
            return L.block(f(key))
        return first
    return steady_record(ctx, RANDOM_LIBS, make, {"shape": [128]})
# ----------------------------------------------------------------- linear algebra


def _scipy_linalg(L):
    """The scipy.linalg-like module of a library (cho_factor/cho_solve)."""
    import importlib
    return importlib.import_module({"xform": "xform.scipy.linalg", "jax": "jax.scipy.linalg",
                                    "numpy": "scipy.linalg"}[L.name])


def _spd(ctx, n, batch=()):
    a = ctx.randn(*batch, n, n)
    return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n, dtype=F32)).astype(F32)


def _linalg_jit(ctx, fn, arrays, params):
    return steady_record(ctx, JIT_LIBS, _jit_case(ctx, fn, arrays), params)


def _linalg_eager(ctx, fn, arrays, params):
    def make(name):
        L = ctx.lib(name)
        args = [L.asarray(a) for a in arrays]
        return lambda: L.block(fn(L, *args))
    return steady_record(ctx, JIT_LIBS, make, params)


def _cho(L, a, b):
    sl = _scipy_linalg(L)
    return sl.cho_solve(sl.cho_factor(a, lower=True), b)


@case("linalg/cho_solve_512", "linalg", "jit(cho_solve(cho_factor(A), b)): SPD A f32[512,512], "
      "b f32[512,8] (LAPACK potrf + trsm on every library)")
def linalg_cho(ctx):
    n = ctx.size(512, 128)
    return _linalg_jit(ctx, _cho, [_spd(ctx, n), ctx.randn(n, 8)], {"n": n, "rhs": 8})


@case("linalg/cho_solve_512_eager", "linalg", "cho_solve(cho_factor(A), b) eagerly, same data")
def linalg_cho_eager(ctx):
    n = ctx.size(512, 128)
    return _linalg_eager(ctx, _cho, [_spd(ctx, n), ctx.randn(n, 8)], {"n": n, "rhs": 8})


@case("linalg/svd_256", "linalg", "jit(svd)(x), f32[256,256] (LAPACK gesdd)")
def linalg_svd(ctx):
    n = ctx.size(256, 64)
    return _linalg_jit(ctx, lambda L, x: L.np.linalg.svd(x), [ctx.randn(n, n)], {"n": n})


@case("linalg/eigh_256", "linalg", "jit(eigh)(A), symmetric f32[256,256] (LAPACK syevd)")
def linalg_eigh(ctx):
    n = ctx.size(256, 64)
    return _linalg_jit(ctx, lambda L, x: L.np.linalg.eigh(x), [_spd(ctx, n)], {"n": n})


@case("linalg/batched_solve_64x32", "linalg", "jit(solve)(A, b): A f32[64,32,32], "
      "b f32[64,32,1] (LAPACK getrf + trsm, batched)")
def linalg_batched_solve(ctx):
    b = ctx.size(64, 16)
    arrays = [_spd(ctx, 32, (b,)), ctx.randn(b, 32, 1)]
    return _linalg_jit(ctx, lambda L, a, y: L.np.linalg.solve(a, y), arrays,
                       {"batch": b, "n": 32})


@case("linalg/batched_solve_64x32_eager", "linalg", "solve(A, b) eagerly, same data")
def linalg_batched_solve_eager(ctx):
    b = ctx.size(64, 16)
    arrays = [_spd(ctx, 32, (b,)), ctx.randn(b, 32, 1)]
    return _linalg_eager(ctx, lambda L, a, y: L.np.linalg.solve(a, y), arrays,
                         {"batch": b, "n": 32})


from benchmarks import startup as _startup  # noqa: E402,F401  (start-up cases)

EXPECTED_METRICS = {name: metrics for name, _, _, metrics, _, _ in CASES}
CASE_LIBS = {name: libs for name, _, _, _, libs, _ in CASES}

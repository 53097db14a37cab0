"""Random *structured* programs, built once with xform and once with JAX.

A program description is plain data (nested tuples) drawn by hypothesis
(``programs``).  ``build(desc, ns)`` turns it into a Python function of a vector
``h`` (shape ``(N,)``, float32) using only the namespace ``ns`` -- ``ns.np``
(``jax.numpy`` or ``xform.numpy``), ``ns.lax``, ``ns.api`` (``jax`` or ``xform``) and
``ns.ckpt`` (its ``ad_checkpoint``) -- so the very same program runs on both
systems and the results can be compared under any stack of transformations.

Nodes (a program is a sequence of 1-3 nodes, each ``h -> h``):

* leaves: smooth unary ops, a matmul ``h @ W + b`` (``dot_general``: what
  ``dots_saveable`` saves), concrete index arrays with out-of-range and negative
  entries (clamped / filled / dropped: the same eager and under jit), traced
  indices, ``.at[]`` updates (add/mul/set/min/max, duplicates, modes), dynamic
  slices, ``custom_jvp`` and ``custom_vjp`` helpers, ``checkpoint_name``;
* compound: ``cond``, ``switch`` (also ``cond_closure``/``switch_closure``, whose
  branches read values computed outside them: plain ops and ``.at[].max`` /
  ``.at[].set(mode="drop")`` scatters of the input), ``fori_loop`` (static or traced bounds),
  ``scan`` (forward/reverse, unrolled), ``while_loop``, ``map``, ``vmap``,
  ``checkpoint`` with a random policy, nested ``jit``; each holds sub-programs.

All constants come from a per-node seed, so both builds see identical numbers.
"""
from __future__ import annotations

import types

import numpy as np
from hypothesis import strategies as st

N = 3

UNARY = ("sin", "tanh", "cos", "square", "softplus", "leaky", "exp")
POLICIES = (None, "nothing_saveable", "dots_saveable", "everything_saveable",
            "dots_with_no_batch_dims_saveable", "save_only_these_names",
            "save_any_names_but_these", "save_anything_except_these_names")
LEAVES = ("unary", "unary", "mix", "index", "dyn_index", "at", "dyn_at", "dyn_slice",
          "custom_jvp", "custom_vjp", "name", "stop_gradient")
COMPOUND = ("cond", "switch", "fori", "scan", "while", "map", "vmap", "checkpoint", "jit",
            "cond_int", "scan_int", "cond_closure", "switch_closure")
# what a closure branch reads from outside: (outer value, how it enters the branch)
OUTER = ("sin", "at_max", "at_set_drop", "none")


def namespace(api, np_mod, lax_mod, ckpt_mod):
    return types.SimpleNamespace(api=api, np=np_mod, lax=lax_mod, ckpt=ckpt_mod)


# ----------------------------------------------------------------- descriptions


@st.composite
def nodes(draw, depth):
    kinds = LEAVES + (COMPOUND if depth > 0 else ())
    kind = draw(st.sampled_from(kinds))
    seed = draw(st.integers(0, 2 ** 16 - 1))

    def sub():
        return draw(programs(depth - 1, 2))
    if kind == "unary":
        return ("unary", draw(st.sampled_from(UNARY)))
    if kind == "index":
        return ("index", seed, draw(st.sampled_from((None, "clip", "fill"))))
    if kind == "dyn_index":
        return ("dyn_index", seed, draw(st.sampled_from((None, "clip", "fill"))))
    if kind == "at":
        return ("at", seed, draw(st.sampled_from(("add", "multiply", "set", "min", "max"))),
                draw(st.sampled_from((None, "clip", "drop"))))
    if kind == "dyn_at":
        return ("dyn_at", seed, draw(st.sampled_from(("add", "set", "multiply"))),
                draw(st.sampled_from((None, "clip", "drop"))))
    if kind in ("mix", "dyn_slice", "custom_jvp", "custom_vjp", "name", "stop_gradient"):
        return (kind, seed)
    if kind in ("cond_int", "scan_int"):
        return (kind, seed, sub(), sub())
    if kind == "cond":
        return ("cond", seed, sub(), sub())
    if kind == "switch":
        n = draw(st.integers(2, 3))
        return ("switch", seed, tuple(sub() for _ in range(n)))
    if kind in ("cond_closure", "switch_closure"):
        n = 2 if kind == "cond_closure" else draw(st.integers(2, 3))
        reads = tuple(draw(st.sampled_from(OUTER)) for _ in range(n))
        return (kind, seed, reads, tuple(sub() for _ in range(n)))
    if kind == "fori":
        return ("fori", draw(st.integers(0, 3)), draw(st.booleans()), sub())
    if kind == "scan":
        return ("scan", seed, draw(st.integers(1, 3)), draw(st.booleans()),
                draw(st.sampled_from((1, 2, True))), sub())
    if kind == "while":
        return ("while", draw(st.integers(0, 3)), sub())
    if kind in ("map", "vmap"):
        return (kind, seed, draw(st.integers(1, 3)), sub())
    if kind == "checkpoint":
        return ("checkpoint", draw(st.sampled_from(POLICIES)), draw(st.booleans()), sub())
    if kind == "jit":
        return ("jit", sub())
    raise AssertionError(kind)


@st.composite
def programs(draw, depth=2, max_len=3):
    n = draw(st.integers(1, max_len))
    return tuple(draw(nodes(depth)) for _ in range(n))


def walk(desc):
    """Every node of a program description (pre-order)."""
    for node in desc:
        yield node
        for part in node[1:]:
            if isinstance(part, tuple) and part and isinstance(part[0], tuple):
                if isinstance(part[0][0], str):      # a sub-program
                    yield from walk(part)
                else:                                # a tuple of sub-programs (switch)
                    for p in part:
                        yield from walk(p)


def has_while(desc):
    """Loops with a run-time trip count: not reverse-differentiable (in JAX either)."""
    return any(n[0] == "while" or (n[0] == "fori" and n[2]) for n in walk(desc))


def describe(desc, indent=0):
    pad = "  " * indent
    out = []
    for node in desc:
        head = [p for p in node if not (isinstance(p, tuple) and p and isinstance(p[0], tuple))]
        out.append(pad + repr(tuple(head)))
        for part in node[1:]:
            if isinstance(part, tuple) and part and isinstance(part[0], tuple):
                if isinstance(part[0][0], str):
                    out.append(describe(part, indent + 1))
                else:
                    for p in part:
                        out.append(pad + "  |")
                        out.append(describe(p, indent + 2))
    return "\n".join(out)


# ----------------------------------------------------------------- building


def _policy(ns, name):
    if name is None:
        return None
    P = ns.api.checkpoint_policies
    if name in ("save_only_these_names", "save_any_names_but_these",
                "save_anything_except_these_names"):
        return getattr(P, name)("a")
    return getattr(P, name)


def build(desc, ns):
    """``h -> h`` for a program description, with the namespace's numpy/lax/api."""
    fns = [_build_node(node, ns) for node in desc]

    def f(h):
        for g in fns:
            h = g(h)
        return h
    return f


def _traced_int(jnp, h, scale, seed):
    """An int32 index computed from the values (traced under every transformation);
    it can fall outside [0, N)."""
    return (jnp.floor(jnp.abs(h[seed % N]) * scale)).astype(jnp.int32) - 1


def _build_node(node, ns):  # noqa: C901  (one case per node kind)
    jnp, lax, api = ns.np, ns.lax, ns.api
    kind = node[0]
    if kind == "unary":
        return {
            "sin": jnp.sin, "tanh": jnp.tanh, "cos": jnp.cos,
            "square": lambda h: 0.25 * h * h,
            "softplus": lambda h: jnp.logaddexp(h, 0.0) - 0.5,
            "leaky": lambda h: jnp.where(h > 0, h, 0.3 * h),
            "exp": lambda h: jnp.exp(-0.5 * h * h),
        }[node[1]]
    seed = node[1] if isinstance(node[1], int) else 0
    rng = np.random.default_rng(seed)
    if kind == "mix":
        W = (rng.standard_normal((N, N)) * 0.6).astype(np.float32)
        b = (rng.standard_normal(N) * 0.1).astype(np.float32)
        return lambda h: jnp.dot(h, jnp.asarray(W)) + jnp.asarray(b)
    if kind == "index":
        mode = node[2]
        # Out-of-range vector indices only with an explicit mode: by default they are a
        # broken promise in JAX (read clamped, gradient dropped; xform: clamped both ways).
        lo, hi = (-N, N) if mode is None else (-N - 2, N + 3)
        idx = rng.integers(lo, hi, size=N).astype(np.int32)
        host = bool(rng.integers(0, 2))

        def index(h):
            i = idx if host else jnp.asarray(idx)
            if mode is None:
                return h[i]
            if mode == "fill":
                return h.at[i].get(mode="fill", fill_value=0.5)
            return h.at[i].get(mode=mode)
        return index
    if kind == "dyn_index":
        mode = node[2]
        offs = rng.integers(-1, N, size=N).astype(np.int32)

        def dyn_index(h):
            i0 = _traced_int(jnp, h, 2.0, seed)
            i = i0 + jnp.asarray(offs)
            if mode is None:     # a scalar index may be out of range (a clamped dynamic slice)
                return h[jnp.clip(i, -N, N - 1)] * 0.5 + h * h[i0 + 1] * 0.5
            if mode == "fill":
                return h.at[i].get(mode="fill", fill_value=-0.25) + h
            return h.at[i].get(mode=mode) * h
        return dyn_index
    if kind == "at":
        op, mode = node[2], node[3]
        k = int(rng.integers(1, N + 1))
        if op in ("set", "multiply"):
            # distinct targets: JAX leaves the winner of a 'set' tie unspecified and only
            # differentiates scatter_mul with unique_indices=True
            idx = rng.permutation(np.arange(-N, N + 3))[:k].astype(np.int32)
            idx = np.array([i for i in idx if not (-N <= i < 0 and (i + N) in idx)] or [1],
                           np.int32)
            if mode == "clip":
                idx = np.array(sorted({int(np.clip(i + N if i < 0 else i, 0, N - 1))
                                       for i in idx}), np.int32)
        else:
            idx = rng.integers(-N - 1, N + 2, size=k).astype(np.int32)
            if op in ("min", "max") and mode == "clip":
                # JAX 0.10.2's JVP of a clip-mode scatter-min/max returns inf/garbage for
                # out-of-range indices (xform agrees with finite differences: see
                # test_differential_programs.py::test_at_min_max_clip_out_of_range_grad):
                # keep JAX as the oracle on in-range (negative too) indices only.
                idx = np.where(idx >= N, N - 1, np.where(idx < -N, 0, idx)).astype(np.int32)

        def at(h):
            v = jnp.sin(h)[:len(idx)] * 0.5 + 0.75
            kw = {} if mode is None else {"mode": mode}
            if op == "multiply":
                kw["unique_indices"] = True
            return getattr(h.at[jnp.asarray(idx)], op)(v, **kw)
        return at
    if kind == "dyn_at":
        op, mode = node[2], node[3]

        def dyn_at(h):
            i = _traced_int(jnp, h, 1.5, seed)
            kw = {} if mode is None else {"mode": mode}
            v = jnp.cos(h[0]) * 0.5 + 0.75
            return getattr(h.at[i], op)(v, **kw)
        return dyn_at if op != "multiply" else (
            lambda h: h.at[_traced_int(jnp, h, 1.5, seed)].multiply(
                jnp.cos(h[0]) * 0.5 + 0.75, unique_indices=True,
                **({} if mode is None else {"mode": mode})))
    if kind == "dyn_slice":
        def dyn_slice(h):
            i = _traced_int(jnp, h, 2.0, seed)
            both = jnp.concatenate([h, jnp.tanh(h)])
            s = lax.dynamic_slice(both, (i,), (N,))
            return lax.dynamic_update_slice(s, h[:2] * 0.5, (i + 1,))
        return dyn_slice
    if kind == "custom_jvp":
        c = float(rng.uniform(0.2, 0.6))

        @api.custom_jvp
        def f(x):
            return jnp.sin(x) * 0.5 + x * c

        @f.defjvp
        def f_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            # deliberately not the true derivative: the rule must be the one used
            return f(x), (jnp.cos(x) * 0.5 + c + 0.1) * t
        return f
    if kind == "custom_vjp":
        @api.custom_vjp
        def g(x):
            return jnp.tanh(x)

        def g_fwd(x):
            y = jnp.tanh(x)
            return y, (y,)

        def g_bwd(res, ct):
            (y,) = res
            return ((1.0 - y * y) * ct * 0.9,)
        g.defvjp(g_fwd, g_bwd)
        return g
    if kind == "name":
        return lambda h: ns.ckpt.checkpoint_name(jnp.sin(h), "a")
    if kind == "stop_gradient":
        return lambda h: h * lax.stop_gradient(jnp.cos(h)) + 0.1 * h
    if kind == "cond_int":
        # branches return (floats, an int used as an index): integer outputs of control
        # flow carry no tangent
        fa, fb = build(node[2], ns), build(node[3], ns)
        thr = float(rng.uniform(-1, 1))

        def cond_int(h):
            y, k = lax.cond(jnp.sum(h) > thr, lambda v: (fa(v), jnp.int32(1)),
                            lambda v: (fb(v), (jnp.sum(v) > 0).astype(jnp.int32) * 2), h)
            return y * 0.5 + h[k] * 0.5
        return cond_int
    if kind == "scan_int":
        # an integer carry and integer ys next to the float ones
        fa, fb = build(node[2], ns), build(node[3], ns)
        C = rng.uniform(-1, 1, size=(2, N)).astype(np.float32)

        def scan_int(h):
            def step(c, x):
                k, v = c
                v = lax.cond(k % 2 == 0, fa, fb, v + x)
                return (k + 1, v), (k, v[k % N])
            (k, v), (ks, ys) = lax.scan(step, (jnp.int32(0), h), jnp.asarray(C) * h)
            return v + 0.1 * jnp.sum(ys) + 0.01 * (k + jnp.sum(ks))
        return scan_int
    if kind == "cond":
        fa, fb = build(node[2], ns), build(node[3], ns)
        thr = float(rng.uniform(-1, 1))
        return lambda h: lax.cond(jnp.sum(h) > thr, fa, fb, h)
    if kind == "switch":
        fs = [build(p, ns) for p in node[2]]
        t1, t2 = sorted(float(v) for v in rng.uniform(-1.5, 1.5, size=2))

        def switch(h):
            s = jnp.sum(h)
            i = (s > t1).astype(jnp.int32) + (s > t2).astype(jnp.int32)
            return lax.switch(i, fs, h)
        return switch
    if kind in ("cond_closure", "switch_closure"):
        reads, fs = node[2], [build(p, ns) for p in node[3]]
        idx = rng.integers(-N - 1, N + 2, size=2).astype(np.int32)
        t1, t2 = sorted(float(v) for v in rng.uniform(-1.5, 1.5, size=2))

        def outer(h):
            return {"sin": jnp.sin(h) * 0.5,
                    "at_max": h.at[jnp.asarray(np.clip(idx, -N, N - 1))].max(
                        jnp.cos(h[:2]) * 0.5),
                    "at_set_drop": (h * 0.5).at[jnp.asarray(idx[:1])].set(
                        jnp.tanh(h[0]), mode="drop")}

        def branch(g, read):
            def br(v, vals):
                out = g(v)
                return out if read == "none" else out * (0.5 + 0.25 * vals[read]) + vals[read]
            return br

        brs = [branch(g, r) for g, r in zip(fs, reads)]

        def closure(h):
            vals = outer(h)      # read by the branches as closed-over values
            s = jnp.sum(h)
            if kind == "cond_closure":
                return lax.cond(s > t1, lambda v: brs[0](v, vals), lambda v: brs[1](v, vals),
                                h)
            i = (s > t1).astype(jnp.int32) + (s > t2).astype(jnp.int32)
            return lax.switch(i, [lambda v, b=b: b(v, vals) for b in brs], h)
        return closure
    if kind == "fori":
        n, dynamic, body = node[1], node[2], build(node[3], ns)

        def fori(h):
            upper = n + (jnp.sum(h) > 1e6).astype(jnp.int32) if dynamic else n
            return lax.fori_loop(0, upper, lambda i, c: 0.5 * c + 0.5 * body(c) + 0.1 * i, h)
        return fori
    if kind == "scan":
        length, reverse, unroll, body = node[2], node[3], node[4], build(node[5], ns)
        C = rng.uniform(-1, 1, size=(length, N)).astype(np.float32)

        def scan(h):
            xs = jnp.asarray(C) * h[None, :]

            def step(c, x):
                return body(c + 0.3 * x), c * x
            carry, ys = lax.scan(step, h, xs, reverse=reverse, unroll=unroll)
            return carry + 0.1 * jnp.sum(ys, axis=0)
        return scan
    if kind == "while":
        n, body = node[1], build(node[2], ns)

        def wl(h):
            def cond(c):
                return (c[0] < n) & (jnp.sum(c[1] * c[1]) < 100.0)

            def step(c):
                return c[0] + 1, 0.5 * c[1] + 0.5 * body(c[1])
            return lax.while_loop(cond, step, (0, h))[1]
        return wl
    if kind in ("map", "vmap"):
        k, body = node[2], build(node[3], ns)
        C = rng.uniform(-1, 1, size=(k,)).astype(np.float32)

        def mapped(h):
            H = jnp.asarray(C)[:, None] * h[None, :]
            ys = lax.map(body, H) if kind == "map" else api.vmap(body)(H)
            return h + 0.3 * jnp.sum(ys, axis=0)
        return mapped
    if kind == "checkpoint":
        policy, prevent_cse, body = node[1], node[2], build(node[3], ns)
        return api.checkpoint(body, policy=_policy(ns, policy), prevent_cse=prevent_cse)
    if kind == "jit":
        return api.jit(build(node[1], ns))
    raise AssertionError(kind)


# ----------------------------------------------------------------- transformation stacks

REVERSE = frozenset({"grad", "jit(grad)", "vmap(grad)", "vjp", "jacrev", "hessian",
                     "grad(grad)", "jvp(grad)", "grad(checkpoint)"})


def stacks(ns, desc, top_policy):
    """name -> fn(x, X, XX, t) for every transformation stack, built in ``ns``."""
    jnp, api = ns.np, ns.api
    f_vec = build(desc, ns)
    w = np.array([0.3, -0.7, 1.1], np.float32)
    w2 = np.array([1.0, 0.5, -0.25], np.float32)

    def f(x):
        return jnp.sum(f_vec(x) * jnp.asarray(w))

    def linearize(x, t):
        y, fl = api.linearize(f_vec, x)
        return y, fl(t)

    def vjp(x, t):
        y, fv = api.vjp(f_vec, x)
        return y, fv(t)[0]

    return {
        "eval": lambda x, X, XX, t: f_vec(x),
        "jit": lambda x, X, XX, t: api.jit(f_vec)(x),
        "grad": lambda x, X, XX, t: api.grad(f)(x),
        "jit(grad)": lambda x, X, XX, t: api.jit(api.grad(f))(x),
        "vmap": lambda x, X, XX, t: api.vmap(f_vec)(X),
        "vmap(vmap)": lambda x, X, XX, t: api.vmap(api.vmap(f_vec))(XX),
        "vmap(grad)": lambda x, X, XX, t: api.vmap(api.grad(f))(X),
        "jvp": lambda x, X, XX, t: api.jvp(f_vec, (x,), (t,)),
        "linearize": lambda x, X, XX, t: linearize(x, t),
        "vjp": lambda x, X, XX, t: vjp(x, t),
        "jacfwd": lambda x, X, XX, t: api.jacfwd(f_vec)(x),
        "jacrev": lambda x, X, XX, t: api.jacrev(f_vec)(x),
        "hessian": lambda x, X, XX, t: api.hessian(f)(x),
        "grad(grad)": lambda x, X, XX, t: api.grad(
            lambda y: jnp.sum(api.grad(f)(y) * jnp.asarray(w2)))(x),
        "jvp(grad)": lambda x, X, XX, t: api.jvp(api.grad(f), (x,), (t,)),
        "grad(checkpoint)": lambda x, X, XX, t: api.grad(
            api.checkpoint(f, policy=_policy(ns, top_policy)))(x),
    }


def inputs(seed, ns=None):
    """(x, X, XX, t): a point, batches for vmap and vmap(vmap), a tangent -- as the
    namespace's arrays (``ns=None``: NumPy)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.5, 1.5, N).astype(np.float32)
    X = rng.uniform(-1.5, 1.5, (4, N)).astype(np.float32)
    XX = rng.uniform(-1.5, 1.5, (2, 3, N)).astype(np.float32)
    t = rng.standard_normal(N).astype(np.float32)
    out = (x, X, XX, t)
    return out if ns is None else tuple(ns.np.asarray(a) for a in out)

"""IR passes (forwarding, CSE, DCE): each preserves results on random programs
(checked against the unoptimised program and against JAX) and never grows them."""
import jax
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import xform
from xform._src.interpreters import core, passes
from xform._src.interpreters.ir import check_jaxpr, eval_jaxpr
from xform._src.primitives.elementwise import convert_element_type_p
from xform._src.primitives.structural import reshape_p
from xform import lax as L

JL = jax.lax
X = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
Y = np.linspace(0.5, 2, 6, dtype=np.float32).reshape(2, 3)

_inner_jit = xform.jit(lambda a, b: (L.sin(a), b, L.mul(a, b)))


def _cast(x):
    return convert_element_type_p.bind(x, new_dtype=np.dtype(np.float32), weak_type=False)


def _reshape(x):
    return reshape_p.bind(x, new_sizes=tuple(x.shape), dimensions=None)


# name -> (arity, xform op, jax op)
OPS = {
    "sin": (1, L.sin, JL.sin),
    "cos": (1, L.cos, JL.cos),
    "neg": (1, L.neg, JL.neg),
    "add": (2, L.add, JL.add),
    "mul": (2, L.mul, JL.mul),
    "cast": (1, _cast, lambda x: x),
    "reshape": (1, _reshape, lambda x: x),
    "jit0": (2, lambda a, b: _inner_jit(a, b)[0], lambda a, b: JL.sin(a)),
    "jit1": (2, lambda a, b: _inner_jit(a, b)[1], lambda a, b: b),
    "jit2": (2, lambda a, b: _inner_jit(a, b)[2], lambda a, b: a * b),
}

op_strategy = st.tuples(st.sampled_from(sorted(OPS)), st.integers(0, 100), st.integers(0, 100))


def build(ops, outs, which):
    def prog(x, y):
        vals = [x, y]
        for name, i, j in ops:
            arity, fx, fj = OPS[name]
            f = fx if which == "xform" else fj
            a, b = vals[i % len(vals)], vals[j % len(vals)]
            vals.append(f(a) if arity == 1 else f(a, b))
        return [vals[k % len(vals)] for k in outs]
    return prog


def run(closed):
    with core.set_current_trace(core.EVAL_TRACE):
        return [np.asarray(o) for o in eval_jaxpr(closed.jaxpr, closed.consts, X, Y)]


PASSES = {
    "forward": lambda c: passes.prune_consts(passes.forward_jaxpr(c.jaxpr), c.consts),
    "cse": lambda c: passes.prune_consts(passes.cse_jaxpr(c.jaxpr), c.consts),
    "dce": passes.dce_closed,
    "simplify": passes.simplify,
}


@given(st.lists(op_strategy, min_size=1, max_size=12),
       st.lists(st.integers(0, 100), min_size=1, max_size=3))
def test_passes_preserve_results_and_shrink(ops, outs):
    closed = xform.make_jaxpr(build(ops, outs, "xform"))(X, Y)
    ref = run(closed)
    oracle = build(ops, outs, "jax")(X, Y)
    for r, o in zip(ref, oracle):
        np.testing.assert_allclose(r, np.asarray(o), rtol=1e-5, atol=1e-6)
    n = passes.count_eqns(closed)
    for name, p in PASSES.items():
        new = p(closed)
        check_jaxpr(new.jaxpr)
        assert [v.aval for v in new.jaxpr.invars] == [v.aval for v in closed.jaxpr.invars]
        assert passes.count_eqns(new) <= n, name
        for a, b in zip(run(new), ref):
            np.testing.assert_array_equal(a, b)
    # simplify reaches a fixpoint no bigger than any single pass
    s = passes.simplify(closed)
    assert passes.count_eqns(passes.simplify(s)) == passes.count_eqns(s)


def prims(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns]


def test_dce_removes_dead_and_keeps_effects():
    def f(x):
        L.sin(x)                                   # dead
        xform.debug.callback(lambda v: None, x)    # effectful: kept
        return L.cos(x)
    closed = xform.make_jaxpr(f)(X)
    assert prims(passes.dce_closed(closed)) == ["debug_callback", "cos"]


def test_dce_prunes_jit_outputs_and_inputs():
    inner = xform.jit(lambda a, b, c: (L.sin(a), L.cos(b), c))
    closed = xform.make_jaxpr(lambda x, y: inner(x, y, x)[0])(X, Y)
    new = passes.dce_closed(closed)
    (eqn,) = new.eqns
    sub = eqn.params["jaxpr"].jaxpr
    assert len(eqn.invars) == 1 and len(eqn.outvars) == 1
    assert prims(sub) == ["sin"] and len(eqn.params["donated_invars"]) == 1
    np.testing.assert_allclose(run(new)[0], np.sin(X), rtol=1e-6)


def test_dce_keeps_jit_with_effects_and_no_outputs():
    inner = xform.jit(lambda a: (xform.debug.callback(lambda v: None, a), L.sin(a))[1])
    closed = xform.make_jaxpr(lambda x: (inner(x), L.cos(x))[1])(X)
    new = passes.dce_closed(closed)
    assert prims(new) == ["jit", "cos"]
    assert prims(new.eqns[0].params["jaxpr"].jaxpr) == ["debug_callback"]


def test_cse_merges_duplicates_not_effects():
    def f(x):
        xform.debug.callback(lambda v: None, x)
        xform.debug.callback(lambda v: None, x)
        return L.add(L.sin(x), L.sin(x))
    closed = xform.make_jaxpr(f)(X)
    new = passes.prune_consts(passes.cse_jaxpr(closed.jaxpr), closed.consts)
    assert prims(new) == ["debug_callback", "debug_callback", "sin", "add"]


def test_cse_recurses_into_subprograms():
    inner = xform.jit(lambda a: L.mul(L.cos(a), L.cos(a)))
    closed = xform.make_jaxpr(inner)(X)
    new = passes.simplify(closed)
    assert prims(new.eqns[0].params["jaxpr"].jaxpr) == ["cos", "mul"]


def test_forwarding_trivial_ops_and_jit_passthrough():
    inner = xform.jit(lambda a, b: (b, L.sin(a)))
    closed = xform.make_jaxpr(lambda x, y: L.add(_reshape(_cast(inner(x, y)[0])), x))(X, Y)
    new = passes.simplify(closed)
    assert prims(new) == ["add"]
    assert new.jaxpr.eqns[0].invars[0] is new.jaxpr.invars[1]


def test_forwarding_keeps_weak_type_changes():
    def f(x):
        return convert_element_type_p.bind(x, new_dtype=np.dtype(np.float32), weak_type=False)
    closed = xform.make_jaxpr(f)(1.0)       # weak f32 -> strong f32: not an identity
    assert prims(passes.simplify(closed)) == ["convert_element_type"]

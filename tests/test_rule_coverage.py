"""Every primitive has every rule it must have, and a new primitive needs no engine edit.

The first test walks the whole catalogue: each registered primitive has an eager
implementation, and a lowering, JVP and batching rule -- or a declared reason in its
``missing_rules`` (which the error for the missing rule quotes).  A declared reason next to
a rule that exists is stale and fails too.

The second proves the "add a primitive" checklist of docs/architecture.md: a new
elementwise primitive defined here, in a test module, with one block of rules and one
lowering entry, works under eager, jit, grad, vmap and the IR printer without any edit to
``interpreters/``.  Its values are checked against NumPy, its derivative against the
analytic one and finite differences, its batching against a Python loop.
"""
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform._src.interpreters import ad, batching, core
from xform._src.lowering import mlir
from xform._src.primitives._rules import defjvp, defvectorized, elementwise_aval

KINDS = ("jvp", "batching", "lowering")


def _tables():
    return {"jvp": ad.jvp_rules, "batching": batching.batch_rules,
            "lowering": mlir.sync_rules()}


def test_every_primitive_has_its_rules_or_a_reason():
    tables = _tables()
    from xform.extend.core import Primitive as UserPrimitive
    # xform's catalogue; primitives made with xform.extend.core.Primitive (by a test or
    # a library) carry the rules their author registered
    prims = [p for p in core.abstract_eval_rules if type(p) is not UserPrimitive]
    assert len(prims) > 150   # the catalogue is loaded
    problems = []
    for p in prims:
        if p not in core.impl_rules:
            problems.append(f"{p.name}: no eager implementation")
        for kind in KINDS:
            has = p in tables[kind]
            why = p.missing_rules.get(kind)
            if not has and not why:
                problems.append(f"{p.name}: no {kind} rule and no reason in missing_rules")
            if has and why:
                problems.append(f"{p.name}: has a {kind} rule but declares it missing ({why})")
        unknown = set(p.missing_rules) - set(KINDS)
        if unknown:
            problems.append(f"{p.name}: unknown rule kinds in missing_rules: {sorted(unknown)}")
    assert not problems, "\n".join(problems)


def test_declared_reasons_reach_the_user():
    jvp_gap = next(p for p in core.abstract_eval_rules if "jvp" in p.missing_rules
                   and p.name == "nextafter")
    with pytest.raises(NotImplementedError, match="piecewise constant"):
        xform.grad(lambda x: xform.lax.nextafter(x, 2.0))(1.0)
    assert jvp_gap.missing_rules["jvp"]


# ------------------------------------------------ the checklist, followed by a test module


@pytest.fixture
def cube():
    """A new elementwise primitive, registered the way docs/architecture.md says (its
    block of rules and its lowering entry), and unregistered afterwards so the catalogue
    walks of other tests never see it."""
    cube_p = core.Primitive("cube_for_checklist")
    cube_p.def_abstract_eval(lambda x: elementwise_aval("cube_for_checklist", x))
    cube_p.def_impl(lambda x: np.asarray(x * x * x, dtype=x.dtype))
    defjvp(cube_p, lambda t, x: t * 3.0 * x * x)
    defvectorized(cube_p)

    @mlir.register(cube_p)
    def _cube_lowering(ctx, eqn, x):
        sq = ctx.op1("stablehlo.multiply", [x, x], ctx.out_avals[0])
        return [ctx.op1("stablehlo.multiply", [sq, x], ctx.out_avals[0])]

    yield lambda x: cube_p.bind(xnp.asarray(x))
    for table in (core.abstract_eval_rules, core.impl_rules, ad.jvp_rules,
                  batching.batch_rules, mlir.lowering_rules):
        table.pop(cube_p, None)


def test_checklist_primitive_everywhere(cube):
    x = np.linspace(-2, 2, 7).astype(np.float32)
    want = x ** 3
    np.testing.assert_allclose(np.asarray(cube(x)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(xform.jit(cube)(x)), want, rtol=1e-6)
    g = xform.vmap(xform.grad(lambda v: cube(v)))(x)
    np.testing.assert_allclose(np.asarray(g), 3 * x ** 2, rtol=1e-5)
    gj = xform.jit(xform.vmap(xform.grad(cube)))(x)
    np.testing.assert_allclose(np.asarray(gj), 3 * x ** 2, rtol=1e-5)
    x64 = np.float64(0.7)
    eps = 1e-3
    fd = (float(cube(np.float32(x64 + eps))) - float(cube(np.float32(x64 - eps)))) / (2 * eps)
    assert abs(float(xform.grad(cube)(np.float32(x64))) - fd) < 1e-2
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    looped = np.stack([np.asarray(cube(row)) for row in m])
    np.testing.assert_allclose(np.asarray(xform.vmap(cube)(m)), looped, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(xform.vmap(cube, in_axes=1)(m)), looped.T, rtol=1e-6)
    text = str(xform.make_jaxpr(cube)(x))
    assert "cube_for_checklist" in text
    assert "stablehlo.multiply" in xform.jit(cube).lower(x).as_text()

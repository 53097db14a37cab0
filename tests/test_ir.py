"""The IR: pretty-printer, type checker and evaluator on hand-built programs."""
import numpy as np
import pytest

import xform  # noqa: F401  (registers primitives)
from xform._src.interpreters import core, errors, ir, staging
from xform._src.interpreters.core import ShapedArray
from xform._src.interpreters.ir import ClosedJaxpr, Eqn, Jaxpr, Literal, Var
from xform._src.primitives.elementwise import add_p, mul_p, neg_p, sin_p

F32_3 = ShapedArray((3,), np.float32)


def _program():
    """{ lambda c; x. let y = sin x; z = mul y c; w = add z 2.0 in (w, y) }"""
    c, x = Var(F32_3), Var(F32_3)
    y, z, w = Var(F32_3), Var(F32_3), Var(F32_3)
    two = Literal(np.float32(2.0), ShapedArray((), np.float32))
    two_b = Var(F32_3)
    from xform._src.primitives import structural
    eqns = [
        Eqn(sin_p, [x], [y], {}),
        Eqn(mul_p, [y, c], [z], {}),
        Eqn(structural.broadcast_in_dim_p, [two], [two_b],
            {"shape": (3,), "broadcast_dimensions": (), "sharding": None}
            if "sharding" in _bcast_params() else {"shape": (3,), "broadcast_dimensions": ()}),
        Eqn(add_p, [z, two_b], [w], {}),
    ]
    return Jaxpr([c], [x], [w, y], eqns)


def _bcast_params():
    from xform._src.primitives import structural
    t = staging.trace_to_jaxpr(
        lambda: [structural.broadcast_in_dim_p.bind(np.float32(1), shape=(2,),
                                                    broadcast_dimensions=())], [])
    return t[0].eqns[0].params


def test_evaluator_matches_numpy():
    jaxpr = _program()
    c = np.array([1.0, 2.0, 3.0], np.float32)
    x = np.array([0.1, 0.2, 0.3], np.float32)
    w, y = ir.eval_jaxpr(jaxpr, [core.Array(c)], core.Array(x))
    np.testing.assert_allclose(np.asarray(y), np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(w), np.sin(x) * c + 2.0, rtol=1e-6)


def test_closed_jaxpr_call_and_arity_error():
    closed = ClosedJaxpr(_program(), [core.Array(np.ones(3, np.float32))])
    out = closed(core.Array(np.zeros(3, np.float32)))
    np.testing.assert_allclose(np.asarray(out[0]), 2.0)
    with pytest.raises(TypeError, match="expects 1 arguments, got 2"):
        closed(1.0, 2.0)


def test_printer_shape():
    text = ir.pp_jaxpr(_program())
    lines = text.splitlines()
    assert lines[0] == "{ lambda a:f32[3]; b:f32[3]. let"
    assert lines[1].strip() == "c:f32[3] = sin b"
    assert lines[2].strip() == "d:f32[3] = mul c a"
    assert "2.0:f32[]" in lines[3]
    assert lines[-1].strip() == "in (f, c) }"


def test_printer_nests_subprograms():
    inner = _program()
    p = core.Primitive("fake_call", multiple_results=True)
    outer_x = Var(F32_3)
    outs = [Var(F32_3), Var(F32_3)]
    outer = Jaxpr([], [outer_x], outs,
                  [Eqn(p, [outer_x], outs, {"jaxpr": ClosedJaxpr(inner, [np.ones(3, np.float32)])})])
    text = ir.pp_jaxpr(outer)
    assert "fake_call[jaxpr={ lambda" in text.replace("\n", " ").replace("  ", " ") or \
        "jaxpr={ lambda" in text
    assert text.count("{ lambda") == 2


def test_type_checker_accepts_good_program():
    ir.check_jaxpr(_program())


def test_type_checker_rejects_use_before_def():
    x, y, z = Var(F32_3), Var(F32_3), Var(F32_3)
    bad = Jaxpr([], [x], [z], [Eqn(mul_p, [x, y], [z], {}), Eqn(neg_p, [x], [y], {})])
    with pytest.raises(errors.JaxprTypeError, match="used before it is defined"):
        ir.check_jaxpr(bad)


def test_type_checker_rejects_wrong_output_type():
    x = Var(F32_3)
    y = Var(ShapedArray((4,), np.float32))
    bad = Jaxpr([], [x], [y], [Eqn(sin_p, [x], [y], {})])
    with pytest.raises(errors.JaxprTypeError, match=r"declared f32\[4\] but the rule gives f32\[3\]"):
        ir.check_jaxpr(bad)


def test_type_checker_rejects_double_definition():
    x = Var(F32_3)
    bad = Jaxpr([], [x], [x], [Eqn(sin_p, [x], [x], {})])
    with pytest.raises(errors.JaxprTypeError, match="defined twice"):
        ir.check_jaxpr(bad)


def test_type_checker_rejects_ill_typed_primitive():
    x = Var(F32_3)
    y = Var(ShapedArray((3,), np.int32))
    z = Var(F32_3)
    bad = Jaxpr([], [x, y], [z], [Eqn(add_p, [x, y], [z], {})])
    with pytest.raises(errors.JaxprTypeError, match="add"):
        ir.check_jaxpr(bad)


def test_staging_hoists_constants_and_inlines_scalars():
    c = core.Array(np.arange(3, dtype=np.float32))
    jaxpr, consts = staging.trace_to_jaxpr(
        lambda x: [add_p.bind(mul_p.bind(x, c), x)], [F32_3])
    assert len(jaxpr.constvars) == 1 and consts[0] is c
    ir.check_jaxpr(jaxpr)
    out = ir.eval_jaxpr(jaxpr, consts, core.Array(np.ones(3, np.float32)))[0]
    np.testing.assert_allclose(np.asarray(out), np.arange(3) + 1.0)


def test_evaluating_a_program_keeps_weak_literals_weak():
    """``c * 2.0`` with a weak ``c`` is weak in JAX; re-evaluating the staged program (as
    every program-to-program rule does) must not turn the literal 2.0 strong."""
    import jax
    from xform import lax
    weak = core.Array(np.float32(1.0), weak_type=True)
    jaxpr, consts = staging.trace_to_jaxpr(lambda c: [mul_p.bind(c, 2.0)],
                                           [ShapedArray((), np.float32, True)])
    assert jaxpr.eqns[0].invars[1].aval.weak_type
    out = ir.eval_jaxpr(jaxpr, consts, weak)[0]
    assert out.weak_type
    ours = lax.scan(lambda c, _: (c * 2, c), 1.0, None, length=4)
    theirs = jax.lax.scan(lambda c, _: (c * 2, c), 1.0, None, length=4)
    assert [o.weak_type for o in ours] == [t.weak_type for t in theirs]

"""JAX's extension API on xform's engine: ``xform.extend``, ``xform.core``,
``xform.interpreters.{ad,batching,mlir,partial_eval}``, ``xform.api_util`` and the
``xform.lax.*_p`` primitive objects.

The centre is JAX's documented recipe for a new primitive ("JAX Internals: primitives",
``multiply_add`` with ``def_impl``, ``def_abstract_eval``, a JVP, a transpose, a batching
rule and a ``mlir.lower_fun`` lowering), written once and run unchanged against JAX's
modules and against xform's, under eager, jit, jvp, grad, vmap and their compositions,
with the results compared.
"""
import importlib
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jax
import xform


def _namespace(which):
    if which == "jax":
        mods = ("jax", "jax.lax", "jax.core", "jax.extend.core", "jax.interpreters.ad",
                "jax.interpreters.batching", "jax.interpreters.mlir")
    else:
        mods = ("xform", "xform.lax", "xform.core", "xform.extend.core",
                "xform.interpreters.ad", "xform.interpreters.batching",
                "xform.interpreters.mlir")
    J, lax, jcore, core, ad, batching, mlir = (importlib.import_module(m) for m in mods)
    return types.SimpleNamespace(J=J, lax=lax, jcore=jcore, core=core, ad=ad,
                                 batching=batching, mlir=mlir)


def _recipe(which, name="multiply_add"):
    """JAX's recipe, against ``which``'s modules; returns (namespace, prim, square_add)."""
    ns = _namespace(which)
    lax, ad, batching, mlir = ns.lax, ns.ad, ns.batching, ns.mlir
    p = ns.core.Primitive(name)

    def multiply_add_prim(x, y, z):
        return p.bind(x, y, z)

    def square_add_prim(a, b):
        return multiply_add_prim(a, a, b)

    def impl(x, y, z):
        return np.add(np.multiply(x, y), z)
    p.def_impl(impl)

    def abstract_eval(xs, ys, zs):
        assert xs.shape == ys.shape == zs.shape
        return ns.jcore.ShapedArray(xs.shape, xs.dtype)
    p.def_abstract_eval(abstract_eval)

    mlir.register_lowering(
        p, mlir.lower_fun(lambda x, y, z: lax.add(lax.mul(x, y), z), multiple_results=False),
        platform="cpu")

    def value_and_jvp(arg_values, arg_tangents):
        x, y, z = arg_values
        xt, yt, zt = arg_tangents
        primal_out = multiply_add_prim(x, y, z)

        def make_zero(tan):
            return lax.full_like(x, 0) if type(tan) is ad.Zero else tan
        out_t = multiply_add_prim(make_zero(xt), y,
                                  multiply_add_prim(x, make_zero(yt), make_zero(zt)))
        return primal_out, out_t
    ad.primitive_jvps[p] = value_and_jvp

    def transpose(ct, x, y, z):
        if not ad.is_undefined_primal(x):
            assert ad.is_undefined_primal(y)
            ct_y = ad.Zero(y.aval) if type(ct) is ad.Zero else \
                multiply_add_prim(x, ct, lax.full_like(x, 0))
            return None, ct_y, ct
        assert ad.is_undefined_primal(x)
        ct_x = ad.Zero(x.aval) if type(ct) is ad.Zero else \
            multiply_add_prim(ct, y, lax.full_like(y, 0))
        return ct_x, None, ct
    ad.primitive_transposes[p] = transpose

    def batch(vector_arg_values, batch_axes):
        # the recipe's rule, generalised to operands batched differently (or not at all,
        # as the zeros the JVP makes), so that vmap of grad works too
        size = next(v.shape[d] for v, d in zip(vector_arg_values, batch_axes)
                    if d is not None)
        vals = [batching.bdim_at_front(v, d, size)
                for v, d in zip(vector_arg_values, batch_axes)]
        return multiply_add_prim(*vals), 0
    batching.primitive_batchers[p] = batch
    return ns, p, square_add_prim


@pytest.fixture(scope="module")
def recipes():
    return {w: _recipe(w) for w in ("jax", "xform")}


def _eq(x, j):
    jl, xl = jax.tree.leaves(j), xform.tree.leaves(x)
    assert len(jl) == len(xl)
    for a, b in zip(xl, jl):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
        assert np.asarray(a).shape == np.asarray(b).shape


TRANSFORMS = {
    "eager": lambda J, f: f,
    "jit": lambda J, f: J.jit(f),
    "jit_static": lambda J, f: J.jit(f, static_argnums=1),
    "grad": lambda J, f: J.grad(f),
    "grad_argnums": lambda J, f: J.grad(f, argnums=(0, 1)),
    "jit_grad": lambda J, f: J.jit(J.grad(f)),
    "grad_jit": lambda J, f: J.grad(J.jit(f)),
    "jvp": lambda J, f: (lambda a, b: J.jvp(f, (a, b), (1.0, 1.0))),
    "jit_jvp": lambda J, f: J.jit(lambda a, b: J.jvp(f, (a, b), (1.0, 1.0))),
    "vjp": lambda J, f: (lambda a, b: J.vjp(f, a, b)[1](2.0)),
    "jacfwd": lambda J, f: J.jacfwd(f, argnums=(0, 1)),
    "jacrev": lambda J, f: J.jacrev(f, argnums=(0, 1)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_recipe_scalars_match_jax(recipes, name):
    outs = {}
    for which, (ns, _, square_add) in recipes.items():
        outs[which] = TRANSFORMS[name](ns.J, square_add)(np.float32(2.0), np.float32(10.0))
    _eq(outs["xform"], outs["jax"])


def test_recipe_documented_values(recipes):
    ns, _, square_add = recipes["xform"]
    J = ns.J
    assert square_add(2., 10.) == 14.
    assert J.jit(lambda x, y: square_add(x, y))(2., 10.) == 14.
    assert J.jit(lambda x, y: square_add(x, y), static_argnums=1)(2., 10.) == 14.
    assert J.jvp(square_add, (2., 10.), (1., 1.)) == (14., 5.)
    assert J.jit(lambda a, t: J.jvp(square_add, a, t))((2., 10.), (1., 1.)) == (14., 5.)
    assert J.grad(square_add)(2., 10.) == 4.
    assert J.jit(J.grad(square_add))(2., 10.) == 4.
    np.testing.assert_allclose(J.vmap(square_add, in_axes=0, out_axes=0)(
        np.array([2., 3.]), np.array([10., 20.])), [14., 29.])
    np.testing.assert_allclose(J.jit(J.vmap(square_add, in_axes=0, out_axes=0))(
        np.array([2., 3.]), np.array([10., 20.])), [14., 29.])


def test_recipe_missing_rules_raise_not_implemented():
    ns = _namespace("xform")
    p = ns.core.Primitive("multiply_add_bare")
    with pytest.raises(NotImplementedError, match="multiply_add_bare"):
        p.bind(2., 2., 10.)
    p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    assert p.bind(2., 2., 10.) == 14.
    with pytest.raises(NotImplementedError, match="multiply_add_bare"):
        xform.jit(lambda x: p.bind(x, x, x))(2.)
    p.def_abstract_eval(lambda x, y, z: ns.jcore.ShapedArray(x.shape, x.dtype))
    # no lowering rule: jit interprets the program with the eager rule
    assert xform.jit(lambda x: p.bind(x, x, x))(2.) == 6.
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'multiply_add_bare'"):
        xform.grad(lambda x: p.bind(x, x, x))(2.)
    with pytest.raises(NotImplementedError, match="Batching rule for 'multiply_add_bare'"):
        xform.vmap(lambda x: p.bind(x, x, x))(np.ones(3, np.float32))


def test_lower_fun_is_compiled_not_interpreted(recipes):
    _, _, square_add = recipes["xform"]
    text = xform.jit(square_add).lower(np.float32(2.0), np.float32(1.0)).as_text()
    assert "stablehlo.multiply" in text and "stablehlo.add" in text
    assert "interpreted eagerly" not in text


def test_lower_fun_result_must_match_abstract_eval():
    ns = _namespace("xform")
    p = ns.core.Primitive("bad_lowering")
    p.def_impl(lambda x: x)
    p.def_abstract_eval(lambda x: x)
    ns.mlir.register_lowering(p, ns.mlir.lower_fun(lambda x: ns.lax.convert_element_type(
        x, np.int32), multiple_results=False))
    with pytest.raises(TypeError, match="abstract evaluation rule promises"):
        xform.jit(lambda x: p.bind(x)).lower(np.float32(1.0)).as_text()


def test_mlir_builder_rules_fall_back_to_the_eager_rule():
    ns = _namespace("xform")
    p = ns.core.Primitive("builder_rule")
    p.def_impl(lambda x: np.multiply(x, 3))
    p.def_abstract_eval(lambda x: x)

    def builder_rule(ctx, x):          # JAX's MLIR builder style: cannot run on xform
        raise AssertionError("never called")
    ns.mlir.register_lowering(p, builder_rule)
    assert "MLIR builder" in p.missing_rules["lowering"]
    assert xform.jit(lambda x: p.bind(x) + 1)(np.float32(2.0)) == 7.0
    for name in ("ir", "ir_constant", "aval_to_ir_type"):
        with pytest.raises(AttributeError, match="MLIR builder"):
            getattr(ns.mlir, name)


SHAPES = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)


@settings(max_examples=20, deadline=None)
@given(shape=SHAPES, batch=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_recipe_arrays_match_jax(recipes, shape, batch, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((batch,) + shape).astype(np.float32)
    b = rng.standard_normal((batch,) + shape).astype(np.float32)
    outs = {}
    for which, (ns, _, square_add) in recipes.items():
        J = ns.J
        loss = lambda x, y: square_add(x, y).sum()  # noqa: E731
        outs[which] = (
            square_add(a, b),
            J.jit(square_add)(a, b),
            J.vmap(square_add)(a, b),
            J.vmap(square_add, in_axes=(0, None))(a, b[0]),
            J.jit(J.vmap(square_add, in_axes=(None, 0)))(a[0], b),
            J.grad(loss, argnums=(0, 1))(a, b),
            J.jit(J.grad(loss))(a, b),
            J.vmap(J.grad(lambda x, y: square_add(x, y).sum()))(a, b),
            J.jvp(square_add, (a, b), (b, a)),
            J.vmap(lambda x, y: J.jvp(square_add, (x, y), (y, x)))(a, b),
            J.grad(lambda x: J.vmap(square_add)(x, b).sum())(a),
        )
    _eq(outs["xform"], outs["jax"])


def test_recipe_programs_hold_the_primitive(recipes):
    ns, p, square_add = recipes["xform"]
    jaxpr = xform.make_jaxpr(square_add)(2.0, 1.0)
    assert [e.primitive for e in jaxpr.eqns] == [p]
    assert isinstance(jaxpr, ns.core.ClosedJaxpr) and isinstance(jaxpr.jaxpr, ns.core.Jaxpr)
    eqn = jaxpr.eqns[0]
    assert isinstance(eqn, ns.core.JaxprEqn)
    assert all(isinstance(v, ns.core.Var) for v in eqn.invars)
    assert ns.core.jaxpr_as_fun(jaxpr)(2.0, 1.0)[0] == 5.0
    assert ns.jcore.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, 3.0, 1.0)[0] == 10.0
    grad_jaxpr = xform.make_jaxpr(xform.grad(square_add))(2.0, 1.0)
    assert p in [e.primitive for e in grad_jaxpr.eqns]


# ------------------------------------------------------------ multiple results, old APIs


def test_multiple_results_and_axis_primitive_batchers():
    ns = _namespace("xform")
    lax, ad, batching, mlir = ns.lax, ns.ad, ns.batching, ns.mlir
    p = ns.core.Primitive("sincos_pair")
    p.multiple_results = True
    p.def_impl(lambda x: (np.sin(x), np.cos(x)))
    p.def_abstract_eval(lambda x: [x, x])
    mlir.register_lowering(p, mlir.lower_fun(lambda x: (lax.sin(x), lax.cos(x))))

    def jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        s, c = p.bind(x)
        return (s, c), (c * t, -s * t)
    ad.primitive_jvps[p] = jvp
    seen = []

    def batch(axis_size, axis_name, trace_type, vals, dims):
        seen.append(axis_size)
        return p.bind(*vals), [dims[0], dims[0]]
    batching.axis_primitive_batchers[p] = batch
    x = np.linspace(0.1, 1.0, 5, dtype=np.float32)
    f = lambda v: sum(o.sum() for o in p.bind(v))  # noqa: E731
    jf = lambda v: (jax.numpy.sin(v) + jax.numpy.cos(v)).sum()  # noqa: E731
    np.testing.assert_allclose(xform.jit(f)(x), jf(x), rtol=1e-6)
    np.testing.assert_allclose(xform.grad(f)(x), jax.grad(jf)(x), rtol=1e-6)
    np.testing.assert_allclose(xform.jit(xform.vmap(xform.grad(f)))(x[:, None]),
                               jax.vmap(jax.grad(jf))(x[:, None]), rtol=1e-6)
    assert seen and seen[-1] == 5


def test_ad_helpers_match_jax():
    for which in ("jax", "xform"):
        ns = _namespace(which)
        p = ns.core.Primitive(f"scale3_{which}")
        p.def_impl(lambda x: np.multiply(x, 3))
        p.def_abstract_eval(lambda x: x)
        ns.ad.deflinear(p, lambda ct: [p.bind(ct)])
        ns.batching.defvectorized(p)
        ns.mlir.register_lowering(p, ns.mlir.lower_fun(lambda x: x * 3,
                                                       multiple_results=False))
        q = ns.core.Primitive(f"sq_{which}")
        q.def_impl(lambda x: np.multiply(x, x))
        q.def_abstract_eval(lambda x: x)
        ns.ad.defjvp(q, lambda g, x: 2 * x * g)
        ns.batching.defvectorized(q)
        f = lambda x: q.bind(p.bind(x)).sum()  # noqa: E731
        x = np.arange(1.0, 4.0, dtype=np.float32)
        res = (ns.J.grad(f)(x), ns.J.jit(ns.J.vmap(ns.J.grad(f)))(x[None]),
               ns.J.jvp(f, (x,), (x,)))
        if which == "jax":
            want = res
        else:
            _eq(res, want)


# ------------------------------------------------------------ isinstance and names


def test_tracers_are_core_tracers():
    seen = []

    def f(x):
        seen.append(isinstance(x, xform.core.Tracer))
        return x * 2
    xform.jit(f)(1.0)
    xform.grad(f)(1.0)
    xform.vmap(f)(np.ones(2))
    xform.jvp(f, (1.0,), (1.0,))
    assert seen == [True, True, True, True]
    assert not isinstance(xform.numpy.ones(2), xform.core.Tracer)
    assert isinstance(xform.numpy.ones(2), xform.core.Value)
    aval = xform.core.ShapedArray((2,), np.float32)
    assert isinstance(aval, xform.core.AbstractValue)
    assert aval.to_tangent_aval() == xform.core.ShapedArray((2,), np.float32)
    assert xform.core.ShapedArray((), np.int32).to_tangent_aval().dtype == \
        jax.core.ShapedArray((), np.int32).to_tangent_aval().dtype
    assert isinstance(xform.lax.add_p, xform.extend.core.Primitive)


def test_jax_core_surface():
    jax_names = {n for n in dir(jax.core) if not n.startswith("_")}
    assert jax_names <= set(dir(xform.core)), jax_names - set(dir(xform.core))
    for name in ("get_aval", "mapped_aval", "TraceTag", "subjaxprs"):
        with pytest.raises(AttributeError) as jerr:
            getattr(jax.core, name)
        with pytest.raises(AttributeError) as xerr:
            getattr(xform.core, name)
        assert str(xerr.value) == str(jerr.value)
    assert xform.core.concrete_or_error(int, xform.numpy.int32(3)) == 3
    with pytest.raises(xform.errors.ConcretizationTypeError):
        xform.jit(lambda x: xform.core.concrete_or_error(int, x, "a test"))(1)
    assert xform.core.valid_jaxtype(np.ones(2)) and not xform.core.valid_jaxtype("a")


def test_extend_core_names():
    jax_names = {n for n in dir(jax.extend.core) if not n.startswith("_")
                 and not n.endswith("_DO_NOT_USE")}
    missing = jax_names - set(dir(xform.extend.core))
    assert not missing, missing
    ec = xform.extend.core
    aval = ec.unmapped_aval(4, 1, xform.core.ShapedArray((2, 3), np.float32))
    assert aval.shape == jax.extend.core.unmapped_aval(
        4, 1, jax.core.ShapedArray((2, 3), np.float32)).shape
    assert ec.mapped_aval(4, 1, aval).shape == (2, 3)
    assert ec.primal_dtype_to_tangent_dtype(np.int32) == \
        jax.extend.core.primal_dtype_to_tangent_dtype(np.int32)
    outer = ec.get_opaque_trace_state()
    inner = []
    xform.jit(lambda x: inner.append(ec.get_opaque_trace_state()) or x)(1.0)
    assert outer == ec.get_opaque_trace_state() and inner[0] != outer
    top = []
    xform.vmap(lambda x: top.append(ec.find_top_trace([x, 1.0])) or x)(np.ones(2))
    assert isinstance(top[0], xform.core.Trace) and top[0].name == "vmap"


# ------------------------------------------------------------ *_p primitive objects


def test_lax_primitives_are_the_objects_xform_binds():
    lax, xnp = xform.lax, xform.numpy
    x = np.ones((3, 3), np.float32)
    cases = [
        (lambda v: lax.sin(v), lax.sin_p),
        (lambda v: lax.add(v, v), lax.add_p),
        (lambda v: v * v, lax.mul_p),
        (lambda v: lax.dot_general(v, v, (((1,), (0,)), ((), ()))), lax.dot_general_p),
        (lambda v: v.sum(), lax.reduce_sum_p),
        (lambda v: lax.exp(v), lax.exp_p),
        (lambda v: lax.stop_gradient(v), lax.stop_gradient_p),
        (lambda v: lax.scan(lambda c, r: (c + r, r), v[0], v)[0], lax.scan_p),
        (lambda v: lax.cond(True, lambda a: a + 1, lambda a: a - 1, v), lax.cond_p),
        (lambda v: lax.while_loop(lambda c: c[0, 0] < 3, lambda c: c + 1, v), lax.while_p),
        (lambda v: xform.jit(lambda a: a)(v), xform.extend.core.primitives.jit_p),
        (lambda v: xnp.transpose(v), lax.transpose_p),
        (lambda v: lax.select_n(v > 0, v, v), lax.select_n_p),
    ]
    for f, prim in cases:
        jaxpr = xform.make_jaxpr(f)(x)
        assert prim in [e.primitive for e in jaxpr.eqns], (prim, jaxpr)
        assert any(e.primitive is prim for e in jaxpr.eqns)


def test_lax_primitive_names_follow_jax():
    from xform._src.interpreters import core
    from xform.lax import _primitives
    catalogue = set(core.abstract_eval_rules)
    for name in _primitives.__all__:
        ours = getattr(xform.lax, name)
        assert ours in catalogue, name                 # an object the engine has rules for
        theirs = getattr(jax.lax, name)
        assert ours.name == theirs.name, (name, ours.name, theirs.name)
    jax_prims = importlib.import_module("jax.extend.core.primitives")
    for name in dir(xform.extend.core.primitives):
        if name.endswith("_p"):
            ours = getattr(xform.extend.core.primitives, name)
            # call_p never reaches an interpreter: its bind stages and binds closed_call_p
            assert ours in catalogue or name == "call_p", name
            assert hasattr(jax_prims, name), name
    assert len(_primitives.__all__) >= 130


# ------------------------------------------------------------ linear_util, api_util, pe


def test_flatten_and_partial_eval_as_flax_uses_them():
    """flax's ``jax_utils``/``axes_scan`` pattern: wrap_init + flatten_fun_nokwargs +
    trace_to_jaxpr_nounits to learn a function's output shapes."""
    results = {}
    for which in ("jax", "xform"):
        lu = importlib.import_module(f"{which}.extend.linear_util")
        api_util = importlib.import_module(f"{which}.api_util")
        pe = importlib.import_module(f"{which}.interpreters.partial_eval")
        core = importlib.import_module(f"{which}.core")
        tree = importlib.import_module(f"{which}.tree_util")
        J = importlib.import_module(which)

        def f(x, y):
            return {"s": x.sum() * y[0], "t": (x @ x.T, y)}
        args = (np.ones((2, 3), np.float32), np.arange(4.0, dtype=np.float32))
        flat, in_tree = tree.tree_flatten(args)
        dbg = api_util.debug_info("test", f, args, {})
        f_flat, out_tree = api_util.flatten_fun_nokwargs(lu.wrap_init(f, debug_info=dbg),
                                                         in_tree)
        in_pvals = [pe.PartialVal.unknown(core.ShapedArray(x.shape, x.dtype)) for x in flat]
        jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(f_flat, in_pvals)
        shapes = [(pv.get_aval().shape, str(pv.get_aval().dtype)) for pv in out_pvals]
        f_flat2, _ = api_util.flatten_fun_nokwargs(lu.wrap_init(f, debug_info=dbg), in_tree)
        known = pe.trace_to_jaxpr_nounits(
            f_flat2, [pe.PartialVal.known(flat[0]), in_pvals[1]])[1]
        results[which] = (shapes, str(out_tree()).replace("PyTreeDef", ""),
                          [pv.is_known() for pv in known], J.tree_util.tree_structure(
                              {"s": 0, "t": (0, 0)}).num_leaves)
    assert results["xform"] == results["jax"]


def test_linear_util_transformations():
    lu = xform.extend.linear_util

    @lu.transformation
    def scale(k, *args):
        out = yield tuple(a * k for a in args), {}
        yield out + 1

    @lu.transformation_with_aux
    def count(*args):
        out = yield args, {}
        yield out, len(args)

    @lu.transformation2
    def negate(f, *args):
        return -f(*args)

    w = lu.wrap_init(lambda a, b, c=0: a + b + c, {"c": 10})
    w2, aux = count(scale(negate(w), 2))
    assert w2.call_wrapped(1, 2) == -(2 + 4 + 10) + 1
    assert aux() == 2


def test_dce_jaxpr():
    jaxpr = xform.make_jaxpr(lambda a, b: (a * 2, b + 1))(1.0, 2.0).jaxpr
    pruned, used = xform.interpreters.partial_eval.dce_jaxpr(jaxpr, [True, False])
    assert len(pruned.outvars) == 1 and used == [True, False]
    assert [e.primitive for e in pruned.eqns] == [xform.lax.mul_p]


# ------------------------------------------------------------ under xform.compat.alias_jax


import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _run_aliased(code, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), capture_output=True,
                          text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_alias_serves_the_extension_api_and_refuses_other_internals():
    out = _run_aliased(r'''
import builtins, json
import xform
orig_import = builtins.__import__
xform.compat.alias_jax()
import jax, jax.core, jax.extend.core, jax.interpreters.ad, jax.interpreters.batching
import jax.interpreters.mlir, jax.interpreters.partial_eval, jax.api_util
import jax.extend.linear_util as lu
from jax.extend.core.primitives import jit_p
from jax.extend.core import Primitive, ClosedJaxpr
import jax._src.traceback_util as tu
from jax._src import dtypes, core as src_core
from jax._src.tree_util import _registry
import jax._src.dispatch
res = {
  "core": jax.core is xform.core, "ext": jax.extend.core is xform.extend.core,
  "ad": jax.interpreters.ad is xform.interpreters.ad, "lu": lu is xform.extend.linear_util,
  "api_util": jax.api_util is xform.api_util, "prim": Primitive is xform.extend.core.Primitive,
  "jit_p": jit_p is xform.extend.core.primitives.jit_p,
  "tu": tu.__name__, "dtypes": dtypes.TypePromotionError is xform.dtypes.TypePromotionError,
  "src_core": src_core.Tracer is xform.core.Tracer, "registry": isinstance(_registry, dict),
  "dispatch": jax._src.dispatch.wait_for_tokens() is None,
  "lax_p": jax.lax.add_p is xform.lax.add_p,
}
errors = {}
for stmt in ("from jax._src import earray", "import jax._src.literals",
             "from jax._src.interpreters import pxla", "from jax.extend import backend",
             "import jax._src.api"):
    try:
        exec(stmt, {"__name__": "some_library"})
        errors[stmt] = None
    except ImportError as e:
        errors[stmt] = str(e)
res["errors"] = errors
# IFRT programs: importable (libraries import them at module level), refused when used
from jax.extend import ifrt_programs
from jax.interpreters import pxla
refused = []
for use in (lambda: ifrt_programs.ifrt_programs.make_plugin_program("p"),
            lambda: pxla.global_avals_to_results_handler((), (), True)):
    try:
        use()
        refused.append(False)
    except NotImplementedError as e:
        refused.append("IFRT" in str(e))
res["ifrt_refused"] = refused == [True, True]
# xform's own runtime keeps working under the alias
res["jit"] = float(jax.jit(lambda x: x * 2)(3.0))
xform.compat.unalias_jax()
res["restored"] = builtins.__import__ is orig_import
print(json.dumps(res))
''')
    res = json.loads(out.strip().splitlines()[-1])
    errors = res.pop("errors")
    assert res.pop("tu") == "xform._jax_src.traceback_util"
    assert res.pop("jit") == 6.0
    assert all(res.values()), res
    for stmt, msg in errors.items():
        assert msg is not None, stmt
        # names what is missing
        assert "jax._src." in msg or stmt.split()[-1] in msg, (stmt, msg)
    assert "jax._src.earray is an internal module of JAX" in errors["from jax._src import earray"]
    assert "aliased to xform" in errors["import jax._src.api"]
    assert "jax._src.literals" in errors["import jax._src.literals"]


# library -> the tests/ecosystem script run (under the alias) before the check, so what
# the library reaches while running is checked too, not only what it imports
LIBRARIES = {"equinox": None, "haiku": None, "flax.linen": None, "chex": None,
             "numpyro": "numpyro_svi.py", "optax": "optax_step.py",
             "orbax.checkpoint": "orbax_roundtrip.py", "flax.nnx": "flax_nnx_step.py"}

_LEAK_CHECK = r'''
import importlib.util, json, os, sys, types
import xform
xform.compat.alias_jax()
lib = sys.argv[1]
importlib.import_module(lib)
if SCRIPT:
    import runpy
    sys.path.insert(0, os.path.dirname(SCRIPT))
    runpy.run_path(SCRIPT, run_name="__main__")
jax_dir = os.path.join(os.path.dirname(os.path.dirname(importlib.util.find_spec("jaxlib").origin)), "jax")
top = lib.split(".")[0]
leaks, checked = set(), 0
for name, mod in list(sys.modules.items()):
    if mod is None or not (name == top or name.startswith(top + ".")):
        continue
    checked += 1
    for k, v in list(vars(mod).items()):
        if isinstance(v, types.ModuleType):
            f = getattr(v, "__file__", None) or ""
            if f.startswith(jax_dir + os.sep):
                leaks.add(f"{name}.{k} -> real module {v.__name__}")
        else:
            m = getattr(v, "__module__", None)
            if isinstance(m, str) and m.startswith(("jax._src", "jax.extend", "jax.interpreters",
                                                    "jax.core", "jax.api_util")):
                leaks.add(f"{name}.{k} -> real {m}")
print(json.dumps({"checked": checked, "leaks": sorted(leaks)}))
'''


@pytest.mark.parametrize("lib", LIBRARIES)
def test_no_real_jax_internals_reachable_from_aliased_library(lib):
    """After importing the library under the alias, none of its modules holds a real JAX
    module (``jax._src.*``, ``jax.extend.*``, ``jax.core``, ...) or an object defined in
    JAX's tracing internals: what it reached of JAX's internals is xform's."""
    pytest.importorskip(lib.split(".")[0])
    script = LIBRARIES[lib] and str(ROOT / "tests" / "ecosystem" / LIBRARIES[lib])
    code = _LEAK_CHECK.replace("sys.argv[1]", repr(lib)).replace("SCRIPT", repr(script))
    res = json.loads(_run_aliased(code, timeout=900).strip().splitlines()[-1])
    assert res["checked"] > 3
    assert res["leaks"] == []


def test_leak_check_detects_real_jax_modules():
    """The check above can fail: without the alias, equinox holds real JAX internals."""
    pytest.importorskip("equinox")
    code = _LEAK_CHECK.replace("xform.compat.alias_jax()", "").replace(
        "sys.argv[1]", repr("equinox")).replace("SCRIPT", "None")
    res = json.loads(_run_aliased(code).strip().splitlines()[-1])
    assert any("jax._src.traceback_util" in x for x in res["leaks"])


def test_program_and_trace_fields_libraries_read():
    """What interpreters written against JAX read: ``get_bind_params`` (JAX 0.10: the
    params), ``eqn.effects``/``jaxpr.effects``, ``trace.main``, rule arguments as tuples."""
    jaxpr = xform.make_jaxpr(lambda x: xform.numpy.sin(x) * 2)(1.0)
    for eqn in jaxpr.eqns:
        params = eqn.primitive.get_bind_params(eqn.params)
        assert params == eqn.params and eqn.effects == frozenset()
    assert jaxpr.jaxpr.effects == frozenset()
    # re-binding each equation as JAX-style interpreters do reproduces the program
    env = dict(zip(jaxpr.jaxpr.invars, [np.float32(0.5)]))
    for eqn in jaxpr.eqns:
        args = [env[v] if isinstance(v, xform.extend.core.Var) else v.val for v in eqn.invars]
        env[eqn.outvars[0]] = eqn.primitive.bind(*args, **eqn.primitive.get_bind_params(
            eqn.params))
    np.testing.assert_allclose(env[jaxpr.jaxpr.outvars[0]], 2 * np.sin(np.float32(0.5)))
    mains = []

    def f(x):
        mains.append(xform.extend.core.find_top_trace([x]).main)
        return x * x
    xform.jvp(f, (1.0,), (1.0,))
    xform.jvp(f, (1.0,), (1.0,))
    assert mains[0] is not mains[1] and mains[0] is not None
    ns = _namespace("xform")
    p = ns.core.Primitive("tuple_args")
    p.def_impl(lambda x: x)
    p.def_abstract_eval(lambda x: x)
    seen = []

    def jvp(primals, tangents):
        seen.append((type(primals), type(tangents)))
        return p.bind(*primals), tangents[0]
    ns.ad.primitive_jvps[p] = jvp

    def batch(vals, dims):
        seen.append((type(vals), type(dims)))
        return p.bind(*vals), dims[0]
    ns.batching.primitive_batchers[p] = batch
    assert ns.ad.primitive_jvps[p] is not None and p in ns.ad.primitive_jvps
    xform.vmap(xform.grad(lambda x: p.bind(x)))(np.ones(2, np.float32))
    assert seen and all(t == (tuple, tuple) for t in seen)



def _call_primitive_results(lib):
    """A call of sin(a) * b under every transformation: on xform through closed_call_p /
    call_p bound directly, on JAX (whose call primitives need its internal call tracing
    to bind) by calling the function itself, which is what a call means."""
    jnp = lib.numpy
    f = lambda a, b: jnp.sin(a) * b
    x, y = jnp.arange(3.0), jnp.full(3, 2.0)
    if lib is xform:
        from xform.extend.core.primitives import call_p, closed_call_p
        closed = lib.make_jaxpr(f)(x, y)
        g = lambda a, b: closed_call_p.bind(a, b, call_jaxpr=closed)[0]
        h = lambda a, b: call_p.bind(lambda u, v: [f(u, v)], a, b)[0]
    else:
        g = h = f
    X = jnp.stack([x, x + 1])
    out = {}
    for name, c in (("closed_call", g), ("call", h)):
        loss = lambda a: c(a, y).sum()
        out.update({f"{name} {k}": v for k, v in {
            "eager": c(x, y), "jit": lib.jit(c)(x, y), "grad": lib.grad(loss)(x),
            "jit_grad": lib.jit(lib.grad(loss))(x),
            "vmap": lib.vmap(c, (0, None))(X, y), "vmap_grad": lib.vmap(lib.grad(loss))(X),
            "jvp": lib.jvp(lambda a: c(a, y), (x,), (jnp.ones(3),))[1],
            "vjp": lib.vjp(lambda a: c(a, y), x)[1](jnp.arange(3.0))[0],
            "hessian": lib.hessian(loss)(x)}.items()})
    return out


def test_call_primitives_match_jax():
    want, got = _call_primitive_results(jax), _call_primitive_results(xform)
    assert sorted(want) == sorted(got)
    for k, w in want.items():
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(w), rtol=1e-6, atol=1e-6,
                                   err_msg=k)


def test_call_primitives_in_programs():
    from xform.extend.core.primitives import call_p, closed_call_p
    closed = xform.make_jaxpr(lambda a: xform.numpy.sin(a))(1.0)
    prog = xform.make_jaxpr(lambda a: closed_call_p.bind(a, call_jaxpr=closed))(1.0)
    assert [e.primitive.name for e in prog.jaxpr.eqns] == ["sin"]   # inlined where staged
    with pytest.raises(TypeError, match="expects a function first"):
        call_p.bind(1.0, 2.0)

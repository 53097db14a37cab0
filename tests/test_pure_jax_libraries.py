"""Behaviours found by running pure-JAX libraries (distrax, blackjax, optimistix, lineax,
diffrax, jaxtyping, jaxopt) and their own test suites on xform
(tools/library_tests/run.py), each compared with real JAX."""
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------ axis arguments given as any sequence

AXIS_CASES = [
    ("expand_dims", lambda np_, x: np_.expand_dims(x[0, :, 0], range(2))),
    ("expand_dims_array", lambda np_, x: np_.expand_dims(x[0, :, 0], np.array([0, 2]))),
    ("squeeze", lambda np_, x: np_.squeeze(x, range(1))),
    ("sum", lambda np_, x: np_.sum(x, axis=range(2))),
    ("max", lambda np_, x: np_.max(x, axis=range(1, 3))),
    ("flip", lambda np_, x: np_.flip(x, range(2))),
    ("roll", lambda np_, x: np_.roll(x, (1, 2), axis=range(1, 3))),
    ("moveaxis", lambda np_, x: np_.moveaxis(x, range(2), [2, 3])),
]


@pytest.mark.parametrize("name,f", AXIS_CASES, ids=[c[0] for c in AXIS_CASES])
def test_axis_accepts_any_sequence_like_jax(name, f):
    # distrax's Normal sampler calls jnp.expand_dims(scale, range(n))
    x = np.arange(24.0, dtype=np.float32).reshape(1, 4, 1, 6)
    want = f(jnp, jnp.asarray(x))
    got = f(xnp, xnp.asarray(x))
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_axis_sequence_errors_like_jax():
    x = np.ones((2, 3), np.float32)
    for np_ in (jnp, xnp):
        with pytest.raises(ValueError):
            np_.expand_dims(x, range(3, 6))      # axis 5 of 5 dimensions
        with pytest.raises(TypeError):
            np_.flip(x, 1.5)
        with pytest.raises(TypeError):
            np_.expand_dims(x, [0.5])


# ------------------------------------ jax.core.pytype_aval_mappings, jax.interpreters.xla

SCALARS = [np.zeros((2, 3), np.float64), np.zeros(4, np.int8), np.float64(1.5),
           np.int64(3), np.bool_(True), np.complex128(1j), 1.5, 3, True, 2j,
           np.zeros((), np.uint16)]


@pytest.mark.parametrize("v", SCALARS, ids=lambda v: f"{type(v).__name__}")
def test_pytype_aval_mappings_give_jax_avals(v):
    # tensorflow_probability's JAX substrate (distrax) copies the ndarray entry
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = jax.core.pytype_aval_mappings[type(v)](v)
    got = xform.core.pytype_aval_mappings[type(v)](v)
    assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)


def test_registered_pytype_gets_its_aval():
    from xform._src.interpreters import core as engine

    class Boxed:
        def __init__(self, v):
            self.v = np.asarray(v)

    class SubBoxed(Boxed):
        pass

    xform.core.pytype_aval_mappings[Boxed] = lambda b: xform.core.ShapedArray(
        b.v.shape, b.v.dtype)
    try:
        assert engine.get_aval(SubBoxed(np.ones((2, 5), np.float32))) == \
            xform.core.ShapedArray((2, 5), np.float32)
    finally:
        del xform.core.pytype_aval_mappings[Boxed]
    with pytest.raises(TypeError, match="not a valid xform array type"):
        engine.get_aval(SubBoxed(1.0))


@pytest.mark.parametrize("v", SCALARS, ids=lambda v: f"{type(v).__name__}")
def test_canonicalize_dtype_handlers_like_jax(v):
    import jax.interpreters.xla as jxla
    import xform.interpreters.xla as xxla
    want = jxla.canonicalize_dtype_handlers[type(v)](v)
    got = xxla.canonicalize_dtype_handlers[type(v)](v)
    assert np.result_type(got) == np.result_type(want)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_apply_primitive_like_jax():
    import jax.interpreters.xla as jxla
    import xform.interpreters.xla as xxla
    x = np.linspace(0, 1, 5, dtype=np.float32)
    want = jxla.apply_primitive(jax.lax.mul_p, x, x)
    got = xxla.apply_primitive(xform.lax.mul_p, x, x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    got_in_jit = xform.jit(lambda y: xxla.apply_primitive(xform.lax.mul_p, x, x) + y)(1.0)
    np.testing.assert_allclose(np.asarray(got_in_jit), x * x + 1, rtol=1e-6)


# ------------------------------------------ JAX internals served under the alias

def _run_aliased(code, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), capture_output=True,
                          text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_alias_serves_flatten_util_and_ad_util():
    # blackjax imports jax._src.flatten_util.ravel_pytree; lineax imports
    # jax._src.ad_util.stop_gradient_p and registers a transpose rule for it
    res = _run_aliased(r'''
import json, xform
xform.compat.alias_jax()
g = {"__name__": "some_library"}
exec("from jax._src.flatten_util import ravel_pytree\n"
     "from jax._src.ad_util import stop_gradient_p, Zero, SymbolicZero\n"
     "import jax.interpreters.xla as xla\n"
     "import jax", g)
import numpy as np
flat, unravel = g["ravel_pytree"]({"a": np.ones(2, np.float32), "b": np.float32(3)})
print(json.dumps({
  "ravel": g["ravel_pytree"] is xform.flatten_util.ravel_pytree,
  "flat": [float(v) for v in flat],
  "sg": g["stop_gradient_p"] is xform.lax.stop_gradient_p,
  "zero": g["Zero"] is xform.interpreters.ad.Zero,
  "xla": g["xla"] is xform.interpreters.xla,
  "core_map": g["jax"].core.pytype_aval_mappings is xform.core.pytype_aval_mappings,
}))
''')
    assert res.pop("flat") == [1.0, 1.0, 3.0]
    assert all(res.values()), res


# ------------------------------- a custom-JVP function applied to tangents (optimistix)

def _asarray_lib(lib):
    @lib.custom_jvp
    def asarr(x):
        return lib.numpy.asarray(x, np.float32)

    @asarr.defjvp
    def _jvp(p, t):          # the rule calls the custom function on the tangent
        return asarr(p[0]), asarr(t[0])

    def g(x):
        return asarr(lib.numpy.sum(lib.numpy.sin(x) ** 2 * x))
    return g


@pytest.mark.parametrize("how", ["plain", "jit", "vmap", "grad"])
def test_linear_transpose_of_linearized_custom_jvp_like_jax(how):
    # optimistix's BFGS: lin_to_grad = linear_transpose(linearize(f, y)[1], y)
    y = np.arange(1.0, 4.0, dtype=np.float32)
    res = []
    for lib in (jax, xform):
        g = _asarray_lib(lib)
        _, lin = lib.linearize(g, y)
        t = lib.linear_transpose(lin, y)
        if how == "plain":
            r = t(np.float32(1.5))[0]
        elif how == "jit":
            r = lib.jit(t)(np.float32(2.0))[0]
        elif how == "vmap":
            r = lib.vmap(t)(np.arange(3.0, dtype=np.float32))[0]
        else:
            r = lib.grad(lambda z: lib.numpy.sum(g(z) ** 2))(y)
        res.append(np.asarray(r))
    np.testing.assert_allclose(res[1], res[0], rtol=1e-5, atol=1e-6)


# ---------------------------------- a ShapeDtypeStruct met while tracing (lineax)

def test_shape_dtype_struct_inside_abstract_tracing_like_jax():
    # lineax's structure_equal: eval_shape(lambda: tree) with ShapeDtypeStruct leaves
    for lib in (jax, xform):
        s = lib.ShapeDtypeStruct((10,), np.float32)
        assert lib.eval_shape(lambda: s) == s
        out = lib.eval_shape(lambda x: (x, {"s": s}), 1.0)
        assert out[1]["s"] == s and out[0].weak_type and out[0].shape == ()
        jaxpr = lib.make_jaxpr(lambda: s)()
        assert len(jaxpr.jaxpr.invars) == 0 and len(jaxpr.consts) == 1
        assert jaxpr.out_avals[0].shape == (10,)
        with pytest.raises(TypeError):
            lib.jit(lambda: s)()              # no value to run with
        with pytest.raises(TypeError):
            lib.numpy.asarray(s)


def test_alias_num_cpu_devices_option_takes_effect():
    # equinox's conftest sets jax_num_cpu_devices=2 through the aliased jax.config
    res = _run_aliased(r'''
import json, xform
xform.compat.alias_jax()
import jax
jax.config.update("jax_num_cpu_devices", 2)
print(json.dumps([len(jax.devices()), len(xform.devices()), jax.devices()[1].id]))
''')
    assert res == [2, 2, 1]

"""The lowering layer: module text, compile, runtime calls, donation, devices, eager hook."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import xform  # noqa: F401
from xform._src import lowering
from xform._src.interpreters import core, staging
from xform._src.interpreters.core import Array, Primitive, ShapedArray
from xform._src.interpreters.ir import ClosedJaxpr

P = {p.name: p for p in core.abstract_eval_rules}
f32 = np.dtype(np.float32)


def closed(fun, *avals):
    jaxpr, consts = staging.trace_to_jaxpr(fun, list(avals))
    return ClosedJaxpr(jaxpr, consts)


def sin_add(x, y):
    return [P["sin"].bind(P["add"].bind(x, y)), P["neg"].bind(x)]


A3 = ShapedArray((3,), f32)


# ----------------------------------------------------------------- module text and compile


def test_module_text_compiles_and_runs():
    cj = closed(sin_add, A3, A3)
    text = lowering.lower_jaxpr(cj)
    assert "func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>)" in text
    assert '"stablehlo.sine"' in text
    x, y = np.arange(3, dtype=f32), np.ones(3, f32)
    out = lowering.compile_jaxpr(cj)(x, y)
    np.testing.assert_allclose(np.asarray(out[0]), np.sin(x + y), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(out[1]), -x)
    assert all(type(o) is Array and o._buf is not None for o in out)


def test_matches_real_jax_on_a_program():
    import jax
    import jax.numpy as jnp
    dn = (((1,), (0,)), ((), ()))

    def f(x, w):
        h = P["dot_general"].bind(P["sin"].bind(x), w, dimension_numbers=dn, precision=None,
                                  preferred_element_type=None)
        return [P["reduce_sum"].bind(P["tanh"].bind(h), axes=(0,))]
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 5)).astype(f32), rng.standard_normal((5, 3)).astype(f32)
    out, = lowering.compile_jaxpr(closed(f, ShapedArray((4, 5), f32), ShapedArray((5, 3), f32)))(x, w)
    want = jax.jit(lambda x, w: jnp.tanh(jnp.sin(x) @ w).sum(0))(x, w)
    np.testing.assert_allclose(np.asarray(out), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_constants_and_literals_are_embedded_bit_exactly():
    c = np.array([1.5, -2.25, 3.0], ml_dtypes.bfloat16)
    big = np.arange(12, dtype=np.int64).reshape(3, 4) * (2**40)

    def f(x):
        y = P["mul"].bind(x, Array(c))                   # array constant -> constvar
        z = P["add"].bind(y, np.ones(3, ml_dtypes.bfloat16))     # small array const
        return [z, P["add"].bind(Array(big), Array(big)),
                P["add"].bind(P["reduce_sum"].bind(x, axes=(0,)),
                              np.asarray(0.5, ml_dtypes.bfloat16))]   # scalar -> Literal
    cj = closed(f, ShapedArray((3,), ml_dtypes.bfloat16))
    assert cj.jaxpr.constvars
    x = np.array([2, 4, -1], ml_dtypes.bfloat16)
    z, b, s = lowering.compile_jaxpr(cj)(x)
    assert float(np.asarray(s)) == 5.5
    np.testing.assert_array_equal(np.asarray(z).astype(f32), (x * c + 1).astype(f32))
    assert np.asarray(b).dtype == np.int64
    np.testing.assert_array_equal(np.asarray(b), big + big)


@pytest.mark.parametrize("dtype,value", [
    (np.float64, [1e300, 1 + 2**-50, -0.0]), (np.int64, [2**62 + 1, -(2**62) - 3, 0]),
    (np.uint64, [2**64 - 1, 2**63 + 5, 1]), (np.complex128, [1e300 + 1e-300j, 1j, 2]),
])
def test_x64_types_round_trip_unnarrowed(dtype, value):
    x = np.array(value, dtype)
    cj = closed(lambda a: [P["add"].bind(a, a), a], ShapedArray(x.shape, dtype))
    assert f"%arg0: {lowering.tensor_type(x.shape, dtype)}" in lowering.lower_jaxpr(cj)
    s, same = lowering.compile_jaxpr(cj)(x)
    assert np.asarray(same).dtype == dtype and np.asarray(s).dtype == dtype
    np.testing.assert_array_equal(np.asarray(same), x)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(np.asarray(s), x + x)


def test_argument_validation():
    comp = lowering.compile_jaxpr(closed(sin_add, A3, A3))
    ok = np.ones(3, f32)
    with pytest.raises(TypeError, match="expects 2 arguments"):
        comp(ok)
    with pytest.raises(TypeError, match=r"f32\[3\].*i32\[3\]"):
        comp(ok, np.ones(3, np.int32))          # same byte size: the runtime would accept it
    with pytest.raises(TypeError, match=r"expects f32\[3\]"):
        comp(ok, np.ones(4, f32))
    with pytest.raises(TypeError, match=r"expects f32\[3\]"):
        comp(ok, np.ones((3, 1), f32))
    with pytest.raises(TypeError, match="not a valid array type"):
        comp(ok, "abc")
    with pytest.raises(TypeError, match=r"expects f32\[3\]"):
        comp(ok, Array(np.ones(3, np.int32)))
    # host float64 input canonicalises to the program's float32 (x64 off), as jit would
    out = comp(ok, np.ones(3, np.float64))
    assert np.asarray(out[1]).dtype == f32


def test_scalars_and_device_arrays_as_arguments():
    s = ShapedArray((), f32)
    comp = lowering.compile_jaxpr(closed(lambda a, b: [P["mul"].bind(a, b)], s, s))
    out, = comp(2.0, 3)
    assert float(np.asarray(out)) == 6.0
    out2, = comp(out, out)                   # device-backed Array in -> fast path
    assert float(np.asarray(out2)) == 36.0
    with pytest.raises(TypeError):
        comp(2.0, 1j)


def test_outputs_keep_weak_type_of_outvars():
    s = ShapedArray((), f32, weak_type=True)
    cj = closed(lambda a: [P["neg"].bind(a)], s)
    out, = lowering.compile_jaxpr(cj)(1.0)
    assert out.weak_type is True


def test_donation_deletes_input():
    cj = closed(lambda a, b: [P["add"].bind(a, b)], ShapedArray((1024,), f32),
                ShapedArray((1024,), f32))
    text = lowering.lower_jaxpr(cj, donated_invars=(True, False))
    assert "tf.aliasing_output = 0" in text
    comp = lowering.compile_jaxpr(cj, donated_invars=(True, False))
    assert comp.memory_analysis().alias_size_in_bytes == 4096
    x = lowering.device_put(np.ones(1024, f32))
    x._npy = None                       # no live NumPy view: the runtime really reuses it
    buf = x._buf
    y = np.full(1024, 2, f32)
    out, = comp(x, y)
    np.testing.assert_array_equal(np.asarray(out), 3)
    assert x.is_deleted() and buf.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)
    with pytest.raises(RuntimeError, match="deleted"):
        comp(x, y)
    # a donated host Array is marked deleted too (JAX semantics); plain NumPy is untouched
    h = Array(np.ones(1024, f32))
    comp(h, y)
    assert h.is_deleted()
    n = np.ones(1024, f32)
    comp(n, y)
    np.testing.assert_array_equal(n, 1)


def test_buffer_donor_when_only_an_output_of_the_same_size_matches():
    # as JAX: f32[8] -> f32[2,4] can reuse the buffer (a donor, not an alias) ...
    cj = closed(lambda a: [P["reshape"].bind(a, new_sizes=(2, 4), dimensions=None)],
                ShapedArray((8,), f32))
    text = lowering.lower_jaxpr(cj, donated_invars=(True,))
    assert "jax.buffer_donor = true" in text and "tf.aliasing_output" not in text
    # ... f32[8] -> f32[] cannot: not donated, with JAX's warning
    cj = closed(lambda a: [P["reduce_sum"].bind(a, axes=(0,))], ShapedArray((8,), f32))
    with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: float32\[8\]"):
        m = lowering.lower_module(cj, donated_invars=(True,))
    assert "jax.buffer_donor" not in m.text and m.unusable_donations == (0,)


def test_cost_and_memory_analysis_and_texts():
    comp = lowering.compile_jaxpr(closed(sin_add, A3, A3))
    ca = comp.cost_analysis()
    assert isinstance(ca, dict) and ca["flops"] > 0 and "bytes accessed" in ca
    ma = comp.memory_analysis()
    assert ma.argument_size_in_bytes == 24 and ma.output_size_in_bytes > 0
    assert "stablehlo.sine" in comp.as_text()
    assert "sine" in comp.compiled_text() and "ENTRY" in comp.compiled_text()
    assert comp.in_avals == [A3, A3] and len(comp.out_avals) == 2


def test_debug_locations_reach_compiled_hlo():
    def user_function_xyz(x):
        return [P["sin"].bind(x)]
    comp = lowering.compile_jaxpr(closed(user_function_xyz, A3))
    hlo = comp.compiled_text()
    assert "user_function_xyz/sin" in hlo and "test_lowering.py" in hlo


def test_executable_cache_hits_on_same_text():
    cj = closed(lambda a: [P["cos"].bind(P["cos"].bind(a))], ShapedArray((7,), f32))
    lowering.compile_jaxpr(cj)
    before = lowering.cache_info()["hits"]
    c2 = lowering.compile_jaxpr(cj)
    assert lowering.cache_info()["hits"] == before + 1
    np.testing.assert_allclose(np.asarray(c2(np.zeros(7, f32))[0]), np.cos(1.0), rtol=1e-6)


def test_unknown_primitive_has_clear_error():
    p = Primitive("no_such_lowering_xyz")
    p.abstract_eval = lambda x: x       # not registered globally
    cj = closed(lambda a: [p.bind(a)], A3)
    with pytest.raises(NotImplementedError, match="no_such_lowering_xyz"):
        lowering.lower_jaxpr(cj)


# ----------------------------------------------------------------- higher-order: jit


def _make_call_prim():
    call_p = Primitive("jit", multiple_results=True)
    call_p.abstract_eval = lambda *avals, jaxpr, **_: list(jaxpr.out_avals)
    from xform._src.primitives.jit import jit_p
    lowering.lowering_rules[call_p] = lowering.lowering_rules[jit_p]
    return call_p


@pytest.mark.parametrize("inline", [False, True])
def test_nested_jit_lowers_to_private_function(inline):
    call_p = _make_call_prim()
    inner = closed(lambda a: [P["sin"].bind(a), P["mul"].bind(a, Array(np.full(3, 2, f32)))], A3)

    def outer(x):
        params = dict(jaxpr=inner, name="inner_fn", donated_invars=(False,), inline=inline,
                      keep_unused=False)
        a, b = call_p.bind(x, **params)
        c, d = call_p.bind(a, **params)           # same jaxpr: one private function
        return [P["add"].bind(b, d), c]
    cj = closed(outer, A3)
    text = lowering.lower_jaxpr(cj)
    if inline:
        assert "func.call" not in text
    else:
        assert text.count("func.func private @inner_fn") == 1
        assert text.count('"func.call"') == 2
    x = np.array([0.1, 0.2, 0.3], f32)
    s, c = lowering.compile_jaxpr(cj)(x)
    np.testing.assert_allclose(np.asarray(s), 2 * x + 2 * np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(c), np.sin(np.sin(x)), rtol=1e-6)


# ----------------------------------------------------------------- devices and eager hook


def test_devices_and_device_put():
    assert lowering.default_backend() == "cpu"
    devs = lowering.devices()
    assert devs and devs[0].platform == "cpu"
    x = lowering.device_put(np.arange(4, dtype=np.int64))   # canonicalised like jax (x64 off)
    assert x._buf is not None and np.asarray(x).dtype == np.int32
    assert lowering.device_put(x) is x                     # already there: no-op
    assert lowering.get_device(x) == devs[0]
    y = lowering.device_put(x, devs[0])                    # commits, same buffer
    assert y._buf is x._buf and y._committed
    assert lowering.device_put(y, devs[0]) is y
    with pytest.raises(TypeError, match="Device"):
        lowering.device_put(x, "cpu:0")


def test_device_impl_hook_on_cpu_arrays():
    x = lowering.device_put(np.array([1.0, 2.0, 3.0], f32))
    y = lowering.device_put(np.array([0.5, 0.5, 0.5], f32))
    out = core.device_impl_hook(P["add"], (x, y), {})
    assert type(out) is Array and out._buf is not None and out._npy is None
    np.testing.assert_array_equal(np.asarray(out), [1.5, 2.5, 3.5])
    out2 = core.device_impl_hook(P["mul"], (out, np.full(3, 2, f32)), {})   # host operand
    np.testing.assert_array_equal(np.asarray(out2), [3.0, 5.0, 7.0])
    red = core.device_impl_hook(P["reduce_sum"], (out2,), {"axes": (0,)})
    assert float(np.asarray(red)) == 15.0


def test_mixing_committed_devices_raises():
    code = textwrap.dedent("""
        import jax; jax.config.update('jax_num_cpu_devices', 2)
        import numpy as np, xform, lowering
        from xform._src.interpreters import core
        P = {p.name: p for p in core.abstract_eval_rules}
        d0, d1 = lowering.devices()[:2]
        a = lowering.device_put(np.ones(3, np.float32), d0)
        b = lowering.device_put(np.ones(3, np.float32), d1)
        try:
            core.device_impl_hook(P['add'], (a, b), {})
        except ValueError as e:
            assert str(d0) in str(e) and str(d1) in str(e), e
        else:
            raise AssertionError('no error')
        c = lowering.device_put(np.full(3, 2, np.float32))      # uncommitted, on d0
        out = core.device_impl_hook(P['add'], (c, b), {})       # follows committed b
        assert lowering.get_device(out) == d1, lowering.get_device(out)
        assert np.asarray(out).tolist() == [3, 3, 3]
        print('OK')
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=str(__import__("pathlib").Path(__file__).parents[1]))
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-2000:]


def test_import_xform_does_not_import_jax():
    code = ("import sys, xform, lowering; assert 'jax' not in sys.modules and "
            "'jaxlib' not in sys.modules, sorted(m for m in sys.modules if 'jax' in m); "
            "xform._src.lowering.lower_jaxpr; assert 'jax' not in sys.modules; print('OK')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=str(__import__("pathlib").Path(__file__).parents[1]))
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-2000:]

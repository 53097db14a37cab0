"""Misuse under jit raises JAX's exception classes with messages that say what to do."""
import jax
import numpy as np
import pytest

import xform
from xform import lax as L

X = np.ones(3, np.float32)


def test_python_if_on_traced_value():
    def f(x):
        if L.gt(L.reduce_sum(x, axes=(0,)), 0.0):     # the offending line
            return x
        return L.neg(x)
    with pytest.raises(xform.TracerBoolConversionError) as e:
        xform.jit(f)(X)
    msg = str(e.value)
    assert "test_tracing_errors.py:14" in msg
    assert "static_argnums" in msg and "lax.cond" in msg
    assert isinstance(e.value, xform.ConcretizationTypeError) and isinstance(e.value, TypeError)
    # the same class JAX raises
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(lambda x: 1 if x.sum() > 0 else 0)(X)


def test_int_and_float_and_index_of_traced_value():
    with pytest.raises(xform.TracerIntegerConversionError, match="int()"):
        xform.jit(lambda x: L.mul(x, float(int(L.reduce_sum(x, axes=(0,))))))(X)
    with pytest.raises(xform.ConcretizationTypeError, match="float()"):
        xform.jit(lambda x: L.mul(x, float(L.reduce_sum(x, axes=(0,)))))(X)
    with pytest.raises(xform.TracerIntegerConversionError):
        xform.jit(lambda n: [L.neg(n) for _ in range(n)])(np.int32(3))
    # the fix the message suggests works
    f = xform.jit(lambda x, n: L.mul(x, float(n)), static_argnums=1)
    np.testing.assert_allclose(np.asarray(f(X, 3)), 3 * X)


def test_numpy_on_traced_value():
    with pytest.raises(xform.TracerArrayConversionError):
        xform.jit(lambda x: np.sin(x))(X)


def test_leaked_tracer_after_jit():
    leaked = []

    def f(x):
        leaked.append(x)
        return L.sin(x)
    xform.jit(f)(X)
    with pytest.raises(xform.UnexpectedTracerError) as e:
        L.cos(leaked[0])
    assert "test_tracing_errors.py" in str(e.value) and "jit(f)" in str(e.value)
    with pytest.raises(xform.UnexpectedTracerError):
        xform.jit(lambda y: L.mul(y, 2.0))(leaked[0])
    with pytest.raises(xform.UnexpectedTracerError):
        xform.jit(lambda y: L.mul(y, leaked[0]))(X)


def test_leaked_tracer_from_grad_into_jit():
    leaked = []

    def f(x):
        leaked.append(x)
        return L.reduce_sum(L.sin(x), axes=(0,))
    xform.grad(f)(X)
    with pytest.raises(xform.UnexpectedTracerError):
        xform.jit(L.sin)(leaked[0])


def test_string_argument():
    def f(x, name):
        return x
    with pytest.raises(TypeError, match=r"Argument 'name' of type <class 'str'> is not a valid JAX type"):
        xform.jit(f)(X, "abc")
    with pytest.raises(TypeError, match="not a valid JAX type"):
        xform.jit(f)(X, {"k": object()})
    # as a static argument it is fine
    assert xform.jit(f, static_argnames="name")(X, "abc").shape == (3,)


def test_unhashable_static_argument():
    f = xform.jit(lambda x, opts: x, static_argnums=1)
    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
        f(X, [1, 2])
    with pytest.raises(ValueError):
        jax.jit(lambda x, opts: x, static_argnums=1)(X, [1, 2])


def test_donated_buffer_reuse():
    f = xform.jit(lambda x: L.add(x, x), donate_argnums=0)
    a = xform.device_put(X)
    f(a)
    with pytest.raises(RuntimeError, match="donated"):
        f(a)
    with pytest.raises(RuntimeError, match="donated"):
        a + 1 if hasattr(type(a), "__add__") else np.asarray(a)


def test_bad_outputs_and_callables():
    with pytest.raises(TypeError, match="valid JAX type"):
        xform.jit(lambda x: (x, "nope"))(X)
    with pytest.raises(TypeError, match="callable"):
        xform.jit(42)
    with pytest.raises(ValueError, match="only accepts 1 positional"):
        xform.jit(lambda x: x, static_argnums=3)


def test_retrace_after_error_is_clean():
    calls = []

    def f(x, flag):
        calls.append(flag)
        if flag:
            raise ValueError("user error")
        return L.sin(x)
    jf = xform.jit(f, static_argnums=1)
    with pytest.raises(ValueError, match="user error"):
        jf(X, True)
    np.testing.assert_allclose(np.asarray(jf(X, False)), np.sin(X), rtol=1e-6)
    assert jf._cache_size() == 1

"""Three behaviour bugs found running optax on xform, checked against JAX."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp
import xform
import xform.numpy as xnp
from xform import lax as xlax


@pytest.mark.parametrize("wrap", ["eager", "jit", "grad", "vmap"])
def test_isinstance_array_traced(wrap):
    def probe(isinst, arr_t, nd_t):
        seen = []

        def f(x):
            seen.append((isinst(x, arr_t), isinst(x, nd_t)))
            return (x * x).sum()
        return f, seen

    results = []
    for mod, np_mod in ((jax, jnp), (xform, xnp)):
        f, seen = probe(isinstance, mod.Array, np_mod.ndarray)
        x = np_mod.ones(3)
        {"eager": lambda: f(x), "jit": lambda: mod.jit(f)(x), "grad": lambda: mod.grad(f)(x),
         "vmap": lambda: mod.vmap(f)(np_mod.ones((2, 3)))}[wrap]()
        results.append(seen)
    assert results[0] == results[1] == [(True, True)]


def test_isinstance_numpy_not_array():
    for v in (np.ones(2), 1.0, [1.0]):
        assert isinstance(v, xform.Array) == isinstance(v, jax.Array)
        assert isinstance(v, xnp.ndarray) == isinstance(v, jnp.ndarray)
    assert issubclass(type(xnp.ones(2)), xform.Array)
    with pytest.raises(TypeError):
        xform.Array()


def test_cond_operand_keyword():
    for lax in (jax.lax, xlax):
        assert lax.cond(True, lambda o: o is None, lambda o: False, operand=None)
    j = jax.lax.cond(False, lambda o: o["a"] + 1, lambda o: o["a"] - 1, operand={"a": 3.0})
    x = xlax.cond(False, lambda o: o["a"] + 1, lambda o: o["a"] - 1, operand={"a": 3.0})
    assert float(j) == float(x)
    for lax in (jax.lax, xlax):
        with pytest.raises(TypeError):
            lax.cond(True, lambda o: o, lambda o: o, 1.0, operand=2.0)
    assert int(xlax.switch(1, [lambda o: 0, lambda o: int(o is None)], operand=None)) == \
        int(jax.lax.switch(1, [lambda o: 0, lambda o: int(o is None)], operand=None))


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "bfloat16"])
def test_like_accepts_shape_dtype(name, dtype):
    args = (7,) if name == "full_like" else ()
    j = getattr(jnp, name)(jax.ShapeDtypeStruct((2, 3), dtype), *args)
    x = getattr(xnp, name)(xform.ShapeDtypeStruct((2, 3), dtype), *args)
    assert x.shape == j.shape and x.dtype == j.dtype
    if name != "empty_like":
        np.testing.assert_array_equal(np.asarray(x), np.asarray(j))
    # any object with shape and dtype (here a NumPy array and a JAX struct)
    j2 = getattr(jnp, name)(jax.ShapeDtypeStruct((4,), dtype), *args, dtype="float32")
    x2 = getattr(xnp, name)(jax.ShapeDtypeStruct((4,), dtype), *args, dtype="float32")
    assert x2.shape == j2.shape and x2.dtype == j2.dtype


def test_like_under_jit_and_errors():
    s = xform.ShapeDtypeStruct((3,), "float32")
    out = xform.jit(lambda x: x + xnp.zeros_like(s))(xnp.ones(3))
    np.testing.assert_array_equal(np.asarray(out), np.ones(3))
    with pytest.raises(TypeError):
        xnp.zeros_like("abc")

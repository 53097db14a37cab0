"""Array/Tracer operators, methods, indexing and .at[] against real JAX."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests._np_helpers import check

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7


def test_repr_matches_jax():
    for v in ([1.0, 2.0], [1, 2], [[True, False]], 3.5):
        assert repr(xnp.asarray(v)) == repr(jnp.asarray(v))
    assert repr(xnp.zeros((0, 3))) == repr(jnp.zeros((0, 3)))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                                "eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("other", [2, 2.5, "array"])
def test_binary_operators(op, other):
    import operator
    f = getattr(operator, op)
    o = np.abs(X[0, 0]) + 1 if isinstance(other, str) else other
    x = np.abs(X) + 1 if op == "pow" else X
    check(f(xnp.asarray(x), o), f(jnp.asarray(x), o), tol=1e-5)
    check(f(o, xnp.asarray(x)), f(o, jnp.asarray(x)), tol=1e-5)


def test_int_and_unary_operators():
    a = np.arange(-4, 4, dtype=np.int32)
    xa, ja = xnp.asarray(a), jnp.asarray(a)
    for f in (lambda v: v & 3, lambda v: 5 | v, lambda v: v ^ v, lambda v: v << 2,
              lambda v: v >> 1, lambda v: ~v, lambda v: -v, lambda v: +v, lambda v: abs(v),
              lambda v: divmod(v, 3)[0], lambda v: divmod(v, 3)[1], lambda v: v @ v):
        check(f(xa), f(ja))


def test_methods_and_properties():
    x, j = xnp.asarray(X), jnp.asarray(X)
    cases = [lambda v: v.T, lambda v: v.mT, lambda v: v.real, lambda v: v.imag,
             lambda v: v.reshape(6, 4), lambda v: v.reshape((4, -1)), lambda v: v.transpose(2, 0, 1),
             lambda v: v.transpose(), lambda v: v.ravel(), lambda v: v.flatten(),
             lambda v: v.astype(jnp.int32), lambda v: v.sum(axis=1), lambda v: v.mean(),
             lambda v: v.max(axis=(0, 2)), lambda v: v.min(keepdims=True), lambda v: v.var(1),
             lambda v: v.std(), lambda v: v.prod(0), lambda v: v.argmax(axis=2),
             lambda v: v.argmin(), lambda v: v.any(), lambda v: v.all(axis=0),
             lambda v: v.cumsum(1), lambda v: v.cumprod(), lambda v: v.clip(-1, 3),
             lambda v: v.round(), lambda v: v[0].dot(v[1].T), lambda v: v.conj(),
             lambda v: v.swapaxes(0, 2), lambda v: v[:, :1].squeeze(1), lambda v: v.sort(),
             lambda v: v.argsort(axis=0), lambda v: v.repeat(2, axis=0),
             lambda v: v[0].diagonal(), lambda v: v[0].trace(), lambda v: v.take(3)]
    for f in cases:
        check(f(x), f(j))
    assert x.shape == (2, 3, 4) and x.ndim == 3 and x.size == 24 and x.dtype == np.float32


INDICES = [0, -1, (1, 2), (slice(None), 1), (slice(None, None, -1),), (Ellipsis, 1),
           (None, 0), (1, None, slice(1, 3)), (slice(3, 0, -2),), (slice(None), slice(None, None, 2), -1),
           (Ellipsis,), (0, Ellipsis, None), (slice(5, 10),), (slice(-10, 1),),
           np.array([1, 0, 1]), (slice(None), np.array([2, 0])), (Ellipsis, np.array([[3, -1]])),
           (np.array([0, 1]), np.array([2, 0])), (np.array([0, 1]), slice(None), np.array([2, 0])),
           (1, np.array([2, 0]), slice(None)), X > 0, (X[:, :, 0] > 0,), (0, X[0, :, 0] > 0),
           (np.array(1),), np.array([], dtype=np.int32)]


@pytest.mark.parametrize("idx", INDICES, ids=range(len(INDICES)))
def test_getitem(idx):
    check(xnp.asarray(X)[idx], jnp.asarray(X)[idx])


def test_getitem_errors():
    x = xnp.ones(3)
    with pytest.raises(IndexError, match="index 5 out of bounds for axis 0 with size 3"):
        x[5]
    # an index *array* (concrete or traced) clamps, as in JAX and as under jit
    np.testing.assert_array_equal(np.asarray(xnp.arange(3)[np.array([0, 3])]), [0, 2])
    with pytest.raises(IndexError, match="Too many indices"):
        x[0, 0]
    with pytest.raises(TypeError, match=r"\.at"):
        x[0] = 1.0
    with pytest.raises(TypeError, match="Indexer must have integer or boolean type"):   # JAX's
        x[1.5]
    with pytest.raises(TypeError, match="non-tuple sequence"):
        x[[0, 1]]


AT_CASES = [0, (1, slice(None, None, 2)), (Ellipsis, -1), (slice(None, None, -1), 1),
            np.array([0, 0, 1]), (slice(None), np.array([2, 2, 0])), X > 3,
            (np.array([1, 0]), slice(1, 3), np.array([0, 3]))]


@pytest.mark.parametrize("idx", AT_CASES, ids=range(len(AT_CASES)))
@pytest.mark.parametrize("op", ["set", "add", "multiply", "min", "max", "get"])
def test_at(idx, op):
    x, j = xnp.asarray(X), jnp.asarray(X)
    if op == "get":
        check(x.at[idx].get(), j.at[idx].get())
        return
    shape = j[idx].shape
    v = (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 2) * 0.5
    check(getattr(x.at[idx], op)(v), getattr(j.at[idx], op)(v))
    check(getattr(x.at[idx], op)(1.5), getattr(j.at[idx], op)(1.5))


def test_immutability_and_asarray_copy():
    a = np.ones(3, np.float32)
    x = xnp.asarray(a)
    a[:] = 7
    assert np.asarray(x).tolist() == [1.0, 1.0, 1.0]
    y = x.at[0].set(5.0)
    assert np.asarray(x).tolist() == [1.0, 1.0, 1.0] and float(y[0]) == 5.0


def _need(name):
    assert hasattr(xform, name), f"xform.{name} is missing"


def test_indexing_is_differentiable():
    _need("grad")

    def f(m, x):
        return (m.sum(x[1, ::-1] * x[0, :, 2:3]) + m.sum(x[np.array([1, 0, 1])] ** 2)
                + m.sum(x.at[0, 1].set(3.0) * x) + m.sum(x.at[:, np.array([0, 0])].add(x[:, :2])))
    g = xform.grad(lambda x: f(xnp, x))(X)
    gj = jax.grad(lambda x: f(jnp, x))(X)
    np.testing.assert_allclose(g, gj, rtol=1e-6)


def test_traced_index():
    _need("jit")
    x = np.arange(10.0, dtype=np.float32)
    f = xform.jit(lambda x, i: x[i] * 2)
    for i in (0, 3, -1):
        assert float(f(x, i)) == float(x[i] * 2)
    g = xform.jit(lambda x, i: x[i])
    idx = np.array([[1, -2], [4, 0]])
    check(g(x, idx), jnp.asarray(x)[idx])
    h = xform.jit(lambda x, i: x.at[i].add(1.0))
    check(h(x, 2), jnp.asarray(x).at[2].add(1.0))


def test_tracer_has_the_surface():
    _need("vmap")
    out = xform.vmap(lambda r: (r.T @ r).sum() + r[0].mean() + r.at[1].set(0.0).max())(X)
    ref = jax.vmap(lambda r: (r.T @ r).sum() + r[0].mean() + r.at[1].set(0.0).max())(X)
    np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_tracer_attributes_do_not_hide_array_methods():
    """A tracer's own slots must not shadow jax.Array methods (a slot named ``var`` once
    made ``x.var()`` inside jit raise TypeError: 'Var' object is not callable)."""
    import jax
    import numpy as np
    import xform
    from xform._src.interpreters import batching, core, staging  # noqa: F401  (register the tracers)
    from xform._src.interpreters import ad  # noqa: F401

    def subclasses(c):
        for s in c.__subclasses__():
            yield s
            yield from subclasses(s)
    public = {n for n in dir(jax.Array) if not n.startswith("_")}
    for cls in subclasses(core.Tracer):
        slots = {s for k in cls.__mro__ for s in getattr(k, "__slots__", ())}
        assert not slots & public, (cls.__name__, slots & public)
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    for name in ("var", "std", "mean", "ptp", "cumsum"):
        f = lambda a: getattr(a, name)(axis=1)   # noqa: E731
        np.testing.assert_allclose(xform.jit(f)(x), jax.jit(f)(x), rtol=1e-6)
        np.testing.assert_allclose(xform.vmap(f)(x[None]), jax.vmap(f)(x[None]), rtol=1e-6)
        np.testing.assert_allclose(xform.grad(lambda a: f(a).sum())(x),
                                   jax.grad(lambda a: f(a).sum())(x), rtol=1e-6)

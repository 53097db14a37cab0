"""Behaviours found by running flax.nnx's own test suite on xform
(tools/library_tests/run.py flax), each written in plain xform API and compared with
real JAX in the same process."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp


class _Box:
    """A pytree node around one array (as an nnx Variable is)."""

    def __init__(self, v):
        self.v = v


for _lib in (jax, xform):
    _lib.tree_util.register_pytree_node(_Box, lambda b: ((b.v,), None),
                                        lambda _, c: _Box(c[0]))


def _custom_vjp_grads(lib, n, bwd_out):
    @lib.custom_vjp
    def f(d, y):
        return (n.sum(d["a"].v * 2.0) + n.sum(d["b"][0].v * d["b"][1].v)) * y

    def fwd(d, y):
        return f(d, y), (d, y)

    def bwd(res, g):
        return bwd_out(n, g)

    f.defvjp(fwd, bwd)
    d = {"a": _Box(n.arange(3.0)), "b": (_Box(n.ones(2)), _Box(n.ones(2)))}
    return lib.grad(f, argnums=(0, 1))(d, 2.0)


@pytest.mark.parametrize("bwd_out", [
    # a plain array where the argument holds a node around one array; None for a subtree
    lambda n, g: ({"a": g * 3.0 * n.ones(3), "b": None}, g * 5.0),
    lambda n, g: ({"a": g * n.ones(3), "b": (g * n.ones(2), None)}, None),
    lambda n, g: ({"a": _Box(g * n.ones(3)), "b": (None, _Box(g * n.ones(2)))}, g),
], ids=["array_for_node", "partial_none", "full_structure"])
def test_custom_vjp_bwd_output_may_be_a_pytree_prefix_as_jax(bwd_out):
    want = _custom_vjp_grads(jax, jnp, bwd_out)
    got = _custom_vjp_grads(xform, xnp, bwd_out)
    assert str(xform.tree_util.tree_structure(got)) == str(jax.tree_util.tree_structure(want))
    for g, w in zip(xform.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w))


def test_custom_vjp_bwd_output_that_is_no_prefix_raises_as_jax():
    bad = lambda n, g: ({"a": g, "b": (g, g, g)}, g)
    with pytest.raises(TypeError, match="same container"):
        _custom_vjp_grads(jax, jnp, bad)
    with pytest.raises(TypeError, match="same container"):
        _custom_vjp_grads(xform, xnp, bad)


@pytest.mark.parametrize("fun", [
    lambda lib, k: lib.random.normal(k, (2,)),
    lambda lib, k: lib.random.split(k),
    lambda lib, k: k,
], ids=["normal", "split", "identity"])
def test_pmap_over_typed_key_arrays_as_jax(fun):
    # (nnx.pmap splits Rngs into typed key arrays, one per device)
    def run(lib):
        ks = lib.random.split(lib.random.key(0), 1)
        out = lib.pmap(lambda k: fun(lib, k))(ks)
        if lib.dtypes.issubdtype(out.dtype, lib.dtypes.prng_key):
            out = lib.random.key_data(out)
        return np.asarray(out)

    np.testing.assert_array_equal(run(xform), run(jax))


def _trace_counts(lib, n):
    """How often each control-flow function's body runs in Python over two identical
    calls (nnx.scan's tests count them)."""
    counts = {}

    def count(name):
        counts[name] = counts.get(name, 0) + 1

    def scan_body(c, x):
        count("scan")
        return c + 1, x * 2

    def cond_fun(c):
        count("while")
        return c < 3

    def branch(x):
        count("switch")
        return x + 1

    def fori_body(i, c):
        count("fori")
        return c + i

    class Body:
        def __call__(self, c, x):
            count("object")
            return c, x

    obj = Body()
    xs = n.arange(5)
    for _ in range(2):
        lib.lax.scan(scan_body, n.array(0), xs)
        lib.lax.while_loop(cond_fun, lambda c: c + 1, n.array(0))
        lib.lax.switch(1, [branch, branch], n.array(0))
        lib.lax.fori_loop(0, 3, fori_body, n.array(0))
        lib.lax.scan(obj, n.array(0), xs)
    # under jit each trace of the enclosing function traces the body again
    @lib.jit
    def outer(z):
        def body(c, x):
            count("under_jit")
            return c + z, x
        return lib.lax.scan(body, 0, n.arange(3))[0]
    outs = [int(outer(1)), int(outer(2))]
    return counts, outs


def test_control_flow_bodies_are_traced_once_per_function_and_types_as_jax():
    assert _trace_counts(xform, xnp) == _trace_counts(jax, jnp)


def test_control_flow_trace_cache_depends_on_argument_types():
    n = []

    def body(c, x):
        n.append(x.dtype)
        return c + x, x

    for xs in (xnp.arange(3), xnp.arange(3.0), xnp.arange(3)):
        xform.lax.scan(body, xs[0] * 0, xs)
    assert len(n) == 2


@pytest.mark.parametrize("subscripts", ["i1->1", "i1->i", "1#->#1", "é1->1é", "i1", "1i",
                                        "αi"])
def test_einsum_labels_may_be_any_character_as_jax(subscripts):
    # (nnx's grouped-query attention contracts '...qhgd,...kh1d->...hgqk')
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(xnp.einsum(subscripts, x)),
                                  np.asarray(jnp.einsum(subscripts, x)))


def test_einsum_ellipsis_with_digit_label_as_jax():
    q, k = np.ones((2, 3, 4, 2, 5), np.float32), np.ones((2, 6, 4, 1, 5), np.float32)
    s = "...qhgd,...kh1d->...hgqk"
    np.testing.assert_array_equal(np.asarray(xnp.einsum(s, q, k)),
                                  np.asarray(jnp.einsum(s, q, k)))


def test_shaped_array_takes_a_sharding_keyword_as_jax():
    # (flax's scan rebuilds avals as ShapedArray(shape, dtype, sharding=x.aval.sharding))
    x = xnp.ones((2, 3))
    a = xform.core.ShapedArray((3,), np.float32, sharding=xform.typeof(x).sharding,
                               weak_type=True)
    b = jax.core.ShapedArray((3,), np.float32, sharding=None, weak_type=True)
    assert (a.shape, a.dtype, a.weak_type) == (b.shape, b.dtype, b.weak_type)
    with pytest.raises(TypeError):
        xform.core.ShapedArray((3,), np.float32, shardings=None)


class _ArrayAndJaxArray:
    """Both ``__array__`` and ``__jax_array__`` (as linen's boxed parameters): the
    ``__jax_array__`` wins, so a traced value inside is not pulled to NumPy."""

    def __init__(self, v):
        self.v = v

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.v, dtype)

    def __jax_array__(self):
        return self.v


def test_asarray_prefers_jax_array_over_array_as_jax():
    want = jax.jit(lambda v: jnp.asarray(_ArrayAndJaxArray(v)) * 2)(np.float32(3))
    got = xform.jit(lambda v: xnp.asarray(_ArrayAndJaxArray(v)) * 2)(np.float32(3))
    assert float(got) == float(want) == 6.0


@pytest.mark.parametrize("under_jit", [False, True])
def test_sharding_constraint_on_typed_key_arrays_as_jax(under_jit):
    def run(lib):
        mesh = lib.make_mesh((1,), ("x",), axis_types=(lib.sharding.AxisType.Auto,))
        s = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec("x"))

        def f(k):
            ks = lib.lax.with_sharding_constraint(lib.random.split(k, 4), s)
            return lib.random.key_data(ks), lib.random.normal(ks[1], (2,))
        out = (lib.jit(f) if under_jit else f)(lib.random.key(1))
        return [np.asarray(o) for o in out]

    for g, w in zip(run(xform), run(jax)):
        np.testing.assert_array_equal(g, w)


def test_out_sharding_of_a_value_inside_pmap_as_jax():
    # (nnx.Dropout passes out_sharding=typeof(x).sharding; inside pmap that is a sharding
    # over the manual pmap axis)
    def run(lib, n):
        def f(k, x):
            s = lib.typeof(x).sharding
            m = lib.random.bernoulli(k, 0.5, x.shape, out_sharding=s)
            return n.where(m, x, 0.0), lib.random.normal(k, x.shape, out_sharding=s)
        ks = lib.random.split(lib.random.key(0), 1)
        return [np.asarray(o) for o in lib.pmap(f)(ks, n.ones((1, 4)))]

    for g, w in zip(run(xform, xnp), run(jax, jnp)):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_named_sharding_update_as_jax():
    # (flax's scan drops the batch dimension of an xs sharding with .update(spec=...))
    def run(lib):
        mesh = lib.make_mesh((1,), ("x",), axis_types=(lib.sharding.AxisType.Auto,))
        s = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec("x", None))
        u = s.update(spec=lib.sharding.PartitionSpec(*s.spec[1:]))
        v = s.update(spec=(None, "x"))
        return (tuple(u.spec), tuple(v.spec), u.mesh.axis_names,
                isinstance(v.spec, lib.sharding.PartitionSpec))

    assert run(xform) == run(jax)

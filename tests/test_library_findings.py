"""Behaviours found by running JAX libraries' own test suites (equinox, haiku) on xform
(tools/library_tests/run.py), each compared with real JAX in the same process."""
import functools

import jax
import numpy as np
import pytest

import xform

TRANSFORMS = ["jit", "grad", "vmap", "value_and_grad", "jacfwd", "jacrev", "hessian",
              "checkpoint"]


class _CallableObject:
    """A callable whose ``__name__`` is None (as an equinox Module instance's is)."""
    __name__ = None
    weight = 2.0

    def __call__(self, x):
        return (self.weight * x ** 2).sum()


def _plain(x):
    """doc of _plain"""
    return (x ** 3).sum()


def _walk(f):
    chain = []
    while hasattr(f, "__wrapped__"):
        f = f.__wrapped__
        chain.append(f)
    return chain


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("fun", [_plain, _CallableObject(), functools.partial(_plain)],
                         ids=["function", "object", "partial"])
def test_transformed_callable_wraps_like_jax(name, fun):
    got, want = getattr(xform, name)(fun), getattr(jax, name)(fun)
    # code walking __wrapped__ (equinox's check for transformed callables stored on a
    # Module) reaches the original callable
    assert [w is fun for w in _walk(got)][-1:] == [w is fun for w in _walk(want)][-1:]
    if name != "jit":      # (JAX rewrites some docstrings; jit is a C++ object)
        for attr in ("__name__", "__qualname__", "__module__"):
            assert getattr(got, attr, None) == getattr(want, attr, None), attr
    x = np.arange(3.0, dtype=np.float32)
    for g, w in zip(jax.tree.leaves(got(x)), jax.tree.leaves(want(x))):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def test_dtypes_bfloat16_is_the_scalar_type():
    # equinox's tests build scalars with jax.dtypes.bfloat16(1)
    assert xform.dtypes.bfloat16 is jax.dtypes.bfloat16
    z = xform.dtypes.bfloat16(1)
    assert type(z) is type(jax.dtypes.bfloat16(1)) and float(z) == 1.0
    assert np.dtype(xform.dtypes.bfloat16) == np.dtype(jax.dtypes.bfloat16)
    assert xform.numpy.zeros(2, xform.dtypes.bfloat16).dtype == jax.numpy.zeros(
        2, jax.dtypes.bfloat16).dtype


@pytest.mark.parametrize("make", ["host", "device"])
def test_copy_of_device_array_survives_donating_the_copy(make):
    # equinox's test_jit donates jnp.copy(a) and then reads a
    def run(lib):
        a = lib.numpy.arange(6.0).reshape(2, 3)
        if make == "device":
            a = lib.jit(lambda x: x * 2)(a)      # held on the device only
        b = lib.numpy.copy(a)
        assert b is not a
        out = lib.jit(lambda x: x + 1, donate_argnums=0)(b)
        return np.asarray(a), np.asarray(out), a.is_deleted()
    for g, w in zip(run(xform), run(jax)):
        np.testing.assert_array_equal(g, w)


def _donate(lib, fun, *args):
    import warnings
    args = [lib.numpy.asarray(a) for a in args]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = lib.jit(fun, donate_argnums=tuple(range(len(args))))(*args)
    msgs = [str(w.message) for w in record if "donated buffers" in str(w.message)]
    return out, [a.is_deleted() for a in args], msgs


@pytest.mark.parametrize("fun,args", [
    (lambda x, y: x + y.sum(), (np.float32(1), np.ones(10, np.float32))),  # y unusable
    (lambda y: y.reshape(2, 5), (np.ones(10, np.float32),)),   # same size: donated
    (lambda x, y: (x * 2, y + 1), (np.ones(3, np.float32), np.ones(3, np.float32))),
    (lambda x: x.sum(), (np.ones((2, 3), np.float32),)),
])
def test_unusable_donations_warn_and_stay_alive_as_jax(fun, args):
    # equinox's filter_jit(donate="warn") expects JAX's warning
    got, want = _donate(xform, fun, *args), _donate(jax, fun, *args)
    for g, w in zip(jax.tree.leaves(got[0]), jax.tree.leaves(want[0])):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert got[1] == want[1]                    # which arguments were consumed
    assert len(got[2]) == len(want[2])
    for g, w in zip(got[2], want[2]):           # JAX's first line, avals as JAX prints
        assert g.splitlines()[0] == w.splitlines()[0]


@pytest.mark.parametrize("lib", [xform, jax], ids=["xform", "jax"])
def test_donated_buffer_is_reused_by_the_output(lib):
    # equinox's buffer-donation tests compare unsafe_buffer_pointer() before and after
    x = lib.numpy.array(0.0)                       # held on the host in xform
    p = x.unsafe_buffer_pointer()
    assert isinstance(p, int) and p == x.unsafe_buffer_pointer()
    y = lib.jit(lambda v: v + 1, donate_argnums=0)(x)
    assert x.is_deleted() and y.unsafe_buffer_pointer() == p
    with pytest.raises(RuntimeError, match="deleted"):
        x.unsafe_buffer_pointer()
    kept = lib.numpy.ones(3)
    q = kept.unsafe_buffer_pointer()
    z = lib.jit(lambda v: v * 2)(kept)             # not donated: a new buffer
    assert not kept.is_deleted() and z.unsafe_buffer_pointer() != q
    np.testing.assert_array_equal(np.asarray(kept), 1.0)


_BRANCH_ERRORS = [
    lambda lib: lib.lax.cond(True, lambda x: (x, x), lambda x: x, 1.0),
    lambda lib: lib.lax.switch(1, [lambda x: x, lambda x: {"a": x}, lambda x: [x]], 1.0),
    lambda lib: lib.lax.cond(True, lambda x: x, lambda x: x.astype(int), 1.0),
    lambda lib: lib.lax.cond(True, lambda x: (x, x), lambda x: (x.astype(int),
                             lib.numpy.stack([x, x]).astype(int)), 1.0),
    lambda lib: lib.lax.switch(0, [lambda x: x, lambda x: lib.numpy.stack([x, x])], 1.0),
]


def _branch_error(lib, make):
    with pytest.raises(TypeError) as e:
        make(lib)
    return str(e.value)


@pytest.mark.parametrize("make", _BRANCH_ERRORS)
def test_branch_output_errors_read_as_jax(make):
    # haiku's stateful tests match "cond branch outputs must have the same pytree structure"
    got, want = _branch_error(xform, make), _branch_error(jax, make)
    g, w = got.split("\n"), want.split("\n")
    assert g[0] == w[0]                                   # the headline
    assert [l.split(" is ")[0] for l in g[2:4]] == [l.split(" is ")[0] for l in w[2:4]]
    assert g[-1] == w[-1]                                 # what to revise
    if "output types" in w[0]:       # the per-output differences, word for word
        assert g[5:-2] == w[5:-2]
    if "pytree structure" in w[0]:   # the structural difference, word for word
        assert g[4:6] == w[4:6]


@pytest.mark.parametrize("n", [1, 2, 4])
def test_branch_functions_given_twice_are_traced_once(n):
    def count(lib):
        calls = {"f": 0, "g": 0}

        def f(x):
            calls["f"] += 1
            return x ** 2

        def g(x):
            calls["g"] += 1
            return x + 1

        out = lib.lax.switch(1, [f, g] * n, 2.0)
        lib.lax.cond(False, f, f, 1.0)
        return float(out), calls
    assert count(xform) == count(jax)


@pytest.mark.parametrize("lib", [xform, jax], ids=["xform", "jax"])
def test_lowered_compile_passes_compiler_options_to_xla(lib):
    # equinox's test_jit: a known option compiles, an unknown one is XLA's error
    lowered = lib.jit(lambda x, y: 2 * x + y).lower(lib.numpy.array(3), 4)
    out = lowered.compile(compiler_options={"xla_cpu_enable_fast_math": False})(
        lib.numpy.array(3), 4)
    assert int(out) == 10
    with pytest.raises(lib.errors.JaxRuntimeError, match="No such compile option"):
        lowered.compile(compiler_options={"an option that does not make sense": "bad"})
    assert int(lowered.compile()(lib.numpy.array(3), 5)) == 11


def _symbolic_vjp(lib):
    seen = []

    @lib.custom_vjp
    def f(x, y):
        return x * y

    def fwd(x, y):
        cd = lib.custom_derivatives
        seen.append((type(x) is cd.CustomVJPPrimal, x.perturbed, y.perturbed))
        x, y = cd.custom_vjp_primal_tree_values((x, y))
        return x * y, (x, y)

    def bwd(res, g):
        x, y = res
        return (g * y, g * x)

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    x, y = np.float32(2.0), np.float32(3.0)
    g1 = lib.grad(f)(x, y)                                   # only x perturbed
    g2 = lib.grad(f, argnums=(0, 1))(x, y)
    g3 = lib.jit(lib.vmap(lib.grad(f, argnums=1)))(np.arange(3.0, dtype=np.float32),
                                                    np.ones(3, np.float32))
    return [float(g1)] + [float(v) for v in g2] + list(np.asarray(g3)), seen


def test_custom_vjp_symbolic_zeros_fwd_sees_perturbation_as_jax():
    # equinox's filter_custom_vjp reads CustomVJPPrimal.perturbed
    assert _symbolic_vjp(xform) == _symbolic_vjp(jax)


def test_eval_shape_takes_avals_as_flax_linen_does():
    """flax.linen's ConvLocal calls eval_shape with a ``jax.core.ShapedArray`` argument."""
    import jax
    import jax.core

    def f(lib, aval_cls):
        return lib.eval_shape(lambda a, b: lib.numpy.tanh(a @ b), lib.numpy.ones((2, 3)),
                              aval_cls((3, 4), np.float32))
    got, want = f(xform, xform.core.ShapedArray), f(jax, jax.core.ShapedArray)
    assert (got.shape, got.dtype) == (want.shape, want.dtype) == ((2, 4), np.float32)


def test_einsum_private_dot_general_hook_as_flax_uses_it():
    """flax's Einsum/attention pass ``_dot_general=`` to jnp.einsum: it does every
    pairwise contraction."""
    import jax
    calls = []

    def run(lib):
        def dg(a, b, dimension_numbers, precision=None, preferred_element_type=None):
            calls.append(lib.__name__)
            return lib.lax.dot_general(a, b, dimension_numbers, precision=precision,
                                       preferred_element_type=preferred_element_type) * 2
        x, y, z = (lib.numpy.arange(float(n)).reshape(s) for n, s in
                   ((6, (2, 3)), (12, (3, 4)), (8, (4, 2))))
        return lib.numpy.einsum("ij,jk,kl->il", x, y, z, _dot_general=dg)
    np.testing.assert_allclose(run(xform), run(jax))
    assert calls.count("xform") == calls.count("jax") == 2

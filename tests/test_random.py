"""xform.random against real JAX 0.10.2: same key words, same bits, same errors.

Every comparison of samples is bitwise (`_same`): dtype, shape and every byte.
Both values of ``jax_threefry_partitionable`` are exercised (the flag is set on
both libraries together).  The full sampler x mode x shape matrix is marked slow;
the default run covers every sampler once plus transformations and errors.
"""
from __future__ import annotations

import contextlib

import jax
import jax.numpy as jjnp
import jax.random as jr
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xform
import xform.numpy as xnp
import xform.random as xr
from xform._src.primitives.random import threefry2x32_reference


def _same(a, b):
    if "key" in str(getattr(a, "dtype", "")):
        a = jr.key_data(a)
    if "key" in str(getattr(b, "dtype", "")):
        b = xr.key_data(b)
    a, b = np.asarray(a), np.asarray(b)
    return (a.dtype == b.dtype and a.shape == b.shape
            and np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)))


def assert_same(a, b, what=""):
    assert _same(a, b), f"{what}: jax {np.asarray(a if 'key' not in str(a.dtype) else jr.key_data(a))}" \
        f" != xform {np.asarray(b if 'key' not in str(b.dtype) else xr.key_data(b))}"


@contextlib.contextmanager
def mode(partitionable):
    old_j = jax.config.jax_threefry_partitionable
    old_x = xform.config.jax_threefry_partitionable
    jax.config.update("jax_threefry_partitionable", partitionable)
    xform.config.update("jax_threefry_partitionable", partitionable)
    try:
        yield
    finally:
        jax.config.update("jax_threefry_partitionable", old_j)
        xform.config.update("jax_threefry_partitionable", old_x)


@contextlib.contextmanager
def x64():
    jax.config.update("jax_enable_x64", True)
    xform.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", False)
        xform.config.update("jax_enable_x64", False)


MODES = [True, False]

# ----------------------------------------------------------------- the primitive


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.integers(0, 6),
       st.booleans(), st.integers(0, 2**32 - 1))
def test_threefry_reference_matches_jax(k1, k2, n, big, seed):
    from jax._src.random.threefry2x32 import threefry2x32_p as jp
    rng = np.random.default_rng(seed)
    lo = 2**32 - 64 if big else 0
    x1 = rng.integers(lo, 2**32, n, dtype=np.uint64).astype(np.uint32)
    x2 = rng.integers(lo, 2**32, n, dtype=np.uint64).astype(np.uint32)
    ka, kb = np.full(n, k1, np.uint32), np.full(n, k2, np.uint32)
    want = [np.asarray(o) for o in jp.bind(ka, kb, x1, x2)]
    got = threefry2x32_reference(ka, kb, x1, x2)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    xla = xform.jit(lambda *a: xform.lax.threefry2x32(*a))(np.uint32(k1), np.uint32(k2), x1, x2)
    for g, w in zip(xla, want):
        np.testing.assert_array_equal(np.asarray(g), w)


def test_threefry_batching_matches_loop():
    ks = np.arange(6, dtype=np.uint32).reshape(3, 2) * np.uint32(2**31 + 7)
    x = np.arange(12, dtype=np.uint32).reshape(3, 4)
    out = xform.vmap(lambda k, c: xform.lax.threefry2x32(k[0], k[1], c, c + np.uint32(1)))(ks, x)
    for i in range(3):
        ref = threefry2x32_reference(ks[i, 0], ks[i, 1], x[i], x[i] + np.uint32(1))
        np.testing.assert_array_equal(np.asarray(out[0][i]), ref[0])
        np.testing.assert_array_equal(np.asarray(out[1][i]), ref[1])


# ----------------------------------------------------------------- keys


SEEDS = [0, 1, 42, -1, -7, 2**31 - 1, 2**31, 2**32 - 1, 2**32 + 5, -2**40, 2**62 + 3]


@pytest.mark.parametrize("seed", SEEDS)
def test_prngkey_words(seed):
    assert_same(jr.PRNGKey(seed), xr.PRNGKey(seed), f"PRNGKey({seed})")
    assert_same(jr.key(seed), xr.key(seed), f"key({seed})")


def test_prngkey_words_x64_and_array_seeds():
    with x64():
        for seed in SEEDS + [2**63 - 11, -2**63]:
            assert_same(jr.PRNGKey(seed), xr.PRNGKey(seed), f"x64 PRNGKey({seed})")
        for r in (jr, xr):
            with pytest.raises(OverflowError):
                r.PRNGKey(2**64 - 1)
        for s in (np.int64(-3), np.uint64(2**40 + 1), np.int32(-5), np.uint8(200)):
            assert_same(jr.PRNGKey(s), xr.PRNGKey(s), f"x64 PRNGKey({s!r})")
    for s in (np.int32(-5), np.uint32(2**32 - 2), np.int16(-9)):
        assert_same(jr.PRNGKey(s), xr.PRNGKey(s), f"PRNGKey({s!r})")
    assert_same(jax.jit(jr.PRNGKey)(7), xform.jit(xr.PRNGKey)(7), "jit(PRNGKey)")


@pytest.mark.parametrize("part", MODES)
def test_split_fold_in_bits(part):
    with mode(part):
        for seed in (3,):
            jk, xk = jr.PRNGKey(seed), xr.PRNGKey(seed)
            for num in (2, 0, (2, 3)):
                assert_same(jr.split(jk, num), xr.split(xk, num), f"split {num}")
            for d in (2**32 - 1, np.uint32(9)):
                assert_same(jr.fold_in(jk, d), xr.fold_in(xk, d), f"fold_in {d!r}")
            for dt in ("uint8", "uint16", "uint32"):
                for shp in ((), (0,), (7, 3)):
                    assert_same(jr.bits(jk, shp, dt), xr.bits(xk, shp, dt), f"bits {dt} {shp}")
            with x64():
                jk64, xk64 = jr.PRNGKey(seed), xr.PRNGKey(seed)
                for shp in ((2, 3),):
                    assert_same(jr.bits(jk64, shp, "uint64"), xr.bits(xk64, shp, "uint64"),
                                f"bits u64 {shp}")


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(-2**31, 2**31 - 1), shape=st.lists(st.integers(0, 5), max_size=3),
       dtype=st.sampled_from(["float32", "float16", "bfloat16"]), part=st.booleans())
def test_uniform_normal_property(seed, shape, dtype, part):
    shape = tuple(shape)
    with mode(part):
        jk, xk = jr.key(seed), xr.key(seed)
        assert_same(jr.uniform(jk, shape, dtype), xr.uniform(xk, shape, dtype), "uniform")
        assert_same(jr.normal(jk, shape, dtype), xr.normal(xk, shape, dtype), "normal")
        assert_same(jr.uniform(jk, shape, dtype, -2.0, 3.5),
                    xr.uniform(xk, shape, dtype, -2.0, 3.5), "uniform range")


def test_uniform_normal_float64():
    with x64():
        for part in MODES:
            with mode(part):
                assert_same(jr.uniform(jr.key(1), (5,), "float64"),
                            xr.uniform(xr.key(1), (5,), "float64"), "uniform f64")
                assert_same(jr.normal(jr.key(1), (5,), "float64"),
                            xr.normal(xr.key(1), (5,), "float64"), "normal f64")


# ----------------------------------------------------------------- samplers

P3 = np.array([0.1, 0.2, 0.3, 0.4])
COV = np.array([[2., 0.3, 0.1], [0.3, 1., 0.2], [0.1, 0.2, 0.5]], np.float32)
MEAN = np.array([1., -1., 0.], np.float32)
SAMPLERS = {
    "uniform_bcast": lambda r, k: r.uniform(k, (2, 3), minval=np.array([0., 1., 2.]), maxval=4.),
    "normal_c64": lambda r, k: r.normal(k, (3,), "complex64"),
    "randint": lambda r, k: r.randint(k, (5,), 0, 10),
    "randint_i8_limits": lambda r, k: r.randint(k, (6,), -128, 128, dtype="int8"),
    "randint_i32_limits": lambda r, k: r.randint(k, (6,), -2**31, 2**31 - 1),
    "randint_u8": lambda r, k: r.randint(k, (6,), 0, 256, dtype="uint8"),
    "randint_bcast": lambda r, k: r.randint(k, (2, 3), np.array([0, 5, 10]), 20),
    "randint_float_bounds": lambda r, k: r.randint(k, (4,), 0.5, 3.5),
    "permutation_int": lambda r, k: r.permutation(k, 10),
    "permutation_axis": lambda r, k: r.permutation(k, np.arange(12).reshape(3, 4), axis=1),
    "permutation_indep": lambda r, k: r.permutation(k, np.arange(12.).reshape(3, 4), 1, True),
    "choice": lambda r, k: r.choice(k, 5, (3,)),
    "choice_norep": lambda r, k: r.choice(k, np.arange(10.), (4,), replace=False),
    "choice_p": lambda r, k: r.choice(k, 4, (2, 3), p=P3),
    "choice_p_norep": lambda r, k: r.choice(k, np.arange(8).reshape(4, 2), (3,), False, P3),
    "truncated_normal": lambda r, k: r.truncated_normal(k, -1., np.array([0.5, 2.]), (3, 2)),
    "bernoulli": lambda r, k: r.bernoulli(k, 0.3, (6,)),
    "bernoulli_p": lambda r, k: r.bernoulli(k, np.array([0.1, 0.9], np.float32)),
    "bernoulli_high": lambda r, k: r.bernoulli(k, np.float32(0.3), (6,), mode="high"),
    "exponential": lambda r, k: r.exponential(k, (4,)),
    "cauchy": lambda r, k: r.cauchy(k, (4,)),
    "laplace": lambda r, k: r.laplace(k, (4,), "float16"),
    "logistic": lambda r, k: r.logistic(k, (4,)),
    "gumbel": lambda r, k: r.gumbel(k, (4,)),
    "gumbel_high": lambda r, k: r.gumbel(k, (4,), mode="high"),
    "gumbel_highest": lambda r, k: r.gumbel(k, (2, 3), mode="highest"),
    "categorical_high": lambda r, k: r.categorical(k, np.zeros((2, 3), np.float32), mode="high"),
    "choice_p_norep_highest": lambda r, k: r.choice(k, 5, (2,), False, np.ones(5) / 5,
                                                    mode="highest"),
    "categorical": lambda r, k: r.categorical(k, np.log(np.array([[.1, .2, .7], [.5, .25, .25]],
                                                                   np.float32))),
    "categorical_shape": lambda r, k: r.categorical(k, np.zeros((2, 3), np.float32), 0, (4, 3)),
    "categorical_norep": lambda r, k: r.categorical(k, np.zeros(5, np.float32), shape=(3,),
                                                    replace=False),
    "gamma": lambda r, k: r.gamma(k, np.array([0.5, 1., 3.], np.float32)),
    "gamma_shape": lambda r, k: r.gamma(k, 2.0, (2, 2)),
    "loggamma": lambda r, k: r.loggamma(k, np.array([0.1, 1., 3.], np.float32)),
    "beta": lambda r, k: r.beta(k, 2., np.array([1., 3.]), (2,)),
    "dirichlet": lambda r, k: r.dirichlet(k, np.array([1., 2., 3.], np.float32), (2,)),
    "pareto": lambda r, k: r.pareto(k, 2., (4,)),
    "t": lambda r, k: r.t(k, 3., (4,)),
    "chisquare": lambda r, k: r.chisquare(k, 3., (4,)),
    "f": lambda r, k: r.f(k, 3., 5., (4,)),
    "rademacher": lambda r, k: r.rademacher(k, (6,)),
    "double_sided_maxwell": lambda r, k: r.double_sided_maxwell(k, 1., 2., (4,)),
    "weibull_min": lambda r, k: r.weibull_min(k, 1., 2., (4,)),
    "rayleigh": lambda r, k: r.rayleigh(k, np.array([1., 2.]), (3, 2)),
    "wald": lambda r, k: r.wald(k, 2., (4,)),
    "geometric": lambda r, k: r.geometric(k, 0.3, (4,)),
    "triangular": lambda r, k: r.triangular(k, 0., 1., 3., (4,)),
    "lognormal": lambda r, k: r.lognormal(k, 0.5, (4,)),
    "generalized_normal": lambda r, k: r.generalized_normal(k, 1.5, (4,)),
    "ball": lambda r, k: r.ball(k, 3, 2, (2,)),
    "poisson": lambda r, k: r.poisson(k, np.array([0.5, 3., 20., 0.]), (4,)),
    "binomial": lambda r, k: r.binomial(k, np.array([5., 50., 100.]), np.array([0.3, 0.5, 0.9])),
    "multinomial": lambda r, k: r.multinomial(k, 10., np.array([0.2, 0.3, 0.5])),
    "mvn_cholesky": lambda r, k: r.multivariate_normal(k, MEAN, COV, (4,)),
    "mvn_eigh": lambda r, k: r.multivariate_normal(k, MEAN, COV, (2,), method="eigh"),
    "mvn_svd": lambda r, k: r.multivariate_normal(k, MEAN, COV, method="svd"),
    "orthogonal": lambda r, k: r.orthogonal(k, 3),
    "orthogonal_rect": lambda r, k: r.orthogonal(k, 4, (2,), m=2),
}
FAST_MODE_SAMPLERS = ["randint", "permutation_int", "choice_p"]
FAST_SAMPLERS = ["uniform_bcast", "randint_i8_limits", "choice_norep", "truncated_normal",
                 "bernoulli", "exponential", "categorical", "rademacher", "gamma_shape",
                 "mvn_cholesky", "orthogonal"]


@pytest.mark.parametrize("name", FAST_SAMPLERS)
def test_sampler_bits_match_jax_fast(name):
    fn = SAMPLERS[name]
    assert_same(fn(jr, jr.key(11)), fn(xr, xr.key(11)), name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_sampler_bits_match_jax(name):
    fn = SAMPLERS[name]
    for seed in (0, 11):
        assert_same(fn(jr, jr.key(seed)), fn(xr, xr.key(seed)), f"{name} seed {seed}")
    # raw keys give the same bits as typed keys
    assert_same(fn(jr, jr.PRNGKey(5)), fn(xr, xr.PRNGKey(5)), f"{name} raw key")


@pytest.mark.parametrize("name", FAST_MODE_SAMPLERS)
def test_sampler_bits_non_partitionable(name):
    with mode(False):
        assert_same(SAMPLERS[name](jr, jr.key(4)), SAMPLERS[name](xr, xr.key(4)), name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_sampler_bits_non_partitionable_all(name):
    with mode(False):
        for seed in (1, 2**33 + 1):
            assert_same(SAMPLERS[name](jr, jr.key(seed)), SAMPLERS[name](xr, xr.key(seed)), name)


SCALAR_AND_EMPTY = {
    "uniform": lambda r, k, s: r.uniform(k, s),
    "normal": lambda r, k, s: r.normal(k, s),
    "exponential": lambda r, k, s: r.exponential(k, s),
    "randint": lambda r, k, s: r.randint(k, s, -3, 3),
    "bernoulli": lambda r, k, s: r.bernoulli(k, 0.5, s),
    "gamma": lambda r, k, s: r.gamma(k, 1.5, s),
    "rademacher": lambda r, k, s: r.rademacher(k, s),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCALAR_AND_EMPTY))
def test_scalar_and_size_zero_shapes(name):
    fn = SCALAR_AND_EMPTY[name]
    for shape in ((), (0,), (2, 0)):
        assert_same(fn(jr, jr.key(3), shape), fn(xr, xr.key(3), shape), f"{name}{shape}")


def test_maxwell_matches_jax():
    assert_same(jr.maxwell(jr.key(11), (8,)), xr.maxwell(xr.key(11), (8,)), "maxwell")


# ----------------------------------------------------------------- transformations


@pytest.mark.parametrize("part", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_jit_vmap_scan_cond(part):
    with mode(part):
        jk, xk = jr.key(0), xr.key(0)
        assert_same(jax.jit(lambda k: jr.normal(k, (3,)))(jk),
                    xform.jit(lambda k: xr.normal(k, (3,)))(xk), "jit normal")
        assert_same(jax.jit(lambda k: jr.split(k, 3))(jk),
                    xform.jit(lambda k: xr.split(k, 3))(xk), "jit split (typed out)")
        jks, xks = jr.split(jk, 8), xr.split(xk, 8)
        assert_same(jax.vmap(lambda k: jr.normal(k, (3,)))(jks),
                    xform.vmap(lambda k: xr.normal(k, (3,)))(xks), "vmap normal")
        assert_same(jax.vmap(lambda k: jr.split(k))(jks), xform.vmap(lambda k: xr.split(k))(xks),
                    "vmap split")
        assert_same(jax.vmap(lambda k: jr.uniform(k, (2,)))(jr.split(jr.PRNGKey(1), 4)),
                    xform.vmap(lambda k: xr.uniform(k, (2,)))(xr.split(xr.PRNGKey(1), 4)),
                    "vmap raw keys")

        def body(r):
            def f(k, _):
                k, s = r.split(k)
                return k, r.uniform(s, (2,))
            return f
        jc, jy = jax.lax.scan(body(jr), jk, None, length=4)
        xc, xy = xform.lax.scan(body(xr), xk, None, length=4)
        assert_same(jy, xy, "scan ys")
        assert_same(jc, xc, "scan carry key")
        xc2, xy2 = xform.jit(lambda k: xform.lax.scan(body(xr), k, None, length=4))(xk)
        assert_same(jy, xy2, "jit(scan)")
        jb = jax.jit(lambda p, k: jax.lax.cond(p, lambda k: jr.split(k)[0],
                                               lambda k: jr.split(k)[1], k))(False, jk)
        xb = xform.jit(lambda p, k: xform.lax.cond(p, lambda k: xr.split(k)[0],
                                                   lambda k: xr.split(k)[1], k))(False, xk)
        assert_same(jb, xb, "cond key output")


def test_typed_keys_are_arrays_of_key_dtype():
    k = xr.key(0)
    assert str(k.dtype) == "key<fry>" and k.shape == () and k.ndim == 0
    assert repr(k) == repr(jr.key(0))
    ks = xr.split(k, 6)
    jks = jr.split(jr.key(0), 6)
    assert ks.shape == (6,)
    assert_same(jks[2], ks[2], "index")
    assert_same(jks[1:5:2], ks[1:5:2], "slice")
    assert_same(jks[np.array([4, 0])], ks[np.array([4, 0])], "gather")
    assert_same(jks.reshape(2, 3).T, ks.reshape(2, 3).T, "reshape+transpose")
    assert_same(jjnp.stack([jks[0], jks[1]]), xnp.stack([ks[0], ks[1]]), "stack")
    assert_same(jjnp.concatenate([jks, jks[:2]]), xnp.concatenate([ks, ks[:2]]), "concat")
    assert_same(jjnp.broadcast_to(jks[0], (2, 2)), xnp.broadcast_to(ks[0], (2, 2)), "broadcast")
    jit_idx = xform.jit(lambda ks, i: ks[i])(ks, 3)
    assert_same(jks[3], jit_idx, "jit dynamic index")
    sel = xform.jit(lambda ks: xnp.where(np.array([True, False] * 3), ks, ks[::-1]))(ks)
    assert_same(jjnp.where(np.array([True, False] * 3), jks, jks[::-1]), sel, "select")
    leaves = xform.tree_util.tree_leaves({"a": k, "b": [ks]})
    assert len(leaves) == 2 and str(leaves[0].dtype) == "key<fry>"
    data = xr.key_data(ks)
    assert data.shape == (6, 2) and data.dtype == np.uint32
    assert_same(jr.wrap_key_data(jr.key_data(jks)), xr.wrap_key_data(data), "wrap_key_data")
    assert xr.key_impl(k) == jr.key_impl(jr.key(0)) == "threefry2x32"
    assert_same(jr.clone(jks), xr.clone(ks), "clone")
    assert_same(jks.at[1].set(jr.key(9)), ks.at[1].set(xr.key(9)), ".at[].set")
    assert_same(jax.jit(lambda a, i: a.at[i].set(jr.key(7)))(jks, 2),
                xform.jit(lambda a, i: a.at[i].set(xr.key(7)))(ks, 2), "jit .at[].set")
    jaxpr = str(xform.make_jaxpr(lambda k: xr.normal(k))(k))
    assert "key<fry>[]" in jaxpr


# ----------------------------------------------------------------- gradients


def test_reparameterized_gradients_match_jax():
    gj = jax.grad(lambda s: jr.lognormal(jr.key(3), s, (3,)).sum())(0.5)
    gx = xform.grad(lambda s: xr.lognormal(xr.key(3), s, (3,)).sum())(0.5)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(gj), rtol=1e-6)
    f = lambda r: lambda lo: r.truncated_normal(r.key(2), lo, 2.0, (4,)).sum()  # noqa: E731
    np.testing.assert_allclose(np.asarray(xform.grad(f(xr))(-1.0)),
                               np.asarray(jax.grad(f(jr))(-1.0)), rtol=1e-5)
    g = lambda r: lambda m: (r.uniform(r.key(1), (5,), minval=m, maxval=3.0) ** 2).sum()  # noqa
    np.testing.assert_allclose(np.asarray(xform.grad(g(xr))(0.5)),
                               np.asarray(jax.grad(g(jr))(0.5)), rtol=1e-6)


def test_gamma_implicit_gradient_matches_jax():
    a = np.array([0.3, 2.5, 10.0], np.float32)
    gj = jax.grad(lambda a: jr.gamma(jr.key(3), a).sum())(a)
    gx = xform.grad(lambda a: xr.gamma(xr.key(3), a).sum())(a)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(gj), rtol=2e-4, atol=1e-6)


@pytest.mark.slow
def test_gamma_beta_dirichlet_implicit_gradients_match_jax():
    a = np.array([0.3, 1.0, 2.5, 10.0], np.float32)
    for name, fn in [("gamma", lambda r, a: r.gamma(r.key(3), a)),
                     ("loggamma", lambda r, a: r.loggamma(r.key(3), a)),
                     ("beta", lambda r, a: r.beta(r.key(3), a, 2.0)),
                     ("dirichlet", lambda r, a: r.dirichlet(r.key(3), a)[1:])]:
        gj = jax.grad(lambda a: fn(jr, a).sum())(a)
        gx = xform.grad(lambda a: fn(xr, a).sum())(a)
        np.testing.assert_allclose(np.asarray(gx), np.asarray(gj), rtol=2e-4, atol=1e-6,
                                   err_msg=name)


# ----------------------------------------------------------------- errors


BAD = {
    "float key": lambda r: r.normal(np.zeros(2, np.float32)),
    "wrong-shaped key": lambda r: r.normal(np.zeros(3, np.uint32)),
    "0-d key data": lambda r: r.split(np.uint32(3)),
    "split float num": lambda r: r.split(r.PRNGKey(0), 2.5),
    "choice too few": lambda r: r.choice(r.PRNGKey(0), 3, (5,), replace=False),
    "choice bad p": lambda r: r.choice(r.PRNGKey(0), 3, (2,), p=np.ones(4) / 4),
    "batched key": lambda r: r.normal(r.split(r.key(0)), (2,)),
    "array seed": lambda r: r.key(np.zeros(2, int)),
    "uniform int dtype": lambda r: r.uniform(r.key(0), dtype="int32"),
    "bits signed dtype": lambda r: r.bits(r.key(0), dtype="int32"),
    "fold_in array": lambda r: r.fold_in(r.key(0), np.arange(2)),
    "wrap bad data": lambda r: r.wrap_key_data(np.zeros((3,), np.uint32)),
    "key as seed": lambda r: r.key(r.key(0)),
    "randint float dtype": lambda r: r.randint(r.key(0), (2,), 0, 3, dtype="float32"),
    "dirichlet scalar alpha": lambda r: r.dirichlet(r.key(0), 1.0),
    "shape mismatch": lambda r: r.uniform(r.key(0), (3,), minval=np.zeros(2)),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_raises_like_jax(name):
    with pytest.raises(Exception) as ej:
        BAD[name](jr)
    with pytest.raises(type(ej.value)) as ex:
        BAD[name](xr)
    assert str(ex.value)


def test_mixing_typed_and_raw_keys_refused():
    with pytest.raises((TypeError, ValueError)):
        jjnp.concatenate([jr.split(jr.key(0)), jr.split(jr.PRNGKey(0))])
    with pytest.raises((TypeError, ValueError)):
        xnp.concatenate([xr.split(xr.key(0)), xr.split(xr.PRNGKey(0))])


# ----------------------------------------------------------------- lax.rng_bit_generator / rng_uniform


@settings(max_examples=6, deadline=None)
@given(alg=st.sampled_from([0, 1, 2]), dt=st.sampled_from(["uint8", "uint16", "uint32"]),
       shape=st.lists(st.integers(0, 5), max_size=3), seed=st.integers(0, 2**32 - 1))
def test_rng_bit_generator_matches_jax(alg, dt, shape, seed):
    from xform._src.primitives.random import rng_bit_generator_reference
    key = np.random.default_rng(seed).integers(0, 2**32, 4, dtype=np.uint64).astype(np.uint32)
    shape = tuple(shape)
    jk, jb = jax.lax.rng_bit_generator(key, shape, dt, jax.lax.RandomAlgorithm(alg))
    rk, rb = rng_bit_generator_reference(key, shape=shape, dtype=np.dtype(dt), algorithm=alg)
    xk, xb = xform.jit(lambda k: xform.lax.rng_bit_generator(k, shape, dt, alg))(key)
    ek, eb = xform.lax.rng_bit_generator(key, shape, dt, alg)
    for got in ((rk, rb), (xk, xb), (ek, eb)):
        assert_same(jk, got[0], "rng_bit_generator key")
        assert_same(jb, got[1], "rng_bit_generator bits")


def test_rng_bit_generator_uint64_x64():
    from xform._src.primitives.random import rng_bit_generator_reference
    key = np.array([1, 2**32 - 1, 7, 2**31], np.uint32)
    with x64():
        for alg in (1, 2):
            jk, jb = jax.lax.rng_bit_generator(key, (3, 5), "uint64", jax.lax.RandomAlgorithm(alg))
            rk, rb = rng_bit_generator_reference(key, shape=(3, 5), dtype=np.dtype("uint64"),
                                                 algorithm=alg)
            xk, xb = xform.jit(lambda k: xform.lax.rng_bit_generator(k, (3, 5), "uint64", alg))(key)
            assert_same(jb, rb, "u64 reference")
            assert_same(jb, xb, "u64 xla")
            assert_same(jk, xk, "u64 key")


def test_rng_uniform_range_shape_dtype():
    for lo, hi in ((np.float32(2.0), np.float32(3.0)), (np.int32(-5), np.int32(5))):
        for f in (lambda: xform.lax.rng_uniform(lo, hi, (500,)),
                  xform.jit(lambda: xform.lax.rng_uniform(lo, hi, (500,)))):
            x = np.asarray(f())
            assert x.shape == (500,) and x.dtype == lo.dtype
            assert x.min() >= lo and x.max() < hi
            assert len(np.unique(x)) > 5
    with pytest.raises(ValueError):
        xform.lax.rng_uniform(np.float32(0), np.int32(1), (2,))


# ----------------------------------------------------------------- typed keys: more of the surface


def test_typed_key_equality_dtype_queries_and_printing():
    ks, jks = xr.split(xr.key(0), 3), jr.split(jr.key(0), 3)
    np.testing.assert_array_equal(np.asarray(ks == ks[1]), np.asarray(jks == jks[1]))
    np.testing.assert_array_equal(np.asarray(ks != ks[0]), np.asarray(jks != jks[0]))
    assert bool(xr.key(5) == xr.key(5)) and not bool(xr.key(5) != xr.key(5))
    from xform import dtypes as xdt
    assert xnp.issubdtype(ks.dtype, xdt.prng_key) and xnp.issubdtype(ks.dtype, xdt.extended)
    assert not xnp.issubdtype(ks.dtype, np.integer)
    assert not xnp.issubdtype(np.float32, xdt.prng_key)
    assert str(xr.key(3)) == str(jr.key(3))
    assert_same(jax.device_put(jr.key(2)), xform.device_put(xr.key(2)), "device_put")
    import pickle
    assert_same(jks, pickle.loads(pickle.dumps(ks)), "pickle")
    with pytest.raises(TypeError):
        xr.key(0) + 1
    with pytest.raises(TypeError):
        xr.key(0).astype(np.uint32)
    with pytest.raises(TypeError):
        xr.key(0) == xr.PRNGKey(0)


def test_typed_keys_through_grad_fori_and_scan_xs():
    def g(L, R):
        return L.grad(lambda x, k: L.jit(lambda x, k: (x * R.normal(k, (3,))).sum())(x, k))(
            1.0, R.key(1))
    np.testing.assert_array_equal(np.asarray(g(xform, xr)), np.asarray(g(jax, jr)))
    assert_same(jax.lax.fori_loop(0, 3, lambda i, k: jr.fold_in(k, i), jr.key(5)),
                xform.lax.fori_loop(0, 3, lambda i, k: xr.fold_in(k, i), xr.key(5)), "fori")

    def sc(L, R):
        return L.lax.scan(lambda c, k: (c + R.uniform(k), R.normal(k)), 0.0,
                          R.split(R.key(2), 4))
    (jc, jy), (xc, xy) = sc(jax, jr), sc(xform, xr)
    assert_same(jc, xc, "scan carry")
    assert_same(jy, xy, "scan ys")
    assert_same(jax.vmap(lambda i: jr.fold_in(jr.key(0), i))(jjnp.arange(3)),
                xform.vmap(lambda i: xr.fold_in(xr.key(0), i))(xnp.arange(3)), "vmap keys out")


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shape=st.lists(st.integers(0, 4), max_size=2),
       lo=st.integers(-50, 50), width=st.integers(1, 100), p=st.integers(1, 99),
       lohi=st.tuples(st.integers(-100, 100), st.integers(1, 50)))
def test_sampler_parameters_property(seed, shape, lo, width, p, lohi):
    shape = tuple(shape)
    lo, width, p = lo / 10, width / 10, p / 100
    jk, xk = jr.key(seed), xr.key(seed)
    lo32, hi32 = np.float32(lo), np.float32(lo + width)
    assert_same(jr.uniform(jk, shape, minval=lo32, maxval=hi32),
                xr.uniform(xk, shape, minval=lo32, maxval=hi32), "uniform params")
    assert_same(jr.bernoulli(jk, np.float32(p), shape), xr.bernoulli(xk, np.float32(p), shape),
                "bernoulli p")
    a, span = lohi
    assert_same(jr.randint(jk, shape, a, a + span), xr.randint(xk, shape, a, a + span), "randint")
    assert_same(jr.truncated_normal(jk, lo32, hi32, shape),
                xr.truncated_normal(xk, lo32, hi32, shape), "truncated_normal")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_sampler_under_jit_and_vmap_of_split_keys(name):
    fn = SAMPLERS[name]
    assert_same(jax.jit(lambda k: fn(jr, k))(jr.key(8)),
                xform.jit(lambda k: fn(xr, k))(xr.key(8)), f"jit {name}")
    jv = jax.vmap(lambda k: fn(jr, k))(jr.split(jr.key(9), 3))
    xv = xform.vmap(lambda k: fn(xr, k))(xr.split(xr.key(9), 3))
    if name.startswith("mvn"):
        # The samples are bit-identical; the batched einsum with the factor is a dot_general
        # whose batched layout (engine's batching rule, not JAX's) changes XLA's summation
        # order: equal to ~1 ulp.
        np.testing.assert_allclose(np.asarray(xv), np.asarray(jv), rtol=3e-7, atol=1e-7)
    else:
        assert_same(jv, xv, f"vmap {name}")


def _outcome(f, *args):
    try:
        r = f(*args)
    except Exception as e:   # noqa: BLE001 - the exception type and text are the result
        return type(e), str(e)
    return "ok", str(r)


@pytest.mark.parametrize("what", [
    "asarray", "array", "__array__", "float", "int", "complex", "bool", "format",
    "device_get", "repr", "str", "iter0d", "dlpack_or_tolist"])
def test_key_arrays_refuse_numpy_conversion_like_jax(what):
    """Keys are not data: NumPy conversion and Python scalars are refused with JAX's
    TypeError (its text, naming key_data); printing, formatting and device_get work."""
    ops = {
        "asarray": np.asarray, "array": np.array, "__array__": lambda k: k.__array__(),
        "float": float, "int": int, "complex": complex, "bool": bool,
        "format": lambda k: f"{k}", "device_get": lambda k: repr(jax.device_get(k))
        if isinstance(k, jax.Array) else repr(xform.device_get(k)),
        "repr": repr, "str": str, "iter0d": list,
        "dlpack_or_tolist": lambda k: np.asarray(k[None]),
    }
    f = ops[what]
    want = _outcome(f, jr.key(7))
    got = _outcome(f, xr.key(7))
    assert got[0] is want[0] if want[0] != "ok" else got[0] == "ok", (got, want)
    if what in ("asarray", "array", "__array__", "format", "repr", "str", "device_get",
                "iter0d", "bool", "dlpack_or_tolist"):
        assert got[1] == want[1]


def test_key_array_conversions_refused_and_internals_never_convert_keys():
    k, ks = xr.key(7), xr.split(xr.key(7), 4)
    for f in (lambda: ks.tolist(), lambda: k.item(), lambda: k.__index__()):
        with pytest.raises((TypeError, AttributeError, NotImplementedError)):
            f()
    # everything else a user does with keys still works, eagerly and traced
    jks = jr.split(jr.key(7), 4)
    _same(jjnp.take(jks, jjnp.array([1, 10])), xnp.take(ks, xnp.array([1, 10])))
    _same(jjnp.zeros_like(jks), xnp.zeros_like(ks))
    _same(jjnp.full_like(jks[:1], 3), xnp.full_like(ks[:1], 3))
    _same(jjnp.array([jr.key(7), jr.key(7)]), xnp.array([k, k]))
    _same(jjnp.array([jr.key(7), jr.key(7)]), xform.jit(lambda k: xnp.array([k, k]))(k))
    with xform.debug_nans(True):
        _same(jr.split(jr.key(7)), xform.jit(lambda: xr.split(k))())
    jaxpr = str(xform.make_jaxpr(lambda: xr.split(k))())
    assert jaxpr.startswith("{ lambda a:key<fry>[]; .")   # a key constant, as JAX


def test_key_dtype_type_is_prng_key_as_jax():
    """A typed key's dtype.type is the abstract prng_key scalar class (jaxtyping's Key
    check reads dtype.type.__name__; libraries test issubdtype(dtype, prng_key))."""
    xk, jk = xform.random.key(0), jr.key(0)
    assert xk.dtype.type is xform.dtypes.prng_key
    assert xk.dtype.type.__name__ == jk.dtype.type.__name__ == "prng_key"
    for xs, js in [(xk.dtype, jk.dtype), (xk.dtype.type, jk.dtype.type)]:
        assert xform.dtypes.issubdtype(xs, xform.dtypes.prng_key) == \
            jax.dtypes.issubdtype(js, jax.dtypes.prng_key) == True  # noqa: E712
        assert xform.dtypes.issubdtype(xs, xform.dtypes.extended) == \
            jax.dtypes.issubdtype(js, jax.dtypes.extended) == True  # noqa: E712
    assert issubclass(xform.dtypes.prng_key, xform.dtypes.extended)
    assert not xform.dtypes.issubdtype(np.float32, xform.dtypes.prng_key)
    assert not xform.dtypes.issubdtype(xform.random.PRNGKey(0).dtype, xform.dtypes.prng_key)
    # keys keep working under transformations with the new dtype.type
    ks = xform.vmap(lambda k: xform.random.fold_in(k, 3))(xform.random.split(xk, 3))
    assert ks.dtype.type is xform.dtypes.prng_key and ks.shape == (3,)


"""Behaviours found by running numpyro's own test suite on xform
(tools/library_tests/run.py numpyro), each written in plain xform API and compared with
real JAX in the same process."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp


@pytest.mark.parametrize("lib,n", [(jax, jnp), (xform, xnp)], ids=["jax", "xform"])
def test_jit_with_key_argument_keeps_weak_types(lib, n):
    # numpyro's SVI step counter: a weakly typed int32 next to a PRNG key in the state;
    # a program over keys is compiled over their words, and re-tracing it must keep the
    # literal `1` of `i + 1` weak, or the next step's argument types differ and the
    # step function is traced (and its warnings issued) again.
    i = n.array(0)
    k = lib.random.key(0)
    out = lib.jit(lambda i, k: (i + 1, lib.random.split(k)[0]))(i, k)
    out2 = lib.jit(lambda i: (lib.random.normal(lib.random.key(1)), i * 2))(i)
    assert out[0].weak_type is True and out2[1].weak_type is True


def test_jit_with_key_argument_weak_types_match_jax():
    def f(lib, n):
        i = n.array(3)
        return lib.jit(lambda i, x, k: (i + 1, x * 2.0, i.astype(n.float32) + 1.5))(
            i, n.float32(1.0), lib.random.key(0))
    ours, theirs = f(xform, xnp), f(jax, jnp)
    assert [o.weak_type for o in ours] == [t.weak_type for t in theirs]
    assert [o.dtype for o in ours] == [t.dtype for t in theirs]
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(o), np.asarray(t))


def _tri(rng, *batch):
    a = np.tril(rng.standard_normal(batch + (3, 3))) + 3 * np.eye(3)
    return a.astype(np.float32)


@pytest.mark.parametrize("a_batch,b_shape", [
    ((), (13, 3, 1)),        # numpyro's LowerCholeskyAffine.inv: one a, a batch of b
    ((), (3,)), ((2,), (3,)), ((2,), (5, 1, 3, 2)), ((), (3, 4)), ((4, 1), (5, 3, 2)),
])
@pytest.mark.parametrize("trans", [0, 1])
def test_solve_triangular_broadcasts_batch_dims_like_jax(a_batch, b_shape, trans):
    import jax.scipy.linalg as jsl
    import xform.scipy.linalg as xsl
    rng = np.random.default_rng(0)
    a = _tri(rng, *a_batch)
    b = rng.standard_normal(b_shape).astype(np.float32)
    ours = xsl.solve_triangular(a, b, trans=trans, lower=True)
    theirs = jsl.solve_triangular(a, b, trans=trans, lower=True)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-6)


def test_solve_triangular_batched_vectors_warn_like_jax():
    import jax.scipy.linalg as jsl
    import xform.scipy.linalg as xsl
    rng = np.random.default_rng(1)
    a, b = _tri(rng, 2), rng.standard_normal((2, 3)).astype(np.float32)
    with pytest.warns(FutureWarning, match="batched 1D solves"):
        theirs = jsl.solve_triangular(a, b, lower=True)
    with pytest.warns(FutureWarning, match="batched 1D solves"):
        ours = xsl.solve_triangular(a, b, lower=True)
    assert ours.shape == theirs.shape == (2, 3)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5)


@pytest.mark.parametrize("a_shape,b_shape", [((2, 3, 3), (3, 3, 1)), ((3, 3), ())])
def test_solve_triangular_bad_shapes_raise_value_error(a_shape, b_shape):
    import jax.scipy.linalg as jsl
    import xform.scipy.linalg as xsl
    a = np.broadcast_to(np.eye(3, dtype=np.float32), a_shape)
    b = np.ones(b_shape, np.float32)
    with pytest.raises(ValueError):
        jsl.solve_triangular(a, b)
    with pytest.raises(ValueError):
        xsl.solve_triangular(a, b)


def _haar_jacobians():
    # the Jacobian of numpyro's HaarTransform(dim=-2) on (4, 5) events: an orthogonal
    # 20 x 20 matrix of entries 0, +-1/2, +-1/sqrt(2), 13 of them
    h = np.array([[1, 1], [1, -1]]) / np.sqrt(2)
    m = np.kron(np.kron(h, np.eye(2)), np.eye(5)).astype(np.float32)
    rng = np.random.default_rng(3)
    return np.stack([m[rng.permutation(20)] for _ in range(13)])


def test_slogdet_bits_match_jax():
    # log|det| sums log|pivot| over the LU diagonal; XLA's summation order follows the
    # program's shape (the diagonal's gather, the sign's integer parity), so the program
    # must be JAX's to give JAX's bits (numpyro compares log|det J| of orthogonal
    # transforms with 0 at atol 1e-6)
    rng = np.random.default_rng(2)
    for a in (_haar_jacobians(), rng.standard_normal((4, 6, 6)).astype(np.float32),
              (rng.standard_normal((3, 5, 5)) + 1j * rng.standard_normal((3, 5, 5))
               ).astype(np.complex64)):
        ours, theirs = xnp.linalg.slogdet(a), jnp.linalg.slogdet(a)
        for o, t in zip(ours, theirs):
            assert o.dtype == t.dtype and o.shape == t.shape
            np.testing.assert_array_equal(np.asarray(o), np.asarray(t))


@pytest.mark.parametrize("offset", [-3, -1, 0, 2, 4, 7])
@pytest.mark.parametrize("axes", [(0, 1), (1, 2), (2, 0), (-1, -2)])
def test_diagonal_matches_jax(offset, axes):
    x = np.arange(60.0, dtype=np.float32).reshape(3, 4, 5)
    ours, theirs = xnp.diagonal(x, offset, *axes), jnp.diagonal(x, offset, *axes)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    g = xform.grad(lambda v: xnp.sum(xnp.diagonal(v, offset, *axes) ** 2))(x)
    gj = jax.grad(lambda v: jnp.sum(jnp.diagonal(v, offset, *axes) ** 2))(x)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(gj))


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_is_custom_jvp_with_jax_tangent(name):
    # numpyro's Beta-Bernoulli NUTS potential goes through logaddexp (Bernoulli's
    # log-probability of a sigmoid); JAX's logaddexp is a custom-JVP function whose
    # tangent is t1 * exp(x1 - out) + t2 * exp(x2 - out): differentiating the max/abs
    # formula instead rounds differently and the trajectories drifted in the last bits.
    rng = np.random.RandomState(0)
    a = (rng.randn(200) * 3).astype(np.float32)
    b = (rng.randn(200) * 3).astype(np.float32)
    a[:4] = [np.inf, -np.inf, np.inf, np.nan]
    b[:4] = [np.inf, -np.inf, 1.0, 0.0]

    def run(lib, n):
        f = getattr(n, name)
        g = lib.jit(lib.vmap(lib.grad(f, argnums=(0, 1))))
        return (lib.jit(f)(a, b), *g(a, b))
    for o, t in zip(run(xform, xnp), run(jax, jnp)):
        np.testing.assert_array_equal(np.asarray(o), np.asarray(t))
    eqn = xform.make_jaxpr(getattr(xnp, name))(1.0, 2.0).jaxpr.eqns[0]
    assert eqn.primitive.name == jax.make_jaxpr(getattr(jnp, name))(1.0, 2.0).jaxpr.eqns[0].primitive.name


def test_logaddexp_integer_inputs_promote_like_jax():
    out, ref = xnp.logaddexp(1, 2), jnp.logaddexp(1, 2)
    assert out.dtype == ref.dtype and out.weak_type == ref.weak_type
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))


@pytest.mark.slow
def test_numpyro_beta_bernoulli_nuts_matches_jax_bitwise():
    numpyro = pytest.importorskip("numpyro")
    import subprocess
    import sys
    script = (
        "import sys\n"
        "if sys.argv[1] == 'xform':\n"
        "    import xform.compat; xform.compat.alias_jax()\n"
        "import jax, jax.numpy as jnp, numpy as np\n"
        "import numpyro, numpyro.distributions as dist\n"
        "from numpyro.infer import MCMC, NUTS\n"
        "def model(d):\n"
        "    p = numpyro.sample('p', dist.Beta(1., 1.))\n"
        "    numpyro.sample('obs', dist.Bernoulli(p), obs=d)\n"
        "m = MCMC(NUTS(model), num_warmup=100, num_samples=100, progress_bar=False)\n"
        "m.run(jax.random.key(0), jnp.array([1., 0, 1, 1, 0, 1, 1, 1, 0, 1]))\n"
        "sys.stdout.write(np.asarray(m.get_samples()['p']).tobytes().hex())\n")
    outs = [subprocess.run([sys.executable, "-c", script, lib], capture_output=True,
                           text=True, check=True).stdout for lib in ("xform", "jax")]
    assert outs[0] == outs[1]


def test_logaddexp_custom_jvp_under_checkpoint_with_a_literal_operand():
    """softplus is logaddexp(x, 0): under grad(checkpoint), the remat program's literal 0
    reached the custom-JVP rule as a NumPy value (an internal AttributeError); the rule
    now gets an array, as in JAX (found by the random-program test)."""
    x = np.linspace(-1.5, 1.5, 7).astype(np.float32)
    w = np.array([0.3, -0.7, 1.1, 0.2, -0.1, 0.5, 0.9], np.float32)

    def loss(L):
        return lambda v: L.numpy.sum(L.nn.softplus(v) * L.numpy.asarray(w))
    for policy in (None, "nothing_saveable"):
        xp = None if policy is None else getattr(xform.checkpoint_policies, policy)
        jp = None if policy is None else getattr(jax.checkpoint_policies, policy)
        got = xform.grad(xform.checkpoint(loss(xform), policy=xp))(xnp.asarray(x))
        want = jax.grad(jax.checkpoint(loss(jax), policy=jp))(x)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-7)

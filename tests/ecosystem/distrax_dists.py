"""distrax's README usage: distributions and bijectors, sampling, log-probabilities,
KL divergences, a transformed distribution, under jit, grad and vmap."""
import distrax
import jax
import jax.numpy as jnp

from _report import report

key = jax.random.key(1234)
mu = jnp.array([-1., 0., 1.])
sigma = jnp.array([0.1, 0.2, 0.3])

dist_distrax = distrax.MultivariateNormalDiag(mu, sigma)
samples = dist_distrax.sample(seed=key)
log_prob = dist_distrax.log_prob(samples)

normal = distrax.Normal(loc=0., scale=1.)
xs, lp = normal.sample_and_log_prob(seed=jax.random.key(0), sample_shape=(5,))
kl = distrax.Normal(mu, sigma).kl_divergence(distrax.Normal(0., 1.))

# a bijector and a transformed distribution (README: "Bijectors")
bij = distrax.Chain([distrax.ScalarAffine(shift=1., scale=2.), distrax.Tanh()])
y, ldj = bij.forward_and_log_det(jnp.linspace(-1., 1., 4))
x_back = bij.inverse(y)
td = distrax.Transformed(distrax.Normal(0., 1.), distrax.Block(distrax.Tanh(), 0))
ts, tlp = td.sample_and_log_prob(seed=jax.random.key(3), sample_shape=(4,))


@jax.jit
def loss(loc, scale, x):
    return -jnp.mean(distrax.Normal(loc, scale).log_prob(x))


g = jax.grad(loss, argnums=(0, 1))(0.3, 1.5, xs)
cat = distrax.Categorical(logits=jnp.array([0.1, 0.5, -1.0]))
cat_s = jax.vmap(lambda k: cat.sample(seed=k))(jax.random.split(jax.random.key(7), 6))
ent = cat.entropy()
mix = distrax.MixtureSameFamily(distrax.Categorical(logits=jnp.zeros(2)),
                                distrax.Normal(jnp.array([-1., 1.]), jnp.array([.5, .5])))
mix_lp = mix.log_prob(jnp.array([-1., 0., 2.]))
report(samples=samples, log_prob=log_prob, xs=xs, lp=lp, kl=kl, y=y, ldj=ldj,
       x_back=x_back, ts=ts, tlp=tlp, g0=g[0], g1=g[1], cat_s=cat_s, ent=ent, mix_lp=mix_lp)

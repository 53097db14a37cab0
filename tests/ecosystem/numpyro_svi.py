"""numpyro's README usage: a model with plates; SVI with an AutoNormal guide, and NUTS;
and the CAR distribution with a sparse (scipy) adjacency matrix, which numpyro evaluates
with ``jax.experimental.sparse.BCOO``."""
import numpy as np
import scipy.sparse

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS, SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoNormal

from _report import report

J = 8
y = jnp.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
sigma = jnp.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def eight_schools(J, sigma, y=None):
    mu = numpyro.sample("mu", dist.Normal(0, 5))
    tau = numpyro.sample("tau", dist.HalfCauchy(5))
    with numpyro.plate("J", J):
        theta = numpyro.sample("theta", dist.Normal(mu, tau))
        numpyro.sample("obs", dist.Normal(theta, sigma), obs=y)


guide = AutoNormal(eight_schools)
svi = SVI(eight_schools, guide, numpyro.optim.Adam(0.05), Trace_ELBO())
result = svi.run(jax.random.PRNGKey(0), 200, J, sigma, y=y, progress_bar=False)

mcmc = MCMC(NUTS(eight_schools), num_warmup=100, num_samples=100, progress_bar=False)
mcmc.run(jax.random.PRNGKey(1), J, sigma, y=y)
samples = mcmc.get_samples()
logp = dist.Normal(0.0, 2.0).log_prob(jnp.linspace(-3, 3, 7))

ring = np.roll(np.eye(6, dtype=np.float32), 1, axis=1)
adj = scipy.sparse.csr_matrix(ring + ring.T)
phi = jnp.linspace(-1.0, 1.0, 12).reshape(2, 6)


def car_logp(loc, correlation):
    return dist.CAR(loc, correlation, 2.0, adj, is_sparse=True).log_prob(phi).sum()


car_logp_sparse = jax.jit(car_logp)(jnp.zeros(6), 0.7)
car_grad_loc, car_grad_corr = jax.grad(car_logp, argnums=(0, 1))(jnp.zeros(6), 0.7)
report(car_logp_sparse=car_logp_sparse, car_grad_loc=car_grad_loc,
       car_grad_corr=car_grad_corr,
       svi_losses=result.losses, svi_mu=result.params["mu_auto_loc"],
       mcmc_mu_mean=jnp.mean(samples["mu"]), mcmc_tau_mean=jnp.mean(samples["tau"]),
       logp=logp)

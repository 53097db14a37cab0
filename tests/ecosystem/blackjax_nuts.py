"""blackjax's README usage: NUTS on a normal model's location and scale (a jitted
step, keys folded in per iteration), plus HMC, MALA and random-walk Metropolis steps
and Stan's window adaptation for a few iterations."""
import blackjax
import jax
import jax.numpy as jnp
import jax.scipy.stats as stats
import numpy as np

from _report import report

observed = np.random.default_rng(0).normal(10, 20, size=1_000).astype(np.float32)


def logdensity_fn(x):
    logpdf = stats.norm.logpdf(observed, x["loc"], x["scale"])
    return jnp.sum(logpdf)


step_size = 1e-3
inverse_mass_matrix = jnp.array([1., 1.])
nuts = blackjax.nuts(logdensity_fn, step_size, inverse_mass_matrix)
initial_position = {"loc": 1., "scale": 2.}
state = nuts.init(initial_position)
rng_key = jax.random.key(0)
step = jax.jit(nuts.step)
locs, steps = [], []
for i in range(100):
    nuts_key = jax.random.fold_in(rng_key, i)
    state, info = step(nuts_key, state)
    locs.append(state.position["loc"])
    steps.append(info.num_integration_steps)

# the first few iterations agree to rounding; after that only in distribution
hmc = blackjax.hmc(logdensity_fn, 1e-3, inverse_mass_matrix, num_integration_steps=10)
hs = hmc.init(initial_position)
hs, hinfo = jax.jit(hmc.step)(jax.random.key(1), hs)
mala = blackjax.mala(logdensity_fn, 1e-4)
ms, _ = jax.jit(mala.step)(jax.random.key(2), mala.init(initial_position))
rmh = blackjax.additive_step_random_walk.normal_random_walk(logdensity_fn, 0.5)
rs, rinfo = jax.jit(rmh.step)(jax.random.key(3), rmh.init(initial_position))

warmup = blackjax.window_adaptation(blackjax.nuts, logdensity_fn)
(wstate, params), _ = warmup.run(jax.random.key(4), initial_position, num_steps=5)

report(first_locs=jnp.stack(locs[:5]), first_steps=jnp.stack(steps[:5]),
       mcmc_loc_mean=jnp.mean(jnp.stack(locs[50:])),
       hmc_loc=hs.position["loc"], hmc_scale=hs.position["scale"],
       hmc_accept=hinfo.acceptance_rate,
       mala_loc=ms.position["loc"], rmh_loc=rs.position["loc"],
       rmh_accept=rinfo.acceptance_rate,
       warm_step=params["step_size"], warm_imm=params["inverse_mass_matrix"],
       warm_loc=wstate.position["loc"])

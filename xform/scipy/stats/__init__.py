"""``xform.scipy.stats``: ``jax.scipy.stats``'s distributions (logpdf/pdf/cdf/... with JAX's
names, signatures and edge cases), ``gaussian_kde``, ``mode``, ``rankdata`` and ``sem``."""
from xform.scipy.stats import (bernoulli, beta, betabinom, binom, cauchy, chi2,  # noqa: F401
                               dirichlet, expon, gamma, gennorm, geom, gumbel_l, gumbel_r,
                               laplace, logistic, multinomial, multivariate_normal, nbinom, norm,
                               pareto, poisson, t, truncnorm, uniform, vonmises, wrapcauchy)
from xform.scipy.stats._core import ModeResult, mode, rankdata, sem  # noqa: F401
from xform.scipy.stats.kde import gaussian_kde  # noqa: F401

__all__ = ["bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet", "expon",
           "gamma", "gennorm", "geom", "gumbel_l", "gumbel_r", "laplace", "logistic",
           "multinomial", "multivariate_normal", "nbinom", "norm", "pareto", "poisson", "t",
           "truncnorm", "uniform", "vonmises", "wrapcauchy", "gaussian_kde", "mode", "rankdata",
           "sem"]

"""xform.scipy.stats against jax.scipy.stats: every distribution function on hypothesis
draws (values, dtypes, weak types), edge cases (outside the support, bad parameters),
gradients, jit/vmap, gaussian_kde, mode/rankdata/sem, and the list of missing names."""
import jax
import jax.scipy.stats as J
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import xform
import xform.scipy.stats as S
from tests.prim_testutil import examples

F32 = np.float32


def _u(lo, hi):
    return lambda r, n: r.uniform(lo, hi, n).astype(F32)


def _k(lo, hi):
    return lambda r, n: r.integers(lo, hi, n).astype(F32)


X, P, POS, K = _u(-4, 4), _u(0.02, 0.98), _u(0.2, 5), _k(0, 7)
C = {"x": X, "p": P, "pos": POS, "k": K, "k2": _k(0, 2), "pos1": _u(1.0, 6)}
CONT = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]

# distribution -> {function: argument kinds}
TABLE = {   # "required kinds | optional kinds (loc, scale...)"
    "bernoulli": {"logpmf": "k2 p | x", "pmf": "k2 p | x", "cdf": "x p |", "ppf": "p p |"},
    "beta": {f: "p pos pos | x pos" for f in CONT},
    "betabinom": {f: "k pos1 pos pos | x" for f in ["logpmf", "pmf"]},
    "binom": {f: "k pos1 p | x" for f in ["logpmf", "pmf"]},
    "cauchy": {**{f: "x | x pos" for f in CONT}, "ppf": "p | x pos", "isf": "p | x pos"},
    "chi2": {f: "pos pos | x pos" for f in CONT},
    "expon": {**{f: "x | x pos" for f in CONT}, "ppf": "p | x pos"},
    "gamma": {f: "pos pos | x pos" for f in CONT},
    "gennorm": {f: "x pos |" for f in ["logpdf", "pdf", "cdf"]},
    "geom": {f: "k p | x" for f in ["logpmf", "pmf"]},
    "gumbel_l": {**{f: "x | x pos" for f in CONT}, "ppf": "p | x pos"},
    "gumbel_r": {**{f: "x | x pos" for f in CONT}, "ppf": "p | x pos"},
    "laplace": {f: "x | x pos" for f in ["logpdf", "pdf", "cdf"]},
    "logistic": {**{f: "x | x pos" for f in ["logpdf", "pdf", "cdf", "sf"]},
                 "ppf": "p | x pos", "isf": "p | x pos"},
    "nbinom": {f: "k pos p | x" for f in ["logpmf", "pmf"]},
    "norm": {**{f: "x | x pos" for f in CONT}, "ppf": "p | x pos", "isf": "p | x pos"},
    "pareto": {**{f: "pos1 pos | x pos" for f in CONT}, "ppf": "p pos | x pos"},
    "poisson": {f: "k pos | x" for f in ["logpmf", "pmf", "cdf"]},
    "t": {f: "x pos | x pos" for f in ["logpdf", "pdf"]},
    "truncnorm": {f: "x lo hi | x pos" for f in CONT},
    "uniform": {**{f: "x | x pos" for f in ["logpdf", "pdf", "cdf"]}, "ppf": "p | x pos"},
    "vonmises": {f: "x pos |" for f in ["logpdf", "pdf"]},
    "wrapcauchy": {f: "pos p |" for f in ["logpdf", "pdf"]},
}
# pdf/pmf are exp(logpdf/logpmf) in JAX and here: exhaustive checks of them run as slow
DERIVED = {"pdf", "pmf"}
CASES = [pytest.param(d, f, marks=pytest.mark.slow)
         if f in DERIVED or (d == "truncnorm" and f not in ("logpdf", "logcdf")) else (d, f)
         for d, fs in TABLE.items() for f in fs]


_JAX_JIT = {}


def JJ(dist, fn):
    """jax's function under jax.jit (one compilation instead of one per primitive)."""
    if (dist, fn) not in _JAX_JIT:
        _JAX_JIT[dist, fn] = jax.jit(getattr(getattr(J, dist), fn))
    return _JAX_JIT[dist, fn]


def _jj(f):
    """JAX's function under jax.jit, as the oracle of the fixed-input tests below: one XLA
    compilation per call instead of one per primitive of JAX's eager evaluation."""
    return jax.jit(f)


def _close(o, t, rtol=2e-4):
    o, t = np.asarray(o), np.asarray(t)
    assert o.shape == t.shape and o.dtype == t.dtype, (o.shape, t.shape, o.dtype, t.dtype)
    np.testing.assert_allclose(o, t, rtol=rtol, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dist,fn", CASES)
@examples(1)
@given(seed=st.integers(0, 2**31 - 1), nargs=st.integers(0, 2))
def test_values_vs_jax(dist, fn, seed, nargs):
    rng = np.random.default_rng(seed)
    req, opt = (part.split() for part in TABLE[dist][fn].split("|"))
    kinds = req + opt[:nargs]
    args = []
    for k in kinds:
        if k == "lo":
            args.append(rng.uniform(-3, 1, 6).astype(F32))
        elif k == "hi":   # a < b
            args.append(args[-1] + rng.uniform(0.1, 3, 6).astype(F32))
        else:
            args.append(C[k](rng, 6))
    _close(getattr(getattr(S, dist), fn)(*args), JJ(dist, fn)(*args))


OUTSIDE = np.float32([-np.inf, -1.0, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan])


EDGE_FAST = {"logpdf", "logpmf", "cdf", "ppf", "isf"}
EDGE_CASES = [(d, f) if f in EDGE_FAST and d != "truncnorm" or (d, f) == ("truncnorm", "logpdf")
              else pytest.param(d, f, marks=pytest.mark.slow)
              for d, fs in TABLE.items() for f in fs]


@pytest.mark.parametrize("dist,fn", EDGE_CASES)
def test_support_edges_vs_jax(dist, fn):
    """Values outside the support, at its ends and NaN, with bad parameters too."""
    nparams = len(TABLE[dist][fn].split("|")[0].split()) - 1
    x = np.repeat(OUTSIDE, 3)
    params = [np.tile(np.float32([0.5, -1.0, 2.0]), len(OUTSIDE)) for _ in range(nparams)]
    if dist == "truncnorm":
        params = [np.tile(np.float32([-1.0, 0.5, 1.0]), len(OUTSIDE)),
                  np.tile(np.float32([1.0, 0.2, 3.0]), len(OUTSIDE))]
    # eager against eager: XLA's fusion may turn inf - inf and log(0) differently under jit
    _close(getattr(getattr(S, dist), fn)(x, *params), getattr(getattr(J, dist), fn)(x, *params))


def test_weak_types_and_promotion():
    from tests._np_helpers import check
    check(S.norm.logpdf(0.5), J.norm.logpdf(0.5), tol=1e-6)
    check(S.norm.cdf(np.float32(0.5), 1.0, 2.0), J.norm.cdf(np.float32(0.5), 1.0, 2.0), tol=1e-6)
    check(S.poisson.logpmf(np.int32([1, 2]), 3.0), J.poisson.logpmf(np.int32([1, 2]), 3.0),
          tol=1e-6)
    check(S.expon.pdf(np.float16([0.5, 1.0])), J.expon.pdf(np.float16([0.5, 1.0])), tol=2e-3)
    check(S.norm.ppf(np.float32([0.2, 0.7])), J.norm.ppf(np.float32([0.2, 0.7])), tol=1e-6)


def test_multivariate_dirichlet_multinomial():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 3)).astype(F32)
    m = F32([0.1, -0.3, 0.2])
    A = rng.normal(size=(3, 3)).astype(F32)
    cov = (A @ A.T + np.eye(3)).astype(F32)
    _close(S.multivariate_normal.logpdf(x, m, cov), _jj(J.multivariate_normal.logpdf)(x, m, cov))
    _close(S.multivariate_normal.pdf(x, m, cov), _jj(J.multivariate_normal.pdf)(x, m, cov))
    _close(S.multivariate_normal.logpdf(x, m, F32(2.0)), _jj(J.multivariate_normal.logpdf)(x, m, F32(2.0)))
    _close(S.multivariate_normal.logpdf(F32(0.3), F32(0.1), F32(2.0)),
           _jj(J.multivariate_normal.logpdf)(F32(0.3), F32(0.1), F32(2.0)))
    covs = np.stack([cov, 2 * cov])
    _close(S.multivariate_normal.logpdf(x[:2], m, covs), _jj(J.multivariate_normal.logpdf)(x[:2], m, covs))
    with pytest.raises(ValueError, match="incompatible shapes"):
        S.multivariate_normal.logpdf(x, m, np.eye(2, dtype=F32))
    alpha = F32([1.5, 2.0, 3.0])
    pts = F32([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])
    _close(S.dirichlet.logpdf(pts, alpha), _jj(J.dirichlet.logpdf)(pts, alpha))
    _close(S.dirichlet.pdf(pts[:2], alpha), _jj(J.dirichlet.pdf)(pts[:2], alpha))
    _close(S.dirichlet.logpdf(F32([0.2, 0.9, -0.1]), alpha),
           _jj(J.dirichlet.logpdf)(F32([0.2, 0.9, -0.1]), alpha))
    with pytest.raises(ValueError, match="one-dimensional"):
        S.dirichlet.logpdf(pts, pts)
    cnt = np.array([[1, 2, 3], [0, 6, 0]])
    p = F32([0.2, 0.3, 0.5])
    _close(S.multinomial.logpmf(cnt, 6, p), _jj(J.multinomial.logpmf)(cnt, 6, p))
    _close(S.multinomial.pmf(cnt[0], 7, p), _jj(J.multinomial.pmf)(cnt[0], 7, p))
    with pytest.raises(ValueError, match="integer type"):
        S.multinomial.logpmf(F32([1, 2, 3]), 6, p)


def test_gradients_vs_jax():
    x = F32([0.3, 1.2, 2.5])
    for f, g in [(lambda m: S.norm.logpdf(x, m, 1.5).sum(), lambda m: _jj(J.norm.logpdf)(x, m, 1.5).sum()),
                 (lambda a: S.gamma.cdf(x, a).sum(), lambda a: _jj(J.gamma.cdf)(x, a).sum()),
                 (lambda d: S.t.logpdf(x, d).sum(), lambda d: _jj(J.t.logpdf)(x, d).sum()),
                 (lambda s: S.truncnorm.logpdf(x, -1.0, 3.0, 0.2, s).sum(),
                  lambda s: _jj(J.truncnorm.logpdf)(x, -1.0, 3.0, 0.2, s).sum()),
                 (lambda b: S.beta.logpdf(x / 3, 2.0, b).sum(), lambda b: _jj(J.beta.logpdf)(x / 3, 2.0, b).sum())]:
        np.testing.assert_allclose(xform.grad(f)(F32(2.0)), _jj(jax.grad(g))(F32(2.0)), rtol=2e-4)
    np.testing.assert_allclose(xform.grad(lambda v: S.beta.cdf(v, 2.0, 3.0).sum())(x / 3),
                               _jj(jax.grad(lambda v: J.beta.cdf(v, 2.0, 3.0).sum()))(x / 3), rtol=2e-4)


def test_jit_and_vmap():
    x = F32([[0.3, 1.2], [2.5, -0.5]])
    _close(xform.jit(S.norm.logcdf)(x), _jj(J.norm.logcdf)(x))
    _close(xform.jit(S.truncnorm.logcdf)(x, -1.0, 2.0), _jj(J.truncnorm.logcdf)(x, -1.0, 2.0))
    _close(xform.vmap(S.cauchy.logpdf)(x, F32([0.1, 0.2])), _jj(jax.vmap(J.cauchy.logpdf))(x, F32([0.1, 0.2])))
    _close(xform.jit(S.poisson.entropy)(F32([0.5, 5.0, 50.0, 500.0, 0.0])),
           _jj(J.poisson.entropy)(F32([0.5, 5.0, 50.0, 500.0, 0.0])))


def test_gaussian_kde():
    rng = np.random.default_rng(1)
    data = rng.normal(size=(2, 30)).astype(F32)
    w = rng.uniform(0.5, 1.5, 30).astype(F32)
    pts = rng.normal(size=(2, 4)).astype(F32)
    for kw in [{}, {"bw_method": "silverman"}, {"bw_method": 0.4}, {"weights": w}]:
        ours, theirs = S.gaussian_kde(data, **kw), J.gaussian_kde(data, **kw)
        _close(ours.covariance, theirs.covariance)
        _close(ours(pts), theirs(pts))
        _close(ours.logpdf(pts), theirs.logpdf(pts))
        _close(ours.integrate_gaussian(F32([0.1, 0.2]), np.eye(2, dtype=F32)),
               theirs.integrate_gaussian(F32([0.1, 0.2]), np.eye(2, dtype=F32)))
        _close(ours.integrate_kde(ours), theirs.integrate_kde(theirs))
    one = S.gaussian_kde(data[0]), J.gaussian_kde(data[0])
    _close(one[0].integrate_box_1d(-0.5, 1.0), one[1].integrate_box_1d(-0.5, 1.0))
    _close(one[0].pdf(F32([0.0, 1.0])), one[1].pdf(F32([0.0, 1.0])))
    kde = S.gaussian_kde(data)
    leaves, tree = xform.tree_util.tree_flatten(kde)
    again = xform.tree_util.tree_unflatten(tree, leaves)
    _close(again(pts), kde(pts))
    _close(xform.jit(lambda k, p: k(p))(kde, pts), J.gaussian_kde(data)(pts))
    s = kde.resample(xform.random.key(0), (7,))
    assert s.shape == (2, 7) and s.dtype == np.float32
    with pytest.raises(ValueError, match="multiple elements"):
        S.gaussian_kde(F32([1.0]))
    with pytest.raises(ValueError, match="dimension"):
        kde(np.ones((3, 2), F32))


def test_mode_rankdata_sem():
    a = np.array([[1, 2, 2, 3, 3], [3, 3, 1, 1, 0], [5, 4, 4, 5, 4]])
    for kw in [{}, {"axis": 1}, {"axis": None}, {"axis": 1, "keepdims": True},
               {"axis": None, "keepdims": True}]:
        o, t = S.mode(a, **kw), J.mode(a, **kw)
        _close(o.mode, t.mode)
        _close(o.count, t.count)
    r = F32([3, 1, 2, 2, 5, 2])
    for method in ["average", "min", "max", "dense", "ordinal"]:
        _close(S.rankdata(r, method), J.rankdata(r, method))
    _close(S.rankdata(a, axis=1), J.rankdata(a, axis=1))
    _close(S.rankdata(F32([1, np.nan, 2])), J.rankdata(F32([1, np.nan, 2])))
    x = np.random.default_rng(0).normal(size=(4, 5)).astype(F32)
    _close(S.sem(x), J.sem(x))
    _close(S.sem(x, axis=1, ddof=0, keepdims=True), J.sem(x, axis=1, ddof=0, keepdims=True))
    xn = x.copy()
    xn[0, 0] = np.nan
    _close(S.sem(xn, nan_policy="omit"), J.sem(xn, nan_policy="omit"))
    with pytest.raises(ValueError, match="nan_policy"):
        S.mode(a, nan_policy="bad")
    with pytest.raises(ValueError, match="unknown method"):
        S.rankdata(r, "best")


def _public(mod):
    return {n for n in dir(mod) if not n.startswith("_")}


def test_no_jax_scipy_stats_name_is_missing():
    import types
    missing = sorted(_public(J) - _public(S))
    assert missing == []
    for name in _public(J):
        sub = getattr(J, name)
        if isinstance(sub, types.ModuleType):
            assert sorted(_public(sub) - _public(getattr(S, name))) == [], name

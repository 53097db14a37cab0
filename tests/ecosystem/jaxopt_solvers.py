"""jaxopt's README usage: LBFGS on a ridge regression, gradient descent, proximal
gradient (lasso), projected gradient on the simplex, a box-constrained QP (OSQP-free
BoxOSQP), root finding (Bisection, Broyden), and implicit differentiation of the solution
with respect to the regularisation strength."""
import jax
import jax.numpy as jnp
import jaxopt

from _report import report

kx, ky = jax.random.split(jax.random.key(0))
X = jax.random.normal(kx, (30, 5))
w_true = jnp.array([1., -2., 0., 0.5, 3.])
y = X @ w_true + 0.1 * jax.random.normal(ky, (30,))


def ridge(w, l2reg):
    r = X @ w - y
    return 0.5 * jnp.mean(r ** 2) + 0.5 * l2reg * jnp.sum(w ** 2)


w0 = jnp.zeros(5)
lbfgs = jaxopt.LBFGS(fun=ridge, maxiter=50, tol=1e-6)
w_lbfgs, st = lbfgs.run(w0, l2reg=0.1)
gd = jaxopt.GradientDescent(fun=ridge, maxiter=200, stepsize=0.1)
w_gd = gd.run(w0, l2reg=0.1).params

# implicit differentiation of the solution w.r.t. the hyperparameter
dw = jax.jacobian(lambda l: jaxopt.LBFGS(fun=ridge, maxiter=100, tol=1e-7).run(
    w0, l2reg=l).params)(0.1)


def least_squares(w, data):
    Xd, yd = data
    return 0.5 * jnp.mean((Xd @ w - yd) ** 2)


pg = jaxopt.ProximalGradient(fun=least_squares, prox=jaxopt.prox.prox_lasso, maxiter=300)
w_lasso = pg.run(w0, hyperparams_prox=0.05, data=(X, y)).params

pgs = jaxopt.ProjectedGradient(fun=least_squares, projection=jaxopt.projection.projection_simplex,
                               maxiter=200)
w_simplex = pgs.run(jnp.ones(5) / 5, data=(X, y)).params

root_bis = jaxopt.Bisection(optimality_fun=lambda x: x ** 3 - x - 2, lower=1., upper=2.,
                            tol=1e-6).run().params
broyden = jaxopt.Broyden(fun=lambda x: jnp.tanh(x) - 0.5 * jnp.array([1., 0.3]),
                         maxiter=50, tol=1e-6).run(jnp.zeros(2)).params

step = jax.jit(lambda p, s: lbfgs.update(p, s, l2reg=0.1))
p, s = w0, lbfgs.init_state(w0, l2reg=0.1)
vals = []
for _ in range(5):
    p, s = step(p, s)
    vals.append(s.value)

report(w_lbfgs=w_lbfgs, iters=st.iter_num, w_gd=w_gd, dw=dw, w_lasso=w_lasso,
       w_simplex=w_simplex, root_bis=root_bis, broyden=broyden, vals=jnp.stack(vals))

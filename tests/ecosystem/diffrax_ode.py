"""diffrax's README usage (an ODE solved with Dopri5 and saved at times), plus lineax's
(a linear solve with an operator) and optimistix's (root finding, least squares and
minimisation), all equinox-family libraries; gradients through the ODE solve and
the linear solve, under jit."""
import diffrax
import jax
import jax.numpy as jnp
import lineax as lx
import optimistix as optx

from _report import report

# diffrax README
def f(t, y, args):
    return -y

term = diffrax.ODETerm(f)
solver = diffrax.Dopri5()
y0 = jnp.array([2., 3.])
solution = diffrax.diffeqsolve(term, solver, t0=0, t1=1, dt0=0.1, y0=y0,
                               saveat=diffrax.SaveAt(ts=jnp.linspace(0, 1, 5)),
                               stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-6))


@jax.jit
def final(k):
    sol = diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, a: -a * y), diffrax.Tsit5(),
                              t0=0., t1=2., dt0=0.05, y0=jnp.ones(3), args=k)
    return jnp.sum(sol.ys[-1])

dk = jax.grad(final)(0.7)

# lineax README
matrix = jax.random.normal(jax.random.key(0), (10, 10))
vector = jax.random.normal(jax.random.key(1), (10,))
operator = lx.MatrixLinearOperator(matrix)
lsol = lx.linear_solve(operator, vector, solver=lx.LU())
spd = matrix @ matrix.T + 10 * jnp.eye(10)
cg = lx.linear_solve(lx.MatrixLinearOperator(spd, lx.positive_semidefinite_tag), vector,
                     solver=lx.CG(rtol=1e-6, atol=1e-6))
gsolve = jax.grad(lambda m: jnp.sum(lx.linear_solve(lx.MatrixLinearOperator(m), vector).value))(
    spd)

# optimistix README
def fn(y, args):
    a, b = y
    c = jnp.tanh(jnp.sum(b)) - a
    d = a**2 - jnp.sinh(b + 1)
    return c, d

root = optx.root_find(fn, optx.Newton(rtol=1e-5, atol=1e-5), (jnp.array(0.), jnp.zeros((2,))))


def rosenbrock(y, args):
    return jnp.sum(100 * (y[1:] - y[:-1] ** 2) ** 2 + (1 - y[:-1]) ** 2)

mini = optx.minimise(rosenbrock, optx.BFGS(rtol=1e-6, atol=1e-6), jnp.zeros(3))
lsq = optx.least_squares(lambda y, a: y ** 2 - a, optx.LevenbergMarquardt(rtol=1e-6, atol=1e-6),
                         jnp.ones(3), args=jnp.array([1., 4., 9.]))

report(ts=solution.ts, ys=solution.ys, dk=dk, lu=lsol.value, cg=cg.value, gsolve=gsolve,
       root_a=root.value[0], root_b=root.value[1], mini=mini.value, lsq=lsq.value,
       steps=mini.stats["num_steps"])

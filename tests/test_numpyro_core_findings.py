"""Behaviours found by running numpyro's non-inference test files (constraints, flows,
nn, ops, contrib, distributions) on xform (tools/library_tests/run.py numpyro), each
written in plain xform API and compared with real JAX in the same process."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp


def _bound_call(lib, prim_name, form):
    """sin(a) * b called through a call primitive that is given the function, as
    numpyro's eval_provenance tests bind it: JAX 0.10.2's ``subfuns=(fun,)`` form and
    the older function-first form (which xform also accepts: under the alias
    ``jax.__version__`` is xform's own, so version-gated code takes that branch)."""
    if lib is xform:
        from xform.extend.core import primitives as P
        import xform.extend.linear_util as lu
        from xform.api_util import debug_info, flatten_fun_nokwargs
    else:
        from jax.extend.core import primitives as P
        import jax.extend.linear_util as lu
        from jax.api_util import debug_info, flatten_fun_nokwargs
    prim = getattr(P, prim_name)
    n = lib.numpy

    def body(a, b):
        return n.sin(a) * b

    def call(a, b):
        args, in_tree = lib.tree.flatten((a, b))
        fn, out_tree = flatten_fun_nokwargs(
            lu.wrap_init(body, debug_info=debug_info("body", body, (a, b), {})), in_tree)
        out = (prim.bind(*args, subfuns=(fn,)) if form == "subfuns"
               else prim.bind(fn, *args))
        return lib.tree.unflatten(out_tree(), out)
    return call


@pytest.mark.parametrize("prim_name", ["call_p", "closed_call_p"])
@pytest.mark.parametrize("form", ["subfuns", "function_first"])
def test_call_primitives_take_their_function_like_jax(prim_name, form):
    x, y = np.arange(3.0, dtype=np.float32), np.full(3, 2.0, np.float32)
    ours = _bound_call(xform, prim_name, form)
    # JAX 0.10.2 accepts only subfuns=; its result is the reference for both forms
    theirs = _bound_call(jax, prim_name, "subfuns")
    for name, run in {
            "eager": lambda lib, c: c(x, y),
            "jit": lambda lib, c: lib.jit(c)(x, y),
            "grad": lambda lib, c: lib.grad(lambda a: c(a, y).sum())(x),
            "vmap": lambda lib, c: lib.vmap(c, (0, None))(np.stack([x, x + 1]), y),
    }.items():
        np.testing.assert_allclose(np.asarray(run(xform, ours)), np.asarray(run(jax, theirs)),
                                   rtol=1e-6, err_msg=name)
    # a program's call equation reads back the staged function's result type
    closed = xform.make_jaxpr(ours)(x, y)
    assert [v.aval.shape for v in closed.jaxpr.outvars] == [(3,)]


def test_call_primitive_bind_errors_name_the_problem():
    from xform.extend.core.primitives import call_p, closed_call_p
    with pytest.raises(TypeError, match="subfuns=\\(fun,\\), one function"):
        closed_call_p.bind(1.0, subfuns=())
    with pytest.raises(TypeError, match="no parameters besides its function"):
        call_p.bind(1.0, subfuns=(lambda a: [a],), name="f")
    with pytest.raises(TypeError, match="call_jaxpr="):
        closed_call_p.bind(1.0, 2.0)

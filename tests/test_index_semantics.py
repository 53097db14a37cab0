"""Index semantics do not depend on staging (issue #19).

Integer-array indices -- concrete or traced -- follow JAX: negative values wrap
once, gathers clamp (or fill), ``.at[]`` scatters drop out-of-range updates, and an
explicit ``mode=`` is always honoured.  Only a static Python integer out of bounds
raises ``IndexError`` (xform's deliberate improvement on JAX).  Every case runs
eagerly, with the index as a traced ``jit`` argument, and in JAX.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xform
import xform.numpy as xnp

W = np.arange(6, dtype=np.float32).reshape(3, 2)
IDX = [np.array([5, 1]), np.array([5, 1, -1, -4, -7]), np.array([[0, 3], [-3, 2]]),
       np.array(4), np.array(-4), np.array(-1)]

GETS = {
    "getitem": lambda m, w, i: w[i],
    "get": lambda m, w, i: w.at[i].get(),
    "clip": lambda m, w, i: w.at[i].get(mode="clip"),
    "fill": lambda m, w, i: w.at[i].get(mode="fill", fill_value=-1.0),
    "fill_nan": lambda m, w, i: w.at[i].get(mode="fill"),
    "promise": lambda m, w, i: w.at[i].get(mode="promise_in_bounds"),
    "row_then_cols": lambda m, w, i: w[1, i],
    "slice_then": lambda m, w, i: w[:, None][i],
}
SETS = {
    "set": lambda m, w, i: w.at[i].set(9.0),
    "add": lambda m, w, i: w.at[i].add(1.0),
    "mul": lambda m, w, i: w.at[i].multiply(2.0),
    "min": lambda m, w, i: w.at[i].min(0.5),
    "max": lambda m, w, i: w.at[i].max(4.5),
    "set_clip": lambda m, w, i: w.at[i].set(9.0, mode="clip"),
    "add_clip": lambda m, w, i: w.at[i].add(1.0, mode="clip"),
    "add_drop": lambda m, w, i: w.at[i].add(1.0, mode="drop"),
}


def _cases(table):
    return [(name, k) for name in table for k in range(len(IDX))]


def _check(fn, i):
    want = np.asarray(fn(jnp, jnp.asarray(W), jnp.asarray(i)))
    eager = fn(xnp, xnp.asarray(W), xnp.asarray(i))          # concrete index array
    host = fn(xnp, xnp.asarray(W), i)                          # a NumPy index array
    jitted = xform.jit(lambda w, i: fn(xnp, w, i))(W, i)       # the same index, traced
    for got in (eager, host, jitted):
        np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("name,k", _cases(GETS))
def test_gathers_eager_and_jit_match_jax(name, k):
    i = IDX[k]
    if name == "row_then_cols" and i.ndim == 0:
        i = i.reshape(1)
    _check(GETS[name], i)


@pytest.mark.parametrize("name,k", _cases(SETS))
def test_scatters_eager_and_jit_match_jax(name, k):
    i = IDX[k]
    if name.startswith("set") and i.size > 1:
        i = np.array([5, 1, -1])[: i.size] if i.ndim == 1 and i.size <= 3 else np.array([5, 1])
    _check(SETS[name], i)


def test_issue_examples():
    w = xnp.asarray(W)
    want = jnp.asarray(W)[jnp.array([5, 1])]
    np.testing.assert_array_equal(w[xnp.array([5, 1])], want)
    np.testing.assert_array_equal(xform.jit(lambda w, i: w[i])(w, xnp.array([5, 1])), want)
    np.testing.assert_array_equal(w.at[xnp.array([5, 1])].get(mode="clip"), want)
    # static Python ints out of bounds keep raising (our improvement) ...
    with pytest.raises(IndexError, match="index 5 out of bounds for axis 0 with size 3"):
        w[5]
    with pytest.raises(IndexError, match="out of bounds"):
        w.at[5].set(1.0)
    with pytest.raises(IndexError, match="out of bounds"):
        w[1, 2]
    # ... unless a mode is asked for explicitly, which is always honoured
    np.testing.assert_array_equal(w.at[5].get(mode="clip"), jnp.asarray(W).at[5].get(
        mode="clip"))
    np.testing.assert_array_equal(w.at[5].get(mode="fill", fill_value=0.0), [0.0, 0.0])
    np.testing.assert_array_equal(w.at[5].set(1.0, mode="drop"), W)
    np.testing.assert_array_equal(w.at[-5].add(1.0, mode="clip"),
                                  jnp.asarray(W).at[-5].add(1.0, mode="clip"))
    with pytest.raises(ValueError, match="mode"):
        w.at[xnp.array([1])].get(mode="wrap-around")


def test_gradients_of_out_of_range_indices_match_jax():
    """Scalar index arrays clamp in value and gradient (a dynamic slice); 'clip' clamps
    the gradient too, 'fill' and dropped scatter updates get none."""
    x = np.arange(3, dtype=np.float32) + 1.0
    fns = [lambda m, x, i: x[i] ** 2,
           lambda m, x, i: m.sum(x.at[m.stack([i, i - 1])].get(mode="clip") ** 2),
           lambda m, x, i: m.sum(x.at[m.stack([i, 0])].get(mode="fill", fill_value=2.0) ** 2),
           lambda m, x, i: m.sum(x.at[i].add(x[0] * 3.0) ** 2),
           lambda m, x, i: m.sum(x.at[i].set(x[1] * 2.0, mode="clip") ** 2)]
    for fn in fns:
        for i in (-7, -4, -3, -1, 0, 2, 3, 9):
            ii = np.int32(i)
            want = jax.grad(lambda x: fn(jnp, x, jnp.asarray(ii)))(x)
            got = xform.grad(lambda x: fn(xnp, x, xnp.asarray(ii)))(x)
            gotj = xform.jit(xform.grad(lambda x, i: fn(xnp, x, i)))(x, ii)
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=str(i))
            np.testing.assert_allclose(gotj, want, rtol=1e-6, err_msg=str(i))


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(-8, 8), min_size=1, max_size=5), st.sampled_from(
    [None, "clip", "fill"]), st.sampled_from(["get", "add", "max", "mul"]))
def test_random_index_arrays_eager_equals_jit_equals_jax(idx, mode, op):
    i = np.asarray(idx, np.int32)
    kw = {} if mode is None else {"mode": mode if op == "get" else
                                  ("drop" if mode == "fill" else mode)}

    def fn(m, w, i):
        if op == "get":
            return w.at[i].get(**kw)
        return getattr(w.at[i], {"mul": "multiply"}.get(op, op))(2.5, **kw)
    _check(fn, i)

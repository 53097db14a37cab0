"""Named-axis collectives under vmap, checked against NumPy reductions and real JAX.

Every collective is compared with the NumPy reduction over the mapped axis
(broadcast back to each example) and with ``jax.vmap`` of the same function
written against ``jax.lax``; errors are checked for type and wording.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jax
import jax.numpy as jnp
import xform
from xform._src.interpreters import staging, ir
from xform import lax

jax.config.update("jax_enable_x64", False)

RNG = np.random.default_rng(0)


def _arr(shape, dtype=np.float32):
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    return RNG.integers(-5, 6, shape).astype(dtype)


from test_vmap import _close  # noqa: E402  (weak type, shape, dtype, values vs JAX)


def _both(fn_of_lax, *args, in_axes=0, out_axes=0, axis_name="i"):
    """Run ``fn_of_lax(L, ...)`` with xform.lax and jax.lax under the two vmaps."""
    ours = xform.vmap(lambda *a: fn_of_lax(lax, *a), in_axes=in_axes, out_axes=out_axes,
                      axis_name=axis_name)(*args)
    ref = jax.vmap(lambda *a: fn_of_lax(jax.lax, *a), in_axes=in_axes, out_axes=out_axes,
                   axis_name=axis_name)(*args)
    return ours, ref


shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
reducers = st.sampled_from([("psum", np.sum), ("pmax", np.max), ("pmin", np.min),
                            ("pmean", np.mean)])


# ----------------------------------------------------------------- reductions


# Default run: 12 draws; the slow step runs the profile's default (the _exhaustive twin).
@settings(max_examples=12)
@given(shapes, st.data(), reducers, st.sampled_from([np.float32, np.int32]))
def test_reductions_match_numpy_and_jax(shape, data, red, dtype):
    _test_reductions_match_numpy_and_jax(shape, data, red, dtype)


@pytest.mark.slow
@given(shapes, st.data(), reducers, st.sampled_from([np.float32, np.int32]))
def test_reductions_match_numpy_and_jax_exhaustive(shape, data, red, dtype):
    _test_reductions_match_numpy_and_jax(shape, data, red, dtype)


def _test_reductions_match_numpy_and_jax(shape, data, red, dtype):
    name, np_red = red
    if name == "pmean" and dtype == np.int32:
        dtype = np.float32  # int pmean checked separately (float result)
    ax = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = _arr(shape, dtype)
    ours, ref = _both(lambda L, v: getattr(L, name)(v, "i"), x, in_axes=ax)
    expected = np_red(x, axis=ax, keepdims=True).astype(dtype)
    expected = np.broadcast_to(np.moveaxis(expected, ax, 0),
                               (shape[ax],) + np.moveaxis(x, ax, 0).shape[1:])
    _close(ours, expected)
    _close(ours, ref)


def test_pmean_of_ints_is_float():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    ours, ref = _both(lambda L, v: L.pmean(v, "i"), x)
    _close(ours, ref)


def test_reduction_out_axes_none_is_allowed():
    x = _arr((3, 4))
    ours, ref = _both(lambda L, v: L.psum(v, "i"), x, out_axes=None)
    _close(ours, ref)
    _close(ours, x.sum(0))


@pytest.mark.parametrize("value", [1, 2.5, True])
def test_psum_of_unbatched_value_is_times_axis_size(value):
    x = _arr((5, 2))
    ours, ref = _both(lambda L, v: L.psum(value, "i"), x)
    _close(ours, ref)
    ours, ref = _both(lambda L, v: (L.pmax(value, "i"), L.pmin(value, "i")), x)
    for o, r in zip(ours, ref):
        _close(o, r)


def test_psum_of_bool_counts():
    x = _arr((4, 3))
    ours, ref = _both(lambda L, v: L.psum(v > 0, "i"), x)
    _close(ours, ref)


def test_psum_pytree():
    x = _arr((3, 2))
    f = lambda L, v: L.psum({"a": v, "b": (v, 1.0)}, "i")
    ours, ref = _both(f, x)
    for o, r in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(ref)):
        _close(o, r)


def test_unbatched_closure_value():
    y = _arr((4,))
    ours, ref = _both(lambda L, v: L.psum(y, "i"), _arr((3, 2)))
    _close(ours, ref)
    _close(ours, np.broadcast_to(3 * y, (3, 4)))


# ----------------------------------------------------------------- nested axes


@pytest.mark.parametrize("names", ["i", "j", ("i", "j"), ("j", "i")])
@pytest.mark.parametrize("op", ["psum", "pmax", "pmin", "pmean"])
def test_nested_two_names(names, op):
    x = _arr((2, 3, 4))

    def run(V, L):
        inner = V(lambda v: getattr(L, op)(v, names), axis_name="j")
        return V(inner, axis_name="i")(x)

    ours, ref = run(xform.vmap, lax), run(jax.vmap, jax.lax)
    _close(ours, ref)
    red = {"psum": np.sum, "pmax": np.max, "pmin": np.min, "pmean": np.mean}[op]
    axes = tuple(sorted({"i": 0, "j": 1}[n] for n in (names if isinstance(names, tuple)
                                                       else (names,))))
    _close(ours, np.broadcast_to(red(x, axis=axes, keepdims=True), x.shape))


def test_nested_inner_axis_in_axes_and_outer_unbatched():
    # The inner vmap's argument is unbatched along the outer axis 'i'.
    x = _arr((3, 4))
    ours = xform.vmap(lambda a: xform.vmap(lambda v: lax.psum(v, "i"), axis_name="j")(x),
                      axis_name="i", axis_size=2, in_axes=None)(None)
    ref = jax.vmap(lambda a: jax.vmap(lambda v: jax.lax.psum(v, "i"), axis_name="j")(x),
                   axis_name="i", axis_size=2, in_axes=None)(None)
    _close(ours, ref)


def test_shadowed_name_uses_innermost():
    x = _arr((2, 3))
    f = lambda V, L: V(V(lambda v: L.psum(v, "i"), axis_name="i"), axis_name="i")(x)
    _close(f(xform.vmap, lax), f(jax.vmap, jax.lax))


# ----------------------------------------------------------------- gather / scatter / index


# Default run: 8 draws; the slow step runs the profile's default (the _exhaustive twin).
@settings(max_examples=8)
@given(shapes, st.data(), st.booleans())
def test_all_gather(shape, data, tiled):
    _test_all_gather(shape, data, tiled)


@pytest.mark.slow
@given(shapes, st.data(), st.booleans())
def test_all_gather_exhaustive(shape, data, tiled):
    _test_all_gather(shape, data, tiled)


def _test_all_gather(shape, data, tiled):
    in_ax = data.draw(st.integers(0, len(shape) - 1))
    per_ex_rank = len(shape) - 1
    if tiled and per_ex_rank == 0:
        tiled = False
    hi = per_ex_rank if tiled else per_ex_rank + 1
    axis = data.draw(st.integers(-hi, hi - 1))
    x = _arr(shape)
    ours, ref = _both(lambda L, v: L.all_gather(v, "i", axis=axis, tiled=tiled), x,
                      in_axes=in_ax)
    _close(ours, ref)


def test_all_gather_unbatched():
    ours, ref = _both(lambda L, v: L.all_gather(3.0, "i"), _arr((3, 2)))
    _close(ours, ref)


@pytest.mark.parametrize("tiled", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
def test_psum_scatter(tiled, dim):
    n = 3
    shape = [2, 2]
    shape[dim] = n * (2 if tiled else 1)
    x = _arr((n,) + tuple(shape))
    ours, ref = _both(lambda L, v: L.psum_scatter(v, "i", scatter_dimension=dim, tiled=tiled), x)
    _close(ours, ref)
    # negative scatter_dimension (JAX requires a non-negative one) counts from the end
    neg = xform.vmap(lambda v: lax.psum_scatter(v, "i", scatter_dimension=dim - 2, tiled=tiled),
                     axis_name="i")(x)
    _close(neg, ref)


def test_axis_index():
    x = _arr((4, 2))
    ours, ref = _both(lambda L, v: L.axis_index("i"), x)
    _close(ours, ref)
    _close(ours, np.arange(4, dtype=np.int32))
    ys = _arr((2, 3, 1))
    f = lambda V, L, n: V(V(lambda v: L.axis_index(n), axis_name="j"), axis_name="i")(ys)
    for names in ["i", "j", ("i", "j"), ("j", "i")]:
        _close(f(xform.vmap, lax, names), f(jax.vmap, jax.lax, names))


def test_axis_size():
    ys = _arr((2, 3, 1))
    f = lambda V, L, n: V(V(lambda v: v * 0 + L.axis_size(n), axis_name="j"),
                          axis_name="i")(ys)
    for names in ["i", "j", ("i", "j")]:
        _close(f(xform.vmap, lax, names), f(jax.vmap, jax.lax, names))


# ----------------------------------------------------------------- transformations


def _ad():
    import xform._ad_api
    return xform._ad_api


def test_vmap_of_grad_psum_transposes_to_psum():
    ad = _ad()
    x = _arr((3, 4))
    f = lambda L, np_: (lambda v: L.psum(np_.sin(v), "i").sum())
    ours = xform.vmap(ad.grad(f(lax, xform.numpy)), axis_name="i")(x)
    ref = jax.vmap(jax.grad(f(jax.lax, jnp)), axis_name="i")(x)
    _close(ours, ref)
    g = lambda L: (lambda v: (L.psum(v, "i") * v).sum())
    _close(xform.vmap(ad.grad(g(lax)), axis_name="i")(x),
           jax.vmap(jax.grad(g(jax.lax)), axis_name="i")(x))


def test_vmap_of_grad_all_gather_and_pmean():
    ad = _ad()
    x = _arr((3, 4))
    w = _arr((3, 4))
    f = lambda L: (lambda v: (L.all_gather(v, "i") * w).sum() + (L.pmean(v, "i") ** 2).sum())
    _close(xform.vmap(ad.grad(f(lax)), axis_name="i")(x),
           jax.vmap(jax.grad(f(jax.lax)), axis_name="i")(x))


def test_grad_through_vmap_with_psum():
    ad = _ad()
    x = _arr((3, 4))
    f = lambda V, L, np_: (lambda v: np_.sum(V(lambda e: L.psum(np_.sin(e), "i") * e,
                                             axis_name="i")(v)))
    _close(ad.grad(f(xform.vmap, lax, xform.numpy))(x), jax.grad(f(jax.vmap, jax.lax, jnp))(x))


def test_vmap_of_jvp_psum():
    ad = _ad()
    x, t = _arr((3, 4)), _arr((3, 4))
    f = lambda J, L: (lambda p, tt: J(lambda v: L.psum(v * v, "i"), (p,), (tt,)))
    ours = xform.vmap(f(ad.jvp, lax), axis_name="i")(x, t)
    ref = jax.vmap(f(jax.jvp, jax.lax), axis_name="i")(x, t)
    for o, r in zip(ours, ref):
        _close(o, r)


def test_pmax_has_no_derivative():
    ad = _ad()
    with pytest.raises(NotImplementedError, match="pmax"):
        xform.vmap(ad.grad(lambda v: lax.pmax(v, "i").sum()), axis_name="i")(_arr((3, 2)))


def test_staged_collective_then_evaluated_under_vmap():
    """A program staged inside vmap records psum (like make_jaxpr) and its evaluation
    under the same vmap reduces over the axis."""
    x = _arr((3, 4))
    printed = []

    def f(v):
        jaxpr, consts = staging.trace_to_jaxpr(lambda a: [lax.psum(a, "i")], [v.aval])
        printed.append(str(jaxpr))
        return ir.eval_jaxpr(jaxpr, consts, v)[0]

    ours = xform.vmap(f, axis_name="i")(x)
    _close(ours, np.broadcast_to(x.sum(0), x.shape))
    assert "psum" in printed[0] and "'i'" in printed[0], printed[0]


def test_collectives_abstract_eval_shapes():
    from xform._src.interpreters.core import ShapedArray
    from xform._src.primitives import collectives as C
    a = ShapedArray((2, 6), np.float32)
    assert C.psum_p.abstract_eval(a, axes=("i",), axis_index_groups=None) == a
    out = C.all_gather_p.abstract_eval(a, all_gather_dimension=1, axis_name="i",
                                       axis_index_groups=None, axis_size=3, tiled=False)
    assert out.shape == (2, 3, 6)
    out = C.all_gather_p.abstract_eval(a, all_gather_dimension=1, axis_name="i",
                                       axis_index_groups=None, axis_size=3, tiled=True)
    assert out.shape == (2, 18)
    out = C.reduce_scatter_p.abstract_eval(a, scatter_dimension=1, axis_name="i",
                                           axis_index_groups=None, axis_size=3, tiled=True)
    assert out.shape == (2, 2)
    assert C.axis_index_p.abstract_eval(axis_name="i") == ShapedArray((), np.int32)


# ----------------------------------------------------------------- errors


def test_unbound_axis_eager_is_name_error():
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.psum(1.0, "i")
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.axis_index("i")
    with pytest.raises(NameError, match="unbound axis name"):
        lax.all_gather(np.ones(3, np.float32), "i")


def test_unbound_axis_under_vmap_lists_bound_names():
    x = _arr((3, 2))
    with pytest.raises(NameError, match=r"unbound axis name: k.*'i'"):
        xform.vmap(lambda v: lax.psum(v, "k"), axis_name="i")(x)
    with pytest.raises(NameError, match=r"'j', 'i'"):
        xform.vmap(xform.vmap(lambda v: lax.pmean(v, "k"), axis_name="j"), axis_name="i")(
            _arr((2, 3, 2)))
    with pytest.raises(NameError, match="none"):
        xform.vmap(lambda v: lax.psum(v, "i"))(x)  # vmap without axis_name


def test_primitive_evaluated_eagerly_raises_name_error():
    from xform._src.primitives.collectives import psum_p
    with pytest.raises(NameError, match="unbound axis name: i"):
        psum_p.bind(np.float32(1.0), axes=("i",), axis_index_groups=None)


def test_bad_collective_arguments():
    x = _arr((3, 4))
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        xform.vmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1, 2]]), axis_name="i")(x)
    with pytest.raises(ValueError, match="psum_scatter.*size 4.*size 3"):
        xform.vmap(lambda v: lax.psum_scatter(v, "i"), axis_name="i")(x)
    with pytest.raises(ValueError, match="out of bounds"):
        xform.vmap(lambda v: lax.all_gather(v, "i", axis=3), axis_name="i")(x)
    with pytest.raises(ValueError, match="mapped output"):
        xform.vmap(lambda v: v, axis_name="i", out_axes=None)(x)


def test_extend_axis_env_lets_staging_record_collectives():
    """``make_jaxpr(axis_env=...)``'s hook: names bound without a vmap are staged."""
    from xform._src.interpreters import batching
    from xform._src.interpreters.core import ShapedArray
    aval = ShapedArray((4,), np.float32)
    with pytest.raises(NameError):
        staging.trace_to_jaxpr(lambda a: [lax.psum(a, "i")], [aval])
    with batching.extend_axis_env([("i", 3)]):
        jaxpr, _ = staging.trace_to_jaxpr(
            lambda a: [lax.psum(a, "i"), lax.all_gather(a, "i"), lax.pmean(a, "i")], [aval])
    text = str(jaxpr)
    assert "psum[axes=('i',)" in text and "all_gather" in text
    assert [v.aval.shape for v in jaxpr.outvars] == [(4,), (3, 4), (4,)]

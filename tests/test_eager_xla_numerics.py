"""Eager numerics are XLA's: for every primitive whose NumPy impl differs from XLA in the
last bits (``Primitive.xla_eager_dtypes``), an eager call equals the same call under
``jit`` and real JAX's eager call bit for bit, over random shapes, values and dtypes
(the verifier's generators).  ``xform_eager_numpy_numerics`` restores the NumPy impl.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import xform
import xform.numpy as xnp
from xform._src.interpreters import core
from xform._src.interpreters.core import Array
from test_verifier import SPECS, _prims

@pytest.fixture(autouse=True)
def _x64():
    # the generators draw float64/complex128 operands: keep them 64-bit under jit too
    with xform.config.override("jax_enable_x64", True):
        yield


ROUTED = sorted(p.name for p in _prims().values() if p.xla_eager_dtypes)


def _bits(x):
    """Bytes, dtype and shape: equal bits (NaN payloads and signed zeros included)."""
    a = np.asarray(x)
    return a.dtype, a.shape, a.tobytes()


def _draw(name, data):
    """The verifier's params and operands for ``name``; operands of a dtype the primitive
    computes on NumPy are cast to one it routes to XLA (same kind where possible)."""
    prim = _prims()[name]
    params, args = SPECS[name][0](data, name)
    args = [np.asarray(a) for a in args]
    dt = args[0].dtype
    if dt not in prim.xla_eager_dtypes:
        routed = sorted(prim.xla_eager_dtypes, key=str)
        same_kind = [d for d in routed if d.kind == dt.kind]
        new = data.draw(st.sampled_from(same_kind or routed), label="routed dtype")
        args = [a.astype(new) if a.dtype == dt else a for a in args]
        try:
            prim.abstract_eval(*[core.ShapedArray(a.shape, a.dtype) for a in args], **params)
        except (TypeError, ValueError):
            assume(False)
    return prim, params, args


def test_routed_primitives_are_the_ones_numpy_gets_wrong():
    # the transcendentals, complex arithmetic, sums, products and dots, and not the
    # IEEE-exact arithmetic (which stays on NumPy: equal bits, faster)
    for name in ("sin", "exp", "log1p", "tanh", "logistic", "erf_inv", "lgamma", "pow",
                 "atan2", "reduce_sum", "cumsum", "dot_general", "igamma"):
        assert name in ROUTED, name
    for name in ("add", "sub", "neg", "max", "floor", "round", "reduce_max", "convert_element_type"):
        assert name not in ROUTED, name
    prims = _prims()
    assert np.dtype(np.float32) not in prims["sqrt"].xla_eager_dtypes
    assert np.dtype(np.complex64) in prims["sqrt"].xla_eager_dtypes


@pytest.mark.parametrize("name", ROUTED)
@settings(max_examples=2, deadline=None)
@given(data=st.data())
def test_eager_equals_jit_bitwise(name, data):
    _check_eager_equals_jit(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", ROUTED)
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_eager_equals_jit_bitwise_exhaustive(name, data):
    _check_eager_equals_jit(name, data)


def _check_eager_equals_jit(name, data):
    prim, params, args = _draw(name, data)

    def f(*xs):
        return prim.bind(*xs, **params)
    eager = f(*[Array(a) for a in args])
    jitted = xform.jit(f)(*args)
    for e, j in zip(eager if prim.multiple_results else [eager],
                    jitted if prim.multiple_results else [jitted]):
        assert _bits(e) == _bits(j), (name, params, [a.dtype for a in args],
                                      np.asarray(e), np.asarray(j))


def _precision(p):
    """xform's precision param as JAX's functions take it (names)."""
    if p is None:
        return None
    if isinstance(p, tuple):
        return tuple(_precision(q) for q in p)
    return getattr(p, "name", str(p)).lower()


def _jax_fn(name, params):
    """The JAX eager call of the same primitive with the same params."""
    lax = jax.lax
    if name == "reduce_sum":
        return lambda x: lax.reduce(x, np.zeros((), x.dtype), lax.add, params["axes"])
    if name == "reduce_prod":
        return lambda x: lax.reduce(x, np.ones((), x.dtype), lax.mul, params["axes"])
    if name == "regularized_incomplete_beta":
        return lax.betainc
    if name == "conv_general_dilated":
        p = dict(params, dimension_numbers=lax.ConvDimensionNumbers(*params["dimension_numbers"]),
                 precision=_precision(params["precision"]))
        return lambda lhs, rhs: lax.conv_general_dilated(lhs, rhs, **p)
    if name == "fft":
        return lambda x: lax.fft(x, lax.FftType(int(params["fft_type"])), params["fft_lengths"])
    if name == "reduce_window_sum":
        return lambda x: lax.reduce_window(
            x, np.zeros((), x.dtype), lax.add, params["window_dimensions"],
            params["window_strides"], params["padding"], params["base_dilation"],
            params["window_dilation"])
    if name == "select_and_scatter_add":
        from jax._src.lax import windowed_reductions   # JAX has no public function for it
        select = {"ge": lax.ge_p, "le": lax.le_p}[params["select_prim"]]
        return lambda source, operand: windowed_reductions._select_and_scatter_add(
            source, operand, select, params["window_dimensions"], params["window_strides"],
            params["padding"])
    fn = getattr(lax, name)
    return lambda *xs: fn(*xs, **params)


@pytest.mark.parametrize("name", ROUTED)
@settings(max_examples=2, deadline=None)
@given(data=st.data())
def test_eager_equals_jax_eager_bitwise(name, data):
    _check_eager_equals_jax(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", ROUTED)
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_eager_equals_jax_eager_bitwise_exhaustive(name, data):
    _check_eager_equals_jax(name, data)


def _check_eager_equals_jax(name, data):
    prim, params, args = _draw(name, data)
    if name == "select_and_scatter_add":   # JAX's internal function takes no negative pads
        assume(all(lo >= 0 and hi >= 0 for lo, hi in params["padding"]))
    ours = prim.bind(*[Array(a) for a in args], **params)
    with jax.enable_x64(any(a.dtype.itemsize == 8 or a.dtype == np.complex128 for a in args)):
        theirs = _jax_fn(name, params)(*[jnp.asarray(a) for a in args])
        theirs = np.asarray(theirs)
    assert _bits(ours) == _bits(theirs), (name, params, [a.dtype for a in args],
                                          np.asarray(ours), theirs)


@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_numpy_level_functions_match_jit_and_jax(data):
    """What users call: ``jnp.sin(x)`` eagerly == ``jit(jnp.sin)(x)`` == JAX's."""
    name = data.draw(st.sampled_from(["sin", "cos", "tan", "exp", "log", "tanh", "log1p",
                                      "expm1", "arctan", "arcsin", "sinh", "cbrt", "exp2",
                                      "log2", "log10", "sum", "mean", "cumsum", "prod"]))
    shape = data.draw(st.tuples(*[st.integers(1, 9)] * data.draw(st.integers(0, 2))))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = (rng.standard_normal(shape) * data.draw(st.sampled_from([0.5, 3.0, 40.0])))
    x = x.astype(np.float32)
    if name in ("log", "log2", "log10", "arcsin"):
        x = np.tanh(np.abs(x)).astype(np.float32) if name == "arcsin" else np.abs(x) + 1e-3
    f = getattr(xnp, name)
    eager = f(xnp.asarray(x))
    assert _bits(eager) == _bits(xform.jit(f)(x)), name
    assert _bits(eager) == _bits(getattr(jnp, name)(x)), name


def test_python_operators_and_weak_scalars():
    x = np.linspace(-3, 3, 37, dtype=np.float32)
    a = xnp.asarray(x)
    assert _bits(xnp.exp(a) ** 1.7) == _bits(jnp.exp(x) ** 1.7)
    assert _bits(a ** 2.5) == _bits(xform.jit(lambda a: a ** 2.5)(a))
    assert _bits(xform.lax.pow(a, 1.5)) == _bits(jax.lax.pow(x, 1.5))
    assert _bits(xform.nn.sigmoid(a)) == _bits(jax.nn.sigmoid(x))
    assert _bits(a @ a) == _bits(jnp.asarray(x) @ x)


def test_eager_grad_bits_equal_jax_eager_grad():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    x = rng.standard_normal((4, 16)).astype(np.float32)

    def loss(w, x):
        return xnp.mean(xnp.tanh(x @ w) ** 2)
    def jloss(w, x):
        return jnp.mean(jnp.tanh(x @ w) ** 2)
    # op by op, as JAX's eager grad runs it (a jitted gradient is one fused program,
    # which XLA may round differently, in JAX too)
    assert _bits(xform.grad(loss)(w, x)) == _bits(jax.grad(jloss)(w, x))


def test_numpy_numerics_option_runs_the_reference():
    x = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    with xform.config.override("xform_eager_numpy_numerics", True):
        assert _bits(xnp.sin(xnp.asarray(x))) == _bits(np.sin(x))
        assert _bits(xform.lax.sin(xnp.asarray(x))) == _bits(np.sin(x))
    assert _bits(xnp.sin(xnp.asarray(x))) == _bits(jnp.sin(x))


def test_errors_and_nan_checks_unchanged():
    with pytest.raises(TypeError, match="sin"):
        xform.lax.sin(xnp.arange(3))
    with xform.config.override("jax_debug_nans", True):
        with pytest.raises(FloatingPointError):
            xnp.log(xnp.asarray(np.float32(-1.0)))


def test_kernels_are_cached_per_signature():
    from xform._src.lowering import eager_kernels
    x = xnp.asarray(np.ones((3, 5), np.float32))
    xnp.sin(x)
    before = eager_kernels.cache_info()["kernels"]
    for _ in range(3):
        xnp.sin(x)
        xnp.sin(x + 1)
    assert eager_kernels.cache_info()["kernels"] == before
    assert core.xla_kernel_hook is eager_kernels.run


def test_strided_and_broadcast_views():
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    a = xnp.asarray(x)
    assert _bits(xnp.sin(a.T)) == _bits(jnp.sin(x.T))
    assert _bits(xnp.exp(a[:, ::2])) == _bits(jnp.exp(x[:, ::2]))
    row = np.broadcast_to(x[0], (5, 4))
    assert _bits(xnp.tanh(xnp.broadcast_to(a[0], (5, 4)))) == _bits(jnp.tanh(row))
    assert _bits(xnp.sum(a.T, axis=1)) == _bits(jnp.sum(x.T, axis=1))


# Functions JAX jits as a whole (``_mean``, ``average``, ``cov``, ``hypot``, ``softmax``,
# ``standardize``, ``_var``, ``linalg.norm``, ... : xform.numpy._jitted's INLINE tables, the
# ones whose op-by-op bits differed from JAX's in random float32 inputs): XLA rewrites the compiled program (division by a count becomes a
# multiplication by its reciprocal, sums fuse), so eager xform runs them compiled too.
_JITTED_AS_A_WHOLE = {
    "mean": lambda L, x: L.numpy.mean(x),
    "mean_axis0": lambda L, x: L.numpy.mean(x, axis=0),
    "mean_keepdims_positional": lambda L, x: L.numpy.mean(x, 1, None, None, True),
    "mean_list_axis_positional": lambda L, x: L.numpy.mean(x, [0, 1]),
    "average_weights": lambda L, x: L.numpy.average(x, axis=0, weights=x[:, 0] ** 2 + 1),
    "cov": lambda L, x: L.numpy.cov(x),
    "cov_columns": lambda L, x: L.numpy.cov(x, rowvar=False),
    "hypot": lambda L, x: L.numpy.hypot(x, x[::-1]),
    "softmax": lambda L, x: L.nn.softmax(x),
    "softmax_axis0": lambda L, x: L.nn.softmax(x, axis=0),
    "standardize": lambda L, x: L.nn.standardize(x),
    # ``_var``/``_std`` (``correction`` traced: a runtime divisor), ``nanvar``/``nanstd``
    "var": lambda L, x: L.numpy.var(x),
    "var_axis0": lambda L, x: L.numpy.var(x, axis=0),
    "var_ddof1_keepdims": lambda L, x: L.numpy.var(x, axis=1, ddof=1, keepdims=True),
    "var_correction_list_axis": lambda L, x: L.numpy.var(x, [0, 1], correction=0.5),
    "std": lambda L, x: L.numpy.std(x),
    "std_axis0_ddof1": lambda L, x: L.numpy.std(x, axis=0, ddof=1),
    "nanvar": lambda L, x: L.numpy.nanvar(L.numpy.where(x > 1, np.nan, x), axis=0),
    "nanstd": lambda L, x: L.numpy.nanstd(x, ddof=1),
    "corrcoef": lambda L, x: L.numpy.corrcoef(x, rowvar=False),
    "cross": lambda L, x: L.numpy.cross(x, x[::-1]),
    "vdot": lambda L, x: L.numpy.vdot(x, x[::-1]),
    "polyval": lambda L, x: L.numpy.polyval(x[:2, 0], x[:, 1]),
    "round_decimals": lambda L, x: L.numpy.round(x * 10, 2),
    "linspace": lambda L, x: L.numpy.linspace(x[0, 0], x[1, 0] + 20, 13),
    "logspace": lambda L, x: L.numpy.logspace(x[0, 0] / 8, x[1, 0] / 4 + 2, 7),
    "geomspace": lambda L, x: L.numpy.geomspace(abs(x[0, 0]) + 0.1, abs(x[1, 0]) + 9, 9),
    "squareplus": lambda L, x: L.nn.squareplus(x),
    "hard_sigmoid": lambda L, x: L.nn.hard_sigmoid(x * 3),
    "hard_silu": lambda L, x: L.nn.hard_silu(x * 3),
    "norm": lambda L, x: L.numpy.linalg.norm(x),
    "norm_axis1": lambda L, x: L.numpy.linalg.norm(x, axis=1),
    "norm_ord3_axis0": lambda L, x: L.numpy.linalg.norm(x, ord=3, axis=0),
    "norm_fro": lambda L, x: L.numpy.linalg.norm(x, ord="fro"),
    "matrix_norm": lambda L, x: L.numpy.linalg.matrix_norm(x),
    "det": lambda L, x: L.numpy.linalg.det(x.T @ x + 3 * L.numpy.eye(3, dtype=x.dtype)),
}


@pytest.mark.parametrize("name", sorted(_JITTED_AS_A_WHOLE))
@settings(max_examples=15, deadline=None)
@given(rows=st.integers(2, 24), scale=st.floats(0.1, 10.0), seed=st.integers(0, 2**16))
def test_functions_jax_jits_as_a_whole_match_jax_eager(name, rows, scale, seed):
    fn = _JITTED_AS_A_WHOLE[name]
    x = (np.random.default_rng(seed).standard_normal((rows, 3)) * scale).astype(np.float32)
    want = np.asarray(fn(jax, x))
    got = np.asarray(fn(xform, x))
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    staged = xform.make_jaxpr(lambda v: fn(xform, v))(x)      # staged: still inlined
    assert not any(e.primitive.name == "jit" for e in staged.jaxpr.eqns if
                   e.params.get("name") in ("mean", "average", "cov", "softmax"))


# ----------------------------------------------------------------- kernel operands on device
# A kernel's result keeps its device buffer (its NumPy value is a view of it) and a small
# host array keeps the buffer it was put in, so chained kernels and reused parameters skip
# the host-to-device transfer.  A view that is not the whole buffer must not be taken for it.

def _count_puts(monkeypatch):
    from xform._src.lowering import eager_kernels
    calls = []
    real = eager_kernels._put

    def counting(*a):
        calls.append(a)
        return real(*a)
    monkeypatch.setattr(eager_kernels, "_put", counting)
    return calls


def test_chained_kernels_and_reused_operands_skip_the_transfer(monkeypatch):
    x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    a = xnp.asarray(x)
    xnp.exp(xnp.sin(a))                          # compile both kernels outside the count
    puts = _count_puts(monkeypatch)
    y = xnp.sin(a)                               # a was put by the warm-up: cached
    z = xnp.exp(y)                               # y is sin's result: its own buffer
    w = xnp.exp(xnp.sin(a))
    assert len(puts) == 0
    assert _bits(z) == _bits(w) == _bits(jnp.exp(jnp.sin(x)))


@settings(max_examples=10, deadline=None)
@given(view=st.sampled_from(["reversed", "transposed", "row", "strided", "reshaped",
                             "as_int", "broadcast", "negated"]))
def test_views_of_kernel_results_are_not_taken_for_the_buffer(view):
    x = np.random.default_rng(4).standard_normal((5, 5)).astype(np.float32)
    views = {"reversed": lambda L, y: y[::-1], "transposed": lambda L, y: y.T,
             "row": lambda L, y: y[2], "strided": lambda L, y: y[:, ::2],
             "reshaped": lambda L, y: y.reshape(25),
             "as_int": lambda L, y: L.lax.bitcast_convert_type(y, np.int32).astype(np.float32),
             "broadcast": lambda L, y: L.numpy.broadcast_to(y[0], (5, 5)),
             "negated": lambda L, y: -y}
    f = views[view]
    got = xform.numpy.cos(f(xform, xform.numpy.sin(xnp.asarray(x))))
    want = jnp.cos(f(jax, jnp.sin(x)))
    assert _bits(got) == _bits(want)


def test_cached_transfer_dies_with_its_array():
    from xform._src.lowering import eager_kernels
    a = xnp.asarray(np.random.default_rng(5).standard_normal(7).astype(np.float32))
    xnp.sin(a)
    key = id(a._npy)
    assert key in eager_kernels._host_bufs
    del a
    import gc
    gc.collect()
    assert key not in eager_kernels._host_bufs


_OTHER_DEVICE = r'''
import numpy as np, xform, xform.numpy as xnp
devs = xform.devices()
assert len(devs) == 2, devs
x = np.random.default_rng(6).standard_normal(9).astype(np.float32)
a = xnp.asarray(x)
y = xnp.sin(a)                               # on device 0: a and y hold device-0 buffers
with xform.default_device(devs[1]):
    z = xnp.exp(y)                           # the kernel runs on device 1
    w = xnp.sin(a)
print(repr((np.asarray(z).tobytes(), np.asarray(w).tobytes(),
            np.asarray(xnp.exp(y)).tobytes(), np.asarray(y).tobytes())))
'''


def test_buffers_on_another_device_are_transferred():
    import subprocess, sys, os
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", _OTHER_DEVICE], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    z, w, z0, y = eval(out.stdout.strip().splitlines()[-1])
    x = np.random.default_rng(6).standard_normal(9).astype(np.float32)
    assert y == np.asarray(jnp.sin(x)).tobytes()
    assert z == z0 == np.asarray(jnp.exp(jnp.sin(x))).tobytes()
    assert w == y


def test_only_a_whole_buffer_view_is_taken_for_the_buffer():
    """NumPy arrays over a kernel result's memoryview that are not the whole buffer in
    its own shape, dtype and layout are transferred, not taken for the buffer."""
    rng = np.random.default_rng(7)
    x2 = rng.standard_normal((5, 5)).astype(np.float32)
    x1 = rng.standard_normal(25).astype(np.float32)
    mv2 = xnp.sin(xnp.asarray(x2))._npy.base
    mv1 = xnp.sin(xnp.asarray(x1))._npy.base
    assert type(mv2) is memoryview and type(mv1) is memoryview
    crafted = {
        "rows_reversed": np.asarray(mv2[::-1]),             # (5, 5), negative row stride
        "as_int32": np.frombuffer(mv1, np.int32),           # (25,), other dtype
        "tail": np.frombuffer(mv1, np.float32, count=20, offset=20),
        "first_rows": np.asarray(mv2[:2]),
    }
    for name, v in crafted.items():
        assert type(v.base) is memoryview, name       # the case the check must catch
        got = xnp.exp(Array(v)) if v.dtype.kind == "f" else xnp.sin(Array(v).astype(np.float32))
        want = jnp.exp(np.array(v)) if v.dtype.kind == "f" else jnp.sin(np.array(v).astype(np.float32))
        assert _bits(got) == _bits(want), name
    assert _bits(crafted["rows_reversed"]) == _bits(np.asarray(jnp.sin(x2))[::-1])

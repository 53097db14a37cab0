"""The verifier: every primitive's XLA lowering agrees with its NumPy reference.

For every primitive in the lowering table (and every registered primitive
must have a lowering rule, except the explicit allowlist below), hypothesis
draws params and inputs from this file's per-primitive generator table,
compiles the single-equation program with XLA and compares it with the
eager NumPy implementation: bitwise for integers, bools, comparisons and
structural ops; a per-dtype tolerance for rounded float arithmetic.  A
random-composition test checks whole elementwise programs too.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import xform  # noqa: F401  (registers every primitive)
from xform._src import lowering
from xform._src.interpreters import core, staging
from xform._src.interpreters.core import Array, ShapedArray
from xform._src.interpreters.ir import ClosedJaxpr
from test_indexing_prims import gather_out_shape, random_gather_config, random_indices

# Primitives that legitimately have no lowering rule (yet):
NO_LOWERING_ALLOWED = {
    # collectives: only meaningful under a named axis (vmap/shard_map); lowered with SPMD later
    "psum", "pmax", "pmin", "pmean", "all_gather", "reduce_scatter", "axis_index", "ppermute",
    "all_to_all", "psum_scatter",
    # transient: exists only between linearize and transpose, never reaches a compiled program
    "custom_lin",
}
# Effects: lowered (jaxlib's python-callback custom call) but they compute no value to
# compare; tested in test_jit.py.
EFFECTS = {"debug_callback", "pure_callback", "io_callback",   # + tests/test_callbacks.py
           "debug_print",   # xform.debug.print; tested in test_jit.py / test_debug_print.py
           "rng_uniform",   # rng_uniform: stateful, bits unspecified (test_random.py)
           "check",         # checkify's check: lowering refuses it (test_checkify.py)
           "ffi_call"}      # a compiled C++ handler, no reference: tests/test_ffi.py
# Higher-order primitives: their rule lowers a sub-program; tested in test_lowering.py.
HIGHER_ORDER = {"jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
                "checkpoint", "remat", "cond", "while", "scan",
                "call_exported",   # inlines a serialized module; tested in test_export.py
                "custom_vmap_call",
                "linear_call",   # tests/test_linear_call.py
                "dce_sink",      # no value; tests/test_dce_sink.py
                "composite"}     # stablehlo.composite of its decomposition; test_composite.py
# Typed-key boundary primitives (uint32[..., 2] <-> key<fry>): no arithmetic to compare;
# their lowering is the identity on the physical words, checked bit for bit against JAX
# eager, under jit and vmap in tests/test_random.py.
HIGHER_ORDER |= {"random_wrap", "random_unwrap", "random_clone"}
# collectives and shard_map lower only inside partitioned programs (many
# devices); they are checked against JAX on 8 devices in tests/test_sharding.py.
HIGHER_ORDER = HIGHER_ORDER | {"psum", "pmax", "pmin", "all_gather", "reduce_scatter",
                               "axis_index", "ppermute", "all_to_all", "shard_map"}

BF16 = np.dtype(ml_dtypes.bfloat16)
F = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
SI = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64)]
UI = [np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)]
I = SI + UI
C = [np.dtype(np.complex64), np.dtype(np.complex128)]
B = [np.dtype(np.bool_)]

EPS = {np.dtype(np.float16): 1e-3, BF16: 8e-3, np.dtype(np.float32): 1.2e-7,
       np.dtype(np.float64): 2.3e-16, np.dtype(np.complex64): 1.2e-7,
       np.dtype(np.complex128): 2.3e-16}

# ----------------------------------------------------------------- value generators


def values(rng, shape, dtype, kind="normal"):
    """Random array of ``dtype``; ``kind`` restricts the domain for functions that need it."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if kind in ("small", "positive", "nonzero", "unit", "ge1", "normal_small"):
            lo, hi = (1, 10) if kind in ("positive", "ge1") else (-10, 10)
            lo, hi = max(lo, info.min), min(hi, info.max)
            x = rng.integers(lo, hi + 1, size=shape, dtype=np.int64)
            if kind == "nonzero":
                x = np.where(x == 0, 3, x)
            return x.astype(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        part = np.float32 if dtype == np.complex64 else np.float64
        return (values(rng, shape, part, kind) + 1j * values(rng, shape, part, kind)).astype(dtype)
    scale = {"normal": 2.0, "normal_small": 0.5}.get(kind, 1.0)
    x = rng.standard_normal(shape) * scale
    if kind == "positive":
        x = np.abs(x) + 0.1
    elif kind == "nonzero":
        x = np.where(np.abs(x) < 0.1, 0.5, x)
    elif kind == "unit":
        x = np.tanh(x) * 0.95
    elif kind == "ge1":
        x = 1.05 + np.abs(x)
    elif kind == "gtm1":
        x = np.abs(x) - 0.9
    elif kind == "special":
        specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0])
        pick = rng.random(shape) < 0.3
        x = np.where(pick, specials[rng.integers(0, len(specials), size=shape)], x)
    return x.astype(dtype)


@st.composite
def shapes(draw, min_rank=0, max_rank=3, min_side=1, max_side=4):
    rank = draw(st.integers(min_rank, max_rank))
    return tuple(draw(st.integers(min_side, max_side)) for _ in range(rank))


def _rng(data):
    return np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))


# A spec: draw(data) -> (params, [numpy args]); plus whether results must be bitwise equal.
SPECS: dict = {}


def spec(names, exact=False, tol=1.0):
    def deco(fn):
        for n in names.split():
            SPECS[n] = (fn, exact, tol)
        return fn
    return deco


def unary(dtypes, kind="normal", params=lambda data: {}):
    def gen(data, name):
        dt = data.draw(st.sampled_from(dtypes), label="dtype")
        return params(data), [values(_rng(data), data.draw(shapes()), dt, kind)]
    return gen


def nary(n, dtypes, kinds=("normal",)):
    def gen(data, name):
        dt = data.draw(st.sampled_from(dtypes), label="dtype")
        shape = data.draw(shapes())
        rng = _rng(data)
        return {}, [values(rng, shape, dt, kinds[min(i, len(kinds) - 1)]) for i in range(n)]
    return gen


def _register(names, gen, exact, tol=1.0):
    for n in names.split():
        SPECS[n] = (gen, exact, tol)


# elementwise: exact ones
_register("neg", unary(F + SI + C, "special"), True)
_register("abs", unary(F + SI + UI, "special"), True)
_register("copy", unary(F + SI + UI + C, "special"), True)   # jnp.copy / jnp.array of a tracer
_register("sign", unary(F + SI + UI, "special"), True)
_register("floor ceil", unary(F, "special"), True)
_register("round", unary(F, "special", lambda d: {"rounding_method": d.draw(st.sampled_from([0, 1]))}),
          True)
_register("is_finite", unary(F, "special"), True)
_register("not", unary(I + B, "normal"), True)
_register("population_count", unary(I, "normal"), True)
_register("real imag conj", unary(C, "normal"), True)
_register("stop_gradient", unary(F + I + B, "normal"), True)
_register("name", unary(F, "normal", lambda d: {"name": "x"}), True)
_register("add add_any sub mul max min", nary(2, F + I, ("special",)), True)
_register("and or xor", nary(2, I + B), True)
_register("eq ne", nary(2, F + I + B + C, ("special",)), True)
_register("lt le gt ge", nary(2, F + I + B, ("special",)), True)
_register("complex", nary(2, [np.dtype(np.float32), np.dtype(np.float64)]), True)

# elementwise: rounded floats (tolerance = tol * 8 ulps of the dtype, relative)
_register("exp expm1", unary(F + C, "normal_small"), False)
_register("exp2", unary(F, "normal"), False, 4)
_register("log", unary(F + C, "positive"), False, 4)   # complex: log|z| cancels near |z|=1
_register("log1p", unary(F, "gtm1"), False, 16)   # XLA:CPU f64 log1p: ~120 ulps
_register("tanh logistic sin cos", unary(F, "normal"), False)
_register("tan atan sinh cosh asinh cbrt erf erfc", unary(F, "normal"), False, 4)
_register("asin acos atanh erf_inv", unary(F, "unit"), False, 8)
_register("acosh", unary(F, "ge1"), False, 4)
_register("sqrt rsqrt", unary(F, "positive"), False)
_register("lgamma digamma", unary(F, "positive"), False, 64)
_register("atan2", nary(2, F), False, 4)
_register("pow", nary(2, F, ("positive", "normal_small")), False, 16)
_register("nextafter", nary(2, [np.dtype(np.float32), np.dtype(np.float64)], ("special",)), True)


@spec("square", exact=None)
def _square_spec(data, name):
    dt = data.draw(st.sampled_from(F + SI + UI), label="dtype")
    return {}, [values(_rng(data), data.draw(shapes()), dt, "small")]


def _int_or_float_div(data, name, float_dtypes):
    """Integer division/remainder truncate (as C); float remainder is fmod."""
    dt = data.draw(st.sampled_from(I + float_dtypes), label="dtype")
    shape = data.draw(shapes())
    rng = _rng(data)
    x = values(rng, shape, dt, "normal")
    y = values(rng, shape, dt, "nonzero")
    if dt.kind == "i":   # avoid INT_MIN / -1 (overflow)
        y = np.where((x == np.iinfo(dt).min) & (y == -1), 1, y).astype(dt)
    return {}, [x, y]


SPECS["div"] = (lambda data, name: _int_or_float_div(data, name, F + C), None, 1)
SPECS["rem"] = (lambda data, name: _int_or_float_div(data, name, F), None, 1)


@spec("shift_left shift_right_arithmetic shift_right_logical", exact=True)
def _shift(data, name):
    dt = data.draw(st.sampled_from(I), label="dtype")
    shape = data.draw(shapes())
    rng = _rng(data)
    bits = dt.itemsize * 8
    return {}, [values(rng, shape, dt), rng.integers(0, bits + 2, size=shape).astype(dt)]


@spec("integer_pow")
def _integer_pow(data, name):
    dt = data.draw(st.sampled_from(F + SI), label="dtype")
    y = data.draw(st.integers(0 if dt.kind == "i" else -3, 6), label="y")
    return {"y": y}, [values(_rng(data), data.draw(shapes()), dt, "small" if dt.kind == "i" else "normal")]


SPECS["integer_pow"] = (_integer_pow, None, 4)


@spec("select_n", exact=True)
def _select_n(data, name):
    dt = data.draw(st.sampled_from(F + I + B), label="dtype")
    shape = data.draw(shapes())
    rng = _rng(data)
    n = data.draw(st.integers(1, 4), label="n")
    if n <= 2 and data.draw(st.booleans(), label="bool_pred"):
        which = values(rng, shape, np.bool_)
    else:
        which = rng.integers(0, n, size=shape).astype(np.int32)
    return {}, [which] + [values(rng, shape, dt) for _ in range(n)]


@spec("clamp", exact=True)
def _clamp(data, name):
    dt = data.draw(st.sampled_from(F + SI + UI), label="dtype")
    shape = data.draw(shapes())
    rng = _rng(data)
    x = values(rng, shape, dt, "small")
    bshape = () if data.draw(st.booleans(), label="scalar_bounds") else shape
    a, b = values(rng, bshape, dt, "small"), values(rng, bshape, dt, "small")
    return {}, [np.minimum(a, b), x, np.maximum(a, b)]


@spec("convert_element_type", exact=True)
def _convert(data, name):
    src = data.draw(st.sampled_from(F + I + B + C), label="src")
    dst = data.draw(st.sampled_from(F + I + B + C), label="dst")
    assume(not (src.kind in "fc" and dst.itemsize == 8 and dst.kind in "iu"))  # reference bug
    kind = "small" if src.kind in "iu" else "normal"
    x = values(_rng(data), data.draw(shapes()), src, kind)
    if dst.kind in "iu" and src.kind in "fc":
        x = x * 10     # in range of every int type's magnitude for these small values
    return {"new_dtype": dst, "weak_type": False}, [x.astype(src)]


_SAME_WIDTH = {1: [np.int8, np.uint8], 2: [np.int16, np.uint16, np.float16, BF16],
               4: [np.int32, np.uint32, np.float32], 8: [np.int64, np.uint64, np.float64]}


@spec("bitcast_convert_type", exact=True)
def _bitcast(data, name):
    width = data.draw(st.sampled_from([1, 2, 4, 8]), label="width")
    src, dst = (np.dtype(data.draw(st.sampled_from(_SAME_WIDTH[width]))) for _ in range(2))
    x = values(_rng(data), data.draw(shapes()), src)
    return {"new_dtype": dst}, [x]


# structural (all exact)
ANY = F + I + B + C


def _any_array(data, shape=None, dtypes=ANY, min_rank=0):
    dt = data.draw(st.sampled_from(dtypes), label="dtype")
    shape = data.draw(shapes(min_rank=min_rank)) if shape is None else shape
    return values(_rng(data), shape, dt)


@spec("broadcast_in_dim", exact=True)
def _bid(data, name):
    out_shape = data.draw(shapes(max_rank=4))
    k = data.draw(st.integers(0, len(out_shape)), label="in_rank")
    dims = tuple(sorted(data.draw(st.permutations(range(len(out_shape))))[:k]))
    in_shape = tuple(out_shape[d] if data.draw(st.booleans()) else 1 for d in dims)
    return {"shape": out_shape, "broadcast_dimensions": dims}, \
        [_any_array(data, in_shape)]


@spec("reshape", exact=True)
def _reshape(data, name):
    x = _any_array(data)
    sizes = list(x.shape)
    new = [int(np.prod(sizes))] if data.draw(st.booleans()) else sizes[::-1] + [1]
    return {"new_sizes": tuple(new), "dimensions": None}, [x]


@spec("transpose", exact=True)
def _transpose(data, name):
    x = _any_array(data)
    return {"permutation": tuple(data.draw(st.permutations(range(x.ndim))))}, [x]


@spec("squeeze", exact=True)
def _squeeze(data, name):
    shape = list(data.draw(shapes()))
    n = data.draw(st.integers(1, 2))
    dims = []
    for _ in range(n):
        p = data.draw(st.integers(0, len(shape)))
        shape.insert(p, 1)
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and data.draw(st.booleans()))
    return {"dimensions": dims}, [_any_array(data, tuple(shape))]


@spec("rev", exact=True)
def _rev(data, name):
    x = _any_array(data)
    return {"dimensions": tuple(i for i in range(x.ndim) if data.draw(st.booleans()))}, [x]


@spec("concatenate", exact=True)
def _concat(data, name):
    shape = data.draw(shapes(min_rank=1))
    dim = data.draw(st.integers(0, len(shape) - 1))
    dt = data.draw(st.sampled_from(ANY))
    rng = _rng(data)
    xs = []
    for _ in range(data.draw(st.integers(1, 3))):
        s = list(shape)
        s[dim] = data.draw(st.integers(0, 3))
        xs.append(values(rng, tuple(s), dt))
    return {"dimension": dim}, xs


@spec("pad", exact=True)
def _pad(data, name):
    x = _any_array(data)
    cfg = []
    for d in x.shape:
        lo, hi, it = (data.draw(st.integers(-1, 2)), data.draw(st.integers(-1, 2)),
                      data.draw(st.integers(0, 2)))
        assume(lo + hi + d + max(d - 1, 0) * it >= 0)
        cfg.append((lo, hi, it))
    return {"padding_config": tuple(cfg)}, [x, np.asarray(values(_rng(data), (), x.dtype))]


@spec("slice", exact=True)
def _slice(data, name):
    x = _any_array(data)
    start, limit, strides = [], [], []
    for d in x.shape:
        a = data.draw(st.integers(0, d))
        b = data.draw(st.integers(a, d))
        start.append(a)
        limit.append(b)
        strides.append(data.draw(st.integers(1, 3)))
    use_strides = data.draw(st.booleans())
    return {"start_indices": tuple(start), "limit_indices": tuple(limit),
            "strides": tuple(strides) if use_strides else None}, [x]


def _indices(data, shape):
    dt = data.draw(st.sampled_from([np.int32, np.int64, np.uint32]), label="index_dtype")
    return [np.asarray(data.draw(st.integers(0 if np.dtype(dt).kind == "u" else -2, d + 2)), dt)
            for d in shape]


@spec("dynamic_slice", exact=True)
def _dynamic_slice(data, name):
    x = _any_array(data)
    sizes = tuple(data.draw(st.integers(0, d)) for d in x.shape)
    return {"slice_sizes": sizes}, [x] + _indices(data, x.shape)


@spec("dynamic_update_slice", exact=True)
def _dus(data, name):
    x = _any_array(data)
    sizes = tuple(data.draw(st.integers(0, d)) for d in x.shape)
    upd = values(_rng(data), sizes, x.dtype)
    return {}, [x, upd] + _indices(data, x.shape)


@spec("iota", exact=True)
def _iota(data, name):
    shape = data.draw(shapes(min_rank=1))
    return {"dtype": data.draw(st.sampled_from(F + I)), "shape": shape,
            "dimension": data.draw(st.integers(0, len(shape) - 1))}, []


# reductions
def _axes(data, x):
    return tuple(i for i in range(x.ndim) if data.draw(st.booleans()))


@spec("reduce_max reduce_min reduce_and reduce_or reduce_xor", exact=True)
def _reduce_exact(data, name):
    dts = I + B if name in ("reduce_and", "reduce_or", "reduce_xor") else F + I
    x = values(_rng(data), data.draw(shapes(max_side=3)), data.draw(st.sampled_from(dts)),
               "special" if name in ("reduce_max", "reduce_min") else "normal")
    return {"axes": _axes(data, x)}, [x]


@spec("reduce_sum reduce_prod", exact=None)
def _reduce_arith(data, name):
    x = values(_rng(data), data.draw(shapes(max_side=3)), data.draw(st.sampled_from(F + I + C)),
               "normal_small")
    return {"axes": _axes(data, x)}, [x]


@spec("argmax argmin", exact=True)
def _argminmax(data, name):
    x = _any_array(data, dtypes=F + I + B, min_rank=1)
    if x.dtype.kind == "f" and data.draw(st.booleans(), label="ties_nans"):
        x = values(_rng(data), x.shape, x.dtype, "special")
    return {"axes": (data.draw(st.integers(0, x.ndim - 1)),),
            "index_dtype": data.draw(st.sampled_from([np.dtype(np.int32), np.dtype(np.int64)]))}, [x]


@spec("cummax cummin", exact=True)
def _cum_exact(data, name):
    x = _any_array(data, dtypes=F + I, min_rank=1)
    return {"axis": data.draw(st.integers(0, x.ndim - 1)), "reverse": data.draw(st.booleans())}, [x]


@spec("cumsum cumprod cumlogsumexp", exact=None)
def _cum_arith(data, name):
    dts = F if name == "cumlogsumexp" else F + I
    x = values(_rng(data), data.draw(shapes(min_rank=1)), data.draw(st.sampled_from(dts)),
               "normal_small")
    return {"axis": data.draw(st.integers(0, x.ndim - 1)), "reverse": data.draw(st.booleans())}, [x]


# linear algebra
@spec("dot_general", exact=None)
def _dot_general(data, name):
    dt = data.draw(st.sampled_from(F + SI + C))
    nb, nc = data.draw(st.integers(0, 1)), data.draw(st.integers(0, 2))
    bsz = [data.draw(st.integers(1, 3)) for _ in range(nb)]
    csz = [data.draw(st.integers(1, 3)) for _ in range(nc)]
    lf, rf = data.draw(st.integers(0, 1)), data.draw(st.integers(0, 1))
    lshape = bsz + csz + [2] * lf
    rshape = bsz + [3] * rf + csz
    lb, lc = tuple(range(nb)), tuple(range(nb, nb + nc))
    rb, rc = tuple(range(nb)), tuple(range(nb + rf, nb + rf + nc))
    rng = _rng(data)
    return {"dimension_numbers": ((lc, rc), (lb, rb)), "precision": None,
            "preferred_element_type": None}, \
        [values(rng, tuple(lshape), dt, "small"), values(rng, tuple(rshape), dt, "small")]


@spec("ragged_dot_general", exact=None)
def _ragged_dot_general(data, name):
    from xform.lax import RaggedDotDimensionNumbers as R
    dt = data.draw(st.sampled_from(F + SI))
    g = data.draw(st.integers(1, 3))
    rng = _rng(data)
    sizes = [data.draw(st.integers(0, 3)) for _ in range(g)]
    m, b = sum(sizes) + data.draw(st.integers(0, 2)), data.draw(st.integers(1, 2))
    mode = data.draw(st.sampled_from(["noncontracting", "contracting", "batch"]))
    if mode == "noncontracting":    # [b, m, 2] x [g, b, 2, 3] with sizes [b, g]
        dn = R((((2,), (2,)), ((0,), (1,))), (1,), (0,))
        shapes_ = [(b, m, 2), (g, b, 2, 3)]
        gs = np.array([np.roll(sizes, i) for i in range(b)], np.int32)
    elif mode == "contracting":     # [2, m] x [m, 3] -> [g, 2, 3]
        dn = R((((1,), (0,)), ((), ())), (1,), ())
        shapes_ = [(2, m), (m, 3)]
        gs = np.array(sizes, np.int32)
    else:                           # ragged batch dimension
        dn = R((((2,), (1,)), ((0,), (0,))), (0,), ())
        shapes_ = [(m, 2, 2), (m, 2, 3)]
        gs = np.array(sizes, np.int32)
    return {"ragged_dot_dimension_numbers": dn, "precision": None,
            "preferred_element_type": None, "group_offset": None}, \
        [values(rng, s, dt, "small") for s in shapes_] + [gs]


# sorting
@spec("sort", exact=True)
def _sort(data, name):
    shape = data.draw(shapes(min_rank=1))
    rng = _rng(data)
    n = data.draw(st.integers(1, 3))
    xs = [values(rng, shape, data.draw(st.sampled_from(F + I + B)), "special") for _ in range(n)]
    return {"dimension": data.draw(st.integers(0, len(shape) - 1)), "is_stable": True,
            "num_keys": data.draw(st.integers(1, n))}, xs


@spec("top_k", exact=True)
def _top_k(data, name):
    """Distinct values along the axis (tied elements may come out in either order)."""
    shape = data.draw(shapes(min_rank=1))
    dt = data.draw(st.sampled_from(F + SI), label="dtype")
    size = int(np.prod(shape))
    x = (_rng(data).permutation(size) - size // 2).reshape(shape).astype(dt)
    axis = data.draw(st.integers(0, len(shape) - 1))
    return {"k": data.draw(st.integers(0, shape[axis])), "axis": axis}, [x]


@spec("approx_top_k", exact=True)
def _approx_top_k(data, name):
    """Distinct float values; max or min, any reduction dimension (exact fallback)."""
    shape = data.draw(shapes(min_rank=1))
    if 0 in shape:
        shape = tuple(max(s, 1) for s in shape)
    dt = data.draw(st.sampled_from(F), label="dtype")
    size = int(np.prod(shape))
    x = (_rng(data).permutation(size) - size // 2).reshape(shape).astype(dt)
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    return {"k": data.draw(st.integers(1, shape[d])), "reduction_dimension": d,
            "recall_target": 0.95, "is_max_k": data.draw(st.booleans()),
            "reduction_input_size_override": -1, "aggregate_to_topk": True}, [x]


# gather / scatter: random dimension numbers (incl. batching axes), out-of-bounds indices,
# every mode; small integer values so accumulation order cannot change float sums
def _gather_scatter_config(data):
    rng = _rng(data)
    shape, dn, sizes, ishape = random_gather_config(rng)
    idt = data.draw(st.sampled_from([np.int32, np.int64, np.uint32, np.int8]), label="idx")
    idx = random_indices(rng, ishape, shape, dn[2], idt)
    return rng, shape, dn, sizes, idx, gather_out_shape(dn, sizes, ishape)


@spec("gather", exact=True)
def _gather(data, name):
    from xform._src.primitives.indexing import GatherDimensionNumbers, GatherScatterMode
    rng, shape, dn, sizes, idx, _ = _gather_scatter_config(data)
    dt = data.draw(st.sampled_from(F + I + B), label="dtype")
    mode = data.draw(st.sampled_from(list(GatherScatterMode)), label="mode")
    fill = data.draw(st.sampled_from([None, 1]), label="fill") \
        if mode == GatherScatterMode.FILL_OR_DROP else None
    return {"dimension_numbers": GatherDimensionNumbers(*dn), "slice_sizes": sizes,
            "indices_are_sorted": False, "unique_indices": False, "mode": mode,
            "fill_value": fill}, [values(rng, shape, dt, "small"), idx]


@spec("scatter scatter-add scatter-mul scatter-min scatter-max", exact=True)
def _scatter(data, name):
    from xform._src.primitives.indexing import GatherScatterMode, ScatterDimensionNumbers, scatter_add
    rng, shape, dn, sizes, idx, ushape = _gather_scatter_config(data)
    dt = data.draw(st.sampled_from(F + SI + ([] if name in ("scatter-add", "scatter-mul")
                                             else B)), label="dtype")
    mode = data.draw(st.sampled_from(list(GatherScatterMode)), label="mode")
    x, u = values(rng, shape, dt, "small"), values(rng, ushape, dt, "small")
    if name == "scatter":    # which duplicate wins is unspecified: equal values where they repeat
        cnt = scatter_add(np.zeros(shape, np.int32), idx, np.ones(ushape, np.int32),
                          ScatterDimensionNumbers(*dn), mode=mode)
        if np.asarray(cnt).max(initial=0) > 1:
            u = np.full_like(u, u.flat[0] if u.size else 0)
    return {"dimension_numbers": ScatterDimensionNumbers(*dn), "indices_are_sorted": False,
            "unique_indices": False, "mode": mode}, [x, idx, u]


from _linalg_specs import register_linalg_specs  # noqa: E402  (decompositions)

register_linalg_specs(spec)

# convolution / windowed reductions / FFT: specs in their own module
from _conv_fft_specs import SPECS as _CONV_FFT_SPECS  # noqa: E402
SPECS.update(_CONV_FFT_SPECS)
# host callbacks with results; custom_vmap_call lowers its sub-program
from _callback_specs import register_callback_specs  # noqa: E402
register_callback_specs(spec, shapes, _rng, values, F)
HIGHER_ORDER.add("custom_vmap_call")
# special functions (primitives/special.py): references are scipy.special in float64
def _special_args(kinds, ints=()):
    def gen(data, name):
        dt = data.draw(st.sampled_from(F), label="dtype")
        shape = data.draw(shapes())
        rng = _rng(data)
        out = []
        for i, k in enumerate(kinds):
            if i in ints:   # integer-valued float orders 0..4
                out.append(rng.integers(0, 5, size=shape).astype(dt))
            elif k == "unit01":
                out.append(rng.uniform(0.02, 0.98, size=shape).astype(dt))
            elif k == "pos_wide":
                out.append(rng.uniform(0.1, 12.0, size=shape).astype(dt))
            else:
                out.append(values(rng, shape, dt, k))
        return {}, out
    return gen


_register("polygamma", _special_args(("positive", "positive"), ints=(0,)), False, 8)
_register("zeta", _special_args(("ge1", "positive")), False, 4)
_register("igamma igammac igamma_grad_a", _special_args(("pos_wide", "pos_wide")), False, 8)
_register("bessel_i0e bessel_i1e", unary(F, "normal"), False, 2)
# the continued fraction's float64 error vs scipy: up to ~100 ulps measured
_register("regularized_incomplete_beta", _special_args(("pos_wide", "pos_wide", "unit01")),
          False, 64)




def _sharding_constraint_spec(data, name):   # identity on one device
    import xform.sharding as xs
    mesh = xs.make_mesh((1,), ("d",))
    dt = data.draw(st.sampled_from(F + SI), label="dtype")
    x = values(_rng(data), data.draw(shapes()), dt, "normal")
    return {"sharding": xs.NamedSharding(mesh, xs.PartitionSpec())}, [x]


_register("sharding_constraint", _sharding_constraint_spec, True)


# ----------------------------------------------------------------- the checks


def _prims():
    return {p.name: p for p in core.abstract_eval_rules}


def _catalogue_primitives(table):
    """xform's own primitives in ``table``: those a test or library made with
    ``xform.extend.core.Primitive`` (tests/test_extend.py's, in the same process) carry
    whatever rules their author gave them."""
    from xform.extend.core import Primitive as UserPrimitive
    return [p for p in table if type(p) is not UserPrimitive]


def test_every_primitive_has_a_lowering_rule():
    rules = lowering.lowering_rules
    missing = sorted(p.name for p in _catalogue_primitives(core.abstract_eval_rules)
                     if p not in rules and p.name not in NO_LOWERING_ALLOWED)
    assert not missing, f"primitives without an XLA lowering rule: {missing}"


def test_every_lowered_primitive_has_a_verifier_spec():
    names = ({p.name for p in _catalogue_primitives(lowering.lowering_rules)}
             - HIGHER_ORDER - EFFECTS)
    assert not sorted(names - set(SPECS)), sorted(names - set(SPECS))


def _tolerance(dtype, tol):
    eps = EPS.get(np.dtype(dtype))
    if eps is None:
        return 0.0
    return 8 * tol * eps


def assert_matches(got, want, exact, tol, what):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != reference {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != reference {want.shape}"
    r = _tolerance(got.dtype, tol)
    if got.dtype == BF16:   # NumPy's testing helpers do not know ml_dtypes' NaN
        got, want = got.astype(np.float32), want.astype(np.float32)
    if exact or got.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    np.testing.assert_allclose(got, want, rtol=r, atol=r, equal_nan=True, err_msg=what)


def run_both(prim, params, args):
    """(XLA result list, NumPy reference list) of one equation ``prim[params](*args)``."""
    avals = [ShapedArray(np.shape(a), np.asarray(a).dtype) for a in args]
    try:
        prim.abstract_eval(*avals, **params)
    except (TypeError, ValueError):
        assume(False)   # not a valid input for this primitive (its own rule says so)

    def fun(*xs):
        out = prim.bind(*xs, **params)
        return list(out) if prim.multiple_results else [out]
    jaxpr, consts = staging.trace_to_jaxpr(fun, avals)
    compiled = lowering.compile_jaxpr(ClosedJaxpr(jaxpr, consts))
    got = [np.asarray(o) for o in compiled(*args)]
    # the NumPy reference itself, also for the primitives that eager evaluation runs by
    # XLA's kernel (``xla_eager_dtypes``; tests/test_eager_xla_numerics.py checks those)
    with np.errstate(all="ignore"), xform.config.override("xform_eager_numpy_numerics", True):
        ref = prim.bind(*[Array(np.asarray(a)) for a in args], **params)
    ref = [np.asarray(r) for r in (ref if prim.multiple_results else [ref])]
    return got, ref


LOWERED = sorted({p.name for p in lowering.lowering_rules} - HIGHER_ORDER - EFFECTS)


# Every lowered primitive is verified in the default run on 2 hypothesis draws; the slow
# step repeats the sweep with 5 draws each (test_lowering_matches_reference_exhaustive).
@pytest.mark.parametrize("name", LOWERED)
@settings(max_examples=2)
@given(data=st.data())
def test_lowering_matches_reference(name, data):
    _check_lowering(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", LOWERED)
@settings(max_examples=5)
@given(data=st.data())
def test_lowering_matches_reference_exhaustive(name, data):
    _check_lowering(name, data)


def _check_lowering(name, data):
    prim = _prims()[name]
    if name not in SPECS:
        pytest.fail(f"no verifier spec for {name}")
    gen, exact, tol = SPECS[name]
    params, args = gen(data, name)
    got, ref = run_both(prim, params, args)
    for g, r in zip(got, ref):
        ex = exact if exact is not None else (np.asarray(r).dtype.kind not in "fc"
                                              and np.asarray(r).dtype != BF16)
        assert_matches(g, r, ex, tol, f"{name}{params} on "
                       + ", ".join(f"{np.asarray(a).dtype}{np.shape(a)}" for a in args))


# ----------------------------------------------------------------- random composition

_UNARY = ["neg", "sin", "cos", "tanh", "abs", "logistic"]
_BINARY = ["add", "sub", "mul", "max", "min"]


@settings(max_examples=10)
@given(data=st.data())
def test_random_elementwise_programs(data):
    """A random DAG of elementwise ops: compiled program == eager evaluation."""
    prims = _prims()
    dt = data.draw(st.sampled_from([np.dtype(np.float32), np.dtype(np.float64)]))
    shape = data.draw(shapes(max_rank=2))
    n_in = data.draw(st.integers(1, 3))
    steps = data.draw(st.lists(st.tuples(st.sampled_from(_UNARY + _BINARY),
                                         st.integers(0, 100), st.integers(0, 100)),
                               min_size=1, max_size=12))
    n_out = data.draw(st.integers(1, 3))

    def program(*xs):
        vals = list(xs)
        for op, i, j in steps:
            p = prims[op]
            if op in _UNARY:
                vals.append(p.bind(vals[i % len(vals)]))
            else:
                vals.append(p.bind(vals[i % len(vals)], vals[j % len(vals)]))
        return vals[-n_out:]

    avals = [ShapedArray(shape, dt)] * n_in
    jaxpr, consts = staging.trace_to_jaxpr(program, avals)
    rng = _rng(data)
    args = [values(rng, shape, dt) for _ in range(n_in)]
    got = lowering.compile_jaxpr(ClosedJaxpr(jaxpr, consts))(*args)
    with xform.config.override("xform_eager_numpy_numerics", True):   # the NumPy reference
        want = program(*[Array(a) for a in args])
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5 if dt == np.float32 else 1e-12,
                                   atol=1e-6 if dt == np.float32 else 1e-12)


# ----------------------------------------------------------------- reference bugs found
# Each case below is a disagreement where XLA (and real JAX) are right and the NumPy
# reference is wrong; the generators above steer clear of them so every other case keeps
# being checked.  strict=True: once a reference is fixed the xfail turns into a failure,
# reminding us to delete the case here and widen the generator again.

def _check_case(name, params, args):
    got, ref = run_both(_prims()[name], params, args)
    for g, r in zip(got, ref):
        assert_matches(g, r, True, 1, name)


def test_reference_convert_float_to_64_bit_ints():
    """Regression: float(int64.max) rounds up to 2**63, which once clipped every value to 0."""
    for dt in (np.int64, np.uint64):
        _check_case("convert_element_type", {"new_dtype": np.dtype(dt), "weak_type": False},
                    [np.array([1.5, 6.4, -3.2, 1e30, -1e30, 0.0], np.float32)])


def test_reference_dot_general_f64():
    """Regression: the float64 reference once computed (and returned) float32."""
    _check_case("dot_general", {"dimension_numbers": (((0,), (0,)), ((), ())), "precision": None,
                                "preferred_element_type": None},
                [np.ones(3, np.float64), np.ones(3, np.float64)])


# random: threefry2x32 on uint32 words incl. counters/keys near 2**32 (wrap-around) and
# broadcast operands (scalar key words against counter arrays)
@spec("threefry2x32", exact=True)
def _threefry2x32(data, name):
    rng = _rng(data)
    shape = data.draw(shapes(min_rank=0, max_rank=2, min_side=0))
    big = data.draw(st.booleans(), label="large")
    lo = 2**32 - 2**8 if big else 0

    def words(s):
        return rng.integers(lo, 2**32, s, dtype=np.uint64).astype(np.uint32)
    key_shape = () if data.draw(st.booleans(), label="scalar_key") else shape
    return {}, [words(key_shape), words(key_shape), words(shape), words(shape)]


# typed PRNG keys: the casts between key arrays and their uint32[..., 2] words
@spec("random_wrap random_unwrap random_clone", exact=True)
def _key_casts(data, name):
    from xform._src.primitives.prng import to_struct
    rng = _rng(data)
    shape = data.draw(shapes(min_rank=0, max_rank=2, min_side=0))
    words = rng.integers(0, 2**32, shape + (2,), dtype=np.uint64).astype(np.uint32)
    if name == "random_wrap":
        return {"impl": "threefry2x32"}, [words]
    return {}, [to_struct(words)]


@spec("rng_bit_generator", exact=True)
def _rng_bit_generator(data, name):
    from xform._src.primitives.random import RandomAlgorithm
    rng = _rng(data)
    shape = data.draw(shapes(min_rank=0, max_rank=3, min_side=0, max_side=5))
    dt = data.draw(st.sampled_from([np.uint8, np.uint16, np.uint32]), label="dtype")
    alg = data.draw(st.sampled_from(list(RandomAlgorithm)), label="algorithm")
    key = rng.integers(0, 2**32, 4, dtype=np.uint64).astype(np.uint32)
    return {"shape": shape, "dtype": np.dtype(dt), "algorithm": alg}, [key]

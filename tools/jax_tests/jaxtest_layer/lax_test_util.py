"""Stand-in for ``jax._src.internal_test_util.lax_test_util``: the dtype groups, the
table of elementwise lax ops (name, arity, dtypes, input generator, tolerance) and the
reducer tables that ``lax_test.py`` / ``lax_vmap_test.py`` sweep over, plus the batching
helpers (``all_bdims``, ``add_bdim``, ``args_slicer``)."""
from __future__ import annotations

import collections
import itertools

import numpy as np

from . import Internal
from . import dtypes as _dt
from . import test_util as tu


def _lax():
    import jax
    return jax.lax


float_dtypes = tu.dtypes.all_floating
complex_elem_dtypes = tu.dtypes.floating
complex_dtypes = tu.dtypes.complex
inexact_dtypes = tu.dtypes.all_inexact
int_dtypes = tu.dtypes.all_integer
uint_dtypes = tu.dtypes.all_unsigned
bool_dtypes = tu.dtypes.boolean
default_dtypes = float_dtypes + int_dtypes
number_dtypes = float_dtypes + complex_dtypes + int_dtypes + uint_dtypes
all_dtypes = number_dtypes + bool_dtypes
python_scalar_types = [bool, int, float, complex]
compatible_shapes = [[(3,)], [(3, 4), (3, 1), (1, 4)], [(2, 3, 4), (2, 1, 4)]]

OpRecord = collections.namedtuple("OpRecord", ["op", "nargs", "dtypes", "rng_factory", "tol"])
ReducerOpRecord = collections.namedtuple(
    "ReducerOpRecord", ["op", "reference_op", "init_val", "dtypes", "primitive"])
NamedReducerOpRecord = collections.namedtuple(
    "NamedReducerOpRecord", ["op", "reference_op", "dtypes"])


def op_record(op, nargs, dtypes, rng_factory, tol=None):
    return OpRecord(op, nargs, dtypes, rng_factory, tol)


def _prim(name):
    return getattr(_lax(), name, None) or Internal(f"jax.lax.{name}")


def lax_reduce_ops():
    lax = _lax()
    i32, i64 = np.iinfo(np.int32), np.iinfo(np.int64)
    u32, u64 = np.iinfo(np.uint32), np.iinfo(np.uint64)
    bits = int_dtypes + uint_dtypes + bool_dtypes
    rows = [
        (lax.add, np.add, 0, default_dtypes, "reduce_sum_p"),
        (lax.mul, np.multiply, 1, default_dtypes, "reduce_prod_p"),
        (lax.max, np.maximum, 0, uint_dtypes + bool_dtypes, "reduce_max_p"),
        (lax.max, np.maximum, -np.inf, float_dtypes, "reduce_max_p"),
        (lax.max, np.maximum, i32.min, [np.int32], "reduce_max_p"),
        (lax.max, np.maximum, i64.min, [np.int64], "reduce_max_p"),
        (lax.min, np.minimum, np.inf, float_dtypes, "reduce_min_p"),
        (lax.min, np.minimum, i32.max, [np.int32], "reduce_min_p"),
        (lax.min, np.minimum, i64.max, [np.int64], "reduce_min_p"),
        (lax.min, np.minimum, u32.max, [np.uint32], "reduce_min_p"),
        (lax.min, np.minimum, u64.max, [np.uint64], "reduce_min_p"),
        (lax.bitwise_and, np.bitwise_and, -1, bits, "reduce_and_p"),
        (lax.bitwise_or, np.bitwise_or, 0, bits, "reduce_or_p"),
        (lax.bitwise_xor, np.bitwise_xor, 0, bits, "reduce_xor_p"),
    ]
    return [ReducerOpRecord(op, ref, init, dts, _prim(p)) for op, ref, init, dts, p in rows]


def lax_named_reduce_ops():
    lax = _lax()
    bits = bool_dtypes + int_dtypes + uint_dtypes
    return [
        NamedReducerOpRecord(lax.reduce_sum, np.sum, number_dtypes),
        NamedReducerOpRecord(lax.reduce_prod, np.prod, number_dtypes),
        NamedReducerOpRecord(lax.reduce_max, np.max, all_dtypes),
        NamedReducerOpRecord(lax.reduce_min, np.min, all_dtypes),
        NamedReducerOpRecord(lax.reduce_and, np.bitwise_and.reduce, bits),
        NamedReducerOpRecord(lax.reduce_or, np.bitwise_or.reduce, bits),
        NamedReducerOpRecord(lax.reduce_xor, np.bitwise_xor.reduce, bits),
    ]


def lax_out_dtype_ops():
    return [op_record("mul", 2, default_dtypes + complex_dtypes, tu.rand_small)]


def lax_ops():
    fc = float_dtypes + complex_dtypes
    dc = default_dtypes + complex_dtypes
    iu = int_dtypes + uint_dtypes
    no_half = [f for f in float_dtypes if np.dtype(f) not in (np.dtype(_dt.bfloat16),
                                                             np.dtype(np.float16))]
    no_bf16 = [f for f in float_dtypes if np.dtype(f) != np.dtype(_dt.bfloat16)]
    r = tu
    table = [
        # name, nargs, dtypes, inputs, tolerance
        ("neg", 1, dc, r.rand_small, None),
        ("sign", 1, default_dtypes + uint_dtypes, r.rand_small, None),
        ("floor", 1, float_dtypes, r.rand_small, None),
        ("ceil", 1, float_dtypes, r.rand_small, None),
        ("round", 1, float_dtypes, r.rand_default, None),
        ("nextafter", 2, no_bf16, r.rand_default, 0),
        ("is_finite", 1, float_dtypes, r.rand_small, None),
        ("exp", 1, fc, r.rand_small, None),
        ("exp2", 1, fc, r.rand_small, None),
        ("expm1", 1, fc, r.rand_small, {np.float64: 1e-8}),
        ("log", 1, fc, r.rand_positive, None),
        ("log1p", 1, fc, r.rand_positive, None),
        ("tanh", 1, fc, r.rand_small, {np.float64: 1e-9, np.complex128: 1e-7}),
        ("logistic", 1, fc, r.rand_default, None),
        ("sin", 1, fc, r.rand_default, None),
        ("cos", 1, fc, r.rand_default, None),
        ("atan2", 2, float_dtypes, r.rand_default, None),
        ("sqrt", 1, float_dtypes, r.rand_positive, None),
        ("sqrt", 1, complex_dtypes, r.rand_default, None),
        ("rsqrt", 1, float_dtypes, r.rand_positive, None),
        ("rsqrt", 1, complex_dtypes, r.rand_default, None),
        ("cbrt", 1, float_dtypes, r.rand_default, None),
        ("square", 1, fc, r.rand_default, None),
        ("reciprocal", 1, fc, r.rand_positive, None),
        ("tan", 1, fc, r.rand_default, {np.float32: 3e-5}),
        ("asin", 1, fc, r.rand_small, {np.complex128: 5e-12}),
        ("acos", 1, fc, r.rand_small, None),
        ("atan", 1, fc, r.rand_small, None),
        ("asinh", 1, fc, r.rand_default, {np.complex64: 1e-4, np.complex128: 1e-5}),
        ("acosh", 1, fc, r.rand_positive, None),
        ("atanh", 1, fc, r.rand_small, {np.float64: 1e-9}),
        ("sinh", 1, fc, r.rand_default, None),
        ("cosh", 1, fc, r.rand_default, None),
        ("lgamma", 1, float_dtypes, r.rand_positive, {np.float32: 1e-5, np.float64: 1e-14}),
        ("digamma", 1, float_dtypes, r.rand_positive, {np.float64: 1e-14}),
        ("betainc", 3, float_dtypes, r.rand_uniform, {np.float32: 2e-5, np.float64: 1e-12}),
        ("igamma", 2, no_half, r.rand_positive, {np.float64: 1e-14}),
        ("igammac", 2, no_half, r.rand_positive, {np.float64: 1e-14}),
        ("erf", 1, float_dtypes, r.rand_small, None),
        ("erfc", 1, float_dtypes, r.rand_small, None),
        ("erf_inv", 1, float_dtypes, r.rand_small, {np.float64: 1e-9}),
        ("bessel_i0e", 1, float_dtypes, r.rand_default, None),
        ("bessel_i1e", 1, float_dtypes, r.rand_default, None),
        ("real", 1, complex_dtypes, r.rand_default, None),
        ("imag", 1, complex_dtypes, r.rand_default, None),
        ("complex", 2, complex_elem_dtypes, r.rand_default, None),
        ("conj", 1, complex_elem_dtypes + complex_dtypes, r.rand_default, None),
        ("abs", 1, dc, r.rand_default, None),
        ("pow", 2, fc, r.rand_positive, None),
        ("bitwise_and", 2, bool_dtypes, r.rand_small, None),
        ("bitwise_not", 1, bool_dtypes, r.rand_small, None),
        ("bitwise_or", 2, bool_dtypes, r.rand_small, None),
        ("bitwise_xor", 2, bool_dtypes, r.rand_small, None),
        ("population_count", 1, iu, r.rand_int, None),
        ("clz", 1, iu, r.rand_int, None),
        ("add", 2, dc, r.rand_small, None),
        ("sub", 2, dc, r.rand_small, None),
        ("mul", 2, dc, r.rand_small, None),
        ("mulhi", 2, iu, r.rand_fullrange, None),
        ("div", 2, dc, r.rand_nonzero, None),
        ("rem", 2, default_dtypes, r.rand_nonzero, None),
        ("max", 2, all_dtypes, r.rand_small, None),
        ("min", 2, all_dtypes, r.rand_small, None),
        ("eq", 2, all_dtypes, r.rand_some_equal, None),
        ("ne", 2, all_dtypes, r.rand_small, None),
        ("ge", 2, default_dtypes, r.rand_small, None),
        ("gt", 2, default_dtypes, r.rand_small, None),
        ("le", 2, default_dtypes, r.rand_small, None),
        ("lt", 2, default_dtypes, r.rand_small, None),
    ]
    return [op_record(*row) for row in table]


def all_bdims(*shapes):
    """Every assignment of a batch dimension (None or a position) to each shape, except
    all-None."""
    choices = [[None] + list(range(len(s) + 1)) for s in shapes]
    return (t for t in itertools.product(*choices) if not all(e is None for e in t))


def add_bdim(bdim_size, bdim, shape):
    shape = list(shape)
    if bdim is not None:
        shape.insert(bdim, bdim_size)
    return tuple(shape)


def slicer(x, bdim):
    if bdim is None:
        return lambda _: x
    return lambda i: _lax().index_in_dim(x, i, bdim, keepdims=False)


def args_slicer(args, bdims):
    if len(args) != len(bdims):
        raise ValueError("args_slicer: args and bdims differ in length")
    slicers = [slicer(a, b) for a, b in zip(args, bdims)]
    return lambda i: [sl(i) for sl in slicers]

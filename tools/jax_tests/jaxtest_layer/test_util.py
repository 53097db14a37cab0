"""Stand-in for ``jax._src.test_util``, written from its documented behaviour on top of
the public API of the library under test (``import jax``: real JAX or aliased xform).

Differences from JAX's own module, all deliberate:

* ``_CompileAndCheck`` does not count op-by-op compilation cache misses (that reads
  JAX's dispatch internals); it checks eager vs ``jit`` results and that the jitted
  function is not retraced on a second call with same-shaped arguments.
* ``tearDown`` does not check JAX's internal trace state.
* Helpers that are JAX internals (mpmath-based references, persistent-cache counters,
  ...) are :class:`Internal` placeholders: a test that uses one fails alike for both
  libraries.
"""
from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import sys
import unittest
import warnings
import zlib
from functools import partial

import numpy as np
import numpy.random as npr
from absl.testing import absltest, parameterized

from . import Internal, library_name
from . import config
from . import dtypes as _dtypes

NUM_GENERATED_CASES = int(os.environ.get("JAX_NUM_GENERATED_CASES", "10"))


def _jax():
    import jax
    return jax


def _public_test_util():
    import jax.test_util    # (a submodule: ``import jax`` alone does not load it)
    return jax.test_util


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return Internal(f"jax._src.test_util.{name}")


# ----------------------------------------------------------------- devices and versions


def device_under_test() -> str:
    return os.environ.get("JAX_TEST_DUT") or _jax().default_backend()


def _device_tags():
    dut = device_under_test()
    tags = {dut}
    if dut == "gpu":
        kind = str(getattr(_jax().devices()[0], "platform_version", "")).lower()
        tags.add("rocm" if "rocm" in kind else "cuda")
    return tags


def test_device_matches(device_types) -> bool:
    assert not isinstance(device_types, str), "device_types should be a list of strings"
    tags = _device_tags()
    return any(d in tags for d in device_types)


test_device_matches.__test__ = False


def _device_filter(predicate, skip_reason):
    def decorator(test_method):
        @functools.wraps(test_method)
        def wrapper(self, *args, **kwargs):
            if not predicate():
                raise unittest.SkipTest(skip_reason)
            return test_method(self, *args, **kwargs)
        return wrapper
    return decorator


def skip_on_devices(*disabled_devices, skip_reason=None):
    reason = skip_reason or "Skipped on devices with tags: " + ", ".join(disabled_devices)
    return _device_filter(lambda: not test_device_matches(disabled_devices), reason)


def run_on_devices(*enabled_devices, skip_reason=None):
    reason = skip_reason or "Skipped unless running on: " + ", ".join(enabled_devices)
    return _device_filter(lambda: test_device_matches(enabled_devices), reason)


def skip_on_flag(flag_name, skip_value):
    def decorator(test_method):
        @functools.wraps(test_method)
        def wrapper(self, *args, **kwargs):
            try:
                value = config.read(flag_name)
            except AttributeError:
                value = None
            if value == skip_value:
                raise unittest.SkipTest(f"not supported when {flag_name} is {value}")
            return test_method(self, *args, **kwargs)
        return wrapper
    return decorator


def request_cpu_devices(nr_devices: int):
    """Ask for ``nr_devices`` CPU devices (``jax_num_cpu_devices``) when the backend is not
    started yet; afterwards it can no longer change (as JAX's helper: a warning)."""
    jax = _jax()
    if jax.config.jax_num_cpu_devices >= nr_devices:
        return
    try:
        jax.config.update("jax_num_cpu_devices", nr_devices)
    except RuntimeError as e:   # the backend is already initialized
        warnings.warn(f"request_cpu_devices({nr_devices}): {e}")


def is_device_rocm() -> bool:
    return "rocm" in _device_tags()


def is_device_cuda() -> bool:
    return "cuda" in _device_tags()


def is_device_tpu(version=None, variant="") -> bool:
    return device_under_test() == "tpu"


def is_device_tpu_at_least(version) -> bool:
    return False if device_under_test() != "tpu" else True


def is_cloud_tpu() -> bool:
    return False


def is_cuda_compute_capability_at_least(capability: str) -> bool:
    if not is_device_cuda():
        return False
    cc = getattr(_jax().devices()[0], "compute_capability", "0")
    return tuple(int(x) for x in str(cc).split(".")) >= tuple(
        int(x) for x in capability.split("."))


def is_optimized_build() -> bool:
    return True


def is_asan() -> bool:
    return False


is_msan = is_tsan = is_sanitized = is_asan


def is_running_under_pytest() -> bool:
    return "pytest" in sys.modules


def skip_under_pytest(reason):
    return unittest.skipIf(is_running_under_pytest(), "Running under pytest: " + reason)


_version_re = re.compile(r"([0-9]+(?:\.[0-9]+)*)(?:(rc|dev).*)?")


def parse_version(v: str):
    m = _version_re.match(v)
    if m is None:
        raise ValueError(f"Unable to parse version '{v}'")
    return tuple(int(x) for x in m.group(1).split("."))


def numpy_version():
    return parse_version(np.__version__)


def jaxlib_version():
    import jaxlib
    return parse_version(jaxlib.__version__)


def thread_unsafe_test_class(*a, **k):
    return lambda cls: cls


def thread_unsafe_test(*a, **k):
    return lambda f: f


JaxTestLoader = absltest.TestLoader


def pytest_mark_if_available(marker):
    def wrap(obj):
        try:
            import pytest
        except ImportError:
            return obj
        return getattr(pytest.mark, marker)(obj)
    return wrap


# ----------------------------------------------------------------- warnings

@contextlib.contextmanager
def ignore_warning(*, message=None, category=Warning):
    """Context manager (and decorator) ignoring matching warnings."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=message or "", category=category)
        yield


# ----------------------------------------------------------------- dtypes

def supported_dtypes():
    dut = device_under_test()
    if dut == "tpu":
        types = {np.bool_, _dtypes.int4, np.int8, np.int16, np.int32, _dtypes.uint4,
                 np.uint8, np.uint16, np.uint32, _dtypes.bfloat16, np.float16, np.float32,
                 np.complex64}
    elif dut == "gpu":
        types = {np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                 np.uint32, np.uint64, _dtypes.bfloat16, np.float16, np.float32,
                 np.float64, np.complex64, np.complex128}
    else:
        types = {np.bool_, _dtypes.int4, np.int8, np.int16, np.int32, np.int64,
                 _dtypes.uint4, np.uint8, np.uint16, np.uint32, np.uint64,
                 _dtypes.bfloat16, np.float16, np.float32, np.float64, np.complex64,
                 np.complex128}
    if not _dtypes.x64_enabled():
        types -= {np.uint64, np.int64, np.float64, np.complex128}
    return {np.dtype(t) for t in types}


class _Dtypes:
    """The dtype lists of JAX's tests, restricted to what the device supports."""

    def supported(self, dts):
        sup = supported_dtypes()
        return [d for d in dts if np.dtype(d) in sup]

    @property
    def custom_floats(self):
        return self.supported([_dtypes.bfloat16] + [t.type for t in _dtypes._float8_dtypes])

    @property
    def floating(self):
        return self.supported([np.float32, np.float64])

    @property
    def all_floating(self):
        return self.supported([_dtypes.bfloat16, np.float16, np.float32, np.float64])

    @property
    def integer(self):
        return self.supported([np.int32, np.int64])

    @property
    def all_integer(self):
        return self.supported([np.int8, np.int16, np.int32, np.int64])

    @property
    def unsigned(self):
        return self.supported([np.uint32, np.uint64])

    @property
    def all_unsigned(self):
        return self.supported([np.uint8, np.uint16, np.uint32, np.uint64])

    @property
    def complex(self):
        return self.supported([np.complex64, np.complex128])

    @property
    def boolean(self):
        return self.supported([np.bool_])

    @property
    def inexact(self):
        return self.floating + self.complex

    @property
    def all_inexact(self):
        return self.all_floating + self.complex

    @property
    def numeric(self):
        return self.floating + self.integer + self.unsigned + self.complex

    @property
    def all(self):
        return (self.all_floating + self.all_integer + self.all_unsigned + self.complex
                + self.boolean)


dtypes = _Dtypes()


def num_float_bits(dtype) -> int:
    return _dtypes.finfo(_dtypes.canonicalize_dtype(dtype)).bits


def to_default_dtype(arr):
    arr = np.asarray(arr)
    f = _dtypes.default_types.get(arr.dtype.kind)
    return arr.astype(f()) if f else arr


def _tree_map(f, *trees):
    return _jax().tree_util.tree_map(f, *trees)


def with_jax_dtype_defaults(func, use_defaults=True):
    """``func`` with outputs cast to the library's default dtypes (x64-aware)."""
    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        result = func(*args, **kwargs)
        if isinstance(use_defaults, bool):
            return _tree_map(to_default_dtype, result) if use_defaults else result
        return _tree_map(lambda a, u: to_default_dtype(a) if u else a, result, use_defaults)
    return wrapped


def _dtype(x):
    if hasattr(x, "dtype"):
        return x.dtype
    dt = _dtypes.python_scalar_types_to_dtypes.get(type(x))
    return dt if dt is not None else np.asarray(x).dtype


def promote_like_jnp(fun, inexact=False):
    """Wrap a NumPy reference so its arguments are first promoted to the dtype
    ``jnp.result_type`` gives them (inexact: then to an inexact dtype)."""
    def wrapper(*args, **kw):
        jnp = _jax().numpy
        flat, tree = _jax().tree_util.tree_flatten(args)
        if flat:
            dt = np.dtype(jnp.result_type(*flat))
            if inexact:
                dt = _dtypes.to_inexact_dtype(dt)
            flat = [np.asarray(a).astype(dt) for a in flat]
        return fun(*_jax().tree_util.tree_unflatten(tree, flat), **kw)
    return wrapper


def strict_promotion_if_dtypes_match(dts):
    if all(d == dts[0] for d in dts):
        return config.override("jax_numpy_dtype_promotion", "strict")
    return config.override("jax_numpy_dtype_promotion", "standard")


# ----------------------------------------------------------------- tolerances

def _tol_table(values):
    keys = [bool, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
            np.uint64, _dtypes.int4, _dtypes.uint4, _dtypes.int2, _dtypes.uint2]
    table = {np.dtype(k): 0 for k in keys if k is not None}
    table.update({np.dtype(k): v for k, v in values.items() if k is not None})
    return table


_default_tolerance = _tol_table({
    _dtypes.float4_e2m1fn: 1e0, _dtypes.float8_e8m0fnu: 1e0, _dtypes.float8_e3m4: 1e-1,
    _dtypes.float8_e4m3: 1e-1, _dtypes.float8_e4m3b11fnuz: 1e-1,
    _dtypes.float8_e4m3fn: 1e-1, _dtypes.float8_e4m3fnuz: 1e-1, _dtypes.float8_e5m2: 1e-1,
    _dtypes.float8_e5m2fnuz: 1e-1, _dtypes.bfloat16: 1e-2, np.float16: 1e-3,
    np.float32: 1e-6, np.float64: 1e-15, np.complex64: 1e-6, np.complex128: 1e-15})

default_gradient_tolerance = {
    np.dtype(k): v for k, v in {
        _dtypes.float4_e2m1fn: 1e0, _dtypes.float8_e8m0fnu: 1e0, _dtypes.float8_e3m4: 1e-1,
        _dtypes.float8_e4m3: 1e-1, _dtypes.float8_e4m3b11fnuz: 1e-1,
        _dtypes.float8_e4m3fn: 1e-1, _dtypes.float8_e4m3fnuz: 1e-1,
        _dtypes.float8_e5m2: 1e-1, _dtypes.float8_e5m2fnuz: 1e-1, _dtypes.bfloat16: 1e-1,
        np.float16: 1e-2, np.float32: 2e-3, np.float64: 1e-5, np.complex64: 1e-3,
        np.complex128: 1e-5}.items() if k is not None}


def default_tolerance():
    table = dict(_default_tolerance)
    table[np.dtype(_jax().dtypes.float0)] = 0
    return table


def tolerance(dtype, tol=None):
    """The tolerance for ``dtype``: ``tol`` itself when a number, else its entry for the
    (canonicalized) dtype, else the default."""
    tol = {} if tol is None else tol
    if not isinstance(tol, dict):
        return tol
    tol = {np.dtype(k): v for k, v in tol.items()}
    dt = _dtypes.canonicalize_dtype(np.dtype(dtype))
    return tol.get(dt, default_tolerance()[dt])


def _normalize_tolerance(tol):
    tol = tol or 0
    if isinstance(tol, dict):
        return {np.dtype(k): v for k, v in tol.items()}
    return dict.fromkeys(default_tolerance(), tol)


def join_tolerance(tol1, tol2):
    out = _normalize_tolerance(tol1)
    for k, v in _normalize_tolerance(tol2).items():
        out[k] = max(v, out.get(k, 0))
    return out


def _assert_numpy_allclose(a, b, atol=None, rtol=None, err_msg=""):
    float0 = np.dtype(_jax().dtypes.float0)
    if a.dtype == b.dtype == float0:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return

    def upcast(x):
        if x.dtype in _dtypes._custom_float_dtypes:
            return x.astype(np.float32)
        if x.dtype in _dtypes._intn_dtypes:
            return x.astype(np.uint8 if x.dtype.name.startswith("u") else np.int8)
        return x
    kw = {}
    if atol:
        kw["atol"] = atol
    if rtol:
        kw["rtol"] = rtol
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(upcast(a), upcast(b), **kw, err_msg=err_msg)


def _assert_numpy_close(a, b, atol=None, rtol=None, err_msg=""):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    atol = max(tolerance(a.dtype, atol), tolerance(b.dtype, atol))
    rtol = max(tolerance(a.dtype, rtol), tolerance(b.dtype, rtol))
    _assert_numpy_allclose(a, b, atol=atol * a.size, rtol=rtol * b.size, err_msg=err_msg)


def check_close(xs, ys, atol=None, rtol=None, err_msg=""):
    _tree_map(partial(_assert_numpy_close, atol=atol, rtol=rtol, err_msg=err_msg), xs, ys)


def check_eq(xs, ys, err_msg=""):
    _tree_map(partial(_assert_numpy_allclose, err_msg=err_msg), xs, ys)


def check_grads(*args, **kwargs):
    return _public_test_util().check_grads(*args, **kwargs)


def check_jvp(*args, **kwargs):
    return _public_test_util().check_jvp(*args, **kwargs)


def check_vjp(*args, **kwargs):
    return _public_test_util().check_vjp(*args, **kwargs)


def rand_like(rng, x):
    shape, dt = np.shape(x), _dtype(x)
    r = lambda: np.asarray(rng.randn(*shape), dtype=dt)
    out = r() + dt.type(1.0j) * r() if _dtypes.issubdtype(dt, np.complexfloating) else r()
    scalar = not isinstance(x, np.generic) and isinstance(x, (bool, int, float, complex))
    return out.item() if scalar else out


# ----------------------------------------------------------------- shapes

class ScalarShape:
    def __len__(self):
        return 0

    def __getitem__(self, i):
        raise IndexError(f"index {i} out of range.")


class _NumpyScalar(ScalarShape):
    pass


class _PythonScalar(ScalarShape):
    pass


NUMPY_SCALAR_SHAPE = _NumpyScalar()
PYTHON_SCALAR_SHAPE = _PythonScalar()


def is_valid_shape(shape, dtype):
    """A Python scalar shape only goes with the dtype of a Python scalar type."""
    if shape == PYTHON_SCALAR_SHAPE:
        return np.dtype(dtype) == np.dtype(type(np.array(0, dtype=dtype).item()))
    return True


def _dims_of_shape(shape):
    if type(shape) in (list, tuple):
        return shape
    if isinstance(shape, ScalarShape):
        return ()
    if np.ndim(shape) == 0:
        return (shape,)
    raise TypeError(type(shape))


def _cast_to_shape(value, shape, dtype):
    if shape is NUMPY_SCALAR_SHAPE:
        return np.dtype(dtype).type(value)
    if shape is PYTHON_SCALAR_SHAPE:
        return np.asarray(value).item()
    return value


def dtype_str(dtype):
    return np.dtype(dtype).name


def format_shape_dtype_string(shape, dtype):
    if shape is NUMPY_SCALAR_SHAPE:
        return dtype_str(dtype)
    if shape is PYTHON_SCALAR_SHAPE:
        return "py" + dtype_str(dtype)
    if isinstance(shape, np.ndarray):
        return f"{dtype_str(dtype)}[{shape}]"
    if isinstance(shape, (list, tuple)):
        return f"{dtype_str(dtype)}[{','.join(str(d) for d in shape)}]"
    if isinstance(shape, int):
        return f"{dtype_str(dtype)}[{shape},]"
    raise TypeError(type(shape))


# ----------------------------------------------------------------- random inputs

def _rand_dtype(rand, shape, dtype, scale=1.0, post=lambda x: x):
    """``rand`` values of ``shape``, scaled, cast to ``dtype`` (|x| for unsigned; a random
    imaginary part for complex), post-processed."""
    dims = _dims_of_shape(shape)
    if _dtypes.issubdtype(dtype, np.unsignedinteger):
        r = lambda: np.asarray(scale * np.abs(rand(*dims))).astype(dtype)
    else:
        r = lambda: np.asarray(scale * rand(*dims)).astype(dtype)
    vals = r() + 1.0j * r() if _dtypes.issubdtype(dtype, np.complexfloating) else r()
    return _cast_to_shape(np.asarray(post(vals), dtype), shape, dtype)


def rand_fullrange(rng, standardize_nans=False):
    """Values spanning every bit pattern of the dtype."""
    def gen(shape, dtype, post=lambda x: x):
        dtype = np.dtype(dtype)
        size = dtype.itemsize * math.prod(_dims_of_shape(shape))
        vals = post(rng.randint(0, np.iinfo(np.uint8).max, size=size, dtype=np.uint8))
        vals = vals.view(dtype)
        if shape is PYTHON_SCALAR_SHAPE:
            if dtype == np.uint64:
                vals = vals.astype(np.int64)
            elif dtype == np.uint32 and not _dtypes.x64_enabled():
                vals = vals.astype(np.int32)
        vals = vals.reshape(_dims_of_shape(shape))
        if standardize_nans and np.issubdtype(dtype, np.floating):
            vals[np.isnan(vals)] = np.nan
        return _cast_to_shape(vals, shape, dtype)
    return gen


def rand_default(rng, scale=3):
    return partial(_rand_dtype, rng.randn, scale=scale)


def rand_nonzero(rng):
    post = lambda x: np.where(x == 0, np.array(1, dtype=x.dtype), x)
    return partial(_rand_dtype, rng.randn, scale=3, post=post)


def rand_positive(rng):
    return partial(_rand_dtype, rng.rand, scale=2, post=lambda x: x + 1)


def rand_small(rng):
    return partial(_rand_dtype, rng.randn, scale=1e-3)


def rand_not_small(rng, offset=10.0):
    post = lambda x: x + np.where(x > 0, offset, -offset)
    return partial(_rand_dtype, rng.randn, scale=3.0, post=post)


def rand_small_positive(rng):
    return partial(_rand_dtype, rng.rand, scale=2e-5)


def rand_uniform(rng, low=0.0, high=1.0):
    assert low < high
    return partial(_rand_dtype, rng.rand, post=lambda x: x * (high - low) + low)


def rand_some_equal(rng):
    def post(x):
        flat = x.ravel()
        if len(flat) == 0:
            return x
        return np.where(rng.rand(*np.shape(x)) < 0.5, flat[0], x)
    return partial(_rand_dtype, rng.randn, scale=100.0, post=post)


def _rand_with_specials(rng, specials):
    """rand_default values with each of ``specials`` (value, probability) substituted at
    random positions, for floating dtypes; complex: real and imaginary parts alike."""
    base = rand_default(rng)

    def rand(shape, dtype):
        if _dtypes.issubdtype(dtype, np.complexfloating):
            part = np.real(np.array(0, dtype=dtype)).dtype
            out = rand(shape, part) + np.array(1j, dtype) * rand(shape, part)
            return _cast_to_shape(out, shape, dtype)
        if not _dtypes.issubdtype(dtype, np.floating):
            return base(shape, dtype)
        dims = _dims_of_shape(shape)
        vals = base(shape, dtype)
        for value, p in specials:
            vals = np.where(rng.rand(*dims) < p, np.array(value, dtype=dtype), vals)
        return _cast_to_shape(np.asarray(vals, dtype=dtype), shape, dtype)
    return rand


def rand_some_inf(rng):
    return _rand_with_specials(rng, [(np.inf, 0.1), (-np.inf, 0.1)])


def rand_some_nan(rng):
    return _rand_with_specials(rng, [(np.nan, 0.1)])


def rand_some_inf_and_nan(rng):
    return _rand_with_specials(rng, [(np.inf, 0.1), (-np.inf, 0.1), (np.nan, 0.1)])


def rand_some_zero(rng):
    base = rand_default(rng)

    def rand(shape, dtype):
        dims = _dims_of_shape(shape)
        vals = np.where(rng.rand(*dims) < 0.5, np.array(0, dtype=dtype), base(shape, dtype))
        return _cast_to_shape(np.asarray(vals, dtype=dtype), shape, dtype)
    return rand


def rand_int(rng, low=0, high=None):
    def fn(shape, dtype):
        hi = high
        gen_dtype = dtype if np.issubdtype(dtype, np.integer) else np.int64
        if low == 0 and hi is None:
            if not np.issubdtype(dtype, np.integer):
                raise ValueError("rand_int requires an explicit `high` for non-integers.")
            hi = np.iinfo(dtype).max
        return rng.randint(low, high=hi, size=shape, dtype=gen_dtype).astype(dtype)
    return fn


def rand_unique_int(rng, high=None):
    def fn(shape, dtype):
        return rng.choice(np.arange(high or math.prod(shape), dtype=dtype), size=shape,
                          replace=False)
    return fn


def rand_indices_unique_along_axis(rng):
    """Indices below ``dim`` that are unique along ``axis`` (some made negative)."""
    def fn(dim, shape, axis, allow_negative=True):
        rest = shape[:axis] + shape[axis + 1:]
        batch = math.prod(rest)
        idx = np.array([rng.choice(dim, size=shape[axis], replace=False)
                        for _ in range(batch)]).reshape(rest + (shape[axis],))
        idx = np.moveaxis(idx, -1, axis)
        if allow_negative:
            idx[rng.choice([False, True], idx.shape)] -= dim
        return idx
    return fn


def rand_bool(rng):
    def gen(shape, dtype):
        return _cast_to_shape(np.asarray(rng.rand(*_dims_of_shape(shape)) < 0.5, dtype=dtype),
                              shape, dtype)
    return gen


# ----------------------------------------------------------------- parameterization

@functools.lru_cache(maxsize=None)
def _sample_indices(n, m):
    return np.random.RandomState(42).choice(n, size=m, replace=False)


def sample_product_testcases(*args, **kw):
    """``min(n, JAX_NUM_GENERATED_CASES)`` cases drawn without replacement (fixed seed)
    from the cartesian product of ``args`` (lists of dicts merged into the case) and
    ``kw`` (name -> list of values)."""
    args = [list(a) for a in args]
    kws = [(k, list(v)) for k, v in kw.items()]
    n = math.prod(len(a) for a in args) * math.prod(len(v) for _, v in kws)
    cases = []
    for i in _sample_indices(n, min(n, NUM_GENERATED_CASES)):
        i = int(i)
        case = {}
        for a in args:
            case.update(a[i % len(a)])
            i //= len(a)
        for k, v in kws:
            case[k] = v[i % len(v)]
            i //= len(v)
        cases.append(case)
    return cases


def sample_product(*args, **kw):
    """Decorator: ``parameterized.parameters`` over a sample of the product."""
    return parameterized.parameters(*sample_product_testcases(*args, **kw))


def cases_from_list(xs):
    xs = list(xs)
    n = len(xs)
    return [xs[int(i)] for i in _sample_indices(n, min(n, NUM_GENERATED_CASES))]


def parameterized_filterable(*, kwargs, testcase_name=None, one_containing=None):
    kwargs_with_name = []
    for kw in kwargs:
        kw = dict(kw)
        if "testcase_name" not in kw:
            name = (testcase_name(kw) if testcase_name else
                    "_".join(f"{k}={v}" for k, v in kw.items()))
            kw["testcase_name"] = re.sub(r"[^a-zA-Z0-9_]", "_", str(name))
        kwargs_with_name.append(kw)
    if one_containing is not None:
        kwargs_with_name = [k for k in kwargs_with_name
                            if one_containing in k["testcase_name"]][:1]
    return parameterized.named_parameters(*kwargs_with_name)


# ----------------------------------------------------------------- jaxpr inspection

def _subjaxprs(jaxpr):
    for eqn in jaxpr.eqns:
        for p in eqn.params.values():
            for v in (p if isinstance(p, (tuple, list)) else (p,)):
                inner = getattr(v, "jaxpr", None)
                if inner is not None and hasattr(inner, "eqns"):
                    yield inner
                elif hasattr(v, "eqns"):
                    yield v


def iter_eqns(jaxpr):
    yield from jaxpr.eqns
    for sub in _subjaxprs(jaxpr):
        yield from iter_eqns(sub)


def _dot_params(fun, args, key):
    jax = _jax()
    closed = jax.make_jaxpr(fun)(*args)
    return [e.params[key] for e in iter_eqns(closed.jaxpr)
            if e.primitive is jax.lax.dot_general_p or
            str(e.primitive) == "dot_general"]


def assert_dot_precision(expected_precision, fun, *args):
    for precision in _dot_params(fun, args, "precision"):
        msg = f"Unexpected precision: {expected_precision} != {precision}"
        if isinstance(precision, tuple):
            assert precision[0] == expected_precision, msg
            assert precision[1] == expected_precision, msg
        else:
            assert precision == expected_precision, msg


def assert_dot_preferred_element_type(expected, fun, *args, **kwargs):
    for pe in _dot_params(partial(fun, **kwargs), args, "preferred_element_type"):
        assert expected == pe, f"Unexpected preferred_element_type: {expected} != {pe}"


# ----------------------------------------------------------------- meshes

def create_mesh(mesh_shape, axis_names, iota_order=False, axis_types=None):
    jax = _jax()
    size = math.prod(mesh_shape)
    if len(jax.devices()) < size:
        raise unittest.SkipTest(f"Test requires {size} devices, found {len(jax.devices())}.")
    if axis_types is None:
        axis_types = (jax.sharding.AxisType.Auto,) * len(mesh_shape)
    return jax.make_mesh(mesh_shape, axis_names, axis_types=axis_types)


def with_explicit_mesh(sizes, names, axis_types=None, iota_order=False):
    def decorator(fn):
        def mesh_fn(*args, **kwargs):
            jax = _jax()
            types = ((jax.sharding.AxisType.Explicit,) * len(names)
                     if axis_types is None else axis_types)
            mesh = create_mesh(sizes, names, iota_order, axis_types=types)
            with jax.set_mesh(mesh):
                return fn(*args, **kwargs, mesh=mesh)
        return mesh_fn
    return decorator


# ----------------------------------------------------------------- the test case

def with_config(**kwds):
    """Class decorator: configuration options every test of the class runs under."""
    def decorator(cls):
        merged = {}
        for b in reversed(cls.__mro__[1:]):
            merged.update(getattr(b, "_default_thread_local_config", {}))
        merged.update(kwds)
        cls._default_thread_local_config = merged
        return cls
    return decorator


with_global_config = with_config


class JaxTestCase(parameterized.TestCase):
    """Base class of JAX's tests: a per-test seeded NumPy RandomState, strict dtype
    promotion and no implicit rank promotion by default, and array assertions."""

    _default_thread_local_config = {
        "jax_enable_checks": True,
        "jax_numpy_dtype_promotion": "strict",
        "jax_numpy_rank_promotion": "raise",
    }

    def setUp(self):
        super().setUp()
        self._rng = npr.RandomState(zlib.adler32(self._testMethodName.encode()))
        for option, value in self._default_thread_local_config.items():
            try:
                self.enterContext(config.override(option, value))
            except AttributeError:
                pass        # an option the library does not have

    def rng(self):
        return self._rng

    # ------------------------------------------------------------- assertions
    def assertDeprecationWarnsOrRaises(self, deprecation_id, message, *,
                                       error_class=ValueError):
        return self._warns_or_raises(message, error_class)

    @contextlib.contextmanager
    def _warns_or_raises(self, message, error_class):
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            try:
                yield
            except error_class as e:
                self.assertRegex(str(e), message)
                return
        if not any(issubclass(w.category, DeprecationWarning) and
                   re.search(message, str(w.message)) for w in ws):
            self.fail(f"Expected a DeprecationWarning or {error_class.__name__} matching "
                      f"{message!r}; got {[str(w.message) for w in ws]}")

    @contextlib.contextmanager
    def assertNoWarnings(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            yield

    def assertDtypesMatch(self, actual, desired, *, canonicalize_dtypes=True):
        if not _dtypes.x64_enabled() and canonicalize_dtypes:
            self.assertEqual(_dtypes.canonicalize_dtype(_dtype(actual), True),
                             _dtypes.canonicalize_dtype(_dtype(desired), True))
        else:
            self.assertEqual(_dtype(actual), _dtype(desired))

    def assertArraysEqual(self, actual, desired, *, check_dtypes=True, err_msg="",
                          allow_object_dtype=False, verbose=True):
        if check_dtypes:
            self.assertDtypesMatch(actual, desired)
        actual, desired = np.asarray(actual), np.asarray(desired)
        if not allow_object_dtype and (actual.dtype == object or desired.dtype == object):
            raise TypeError("assertArraysEqual on object arrays; pass "
                            "allow_object_dtype=True to compare them anyway.")
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(actual, desired, err_msg=err_msg, verbose=verbose)

    def assertArraysAllClose(self, actual, desired, *, check_dtypes=True, atol=None,
                             rtol=None, err_msg=""):
        self.assertEqual(actual.shape, desired.shape)
        atol = max(tolerance(_dtype(actual), atol), tolerance(_dtype(desired), atol))
        rtol = max(tolerance(_dtype(actual), rtol), tolerance(_dtype(desired), rtol))
        _assert_numpy_allclose(actual, desired, atol=atol, rtol=rtol, err_msg=err_msg)
        if check_dtypes:
            self.assertDtypesMatch(actual, desired)

    def assertAllClose(self, actual, desired, *, check_dtypes=True, atol=None, rtol=None,
                       canonicalize_dtypes=True, err_msg=""):
        """Recursive closeness of arrays, scalars, sequences and dicts."""
        kw = dict(check_dtypes=check_dtypes, atol=atol, rtol=rtol,
                  canonicalize_dtypes=canonicalize_dtypes, err_msg=err_msg)
        seq = lambda x: _is_sequence(x) and not hasattr(x, "__array__")
        if isinstance(actual, dict):
            self.assertIsInstance(desired, dict)
            self.assertEqual(set(actual), set(desired))
            for k in actual:
                self.assertAllClose(actual[k], desired[k], **kw)
        elif seq(actual):
            if not seq(desired):
                self.fail(f"Expected sequence, got {desired}")
            self.assertEqual(len(actual), len(desired))
            for a, d in zip(actual, desired):
                self.assertAllClose(a, d, **kw)
        elif hasattr(actual, "__array__") or np.isscalar(actual):
            if not (hasattr(desired, "__array__") or np.isscalar(desired)):
                self.fail(f"Expected array-like, got {desired}")
            if check_dtypes:
                self.assertDtypesMatch(actual, desired,
                                       canonicalize_dtypes=canonicalize_dtypes)
            self.assertArraysAllClose(np.asarray(actual), np.asarray(desired),
                                      check_dtypes=False, atol=atol, rtol=rtol,
                                      err_msg=err_msg)
        elif actual == desired:
            return
        else:
            raise TypeError((type(actual), type(desired)))

    def assertMultiLineStrippedEqual(self, expected, what):
        import textwrap
        clean = lambda s: re.sub(r"\s*\n\s*", "\n", textwrap.dedent(s).strip())
        self.assertMultiLineEqual(clean(expected), clean(what))

    # ------------------------------------------------------------- checks
    def _CompileAndCheck(self, fun, args_maker, *, check_dtypes=True, tol=None,
                         rtol=None, atol=None, check_cache_misses=True):
        """``fun`` eagerly vs under ``jit`` (first call traces, second must not), twice
        with fresh arguments; results must be close."""
        jax = _jax()
        args = args_maker()
        executing = [True]

        def wrapped(*a):
            self.assertTrue(executing[0], "the jitted function was retraced")
            return fun(*a)

        python_ans = fun(*args)
        self.assertEqual(_tree_map(np.shape, python_ans),
                         _tree_map(lambda x: np.shape(np.asarray(x)), python_ans))
        python_ans = fun(*args)
        cfun = jax.jit(wrapped)
        executing[0] = True
        monitored = cfun(*args)
        executing[0] = False
        compiled = cfun(*args)
        kw = dict(check_dtypes=check_dtypes, atol=atol or tol, rtol=rtol or tol)
        self.assertAllClose(monitored, python_ans, **kw)
        self.assertAllClose(compiled, python_ans, **kw)
        args = args_maker()
        executing[0] = True
        python_ans = fun(*args)
        executing[0] = False
        compiled = cfun(*args)
        self.assertAllClose(compiled, python_ans, **kw)

    def _CheckAgainstNumpy(self, numpy_reference_op, lax_op, args_maker, check_dtypes=True,
                           tol=None, atol=None, rtol=None, canonicalize_dtypes=True):
        args = args_maker()
        lax_ans = lax_op(*args)
        numpy_ans = numpy_reference_op(*args)
        self.assertAllClose(lax_ans, numpy_ans, check_dtypes=check_dtypes,
                            atol=atol or tol, rtol=rtol or tol,
                            canonicalize_dtypes=canonicalize_dtypes)


def _is_sequence(x):
    try:
        iter(x)
    except TypeError:
        return False
    return True


class BufferDonationTestCase(JaxTestCase):
    def assertDeleted(self, x):
        self.assertTrue(x.is_deleted())

    def assertNotDeleted(self, x):
        self.assertFalse(x.is_deleted())

"""xform.ffi: calling XLA FFI handlers compiled from C++ (tests/ffi_kernels/), compared
with NumPy and with real JAX calling the same registered targets."""
import ctypes
import os
import shutil
import subprocess

import jax
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform import ffi

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler to build the FFI handlers")
    out = str(tmp_path_factory.mktemp("ffi") / "libaxpb_rowsum.so")
    subprocess.run([cxx, "-std=c++17", "-O0", "-w", "-shared", "-fPIC", "-I", ffi.include_dir(),
                    os.path.join(HERE, "ffi_kernels", "axpb_rowsum.cc"), "-o", out],
                   check=True)
    lib = ctypes.cdll.LoadLibrary(out)
    ffi.register_ffi_target("test_axpb", ffi.pycapsule(lib.Axpb), platform="cpu")
    ffi.register_ffi_target("test_rowsum", ffi.pycapsule(lib.RowSum), platform="cpu")
    return lib


X = np.arange(12, dtype=np.float32).reshape(3, 4) - 4.5


def _axpb(lib, x, vmap_method=None, **kw):
    call = lib.ffi.ffi_call("test_axpb", lib.ShapeDtypeStruct(x.shape, x.dtype),
                            vmap_method=vmap_method, **kw)
    return call(x, scale=np.float32(2.0), offset=0.25)


def test_headers_and_capsules_are_jaxs():
    assert ffi.include_dir() == jax.ffi.include_dir()
    assert os.path.exists(os.path.join(ffi.include_dir(), "xla", "ffi", "api", "ffi.h"))
    with pytest.raises(ValueError, match="register_ffi_type_id is not supported"):
        ffi.register_ffi_type_id("t", None)


def test_ffi_call_eager_and_jit_match_numpy_and_jax(kernels):
    want = 2 * X + 0.25
    np.testing.assert_array_equal(np.asarray(_axpb(xform, X)), want)
    np.testing.assert_array_equal(np.asarray(xform.jit(lambda x: _axpb(xform, x))(X)), want)
    np.testing.assert_array_equal(np.asarray(_axpb(jax, X)), want)   # the same target


def test_ffi_call_multiple_results_and_their_container(kernels):
    outs = (xform.ShapeDtypeStruct((3,), np.float32), xform.ShapeDtypeStruct((1,), np.int32))
    s, n = ffi.ffi_call("test_rowsum", outs)(X)
    np.testing.assert_allclose(np.asarray(s), X.sum(1))
    assert np.asarray(n).tolist() == [3] and n.dtype == np.int32
    assert type(ffi.ffi_call("test_rowsum", outs)(X)) is tuple
    assert type(ffi.ffi_call("test_rowsum", list(outs))(X)) is list
    jouts = (jax.ShapeDtypeStruct((3,), np.float32), jax.ShapeDtypeStruct((1,), np.int32))
    js, _ = jax.ffi.ffi_call("test_rowsum", jouts)(X)
    np.testing.assert_array_equal(np.asarray(s), np.asarray(js))


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all", "legacy_vectorized"])
def test_ffi_call_under_vmap_matches_a_loop(kernels, method):
    got = xform.vmap(lambda x: _axpb(xform, x, vmap_method=method))(X)
    loop = np.stack([np.asarray(_axpb(xform, r)) for r in X])
    np.testing.assert_array_equal(np.asarray(got), loop)
    # a batched and an unbatched operand: rows summed per batch element
    outs = (xform.ShapeDtypeStruct((2,), np.float32), xform.ShapeDtypeStruct((1,), np.int32))
    rs = ffi.ffi_call("test_rowsum", outs, vmap_method=method)
    if method in ("sequential", "sequential_unrolled"):
        b = np.stack([X[:2], X[1:]])
        got = xform.jit(xform.vmap(lambda m: rs(m)[0]))(b)
        np.testing.assert_allclose(np.asarray(got), b.sum(2))


def test_ffi_call_without_vmap_method_refuses_vmap(kernels):
    with pytest.raises(NotImplementedError, match="vmap_method"):
        xform.vmap(lambda x: _axpb(xform, x))(X)


def test_ffi_call_side_effects_keep_the_call(kernels):
    def f(keep):
        def g(x):
            ffi.ffi_call("test_axpb", xform.ShapeDtypeStruct(x.shape, x.dtype),
                         has_side_effect=keep)(x, scale=np.float32(1), offset=0.0)
            return x + 1
        return g
    assert "custom_call" in xform.jit(f(True)).lower(X).as_text()
    assert "test_axpb" not in xform.jit(f(False)).lower(X).as_text()


def test_ffi_call_is_not_differentiable(kernels):
    with pytest.raises(ValueError, match="cannot be differentiated.*custom_jvp"):
        xform.grad(lambda x: _axpb(xform, x).sum())(X)


def test_ffi_call_argument_errors(kernels):
    sds = xform.ShapeDtypeStruct(X.shape, X.dtype)
    with pytest.raises(ValueError, match="vmap_method"):
        ffi.ffi_call("test_axpb", sds, vmap_method="loop")
    with pytest.raises(ValueError, match="shape' and 'dtype'"):
        ffi.ffi_call("test_axpb", [3])
    with pytest.raises(ValueError, match="legacy_backend_config"):
        ffi.ffi_call("test_axpb", sds, legacy_backend_config="x")
    with pytest.raises(ValueError, match="outside the range"):
        ffi.ffi_call("test_axpb", sds, input_output_aliases={1: 0})(X)
    with pytest.raises(ValueError, match="different abstract value"):
        ffi.ffi_call("test_axpb", xform.ShapeDtypeStruct((2,), np.float32),
                     input_output_aliases={0: 0})(X)
    with pytest.raises(ValueError, match="number of input layouts"):
        ffi.ffi_call("test_axpb", sds, input_layouts=[None, None])(X)
    with pytest.raises(TypeError, match="Non-hashable"):
        ffi.ffi_call("test_axpb", sds)(X, scale=[1.0])


def test_ffi_call_aliasing_its_input(kernels):
    sds = xform.ShapeDtypeStruct(X.shape, X.dtype)
    f = xform.jit(lambda x: ffi.ffi_call("test_axpb", sds, input_output_aliases={0: 0})(
        x, scale=np.float32(3), offset=-1.0))
    np.testing.assert_array_equal(np.asarray(f(X)), 3 * X - 1)
    assert "output_operand_aliases" in f.lower(X).as_text()


def test_ffi_lowering_of_a_user_primitive(kernels):
    from xform.extend.core import Primitive
    from xform.interpreters import mlir
    p = Primitive("user_axpb")
    p.def_abstract_eval(lambda x, **_: x)
    mlir.register_lowering(p, ffi.ffi_lowering("test_axpb"))
    f = xform.jit(lambda x: p.bind(x, scale=np.float32(0.5), offset=2.0))
    np.testing.assert_array_equal(np.asarray(f(X)), 0.5 * X + 2.0)

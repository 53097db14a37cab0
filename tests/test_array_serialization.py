"""xform.experimental.array_serialization against JAX's: the TensorStore specs it builds,
and arrays written by one read back by the other (same files on disk)."""
import os

import ml_dtypes
import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax.experimental.array_serialization import serialization as jser
from jax.experimental.array_serialization import tensorstore_impl as jts

import xform
import xform.numpy as xnp
from xform.experimental.array_serialization import serialization as xser
from xform.experimental.array_serialization import tensorstore_impl as xts

pytest.importorskip("tensorstore")

VALUES = [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.array(7, dtype=np.int32),
    np.linspace(-2, 2, 10).astype(ml_dtypes.bfloat16),
    np.array([True, False, True]),
    np.arange(24, dtype=np.int8).reshape(2, 3, 4),
    np.zeros((0, 3), np.float32),
]


def _ids(v):
    return f"{v.dtype}{list(v.shape)}"


@pytest.mark.parametrize("path", ["/tmp/ckpt/a", "/tmp/ckpt/dir/", "gs://bucket/run/x",
                                  "s3://bucket/run/x"])
@pytest.mark.parametrize("ocdbt", [False, True])
@pytest.mark.parametrize("process_idx", [None, 3])
@pytest.mark.parametrize("driver", ["zarr", "zarr3"])
def test_get_tensorstore_spec_matches_jax(path, ocdbt, process_idx, driver):
    kw = dict(ocdbt=ocdbt, process_idx=process_idx, driver=driver)
    assert xts.get_tensorstore_spec(path, **kw) == jts.get_tensorstore_spec(path, **kw)


@pytest.mark.parametrize("v", VALUES, ids=_ids)
@pytest.mark.parametrize("driver", ["zarr", "zarr3"])
def test_metadata_matches_jax(v, driver):
    got = xts.get_tensorstore_spec("/tmp/c/a", arr=xnp.asarray(v), driver=driver)
    want = jts.get_tensorstore_spec("/tmp/c/a", arr=jnp.asarray(v), driver=driver)
    assert got == want


def test_chunk_shape_splits_large_arrays_like_jax():
    for shape, target in [((1024, 1024), 2 ** 20), ((6, 10, 14), 64), ((7, 3), 1),
                          ((97, 4), 100)]:
        assert xts._compute_chunk_shape(shape, "float32", target) == \
            jts._compute_chunk_shape(shape, "float32", target)


def test_serialization_module_defaults_match_jax():
    for p in ["/tmp/c/a", "gs://b/c/a"]:
        assert xser.get_tensorstore_spec(p) == jser.get_tensorstore_spec(p)
    for spec in ["gs://b/x", "/tmp/x", {"kvstore": {"driver": "gcs", "bucket": "b"}},
                 {"kvstore": {"driver": "file", "path": "/x"}}]:
        assert xser.is_remote_storage(spec) == jser.is_remote_storage(spec)


@pytest.mark.parametrize("v", VALUES, ids=_ids)
@pytest.mark.parametrize("ocdbt", [False, True])
def test_written_by_xform_read_by_jax(tmp_path, v, ocdbt):
    spec = xts.get_tensorstore_spec(str(tmp_path / "arr"), ocdbt=ocdbt)
    xser.run_serialization([xnp.asarray(v)], [spec])
    spec = jts.get_tensorstore_spec(str(tmp_path / "arr"), ocdbt=ocdbt)
    s = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    (got,) = jser.run_deserialization([s], [spec])
    assert got.dtype == v.dtype and got.shape == v.shape
    np.testing.assert_array_equal(np.asarray(got), v)


@pytest.mark.parametrize("v", VALUES, ids=_ids)
@pytest.mark.parametrize("ocdbt", [False, True])
def test_written_by_jax_read_by_xform(tmp_path, v, ocdbt):
    spec = jts.get_tensorstore_spec(str(tmp_path / "arr"), ocdbt=ocdbt)
    jser.run_serialization([jnp.asarray(v)], [spec])
    spec = xts.get_tensorstore_spec(str(tmp_path / "arr"), ocdbt=ocdbt)
    s = xform.sharding.SingleDeviceSharding(xform.devices()[0])
    (got,) = xser.run_deserialization([s], [spec])
    assert isinstance(got, xform.Array)
    assert got.dtype == v.dtype and got.shape == v.shape and got.sharding == s
    np.testing.assert_array_equal(np.asarray(got), v)


@pytest.mark.parametrize("global_shape,dtype", [((5, 6), None), ((2, 2), None),
                                                ((3, 4), np.int32), ((4, 4), np.float16)])
def test_reshape_and_cast_on_read_match_jax(tmp_path, global_shape, dtype):
    v = np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5
    spec = jts.get_tensorstore_spec(str(tmp_path / "arr"), ocdbt=False)
    jser.run_serialization([jnp.asarray(v)], [spec])
    spec = jts.get_tensorstore_spec(str(tmp_path / "arr"), ocdbt=False)
    (want,) = jser.run_deserialization(
        [jax.sharding.SingleDeviceSharding(jax.devices()[0])], [spec], [global_shape],
        [dtype])
    spec = xts.get_tensorstore_spec(str(tmp_path / "arr"), ocdbt=False)
    (got,) = xser.run_deserialization(
        [xform.sharding.SingleDeviceSharding(xform.devices()[0])], [spec], [global_shape],
        [dtype])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_deserialize_onto_shape_dtype_struct(tmp_path):
    v = np.arange(6, dtype=np.float32).reshape(2, 3)
    spec = xts.get_tensorstore_spec(str(tmp_path / "arr"))
    xser.run_serialization([xnp.asarray(v)], [spec])
    s = xform.sharding.SingleDeviceSharding(xform.devices()[0])
    sds = xform.ShapeDtypeStruct((2, 3), np.float16, sharding=s)
    import asyncio
    got = asyncio.run(xts.async_deserialize(
        sds, xts.get_tensorstore_spec(str(tmp_path / "arr"))))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(got), v.astype(np.float16))


def test_deserialize_needs_a_sharding_like_jax(tmp_path):
    spec = xts.get_tensorstore_spec(str(tmp_path / "arr"))
    xser.run_serialization([xnp.ones(3)], [spec])
    with pytest.raises(TypeError, match="jax.sharding.Sharding"):
        xser.run_deserialization(["cpu"], [xts.get_tensorstore_spec(str(tmp_path / "arr"))])
    with pytest.raises(TypeError, match="jax.sharding.Sharding"):
        jser.run_deserialization(["cpu"], [jts.get_tensorstore_spec(str(tmp_path / "arr"))])


def test_async_manager_commits_then_calls_back(tmp_path):
    tree = [xnp.arange(5.0), xnp.ones((2, 2), xnp.int32)]
    paths = [str(tmp_path / "tmp" / n) for n in ("a", "b")]
    calls = []
    m = xser.GlobalAsyncCheckpointManager()
    assert isinstance(m, xser.GlobalAsyncCheckpointManagerBase)
    m.serialize_with_paths(tree, paths, on_commit_callback=lambda: calls.append(
        os.rename(tmp_path / "tmp", tmp_path / "final")))
    m.wait_until_finished()
    assert calls == [None] and os.path.isdir(tmp_path / "final")
    s = xform.sharding.SingleDeviceSharding(xform.devices()[0])
    got = m.deserialize_with_paths([s, s], [str(tmp_path / "final" / n) for n in "ab"])
    for g, w in zip(got, tree):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    # the same files read by JAX's manager
    jm = jser.GlobalAsyncCheckpointManager()
    js = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    want = jm.deserialize_with_paths([js, js], [str(tmp_path / "final" / n) for n in "ab"])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_async_manager_reraises_commit_errors_once(tmp_path):
    m = xser.GlobalAsyncCheckpointManager()

    def boom():
        raise RuntimeError("commit callback failed")
    m.serialize_with_paths([xnp.ones(2)], [str(tmp_path / "a")], on_commit_callback=boom)
    with pytest.raises(RuntimeError, match="commit callback failed"):
        m.wait_until_finished()
    m.check_for_errors()     # raised once, then cleared (as JAX's)


def test_limit_in_flight_bytes_rejects_oversized_requests():
    import asyncio
    lim = xts._LimitInFlightBytes(10)
    with pytest.raises(ValueError, match="more bytes"):
        asyncio.run(lim.wait_for_bytes(11))


from _multidevice import HERE, case_names, run_case_script  # noqa: E402

SCRIPT = os.path.join(HERE, "_array_serialization_cases.py")


@pytest.fixture(scope="module")
def multidevice_results():
    return run_case_script(SCRIPT)


@pytest.mark.parametrize("name", case_names(SCRIPT))
def test_multidevice(multidevice_results, name):
    r = multidevice_results.get(name)
    assert r is not None, f"case {name} did not run"
    assert r["ok"], r["err"]

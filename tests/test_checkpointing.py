"""xform.checkpointing: bit-exact round trips, atomic writes, key-path errors."""
import collections
import os
import zipfile

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xform
import xform.numpy as xnp
from xform import checkpointing as ck

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128,
          ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.int4,
          ml_dtypes.uint4]

State = collections.namedtuple("State", "count mu")


def _bits(a):
    """The array's exact bytes (NaN payloads, -0.0 and all); a key array's key data."""
    if not isinstance(getattr(a, "dtype", None), np.dtype):
        a = xform.random.key_data(a)
    a = np.ascontiguousarray(np.asarray(a))
    return a.dtype, a.shape, a.tobytes()


@st.composite
def arrays(draw):
    dt = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    n = int(np.prod(shape, dtype=np.int64))
    raw = draw(st.binary(min_size=n * dt.itemsize, max_size=n * dt.itemsize))
    if dt == np.bool_:
        raw = bytes(b & 1 for b in raw)
    if dt in (np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4)):
        raw = bytes(b & 0x07 for b in raw)
    a = np.frombuffer(raw, dtype=dt).reshape(shape).copy()
    if dt in (np.dtype(np.float32), np.dtype(np.int32), np.dtype(ml_dtypes.bfloat16)) \
            and draw(st.booleans()):
        return xnp.asarray(a)          # an xform Array leaf
    return a


typed_keys = st.builds(lambda seed, n: xform.random.split(xform.random.key(seed), n),
                       st.integers(0, 2**31 - 1), st.integers(1, 3))
leaves = st.one_of(arrays(), st.integers(-2**40, 2**40), st.floats(allow_nan=True),
                   st.booleans(), typed_keys)
pytrees = st.recursive(
    leaves,
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.tuples(kids, kids),
                           st.dictionaries(st.text("abcxyz_", min_size=1, max_size=4), kids,
                                           max_size=3),
                           st.builds(State, kids, kids), st.none()),
    max_leaves=8)


@settings(max_examples=int(os.environ.get("XFORM_CKPT_EXAMPLES", "30")))
@given(pytrees)
def test_hypothesis_pytrees_roundtrip_bit_exactly(tmp_path_factory, tree):
    path = tmp_path_factory.mktemp("ck") / "t.ckpt"
    ck.save(path, tree)
    for target in (None, tree):
        back = ck.restore(path, target=target)
        la, ta = xform.tree_util.tree_flatten(tree)
        lb, tb = xform.tree_util.tree_flatten(back)
        assert len(la) == len(lb)
        if target is not None:
            assert ta == tb
        for x, y in zip(la, lb):
            if type(x) in (bool, int, float):
                assert type(y) is type(x)
                assert x == y or (x != x and y != y)
            else:
                assert _bits(x) == _bits(y)


def test_roundtrip_structure_and_types(tmp_path):
    tree = {"params": [(xnp.ones((2, 3)), np.arange(3, dtype=ml_dtypes.bfloat16))],
            "opt": State(np.int32(7), {"w": np.float64(-0.0)}), "none": None,
            "by_index": {1: np.int8(-3), 2: 2.5}}
    p = tmp_path / "c.ckpt"
    ck.save(p, tree)
    back = ck.restore(p)
    assert isinstance(back["params"][0], tuple) and isinstance(back["params"][0][0], xform.Array)
    assert type(back["opt"]).__name__ == "State" and back["opt"]._fields == ("count", "mu")
    assert back["none"] is None and back["by_index"][2] == 2.5
    assert np.signbit(np.asarray(back["opt"].mu["w"]))
    typed = ck.restore(p, target=tree)
    assert type(typed["opt"]) is State
    assert typed["params"][0][1].dtype == ml_dtypes.bfloat16
    # readable with plain zipfile + numpy (no pickle)
    with zipfile.ZipFile(p) as z:
        names = z.namelist()
        assert "manifest.json" in names
        np.load(z.open("arrays/0.npy"), allow_pickle=False)


def test_mismatching_target_names_key_path(tmp_path):
    tree = {"params": {"w": np.zeros((2, 3), np.float32), "b": np.zeros(3, np.float32)},
            "step": np.int32(0)}
    p = tmp_path / "c.ckpt"
    ck.save(p, tree)
    bad_shape = {"params": {"w": np.zeros((3, 3), np.float32), "b": np.zeros(3, np.float32)},
                 "step": np.int32(0)}
    with pytest.raises(ValueError, match=r"\['params'\]\['w'\].*shape \(2, 3\).*\(3, 3\)"):
        ck.restore(p, target=bad_shape)
    bad_dtype = {"params": {"w": np.zeros((2, 3), np.float32), "b": np.zeros(3, np.float16)},
                 "step": np.int32(0)}
    with pytest.raises(ValueError, match=r"\['params'\]\['b'\].*float32.*float16"):
        ck.restore(p, target=bad_dtype)
    extra = dict(tree, opt={"mu": np.zeros(3, np.float32)})
    with pytest.raises(ValueError, match=r"\['opt'\]\['mu'\]"):
        ck.restore(p, target=extra)
    missing = {"params": {"w": np.zeros((2, 3), np.float32)}, "step": np.int32(0)}
    with pytest.raises(ValueError, match=r"\['params'\]\['b'\]"):
        ck.restore(p, target=missing)
    as_list = {"params": [np.zeros((2, 3), np.float32), np.zeros(3, np.float32)],
               "step": np.int32(0)}
    with pytest.raises(ValueError):
        ck.restore(p, target=as_list)
    sds = {"params": {"w": xform.ShapeDtypeStruct((2, 3), np.float32),
                      "b": xform.ShapeDtypeStruct((3,), np.float32)},
           "step": xform.ShapeDtypeStruct((), np.int32)}
    assert ck.restore(p, target=sds)["params"]["w"].shape == (2, 3)


def test_interrupted_save_keeps_previous_checkpoint(tmp_path, monkeypatch):
    p = tmp_path / "c.ckpt"
    old = {"w": np.arange(4, dtype=np.float32)}
    ck.save(p, old)
    before = p.read_bytes()
    calls = {"n": 0}
    real = zipfile.ZipFile.writestr

    def crash(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("simulated crash mid-save")
        return real(self, *a, **k)
    monkeypatch.setattr(zipfile.ZipFile, "writestr", crash)
    with pytest.raises(KeyboardInterrupt):
        ck.save(p, {"w": np.zeros(4, np.float32), "v": np.ones(2), "u": np.ones(1)})
    monkeypatch.undo()
    assert p.read_bytes() == before
    assert os.listdir(tmp_path) == ["c.ckpt"]           # the temporary file is gone
    np.testing.assert_array_equal(ck.restore(p)["w"], old["w"])


def test_typed_prng_keys_roundtrip(tmp_path):
    keys = xform.random.split(xform.random.key(7), 3)
    p = tmp_path / "k.ckpt"
    ck.save(p, {"rng": keys, "raw": xform.random.PRNGKey(1)})
    back = ck.restore(p)
    assert str(back["rng"].dtype) == "key<fry>" and back["rng"].shape == (3,)
    np.testing.assert_array_equal(xform.random.key_data(back["rng"]),
                                  xform.random.key_data(keys))
    np.testing.assert_array_equal(xform.random.normal(back["rng"][2], (4,)),
                                  xform.random.normal(keys[2], (4,)))
    assert back["raw"].dtype == np.uint32
    with pytest.raises(ValueError, match=r"\['rng'\].*key<fry>.*uint32"):
        ck.restore(p, target={"rng": np.zeros(3, np.uint32), "raw": np.zeros(2, np.uint32)})


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        ck.restore(tmp_path / "nope.ckpt")
    junk = tmp_path / "junk.ckpt"
    junk.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not an xform checkpoint"):
        ck.restore(junk)
    with pytest.raises(TypeError, match=r"\['f'\]"):
        ck.save(tmp_path / "x.ckpt", {"f": object()})
    with pytest.raises(TypeError, match="traced"):
        xform.jit(lambda x: ck.save(tmp_path / "y.ckpt", x) or x)(np.ones(2))
    ck.save(tmp_path / "z.ckpt", [1])
    with pytest.raises(ValueError, match="overwrite=False"):
        ck.save(tmp_path / "z.ckpt", [1], overwrite=False)


def test_save_async_snapshots_then_writes(tmp_path):
    w = np.arange(1000, dtype=np.float32)
    tree = {"w": w, "v": xnp.ones(3), "step": 3}
    fut = ck.save_async(tmp_path / "a.ckpt", tree)
    w[:] = -1.0                       # mutating after the call does not change what is saved
    assert fut.result(timeout=60) == str(tmp_path / "a.ckpt")
    back = ck.restore(tmp_path / "a.ckpt", target=tree)
    np.testing.assert_array_equal(back["w"], np.arange(1000, dtype=np.float32))
    assert back["step"] == 3
    bad = ck.save_async(tmp_path / "a.ckpt", tree, overwrite=True)
    bad.result(timeout=60)
    with pytest.raises(ValueError, match="overwrite=False"):
        ck.save_async(tmp_path / "a.ckpt", tree, overwrite=False)

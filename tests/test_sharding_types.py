"""AbstractMesh, AxisType, the mesh context (set_mesh / get_abstract_mesh /
use_abstract_mesh), type-level shardings, auto_axes/explicit_axes — compared with JAX.

One-device checks run here; the multi-device ones (Explicit shardings in types,
abstract-mesh shardings resolved in context) in a subprocess with 8 virtual devices
(``tests/_sharding_types_cases.py``)."""
import os
import pickle

import numpy as np
import pytest

import jax
import xform
import xform.sharding as XS
from xform.sharding import AbstractMesh, AxisType, PartitionSpec as P

from _multidevice import HERE, case_names, run_case_script

SCRIPT = os.path.join(HERE, "_sharding_types_cases.py")


@pytest.fixture(scope="module")
def results():
    return run_case_script(SCRIPT)


@pytest.mark.parametrize("name", case_names(SCRIPT))
def test_multidevice(results, name):
    r = results.get(name)
    assert r is not None, f"case {name} did not run"
    assert r["ok"], r["err"]


JT = jax.sharding.AxisType


def test_axis_type_members_match_jax():
    assert [t.name for t in AxisType] == [t.name for t in JT]
    for t in AxisType:
        j = JT[t.name]
        assert (repr(t), str(t), t.value) == (repr(j), str(j), j.value)


@pytest.mark.parametrize("sizes,names,types", [
    ((2, 4), ("x", "y"), None),
    ((8,), ("d",), ("Explicit",)),
    ((1, 2, 3), ("a", "b", "c"), ("Auto", "Explicit", "Manual")),
    ((), (), None),
])
def test_abstract_mesh_matches_jax(sizes, names, types):
    xt = None if types is None else tuple(AxisType[t] for t in types)
    jt = None if types is None else tuple(JT[t] for t in types)
    x, j = AbstractMesh(sizes, names, xt), jax.sharding.AbstractMesh(sizes, names, jt)
    assert repr(x) == repr(j)
    for attr in ("axis_sizes", "axis_names", "size", "empty", "shape_tuple", "auto_axes",
                 "explicit_axes", "manual_axes", "are_all_axes_auto",
                 "are_all_axes_explicit", "are_all_axes_manual"):
        assert getattr(x, attr) == getattr(j, attr), attr
    assert dict(x.shape) == dict(j.shape) and list(x.shape) == list(j.shape)
    assert repr(x.axis_types) == repr(j.axis_types)
    assert x.abstract_mesh is x
    y = AbstractMesh(sizes, names, xt)
    assert x == y and hash(x) == hash(y) and pickle.loads(pickle.dumps(x)) == x
    # interned as in JAX: equal arguments give the same object
    assert (x is y) == (j is jax.sharding.AbstractMesh(sizes, names, jt)) == True  # noqa
    assert x != AbstractMesh(sizes + (2,), names + ("extra",))


def test_sharding_module_names_match_jax():
    # ManualAxisType describes shard_map's varying-manual-axes typing, which xform's
    # shard_map does not have (docs/sharding.md)
    missing = {n for n in dir(jax.sharding) if not n.startswith("_")} - set(dir(XS))
    assert missing == {"ManualAxisType"}, missing


def test_abstract_mesh_update_and_errors_match_jax():
    x = AbstractMesh((2, 4), ("x", "y"))
    j = jax.sharding.AbstractMesh((2, 4), ("x", "y"))
    assert repr(x.update_axis_types({"y": AxisType.Explicit})) == \
        repr(j.update_axis_types({"y": JT.Explicit}))
    assert repr(x.update(axis_sizes=(4, 2))) == repr(j.update(axis_sizes=(4, 2)))
    for attr in ("devices", "device_ids", "local_devices"):
        with pytest.raises(ValueError, match=f"AbstractMesh does not implement {attr}"):
            getattr(x, attr)
        with pytest.raises(ValueError, match=f"AbstractMesh does not implement {attr}"):
            getattr(j, attr)
    with pytest.raises(TypeError, match="must be of type `jax.sharding.AxisType`"):
        AbstractMesh((2,), ("x",), axis_types="Auto")
    with pytest.raises(TypeError, match="must be of type `jax.sharding.AxisType`"):
        jax.sharding.AbstractMesh((2,), ("x",), axis_types="Auto")
    with pytest.raises(ValueError, match="Number of axis names should match"):
        AbstractMesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,))
    with pytest.raises(AttributeError):
        x.axis_sizes = (1, 8)
    with pytest.raises(ValueError):
        with x:
            pass


def test_mesh_abstract_mesh_and_axis_types_match_jax():
    xd, jd = xform.devices()[0], jax.devices()[0]
    for types in [None, (JT.Explicit,), (JT.Auto,)]:
        xt = None if types is None else tuple(AxisType[t.name] for t in types)
        xm = XS.Mesh(np.array([xd]), ("d",), xt)
        jm = jax.sharding.Mesh(np.array([jd]), ("d",), types)
        assert repr(xm) == repr(jm) and str(xm) == str(jm)
        assert repr(xm.abstract_mesh) == repr(jm.abstract_mesh)
        assert xm.abstract_mesh == XS.Mesh(np.array([xd]), ("d",), xt).abstract_mesh
    assert repr(xform.make_mesh((1,), ("d",))) == repr(jax.make_mesh((1,), ("d",)))
    with pytest.raises(TypeError, match="AxisType"):
        XS.Mesh(np.array([xd]), ("d",), "Auto")
    # equal devices and names but other axis types: different meshes, as in JAX
    assert XS.Mesh(np.array([xd]), ("d",), (AxisType.Auto,)) != \
        XS.Mesh(np.array([xd]), ("d",), (AxisType.Explicit,))


def test_context_mesh_functions_match_jax():
    assert repr(XS.get_abstract_mesh()) == repr(jax.sharding.get_abstract_mesh())
    assert repr(XS.get_mesh()) == repr(jax.sharding.get_mesh())
    assert XS.get_mesh().empty and XS.get_abstract_mesh().empty
    xm = xform.make_mesh((1,), ("d",))
    with XS.set_mesh(xm):
        assert XS.get_mesh() is xm
        assert XS.get_abstract_mesh() == xm.abstract_mesh
        seen = []
        xform.jit(lambda v: seen.append(XS.get_abstract_mesh()) or v)(1.0)
        assert seen == [xm.abstract_mesh]
        with pytest.raises(ValueError, match="get_abstract_mesh"):
            xform.jit(lambda v: XS.get_mesh() and v)(2.0)
        with pytest.raises(ValueError, match="outside of `jax.jit`"):
            xform.jit(lambda v: XS.set_mesh(xm) and v)(3.0)
    assert XS.get_abstract_mesh().empty
    am = AbstractMesh((1,), ("d",))
    with XS.use_abstract_mesh(am):
        assert XS.get_abstract_mesh() == am
    with pytest.raises(ValueError, match="Expected mesh of type `jax.sharding.Mesh`"):
        XS.set_mesh(am)
    with pytest.raises(ValueError, match="Expected mesh of type `jax.sharding.AbstractMesh`"):
        with XS.use_abstract_mesh(xm):
            pass
    with pytest.raises(ValueError, match="manual axes"):
        XS.set_mesh(xform.make_mesh((1,), ("d",), axis_types=(AxisType.Manual,)))


def test_type_sharding_matches_jax():
    """typeof(x).sharding: an unsharded spec over the current abstract mesh (read by
    chex's assert_is_replicated, optax and flax)."""
    import jax.numpy as jnp
    for shape in [(), (3,), (2, 5)]:
        x, j = xform.numpy.ones(shape), jnp.ones(shape)
        xs, js = xform.typeof(x).sharding, jax.typeof(j).sharding
        assert repr(xs) == repr(js)
        assert xs.is_fully_replicated == js.is_fully_replicated
        assert xs.mesh.empty == js.mesh.empty
    got = []
    xform.jit(lambda v: got.append(xform.typeof(v).sharding) or v)(xform.numpy.ones(3))
    assert repr(got[0]) == repr(jax.typeof(jnp.ones(3)).sharding)
    xm = xform.make_mesh((1,), ("d",))
    with XS.set_mesh(xm):
        s = xform.typeof(xform.numpy.ones((2, 2))).sharding
        assert s.mesh == xm.abstract_mesh and tuple(s.spec) == (None, None)


def test_named_sharding_over_an_abstract_mesh():
    am = AbstractMesh((1,), ("d",))
    s = XS.NamedSharding(am, P("d"))
    js = jax.sharding.NamedSharding(jax.sharding.AbstractMesh((1,), ("d",)),
                                    jax.sharding.PartitionSpec("d"))
    assert repr(s) == repr(js)
    assert s.is_fully_replicated == js.is_fully_replicated
    with pytest.raises(ValueError, match="not found in mesh"):
        XS.NamedSharding(am, P("x"))
    with pytest.raises(ValueError, match="AbstractMesh does not implement devices"):
        s.device_set
    # resolved against the concrete mesh in context
    xm = xform.make_mesh((1,), ("d",))
    with XS.set_mesh(xm):
        y = XS.reshard(xform.numpy.arange(4.0), s)
    np.testing.assert_array_equal(np.asarray(y), np.arange(4.0))
    with pytest.raises(ValueError, match="abstract mesh"):
        XS.reshard(xform.numpy.arange(4.0), s)       # no mesh in context


def test_auto_and_explicit_axes_one_device():
    xm = xform.make_mesh((1,), ("d",))
    seen = []

    def f(v):
        seen.append(XS.get_abstract_mesh().axis_types)
        return v * 2
    with XS.set_mesh(xm):
        out = XS.auto_axes(f, out_sharding=P("d"))(xform.numpy.arange(4.0))
        np.testing.assert_array_equal(np.asarray(out), 2 * np.arange(4.0))
        out = XS.explicit_axes(f, axes="d")(xform.numpy.arange(4.0), in_sharding=P())
        np.testing.assert_array_equal(np.asarray(out), 2 * np.arange(4.0))
    assert seen == [(AxisType.Auto,), (AxisType.Explicit,)]
    with pytest.raises(ValueError, match="Context mesh cannot be empty"):
        XS.explicit_axes(f, in_sharding=P())(xform.numpy.ones(2))
    # no mesh: auto_axes just calls the function
    np.testing.assert_array_equal(np.asarray(XS.auto_axes(f, out_sharding=P())(
        xform.numpy.ones(2))), [2.0, 2.0])

"""Multi-device cases for tests/test_sharding_types.py (4 of the 8 virtual CPU devices,
in a subprocess): mesh axis types, abstract meshes in context, types carrying Explicit
shardings, auto_axes/explicit_axes, compared with real JAX."""
import sys

from _multidevice import case_registry, run_cases  # noqa: E402  (asks for 8 devices)

import numpy as np  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jjnp  # noqa: E402
from jax.sharding import AxisType as JT, NamedSharding as JNS, PartitionSpec as JP  # noqa

import xform  # noqa: E402
import xform.numpy as xnp  # noqa: E402
import xform.sharding as XS  # noqa: E402
from xform.sharding import AxisType as XT, NamedSharding as XNS, PartitionSpec as XP  # noqa

CASES, case = case_registry()


def same(x, j):
    assert repr(x) == repr(j), (repr(x), repr(j))


def spec_eq(xs, js):
    """xform spec == JAX spec (trailing Nones ignored)."""
    a, b = list(xs), list(js)
    while a and a[-1] is None:
        a.pop()
    while b and b[-1] is None:
        b.pop()
    return a == b


def type_str(x):
    return xform.typeof(x).str_short(short_dtypes=False)


@case
def make_mesh_default_types_and_abstract_mesh():
    jm, xm = jax.make_mesh((2, 2), ("a", "b")), xform.make_mesh((2, 2), ("a", "b"))
    same(xm, jm)
    same(str(xm), str(jm))
    same(xm.abstract_mesh, jm.abstract_mesh)
    assert xm.are_all_axes_explicit == jm.are_all_axes_explicit is True
    types = (JT.Auto, JT.Explicit)
    jm = jax.make_mesh((2, 2), ("a", "b"), axis_types=types)
    xm = xform.make_mesh((2, 2), ("a", "b"), axis_types=tuple(XT[t.name] for t in types))
    same(xm.abstract_mesh, jm.abstract_mesh)
    for attr in ("auto_axes", "explicit_axes", "manual_axes", "are_all_axes_auto",
                 "are_all_axes_explicit", "size", "axis_sizes", "shape_tuple"):
        assert getattr(xm, attr) == getattr(jm, attr), attr
    assert xm.abstract_mesh.abstract_device.platform == jm.abstract_mesh.abstract_device.platform


@case
def context_meshes():
    jm, xm = jax.make_mesh((2, 2), ("a", "b")), xform.make_mesh((2, 2), ("a", "b"))
    same(XS.get_abstract_mesh(), jax.sharding.get_abstract_mesh())
    same(XS.get_mesh(), jax.sharding.get_mesh())
    with jax.set_mesh(jm), XS.set_mesh(xm):
        same(XS.get_abstract_mesh(), jax.sharding.get_abstract_mesh())
        assert XS.get_mesh() is xm
        jin, xin = [], []
        jax.jit(lambda v: jin.append(jax.sharding.get_abstract_mesh()) or v)(1.0)
        xform.jit(lambda v: xin.append(XS.get_abstract_mesh()) or v)(1.0)
        same(xin[0], jin[0])
        am = xm.abstract_mesh.update_axis_types({"a": XT.Auto})
        with XS.use_abstract_mesh(am):
            assert XS.get_abstract_mesh() == am
        assert XS.get_abstract_mesh() == xm.abstract_mesh
    assert XS.get_abstract_mesh().empty


@case
def explicit_types_carry_the_sharding():
    jm, xm = jax.make_mesh((2, 2), ("a", "b")), xform.make_mesh((2, 2), ("a", "b"))
    v = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    for spec in [("a",), (None, "b"), (("a", "b"),), ("b", "a")]:
        j = jax.device_put(v, JNS(jm, JP(*spec)))
        x = xform.device_put(v, XNS(xm, XP(*spec)))
        assert type_str(x) == str(jax.typeof(j)), (type_str(x), jax.typeof(j))
        same(xform.typeof(x).sharding, jax.typeof(j).sharding)
    # Auto axes: the type is unsharded over the mesh, as in JAX
    types = (JT.Auto,) * 2
    jm = jax.make_mesh((2, 2), ("a", "b"), axis_types=types)
    xm = xform.make_mesh((2, 2), ("a", "b"), axis_types=(XT.Auto,) * 2)
    j = jax.device_put(v, JNS(jm, JP("a")))
    x = xform.device_put(v, XNS(xm, XP("a")))
    assert type_str(x) == str(jax.typeof(j))


@case
def abstract_mesh_shardings_resolve_in_context():
    jm, xm = jax.make_mesh((2, 2), ("a", "b")), xform.make_mesh((2, 2), ("a", "b"))
    v = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    with jax.set_mesh(jm), XS.set_mesh(xm):
        j = jax.sharding.reshard(v, JNS(jax.sharding.get_abstract_mesh(), JP("b")))
        x = XS.reshard(v, XNS(XS.get_abstract_mesh(), XP("b")))
        assert spec_eq(x.sharding.spec, j.sharding.spec) and x.sharding.mesh == xm
        np.testing.assert_array_equal(np.asarray(x), np.asarray(j))
        jf = jax.sharding.auto_axes(lambda a: a * 2, out_sharding=JP("a"))
        xf = XS.auto_axes(lambda a: a * 2, out_sharding=XP("a"))
        jo, xo = jf(j), xf(x)
        np.testing.assert_array_equal(np.asarray(xo), np.asarray(jo))
        assert spec_eq(xo.sharding.spec, jo.sharding.spec)
        jf = jax.sharding.explicit_axes(lambda a: a + 1, in_sharding=JP(None, "a"))
        xf = XS.explicit_axes(lambda a: a + 1, in_sharding=XP(None, "a"))
        np.testing.assert_array_equal(np.asarray(xf(x)), np.asarray(jf(j)))
        try:
            XS.auto_axes(lambda a: a)(x)
            raise AssertionError("auto_axes without out_sharding was accepted")
        except TypeError as e:
            assert "out_sharding" in str(e)


@case
def shard_map_body_sees_manual_axes():
    types = (JT.Auto,) * 2
    jm = jax.make_mesh((2, 2), ("a", "b"), axis_types=types)
    xm = xform.make_mesh((2, 2), ("a", "b"), axis_types=(XT.Auto,) * 2)
    v = np.ones((4, 2), np.float32)
    for names in (None, {"a"}):
        jseen, xseen = [], []
        kw = {} if names is None else {"axis_names": names}
        jax.shard_map(lambda x: jseen.append(jax.sharding.get_abstract_mesh()) or x, mesh=jm,
                      in_specs=JP("a"), out_specs=JP("a"), **kw)(v)
        xform.shard_map(lambda x: xseen.append(XS.get_abstract_mesh()) or x, mesh=xm,
                        in_specs=XP("a"), out_specs=XP("a"), **kw)(v)
        same(xseen[0], jseen[0])
    assert XS.get_abstract_mesh().empty


def main():
    only = set(sys.argv[1:])
    run_cases([f for f in CASES if not only or f.__name__ in only])


if __name__ == "__main__":
    main()

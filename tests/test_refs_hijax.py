"""The names of mutable array references (``jax.Ref``/``new_ref``/...; their behaviour is
tested in test_ref.py) and of ``jax.experimental.hijax`` (its behaviour is tested in
test_hijax.py): the names are JAX's, and what xform does not implement
(``TransformedRef``) raises ``NotImplementedError`` naming it."""
import inspect

import jax
import jax.experimental.hijax as jhjx
import numpy as np
import pytest

import xform
import xform.experimental.hijax as hjx
import xform.ref as xref
import xform.numpy as xnp


def test_ref_functions_have_jax_signatures():
    import jax.ref as jref
    for name in ["new_ref", "empty_ref", "freeze", "free_ref"]:
        assert (list(inspect.signature(getattr(xform, name)).parameters)
                == list(inspect.signature(getattr(jax, name)).parameters))
    for name in ["get", "set", "swap", "addupdate"]:
        assert (list(inspect.signature(getattr(xref, name)).parameters)
                == list(inspect.signature(getattr(jref, name)).parameters))


def test_no_array_is_a_ref():
    # JAX: an ordinary array is not a Ref and its type is not an AbstractRef
    ja = jax.numpy.ones(3)
    assert not isinstance(ja, jax.Ref)
    assert not isinstance(jax.typeof(ja), jhjx.AbstractRef)
    xa = xnp.ones(3)
    assert not isinstance(xa, xform.Ref)
    assert not isinstance(xform.typeof(xa), hjx.AbstractRef)
    assert xform.ref.Ref is xform.Ref and xform.ref.new_ref is xform.new_ref
    with pytest.raises(TypeError, match="new_ref"):
        xform.Ref()


def test_hijax_names_match_jax():
    assert sorted(hjx.__all__) == sorted(n for n in dir(jhjx) if not n.startswith("_"))
    # the shared ones are xform's own objects
    assert hjx.ShapedArray is xform.core.ShapedArray
    assert hjx.Zero is xform.interpreters.ad.Zero
    assert hjx.instantiate_zeros is xform.interpreters.ad.instantiate_zeros
    assert hjx.is_undefined_primal is xform.interpreters.ad.is_undefined_primal


def test_hijax_definitions_work_and_missing_pieces_refuse():
    class MyType(hjx.MutableHiType):
        method = hjx.aval_method(lambda self: 1)
        prop = hjx.aval_property(fget=lambda self: 2)

    class MyPrim(hjx.HiPrimitive):
        def is_high(self, *a, **k):
            return True

    class MyEffect(xform.extend.core.Effect):
        pass

    hjx.control_flow_allowed_effects.add_type(MyEffect)
    assert hjx.control_flow_allowed_effects.contains(MyEffect())
    hjx.register_hitype(MyType, lambda x: x)
    assert isinstance(MyType(), xform.core.AbstractValue)
    p = MyPrim("my_prim")
    assert p.name == "my_prim"
    # a primitive without its meaning (to_lojax) says so
    with pytest.raises(NotImplementedError, match="my_prim.*to_lojax"):
        p.bind(xnp.ones(2))
    with pytest.raises(TypeError, match="cur_qdd"):
        xform.experimental.cur_qdd(xnp.ones(2))
    with pytest.raises(NotImplementedError, match="TransformedRef"):
        hjx.TransformedRef()
    # as JAX: a VJPHiPrimitive's __init__ must set its types and params first
    for lib in (jhjx, hjx):
        with pytest.raises(AttributeError, match="in_avals"):
            lib.VJPHiPrimitive()


def test_instantiate_zeros_as_jax():
    z = hjx.Zero(xform.core.ShapedArray((2,), np.float32))
    np.testing.assert_array_equal(hjx.instantiate_zeros(z), np.zeros(2, np.float32))
    x = xnp.ones(2)
    assert hjx.instantiate_zeros(x) is x

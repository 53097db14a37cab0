"""Python ints in promoting jnp functions, against JAX 0.10.2.

JAX's jnp functions are jitted: a Python int operand is first a weak value of the
default integer dtype (an int outside its range is an OverflowError, however wide the
other operand), then ``convert_element_type`` takes it to the promoted dtype, wrapping
around into narrower and unsigned integer dtypes (``uint16[...] + (-1)`` adds 65535).
Creating an array from an out-of-range int (``jnp.asarray(-1, uint16)``) still raises.
"""
from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xform
import xform.numpy as xnp

_INT_DTYPES = ["uint8", "uint16", "uint32", "int8", "int16", "int32"]
_OTHER_DTYPES = ["float16", "bfloat16", "float32", "bool"]
_OPS = ["add", "subtract", "multiply", "maximum", "minimum", "less", "greater_equal",
        "equal", "not_equal", "floor_divide", "bitwise_and", "bitwise_xor"]

_EDGES = [-1, 0, 1, 127, 128, 255, 256, 300, -129, 65535, 65536, -32769, 2 ** 31 - 1,
          -2 ** 31, 2 ** 31, -2 ** 31 - 1, 2 ** 32, 2 ** 40, -2 ** 40, 2 ** 63, 2 ** 64]


def _outcome(lib_np, fn):
    try:
        r = fn(lib_np)
    except Exception as e:   # noqa: BLE001 - the exception type is the outcome
        return ("raise", type(e).__name__)
    return ("ok", str(np.asarray(r).dtype), np.asarray(r).tolist(),
            bool(getattr(r, "weak_type", False)))


def _compare(fn):
    want = _outcome(jjnp, fn)
    got = _outcome(xnp, fn)
    assert got == want, f"xform {got} != jax {want}"


def _binary(op, dtype, value, scalar_first):
    def fn(np_):
        x = np_.array([1, 3, 100 if dtype != "bool" else 1], dtype)
        f = getattr(np_, op)
        return f(value, x) if scalar_first else f(x, value)
    return fn


@pytest.mark.parametrize("dtype", _INT_DTYPES + _OTHER_DTYPES)
@pytest.mark.parametrize("value", _EDGES)
def test_edge_ints_in_add_and_less(dtype, value):
    _compare(_binary("add", dtype, value, False))
    _compare(_binary("less", dtype, value, True))


@settings(max_examples=150, deadline=None)
@given(op=st.sampled_from(_OPS), dtype=st.sampled_from(_INT_DTYPES),
       value=st.one_of(st.sampled_from(_EDGES), st.integers(-2 ** 33, 2 ** 33)),
       scalar_first=st.booleans())
def test_weak_int_operand_matches_jax(op, dtype, value, scalar_first):
    _compare(_binary(op, dtype, value, scalar_first))


@pytest.mark.parametrize("case", [
    lambda np_: np_.array([1], "uint16") + (-1),
    lambda np_: np_.array([1], "uint16") * 65536,
    lambda np_: np_.where(True, np_.array([1], "uint8"), -1),
    lambda np_: np_.where(False, np_.array([1], "uint8"), 2 ** 31),
    lambda np_: np_.clip(np_.array([1, 7], "uint8"), -1, 300),
    lambda np_: np_.full((2,), -1, "uint8"),
    lambda np_: np_.full((2,), 300, "uint8"),
    lambda np_: np_.full_like(np_.zeros(2, "uint8"), -1),
    lambda np_: np_.asarray(-1, "uint16"),
    lambda np_: np_.asarray(70000, "uint16"),
    lambda np_: np_.array([1.0], "float16") + 70000,
    lambda np_: np_.array([1.0], "float32") + 2 ** 40,
    lambda np_: np_.array([True]) + (-1),
    lambda np_: np_.array([1], "uint8") + np.int64(-1),
], ids=lambda f: "")
def test_wrap_cases(case):
    _compare(case)


def test_messages():
    with pytest.raises(OverflowError, match="argument path is y"):
        xnp.array([1], "uint32") + 2 ** 32
    with pytest.raises(OverflowError, match="Python integer -1 out of bounds for uint16"):
        xnp.asarray(-1, "uint16")


def test_under_jit():
    f = lambda x: x + (-1)   # noqa: E731
    x = np.array([0, 5], np.uint8)
    np.testing.assert_array_equal(xform.jit(f)(x), jax.jit(f)(x))

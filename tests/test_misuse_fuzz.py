"""Misuse fuzzer: wrong arguments to the public API fail with user-facing errors.

Hypothesis draws a public function (xform, xform.numpy, lax, nn, linalg, fft, random,
scipy.special) and 0-3 wrong arguments (None, strings, objects, ragged lists, dicts,
arrays of the wrong shape/dtype, callables...).  Whatever happens, a failure must be
the kind of exception JAX raises for misuse -- TypeError, ValueError, IndexError (not
a bare "tuple index out of range" from our internals), NotImplementedError, NameError
(an unbound collective axis name, as in JAX), FloatingPointError -- or one of xform's
own error classes; never an internal AttributeError/KeyError/UnboundLocalError/....
"""
import inspect
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xform
import xform.numpy as xnp
from xform import lax

MODULES = {"xform": xform, "xnp": xnp, "lax": lax, "nn": xform.nn, "linalg": xnp.linalg,
           "fft": xnp.fft, "random": xform.random, "special": xform.scipy.special}
# Callables that are not array functions (configuration, process state, printing).
SKIP = {"xform": {"config", "clear_caches", "print_environment_info", "live_arrays",
                  "block_until_ready", "debug", "default_device", "transfer_guard",
                  "transfer_guard_host_to_device", "transfer_guard_device_to_host",
                  "transfer_guard_device_to_device", "profiler", "monitoring"},
        # file I/O: a string argument is a path (the fuzzer must not write files)
        "xnp": {"save", "savez", "savez_compressed", "savetxt", "load", "loadtxt", "fromfile",
                "genfromtxt", "tofile"}}
ALLOWED = (TypeError, ValueError, IndexError, NotImplementedError, NameError,
           FloatingPointError, ZeroDivisionError, OverflowError)
INTERNAL_INDEX_ERRORS = ("list index out of range", "tuple index out of range",
                         "string index out of range")


def _functions():
    out = []
    for mname, mod in MODULES.items():
        for n in sorted(dir(mod)):
            if n.startswith("_") or n in SKIP.get(mname, ()):
                continue
            f = getattr(mod, n)
            if callable(f) and not inspect.isclass(f) and not inspect.ismodule(f):
                out.append((mname, n))
    return out


FUNCTIONS = _functions()
BAD = [None, "abc", object(), [1, "a"], {"a": 1}, (1, (2,)), 1.5, -3, True, 1j, b"bytes",
       slice(1, 2), [[1, 2], [3]], (), lambda x: x, np.array(["x"]), np.ones(0),
       np.ones((2, 3)), np.float32(2)]
bad_args = st.lists(st.one_of(st.sampled_from(BAD),
                              st.builds(lambda s: xnp.ones(s), st.sampled_from([(), (3,), (2, 2)])),
                              st.builds(lambda s: xnp.ones(s, xnp.int32), st.sampled_from([(2,), (1, 3)]))),
                    max_size=3)


CALLBACKS = {"pure_callback", "io_callback"}   # a failing user callback: JAX's RuntimeError


def _user_facing(e: BaseException, name: str = "") -> bool:
    if type(e).__module__.split(".")[0] in ("interpreters", "xform", "lowering", "primitives"):
        return True                          # xform's own error classes
    if isinstance(e, IndexError) and str(e) in INTERNAL_INDEX_ERRORS:
        return False
    if isinstance(e, RuntimeError) and name in CALLBACKS:
        return True
    if isinstance(e, RuntimeError) and str(e).startswith("Unknown backend "):
        return True                          # JAX's RuntimeError for a backend name it lacks
    return isinstance(e, ALLOWED)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(fn=st.sampled_from(FUNCTIONS), args=bad_args)
def test_misuse_raises_user_facing_errors(fn, args):
    mname, name = fn
    f = getattr(MODULES[mname], name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            f(*args)
        except Exception as e:  # noqa: BLE001  (the point: classify whatever it raises)
            assert _user_facing(e, name), (
                f"{mname}.{name}{tuple(args)!r} raised an internal {type(e).__name__}: {e}")


def test_the_fuzzer_covers_the_api():
    assert len(FUNCTIONS) > 700
    assert ("xnp", "sum") in FUNCTIONS and ("lax", "conv_general_dilated") in FUNCTIONS


def test_a_backend_argument_that_is_an_array_is_a_type_error():
    with pytest.raises(TypeError, match="backend must be a platform name"):
        xform.local_device_count(xnp.ones(()))


def test_conv_dimension_numbers_that_are_not_strings_are_a_type_error():
    # JAX fails inside with AttributeError ('ArrayImpl' object has no attribute 'count')
    with pytest.raises(TypeError, match="must be three strings"):
        lax.conv_general_permutations(xnp.ones(3))


def test_bytes_as_a_shape_and_a_non_string_trim_are_type_errors():
    with pytest.raises(TypeError, match="Shapes must be 1D sequences"):
        xnp.ones(b"bytes")                   # as JAX (NumPy would allocate 59 GiB)
    with pytest.raises(TypeError, match="trim must be a string"):
        xnp.trim_zeros(xnp.ones(3), None)    # JAX: an internal AttributeError

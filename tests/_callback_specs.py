"""Verifier specs for the host-callback primitives (pure_callback, io_callback): the
compiled program (XLA's python-callback custom call) must return what the eager
reference returns.  Registered from tests/test_verifier.py."""
import numpy as np
from hypothesis import strategies as st

from xform._src.interpreters.core import ShapedArray
from xform._src.interpreters.dtypes import canonicalize_dtype


def _host(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return [(np.sin(a) * 2 + b).astype(a.dtype), np.asarray(a.size + b.ndim, np.int32)]


def register_callback_specs(spec, shapes, rng_of, values, float_dtypes):
    from xform._src.primitives.callbacks import FlatCallback
    from xform.tree_util import tree_flatten

    def gen(data, name):
        # the dtypes a callback result may have (64-bit ones are refused without x64)
        dt = data.draw(st.sampled_from([d for d in float_dtypes
                                        if canonicalize_dtype(d) == d]), label="dtype")
        shape = data.draw(shapes())
        rng = rng_of(data)
        a, b = values(rng, shape, dt), values(rng, shape, dt)
        tree = tree_flatten(((a, b), {}))[1]
        params = {"callback": FlatCallback(lambda x, y: _host(x, y), tree, name),
                  "result_avals": (ShapedArray(shape, dt), ShapedArray((), np.int32))}
        if name == "pure_callback":
            params["vmap_method"] = data.draw(st.sampled_from([None, "sequential"]))
        else:
            params["ordered"] = data.draw(st.booleans(), label="ordered")
        return params, [a, b]
    spec("pure_callback io_callback", exact=True)(gen)

"""orbax-checkpoint's v1 API (save_pytree / load_pytree) and its colocated-Python
dispatcher (a function run next to the arrays' CPU devices)."""
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from orbax.checkpoint._src.multihost import dispatchers
from orbax.checkpoint.experimental import v1 as ocp

from _report import report

tree = {"a": jnp.arange(6.0).reshape(2, 3), "k": jnp.int32(3), "h": jnp.ones(2, jnp.bfloat16)}
with tempfile.TemporaryDirectory() as d:
    ocp.save_pytree(d + "/ck", tree)
    restored = ocp.load_pytree(d + "/ck")
x = jnp.arange(3.0)
out = dispatchers.ColocatedPythonDispatcher().dispatch(
    lambda v: v * 2 + 1, input_arrays=x,
    result_specs=jax.ShapeDtypeStruct((3,), jnp.float32, sharding=x.sharding))
report(a=restored["a"], k=restored["k"], h=restored["h"], colocated=out,
       is_array=float(isinstance(restored["a"], jax.Array) and isinstance(out, jax.Array)))

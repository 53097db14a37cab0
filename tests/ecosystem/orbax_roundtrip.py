"""orbax-checkpoint's README usage: save and restore a pytree with a CheckpointManager."""
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from _report import report

tree = {"a": jnp.arange(6.0).reshape(2, 3), "b": {"c": jnp.ones(4, jnp.int32)}}
with tempfile.TemporaryDirectory() as d:
    mngr = ocp.CheckpointManager(d, options=ocp.CheckpointManagerOptions(max_to_keep=2))
    for step in range(3):
        mngr.save(step, args=ocp.args.StandardSave(jax.tree_util.tree_map(lambda x: x + step, tree)))
    mngr.wait_until_finished()
    steps = list(mngr.all_steps())
    restored = mngr.restore(mngr.latest_step(), args=ocp.args.StandardRestore(tree))
    mngr.close()
report(steps=np.array(steps), a=restored["a"], c=restored["b"]["c"],
       is_array=float(isinstance(restored["a"], jax.Array)))

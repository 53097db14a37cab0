"""``python -m benchmarks.sharded [--quick] [--json PATH]``: multi-device benchmarks on
8 virtual CPU devices (this module sets ``XLA_FLAGS`` itself, before any runtime starts).

* data-parallel MLP training step (``jit`` with in/out shardings, batch split over the
  mesh, parameters replicated) on meshes of 1, 2, 4 and 8 devices, xform vs JAX;
* dispatch cost of a jitted call on sharded arrays (a tiny elementwise program),
  xform vs JAX.

Ratios are xform / JAX (target <= 1.05).  On a machine with fewer cores than
devices the absolute numbers are dominated by thread scheduling; compare ratios.
"""
import argparse
import json
import os
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8").strip()


def _mlp(np_, batch, d_in=256, hidden=512, d_out=16, seed=0):
    import numpy as np
    r = np.random.default_rng(seed)
    p = {"w1": (r.standard_normal((d_in, hidden)) * 0.05).astype(np.float32),
         "b1": np.zeros(hidden, np.float32),
         "w2": (r.standard_normal((hidden, d_out)) * 0.05).astype(np.float32)}
    x = r.standard_normal((batch, d_in)).astype(np.float32)
    y = r.standard_normal((batch, d_out)).astype(np.float32)
    return p, x, y


def _step_fn(lib):
    jnp = lib.numpy

    def loss(p, x, y):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return ((h @ p["w2"] - y) ** 2).mean()

    def step(p, x, y):
        l, g = lib.value_and_grad(loss)(p, x, y)
        return lib.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g), l
    return step


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.sharded")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default="bench_sharded.json")
    a = ap.parse_args(argv)
    import numpy as np
    import jax
    import xform
    from benchmarks.timing import steady
    rounds, target = (3, 0.1) if a.quick else (7, 0.3)
    batch = 256 if a.quick else 1024
    results = {}
    for n in (1, 2, 4, 8):
        p, x, y = _mlp(np, batch)
        xm = xform.sharding.Mesh(np.array(xform.devices()[:n]), ("d",))
        jm = jax.sharding.Mesh(np.array(jax.devices()[:n]), ("d",))
        XS, JS = xform.sharding.NamedSharding, jax.sharding.NamedSharding
        XP, JP = xform.sharding.PartitionSpec, jax.sharding.PartitionSpec
        xrep, xrow = XS(xm, XP()), XS(xm, XP("d"))
        jrep, jrow = JS(jm, JP()), JS(jm, JP("d"))
        xstep = xform.jit(_step_fn(xform), in_shardings=(xrep, xrow, xrow),
                          out_shardings=(xrep, xrep))
        jstep = jax.jit(_step_fn(jax), in_shardings=(jrep, jrow, jrow),
                        out_shardings=(jrep, jrep))
        xs = [xform.device_put(p, xrep), xform.device_put(x, xrow), xform.device_put(y, xrow)]
        js = [jax.device_put(p, jrep), jax.device_put(x, jrow), jax.device_put(y, jrow)]

        def xthunk():
            xstep(*xs)[1].block_until_ready()

        def jthunk():
            jstep(*js)[1].block_until_ready()
        t, _, skipped = steady({"xform": xthunk, "jax": jthunk}, rounds, target)
        results[f"dp_mlp_step_{n}dev"] = {"us": {k: v * 1e6 for k, v in t.items()},
                                          "ratio": t.get("xform", 0) / t.get("jax", 1),
                                          "skipped": skipped}
    # dispatch: tiny program on an 8-way sharded array
    xm = xform.sharding.Mesh(np.array(xform.devices()[:8]), ("d",))
    jm = jax.sharding.Mesh(np.array(jax.devices()[:8]), ("d",))
    v = np.ones((64,), np.float32)
    xa = xform.device_put(v, xform.sharding.NamedSharding(xm, xform.sharding.PartitionSpec("d")))
    ja = jax.device_put(v, jax.sharding.NamedSharding(jm, jax.sharding.PartitionSpec("d")))
    xf = xform.jit(lambda t: t + 1)
    jf = jax.jit(lambda t: t + 1)
    t, _, skipped = steady({"xform": lambda: xf(xa).block_until_ready(),
                            "jax": lambda: jf(ja).block_until_ready()}, rounds, target)
    results["dispatch_sharded_8dev"] = {"us": {k: v * 1e6 for k, v in t.items()},
                                        "ratio": t.get("xform", 0) / t.get("jax", 1),
                                        "skipped": skipped}
    for k, r in results.items():
        us = r["us"]
        print(f"{k:<26} xform {us.get('xform', float('nan')):9.1f} us   jax "
              f"{us.get('jax', float('nan')):9.1f} us   ratio {r['ratio']:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

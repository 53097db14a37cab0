"""``pmap`` (JAX's semantics) on the SPMD machinery: a 1-D mesh over the mapped
axis, each device's slice squeezed, ``f`` run under ``shard_map`` (so ``axis_name``
collectives are StableHLO collectives) and the whole call compiled with ``jit``.
"""
from __future__ import annotations

import functools

import numpy as np

from xform._src.interpreters import core, tree_util
from xform import sharding as S
from xform.tree_util import tree_flatten, tree_leaves, tree_unflatten
from xform import _devices
from xform import _jit
from xform._src.interpreters import batching
from xform._src.interpreters.core import Array
from xform._src.primitives import structural
from xform._vmap import vmap
from xform.sharding._shard_map import shard_map

__all__ = ["pmap"]


def _is_axis_leaf(a):
    return a is None or isinstance(a, int)


def _per_leaf(axes, tree, what):
    if isinstance(axes, list):
        axes = tuple(axes)
    for a in tree_leaves(axes, is_leaf=_is_axis_leaf):
        if not _is_axis_leaf(a):
            raise TypeError(f"pmap {what} entries must be ints or None, got {a!r}")
    try:
        return tree_util.broadcast_prefix(axes, tree, is_leaf=_is_axis_leaf)
    except (ValueError, TypeError) as e:
        raise ValueError(f"pmap {what} must be an int, None or a pytree prefix of the "
                         f"arguments/outputs ({e})") from None


def pmap(fun=None, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=(),
         global_arg_shapes=None):
    """Map ``fun`` over the leading (``in_axes``) axis of its arguments, one slice per
    device; collectives over ``axis_name`` communicate between the devices."""
    if fun is None:
        return lambda f: pmap(f, axis_name, in_axes=in_axes, out_axes=out_axes,
                              static_broadcasted_argnums=static_broadcasted_argnums,
                              devices=devices, backend=backend, axis_size=axis_size,
                              donate_argnums=donate_argnums)
    if not callable(fun):
        raise TypeError(f"pmap: expected a callable, got {fun!r}")
    if isinstance(static_broadcasted_argnums, int):
        static_broadcasted_argnums = (static_broadcasted_argnums,)
    if isinstance(donate_argnums, int):
        donate_argnums = (donate_argnums,)
    statics = tuple(static_broadcasted_argnums)
    name = axis_name if axis_name is not None else "_pmap_axis"
    jitted = {}

    @functools.wraps(fun)
    def mapped(*args, **kwargs):
        if kwargs:
            raise TypeError("pmap: keyword arguments are not supported by the mapped "
                            "function; pass them positionally")
        if batching._axis_env.extra:
            # nested inside another pmap/shard_map body (whose devices are taken):
            # the inner map runs on each device as a named vmap -- the same values
            # and the same collective semantics over ``axis_name``
            return _nested(args)
        dyn = [a for i, a in enumerate(args) if i not in statics]
        leaves = tree_flatten(tuple(dyn))[0]
        ax = in_axes
        if isinstance(ax, list):
            ax = tuple(ax)
        if isinstance(ax, tuple) and len(ax) == len(args) and statics:
            ax = tuple(a for i, a in enumerate(ax) if i not in statics)
        if isinstance(ax, tuple) and len(ax) != len(dyn):
            raise ValueError(f"pmap in_axes has {len(ax)} entries but {len(dyn)} (non-static) "
                             "arguments were passed; give one entry per argument.")
        per = _per_leaf(ax, tuple(dyn), "in_axes")
        n = None
        for x, a in zip(leaves, per):
            if a is None:
                continue
            shape = np.shape(x)
            if not -len(shape) <= a < len(shape):
                raise ValueError(f"pmap in_axes={a} is out of bounds for an argument of shape "
                                 f"{shape}")
            k = shape[a % len(shape)]
            if n is None:
                n = k
            elif k != n:
                raise ValueError(f"pmap got inconsistent sizes for the mapped axis: {n} and {k} "
                                 "(every mapped argument needs the same size along in_axes)")
        if n is None:
            if axis_size is None:
                raise ValueError("pmap: no argument is mapped (all in_axes are None); pass "
                                 "axis_size")
            n = int(axis_size)
        devs = list(devices) if devices is not None else _devices.local_devices(backend=backend)
        if n > len(devs):
            raise ValueError(f"compiling computation that requires {n} logical devices, but "
                             f"only {len(devs)} XLA devices are available (num_replicas={n}); "
                             "on CPU set XLA_FLAGS=--xla_force_host_platform_device_count="
                             f"{n} before the first computation.")
        mesh = S.Mesh(np.array(devs[:n], dtype=object), (name,))
        key = (mesh, tuple(per), statics and tuple(args[i] for i in statics))
        j = jitted.get(key)
        if j is None:
            j = jitted[key] = _build(fun, mesh, name, per, out_axes, statics, donate_argnums,
                                     len(args))
        return j(*args)

    def _nested(args):
        dyn_pos = [i for i in range(len(args)) if i not in statics]
        ax = in_axes
        if isinstance(ax, list):
            ax = tuple(ax)
        if isinstance(ax, tuple) and len(ax) == len(args) and statics:
            ax = tuple(a for i, a in enumerate(ax) if i not in statics)

        def g(*dyn):
            it = iter(dyn)
            return fun(*[args[i] if i in statics else next(it) for i in range(len(args))])
        return vmap(g, in_axes=ax, out_axes=out_axes, axis_name=name,
                    axis_size=axis_size)(*[args[i] for i in dyn_pos])

    return mapped


def _build(fun, mesh, name, per, out_axes, statics, donate_argnums, nargs):
    P = S.PartitionSpec

    def run(*args):
        dyn_pos = [i for i in range(nargs) if i not in statics]
        dyn = [args[i] for i in dyn_pos]
        leaves, treedef = tree_flatten(tuple(dyn))
        moved, specs = [], []
        for x, a in zip(leaves, per):
            x = _as_array(x)
            if a is None:
                moved.append(x)
                specs.append(P())
            else:
                a = a % len(x.shape)
                if a:
                    x = structural.transpose(x, (a,) + tuple(i for i in range(len(x.shape))
                                                             if i != a))
                moved.append(x)
                specs.append(P(name))
        store = {}

        def body(*xs):
            ys = []
            for x, a in zip(xs, per):
                ys.append(structural.squeeze(x, (0,)) if a is not None else x)
            it = iter(treedef.unflatten(ys))
            full = [args[i] if i in statics else next(it) for i in range(nargs)]
            out = fun(*full)
            out_leaves, store["tree"] = tree_flatten(out)
            oaxes = _per_leaf(out_axes, out, "out_axes")
            store["oaxes"] = oaxes
            res = []
            for o, a in zip(out_leaves, oaxes):
                o = _as_array(o)
                res.append(structural.reshape(o, (1,) + tuple(core.get_aval(o).shape)))
            return tuple(res)

        # every output leaves stacked over the devices; out_axes=None takes device 0's
        outs = shard_map(body, mesh=mesh, in_specs=tuple(specs), out_specs=P(name),
                         check_vma=False)(*moved)
        res = []
        for o, a in zip(outs, store["oaxes"]):
            if a is None:
                o = structural.squeeze(structural.slice_in_dim(o, 0, 1, axis=0), (0,))
            else:
                a = a % len(o.shape)
                if a:
                    perm = list(range(1, len(o.shape)))
                    perm.insert(a, 0)
                    o = structural.transpose(o, tuple(perm))
            res.append(o)
        return tree_unflatten(store["tree"], res)

    return _jit.jit(run, static_argnums=statics, donate_argnums=tuple(donate_argnums))


def _as_array(x):
    if isinstance(x, (int, float, complex, bool, np.ndarray, np.generic)):
        aval = core.get_aval(x)
        return Array(np.asarray(x, aval.dtype), weak_type=aval.weak_type)
    return x

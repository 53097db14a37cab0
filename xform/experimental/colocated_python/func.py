"""Colocated Python functions: specialization and single-process execution."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any
from xform import tree_util

__all__ = ["make_callable", "Specialization"]


@dataclasses.dataclass(frozen=True)
class Specialization:
    """What a colocated callable is specialized on (each set at most once)."""
    in_specs_treedef: Any = None
    in_specs_leaves: tuple | None = None
    out_specs_fn: Callable[..., Any] | None = None
    out_specs_treedef: Any = None
    out_specs_leaves: tuple | None = None
    devices: tuple | None = None

    def update(self, *, in_specs_treedef=None, in_specs_leaves=None, out_specs_fn=None,
               out_specs_treedef=None, out_specs_leaves=None, devices=None):
        new = {}
        for name, val in (("in_specs_treedef", in_specs_treedef),
                          ("in_specs_leaves", in_specs_leaves),
                          ("out_specs_fn", out_specs_fn),
                          ("out_specs_treedef", out_specs_treedef),
                          ("out_specs_leaves", out_specs_leaves),
                          ("devices", devices)):
            if val is None:
                continue
            if getattr(self, name) is not None:
                what = name.replace("_treedef", "").replace("_leaves", "")
                raise ValueError(f"{what} already specified")
            new[name] = val
        return dataclasses.replace(self, **new)


def _spec_of(x):
    import xform  # deferred: import cycle
    if not isinstance(x, xform.Array):
        raise ValueError("colocated_python only supports jax.Array as input and output, "
                         f"but got {type(x)}.")
    return xform.ShapeDtypeStruct(shape=x.shape, dtype=x.dtype, sharding=x.sharding)


def _devices_of_args(leaves) -> tuple | None:
    seen = []
    for x in leaves:
        devs = tuple(x.sharding._device_assignment) if hasattr(
            x.sharding, "_device_assignment") else tuple(sorted(x.sharding.device_set,
                                                                key=lambda d: d.id))
        if devs not in seen:
            seen.append(devs)
    if not seen:
        return None
    if len(seen) != 1:
        raise ValueError("All arguments must use the same device list, but got multiple "
                         f"device lists: {seen}.")
    return seen[0]


def _check_specs(what: str, got, want):
    for i, (g, w) in enumerate(zip(got, want)):
        if tuple(g.shape) != tuple(w.shape) or g.dtype != w.dtype:
            raise ValueError(
                f"colocated_python: {what} leaf {i} is {g.dtype}{list(g.shape)} but the "
                f"specialized spec says {w.dtype}{list(w.shape)}")


def _place(x, spec):
    import xform  # deferred: import cycle
    sharding = getattr(spec, "sharding", None)
    if sharding is None or x.sharding == sharding:
        return x
    return xform.device_put(x, sharding)


def _run(fun, spec: Specialization, args, kwargs):
    leaves, treedef = tree_util.tree_flatten((args, kwargs))
    if not leaves and spec.devices is None:
        raise ValueError("No devices found. colocated_python function without input "
                         "arguments must be first specialized with devices.")
    in_specs = [_spec_of(x) for x in leaves]
    if spec.in_specs_treedef is not None:
        if spec.in_specs_treedef != treedef:
            raise ValueError(
                f"colocated_python: arguments have structure {treedef}, but the callable "
                f"was specialized with in_specs of structure {spec.in_specs_treedef}")
        _check_specs("input", in_specs, spec.in_specs_leaves)
    devices = _devices_of_args(leaves) or tuple(spec.devices)
    bad = [d for d in devices if d.platform != "cpu"]
    if bad:
        raise ValueError(
            f"colocated_python runs on CPU devices, but the arguments are on {bad}; move "
            "them with jax.device_put to colocated_cpu_devices(devices) first")
    out_leaves_spec = out_treedef_spec = None
    if spec.out_specs_treedef is not None:
        out_leaves_spec, out_treedef_spec = spec.out_specs_leaves, spec.out_specs_treedef
    elif spec.out_specs_fn is not None:
        a_specs, k_specs = tree_util.tree_unflatten(treedef, in_specs)
        o = spec.out_specs_fn(*a_specs, **k_specs)
        out_leaves_spec, out_treedef_spec = tree_util.tree_flatten(o)
    result = fun(*args, **kwargs)
    r_leaves, r_treedef = tree_util.tree_flatten(result)
    r_specs = [_spec_of(x) for x in r_leaves]
    if out_treedef_spec is not None:
        if r_treedef != out_treedef_spec:
            raise ValueError(
                f"colocated_python: the function returned structure {r_treedef}, but the "
                f"output specs have structure {out_treedef_spec}")
        _check_specs("output", r_specs, out_leaves_spec)
        r_leaves = [_place(x, s) for x, s in zip(r_leaves, out_leaves_spec)]
    return tree_util.tree_unflatten(r_treedef, r_leaves)


def make_callable(fun: Callable[..., Any], specialization: Specialization | None = None):
    """The colocated callable for ``fun`` with ``specialization``."""
    spec = specialization or Specialization()

    def specialize(in_specs=None, out_specs_fn=None, devices: Sequence | None = None):
        """A colocated callable with extra specialization: ``in_specs`` (the specs of
        ``(args, kwargs)``), ``out_specs_fn`` (input specs -> output specs) and
        ``devices`` (required when the call has no array arguments)."""
        if in_specs is None:
            leaves = treedef = None
        else:
            leaves, treedef = tree_util.tree_flatten(in_specs)
            leaves = tuple(leaves)
        return make_callable(fun, spec.update(
            in_specs_treedef=treedef, in_specs_leaves=leaves, out_specs_fn=out_specs_fn,
            devices=None if devices is None else tuple(devices)))

    def __call__(*args, **kwargs):
        return _run(fun, spec, args, kwargs)

    __call__.specialize = specialize
    __call__.__wrapped__ = fun
    __call__.__name__ = getattr(fun, "__name__", "colocated_python")
    __call__.__qualname__ = getattr(fun, "__qualname__", __call__.__name__)
    __call__.__doc__ = getattr(fun, "__doc__", None)
    return __call__

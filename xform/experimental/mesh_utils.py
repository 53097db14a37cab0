"""``xform.experimental.mesh_utils`` (JAX's names): device arrays for ``Mesh``."""
from __future__ import annotations

import math

import numpy as np
from xform import _devices

__all__ = ["create_device_mesh", "create_hybrid_device_mesh"]


def create_device_mesh(mesh_shape, devices=None, *, contiguous_submeshes=False,
                       allow_split_physical_axes=False):
    """An array of shape ``mesh_shape`` holding the first ``prod(mesh_shape)`` devices."""
    mesh_shape = tuple(int(s) for s in mesh_shape)
    if devices is None:
        devices = _devices.devices()
    devices = list(devices)
    n = math.prod(mesh_shape)
    if n != len(devices) and (devices is None or n > len(devices)):
        raise ValueError(f"create_device_mesh: mesh shape {mesh_shape} needs {n} devices, "
                         f"got {len(devices)}")
    if n != len(devices):
        raise ValueError(f"create_device_mesh: mesh shape {mesh_shape} has {n} devices but "
                         f"{len(devices)} were given; pass devices=devices[:{n}]")
    return np.array(devices, dtype=object).reshape(mesh_shape)


def create_hybrid_device_mesh(mesh_shape, dcn_mesh_shape, devices=None, **kwargs):
    """The mesh ``mesh_shape * dcn_mesh_shape`` (per-process shape times process grid)."""
    shape = tuple(a * b for a, b in zip(mesh_shape, dcn_mesh_shape))
    return create_device_mesh(shape, devices)

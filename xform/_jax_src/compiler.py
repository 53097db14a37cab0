"""``jax._src.compiler`` under the alias: ``backend_compile_and_load``, the function
through which every xform compilation goes (a library may wrap it, as chex's
``restrict_backends`` does to forbid compiling for a platform)."""
from __future__ import annotations

import sys

from xform._src.lowering import runtime as _runtime


def backend_compile_and_load(backend, module, executable_devices, options,
                             host_callbacks=()):
    """Compile ``module`` (StableHLO text or a parsed module) for ``backend`` (a PJRT
    client; ``backend.platform`` names it) on ``executable_devices``."""
    if host_callbacks:
        return backend.compile_and_load(module, executable_devices, options,
                                        host_callbacks=list(host_callbacks))
    return backend.compile_and_load(module, executable_devices, options)


def _through_this_module(client, module, devices, options, host_callbacks=()):
    # looked up on each call, so that a wrapper set with setattr takes effect
    return sys.modules[__name__].backend_compile_and_load(client, module, devices, options,
                                                          host_callbacks)


_runtime.compile_and_load = _through_this_module

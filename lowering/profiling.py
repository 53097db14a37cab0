"""jaxlib's profiler pieces behind ``xform.profiler``: the profiler server (which
TensorBoard's profile plugin and ``jax.collect_profile`` connect to), subprocess
registration, the XSpace reader classes and the device memory (heap) profile of a
PJRT client. Imported on first use: ``import xform`` does not load jaxlib."""
from __future__ import annotations

import gzip


def profiler_lib():
    from jaxlib import _profiler   # deferred: jaxlib on first use
    return _profiler


def profile_data_lib():
    from jaxlib import _profile_data   # deferred: jaxlib on first use
    return _profile_data


def start_server(port: int, requires_backend: bool):
    if requires_backend:
        from xform._src.lowering import runtime  # deferred: keeps `import xform` light
        runtime.get_backend()      # backends first, so their tracers are registered
    return profiler_lib().start_server(int(port))


def register_subprocess(pid: int, port: int):
    return profiler_lib().register_subprocess(int(pid), int(port))


def heap_profile(backend=None) -> bytes:
    """The client's live buffers and executables as a gzipped pprof protocol buffer."""
    from xform._src.lowering import runtime  # deferred: keeps `import xform` light
    return gzip.compress(runtime.get_backend(backend).heap_profile())

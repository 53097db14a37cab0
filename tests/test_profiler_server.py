"""xform.profiler's jaxlib pieces: the profiler server, subprocess registration, the
device memory profile and the XSpace reader classes, next to JAX's."""
import gzip
import socket
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

import xform


def _free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _listening(port, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        with socket.socket() as s:
            if s.connect_ex(("localhost", port)) == 0:
                return True
        time.sleep(0.1)
    return False


def test_profiler_server_starts_once_and_stops():
    p = xform.profiler
    port = _free_port()
    server = p.start_server(port)
    try:
        assert type(server).__name__ == "ProfilerServer"
        assert _listening(port)
        with pytest.raises(ValueError, match="Only one profiler server"):
            p.start_server(_free_port())
    finally:
        p.stop_server()
    with pytest.raises(ValueError, match="No active profiler server"):
        p.stop_server()


def test_register_subprocess_reaches_a_child_profiler_server():
    port = _free_port()
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time, xform; xform.profiler.start_server(int(sys.argv[1]), "
         "requires_backend=False); print('ready', flush=True); time.sleep(60)", str(port)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        assert _listening(port)
        unregister = xform.profiler.register_subprocess(child.pid, port)
        assert callable(unregister)
        unregister()
    finally:
        child.kill()
        child.wait()


def test_device_memory_profile_is_a_gzipped_pprof_of_live_buffers(tmp_path):
    keep = xform.jit(lambda x: x * 2)(np.ones((256, 256), np.float32))
    prof = xform.profiler.device_memory_profile()
    raw = gzip.decompress(prof)
    assert raw and raw[:1] == b"\n"            # a protocol buffer (field 1: sample_type)
    # JAX's profile of its own client has the same form
    assert gzip.decompress(jax.profiler.device_memory_profile())[:1] == b"\n"
    path = tmp_path / "mem.prof"
    xform.profiler.save_device_memory_profile(path)
    assert gzip.decompress(path.read_bytes())[:1] == b"\n"
    del keep


def test_profile_classes_are_jaxlibs_and_read_a_session():
    p = xform.profiler
    assert p.ProfileData is jax.profiler.ProfileData
    assert p.ProfileEvent is jax.profiler.ProfileEvent
    assert p.ProfilePlane is jax.profiler.ProfilePlane
    opts = p.ProfileOptions()
    assert isinstance(opts, jax.profiler.ProfileOptions.__mro__[1])   # jaxlib's class
    assert opts.host_tracer_level == jax.profiler.ProfileOptions().host_tracer_level
    from jaxlib import _profiler
    session = _profiler.ProfilerSession(opts)
    xform.jit(lambda x: xform.numpy.sin(x).sum())(np.ones(1000, np.float32)).block_until_ready()
    data = p.ProfileData.from_serialized_xspace(session.stop())
    names = [plane.name for plane in data.planes]
    assert any("host" in n.lower() for n in names), names

"""DLPack import onto PJRT buffers (jaxlib, imported lazily): ``xform.dlpack``'s
path for producers whose memory NumPy cannot view (accelerator memory, dtypes
NumPy's DLPack importer rejects such as bfloat16)."""
from __future__ import annotations

_DL_PLATFORM = {1: "cpu", 2: "gpu", 3: "gpu", 10: "gpu", 13: "tpu"}   # DLDeviceType -> backend


def device_for(dl_device_type, device_id):
    from xform._src.lowering.runtime import get_backend  # deferred: keeps `import xform` light
    try:
        platform = _DL_PLATFORM[int(dl_device_type)]
    except KeyError:
        raise TypeError(f"Array passed to from_dlpack is on unsupported device type "
                        f"(DLDeviceType: {dl_device_type})") from None
    return get_backend(platform).device_from_local_hardware_id(int(device_id))


def buffer_from_dlpack(x, copy=None):
    """A PJRT buffer (jax ArrayImpl) over ``x``'s DLPack capsule; shares ``x``'s memory
    unless ``copy`` is True (or the data needs copying, e.g. misaligned)."""
    from jaxlib import _jax  # deferred: keeps `import xform` light
    dl_type, dev_id = x.__dlpack_device__()
    device = device_for(dl_type, dev_id)
    stream = None
    if int(dl_type) != 1:
        try:
            stream = device.get_stream_for_external_ready_events()
        except Exception:
            stream = None
    capsule = x.__dlpack__(stream=stream)
    try:
        return _jax.dlpack_managed_tensor_to_buffer(capsule, device, stream, copy, int(dl_type))
    except TypeError:   # older jaxlib signature
        return _jax.dlpack_managed_tensor_to_buffer(capsule, device, stream, copy)

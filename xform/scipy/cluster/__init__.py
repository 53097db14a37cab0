"""``xform.scipy.cluster``: ``vq`` (``jax.scipy.cluster``)."""
from xform.scipy.cluster import vq  # noqa: F401

__all__ = ["vq"]

"""``xform.scipy.spatial``: ``transform`` (rotations)."""
from xform.scipy.spatial import transform  # noqa: F401

__all__ = ["transform"]

"""``xform.scipy.sparse``: JAX's ``jax.scipy.sparse`` (the iterative solvers in
``linalg``)."""
from xform.scipy.sparse import linalg  # noqa: F401

__all__ = ["linalg"]

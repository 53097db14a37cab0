"""``jax._src.checkify`` under the alias: ``xform.experimental.checkify`` plus the error
classes (``JaxException`` and its subclasses) and the ``Out`` type variable."""
from __future__ import annotations

from typing import TypeVar

from xform._src.primitives.checkify import *  # noqa: F401,F403
from xform._src.primitives.checkify import FailedCheckError, JaxException  # noqa: F401
from xform.experimental.checkify import *  # noqa: F401,F403

Out = TypeVar("Out")

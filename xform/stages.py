"""``xform.stages``: the ahead-of-time stages of ``jit`` (``jax.stages``):
``jit(f)`` is ``Wrapped``; ``.trace(...)`` gives ``Traced``; ``.lower(...)`` gives
``Lowered``; ``.compile()`` gives ``Compiled``."""
from __future__ import annotations

import dataclasses
from typing import Any

from xform._jit import CompiledCall as Compiled  # noqa: F401
from xform._jit import JitWrapped as Wrapped  # noqa: F401
from xform._jit import Lowered, Traced  # noqa: F401

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]

CompilerOptions = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class ArgInfo:
    """An argument of a lowered/compiled computation: its abstract value and whether
    it is donated."""
    _aval: Any
    donated: bool

    @property
    def shape(self):
        return self._aval.shape

    @property
    def dtype(self):
        return self._aval.dtype

"""Old top-level engine names, for pickles written before the engine moved under xform.

Arrays pickled by earlier versions record ``interpreters.core._rebuild_array``; the engine
now lives at ``xform._src.interpreters``. This finder answers imports of the three old
top-level names (``interpreters``, ``primitives``, ``lowering``) and their submodules with
thin alias modules whose attributes are the engine's own objects, so ``pickle.load`` finds
the same functions and classes. It never shadows a user's package of the same name: a
top-level name is served only when nothing else on ``sys.path`` provides it (or what
provides it is this checkout's own engine folder).
"""
from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys
import types

_OLD = ("interpreters", "primitives", "lowering")
_ENGINE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _AliasModule(types.ModuleType):
    """``interpreters.core`` -> attributes of ``xform._src.interpreters.core``."""

    def __getattr__(self, name):
        target = importlib.import_module("xform._src." + self.__name__)
        return getattr(target, name)


class _AliasLoader:
    def create_module(self, spec):
        mod = _AliasModule(spec.name)
        if "." not in spec.name:
            mod.__path__ = []
        return mod

    def exec_module(self, module):
        importlib.import_module("xform._src." + module.__name__)  # fails as the real one


class _LegacyFinder:
    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top not in _OLD:
            return None
        if "." in fullname:
            if not isinstance(sys.modules.get(top), _AliasModule):
                return None
        else:
            other = importlib.machinery.PathFinder.find_spec(top)
            if other is not None and other.origin != os.path.join(_ENGINE_ROOT, top, "__init__.py"):
                return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(),
                                              is_package="." not in fullname)


def install():
    if not any(isinstance(f, _LegacyFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _LegacyFinder())

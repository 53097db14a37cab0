"""xform's engine, installed under the ``xform`` name.

The repository keeps the engine's layers as top-level folders (``interpreters/``,
``primitives/``, ``lowering/``), but an installed xform puts only ``xform*`` into
site-packages: the wheel maps those folders to ``xform._src.interpreters``,
``xform._src.primitives`` and ``xform._src.lowering`` (see ``pyproject.toml``). In a
source checkout (editable install, or the repository root on ``sys.path``) the folders
are not inside this package, so its search path is extended to the repository root.
"""
import os as _os

_here = _os.path.dirname(__file__)
_root = _os.path.dirname(_os.path.dirname(_here))
if not _os.path.isdir(_os.path.join(_here, "interpreters")) and all(
        _os.path.isfile(_os.path.join(_root, _layer, "__init__.py"))
        for _layer in ("interpreters", "primitives", "lowering")):
    __path__.append(_root)  # noqa: F821  (a package's __path__)
del _os, _here, _root

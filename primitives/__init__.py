"""The primitive catalogue.  Importing this package imports every family module in
this folder, and so registers every primitive with all of its rules: a new family is
a new module here, with no list to edit."""
import importlib as _importlib
import os as _os

from xform._src.primitives import _rules  # noqa: F401  (installs the AD/batching hooks)

FAMILIES = tuple(sorted(_f[:-3] for _f in _os.listdir(__path__[0])
                        if _f.endswith(".py") and not _f.startswith("_")))
for _fam in FAMILIES:
    _importlib.import_module(f"{__name__}.{_fam}")
del _fam, _importlib, _os

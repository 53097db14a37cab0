"""The primitive catalogue.  Importing this package imports every family module in
this folder, and so registers every primitive with all of its rules: a new family is
a new module here, with no list to edit."""
import importlib as _importlib
import pkgutil as _pkgutil

from xform._src.primitives import _rules  # noqa: F401  (installs the AD/batching hooks)

FAMILIES = tuple(sorted(_m.name for _m in _pkgutil.iter_modules(__path__)
                        if not _m.name.startswith("_")))
for _fam in FAMILIES:
    _importlib.import_module(f"{__name__}.{_fam}")
del _fam, _importlib, _pkgutil

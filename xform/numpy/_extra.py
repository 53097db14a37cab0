"""Collects the public names of the modules added for the rest of ``jax.numpy``."""
import importlib as _importlib

_MODULES = ("_mathfuncs", "_index_tricks", "_sorting_extra", "_setops", "_statistics", "_misc", "_polynomial", "_dtype_names", "_ufunc_methods")

__all__ = []
for _m in _MODULES:
    _mod = _importlib.import_module(f"xform.numpy.{_m}")
    for _n in _mod.__all__:
        globals()[_n] = getattr(_mod, _n)
        __all__.append(_n)
del _m, _mod, _n, _importlib

"""Colocated Python classes: the instance lives on the host (here: this process)."""
from __future__ import annotations

import threading

from xform.experimental.colocated_python.func import make_callable

__all__ = ["wrap_class"]


def wrap_class(cls: type) -> type:
    """A wrapper class for ``cls``: constructing it records the arguments; the actual
    ``cls`` instance is created on the first method call; public methods run as
    colocated functions."""

    class Wrapper:
        def __init__(self, *args, **kwargs):
            self._colocated_args = (args, kwargs)
            self._colocated_obj = None
            self._colocated_lock = threading.Lock()

        def _colocated_instance(self):
            with self._colocated_lock:
                if self._colocated_obj is None:
                    a, k = self._colocated_args
                    self._colocated_obj = cls(*a, **k)
                return self._colocated_obj

    def method(name):
        def call(self, *args, **kwargs):
            bound = getattr(self._colocated_instance(), name)
            return make_callable(bound)(*args, **kwargs)
        call.__name__ = name
        call.__doc__ = getattr(getattr(cls, name), "__doc__", None)
        return call

    for name in dir(cls):
        if name.startswith("_") or not callable(getattr(cls, name, None)):
            continue
        setattr(Wrapper, name, method(name))
    Wrapper.__name__ = cls.__name__
    Wrapper.__qualname__ = cls.__qualname__
    Wrapper.__doc__ = cls.__doc__
    Wrapper.__module__ = cls.__module__
    return Wrapper

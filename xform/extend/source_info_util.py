"""``xform.extend.source_info_util``: which frames are the user's.

xform reports a traced equation's location, and the location in its error messages, as
the innermost frame outside xform.  ``register_exclusion(path)`` adds a library's
directory (a file path prefix) to the frames skipped, as JAX's function of the same name
does for libraries built on JAX.
"""
from __future__ import annotations

from xform._src.interpreters import errors as _errors

__all__ = ["register_exclusion", "user_frame", "current"]


def register_exclusion(path: str) -> None:
    """Frames from files under ``path`` are not reported as the user's location."""
    _errors.register_exclusion(path)


def user_frame(skip: int = 1):
    """The innermost stack frame outside xform and the registered paths (or None)."""
    return _errors.user_frame(skip + 1)


def current():
    """The current user location as ``(file, line, function)``, or None."""
    f = _errors.user_frame(2)
    return None if f is None else (f.f_code.co_filename, f.f_lineno, f.f_code.co_name)

"""``jax._src.traceback_util`` under the alias: registering library frames.

xform's error messages report the innermost frame outside xform; a library registers
its own directory so that the frame reported is its user's.
"""
from __future__ import annotations

import functools

from xform._src.interpreters import errors as _errors

_exclude_paths: list = []


def register_exclusion(path: str) -> None:
    """Frames from files under ``path`` are not reported as the user's location."""
    _exclude_paths.append(path)
    _errors.register_exclusion(path)


def include_frame(f) -> bool:
    """Whether a traceback frame is shown (not from xform or a registered library)."""
    return not f.f_code.co_filename.startswith(tuple(_errors._package_dirs()))


def path_starts_with(path: str, path_prefix: str) -> bool:
    return path.startswith(path_prefix)


def api_boundary(fun=None, *, repro_api_name=None, repro_user_func=False):
    """Marks a public API function (JAX filters its tracebacks; xform leaves them)."""
    if fun is None:
        return functools.partial(api_boundary, repro_api_name=repro_api_name,
                                 repro_user_func=repro_user_func)
    return fun

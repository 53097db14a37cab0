"""User-facing exception classes (JAX's names, so ``except`` clauses carry over)."""
from __future__ import annotations

import os
import sys

_PKG_DIRS = None


def _package_dirs():
    global _PKG_DIRS
    if _PKG_DIRS is None:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        _PKG_DIRS = tuple(os.path.join(here, d) + os.sep
                          for d in ("xform", "primitives", "interpreters", "lowering"))
    return _PKG_DIRS


# id(code object) -> (the code object, whether its frames are the user's).  Keyed by id:
# hashing a code object hashes its bytecode and constants, on every frame walked; the
# entry holds the code object, so its id is not reused while the entry lives.
_user_code: dict = {}


def _is_user_code(code) -> bool:
    fn = code.co_filename
    ok = (not fn.startswith(_package_dirs()) and not fn.startswith("<frozen")
          and "contextlib" not in fn and "functools" not in fn)
    if len(_user_code) > 100_000:
        _user_code.clear()
    _user_code[id(code)] = (code, ok)
    return ok


def register_exclusion(path: str) -> None:
    """Frames from files under ``path`` (a library built on xform) are not the user's."""
    global _PKG_DIRS
    path = os.path.abspath(path)
    if not os.path.splitext(path)[1]:
        path = path + os.sep
    if path not in _package_dirs():
        _PKG_DIRS = _package_dirs() + (path,)
        _user_code.clear()


def user_frame(skip: int = 1):
    """The innermost stack frame outside the xform packages (the user's line), or None."""
    known = _user_code
    f = sys._getframe(skip)
    while f is not None:
        code = f.f_code
        e = known.get(id(code))
        ok = e[1] if e is not None else _is_user_code(code)
        if ok:
            return f
        f = f.f_back
    return None


def user_location(skip: int = 1) -> str:
    f = user_frame(skip + 1)
    if f is None:
        return "<unknown location>"
    return f"{f.f_code.co_filename}:{f.f_lineno} (in {f.f_code.co_name})"


class XformTypeError(TypeError):
    """Base of the tracer-conversion errors; a TypeError like JAX's JAXTypeError."""


class ConcretizationTypeError(XformTypeError):
    """Python needed a concrete value (``if``, ``int()``...) but got an abstract tracer."""

    def __init__(self, tracer, context: str = "", suggestion: str | None = None):
        where = user_location(2)
        aval = getattr(tracer, "aval", None)
        msg = (f"Abstract tracer value encountered where concrete value is expected: "
               f"{context or 'a Python value was needed'} at {where}.\n"
               f"The value is {aval.str_short() if aval is not None else tracer} traced by "
               f"{type(getattr(tracer, '_trace', None)).__name__}; its value is only known "
               f"when the compiled program runs.\n")
        msg += suggestion or (
            "If it depends only on an argument's value, mark that argument static "
            "(jit(f, static_argnums=...) / static_argnames=...); for control flow on traced "
            "values use xform.lax.cond, xform.lax.switch, xform.lax.while_loop, "
            "xform.lax.fori_loop or xform.numpy.where.")
        super().__init__(msg)


class TracerBoolConversionError(ConcretizationTypeError):
    pass


class TracerIntegerConversionError(ConcretizationTypeError):
    pass


class TracerArrayConversionError(XformTypeError):
    pass


class UnexpectedTracerError(Exception):
    """A tracer escaped the transformation that created it and was used later."""


class JaxprTypeError(TypeError):
    """The IR type checker found an ill-typed program."""


class KeyReuseError(RuntimeError):
    pass

"""``xform.extend.ifrt_programs``: JAX's handle on IFRT program constructors.

In JAX, ``jax.extend.ifrt_programs.ifrt_programs`` is jaxlib's IFRT program module
(``make_plugin_program``, ``make_plugin_compile_options``, ``make_xla_program``, ...),
used to compile programs for a runtime plugin such as Cloud Pathways.  xform runs
programs through its own single-process PjRt runtime and has no IFRT program
interface: the module is importable (libraries import it at module level), and every
name on it raises ``NotImplementedError`` naming what is missing when it is *used*.
"""
from __future__ import annotations

__all__ = ["ifrt_programs"]


class _Unsupported:
    """Stands for one IFRT program constructor; calling it raises."""

    def __init__(self, name: str):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(
            f"jax.extend.ifrt_programs.ifrt_programs.{self._name}: xform has no IFRT "
            "program interface (it runs programs on its own PjRt runtime in one "
            "process; IFRT plugin programs such as Cloud Pathways' are not supported). "
            "Use xform.jit for computations and a local checkpoint path for storage.")

    def __repr__(self):
        return f"<unsupported IFRT program constructor {self._name}>"


class _IfrtPrograms:
    """The ``ifrt_programs`` namespace: every attribute is an unsupported constructor."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Unsupported(name)

    def __repr__(self):
        return "<xform: IFRT programs (unsupported)>"


ifrt_programs = _IfrtPrograms()

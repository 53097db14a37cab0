"""``xform.lib`` (``jax.lib``): ``__version__``, the version of the jaxlib that xform
compiles and runs programs with (libraries gate workarounds for jaxlib bugs on it)."""


def __getattr__(name):
    if name == "__version__":
        from importlib.metadata import version   # looked up on use: import xform stays light
        return version("jaxlib")
    raise AttributeError(f"module 'xform.lib' has no attribute {name!r}: xform serves "
                         "jax.lib.__version__ only (jaxlib's internals are not part of its API)")

"""``xform.compat.alias_jax()``: make ``import jax`` in third-party code resolve to xform.

Libraries written against JAX's public API (optax, ...) then run on xform unchanged::

    import xform
    xform.compat.alias_jax()      # before importing the library
    import optax                  # its `import jax`, `jax.numpy`, `jax.tree` ... are xform

or run a whole script that way: ``python -m xform.run script.py [args]``.

What it does:

* ``sys.modules["jax"]`` becomes a proxy module whose attributes are xform's
  (``jax.jit`` is ``xform.jit``, ``jax.Array`` is ``xform.Array``, ``jax.__version__`` is
  xform's version, so version-gated library code takes its conservative branch;
  ``jax.__version_info__`` is the JAX release whose extension API xform serves, 0.10.2,
  which libraries read to pick the signatures of ``jax.extend``/``jax.interpreters``);
* ``import jax.X.Y`` for every public ``X.Y`` that xform has resolves to ``xform.X.Y``
  (the same module object): ``jax.numpy``, ``jax.lax``, ``jax.tree``, ``jax.tree_util``,
  ``jax.nn``, ``jax.scipy.*``, ``jax.random``, ``jax.sharding``, ``jax.export``,
  ``jax.dtypes``, ``jax.typing``, ``jax.flatten_util``, ``jax.experimental``,
  ``jax.example_libraries.*``, and JAX's extension API ``jax.core``, ``jax.extend.*``,
  ``jax.interpreters.*``, ``jax.api_util`` (docs/extending.md);
* ``jax._src.*`` imported by library code (any module outside xform and JAX) is served by
  ``xform._jax_src`` (``traceback_util``, ``dtypes``, ``core``, ``tree_util``,
  ``dispatch``, ``distributed``, ``compiler``, ``state``, ``checkify``: xform's objects under
  JAX's names)
  or refused with an ImportError naming the internal, so that no real JAX internal meets
  an xform value;
* xform's own runtime keeps using the real jax/jaxlib runtime layer: it is loaded
  *before* the alias is installed, its ``jax._src`` modules stay where they are (xform's
  and JAX's own imports of them are not redirected), and the real public ``jax`` modules
  are stashed (``unalias_jax()`` puts them back).

What it does not cover: anything xform does not implement raises ImportError /
AttributeError naming the missing ``jax`` name; code that already imported the real jax keeps it (install the alias first);
real JAX and aliased libraries cannot share one process (run the JAX side in another
process to compare).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import builtins

__all__ = ["alias_jax", "unalias_jax", "is_aliased"]

# Real-jax module names left in sys.modules (xform's runtime layer lives on them).
_KEEP_PREFIXES = ("jax._src", "jax.lib", "jax._")
# JAX's private implementation, as library code sees it under the alias: served by
# ``xform._jax_src`` (or refused there with an ImportError naming the internal).
_INTERNAL = ("jax._src", "jax._src.")
_stash: dict = {}
JAX_API_VERSION = (0, 10, 2)   # the JAX release whose API the alias serves
_finder = None


class _JaxProxy(types.ModuleType):
    """The module ``jax`` resolves to: xform's attributes."""

    def __getattr__(self, name):
        import xform  # deferred: import cycle
        if name == "_src":          # JAX's internals as library code sees them
            import xform._jax_src  # deferred: keeps `import xform` light
            return xform._jax_src
        if name == "version":       # the alias's versions, not xform.version's
            return _version_module()
        try:
            return getattr(xform, name)
        except AttributeError:
            pass
        raise AttributeError(f"module 'jax' (aliased to xform) has no attribute {name!r}: "
                             f"xform does not provide jax.{name}")

    def __dir__(self):
        import xform  # deferred: import cycle
        return sorted(dir(xform))


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        mod = self.target() if callable(self.target) else importlib.import_module(self.target)
        self._spec = getattr(mod, "__spec__", None)
        return mod

    def exec_module(self, module):
        # the import system set module.__spec__ to the alias's spec: keep xform's own
        if self._spec is not None and not callable(self.target):
            module.__spec__ = self._spec


class _JaxAliasFinder(importlib.abc.MetaPathFinder):
    """``jax.X.Y`` -> the module ``xform.X.Y``."""

    def find_spec(self, fullname, path=None, target=None):
        if not (fullname == "jax" or fullname.startswith("jax.")):
            return None
        if fullname == "jax":
            return importlib.machinery.ModuleSpec("jax", _AliasLoader(_proxy),
                                                  is_package=True)
        if fullname.startswith(_KEEP_PREFIXES):
            return None            # the real module (already imported by the runtime)
        if fullname == "jax.version":
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(_version_module))
        xname = "xform" + fullname[len("jax"):]
        if xname in sys.modules:
            mod = sys.modules[xname]
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(xname),
                                                  is_package=hasattr(mod, "__path__"))
        try:
            spec = importlib.util.find_spec(xname)
        except (ModuleNotFoundError, ValueError):
            spec = None
        if spec is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: `import jax` is aliased to xform "
                f"(xform.compat.alias_jax) and xform has no {xname!r}", name=fullname)
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(xname),
                                              is_package=spec.submodule_search_locations
                                              is not None)


def _importer_is_library(globals_) -> bool:
    """Whether an import statement runs in library/user code (not in xform, whose
    runtime uses the real ``jax._src``, nor in real JAX's own modules)."""
    name = (globals_ or {}).get("__name__") or ""
    return not (name == "jax" or name.startswith(("jax.", "jaxlib", "xform")))


def _serve_internal(name: str, fromlist):
    """The module ``xform._jax_src.*`` standing for ``jax._src.*`` (or ImportError)."""
    from xform import _jax_src  # deferred: keeps `import xform` light
    xname = "xform._jax_src" + name[len("jax._src"):]
    try:
        mod = importlib.import_module(xname)
    except ModuleNotFoundError as e:
        if e.name and (xname == e.name or xname.startswith(e.name + ".")):
            raise _jax_src.refused(name) from None
        raise
    for item in fromlist or ():
        if item != "*" and not hasattr(mod, item):
            try:
                importlib.import_module(f"{xname}.{item}")
            except ModuleNotFoundError:
                raise _jax_src.refused(f"{name}.{item}") from None
    return mod


_orig_import = None


def _aliased_import(name, globals=None, locals=None, fromlist=(), level=0):
    if (level == 0 and name.startswith("jax._src") and name[8:9] in ("", ".")
            and _importer_is_library(globals)):
        mod = _serve_internal(name, fromlist)
        return mod if fromlist else sys.modules["jax"]
    return _orig_import(name, globals, locals, fromlist, level)


_PROXY = None


def _proxy():
    global _PROXY
    if _PROXY is None:
        import xform  # deferred: import cycle
        p = _JaxProxy("jax", "JAX's API, served by xform (xform.compat.alias_jax)")
        p.__path__ = []            # a package: `import jax.numpy` goes through the finder
        p.__version__ = xform.__version__
        # Libraries read __version_info__ to pick which signature of JAX's extension API
        # (jax.extend, jax.core, jax.interpreters) to call; xform serves JAX 0.10.2's.
        p.__version_info__ = JAX_API_VERSION
        p.__xform_alias__ = True
        _PROXY = p
    return _PROXY


_VERSION = None


def _version_module():
    """``jax.version`` under the alias: the same two versions as the proxy's
    ``__version__`` (xform's) and ``__version_info__`` (the JAX API served)."""
    global _VERSION
    if _VERSION is None:
        import xform  # deferred: import cycle
        m = types.ModuleType("jax.version", "The versions behind `jax` under the alias.")
        m.__version__ = m._version = xform.__version__
        m.__version_info__ = JAX_API_VERSION
        _VERSION = m
    return _VERSION


def is_aliased() -> bool:
    """True while ``import jax`` resolves to xform."""
    return getattr(sys.modules.get("jax"), "__xform_alias__", False)


def alias_jax() -> types.ModuleType:
    """Install the alias (idempotent); returns the ``jax`` proxy module.

    Loads xform's runtime layer (the real jax runtime, jaxlib) first, then moves the
    real public ``jax`` modules aside so that later imports of ``jax`` and its public
    submodules find xform's."""
    global _finder
    if is_aliased():
        return sys.modules["jax"]
    from xform._src import lowering; import xform._src.lowering.runtime  # deferred: keeps `import xform` light
    lowering.runtime.load_jax_runtime()   # real jax runtime loaded before the swap
    for name in list(sys.modules):
        if (name == "jax" or name.startswith("jax.")) and not name.startswith(_KEEP_PREFIXES):
            _stash[name] = sys.modules.pop(name)
    _finder = _JaxAliasFinder()
    sys.meta_path.insert(0, _finder)
    sys.modules["jax"] = _proxy()
    global _orig_import
    if _orig_import is None:
        _orig_import = builtins.__import__
        builtins.__import__ = _aliased_import
    return sys.modules["jax"]


def unalias_jax() -> None:
    """Remove the alias and put the real jax modules back (modules imported under the
    alias keep the xform objects they bound)."""
    global _finder
    if _finder is not None and _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    _finder = None
    global _orig_import
    if _orig_import is not None:
        if builtins.__import__ is _aliased_import:
            builtins.__import__ = _orig_import
        _orig_import = None
    for name in list(sys.modules):
        if (name == "jax" or name.startswith("jax.")) and not name.startswith(_KEEP_PREFIXES):
            del sys.modules[name]
    sys.modules.update(_stash)
    _stash.clear()

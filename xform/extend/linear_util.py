"""``xform.extend.linear_util``: functions wrapped for composable transformations
(JAX's ``jax.extend.linear_util``).

A ``WrappedFun`` is a Python function plus a stack of transformations applied when it
is called (``call_wrapped``).  A transformation is written in one of JAX's two styles:

* generator style (``@transformation``, ``@transformation_with_aux``): the generator
  gets the static arguments and the call's arguments, yields ``(args, kwargs)`` for the
  inner function, receives its result and yields the final result (with an auxiliary
  value for ``_with_aux``, stored and read back through the returned thunk);
* function style (``@transformation2``, ``@transformation_with_aux2``): a function
  ``t(f, *static_args, *args, **kwargs)`` calling the inner function ``f`` itself
  (``_with_aux2`` also receives the store: ``t(f, store, *static, *args)``).

``xform.api_util.flatten_fun`` is such a transformation.  xform's own transformations
take plain Python callables, so a ``WrappedFun`` is mostly passed to them as
``wrapped.call_wrapped``.
"""
from __future__ import annotations
import weakref

__all__ = ["Store", "WrappedFun", "cache", "merge_linear_aux", "transformation",
           "transformation2", "transformation_with_aux", "transformation_with_aux2",
           "wrap_init"]

_EMPTY = object()


class Store:
    """A write-once box for a transformation's auxiliary output."""

    __slots__ = ("_val",)

    def __init__(self):
        self._val = _EMPTY

    def store(self, val):
        if self._val is not _EMPTY:
            raise RuntimeError("linear_util.Store: the value was already stored (a wrapped "
                               "function's auxiliary output is written once per call)")
        self._val = val

    def reset(self):
        self._val = _EMPTY

    @property
    def val(self):
        if self._val is _EMPTY:
            raise RuntimeError("linear_util.Store: no value stored yet (call the wrapped "
                               "function before reading its auxiliary output)")
        return self._val

    def __nonzero__(self):
        return self._val is not _EMPTY

    __bool__ = __nonzero__


class _Thunk:
    def __init__(self, store):
        self._store = store

    def __call__(self):
        return self._store.val


class WrappedFun:
    """``f`` with transformations; ``call_wrapped(*args, **kwargs)`` runs them."""

    __slots__ = ("f", "f_transformed", "params", "debug_info", "transforms", "__weakref__")

    def __init__(self, f, f_transformed, params, debug_info, transforms=()):
        self.f = f
        self.f_transformed = f_transformed
        self.params = params
        self.debug_info = debug_info
        self.transforms = tuple(transforms)

    @property
    def __name__(self):
        return getattr(self.f, "__name__", "<unnamed wrapped function>")

    def call_wrapped(self, *args, **kwargs):
        return self.f_transformed(*args, **kwargs)

    __call__ = call_wrapped

    def _then(self, outer, name):
        return WrappedFun(self.f, outer, self.params, self.debug_info,
                          self.transforms + (name,))

    def __repr__(self):
        return f"Wrapped function: {self.__name__} (transformations: {list(self.transforms)})"


def wrap_init(f, params=None, *, debug_info=None) -> WrappedFun:
    """``f`` as a ``WrappedFun`` (``params``: keyword arguments it is always called with)."""
    params = dict(params or {})
    if params:
        def call(*args, **kwargs):
            return f(*args, **dict(params, **kwargs))
    else:
        call = f
    return WrappedFun(f, call, params, debug_info)


def _run_generator(gen, static, inner, args, kwargs, store=None):
    g = gen(*static, *args, **kwargs)
    inner_args, inner_kwargs = next(g)
    ans = inner(*inner_args, **inner_kwargs)
    out = g.send(ans)
    if store is not None:
        out, aux = out
        store.store(aux)
    g.close()
    return out


def transformation(gen):
    """Generator-style transformation: ``gen(*static, *args)`` yields ``(args, kwargs)``
    for the inner call, then the result."""
    def apply(fun: WrappedFun, *static):
        inner = fun.f_transformed
        return fun._then(lambda *a, **k: _run_generator(gen, static, inner, a, k),
                         getattr(gen, "__name__", "transformation"))
    apply.__name__ = getattr(gen, "__name__", "transformation")
    apply.__wrapped__ = gen
    return apply


def transformation_with_aux(gen, use_eq_store=False):
    """Like ``transformation``; the generator's final yield is ``(result, aux)``.
    Returns ``(wrapped, aux_thunk)``."""
    def apply(fun: WrappedFun, *static):
        inner = fun.f_transformed
        store = Store()

        def call(*a, **k):
            store.reset()
            return _run_generator(gen, static, inner, a, k, store)
        return fun._then(call, getattr(gen, "__name__", "transformation")), _Thunk(store)
    apply.__name__ = getattr(gen, "__name__", "transformation_with_aux")
    apply.__wrapped__ = gen
    return apply


def transformation2(t):
    """Function-style transformation: ``t(f, *static, *args, **kwargs)``."""
    def apply(fun: WrappedFun, *static):
        inner = fun.f_transformed
        return fun._then(lambda *a, **k: t(inner, *static, *a, **k),
                         getattr(t, "__name__", "transformation2"))
    apply.__name__ = getattr(t, "__name__", "transformation2")
    apply.__wrapped__ = t
    return apply


def transformation_with_aux2(t, use_eq_store=False):
    """Function-style with an auxiliary output: ``t(f, store, *static, *args)`` calls
    ``store.store(aux)``.  Returns ``(wrapped, aux_thunk)``."""
    def apply(fun: WrappedFun, *static):
        inner = fun.f_transformed
        store = Store()

        def call(*a, **k):
            store.reset()
            return t(inner, store, *static, *a, **k)
        return fun._then(call, getattr(t, "__name__", "transformation")), _Thunk(store)
    apply.__name__ = getattr(t, "__name__", "transformation_with_aux2")
    apply.__wrapped__ = t
    return apply


def merge_linear_aux(aux1, aux2):
    """The auxiliary value of whichever of two alternative paths ran."""
    try:
        return aux1()
    except RuntimeError:
        return aux2()


def cache(call, *, explain=None):
    """Memoize ``call(fun: WrappedFun, *args)`` on the wrapped function's identity and the
    (hashable) arguments."""
    memo = weakref.WeakKeyDictionary()

    def cached(fun, *args):
        table = memo.setdefault(fun, {})
        if args not in table:
            table[args] = call(fun, *args)
        return table[args]
    cached.cache_clear = memo.clear
    return cached

"""``jit`` of functions that use mutable array references of their caller.

A function that takes ``Ref`` arguments or touches references it closes over is
*impure*; ``jit`` compiles the pure function behind it instead: the references'
values go in as extra arguments and their final values come out as extra results,
and after each call the results are written back into the references (JAX's state
discharge, done while tracing; see ``interpreters/refs.py``).  The pure function is
jitted by an ordinary ``JitWrapped`` (so caching, lowering and every transformation
of the ``jit`` primitive apply unchanged), one per layout of reference arguments; the
closed-over references are discovered while tracing and the function is traced again
when a new one shows up.
"""
from __future__ import annotations

from xform._src.interpreters import refs as _refs
from xform._src.interpreters.refs import Ref
from xform.tree_util import tree_flatten, tree_flatten_with_path, keystr


def _strong(v):
    """A reference's value as a jitted function sees it: a JAX reference's type is never
    weak, so neither is the value read from it (nor the value written back)."""
    a = getattr(v, "aval", None)
    if a is not None and a.weak_type:
        from xform._src.primitives.elementwise import convert_element_type_p
        v = convert_element_type_p.bind(v, new_dtype=a.dtype, weak_type=False)
    return v


def _typed(v, ref):
    """A reference's value as a jitted function first reads it: of the reference's type
    (weak if it was made from a Python scalar, as JAX's reference aval), whatever the
    weak type of what was last written."""
    a = getattr(v, "aval", None)
    if a is not None and a.weak_type != ref._aval.weak_type:
        from xform._src.primitives.elementwise import convert_element_type_p
        v = convert_element_type_p.bind(v, new_dtype=a.dtype, weak_type=ref._aval.weak_type)
    return v


class HasRefs(Exception):
    """A plain ``jit`` found references in its arguments or its trace (internal)."""


class NewClosureRefs(Exception):
    def __init__(self, refs):
        super().__init__("internal: jit body closes over new array references")
        self.refs = refs


def _arg_names(fun, args, kwargs):
    """A readable name per flat leaf of ``(args, kwargs)``, as JAX's messages name them."""
    import inspect
    try:
        params = [p for p in inspect.signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        base = params[i].name if i < len(params) else f"args[{i}]"
        names += [base + keystr(p) for p, _ in tree_flatten_with_path(a)[0]]
    for k in kwargs:
        names += [k + keystr(p) for p, _ in tree_flatten_with_path(kwargs[k])[0]]
    return names


def returned_ref_error(where, ref, origin=None):
    msg = (f"{where} returned a mutable array reference of type {_refs.ref_error(ref)}, "
           "but mutable array references cannot be returned.")
    if origin is None and ref._scope is not None and ref._created is not None:
        origin = f"created on line {ref._created}"
    if origin:
        msg += f"\n\nThe returned mutable array was {origin}."
    return ValueError(msg)


class RefJit:
    """The impure-function path of one ``JitWrapped``."""

    def __init__(self, wrapped):
        self.w = wrapped
        self.closure = []           # the references its traces closed over
        self.inner = {}

    def _where(self):
        from xform._jit import _fun_location
        return f"{self.w._name} at {_fun_location(self.w._fun)}"

    def _make_inner(self, treedef, positions, names, closure):
        from xform._jit import JitWrapped
        w = self.w
        fun = w._fun
        where = self._where()
        pos_set = dict(zip(positions, names or ()))

        def pure(clo_vals, *args, **kwargs):
            with _refs.Scope("jit", preset=zip(closure, clo_vals)) as scope:
                leaves, td = tree_flatten((args, kwargs))
                leaves_in = list(leaves)
                local = {}
                for i in positions:
                    r = Ref._make(leaves[i], leaves[i].aval)
                    local[i] = r
                    leaves[i] = r
                a, kw = td.unflatten(leaves)
                out = fun(*a, **kw)
                for o in tree_flatten(out)[0]:
                    if isinstance(o, Ref):
                        origin = next((f"passed in as the argument {pos_set[i]}"
                                       for i, r in local.items() if r is o), None)
                        raise returned_ref_error(f"function {where} traced for jit", o, origin)
                new = [r for r in scope.touched() if not any(r is c for c in closure)]
                if new:
                    raise NewClosureRefs(new)
                # a reference the function did not write is left as it was (None: the
                # output tree says which were written)
                finals = [None if local[i]._val is leaves_in[i] else _strong(local[i]._val)
                          for i in positions]
                clo_finals = [None if scope.final(r) is scope.inputs[id(r)]
                              else _strong(scope.final(r)) for r in closure]
            return out, finals, clo_finals

        pure.__name__ = w._name
        pure.__qualname__ = getattr(fun, "__qualname__", w._name)
        return JitWrapped(
            pure, static_argnums=tuple(i + 1 for i in w._static_argnums),
            static_argnames=tuple(w._static_argnames), keep_unused=w._keep_unused,
            device=w._device, backend=w._backend, inline=w._inline)

    def __call__(self, args, kwargs):
        leaves, treedef = tree_flatten((args, kwargs))
        positions = tuple(i for i, x in enumerate(leaves) if isinstance(x, Ref))
        ref_args = [leaves[i] for i in positions]
        names = None
        if positions:
            names = _arg_names(self.w._fun, args, kwargs)
            names = tuple(names[i] if i < len(names) else f"#{i}" for i in positions)
            seen = {}
            for r, n in zip(ref_args, names):
                if id(r) in seen:
                    raise ValueError(
                        "only one reference to a mutable array may be passed as an argument "
                        f"to a function, but when tracing {self._where()} for jit the "
                        f"mutable array reference of type {_refs.ref_error(r)} appeared at "
                        f"both {seen[id(r)]} and {n}.")
                seen[id(r)] = n
        while True:
            closure = list(self.closure)
            self._check_alias(closure, ref_args, names)
            key = (treedef, positions, names, len(closure))
            inner = self.inner.get(key)
            if inner is None:
                inner = self.inner[key] = self._make_inner(treedef, positions, names, closure)
            plain = list(leaves)
            for i, r in zip(positions, ref_args):
                plain[i] = _typed(_refs.read(r, "jit"), r)
            clo_vals = [_typed(_refs.read(r, "jit"), r) for r in closure]
            pargs, pkw = treedef.unflatten(plain)
            try:
                out, finals, clo_finals = inner(clo_vals, *pargs, **pkw)
            except NewClosureRefs as e:
                for r in e.refs:
                    if not any(r is c for c in self.closure):
                        self.closure.append(r)
                self.inner.clear()
                continue
            for r, v in zip(ref_args, finals):
                if v is not None:
                    _refs.write(r, v, "jit")
            for r, v in zip(closure, clo_finals):
                if v is not None:
                    _refs.write(r, v, "jit")
            return out

    def _check_alias(self, closure, ref_args, names):
        for r, n in zip(ref_args, names or ()):
            if any(r is c for c in closure):
                raise ValueError(
                    f"when tracing {self._where()} for jit, a mutable array reference of "
                    f"type {_refs.ref_error(r)} was both closed over and passed as the "
                    f"argument {n}")

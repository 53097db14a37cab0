"""Hypothesis strategies for testing code built on xform (requires ``hypothesis``).

Inputs::

    from hypothesis import given
    import xform.numpy as xnp
    from xform.testing import assert_allclose, strategies as xst

    @given(xst.arrays(dtype=xst.dtypes(kinds=("float",)), shape=xst.shapes(max_dims=2)))
    def test_abs_nonneg(x):                      # x: an xform Array (0-d and size-0 included)
        assert (xnp.abs(x) >= 0).all()

    @given(xst.broadcast_shapes(num_shapes=2).flatmap(
        lambda ss: st.tuples(*[xst.arrays(shape=s) for s in ss])))
    def test_add_commutes(xy):
        x, y = xy
        assert_allclose(x + y, y + x)

    @given(xst.pytrees(leaves=xst.arrays(shape=(2,))))   # nested tuples/lists/dicts
    def test_tree(t): ...

Transformation stacks::

    @given(xst.arrays(shape=xst.shapes(max_dims=2), min_value=-2, max_value=2),
           xst.transforms(max_depth=3))
    def test_jit_is_transparent(x, stack):       # repr(stack): e.g. 'jit∘vmap∘grad'
        f = lambda x: xnp.sin(x) * x
        assert_allclose(stack(f)(x), stack.reference(f)(x), atol=1e-5, rtol=1e-5)

``stack(f)`` applies the layers (outermost first) so the result is always defined
for ``f: Array[S] -> Array[any shape]`` and an input ``x`` of shape ``S``:

* ``grad``: ``x -> grad(lambda x: sum(g(x)))(x)`` (scalar output by summing);
* ``vmap``: ``x -> vmap(g)(stack([x, 0.75 x, 0.5 x]))`` (a batch made from x, so inner
  layers still see shape ``S``; scaling toward 0 stays inside intervals containing 0);
* ``jvp``:  ``x -> concat(ravel(g(x)), ravel(jvp(g, (x,), (t,))[1]))`` with a fixed
  random tangent ``t``;
* ``vjp``:  ``x -> concat(ravel(g(x)), ravel(vjp(g, x)[1](ct)[0]))`` with a fixed random
  cotangent ``ct`` (seeded from the stack's seed and the shape, so it is the same with
  and without ``jit``);
* ``jit``: ``jit(g)``.

``stack.reference(f)`` applies the same stack with every ``jit`` removed.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from xform._src.interpreters import core
from xform._src.interpreters.dtypes import canonicalize_dtype
from xform.testing._checks import _BF16, _is_inexact
from xform._src.interpreters.dtypes import finfo
import xform
import xform.numpy as xnp

__all__ = ["arrays", "dtypes", "shapes", "broadcast_shapes", "pytrees", "transforms",
           "TransformStack"]

_KINDS = {
    "float": ["float16", _BF16, "float32", "float64"],
    "int": ["int8", "int16", "int32", "int64"],
    "uint": ["uint8", "uint16", "uint32", "uint64"],
    "bool": ["bool"],
    "complex": ["complex64", "complex128"],
}


def _canonical_dtypes(kinds):
    out = []
    for k in kinds:
        if k not in _KINDS:
            raise ValueError(f"dtypes: unknown kind {k!r}; choose from {sorted(_KINDS)}")
        for d in _KINDS[k]:
            d = np.dtype(d)
            if canonicalize_dtype(d) == d and d not in out:   # 64-bit only with x64 enabled
                out.append(d)
    return out


def dtypes(kinds=("float",)):
    """A NumPy dtype of the given kinds ("float", "int", "uint", "bool", "complex").

    "float" includes float16 and bfloat16; 64-bit dtypes only while
    ``jax_enable_x64`` is on (checked when the strategy is drawn from).
    """
    if isinstance(kinds, str):
        kinds = (kinds,)
    kinds = tuple(kinds)
    _canonical_dtypes(kinds)     # validate now
    return st.deferred(lambda: st.sampled_from(_canonical_dtypes(kinds)))


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    """A shape tuple; sides may be 0 (size-0 arrays) unless ``min_side >= 1``."""
    if not 0 <= min_dims <= max_dims:
        raise ValueError(f"shapes: need 0 <= min_dims <= max_dims, got {min_dims}, {max_dims}")
    if not 0 <= min_side <= max_side:
        raise ValueError(f"shapes: need 0 <= min_side <= max_side, got {min_side}, {max_side}")
    return st.lists(st.integers(min_side, max_side), min_size=min_dims,
                    max_size=max_dims).map(tuple)


def broadcast_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=4):
    """A tuple of ``num_shapes`` mutually broadcast-compatible shapes (NumPy rules)."""
    if num_shapes < 1:
        raise ValueError(f"broadcast_shapes: num_shapes must be >= 1, got {num_shapes}")
    return hnp.mutually_broadcastable_shapes(
        num_shapes=num_shapes, min_dims=min_dims, max_dims=max_dims, min_side=min_side,
        max_side=max_side).map(lambda b: tuple(tuple(s) for s in b.input_shapes))


def _as_strategy(x):
    return x if isinstance(x, st.SearchStrategy) else st.just(x)


def _float_bounds(dtype, min_value, max_value, finite):
    fmax = float(finfo(dtype).max) if dtype.kind != "c" else \
        float(finfo(np.float32 if dtype == np.complex64 else np.float64).max)
    lo = -10.0 if min_value is None and finite else min_value
    hi = 10.0 if max_value is None and finite else max_value
    lo = None if lo is None else max(float(lo), -fmax)
    hi = None if hi is None else min(float(hi), fmax)
    return lo, hi


def _elements_for(dtype, min_value, max_value, finite):
    """A float64/int64/bool element strategy whose values fit ``dtype``."""
    if dtype == np.bool_:
        return np.dtype(np.bool_), st.booleans()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo = max(info.min, -100 if min_value is None else int(min_value))
        hi = min(info.max, 100 if max_value is None else int(max_value))
        wide = np.dtype(np.uint64) if dtype == np.uint64 else np.dtype(np.int64)
        return wide, st.integers(lo, hi)
    lo, hi = _float_bounds(dtype, min_value, max_value, finite)
    floats = st.floats(lo, hi, allow_nan=not finite, allow_infinity=not finite, width=64)
    if dtype.kind == "c":
        return np.dtype(np.complex128), st.builds(complex, floats, floats)
    return np.dtype(np.float64), floats


def arrays(dtype=np.float32, shape=None, elements=None, *, finite=True, min_value=None,
           max_value=None):
    """An xform ``Array`` of ``dtype`` (a dtype or a strategy, e.g. ``dtypes()``) and
    ``shape`` (a tuple or a strategy; default ``shapes()``, which includes 0-d and
    size-0 shapes).

    Floats are drawn in [-10, 10] unless ``min_value``/``max_value`` say otherwise;
    ``finite=False`` allows NaN and infinities.  Values are generated in float64 (or
    int64) and converted, so float16/bfloat16 work; a value rounds to the nearest
    representable one.  ``elements`` overrides the element strategy (values must fit
    the dtype).
    """
    dtype_st = _as_strategy(dtype)
    shape_st = shapes() if shape is None else _as_strategy(shape)

    @st.composite
    def draw_array(draw):
        dt = np.dtype(draw(dtype_st))
        if canonicalize_dtype(dt) != dt:
            raise ValueError(f"arrays: dtype {dt.name} is not available while jax_enable_x64 "
                             f"is off (it would become {canonicalize_dtype(dt).name}); enable "
                             "x64 or ask for a 32-bit dtype.")
        shp = tuple(draw(shape_st))
        wide, elems = _elements_for(dt, min_value, max_value, finite)
        if elements is not None:
            elems = elements
        with np.errstate(over="ignore", invalid="ignore"):
            v = draw(hnp.arrays(wide, shp, elements=elems)).astype(dt)
        if finite and _is_inexact(dt):
            v = np.where(np.isfinite(v.astype(np.complex128 if dt.kind == "c" else
                                              np.float64)), v, np.zeros((), dt)).astype(dt)
        return core.Array(np.array(v, order="C"))
    return draw_array()


def pytrees(leaves=None, max_leaves=6):
    """Nested tuples, lists and dicts (string keys) of ``leaves`` (default ``arrays()``)."""
    leaves = arrays(shape=shapes(max_dims=2, max_side=3)) if leaves is None else leaves
    keys = st.text(alphabet="abcdefgh", min_size=1, max_size=3)

    def extend(children):
        return (st.lists(children, max_size=3).map(tuple) | st.lists(children, max_size=3)
                | st.dictionaries(keys, children, max_size=3))
    return st.recursive(leaves, extend, max_leaves=max_leaves)


# ----------------------------------------------------------------- transformation stacks

_LAYERS = ("jit", "grad", "vmap", "jvp", "vjp")
_VMAP_SCALES = (1.0, 0.75, 0.5)


def _fixed_random(seed, k, shape, dtype):
    """A deterministic random array for layer ``k`` (same with or without jit)."""
    rng = np.random.RandomState((seed * 1000003 + k * 7919 + 17 * len(shape)
                                 + int(np.prod(shape, dtype=np.int64))) % (2 ** 32))
    return rng.standard_normal(shape).astype(dtype)


def _layer(name, k, seed):

    if name == "jit":
        return xform.jit
    if name == "grad":
        return lambda g: xform.grad(lambda x: xnp.sum(g(x)))
    if name == "vmap":
        def vmap_layer(g):
            def h(x):
                xs = xnp.stack([x * xnp.asarray(s, x.dtype) for s in _VMAP_SCALES])
                return xform.vmap(g)(xs)
            return h
        return vmap_layer
    if name == "jvp":
        def jvp_layer(g):
            def h(x):
                t = xnp.asarray(_fixed_random(seed, k, x.shape, x.dtype))
                out, tout = xform.jvp(g, (x,), (t,))
                return xnp.concatenate([xnp.ravel(out), xnp.ravel(tout)])
            return h
        return jvp_layer
    if name == "vjp":
        def vjp_layer(g):
            def h(x):
                out, fn = xform.vjp(g, x)
                ct = xnp.asarray(_fixed_random(seed, k, out.shape, out.dtype))
                return xnp.concatenate([xnp.ravel(out), xnp.ravel(fn(ct)[0])])
            return h
        return vjp_layer
    raise ValueError(f"transforms: unknown transformation {name!r}; choose from {_LAYERS}")


class TransformStack:
    """A stack of transformations, outermost first: ``TransformStack(("jit", "grad"))``
    is ``jit∘grad``.  ``stack(f)`` applies it; ``stack.reference(f)`` applies it without
    the ``jit`` layers."""

    def __init__(self, layers, seed=0):
        layers = tuple(layers)
        for name in layers:
            if name not in _LAYERS:
                raise ValueError(f"TransformStack: unknown transformation {name!r}; choose "
                                 f"from {_LAYERS}")
        self.layers = layers
        self.seed = int(seed)

    def _apply(self, f, skip_jit):
        g = f
        # innermost layer (the last) applies first; k numbers layers from the inside
        for k, name in enumerate(reversed(self.layers)):
            if skip_jit and name == "jit":
                continue
            g = _layer(name, k, self.seed)(g)
        return g

    def __call__(self, f):
        return self._apply(f, skip_jit=False)

    def reference(self, f):
        return self._apply(f, skip_jit=True)

    @property
    def has_jit(self) -> bool:
        return "jit" in self.layers

    def without_jit(self) -> "TransformStack":
        return TransformStack([n for n in self.layers if n != "jit"], self.seed)

    def __repr__(self):
        return "∘".join(self.layers) if self.layers else "id"

    def __eq__(self, other):
        return isinstance(other, TransformStack) and (self.layers, self.seed) == \
            (other.layers, other.seed)

    def __hash__(self):
        return hash((self.layers, self.seed))


def transforms(max_depth=3, allowed=_LAYERS, min_depth=0):
    """A random ``TransformStack`` of ``min_depth..max_depth`` layers from ``allowed``
    (for functions of one floating-point array; see the module docstring)."""
    allowed = tuple(allowed)
    bad = [a for a in allowed if a not in _LAYERS]
    if bad or not allowed:
        raise ValueError(f"transforms: allowed must be a non-empty subset of {_LAYERS}, "
                         f"got {allowed}")
    if not 0 <= min_depth <= max_depth:
        raise ValueError(f"transforms: need 0 <= min_depth <= max_depth, got {min_depth}, "
                         f"{max_depth}")
    return st.builds(TransformStack,
                     st.lists(st.sampled_from(allowed), min_size=min_depth, max_size=max_depth),
                     st.integers(0, 2 ** 16))

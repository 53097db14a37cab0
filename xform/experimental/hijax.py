"""``xform.experimental.hijax`` (JAX's ``jax.experimental.hijax``): user-defined
high-level types and primitives.

- ``HiType`` (immutable) and ``MutableHiType`` (mutable, with quasi-dynamic data: a
  layout that can change, e.g. what a ``Box`` holds) are abstract values of Python
  objects made of arrays; ``register_hitype(cls, typeof)`` makes ``cls``'s instances
  high-level values.  A type says how its values lower to arrays (``lo_ty``/
  ``lower_val``/``raise_val``; ``lo_ty_qdd``/``read_loval``/``new_from_loval``/
  ``update_from_loval``) and its tangent type (``to_tangent_aval``, and ``vspace_zero``
  for a tangent type).  ``aval_method``/``aval_property`` expose methods of the type on
  the tracers of its values.
- ``HiPrimitive``: an operation on such values; ``to_lojax`` gives its meaning with
  ordinary operations, ``jvp`` its derivative.
- ``Box``/``new_box``/``box_get``/``box_set``: a mutable box of any pytree of arrays,
  built on the above (JAX's ``jax._src.hijax`` box).

How xform runs them (effects discharged while tracing, no high-level value in a staged
program) is described in the engine's ``interpreters/hijax.py``; what is supported and
what is not is listed in docs/semantics.md ("High-level (hijax) types and primitives").
``AbstractValue``, ``ShapedArray``, ``Zero``, ``instantiate_zeros`` and
``is_undefined_primal`` are xform's own (the same objects as in ``xform.core`` and
``xform.interpreters.ad``).
"""
from __future__ import annotations

import dataclasses
import itertools

from xform.core import AbstractValue, ShapedArray, pytype_aval_mappings
from xform.interpreters.ad import Zero, instantiate_zeros, is_undefined_primal
from xform.ref import AbstractRef
from xform._src.interpreters import hijax as _hj
from xform._src.interpreters.hijax import (HiPrimitive, aval_method, aval_property,
                                           cur_qdd, hi_aval as _hi_aval)
from xform.tree_util import tree_flatten, tree_unflatten, tree_leaves

# JAX's public names (``Box``, ``BoxTy``, ``new_box``, ``box_get``, ``box_set``,
# ``box_effect``, ``MappingSpec``, ``Ty`` and ``cur_qdd`` are here too, as in JAX's
# ``jax._src.hijax``)
__all__ = ["AbstractRef", "AbstractValue", "AvalMutableQDD", "AvalQDD", "HiPrimitive",
           "HiPspec", "HiType", "MutableHiType", "ShapedArray", "TransformedRef",
           "VJPHiPrimitive", "Zero", "aval_method", "aval_property",
           "control_flow_allowed_effects", "instantiate_zeros", "is_undefined_primal",
           "register_hitype"]

Ty = AbstractValue


def _must(cls, what):
    raise NotImplementedError(f"high-level type {cls.__name__} must define {what} "
                              "(jax.experimental.hijax)")


class HiType(AbstractValue):
    """Base of user-defined immutable high-level abstract values (JAX's ``HiType``).
    Subclasses define ``__hash__``/``__eq__``, ``lo_ty``, ``lower_val``, ``raise_val``
    and, for differentiation, ``to_tangent_aval`` (and ``vspace_zero``/``vspace_add``
    when the type is a tangent type)."""

    is_high = True
    has_qdd = False

    def lo_ty(self):
        _must(type(self), "lo_ty (the list of array types it lowers to)")

    def lower_val(self, hi_val):
        _must(type(self), "lower_val (a value's list of arrays)")

    def raise_val(self, *lo_vals):
        _must(type(self), "raise_val (a value from its arrays)")

    def to_tangent_aval(self):
        _must(type(self), "to_tangent_aval (its tangent type) to be differentiated")

    def to_ct_aval(self):
        return self.to_tangent_aval()

    def vspace_zero(self):
        _must(type(self), "vspace_zero (the zero of a tangent type)")

    def vspace_add(self, x, y):
        _must(type(self), "vspace_add (the sum of two tangents)")

    def dec_rank(self, size, spec):
        _must(type(self), "dec_rank (vmap over values of a high-level type is not "
              "supported by xform)")

    def inc_rank(self, size, spec):
        _must(type(self), "inc_rank (vmap over values of a high-level type is not "
              "supported by xform)")

    def leading_axis_spec(self):
        _must(type(self), "leading_axis_spec")

    def shard(self, mesh, manual_axes, check_vma, spec):
        _must(type(self), "shard (shard_map of high-level values is not supported by "
              "xform)")

    def unshard(self, mesh, check_vma, spec):
        _must(type(self), "unshard (shard_map of high-level values is not supported by "
              "xform)")

    def str_short(self, short_dtypes=False, **_):
        return type(self).__name__

    def __str__(self):
        return self.str_short()


class MutableHiType(AbstractValue):
    """Base of user-defined mutable high-level abstract values (JAX's
    ``MutableHiType``): a value's current layout is its quasi-dynamic data
    (``cur_qdd``); subclasses define ``lo_ty_qdd``, ``new_from_loval``, ``read_loval``,
    ``update_from_loval`` and ``to_tangent_aval``."""

    is_high = True
    has_qdd = True
    is_writer = False
    type_state = aval_method(cur_qdd)

    def lo_ty_qdd(self, state, /):
        _must(type(self), "lo_ty_qdd (the array types of a layout)")

    def lo_ty(self):
        raise TypeError(f"{type(self).__name__} is a mutable high-level type: its array "
                        "types depend on its layout, use lo_ty_qdd")

    def new_from_loval(self, state, /, *vals):
        _must(type(self), "new_from_loval (a fresh value from its arrays)")

    def read_loval(self, state, val, /):
        _must(type(self), "read_loval (a value's arrays)")

    def read_loval_in(self, state, val, /):
        return self.read_loval(state, val)

    def update_from_loval(self, state, val, /, *lo_vals):
        _must(type(self), "update_from_loval (set a value from arrays)")

    def to_tangent_aval(self):
        _must(type(self), "to_tangent_aval (its tangent type) to be differentiated")

    def to_ct_aval(self):
        return self.to_tangent_aval()

    def str_short(self, short_dtypes=False, **_):
        return type(self).__name__

    def __str__(self):
        return self.str_short()


class QuasiDynamicData:
    """Base of the layouts of mutable high-level values (JAX's ``QuasiDynamicData``)."""


@dataclasses.dataclass(frozen=True)
class AvalQDD:
    """A mutable high-level type with a layout (JAX's ``AvalQDD``)."""

    aval: object
    qdd: object
    is_high = True
    has_qdd = True

    def lo_ty(self):
        return self.aval.lo_ty_qdd(self.qdd)

    def read_loval(self, val):
        return self.aval.read_loval(self.qdd, val)

    def new_from_loval(self, *lovals):
        return self.aval.new_from_loval(self.qdd, *lovals)

    def to_tangent_aval(self):
        return AvalQDD(self.aval.to_tangent_aval(),
                       self.qdd and self.qdd.to_tangent_qdd())


class MutableQuasiDynamicData:
    """A layout that a shape rule may update (JAX's ``MutableQuasiDynamicData``)."""

    def __init__(self, val):
        self.init_val = val
        self.cur_val = val

    def update(self, val):
        self.cur_val = val


@dataclasses.dataclass(frozen=True)
class AvalMutableQDD:
    """A mutable high-level type with an updatable layout (JAX's ``AvalMutableQDD``)."""

    aval: object
    mutable_qdd: MutableQuasiDynamicData


def register_hitype(cls, to_aval):
    """Makes instances of ``cls`` high-level values whose type is ``to_aval(x)`` (a
    ``HiType`` or ``MutableHiType``) (JAX's ``register_hitype``)."""
    pytype_aval_mappings[cls] = to_aval


class MappingSpec:
    """How a high-level value is mapped by vmap/scan (JAX's ``MappingSpec``)."""


class HiPspec:
    """A partition spec of a high-level value for shard_map (JAX's ``HiPspec``): a
    base class; xform has no shard_map of high-level values."""

    def to_lo(self):
        raise NotImplementedError(f"{type(self).__name__}.to_lo: shard_map of high-level "
                                  "values is not supported by xform")

    def to_tangent_spec(self):
        raise NotImplementedError(f"{type(self).__name__}.to_tangent_spec: shard_map of "
                                  "high-level values is not supported by xform")

    to_ct_spec = to_tangent_spec


class GradAccum:
    """Where a ``VJPHiPrimitive``'s ``vjp_bwd`` accumulates the cotangent of one input
    (``accum(v)`` adds ``v``; JAX's ``ad.GradAccum``)."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = None

    def accum(self, v):
        self.value = v if self.value is None else self.value + v


def _overrides(obj, name):
    return getattr(type(obj), name) is not getattr(VJPHiPrimitive, name)


class VJPHiPrimitive:
    """JAX's new-style high-level primitive: a subclass's ``__init__`` sets ``in_avals``,
    ``out_aval`` (pytrees of types) and ``params`` and calls ``super().__init__()``; it
    defines ``expand`` (its meaning in ordinary operations) and, for differentiation,
    ``vjp_fwd``/``vjp_bwd`` (or ``vjp_bwd_retval``) and/or ``jvp``.  Calling an instance
    applies it.  xform applies it as ``expand`` wrapped in ``custom_vjp`` (reverse mode:
    ``vjp_fwd``, told which inputs are perturbed, and ``vjp_bwd``) or ``custom_jvp`` (forward mode, and reverse mode when it
    has no ``vjp_fwd``); under ``vmap`` its ``batch`` rule runs.  ``batch_dim_rule``,
    ``transpose``, ``lin``/``linearized``, ``dce`` and ``remat`` are not consulted, and
    only array inputs and outputs can be differentiated."""

    effects = frozenset()

    def __init__(self):
        for attr in ("in_avals", "out_aval", "params"):
            if not hasattr(self, attr):
                raise AttributeError(f"subclass __init__ should set `self.{attr}`")
        if _overrides(self, "vjp_bwd") and _overrides(self, "vjp_bwd_retval"):
            raise AttributeError(f"subclass {type(self)} should not override both "
                                 "`vjp_bwd` and `vjp_bwd_retval`")
        self.in_avals_flat, self.in_tree = tree_flatten(self.in_avals)
        self.out_avals_flat, self.out_tree = tree_flatten(self.out_aval)
        self.__dict__.update(self.params)
        self.check(*self.in_avals)

    def expand(self, *args):
        raise NotImplementedError(f"subclass {type(self)} must implement `expand`")

    def vjp_fwd(self, nzs_in, /, *args):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must "
                                  "implement `vjp_fwd`")

    def vjp_bwd(self, res, outgrad, /, *arg_accums):
        grads = self.vjp_bwd_retval(res, outgrad)
        accs = tree_leaves(arg_accums, is_leaf=lambda a: isinstance(a, GradAccum))
        gs = tree_leaves(grads, is_leaf=lambda g: g is None)
        for acc, g in zip(accs, gs):
            if isinstance(acc, GradAccum) and g is not None:
                acc.accum(g)

    def vjp_bwd_retval(self, res, outgrad, /):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must "
                                  "implement `vjp_bwd` or `vjp_bwd_retval`")

    def jvp(self, primals, tangents):
        raise NotImplementedError(f"for jvp support, subclass {type(self)} must "
                                  "implement `jvp`")

    def check(self, *arg_tys):
        return None

    def __repr__(self):
        return f"{type(self).__name__}[{self.params}]"

    def __hash__(self):
        return hash((type(self).__name__, tuple(self.params.items()), self.effects))

    def __eq__(self, other):
        return (type(self) is type(other) and self.params == other.params
                and self.effects == other.effects)

    # -- application
    def __call__(self, *args):
        leaves, tree = tree_flatten(args)
        if tree != self.in_tree:
            raise TypeError(f"{self!r}: arguments of structure {tree}, expected "
                            f"{self.in_tree}")
        if any(_hi_aval(x) is not None for x in leaves) or \
                any(getattr(a, "is_high", False) for a in self.out_avals_flat):
            # high-level values: applied as its expansion (not differentiable here)
            if _differentiating(leaves) is not None:
                raise NotImplementedError(
                    f"differentiating {self!r} with high-level inputs or outputs: xform "
                    "differentiates VJPHiPrimitives of arrays only")
            return self.expand(*args)
        batched = self._batch(leaves)
        if batched is not None:
            return batched
        mode = _differentiating(leaves)
        has_fwd, has_jvp = _overrides(self, "vjp_fwd"), _overrides(self, "jvp")
        if has_jvp and (mode == "forward" or (mode is None and has_fwd) or not has_fwd):
            out = self._as_custom_jvp()(*leaves)
        elif has_fwd:
            out = self._as_custom_vjp()(*leaves)
        else:
            return self.expand(*args)
        return tree_unflatten(self.out_tree, list(out))

    def batch(self, axis_data, args, dims):
        raise NotImplementedError(f"for vmap support, subclass {type(self)} must "
                                  "implement `batch` (xform does not implement "
                                  "`batch_dim_rule`)")

    def _batch(self, leaves):
        """Under vmap with a batched argument: the subclass's ``batch`` rule (None when
        no argument is batched here)."""
        from xform._src.interpreters import batching, core as _core
        t = _core.current_trace()
        if not isinstance(t, batching.BatchTrace):
            return None
        vals, dims = zip(*[t.unpack(x) for x in leaves]) if leaves else ((), ())
        if all(d is None for d in dims):
            return None
        with _core.set_current_trace(t.parent):
            out, out_dims = self.batch(t.axis_data, tree_unflatten(self.in_tree, vals),
                                       tree_unflatten(self.in_tree, dims))
        outs = _leaves_as(self.out_tree, out, "batch output")
        ds = tree_leaves(out_dims, is_leaf=lambda d: d is None)
        if len(ds) == 1 and len(outs) != 1:
            ds = ds * len(outs)
        return tree_unflatten(self.out_tree, [t.wrap(o, d) for o, d in zip(outs, ds)])

    def _flat_expand(self, *leaves):
        out = self.expand(*tree_unflatten(self.in_tree, leaves))
        return tuple(_leaves_as(self.out_tree, out, "expand"))

    def _as_custom_jvp(self):
        from xform._custom_derivatives import custom_jvp
        f = custom_jvp(self._flat_expand)

        def rule(primals, tangents):
            p_out, t_out = self.jvp(tree_unflatten(self.in_tree, primals),
                                    tree_unflatten(self.in_tree, tangents))
            return (tuple(_leaves_as(self.out_tree, p_out, "jvp primal output")),
                    tuple(instantiate_zeros(t) for t in
                          _leaves_as(self.out_tree, t_out, "jvp tangent output")))
        f.defjvp(rule)
        return f

    def _as_custom_vjp(self):
        from xform._custom_derivatives import SymbolicZero, custom_vjp
        f = custom_vjp(self._flat_expand)
        n = len(self.in_avals_flat)

        def fwd(*primals):      # (symbolic zeros: each a CustomVJPPrimal(value, perturbed))
            nzs = tree_unflatten(self.in_tree, [bool(p.perturbed) for p in primals])
            leaves = [p.value for p in primals]
            out, res, *_ = self.vjp_fwd(nzs, *tree_unflatten(self.in_tree, leaves))
            return tuple(_leaves_as(self.out_tree, out, "vjp_fwd primal output")), res

        def bwd(res, g):
            g = [c.instantiate() if isinstance(c, SymbolicZero) else c for c in g]
            accs = [GradAccum() for _ in range(n)]
            self.vjp_bwd(res, tree_unflatten(self.out_tree, list(g)),
                         *tree_unflatten(self.in_tree, accs))
            return tuple(a.value if a.value is not None else
                         instantiate_zeros(Zero(_tangent_type(av)))
                         for a, av in zip(accs, self.in_avals_flat))
        f.defvjp(fwd, bwd, symbolic_zeros=True)   # fwd learns which inputs are perturbed
        return f


def _tangent_type(aval):
    t = getattr(aval, "to_tangent_aval", None)
    return t() if t is not None else aval


def _leaves_as(tree, value, what):
    leaves, t = tree_flatten(value)
    if t != tree:
        raise TypeError(f"VJPHiPrimitive {what}: structure {t}, expected {tree}")
    return leaves


def _differentiating(leaves):
    """'reverse' (grad/vjp/linearize), 'forward' (jvp) or None: whether the current
    trace differentiates one of ``leaves``."""
    from xform._src.interpreters import ad, core as _core
    t = _core.current_trace()
    if not isinstance(t, ad.JVPTrace):
        return None
    mine = [x for x in leaves if isinstance(x, ad.JVPTracer) and x._trace is t]
    if not mine:
        return None
    if any(isinstance(x.tangent, _core.Tracer) and isinstance(x.tangent._trace,
                                                                ad.LinearizeTrace)
           for x in mine):
        return "reverse"
    return "forward"


class TransformedRef:
    """JAX's ``TransformedRef`` (a view of an array reference): xform's references have
    no views; construction raises."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "jax.experimental.hijax.TransformedRef (views of array references) is not "
            "implemented by xform: index the reference (ref[idx]) instead")


class _EffectTypeSet:
    """A set of effect types (JAX's ``EffectTypeSet``): ``add_type``/``contains``."""

    def __init__(self):
        self._types = set()

    def add_type(self, effect_type):
        self._types.add(effect_type)

    def contains(self, eff):
        return any(isinstance(eff, t) for t in self._types)

    def filter_in(self, effects):
        return [e for e in effects if self.contains(e)]

    def filter_not_in(self, effects):
        return [e for e in effects if not self.contains(e)]


# The effect types JAX lets into control-flow bodies.  xform discharges high-level
# effects while tracing, so any of them may reach a body; this is a registry only.
control_flow_allowed_effects = _EffectTypeSet()


# ------------------------------------------------------------------------------ Box

class BoxEffect:
    """The effect of the box primitives (JAX's ``BoxEffect``)."""


box_effect = BoxEffect()


@dataclasses.dataclass(frozen=True)
class BoxTypeState(QuasiDynamicData):
    """A box's layout: the types of its leaves and its pytree structure."""

    leaf_avals: tuple
    treedef: object

    def to_tangent_qdd(self):
        return BoxTypeState(tuple(a.to_tangent_aval() for a in self.leaf_avals),
                            self.treedef)

    def normalize(self):
        return BoxTypeState(tuple(a.normalize() for a in self.leaf_avals), self.treedef)


def _split_lo(leaf_avals, lo_vals):
    it = iter(lo_vals)
    out = [t.raise_val(*itertools.islice(it, len(t.lo_ty()))) for t in leaf_avals]
    rest = next(it, None)
    if rest is not None:
        raise ValueError("box: more arrays than its layout holds")
    return out


def new_box():
    """A new empty box."""
    return new_box_p.bind(treedef=tree_flatten(None)[1])


def box_get(box):
    """The pytree a box holds."""
    state = cur_qdd(box)
    return tree_unflatten(state.treedef, box_get_p.bind(box, avals=tuple(state.leaf_avals)))


def box_set(box, val):
    """Store the pytree ``val`` in ``box`` (its type may change)."""
    leaves, treedef = tree_flatten(val)
    box_set_p.bind(box, *leaves, treedef=treedef)


class BoxTy(MutableHiType):
    """The type of every box (its layout is its ``BoxTypeState``)."""

    get = aval_method(box_get)
    set = aval_method(box_set)

    def __hash__(self):
        return hash(BoxTy)

    def __eq__(self, other):
        return isinstance(other, BoxTy)

    def str_short(self, short_dtypes=False, **_):
        return "BoxTy"

    def lo_ty_qdd(self, state):
        return [lt for t in state.leaf_avals for lt in t.lo_ty()]

    def new_from_loval(self, state, *lo_vals):
        return Box._new(tree_unflatten(state.treedef, _split_lo(state.leaf_avals, lo_vals)))

    def read_loval(self, state, box):
        leaves, treedef = tree_flatten(box_get(box))
        if treedef != state.treedef:
            raise TypeError(f"box holds {treedef}, expected {state.treedef}")
        return [lv for t, v in zip(state.leaf_avals, leaves) for lv in t.lower_val(v)]

    def update_from_loval(self, state, box, *lo_vals):
        box_set(box, tree_unflatten(state.treedef, _split_lo(state.leaf_avals, lo_vals)))

    def to_tangent_aval(self):
        return BoxTy()


class _BoxMeta(type):
    def __instancecheck__(cls, x):
        if super().__instancecheck__(x):
            return True
        from xform.core import Tracer
        return isinstance(x, Tracer) and isinstance(getattr(x, "aval", None), BoxTy)


class Box(metaclass=_BoxMeta):
    """A mutable box holding a pytree of arrays (JAX's ``jax._src.hijax.Box``):
    ``Box(x)``, ``box.get()``, ``box.set(y)``."""

    def __new__(cls, init_val=None):
        box = new_box()
        box.set(init_val)
        return box

    @classmethod
    def _new(cls, init_val):
        b = object.__new__(cls)
        b._val = init_val
        return b

    def get(self):
        return box_get(self)

    def set(self, val):
        box_set(self, val)

    def cur_qdd(self):
        return self.type_state()

    @property
    def ty(self):
        return BoxTy()

    def type_state(self):
        from xform._src.interpreters import core
        leaves, treedef = tree_flatten(self._val)
        return BoxTypeState(tuple(core.get_aval(x) for x in leaves), treedef)

    def __repr__(self):
        return f"Box({self._val!r})"


register_hitype(Box, lambda b: b.ty)


class NewBox(HiPrimitive):
    def to_lojax(self, *, treedef):
        return Box._new(None)

    def jvp(self, primals, tangents, *, treedef):
        return new_box_p.bind(treedef=treedef), new_box_p.bind(treedef=treedef)


class BoxSet(HiPrimitive):
    multiple_results = True

    def to_lojax(self, box, *leaves, treedef):
        box._val = tree_unflatten(treedef, leaves)
        return []

    def jvp(self, primals, tangents, *, treedef):
        box, *vals = primals
        box_dot, *val_dots = tangents
        if type(box_dot) is Zero:
            raise Exception("can't differentiate Box.set operation, "
                            "did you forget jax.lax.stop_gradient?")
        box_set_p.bind(box, *vals, treedef=treedef)
        box_set_p.bind(box_dot, *[instantiate_zeros(t) for t in val_dots],
                       treedef=treedef)
        return [], []


class BoxGet(HiPrimitive):
    multiple_results = True

    def to_lojax(self, box, *, avals):
        return tree_leaves(box._val)

    def jvp(self, primals, tangents, *, avals):
        (box,), (box_dot,) = primals, tangents
        if type(box_dot) is Zero:
            return box_get_p.bind(box, avals=avals), [Zero(a.to_tangent_aval())
                                                      for a in avals]
        return (box_get_p.bind(box, avals=avals),
                box_get_p.bind(box_dot, avals=tuple(a.to_tangent_aval() for a in avals)))


new_box_p = NewBox("new_box")
box_set_p = BoxSet("box_set")
box_get_p = BoxGet("box_get")


# ----------------------------------------- HiPrimitives staged with their jvp rule

def _staged_bind(prim, args, params):
    """A ``HiPrimitive`` with a ``jvp`` rule bound while a program is staged (a ``jit`` or
    loop body): its expansion, as a ``custom_jvp`` whose rule is the primitive's, so that
    differentiating the program later (``grad(jit(f))``) uses the rule as JAX does.  For
    high-level operands or results the rule cannot be expressed over arrays: the
    expansion is staged with a rule that refuses."""
    from xform._custom_derivatives import custom_jvp
    from xform._src.interpreters import core as _core
    if not args or any(_hj.hi_type(a) is not None and isinstance(a, _core.Tracer)
                       for a in args):
        return NotImplemented
    # only a primitive whose results are arrays or immutable values (its shape rule
    # says): one that makes a mutable object is plumbing, expanded as it is
    try:
        res = prim.abstract_eval(*[_hj.hi_type(a) or _core.get_aval(a) for a in args],
                                 **params)
    except Exception:
        return NotImplemented
    if isinstance(res, tuple) and len(res) == 2 and isinstance(res[1], (set, frozenset)):
        res = res[0]
    outs = list(res) if prim.multiple_results else [res]
    if any(getattr(a, "has_qdd", False) for a in outs):
        return NotImplemented
    lo, layout = _hj.lower_operands(list(args), f"high-level primitive '{prim.name}'")
    hi_in = any(sp is not None for sp in layout)
    cell = {}

    def primal(*lo_args):
        outs = prim.to_lojax(*_hj.raise_operands(lo_args, layout), **params)
        outs = list(outs) if prim.multiple_results else [outs]
        o_lo, o_layout = _hj.lower_operands(outs, f"high-level primitive '{prim.name}'")
        cell["layout"] = o_layout
        return tuple(o_lo)

    def rule(primals, tangents):
        if hi_in or any(sp is not None for sp in cell["layout"]):
            raise NotImplementedError(
                f"differentiating the high-level primitive '{prim.name}' with high-level "
                "operands or results inside a staged function (jit, a loop or cond body) "
                "from outside it: xform cannot apply its jvp rule there; differentiate "
                "inside (jit(grad(f)) instead of grad(jit(f)))")
        p_out, t_out = prim.jvp(list(primals), list(tangents), **params)
        if not prim.multiple_results:
            p_out, t_out = [p_out], [t_out]
        return tuple(p_out), tuple(instantiate_zeros(t) for t in t_out)

    f = custom_jvp(primal)
    f.defjvp(rule)
    outs = _hj.raise_operands(list(f(*lo)), cell["layout"])
    return outs if prim.multiple_results else outs[0]


_hj.staged_hook = _staged_bind

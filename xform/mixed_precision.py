"""``xform.mixed_precision``: mixed-precision training with the API of DeepMind's ``jmp``.

* ``Policy(param_dtype, compute_dtype, output_dtype)``: ``cast_to_param`` /
  ``cast_to_compute`` / ``cast_to_output`` cast every floating-point leaf of a pytree
  (integer, bool and non-array leaves are left alone).  ``get_policy`` parses
  ``"params=float32,compute=bfloat16,output=float32"`` (also ``p=f32,c=bf16,o=f32``,
  or a single dtype such as ``"half"`` for all three).
* Loss scaling, so that small float16 gradients do not underflow: ``NoOpLossScale``,
  ``StaticLossScale(s)`` and ``DynamicLossScale(s, period=2000, factor=2,
  min_loss_scale=1)``.  ``scale(loss)`` before differentiating, ``unscale(grads)``
  after; ``adjust(all_finite(grads))`` returns the next loss scale: a step with
  non-finite gradients halves it (and the step should be skipped, e.g. with
  ``select_tree``), ``period`` finite steps in a row double it.
* ``all_finite(tree)``: one boolean scalar; ``select_tree(pred, a, b)``: leafwise
  ``where``.

Matrix products of half-precision operands can keep float32 accumulation with
``preferred_element_type=jnp.float32`` (``jnp.dot``/``matmul``/``einsum``,
``lax.dot_general``); XLA's CPU and GPU kernels accumulate half precision in float32.
"""
from __future__ import annotations

import dataclasses

import numpy as np
from xform import numpy as jnp
from xform._src.interpreters import dtypes
from xform.tree_util import register_pytree_node
from xform.tree_util import tree_leaves
from xform.tree_util import tree_map
from xform.tree_util import tree_structure

__all__ = ["Policy", "get_policy", "NoOpLossScale", "StaticLossScale", "DynamicLossScale",
           "all_finite", "select_tree", "cast_to_full", "cast_to_half", "half_dtype",
           "LossScale"]


def _jnp():
    return jnp


def _tree_map(f, *trees):
    return tree_map(f, *trees)


def half_dtype():
    """The half-precision dtype for this platform: bfloat16 (TPU-style) unless the
    default backend is a GPU, where float16 has the faster kernels."""
    try:
        import xform  # deferred: import cycle (xform imports this module)
        if xform.default_backend() == "gpu":
            return np.dtype(np.float16)
    except Exception:  # no runtime yet: the portable answer
        pass
    return np.dtype(dtypes.bfloat16)


def _is_float(x):
    dt = getattr(x, "dtype", None)
    return dt is not None and dtypes.issubdtype(dt, np.floating)


def _cast(tree, dtype):
    jnp = _jnp()

    def f(x):
        if _is_float(x) and x.dtype != dtype:
            return jnp.asarray(x).astype(dtype)
        return x
    return _tree_map(f, tree)


def cast_to_full(tree):
    """Every floating-point leaf as float32."""
    return _cast(tree, np.dtype(np.float32))


def cast_to_half(tree):
    """Every floating-point leaf as ``half_dtype()``."""
    return _cast(tree, half_dtype())


@dataclasses.dataclass(frozen=True)
class Policy:
    """Which dtype parameters are stored in, computation runs in, and outputs have."""
    param_dtype: np.dtype
    compute_dtype: np.dtype
    output_dtype: np.dtype

    def __post_init__(self):
        for f in ("param_dtype", "compute_dtype", "output_dtype"):
            object.__setattr__(self, f, np.dtype(getattr(self, f)))

    def cast_to_param(self, x):
        """Floating-point leaves of ``x`` as ``param_dtype``."""
        return _cast(x, self.param_dtype)

    def cast_to_compute(self, x):
        """Floating-point leaves of ``x`` as ``compute_dtype``."""
        return _cast(x, self.compute_dtype)

    def cast_to_output(self, x):
        """Floating-point leaves of ``x`` as ``output_dtype``."""
        return _cast(x, self.output_dtype)

    def with_output_dtype(self, output_dtype):
        return dataclasses.replace(self, output_dtype=np.dtype(output_dtype))

    def __str__(self):
        return (f"p={_short(self.param_dtype)},c={_short(self.compute_dtype)},"
                f"o={_short(self.output_dtype)}")


_DTYPE_NAMES = {
    "float16": np.float16, "f16": np.float16, "float32": np.float32, "f32": np.float32,
    "full": np.float32, "float64": np.float64, "f64": np.float64,
}


def _short(dt):
    dt = np.dtype(dt)
    return {np.dtype(np.float16): "f16", np.dtype(np.float32): "f32",
            np.dtype(np.float64): "f64"}.get(dt, "bf16" if dtypes.is_bfloat16(dt) else dt.name)


def _parse_dtype(name):
    n = name.strip().lower()
    if n in ("bfloat16", "bf16"):
        return np.dtype(dtypes.bfloat16)
    if n == "half":
        return half_dtype()
    if n in _DTYPE_NAMES:
        return np.dtype(_DTYPE_NAMES[n])
    raise ValueError(f"Unknown dtype {name!r} in a mixed-precision policy; use one of "
                     "float32/f32/full, bfloat16/bf16, float16/f16, half, float64/f64")


_KEYS = {"params": "param_dtype", "p": "param_dtype", "param": "param_dtype",
         "compute": "compute_dtype", "c": "compute_dtype",
         "output": "output_dtype", "o": "output_dtype"}


def get_policy(policy_name: str) -> Policy:
    """Parse ``"params=float32,compute=bfloat16,output=float32"`` (short keys ``p``/
    ``c``/``o`` and dtype names ``f32``/``bf16``/``f16``/``half``/``full`` work); a single
    dtype name applies to all three.  Omitted entries default to float32."""
    if not isinstance(policy_name, str):
        raise TypeError(f"get_policy: expected a string, got {policy_name!r}")
    if "=" not in policy_name:
        dt = _parse_dtype(policy_name)
        return Policy(dt, dt, dt)
    fields = {"param_dtype": np.dtype(np.float32), "compute_dtype": np.dtype(np.float32),
              "output_dtype": np.dtype(np.float32)}
    for part in policy_name.split(","):
        if "=" not in part:
            raise ValueError(f"get_policy: malformed entry {part!r} in {policy_name!r}; "
                             "expected key=dtype")
        k, v = part.split("=", 1)
        key = _KEYS.get(k.strip().lower())
        if key is None:
            raise ValueError(f"get_policy: unknown key {k.strip()!r} in {policy_name!r}; "
                             "use params/compute/output (or p/c/o)")
        fields[key] = _parse_dtype(v)
    return Policy(**fields)


# ----------------------------------------------------------------- loss scaling


def all_finite(tree):
    """A boolean scalar: every element of every array leaf is finite."""
    jnp = _jnp()
    leaves = [jnp.all(jnp.isfinite(x)) for x in tree_leaves(tree)
              if hasattr(x, "dtype") or isinstance(x, (float, int))]
    if not leaves:
        return jnp.asarray(True)
    return jnp.all(jnp.stack(leaves))


def select_tree(pred, a, b):
    """Leafwise ``where(pred, a, b)`` for a scalar boolean ``pred``."""
    jnp = _jnp()
    if tree_structure(a) != tree_structure(b):
        raise ValueError(f"select_tree: a and b must have the same structure, got "
                         f"{tree_structure(a)} and {tree_structure(b)}")
    if getattr(pred, "shape", ()) != ():
        raise ValueError(f"select_tree: pred must be a scalar, got shape {pred.shape}")
    return _tree_map(lambda x, y: jnp.where(pred, x, y), a, b)


class LossScale:
    """Base of the loss-scale classes."""

    def scale(self, tree):
        raise NotImplementedError

    def unscale(self, tree):
        raise NotImplementedError

    def adjust(self, grads_finite):
        raise NotImplementedError


class NoOpLossScale(LossScale):
    """No scaling (float32 / bfloat16 training)."""

    @property
    def loss_scale(self):
        return 1

    def scale(self, tree):
        return tree

    def unscale(self, tree):
        return tree

    def adjust(self, grads_finite):
        return self


def _scale_tree(tree, s):
    jnp = _jnp()
    return _tree_map(lambda x: x * jnp.asarray(s).astype(x.dtype) if _is_float(x) else x * s,
                     tree)


class StaticLossScale(LossScale):
    """Multiply the loss by a fixed ``loss_scale``; divide the gradients by it."""

    def __init__(self, loss_scale):
        self.loss_scale = _jnp().asarray(loss_scale, dtype=np.float32)

    def scale(self, tree):
        return _scale_tree(tree, self.loss_scale)

    def unscale(self, tree):
        return _scale_tree(tree, 1.0 / self.loss_scale)

    def adjust(self, grads_finite):
        return self


class DynamicLossScale(LossScale):
    """A loss scale that halves (not below ``min_loss_scale``) after a step with
    non-finite gradients and doubles after ``period`` finite steps in a row.
    A pytree (``loss_scale`` and ``counter`` are leaves), so it can be carried through
    ``jit`` and ``lax.scan``."""

    def __init__(self, loss_scale, counter=None, period=2000, factor=2, min_loss_scale=None):
        jnp = _jnp()
        self.loss_scale = jnp.asarray(loss_scale, dtype=np.float32) \
            if not hasattr(loss_scale, "dtype") else loss_scale
        self.counter = jnp.zeros((), np.int32) if counter is None else counter
        self.period = int(period)
        self.factor = factor
        self.min_loss_scale = 1.0 if min_loss_scale is None else min_loss_scale

    def scale(self, tree):
        return _scale_tree(tree, self.loss_scale)

    def unscale(self, tree):
        return _scale_tree(tree, 1.0 / self.loss_scale)

    def adjust(self, grads_finite):
        """The loss scale for the next step given whether this step's grads were finite."""
        jnp = _jnp()
        grow = self.counter == (self.period - 1)
        up = jnp.where(grow, self.loss_scale * self.factor, self.loss_scale)
        down = jnp.maximum(jnp.asarray(self.min_loss_scale, self.loss_scale.dtype),
                           self.loss_scale / self.factor)
        new_scale = jnp.where(grads_finite, up, down)
        counter = ((self.counter + 1) % self.period) * grads_finite.astype(self.counter.dtype)
        return DynamicLossScale(new_scale, counter, self.period, self.factor,
                                self.min_loss_scale)

    def __repr__(self):
        return (f"DynamicLossScale(loss_scale={self.loss_scale}, counter={self.counter}, "
                f"period={self.period}, factor={self.factor})")


def _register():
    register_pytree_node(
        DynamicLossScale,
        lambda s: ((s.loss_scale, s.counter), (s.period, s.factor, s.min_loss_scale)),
        lambda aux, ch: DynamicLossScale(ch[0], ch[1], *aux))
    register_pytree_node(StaticLossScale, lambda s: ((s.loss_scale,), None),
                         lambda aux, ch: _static_from(ch[0]))
    register_pytree_node(NoOpLossScale, lambda s: ((), None), lambda aux, ch: NoOpLossScale())


def _static_from(v):
    s = StaticLossScale.__new__(StaticLossScale)
    s.loss_scale = v
    return s


_register()

"""``xform.example_libraries.optimizers``: JAX's functional optimizers.

An optimizer is a triple ``(init_fun, update_fun, get_params)``::

    opt_init, opt_update, get_params = optimizers.momentum(step_size=1e-3, mass=0.9)
    opt_state = opt_init(params)
    opt_state = opt_update(i, grads, opt_state)     # step i (0-based)
    params = get_params(opt_state)

The per-array rules (``init(x0) -> state``, ``update(i, g, state) -> state``,
``get_params(state) -> x``) are lifted to pytrees by ``@optimizer``; the state is an
``OptimizerState`` pytree (flat leaves of every per-array state, plus the structures),
so it can cross ``jit``.  Step sizes may be constants or schedules ``i -> step size``.
"""
from __future__ import annotations

import functools
from collections import namedtuple
from typing import Any, Callable, NamedTuple

from xform import numpy as jnp
from xform import tree_util as _tu

__all__ = ["Optimizer", "OptimizerState", "optimizer", "sgd", "momentum", "nesterov",
           "adagrad", "rmsprop", "rmsprop_momentum", "adam", "adamax", "sm3", "constant",
           "exponential_decay", "inverse_time_decay", "polynomial_decay",
           "piecewise_constant", "make_schedule", "l2_norm", "clip_grads", "JoinPoint",
           "unpack_optimizer_state", "pack_optimizer_state"]

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
_tu.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, ch: OptimizerState(ch[0], aux[0], aux[1]))

Params = Any
Schedule = Callable[[int], float]


class Optimizer(NamedTuple):
    init_fn: Callable
    update_fn: Callable
    params_fn: Callable


def optimizer(opt_maker):
    """Decorator: ``opt_maker(*args)`` returns per-array ``(init, update, get_params)``;
    the decorated maker returns the same triple over pytrees of parameters."""

    @functools.wraps(opt_maker)
    def make(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            leaves, tdef = _tu.tree_flatten(x0_tree)
            flat, subdefs = [], []
            for x0 in leaves:
                s_leaves, s_def = _tu.tree_flatten(init(x0))
                flat.append(s_leaves)
                subdefs.append(s_def)
            return OptimizerState(flat, tdef, subdefs)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            flat, tdef, subdefs = opt_state
            g_leaves, g_def = _tu.tree_flatten(grad_tree)
            if g_def != tdef:
                raise TypeError("optimizer update function was passed a gradient tree that "
                                "did not match the parameter tree structure with which it "
                                f"was initialized: parameter tree {tdef} and grad tree "
                                f"{g_def}.")
            new_flat = []
            for g, s_leaves, s_def in zip(g_leaves, flat, subdefs):
                new = update(i, g, _tu.tree_unflatten(s_def, s_leaves))
                n_leaves, n_def = _tu.tree_flatten(new)
                if n_def != s_def:
                    raise TypeError("optimizer update function produced an output structure "
                                    f"that did not match its input structure: input {s_def} "
                                    f"and output {n_def}.")
                new_flat.append(n_leaves)
            return OptimizerState(new_flat, tdef, subdefs)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            flat, tdef, subdefs = opt_state
            return _tu.tree_unflatten(tdef, [get_params(_tu.tree_unflatten(d, l))
                                             for l, d in zip(flat, subdefs)])

        return Optimizer(tree_init, tree_update, tree_get_params)
    return make


def _first(state):
    return state[0]


# ----------------------------------------------------------------- optimizers


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: ``x -= step_size(i) * g``."""
    lr = make_schedule(step_size)
    return (lambda x0: x0), (lambda i, g, x: x - lr(i) * g), (lambda x: x)


@optimizer
def momentum(step_size, mass):
    """Heavy-ball momentum: ``v = mass * v + g; x -= step_size(i) * v``."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, v = state
        v = mass * v + g
        return x - lr(i) * v, v
    return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


@optimizer
def nesterov(step_size, mass):
    """Nesterov momentum: ``v = mass * v + g; x -= step_size(i) * (mass * v + g)``."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, v = state
        v = mass * v + g
        return x - lr(i) * (mass * v + g), v
    return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad with momentum on the normalised gradient ``g / sqrt(sum g^2)``."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        inv = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * inv) + momentum * m
        return x - lr(i) * m, g_sq, m
    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0))), update, _first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: running mean of g^2 with decay ``gamma``; ``x -= lr g / sqrt(avg + eps)``."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, avg = state
        avg = avg * gamma + jnp.square(g) * (1.0 - gamma)
        return x - lr(i) * g / jnp.sqrt(avg + eps), avg
    return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp whose scaled step is accumulated with momentum."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, avg, mom = state
        avg = avg * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + lr(i) * g / jnp.sqrt(avg + eps)
        return x - mom, avg, mom
    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0))), update, _first


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma & Ba) with bias correction at step ``i + 1``."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        mhat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        vhat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
        return x - lr(i) * mhat / (jnp.sqrt(vhat) + eps), m, v
    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0))), update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax: Adam with the infinity norm ``u = max(b2 u, |g|)``."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - (lr(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u
    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0))), update, _first


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (memory-efficient adaptive): one accumulator vector per axis."""
    lr = make_schedule(step_size)

    def along(ndim, v, axis):
        idx = [None] * ndim
        idx[axis] = slice(None)
        return v[tuple(idx)]

    def init(x0):
        shape = x0.shape
        x0 = jnp.atleast_1d(x0)
        return x0, jnp.zeros_like(x0), [jnp.zeros(n, dtype=x0.dtype) for n in x0.shape], shape

    def update(i, g, state):
        x, m, vs, shape = state
        vs = [along(g.ndim, v, a) for a, v in enumerate(vs)]
        acc = functools.reduce(jnp.minimum, vs) + jnp.square(g)
        inv = jnp.where(acc > 0, 1.0 / jnp.sqrt(acc), 0)
        m = (1.0 - momentum) * (g * inv) + momentum * m
        x = x - lr(i) * m
        vs = [acc.max(tuple(d for d in range(x.ndim) if d != a)) for a in range(x.ndim)]
        return x, m, vs, shape

    def get_params(state):
        return state[0].reshape(state[3])
    return init, update, get_params


# ----------------------------------------------------------------- schedules


def constant(step_size) -> Schedule:
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate):
    """``step_size * decay_rate ** (i / decay_steps)``."""
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """``step_size / (1 + decay_rate * i / decay_steps)`` (floored ratio if staircase)."""
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """From ``step_size`` to ``final_step_size`` over ``decay_steps`` as ``(1-t)^power``."""
    def schedule(i):
        i = jnp.minimum(i, decay_steps)
        return (1 - i / decay_steps) ** power * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values):
    """``values[k]`` where ``k`` is the number of boundaries below ``i``."""
    boundaries, values = jnp.array(boundaries), jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule) -> Schedule:
    """A callable is a schedule already; a scalar becomes a constant schedule."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# ----------------------------------------------------------------- utilities


def l2_norm(tree):
    """The L2 norm of all leaves together."""
    leaves = _tu.tree_leaves(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """Rescale ``grad_tree`` so that its global L2 norm is at most ``max_norm``."""
    norm = l2_norm(grad_tree)
    return _tu.tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)),
                        grad_tree)


class JoinPoint:
    """Marks where the parameter pytree ends and a per-leaf state subtree begins."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """``OptimizerState`` -> the parameter pytree with ``JoinPoint`` leaves holding each
    parameter's state subtree (e.g. for pickling)."""
    flat, tdef, subdefs = opt_state
    subtrees = [_tu.tree_unflatten(d, l) for l, d in zip(flat, subdefs)]
    return _tu.tree_unflatten(tdef, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree):
    """The inverse of ``unpack_optimizer_state``."""
    joins, tdef = _tu.tree_flatten(marked_pytree, is_leaf=lambda x: isinstance(x, JoinPoint))
    if not all(isinstance(j, JoinPoint) for j in joins):
        raise TypeError("pack_optimizer_state: every leaf of the marked pytree must be a "
                        "JoinPoint (as produced by unpack_optimizer_state)")
    pairs = [_tu.tree_flatten(j.subtree) for j in joins]
    return OptimizerState([p[0] for p in pairs], tdef, [p[1] for p in pairs])

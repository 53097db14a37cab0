"""``xform.extend.random``: defining PRNG implementations (``jax.extend.random``).

``define_prng_impl`` makes an implementation from a key shape and four functions on one
key's uint32 data; ``xform.random.key(seed, impl=spec)`` then makes keys of it, and every
``xform.random`` function works on them (eager, under jit and vmap, in control flow).
The built-in implementations are here too (``threefry_prng_impl``, ``rbg_prng_impl``,
``unsafe_rbg_prng_impl``), with ``threefry_2x32`` (the hash) and its primitive.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable

from xform._src.primitives import prng as _prng
from xform._src.primitives.random import threefry2x32_p
from xform.random import PRNGSpec, threefry_2x32

__all__ = ["define_prng_impl", "random_seed", "seed_with_impl", "threefry2x32_p",
           "threefry_2x32", "threefry_prng_impl", "rbg_prng_impl", "unsafe_rbg_prng_impl",
           "PRNGImpl"]

PRNGImpl = _prng.PRNGImpl
threefry_prng_impl = _prng.THREEFRY
rbg_prng_impl = _prng.RBG
unsafe_rbg_prng_impl = _prng.UNSAFE_RBG


def define_prng_impl(*, key_shape: tuple, seed: Callable, split: Callable,
                     random_bits: Callable, fold_in: Callable, name: str = "<unnamed>",
                     tag: str = "?") -> Hashable:
    """A PRNG implementation: ``seed(int[]) -> key``, ``split(key, shape) -> key[*shape]``,
    ``random_bits(key, bit_width, shape) -> uint<bit_width>[*shape]`` and
    ``fold_in(key, uint32[]) -> key``, where a key is uint32 data of shape ``key_shape``.
    Pass the result as ``impl=`` to ``xform.random.key`` / ``wrap_key_data``."""
    return PRNGSpec(PRNGImpl(tuple(key_shape), seed, split, random_bits, fold_in,
                             name=name, tag=tag))


def random_seed(seeds, impl):
    """Typed keys of ``impl`` (a ``PRNGImpl``) from integer seeds (any shape: one key
    per seed)."""
    import numpy as np
    import xform
    from xform import random
    ndim = np.ndim(seeds)

    def one(s):
        return random.key(s, impl=impl)
    f = one
    for _ in range(ndim):
        f = xform.vmap(f)
    return f(xform.numpy.asarray(seeds)) if ndim else f(seeds)


def seed_with_impl(impl, seed):
    """``random_seed(seed, impl=impl)``, JAX's argument order."""
    return random_seed(seed, impl)

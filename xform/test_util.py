"""``xform.test_util``: JAX's ``jax.test_util`` (``check_grads``, ``check_jvp``,
``check_vjp``), delegating to ``xform.testing``."""
from __future__ import annotations

from xform import testing as _testing

__all__ = ["check_grads", "check_jvp", "check_vjp"]


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check ``f``'s derivatives up to ``order`` (forward and/or reverse mode) against
    finite differences at ``args``; raises AssertionError on a mismatch."""
    return _testing.check_grads(f, args, order, modes=modes, atol=atol, rtol=rtol, eps=eps)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=None, err_msg=""):
    """Check ``f_jvp`` (``partial(xform.jvp, f)``) against finite differences."""
    return _testing.check_jvp(f, f_jvp, args, atol=atol, rtol=rtol, eps=eps, err_msg=err_msg)


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=None, err_msg=""):
    """Check ``f_vjp`` (``partial(xform.vjp, f)``) against finite differences."""
    return _testing.check_vjp(f, f_vjp, args, atol=atol, rtol=rtol, eps=eps, err_msg=err_msg)

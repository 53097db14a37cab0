"""Tools for testing transformed code the way xform tests itself.

* ``check_grads(f, args, order=1, modes=("fwd", "rev"))``: AD vs central finite
  differences, recursively up to ``order``::

      from xform.testing import check_grads
      check_grads(lambda x: xform.numpy.sin(x) * x, (1.5,), order=2)

* ``check_jvp(f, partial(xform.jvp, f), args)`` / ``check_vjp(f, partial(xform.vjp, f),
  args)``: one mode at a time (``check_vjp`` also runs the dot-product test
  ``<vjp(ct), t> == <ct, jvp(t)>`` when given ``f_jvp=``).

* ``verify(f, *args)``: runs ``f``'s staged program through the NumPy reference
  interpreter and through XLA, compares, and on a mismatch names the first equation
  whose compiled result diverges (translation validation)::

      report = xform.testing.verify(lambda x: xform.numpy.tanh(x) @ x.T, x)
      assert report.passed

* ``assert_allclose(actual, desired)``: pytrees, per-dtype default tolerances.

* ``xform.testing.strategies`` (needs hypothesis): ``arrays``, ``dtypes``, ``shapes``,
  ``broadcast_shapes``, ``pytrees``, ``transforms``::

      from hypothesis import given
      from xform.testing import strategies as xst

      @given(xst.arrays(shape=(3,)), xst.transforms(max_depth=2))
      def test_sin(x, stack):
          assert_allclose(stack(xform.numpy.sin)(x), stack.reference(xform.numpy.sin)(x),
                          atol=1e-5, rtol=1e-5)

Importing ``xform.testing`` does not import hypothesis; ``strategies`` loads on first
access.
"""
import importlib as _importlib

from xform.testing._checks import (assert_allclose, check_grads, check_jvp, check_vjp,
                                   default_eps, default_gradient_tolerance, default_tolerance,
                                   tolerance)
from xform.testing._verify import VerificationError, VerificationReport, verify

__all__ = ["assert_allclose", "check_grads", "check_jvp", "check_vjp", "verify",
           "VerificationError", "VerificationReport", "default_tolerance",
           "default_gradient_tolerance", "default_eps", "tolerance", "strategies"]


def __getattr__(name):
    if name == "strategies":
        mod = _importlib.import_module("xform.testing.strategies")
        globals()[name] = mod
        return mod
    raise AttributeError(f"module 'xform.testing' has no attribute {name!r}")

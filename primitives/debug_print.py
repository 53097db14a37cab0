"""``debug_print``: the primitive behind ``xform.debug.print`` (JAX's name and params).

An effectful primitive with no outputs.  Its params are JAX's: ``fmt``,
``has_placeholders``, ``in_tree`` (the treedef of ``(args, kwargs)``),
``static_args`` (``(leaf index, value)`` for leaves that are not arrays),
``np_printoptions`` (NumPy's print options when it was called, applied when it
prints), ``logging_record``, ``ordered`` and ``partitioned``; the operands are the
array leaves.  Eagerly it prints now; staged, it stays in the program (DCE keeps
effectful equations, CSE never merges them) and prints when the program runs --
compiled, through the same host-callback custom call as ``debug_callback``
(``lowering/rules_calls.py``).  JVP: prints the primals; vmap: prints once per
batch element, in order (JAX's unrolled rule).
"""
from __future__ import annotations

import copy
import logging
import string
import sys

import numpy as np

from xform._src.interpreters import ad, batching, core
from xform._src.interpreters.core import Primitive
from xform._src.primitives import structural

__all__: list = []

debug_print_p = Primitive("debug_print", multiple_results=True)
debug_print_p.cse = False
debug_print_p.effectful = True
debug_print_p.impl_takes_arrays = True

_logger = logging.getLogger("xform")


class FormatChecker(string.Formatter):
    """``fmt.format(*args, **kwargs)`` without formatting; unused arguments are errors."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused_args = [a for i, a in enumerate(args) if i not in used_args]
        unused_kwargs = [k for k in kwargs if k not in used_args]
        if unused_args:
            raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused_args}")
        if unused_kwargs:
            raise ValueError(
                f"Unused keyword arguments to `jax.debug.print`: {unused_kwargs}. You may be "
                "passing an f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead "
                "should pass in a regular string.")


def _concrete(x):
    if isinstance(x, core.Tracer):
        v = x.to_concrete_value()
        return core.Array(v) if v is not None else x
    return x


def print_now(dyn_args, *, fmt, in_tree, static_args, np_printoptions, has_placeholders,
              logging_record, **_):
    """Format and print (or log) with the concrete leaves ``dyn_args``."""
    statics = dict(static_args)
    dyn = iter(dyn_args)
    leaves = [statics[i] if i in statics else _concrete(next(dyn))
              for i in range(len(statics) + len(dyn_args))]
    args, kwargs = in_tree.unflatten(leaves)
    if has_placeholders:
        with np.printoptions(**dict(np_printoptions)):
            msg = fmt.format(*args, **kwargs)
    else:
        msg = " ".join((fmt, *(str(a) for a in args)))
    if logging_record is not None:
        rec = copy.copy(logging_record)
        rec.msg = msg
        _logger.handle(rec)
    else:
        sys.stdout.write(msg + "\n")


@debug_print_p.def_impl
def _impl(*args, **params):
    print_now(args, **params)
    return []


debug_print_p.def_abstract_eval(lambda *avals, **params: [])


def _jvp(primals, tangents, **params):
    debug_print_p.bind(*primals, **params)
    return [], []


ad.jvp_rules[debug_print_p] = _jvp


def _batch(axis_data, vals, dims, **params):
    for i in range(axis_data.size):
        row = [v if d is None else structural.index_in_dim(v, i, d, keepdims=False)
               for v, d in zip(vals, dims)]
        debug_print_p.bind(*row, **params)
    return [], []


batching.batch_rules[debug_print_p] = _batch

"""``jnp`` functions that JAX itself wraps in ``jit``: staged as a nested ``jit`` equation.

JAX 0.10.2 decorates many ``jax.numpy`` functions with (non-inline) ``jax.jit``, so a
program that calls them shows ``jit[name=_where jaxpr={...}]`` / ``jit[name=sort ...]``
equations (``make_jaxpr``, ``jit(f).lower``), with the function's static arguments
baked into the inner program.  xform does the same, but only while a program is being
staged (a ``jit``/``make_jaxpr`` staging trace is on the stack): eager calls -- also
under eager ``grad``/``vmap`` -- call the function directly, so eager dispatch pays no
jit cache lookup and compiles nothing.

The table lists the function's name in ``xform.numpy``, the name JAX gives the ``jit``
equation and the arguments JAX makes static (checked against JAX's
``jax.make_jaxpr`` output over the public functions).  ``install`` (run at the end of
``xform.numpy``'s import) replaces each function in every ``xform.numpy`` module that
holds it, so the functions calling each other nest as JAX's do.
"""
from __future__ import annotations

import functools
import inspect
import sys

from xform._src.interpreters import core, errors
from xform._src.interpreters.staging import StagingTrace
from xform._jit import jit
import numpy as np

# xform.numpy name -> (jit name, static argument names)
TABLE = {
    "where": ("_where", ()),           # the three-argument form only (see _where_three)
    "take_along_axis": ("take_along_axis", ("axis", "mode", "fill_value",
                                            "wrap_negative_indices")),
    "sort": ("sort", ("axis", "kind", "order", "stable", "descending")),
    "argsort": ("argsort", ("axis", "kind", "order", "stable", "descending", "dtype")),
    "sort_complex": ("sort_complex", ()),
    "lexsort": ("lexsort", ("axis",)),
    "cumsum": ("cumsum", ("axis", "dtype")),
    "cumprod": ("cumprod", ("axis", "dtype")),
    "nancumsum": ("nancumsum", ("axis", "dtype")),
    "nancumprod": ("nancumprod", ("axis", "dtype")),
    "clip": ("clip", ()),
    "round": ("round", ("decimals",)),
    "around": ("around", ("decimals",)),
    "rint": ("rint", ()),
    "trunc": ("trunc", ()),
    "fmax": ("fmax", ()),
    "fmin": ("fmin", ()),
    "copysign": ("copysign", ()),
    "signbit": ("signbit", ()),
    "floor_divide": ("floor_divide", ()),
    "remainder": ("remainder", ()),
    "mod": ("remainder", ()),
    "fmod": ("fmod", ()),
    "divmod": ("divmod", ()),
    "isinf": ("isinf", ()),
    "hypot": ("hypot", ()),
    "heaviside": ("heaviside", ()),
    "sinc": ("sinc", ()),
    "gcd": ("gcd", ()),
    "lcm": ("lcm", ()),
    "isclose": ("isclose", ("equal_nan",)),
    "allclose": ("allclose", ("equal_nan",)),
    "nan_to_num": ("nan_to_num", ()),
    "tril": ("tril", ("k",)),
    "triu": ("triu", ("k",)),
    "trace": ("trace", ("offset", "axis1", "axis2", "dtype")),
    "diagonal": ("diagonal", ("offset", "axis1", "axis2")),
    "flip": ("_flip", ("axis",)),
    "diff": ("diff", ("n", "axis")),
    "kron": ("kron", ()),
    "nanvar": ("nanvar", ("axis", "dtype", "keepdims")),
    "nanstd": ("nanstd", ("axis", "dtype", "keepdims")),
    "count_nonzero": ("count_nonzero", ("axis", "keepdims")),
}


# xform.nn (JAX's jax.nn functions decorated with a non-inline jit; relu/relu6 are
# custom_jvp functions around such a jit, built in xform.nn itself)
NN_TABLE = {
    "identity": ("identity", ()),
    "squareplus": ("squareplus", ()),
    "softplus": ("softplus", ()),
    "sparse_plus": ("sparse_plus", ()),
    "soft_sign": ("soft_sign", ()),
    "sparse_sigmoid": ("sparse_sigmoid", ()),
    "silu": ("silu", ()),
    "swish": ("silu", ()),
    "mish": ("mish", ()),
    "log_sigmoid": ("log_sigmoid", ()),
    "elu": ("elu", ()),
    "leaky_relu": ("leaky_relu", ()),
    "hard_tanh": ("hard_tanh", ()),
    "celu": ("celu", ()),
    "selu": ("selu", ()),
    "glu": ("glu", ("axis",)),
    "logmeanexp": ("logmeanexp", ("axis", "keepdims")),
    "log_softmax": ("log_softmax", ("axis",)),
    "standardize": ("standardize", ("axis", "algorithm")),
    "hard_sigmoid": ("hard_sigmoid", ()),
    "hard_silu": ("hard_silu", ()),
    "hard_swish": ("hard_silu", ()),
    "one_hot": ("_one_hot", ("num_classes", "dtype", "axis")),
}


# ``jnp`` functions JAX wraps in ``jit(inline=True)`` (no nested equation when staged)
# whose compiled result differs from their operations run one by one: XLA's
# simplifier rewrites them (``log2``: the division by ``log(2)`` becomes a multiplication
# by its reciprocal; ``log10``'s product with a constant fuses with the logarithm).  Called eagerly on concrete values they run as one compiled
# program, as in JAX, so their bits are JAX's; staged, they inline.
INLINE_TABLE = {
    "log2": ("log2", ()),
    "log10": ("log10", ()),
    # JAX jits these (``_mean``, ``average``, ``cov``, ``hypot``: XLA turns the division by
    # the element count into a multiplication by its reciprocal, or fuses the sum);
    # run op by op their bits differ from JAX's in 20-90% of random float32 inputs.
    "mean": ("mean", ("axis", "dtype", "keepdims")),
    "average": ("average", ("axis", "returned", "keepdims")),
    "cov": ("cov", ("rowvar", "bias", "ddof", "dtype")),
    "hypot": ("hypot", ()),
    # JAX jits these too; measured with random float32 inputs, xform's op-by-op results
    # differed from JAX's eager (compiled) ones in the last bit in 10-100% of cases
    "nanvar": ("nanvar", ("axis", "dtype", "keepdims")),
    "nanstd": ("nanstd", ("axis", "dtype", "keepdims")),
    "quantile": ("quantile", ("axis", "overwrite_input", "keepdims", "method")),
    "percentile": ("percentile", ("axis", "overwrite_input", "keepdims", "method")),
    "nanquantile": ("nanquantile", ("axis", "overwrite_input", "keepdims", "method")),
    "nanpercentile": ("nanpercentile", ("axis", "overwrite_input", "keepdims", "method")),
    "corrcoef": ("corrcoef", ("rowvar", "dtype")),
    "cross": ("cross", ("axisa", "axisb", "axisc", "axis")),
    "vdot": ("vdot", ("precision", "preferred_element_type")),
    "trace": ("trace", ("offset", "axis1", "axis2", "dtype")),
    "trapezoid": ("trapezoid", ("axis",)),
    "polyval": ("polyval", ("unroll",)),
    "polyfit": ("polyfit", ("deg", "rcond", "full", "cov")),
    "i0": ("i0", ()),
    "round": ("round", ("decimals",)),
    "around": ("around", ("decimals",)),
    "linspace": ("_linspace", ("num", "endpoint", "retstep", "dtype", "axis", "device")),
    "logspace": ("_logspace", ("num", "endpoint", "dtype", "axis")),
    "geomspace": ("_geomspace", ("num", "endpoint", "dtype", "axis")),
}

# The same for ``xform.numpy.linalg`` (and ``xform.scipy.linalg``'s ``expm``)
LINALG_INLINE_TABLE = {
    "norm": ("norm", ("ord", "axis", "keepdims")),
    "det": ("det", ()),
    "matrix_power": ("matrix_power", ("n",)),
    "pinv": ("pinv", ("hermitian",)),
}
SCIPY_LINALG_INLINE_TABLE = {
    "expm": ("expm", ("upper_triangular", "max_squarings")),
}

# JAX's public ``var``/``std`` check ``ddof``/``correction`` and call a jitted ``_var``/
# ``_std`` with ``correction`` traced (a runtime divisor: a static one would let XLA turn
# the division into a multiplication by its reciprocal). xform's public functions do the
# same with these module-level implementations, staged as ``jit[name=_var]`` and run
# compiled when called eagerly: (module, attribute) -> (jit name, static argument names)
IMPL_TABLE = {
    ("xform.numpy._reductions", "_var_jitted"): ("_var", ("axis", "dtype", "keepdims")),
    ("xform.numpy._reductions", "_std_jitted"): ("_std", ("axis", "dtype", "keepdims")),
}


def install_impl(table=None):
    """Wrap each IMPL_TABLE function (staged: a nested ``jit``; eager: compiled) in its
    module, where the public functions look it up at call time."""
    for (modname, attr), (name, static) in (IMPL_TABLE if table is None else table).items():
        m = sys.modules[modname]
        f = getattr(m, attr)
        if hasattr(f, "__inline_for_eager__"):
            continue
        setattr(m, attr, wrap_inline(wrap(f, name, static), name, static))


# The same for xform.nn (``softmax``'s normalisation and ``standardize``'s mean).
NN_INLINE_TABLE = {
    "softmax": ("softmax", ("axis",)),
    "standardize": ("standardize", ("axis", "epsilon")),
    "squareplus": ("squareplus", ()),
    "hard_sigmoid": ("hard_sigmoid", ()),
    "hard_silu": ("hard_silu", ()),
    "hard_swish": ("hard_silu", ()),
}


def _jit_arguments(sig, static, args, kwargs):
    """The call's ``(args, kwargs)`` as ``jit`` takes them -- a static list (an axis list)
    as a tuple, as JAX's functions canonicalize it -- or None where jit cannot take them
    (an unhashable static argument, a non-array value to trace, a binding error): the
    function is then called directly and raises its own errors."""
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return None
    for k, v in bound.arguments.items():
        if k in static:
            if isinstance(v, list):
                v = bound.arguments[k] = tuple(v)
            if not _hashable(v):
                return None
        elif not _dynamic_ok(v):
            return None
    return bound.args, bound.kwargs


def _jitted_call(box, fun, name, sig, static, args, kwargs):
    """Call ``fun`` through its cached ``jit`` (made on first use, named ``name``);
    where xform's implementation needs a value static that JAX traces, call it as is
    (staged: the same program inline, without the nested jit)."""
    ready = _jit_arguments(sig, static, args, kwargs)
    if ready is None:
        return fun(*args, **kwargs)
    if not box:
        def inner(*a, **k):
            return fun(*a, **k)
        inner.__name__ = inner.__qualname__ = name
        inner.__signature__ = sig
        box.append(jit(inner, static_argnames=static))
    try:
        return box[0](*ready[0], **ready[1])
    except errors.ConcretizationTypeError:
        return fun(*args, **kwargs)


def wrap_inline(fun, name, static_argnames):
    """``fun`` run as one cached compiled program when called eagerly (see INLINE_TABLE)."""
    sig = inspect.signature(fun)
    static = tuple(n for n in static_argnames if n in sig.parameters)
    box = []
    state, eval_trace = core._state, core.EVAL_TRACE

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        if state.trace is not eval_trace or not core._xla_numerics:
            return fun(*args, **kwargs)
        return _jitted_call(box, fun, name, sig, static, args, kwargs)
    wrapper.__wrapped_for_jit__ = fun
    wrapper.__inline_for_eager__ = True
    return wrapper


def _program_staging() -> bool:
    """Is a program being staged (a jit / make_jaxpr trace, not linearize's partial
    evaluator alone)?"""
    t = core.current_trace()
    eval_trace = core.EVAL_TRACE
    while t is not eval_trace and t is not None:
        if type(t) is StagingTrace and not t.forward_known:
            return True
        t = t.parent
    return False


def _hashable(v):
    try:
        hash(v)
    except TypeError:
        return False
    return True


def wrap(fun, name, static_argnames):
    """``fun`` that stages as ``jit[name=name]`` when a program is being staged."""
    sig = inspect.signature(fun)
    static = tuple(n for n in static_argnames if n in sig.parameters)
    box = []

    state, eval_trace = core._state, core.EVAL_TRACE

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        if state.trace is eval_trace or not _program_staging():   # eager: a direct call
            return fun(*args, **kwargs)
        return _jitted_call(box, fun, name, sig, static, args, kwargs)
    wrapper.__wrapped_for_jit__ = fun
    return wrapper


def _dynamic_ok(v):
    """A value jit can take as a traced argument: arrays, scalars, None, and
    tuples/lists of them (pytrees)."""
    if v is None or isinstance(v, (core.Array, core.Tracer, bool, int, float, complex)):
        return True
    if isinstance(v, (tuple, list)):
        return all(_dynamic_ok(x) for x in v)
    return isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind in "biufc"


def _where_three(where_fn):
    """``where``: the one-argument form (``nonzero``) is not jitted in JAX; the
    three-argument form is ``jit(_where)(condition, x, y)``."""
    def _where(condition, x, y):
        return where_fn(condition, x, y)
    jitted = wrap(_where, "_where", ())

    @functools.wraps(where_fn)
    def where(condition, x=None, y=None, /, **kwargs):
        if x is None or y is None or kwargs:
            return where_fn(condition, x, y, **kwargs)
        return jitted(condition, x, y)
    where.__wrapped_for_jit__ = where_fn
    return where


def install(namespace, table=None, prefix="xform.numpy", inline=False):
    """Replace the table's functions in ``namespace`` (the ``xform.numpy`` module) and in
    every ``prefix`` module that holds the same function object. ``inline``: the table
    lists functions run compiled when called eagerly (``wrap_inline``); such a wrapper
    goes around a function the staging table already wrapped."""
    table = TABLE if table is None else table
    inline = inline or table is INLINE_TABLE
    done = {}                   # id(original) -> (original, wrapper)
    for pub, (name, static) in table.items():
        f = namespace.__dict__.get(pub)
        if f is None or not callable(f) or id(f) in done or \
                hasattr(f, "__inline_for_eager__" if inline else "__wrapped_for_jit__"):
            continue
        w = wrap_inline(f, name, static) if inline else \
            _where_three(f) if pub == "where" and table is TABLE else wrap(f, name, static)
        done[id(f)] = (f, w)
    # one pass over the package's modules (import time: no per-function module scans)
    for k, m in list(sys.modules.items()):
        if m is None or not (k == prefix or k.startswith(prefix + ".")):
            continue
        d = m.__dict__
        for key, v in list(d.items()):
            hit = done.get(id(v))
            if hit is not None and hit[0] is v:
                d[key] = hit[1]

"""Miscellaneous lax operations: ``clz``, ``reduce_precision``, ``optimization_barrier``,
``copy``, ``approx_top_k`` (primitives; ``approx_max_k``/``approx_min_k`` bind the last)
and ``index_take``, ``broadcast_shapes``, ``empty`` (compositions of other primitives).

``approx_max_k``/``approx_min_k`` are exact on every backend here (JAX's CPU/GPU
fallback; the TPU partial-reduce algorithm is not emulated): values sorted best first,
int32 indices.
"""
from __future__ import annotations

import operator

import numpy as np

from xform._src.interpreters import ad, batching, core, dtypes, errors, ir, staging
from xform._src.interpreters import jaxpr_transforms as jt
from xform._src.interpreters.ad import Zero
from xform._src.interpreters.core import Primitive, ShapedArray
from xform._src.primitives._rules import deflinear, defjvp_zero, defvectorized
from xform._src.primitives.structural import as_operand
from xform._src.interpreters.tree_util import tree_flatten, tree_unflatten
from xform._src.primitives import elementwise as ew
from xform._src.primitives.indexing import GatherDimensionNumbers, gather
from xform._src.primitives.structural import concatenate, reshape
from xform._src.primitives.structural import full
from xform._src.interpreters.tree_util import register_pytree_node
import functools
import math
from xform._src.primitives.sorting import _top_k_jvp
from xform._src.primitives.sorting import top_k_p

__all__ = ["clz", "reduce_precision", "optimization_barrier", "approx_max_k", "approx_min_k",
           "index_take", "broadcast_shapes", "empty", "clz_p", "reduce_precision_p",
           "optimization_barrier_p", "create_token", "after_all", "composite", "copy_p",
           "approx_top_k_p"]

# ----------------------------------------------------------------- clz

clz_p = Primitive("clz")


def _clz_abstract(x):
    if not dtypes.is_integer(x.dtype):
        raise TypeError(f"clz requires an integer operand, got {x.str_short()}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _clz_impl(x):
    x = np.asarray(x)
    bits = x.dtype.itemsize * 8
    u = x.view(np.dtype(f"uint{bits}")).astype(np.uint64)
    out = np.full(u.shape, bits, np.int64)
    # position of the highest set bit, by halving
    n = np.zeros(u.shape, np.int64)
    v = u.copy()
    for shift in (32, 16, 8, 4, 2, 1):
        if shift >= bits:
            continue
        big = v >= (np.uint64(1) << np.uint64(shift))
        n = np.where(big, n + shift, n)
        v = np.where(big, v >> np.uint64(shift), v)
    out = np.where(u == 0, bits, bits - 1 - n)
    return out.astype(x.dtype)


clz_p.def_abstract_eval(_clz_abstract)
clz_p.def_impl(_clz_impl)
defjvp_zero(clz_p)
defvectorized(clz_p)


def clz(x):
    """Number of leading zero bits of each integer."""
    return clz_p.bind(as_operand(x))


# ----------------------------------------------------------------- reduce_precision

reduce_precision_p = Primitive("reduce_precision")

_NATIVE_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _float_layout(dt):
    """(exponent bits, explicit mantissa bits) of a floating dtype (JAX's finfo nexp/nmant)."""
    fi = dtypes.finfo(dt)
    return int(fi.nexp), int(fi.nmant)


def _rp_compute_dtype(dt):
    """The IEEE type XLA's CPU backend rounds ``dt`` in: f16/f32/f64 themselves; a narrow
    float (bf16, float8/6/4) is widened to f16 when f16 holds every one of its values
    exactly, else to f32, rounded there and converted back (round to nearest even).
    So the result for a narrow type is *not* the identity at its own (nexp, nmant):
    e.g. float8_e4m3fn values >= 256 overflow (-> inf -> NaN, the format has no inf) and
    its subnormals flush to zero -- exactly what XLA computes."""
    dt = np.dtype(dt)
    if dt in _NATIVE_FLOATS:
        return dt
    fi = dtypes.finfo(dt)
    if fi.maxexp <= 16 and fi.minexp - fi.nmant >= -24 and fi.nmant <= 10:
        return np.dtype(np.float16)
    return np.dtype(np.float32)


def _rp_abstract(x, *, exponent_bits, mantissa_bits):
    if not dtypes.is_float(x.dtype):
        raise TypeError(f"reduce_precision does not accept dtype {getattr(x.dtype, 'name', x.dtype)}. "
                        "Accepted dtypes are subtypes of floating.")
    if exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
    if mantissa_bits < 0:
        raise ValueError("reduce_precision: mantissa_bits must be non-negative; got "
                         f"{mantissa_bits}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _rp_bits(x, exponent_bits, mantissa_bits):
    """XLA's ReducePrecision on an IEEE f16/f32/f64 array: round-to-nearest-even on the
    mantissa, exponent overflow to +-inf and underflow (including what would be
    subnormal) to +-0; NaNs stay NaN."""
    dt = x.dtype
    src_e, src_m = _float_layout(dt)
    nbits = dt.itemsize * 8
    ut = np.dtype(f"uint{nbits}")
    one = lambda v: np.asarray(v, dtype=ut)
    xi = x.view(ut).copy()
    if mantissa_bits < src_m:
        shift = src_m - mantissa_bits
        last = one(1) << one(shift)
        bias = (last >> one(1)) - one(1)
        last_bit = (xi & last) >> one(shift)
        xi = (xi + last_bit + bias) & ~(last - one(1))
    if exponent_bits < src_e:
        sign_mask = one(1) << one(nbits - 1)
        exp_mask = ((one(1) << one(src_e)) - one(1)) << one(src_m)
        ebias = (1 << (src_e - 1)) - 1
        rbias = (1 << (exponent_bits - 1)) - 1
        max_e, min_e = ebias + rbias, ebias - rbias
        xe = xi & exp_mask
        over = xe > (one(max_e) << one(src_m))
        under = xe <= (one(min_e) << one(src_m))
        sz = xi & sign_mask
        xi = np.where(over, sz | exp_mask, np.where(under, sz, xi))
    out = xi.astype(ut).view(dt)
    return np.where(np.isnan(x), x, out)


def _rp_impl(x, *, exponent_bits, mantissa_bits):
    x = np.asarray(x)
    dt = x.dtype
    cdt = _rp_compute_dtype(dt)
    if cdt != dt and not dtypes.is_bfloat16(dt):
        # Observed XLA (CPU) behaviour for the formats it widens (float8/6/4, e8m0): at
        # exactly one exponent bit fewer and one mantissa bit more than the wide type's
        # -- (4, 11) for f16, (7, 24) for f32 -- the value comes back unchanged.
        ce, cm = _float_layout(cdt)
        if (exponent_bits, mantissa_bits) == (ce - 1, cm + 1):
            return x.copy()
    out = _rp_bits(x.astype(cdt), exponent_bits, mantissa_bits)
    return out.astype(dt)


reduce_precision_p.def_abstract_eval(_rp_abstract)
reduce_precision_p.def_impl(_rp_impl)
defvectorized(reduce_precision_p)


def _rp_jvp(primals, tangents, **params):
    out = reduce_precision_p.bind(primals[0], **params)
    t = tangents[0]
    if type(t) is Zero:
        return out, Zero.from_primal(out)
    return out, reduce_precision_p.bind(t, **params)


ad.jvp_rules[reduce_precision_p] = _rp_jvp
ad.transpose_rules[reduce_precision_p] = lambda ct, x, **params: [
    Zero(x.aval) if type(ct) is Zero else reduce_precision_p.bind(ct, **params)]


def reduce_precision(operand, exponent_bits, mantissa_bits):
    """Round ``operand`` to a float format with the given exponent and mantissa bits."""
    x = as_operand(operand)
    return reduce_precision_p.bind(x, exponent_bits=operator.index(exponent_bits),
                        mantissa_bits=operator.index(mantissa_bits))


# ----------------------------------------------------------------- copy

# An explicit copy (``jnp.copy``, JAX's ``copy_p``): a new buffer with the operand's
# value; linear, its own transpose; lowered to the operand itself (XLA gives every
# result its own buffer unless aliased). Never merged with another copy.
copy_p = Primitive("copy")
copy_p.cse = False
copy_p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype, x.weak_type))
copy_p.def_impl(lambda x: np.array(x, copy=True))
deflinear(copy_p, lambda ct, x: [Zero(x.aval) if type(ct) is Zero else copy_p.bind(ct)])
defvectorized(copy_p)


# ----------------------------------------------------------------- optimization_barrier

optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)
optimization_barrier_p.def_abstract_eval(lambda *xs: [ShapedArray(x.shape, x.dtype, x.weak_type)
                                                      for x in xs])
optimization_barrier_p.def_impl(lambda *xs: [np.asarray(x) for x in xs])


def _ob_jvp(primals, tangents):
    outs = optimization_barrier_p.bind(*primals)
    ts = [ad.instantiate(t) for t in tangents]
    return outs, list(optimization_barrier_p.bind(*ts))


def _ob_transpose(cts, *xs):
    cts = [ad.instantiate(c) if type(c) is not Zero else ad.zeros_like_aval(x.aval)
           for c, x in zip(cts, xs)]
    return list(optimization_barrier_p.bind(*cts))


ad.jvp_rules[optimization_barrier_p] = _ob_jvp
ad.transpose_rules[optimization_barrier_p] = _ob_transpose
batching.batch_rules[optimization_barrier_p] = lambda axis_data, vals, dims: (
    list(optimization_barrier_p.bind(*vals)), list(dims))


def optimization_barrier(operand, /):
    """Identity on a pytree of arrays that XLA may not move computations across."""
    leaves, tree = tree_flatten(operand)
    leaves = [as_operand(x) for x in leaves]
    if not leaves:
        return operand
    return tree_unflatten(tree, list(optimization_barrier_p.bind(*leaves)))


# ----------------------------------------------------------------- compositions


def _order_key_reversed(x):
    """A value whose ascending order is ``x``'s descending order (floats: negation)."""
    return ew.neg_p.bind(x)


def _approx_output_size(n, rank, k, recall_target, aggregate_to_topk, input_size_override):
    """Results per row (XLA's ApproxTopKReductionOutputSize): k when aggregating, else the
    size of the TPU algorithm's partial reduction (JAX returns that many, best first)."""
    if aggregate_to_topk:
        return k
    tiling = 1024 if rank == 1 else 128
    if n <= tiling:
        return n
    if input_size_override >= 0 and n > input_size_override:
        raise ValueError(f"reduction_input_size_override ({input_size_override}) must be at "
                         f"least the reduced dimension size ({n})")
    if recall_target >= 1.0:
        return n
    if k == 1:
        return tiling
    logical = input_size_override if input_size_override >= 0 else n
    m = min(max(int((1.0 - k) / math.log(recall_target)), tiling), n)
    log2_reduction = (logical // m).bit_length() - 1
    if log2_reduction <= 0:
        return n
    return -(-(-(-n // tiling)) // (1 << log2_reduction)) * tiling


# approx_top_k (JAX's primitive): exact on every backend here, as JAX's CPU/GPU fallback:
# the top_k of the operand (max) or of its negation (min) along reduction_dimension,
# ``_approx_output_size`` results per row. Impl and lowering run that decomposition; the
# tangent is the operand's tangent in the results' order (top_k's rule); batching moves
# the reduction dimension.
approx_top_k_p = Primitive("approx_top_k", multiple_results=True)
approx_top_k_p.impl_takes_arrays = True


def _atk_dims(shape, k, reduction_dimension, recall_target, reduction_input_size_override,
              aggregate_to_topk):
    d = reduction_dimension % len(shape)
    return d, _approx_output_size(shape[d], len(shape), k, float(recall_target),
                                  bool(aggregate_to_topk), reduction_input_size_override)


def _atk_abstract(x, *, k, reduction_dimension, recall_target, is_max_k,
                  reduction_input_size_override, aggregate_to_topk):
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    if x.ndim == 0:
        raise TypeError(f"approx_top_k operand must have >= 1 dimension, got {x.shape}")
    if not dtypes.is_float(x.dtype):
        raise ValueError("operand must be a floating type")
    d, n = _atk_dims(x.shape, k, reduction_dimension, recall_target,
                     reduction_input_size_override, aggregate_to_topk)
    if x.shape[d] < k:
        raise ValueError(f"k must be smaller than the size of reduction_dim {x.shape[d]}, "
                         f"got {k}")
    shape = x.shape[:d] + (n,) + x.shape[d + 1:]
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, np.dtype(np.int32))]


def _atk_decomposed(x, *, k, reduction_dimension, recall_target, is_max_k,
                    reduction_input_size_override, aggregate_to_topk):
    d, n = _atk_dims(core.get_aval(x).shape, k, reduction_dimension, recall_target,
                     reduction_input_size_override, aggregate_to_topk)
    key = x if is_max_k else _order_key_reversed(x)
    vals, idx = top_k_p.bind(key, k=n, axis=d)
    return [vals if is_max_k else _order_key_reversed(vals), idx]


def _atk_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    vals, idx = approx_top_k_p.bind(x, **params)
    if type(t) is Zero:
        return [vals, idx], [Zero.from_primal(vals), Zero.from_primal(idx)]
    d, n = _atk_dims(core.get_aval(x).shape, params["k"], params["reduction_dimension"],
                     params["recall_target"], params["reduction_input_size_override"],
                     params["aggregate_to_topk"])
    key = x if params["is_max_k"] else _order_key_reversed(x)
    # t in the order of the results (the same order for max and min: values = ±keys)
    _, (t_out, _) = _top_k_jvp([key], [t], k=n, axis=d)
    return [vals, idx], [t_out, Zero.from_primal(idx)]


def _atk_batch(axis_data, vals, dims, *, reduction_dimension, **params):
    (x,), (b,) = vals, dims
    d = reduction_dimension % (core.get_aval(x).ndim - 1)
    outs = approx_top_k_p.bind(x, reduction_dimension=d + (b <= d), **params)
    return outs, [b, b]


approx_top_k_p.def_abstract_eval(_atk_abstract)
approx_top_k_p.def_impl(lambda x, **params: _atk_decomposed(x, **params))
ad.jvp_rules[approx_top_k_p] = _atk_jvp
batching.batch_rules[approx_top_k_p] = _atk_batch


def _approx_k(name, operand, k, reduction_dimension, largest, recall_target=0.95,
              reduction_input_size_override=-1, aggregate_to_topk=True):
    x = as_operand(operand)
    a = core.get_aval(x)
    if a.ndim == 0:
        raise ValueError(f"{name}: operand must have at least one dimension")
    if not dtypes.is_float(a.dtype):
        raise ValueError(f"{name}: operand must be a floating type, got {a.str_short()}")
    d = operator.index(reduction_dimension)
    if not -a.ndim <= d < a.ndim:
        raise ValueError(f"{name}: reduction_dimension {d} out of range for operand "
                         f"{a.str_short()}")
    d %= a.ndim
    k = operator.index(k)
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    if k > a.shape[d]:
        raise ValueError(f"{name}: k ({k}) must be at most the reduced dimension size "
                         f"({a.shape[d]}) of operand {a.str_short()}")
    if not 0 < recall_target <= 1:
        raise ValueError(f"{name}: recall_target must be in (0, 1], got {recall_target}")
    override = operator.index(reduction_input_size_override)
    _approx_output_size(a.shape[d], a.ndim, k, float(recall_target), bool(aggregate_to_topk),
                        override)   # checks the override
    vals, idx = approx_top_k_p.bind(
        x, k=k, reduction_dimension=operator.index(reduction_dimension),
        recall_target=float(recall_target), is_max_k=bool(largest),
        reduction_input_size_override=override, aggregate_to_topk=bool(aggregate_to_topk))
    return vals, idx


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    """The k largest values along ``reduction_dimension`` and their indices (exact here;
    ``aggregate_to_topk=False``: as many as XLA's partial reduction keeps, best first)."""
    return _approx_k("approx_max_k", operand, k, reduction_dimension, True, recall_target,
                     reduction_input_size_override, aggregate_to_topk)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    """The k smallest values along ``reduction_dimension`` and their indices (exact here;
    ``aggregate_to_topk=False``: as many as XLA's partial reduction keeps, best first)."""
    return _approx_k("approx_min_k", operand, k, reduction_dimension, False, recall_target,
                     reduction_input_size_override, aggregate_to_topk)


def index_take(src, idxs, axes):
    """``src`` gathered at the (wrapped-around) index arrays ``idxs`` along ``axes``."""
    src = as_operand(src)
    a = core.get_aval(src)
    axes = tuple(operator.index(ax) for ax in axes)
    idxs = [as_operand(i) for i in idxs]
    if len(idxs) != len(axes) or not idxs:
        raise ValueError(f"index_take: need one index array per axis, got {len(idxs)} index "
                         f"arrays for axes {axes}")
    shapes = {core.get_aval(i).shape for i in idxs}
    if len(shapes) != 1 or len(next(iter(shapes))) != 1:
        raise TypeError("index_take: index arrays must be 1-D and of equal length, got shapes "
                        f"{sorted(shapes)}")
    dt = core.get_aval(idxs[0]).dtype
    cols = [reshape(ew.convert_element_type_p.bind(i, new_dtype=dt, weak_type=False)
                    if core.get_aval(i).dtype != dt else i,
                    (core.get_aval(i).shape[0], 1)) for i in idxs]
    ind = concatenate(cols, 1)
    n = core.get_aval(ind).shape[0]
    size = np.broadcast_to(np.array([a.shape[ax] for ax in axes], dt), (n, len(axes)))
    ind = ew.rem_p.bind(ew.add_p.bind(ew.rem_p.bind(ind, size), size), size)
    slice_sizes = tuple(1 if i in axes else s for i, s in enumerate(a.shape))
    offset = tuple(range(1, a.ndim - len(axes) + 1))
    dn = GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=tuple(sorted(axes)),
                                start_index_map=axes)
    return gather(src, ind, dn, slice_sizes)


def broadcast_shapes(*shapes):
    """NumPy's broadcast of shapes (tuples of ints) -> the result shape."""
    if not shapes:
        return ()
    checked = []
    for s in shapes:            # JAX's validation of each shape (TypeError)
        try:
            c = tuple(operator.index(d) for d in s)
        except TypeError:
            raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, "
                            f"got {s}.") from None
        if any(d < 0 for d in c):
            raise TypeError(f"Only non-negative indices are allowed when broadcasting static "
                            f"shapes, but got shape {s!r}.")
        checked.append(c)
    shapes = checked
    nd = max(len(s) for s in shapes)
    padded = [(1,) * (nd - len(s)) + s for s in shapes]
    out = []
    for ds in zip(*padded):
        sizes = {d for d in ds if d != 1}
        if len(sizes) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes="
                             f"{[tuple(s) for s in shapes]}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def empty(shape, dtype, *, out_sharding=None):
    """An array of ``shape`` and ``dtype`` whose values are unspecified (zeros here)."""
    shape = (operator.index(shape),) if np.ndim(shape) == 0 else tuple(
        operator.index(d) for d in shape)
    return full(shape, 0, dtypes.canonicalize_dtype(dtype))


# ----------------------------------------------------------------- tokens, composite

class Token:
    """An ordering token (JAX's ``lax.create_token`` / ``after_all``). xform orders side
    effects by program order, so a token carries no data: it is a pytree with no leaves,
    passing unchanged through jit, vmap and the differentiation transformations."""
    __slots__ = ()

    def __repr__(self):
        return "Token"

    def __eq__(self, other):
        return isinstance(other, Token)

    def __hash__(self):
        return hash(Token)


def _register_token():
    register_pytree_node(Token, lambda t: ((), None), lambda _, __: Token())


_register_token()


def create_token(_=None):
    """A new ordering token (the argument is ignored, as JAX's)."""
    return Token()


def after_all(*operands):
    """A token ordered after ``operands`` (tokens)."""
    for t in operands:
        if not isinstance(t, Token):
            raise TypeError(f"after_all: expected tokens, got {type(t).__name__}")
    return Token()


# ----------------------------------------------------------------- composite
#
# ``composite_p`` holds a decomposition program and lowers to ``stablehlo.composite``
# (a named operation whose body is a private function called ``name``; compilers that
# know the name may replace it).  Its keyword arguments are static attributes.  The
# decomposition's constants are leading operands (its program has no constvars), as in
# JAX.  Evaluation, JVP and batching are the decomposition's, inlined: unlike JAX 0.10.2,
# which has no JVP rule for composite, a composite is differentiable (docs/compatibility.md).


class HashableArray:
    """A NumPy array attribute as a hashable param (compared by dtype, shape and bytes)."""

    __slots__ = ("val",)

    def __init__(self, val):
        self.val = np.asarray(val)

    def _key(self):
        return (self.val.dtype.str, self.val.shape, self.val.tobytes())

    def __eq__(self, other):
        return isinstance(other, HashableArray) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"HashableArray({self.val!r})"


composite_p = Primitive("composite", multiple_results=True)
composite_p.impl_takes_arrays = True


def _composite_abstract(*args, name, attributes, version, jaxpr):
    return list(jaxpr.out_avals)


def _composite_impl(*args, name, attributes, version, jaxpr):
    return ir.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


def _composite_jvp(primals, tangents, *, name, attributes, version, jaxpr):
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    closed, out_nz = jt.jvp_jaxpr(jaxpr, nonzeros, False)
    live = [t for t in tangents if type(t) is not Zero]
    outs = ir.eval_jaxpr(closed.jaxpr, closed.consts, *primals, *live)
    m = len(jaxpr.out_avals)
    it = iter(outs[m:])
    return outs[:m], [next(it) if nz else Zero(ad.tangent_aval(a))
                      for nz, a in zip(out_nz, jaxpr.out_avals)]


def _composite_batch(axis_data, vals, dims, *, name, attributes, version, jaxpr):
    new, out_dims = batching.batch_jaxpr(jaxpr, axis_data, list(dims))
    return ir.eval_jaxpr(new.jaxpr, new.consts, *vals), list(out_dims)


composite_p.def_abstract_eval(_composite_abstract)
composite_p.def_impl(_composite_impl)
ad.jvp_rules[composite_p] = _composite_jvp
batching.batch_rules[composite_p] = _composite_batch


def _pp_composite(eqn, names):
    p = dict(eqn.params)
    p["attributes"] = tuple((k, tree_unflatten(t, [getattr(v, "val", v) for v in leaves]))
                            for k, leaves, t in p["attributes"])
    return sorted(p.items())


ir.pp_rules[composite_p] = _pp_composite

_TRACER_MSG = ("This means that the decomposition function closes over a value that is "
               "involved in a JAX transformation. Any values that aren't explicitly known at "
               "compile time must be explicitly passed as arguments to the composite.")


def composite(decomposition, name: str, version: int = 0):
    """JAX's ``lax.composite``: ``decomposition`` marked as the named operation ``name``
    (lowered to ``stablehlo.composite``, a hint for compilers that recognise it). Its
    semantics are the decomposition's; keyword arguments are its static attributes
    (Python scalars, strings, NumPy arrays and dtypes, ``None`` omitted)."""
    if not callable(decomposition):
        raise TypeError(f"composite: decomposition must be callable, got {decomposition!r}")
    if not isinstance(name, str):
        raise TypeError(f"composite: name must be a string, got {name!r}")

    @functools.wraps(decomposition)
    def composite_fn(*args, **kwargs):
        if any(isinstance(v, core.Tracer) for v in tree_flatten(list(kwargs.values()))[0]):
            raise errors.UnexpectedTracerError(
                "Found a JAX Tracer as an attribute in the decomposition for the composite "
                f"op '{name}'. {_TRACER_MSG}\n\nNote: If you are passing jax arrays as "
                "attributes, use numpy arrays instead.")
        flat, in_tree = tree_flatten(args)
        flat = [as_operand(x) for x in flat]
        out_tree = []

        def flat_fun(*xs):
            out = decomposition(*tree_unflatten(in_tree, list(xs)), **kwargs)
            leaves, t = tree_flatten(out)
            out_tree.append(t)
            return [as_operand(v) for v in leaves]

        jaxpr, consts = staging.trace_to_jaxpr(flat_fun, [core.get_aval(x) for x in flat],
                                               name=name)
        if any(isinstance(c, core.Tracer) for c in consts):
            raise errors.UnexpectedTracerError(
                "Found a JAX Tracer as a constant in the decomposition for the composite op "
                f"'{name}'. {_TRACER_MSG}")
        closed = ir.ClosedJaxpr(staging.convert_constvars_to_invars(jaxpr), [])
        attributes = []
        for k, v in kwargs.items():
            leaves, t = tree_flatten(v)
            attributes.append((k, tuple(HashableArray(x) if isinstance(x, np.ndarray) else x
                                        for x in leaves), t))
        outs = composite_p.bind(*consts, *flat, name=name, attributes=tuple(attributes),
                                version=int(version), jaxpr=closed)
        return tree_unflatten(out_tree[0], list(outs))
    composite_fn.composite_name, composite_fn.composite_version = name, version
    return composite_fn

"""``dot_general``: XLA's general contraction, and the lax functions built on it.

Output layout (XLA's): batch dims, then lhs free dims, then rhs free dims, each
in operand order.  The transpose w.r.t. one operand is another dot_general of
the cotangent with the other operand followed by a transpose that puts the
result's axes back in that operand's order; both transposes are one function
(``_transpose_operand``) applied with the roles of lhs and rhs swapped.
"""
from __future__ import annotations

import operator

import functools

import numpy as np

from xform._src.interpreters import ad, batching, core, dtypes, ir
from xform._src.interpreters.ad import Zero, is_undefined_primal
from xform._src.interpreters.core import Primitive, ShapedArray
from xform._src.primitives._rules import moveaxis, zeros_like_aval
from xform._src.primitives.structural import as_operand, transpose_p
from xform._src.primitives import elementwise
from xform._src.primitives import reductions, structural
from xform._src.primitives._rules import bdim_at_front

__all__ = ["dot_general", "dot", "batch_matmul", "Precision", "DotAlgorithm",
           "DotAlgorithmPreset"]


class Precision:
    """Names accepted for ``precision`` (kept as a hashable param; the reference ignores it)."""
    DEFAULT = "DEFAULT"
    HIGH = "HIGH"
    HIGHEST = "HIGHEST"


class DotAlgorithm(__import__("typing").NamedTuple):
    """A dot algorithm given by its operand/accumulation types (JAX's ``lax.DotAlgorithm``),
    accepted as ``precision=``. Like a ``Precision``, it requests how the backend may
    compute the product; the reference computes it exactly in the result type."""
    lhs_precision_type: object
    rhs_precision_type: object
    accumulation_type: object
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(__import__("enum").Enum):
    """JAX's named dot algorithms (``lax.DotAlgorithmPreset``), accepted as ``precision=``."""
    DEFAULT = __import__("enum").auto()
    ANY_F8_ANY_F8_F32 = __import__("enum").auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = __import__("enum").auto()
    ANY_F8_ANY_F8_ANY = __import__("enum").auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = __import__("enum").auto()
    F16_F16_F16 = __import__("enum").auto()
    F16_F16_F32 = __import__("enum").auto()
    BF16_BF16_BF16 = __import__("enum").auto()
    BF16_BF16_F32 = __import__("enum").auto()
    BF16_BF16_F32_X3 = __import__("enum").auto()
    BF16_BF16_F32_X6 = __import__("enum").auto()
    BF16_BF16_F32_X9 = __import__("enum").auto()
    TF32_TF32_F32 = __import__("enum").auto()
    TF32_TF32_F32_X3 = __import__("enum").auto()
    F32_F32_F32 = __import__("enum").auto()
    F64_F64_F64 = __import__("enum").auto()

    def __repr__(self):
        return self.name

    __str__ = __repr__


def _free(ndim, contract, batch):
    return tuple(i for i in range(ndim) if i not in contract and i not in batch)


@functools.lru_cache(maxsize=None)
def _prop(dt):
    """Ranking of dtypes by precision (XLA's HigherPrecisionType)."""
    dt = np.dtype(dt)
    c = dtypes.is_complex(dt)
    base = np.dtype(np.float32 if dt == np.complex64 else np.float64) if c else dt
    fl = dtypes.is_float(base)
    return (c, dtypes.finfo(base).maxexp if fl else -1, dtypes.finfo(base).nmant if fl else -1,
            base.itemsize * 8 if dt != np.bool_ else 1, not dtypes.is_unsigned(base))


def _result_dtype(lhs, rhs, preferred):
    pl, pr = _prop(lhs.dtype), _prop(rhs.dtype)
    if pl == pr and lhs.dtype != rhs.dtype:
        raise TypeError(f"dot_general argument type error: {lhs.str_short()}, {rhs.str_short()}")
    dt = lhs.dtype if pl >= pr else rhs.dtype
    if preferred is None or np.dtype(preferred) == dt:
        return dt
    preferred = np.dtype(preferred)
    if not dtypes.is_float(dt) and preferred.itemsize < dt.itemsize:
        raise TypeError(f"dot_general: preferred_element_type {preferred} must not be narrower "
                        f"than the operand type {dt}")
    return preferred


dot_general_p = Primitive("dot_general")
dot_general_p.xla_eager_dtypes = elementwise.XLA_INEXACT   # NumPy's bits differ from XLA's


_PRECISION_ALIASES = {"BFLOAT16": "DEFAULT", "TENSORFLOAT32": "HIGH", "FLOAT32": "HIGHEST"}


def _pp_precision(precision):
    """A ``precision`` param as JAX prints it: a named precision for each operand,
    ``(Precision.HIGHEST, Precision.HIGHEST)``; dot algorithms as they are."""
    def one(p):
        name = _PRECISION_ALIASES.get(p.upper(), p.upper())
        return f"Precision.{name}" if name in ("DEFAULT", "HIGH", "HIGHEST") else None
    if isinstance(precision, str) and one(precision):
        return f"({one(precision)}, {one(precision)})"
    if (isinstance(precision, tuple) and len(precision) == 2
            and all(isinstance(q, str) and one(q) for q in precision)):
        return f"({one(precision[0])}, {one(precision[1])})"
    return precision


def _pp_dot_general(eqn, names):
    p = {k: v for k, v in eqn.params.items() if v is not None}
    p.pop("out_sharding", None)
    (lc, rc), (lb, rb) = p["dimension_numbers"]
    p["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
    if "precision" in p:
        p["precision"] = _pp_precision(p["precision"])
    return sorted(p.items())


ir.pp_rules[dot_general_p] = _pp_dot_general


class _Where:
    """``for lhs f32[..] and rhs f32[..]``, formatted only when an error message uses it."""

    __slots__ = ("lhs", "rhs")

    def __init__(self, lhs, rhs):
        self.lhs, self.rhs = lhs, rhs

    def __format__(self, spec):
        return f"for lhs {self.lhs.str_short()} and rhs {self.rhs.str_short()}"


def _check_dnums(lhs, rhs, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    where = _Where(lhs, rhs)
    for name, dims, a in (("lhs contracting", lc, lhs), ("rhs contracting", rc, rhs),
                          ("lhs batch", lb, lhs), ("rhs batch", rb, rhs)):
        if any(not 0 <= d < a.ndim for d in dims):
            raise TypeError(f"dot_general: {name} dimensions {dims} out of range {where}")
    for name, c, b in (("lhs", lc, lb), ("rhs", rc, rb)):
        if len(set(c + b)) != len(c) + len(b):
            raise TypeError(f"dot_general: {name} contracting {c} and batch {b} dimensions must "
                            f"be distinct {where}")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"dot_general: dimension_numbers {dimension_numbers} must contract and "
                        f"batch equally many dimensions of each side {where}")
    for l, r in zip(lc, rc):
        if lhs.shape[l] != rhs.shape[r]:
            raise TypeError(f"dot_general requires contracting dimensions to have the same "
                            f"shape, got lhs dim {l} (size {lhs.shape[l]}) and rhs dim {r} "
                            f"(size {rhs.shape[r]}) {where}")
    for l, r in zip(lb, rb):
        if lhs.shape[l] != rhs.shape[r]:
            raise TypeError(f"dot_general requires lhs batch dimensions and rhs batch dimensions "
                            f"to have the same shape, got lhs dim {l} (size {lhs.shape[l]}) and "
                            f"rhs dim {r} (size {rhs.shape[r]}) {where}")


_dot_shapes: dict = {}    # (lhs shape, rhs shape, dimension numbers) -> checked result shape


def _dot_shape(lhs, rhs, dimension_numbers):
    """The result shape, after ``_check_dnums`` (both depend on shapes and dimension
    numbers only, so a checked answer is remembered: large programs repeat them)."""
    key = (lhs.shape, rhs.shape, dimension_numbers)
    try:
        shape = _dot_shapes.get(key)
    except TypeError:           # unhashable dimension numbers or dimensions
        shape, key = None, None
    if shape is None:
        _check_dnums(lhs, rhs, dimension_numbers)
        (lc, rc), (lb, rb) = dimension_numbers
        shape = (tuple(lhs.shape[i] for i in lb)
                 + tuple(lhs.shape[i] for i in _free(lhs.ndim, lc, lb))
                 + tuple(rhs.shape[i] for i in _free(rhs.ndim, rc, rb)))
        if key is not None:
            if len(_dot_shapes) > 10_000:
                _dot_shapes.clear()
            _dot_shapes[key] = shape
    return shape


def _dot_abstract(lhs, rhs, *, dimension_numbers, precision, preferred_element_type):
    shape = _dot_shape(lhs, rhs, dimension_numbers)
    dt = _result_dtype(lhs, rhs, preferred_element_type)
    weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
    return ShapedArray(shape, dt, weak)


def _dot_impl(lhs, rhs, *, dimension_numbers, precision, preferred_element_type):
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    (lc, rc), (lb, rb) = dimension_numbers
    # The operands' own dtypes (get_aval would canonicalize float64 to float32 with x64 off,
    # but a float64 operand that reached the primitive is computed in float64, like XLA).
    out_dt = _result_dtype(ShapedArray(lhs.shape, lhs.dtype), ShapedArray(rhs.shape, rhs.dtype),
                           preferred_element_type)
    if out_dt == np.bool_:
        acc = np.dtype(np.int64)
    elif dtypes.is_integer(out_dt):
        acc = np.dtype(np.uint64 if dtypes.is_unsigned(out_dt) else np.int64)
    elif dtypes.is_complex(out_dt):
        acc = np.dtype(np.complex128)
    else:
        acc = np.dtype(np.float64) if out_dt.itemsize >= 8 else np.dtype(np.float32)
    if not lb and out_dt == acc and out_dt.kind in "fc":
        # No batch dimensions: BLAS through tensordot (free lhs dims, then free rhs dims --
        # XLA's output layout), accumulating in the operand type like XLA.
        return np.asarray(np.tensordot(lhs.astype(acc, copy=False), rhs.astype(acc, copy=False),
                                       axes=(lc, rc)))
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    ls = [next(letters) for _ in range(lhs.ndim)]
    rs = [next(letters) for _ in range(rhs.ndim)]
    for l, r in zip(lc + lb, rc + rb):
        rs[r] = ls[l]
    out = ([ls[i] for i in lb] + [ls[i] for i in _free(lhs.ndim, lc, lb)]
           + [rs[i] for i in _free(rhs.ndim, rc, rb)])
    spec = f"{''.join(ls)},{''.join(rs)}->{''.join(out)}"
    res = np.einsum(spec, lhs.astype(acc, copy=False), rhs.astype(acc, copy=False))
    return np.asarray(res != 0 if out_dt == np.bool_ else res).astype(out_dt)


def _dot_jvp(primals, tangents, **params):
    lhs, rhs = primals
    tl, tr = tangents
    out = dot_general_p.bind(lhs, rhs, **params)
    acc = None
    if type(tl) is not Zero:
        acc = dot_general_p.bind(tl, rhs, **params)
    if type(tr) is not Zero:
        t = dot_general_p.bind(lhs, tr, **params)
        acc = t if acc is None else ad.add_tangents(acc, t)
    return out, acc


def _transpose_operand(ct, other, x_aval, x_dims, other_dims, ct_other_free, params):
    """Cotangent of operand x (dims ``x_dims`` = (contract, batch)) from ct and the other.

    ``ct_other_free``: the positions of the other operand's free dims in ``ct``.
    """
    (xc, xb), (oc, ob) = x_dims, other_dims
    other_aval = core.get_aval(other)
    other_free = _free(other_aval.ndim, oc, ob)
    nb = len(xb)
    dn = ((ct_other_free, other_free), (tuple(range(nb)), ob))
    res = dot_general_p.bind(ct, other, dimension_numbers=dn, precision=params["precision"],
                             preferred_element_type=params["preferred_element_type"])
    # res layout: batch, x free (in x order), then other's contracting dims in sorted order,
    # which pair with x's contracting dims.
    x_free = _free(x_aval.ndim, xc, xb)
    pos = [0] * x_aval.ndim
    for k, d in enumerate(xb):
        pos[d] = k
    for j, d in enumerate(x_free):
        pos[d] = nb + j
    sorted_oc = sorted(oc)
    for d, o in zip(xc, oc):
        pos[d] = nb + len(x_free) + sorted_oc.index(o)
    if pos != list(range(x_aval.ndim)):
        res = transpose_p.bind(res, permutation=tuple(pos))
    if core.get_aval(res).dtype != x_aval.dtype:
        res = elementwise.convert_element_type_p.bind(res, new_dtype=x_aval.dtype,
                                                      weak_type=False)
    return res


def _dot_transpose(ct, lhs, rhs, *, dimension_numbers, **params):
    (lc, rc), (lb, rb) = dimension_numbers
    la = lhs.aval if is_undefined_primal(lhs) else core.get_aval(lhs)
    ra = rhs.aval if is_undefined_primal(rhs) else core.get_aval(rhs)
    nb, nlf = len(lb), len(_free(la.ndim, lc, lb))
    nrf = len(_free(ra.ndim, rc, rb))
    ct_l = ct_r = None
    if is_undefined_primal(lhs):
        ct_l = _transpose_operand(ct, rhs, la, (lc, lb), (rc, rb),
                                  tuple(range(nb + nlf, nb + nlf + nrf)), params)
    if is_undefined_primal(rhs):
        ct_r = _transpose_operand(ct, lhs, ra, (rc, rb), (lc, lb),
                                  tuple(range(nb, nb + nlf)), params)
    return [ct_l, ct_r]


def _dot_batch(axis_data, vals, dims, *, dimension_numbers, **params):
    """Both batched: a new leading dot batch dim.  One batched: a free dim of that side."""
    lhs, rhs = vals
    dl, dr = dims
    (lc, rc), (lb, rb) = dimension_numbers
    shift = lambda ds, d: tuple(i + (i >= d) for i in ds)
    if dl is not None and dr is not None:
        lhs, rhs = moveaxis(lhs, dl, 0), moveaxis(rhs, dr, 0)
        dn = ((shift(lc, 0), shift(rc, 0)), ((0,) + shift(lb, 0), (0,) + shift(rb, 0)))
        return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), 0
    if dl is not None:
        dn = ((shift(lc, dl), rc), (shift(lb, dl), rb))
        free = _free(core.get_aval(lhs).ndim, dn[0][0], dn[1][0])
        return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), \
            len(lb) + free.index(dl)
    dn = ((lc, shift(rc, dr)), (lb, shift(rb, dr)))
    la = core.get_aval(lhs)
    free = _free(core.get_aval(rhs).ndim, dn[0][1], dn[1][1])
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), \
        len(lb) + len(_free(la.ndim, lc, lb)) + free.index(dr)


dot_general_p.def_abstract_eval(_dot_abstract)
dot_general_p.def_impl(_dot_impl)
ad.jvp_rules[dot_general_p] = _dot_jvp
ad.transpose_rules[dot_general_p] = _dot_transpose
batching.batch_rules[dot_general_p] = _dot_batch

# ================================================================= xform.lax functions


def _canon_precision(precision):
    if precision is None or isinstance(precision, str):
        return precision
    if isinstance(precision, DotAlgorithm):
        return "DotAlgorithm(" + ", ".join(str(getattr(f, "__name__", f))
                                           for f in precision) + ")"
    if isinstance(precision, (tuple, list)):
        return tuple(_canon_precision(p) for p in precision)
    return str(getattr(precision, "name", precision))


def _index_tuple(x, what):
    if type(x) is tuple:
        for i in x:
            if type(i) is not int:
                break
        else:
            return x
    try:
        return tuple(operator.index(i) for i in (x if isinstance(x, (tuple, list)) else (x,)))
    except TypeError:
        raise TypeError(f"dot_general: {what} must be integers, got {x!r}") from None


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
                *, out_sharding=None):
    """General contraction; ``dimension_numbers = ((lhs_contract, rhs_contract),
    (lhs_batch, rhs_batch))``."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError("dot_general: dimension_numbers must be ((lhs_contracting, "
                        "rhs_contracting), (lhs_batch, rhs_batch)), got "
                        f"{dimension_numbers!r}") from None
    dn = ((_index_tuple(lc, "contracting dims"), _index_tuple(rc, "contracting dims")),
          (_index_tuple(lb, "batch dims"), _index_tuple(rb, "batch dims")))
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(
        preferred_element_type)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn,
                        precision=_canon_precision(precision), preferred_element_type=pet)


def dot(lhs, rhs, *, dimension_numbers=None, precision=None, preferred_element_type=None,
        out_sharding=None):
    """Vector/matrix products (or ``dot_general`` when ``dimension_numbers`` is given)."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    if dimension_numbers is None:
        ls, rs = core.get_aval(lhs).shape, core.get_aval(rhs).shape
        if 1 <= len(ls) <= 2 and 1 <= len(rs) <= 2 and ls[-1] == rs[0]:
            dimension_numbers = (((len(ls) - 1,), (0,)), ((), ()))
        else:
            raise TypeError(
                "lax.dot: dimension_numbers must be specified when not performing a simple "
                f"un-batched matrix-matrix, matrix-vector or vector-vector product; got lhs "
                f"shape {ls} and rhs shape {rs} (use lax.dot_general or jnp.matmul)")
    return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)


def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over matching leading batch dims: (..., m, k) @ (..., k, n)."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    la, ra = core.get_aval(lhs), core.get_aval(rhs)
    if min(la.ndim, ra.ndim) < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {la.shape}, "
                         f"{ra.shape}")
    if la.ndim != ra.ndim:
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {la.ndim}, "
                         f"{ra.ndim}")
    batch = tuple(range(la.ndim - 2))
    return dot_general(lhs, rhs, (((la.ndim - 1,), (ra.ndim - 2,)), (batch, batch)), precision)


# ================================================================= ragged_dot_general
#
# A dot_general whose lhs has one *ragged* dimension cut into ``g`` consecutive groups of
# ``group_sizes`` positions (positions past the last group belong to none).  Three modes,
# by the kind of the ragged dimension (JAX's):
#   non-contracting: [b.., m.., k..] x [g, b.., k.., n..]  -> [b.., m.., n..]; the rows of
#                    group i use rhs slice i of the rhs group dimension;
#   contracting:     [b.., m.., k..] x [b.., k.., n..]     -> [g, b.., m.., n..]; output i
#                    contracts only over the positions of group i;
#   batch:           an ordinary dot_general (every batch row is in exactly one group).
# ``group_sizes`` has shape [g] or [p.., g], where p.. are the "prefix" dimensions of the
# lhs: its batch dimensions, then its dimensions of the ragged kind that come before the
# ragged one (JAX's layout), so each prefix row has its own group sizes.
#
# Every mode is a dense dot_general of "expanded" operands: x -> [g, *x.shape], slice i
# holding x on the positions of group i along the ragged dimension and 0 elsewhere (the
# mask ``starts[i] <= pos < ends[i]``).  The NumPy reference and the lowering both compute
# that (the lowering stages the expansion with lax operations and inlines it).


class RaggedDotDimensionNumbers:
    """JAX's ``lax.RaggedDotDimensionNumbers`` (a frozen record): the dot dimension
    numbers ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` plus the lhs
    ragged and rhs group dimensions of a ragged dot."""

    __slots__ = ("dot_dimension_numbers", "lhs_ragged_dimensions", "rhs_group_dimensions")

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        object.__setattr__(self, "dot_dimension_numbers",
                           tuple(tuple(tuple(v) for v in t) for t in dot_dimension_numbers))
        object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r}")

    def _key(self):
        return (self.dot_dimension_numbers, self.lhs_ragged_dimensions,
                self.rhs_group_dimensions)

    def __eq__(self, other):
        return isinstance(other, RaggedDotDimensionNumbers) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"RaggedDotDimensionNumbers(dot_dimension_numbers="
                f"{self.dot_dimension_numbers!r}, lhs_ragged_dimensions="
                f"{self.lhs_ragged_dimensions!r}, rhs_group_dimensions="
                f"{self.rhs_group_dimensions!r})")


_BASIC_RAGGED_DNUMS = RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))

_NONCONTRACTING, _CONTRACTING, _BATCH = "non-contracting", "contracting", "batch"


def _ragged_mode(ndim, rdn):
    """(mode, lhs ragged dimension)."""
    rd = rdn.lhs_ragged_dimensions[0]
    (lc, _), (lb, _) = rdn.dot_dimension_numbers
    if rd in lc:
        return _CONTRACTING, rd
    if rd in lb:
        return _BATCH, rd
    return _NONCONTRACTING, rd


def _ragged_prefix(mode, ndim, rd, batch, contract):
    """The operand's dimensions a [p.., g] group_sizes indexes with p.. (JAX's order)."""
    batch, contract = list(batch), list(contract)
    if mode == _NONCONTRACTING:
        free = [d for d in range(ndim) if d not in contract and d not in batch]
        return tuple(batch + free[:free.index(rd)])
    if mode == _CONTRACTING:
        return tuple(batch + contract[:contract.index(rd)])
    return tuple(batch[:batch.index(rd)])


def _ragged_abstract(lhs, rhs, group_sizes, *, ragged_dot_dimension_numbers, precision,
                     preferred_element_type, group_offset):
    rdn = ragged_dot_dimension_numbers

    def in_range(dim, rank, what, arg):
        if not 0 <= dim < rank:
            raise TypeError(f"ragged_dot_general requires {what} numbers to be nonnegative "
                            f"and less than the number of axes of the {arg} value, got {dim} "
                            f"for {arg} of rank {rank}.")

    if len(rdn.lhs_ragged_dimensions) != 1:
        raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension.")
    in_range(rdn.lhs_ragged_dimensions[0], lhs.ndim, "lhs ragged dimension", "lhs")
    mode, rd = _ragged_mode(lhs.ndim, rdn)
    (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
    if group_sizes.ndim == 0:
        raise TypeError("expected rank of group_sizes to be >=1.")
    if group_sizes.ndim != 1:
        prefix = _ragged_prefix(mode, lhs.ndim, rd, lb, lc)
        expected = tuple(lhs.shape[i] for i in prefix) + (group_sizes.shape[-1],)
        if tuple(group_sizes.shape) != expected:
            raise TypeError(f"expected group_sizes to have shape {expected}, got "
                            f"{tuple(group_sizes.shape)}.")
    g = group_sizes.shape[-1]
    rg = rdn.rhs_group_dimensions
    if mode != _NONCONTRACTING:
        if len(rg) != 0:
            raise TypeError("ragged_dot_general requires zero group dimensions in the rhs "
                            "when lhs ragged dimension is contracting or batch.")
    else:
        if len(rg) != 1:
            raise TypeError("ragged_dot_general requires exactly one rhs group dimension "
                            "when lhs ragged dimension is noncontracting.")
        in_range(rg[0], rhs.ndim, "rhs group dimension", "rhs")
        if rg[0] in rb or rg[0] in rc:
            raise TypeError("ragged_dot_general requires rhs group dimension numbers to be "
                            "distinct from contracting and batch dimensions.")
        if rhs.shape[rg[0]] != g:
            raise TypeError(f"expected rhs group dimension size to be {g}, got "
                            f"{rhs.shape[rg[0]]}.")
    _check_dnums(lhs, rhs, rdn.dot_dimension_numbers)
    shape = (tuple(lhs.shape[i] for i in lb)
             + tuple(lhs.shape[i] for i in _free(lhs.ndim, lc, lb))
             + tuple(rhs.shape[i] for i in _free(rhs.ndim, rc, tuple(rb) + tuple(rg))))
    if mode == _CONTRACTING:
        shape = (g,) + shape
    if not dtypes.is_integer(group_sizes.dtype) or group_sizes.dtype == np.bool_:
        raise TypeError("ragged_dot_general requires that group_sizes.dtype is subtype of "
                        f"np.integer, got {group_sizes.dtype}.")
    dt = _result_dtype(lhs, rhs, preferred_element_type)
    weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
    return ShapedArray(shape, dt, weak)


def _expanded_np(x, dim, gs, prefix):
    """NumPy: ``[g, *x.shape]``, slice i = x on group i's positions along ``dim``, else 0.
    ``gs`` has shape ``[x.shape[p] for p in prefix] + [g]``."""
    g = gs.shape[-1]
    ends = np.cumsum(gs.astype(np.int64), axis=-1)
    starts = ends - gs
    order = tuple(np.argsort(prefix))            # prefix axes in x's dimension order
    bshape = (g,) + tuple(x.shape[d] if d in prefix else 1 for d in range(x.ndim))

    def place(b):
        b = np.moveaxis(b, -1, 0).transpose((0,) + tuple(1 + o for o in order))
        return b.reshape(bshape)

    pos = np.arange(x.shape[dim]).reshape([x.shape[dim] if d == dim + 1 else 1
                                           for d in range(x.ndim + 1)])
    mask = (place(starts) <= pos) & (pos < place(ends))
    return np.where(mask, x[None], np.zeros((), x.dtype))


def _inc(dims):
    return tuple(d + 1 for d in dims)


def _ragged_dense_dnums(mode, rdn):
    """dot_general dimension numbers of the expanded operands."""
    (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
    if mode == _NONCONTRACTING:            # expanded lhs x rhs: contract the group axis too
        return ((_inc(lc) + (0,), tuple(rc) + (rdn.rhs_group_dimensions[0],)), (_inc(lb), rb))
    return ((_inc(lc), _inc(rc)), ((0,) + _inc(lb), (0,) + _inc(rb)))   # group axis batched


def _ragged_impl(lhs, rhs, group_sizes, *, ragged_dot_dimension_numbers, precision,
                 preferred_element_type, group_offset):
    lhs, rhs, gs = np.asarray(lhs), np.asarray(rhs), np.asarray(group_sizes)
    rdn = ragged_dot_dimension_numbers
    kw = dict(precision=precision, preferred_element_type=preferred_element_type)
    mode, rd = _ragged_mode(lhs.ndim, rdn)
    (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
    if mode == _BATCH:
        return _dot_impl(lhs, rhs, dimension_numbers=rdn.dot_dimension_numbers, **kw)
    prefix = _ragged_prefix(mode, lhs.ndim, rd, lb, lc)
    if gs.ndim == 1:
        gs = np.broadcast_to(gs, tuple(lhs.shape[i] for i in prefix) + gs.shape)
    el = _expanded_np(lhs, rd, gs, prefix)
    if mode == _NONCONTRACTING:
        er = rhs
    else:
        rrd = rc[list(lc).index(rd)]
        er = _expanded_np(rhs, rrd, gs, _ragged_prefix(mode, rhs.ndim, rrd, rb, rc))
    return _dot_impl(el, er, dimension_numbers=_ragged_dense_dnums(mode, rdn), **kw)


# --- the same expansion with lax operations (the lowering, the dense transposes) -------

def _full_group_sizes(gs, x_aval, prefix):
    """group_sizes as ``[p.., g]`` (a ``[g]`` one broadcast over the prefix dimensions)."""
    ga = core.get_aval(gs)
    if ga.ndim == 1 and prefix:
        shape = tuple(x_aval.shape[i] for i in prefix) + ga.shape
        gs = structural.broadcast_in_dim(gs, shape, (len(prefix),))
    return gs


def _group_mask(gs, x_aval, dim, prefix):
    """bool ``[g, *x.shape]``: True where position ``pos`` along ``dim`` is in group i."""
    ga = core.get_aval(gs)
    # count in at least 32 bits (a narrow group_sizes dtype must not wrap the positions)
    dt = ga.dtype if ga.dtype.itemsize >= 4 else np.dtype(
        np.uint32 if dtypes.is_unsigned(ga.dtype) else np.int32)
    if dt != ga.dtype:
        gs = elementwise.convert_element_type(gs, dt)
    ends = reductions.cumsum(gs, axis=ga.ndim - 1)
    starts = elementwise.sub(ends, gs)
    g = ga.shape[-1]
    shape = (g,) + tuple(x_aval.shape)
    bd = tuple(1 + p for p in prefix) + (0,)
    order = tuple(int(i) for i in np.argsort(bd))
    sorted_bd = tuple(bd[i] for i in order)

    def place(b):
        return structural.broadcast_in_dim(structural.transpose(b, order), shape, sorted_bd)

    pos = structural.broadcasted_iota(dt, shape, dim + 1)
    return elementwise.bitwise_and(elementwise.le(place(starts), pos),
                                   elementwise.lt(pos, place(ends)))


def _zeros(aval):
    # exactly aval's dtype (a float64 operand reached with x64 off stays float64)
    return _to_dtype(zeros_like_aval(aval), aval)


def _expanded(x, dim, gs, prefix):
    xa = core.get_aval(x)
    mask = _group_mask(gs, xa, dim, prefix)
    shape = (core.get_aval(mask).shape[0],) + tuple(xa.shape)
    bx = structural.broadcast_in_dim(x, shape, tuple(range(1, xa.ndim + 1)))
    return elementwise.select_n(mask, _zeros(core.get_aval(bx)), bx)


def ragged_dot_dense(lhs, rhs, group_sizes, *, ragged_dot_dimension_numbers, precision,
                     preferred_element_type, group_offset):
    """The ragged dot written with lax operations (what the lowering inlines)."""
    rdn = ragged_dot_dimension_numbers
    kw = dict(precision=precision, preferred_element_type=preferred_element_type)
    la, ra = core.get_aval(lhs), core.get_aval(rhs)
    mode, rd = _ragged_mode(la.ndim, rdn)
    (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
    if mode == _BATCH:
        return dot_general_p.bind(lhs, rhs, dimension_numbers=rdn.dot_dimension_numbers, **kw)
    prefix = _ragged_prefix(mode, la.ndim, rd, lb, lc)
    gs = _full_group_sizes(group_sizes, la, prefix)
    el = _expanded(lhs, rd, gs, prefix)
    if mode == _NONCONTRACTING:
        er = rhs
    else:
        rrd = rc[list(lc).index(rd)]
        er = _expanded(rhs, rrd, gs, _ragged_prefix(mode, ra.ndim, rrd, rb, rc))
    return dot_general_p.bind(el, er, dimension_numbers=_ragged_dense_dnums(mode, rdn), **kw)


def _ragged_jvp(primals, tangents, **params):
    x, y, gs = primals
    tx, ty, _ = tangents                   # group_sizes is integer: no tangent
    out = ragged_dot_general_p.bind(x, y, gs, **params)
    acc = None
    if type(tx) is not Zero:
        acc = ragged_dot_general_p.bind(tx, y, gs, **params)
    if type(ty) is not Zero:
        t = ragged_dot_general_p.bind(x, ty, gs, **params)
        acc = t if acc is None else ad.add_tangents(acc, t)
    return out, acc


def _to_dtype(x, aval):
    if core.get_aval(x).dtype != aval.dtype:
        x = elementwise.convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=False)
    return x


def _ragged_transpose(ct, x, y, group_sizes, *, ragged_dot_dimension_numbers, **params):
    rdn = ragged_dot_dimension_numbers
    if is_undefined_primal(group_sizes):
        raise ValueError("ragged_dot_general is not linear in group_sizes")
    xa = x.aval if is_undefined_primal(x) else core.get_aval(x)
    ya = y.aval if is_undefined_primal(y) else core.get_aval(y)
    (xc, yc), (xb, yb) = rdn.dot_dimension_numbers
    mode, rd = _ragged_mode(xa.ndim, rdn)
    dparams = dict(precision=params["precision"],
                   preferred_element_type=params["preferred_element_type"])
    ct_x = ct_y = None
    if mode == _BATCH:
        return _dot_transpose(ct, x, y, dimension_numbers=rdn.dot_dimension_numbers,
                              **dparams) + [None]
    if mode == _NONCONTRACTING:
        # Ragged dots again: the cotangent's rows keep their groups.
        yg = tuple(rdn.rhs_group_dimensions)
        x_kept = _free(xa.ndim, xc, xb)
        y_kept = tuple(d for d in range(ya.ndim) if d not in yc and d not in yb and d not in yg)
        nb, nxk = len(xb), len(x_kept)
        ans_b = tuple(range(nb))
        ans_x = tuple(range(nb, nb + nxk))
        ans_y = tuple(range(nb + nxk, nb + nxk + len(y_kept)))
        if is_undefined_primal(x):
            dn = RaggedDotDimensionNumbers(((ans_y, y_kept), (ans_b, yb)),
                                           (nb + x_kept.index(rd),), yg)
            r = ragged_dot_general_p.bind(ct, y, group_sizes, ragged_dot_dimension_numbers=dn,
                                          **params)
            axes = tuple(xb) + x_kept + tuple(np.take(xc, np.argsort(yc)))
            ct_x = _to_dtype(structural.transpose(r, tuple(int(i) for i in np.argsort(axes))),
                             xa)
        if is_undefined_primal(y):
            dn = RaggedDotDimensionNumbers(((x_kept, ans_x), (tuple(xb), ans_b)), (rd,), ())
            r = ragged_dot_general_p.bind(x, ct, group_sizes, ragged_dot_dimension_numbers=dn,
                                          **params)
            axes = yg + tuple(yb) + tuple(np.take(yc, np.argsort(xc))) + y_kept
            ct_y = _to_dtype(structural.transpose(r, tuple(int(i) for i in np.argsort(axes))),
                             ya)
        return [ct_x, ct_y, None]
    # Contracting: transpose the dense form  out = dot(expand(x), expand(y)) batched over
    # the groups; the cotangent of an expanded operand is masked and summed over groups.
    yd = yc[list(xc).index(rd)]
    x_prefix = _ragged_prefix(mode, xa.ndim, rd, xb, xc)
    y_prefix = _ragged_prefix(mode, ya.ndim, yd, yb, yc)
    gs = _full_group_sizes(group_sizes, xa, x_prefix)
    dn = _ragged_dense_dnums(mode, rdn)
    g = core.get_aval(gs).shape[-1]

    def expanded_aval(a):
        return ShapedArray((g,) + tuple(a.shape), a.dtype)

    def fold(ct_e, a, dim, prefix):
        mask = _group_mask(gs, a, dim, prefix)
        ct_e = elementwise.select_n(mask, _zeros(core.get_aval(ct_e)), ct_e)
        return _to_dtype(reductions.reduce_sum(ct_e, (0,)), a)

    if is_undefined_primal(x):
        ey = _expanded(y, yd, gs, y_prefix)
        ct_e = _dot_transpose(ct, ad.UndefinedPrimal(expanded_aval(xa)), ey,
                              dimension_numbers=dn, **dparams)[0]
        ct_x = fold(ct_e, xa, rd, x_prefix)
    if is_undefined_primal(y):
        ex = _expanded(x, rd, gs, x_prefix)
        ct_e = _dot_transpose(ct, ex, ad.UndefinedPrimal(expanded_aval(ya)),
                              dimension_numbers=dn, **dparams)[1]
        ct_y = fold(ct_e, ya, yd, y_prefix)
    return [ct_x, ct_y, None]


def _ragged_batch(axis_data, vals, dims, *, ragged_dot_dimension_numbers, **params):
    """A new leading batch dimension on both operands (and group_sizes' prefix)."""
    lhs, rhs, gs = vals
    dl, dr, dg = dims
    size = axis_data.size
    rdn = ragged_dot_dimension_numbers
    la = core.get_aval(lhs)
    lhs_nd = la.ndim - (dl is not None)
    mode, rd = _ragged_mode(lhs_nd, rdn)
    (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
    lhs, rhs = bdim_at_front(lhs, dl, size), bdim_at_front(rhs, dr, size)
    new = RaggedDotDimensionNumbers(((_inc(lc), _inc(rc)), ((0,) + _inc(lb), (0,) + _inc(rb))),
                                    _inc(rdn.lhs_ragged_dimensions),
                                    _inc(rdn.rhs_group_dimensions))
    nla = core.get_aval(lhs)
    prefix = _ragged_prefix(mode, nla.ndim, rd + 1, (0,) + _inc(lb), _inc(lc))
    ga = core.get_aval(gs)
    target = tuple(nla.shape[i] for i in prefix) + (ga.shape[-1],)
    if dg is not None:
        gs = moveaxis(gs, dg, 0)
        nd = ga.ndim - 1
        gs = structural.broadcast_in_dim(
            gs, target, (0,) + tuple(range(len(target) - nd, len(target))))
    elif ga.ndim > 1:
        gs = structural.broadcast_in_dim(gs, target, tuple(range(1, len(target))))
    out = ragged_dot_general_p.bind(lhs, rhs, gs, ragged_dot_dimension_numbers=new, **params)
    return out, (1 if mode == _CONTRACTING else 0)


ragged_dot_general_p = Primitive("ragged_dot_general")
ragged_dot_general_p.def_abstract_eval(_ragged_abstract)
ragged_dot_general_p.def_impl(_ragged_impl)
ad.jvp_rules[ragged_dot_general_p] = _ragged_jvp
ad.transpose_rules[ragged_dot_general_p] = _ragged_transpose
batching.batch_rules[ragged_dot_general_p] = _ragged_batch


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None):
    """A ``dot_general`` whose lhs ragged dimension is split into consecutive groups of
    ``group_sizes`` positions: a non-contracting ragged dimension takes the rhs slice of
    its group (rhs group dimension), a contracting one gives one output per group (a new
    leading dimension), a batch one is an ordinary batched dot."""
    if not isinstance(ragged_dot_dimension_numbers, RaggedDotDimensionNumbers):
        raise TypeError("ragged_dot_general: ragged_dot_dimension_numbers must be a "
                        "lax.RaggedDotDimensionNumbers, got "
                        f"{ragged_dot_dimension_numbers!r}")
    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support.")
    lhs, rhs, gs = as_operand(lhs), as_operand(rhs), as_operand(group_sizes)
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(
        preferred_element_type)
    return ragged_dot_general_p.bind(lhs, rhs, gs,
                        ragged_dot_dimension_numbers=ragged_dot_dimension_numbers,
                        precision=_canon_precision(precision), preferred_element_type=pet,
                        group_offset=None)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
    """``lhs [m, k]`` times ``rhs [g, k, n]``: the rows of group ``i`` (``group_sizes[i]``
    consecutive rows) use ``rhs[i]``; rows past the last group are zero."""
    return ragged_dot_general(lhs, rhs, group_sizes, _BASIC_RAGGED_DNUMS, precision,
                              preferred_element_type, group_offset, out_sharding)


__all__ += ["ragged_dot", "ragged_dot_general", "RaggedDotDimensionNumbers"]

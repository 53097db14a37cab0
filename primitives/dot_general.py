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
from xform._src.primitives._rules import moveaxis
from xform._src.primitives.structural import as_operand, checked_bind, transpose_p
from xform._src.primitives import elementwise

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


def _pp_dot_general(eqn, names):
    p = {k: v for k, v in eqn.params.items() if v is not None}
    p.pop("out_sharding", None)
    (lc, rc), (lb, rb) = p["dimension_numbers"]
    p["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
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
dot_general_p.weak_rule = lambda args, params: (core.is_weak(args[0]) and core.is_weak(args[1])
                                                and params["preferred_element_type"] is None)
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
    return checked_bind(dot_general_p, lhs, rhs, dimension_numbers=dn,
                        precision=_canon_precision(precision), preferred_element_type=pet)


def dot(lhs, rhs, precision=None, preferred_element_type=None, *, dimension_numbers=None,
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

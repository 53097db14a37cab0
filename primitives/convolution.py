"""``conv_general_dilated``: XLA's general convolution, and the lax functions built on it.

Canonical layout: lhs (N, C, *spatial), rhs (O, I, *window), out (N, O, *spatial);
``dimension_numbers = ConvDimensionNumbers(lhs_spec, rhs_spec, out_spec)`` says where
each canonical dimension lives in the actual arrays (``lhs_spec[0]`` is lhs's batch
axis, ``lhs_spec[1]`` its feature axis, ``lhs_spec[2:]`` its spatial axes, ...).

The reference dilates lhs (zeros between elements), pads (negative = crop), dilates the
kernel, takes strided windows and contracts them with the kernel group by group.  With
``feature_group_count = G`` lhs features split into G groups, each convolved with its
own slice of O/G kernel output features; with ``batch_group_count = B`` the lhs *batch*
splits into B groups (group-major) and the output batch is N/B.

Convolution is bilinear: the JVP is two convolutions, and both transposes are again
convolutions (the lhs transpose is a convolution of the cotangent with the spatially
reversed kernel, strides and lhs dilation trading places; the rhs transpose convolves
lhs with the cotangent, feature groups becoming batch groups and vice versa -- the
formulas of JAX's ``convolution.py`` / XLA's convolution gradients).
The batching rule never loops: a batch axis is folded into the batch dimension (lhs
batched), the kernel output features (rhs batched), or feature/batch groups (both).
"""
from __future__ import annotations

import math
import operator
from collections import namedtuple

import numpy as np

from xform._src.interpreters import ad, batching, core, dtypes, ir
from xform._src.interpreters.ad import Zero, is_undefined_primal
from xform._src.interpreters.core import Primitive, ShapedArray
from xform._src.primitives._rules import moveaxis
from xform._src.primitives.dot_general import _canon_precision, _pp_precision, _result_dtype
from xform._src.primitives.structural import (as_operand, broadcast_in_dim_p, reshape_p,
                                   rev_p, transpose_p)
from xform._src.primitives import elementwise
from xform._src.primitives.dot_general import dot_general

__all__ = ["conv_general_dilated", "conv", "conv_with_general_padding", "conv_transpose",
           "conv_dimension_numbers", "conv_general_permutations", "conv_general_shape_tuple",
           "conv_shape_tuple", "conv_transpose_shape_tuple", "conv_general_dilated_patches",
           "conv_general_dilated_local", "padtype_to_pads", "ConvDimensionNumbers",
           "ConvGeneralDilatedDimensionNumbers", "conv_general_dilated_p"]


class ConvDimensionNumbers(namedtuple("ConvDimensionNumbers", ["lhs_spec", "rhs_spec",
                                                               "out_spec"])):
    """Positions of (batch, feature, *spatial) in lhs, (out feature, in feature, *spatial)
    in rhs and (batch, feature, *spatial) in the output."""


ConvGeneralDilatedDimensionNumbers = object   # typing alias in JAX (None | tuple | CDN)

# ----------------------------------------------------------------- shape helpers


def _dilate_dim(d, r):
    return 0 if d == 0 else 1 + r * (d - 1)


def _stride_dim(d, window, stride):
    return 0 if d < window else (d - window) // stride + 1


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """'SAME' / 'SAME_LOWER' / 'VALID' -> explicit (low, high) pairs per spatial dim."""
    # Python ints out, whatever integer types come in (JAX's promise)
    in_shape, window_shape, window_strides = ([int(v) for v in a] for a in (
        in_shape, window_shape, window_strides))
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return [(0, 0)] * len(in_shape)
        if mode in ("SAME", "SAME_LOWER"):
            out = [-(-int(i) // int(s)) for i, s in zip(in_shape, window_strides)]
            pads = [max((o - 1) * s + k - i, 0)
                    for o, s, k, i in zip(out, window_strides, window_shape, in_shape)]
            if mode == "SAME":
                return [(p // 2, p - p // 2) for p in pads]
            return [(p - p // 2, p // 2) for p in pads]
        raise ValueError(f"Unknown padding type: {padding!r}; expected 'SAME', 'SAME_LOWER', "
                         "'VALID' or a sequence of (low, high) pairs")
    raise TypeError(f"padding must be a string, got {padding!r}")


def conv_general_permutations(dimension_numbers):
    """('NHWC', 'HWIO', 'NHWC') -> the three spec tuples (positions of N, C, spatial...)."""
    if not (isinstance(dimension_numbers, (tuple, list)) and len(dimension_numbers) == 3
            and all(isinstance(s, str) for s in dimension_numbers)):
        raise TypeError("convolution dimension_numbers must be three strings (lhs, rhs, out "
                        f"specs such as ('NHWC', 'HWIO', 'NHWC')), got {dimension_numbers!r}")
    lhs_s, rhs_s, out_s = dimension_numbers
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(pairs):
        spec = dimension_numbers[i]
        if not spec.count(a) == spec.count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {spec}.")
        if len(spec) != len(set(spec)):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                            f"characters, got {spec}.")
    if not (set(lhs_s) - {"N", "C"} == set(rhs_s) - {"O", "I"} == set(out_s) - {"N", "C"}):
        raise TypeError("convolution dimension_numbers elements must each have the same set "
                        f"of spatial characters, got {dimension_numbers}.")
    rhs_spatial = [c for c in rhs_s if c not in "OI"]

    def perm(spec, pair):
        sp = sorted((i for i, c in enumerate(spec) if c not in pair),
                    key=lambda i: rhs_spatial.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(sp)
    return tuple(perm(s, p) for s, p in zip(dimension_numbers, pairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """None / (lhs, rhs, out) strings / ConvDimensionNumbers -> ConvDimensionNumbers."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if isinstance(dimension_numbers, (list, tuple)):
        if len(dimension_numbers) != 3:
            raise TypeError("convolution dimension_numbers list/tuple must be length 3, got "
                            f"{len(dimension_numbers)}.")
        if not all(isinstance(e, str) for e in dimension_numbers):
            if all(isinstance(e, (tuple, list)) for e in dimension_numbers):
                return ConvDimensionNumbers(*(tuple(int(i) for i in s)
                                              for s in dimension_numbers))
            raise TypeError("convolution dimension_numbers elements must be strings, got "
                            f"{tuple(map(type, dimension_numbers))}.")
        for i, e in enumerate(dimension_numbers):
            if len(e) != len(lhs_shape):
                raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to "
                                f"the ndim of lhs and rhs, got {len(e)} for lhs and rhs shapes "
                                f"{tuple(lhs_shape)} and {tuple(rhs_shape)}.")
        return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))
    raise TypeError("convolution dimension_numbers must be tuple/list or None, got "
                    f"{type(dimension_numbers)}.")


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """Output shape of a convolution with canonical (N, C, ...) / (O, I, ...) shapes; as
    JAX's, the spatial sizes are NumPy integers."""
    out = _conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count)
    return out[:2] + tuple(np.int64(d) for d in out[2:])


def _conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """``conv_shape_tuple`` in Python ints (what the abstract evaluation uses)."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    padded = [int(d) + int(lo) + int(hi) for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError("Negative padding is larger than the size of the corresponding "
                         f"dimension: got padding={tuple(pads)} for lhs_shape[2:]="
                         f"{tuple(lhs_shape[2:])}")
    space = tuple(_stride_dim(p, int(k), int(s)) for p, k, s in zip(padded, rhs_shape[2:],
                                                                      strides))
    n = int(lhs_shape[0]) // batch_group_count
    return (n, int(rhs_shape[0])) + space


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers):
    lp, rp, op = conv_general_permutations(dimension_numbers)
    out = _conv_shape_tuple([lhs_shape[i] for i in lp], [rhs_shape[i] for i in rp],
                            window_strides, padding)
    return tuple(np.take(out, np.argsort(op)))   # NumPy integers, as JAX's


def _conv_transpose_padding(k, s, padding):
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else int(math.ceil(pad_len / 2))
    elif padding == "VALID":
        pad_len = k + s - 2 + max(k - s, 0)
        pad_a = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        pad_a, pad_len = pads[0], sum(pads)
    else:
        raise ValueError(f"Invalid padding mode: {padding!r}; expected 'SAME', 'VALID' or "
                         "(low, high) pairs")
    return pad_a, pad_len - pad_a


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
    lp, rp, op = conv_general_permutations(dimension_numbers)
    lt = [lhs_shape[i] for i in lp]
    rt = [rhs_shape[i] for i in rp]
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding) for k, s in zip(rt[2:],
                                                                          window_strides)]
    padding = [sum(p) for p in padding]
    space = [(i - 1) * s - k + 2 + p for i, k, s, p in zip(lt[2:], rt[2:], window_strides,
                                                            padding)]
    out = (lt[0], rt[0]) + tuple(space)
    return tuple(np.take(out, np.argsort(op)))   # NumPy integers, as JAX's


# ----------------------------------------------------------------- the primitive

conv_general_dilated_p = Primitive("conv_general_dilated")
conv_general_dilated_p.xla_eager_dtypes = elementwise.XLA_INEXACT   # NumPy's bits differ from XLA's


def _conv_abstract(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type):
    where = f"for lhs {lhs.str_short()} and rhs {rhs.str_short()}"
    if lhs.ndim != rhs.ndim:
        raise ValueError("conv_general_dilated lhs and rhs must have the same number of "
                         f"dimensions, but got {lhs.shape} and {rhs.shape}.")
    if lhs.ndim < 2:
        raise ValueError(f"conv_general_dilated needs operands of rank >= 2 {where}")
    ls, rs, os_ = dimension_numbers
    for name, s in (("lhs_spec", ls), ("rhs_spec", rs), ("out_spec", os_)):
        if sorted(s) != list(range(lhs.ndim)):
            raise TypeError(f"conv_general_dilated: dimension_numbers.{name} {s} must be a "
                            f"permutation of range({lhs.ndim}) {where}")
    nsp = lhs.ndim - 2
    for name, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                    ("rhs_dilation", rhs_dilation), ("padding", padding)):
        if len(v) != nsp:
            raise ValueError(f"conv_general_dilated {name} must have {nsp} entries (one per "
                             f"spatial dimension), got {v} {where}")
    for name, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                    ("rhs_dilation", rhs_dilation)):
        if any(int(x) < 1 for x in v):
            raise ValueError(f"conv_general_dilated {name} must be positive, got {v}")
    G, B = feature_group_count, batch_group_count
    if not G > 0:
        raise ValueError("conv_general_dilated feature_group_count must be a positive "
                         f"integer, got {G}.")
    if not B > 0:
        raise ValueError("conv_general_dilated batch_group_count must be a positive "
                         f"integer, got {B}.")
    if G > 1 and B > 1:
        raise ValueError("At most one of batch_group_count and feature_group_count may be > "
                         f"1, got batch_group_count={B} and feature_group_count={G}")
    C, I, O = lhs.shape[ls[1]], rhs.shape[rs[1]], rhs.shape[rs[0]]
    if C % G:
        raise ValueError("conv_general_dilated feature_group_count must divide lhs feature "
                         f"dimension size, but {G} does not divide {C}.")
    if C // G != I:
        raise ValueError("conv_general_dilated lhs feature dimension size divided by "
                         "feature_group_count must equal the rhs input feature dimension "
                         f"size, but {C} // {G} != {I}.")
    if O % G:
        raise ValueError("conv_general_dilated rhs output feature dimension size must be a "
                         f"multiple of feature_group_count, but {O} is not a multiple of {G}.")
    if B > 1 and lhs.shape[ls[0]] % B:
        raise ValueError("conv_general_dilated batch_group_count must divide lhs batch "
                         f"dimension size, but {B} does not divide {lhs.shape[ls[0]]}.")
    if O % B:
        raise ValueError("conv_general_dilated rhs output feature dimension size must be a "
                         f"multiple of batch_group_count, but {O} is not a multiple of {B}.")
    lt = [lhs.shape[i] for i in ls]
    rt = [rhs.shape[i] for i in rs]
    lt = lt[:2] + [_dilate_dim(d, r) for d, r in zip(lt[2:], lhs_dilation)]
    rt = rt[:2] + [_dilate_dim(d, r) for d, r in zip(rt[2:], rhs_dilation)]
    out = _conv_shape_tuple(lt, rt, window_strides, padding, B)
    shape = tuple(np.take(out, np.argsort(os_)).tolist())
    if lhs.dtype != rhs.dtype:
        raise TypeError("conv_general_dilated requires arguments to have the same dtypes, got "
                        f"{lhs.dtype}, {rhs.dtype}.")
    dt = _result_dtype(lhs, rhs, preferred_element_type)
    return ShapedArray(shape, dt, lhs.weak_type and rhs.weak_type
                       and preferred_element_type is None)


def _acc_dtype(dt):
    dt = np.dtype(dt)
    if dt == np.bool_:
        return np.dtype(np.int64)
    if dtypes.is_integer(dt):
        return np.dtype(np.uint64 if dtypes.is_unsigned(dt) else np.int64)
    if dtypes.is_complex(dt):
        return np.dtype(np.complex128)
    return np.dtype(np.float64) if dt.itemsize >= 8 else np.dtype(np.float32)


def _dilate_np(x, dil, first):
    """Insert ``d - 1`` zeros between elements along axes ``first, first + 1, ...``."""
    if all(d == 1 for d in dil):
        return x
    shape = list(x.shape)
    idx = [slice(None)] * x.ndim
    for k, d in enumerate(dil):
        shape[first + k] = _dilate_dim(x.shape[first + k], d)
        idx[first + k] = slice(None, None, d)
    z = np.zeros(shape, x.dtype)
    z[tuple(idx)] = x
    return z


def _pad_np(x, pads, first):
    """Pad (negative entries crop) axes ``first, ...``."""
    width = [(0, 0)] * x.ndim
    crop = [slice(None)] * x.ndim
    for k, (lo, hi) in enumerate(pads):
        a = first + k
        width[a] = (max(lo, 0), max(hi, 0))
    x = np.pad(x, width)
    for k, (lo, hi) in enumerate(pads):
        a = first + k
        crop[a] = slice(max(-lo, 0), x.shape[a] - max(-hi, 0))
    return x[tuple(crop)]


def _conv_impl(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count, precision,
               preferred_element_type):
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    # the operands' own dtypes: get_aval would canonicalize float64 to float32 (x64 off)
    out_aval = _conv_abstract(core.ShapedArray(lhs.shape, lhs.dtype),
                              core.ShapedArray(rhs.shape, rhs.dtype),
                              window_strides=window_strides, padding=padding,
                              lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                              dimension_numbers=dimension_numbers,
                              feature_group_count=feature_group_count,
                              batch_group_count=batch_group_count, precision=precision,
                              preferred_element_type=preferred_element_type)
    ls, rs, os_ = dimension_numbers
    acc = _acc_dtype(out_aval.dtype)
    x = np.transpose(lhs, ls).astype(acc)
    w = np.transpose(rhs, rs).astype(acc)
    nsp = x.ndim - 2
    x = _pad_np(_dilate_np(x, lhs_dilation, 2), padding, 2)
    w = _dilate_np(w, rhs_dilation, 2)
    canon = [out_aval.shape[i] for i in os_]
    G, B = feature_group_count, batch_group_count
    if 0 in canon or 0 in x.shape or 0 in w.shape:
        res = np.zeros(canon, acc)
    else:
        ks = w.shape[2:]
        win = np.lib.stride_tricks.sliding_window_view(x, ks, axis=tuple(range(2, 2 + nsp)))
        win = win[(slice(None), slice(None)) + tuple(slice(None, None, s)
                                                     for s in window_strides)]
        N, C = x.shape[:2]
        O, I = w.shape[:2]
        osp = win.shape[2:2 + nsp]
        Nb, Og, P, KK = N // B, O // (B * G), math.prod(osp), math.prod(ks)
        # im2col per (batch group, feature group): (B, G, Nb * P, I * K) @ (B, G, I * K, Og)
        win = win.reshape((B, Nb, G, I, P, KK)).transpose(0, 2, 1, 4, 3, 5)
        win = win.reshape((B, G, Nb * P, I * KK))
        w = w.reshape((B, G, Og, I * KK))
        res = np.empty((B, G, Nb * P, Og), acc)
        for b in range(B):      # 2-D BLAS products (NumPy's stacked matmul is far slower)
            for g in range(G):
                res[b, g] = np.ascontiguousarray(win[b, g]) @ np.ascontiguousarray(w[b, g].T)
        res = res.reshape((B, G, Nb, P, Og)).transpose(2, 0, 1, 4, 3)
        res = res.reshape((Nb, O) + osp)
    if out_aval.dtype == np.bool_:
        res = res != 0
    return np.ascontiguousarray(np.transpose(res, np.argsort(os_))).astype(out_aval.dtype)


# --- JVP: bilinear -------------------------------------------------------------------


def _conv_jvp(primals, tangents, **params):
    lhs, rhs = primals
    tl, tr = tangents
    out = conv_general_dilated_p.bind(lhs, rhs, **params)
    acc = None
    if type(tl) is not Zero:
        acc = conv_general_dilated_p.bind(tl, rhs, **params)
    if type(tr) is not Zero:
        t = conv_general_dilated_p.bind(lhs, tr, **params)
        acc = t if acc is None else ad.add_tangents(acc, t)
    if acc is None:
        acc = Zero.from_primal(out)
    return out, acc


# --- reshape helpers (JAX's _reshape_axis_into / _reshape_axis_out_of) ----------------


def _reshape_axis_into(src, dst, x):
    """Merge axis ``src`` into axis ``dst`` (numbered after removing src) as its major part."""
    shape = core.get_aval(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new = [shape[i] for i in range(len(shape)) if i != src]
    new[dst] *= shape[src]
    x = transpose_p.bind(x, permutation=tuple(perm)) if perm != list(range(len(shape))) else x
    return reshape_p.bind(x, new_sizes=tuple(new), dimensions=None)


def _reshape_axis_out_of(src, size1, x):
    """Split axis ``src`` into (size1, rest)."""
    shape = list(core.get_aval(x).shape)
    shape[src:src + 1] = [size1, shape[src] // size1]
    return reshape_p.bind(x, new_sizes=tuple(shape), dimensions=None)


def _convert(x, dtype):
    if core.get_aval(x).dtype == np.dtype(dtype):
        return x
    return elementwise.convert_element_type_p.bind(x, new_dtype=np.dtype(dtype),
                                                   weak_type=False)


# --- transposes ------------------------------------------------------------------------


def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
    ld = [_dilate_dim(d, r) for d, r in zip(in_shape, lhs_dil)]
    rd = [_dilate_dim(d, r) for d, r in zip(window, rhs_dil)]
    od = [_dilate_dim(d, r) for d, r in zip(out_shape, strides)]
    before = [r - lo - 1 for r, (lo, _) in zip(rd, padding)]
    after = [l + r - 1 - o - b for l, r, o, b in zip(ld, rd, od, before)]
    return tuple(zip(before, after))


def _vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
    ld = [_dilate_dim(d, r) for d, r in zip(in_shape, lhs_dil)]
    rd = [_dilate_dim(d, r) for d, r in zip(window, rhs_dil)]
    od = [_dilate_dim(d, r) for d, r in zip(out_shape, strides)]
    lows = [lo for lo, _ in padding]
    highs = [o - l + r - lo - 1 for o, l, r, lo in zip(od, ld, rd, lows)]
    return tuple(zip(lows, highs))


def _transpose_lhs(ct, rhs, lhs_aval, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type):
    ls, rs, os_ = dimension_numbers
    rhs_shape = core.get_aval(rhs).shape
    ct_shape = core.get_aval(ct).shape
    G, B = feature_group_count, batch_group_count
    if G > 1:
        rhs = _reshape_axis_into(rs[0], rs[1], _reshape_axis_out_of(rs[0], G, rhs))
    elif B > 1:
        rhs = _reshape_axis_into(rs[0], rs[1], _reshape_axis_out_of(rs[0], B, rhs))
        G = B
    t_rs = (rs[1], rs[0]) + tuple(rs[2:])
    dn = ConvDimensionNumbers(tuple(os_), t_rs, tuple(ls))
    pads = _vjp_lhs_padding([lhs_aval.shape[i] for i in ls[2:]], [rhs_shape[i] for i in rs[2:]],
                            window_strides, [ct_shape[i] for i in os_[2:]], padding,
                            lhs_dilation, rhs_dilation)
    w = rev_p.bind(rhs, dimensions=tuple(rs[2:]))
    w = _convert(w, core.get_aval(ct).dtype)
    out = conv_general_dilated_p.bind(
        ct, w, window_strides=tuple(lhs_dilation), padding=pads,
        lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=dn, feature_group_count=G, batch_group_count=1,
        precision=precision, preferred_element_type=preferred_element_type)
    out = _convert(out, lhs_aval.dtype)
    if B > 1:
        out = _reshape_axis_into(ls[1], ls[0], _reshape_axis_out_of(ls[1], B, out))
    return out


def _transpose_rhs(ct, lhs, rhs_aval, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type):
    if math.prod(core.get_aval(ct).shape) == 0:
        return Zero(rhs_aval)
    ls, rs, os_ = dimension_numbers
    lhs_shape = core.get_aval(lhs).shape
    ct_shape = core.get_aval(ct).shape
    G, B = feature_group_count, batch_group_count
    if B > 1:
        G, B = B, 1
    elif G > 1:
        G, B = 1, G
    swap = lambda s: (s[1], s[0]) + tuple(s[2:])
    dn = ConvDimensionNumbers(swap(ls), swap(os_), swap(rs))
    pads = _vjp_rhs_padding([lhs_shape[i] for i in ls[2:]], [rhs_aval.shape[i] for i in rs[2:]],
                            window_strides, [ct_shape[i] for i in os_[2:]], padding,
                            lhs_dilation, rhs_dilation)
    lhs = _convert(lhs, core.get_aval(ct).dtype)
    out = conv_general_dilated_p.bind(
        lhs, ct, window_strides=tuple(rhs_dilation), padding=pads,
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
        dimension_numbers=dn, feature_group_count=G, batch_group_count=B,
        precision=precision, preferred_element_type=preferred_element_type)
    return _convert(out, rhs_aval.dtype)


def _conv_transpose_rule(ct, lhs, rhs, **params):
    ct_l = ct_r = None
    if type(ct) is Zero:
        return [None, None]
    if is_undefined_primal(lhs) and is_undefined_primal(rhs):
        raise ValueError("conv_general_dilated is bilinear, not linear in both operands at once")
    if is_undefined_primal(lhs):
        ct_l = _transpose_lhs(ct, rhs, lhs.aval, **params)
    if is_undefined_primal(rhs):
        ct_r = _transpose_rhs(ct, lhs, rhs.aval, **params)
    return [ct_l, ct_r]


# --- batching: fold the batch axis into batch / feature / group dimensions -------------


def _conv_batch(axis_data, vals, dims, **params):
    lhs, rhs = vals
    bl, br = dims
    ls, rs, os_ = params["dimension_numbers"]
    G, B = params["feature_group_count"], params["batch_group_count"]
    size = axis_data.size
    if size == 0:
        la, ra = core.get_aval(lhs), core.get_aval(rhs)
        la = ShapedArray(tuple(d for i, d in enumerate(la.shape) if i != bl), la.dtype)
        ra = ShapedArray(tuple(d for i, d in enumerate(ra.shape) if i != br), ra.dtype)
        out = _conv_abstract(la, ra, **params)
        return broadcast_in_dim_p.bind(np.zeros((), out.dtype), shape=(0,) + out.shape,
                                       broadcast_dimensions=()), 0
    bind = lambda l, r, **kw: conv_general_dilated_p.bind(l, r, **{**params, **kw})
    if bl is not None and br is not None:
        if B > 1:
            new_lhs = _reshape_axis_into(bl, ls[0], lhs)
            kw = {"batch_group_count": B * size}
        else:
            new_lhs = _reshape_axis_into(bl, ls[1], lhs)
            kw = {"feature_group_count": G * size}
        new_rhs = _reshape_axis_into(br, rs[0], rhs)
        out = bind(new_lhs, new_rhs, **kw)
        return _reshape_axis_out_of(os_[1], size, out), os_[1]
    if bl is not None:
        if B == 1:
            out = bind(_reshape_axis_into(bl, ls[0], lhs), rhs)
            return _reshape_axis_out_of(os_[0], size, out), os_[0]
        # batch groups must stay outermost in the lhs batch: (B, size, N/B) -> B * size * N/B
        new = _reshape_axis_out_of(ls[0] + int(bl <= ls[0]), B, lhs)
        new = _reshape_axis_into(bl + int(ls[0] < bl), ls[0] + 1, new)
        new = _reshape_axis_into(ls[0], ls[0], new)
        out = bind(new, rhs)
        return _reshape_axis_out_of(os_[0], size, out), os_[0]
    if G == 1 and B == 1:
        out = bind(lhs, _reshape_axis_into(br, rs[0], rhs))
        return _reshape_axis_out_of(os_[1], size, out), os_[1]
    # groups must stay outermost in the kernel output features: (g, size, O/g)
    g = G if G > 1 else B
    new = _reshape_axis_out_of(rs[0] + int(br <= rs[0]), g, rhs)
    new = _reshape_axis_into(br + int(rs[0] < br), rs[0] + 1, new)
    new = _reshape_axis_into(rs[0], rs[0], new)
    out = bind(lhs, new)
    out = _reshape_axis_out_of(os_[1], g, out)
    out = _reshape_axis_out_of(os_[1] + 1, size, out)
    out = _reshape_axis_into(os_[1], os_[1] + 1, out)
    return out, os_[1]


conv_general_dilated_p.def_abstract_eval(_conv_abstract)
conv_general_dilated_p.def_impl(_conv_impl)
ad.jvp_rules[conv_general_dilated_p] = _conv_jvp
ad.transpose_rules[conv_general_dilated_p] = _conv_transpose_rule
batching.batch_rules[conv_general_dilated_p] = _conv_batch


def _pp_conv(eqn, names):
    p = dict(eqn.params)
    p["precision"] = _pp_precision(p["precision"])   # (Precision.X, Precision.Y), as JAX
    return sorted(p.items())


ir.pp_rules[conv_general_dilated_p] = _pp_conv

# ================================================================= xform.lax functions


def _int_tuple(v, n, name):
    if v is None:
        return (1,) * n
    try:
        t = tuple(operator.index(i) for i in v)
    except TypeError:
        raise TypeError(f"conv_general_dilated: {name} must be a sequence of integers, got "
                        f"{v!r}") from None
    return t


def _same_dtypes(lhs, rhs):
    la, ra = core.get_aval(lhs), core.get_aval(rhs)
    if la.dtype == ra.dtype:
        return lhs, rhs
    # Python scalars / weak values adopt the other's dtype; otherwise JAX errors too.
    if la.weak_type and not ra.weak_type:
        return _convert(lhs, ra.dtype), rhs
    if ra.weak_type and not la.weak_type:
        return lhs, _convert(rhs, la.dtype)
    raise TypeError("conv_general_dilated requires arguments to have the same dtypes, got "
                    f"{la.dtype}, {ra.dtype}.")


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
    """General n-d convolution with strides, padding, dilations, groups (XLA's Conv)."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    ls_shape, rs_shape = core.get_aval(lhs).shape, core.get_aval(rhs).shape
    dn = conv_dimension_numbers(ls_shape, rs_shape, dimension_numbers)
    nsp = len(ls_shape) - 2
    if nsp < 0:
        raise ValueError(f"conv_general_dilated needs lhs of rank >= 2, got shape {ls_shape}")
    window_strides = _int_tuple(window_strides, nsp, "window_strides")
    lhs_dil = _int_tuple(lhs_dilation, nsp, "lhs_dilation")
    rhs_dil = _int_tuple(rhs_dilation, nsp, "rhs_dilation")
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dil):
            raise ValueError("String padding is not implemented for transposed convolution "
                             "using this op. Please either exactly specify the required "
                             "padding or use conv_transpose.")
        if len(window_strides) != nsp:
            raise ValueError("conv_general_dilated window and window_strides must have the "
                             f"same number of dimensions, but got {nsp} and "
                             f"{len(window_strides)}")
        window = [_dilate_dim(rs_shape[i], r) for i, r in zip(dn.rhs_spec[2:], rhs_dil)]
        pads = padtype_to_pads([ls_shape[i] for i in dn.lhs_spec[2:]], window,
                               window_strides, padding)
    else:
        try:
            pads = [(operator.index(lo), operator.index(hi)) for lo, hi in padding]
        except (ValueError, TypeError):
            raise ValueError("padding argument to conv_general_dilated should be a string or a "
                             f"sequence of (low, high) pairs, got {padding}") from None
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(
        preferred_element_type)
    lhs, rhs = _same_dtypes(lhs, rhs)
    return conv_general_dilated_p.bind(lhs, rhs, window_strides=window_strides,
                        padding=tuple(pads), lhs_dilation=lhs_dil, rhs_dilation=rhs_dil,
                        dimension_numbers=dn, feature_group_count=operator.index(
                            feature_group_count),
                        batch_group_count=operator.index(batch_group_count),
                        precision=_canon_precision(precision), preferred_element_type=pet)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """``conv_general_dilated`` with NCHW/OIHW layouts and no dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """``conv_general_dilated`` with NCHW/OIHW layouts."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
    """Fractionally strided ("transposed") convolution, Keras Conv2DTranspose conventions."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    lshape, rshape = core.get_aval(lhs).shape, core.get_aval(rhs).shape
    if len(lshape) != len(rshape) or len(lshape) < 2:
        raise ValueError(f"conv_transpose needs lhs and rhs of equal rank >= 2, got shapes "
                         f"{lshape} and {rshape}")
    nd = len(lshape)
    if dimension_numbers is None:
        defaults = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                    4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}
        if nd not in defaults:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = defaults[nd]
    dn = conv_dimension_numbers(lshape, rshape, dimension_numbers)
    k_sdims = [rshape[i] for i in dn.rhs_spec[2:]]
    rhs_dilation = (1,) * (nd - 2) if rhs_dilation is None else tuple(rhs_dilation)
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        eff = [_dilate_dim(k, r) for k, r in zip(k_sdims, rhs_dilation)]
        rep = [padding] * len(strides) if isinstance(padding, str) else [tuple(p) for p in
                                                                            padding]
        pads = tuple(_conv_transpose_padding(k, s, p) for k, s, p in zip(eff, strides, rep))
    else:
        pads = padding
    if transpose_kernel:
        rhs = rev_p.bind(rhs, dimensions=tuple(dn.rhs_spec[2:]))
        perm = list(range(nd))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
        rhs = transpose_p.bind(rhs, permutation=tuple(perm))
    return conv_general_dilated(lhs, rhs, (1,) * (nd - 2), pads, tuple(strides), rhs_dilation,
                                dn, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """Patches of ``lhs`` the size of ``filter_shape``: output features = C * prod(filter)."""
    lhs = as_operand(lhs)
    la = core.get_aval(lhs)
    filter_shape = tuple(operator.index(k) for k in filter_shape)
    dn = conv_dimension_numbers(la.shape, (1, 1) + filter_shape, dimension_numbers)
    ls, rs, _ = dn
    k = math.prod(filter_shape)
    C = la.shape[ls[1]]
    eye = np.broadcast_to(np.eye(k, dtype=la.dtype), (C, k, k)).reshape((C * k, 1)
                                                                       + filter_shape)
    # put (O, I) where the rhs spec wants them; spatial axes in the rhs spec's order
    canon = list(range(len(filter_shape) + 2))
    perm = [0] * len(canon)
    for c, a in zip(canon, rs):
        perm[a] = c
    rhs = core.Array(np.ascontiguousarray(np.transpose(eye, perm)))
    if precision is not None:
        precision = (precision, "DEFAULT")
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                dn, feature_group_count=C, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
    """Locally connected (unshared-weight) convolution: patches contracted per position."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    cp = _canon_precision(precision)
    if cp is None:
        lp = None
    elif isinstance(cp, tuple) and len(cp) == 2:
        lp = cp[0]
    else:
        raise ValueError(f"Unsupported precision for conv_general_dilated_local: {precision}")
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, dimension_numbers,
                                           precision=lp)
    ls, rs, os_ = conv_dimension_numbers(core.get_aval(lhs).shape,
                                         (1, 1) + tuple(filter_shape), dimension_numbers)
    lb = list(os_[2:])
    rb = list(rs[2:])
    rb = [rb[i] for i in sorted(range(len(rb)), key=lambda j: lb[j])]
    lb = sorted(lb)
    out = dot_general(patches, rhs, (((os_[1],), (rs[1],)), (tuple(lb), tuple(rb))),
                      precision=precision)
    return _move2(out, os_)


def _move2(out, os_):
    """Move the last two axes (batch, feature) to ``os_[0], os_[1]``."""
    nd = core.get_aval(out).ndim
    rest = list(range(nd - 2))
    perm = [None] * nd
    perm[os_[0]], perm[os_[1]] = nd - 2, nd - 1
    it = iter(rest)
    perm = [p if p is not None else next(it) for p in perm]
    return transpose_p.bind(out, permutation=tuple(perm))

"""Products and basic linear algebra: dot, matmul, tensordot, einsum, diagonal, norm.

Every product lowers to one ``dot_general`` (plus transposes/reshapes).
``einsum`` parses the subscripts (``...`` and the implicit output included),
takes diagonals for repeated labels, sums labels used by one operand only,
then contracts operands left to right: shared labels still needed later are
batch dimensions, the others are contracted.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from xform._src.interpreters import dtypes
from xform._src.interpreters.core import ArrayOps
from xform._src.primitives.dot_general import dot_general_p
from xform.numpy import _reductions as R
from xform.numpy import _shape as S
from xform.numpy import _ufuncs as F
from xform.numpy import _util as U
from xform.numpy._util import lax
from xform.numpy._creation import arange
from xform.numpy._creation import zeros
from xform.numpy._creation import zeros_like


def _dot_general(a, b, contract, batch=((), ()), precision=None, preferred_element_type=None,
                 dot_general=None):
    pet = U.canonical_dtype(preferred_element_type)
    a, b = U.promote_dtypes(a, b)
    out_dt = pet or a.dtype
    if a.weak_type and pet is None:
        pass
    out = (dot_general or lax.dot_general)(
        a, b, (tuple(map(tuple, contract)), tuple(map(tuple, batch))), precision=precision,
        preferred_element_type=out_dt)
    if a.weak_type and b.weak_type and pet is None and not out.weak_type:
        out = U.convert(out, out.dtype, True)
    return out


_contract = _dot_general   # einsum's name for it (its `_dot_general` parameter shadows it)


def dot(a, b, *, precision=None, preferred_element_type=None):
    """NumPy ``dot``: scalars multiply; otherwise contract a's last with b's second-to-last."""
    a, b = U.ensure_arraylike("dot", a, b)
    a, b = U.to_array(a), U.to_array(b)
    if a.ndim == 0 or b.ndim == 0:
        out = F.multiply(a, b)
        return out if preferred_element_type is None else \
            U.to_array(out, U.canonical_dtype(preferred_element_type), False)
    cb = 0 if b.ndim == 1 else b.ndim - 2
    if a.shape[-1] != b.shape[cb]:
        raise TypeError(f"dot: shapes {a.shape} and {b.shape} are not aligned: dimension "
                        f"{a.ndim - 1} of a (size {a.shape[-1]}) != dimension {cb} of b "
                        f"(size {b.shape[cb]})")
    return _dot_general(a, b, ((a.ndim - 1,), (cb,)), precision=precision,
                        preferred_element_type=preferred_element_type)


_matmul_dims: dict = {}    # number of batch dims -> matmul's dimension numbers


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """``a @ b`` with NumPy's rules: 1-D operands are promoted then squeezed; batch dims
    broadcast."""
    if precision is None and preferred_element_type is None and isinstance(a, ArrayOps) \
            and isinstance(b, ArrayOps):
        # The common case, which the general path below turns into exactly this
        # dot_general: operands of rank >= 2 with equal batch dimensions, of one dtype
        # that promotion leaves alone, neither weakly typed.
        sa, sb = a.shape, b.shape
        nd = len(sa)
        if nd >= 2 and len(sb) == nd and sa[-1] == sb[-2] and sa[:-2] == sb[:-2]:
            d = a.dtype
            if b.dtype == d and not a.weak_type and not b.weak_type \
                    and U.promotes_to_itself(d, False):
                dn = _matmul_dims.get(nd)
                if dn is None:
                    batch = tuple(range(nd - 2))
                    dn = _matmul_dims[nd] = (((nd - 1,), (nd - 2,)), (batch, batch))
                return dot_general_p.bind(a, b, dimension_numbers=dn, precision=None,
                                          preferred_element_type=dtypes.canonicalize_dtype(d))
    a, b = U.ensure_arraylike("matmul", a, b)
    a, b = U.to_array(a), U.to_array(b)
    for n, x in (("a", a), ("b", b)):
        if x.ndim == 0:
            raise ValueError(f"matmul: operand {n} must have at least 1 dimension, got shape ()")
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    if (a_vec or b_vec) and a.shape[-1] == b.shape[0 if b_vec else -2]:
        # a vector contracts directly with the other operand's dimension (one dot_general,
        # as JAX emits): the other operand's leading dimensions lead the result
        return _dot_general(a, b, ((a.ndim - 1,), (0 if b_vec else b.ndim - 2,)),
                            ((), ()), precision, preferred_element_type)
    if a_vec:
        a = lax.reshape(a, (1,) + a.shape)
    if b_vec:
        b = lax.reshape(b, b.shape + (1,))
    if a.shape[-1] != b.shape[-2]:
        raise TypeError(f"matmul: contracting dimension mismatch: a has shape "
                        f"{a.shape[1:] if a_vec else a.shape} (last dim {a.shape[-1]}) but b has "
                        f"shape {b.shape[:-1] if b_vec else b.shape} (dim -2 of size "
                        f"{b.shape[-2]})")
    batch = U.broadcast_shapes(a.shape[:-2], b.shape[:-2], name="matmul")
    a = U.broadcast_to_shape(a, batch + a.shape[-2:])
    b = U.broadcast_to_shape(b, batch + b.shape[-2:])
    nb = len(batch)
    out = _dot_general(a, b, ((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))),
                       precision, preferred_element_type)
    if a_vec and b_vec:
        return lax.reshape(out, batch)
    if a_vec:
        return lax.reshape(out, batch + out.shape[-1:])
    if b_vec:
        return lax.reshape(out, out.shape[:-1])
    return out


def vdot(a, b, *, precision=None, preferred_element_type=None):
    a, b = U.to_array(a), U.to_array(b)
    if a.size != b.size:
        raise ValueError(f"vdot: arrays must have the same size, got {a.shape} and {b.shape}")
    return dot(F.conjugate(S.ravel(a)), S.ravel(b), precision=precision,
               preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """Conjugated dot products of vectors along ``axis`` of each operand, batched over
    the other (broadcast) dimensions.  The contracted axes must have equal sizes (a
    size-1 axis does not broadcast), and the result has the operands' promoted dtype
    (one ``dot_general``: uint8 . uint8 is uint8), as in JAX."""
    x1, x2 = U.ensure_arraylike("vecdot", x1, x2)
    a, b = U.to_array(x1), U.to_array(x2)
    axis = operator.index(axis)
    for x in (a, b):
        if not -x.ndim <= axis < x.ndim:     # (IndexError, as JAX's shape[axis] gives)
            raise IndexError(f"vecdot: axis={axis} is out of bounds for the operand of "
                             f"shape {x.shape}; got shapes {a.shape} and {b.shape}")
    ax_a, ax_b = axis % a.ndim, axis % b.ndim
    if a.shape[ax_a] != b.shape[ax_b]:
        raise ValueError(f"vecdot: axes must match; got shapes {a.shape} and {b.shape} "
                         f"with axis={axis}")
    a, b = S.moveaxis(a, ax_a, -1), S.moveaxis(b, ax_b, -1)
    batch = U.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    n = a.shape[-1]
    a = U.broadcast_to_shape(a, batch + (n,))
    b = U.broadcast_to_shape(b, batch + (n,))
    if dtypes.issubdtype(a.dtype, np.complexfloating):
        a = F.conjugate(a)
    nb = len(batch)
    return _dot_general(a, b, ((nb,), (nb,)), (tuple(range(nb)), tuple(range(nb))),
                        precision=precision, preferred_element_type=preferred_element_type)


def inner(a, b, *, precision=None, preferred_element_type=None):
    a, b = U.to_array(a), U.to_array(b)
    if a.ndim == 0 or b.ndim == 0:
        return F.multiply(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise TypeError(f"inner: last dimensions must match, got {a.shape} and {b.shape}")
    return _dot_general(a, b, ((a.ndim - 1,), (b.ndim - 1,)), precision=precision,
                        preferred_element_type=preferred_element_type)


def outer(a, b, out=None):
    a, b = S.ravel(U.to_array(a)), S.ravel(U.to_array(b))
    return F.multiply(lax.reshape(a, (a.shape[0], 1)), lax.reshape(b, (1, b.shape[0])))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    a, b = U.to_array(a), U.to_array(b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > builtins.min(a.ndim, b.ndim):
            raise TypeError(f"Number of tensordot axes (axes {n}) exceeds input ranks "
                            f"(lhs {a.shape} and rhs {b.shape})")
        ca, cb = tuple(range(a.ndim - n, a.ndim)), tuple(range(n))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        xa, xb = axes
        if isinstance(xa, (int, np.integer)) and isinstance(xb, (int, np.integer)):
            xa, xb = (xa,), (xb,)
        elif isinstance(xa, (tuple, list)) and isinstance(xb, (tuple, list)):
            xa, xb = tuple(xa), tuple(xb)
        else:
            raise TypeError(f"tensordot requires both axes lists to be either ints, tuples "
                            f"or lists, got {xa} and {xb}")
        if len(xa) != len(xb):
            raise TypeError(f"tensordot requires axes lists to have equal length, got {xa} "
                            f"and {xb}.")
        ca = tuple(U.canonicalize_axis(i, a.ndim) for i in xa)
        cb = tuple(U.canonicalize_axis(i, b.ndim) for i in xb)
    else:
        raise TypeError(f"tensordot axes argument must be an int, a pair of ints, or a pair "
                        f"of lists/tuples of ints, got {axes!r}")
    for i, j in zip(ca, cb):
        if a.shape[i] != b.shape[j]:
            raise TypeError(f"tensordot: shape mismatch on contracted axes: a{a.shape} axis {i} "
                            f"vs b{b.shape} axis {j}")
    return _dot_general(a, b, (ca, cb), precision=precision,
                        preferred_element_type=preferred_element_type)


def kron(a, b):
    a, b = U.to_array(a), U.to_array(b)
    nd = builtins.max(a.ndim, b.ndim)
    a = lax.reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = lax.reshape(b, (1,) * (nd - b.ndim) + b.shape)
    a2 = lax.reshape(a, tuple(v for d in a.shape for v in (d, 1)))
    b2 = lax.reshape(b, tuple(v for d in b.shape for v in (1, d)))
    return S.reshape(F.multiply(a2, b2), tuple(x * y for x, y in zip(a.shape, b.shape)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 2- or 3-vectors along the given axes, as JAX: two 2-vectors give
    the z component (a scalar per vector pair); a 2-vector next to a 3-vector is taken
    with z = 0 and the result has 3 components along ``axisc``."""
    a, b = U.ensure_arraylike("cross", a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = U.promote_dtypes(U.to_array(a), U.to_array(b))
    a = S.moveaxis(a, axisa, -1)
    b = S.moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    g = lambda x, i: S.take_static(x, np.asarray(i), x.ndim - 1)   # noqa: E731
    a0, a1, b0, b1 = g(a, 0), g(a, 1), g(b, 0), g(b, 1)
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return F.subtract(F.multiply(a0, b1), F.multiply(a1, b0))
    a2 = g(a, 2) if a.shape[-1] == 3 else zeros_like(a0)
    b2 = g(b, 2) if b.shape[-1] == 3 else zeros_like(b0)
    c = S.stack([F.subtract(F.multiply(a1, b2), F.multiply(a2, b1)),
                 F.subtract(F.multiply(a2, b0), F.multiply(a0, b2)),
                 F.subtract(F.multiply(a0, b1), F.multiply(a1, b0))], -1)
    return S.moveaxis(c, -1, axisc)


# ----------------------------------------------------------------- diagonal / trace


def diagonal(a, offset=0, axis1=0, axis2=1):
    """Diagonal of the (axis1, axis2) planes as the last axis: ``a[..., i, i + offset]``
    with index arrays (one gather), as JAX builds it -- XLA fuses what consumes the
    diagonal (a reduction) by the program's shape, so another construction (a strided
    slice) sums in another order."""
    x = U.to_array(a)
    if x.ndim < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions, got {x.shape}")
    a1, a2 = U.canonicalize_axis(axis1, x.ndim), U.canonicalize_axis(axis2, x.ndim)
    if a1 == a2:
        raise ValueError(f"axis1 and axis2 can not be same. axis1={a1}, axis2={a2}")
    offset = U.static_int(offset, "diagonal offset")
    x = S.moveaxis(x, (a1, a2), (-2, -1))
    n, m = x.shape[-2:]
    lead = x.shape[:-2]
    L = builtins.max(0, builtins.min(n, m - offset) if offset >= 0 else builtins.min(n + offset, m))
    if L == 0:
        return U.to_array(zeros(lead + (0,), x.dtype), x.dtype, x.weak_type)
    i = arange(L)
    j = arange(builtins.abs(offset), builtins.abs(offset) + L)
    return x[..., i, j] if offset >= 0 else x[..., j, i]


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return R.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


# ----------------------------------------------------------------- einsum


def _parse_einsum(subscripts, shapes):
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        ins, out = subscripts.split("->")
        implicit = False
    else:
        ins, out, implicit = subscripts, None, True
    inputs = ins.split(",")
    if len(inputs) != len(shapes):
        raise ValueError(f"einsum: {len(inputs)} input subscripts given for {len(shapes)} "
                         "operands")
    # as JAX's (opt_einsum's) parser: any character but '.', ',', '-' and '>' is a label
    used = set(subscripts) - set(".,->")
    spare = iter(c for c in (chr(0x3b1 + i) for i in range(4096)) if c not in used)  # '...'
    ell_rank = 0
    for sub, shp in zip(inputs, shapes):
        if "..." in sub:
            ell_rank = builtins.max(ell_rank, len(shp) - (len(sub) - 3))
    ell_labels = "".join(next(spare) for _ in range(ell_rank))
    expanded = []
    for sub, shp in zip(inputs, shapes):
        if "..." in sub:
            k = len(shp) - (len(sub) - 3)
            if k < 0:
                raise ValueError(f"einsum: subscripts {sub!r} have more labels than operand "
                                 f"dimensions {shp}")
            sub = sub.replace("...", ell_labels[ell_rank - k:])
        if "." in sub:
            raise ValueError(f"einsum: invalid subscripts {sub!r} ('.' must be part of '...')")
        if len(sub) != len(shp):
            raise ValueError(f"einsum: subscripts {sub!r} do not match operand of shape {shp} "
                             f"(rank {len(shp)})")
        expanded.append(sub)
    if implicit:
        counts = {}
        for s in expanded:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell_labels + "".join(sorted(c for c in counts if counts[c] == 1
                                          and c not in ell_labels))
    else:
        if "..." in out:
            out = out.replace("...", ell_labels)
        elif ell_labels and any("..." in s for s in inputs):
            pass  # ellipsis dims are summed
        for c in out:
            if not builtins.any(c in s for s in expanded):
                raise ValueError(f"einsum: output subscript {c!r} does not appear in any input")
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: output subscripts {out!r} contain a repeated label")
    return expanded, out


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, _dot_general=None):
    """NumPy's einsum. ``_dot_general`` (JAX's private hook, which flax uses to inject its
    own contraction) replaces ``lax.dot_general`` for every pairwise contraction."""
    subscripts, operands = _einsum_subscripts(subscripts, operands)
    xs = [U.to_array(o) for o in operands]
    if not xs:
        raise ValueError("einsum requires at least one operand")
    xs = U.promote_dtypes(*xs)
    subs, out_sub = _parse_einsum(subscripts, [x.shape for x in xs])
    # label sizes, with broadcasting of size-1 dimensions
    sizes = {}
    for s, x in zip(subs, xs):
        for c, d in zip(s, x.shape):
            if sizes.get(c, 1) == 1:
                sizes[c] = d
            elif d != 1 and d != sizes[c]:
                raise ValueError(f"einsum: label {c!r} has inconsistent sizes {sizes[c]} and {d}")
    ops = []
    for s, x in zip(subs, xs):
        s, x = _einsum_diagonals(s, x)
        # broadcast size-1 dims away: drop them (a size-1 axis is a broadcast)
        drop = [i for i, c in enumerate(s) if x.shape[i] == 1 and sizes[c] != 1]
        if drop:
            x = S.squeeze(x, tuple(drop))
            s = "".join(c for i, c in enumerate(s) if i not in drop)
        ops.append((s, x))
    pet = preferred_element_type
    # sum labels that appear in exactly one operand and not in the output
    def needed_elsewhere(c, k):
        return c in out_sub or builtins.any(c in s for j, (s, _) in enumerate(ops) if j != k)
    for k, (s, x) in enumerate(ops):
        drop = tuple(i for i, c in enumerate(s) if not needed_elsewhere(c, k))
        if drop:
            x = R.sum(x, axis=drop) if x.dtype != dtypes.bool_ else \
                R.any(x, axis=drop)
            s = "".join(c for i, c in enumerate(s) if i not in drop)
            ops[k] = (s, x)
    from xform.numpy._einsum_path import contraction_path  # deferred: keeps `import xform` light
    for group in contraction_path([o[0] for o in ops], out_sub, sizes, optimize):
        if len(group) > 2:
            raise NotImplementedError(
                "jax.numpy.einsum does not support simultaneous contraction of 3 or more "
                "operands. Typically this means you've passed an unsupported path to the "
                "einsum optimize parameter.")
        members = [ops[k] for k in group]
        ops = [o for k, o in enumerate(ops) if k not in group]
        s_a, a = members[0]
        for m, (s_b, b) in enumerate(members[1:]):
            later = set(out_sub).union(*[set(s) for s, _ in ops + members[m + 2:]])
            shared = [c for c in s_a if c in s_b]
            batch = [c for c in shared if c in later]
            contract = [c for c in shared if c not in later]
            a = _contract(a, b, (tuple(s_a.index(c) for c in contract),
                                    tuple(s_b.index(c) for c in contract)),
                             (tuple(s_a.index(c) for c in batch),
                              tuple(s_b.index(c) for c in batch)), precision, pet,
                             _dot_general)
            s_a = ("".join(batch) + "".join(c for c in s_a if c not in shared)
                   + "".join(c for c in s_b if c not in shared))
        ops.append((s_a, a))
    (s_acc, acc), = ops
    # any label still present but not in output: sum it
    drop = tuple(i for i, c in enumerate(s_acc) if c not in out_sub)
    if drop:
        acc = R.sum(acc, axis=drop)
        s_acc = "".join(c for c in s_acc if c in out_sub)
    # labels of the output missing from the result were broadcast size-1 dims
    for c in out_sub:
        if c not in s_acc:
            acc = lax.reshape(acc, acc.shape + (1,))
            acc = U.broadcast_to_shape(acc, acc.shape[:-1] + (sizes[c],))
            s_acc += c
    acc = S.transpose(acc, tuple(s_acc.index(c) for c in out_sub))
    if pet is not None:
        acc = U.to_array(acc, U.canonical_dtype(pet), False)
    return acc


def _einsum_diagonals(s, x):
    """Repeated labels within one operand select its diagonal."""
    while len(set(s)) != len(s):
        c = next(c for c in s if s.count(c) > 1)
        i = s.index(c)
        j = s.index(c, i + 1)
        if x.shape[i] != x.shape[j]:
            raise ValueError(f"einsum: repeated label {c!r} has sizes {x.shape[i]} and "
                             f"{x.shape[j]}")
        x = diagonal(x, 0, i, j)
        s = "".join(ch for k, ch in enumerate(s) if k not in (i, j)) + c
    return s, x


def _einsum_subscripts(subscripts, operands):
    """The subscripts string and operands of either einsum calling form: a string, or
    NumPy's interleaved ``einsum(op0, sublist0, op1, sublist1, ..., [sublistout])``."""
    if isinstance(subscripts, str):
        return subscripts, operands
    args = (subscripts,) + tuple(operands)
    ops, subs = list(args[0::2]), list(args[1::2])
    out = ops.pop() if len(ops) > len(subs) else None
    if out is not None and not isinstance(out, (list, tuple)):
        raise TypeError("einsum: in the interleaved form every operand must be followed by a "
                        f"list of axis labels, got {type(out).__name__} last")

    def letters(sub):
        if not isinstance(sub, (list, tuple)):
            raise TypeError("einsum: the first argument must be a subscripts string such as "
                            "'ij,jk->ik', or an operand followed by its list of axis labels, "
                            f"got {type(sub).__name__}")
        res = ""
        for v in sub:
            if v is Ellipsis:
                res += "..."
            elif isinstance(v, (int, np.integer)) and 0 <= v < 52:
                res += "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[v]
            else:
                raise ValueError(f"einsum: axis labels of the interleaved form are Ellipsis "
                                 f"or integers in [0, 52), got {v!r}")
        return res
    text = ",".join(letters(x) for x in subs)
    if out is not None:
        text += "->" + letters(out)
    return text, ops


def einsum_path(subscripts, *operands, optimize="auto"):
    """``(path, report)``: the contraction order einsum would use (opt_einsum's format, a
    list of position tuples) and a text summary of its cost."""
    from xform.numpy import _einsum_path as P  # deferred: keeps `import xform` light
    subscripts, operands = _einsum_subscripts(subscripts, operands)
    shapes = [np.shape(o) for o in operands]
    subs, out_sub = _parse_einsum(subscripts, shapes)
    sizes = {}
    for sub, shp in zip(subs, shapes):
        for c, d in zip(sub, shp):
            if sizes.get(c, 1) == 1:
                sizes[c] = d
    path = P.contraction_path(subs, out_sub, sizes, optimize)
    return path, P.report(subscripts, subs, out_sub, sizes, path)


# ----------------------------------------------------------------- norm


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector norms (ord None/1/2/inf/-inf/0/p) and matrix norms ('fro', 1, -1, inf, -inf)."""
    x = U.ensure_arraylike("norm", x)
    (x,) = U.promote_dtypes_inexact(U.to_array(x))
    if axis is None:
        if x.ndim == 2 and ord is not None:
            axis = (0, 1)
        elif ord is None or x.ndim == 1:
            axes = tuple(range(x.ndim))
            if ord is None:
                return _l2(x, axes, keepdims)
            axis = axes
        else:
            raise ValueError(f"Improper number of dimensions to norm: {x.shape} with ord={ord}")
    axes = U.canonicalize_axes(axis, x.ndim)
    a = F.absolute(x)
    if len(axes) == 1 or (ord is None and len(axes) != 2):
        if ord is None or ord == 2:
            return _l2(x, axes, keepdims)
        if ord == np.inf:
            return R.max(a, axes, keepdims=keepdims)
        if ord == -np.inf:
            return R.min(a, axes, keepdims=keepdims)
        if ord == 0:
            return R.sum(U.to_array(F.not_equal(x, U.to_array(0, x.dtype)), a.dtype), axes,
                         keepdims=keepdims)
        if ord == 1:
            return R.sum(a, axes, keepdims=keepdims)
        if isinstance(ord, str):
            raise ValueError(f"Invalid norm order {ord!r} for vectors")
        p = U.to_array(ord, a.dtype, True)
        return F.power(R.sum(F.power(a, p), axes, keepdims=keepdims),
                       F.reciprocal(p))
    if len(axes) != 2:
        raise ValueError(f"Improper number of axes for norm: {axis}")
    r, c = axes
    if ord is None or ord == "fro":
        return _l2(x, axes, keepdims)
    if ord in (1, -1):
        col = R.sum(a, r, keepdims=True)
        out = (R.max if ord == 1 else R.min)(col, c, keepdims=True)
    elif ord in (np.inf, -np.inf):
        row = R.sum(a, c, keepdims=True)
        out = (R.max if ord == np.inf else R.min)(row, r, keepdims=True)
    elif ord in (2, -2, "nuc"):
        from xform.numpy._linalg_decomp import _svd_matrix_norm  # deferred: import cycle
        return _svd_matrix_norm(x, ord, (r, c), keepdims)
    else:
        raise ValueError(f"Invalid norm order {ord!r} for matrices")
    return out if keepdims else S.squeeze(out, axes)


def _l2(x, axes, keepdims):
    sq = F.real(F.multiply(x, F.conjugate(x))) if x.dtype.kind == "c" else F.multiply(x, x)
    return F.sqrt(R.sum(sq, axes, keepdims=keepdims))


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The Array API's vector norm: ``x`` is treated as a vector along ``axis`` (an int,
    a tuple of any number of axes, or None for all), as JAX computes it (no promotion
    before the reduction: an integer input's inf-norm is an integer)."""
    x = U.ensure_arraylike("jnp.linalg.vector_norm", x)
    x = U.to_array(x)
    if ord is None or (not isinstance(ord, str) and ord == 2):
        return F.sqrt(R.sum(F.real(F.multiply(x, F.conjugate(x))), axis=axis,
                            keepdims=keepdims))
    if isinstance(ord, str):
        hint = {"inf": " Use 'xform.numpy.inf' instead.",
                "-inf": " Use '-xform.numpy.inf' instead."}.get(ord, "")
        raise ValueError(f"Invalid order '{ord}' for vector norm.{hint}")
    if ord == np.inf:
        return R.max(F.absolute(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return R.min(F.absolute(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return R.sum(F.not_equal(x, U.to_array(0, x.dtype, False)),
                     dtype=dtypes.finfo(x.dtype).dtype, axis=axis, keepdims=keepdims)
    if ord == 1:
        return R.sum(F.absolute(x), axis=axis, keepdims=keepdims)
    a = F.absolute(x)
    # the order and its inverse are constants of a's dtype, the inverse computed from
    # the converted order, as JAX does
    p_np = np.asarray(ord).astype(a.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_np = np.asarray(1.0 / p_np).astype(a.dtype)
    return F.power(R.sum(F.power(a, U.to_array(p_np, a.dtype, True)), axis=axis,
                         keepdims=keepdims), U.to_array(inv_np, a.dtype, True))


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


__all__ = ["dot", "matmul", "vdot", "vecdot", "inner", "outer", "tensordot", "kron", "cross",
           "diagonal", "trace", "einsum", "einsum_path"]

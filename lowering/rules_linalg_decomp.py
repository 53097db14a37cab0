"""Lowering rules: matrix decompositions and solves (``primitives/linalg_decomp.py``).

On CPU every decomposition is one call of the LAPACK kernel jaxlib ships as
an XLA FFI custom-call target (``lapack_{s,d,c,z}potrf_ffi`` ...), emitted
as ``stablehlo.custom_call`` with ``api_version = 4`` (typed FFI), the
kernel's attributes in a dictionary ``backend_config``, column-major
operand/result layouts for the matrix dimensions (LAPACK is Fortran
ordered; XLA inserts the transposes) and the in-place operand/result
aliases the kernels expect.  The targets are registered with the CPU
client on first use (``_ensure_targets``).

The per-platform choice is a table: ``_TARGETS[(kernel, platform)]`` gives
the custom-call target name pattern and how each parameter becomes an
attribute, so a CUDA (cusolver) entry is one row.  Rules look their kernel
up for ``ctx.module.platform`` and fail with a clear message on a platform
without a row.

Semantics around the kernels follow JAX: a nonzero LAPACK ``info`` turns
that batch member's results into NaNs (cholesky, eigh, svd, eig, schur),
LU pivots become 0-based and its permutation is computed in-graph, QR is
geqrf + orgqr/ungqr.  Inputs with a zero-sized dimension never reach a
kernel: their (shape-only) results are constants computed by the reference.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import core
from xform._src.primitives.linalg_decomp import hessenberg_p
from xform._src.primitives.linear_solve import linear_solve_p
from xform._src.primitives.linalg_decomp import (
    cholesky_p, eig_p, eigh_p, geqp3_p, geqrf_p, householder_product_p, lu_p,
    lu_pivots_to_permutation_p, qr_p, schur_p, svd_p, triangular_solve_p, tridiagonal_p,
    tridiagonal_solve_p)
from xform._src.lowering.mlir import aval_type, lower_subjaxpr, register, tensor_type
from xform._src.interpreters import staging
from xform._src.interpreters.core import Array
from xform._src.primitives import control_flow as CF
from xform._src.primitives import elementwise as E
from xform._src.primitives import linalg_decomp as D
from xform._src.primitives import reductions as R
from xform._src.primitives import structural as S
from xform._src.interpreters import interrupts

_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}

# (kernel, platform) -> target name pattern; ``{p}`` is the LAPACK dtype letter.
_TARGETS = {
    ("potrf", "cpu"): "lapack_{p}potrf_ffi",
    ("getrf", "cpu"): "lapack_{p}getrf_ffi",
    ("geqrf", "cpu"): "lapack_{p}geqrf_ffi",
    ("geqp3", "cpu"): "lapack_{p}geqp3_ffi",
    ("orgqr", "cpu"): "lapack_{p}orgqr_ffi",      # {c,z}: ungqr
    ("syevd", "cpu"): "lapack_{p}syevd_ffi",      # {c,z}: heevd
    ("gesdd", "cpu"): "lapack_{p}gesdd_ffi",
    ("gesvd", "cpu"): "lapack_{p}gesvd_ffi",
    ("geev", "cpu"): "lapack_{p}geev_ffi",
    ("trsm", "cpu"): "lapack_{p}trsm_ffi",
    ("gees", "cpu"): "lapack_{p}gees_ffi",
    ("gehrd", "cpu"): "lapack_{p}gehrd_ffi",
    ("sytrd", "cpu"): "lapack_{p}sytrd_ffi",      # {c,z}: hetrd
    ("gtsv", "cpu"): "lapack_{p}gtsv_ffi",
    ("gtsv_perturbed", "cpu"): "tridiagonal_solve_perturbed_ffi",   # every dtype, one target
    # CUDA (jaxlib's cuda plugin, cusolver): the same kernels; dtype from the operands.
    ("potrf", "cuda"): "cusolver_potrf_ffi",
    ("getrf", "cuda"): "cusolver_getrf_ffi",
    ("geqrf", "cuda"): "cusolver_geqrf_ffi",
    ("orgqr", "cuda"): "cusolver_orgqr_ffi",
    ("syevd", "cuda"): "cusolver_syevd_ffi",
    ("gesvd", "cuda"): "cusolver_gesvd_ffi",
    ("sytrd", "cuda"): "cusolver_sytrd_ffi",
}
_COMPLEX_NAMES = {"orgqr": "ungqr", "syevd": "heevd", "sytrd": "hetrd"}

# How a kernel's options become backend_config attributes, per platform.
_U8 = lambda ch: f"{ord(ch)} : ui8"   # noqa: E731  LAPACK character arguments
_BOOL = lambda b: "true" if b else "false"   # noqa: E731


def _attrs(kernel, platform, **opts) -> dict:
    if platform == "cpu":
        if kernel == "potrf" or kernel == "sytrd":
            return {"uplo": _U8("L" if opts["lower"] else "U")}
        if kernel == "syevd":
            return {"mode": _U8("V"), "uplo": _U8("L" if opts["lower"] else "U")}
        if kernel in ("gesdd", "gesvd"):
            mode = "A" if opts["full"] else "S"
            return {"mode": _U8(mode if opts["compute_uv"] else "N")}
        if kernel == "geev":
            return {"compute_left": _U8("V" if opts["left"] else "N"),
                    "compute_right": _U8("V" if opts["right"] else "N")}
        if kernel == "trsm":
            trans = ("C" if opts["conjugate_a"] else "T") if opts["transpose_a"] else "N"
            return {"side": _U8("L" if opts["left_side"] else "R"),
                    "uplo": _U8("L" if opts["lower"] else "U"),
                    "trans_x": _U8(trans), "diag": _U8("U" if opts["unit_diagonal"] else "N")}
        if kernel == "gees":
            return {"mode": _U8("V" if opts["vectors"] else "N"), "sort": _U8("N")}
        if kernel == "gehrd":
            return {"low": "1 : i32", "high": f"{opts['n']} : i32"}
        return {}
    if platform == "cuda":   # attribute schemas of jaxlib's cusolver FFI handlers
        if kernel in ("potrf", "sytrd"):
            return {"lower": _BOOL(opts["lower"])}
        if kernel == "syevd":
            return {"lower": _BOOL(opts["lower"]), "algorithm": "0 : ui8"}
        if kernel == "gesvd":
            return {"full_matrices": _BOOL(opts["full"]), "compute_uv": _BOOL(opts["compute_uv"]),
                    "transposed": "false"}
        return {}
    return {}


_registered: set = set()


def _ensure_targets(platform):
    """Register jaxlib's LAPACK (CPU) / cusolver (CUDA) FFI targets with XLA once (all of
    them or, after a Ctrl-C held until the end, none: see ``interpreters.interrupts``)."""
    if platform in _registered:
        return
    with interrupts.deferred():
        _register_targets(platform)


def _register_targets(platform):
    from jaxlib import xla_client as xc  # deferred: keeps `import xform` light
    if platform == "cpu":
        from jaxlib.cpu import _lapack  # deferred: keeps `import xform` light
        _lapack.initialize()   # binds SciPy's LAPACK into the kernels
        for name, fn in _lapack.registrations().items():
            if name.endswith("_ffi"):
                xc.register_custom_call_target(name, fn, platform="cpu", api_version=1)
    elif platform == "cuda":
        from jaxlib import gpu_solver  # deferred: keeps `import xform` light
        for plat, targets in gpu_solver.registrations().items():
            for name, fn, api in targets:
                xc.register_custom_call_target(name, fn, platform=plat, api_version=api)
    _registered.add(platform)


def _platform(ctx):
    p = (ctx.module.platform or "cpu").lower()
    return {"gpu": "cuda", "host": "cpu"}.get(p, p)


def _target(ctx, kernel, dtype):
    platform = _platform(ctx)
    pattern = _TARGETS.get((kernel, platform))
    if pattern is None:
        raise NotImplementedError(
            f"linear algebra kernel {kernel!r} has no lowering for platform {platform!r}; "
            f"available on: {sorted(p for k, p in _TARGETS if k == kernel)}")
    _ensure_targets(platform)
    dtype = np.dtype(dtype)
    if dtype.kind == "c" and kernel in _COMPLEX_NAMES:
        pattern = pattern.replace(kernel, _COMPLEX_NAMES[kernel])
    return pattern.format(p=_PREFIX[dtype]), platform


def _layout(rank, nb):
    """Minor-to-major layout: matrices (rank nb+2) column-major, the rest row-major."""
    if rank == nb + 2:
        dims = [nb, nb + 1] + list(range(nb - 1, -1, -1))
    else:
        dims = list(range(rank - 1, -1, -1))
    if not dims:
        return "dense<> : tensor<0xindex>"
    return f"dense<[{', '.join(map(str, dims))}]> : tensor<{len(dims)}xindex>"


def _ffi_call(ctx, kernel, dtype, operands, out_shapes, nb, aliases=(), **opts):
    """Emit one FFI custom call; ``out_shapes``: [(shape, dtype)]; ``aliases``: (out, operand)."""
    target, platform = _target(ctx, kernel, dtype)
    out_types = [tensor_type(s, d) for s, d in out_shapes]
    in_ranks = [len(_shape(ctx, o)) for o in operands]
    cfg = ", ".join(f"{k} = {v}" for k, v in _attrs(kernel, platform, **opts).items())
    multi = len(out_shapes) > 1
    alias_txt = ", ".join(
        f"#stablehlo.output_operand_alias<output_tuple_indices = [{o}], operand_index = {i}, "
        f"operand_tuple_indices = []>" if multi else
        f"#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = {i}, "
        f"operand_tuple_indices = []>" for o, i in aliases)
    attrs = (f'call_target_name = "{target}", api_version = 4 : i32, '
             f"backend_config = {{{cfg}}}, "
             f'mhlo.frontend_attributes = {{num_batch_dims = "{nb}"}}, '
             f"operand_layouts = [{', '.join(_layout(r, nb) for r in in_ranks)}], "
             f"result_layouts = [{', '.join(_layout(len(s), nb) for s, _ in out_shapes)}]"
             + (f", output_operand_aliases = [{alias_txt}]" if aliases else ""))
    return ctx.op("stablehlo.custom_call", list(operands), out_types, attrs)


def _shape(ctx, name):
    from xform._src.lowering.mlir import _shape_of  # deferred: keeps `import xform` light
    return _shape_of(ctx.types[name])


# ----------------------------------------------------------------- helpers around kernels


def _ok(ctx, info, batch, direction="EQ"):
    zero = ctx.constant(np.zeros((), np.int32), shape=batch)
    return ctx.compare(info, zero, direction, np.int32)


def _nan_unless(ctx, ok, x, shape, dtype, nb):
    """``x`` where this batch member's ``ok`` holds, else NaN (JAX's failure convention)."""
    okb = ctx.op1("stablehlo.broadcast_in_dim", [ok], tensor_type(shape, np.bool_),
                  f"broadcast_dimensions = array<i64{': ' + ', '.join(map(str, range(nb))) if nb else ''}>")
    nan = ctx.constant(np.array(np.nan, dtype), shape=shape)
    return ctx.select(okb, x, nan)


def _tri_select(ctx, x, shape, dtype, lower, k=0):
    """Zero out the part of ``x`` above (lower) / below (upper) diagonal ``k``."""
    m, n = shape[-2:]
    nd = len(shape)
    it = tensor_type(shape, np.int32)
    r = ctx.op1("stablehlo.iota", [], it, f"iota_dimension = {nd - 2} : i64")
    c = ctx.op1("stablehlo.iota", [], it, f"iota_dimension = {nd - 1} : i64")
    if k:
        r = ctx.op1("stablehlo.add", [r, ctx.constant(np.array(k, np.int32), shape=shape)], it)
    mask = ctx.compare(r, c, "GE" if lower else "LE", np.int32)
    return ctx.select(mask, x, ctx.constant(np.zeros((), dtype), shape=shape))


def _zero_size(ctx, eqn):
    """Results of an equation whose operands have a zero-sized dimension (shape-only)."""
    args = [Array(np.zeros(a.shape, a.dtype)) for a in ctx.in_avals]
    with core.set_current_trace(core.EVAL_TRACE):
        out = eqn.primitive.bind(*args, **eqn.params)
    outs = out if eqn.primitive.multiple_results else [out]
    res = []
    for o, a in zip(outs, ctx.out_avals):
        o = np.asarray(o).astype(a.dtype)
        if o.size == 0 or (o == o.flat[0]).all():
            res.append(ctx.constant(o.flat[0] if o.size else np.zeros((), a.dtype), a.dtype,
                                    shape=a.shape))
        else:
            res.append(ctx.constant(o))
    return res


def _has_zero(ctx):
    return any(0 in a.shape for a in ctx.in_avals)


def _register_decomp(*prims):
    """``register`` for the decompositions: operands with a zero-sized dimension get their
    (constant) results from ``_zero_size`` before the rule runs, as no LAPACK kernel takes
    them."""
    def deco(fn):
        def rule(ctx, eqn, *operands):
            if _has_zero(ctx):
                return _zero_size(ctx, eqn)
            return fn(ctx, eqn, *operands)
        rule.__name__ = fn.__name__
        return register(*prims)(rule)
    return deco


def _lower_fun(ctx, fn, operands):
    """Lower ``fn`` (written with primitives) inline, as JAX's ``mlir.lower_fun``."""
    avals = list(ctx.in_avals)
    with core.set_current_trace(core.EVAL_TRACE):
        closed = staging.trace_to_closed_jaxpr(lambda *xs: list(fn(*xs)), avals)
    return lower_subjaxpr(ctx, closed, list(operands))


# ----------------------------------------------------------------- rules


@_register_decomp(cholesky_p)
def _cholesky(ctx, eqn, x):
    a = ctx.in_avals[0]
    nb = a.ndim - 2
    batch = a.shape[:-2]
    l, info = _ffi_call(ctx, "potrf", a.dtype, [x], [(a.shape, a.dtype), (batch, np.int32)], nb,
                        aliases=[(0, 0)], lower=True)
    l = _nan_unless(ctx, _ok(ctx, info, batch), l, a.shape, a.dtype, nb)
    return [_tri_select(ctx, l, a.shape, a.dtype, lower=True)]


@_register_decomp(triangular_solve_p)
def _triangular_solve(ctx, eqn, a, b):
    p = eqn.params
    aa, ba = ctx.in_avals
    nb = aa.ndim - 2
    if p["conjugate_a"] and not p["transpose_a"] and aa.dtype.kind == "c":
        # neither trsm nor the HLO op has "conjugate, no transpose": conjugate a first
        rt = tensor_type(aa.shape, _real_dt(aa.dtype))
        re = ctx.op1("stablehlo.real", [a], rt)
        im = ctx.op1("stablehlo.negate", [ctx.op1("stablehlo.imag", [a], rt)], rt)
        a = ctx.op1("stablehlo.complex", [re, im], aa)
    if _platform(ctx) != "cpu":   # JAX's GPU/TPU lowering: the HLO op
        trans = ("ADJOINT" if p["conjugate_a"] else "TRANSPOSE") if p["transpose_a"] else \
            "NO_TRANSPOSE"
        attrs = (f"left_side = {_BOOL(p['left_side'])}, lower = {_BOOL(p['lower'])}, "
                 f"unit_diagonal = {_BOOL(p['unit_diagonal'])}, "
                 f"transpose_a = #stablehlo<transpose {trans}>")
        return [ctx.op1("stablehlo.triangular_solve", [a, b], ba, attrs)]
    out, = _ffi_call(ctx, "trsm", aa.dtype, [a, b], [(ba.shape, ba.dtype)], nb,
                     aliases=[(0, 1)], **p)
    return [out]


def _real_dt(dt):
    dt = np.dtype(dt)
    return {np.dtype(np.complex64): np.dtype(np.float32),
            np.dtype(np.complex128): np.dtype(np.float64)}.get(dt, dt)


def _p2p_fn(m):
    """lu_pivots_to_permutation as a loop of swaps (JAX's generic lowering)."""

    def fn(piv):
        a = core.get_aval(piv)
        batch, k = a.shape[:-1], a.shape[-1]
        nb = len(batch)
        shape = batch + (m,)
        perm0 = S.broadcasted_iota(np.int32, shape, nb)

        def body(i, perm):
            i = E.convert_element_type(i, np.int32)   # the loop index is int64 under x64
            j = S.reshape(S.dynamic_slice_in_dim(piv, i, 1, nb), batch)
            io = S.broadcasted_iota(np.int32, shape, nb)
            hot_j = E.eq(io, S.broadcast_in_dim(j, shape, tuple(range(nb))))
            hot_i = E.eq(io, S.broadcast_in_dim(i, shape, ()))
            zero = S.broadcast_in_dim_p.bind(np.int32(0), shape=shape, broadcast_dimensions=())
            pj = R.reduce_sum(E.select(hot_j, perm, zero), (nb,))
            pi = R.reduce_sum(E.select(hot_i, perm, zero), (nb,))
            bc = lambda v: S.broadcast_in_dim(v, shape, tuple(range(nb)))  # noqa: E731
            return E.select(hot_i, bc(pj), E.select(hot_j, bc(pi), perm))
        return [CF.fori_loop(np.int32(0), np.int32(k), body, perm0)]
    return fn


@_register_decomp(lu_pivots_to_permutation_p)
def _lu_pivots_to_permutation(ctx, eqn, piv):
    return _lower_fun(ctx, _p2p_fn(eqn.params["permutation_size"]), [piv])


@_register_decomp(lu_p)
def _lu(ctx, eqn, x):
    a = ctx.in_avals[0]
    nb = a.ndim - 2
    batch = a.shape[:-2]
    m, n = a.shape[-2:]
    k = min(m, n)
    lu, piv, info = _ffi_call(ctx, "getrf", a.dtype, [x],
                              [(a.shape, a.dtype), (batch + (k,), np.int32), (batch, np.int32)],
                              nb, aliases=[(0, 0)])
    pt = tensor_type(batch + (k,), np.int32)
    piv = ctx.op1("stablehlo.subtract", [piv, ctx.constant(np.array(1, np.int32),
                                                           shape=batch + (k,))], pt)
    lu = _nan_unless(ctx, _ok(ctx, info, batch, "GE"), lu, a.shape, a.dtype, nb)
    saved = ctx.in_avals
    ctx.in_avals = [core.ShapedArray(batch + (k,), np.int32)]
    perm, = _lower_fun(ctx, _p2p_fn(m), [piv])
    ctx.in_avals = saved
    return [lu, piv, perm]


@_register_decomp(geqrf_p)
def _geqrf(ctx, eqn, x):
    a = ctx.in_avals[0]
    nb = a.ndim - 2
    k = min(a.shape[-2:])
    return _ffi_call(ctx, "geqrf", a.dtype, [x],
                     [(a.shape, a.dtype), (a.shape[:-2] + (k,), a.dtype)], nb, aliases=[(0, 0)])


@_register_decomp(geqp3_p)
def _geqp3(ctx, eqn, x, jpvt):
    a, pa = ctx.in_avals
    nb = a.ndim - 2
    k = min(a.shape[-2:])
    return _ffi_call(ctx, "geqp3", a.dtype, [x, jpvt],
                     [(a.shape, a.dtype), (pa.shape, np.int32), (a.shape[:-2] + (k,), a.dtype)],
                     nb, aliases=[(0, 0), (1, 1)])


@_register_decomp(householder_product_p)
def _householder_product(ctx, eqn, x, taus):
    a = ctx.in_avals[0]
    nb = a.ndim - 2
    out, = _ffi_call(ctx, "orgqr", a.dtype, [x, taus], [(a.shape, a.dtype)], nb,
                     aliases=[(0, 0)])
    return [out]


def _qr_fn(pivoting, full_matrices):

    def fn(x):
        a = core.get_aval(x)
        batch, (m, n) = a.shape[:-2], a.shape[-2:]
        nb = len(batch)
        p = None
        if pivoting:
            r, p, taus = D.geqp3_p.bind(x, D._full(batch + (n,), 0, np.int32))
            p = E.sub(p, D._full(batch + (n,), 1, np.int32))
        else:
            r, taus = D.geqrf_p.bind(x)
        if m < n:
            q = D.householder_product_p.bind(D._slice_last2(r, 0, m, 0, m), taus)
        elif full_matrices:
            q = D.householder_product_p.bind(
                S.pad(r, D._full((), 0, a.dtype), [(0, 0, 0)] * (nb + 1) + [(0, m - n, 0)]), taus)
        else:
            q = D.householder_product_p.bind(r, taus)
            r = D._slice_last2(r, 0, n, 0, n)
        r = D._triu(r)
        return [q, r] + ([p] if pivoting else [])
    return fn


@_register_decomp(qr_p)
def _qr(ctx, eqn, x):
    return _lower_fun(ctx, _qr_fn(eqn.params["pivoting"], eqn.params["full_matrices"]), [x])


@_register_decomp(eigh_p)
def _eigh(ctx, eqn, x):
    p = eqn.params
    a = ctx.in_avals[0]
    nb = a.ndim - 2
    batch, n = a.shape[:-2], a.shape[-1]
    rdt = _real_dt(a.dtype)
    v, w, info = _ffi_call(ctx, "syevd", a.dtype, [x],
                           [(a.shape, a.dtype), (batch + (n,), rdt), (batch, np.int32)], nb,
                           aliases=[(0, 0)], lower=p["lower"])
    ok = _ok(ctx, info, batch)
    v = _nan_unless(ctx, ok, v, a.shape, a.dtype, nb)
    w = _nan_unless(ctx, ok, w, batch + (n,), rdt, nb)
    sbi = p["subset_by_index"]
    if sbi is not None and tuple(sbi) != (0, n):
        lo, hi = sbi
        v = _slice(ctx, v, a.shape, [(nb + 1, lo, hi)], a.dtype)
        w = _slice(ctx, w, batch + (n,), [(nb, lo, hi)], rdt)
    return [v, w]


def _slice(ctx, x, shape, cuts, dtype):
    start, limit = [0] * len(shape), list(shape)
    for d, lo, hi in cuts:
        start[d], limit[d] = lo, hi
    out = tuple(h - s for s, h in zip(start, limit))
    return ctx.op1("stablehlo.slice", [x], tensor_type(out, dtype),
                   f"start_indices = array<i64: {', '.join(map(str, start))}>, "
                   f"limit_indices = array<i64: {', '.join(map(str, limit))}>, "
                   f"strides = array<i64: {', '.join('1' for _ in shape)}>")


# Platforms whose SVD kernel needs m >= n (cusolver's gesvd): a wide matrix is decomposed
# through its adjoint, A^H = V S U^H.  A module-level set so tests can route CPU through it.
_WIDE_SVD_BY_TRANSPOSE = {"cuda"}


def _svd_of_adjoint_fn(params):

    def adjoint(v):
        nd = core.get_aval(v).ndim
        vt = S.transpose(v, tuple(range(nd - 2)) + (nd - 1, nd - 2))
        return E.conj_p.bind(vt) if core.get_aval(v).dtype.kind == "c" else vt

    def fn(x):
        outs = D.svd_p.bind(adjoint(x), **params)
        if not params["compute_uv"]:
            return outs
        s, u, vt = outs
        return [s, adjoint(vt), adjoint(u)]
    return fn


@_register_decomp(svd_p)
def _svd(ctx, eqn, x):
    p = eqn.params
    a = ctx.in_avals[0]
    nb = a.ndim - 2
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    rdt = _real_dt(a.dtype)
    full, cuv = p["full_matrices"], p["compute_uv"]
    ushape = (m, m) if (full or not cuv) else (m, k)
    vshape = (n, n) if (full or not cuv) else (k, n)
    kernel = "gesvd" if p["algorithm"] == "QR" else "gesdd"
    if _platform(ctx) in _WIDE_SVD_BY_TRANSPOSE and m < n:
        return _lower_fun(ctx, _svd_of_adjoint_fn(p), [x])
    if _platform(ctx) == "cuda":
        kernel = "gesvd"
    _, s, u, vt, info = _ffi_call(
        ctx, kernel, a.dtype, [x],
        [(a.shape, a.dtype), (batch + (k,), rdt), (batch + ushape, a.dtype),
         (batch + vshape, a.dtype), (batch, np.int32)], nb, aliases=[(0, 0)],
        full=full, compute_uv=cuv)
    ok = _ok(ctx, info, batch)
    s = _nan_unless(ctx, ok, s, batch + (k,), rdt, nb)
    sbi = p["subset_by_index"]
    lo, hi = sbi if sbi is not None else (0, k)
    if (lo, hi) != (0, k):
        s = _slice(ctx, s, batch + (k,), [(nb, lo, hi)], rdt)
    if not cuv:
        return [s]
    u = _nan_unless(ctx, ok, u, batch + ushape, a.dtype, nb)
    vt = _nan_unless(ctx, ok, vt, batch + vshape, a.dtype, nb)
    if (lo, hi) != (0, k):
        u = _slice(ctx, u, batch + ushape, [(nb + 1, lo, hi)], a.dtype)
        vt = _slice(ctx, vt, batch + vshape, [(nb, lo, hi)], a.dtype)
    return [s, u, vt]


@_register_decomp(eig_p)
def _eig(ctx, eqn, x):
    p = eqn.params
    a = ctx.in_avals[0]
    nb = a.ndim - 2
    batch, n = a.shape[:-2], a.shape[-1]
    cdt = ctx.out_avals[0].dtype
    real = a.dtype.kind != "c"
    vshape = (a.shape, cdt)
    if real:
        outs = [(batch + (n,), a.dtype), (batch + (n,), a.dtype), vshape, vshape,
                (batch, np.int32)]
    else:
        outs = [(batch + (n,), cdt), vshape, vshape, (batch, np.int32)]
    res = _ffi_call(ctx, "geev", a.dtype, [x], outs, nb, left=p["compute_left_eigenvectors"],
                    right=p["compute_right_eigenvectors"])
    *w, vl, vr, info = res
    if real:
        w = [ctx.op1("stablehlo.complex", w, tensor_type(batch + (n,), cdt))]
    ok = _ok(ctx, info, batch)
    out = [_nan_unless(ctx, ok, w[0], batch + (n,), cdt, nb)]
    if p["compute_left_eigenvectors"]:
        out.append(_nan_unless(ctx, ok, vl, a.shape, cdt, nb))
    if p["compute_right_eigenvectors"]:
        out.append(_nan_unless(ctx, ok, vr, a.shape, cdt, nb))
    return out


@_register_decomp(schur_p)
def _schur(ctx, eqn, x):
    p = eqn.params
    a = ctx.in_avals[0]
    nb = a.ndim - 2
    batch, n = a.shape[:-2], a.shape[-1]
    if a.dtype.kind == "c":
        eig_outs = [(batch + (n,), a.dtype)]
    else:
        eig_outs = [(batch + (n,), a.dtype)] * 2
    res = _ffi_call(ctx, "gees", a.dtype, [x],
                    [(a.shape, a.dtype), (a.shape, a.dtype)] + eig_outs
                    + [(batch, np.int32), (batch, np.int32)], nb, aliases=[(0, 0)],
                    vectors=p["compute_schur_vectors"])
    t, vs, info = res[0], res[1], res[-1]
    ok = _ok(ctx, info, batch)
    out = [_nan_unless(ctx, ok, t, a.shape, a.dtype, nb)]
    if p["compute_schur_vectors"]:
        out.append(_nan_unless(ctx, ok, vs, a.shape, a.dtype, nb))
    return out


@register(hessenberg_p)
def _hessenberg(ctx, eqn, x):
    a = ctx.in_avals[0]
    if _has_zero(ctx) or a.shape[-1] <= 1:
        return _zero_size(ctx, eqn) if _has_zero(ctx) else [x, ctx.constant(
            np.zeros((), a.dtype), shape=a.shape[:-2] + (0,))]
    nb = a.ndim - 2
    batch, n = a.shape[:-2], a.shape[-1]
    h, tau, _ = _ffi_call(ctx, "gehrd", a.dtype, [x],
                          [(a.shape, a.dtype), (batch + (n - 1,), a.dtype), (batch, np.int32)],
                          nb, aliases=[(0, 0)], n=n)
    return [h, tau]


@_register_decomp(tridiagonal_p)
def _tridiagonal(ctx, eqn, x):
    a = ctx.in_avals[0]
    nb = a.ndim - 2
    batch, n = a.shape[:-2], a.shape[-1]
    r = _real_dt(a.dtype)
    k = max(n - 1, 0)
    c, d, e, tau, info = _ffi_call(ctx, "sytrd", a.dtype, [x],
                                   [(a.shape, a.dtype), (batch + (n,), r), (batch + (k,), r),
                                    (batch + (k,), a.dtype), (batch, np.int32)], nb,
                                   aliases=[(0, 0)], lower=eqn.params["lower"])
    ok = _ok(ctx, info, batch)
    return [_nan_unless(ctx, ok, c, a.shape, a.dtype, nb),
            _nan_unless(ctx, ok, d, batch + (n,), r, nb),
            _nan_unless(ctx, ok, e, batch + (k,), r, nb),
            _nan_unless(ctx, ok, tau, batch + (k,), a.dtype, nb)]


@_register_decomp(tridiagonal_solve_p)
def _tridiagonal_solve(ctx, eqn, dl, d, du, b):
    ba = ctx.in_avals[3]
    da = ctx.in_avals[1]
    nb = ba.ndim - 2
    batch = ba.shape[:-2]
    if eqn.params["perturb_singular"]:
        (x,) = _ffi_call(ctx, "gtsv_perturbed", ba.dtype, [dl, d, du, b],
                         [(ba.shape, ba.dtype)], nb)
        return [x]
    res = _ffi_call(ctx, "gtsv", ba.dtype, [dl, d, du, b],
                    [(da.shape, da.dtype)] * 3 + [(ba.shape, ba.dtype), (batch, np.int32)], nb,
                    aliases=[(0, 0), (1, 1), (2, 2), (3, 3)])
    x, info = res[3], res[4]
    return [_nan_unless(ctx, _ok(ctx, info, batch), x, ba.shape, ba.dtype, nb)]


@register(linear_solve_p)
def _custom_linear_solve(ctx, eqn, *args):
    """The solve program, inlined (its derivatives were resolved before lowering)."""
    p = eqn.params
    lens = p["const_lengths"]
    start = lens[0] + lens[1]
    solve_consts = list(args[start:start + lens[2]])
    b = list(args[sum(lens):])
    return lower_subjaxpr(ctx, p["jaxprs"][2], solve_consts + b)

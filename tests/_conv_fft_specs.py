"""Verifier specs (XLA lowering vs NumPy reference) of the convolution, windowed-reduction
and FFT primitives; ``tests/test_verifier.py`` merges ``SPECS`` into its table.

A spec: ``gen(data, name) -> (params, [numpy args])`` plus (exact, tol) as in the verifier.
"""
from __future__ import annotations

import jax
import numpy as np
from hypothesis import strategies as st

SPECS: dict = {}

SPATIAL = "HWD"


def random_conv(rng, nsp=None, groups=None, string_padding=None):
    """A random valid conv_general_dilated call: (lhs, rhs, kwargs)."""
    for _ in range(100):
        nsp = nsp or int(rng.integers(1, 4))
        G, B = groups or [(1, 1), (2, 1), (1, 2), (3, 1)][int(rng.integers(0, 4))]
        N = B * int(rng.integers(1, 3))
        I = int(rng.integers(1, 3))
        C, O = G * I, G * B * int(rng.integers(1, 3))
        hi = 6 if nsp < 3 else 4
        sp = [int(rng.integers(2, hi + 1)) for _ in range(nsp)]
        win = [int(rng.integers(1, 4)) for _ in range(nsp)]
        strides = tuple(int(rng.integers(1, 3)) for _ in range(nsp))
        rdil = tuple(int(rng.integers(1, 3)) for _ in range(nsp))
        use_str = rng.random() < 0.5 if string_padding is None else string_padding
        if use_str:
            padding = ["SAME", "SAME_LOWER", "VALID"][int(rng.integers(0, 3))]
            ldil = (1,) * nsp
        else:
            padding = tuple((int(rng.integers(-1, 3)), int(rng.integers(-1, 3)))
                            for _ in range(nsp))
            ldil = tuple(int(rng.integers(1, 3)) for _ in range(nsp))
        letters = list(SPATIAL[:nsp])

        def spec(a, b):
            s = [a, b] + list(letters)
            return "".join(s[i] for i in rng.permutation(len(s)))
        dn = (spec("N", "C"), spec("O", "I"), spec("N", "C"))
        lshape = {"N": N, "C": C, **dict(zip(letters, sp))}
        rshape = {"O": O, "I": I, **dict(zip(letters, win))}
        lhs = rng.standard_normal([lshape[c] for c in dn[0]]).astype(np.float32)
        rhs = rng.standard_normal([rshape[c] for c in dn[1]]).astype(np.float32)
        kw = dict(window_strides=strides, padding=padding, lhs_dilation=ldil,
                  rhs_dilation=rdil, dimension_numbers=dn, feature_group_count=G,
                  batch_group_count=B)
        try:
            out = jax.eval_shape(lambda a, b: jax.lax.conv_general_dilated(a, b, **kw), lhs, rhs)
        except (TypeError, ValueError):
            continue
        if 0 in out.shape:
            continue
        return lhs, rhs, kw
    raise AssertionError("no valid configuration drawn")




def _rng(data):
    return np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))


def _conv_gen(data, name):
    from xform.lax import conv_dimension_numbers, padtype_to_pads
    rng = _rng(data)
    dt = np.dtype(data.draw(st.sampled_from(["float32", "float64", "float16", "int32",
                                             "complex64", "complex128"]), label="dtype"))
    lhs, rhs, kw = random_conv(rng)
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, kw["dimension_numbers"])
    pads = kw["padding"]
    if isinstance(pads, str):
        window = [(rhs.shape[i] - 1) * r + 1 for i, r in zip(dn.rhs_spec[2:],
                                                              kw["rhs_dilation"])]
        pads = padtype_to_pads([lhs.shape[i] for i in dn.lhs_spec[2:]], window,
                               kw["window_strides"], pads)
    if dt.kind == "i":
        lhs, rhs = np.round(lhs * 3), np.round(rhs * 3)
    if dt.kind == "c":   # lowered as three real convolutions (Gauss's trick)
        lhs = lhs + 1j * rng.standard_normal(lhs.shape)
        rhs = rhs + 1j * rng.standard_normal(rhs.shape)
    params = dict(window_strides=tuple(kw["window_strides"]), padding=tuple(map(tuple, pads)),
                  lhs_dilation=tuple(kw["lhs_dilation"]), rhs_dilation=tuple(kw["rhs_dilation"]),
                  dimension_numbers=dn, feature_group_count=kw["feature_group_count"],
                  batch_group_count=kw["batch_group_count"],
                  precision=data.draw(st.sampled_from([None, "HIGHEST"]), label="precision"),
                  preferred_element_type=None)
    return params, [lhs.astype(dt), rhs.astype(dt)]


SPECS["conv_general_dilated"] = (_conv_gen, False, 64)


# ----------------------------------------------------------------- windowed reductions


def random_window(rng, nd=None, negative_pads=False, dilations=True, shape=None):
    """(operand shape, window params) with a non-empty output."""
    for _ in range(200):
        n = nd or int(rng.integers(1, 4))
        shp = shape or tuple(int(rng.integers(1, 6)) for _ in range(n))
        n = len(shp)
        lo = -1 if negative_pads else 0
        p = dict(window_dimensions=tuple(int(rng.integers(1, 4)) for _ in range(n)),
                 window_strides=tuple(int(rng.integers(1, 3)) for _ in range(n)),
                 padding=tuple((int(rng.integers(lo, 3)), int(rng.integers(lo, 3)))
                               for _ in range(n)),
                 base_dilation=tuple(int(rng.integers(1, 3)) if dilations else 1
                                     for _ in range(n)),
                 window_dilation=tuple(int(rng.integers(1, 3)) if dilations else 1
                                       for _ in range(n)))
        from xform._src.primitives.windowed import reduce_window_shape_tuple
        try:
            out = reduce_window_shape_tuple(shp, **p)
        except ValueError:
            continue
        if 0 not in out:
            return shp, p
    raise AssertionError("no window drawn")


def _distinct(rng, shape, dt):
    """Values without ties (so max/min choices are unambiguous)."""
    n = int(np.prod(shape))
    v = rng.permutation(n).astype(np.float64) - n / 2
    if np.dtype(dt).kind == "f":
        v = v / max(n, 1) * 4
    return v.reshape(shape).astype(dt)


def _rw_gen(data, name):
    rng = _rng(data)
    dt = np.dtype(data.draw(st.sampled_from(["float32", "float16", "int32"]), label="dtype"))
    shp, p = random_window(rng, negative_pads=True)
    return p, [_distinct(rng, shp, dt)]


def _sga_gen(data, name):
    rng = _rng(data)
    dt = np.dtype(data.draw(st.sampled_from(["float32", "float16"]), label="dtype"))
    shp, p = random_window(rng, negative_pads=True)
    p["select_prim"] = data.draw(st.sampled_from(["ge", "le"]), label="select")
    return p, [rng.standard_normal(shp).astype(dt), _distinct(rng, shp, dt)]


def _ssa_gen(data, name):
    from xform._src.primitives.windowed import reduce_window_shape_tuple
    rng = _rng(data)
    dt = np.dtype(data.draw(st.sampled_from(["float32", "float16"]), label="dtype"))
    shp, p = random_window(rng, negative_pads=True, dilations=False)
    del p["base_dilation"], p["window_dilation"]
    p["select_prim"] = data.draw(st.sampled_from(["ge", "le"]), label="select")
    out = reduce_window_shape_tuple(shp, p["window_dimensions"], p["window_strides"],
                                    p["padding"])
    return p, [rng.standard_normal(out).astype(dt), _distinct(rng, shp, dt)]


def _mul_computation(dt):
    from xform._src.interpreters import staging
    from xform._src.interpreters.core import ShapedArray
    from xform._src.primitives.elementwise import mul_p
    return staging.trace_to_closed_jaxpr(lambda a, b: [mul_p.bind(a, b)],
                                         [ShapedArray((), dt)] * 2)


def _argmax_computation(dt):
    """Variadic (value, index) -> first maximum, as jnp.argmax is often written."""
    from xform._src.interpreters import staging
    from xform._src.interpreters.core import ShapedArray
    from xform._src.primitives.elementwise import gt_p, eq_p, lt_p, and_p, or_p, select_n_p

    def f(av, ai, bv, bi):
        pick_a = or_p.bind(gt_p.bind(av, bv), and_p.bind(eq_p.bind(av, bv), lt_p.bind(ai, bi)))
        return [select_n_p.bind(pick_a, bv, av), select_n_p.bind(pick_a, bi, ai)]
    s = [ShapedArray((), dt), ShapedArray((), np.dtype(np.int32))]
    return staging.trace_to_closed_jaxpr(f, s + s)


def _generic_rw_gen(data, name):
    rng = _rng(data)
    dt = np.dtype(data.draw(st.sampled_from(["float32", "int32"]), label="dtype"))
    shp, p = random_window(rng, negative_pads=True)
    if data.draw(st.booleans(), label="variadic"):
        x = _distinct(rng, shp, dt)
        idx = np.arange(x.size, dtype=np.int32).reshape(shp)
        p["jaxpr"] = _argmax_computation(dt)
        lowest = np.array(-np.inf if dt.kind == "f" else np.iinfo(dt).min, dt)
        return p, [x, idx, lowest, np.array(-1, np.int32)]
    p["jaxpr"] = _mul_computation(dt)
    x = (rng.uniform(0.5, 1.5, shp) if dt.kind == "f" else rng.integers(-2, 3, shp)).astype(dt)
    return p, [x, np.array(1, dt)]


def _generic_reduce_gen(data, name):
    rng = _rng(data)
    dt = np.dtype(data.draw(st.sampled_from(["float32", "int32"]), label="dtype"))
    nd = int(rng.integers(1, 4))
    shp = tuple(int(rng.integers(1, 5)) for _ in range(nd))
    k = int(rng.integers(1, nd + 1))
    dims = tuple(sorted(int(d) for d in rng.permutation(nd)[:k]))
    if data.draw(st.booleans(), label="variadic"):
        x = _distinct(rng, shp, dt)
        idx = np.arange(x.size, dtype=np.int32).reshape(shp)
        lowest = np.array(-np.inf if dt.kind == "f" else np.iinfo(dt).min, dt)
        return {"jaxpr": _argmax_computation(dt), "dimensions": dims}, [
            x, idx, lowest, np.array(-1, np.int32)]
    x = (rng.uniform(0.5, 1.5, shp) if dt.kind == "f" else rng.integers(-2, 3, shp)).astype(dt)
    return {"jaxpr": _mul_computation(dt), "dimensions": dims}, [x, np.array(1, dt)]


SPECS["reduce_window_sum"] = (_rw_gen, False, 8)
SPECS["reduce_window_max"] = (_rw_gen, True, 1)
SPECS["reduce_window_min"] = (_rw_gen, True, 1)
SPECS["select_and_gather_add"] = (_sga_gen, True, 1)
SPECS["select_and_scatter_add"] = (_ssa_gen, False, 8)
SPECS["reduce_window"] = (_generic_rw_gen, False, 16)
SPECS["reduce"] = (_generic_reduce_gen, False, 16)


# ----------------------------------------------------------------- fft


def _fft_gen(data, name):
    from xform._src.primitives.fft import FftType
    rng = _rng(data)
    typ = data.draw(st.sampled_from(list(FftType)), label="fft_type")
    k = data.draw(st.integers(1, 3), label="rank")
    lead = tuple(int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 2))))
    lengths = tuple(int(rng.integers(1, 9)) for _ in range(k))
    real = np.dtype(np.float32)   # 64-bit needs x64 (the eager reference canonicalizes)
    cplx = np.complex64 if real == np.float32 else np.complex128
    if typ == FftType.RFFT:
        x = rng.standard_normal(lead + lengths).astype(real)
    elif typ == FftType.IRFFT:
        shp = lead + lengths[:-1] + (lengths[-1] // 2 + 1,)
        x = (rng.standard_normal(shp) + 1j * rng.standard_normal(shp)).astype(cplx)
    else:
        x = (rng.standard_normal(lead + lengths)
             + 1j * rng.standard_normal(lead + lengths)).astype(cplx)
    return {"fft_type": typ, "fft_lengths": lengths}, [x]


SPECS["fft"] = (_fft_gen, False, 64)


# ----------------------------------------------------------------- lax misc


def _clz_gen(data, name):
    rng = _rng(data)
    dt = np.dtype(data.draw(st.sampled_from(["int8", "int16", "int32", "uint8", "uint32",
                                             "int64", "uint64"]), label="dtype"))
    info = np.iinfo(dt)
    shp = tuple(int(rng.integers(1, 5)) for _ in range(int(rng.integers(0, 3))))
    x = rng.integers(info.min, info.max, size=shp, dtype=dt, endpoint=True)
    x = np.where(rng.random(shp) < 0.2, 0, x).astype(dt)
    return {}, [x]


_RP_DTYPES = ["float32", "float16", "float64", "bfloat16", "float8_e4m3fn", "float8_e5m2",
              "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e3m4",
              "float8_e4m3", "float8_e8m0fnu", "float4_e2m1fn"]


def _rp_gen(data, name):
    import ml_dtypes
    rng = _rng(data)
    dt = np.dtype(data.draw(st.sampled_from(_RP_DTYPES), label="dtype"))
    fi = ml_dtypes.finfo(dt)
    # up to two bits past the operand's own layout, and the bit counts of the wide types
    # XLA computes narrow formats in (f16: 5/10, f32: 8/23)
    e = data.draw(st.integers(1, int(fi.nexp) + 2) | st.sampled_from([4, 5, 7, 8]),
                  label="exponent_bits")
    m = data.draw(st.integers(0, int(fi.nmant) + 2) | st.sampled_from([10, 11, 23, 24]),
                  label="mantissa_bits")
    shp = (int(rng.integers(1, 30)),)
    x = rng.standard_normal(shp) * 2.0 ** rng.integers(-20, 20, shp)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, float(fi.max),
                         float(fi.smallest_subnormal)])
    x = np.where(rng.random(shp) < 0.2, specials[rng.integers(0, len(specials), shp)], x)
    with np.errstate(all="ignore"):
        return {"exponent_bits": e, "mantissa_bits": m}, [x.astype(dt)]


def _ob_gen(data, name):
    rng = _rng(data)
    return {}, [rng.standard_normal((2, 3)).astype(np.float32),
                rng.integers(0, 5, (4,)).astype(np.int32)]


SPECS["clz"] = (_clz_gen, True, 1)
SPECS["reduce_precision"] = (_rp_gen, True, 1)
SPECS["optimization_barrier"] = (_ob_gen, True, 1)

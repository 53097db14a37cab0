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
    dt = np.dtype(data.draw(st.sampled_from(["float32", "float16", "int32"]),
                            label="dtype"))
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
    params = dict(window_strides=tuple(kw["window_strides"]), padding=tuple(map(tuple, pads)),
                  lhs_dilation=tuple(kw["lhs_dilation"]), rhs_dilation=tuple(kw["rhs_dilation"]),
                  dimension_numbers=dn, feature_group_count=kw["feature_group_count"],
                  batch_group_count=kw["batch_group_count"],
                  precision=data.draw(st.sampled_from([None, "HIGHEST"]), label="precision"),
                  preferred_element_type=None)
    return params, [lhs.astype(dt), rhs.astype(dt)]


SPECS["conv_general_dilated"] = (_conv_gen, False, 64)

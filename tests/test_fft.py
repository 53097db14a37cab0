"""lax.fft and xform.numpy.fft against real JAX, finite differences, a bilinear dot-product
test and Python loops."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import xform
import xform.lax as lax
import xform.numpy as xnp
from xform._src.interpreters import ad, core
from prim_testutil import check_batch, check_jvp, examples, x64_enabled

TYPES = ["FFT", "IFFT", "RFFT", "IRFFT"]


def _close(a, b, tol=2e-5):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    scale = max(1.0, float(np.abs(b).max(initial=0)))
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale)


def _case(rng, typ, k=None, dtype=np.float32):
    """(real input, fft_lengths): the FFT is taken of the input's trailing dims (IRFFT: of
    the rfft-shaped slice)."""
    k = k or int(rng.integers(1, 4))
    lengths = tuple(int(rng.integers(1, 7)) for _ in range(k))
    lead = tuple(int(rng.integers(1, 3)) for _ in range(int(rng.integers(0, 2))))
    shape = lead + (lengths[:-1] + (lengths[-1] // 2 + 1,) if typ == "IRFFT" else lengths)
    return rng.standard_normal(shape).astype(dtype), lengths


NAMES_1D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
NAMES_ND = ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"]


@examples(20)
@given(seed=st.integers(0, 2**31 - 1), name=st.sampled_from(NAMES_1D + NAMES_ND),
       norm=st.sampled_from([None, "backward", "ortho", "forward"]), cplx=st.booleans(),
       use_s=st.booleans(), use_axes=st.booleans())
def test_numpy_fft_matches_jax(seed, name, norm, cplx, use_s, use_axes):
    rng = np.random.default_rng(seed)
    nd = int(rng.integers(2, 5)) if name not in NAMES_1D else int(rng.integers(1, 4))
    shape = tuple(int(rng.integers(1, 6)) for _ in range(nd))
    x = rng.standard_normal(shape).astype(np.float32)
    if cplx and not name.startswith("rfft") and name != "ihfft":
        x = (x + 1j * rng.standard_normal(shape)).astype(np.complex64)
    kw = {"norm": norm}
    if name in NAMES_1D:
        if use_axes:
            kw["axis"] = int(rng.integers(-nd, nd))
        if use_s:
            kw["n"] = int(rng.integers(1, 8))
    else:
        k = 2 if name.endswith("2") else int(rng.integers(1, nd + 1))
        if use_axes or name.endswith("2"):
            axes = [int(a) - nd * int(rng.integers(0, 2)) for a in rng.permutation(nd)[:k]]
            kw["axes"] = tuple(axes)
        if use_s:
            kw["s"] = tuple(int(rng.integers(1, 8)) for _ in range(len(kw.get("axes",
                                                                              range(k)))))
        elif name.endswith("2") and not use_axes:
            kw.pop("axes")
    if name.startswith("irfft") or name == "hfft":
        # the last transformed axis must have at least 2 entries when n/s is not given
        ax = kw.get("axis", kw.get("axes", [-1])[-1] if "axes" in kw else -1)
        if x.shape[ax] < 2 and not use_s:
            return
    want = getattr(jnp.fft, name)(x, **kw)
    _close(getattr(xnp.fft, name)(x, **kw), want, 1e-4)
    _close(xform.jit(lambda x: getattr(xnp.fft, name)(x, **kw))(x), want, 1e-4)


def test_freqs_shifts_and_errors():
    for n in (1, 6, 7):
        for d in (1.0, 0.25):
            _close(xnp.fft.fftfreq(n, d), jnp.fft.fftfreq(n, d), 1e-6)
            _close(xnp.fft.rfftfreq(n, d), jnp.fft.rfftfreq(n, d), 1e-6)
    x = np.arange(24.0, dtype=np.float32).reshape(4, 6)
    for axes in (None, 0, (1,), (0, 1)):
        _close(xnp.fft.fftshift(x, axes), jnp.fft.fftshift(x, axes))
        _close(xnp.fft.ifftshift(x, axes), jnp.fft.ifftshift(x, axes))
    for bad in (dict(norm="nope"), dict(axis=(0, 1))):
        with pytest.raises(ValueError):
            jnp.fft.fft(x, **bad)
        with pytest.raises(ValueError):
            xnp.fft.fft(x, **bad)
    with pytest.raises(ValueError):
        xnp.fft.fftn(x, axes=(0, 0))
    with pytest.raises(ValueError):
        xnp.fft.fftn(x, s=(3,), axes=(0, 1))
    with pytest.raises(ValueError):
        xnp.fft.fft2(x, axes=(0,))
    with pytest.raises(ValueError):
        lax.fft(x.astype(np.complex64), "rfft", (6,))
    with pytest.raises(ValueError):
        lax.fft(x, "nope", (6,))


@pytest.mark.parametrize("typ", TYPES)
def test_gradients_match_jax(typ):
    rng = np.random.default_rng(TYPES.index(typ))
    for k in ((1, 3), (2,), (3,), (1, 2))[TYPES.index(typ)]:
        x, lengths = _case(rng, typ, k)
        if typ == "IRFFT":
            x = (x + 1j * rng.standard_normal(x.shape)).astype(np.complex64)
        out = jax.eval_shape(lambda x: jax.lax.fft(x, typ, lengths), x)
        a = rng.standard_normal(out.shape).astype(np.float32)
        b = rng.standard_normal(out.shape).astype(np.float32)

        def loss(l, np_):
            def f(x):
                y = l.fft(x, typ, lengths)
                return np_.sum(np_.real(y) * a) + np_.sum(np_.imag(y) * b)
            return f
        want = jax.grad(loss(jax.lax, jnp), holomorphic=False)(x) if typ != "IRFFT" else \
            jax.grad(loss(jax.lax, jnp))(x)
        _close(xform.grad(loss(lax, xnp))(x), want, 1e-4)
        _close(xform.jit(xform.grad(loss(lax, xnp)))(x), want, 1e-4)


@examples(8)
@given(seed=st.integers(0, 2**31 - 1), typ=st.sampled_from(TYPES))
def test_jvp_matches_finite_differences(seed, typ):
    rng = np.random.default_rng(seed)
    x, lengths = _case(rng, typ, dtype=np.float64)
    with x64_enabled():
        if typ == "IRFFT":
            # differentiate through real -> complex so finite differences stay real-valued
            xi = rng.standard_normal(x.shape)
            f = lambda re: lax.fft(re + 1j * xi, typ, lengths)
        else:
            f = lambda re: lax.fft(re, typ, lengths)
        check_jvp(lambda r: [xnp.real(f(r)), xnp.imag(f(r))] if typ != "IRFFT" else f(r),
                  [x], rng, rtol=1e-6, atol=1e-6)


@examples(8)
@given(seed=st.integers(0, 2**31 - 1), typ=st.sampled_from(["FFT", "IFFT"]))
def test_fft_transpose_bilinear_dot_product(seed, typ):
    """<ct, F t> == <F^T ct, t> with the bilinear (unconjugated) pairing."""
    rng = np.random.default_rng(seed)
    x, lengths = _case(rng, typ, dtype=np.float64)
    with x64_enabled():
        c = lambda s: (rng.standard_normal(s) + 1j * rng.standard_normal(s))
        xc = c(x.shape)
        outs, lf = ad.linearize_flat(lambda v: [lax.fft(v, typ, lengths)],
                                     [core.Array(xc)])
        t, ct = c(x.shape), c(np.shape(outs[0]))
        lhs = np.sum(ct * np.asarray(lf(core.Array(t))[0]))
        rhs = np.sum(np.asarray(lf.transpose([core.Array(ct)])[0]) * t)
        assert np.isclose(lhs, rhs, rtol=1e-10, atol=1e-9), (lhs, rhs)


@examples(6)
@given(seed=st.integers(0, 2**31 - 1), typ=st.sampled_from(TYPES))
def test_batching_matches_loop_and_jax_vmap(seed, typ):
    rng = np.random.default_rng(seed)
    x, lengths = _case(rng, typ)
    size = 3
    d = int(rng.integers(0, x.ndim + 1))
    xb = rng.standard_normal((size,) + x.shape).astype(np.float32)
    if typ != "RFFT":
        xb = (xb + 1j * rng.standard_normal(xb.shape)).astype(np.complex64)
    xb = np.moveaxis(xb, 0, d)
    f = lambda v: lax.fft(v, typ, lengths)
    check_batch(f, [xb], [d], size, rtol=1e-5)
    _close(xform.vmap(f, in_axes=d)(xb), jax.vmap(lambda v: jax.lax.fft(v, typ, lengths),
                                                  in_axes=d)(xb))


def test_every_jax_numpy_fft_name_exists():
    public = {n for n in dir(jnp.fft) if not n.startswith("_")}
    missing = {n for n in public if callable(getattr(jnp.fft, n))} - set(dir(xnp.fft))
    assert not missing, sorted(missing)
    assert len(xnp.fft.__all__) == 18


@pytest.mark.parametrize("fn", ["fftshift", "ifftshift"])
def test_shift_axes_out_of_bounds_raise_index_error_naming_the_axis(fn):
    """JAX raises a bare ``IndexError: tuple index out of range``; xform's names the axis
    and the array's dimension (found by the misuse fuzz test)."""
    f = getattr(xnp.fft, fn)
    for x, axes in [(xnp.ones(()), xnp.array([1, 1])), (xnp.ones((2, 3)), 2),
                    (xnp.ones((2, 3)), (0, -3))]:
        with pytest.raises(IndexError, match=f"{fn}: axis -?[0-9]+ is out of bounds"):
            f(x, axes)
        with pytest.raises(IndexError):
            getattr(jnp.fft, fn)(np.asarray(x), np.asarray(axes) if not isinstance(axes, int)
                                 else axes)

"""scipy.signal's stft, istft, welch, csd and detrend against JAX 0.10.2 (values, dtypes,
shapes), with jit, vmap and grad."""
import warnings

import jax
import jax.scipy.signal as JS
import numpy as np
import pytest

import xform
import xform.scipy.signal as XS

RNG = np.random.default_rng(0)
X = RNG.standard_normal(100).astype(np.float32)
Y = RNG.standard_normal(100).astype(np.float32)
XB = RNG.standard_normal((2, 64)).astype(np.float32)
XC = (RNG.standard_normal(50) + 1j * RNG.standard_normal(50)).astype(np.complex64)


def _cmp(want, got, rtol=2e-4, atol=2e-5):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(want) == len(got)
        for w, g in zip(want, got):
            _cmp(w, g, rtol, atol)
        return
    want, got = np.asarray(want), np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _both(name, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(JS, name)(*args, **kw), getattr(XS, name)(*args, **kw)


@pytest.mark.parametrize("kw", [{}, dict(type="constant"), dict(bp=[20, 50]),
                                dict(axis=0), dict(bp=10)])
def test_detrend(kw):
    data = XB.T if kw.get("axis") == 0 else X
    _cmp(*_both("detrend", data, **kw))
    if "bp" not in kw:
        _cmp(*_both("detrend", np.arange(10), **{k: v for k, v in kw.items() if k != "axis"}))
    for f in (JS.detrend, XS.detrend):
        with pytest.raises(ValueError):
            f(np.arange(10.0), bp=[20])


@pytest.mark.parametrize("kw", [
    {}, dict(nperseg=32), dict(nperseg=20, noverlap=5, nfft=32), dict(boundary=None),
    dict(padded=False, nperseg=30), dict(return_onesided=False, nperseg=16),
    dict(window="hamming", nperseg=16), dict(boundary="even", nperseg=16),
    dict(boundary="odd", nperseg=16), dict(boundary="constant", nperseg=16),
    dict(detrend="linear", nperseg=16), dict(fs=10.0, nperseg=16)])
def test_stft(kw):
    _cmp(*_both("stft", X, **kw))


def test_stft_refuses_detrend_true_as_jax():
    for f in (JS.stft, XS.stft):
        with pytest.raises(ValueError, match="Unsupported detrend type"):
            f(X, nperseg=16, detrend=True)


def test_stft_batched_axis_and_complex():
    _cmp(*_both("stft", XB, nperseg=16))
    _cmp(*_both("stft", XB.T, nperseg=16, axis=0))
    _cmp(*_both("stft", XC, nperseg=16))


@pytest.mark.parametrize("kw", [
    {}, dict(nperseg=32), dict(nperseg=20, noverlap=5, nfft=32), dict(scaling="spectrum"),
    dict(average="median", nperseg=16), dict(return_onesided=False, nperseg=16),
    dict(detrend="linear", nperseg=32), dict(detrend=False, nperseg=32),
    dict(window="hamming", nperseg=16), dict(fs=100.0, nperseg=25)])
def test_welch_and_csd(kw):
    _cmp(*_both("welch", X, **kw))
    _cmp(*_both("csd", X, Y, **kw))


def test_welch_batched_and_complex():
    _cmp(*_both("welch", XB, nperseg=16))
    _cmp(*_both("welch", XC, nperseg=16))
    _cmp(*_both("csd", XC, X[:50], nperseg=16))


@pytest.mark.parametrize("kw", [dict(nperseg=16), dict(nperseg=20, noverlap=15),
                                dict(nperseg=16, nfft=32), dict(nperseg=16, window="hamming")])
def test_istft_inverts_and_matches_jax(kw):
    _, _, Z = JS.stft(X, **kw)
    Z = np.asarray(Z)
    want, got = JS.istft(Z, **kw), XS.istft(Z, **kw)
    _cmp(want, got, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(np.asarray(got[1])[:100], X, rtol=1e-3, atol=1e-4)


def test_spectral_under_jit_vmap_grad():
    _cmp(jax.jit(lambda x: JS.welch(x, nperseg=16))(X),
         xform.jit(lambda x: XS.welch(x, nperseg=16))(X))
    _cmp(jax.vmap(lambda x: JS.stft(x, nperseg=16)[2])(XB),
         xform.vmap(lambda x: XS.stft(x, nperseg=16)[2])(XB))
    _cmp(jax.grad(lambda x: JS.welch(x, nperseg=16)[1].sum())(X),
         xform.grad(lambda x: XS.welch(x, nperseg=16)[1].sum())(X))

"""scipy.spatial.transform.Rotation / Slerp against JAX's on the same inputs."""
import numpy as np
import pytest

import jax
from jax.scipy.spatial.transform import Rotation as JR, Slerp as JS
import xform
from xform.scipy.spatial.transform import Rotation as XR, Slerp as XS

RNG = np.random.RandomState(0)
Q = RNG.randn(6, 4).astype(np.float32)
V = RNG.randn(6, 3).astype(np.float32)


def _c(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_conversions_match_jax():
    x, j = XR.from_quat(Q), JR.from_quat(Q)
    _c(x.quat, j.quat)
    _c(x.as_matrix(), j.as_matrix())
    _c(x.as_rotvec(), j.as_rotvec())
    _c(x.as_rotvec(degrees=True), j.as_rotvec(degrees=True), 1e-4)
    _c(x.as_mrp(), j.as_mrp())
    _c(x.magnitude(), j.magnitude())
    for canon in (False, True):
        for sf in (False, True):
            _c(x.as_quat(canonical=canon, scalar_first=sf),
               j.as_quat(canonical=canon, scalar_first=sf))
    m, r, p = j.as_matrix(), j.as_rotvec(), j.as_mrp()
    _c(XR.from_matrix(m).quat, JR.from_matrix(m).quat)
    _c(XR.from_rotvec(r).quat, JR.from_rotvec(r).quat)
    _c(XR.from_rotvec(np.zeros(3, np.float32)).quat, JR.from_rotvec(np.zeros(3)).quat)
    _c(XR.from_mrp(p).quat, JR.from_mrp(p).quat)
    _c(XR.identity().quat, JR.identity().quat)


@pytest.mark.parametrize("seq", ["xyz", "ZYX", "xyx", "ZXZ", "yzx", "XZY"])
def test_euler_matches_jax(seq):
    x, j = XR.from_quat(Q), JR.from_quat(Q)
    _c(x.as_euler(seq), j.as_euler(seq), 1e-4)
    _c(x.as_euler(seq, degrees=True), j.as_euler(seq, degrees=True), 1e-3)
    ang = RNG.randn(6, 3).astype(np.float32)
    _c(XR.from_euler(seq, ang).quat, JR.from_euler(seq, ang).quat)
    _c(XR.from_euler(seq, ang * 50, degrees=True).quat,
       JR.from_euler(seq, ang * 50, degrees=True).quat, 1e-4)
    # gimbal lock: the middle angle at 0 and at its limit
    mid = 0.0 if seq[0] == seq[2] else np.pi / 2
    lock = np.array([0.3, mid, 0.2], np.float32)
    _c(XR.from_euler(seq, lock).as_euler(seq), JR.from_euler(seq, lock).as_euler(seq), 1e-3)
    with pytest.raises(ValueError, match="consecutive"):
        XR.from_euler("xxy", ang)
    with pytest.raises(ValueError, match="Expected 3 axes"):
        x.as_euler("xy")


def test_composition_apply_mean_indexing():
    x, j = XR.from_quat(Q), JR.from_quat(Q)
    _c((x * x.inv()).quat, (j * j.inv()).quat)
    _c((x[1] * x[2:4]).quat, (j[1] * j[2:4]).quat)
    for inv in (False, True):
        _c(x.apply(V, inverse=inv), j.apply(V, inverse=inv))
        _c(x[2].apply(V, inverse=inv), j[2].apply(V, inverse=inv))
    _c(x.mean().as_matrix(), j.mean().as_matrix(), 1e-4)
    w = np.linspace(0.1, 1, 6).astype(np.float32)
    _c(x.mean(w).as_matrix(), j.mean(w).as_matrix(), 1e-4)
    _c(XR.concatenate([x, x[0:1]]).quat, JR.concatenate([j, j[0:1]]).quat)
    assert len(x) == len(j) == 6 and x[0].single and not x.single
    with pytest.raises(TypeError, match="not subscriptable"):
        x[0][0]
    with pytest.raises(TypeError, match="no len"):
        len(x[0])


def test_slerp_matches_jax():
    x, j = XR.from_quat(Q), JR.from_quat(Q)
    t = np.array([0.0, 1.0, 3.0, 4.0, 6.0, 7.0], np.float32)
    xs, js = XS.init(t, x), JS.init(t, j)
    tt = np.array([0, 0.5, 2.0, 3.5, 6.9, 7.0], np.float32)
    _c(xs(tt).quat, js(tt).quat)
    _c(xs(2.5).quat, js(2.5).quat)
    assert xs(2.5).single
    with pytest.raises(ValueError, match="at least 2"):
        XS.init(t[:1], x[0:1])
    with pytest.raises(TypeError, match="Rotation"):
        XS.init(t, Q)


def test_transformations():
    a = np.array([0.3, 0.2, 0.1], np.float32)
    v = np.ones(3, np.float32)
    g = xform.grad(lambda r: XR.from_rotvec(r).apply(v).sum())(a)
    h = jax.grad(lambda r: JR.from_rotvec(r).apply(v).sum())(a)
    _c(g, h)
    got = xform.jit(xform.vmap(lambda q: XR.from_quat(q).as_euler("xyz")))(Q)
    _c(got, JR.from_quat(Q).as_euler("xyz"), 1e-4)
    # Rotation and Slerp are pytrees (NamedTuples), as JAX's
    out = xform.jit(lambda r: r * r)(XR.from_quat(Q))
    _c(out.quat, (JR.from_quat(Q) * JR.from_quat(Q)).quat)

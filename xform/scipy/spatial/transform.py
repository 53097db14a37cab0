"""``Rotation`` and ``Slerp`` (JAX's ``jax.scipy.spatial.transform``): rotations stored as
unit quaternions ``[..., 4]`` (scalar last), every conversion written with
``xform.numpy`` on the trailing axis so ``jit``, ``grad`` and ``vmap`` apply."""
from __future__ import annotations

import re
import typing

import numpy as np

import xform.numpy as xnp

__all__ = ["Rotation", "Slerp"]

_AXIS = {"x": 0, "y": 1, "z": 2}


def _norm(v):
    return xnp.sqrt(xnp.sum(v * v, axis=-1))


def _unit(q):
    return q / _norm(q)[..., None]


def _compose(p, q):
    pv, pw, qv, qw = p[..., :3], p[..., 3:], q[..., :3], q[..., 3:]
    v = pw * qv + qw * pv + xnp.cross(pv, qv)
    w = pw * qw - xnp.sum(pv * qv, axis=-1, keepdims=True)
    return xnp.concatenate([v, w], axis=-1)


def _matrix(q):
    x, y, z, w = (q[..., i] for i in range(4))
    rows = [[x * x - y * y - z * z + w * w, 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), -x * x + y * y - z * z + w * w, 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), -x * x - y * y + z * z + w * w]]
    return xnp.stack([xnp.stack(r, axis=-1) for r in rows], axis=-2)


def _from_matrix(m):
    """The quaternion of a rotation matrix, from the largest of the diagonal entries and
    the trace (the numerically safest of four formulas)."""
    d = [m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]]
    tr = d[0] + d[1] + d[2]
    cands = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        q = [None] * 4
        q[i] = 1 - tr + 2 * m[..., i, i]
        q[j] = m[..., j, i] + m[..., i, j]
        q[k] = m[..., k, i] + m[..., i, k]
        q[3] = m[..., k, j] - m[..., j, k]
        cands.append(xnp.stack(q, axis=-1))
    cands.append(xnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                            m[..., 1, 0] - m[..., 0, 1], 1 + tr], axis=-1))
    choice = xnp.argmax(xnp.stack(d + [tr], axis=-1), axis=-1)
    q = xnp.take_along_axis(xnp.stack(cands, axis=-2), choice[..., None, None], axis=-2)[..., 0, :]
    return _unit(q)


def _rotvec(q, degrees):
    q = xnp.where(q[..., 3:] < 0, -q, q)
    angle = 2.0 * xnp.arctan2(_norm(q[..., :3]), q[..., 3])
    a2 = angle * angle
    small = 2 + a2 / 12 + 7 * a2 * a2 / 2880
    safe = xnp.where(angle <= 1e-3, 1.0, angle)
    scale = xnp.where(angle <= 1e-3, small, safe / xnp.sin(safe / 2))
    if degrees:
        scale = xnp.rad2deg(scale)
    return scale[..., None] * q[..., :3]


def _from_rotvec(v, degrees):
    if degrees:
        v = xnp.deg2rad(v)
    angle = _norm(v)
    a2 = angle * angle
    small = 0.5 - a2 / 48 + a2 * a2 / 3840
    safe = xnp.where(angle <= 1e-3, 1.0, angle)
    scale = xnp.where(angle <= 1e-3, small, xnp.sin(safe / 2) / safe)
    return xnp.concatenate([scale[..., None] * v, xnp.cos(angle / 2)[..., None]], axis=-1)


def _elementary(axis, angle):
    zero = xnp.zeros_like(angle)
    parts = [zero, zero, zero]
    parts[axis] = xnp.sin(angle / 2)
    return xnp.stack(parts + [xnp.cos(angle / 2)], axis=-1)


def _check_seq(seq, n=None):
    if n is not None and len(seq) != n:
        raise ValueError(f"Expected {n} axes, got {seq}.")
    if not 1 <= len(seq) <= 3:
        raise ValueError("Expected axis specification to be a non-empty string of upto 3 "
                         f"characters, got {seq}")
    intrinsic = re.fullmatch(r"[XYZ]{1,3}", seq) is not None
    extrinsic = re.fullmatch(r"[xyz]{1,3}", seq) is not None
    if not (intrinsic or extrinsic):
        raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] or "
                         f"['X', 'Y', 'Z'], got {seq}")
    if any(seq[i] == seq[i + 1] for i in range(len(seq) - 1)):
        raise ValueError(f"Expected consecutive axes to be different, got {seq}")
    return intrinsic, [_AXIS[c] for c in seq.lower()]


def _euler(q, seq, degrees):
    """Euler angles of quaternions (the quaternion-direct method of Bernardes and
    Viollet, 2022, as SciPy uses)."""
    intrinsic, axes = _check_seq(seq, 3)
    if intrinsic:
        axes = axes[::-1]
    i, j, k = axes
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    if symmetric:
        a, b, c, d = q[..., 3], q[..., i], q[..., j], q[..., k] * sign
    else:
        a, b = q[..., 3] - q[..., j], q[..., i] + q[..., k] * sign
        c, d = q[..., j] + q[..., 3], q[..., k] * sign - q[..., i]
    mid = 2 * xnp.arctan2(xnp.hypot(c, d), xnp.hypot(a, b))
    eps = 1e-7
    half_sum, half_diff = xnp.arctan2(b, a), xnp.arctan2(d, c)
    at_zero = xnp.abs(mid) <= eps
    at_pi = xnp.abs(mid - np.pi) <= eps
    regular = ~(at_zero | at_pi)
    first_i, third_i = (2, 0) if intrinsic else (0, 2)
    # degenerate cases put the whole rotation in angle 0 and set the other outer one to 0
    degenerate0 = xnp.where(at_zero, 2 * half_sum, 2 * half_diff * (1 if intrinsic else -1))
    zeros = xnp.zeros_like(mid)
    out = [degenerate0, mid, zeros]
    out[first_i] = xnp.where(regular, half_sum - half_diff, out[first_i])
    out[third_i] = xnp.where(regular, half_sum + half_diff, out[third_i])
    if not symmetric:
        out[third_i] = out[third_i] * sign
        out[1] = out[1] - np.pi / 2
    ang = xnp.stack(out, axis=-1)
    ang = (ang + np.pi) % (2 * np.pi) - np.pi
    return xnp.rad2deg(ang) if degrees else ang


def _canonical(q):
    neg, zero = q < 0, q == 0
    flip = (neg[..., 3] | (zero[..., 3] & neg[..., 0])
            | (zero[..., 3] & zero[..., 0] & neg[..., 1])
            | (zero[..., 3] & zero[..., 0] & zero[..., 1] & neg[..., 2]))
    return xnp.where(flip[..., None], -q, q)


class Rotation(typing.NamedTuple):
    """A rotation (or a stack of them) in 3 dimensions, as a unit quaternion ``quat``
    (``[..., 4]``, scalar last): SciPy's ``Rotation`` API."""
    quat: typing.Any

    @classmethod
    def concatenate(cls, rotations):
        return cls(xnp.concatenate([r.quat for r in rotations]))

    @classmethod
    def from_euler(cls, seq, angles, degrees=False):
        intrinsic, axes = _check_seq(seq)
        angles = xnp.atleast_1d(xnp.asarray(angles))
        if not xnp.issubdtype(angles.dtype, xnp.inexact):
            angles = angles.astype(xnp.result_type(float))
        if degrees:
            angles = xnp.deg2rad(angles)
        if angles.shape[-1] != len(axes):
            raise ValueError(f"Expected angles of last dimension {len(axes)} for seq "
                             f"{seq!r}, got shape {angles.shape}")
        q = _elementary(axes[0], angles[..., 0])
        for n in range(1, len(axes)):
            e = _elementary(axes[n], angles[..., n])
            q = _compose(q, e) if intrinsic else _compose(e, q)
        return cls(q)

    @classmethod
    def from_matrix(cls, matrix):
        return cls(_from_matrix(xnp.asarray(matrix)))

    @classmethod
    def from_mrp(cls, mrp):
        p = xnp.asarray(mrp)
        s = xnp.sum(p * p, axis=-1, keepdims=True) + 1
        return cls(xnp.concatenate([2 * p, 2 - s], axis=-1) / s)

    @classmethod
    def from_quat(cls, quat):
        return cls(_unit(xnp.asarray(quat)))

    @classmethod
    def from_rotvec(cls, rotvec, degrees=False):
        return cls(_from_rotvec(xnp.asarray(rotvec), degrees))

    @classmethod
    def identity(cls, num=None, dtype=float):
        if num is not None:
            raise NotImplementedError("Rotation.identity(num=...) is not supported (as in "
                                      "JAX); stack single identities instead")
        return cls(xnp.array([0.0, 0.0, 0.0, 1.0], dtype=dtype))

    @classmethod
    def random(cls, random_key, num=None):
        raise NotImplementedError("Rotation.random is not implemented (as in JAX); draw "
                                  "normal quaternions and use Rotation.from_quat")

    def __getitem__(self, indexer):
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self):
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    def __mul__(self, other):
        return Rotation.from_quat(_compose(self.quat, other.quat))

    def apply(self, vectors, inverse=False):
        m = _matrix(self.quat)
        if inverse:
            m = xnp.swapaxes(m, -1, -2)
        return xnp.einsum("...ij,...j->...i", m, xnp.asarray(vectors))

    def as_euler(self, seq, degrees=False):
        return _euler(self.quat, seq, degrees)

    def as_matrix(self):
        return _matrix(self.quat)

    def as_mrp(self):
        q = self.quat
        sign = xnp.where(q[..., 3:] < 0, -1.0, 1.0)
        return sign * q[..., :3] / (1.0 + sign * q[..., 3:])

    def as_rotvec(self, degrees=False):
        return _rotvec(self.quat, degrees)

    def as_quat(self, canonical=False, scalar_first=False):
        q = _canonical(self.quat) if canonical else self.quat
        return xnp.roll(q, 1, axis=-1) if scalar_first else q

    def inv(self):
        return Rotation(self.quat * xnp.array([-1, -1, -1, 1], dtype=self.quat.dtype))

    def magnitude(self):
        q = self.quat
        return 2.0 * xnp.arctan2(_norm(q[..., :3]), xnp.abs(q[..., 3]))

    def mean(self, weights=None):
        """The rotation minimising the weighted sum of squared chordal distances: the
        top eigenvector of ``sum_i w_i q_i q_i^T``."""
        q = self.quat
        w = (xnp.ones(q.shape[0], dtype=q.dtype) if weights is None
             else xnp.asarray(weights, dtype=q.dtype))
        if w.ndim != 1:
            raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
        if w.shape[0] != len(self):
            raise ValueError("Expected `weights` to have number of values equal to number "
                             f"of rotations, got {w.shape[0]} values and {len(self)} "
                             "rotations.")
        k = (w[None, :] * q.T) @ q
        _, v = xnp.linalg.eigh(k)
        return Rotation(v[:, -1])

    @property
    def single(self):
        return self.quat.ndim == 1


class Slerp(typing.NamedTuple):
    """Spherical linear interpolation between key rotations at increasing ``times``
    (build with ``Slerp.init(times, rotations)``; call with the times to evaluate)."""
    times: typing.Any
    timedelta: typing.Any
    rotations: Rotation
    rotvecs: typing.Any

    @classmethod
    def init(cls, times, rotations):
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance.")
        if rotations.single or len(rotations) == 1:
            raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
        times = xnp.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1:
            raise ValueError("Expected times to be specified in a 1 dimensional array, got "
                             f"{times.ndim} dimensions.")
        if times.shape[0] != len(rotations):
            raise ValueError("Expected number of rotations to be equal to number of "
                             f"timestamps given, got {len(rotations)} rotations and "
                             f"{times.shape[0]} timestamps.")
        q = rotations.as_quat()
        start = Rotation(q[:-1])
        steps = (start.inv() * Rotation(q[1:])).as_rotvec()
        return cls(times=times, timedelta=xnp.diff(times), rotations=start, rotvecs=steps)

    def __call__(self, times):
        t = xnp.asarray(times, dtype=self.times.dtype)
        if t.ndim > 1:
            raise ValueError("`times` must be at most 1-dimensional.")
        single = t.ndim == 0
        t = xnp.atleast_1d(t)
        ind = xnp.maximum(xnp.searchsorted(self.times, t) - 1, 0)
        alpha = (t - self.times[ind]) / self.timedelta[ind]
        out = self.rotations[ind] * Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
        return out[0] if single else out

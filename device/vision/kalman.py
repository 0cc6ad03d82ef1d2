"""A constant-velocity Kalman filter over many boxes at once (numpy, batched).

State per box: centre x, centre y, width, height and their velocities, in
pixels and pixels per second of *media* time, so a replay at any pace and a
detector that runs at 2 or 10 frames per second see the same motion. The
noise scales with the box height, as in SORT/ByteTrack: a near person (big
box) moves more pixels than a far one.

Written here rather than taken from ``filterpy``: the whole filter is a dozen
lines of batched matrix products, and one Python loop per box would cost more
than the tracker's budget (1 ms for 20 people) on a Pi.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]

_H = np.hstack([np.eye(4), np.zeros((4, 4))])  # we measure cx, cy, w, h

# Standard deviations as fractions of the box height (per second for motion).
MEASURE_STD = 0.05  # a detector's box jitters by ~5 % of its height
START_VELOCITY_STD = 1.0  # people walk ~0.5-1 body heights per second
ACCEL_STD = 1.5  # how fast a walker can change speed, heights per s^2
_MOVES = np.array([1.0, 1.0, 0.0, 0.0])  # which measured values follow a velocity


def boxes_to_z(boxes: NDArray[np.floating]) -> F64:
    """x1, y1, x2, y2 rows as cx, cy, w, h rows."""
    b = np.asarray(boxes, np.float64).reshape(-1, 4)
    w = b[:, 2] - b[:, 0]
    h = b[:, 3] - b[:, 1]
    return np.stack([b[:, 0] + w / 2, b[:, 1] + h / 2, w, h], axis=1)


def z_to_boxes(z: F64) -> F64:
    cx, cy, w, h = z[:, 0], z[:, 1], np.maximum(z[:, 2], 1.0), np.maximum(z[:, 3], 1.0)
    return np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)


def initiate(boxes: NDArray[np.floating]) -> tuple[F64, F64]:
    """Mean (N, 8) and covariance (N, 8, 8) of new tracks from their first boxes."""
    z = boxes_to_z(boxes)
    n = z.shape[0]
    mean = np.hstack([z, np.zeros((n, 4))])
    h = np.maximum(z[:, 3], 1.0)
    std = np.stack([2 * MEASURE_STD * h] * 4 + [START_VELOCITY_STD * h] * 2 + [0.1 * h] * 2, axis=1)
    cov = np.zeros((n, 8, 8))
    idx = np.arange(8)
    cov[:, idx, idx] = std**2
    return mean, cov


def predict(mean: F64, cov: F64, dt: NDArray[np.floating]) -> tuple[F64, F64]:
    """Each state ``dt[i]`` seconds later (dt may differ per track)."""
    n = mean.shape[0]
    if n == 0:
        return mean, cov
    dt = np.asarray(dt, np.float64).reshape(n)
    # Only the centre moves with its velocity. A box's size is a random walk: at a few
    # detections a second, a size trend (someone half hidden by a post, turning) carried
    # on for a second of coasting shrinks the box to nothing, and nothing matches it.
    step = dt[:, None] * _MOVES  # (N, 4): dt on cx, cy; 0 on w, h
    new_mean = mean.copy()
    new_mean[:, :4] += step * mean[:, 4:]
    # F P F^T by blocks (F = [[I, D], [0, I]], D diagonal): no 8x8 products per track.
    dl = step[:, :, None]  # D on the left
    dr = step[:, None, :]  # D on the right
    pp, pv, vp, vv = cov[:, :4, :4], cov[:, :4, 4:], cov[:, 4:, :4], cov[:, 4:, 4:]
    new_cov = np.empty_like(cov)
    new_cov[:, :4, :4] = pp + pv * dr + dl * vp + dl * vv * dr
    new_cov[:, :4, 4:] = pv + dl * vv
    new_cov[:, 4:, :4] = vp + vv * dr
    new_cov[:, 4:, 4:] = vv
    h = np.maximum(mean[:, 3], 1.0)
    # Discrete white-noise acceleration, per axis (position and velocity blocks).
    a2 = (ACCEL_STD * h) ** 2
    q_pp, q_pv, q_vv = a2 * dt**4 / 4, a2 * dt**3 / 2, a2 * dt**2
    axes = np.arange(4)
    scale = np.array([1.0, 1.0, 0.1, 0.1])  # sizes change far less than positions
    new_cov[:, axes, axes] += q_pp[:, None] * scale
    new_cov[:, axes, axes + 4] += q_pv[:, None] * scale
    new_cov[:, axes + 4, axes] += q_pv[:, None] * scale
    new_cov[:, axes + 4, axes + 4] += q_vv[:, None] * scale
    return new_mean, new_cov


def update(mean: F64, cov: F64, boxes: NDArray[np.floating]) -> tuple[F64, F64]:
    """Each state corrected by its matched box (rows paired)."""
    if mean.shape[0] == 0:
        return mean, cov
    z = boxes_to_z(boxes)
    h = np.maximum(mean[:, 3], 1.0)
    r = np.zeros((mean.shape[0], 4, 4))
    idx = np.arange(4)
    r[:, idx, idx] = ((MEASURE_STD * h) ** 2)[:, None]
    projected = np.einsum("ij,nj->ni", _H, mean)
    s = _H @ cov @ _H.T + r  # (N, 4, 4)
    gain = cov @ _H.T @ np.linalg.inv(s)  # (N, 8, 4)
    new_mean = mean + np.einsum("nij,nj->ni", gain, z - projected)
    new_cov = cov - gain @ _H @ cov
    return new_mean, new_cov


__all__ = ["boxes_to_z", "initiate", "predict", "update", "z_to_boxes"]

"""PSIA app model: one loop iteration per spin image, cost from a real 3-D point cloud.

A cloud of ``points`` oriented points (position ``p_j``, unit normal ``n_j``) is sampled from
an analytic surface with a ``numpy`` generator seeded by ``seed`` (``shape = "torus"``: tube
radius 2/7 around a circle of radius 5/7, outer radius 1, sampled uniformly by area;
``shape = "blob"``: a bumpy sphere of mean radius about 1, directions uniform on the sphere),
with exact normals. Iteration ``i`` (of ``images``) computes the spin image of oriented point
``o = i mod points`` (the points are in random order, so any prefix is a uniform sample).
Following Johnson & Hebert as written in ``docs/reference/workloads.md`` §3.2, point ``x_j`` is
*accepted* into image ``o`` if ``acos(n_o . n_j) <= support_angle`` and its bin indices
``k = ceil((W*B/2 - beta) / B)``, ``l = ceil(alpha / B)`` satisfy ``0 <= k, l < W``, where
``d = x_j - p_o``, ``beta = n_o . d``, ``alpha = sqrt(max(|d|^2 - beta^2, 0))``, ``W`` is
``image_width`` and ``B`` is ``bin_size``. The cost is
``FLOP(i) = points * flop_per_point + K_o * flop_per_accept`` with ``K_o`` the exact number of
accepted points (the point itself included), counted in blocks of images with matrix products
(memory O(block x points), time O(images x points)) and cached on disk. Points lying exactly
on a bin boundary may be classified differently from a scalar evaluation by one rounding of
the dot products; such ties have probability zero for a sampled cloud.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Literal

import numpy as np

from cosim.workload.cache import cached_array
from cosim.workload.costs import MAX_TASKS, TaskCosts

__all__ = ["PsiaParams", "CODE_VERSION", "point_cloud", "accepted_counts", "compute"]

# Bump when the accepted counts for given parameters change (it is part of the cache key).
CODE_VERSION = 1

# Torus radii: outer radius R + r = 1, aspect R / r = 2.5.
_TORUS_R, _TORUS_r = 5.0 / 7.0, 2.0 / 7.0
# Blob: radius 1 + amplitude * sum_k exp(kappa * (u . d_k - 1)) - offset, with 8 bumps.
_BLOB_BUMPS, _BLOB_AMP, _BLOB_KAPPA = 8, 0.25, 4.0
# Elements per block of (images x points): each float64 temporary is 16 MB, three are live.
_BLOCK_ELEMS = 1 << 21


@dataclass(frozen=True, slots=True, kw_only=True)
class PsiaParams:
    """Parameters of the PSIA model (``[params]`` of an app TOML with model psia).

    Attributes
    ----------
    points:
        Number of oriented points ``M`` of the cloud.
    images:
        Number of spin images ``N`` (loop iterations); defaults to ``points``.
    image_width:
        Spin-image width ``W`` in bins.
    bin_size:
        Bin size ``B`` in units of the object size (both shapes have radius about 1).
    support_angle_deg:
        Support angle in degrees, in ``(0, 180]``; 180 disables the angle test.
    flop_per_point:
        FLOP to test one point (angle test, ``beta``, ``alpha``, bin indices).
    flop_per_accept:
        Effective FLOP to accumulate one accepted point; the term that makes images differ,
        its default sets the c.o.v. of the costs (about 0.07, see ``apps/README.md``).
    shape:
        ``"torus"`` or ``"blob"``.
    seed:
        Seed of the point cloud (``numpy.random.default_rng(seed)``).
    """

    points: int = 16384
    images: int | None = None
    image_width: int = 5
    bin_size: float = 0.2
    support_angle_deg: float = 60.0
    flop_per_point: float = 22.0
    flop_per_accept: float = 150.0
    shape: Literal["torus", "blob"] = "torus"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.images is None:
            object.__setattr__(self, "images", self.points)
        if self.points < 1:
            raise ValueError(f"points must be >= 1, got {self.points}")
        if self.images < 1:  # type: ignore[operator]
            raise ValueError(f"images must be >= 1, got {self.images}")
        if max(self.points, self.images) > MAX_TASKS:  # type: ignore[operator]
            raise ValueError(f"points and images must be at most {MAX_TASKS:,}, got "
                             f"{self.points} and {self.images}")
        if self.image_width < 1:
            raise ValueError(f"image_width must be >= 1, got {self.image_width}")
        if not self.bin_size > 0:
            raise ValueError(f"bin_size must be > 0, got {self.bin_size}")
        if not 0 < self.support_angle_deg <= 180:
            raise ValueError(f"support_angle_deg must be in (0, 180], got {self.support_angle_deg}")
        if self.flop_per_point < 0 or self.flop_per_accept < 0:
            raise ValueError("flop_per_point and flop_per_accept must be >= 0")
        if self.flop_per_point == 0 and self.flop_per_accept == 0:
            raise ValueError("flop_per_point and flop_per_accept cannot both be 0")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")

    def count_key(self) -> dict[str, object]:
        """The parameters that determine the accepted counts (the cache key)."""
        return {k: getattr(self, k) for k in
                ("points", "image_width", "bin_size", "support_angle_deg", "shape", "seed")}


def _torus(m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    # Area density is proportional to R + r cos v: rejection-sample v against it.
    v = np.empty(0)
    while v.size < m:
        cand = rng.uniform(-np.pi, np.pi, size=2 * m)
        height = rng.uniform(0.0, _TORUS_R + _TORUS_r, size=2 * m)
        keep = height < _TORUS_R + _TORUS_r * np.cos(cand)
        v = np.concatenate([v, cand[keep]])
    v = v[:m]
    u = rng.uniform(-np.pi, np.pi, size=m)
    nrm = np.stack([np.cos(v) * np.cos(u), np.cos(v) * np.sin(u), np.sin(v)], axis=1)
    ring = _TORUS_R + _TORUS_r * np.cos(v)
    pts = np.stack([ring * np.cos(u), ring * np.sin(u), _TORUS_r * np.sin(v)], axis=1)
    return pts, nrm


def _unit(rng: np.random.Generator, m: int) -> np.ndarray:
    g = rng.standard_normal((m, 3))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def _blob(m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    bumps = _unit(rng, _BLOB_BUMPS)
    u = _unit(rng, m)
    w = _BLOB_AMP * np.exp(_BLOB_KAPPA * (u @ bumps.T - 1.0))  # (m, bumps)
    # The offset is the mean bump height over the sphere, so the mean radius is 1.
    offset = _BLOB_AMP * _BLOB_BUMPS * (1 - np.exp(-2 * _BLOB_KAPPA)) / (2 * _BLOB_KAPPA)
    rho = 1.0 + w.sum(axis=1) - offset
    # Surface |p| = rho(p/|p|); normal ~ grad(|p| - rho(p/|p|)) = u - (I - u u^T) grad rho / rho.
    g = _BLOB_KAPPA * (w @ bumps)
    g_t = g - (g * u).sum(axis=1, keepdims=True) * u
    nrm = u - g_t / rho[:, None]
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    return rho[:, None] * u, nrm


def point_cloud(p: PsiaParams) -> tuple[np.ndarray, np.ndarray]:
    """Positions and unit normals, each of shape ``(points, 3)``, from ``default_rng(seed)``."""
    rng = np.random.default_rng(p.seed)
    return (_torus if p.shape == "torus" else _blob)(p.points, rng)


def accepted_counts(pts: np.ndarray, nrm: np.ndarray, *, image_width: int, bin_size: float,
                    support_angle_deg: float, rows: np.ndarray | None = None) -> np.ndarray:
    """``K_o``: number of points accepted into the spin image of each oriented point `rows`.

    Parameters
    ----------
    pts, nrm:
        Positions and unit normals, shape ``(M, 3)``.
    image_width, bin_size, support_angle_deg:
        ``W``, ``B`` and the support angle.
    rows:
        Indices of the oriented points to count for (default: all).

    Returns
    -------
    numpy.ndarray
        int64 counts, one per row.
    """
    w, b = image_width, bin_size
    # ceil((W*B/2 - beta)/B) in [0, W-1]  <=>  W*B/2 - (W-1)*B <= beta < W*B/2 + B;
    # ceil(alpha/B) in [0, W-1]  <=>  alpha <= (W-1)*B  (alpha >= 0).
    beta_lo = w * b / 2 - (w - 1) * b
    beta_hi = w * b / 2 + b
    alpha_max2 = ((w - 1) * b) ** 2
    cos_a = -np.inf if support_angle_deg >= 180 else math.cos(math.radians(support_angle_deg))
    rows = np.arange(len(pts)) if rows is None else np.asarray(rows)
    # Homogeneous coordinates turn beta and |d|^2 into single matrix products:
    # beta = [n_o, -n_o.p_o] . [x_j, 1];  |d|^2 = [p_o, |p_o|^2, 1] . [-2 x_j, 1, |x_j|^2].
    xs = np.hstack([pts, np.ones((len(pts), 1))]).T
    xd = np.hstack([-2 * pts, np.ones((len(pts), 1)), (pts * pts).sum(1, keepdims=True)]).T
    out = np.empty(rows.size, dtype=np.int64)
    step = max(1, _BLOCK_ELEMS // max(1, len(pts)))
    for s in range(0, rows.size, step):
        r = rows[s:s + step]
        po, no = pts[r], nrm[r]
        beta = np.hstack([no, -(no * po).sum(1, keepdims=True)]) @ xs
        d2 = np.hstack([po, (po * po).sum(1, keepdims=True), np.ones((r.size, 1))]) @ xd
        ok = (no @ nrm.T) >= cos_a
        ok &= beta >= beta_lo
        ok &= beta < beta_hi
        d2 -= beta * beta  # alpha^2
        ok &= d2 <= alpha_max2
        out[s:s + step] = np.count_nonzero(ok, axis=1)
    return out


def compute(p: PsiaParams, *, cache_dir: os.PathLike | str | None = None) -> TaskCosts:
    """The `TaskCosts` of the model, with the accepted counts of all points cached on disk."""
    m = p.points

    def counts() -> np.ndarray:
        pts, nrm = point_cloud(p)
        return accepted_counts(pts, nrm, image_width=p.image_width, bin_size=p.bin_size,
                               support_angle_deg=p.support_angle_deg)

    def check(a: np.ndarray) -> bool:
        return (a.dtype == np.int64 and a.shape == (m,)
                and bool(a.min() >= 0) and bool(a.max() <= m))

    k = cached_array(cache_dir, "psia", p.count_key(), CODE_VERSION, counts, check)
    k = k[np.arange(int(p.images or m)) % m]
    flop = m * p.flop_per_point + k * p.flop_per_accept
    label = f"psia M={m} N={p.images} W={p.image_width} {p.shape}"
    return TaskCosts.from_array(flop, model="psia", label=label, params=dataclasses.asdict(p))

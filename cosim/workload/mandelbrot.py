"""Mandelbrot app model: one loop iteration per pixel, cost = escape count x FLOP per step.

The image is ``width`` x ``height`` pixels over the region ``[xmin, xmax] x [ymin, ymax]`` of
the complex plane, sampled at pixel centres: pixel (row, col) has
``c = (xmin + (col + 0.5) * dx) + i * (ymax - (row + 0.5) * dy)`` with
``dx = (xmax - xmin) / width`` and ``dy = (ymax - ymin) / height`` (row 0 is the top, at
``ymax``; column 0 the left, at ``xmin``), evaluated in float64 exactly as written. The loop
order maps iteration ``i`` to a pixel: ``order = "row"`` is row-major, ``i = row * width +
col``; ``order = "column"`` is column-major, ``i = col * height + row``; ``order =
"shuffled"`` is the row-major pixels in a permutation keyed by ``order_seed``. The escape count of
``c`` is the first ``n >= 1`` with ``|z_n| > 2`` for ``z_0 = 0``, ``z_n = z_{n-1}^d + c``, or
``max_iter`` if there is none up to ``max_iter``; the arithmetic is float64 and defined
exactly (see `step`), with the escape test ``x*x + y*y > 4.0``. The cost of a pixel is
``count * flop_per_iter``. Counts are computed vectorised and stay cheap for ``max_iter`` in
the millions thanks to three shortcuts that never change a result: the exact main-cardioid and
period-2-bulb tests for ``d = 2`` (with a relative safety margin, so that only points
strictly inside are skipped), exact-equality periodicity detection (Brent: ``z`` is saved at
iterations ``2^k``; an orbit that returns to the saved value *exactly* in floating point is in
a float cycle and can never escape), and compaction of the active set, with a scalar loop for
the last few slow pixels.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Literal

import numpy as np

from cosim.core.rng import stream
from cosim.workload.cache import cached_array
from cosim.workload.costs import MAX_TASKS, TaskCosts

__all__ = ["MandelbrotParams", "CODE_VERSION", "default_flop_per_iter", "pixel_grid", "step",
           "escape_counts", "escape_image", "compute"]

# Bump when the counts computed for given parameters change (it is part of the cache key).
CODE_VERSION = 1

# Pixels per vectorised block: bounds memory to ~20 MB whatever the image size.
_BLOCK = 1 << 18
# Below this many live pixels a plain Python loop per pixel beats a dozen numpy calls per
# iteration (measured: ~0.1 us per scalar step of one pixel against ~5 us per vector step).
_SCALAR_BELOW = 48
# Relative margin of the cardioid and bulb tests: far above the few-ulp rounding of the test
# expressions, so a point is skipped only if it is strictly inside mathematically.
_MARGIN = 1e-12


def default_flop_per_iter(power: int) -> int:
    """FLOP of one ``z <- z^d + c`` step with its escape test, as computed by `step`.

    ``z^d`` is computed by square-and-multiply over the bits of ``d``: a complex square costs
    5 FLOP (``a*a``, ``b*b``, ``a*b``, ``a*a - b*b``, ``ab + ab``), a complex multiply 6
    (4 mul, 2 add); adding ``c`` costs 2 and the escape test ``x*x + y*y > 4`` costs 1 (the
    squares are those of the next step's first squaring; the comparison is not counted).
    ``d = 2``: 8; ``d = 3``: 14; ``d = 4``: 13.
    """
    squares = power.bit_length() - 1
    multiplies = bin(power).count("1") - 1
    return 5 * squares + 6 * multiplies + 2 + 1


@dataclass(frozen=True, slots=True, kw_only=True)
class MandelbrotParams:
    """Parameters of the Mandelbrot model (``[params]`` of an app TOML with model mandelbrot).

    Attributes
    ----------
    width, height:
        Image size in pixels; ``height`` defaults to ``width``.
    xmin, xmax, ymin, ymax:
        Region of the complex plane (real part x, imaginary part y).
    max_iter:
        Iteration cap; a pixel that has not escaped costs ``max_iter`` steps.
    power:
        Exponent ``d`` of ``z^d + c``, an integer from 2 to 64.
    order:
        ``"row"`` (``i = row * width + col``), ``"column"`` (``i = col * height + row``) or
        ``"shuffled"``: the row-major pixels in a keyed random permutation,
        ``stream(order_seed, "mandelbrot.order").permutation(width * height)``
        (`cosim.core.rng`; iteration ``i`` computes row-major pixel ``perm[i]``).
    order_seed:
        The key of the shuffled order (an integer >= 0; ignored by the other orders).
    flop_per_iter:
        FLOP per step; defaults to `default_flop_per_iter` of ``power`` (8 for ``d = 2``).
    """

    width: int = 512
    height: int | None = None
    xmin: float = -2.0
    xmax: float = 0.5
    ymin: float = -1.25
    ymax: float = 1.25
    max_iter: int = 1000
    power: int = 2
    order: Literal["row", "column", "shuffled"] = "row"
    order_seed: int = 0
    flop_per_iter: float | None = None

    def __post_init__(self) -> None:
        if self.height is None:
            object.__setattr__(self, "height", self.width)
        if self.flop_per_iter is None and 2 <= self.power <= 64:
            object.__setattr__(self, "flop_per_iter", float(default_flop_per_iter(self.power)))
        if self.width < 1 or self.height is None or self.height < 1:
            raise ValueError(f"width and height must be >= 1, got {self.width}x{self.height}")
        if self.width * self.height > MAX_TASKS:
            raise ValueError(f"width x height must be at most {MAX_TASKS:,} tasks, got "
                             f"{self.width}x{self.height}")
        if not (self.xmin < self.xmax and self.ymin < self.ymax):
            raise ValueError("the region needs xmin < xmax and ymin < ymax")
        if self.order_seed < 0:
            raise ValueError(f"order_seed must be >= 0, got {self.order_seed}")
        if self.max_iter < 1:
            raise ValueError(f"max_iter must be >= 1, got {self.max_iter}")
        if not 2 <= self.power <= 64:
            raise ValueError(f"power must be an integer from 2 to 64, got {self.power}")
        fpi = self.flop_per_iter
        if fpi is None or not (fpi > 0 and np.isfinite(fpi)):
            raise ValueError(f"flop_per_iter must be > 0, got {self.flop_per_iter}")

    def count_key(self) -> dict[str, object]:
        """The parameters that determine the escape counts (the cache key)."""
        return {k: getattr(self, k) for k in
                ("width", "height", "xmin", "xmax", "ymin", "ymax", "max_iter", "power")}


def pixel_grid(p: MandelbrotParams) -> tuple[np.ndarray, np.ndarray]:
    """Real parts of the columns (shape ``(width,)``) and imaginary parts of the rows
    (shape ``(height,)``, row 0 at the top) of the pixel centres."""
    dx = (p.xmax - p.xmin) / p.width
    dy = (p.ymax - p.ymin) / int(p.height or p.width)
    re = p.xmin + (np.arange(p.width) + 0.5) * dx
    im = p.ymax - (np.arange(int(p.height or p.width)) + 0.5) * dy
    return re, im


def step(x, y, x2, y2, cx, cy, bits):
    """One step ``z <- z^d + c`` on floats or arrays, with the exact float64 arithmetic.

    ``x2, y2`` must be ``x*x, y*y``; `bits` are the bits of ``d`` after the leading one
    (``d = 2`` -> ``(0,)``). Square-and-multiply: for each bit, ``(a, b) <- (a*a - b*b,
    a*b + a*b)``, then if the bit is 1, ``(a, b) <- (a*x - b*y, a*y + b*x)``; finally
    ``(a + cx, b + cy)``. Each operation is one IEEE rounding, in this order.
    """
    a, b, a2, b2 = x, y, x2, y2
    for k, bit in enumerate(bits):
        if k:
            a2 = a * a
            b2 = b * b
        t = a * b
        a, b = a2 - b2, t + t
        if bit:
            a, b = a * x - b * y, a * y + b * x
    return a + cx, b + cy


def _inside_known(cx: np.ndarray, cy: np.ndarray) -> np.ndarray:
    """Points strictly inside the main cardioid or the period-2 bulb of ``z^2 + c``."""
    xq = cx - 0.25
    y2 = cy * cy
    q = xq * xq + y2
    lhs = q * (q + xq)
    rhs = 0.25 * y2
    # lhs < rhs is the exact cardioid test; the margin scales with the size of the terms,
    # which bounds their rounding error, so near-boundary points are left to iteration.
    cardioid = lhs < rhs - _MARGIN * (q * (q + np.abs(xq)) + rhs)
    xb = cx + 1.0
    bulb = xb * xb + y2 < 0.0625 * (1.0 - _MARGIN)
    return cardioid | bulb


def _scalar_tail(cx: float, cy: float, x: float, y: float, sx: float, sy: float,
                 n: int, next_save: int, max_iter: int, bits: tuple[int, ...]) -> int:
    """Continue one pixel from ``z_n = x + iy`` (not escaped, not periodic) to its count."""
    limit = max_iter - 1
    x2 = x * x
    y2 = y * y
    if bits == (0,):  # d = 2 inlined: this loop is the hot path for the slowest pixels
        while n < limit:
            t = x * y
            x = x2 - y2 + cx
            y = t + t + cy
            n += 1
            x2 = x * x
            y2 = y * y
            if x2 + y2 > 4.0:
                return n
            if x == sx and y == sy:
                return max_iter
            if n == next_save:
                sx, sy, next_save = x, y, next_save * 2
        return max_iter
    while n < limit:
        x, y = step(x, y, x2, y2, cx, cy, bits)
        n += 1
        x2 = x * x
        y2 = y * y
        if x2 + y2 > 4.0:
            return n
        if x == sx and y == sy:
            return max_iter
        if n == next_save:
            sx, sy, next_save = x, y, next_save * 2
    return max_iter


def _block(cx: np.ndarray, cy: np.ndarray, out: np.ndarray, max_iter: int, power: int,
           scalar_below: int) -> None:
    """Escape counts of one block of pixels into `out` (pre-filled with ``max_iter``)."""
    bits = tuple(int(b) for b in bin(power)[3:])
    idx = np.arange(cx.size)
    if power == 2:
        idx = np.flatnonzero(~_inside_known(cx, cy))  # these keep max_iter
    ax, ay = cx[idx], cy[idx]
    m = idx.size
    x, y, x2, y2, sx, sy = (np.zeros(m) for _ in range(6))  # z_0 = 0, saved = z_0
    t, r = np.empty(m), np.empty(m)
    eq = np.empty(m, dtype=bool)
    alive = np.ones(m, dtype=bool)
    dead = 0
    n, next_save, limit = 0, 1, max_iter - 1
    while n < limit and m - dead > scalar_below:
        # z_n -> z_{n+1}; invariant: x2, y2 hold x*x, y*y of z_n.
        if power == 2:
            np.multiply(x, y, out=t)
            np.subtract(x2, y2, out=x)
            x += ax
            np.add(t, t, out=y)
            y += ay
        else:
            x[...], y[...] = step(x, y, x2, y2, ax, ay, bits)
        n += 1
        np.multiply(x, x, out=x2)
        np.multiply(y, y, out=y2)
        np.add(x2, y2, out=r)
        if r.max() > 4.0:
            e = np.flatnonzero(r > 4.0)
            out[idx[e]] = n
            # Park escaped pixels at c = 0, z = 0 (a fixed point) until the next compaction:
            # cheaper than compacting every iteration, and it cannot escape again.
            for a in (x, y, x2, y2, ax, ay):
                a[e] = 0.0
            alive[e] = False
            dead += e.size
        np.equal(x, sx, out=eq)
        if eq.any():
            c = np.flatnonzero(eq)
            c = c[(y[c] == sy[c]) & alive[c]]
            # Exact float cycle: never escapes, `out` already holds max_iter.
            alive[c] = False
            dead += c.size
        if n == next_save:
            sx[...] = x
            sy[...] = y
            next_save *= 2
        if dead and (8 * dead >= m or m - dead <= scalar_below):
            keep = np.flatnonzero(alive)
            idx, ax, ay, x, y, x2, y2, sx, sy = (
                a[keep] for a in (idx, ax, ay, x, y, x2, y2, sx, sy))
            m, dead = keep.size, 0
            t, r = np.empty(m), np.empty(m)
            eq = np.empty(m, dtype=bool)
            alive = np.ones(m, dtype=bool)
    if n >= limit:
        return
    for j in np.flatnonzero(alive):
        out[idx[j]] = _scalar_tail(float(ax[j]), float(ay[j]), float(x[j]), float(y[j]),
                                   float(sx[j]), float(sy[j]), n, next_save, max_iter, bits)


def escape_counts(cx: np.ndarray, cy: np.ndarray, *, max_iter: int, power: int = 2,
                  scalar_below: int = _SCALAR_BELOW) -> np.ndarray:
    """Escape counts of the points ``cx + i*cy`` (any matching shapes; result flattened).

    Parameters
    ----------
    cx, cy:
        Real and imaginary parts of ``c``, float64.
    max_iter:
        Iteration cap (>= 1).
    power:
        Exponent ``d`` (>= 2).
    scalar_below:
        Live-pixel count under which a block finishes with a per-pixel Python loop (tests
        use 0 and a huge value to exercise both paths; results never depend on it).

    Returns
    -------
    numpy.ndarray
        int64 counts in ``[1, max_iter]``, identical to iterating every point plainly.
    """
    cx = np.ascontiguousarray(cx, dtype=np.float64).ravel()
    cy = np.ascontiguousarray(cy, dtype=np.float64).ravel()
    if cx.shape != cy.shape:
        raise ValueError("cx and cy must have the same size")
    out = np.full(cx.size, max_iter, dtype=np.int64)
    if max_iter > 1:
        with np.errstate(over="ignore", invalid="ignore"):  # huge |c| overflows harmlessly
            for s in range(0, cx.size, _BLOCK):
                _block(cx[s:s + _BLOCK], cy[s:s + _BLOCK], out[s:s + _BLOCK],
                       max_iter, power, scalar_below)
    return out


def escape_image(p: MandelbrotParams) -> np.ndarray:
    """Escape counts of the image, shape ``(height, width)``, row 0 at the top."""
    re, im = pixel_grid(p)
    cx, cy = np.meshgrid(re, im)  # (height, width): cx varies along columns
    return escape_counts(cx, cy, max_iter=p.max_iter, power=p.power).reshape(cx.shape)


def compute(p: MandelbrotParams, *, cache_dir: os.PathLike | str | None = None) -> TaskCosts:
    """The `TaskCosts` of the model, with the escape counts cached on disk.

    The cache holds the ``(height, width)`` count image, keyed by the parameters that
    determine it (not ``order`` or ``flop_per_iter``, which only permute and scale it).
    """
    shape = (p.height, p.width)

    def check(a: np.ndarray) -> bool:
        return (a.dtype == np.int64 and a.shape == shape
                and bool(a.min() >= 1) and bool(a.max() <= p.max_iter))

    counts = cached_array(cache_dir, "mandelbrot", p.count_key(), CODE_VERSION,
                          lambda: escape_image(p), check)
    ordered = counts.ravel(order="F" if p.order == "column" else "C")
    if p.order == "shuffled":
        ordered = ordered[stream(p.order_seed, "mandelbrot.order").permutation(ordered.size)]
    label = (f"mandelbrot {p.width}x{p.height} it={p.max_iter}"
             + (f" d={p.power}" if p.power != 2 else "") + f" {p.order}"
             + (f" {p.order_seed}" if p.order == "shuffled" else ""))
    flop = ordered * float(p.flop_per_iter or default_flop_per_iter(p.power))
    return TaskCosts.from_array(flop, model="mandelbrot", label=label,
                                params=dataclasses.asdict(p))

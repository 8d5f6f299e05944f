"""The power model of a host (Kumbhare et al.; docs/reference/policies.md §2.3, §3.4): what a
per-socket power cap costs in run time.

Each host has `sockets` sockets whose cap p (watts per socket) lies on a grid from `p_min_w`
to `p_max_w` in steps of `step_w` (integer milliwatts inside, so sums are exact). A socket at
frequency f draws ``P(f) = P_s + (p_max - P_s) (f / f_max)^alpha``; ``P(f_min) = p_min`` with
``f_min = f_min_ratio x f_max`` pins the static part ``P_s`` (52.142857 W for the Xeon
E5-2695 v2 defaults: 60-115 W, f_min/f_max = 0.5, alpha = 3). A cap p sets the frequency
that draws it, and a job's run time follows the beta-model (Hsu & Feng)::

    T(p) = T_nom (1 + beta (f_max / f(p) - 1))

with beta in [0, 1] the app's compute-boundedness (0.8 by default): ``T(p_max) = T_nom``,
``T(p_min) = T_nom (1 + beta)``, T decreasing in p. `multiplier_ppm` gives the factor in
integer parts per million, and a job's progress is integer work (`work_done`, `ticks_for`:
millionths of a nominal tick), so run times are deterministic: the end tick of a job at one
cap is ``start + ceil(T_nom x m / 10^6)``, and a cap changed at t first counts the work done
since the last change at the old multiplier. `p_idle_w` is what an idle socket draws (0 by
default: the seed counts only the compute units in the budget; at most p_min). Energy at a
constant cap: ``E = hosts x sockets x p x T(p)``. The model never goes below p_min (no forced idleness). An app may
instead give a measured table of (watts, slowdown) points (`parse_table`,
`table_slowdown`: linear between them, as Kumbhare et al. interpolate theirs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cosim.errors import InputError

__all__ = ["PowerModel", "PowerCurve", "DEFAULT_BETA", "NOMINAL_PPM", "WORK_PER_TICK",
           "work_done", "ticks_for", "parse_table", "table_slowdown", "to_mw"]

#: the compute-boundedness of an app without its own (spec §2.7)
DEFAULT_BETA = 0.8
#: the multiplier of a job at full power (no slowdown), in parts per million
NOMINAL_PPM = 1_000_000
#: units of nominal work in one nominal tick: work is counted in millionths of a tick
WORK_PER_TICK = 1_000_000


def work_done(elapsed: int, multiplier_ppm: int) -> int:
    """Nominal work (millionths of a nominal tick) a job running at `multiplier_ppm` does in
    `elapsed` ticks: ``floor(elapsed x 10^12 / m)`` (never more than it did)."""
    return elapsed * WORK_PER_TICK * NOMINAL_PPM // multiplier_ppm


def ticks_for(work: int, multiplier_ppm: int) -> int:
    """Ticks a job needs for `work` (millionths of a nominal tick) at `multiplier_ppm`:
    ``ceil(work x m / 10^12)`` (its last tick completes it). At the nominal multiplier a job
    of R ticks (work ``R x 10^6``) needs exactly R ticks."""
    return -(-work * multiplier_ppm // (WORK_PER_TICK * NOMINAL_PPM))


@dataclass(frozen=True, slots=True, kw_only=True)
class PowerModel:
    """A host's power table (module docstring); `InputError` (``field power.KEY``) for a bad
    value."""

    sockets: int = 2
    p_min_w: float = 60.0
    p_max_w: float = 115.0
    step_w: float = 5.0
    p_idle_w: float = 0.0
    f_min_ratio: float = 0.5
    alpha: float = 3.0

    def __post_init__(self) -> None:
        def bad(key: str, problem: str) -> InputError:
            return InputError(problem, field=f"power.{key}")

        if isinstance(self.sockets, bool) or not isinstance(self.sockets, int) \
                or self.sockets < 1:
            raise bad("sockets", f"must be an integer >= 1, got {self.sockets!r}")
        for key in ("p_min_w", "p_max_w", "step_w", "p_idle_w", "f_min_ratio", "alpha"):
            if not math.isfinite(getattr(self, key)):
                raise bad(key, f"must be a finite number, got {getattr(self, key)!r}")
        for key in ("p_min_w", "p_max_w", "step_w", "p_idle_w"):
            mw = getattr(self, key) * 1000
            if abs(mw - round(mw)) > 1e-6 * max(1.0, abs(mw)):
                raise bad(key, f"must be a whole number of milliwatts, got "
                          f"{getattr(self, key)!r}")
        if self.p_min_w <= 0:
            raise bad("p_min_w", f"must be > 0 watts, got {self.p_min_w!r}")
        if self.p_min_w > self.p_max_w:
            raise bad("p_min_w", f"p_min_w ({self.p_min_w:g}) > p_max_w ({self.p_max_w:g})")
        if to_mw(self.step_w) < 1:
            raise bad("step_w", f"must be at least 1 mW, got {self.step_w!r}")
        span = to_mw(self.p_max_w) - to_mw(self.p_min_w)
        if span % to_mw(self.step_w):
            raise bad("step_w", f"{self.step_w:g} W does not divide the range "
                      f"{self.p_min_w:g}-{self.p_max_w:g} W")
        if not 0 <= self.p_idle_w <= self.p_min_w:
            raise bad("p_idle_w", f"must be in [0, p_min_w] (an idle socket draws no more than "
                      f"a capped one), got {self.p_idle_w!r}")
        if not 0 < self.f_min_ratio <= 1:
            raise bad("f_min_ratio", f"must be in (0, 1], got {self.f_min_ratio!r}")
        if self.alpha <= 0:
            raise bad("alpha", f"must be > 0, got {self.alpha!r}")
        r = self.f_min_ratio ** self.alpha
        if self.p_min_w < self.p_max_w and not 1e-12 < r < 1 - 1e-12:
            raise bad("f_min_ratio", f"f_min_ratio ** alpha = {r:g} leaves no frequency range "
                      "for the power range (it must be strictly between 0 and 1)")
        if self.f_min_ratio < 1 and self.static_w < 0:
            raise bad("p_min_w", f"p_min_w {self.p_min_w:g} W is below what f_min draws "
                      f"with no static power ({self.p_max_w * self.f_min_ratio ** self.alpha:g}"
                      " W)")

    @property
    def static_w(self) -> float:
        """P_s, the static part of a socket's power (module docstring)."""
        r = self.f_min_ratio ** self.alpha
        if r == 1.0:
            return self.p_min_w
        return (self.p_min_w - self.p_max_w * r) / (1.0 - r)

    def levels_mw(self) -> tuple[int, ...]:
        """The caps a socket may get, in milliwatts, ascending."""
        return tuple(range(to_mw(self.p_min_w), to_mw(self.p_max_w) + 1, to_mw(self.step_w)))

    def frequency_ratio(self, p_w: float) -> float:
        """f(p) / f_max for a socket capped at `p_w` watts (p_min <= p <= p_max)."""
        if not self.p_min_w <= p_w <= self.p_max_w:
            raise ValueError(f"{p_w} W is outside {self.p_min_w:g}-{self.p_max_w:g} W")
        if self.p_max_w == self.p_min_w:
            return 1.0
        ps = self.static_w
        return ((p_w - ps) / (self.p_max_w - ps)) ** (1.0 / self.alpha)

    def slowdown(self, p_w: float, beta: float = DEFAULT_BETA) -> float:
        """T(p) / T_nom: the beta-model."""
        if not 0.0 <= beta <= 1.0:
            raise ValueError(f"beta must be in [0, 1], got {beta!r}")
        return 1.0 + beta * (1.0 / self.frequency_ratio(p_w) - 1.0)

    def multiplier_ppm(self, p_w: float, beta: float = DEFAULT_BETA) -> int:
        """`slowdown` in integer parts per million (rounded)."""
        return round(self.slowdown(p_w, beta) * 1_000_000)

    def curve_multiplier_ppm(self, p_w: float, curve: PowerCurve) -> int:
        """The run-time factor (ppm) at `p_w` of an app's power `curve`: a beta (the
        beta-model; None: `DEFAULT_BETA`) or a measured table (`table_slowdown`)."""
        if isinstance(curve, tuple):
            return round(table_slowdown(curve, p_w) * 1_000_000)
        return self.multiplier_ppm(p_w, DEFAULT_BETA if curve is None else curve)

    def energy_j(self, hosts: int, p_w: float, nominal_s: float,
                 beta: float = DEFAULT_BETA) -> float:
        """Energy of a job on `hosts` hosts at a constant cap: hosts x sockets x p x T(p)."""
        return hosts * self.sockets * p_w * nominal_s * self.slowdown(p_w, beta)


#: an app's response to a power cap: its beta (None: the default), or a table of (watts per
#: socket, slowdown) points
PowerCurve = float | tuple[tuple[float, float], ...] | None


def parse_table(text: str) -> tuple[tuple[float, float], ...]:
    """``60:2.1,85:1.4,115:1`` -> ((60.0, 2.1), (85.0, 1.4), (115.0, 1.0)): (watts per socket,
    run-time factor) points, watts strictly ascending, factors >= 1 and not rising with the
    watts; ValueError naming the problem."""
    points = []
    for item in text.split(","):
        w, sep, f = item.partition(":")
        try:
            points.append((float(w), float(f)))
        except ValueError:
            raise ValueError(f"expected watts:slowdown pairs such as 60:2,115:1, got "
                             f"{text!r}") from None
        if not sep:
            raise ValueError(f"expected watts:slowdown pairs such as 60:2,115:1, got {text!r}")
    if not all(math.isfinite(w) and w > 0 and math.isfinite(f) and f >= 1 for w, f in points):
        raise ValueError(f"watts must be > 0 and slowdowns >= 1, got {text!r}")
    if any(b[0] <= a[0] or b[1] > a[1] for a, b in zip(points, points[1:])):
        raise ValueError(f"watts must rise and slowdowns must not, got {text!r}")
    return tuple(points)


def table_slowdown(points: tuple[tuple[float, float], ...], p_w: float) -> float:
    """The run-time factor at `p_w` of a (watts, slowdown) table: linear between its points,
    its first (last) factor below (above) them (Kumbhare et al. interpolate measurements)."""
    if p_w <= points[0][0]:
        return points[0][1]
    for (w0, f0), (w1, f1) in zip(points, points[1:]):
        if p_w <= w1:
            return f0 + (f1 - f0) * (p_w - w0) / (w1 - w0)
    return points[-1][1]


def to_mw(watts: float) -> int:
    """Watts as whole milliwatts (rounded)."""
    return round(watts * 1000)

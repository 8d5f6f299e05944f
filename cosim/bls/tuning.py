"""The adaptive tuner of metric-aware scheduling (Tang et al., Algorithm 1): BF and/or W
re-tuned at checkpoints from the queue depth and the utilization.

It is the one stateful piece of the family and lives in the scheduler, not in a policy
(docs/reference/policies.md §1.4, §3.2). Checkpoints are at ``t0 + k Ci`` (k >= 1; t0 = the
first submission, Ci = `TunerParams.check_interval_s`). At a checkpoint t the tuner sees the
state after the completions and walltime kills at t and before the submissions at t; it
measures

- the queue depth ``Q(t) = sum over queued jobs of (t - submit)``, in minutes (the slides'
  "sum of waiting times of all current queuing jobs", as Cobalt reports it);
- the utilization over the last P: busy host-ticks in ``[t - P, t]`` over ``P x hosts``
  (exact integers; a host counts while a running job holds it, lendable RCA hosts not; the
  division is by the full P even before P has passed), for ``P = u_short_s`` and
  ``u_long_s`` (10 h and 24 h);

and sets the tunables for the passes that follow (no pass runs at a checkpoint unless
`pass_at_checkpoint`: Qsim runs none; then a pass follows a change):

- **BF** (``adaptive`` ``bf`` or ``2d``): ``dQ = Q - TH``, TH the mean Q of the checkpoints of
  the trailing ``q_window_s`` strictly before this one (``dQ = 0`` at the first), or the
  fixed ``q_threshold_min`` (Cobalt: 1000 minutes); BF = ``bf_levels[1]`` (0.5) when
  ``dQ > 0``, else ``bf_levels[0]`` (1);
- **W** (``w`` or ``2d``): ``dU = U_short - U_long``; ``direction="falling"`` (the Cobalt
  code, default): W = ``w_levels[1]`` (4) when ``dU <= 0`` (utilization falling: pack
  harder), else ``w_levels[0]`` (1); ``"rising"`` (the slides, CQSim): W high when
  ``dU > 0``.

``trigger="level"`` (Cobalt) sets each tunable from the sign of its delta at every
checkpoint; ``"crossing"`` (the slides' Ep/Em events) changes it only when the sign changed
since the previous checkpoint (δ = 0 counts as "<= 0"), so it keeps its initial value until
the first crossing. Initial values: ``--bf`` (default ``bf_levels[0]``) and ``--window``
(default ``w_levels[0]``). Every checkpoint is logged ``(t, Q minutes, U_short, U_long, BF,
W)`` (`Checkpoint`) for ``results.h5`` and the trace. With a scheduling quantum the
checkpoints are taken at the first decision time at or after them.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from cosim.core.clock import TICKS_PER_SECOND, duration_problem, to_ticks
from cosim.errors import InputError

__all__ = ["ADAPTIVE_MODES", "TunerParams", "Checkpoint", "Tuner"]

#: ``--adaptive``: off, or which tunables the tuner moves (Cobalt's 10 / 01 / 11)
ADAPTIVE_MODES = ("off", "bf", "w", "2d")


@dataclass(frozen=True, slots=True, kw_only=True)
class TunerParams:
    """The tuner's parameters (``--tuner-param K=V``; module docstring)."""

    check_interval_s: float = 1800.0
    bf_levels: tuple[float, float] = (1.0, 0.5)
    q_threshold_min: float | None = None
    q_window_s: float = 30 * 86400.0
    w_levels: tuple[int, int] = (1, 4)
    u_short_s: float = 36000.0
    u_long_s: float = 86400.0
    direction: Literal["falling", "rising"] = "falling"
    trigger: Literal["level", "crossing"] = "level"
    pass_at_checkpoint: bool = False

    def __post_init__(self) -> None:
        for name in ("check_interval_s", "q_window_s", "u_short_s", "u_long_s"):
            value = getattr(self, name)
            problem = duration_problem(value) or (
                None if to_ticks(value) > 0 else f"must be > 0 seconds, got {value!r}")
            if problem:
                raise InputError(problem, field=f"tuner-param.{name}")
        if len(self.bf_levels) != 2 or not all(0.0 <= b <= 1.0 for b in self.bf_levels):
            raise InputError(f"two balance factors in [0, 1], got {self.bf_levels!r}",
                             field="tuner-param.bf_levels")
        from cosim.bls.policies.window import WINDOW_MAX

        if len(self.w_levels) != 2 or not all(isinstance(w, int) and 1 <= w <= WINDOW_MAX
                                              for w in self.w_levels):
            raise InputError(f"two windows in [1, {WINDOW_MAX}], got {self.w_levels!r}",
                             field="tuner-param.w_levels")
        if self.q_threshold_min is not None and not (math.isfinite(self.q_threshold_min)
                                                     and self.q_threshold_min >= 0):
            raise InputError(f"must be >= 0 minutes, got {self.q_threshold_min!r}",
                             field="tuner-param.q_threshold_min")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One checkpoint of the tuner: its tick, the queue depth in minutes, the short- and
    long-term utilization, and the tunables set for the passes that follow."""

    time: int
    queue_depth_min: float
    u_short: float
    u_long: float
    bf: float
    window: int


class Tuner:
    """The tuner's state in one simulation (module docstring): its checkpoints, the busy
    hosts' history and the trailing queue depths. `observe` is told the busy hosts at the
    end of every instant; `due` gives the next checkpoint; `check` runs one."""

    __slots__ = ("mode", "params", "n_hosts", "log", "_ci", "_next", "_times", "_busy",
                 "_area", "_qs", "_qsum", "_signs", "_short", "_long", "_qwin")

    def __init__(self, mode: str, params: TunerParams, n_hosts: int) -> None:
        if mode not in ADAPTIVE_MODES or mode == "off":
            raise InputError(f"unknown adaptive mode {mode!r} (known: "
                             f"{', '.join(ADAPTIVE_MODES)})", field="adaptive")
        self.mode, self.params, self.n_hosts = mode, params, n_hosts
        self.log: list[Checkpoint] = []
        self._ci = to_ticks(params.check_interval_s)
        self._short, self._long = to_ticks(params.u_short_s), to_ticks(params.u_long_s)
        self._qwin = to_ticks(params.q_window_s)
        self._next: int | None = None  # set at the first submission
        # busy hosts as a step function: from _times[k] on, _busy[k] hosts; _area[k] =
        # busy host-ticks on [0, _times[k])
        self._times: list[int] = [0]
        self._busy: list[int] = [0]
        self._area: list[int] = [0]
        # (tick, Q in ticks) of the trailing window, and their sum: integers, so the mean's
        # comparison is exact (a float sum drifts: an empty queue would look deeper than
        # the mean of empty queues)
        self._qs: deque[tuple[int, int]] = deque()
        self._qsum = 0
        self._signs: dict[str, bool | None] = {"bf": None, "w": None}

    def start(self, t0: int) -> None:
        """The first submission at `t0`: checkpoints from ``t0 + Ci`` on."""
        if self._next is None:
            self._next = t0 + self._ci

    def due(self) -> int | None:
        """The next checkpoint (None before the first submission)."""
        return self._next

    def observe(self, now: int, busy: int) -> None:
        """`busy` hosts from `now` on."""
        if busy == self._busy[-1]:
            return
        last = self._times[-1]
        if now == last:
            self._busy[-1] = busy
            if len(self._busy) > 1 and self._busy[-2] == busy:
                del self._times[-1], self._busy[-1], self._area[-1]
            return
        self._area.append(self._area[-1] + self._busy[-1] * (now - last))
        self._times.append(now)
        self._busy.append(busy)

    def _integral(self, t: int) -> int:
        """Busy host-ticks on ``[0, t)``."""
        if t <= 0:
            return 0
        k = bisect_right(self._times, t) - 1
        return self._area[k] + self._busy[k] * (t - self._times[k])

    def utilization(self, t: int, period: int) -> float:
        """Busy host-ticks in ``[t - period, t]`` over ``period x hosts``."""
        used = self._integral(t) - self._integral(t - period)
        return used / (period * self.n_hosts)

    def check(self, t: int, submits: Sequence[int], bf: float, window: int
              ) -> tuple[float, int]:
        """The checkpoint at `t` (= `due`), with the submit ticks of the queued jobs and the
        tunables in force; returns the new tunables and schedules the next checkpoint."""
        p = self.params
        q_ticks = sum(t - s for s in submits)
        q = q_ticks / (60 * TICKS_PER_SECOND)
        u_short, u_long = self.utilization(t, self._short), self.utilization(t, self._long)
        if self.mode in ("bf", "2d"):
            if p.q_threshold_min is not None:
                deeper = q > p.q_threshold_min
            else:  # Q > the mean of the window's earlier Qs: Q n > their sum, in integers
                while self._qs and self._qs[0][0] < t - self._qwin:
                    self._qsum -= self._qs.popleft()[1]
                deeper = bool(self._qs) and q_ticks * len(self._qs) > self._qsum
                self._qs.append((t, q_ticks))
                self._qsum += q_ticks
            bf = self._set("bf", deeper, bf, p.bf_levels[1], p.bf_levels[0])
        if self.mode in ("w", "2d"):
            low, high = p.w_levels
            if_rising, if_not = (high, low) if p.direction == "rising" else (low, high)
            window = self._set("w", u_short - u_long > 0, window, if_rising, if_not)
        self.log.append(Checkpoint(t, q, u_short, u_long, bf, window))
        self._next = t + self._ci
        return bf, window

    def _set(self, name: str, positive: bool, value, if_positive, otherwise):
        """A tunable from the sign of its delta: at every checkpoint (level), or when the
        sign changed since the previous checkpoint (crossing)."""
        before = self._signs[name]
        self._signs[name] = positive
        if self.params.trigger == "crossing" and (before is None or before == positive):
            return value
        return if_positive if positive else otherwise

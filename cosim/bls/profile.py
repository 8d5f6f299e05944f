"""The availability profile: free hosts over future time, as a step function.

A `Profile` holds breakpoints ``times[0] < times[1] < ...`` and ``free[i]``, the number of free
hosts on ``[times[i], times[i+1])`` (the last step lasts forever). It is built from the running
jobs' *estimated* ends (start + walltime; the scheduler never looks at real run times) and
then carries reservations: `reserve` subtracts hosts on an interval, `release` gives them back,
`earliest_fit` finds the first start at which a job fits for its whole estimated duration.
Adjacent steps with equal values are merged, so the size stays O(running + reservations) and
every operation is one scan of the steps it touches (a pass that places every queued job is
O(queue x steps touched), the classical cost of conservative backfilling). An interval of
zero length is treated as one tick, so a zero-length job still needs its hosts at its start
instant. Times are integer ticks.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

__all__ = ["Profile"]


class Profile:
    """Free hosts over ``[origin, inf)`` as a step function (see the module docstring).

    Parameters
    ----------
    origin:
        The first instant described (the decision time of the pass).
    free_now:
        Free hosts at `origin`.
    ends:
        ``(estimated_end, hosts)`` of the running jobs, in any order; an end at or before
        `origin` must already be clamped by the caller (the scheduler expects such a job to end
        at ``origin + 1``).
    """

    __slots__ = ("times", "free")

    def __init__(self, origin: int, free_now: int, ends: Iterable[tuple[int, int]] = ()) -> None:
        self.times: list[int] = [origin]
        self.free: list[int] = [free_now]
        for end, hosts in sorted(ends):
            if end <= origin:
                raise ValueError("a running job's end must be after the profile's origin")
            if end == self.times[-1]:
                self.free[-1] += hosts
            else:
                self.times.append(end)
                self.free.append(self.free[-1] + hosts)

    def copy(self) -> Profile:
        """An independent copy."""
        p = Profile.__new__(Profile)
        p.times = self.times.copy()
        p.free = self.free.copy()
        return p

    @property
    def origin(self) -> int:
        """The first instant described."""
        return self.times[0]

    def advance(self, now: int) -> None:
        """Forget the past: make `now` (>= origin) the new origin."""
        i = bisect_right(self.times, now) - 1
        if i > 0:
            del self.times[:i]
            del self.free[:i]
        self.times[0] = now

    def free_at(self, t: int) -> int:
        """Free hosts at instant `t` (>= origin)."""
        return self.free[bisect_right(self.times, t) - 1]

    def _split(self, t: int) -> int:
        """Index of the step starting exactly at `t` (>= origin), inserting a breakpoint."""
        times = self.times
        i = bisect_right(times, t) - 1
        if times[i] == t:
            return i
        times.insert(i + 1, t)
        self.free.insert(i + 1, self.free[i])
        return i + 1

    def add(self, start: int, end: int, delta: int) -> None:
        """Add `delta` free hosts on ``[start, end)`` (end > start; start >= origin)."""
        if end <= start:
            end = start + 1
        i = self._split(start)
        j = self._split(end)
        free = self.free
        for k in range(i, j):
            free[k] += delta
        times = self.times
        # keep adjacent steps distinct: only the two edges can have become equal
        if j < len(free) and free[j] == free[j - 1]:
            del times[j], free[j]
        if i > 0 and free[i] == free[i - 1]:
            del times[i], free[i]

    def reserve(self, start: int, duration: int, hosts: int) -> None:
        """Take `hosts` on ``[start, start + max(duration, 1))``."""
        self.add(start, start + max(duration, 1), -hosts)

    def release(self, start: int, duration: int, hosts: int) -> None:
        """Give back what ``reserve(start, duration, hosts)`` took."""
        self.add(start, start + max(duration, 1), hosts)

    def earliest_fit(self, hosts: int, duration: int, after: int) -> int:
        """First instant ``t >= after`` with at least `hosts` free on ``[t, t + max(duration, 1))``.

        Candidates are `after` and the breakpoints after it, in time order; the first that
        works is returned. The last step must have enough hosts (it always does when it
        counts every host of the machine), else ValueError.
        """
        d = max(duration, 1)
        times, free = self.times, self.free
        n = len(times)
        i = bisect_right(times, after) - 1
        start = after
        j = i
        while j < n:
            if times[j] >= start + d:
                return start
            if free[j] < hosts:
                if j + 1 == n:
                    raise ValueError(f"a job of {hosts} hosts never fits this profile")
                start = times[j + 1]
            j += 1
        return start

    def steps(self) -> list[tuple[int, int]]:
        """``[(time, free), ...]``: the breakpoints, for tests and debugging."""
        return list(zip(self.times, self.free))

    def __repr__(self) -> str:
        return f"Profile({self.steps()!r})"

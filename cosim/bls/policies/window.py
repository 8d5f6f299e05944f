"""Window-based allocation (Tang et al.): try the orders of the first W queued jobs, keep the
one with the smallest predicted makespan, then run the backfill policy on that order.

It wraps any backfill policy (docs/reference/policies.md §1.3; cosim follows CQSim's
placement, ``Start_window.window_check``, which needs no BG/P partitions). At a pass with
queue ``q`` (priority order) and ``k = min(W, len(q))``:

1. the availability `Profile` of the running jobs' expected ends (`base.expected_end`);
2. for each permutation π of ``q[0:k]``, in lexicographic order of positions (the identity
   first): in a copy of the profile, each window job in π order is placed at its earliest
   fit for its walltime, no earlier than the previous window job's start (no window job
   overtakes an earlier one in π; otherwise every order would pack alike), and ``M(π)`` is
   the latest ``start + walltime`` of the window;
3. π* is the first π with the smallest M (strict ``<``: ties keep the earlier order, so
   the identity wins every tie), and the wrapped policy plans the queue
   ``π*(q[0:k]) + q[k:]``. A policy that keeps a memo (conservative) gets none: it plans
   afresh at every pass (policies.md §1.3 step 6), since the orders it is given change.

Result-preserving shortcuts (the identity comes first and ties keep the first): no search
when ``k <= 1`` or when the whole window fits now (its M is then the lower bound ``now +
the longest walltime``); the enumeration stops at the first order reaching that bound; an
order whose first jobs already end at or after the best M so far is not completed (the
search is depth-first, sharing the placement of common prefixes). ``makespan_cap``
(Cobalt's quirk: ``minimum_makespan = 100000`` s) keeps the identity unless some order has
M < now + cap. W is at most `WINDOW_MAX` (6; CQSim bounds it to [1, 6]).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from cosim.bls.policies.base import PassView, Plan, expected_end
from cosim.bls.profile import Profile
from cosim.workload.jobs import Job

__all__ = ["WINDOW_MAX", "best_order", "plan"]

#: the largest window: 6! = 720 orders of 6 placements each at worst
WINDOW_MAX = 6


def _profile(view: PassView) -> Profile:
    now = view.now
    return Profile(now, view.free, ((expected_end(e, now), h) for e, _, h, _ in view.running))


def best_order(view: PassView, window: int, makespan_cap: int | None = None
               ) -> tuple[tuple[int, ...], int | None]:
    """``(π*, M(π*))``: the positions of the first ``k = min(window, len(queue))`` queued jobs
    in their best order (module docstring), and its predicted makespan (None when no search
    ran: ``k <= 1``, or the window fits now)."""
    queue = view.queue
    k = min(window, len(queue))
    identity = tuple(range(k))
    if k <= 1:
        return identity, None
    jobs: Sequence[Job] = queue[:k]
    now = view.now
    if sum(j.hosts for j in jobs) <= view.free:
        return identity, None
    bound = now + max(j.walltime for j in jobs)
    best_m = now + makespan_cap if makespan_cap is not None else None
    best: tuple[int, ...] | None = None
    order: list[int] = []
    used = [False] * k

    def place(profile: Profile, after: int, m: int) -> bool:
        """Depth-first over the orders extending `order`; True to stop (bound reached)."""
        nonlocal best_m, best
        if len(order) == k:
            if best_m is None or m < best_m:
                best_m, best = m, tuple(order)
            return m <= bound
        last = len(order) == k - 1
        for i in range(k):
            if used[i]:
                continue
            j = jobs[i]
            start = profile.earliest_fit(j.hosts, j.walltime, after)
            end = max(m, start + j.walltime)
            if best_m is not None and end >= best_m:
                continue  # no completion of this prefix can beat the best (strict <)
            nxt = profile if last else profile.copy()
            if not last:
                nxt.reserve(start, j.walltime, j.hosts)
            used[i] = True
            order.append(i)
            stop = place(nxt, start, end)
            order.pop()
            used[i] = False
            if stop:
                return True
        return False

    place(_profile(view), now, now)
    if best is None:  # the cap: no order predicted an end before now + cap
        return identity, None
    return best, best_m


def plan(view: PassView, inner: Callable[[PassView], Plan], window: int,
         makespan_cap: int | None = None) -> Plan:
    """The wrapped policy's plan on the queue in the best window order (module docstring)."""
    if window <= 1:
        return inner(view)
    order, _ = best_order(view, window, makespan_cap)
    if order == tuple(range(len(order))):
        return inner(replace(view, memo=None))
    queue = view.queue
    head = tuple(queue[i] for i in order)
    return inner(replace(view, queue=head + tuple(queue[len(order):]), memo=None))

"""Equipartition (Kalé, Kumar & DeSouza, CCGRID'02): every job its minimum, the rest shared.

Kalé's adaptive job scheduler, as published: "When a new job arrives, the scheduler
re-calculates the number of processors allocated to each running job. All jobs, including the
new one, are allocated their minimum number of processors. Leftover processors are shared
equally, subject to each job's maximum processor usage. If it is not possible to allocate the
new job its minimum number of processors, it is enqueued. When a running job finishes, the
scheduler applies the above algorithm to each job in the queue again." It replaces the
backfill pass and works on PEs (the machine's N PEs, any PE to any job). One pass:

1. **Admission.** Running jobs keep their place; their minimum is ``min_pes`` if malleable,
   else the PEs they hold (rigid, moldable and evolving jobs are never resized). Queued jobs
   are examined in priority order: one is admitted when its minimum (``min_pes``; ``pes`` for
   a rigid job) fits in N minus the minima already counted; ``queue="first-fit"`` (default)
   examines every queued job, ``queue="fcfs"`` stops at the first that does not fit.
2. **Targets.** The admitted and running jobs share N (`targets`): ``share="additive"``
   (default, the literal reading) gives each job its minimum plus an equal share of the
   leftover, capped at its maximum, the excess re-shared among the others (water-filling on
   the increment); ``share="level"`` (classic dynamic equipartition) gives
   ``clamp(x, min, max)`` with the largest common level x that fits. Indivisible remainders
   go one PE each to the jobs that can still grow, in ascending job id.
3. **Decisions.** A malleable running job above its target is shrunk by the difference
   (PEs already being released count as gone): it gives up its highest-numbered PEs, never
   its master's. Admitted jobs start, in admission order, once enough free PEs exist for
   their whole target: the first that cannot start keeps the free PEs for itself and those
   after it. Free PEs beyond what waiting starts need go to running malleable jobs below their
   target, in ascending job id, once they have no PE still being released (a job whose
   target rose again before its last shrink completed waits for the release). Which free PEs (`pick`): for a growing job, those extending
   its own runs of PEs first; then the smallest run of free PEs that holds the rest (best
   fit), else the largest runs — so PE sets stay in few runs (contiguous cores, few hosts).

Targets depend only on the set of jobs and their bounds, so recomputing them at every pass
gives the same allocation as recomputing only at arrivals and completions (the paper's rule):
passes triggered by PEs being released just carry the plan out. A resized job's estimated
end (and walltime-kill tick) is rescaled by its PE ratio: ``now + ceil(remaining x old /
new)``. With trace apps every release happens at the command's tick, so an arrival's shrinks
and start happen at one instant; DLS apps release each PE when its chunk in flight ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


from cosim.bls.policies.base import DynamicPolicy, DynamicView, Expand, Plan, Shrink, Start
from cosim.core.indexset import IndexSet
from cosim.workload.jobs import Job

__all__ = ["POLICY", "Params", "decide", "targets", "bounds"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """share: ``additive`` or ``level`` (module docstring); queue: ``first-fit`` or ``fcfs``."""

    share: Literal["additive", "level"] = "additive"
    queue: Literal["first-fit", "fcfs"] = "first-fit"


def bounds(job: Job, held: int | None = None) -> tuple[int, int]:
    """``(min, max)`` PEs of a job: queued (`held` None) or running on `held` PEs."""
    if held is not None and not job.resizable:
        return held, held
    return job.min_pes, job.max_pes


def targets(n: int, jobs: list[tuple[int, int, int]], share: str = "additive") -> dict[int, int]:
    """PEs of each job ``(id, min, max)`` when `n` PEs are shared (module docstring, step 2).

    Requires ``sum(min) <= n``. Jobs are given in any order; ties go to ascending ids.
    """
    jobs = sorted(jobs)
    alloc = {j: lo for j, lo, _ in jobs}
    left = n - sum(alloc.values())
    if left < 0:
        raise ValueError("the minima exceed the machine")
    cap = {j: hi for j, _, hi in jobs}
    if share == "additive":
        open_ = [j for j, lo, hi in jobs if hi > lo]
        while left > 0 and open_:
            each = left // len(open_)
            if each == 0:
                break
            still = []
            for j in open_:
                give = min(each, cap[j] - alloc[j])
                alloc[j] += give
                left -= give
                if alloc[j] < cap[j]:
                    still.append(j)
            open_ = still
    elif share == "level":
        lo_hi = [(lo, hi) for _, lo, hi in jobs]

        def used(x: int) -> int:
            return sum(min(max(x, lo), hi) for lo, hi in lo_hi)

        a, b = 0, max(hi for _, hi in lo_hi) if lo_hi else 0
        while a < b:  # the largest level x with used(x) <= n
            mid = (a + b + 1) // 2
            if used(mid) <= n:
                a = mid
            else:
                b = mid - 1
        for j, lo, hi in jobs:
            alloc[j] = min(max(a, lo), hi)
        left = n - sum(alloc.values())
        open_ = [j for j, lo, hi in jobs if alloc[j] < hi and alloc[j] == a]
    else:
        raise ValueError(f"unknown share rule {share!r}")
    for j in open_:  # remainders: one each, ascending id
        if left == 0:
            break
        if alloc[j] < cap[j]:
            alloc[j] += 1
            left -= 1
    return alloc


def pick(pool: IndexSet, need: int, mine: IndexSet | None = None) -> IndexSet:
    """`need` PEs of the free `pool`, keeping PE sets in few runs (module docstring).

    First the free PEs that extend the runs of `mine` (a growing job's PEs: right after each
    of its runs, then right before, in run order); then the smallest free run that holds all
    that is still needed (its lowest PEs; ties: the lowest run); failing one, the largest free
    runs whole (ties: the lowest), the last one only in part.
    """
    out: list[tuple[int, int]] = []
    left = need
    free = pool
    if mine is not None and len(mine):
        for f, c in mine.runs:
            for start in (f + c, f - 1):
                if left and start >= 0 and start in free:
                    # the free run containing `start`, taken from the job's side
                    k = next(i for i, (g, d) in enumerate(free.runs) if g <= start < g + d)
                    g, d = free.runs[k]
                    if start == f + c:
                        take = (start, min(left, g + d - start))
                    else:
                        n = min(left, start - g + 1)
                        take = (start - n + 1, n)
                    out.append(take)
                    left -= take[1]
                    free = free.difference(IndexSet.range(take[0], take[0] + take[1]))
    if left:
        runs = free.runs
        fits = [(d, g) for g, d in runs if d >= left]
        if fits:
            d, g = min(fits)
            out.append((g, left))
        else:
            for g, d in sorted(runs, key=lambda r: (-r[1], r[0])):
                n = min(d, left)
                out.append((g, n))
                left -= n
                if not left:
                    break
    return IndexSet.from_runs(sorted(out))


def _limit(alloc, old: int, new: int, now: int) -> int:
    """The estimated end after a resize from `old` to `new` PEs (ratio of PEs)."""
    remaining = max(0, alloc.estimated_end - now)
    return now + -(-remaining * old // new)


def decide(view: DynamicView, params: Params) -> Plan:
    """One equipartition pass (module docstring)."""
    cluster = view.cluster
    n = cluster.n_pes
    now = view.now
    running = cluster.running
    members: list[tuple[int, int, int]] = []
    eff: dict[int, int] = {}
    used_min = 0
    for jid in sorted(running):
        alloc = running[jid]
        held = alloc.pes - len(cluster.releasing(jid)) if alloc.job.resizable else alloc.pes
        eff[jid] = held
        lo, hi = bounds(alloc.job, held)
        members.append((jid, lo, hi))
        used_min += lo
    admitted: list[Job] = []
    for job in view.queue:
        lo, hi = bounds(job)
        if used_min + lo <= n:
            admitted.append(job)
            members.append((job.id, lo, hi))
            used_min += lo
        elif params.queue == "fcfs":
            break
    if not members:
        return Plan()
    target = targets(n, members, params.share)
    resizes: list[Shrink | Expand] = []
    for jid in sorted(running):
        alloc = running[jid]
        extra = eff[jid] - target[jid]
        if extra > 0 and alloc.job.resizable:
            keep = cluster.pes_of(jid).difference(cluster.releasing(jid)).difference(
                (alloc.master,)).to_array()
            give = keep[-extra:]
            resizes.append(Shrink(job_id=jid, pes=IndexSet.from_sorted(give),
                                  limit=_limit(alloc, eff[jid], target[jid], now)))
    # a job still releasing PEs grows only once they are released (it uses them until then)
    growing = [jid for jid in sorted(running)
               if running[jid].job.resizable and target[jid] > eff[jid]
               and not len(cluster.releasing(jid))]
    if not (admitted or growing) or cluster.free_pes == 0:
        return Plan(resizes=tuple(resizes))
    pool = IndexSet.from_sorted(cluster.free_pe_array())
    starts: list[Start] = []
    waiting = 0
    for job in admitted:
        need = target[job.id]
        if waiting == 0 and need <= len(pool):
            pes = pick(pool, need)
            starts.append(Start(job=job, pes=pes))
            pool = pool.difference(pes)
        else:
            waiting += need
    surplus = len(pool) - waiting
    for jid in growing:
        if surplus <= 0:
            break
        alloc = running[jid]
        k = min(target[jid] - eff[jid], surplus)
        pes = pick(pool, k, cluster.pes_of(jid))
        resizes.append(Expand(job_id=jid, pes=pes,
                              limit=_limit(alloc, eff[jid], eff[jid] + k, now)))
        pool = pool.difference(pes)
        surplus -= k
    return Plan(starts=tuple(starts), resizes=tuple(resizes))


POLICY = DynamicPolicy(name="equi", summary="equipartition (Kalé et al.): minima, then equal "
                       "shares up to the maxima", family="malleable", replaces_backfill=True,
                       params=Params, decide=decide)

"""EASY backfilling (Lifka 1995; Mu'alem & Feitelson 2001): one reservation, for the queue head.

At every pass, recomputed from scratch:

1. start jobs in priority order while the first one fits in the free hosts;
2. the first job that does not fit is the *head*: walking the running jobs (and those just
   started) by expected end (ties: job id), its *shadow time* is the first end at which
   enough hosts are free for it, and the *extra* hosts are those free at the shadow time
   (every job ending exactly then included) beyond what the head needs;
3. every later job, in priority order, starts now if it fits in the free hosts and either
   ends (now + walltime) at or before the shadow time, or uses no more than the extra hosts
   (which it then consumes).

Priority > 0 jobs (ESP's Z jobs; they sort first) each get a reservation too, in priority
order, at the earliest time that delays no earlier reservation, unless they can start now;
a later job then backfills only if it delays none of the reservations: for every reservation
starting before the job's estimated end, the job must fit in the hosts still free at that
reservation's start. With one reservation this is exactly steps 2-3; for a full-machine Z
job (no spare hosts) it is the ESP drain rule: nothing jumps ahead of Z unless it ends before
Z's reservation. Estimates are walltimes (`base.expected_end` for running jobs).
"""

from __future__ import annotations

from itertools import islice

from cosim.bls.policies.base import BackfillPolicy, PassView, Plan
from cosim.bls.profile import Profile
from cosim.workload.jobs import Job

__all__ = ["POLICY", "plan", "shadow"]


def shadow(view: PassView, started: list[Job], free: int, need: int) -> tuple[int, int]:
    """``(shadow time, extra hosts)`` for a head needing `need` hosts.

    `free` is the number of hosts free after `started` (jobs started at this pass) took theirs.
    Running jobs are walked by expected end; a job started now is expected to end at
    now + max(walltime, 1 tick).
    """
    now = view.now
    nxt = now + 1
    fresh = sorted((now + max(j.walltime, 1), j.hosts) for j in started) if started else []
    nf = len(fresh)
    k = 0
    avail = free
    when = -1
    for e, _, h, _ in view.running:
        if e <= now:
            e = nxt
        while k < nf and fresh[k][0] <= e:
            fe, fh = fresh[k]
            if when >= 0 and fe > when:
                return when, avail - need
            avail += fh
            k += 1
            if when < 0 and avail >= need:
                when = fe
        if when >= 0 and e > when:
            return when, avail - need
        avail += h
        if when < 0 and avail >= need:
            when = e
    while k < nf:
        fe, fh = fresh[k]
        if when >= 0 and fe > when:
            break
        avail += fh
        k += 1
        if when < 0 and avail >= need:
            when = fe
    if when < 0:
        raise ValueError(f"a job of {need} hosts never fits ({avail} hosts in all)")
    return when, avail - need


def plan(view: PassView) -> Plan:
    """One EASY pass (see the module docstring)."""
    queue = view.queue
    free = view.free
    starts: list[Job] = []
    n = len(queue)
    i = 0
    while i < n and queue[i].hosts <= free:
        starts.append(queue[i])
        free -= queue[i].hosts
        i += 1
    if i == n or free == 0:
        head_res = {}
        if i < n:
            when, _ = shadow(view, starts, free, queue[i].hosts)
            head_res = {queue[i].id: when}
        return Plan(starts=tuple(starts), reservations=head_res)
    head = queue[i]
    when, extra = shadow(view, starts, free, head.hosts)
    if i + 1 < n and queue[i + 1].priority > 0:
        return _with_priority_jobs(view, starts, free, i, when)
    now = view.now
    for job in islice(queue, i + 1, None):
        h = job.hosts
        if h > free:
            continue
        if now + job.walltime <= when:
            pass
        elif h <= extra:
            extra -= h
        else:
            continue
        starts.append(job)
        free -= h
        if free == 0:
            break
    return Plan(starts=tuple(starts), reservations={head.id: when})


def _with_priority_jobs(view: PassView, starts: list[Job], free: int, i: int, when: int) -> Plan:
    """EASY when priority > 0 jobs wait behind the head: each gets a reservation."""
    now = view.now
    queue = view.queue
    head = queue[i]
    ends = [(e if e > now else now + 1, h) for e, _, h, _ in view.running]
    ends += [(now + max(j.walltime, 1), j.hosts) for j in starts]
    profile = Profile(now, free, ends)
    profile.reserve(when, head.walltime, head.hosts)
    reservations = {head.id: when}
    points = [[when, profile.free_at(when)]]  # [reserved start, hosts free then]
    for job in islice(queue, i + 1, None):
        if free == 0:
            break
        h = job.hosts
        end = now + job.walltime
        fits = h <= free and all(s >= end or h <= f for s, f in points)
        if fits:
            starts.append(job)
            free -= h
            profile.reserve(now, job.walltime, h)
            for p in points:
                if p[0] < end:
                    p[1] -= h
        elif job.priority > 0:
            s = profile.earliest_fit(h, job.walltime, now)
            profile.reserve(s, job.walltime, h)
            reservations[job.id] = s
            points.append([s, 0])
            for p in points:
                p[1] = profile.free_at(p[0])
    return Plan(starts=tuple(starts), reservations=reservations)


POLICY = BackfillPolicy(name="easy", summary="EASY: a reservation for the head (and priority jobs)",
                        plan=plan)

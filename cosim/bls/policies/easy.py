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

Under a power cap (`PassView.power`, `power_plan`) power is a second resource: a job starts
only within the power left, at the level the power strategy gives it; the head's shadow time
is the first expected end at which both enough hosts and enough power (for the head at the
lowest level its strategy may give it) are free, counting the power each running job holds
until its expected end (jobs started now: at their level, for their walltime stretched by
it); a later job backfills if it fits now in hosts and power and either ends by the shadow
time or fits in both the extra hosts and the extra power. Only the head is reserved (priority
> 0 jobs get no reservation of their own under a cap).
"""

from __future__ import annotations

from itertools import islice

from cosim.bls.policies.base import BackfillPolicy, PassView, Plan
from cosim.bls.profile import Profile
from cosim.workload.jobs import Job

__all__ = ["POLICY", "plan", "shadow", "power_plan"]


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
    if view.power is not None:
        return power_plan(view)
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


def power_plan(view: PassView) -> Plan:
    """One power-aware EASY pass (see the module docstring)."""
    power = view.power
    assert power is not None
    queue, now = view.queue, view.now
    free, avail = view.free, power.available_mw
    starts: list[Job] = []
    levels: dict[int, int] = {}
    fresh: list[tuple[int, int, int]] = []  # (expected end, hosts, mW) of jobs started now

    def start(job: Job, level: int) -> None:
        nonlocal free, avail
        need = power.need_mw(job, level)
        starts.append(job)
        levels[job.id] = level
        free -= job.hosts
        avail -= need
        fresh.append((now + max(power.run_ticks(job, level), 1), job.hosts, need))

    n = len(queue)
    i = 0
    while i < n and queue[i].hosts <= free:
        level = power.level(queue[i], avail)
        if level is None:
            break
        start(queue[i], level)
        i += 1
    if i == n:
        return Plan(starts=tuple(starts), power=levels)
    head = queue[i]
    head_mw = power.least_need_mw(head)
    events = sorted([(e if e > now else now + 1, jid, h, power.held_mw(jid))
                     for e, jid, h, _ in view.running] +
                    [(e, -1, h, mw) for e, h, mw in fresh])
    hosts, watts, when = free, avail, -1
    for e, _, h, mw in events:
        if when >= 0 and e > when:
            break
        hosts += h
        watts += mw
        if when < 0 and hosts >= head.hosts and watts >= head_mw:
            when = e
    if when < 0:  # the head cannot start before the machine drains: no reservation
        return Plan(starts=tuple(starts), power=levels)
    extra_h, extra_w = hosts - head.hosts, watts - head_mw
    for job in islice(queue, i + 1, None):
        if free == 0 or avail < power.least_mw:
            break
        if job.hosts > free:
            continue
        level = power.level(job, avail)
        if level is None:
            continue
        if now + power.run_ticks(job, level) > when:
            need = power.need_mw(job, level)
            if job.hosts > extra_h or need > extra_w:
                continue
            extra_h -= job.hosts
            extra_w -= need
        start(job, level)
    return Plan(starts=tuple(starts), reservations={head.id: when}, power=levels)


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

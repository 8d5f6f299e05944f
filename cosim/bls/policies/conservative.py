"""Conservative backfilling (Mu'alem & Feitelson 2001): a reservation for every queued job.

The policy keeps a schedule (an availability profile with every running job and every
reservation) in its memo between passes. At a pass:

1. jobs that joined the queue since the last pass get, in priority order, a reservation at the
   earliest time at which they fit for their whole walltime *in the profile that already holds
   every earlier reservation* — so a new job never delays an existing reservation; except a
   new priority > 0 job (ESP's Z jobs), which goes first: the schedule is rebuilt in priority
   order, so it is placed before the priority-0 reservations, which may move later (the
   earlier priority > 0 jobs keep their places: they are placed before it);
2. when a job ended before its estimate, the schedule is *compressed*: in priority order each
   queued job gives up its reservation and takes the earliest fit again, which can only be
   earlier (its old slot is still free), so no job ever starts later than its first
   reservation (as long as estimates are upper bounds: walltime kill on, and no priority > 0
   job arrives after the reservation was made);
3. the jobs whose reservation is now start now, in priority order; the plan asks for a pass
   at the earliest remaining reservation (`Plan.wake_at`), since compression can remove the
   event that reservation was waiting for (not while a job is past its estimate: see below).

A job "backfills" when its first reservation is now although earlier jobs wait. Under SJF the
priority order decides the placement of jobs arriving together and the compression order; a
new short job does not jump existing reservations (only priority > 0 jobs do). When a running
job has outlived its estimate (walltime kill off) the schedule is rebuilt from scratch in
priority order at every pass until it ends, that job expected to end at the next tick (no
wake-up is asked for meanwhile: it would step tick by tick; the job's real end is an event);
reservations may then move later. The same happens when a reservation's time passed without
a pass (it waited for a job that then outlived its estimate). RCA: when a running job frees
fewer hosts at its end than the schedule holds (it yielded hosts that were made lendable),
the difference is free from now until that end, and the schedule is compressed as in 2.

Under a power cap (`PassView.power`, `power_plan`) power is a second profile (milliwatts
free over time: the power left now, each running job's given back at its expected end) and
the schedule is planned afresh at every pass, in priority order: a job starts now, at the
level its power strategy gives it within the power free now, if it fits in both profiles for
its whole run (its walltime stretched at that level); else it is reserved at the first time
both fit for its whole run at its strategy's level (`PowerView.reserve_level`). Planned
afresh, a reservation may move later when the order or the estimates change (the guarantee
of the memo above does not hold under a cap).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cosim.bls.policies.base import (
    BackfillPolicy,
    PassView,
    Plan,
    expected_end,
    overran,
)
from cosim.bls.profile import Profile
from cosim.errors import ProtocolError
from cosim.workload.jobs import Job

__all__ = ["POLICY", "plan", "power_plan"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """The memo: the profile and what it holds (never mutated once returned)."""

    profile: Profile
    reserved: Mapping[int, tuple[int, int, int]]  # queued job id -> (start, walltime, hosts)
    known: Mapping[int, tuple[int, int]]  # running job id -> (end in the profile, hosts)
    provisional: bool = False  # built with a job past its estimate: rebuild at the next pass


def _place(profile: Profile, job: Job, now: int) -> tuple[int, int, int]:
    s = profile.earliest_fit(job.hosts, job.walltime, now)
    profile.reserve(s, job.walltime, job.hosts)
    return (s, job.walltime, job.hosts)


def _finish(view: PassView, profile: Profile, reserved: dict[int, tuple[int, int, int]],
            known: dict[int, tuple[int, int]], provisional: bool = False) -> Plan:
    now = view.now
    starts = []
    out = {}
    for job in view.queue:
        s, d, h = reserved[job.id]
        if s == now:
            starts.append(job)
            del reserved[job.id]
            known[job.id] = (now + max(d, 1), h)
        elif s < now:
            raise ProtocolError(f"conservative: job {job.id} missed its reservation at {s}")
        else:
            out[job.id] = s
    return Plan(starts=tuple(starts), reservations=out,
                memo=Schedule(profile=profile, reserved=reserved, known=known,
                              provisional=provisional),
                wake_at=None if provisional else min(out.values(), default=None))


def _rebuild(view: PassView) -> Plan:
    now = view.now
    ends = [(expected_end(e, now), h) for e, _, h, _ in view.running]
    profile = Profile(now, view.free, ends)
    known = {jid: (expected_end(e, now), h) for e, jid, h, _ in view.running}
    reserved = {job.id: _place(profile, job, now) for job in view.queue}
    overrun = any(overran(e, b, now) for e, _, _, b in view.running)
    return _finish(view, profile, reserved, known, overrun)


def plan(view: PassView) -> Plan:
    """One conservative pass (see the module docstring)."""
    if view.power is not None:
        return power_plan(view)
    now = view.now
    memo: Schedule | None = view.memo
    running = view.running
    if (memo is None or memo.provisional or any(r[0] < now for r in memo.reserved.values())
            or any(j.priority > 0 and j.id not in memo.reserved for j in view.queue)):
        return _rebuild(view)  # first pass, stale schedule, or a new priority job (see above)
    profile = memo.profile.copy()
    profile.advance(now)
    running_ids = {jid for _, jid, _, _ in running}
    early = False
    known: dict[int, tuple[int, int]] = {}
    for jid, (end, h) in memo.known.items():
        if jid in running_ids:
            known[jid] = (end, h)
        elif end > now:  # ended before its estimate: its hosts are free until then
            profile.add(now, end, h)
            early = True
    reserved = dict(memo.reserved)
    for e, jid, h, _ in running:
        k = known.get(jid)
        if k is not None:
            if h < k[1] and k[0] > now:  # it yielded hosts (RCA): free now, not at its end
                profile.add(now, k[0], k[1] - h)
                known[jid] = (k[0], h)
                early = True
            continue
        r = reserved.pop(jid, None)
        if r is not None:  # started at its reservation: the profile already holds it
            known[jid] = (r[0] + max(r[1], 1), h)
        else:  # started by someone else: take its hosts until its expected end
            end = expected_end(e, now)
            profile.add(now, end, -h)
            known[jid] = (end, h)
    if any(end <= now for end, _ in known.values()):  # outlived its estimate: start afresh
        return _rebuild(view)
    if sum(1 for job in view.queue if job.id in reserved) < len(reserved):
        queued = {job.id for job in view.queue}
        for jid in [j for j in reserved if j not in queued]:  # left the queue unstarted
            s, d, h = reserved.pop(jid)
            profile.release(s, d, h)
    if early:
        for job in view.queue:
            r = reserved.get(job.id)
            if r is None or r[0] == now:
                continue
            profile.release(*r)
            reserved[job.id] = _place(profile, job, now)
    for job in view.queue:
        if job.id not in reserved:
            reserved[job.id] = _place(profile, job, now)
    return _finish(view, profile, reserved, known)


def power_plan(view: PassView) -> Plan:
    """One power-aware conservative pass (module docstring), planned afresh."""
    power = view.power
    assert power is not None
    now = view.now
    ends = [(expected_end(e, now), h, power.held_mw(jid)) for e, jid, h, _ in view.running]
    hosts = Profile(now, view.free, [(e, h) for e, h, _ in ends])
    watts = Profile(now, power.available_mw, [(e, w) for e, _, w in ends])
    starts: list[Job] = []
    levels: dict[int, int] = {}
    reservations: dict[int, int] = {}
    for job in view.queue:
        level = power.level(job, watts.free_at(now))
        if level is not None:  # it starts now if it fits now for its whole run
            run, need = power.run_ticks(job, level), power.need_mw(job, level)
            if hosts.earliest_fit(job.hosts, run, now) == now \
                    and watts.earliest_fit(need, run, now) == now:
                hosts.reserve(now, run, job.hosts)
                watts.reserve(now, run, need)
                starts.append(job)
                levels[job.id] = level
                continue
        level = power.reserve_level(job)
        run, need = power.run_ticks(job, level), power.need_mw(job, level)
        t = now
        while True:  # the first start at which both hosts and power fit for the whole run
            t = hosts.earliest_fit(job.hosts, run, t)
            u = watts.earliest_fit(need, run, t)
            if u == t:
                break
            t = u
        hosts.reserve(t, run, job.hosts)
        watts.reserve(t, run, need)
        reservations[job.id] = t
    # no wake-up while a job has outlived its estimate (it would step tick by tick; its real
    # end is an event), as in `_rebuild`
    overrun = any(overran(e, b, now) for e, _, _, b in view.running)
    return Plan(starts=tuple(starts), reservations=reservations, power=levels,
                wake_at=None if overrun else min(reservations.values(), default=None))


POLICY = BackfillPolicy(name="conservative", summary="conservative: a reservation for every job",
                        plan=plan)

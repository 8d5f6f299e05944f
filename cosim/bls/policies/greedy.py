"""Greedy backfilling: start every queued job that fits in the free hosts, in priority order,
with no reservation for anyone (Kumbhare et al.'s value heuristics reserve nothing; a job
that cannot start waits for the next pass, and a value order drops it once it can no longer
earn anything). Unlike ``none`` a job that does not fit does not block the ones after it.
Under a power cap a job must also fit in the power left (`PassView.power`).
"""

from __future__ import annotations

from cosim.bls.policies.base import BackfillPolicy, PassView, Plan, power_fit

__all__ = ["POLICY", "plan"]


def plan(view: PassView) -> Plan:
    """Every job that fits, in queue order (in hosts, and under a power cap in the power
    left at the level the power strategy gives it)."""
    free = view.free
    starts = []
    power, levels = view.power, {}
    avail = power.available_mw if power is not None else 0
    for job in view.queue:
        if power is not None and avail < power.least_mw:
            break  # no job fits in the power left
        if job.hosts <= free:
            if power is not None:
                fit = power_fit(power, job, avail)
                if fit is None:
                    continue
                levels[job.id], taken = fit
                avail -= taken
            starts.append(job)
            free -= job.hosts
            if not free:
                break
    return Plan(starts=tuple(starts), power=levels)


POLICY = BackfillPolicy(name="greedy", summary="start every job that fits, in priority order, "
                        "no reservations", plan=plan)

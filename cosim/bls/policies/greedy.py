"""Greedy backfilling: start every queued job that fits in the free hosts, in priority order,
with no reservation for anyone (Kumbhare et al.'s value heuristics reserve nothing; a job
that cannot start waits for the next pass, and a value order drops it once it can no longer
earn anything). Unlike ``none`` a job that does not fit does not block the ones after it.
"""

from __future__ import annotations

from cosim.bls.policies.base import BackfillPolicy, PassView, Plan

__all__ = ["POLICY", "plan"]


def plan(view: PassView) -> Plan:
    """Every job that fits, in queue order."""
    free = view.free
    starts = []
    for job in view.queue:
        if job.hosts <= free:
            starts.append(job)
            free -= job.hosts
            if not free:
                break
    return Plan(starts=tuple(starts))


POLICY = BackfillPolicy(name="greedy", summary="start every job that fits, in priority order, "
                        "no reservations", plan=plan)

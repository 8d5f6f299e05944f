"""No backfilling: start queued jobs in priority order while the first one fits; stop at the
first that does not (strict FCFS when the priority is FCFS). No reservations are made.
"""

from __future__ import annotations

from cosim.bls.policies.base import BackfillPolicy, PassView, Plan

__all__ = ["POLICY", "plan"]


def plan(view: PassView) -> Plan:
    """Start the longest prefix of the queue that fits in the free hosts."""
    free = view.free
    starts = []
    for job in view.queue:
        if job.hosts > free:
            break
        starts.append(job)
        free -= job.hosts
    return Plan(starts=tuple(starts))


POLICY = BackfillPolicy(name="none", summary="no backfilling: the queue head blocks", plan=plan)

"""No backfilling: start queued jobs in priority order while the first one fits; stop at the
first that does not (strict FCFS when the priority is FCFS). No reservations are made.
Under a power cap a job must also fit in the power left (`PassView.power`).
"""

from __future__ import annotations

from cosim.bls.policies.base import BackfillPolicy, PassView, Plan, power_fit

__all__ = ["POLICY", "plan"]


def plan(view: PassView) -> Plan:
    """Start the longest prefix of the queue that fits in the free hosts (and, under a power
    cap, in the power left: the head blocks on power too)."""
    free = view.free
    starts = []
    power, levels = view.power, {}
    avail = power.available_mw if power is not None else 0
    for job in view.queue:
        if job.hosts > free:
            break
        if power is not None:
            fit = power_fit(power, job, avail)
            if fit is None:
                break
            levels[job.id], taken = fit
            avail -= taken
        starts.append(job)
        free -= job.hosts
    return Plan(starts=tuple(starts), power=levels)


POLICY = BackfillPolicy(name="none", summary="no backfilling: the queue head blocks", plan=plan)

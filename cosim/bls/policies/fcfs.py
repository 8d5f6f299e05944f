"""FCFS priority: first come, first served — the queue is ordered by ``(submit, id)``.

After the scheduler's leading ``-job.priority`` the full key is ``(-priority, submit, id)``:
ties in submit time go to the lower job id (the order of the trace).
"""

from __future__ import annotations

from cosim.bls.policies.base import PriorityPolicy
from cosim.workload.jobs import Job

__all__ = ["POLICY"]


def key(job: Job) -> tuple[int]:
    """Submit time."""
    return (job.submit,)


POLICY = PriorityPolicy(name="fcfs", summary="first come, first served: (submit, id)", key=key,
                        key_fields=("submit",))

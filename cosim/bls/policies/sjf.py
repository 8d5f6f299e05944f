"""SJF priority: shortest (estimated) job first — the queue is ordered by walltime.

The estimate is the requested time (`Job.walltime`), never the real run time, which the
scheduler does not know. Full key: ``(-priority, walltime, submit, id)``: equal estimates go
to the earlier submission, then the lower job id.
"""

from __future__ import annotations

from cosim.bls.policies.base import PriorityPolicy
from cosim.workload.jobs import Job

__all__ = ["POLICY"]


def key(job: Job) -> tuple[int, int]:
    """Walltime estimate, then submit time."""
    return (job.walltime, job.submit)


POLICY = PriorityPolicy(name="sjf", summary="shortest job first by walltime: (walltime, submit, id)",
                        key=key, key_fields=("walltime", "submit"))

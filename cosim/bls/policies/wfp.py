"""WFP priority: Cobalt's production utility at Argonne, ``(wait / walltime)^3 x size``.

At every pass each queued job gets ``U = (wait / walltime)^3 x hosts`` (``bqsim.py:
define_builtin_utility_functions``, "wfp"; docs/reference/policies.md §1.2), with ``wait =
now - submit`` and the requested walltime, both in integer ticks (a walltime of 0 counts as
one tick), divided in float64; higher first. It favours jobs that waited long relative to
their length, and wide ones. Order ``(-priority, -U, submit, id)``: equal utilities (jobs
submitted now have U = 0) go by submission, then id.
"""

from __future__ import annotations

import numpy as np

from cosim.bls.policies.base import PriorityPolicy, QueueColumns, Tunables
from cosim.workload.jobs import Job

__all__ = ["POLICY", "rank"]


def rank(now: int, queue: QueueColumns, tunables: Tunables
         ) -> tuple[np.ndarray, np.ndarray]:
    """The sort key's columns: ``(-U, submit)``."""
    ratio = (now - queue.submit).astype(np.float64) / np.maximum(queue.walltime, 1)
    return -(ratio ** 3 * queue.hosts), queue.submit


def key(job: Job) -> tuple[int]:
    """Unused (the order is ranked at every pass): the submit time."""
    return (job.submit,)


POLICY = PriorityPolicy(name="wfp", summary="Cobalt's WFP utility (wait / walltime)^3 x size, "
                        "ranked every pass", key=key, rank=rank)

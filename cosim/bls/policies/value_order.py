"""Value-aware priorities (Kumbhare et al.): VPT (value per time) and VPE (value per energy).

At every pass each queued job j, predicted to run for its requested time T̂_j (the scheduler
never reads real run times) from now, scores (docs/reference/policies.md §2.4)::

    VPT_j = V_j(now + T̂_j) / T̂_j
    VPE_j = V_j(now + T̂_j) / E_j,   E_j = n_j p T̂_j

with V_j its value at that completion (`cosim.workload.value`; a job without a value counts
as value 1 that never decays) and n_j its hosts; higher first, ties by submission, then id.
Without a power model every host draws the same p, so VPE ranks by value per host-time.
VPT favours jobs that earn much quickly; with every value 1 and no thresholds VPT = 1/T̂ is
exactly SJF. T̂ of 0 counts as one tick. These orders rank at every pass (values decay as
jobs wait); the scheduler drops queued jobs that can no longer earn anything
(`BatchConfig.drop_hopeless`), and the ``greedy`` backfill policy (start what fits, in this
order) is their natural pass.
"""

from __future__ import annotations

import numpy as np

from cosim.bls.policies.base import PriorityPolicy, QueueColumns, Tunables
from cosim.workload.jobs import Job
from cosim.workload.value import value_if_started

__all__ = ["VPT", "VPE", "predicted_values"]


def predicted_values(now: int, queue: QueueColumns) -> np.ndarray:
    """Each queued job's value if it started now and ran for its requested time."""
    return np.fromiter((value_if_started(job, now) for job in queue.jobs), dtype=np.float64,
                       count=len(queue))


def _vpt(now: int, queue: QueueColumns, tunables: Tunables) -> tuple[np.ndarray, ...]:
    t_hat = np.maximum(queue.walltime, 1).astype(np.float64)
    return -(predicted_values(now, queue) / t_hat), queue.submit


def _vpe(now: int, queue: QueueColumns, tunables: Tunables) -> tuple[np.ndarray, ...]:
    energy = np.maximum(queue.walltime, 1).astype(np.float64) * queue.hosts
    return -(predicted_values(now, queue) / energy), queue.submit


def _key(job: Job) -> tuple[int]:
    """Unused (the order is ranked at every pass): the submit time."""
    return (job.submit,)


VPT = PriorityPolicy(name="vpt", summary="value per time V(now + walltime) / walltime, ranked "
                     "every pass (Kumbhare et al.)", key=_key, rank=_vpt, value_based=True)
VPE = PriorityPolicy(name="vpe", summary="value per energy V(now + walltime) / (hosts x "
                     "walltime) without a power model, ranked every pass (Kumbhare et al.)",
                     key=_key, rank=_vpe, value_based=True)

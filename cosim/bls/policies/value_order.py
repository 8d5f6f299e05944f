"""Value-aware priorities (Kumbhare et al.): VPT (value per time) and VPE (value per energy).

At every pass each queued job j, predicted to run for its requested time T̂_j (the scheduler
never reads real run times) from now, scores (docs/reference/policies.md §2.4)::

    VPT_j = V_j(now + T̂_j) / T̂_j
    VPE_j = V_j(now + T̂_j) / E_j,   E_j = n_j p T̂_j

with V_j its value at that completion (`cosim.workload.value`; a job without a value counts
as value 1 that never decays) and n_j its hosts; higher first, ties by submission, then id.
Without a power cap every host draws the same p, so VPE ranks by value per host-time; under
a cap (`cosim.bls.power`) each job is scored at the power its strategy gives it: its run
time stretched by the power model, its energy hosts x power x run time.
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
from cosim.workload.value import values_at

__all__ = ["VPT", "VPE", "METRICS", "scores"]

#: the value metrics, by the name of their priority
METRICS = ("vpt", "vpe")


def scores(metric: str, now: int, queue: QueueColumns, params: np.ndarray,
           slowdown: np.ndarray | None = None, host_mw: np.ndarray | None = None
           ) -> np.ndarray:
    """VPT or VPE (`metric`) of each queued job if it started at `now`: of shape (n,), or
    (n, k) for k power levels per job with `slowdown` (run-time factors in ppm; the run
    time is ``ceil(walltime x slowdown / 10^6)`` ticks) and `host_mw` (power per host,
    mW) of that shape; without them every job runs at full speed and VPE counts 1 per
    host-tick. `params`: the queue's value curves (`QueueColumns.params`)."""
    wall = queue.walltime.astype(np.float64)
    if slowdown is not None:
        shape = (-1,) + (1,) * (np.ndim(slowdown) - 1)
        run = np.ceil(wall.reshape(shape) * (slowdown / 1e6))
    else:
        shape, run = (-1,), wall
    value = values_at(params, (now - queue.submit).reshape(shape) + run)
    t = np.maximum(run, 1.0)
    if metric == "vpt":
        return value / t
    per_host = 1.0 if host_mw is None else host_mw
    return value / (t * queue.hosts.reshape(shape) * per_host)


def _ranker(metric: str):
    def rank(now: int, queue: QueueColumns, tunables: Tunables) -> tuple[np.ndarray, ...]:
        if queue.score is not None:  # under a power cap: at each job's level
            return -queue.score, queue.submit
        return -scores(metric, now, queue, queue.params), queue.submit
    return rank


def _key(job: Job) -> tuple[int]:
    """Unused (the order is ranked at every pass): the submit time."""
    return (job.submit,)


VPT = PriorityPolicy(name="vpt", summary="value per time V(now + walltime) / walltime, ranked "
                     "every pass (Kumbhare et al.)", key=_key, rank=_ranker("vpt"),
                     value_based=True)
VPE = PriorityPolicy(name="vpe", summary="value per energy V(now + walltime) / (hosts x "
                     "power x walltime), ranked every pass (Kumbhare et al.)", key=_key,
                     rank=_ranker("vpe"), value_based=True)

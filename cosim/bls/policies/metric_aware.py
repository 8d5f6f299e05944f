"""Metric-aware priority (Tang, Ren, Desai, Lan): the balanced score of wait and walltime.

At every pass each queued job i gets (docs/reference/policies.md §1.2, as the slides and the
authors' Qsim code in Cobalt, ``bqsim.py: comput_utility_score_balanced``, define it)::

    Sw_i = 100 wait_i / wait_max                          (wait score)
    Sr_i = 100 (wall_max - wall_i) / (wall_max - wall_min) (walltime score)
    Sp_i = BF Sw_i + (1 - BF) Sr_i                        (higher first)

with ``wait_i = now - submit_i`` and the maxima and minimum over the *current* queue (the
requested walltimes); ``wait_max = 0`` gives every Sw = 0, ``wall_max = wall_min`` every
Sr = 0. The differences are integer ticks, converted to float64 and divided (correctly
rounded, so monotone), then scaled by 100. The order is ``(-priority, -Sp, submit, id)``:
Cobalt breaks ties by queue order, cosim by submission then id, which makes BF = 1 *the same
order* as ``fcfs`` (Sp grows with the wait) and BF = 0 as ``sjf`` (Sp falls with the
walltime; equal walltimes tie and go by submission). BF is the scheduler's tunable
(`Tunables.bf`, ``--bf``; its tuner may move it, `cosim.bls.tuning`).
"""

from __future__ import annotations

import numpy as np

from cosim.bls.policies.base import PriorityPolicy, QueueColumns, Tunables
from cosim.workload.jobs import Job

__all__ = ["POLICY", "rank", "scores"]


def scores(now: int, queue: QueueColumns, bf: float) -> np.ndarray:
    """The balanced score Sp of every queued job at `now` (module docstring)."""
    n = len(queue)
    if not n:
        return np.zeros(0)
    wait = now - queue.submit
    wall = queue.walltime
    wait_max = int(wait.max())
    sw = (wait.astype(np.float64) / wait_max) * 100.0 if wait_max > 0 else np.zeros(n)
    lo, hi = int(wall.min()), int(wall.max())
    sr = ((hi - wall).astype(np.float64) / (hi - lo)) * 100.0 if hi > lo else np.zeros(n)
    return bf * sw + (1.0 - bf) * sr


def rank(now: int, queue: QueueColumns, tunables: Tunables
         ) -> tuple[np.ndarray, np.ndarray]:
    """The sort key's columns: ``(-Sp, submit)``."""
    return -scores(now, queue, tunables.bf), queue.submit


def key(job: Job) -> tuple[int]:
    """Unused (the order is ranked at every pass): the submit time."""
    return (job.submit,)


POLICY = PriorityPolicy(
    name="metric-aware",
    summary="balanced priority BF x wait score + (1 - BF) x walltime score, ranked every "
            "pass (Tang et al.; BF = 1: fcfs, 0: sjf)",
    key=key, rank=rank, tunables=frozenset({"bf"}))

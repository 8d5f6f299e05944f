"""Batch-only simulation: the scheduler and in-process rigid apps, driven round by round.

`simulate_batch` is the public entry point for workloads of rigid jobs (every job runs for
its `Job.runtime`, whatever its app: a batch-only run). It drives the same protocol the MPI
runner will: each round the time master grants ``t = min(next submission, next walltime
expiry, the apps' promise)``; the apps advance to t and return their facts; the scheduler
handles them, its own expiries, the submissions at t and one pass (the order is in
`cosim.bls.scheduler`); its commands go to the apps, stamped t. Jobs are taken in
``(submit, id)`` order, so the order of the input sequence never matters. Job ids must be
unique; a job whose PEs exceed its hosts' cores is an `InputError`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cosim.bls.rigid import RigidApps
from cosim.bls.scheduler import BatchConfig, BatchScheduler
from cosim.errors import InputError
from cosim.workload.jobs import Job, JobOutcome

__all__ = ["BatchStats", "BatchResult", "simulate_batch"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchStats:
    """Counters of one batch simulation.

    Attributes
    ----------
    rounds:
        Instants granted (several per instant when zero-length jobs or kills need answers).
    passes:
        Scheduling passes run.
    events:
        Facts handled + submissions + walltime expiries.
    facts, submissions, kills, rejected:
        The parts of `events`, and the jobs rejected as larger than the machine.
    wall_s:
        Wall-clock seconds of the simulation (a provenance value: not deterministic).
    """

    rounds: int
    passes: int
    events: int
    facts: int
    submissions: int
    kills: int
    rejected: int
    wall_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchResult:
    """What `simulate_batch` returns.

    Attributes
    ----------
    outcomes:
        One `JobOutcome` per job, in job id order.
    stats:
        Counters and wall time.
    first_reservation:
        Job id -> the first reservation the job received (EASY: as queue head or priority
        job; conservative: on arrival). Jobs that started without waiting for one are absent.
    """

    outcomes: tuple[JobOutcome, ...]
    stats: BatchStats
    first_reservation: Mapping[int, int] = field(default_factory=dict)


def simulate_batch(
    jobs: Sequence[Job],
    *,
    n_hosts: int,
    cores_per_host: int = 1,
    config: BatchConfig | None = None,
) -> BatchResult:
    """Simulate the batch level over rigid jobs.

    Parameters
    ----------
    jobs:
        The workload, in any order; ids unique.
    n_hosts:
        Hosts of the machine (>= 1).
    cores_per_host:
        PEs per host (>= 1).
    config:
        Policies and walltime enforcement (default: `BatchConfig()`: FCFS, EASY, first-fit,
        walltime kill on).

    Returns
    -------
    BatchResult
        Outcomes in job id order: ``completed``, ``killed`` (at start + walltime) or
        ``rejected`` (more hosts than the machine).
    """
    wall0 = time.perf_counter()
    if n_hosts < 1:
        raise InputError(f"the machine needs at least one host, got {n_hosts}", field="hosts")
    if cores_per_host < 1:
        raise InputError(f"hosts need at least one core, got {cores_per_host}", field="cores")
    config = BatchConfig() if config is None else config
    order = sorted(jobs, key=lambda j: (j.submit, j.id))
    if len({j.id for j in order}) != len(order):
        ids = sorted(j.id for j in order)
        dup = next(a for a, b in zip(ids, ids[1:]) if a == b)
        raise InputError(f"job id {dup} appears twice", field="id")
    sched = BatchScheduler(cores=[cores_per_host] * n_hosts, config=config)
    from cosim.runner import run_rounds  # the one round loop (imported late: no cycle)
    from cosim.transport.loopback import LocalAls

    group = LocalAls(RigidApps({j.id: j.runtime for j in order}))
    rounds, _, _, _ = run_rounds(order, sched, group)
    outcomes = tuple(sched.outcomes[j.id] for j in sorted(order, key=lambda j: j.id))
    stats = BatchStats(rounds=rounds, passes=sched.passes,
                       events=sched.facts + sched.submissions + sched.kills, facts=sched.facts,
                       submissions=sched.submissions, kills=sched.kills, rejected=sched.rejected,
                       wall_s=time.perf_counter() - wall0)
    return BatchResult(outcomes=outcomes, stats=stats,
                       first_reservation=dict(sorted(sched.first_reservation.items())))

"""The co-simulation loop: the batch level as time master over the application-level endpoints.

One round (DESIGN §4): the coordinator grants a tick ``G``; every ALS endpoint applies the
commands decided at the previous decision tick, advances its apps to ``G`` and returns the
facts stamped at or before ``G``; the batch level handles them in the canonical order
`Fact.key`, then its own events at ``G`` (walltime kills, then submissions), runs one
scheduling pass and produces the next commands. ``G`` is the earliest of the next submission,
the scheduler's next timer and every endpoint's promise, rounded up to the scheduling quantum
(0 = event-exact). After a decision that produced commands, the next round grants the decision
tick itself, so that apps started there report their promises before time moves on: a
promise is never made without the app that makes it. Rigid jobs run in `RigidApps`, app-driven
jobs (mandelbrot, psia, profile) in `AppSimulator`; both have the same interface, which is the
one the MPI transport carries.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cosim.als.manager import AlsConfig, AppSimulator
from cosim.als.runtime import LoopResult
from cosim.bls.scheduler import BatchConfig, BatchScheduler
from cosim.bls.rigid import RigidApps
from cosim.errors import InputError, ProtocolError
from cosim.platform import Platform
from cosim.protocol.messages import Command
from cosim.transport.base import AlsGroup, AlsTotals
from cosim.transport.loopback import LocalAls
from cosim.workload.jobs import Job, JobOutcome

__all__ = ["CosimStats", "CosimResult", "cosimulate", "run_rounds"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CosimStats:
    """Counters and wall times of one co-simulation."""

    rounds: int
    passes: int
    facts: int
    chunk_events: int
    apps: int
    wall_s: float
    wall_bls_s: float
    wall_als_s: float  # summed over the ranks that simulate apps
    ranks: int = 1
    rollbacks: int = 0  # app runs replayed to apply an exclusion request at an earlier tick
    exclusion_requests: int = 0
    exclusions_accepted: int = 0
    hosts_excluded: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class CosimResult:
    """Outcomes in job id order, statistics, and each app-driven job's loop result."""

    outcomes: tuple[JobOutcome, ...]
    stats: CosimStats
    loops: dict[int, LoopResult] = field(default_factory=dict)


def cosimulate(
    jobs: Sequence[Job],
    *,
    platform: Platform,
    n_hosts: int,
    batch: BatchConfig,
    als: AlsConfig,
    quantum: int = 0,
    cache_dir: str | None = None,
    comm: Any = None,
    rank0_apps: bool = False,
) -> CosimResult:
    """Co-simulate `jobs` on the first `n_hosts` hosts of `platform`.

    Parameters
    ----------
    jobs:
        The workload (any order, unique ids); ``app == "rigid"`` jobs run for their trace run
        time, the others are simulated by the application level.
    batch, als:
        Batch-level policies (RCA included) and application-level settings.
    quantum:
        Scheduling quantum in ticks (0: decide at every event).
    comm:
        An MPI communicator of K > 1 ranks whose ranks 1..K-1 run `cosim.transport.mpi.serve`
        (None: everything in this process).
    rank0_apps:
        With MPI, rank 0 simulates apps too.
    """
    wall0 = time.perf_counter()
    if quantum < 0:
        raise InputError("the quantum must be >= 0", field="quantum")
    cores = {h.cores for h in platform.hosts[:n_hosts]}
    if len(cores) != 1:
        raise InputError("hosts with different core counts are not supported by the batch "
                         "level yet", field="platform")
    order = sorted(jobs, key=lambda j: (j.submit, j.id))
    if len({j.id for j in order}) != len(order):
        raise InputError("job ids must be unique", field="id")
    sched = BatchScheduler(cores=[cores.pop()] * n_hosts, config=batch)
    rigid = RigidApps({j.id: j.runtime for j in order if j.app == "rigid"})
    group: AlsGroup
    if comm is None or comm.size == 1:
        group = LocalAls(rigid, AppSimulator(platform=platform, config=als, cache_dir=cache_dir))
    else:
        from cosim.transport.mpi import MpiAls

        local = AppSimulator(platform=platform, config=als, cache_dir=cache_dir) \
            if rank0_apps else None
        group = MpiAls(comm, rigid=rigid, local=local, platform=platform)
    rounds, facts_seen, wall_bls, totals = run_rounds(order, sched, group, quantum)
    outcomes = tuple(sched.outcomes[j.id] for j in sorted(order, key=lambda j: j.id))
    wall = time.perf_counter() - wall0
    stats = CosimStats(rounds=rounds, passes=sched.passes, facts=facts_seen,
                       chunk_events=totals.chunk_events, apps=totals.apps, wall_s=wall,
                       wall_bls_s=wall_bls, wall_als_s=sum(totals.wall_s.values()),
                       ranks=1 if comm is None else comm.size, rollbacks=totals.rollbacks,
                       exclusion_requests=sched.exclusion_requests,
                       exclusions_accepted=sched.exclusions_accepted,
                       hosts_excluded=sched.hosts_excluded)
    return CosimResult(outcomes=outcomes, stats=stats, loops=totals.loops)


def run_rounds(order: Sequence[Job], sched: BatchScheduler, group: AlsGroup,
               quantum: int = 0) -> tuple[int, int, float, AlsTotals]:
    """The round loop (module docstring) over `group` until every job has ended.

    `order` is the workload sorted by (submit, id). Returns the rounds, the facts handled, the
    batch level's wall time and the group's totals; `group` is closed in every case.
    """
    n, i, rounds, facts_seen = len(order), 0, 0, 0
    commands: list[Command] = []
    decided = 0
    promise: int | None = None
    wall_bls = 0.0
    try:
        while True:
            if commands:
                grant = decided
            else:
                known = [c for c in (order[i].submit if i < n else None, sched.next_timer(),
                                     promise) if c is not None]
                if not known:
                    break
                grant = min(known)
                if quantum:
                    grant = -(-grant // quantum) * quantum
            rounds += 1
            facts, promise = group.round(grant, commands)
            t1 = time.perf_counter()
            facts_seen += len(facts)
            sched.handle(facts)
            commands = sched.expire(grant)
            j = i
            while j < n and order[j].submit <= grant:
                j += 1
            if j > i:
                sched.submit(order[i:j], grant)
                i = j
            starts = sched.schedule(grant)
            if starts:
                commands = sorted(commands + starts, key=lambda c: c.job_id)
            decided = grant
            wall_bls += time.perf_counter() - t1
        if not sched.idle:
            raise ProtocolError("simulation ended with jobs still queued or running")
        totals = group.finish()
    finally:
        group.close()
    return rounds, facts_seen, wall_bls, totals

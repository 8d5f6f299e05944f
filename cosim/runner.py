"""One entry point for a simulation — batch-only or co-simulated — and its round loop.

`simulate` runs a workload to completion and returns a `SimResult` whatever the run: trace
jobs (app ``rigid``: run time from the trace, stretched by their runtime model when resized)
run in `TraceApps`, app-driven jobs (mandelbrot, psia, profile) in `AppSimulator`, both
*endpoints* of the application level (`cosim.protocol.endpoint`), in this process or spread
over MPI ranks (`cosim.transport`); `cosim.placement` chooses where each new app runs.

One round (DESIGN §4): the coordinator grants a tick ``G``; every ALS endpoint applies the
commands decided at the previous decision tick, advances its apps to ``G`` and returns the
facts stamped at or before ``G``; the batch level handles them in the canonical order
`Fact.key`, then its own events at ``G`` (walltime kills, then submissions), runs one
scheduling pass and produces the next commands. ``G`` is the earliest of the next submission,
the scheduler's next timer and every endpoint's promise, rounded up to the scheduling quantum
(0 = event-exact). After a decision that produced commands, the next round grants the decision
tick itself, so that apps started there report their promises before time moves on: a
promise is never made without the app that makes it. When those commands only start or kill
trace jobs, that round is the trace endpoint's alone, in this process (`AlsGroup.local_round`:
the other endpoints, already at that tick, would add nothing), and ``rounds`` counts it not. Jobs are taken in ``(submit, id)``
order, so the order of the input never matters; ids must be unique. A workload of rigid trace
jobs whose policies need nothing else (`cosim.bls.replay.replayable`) is run by the trace
replay instead, which gives the same result without rounds (``replay=False``: the round loop).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from cosim.bls.power import totals as power_totals
from cosim.bls.replay import replay as replay_trace
from cosim.bls.replay import replayable
from cosim.bls.config import BatchConfig
from cosim.errors import InputError, ProtocolError
from cosim.workload.jobs import Job, JobOutcome

if TYPE_CHECKING:  # the application level loads only when a job runs an app; the scheduler,
    # the protocol and the transports only when rounds run (not for a replayed trace)
    from cosim.als.manager import AheadJob
    from cosim.bls.scheduler import BatchScheduler
    from cosim.protocol.messages import Command
    from cosim.transport.base import AlsGroup, AlsTotals

__all__ = ["EXECUTION_STATS", "RunStats", "SimResult", "simulate", "simulate_batch",
           "cosimulate", "run_rounds"]

#: rounds between two calls of `run_rounds`'s progress callback (a call costs microseconds)
_PROGRESS_EVERY = 512


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStats:
    """Counters and wall times of one simulation.

    rounds: instants granted (several per instant when zero-length jobs, kills or resizes need
    answers); passes: scheduling passes; events: facts + submissions + walltime expiries;
    chunk_events, apps: chunks simulated and apps started by the application level; wall_*:
    wall-clock seconds (provenance, not deterministic; ALS summed over ranks); rollbacks: app
    runs replayed to apply a command stamped before their run-ahead; apps_ahead: apps started
    from a run simulated before their start (MPI, `cosim.als.manager`); rounds_asked: rounds
    that reached an ALS rank (MPI: the others needed no message); exclusion_*: RCA full;
    shrinks, expands, pes_released: resize commands and PEs released after shrinks;
    guest_starts: jobs started as malleable guests (SD-Policy); release_wait_s,
    release_wait_max_s: the malleability latency — seconds guests waited, in all and at most,
    for the PEs their mates were releasing (0 for trace apps; a DLS mate first ends its chunks);
    scattered_starts: starts ``--selection contiguous`` could not give one block of hosts (it
    then falls back to first-fit, as Slurm does without ``--contiguous``).

    `EXECUTION_STATS` are facts of the execution, not of the simulated system: the ranks, the
    wall times, and what depends on them (`rounds`, `rounds_asked`, `rollbacks` and
    `apps_ahead` vary with how far each MPI rank had run its apps ahead when a round came);
    `split` keeps them apart.
    """

    rounds: int
    passes: int
    events: int
    facts: int
    submissions: int
    kills: int
    rejected: int
    chunk_events: int = 0
    apps: int = 0
    wall_s: float = 0.0
    wall_bls_s: float = 0.0
    wall_als_s: float = 0.0
    ranks: int = 1
    rollbacks: int = 0
    apps_ahead: int = 0
    rounds_asked: int = 0
    exclusion_requests: int = 0
    exclusions_accepted: int = 0
    hosts_excluded: int = 0
    shrinks: int = 0
    expands: int = 0
    pes_released: int = 0
    guest_starts: int = 0
    release_wait_s: float = 0.0
    release_wait_max_s: float = 0.0
    scattered_starts: int = 0

    def split(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(simulation, execution)``: the counters the simulation determines (the same on
        any number of ranks, run after run), and the `EXECUTION_STATS`."""
        values = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return ({k: v for k, v in values.items() if k not in EXECUTION_STATS},
                {k: values[k] for k in EXECUTION_STATS})


#: `RunStats` fields that depend on how the run was executed (ranks, timing), not on what was
#: simulated: kept out of ``results.h5`` and under ``execution`` in ``summary.json``
EXECUTION_STATS = ("ranks", "rounds", "rounds_asked", "rollbacks", "apps_ahead", "wall_s",
                   "wall_bls_s", "wall_als_s")


@dataclass(frozen=True, slots=True, kw_only=True)
class SimResult:
    """What `simulate` returns.

    outcomes: one `JobOutcome` per job, in job id order. loops: each app-driven job's
    `LoopResult`. first_reservation: job id -> the first reservation it received (EASY: as
    queue head or priority job; conservative: on arrival). allocations: the allocation log
    (`cosim.bls.alloclog.ALLOC_DTYPE`): every interval of every job's PEs. tuning: the
    tuner's checkpoints (`cosim.bls.tuning.Checkpoint`; empty without ``adaptive``). power:
    the run's `cosim.bls.power.PowerTotals` under a power cap, else None. make_columns: when
    the compiled trace replay ran, makes the outcomes' `cosim.output.columns.OutcomeColumns`
    from its arrays (else None: the outputs gather them from the outcomes).
    """

    outcomes: tuple[JobOutcome, ...]
    stats: RunStats
    loops: dict[int, Any] = field(default_factory=dict)
    first_reservation: dict[int, int] = field(default_factory=dict)
    allocations: np.ndarray | None = None
    tuning: tuple = ()
    power: Any = None
    make_columns: Callable[[], Any] | None = None


def simulate(
    jobs: Sequence[Job],
    *,
    n_hosts: int,
    cores_per_host: int | None = None,
    platform: Any = None,
    batch: BatchConfig | None = None,
    als: Any = None,
    quantum: int = 0,
    cache_dir: str | None = None,
    comm: Any = None,
    rank0_apps: bool = False,
    progress: Callable[[int, int], None] | None = None,
    power: Any = None,
    replay: bool = True,
) -> SimResult:
    """Simulate `jobs` on the first `n_hosts` hosts of a machine.

    Parameters
    ----------
    jobs:
        The workload (any order, unique ids).
    n_hosts, cores_per_host:
        The machine: `n_hosts` hosts of `cores_per_host` PEs (1 by default); with
        `platform`, its first `n_hosts` hosts with their own core counts (which may differ:
        `cosim.bls.state`).
    platform:
        The modelled platform (`cosim.platform.Platform`); needed when a job runs an app
        model (messages and speeds), optional for trace workloads.
    batch:
        Batch-level policies (default `BatchConfig()`: FCFS, EASY, first-fit, walltime kill).
    als:
        Application-level settings (`cosim.als.manager.AlsConfig`) for app-driven jobs.
    quantum:
        Scheduling quantum in ticks (0: decide at every event).
    comm:
        An MPI communicator of K > 1 ranks whose ranks 1..K-1 run `cosim.transport.mpi.serve`
        with an `AppSimulator` (None: everything in this process).
    rank0_apps:
        With MPI, rank 0 simulates apps too.
    progress:
        Called now and then with the decided tick and the number of jobs ended
        (`cosim.output.progress.Progress`).
    power:
        The hosts' power model (`cosim.platform.power.PowerModel`) for a power cap; default:
        the platform's.
    replay:
        Run a workload of rigid trace jobs by the trace replay (`cosim.bls.replay`) where it
        qualifies: the same result, without the round loop. False: the round loop always
        (the reference the replay is tested against).
    """
    wall0 = time.perf_counter()
    if n_hosts < 1:
        raise InputError(f"the machine needs at least one host, got {n_hosts}", field="hosts")
    if quantum < 0:
        raise InputError("the quantum must be >= 0", field="quantum")
    if platform is not None:
        if n_hosts > len(platform.hosts):
            raise InputError(f"the platform {platform.name!r} has {len(platform.hosts)} hosts, "
                             f"{n_hosts} asked for", field="hosts")
        host_cores = [h.cores for h in platform.hosts[:n_hosts]]
    else:
        cores_per_host = 1 if cores_per_host is None else cores_per_host
        if cores_per_host < 1:
            raise InputError(f"hosts need at least one core, got {cores_per_host}",
                             field="cores")
        host_cores = [cores_per_host] * n_hosts
    batch = BatchConfig() if batch is None else batch
    order = sorted(jobs, key=lambda j: (j.submit, j.id))
    if len({j.id for j in order}) != len(order):
        ids = sorted(j.id for j in order)
        dup = next(a for a, b in zip(ids, ids[1:]) if a == b)
        raise InputError(f"job id {dup} appears twice", field="id")
    coupled = any(j.app != "rigid" for j in order)
    if coupled and (platform is None or als is None):
        raise InputError("jobs with an app model need a platform and application-level "
                         "settings", field="app")
    if power is None and platform is not None:
        power = platform.power
    if batch.power_capped and coupled:
        raise InputError("a power cap needs trace jobs: the application level does not model "
                         "power (jobs with an app model are not re-timed)", field="power-cap")
    if replay and not coupled and replayable(batch, host_cores, order):
        return _replayed(order, batch, host_cores, quantum, progress, wall0)
    from cosim.als.trace_apps import TraceApps
    from cosim.bls.scheduler import BatchScheduler
    from cosim.placement import TRACE, LeastWork, ahead_plan, app_ranks
    from cosim.transport.loopback import LocalAls

    sched = BatchScheduler(cores=host_cores, config=batch, power=power)

    pe_hosts = np.repeat(np.arange(n_hosts, dtype=np.int64), host_cores)  # host-major
    trace = TraceApps({j.id: j for j in order if j.app == "rigid"}, pe_hosts)
    group: AlsGroup
    ranks = 1
    if not coupled:
        group = LocalAls({TRACE: trace}, LeastWork([0], platform))
    else:
        from cosim.als.manager import AppSimulator

        def apps(bounds: bool, plan: dict[int, int]) -> AppSimulator:
            # lower-bound promises pay where other ranks run apps meanwhile (AppSimulator)
            return AppSimulator(platform=platform, config=als, cache_dir=cache_dir,
                                bounds=bounds, upcoming=upcoming_apps(order),
                                ahead=ahead_jobs(order, plan, 0))

        if comm is None or comm.size == 1:
            group = LocalAls({TRACE: trace, 0: apps(False, {})}, LeastWork([0], platform))
        else:
            from cosim.transport.mpi import MpiAls

            ranks = comm.size
            where = app_ranks(comm.size, rank0_apps, als.technique, settled(batch, order))
            plan = ahead_plan(order, where, n_hosts)
            # apps on rank 0 alone (coarse-grained loops): exact promises, as in one process
            local = {TRACE: trace, **({0: apps(where != [0], plan)} if rank0_apps else {})}
            group = MpiAls(comm, local=local, placement=LeastWork(where, platform, plan))
    rounds, facts_seen, wall_bls, totals = run_rounds(order, sched, group, quantum, progress)
    outcomes = tuple(sched.outcomes[j.id] for j in sorted(order, key=lambda j: j.id))
    stats = RunStats(rounds=rounds, passes=sched.passes,
                     events=sched.facts + sched.submissions + sched.kills, facts=facts_seen,
                     submissions=sched.submissions, kills=sched.kills, rejected=sched.rejected,
                     chunk_events=totals.chunk_events, apps=totals.apps,
                     wall_s=time.perf_counter() - wall0, wall_bls_s=wall_bls,
                     wall_als_s=sum(totals.wall_s.values()), ranks=ranks,
                     rollbacks=totals.rollbacks, apps_ahead=totals.ahead,
                     rounds_asked=totals.asked,
                     exclusion_requests=sched.exclusion_requests,
                     exclusions_accepted=sched.exclusions_accepted,
                     hosts_excluded=sched.hosts_excluded, shrinks=sched.shrinks,
                     expands=sched.expands, pes_released=sched.pes_released,
                     guest_starts=sched.guest_starts,
                     release_wait_s=sched.release_wait / 1e9,
                     release_wait_max_s=sched.release_wait_max / 1e9,
                     scattered_starts=sched.scattered_starts)
    return SimResult(outcomes=outcomes, stats=stats, loops=dict(totals.loops),
                     first_reservation=dict(sorted(sched.first_reservation.items())),
                     allocations=sched.state.log.table(),
                     tuning=tuple(sched.tuner.log) if sched.tuner is not None else (),
                     power=None if sched.power is None else
                     power_totals(sched.power, sched.power_changes))


def _replayed(order: Sequence[Job], batch: BatchConfig, host_cores: Sequence[int],
              quantum: int, progress: Callable[[int, int], None] | None,
              wall0: float) -> SimResult:
    """`simulate` by the trace replay (`cosim.bls.replay`): the same result, no rounds."""
    t0 = time.perf_counter()
    r = replay_trace(order, config=batch, cores=host_cores, quantum=quantum,
                     progress=progress)
    wall_bls = time.perf_counter() - t0
    outcomes = tuple(r.outcomes[j.id] for j in sorted(order, key=lambda j: j.id))
    stats = RunStats(rounds=r.rounds, passes=r.passes, events=r.facts + r.submissions + r.kills,
                     facts=r.facts, submissions=r.submissions, kills=r.kills,
                     rejected=r.rejected, wall_s=time.perf_counter() - wall0,
                     wall_bls_s=wall_bls, scattered_starts=r.scattered_starts)
    return SimResult(outcomes=outcomes, stats=stats,
                     first_reservation=dict(sorted(r.first_reservation.items())),
                     allocations=r.allocations, make_columns=r.make_columns)


def replayed_fair_starts(jobs: Sequence[Job], *, n_hosts: int, cores_per_host: int = 1,
                         config: BatchConfig | None = None, quantum: int = 0
                         ) -> dict[int, int | None]:
    """Sabin et al.'s fair start time of every trace job (ticks): when the job would have
    started under the *same* scheduler had no job arrived after it (later arrivals in
    ``(submit, id)`` order removed, every job for its real run time). One replay per job,
    stopped at that job's start: quadratic in the jobs (Sabin, Kochhar & Sadayappan, ICPP
    2004; cosim's `cosim.output.metrics.fair_starts` is the cheap strict-FCFS reference).
    Trace jobs only (no app models). A job the replay drops (value orders) has no fair start:
    None."""
    from cosim.als.trace_apps import TraceApps
    from cosim.bls.scheduler import BatchScheduler
    from cosim.placement import TRACE, LeastWork
    from cosim.transport.loopback import LocalAls

    batch = BatchConfig() if config is None else config
    order = sorted(jobs, key=lambda j: (j.submit, j.id))
    if any(j.app != "rigid" for j in order):
        raise InputError("fair starts by replay need trace jobs (no app models)", field="app")
    pe_hosts = np.repeat(np.arange(n_hosts, dtype=np.int64), cores_per_host)
    out: dict[int, int | None] = {}
    for k, job in enumerate(order):
        if job.hosts > n_hosts:
            continue  # rejected: never starts
        prefix = order[:k + 1]
        sched = BatchScheduler(cores=[cores_per_host] * n_hosts, config=batch)
        group = LocalAls({TRACE: TraceApps({j.id: j for j in prefix}, pe_hosts)},
                         LeastWork([0], None))

        def started(jid: int = job.id, s: BatchScheduler = sched) -> bool:
            return jid in s.state.running or jid in s.outcomes

        run_rounds(prefix, sched, group, quantum, stop=started)
        alloc = sched.state.running.get(job.id)
        out[job.id] = alloc.start if alloc is not None else sched.outcomes[job.id].start
    return out


def simulate_batch(jobs: Sequence[Job], *, n_hosts: int, cores_per_host: int = 1,
                   config: BatchConfig | None = None, power: Any = None) -> SimResult:
    """`simulate` for trace workloads on a plain machine of `n_hosts` x `cores_per_host`
    (`power`: the hosts' power model, for a power cap)."""
    return simulate(jobs, n_hosts=n_hosts, cores_per_host=cores_per_host, batch=config,
                    power=power)


def cosimulate(jobs: Sequence[Job], *, platform: Any, n_hosts: int, batch: BatchConfig,
               als: Any, quantum: int = 0, cache_dir: str | None = None, comm: Any = None,
               rank0_apps: bool = False) -> SimResult:
    """`simulate` on the first `n_hosts` hosts of `platform` with application-level settings."""
    return simulate(jobs, n_hosts=n_hosts, platform=platform, batch=batch, als=als,
                    quantum=quantum, cache_dir=cache_dir, comm=comm, rank0_apps=rank0_apps)


def upcoming_apps(jobs: Sequence[Job]) -> list[tuple[str, Any]]:
    """The ``(app, params)`` of the app jobs of `jobs` in ``(submit, id)`` order, for
    `AppSimulator`'s `upcoming`."""
    return [(j.app, j.app_params) for j in sorted(jobs, key=lambda j: (j.submit, j.id))
            if j.app != "rigid"]


def ahead_jobs(jobs: Sequence[Job], plan: Mapping[int, int], rank: int) -> list[AheadJob]:
    """The jobs of `plan` (`cosim.placement.ahead_plan`) that go to `rank`, in ``(submit,
    id)`` order, for `AppSimulator`'s ``ahead``."""
    from cosim.als.manager import AheadJob

    return [AheadJob(j.id, j.app, tuple(sorted(j.app_params.items())), j.hosts, j.pes,
                     j.walltime if j.walltime > 0 else None)
            for j in sorted(jobs, key=lambda j: (j.submit, j.id)) if plan.get(j.id) == rank]


def settled(batch: BatchConfig, jobs: Sequence[Job]) -> bool:
    """Whether an app's facts, once it has ended by its walltime, are final whatever the
    batch level does later: no command but a kill at its announced walltime can reach a
    running app — no exclusion requests, no malleable policy, every job rigid. ALS ranks then
    send every fact of such an app at once (`AppSimulator(settled=True)`), and rank 0 keeps
    those stamped after the grant until a grant covers them (`MpiAls`)."""
    return (not batch.exclusion and batch.malleable == "none"
            and all(j.kind == "rigid" for j in jobs))


def run_rounds(order: Sequence[Job], sched: BatchScheduler, group: AlsGroup,
               quantum: int = 0, progress: Callable[[int, int], None] | None = None,
               stop: Callable[[], bool] | None = None) -> tuple[int, int, float, AlsTotals]:
    """The round loop (module docstring) over `group` until every job has ended, or until
    `stop()` is true after a round.

    `order` is the workload sorted by (submit, id); `progress` (if any) is called every
    512 rounds and at the end with the decided tick and the jobs ended. Returns the rounds,
    the facts handled, the batch level's wall time and the group's totals; `group` is
    closed in every case.
    """
    from cosim.transport.base import AlsTotals

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
            if progress is not None and not rounds % _PROGRESS_EVERY:
                progress(grant, len(sched.outcomes))
            local = None
            while True:
                facts, promise = local or group.round(grant, commands)
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
                # the round at the decision tick, when only trace jobs were started or killed:
                # the trace endpoint alone, in this process (`AlsGroup.local_round`: the same
                # facts and passes, no message)
                local = group.local_round(grant, commands) if commands else None
                if local is None:
                    break
                wall_bls += time.perf_counter() - t1
            wall_bls += time.perf_counter() - t1
            if stop is not None and stop():
                break
        stopped = stop is not None and stop()
        if not stopped and not sched.idle:
            raise ProtocolError("simulation ended with jobs still queued or running")
        if progress is not None:
            progress(decided, len(sched.outcomes))
        totals = AlsTotals() if stopped else group.finish()
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the ALS ranks stop without a next run
        group.close(interrupted=True)
        raise
    finally:
        group.close()
    return rounds, facts_seen, wall_bls, totals

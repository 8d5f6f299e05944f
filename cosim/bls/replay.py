"""The trace replay: the batch level alone, on plain data, for runs of rigid trace jobs
(DESIGN §12: a trace-driven job should cost the batch level a few µs, not the protocol's
machinery around its rule).

When every job of a run is a rigid trace job (its run time given by the trace, app
``rigid``), nothing the application level could report is unknown: a job started at ``t``
ends at ``t + runtime``, or is killed at ``t + walltime`` when its run time is longer and
walltimes are enforced. `replay` then runs the batch level without rounds, facts, commands or
per-PE state: the queue as sorted keys, the free hosts as a byte per host, the running jobs'
expected ends as a sorted list, their real ends in a heap. It calls the *same* policies as
`BatchScheduler` (`policies.backfill(...).plan`, the priority key, `policies.selection(...)`
on a boolean view of the free hosts, `window_plan` for a window, the FCFS part between the
backfill passes of ``--bf-interval``), at the same ticks and in
the same order (`cosim.bls.scheduler`): at a tick, the jobs ending by it, completed or killed
(the round loop takes completions first; the order of ends changes nothing), then the
submissions (a job larger than the machine rejected), then one pass if anything
changed or the policy asked for one (`Plan.wake_at`), its reservations noted as the first a
job got; a job ending at the tick it started makes another pass at that tick. With a quantum
the ticks are rounded up to its multiples, as the round loop grants them: a job completing
by then ends at its own tick, one whose walltime is over and that has not completed is
killed at the decision tick. So its
outcomes, allocation log, first reservations and counters (`rounds`: the ticks at which
anything happened, as the round loop counts its grants; `facts`: a start and an end reported
per started job) are those of the round loop, which stays the reference for everything else
(app-driven jobs, RCA, resizes, a power cap, dynamic priorities, the metric-aware tuner,
hosts of different core counts, plugin policies): `replayable` says which runs
qualify, and tests/test_replay.py checks the equality on every backfill policy, priority
and selection, on random workloads and on whole traces.
"""

from __future__ import annotations

import functools
import heapq
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np

from cosim.bls import policies
from cosim.bls.alloclog import ALLOC_DTYPE, OWN, AllocLog
from cosim.bls.policies.base import PassView, QueueView
from cosim.bls.policies.window import plan as window_plan
from cosim.bls.config import drops_hopeless, initial_tunables
from cosim.core.collect import no_collection
from cosim.core.indexset import IndexSet
from cosim.core.records import bulk_maker
from cosim.errors import InputError, ProtocolError
from cosim.platform.allocation import spread_runs
from cosim.workload.jobs import Job, JobOutcome

try:  # the compiled replay of the common runs (setup.py builds it where a C compiler is)
    from cosim.bls import _replay as _kernel
except ImportError:  # pragma: no cover - exercised where the module was not built
    _kernel = None

__all__ = ["Replayed", "replayable", "replay", "REPLAY_KERNEL"]

#: ticks between two calls of the progress callback, as the round loop counts them
_PROGRESS_EVERY = 512
#: what replays FCFS and EASY runs on first-fit hosts: "compiled" (cosim/bls/_replay.c) or
#: "python" (the module was not built)
REPLAY_KERNEL = "compiled" if _kernel is not None else "python"


@dataclass(frozen=True, slots=True, kw_only=True)
class Replayed:
    """What `replay` returns: outcomes by job id, first reservations, the allocation log's
    table and the counters of `cosim.runner.RunStats` it determines; `make_columns`, when the
    compiled replay ran, makes the outcomes' `cosim.output.columns.OutcomeColumns` from its
    arrays (for the outputs, after the simulation's time; else None)."""

    outcomes: dict[int, JobOutcome]
    first_reservation: dict[int, int]
    allocations: np.ndarray
    rounds: int
    passes: int
    facts: int
    submissions: int
    kills: int
    rejected: int
    scattered_starts: int
    make_columns: Callable[[], Any] | None = None


def replayable(config: Any, cores: Sequence[int], jobs: Sequence[Job]) -> bool:
    """True when `replay` gives exactly what the round loop would (module docstring). The
    policies must be built in: a plugin's plan may carry what the replay does not (resizes,
    explicit PEs), and the round loop checks whatever a plan asks for."""
    if len(set(cores)) > 1:
        return False
    if (config.power_capped or config.rca or config.exclusion or config.malleable != "none"
            or config.adaptive != "off"):
        return False
    if (policies.backfill(config.backfill) not in policies.BACKFILLS.builtins.values()
            or policies.selection(config.selection)
            not in policies.SELECTIONS.builtins.values()):
        return False
    if config.priority_key is None:
        order = policies.priority(config.priority)
        if order not in policies.PRIORITIES.builtins.values() or order.rank is not None:
            return False  # a plugin's, or a dynamic order ranked at every pass
    if drops_hopeless(config):
        return False
    return all(j.app == "rigid" and j.kind == "rigid" for j in jobs)


def _key_of(config: Any) -> Callable[[Job], tuple[Any, ...]]:
    """The queue key of `config`: the user's `priority_key`, else its priority policy's."""
    return (config.priority_key if config.priority_key is not None
            else policies.priority(config.priority).key)


def compiled_replayable(order: Sequence[Job], config: Any, cores: Sequence[int],
                        quantum: int = 0) -> bool:
    """True when the compiled replay takes a run `replay` takes: FCFS or EASY backfilling on
    first-fit hosts, decisions at every event (no quantum, ``--bf-interval`` or window), no
    priority job (ESP's Z jobs get reservations of their own; a priority below -2**63 is
    not an int64 either), and every job's PEs fitting its hosts (else the Python replay
    raises at its submission)."""
    return _compiled_columns(order, config, cores, quantum) is not None


#: The `Job` fields the compiled replay reads, as int64 columns (`_compiled_columns`)
_KERNEL_FIELDS = ("submit", "runtime", "walltime", "hosts", "id", "pes", "priority")
_INTS = (int, np.integer)
_PRIORITY = attrgetter("priority")


def _compiled_columns(order: Sequence[Job], config: Any, cores: Sequence[int],
                      quantum: int = 0) -> dict[str, np.ndarray] | None:
    """The jobs' `_KERNEL_FIELDS` as int64 columns when `compiled_replayable`, else None."""
    easy_or_none = (policies.backfill("easy"), policies.backfill("none"))
    if not (quantum == 0 and not config.bf_interval and initial_tunables(config).window <= 1
            and config.selection == "first-fit"
            and policies.backfill(config.backfill) in easy_or_none):
        return None
    if not all(issubclass(t, _INTS) for t in set(map(type, map(_PRIORITY, order)))):
        return None  # a priority that is no integer (the API takes any) ranks as Python says
    try:
        columns = {name: _int_column(order, name) for name in _KERNEL_FIELDS}
    except OverflowError:  # a field beyond int64
        return None
    hosts, pes = columns["hosts"], columns["pes"]
    if ((columns["priority"] > 0).any() or ((pes - 1) // cores[0] >= hosts).any()
            or not _fits_int64(columns, config.walltime_kill)):
        return None
    return columns


def _fits_int64(columns: dict[str, np.ndarray], kill: bool) -> bool:
    """True when no tick of the replay can leave int64 (the kernel's arithmetic): every job
    starts by the last submission plus every job's time on the machine (after the last
    submission a waiting job always finds some job running, or starts), and its start plus
    its walltime or its run time (which the kernel adds even when the walltime kills it
    first) fits. Job ids must be >= 0 (they fit int64 already). The sum is taken in Python
    ints, which cannot wrap."""
    if not len(columns["id"]):
        return True
    runtime, walltime = columns["runtime"], columns["walltime"]
    busy = sum((np.minimum(runtime, walltime) if kill else runtime).tolist())
    longest = max(int(walltime.max()), int(runtime.max()), 1)
    latest = int(columns["submit"].max()) + busy + longest + 1
    return latest < 2**63 and bool((columns["id"] >= 0).all())


def replay(order: Sequence[Job], *, config: Any, cores: Sequence[int], quantum: int = 0,
           progress: Callable[[int, int], None] | None = None,
           compiled: bool | None = None) -> Replayed:
    """Run `order` (the jobs sorted by ``(submit, id)``) on hosts of `cores` PEs under
    `config` (a `BatchConfig` that `replayable` accepts), deciding at multiples of `quantum`
    ticks (0: at every event). `compiled`: None runs the compiled replay where it applies
    (`compiled_replayable`) and is built, True insists on it (ValueError where it does not
    apply, RuntimeError where it was not built), False runs the Python replay, the reference.
    """
    columns = None if compiled is False else _compiled_columns(order, config, cores, quantum)
    if columns is not None:
        if _kernel is not None:
            done = _replay_compiled(order, config, cores, progress, columns)
            if done is not None:
                return done
        elif compiled:
            raise RuntimeError("the compiled replay was not built on this machine")
    elif compiled:
        raise ValueError("the compiled replay does not take this run (compiled_replayable)")
    n_hosts, max_pes = len(cores), cores[0]  # PEs per host (all equal: `replayable`)
    key_of = _key_of(config)
    plan_of = policies.backfill(config.backfill).plan
    fcfs_plan = policies.backfill("none").plan  # the FCFS part between backfill passes
    bf = config.bf_interval
    select = policies.selection(config.selection).select
    contiguous = config.selection == "contiguous"
    first_fit = config.selection == "first-fit"  # `_first_fit`, the same hosts without numpy
    kill = config.walltime_kill
    tunables = initial_tunables(config)
    window = tunables.window

    free = bytearray(b"\x01") * n_hosts
    mask = np.frombuffer(free, dtype=np.bool_)  # the selection policies' view of `free`
    mask.flags.writeable = False
    n_free = n_hosts
    qkeys: list[tuple[Any, ...]] = []
    qjobs: list[Job] = []
    keys: dict[int, tuple[Any, ...]] = {}
    stamp = [0]
    ends: list[tuple[int, int, int, int]] = []  # (expected end, id, hosts, start), sorted
    heap: list[tuple[int, int, int]] = []  # (end, 0 completed / 1 killed, id)
    # id -> (job, start, its hosts, and their runs)
    running: dict[int, tuple[Job, int, IndexSet, Sequence[tuple[int, int]]]] = {}
    outcomes: dict[int, JobOutcome] = {}
    first: dict[int, int] = {}
    rows: list[tuple[int, ...]] = []  # allocation log rows (`ALLOC_DTYPE`'s fields, in order)
    memo: Any = None
    wake: int | None = None
    rounds = passes = facts = kills = rejected = scattered = 0
    last = 0  # the latest tick reached
    n, i = len(order), 0

    def end(jid: int, now: int, status: str) -> None:
        nonlocal n_free
        job, start, hosts, runs = running.pop(jid)
        del ends[bisect_left(ends, (start + job.walltime, jid))]
        for f, m in runs:
            free[f:f + m] = b"\x01" * m
        n_free += job.hosts
        if now > start:
            for f, m, k in spread_runs(runs, job.pes, job.hosts):
                rows.append((jid, f, m, 0, k, start, now, OWN, jid))
        outcomes[jid] = JobOutcome(job=job, start=start, end=now, hosts=hosts, status=status,
                                   pe_ticks=job.pes * (now - start), pes_start=job.pes)

    while True:
        # the next tick at which anything happens: a submission, an end, a pass asked for
        t = order[i].submit if i < n else None
        for c in (heap[0][0] if heap else None, wake):
            if c is not None and (t is None or c < t):
                t = c
        if t is None:
            break
        if quantum:  # decisions on the quantum's grid
            t = -(-t // quantum) * quantum
        rounds += 1
        last = t
        if progress is not None and not rounds % _PROGRESS_EVERY:
            progress(t, len(outcomes))
        dirty = False
        if wake is not None and wake <= t:
            wake = None
            dirty = True
        while True:
            while heap and heap[0][0] <= t:  # ends up to t (their order changes nothing)
                when, killed, jid = heapq.heappop(heap)
                if killed:  # its walltime is over by t; unless it completed by t (a quantum
                    job, start = running[jid][:2]  # rounds t up), it is killed at t
                    if start + job.runtime <= t:
                        end(jid, start + job.runtime, "completed")
                    else:
                        end(jid, t, "killed")
                        kills += 1
                else:  # completed: at its own tick, reported at t
                    end(jid, when, "completed")
                facts += 1  # the app's end (a kill's confirmation)
                dirty = True
            while i < n and order[i].submit <= t:
                job = order[i]
                i += 1
                if job.pes > job.hosts * max_pes:
                    raise InputError(f"job {job.id}: {job.pes} PEs do not fit on {job.hosts} "
                                     f"hosts of {max_pes} cores", field="pes")
                if job.hosts > n_hosts:
                    rejected += 1
                    outcomes[job.id] = JobOutcome(job=job, start=None, end=None, hosts=(),
                                                  status="rejected")
                    continue
                k = (-job.priority, *key_of(job), job.id)
                at = bisect_right(qkeys, k)
                qkeys.insert(at, k)
                qjobs.insert(at, job)
                keys[job.id] = k
                stamp[0] += 1
                dirty = True
            if not (dirty and qjobs):
                break
            dirty = False
            passes += 1
            view = PassView(now=t, n_hosts=n_hosts, free=n_free, queue=QueueView(qjobs, stamp),
                            running=tuple(ends), memo=memo, tunables=tunables, power=None)
            if bf and t % bf:  # between backfill passes: the FCFS part only
                plan = fcfs_plan(view)
                if plan.starts:
                    memo = None
                wake = (t // bf + 1) * bf if len(plan.starts) < len(qjobs) else None
            else:
                plan = (plan_of(view) if window <= 1 else
                        window_plan(view, plan_of, window, config.makespan_cap))
                memo, wake = plan.memo, plan.wake_at
                for jid, r in plan.reservations.items():
                    if jid not in first:
                        first[jid] = r
            for job in plan.starts:
                if job.hosts > n_free:
                    raise ProtocolError(f"plan starts job {job.id} on {job.hosts} hosts, "
                                        f"{n_free} free")
                at = bisect_left(qkeys, keys.pop(job.id))
                del qkeys[at], qjobs[at]
                stamp[0] += 1
                if first_fit:
                    hosts, runs = _first_fit(free, job.hosts)
                else:
                    idx = select(mask, job.hosts)
                    if contiguous and int(idx[-1]) - int(idx[0]) + 1 != len(idx):
                        scattered += 1
                    hosts = IndexSet.from_sorted(idx)
                    runs = hosts.runs
                for f, m in runs:
                    free[f:f + m] = bytes(m)
                n_free -= job.hosts
                running[job.id] = (job, t, hosts, runs)
                insort(ends, (t + job.walltime, job.id, job.hosts, t))
                wall = job.walltime
                if kill and job.runtime > wall:
                    heapq.heappush(heap, (t + wall, 1, job.id))
                else:
                    heapq.heappush(heap, (t + job.runtime, 0, job.id))
                facts += 1  # the app's start
            if not (heap and heap[0][0] <= t):
                break  # else: jobs ending where they started, and another pass
    if qjobs or running:
        raise ProtocolError("simulation ended with jobs still queued or running")
    if progress is not None:
        progress(last, len(outcomes))
    log = AllocLog()
    if rows:
        columns = np.array(rows, dtype=np.int64)
        log.extend(**{name: columns[:, k] for k, name in enumerate(ALLOC_DTYPE.names)})
    return Replayed(outcomes=outcomes, first_reservation=first, allocations=log.table(),
                    rounds=rounds, passes=passes, facts=facts, submissions=n, kills=kills,
                    rejected=rejected, scattered_starts=scattered)


def _replay_compiled(order: Sequence[Job], config: Any, cores: Sequence[int],
                     progress: Callable[[int, int], None] | None,
                     columns: dict[str, np.ndarray]) -> Replayed | None:
    """`replay` by the compiled kernel (cosim/bls/_replay.c: the same steps on arrays); the
    outcomes, first reservations and allocation log built here from its arrays, in the
    order the Python replay makes them. None when a priority key fails (raises, or keys that
    do not compare): the Python replay then fails where it meets that job, after the same
    progress calls."""
    n_hosts, n = len(cores), len(order)
    key_of = _key_of(config)
    # the jobs' fields the kernel takes, in its argument order (id and PEs after the rank)
    fields_of = {name: columns[name]
                 for name in ("submit", "runtime", "walltime", "hosts", "id", "pes")}
    # the queue order as a rank per job: its key's place among the keys of the jobs that
    # are queued (a larger job is rejected, unkeyed); equal keys by submission, as bisect_right
    queued = np.flatnonzero(fields_of["hosts"] <= n_hosts)
    fields = () if config.priority_key is not None else policies.priority(
        config.priority).key_fields
    if fields:  # the key's own columns, sorted at once: (-priority, *fields, id) ascending
        # (~p orders as -p does, and cannot overflow)
        keys = [fields_of["id"], *(columns[f] if f in columns else _int_column(order, f)
                                   for f in reversed(fields)), ~columns["priority"]]
        in_order = queued[np.lexsort([k[queued] for k in keys])]
    else:
        try:
            keyed = sorted(((-order[k].priority, *key_of(order[k]), order[k].id), k)
                           for k in queued.tolist())
        except Exception:  # noqa: BLE001 - whatever a user's key raises: the Python replay's
            return None
        in_order = np.fromiter((k for _, k in keyed), dtype=np.int64, count=len(keyed))
    rank = np.full(n, -1, dtype=np.int64)
    rank[in_order] = np.arange(len(in_order), dtype=np.int64)
    easy = policies.backfill(config.backfill) is policies.backfill("easy")
    args = list(fields_of.values())
    *arrays, counters = _kernel.replay(n, *args[:4], rank, *args[4:], n_hosts, easy,
                                       config.walltime_kill, progress)
    np_arrays = [np.frombuffer(a, dtype=np.int64) for a in arrays[:10]]
    start, end, status, done, run_at, run_n, run_first, run_count, res_job, res_tick = (
        a.tolist() for a in np_arrays)
    rounds, passes, facts, kills, rejected = counters
    outcomes: dict[int, JobOutcome] = {}
    with no_collection():  # acyclic objects only: a collection here would find nothing
        _fill(outcomes, order, done, start, end, status, run_at, run_n, run_first, run_count)
    # the allocation log: the kernel's rows (job, first host, hosts, PEs on each) in order
    job, first_host, hosts, pes = (np.frombuffer(a, dtype=np.int64) for a in arrays[10:])
    ids, starts, ends = fields_of["id"][job], np_arrays[0][job], np_arrays[1][job]
    log = AllocLog()
    log.extend(job=ids, host=first_host, hosts=hosts, core=0, pes=pes, start=starts,
               end=ends, role=OWN, owner=ids)
    cols = functools.partial(_outcome_columns, order, outcomes, job=fields_of,
                             start=np_arrays[0], end=np_arrays[1], status=np_arrays[2],
                             run_at=np_arrays[4], run_n=np_arrays[5], run_first=run_first,
                             run_count=run_count)
    return Replayed(outcomes=outcomes,
                    first_reservation={order[k].id: r for k, r in zip(res_job, res_tick,
                                                                      strict=True)},
                    allocations=log.table(), rounds=rounds, passes=passes, facts=facts,
                    submissions=n, kills=kills, rejected=rejected, scattered_starts=0,
                    make_columns=cols)


def _outcome_columns(order: Sequence[Job], outcomes: dict[int, JobOutcome],
                     **arrays: Any) -> Any:
    """The outcomes' `cosim.output.columns.OutcomeColumns` from the kernel's `arrays`, made
    when asked for."""
    from cosim.output.columns import OutcomeColumns

    return OutcomeColumns.of_runs([outcomes[j.id] for j in order], **arrays)


def _int_column(order: Sequence[Job], name: str) -> np.ndarray:
    """Field `name` of every job of `order` as int64."""
    return np.fromiter(map(attrgetter(name), order), dtype=np.int64, count=len(order))


#: The `JobOutcome`s of the replay's own values, a column each (`bulk_maker`: what its
#: constructor makes of them)
_outcomes = bulk_maker(JobOutcome, ("job", "start", "end", "hosts", "status", "pe_ticks",
                                    "pes_start"))


def _fill(outcomes: dict[int, JobOutcome], order: Sequence[Job], done: list[int],
          start: list[int], end: list[int], status: list[int], run_at: list[int],
          run_n: list[int], run_first: list[int], run_count: list[int]) -> None:
    """The outcomes of the compiled replay, in the order it made them (`done`). The hosts
    of a job held as one run are one `IndexSet` per distinct run, shared (an `IndexSet` is
    immutable: KTH-SP2's 18,546 such jobs hold 1,346 distinct runs)."""
    single: dict[tuple[int, int], IndexSet] = {}
    jobs = [order[k] for k in done]
    starts, ends, held, states, ticks, pes = [], [], [], [], [], []
    for k, job in zip(done, jobs, strict=True):
        st = status[k]
        if st == 2:
            starts.append(None)
            ends.append(None)
            held.append(())
            states.append("rejected")
            ticks.append(0)
            pes.append(0)
            continue
        a, m, s, e = run_at[k], run_n[k], start[k], end[k]
        if m == 1:
            run = (run_first[a], run_count[a])
            hosts = single.get(run)
            if hosts is None:
                hosts = single[run] = IndexSet((run[0],), (run[1],))
        else:
            hosts = IndexSet(tuple(run_first[a:a + m]), tuple(run_count[a:a + m]))
        starts.append(s)
        ends.append(e)
        held.append(hosts)
        states.append("killed" if st else "completed")
        ticks.append(job.pes * (e - s))
        pes.append(job.pes)
    made = _outcomes(jobs, starts, ends, held, states, ticks, pes)
    outcomes.update(zip([job.id for job in jobs], made, strict=True))


def _first_fit(free: bytearray, count: int) -> tuple[IndexSet, list[tuple[int, int]]]:
    """`cosim.bls.policies.first_fit.select` on the free-host bytes: the `count` free hosts
    with the lowest indices, found run by run (the runs taken are maximal: hosts between
    them are busy), and those runs. ValueError when fewer are free, as there."""
    firsts: list[int] = []
    counts: list[int] = []
    need, at, n = count, 0, len(free)
    while need:
        a = free.find(1, at)
        if a < 0:
            raise ValueError(f"{count} hosts asked, {count - need} free")
        b = free.find(0, a)
        m = min((n if b < 0 else b) - a, need)
        firsts.append(a)
        counts.append(m)
        need -= m
        at = a + m
    return IndexSet(tuple(firsts), tuple(counts)), list(zip(firsts, counts))

"""The tables of one finished run: what ``results.h5``, the OTF2 trace and the plots are made of.

`RunTables` holds a run's outcome as flat numpy tables, in integer ticks (ns), built once by
`build_tables` from the job outcomes, the batch level's allocation log and (when recorded) the
apps' chunk tables; the HDF5 writer stores it, the HDF5 reader gives it back, and the trace
writer and the plots read only it, so the outputs cannot disagree. Tables: ``jobs`` (one row
per job, id order, built column by column with numpy: no Python object per job and host),
``allocations`` (the allocation log, `cosim.bls.alloclog.ALLOC_DTYPE`: one row per interval
during which a job used cores ``core .. core + pes - 1`` of hosts ``host .. host + hosts -
1``, in a role — ``own``, ``borrowed`` (RCA, `owner` lent it), ``guest`` (on PEs taken from
`owner`) or ``yielded`` (the idle tail of a host the job reported out of work, until it is
lent or the job ends); a shrink ends rows, an expand starts new ones), ``workers`` (one row per
PE of each app-driven job: its rank, global PE index, host and "no more work" tick),
``chunks`` (one row per chunk with its global PE, clipped to the job's end for killed jobs;
None when not recorded); the last two exist only for app-driven jobs. `step_series` gives the
busy hosts, busy PEs, running and queued counts over time as step functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import numpy as np

from cosim.bls.alloclog import ALLOC_DTYPE, BORROWED, OWN, ROLES, YIELDED
from cosim.core.clock import TICKS_PER_SECOND
from cosim.core.indexset import IndexSet
from cosim.output import textrows
from cosim.output.columns import OutcomeColumns
from cosim.platform.allocation import job_pe_indices, spread_pes, spread_runs
from cosim.workload.jobs import JobOutcome
from cosim.workload.value import earned

__all__ = ["JOB_DTYPE", "POWER_DTYPE", "POWER_SERIES_DTYPE", "ALLOC_DTYPE", "ROLES", "WORKER_DTYPE", "CHUNK_DTYPE", "RunTables",
           "allocations_from_outcomes", "build_tables", "busy_host_series", "busy_rows",
           "step_series"]

NO_TICK = -1  # start/end of a job that never ran

JOB_DTYPE = np.dtype([
    ("id", "<i8"), ("submit", "<i8"), ("start", "<i8"), ("end", "<i8"),
    ("walltime", "<i8"), ("runtime", "<i8"), ("hosts", "<i4"), ("pes", "<i4"),
    ("status", "S9"), ("category", "S32"), ("app", "S32"), ("technique", "S16"),
    ("wait_s", "<f8"), ("response_s", "<f8"), ("slowdown", "<f8"),
    ("yields", "<i4"), ("lends", "<i4"), ("borrows", "<i4"), ("imbalance", "<f8"),
    ("kind", "S9"), ("min_pes", "<i4"), ("max_pes", "<i4"), ("pes_start", "<i4"),
    ("shrinks", "<i4"), ("expands", "<i4"), ("pe_seconds", "<f8"),
    ("value", "<f8"), ("energy_j", "<f8"),
])
"""One row per job. Ticks; -1 start/end when rejected (a dropped job: start -1, end the tick
it was dropped); wait/response in seconds and slowdown
= response / run time (NaN when the job did not run); hosts: every host the job had PEs on
(the requested hosts if it never ran); pes: the reference PEs of the job (`Job.pes`);
yields/lends/borrows: counts of hosts (`JobOutcome`); imbalance: max / mean of the per-PE
finish times from the loop start (NaN for rigid jobs, or when the chunks were not simulated
here); kind, min_pes, max_pes: the job's malleability (`Job`); pes_start: the PEs it started
on (0 when it never ran); shrinks, expands: resize commands it obeyed; pe_seconds: PE-time it
used (PEs x seconds over its changing allocation, yielded idle tails excluded); value: what it
earned (`cosim.workload.value.earned`; NaN for a job without a value); energy_j: the energy
of its sockets under a power cap (0 without one)."""

POWER_DTYPE = np.dtype([("job", "<i8"), ("start", "<i8"), ("watts", "<f8")])
"""One row per power segment of each job under a power cap, by (job, start): from `start`
(ticks) to the job's next segment or its end, each socket of its hosts capped at `watts`."""

POWER_SERIES_DTYPE = np.dtype([("time", "<i8"), ("watts", "<f8")])
"""The system power under a cap (jobs and idle hosts) from each time on (a step function, from
the first start to the last end)."""

WORKER_DTYPE = np.dtype([
    ("job", "<i8"), ("rank", "<i4"), ("pe", "<i4"), ("host", "<i4"),
    ("finish", "<i8"), ("done", "<i8"),
])
"""One row per PE of an app-driven job, by (job, rank). Rank 0 holds the master; ranks added
by an expand follow the first ones. finish: end of its last chunk (the loop start if none);
done: "no more work" received, or its release after a shrink; both clipped to the job's end."""

CHUNK_DTYPE = np.dtype([
    ("job", "<i8"), ("pe", "<i4"), ("rank", "<i4"), ("first", "<i8"), ("size", "<i8"),
    ("t_assign", "<i8"), ("t_start", "<i8"), ("t_end", "<i8"), ("step", "<i4"),
])
"""One row per chunk (`cosim.als.runtime.ChunkTable`) with its job and global PE index, in
(job, assignment) order; chunks of a killed job starting at or after its end are dropped and
the others end at the latest at its end."""


TUNING_DTYPE = np.dtype([
    ("time", "<i8"), ("queue_depth_min", "<f8"), ("u_short", "<f8"), ("u_long", "<f8"),
    ("bf", "<f8"), ("window", "<i4"),
])
"""One row per checkpoint of the metric-aware tuner (`cosim.bls.tuning.Checkpoint`): its
tick, the queue depth (minutes), the short- and long-term utilization, and the balance factor
and window it set; empty for runs without a tuner."""


def tuning_table(checkpoints: Sequence[Any]) -> np.ndarray:
    """The tuner's checkpoints as a `TUNING_DTYPE` table."""
    out = np.zeros(len(checkpoints), dtype=TUNING_DTYPE)
    for name in TUNING_DTYPE.names:
        out[name] = [getattr(c, name) for c in checkpoints]
    return out


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RunTables:
    """A finished run as tables (see the module docstring).

    run_id: the run's name in ``results.h5``. config: the run's options (JSON-able scalars).
    metrics, stats: the summary's metrics and the simulation statistics. racks: the rack of
    each of the ``n_hosts`` hosts; host_names: their names; host_cores: their core counts
    (PEs are numbered host-major: `pe_offset`).
    """

    run_id: str
    config: Mapping[str, Any]
    metrics: Mapping[str, Any]
    stats: Mapping[str, Any]
    n_hosts: int
    host_cores: np.ndarray
    host_names: tuple[str, ...]
    racks: np.ndarray
    jobs: np.ndarray
    allocations: np.ndarray
    workers: np.ndarray
    chunks: np.ndarray | None = field(default=None)
    tuning: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=TUNING_DTYPE))
    power: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=POWER_DTYPE))
    power_series: np.ndarray = field(
        default_factory=lambda: np.zeros(0, dtype=POWER_SERIES_DTYPE))

    @property
    def cores_per_host(self) -> int:
        """The core count of every host; ValueError when the hosts differ (`host_cores`)."""
        counts = np.asarray(self.host_cores)
        lo, hi = (int(counts.min()), int(counts.max())) if len(counts) else (0, 0)
        if not len(counts) or lo != hi:  # (np.unique would load numpy.ma)
            raise ValueError(f"run {self.run_id}: hosts have {lo} to {hi} cores (read "
                             "host_cores)")
        return lo

    @property
    def n_pes(self) -> int:
        """The PEs of the hosts the run used."""
        return int(self.host_cores.sum())

    @property
    def pe_offset(self) -> np.ndarray:
        """The global index of each host's core 0, and `n_pes` last (``n_hosts + 1`` values):
        PE ``pe_offset[host] + core``."""
        out = np.zeros(self.n_hosts + 1, dtype=np.int64)
        np.cumsum(self.host_cores, out=out[1:])
        return out

    @property
    def horizon(self) -> int:
        """The last job end (0 when no job ran)."""
        ran = self.jobs["end"][self.jobs["start"] >= 0]
        return int(ran.max()) if len(ran) else 0


# -- the jobs table -------------------------------------------------------------------------

def _column(items: Sequence[Any], get: Any, dtype: Any) -> np.ndarray:
    return np.fromiter(map(get, items), dtype=dtype, count=len(items))


def _strings(values: Any, width: int) -> np.ndarray:
    # cut to the field's width in bytes (numpy would raise on longer values); a column holds
    # few distinct texts (statuses, kinds, apps, categories): each encoded once
    return np.array(textrows.distinct(list(values), lambda v: v.encode()[:width]),
                    dtype=f"S{width}")


def _jobs_table(cols: OutcomeColumns, technique: str,
                imbalance: Mapping[int, float]) -> np.ndarray:
    """The ``jobs`` table of outcomes in id order, column by column (from the run's
    `OutcomeColumns`; a pass over the jobs for their bounds, category, app and kind, and the
    outcomes of the jobs with a value for what they earned: no Python object per row is
    kept)."""
    outs, jobs = cols.outcomes, cols.jobs
    n = len(outs)
    t = np.zeros(n, dtype=JOB_DTYPE)
    t["id"], t["submit"], t["pes"] = cols.id, cols.submit, cols.pes
    t["walltime"], t["runtime"] = cols.walltime, cols.runtime
    for name in ("min_pes", "max_pes"):
        t[name] = _column(jobs, attrgetter(name), np.int64)
    t["shrinks"], t["expands"] = cols.shrinks, cols.expands
    ran = cols.has_start & cols.has_end
    t["status"] = _strings(cols.status, 9)
    t["start"] = np.where(ran, cols.start, NO_TICK)
    # a drop keeps its tick
    t["end"] = np.where(ran | (cols.has_end & (t["status"] == b"dropped")), cols.end, NO_TICK)
    t["hosts"] = np.where(cols.hosts > 0, cols.hosts, cols.job_hosts)
    t["category"] = _strings(map(attrgetter("category"), jobs), 32)
    t["app"] = _strings(map(attrgetter("app"), jobs), 32)
    t["kind"] = _strings(map(attrgetter("kind"), jobs), 9)
    tech = technique.encode()[:16]
    t["technique"] = np.where(t["app"] != b"rigid", tech, b"")
    start, end, submit = t["start"], t["end"], t["submit"]
    nan = np.full(n, np.nan)
    run = end - start
    with np.errstate(divide="ignore", invalid="ignore"):
        # differences of ticks below 2**53 convert exactly: IEEE division then rounds as
        # Python's int / int does
        t["wait_s"] = np.where(ran, (start - submit) / TICKS_PER_SECOND, nan)
        t["response_s"] = np.where(ran, (end - submit) / TICKS_PER_SECOND, nan)
        t["slowdown"] = np.where(ran & (run > 0), (end - submit) / np.where(run > 0, run, 1),
                                 nan)
    t["yields"], t["lends"], t["borrows"] = cols.yields, cols.lends, cols.borrows
    t["imbalance"] = np.nan
    if imbalance:
        pos = np.searchsorted(t["id"], np.fromiter(imbalance, dtype=np.int64))
        t["imbalance"][pos] = np.fromiter(imbalance.values(), dtype=np.float64)
    t["pes_start"] = np.where(ran, cols.pes_start, 0)
    t["pe_seconds"] = cols.pe_ticks / TICKS_PER_SECOND
    valued = cols.valued.tolist()
    t["value"] = np.nan
    if valued:
        t["value"][valued] = [earned(outs[k]) for k in valued]
    t["energy_j"] = cols.energy_j
    return t


def power_tables(outcomes: Sequence[JobOutcome], power: Any) -> tuple[np.ndarray, np.ndarray]:
    """The `POWER_DTYPE` segments of `outcomes` (by job id) and the `POWER_SERIES_DTYPE`
    system series of `power` (`cosim.bls.power.PowerTotals`; None: both empty)."""
    if power is None:
        return np.zeros(0, dtype=POWER_DTYPE), np.zeros(0, dtype=POWER_SERIES_DTYPE)
    rows = [(o.job.id, t, mw / 1000) for o in sorted(outcomes, key=lambda o: o.job.id)
            for t, mw in o.power]
    return (np.array(rows, dtype=POWER_DTYPE),
            np.array(list(power.series), dtype=POWER_SERIES_DTYPE))


# -- the allocation log -----------------------------------------------------------------------

def allocations_from_outcomes(outcomes: Sequence[JobOutcome]) -> np.ndarray:
    """The allocation log of a run without resizes, rebuilt from its outcomes.

    For callers that did not keep `cosim.runner.SimResult.allocations`: each job that ran
    used cores ``0 .. k-1`` of each of its hosts (`spread_pes`) from its start to its end,
    ``borrowed`` on the hosts it borrowed; a host it yielded stops there and its idle tail is a
    ``yielded`` row up to the job's end, cut where a borrower ran on the host. The rows cover
    the same PEs over the same intervals as the batch level's log (rows on neighbouring hosts
    may be grouped differently). ValueError for a job that was resized: its PEs over time are
    only in the log.
    """
    cols: dict[str, list[int]] = {n: [] for n in ALLOC_DTYPE.names}
    add = [cols[n].append for n in ALLOC_DTYPE.names]

    def row(*values: int) -> None:
        for a, v in zip(add, values, strict=True):
            a(v)

    borrowers: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for o in outcomes:
        if o.borrowed and o.start is not None and o.end is not None:
            for h, owner in o.borrowed:
                borrowers.setdefault((owner, h), []).append((o.start, o.end))
    for o in outcomes:
        if o.start is None or o.end is None or o.end <= o.start:
            continue
        jid, start, end = o.job.id, o.start, o.end
        if o.shrinks or o.expands:
            raise ValueError(f"job {jid} was resized: pass the run's allocation log "
                             "(SimResult.allocations)")
        pes = o.pes_start or o.job.pes
        if not o.yielded and not o.borrowed:  # whole runs of hosts, split by the spread rule
            for first, n, k in spread_runs(IndexSet.of(o.hosts).runs, pes, len(o.hosts)):
                row(jid, first, n, 0, k, start, end, OWN, jid)
            continue
        yielded = dict(o.yielded)
        owners = dict(o.borrowed)
        for h, k in zip(o.hosts, spread_pes(pes, len(o.hosts)), strict=True):
            if not k:
                continue
            owner = owners.get(h, jid)
            role = BORROWED if h in owners else OWN
            stop = min(yielded.get(h, end), end)
            if stop > start:
                row(jid, h, 1, 0, k, start, stop, role, owner)
            t = stop
            # a borrower on the host hides the owner's tail while it runs there
            lent = () if h in owners else sorted(borrowers.get((jid, h), ()))
            for a, b in lent:
                if b <= t or a >= end:
                    continue
                if a > t:
                    row(jid, h, 1, 0, k, t, a, YIELDED, owner)
                t = max(t, b)
            if end > t:
                row(jid, h, 1, 0, k, t, end, YIELDED, owner)
    out = np.zeros(len(cols["job"]), dtype=ALLOC_DTYPE)
    for name, values in cols.items():
        out[name] = values
    return out[np.lexsort((out["core"], out["job"], out["start"], out["host"]))]


def _check_log(a: Any) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype == ALLOC_DTYPE:
        return a
    if a.dtype.names is None or set(a.dtype.names) != set(ALLOC_DTYPE.names):
        raise TypeError(f"allocations: dtype {a.dtype} is not the allocation log's "
                        f"{ALLOC_DTYPE}")
    out = np.zeros(len(a), dtype=ALLOC_DTYPE)
    for n in ALLOC_DTYPE.names:
        out[n] = a[n]
    return out


# -- workers and chunks -------------------------------------------------------------------------

def _app_tables(o: JobOutcome, lr: Any, pe_hosts: np.ndarray
                ) -> tuple[float, np.ndarray, np.ndarray | None]:
    """(imbalance, workers, chunks or None) of one app-driven job that ran."""
    end = o.end
    n_ranks = len(lr.finish)
    pes = getattr(lr, "pes", ())
    if len(pes):  # the ALS says where each rank ran (expands add ranks)
        pe_idx = np.asarray(pes, dtype=np.int64)
    else:
        pe_idx = np.asarray(job_pe_indices(pe_hosts, list(o.hosts), n_ranks), dtype=np.int64)
    finish = np.minimum(np.asarray(lr.finish, dtype=np.int64), end)
    done = np.minimum(np.asarray(lr.done, dtype=np.int64), end)
    span = (finish - lr.start).astype(np.float64)
    imbalance = float(span.max() / span.mean()) if len(span) and span.mean() > 0 \
        else float("nan")
    w = np.zeros(n_ranks, dtype=WORKER_DTYPE)
    w["job"] = o.job.id
    w["rank"] = np.arange(n_ranks)
    w["pe"] = pe_idx
    w["host"] = pe_hosts[pe_idx]
    w["finish"] = finish
    w["done"] = done
    c = lr.chunks
    if c is None:
        return imbalance, w, None
    keep = c.t_start < end
    t = np.zeros(int(keep.sum()), dtype=CHUNK_DTYPE)
    t["job"] = o.job.id
    t["rank"] = c.rank[keep]
    t["pe"] = pe_idx[c.rank[keep]]
    t["first"] = c.first[keep]
    t["size"] = c.size[keep]
    t["t_assign"] = c.t_assign[keep]
    t["t_start"] = c.t_start[keep]
    t["t_end"] = np.minimum(c.t_end[keep], end)
    t["step"] = c.step[keep]
    return imbalance, w, t


def build_tables(
    outcomes: Sequence[JobOutcome],
    *,
    run_id: str,
    config: Mapping[str, Any],
    metrics: Mapping[str, Any],
    stats: Mapping[str, Any],
    platform: Any,
    n_hosts: int,
    loops: Mapping[int, Any] | None = None,
    technique: str = "",
    allocations: np.ndarray | None = None,
    tuning: Sequence[Any] = (),
    power: Any = None,
    columns: OutcomeColumns | None = None,
) -> RunTables:
    """Tables of a run (see the module docstring).

    Parameters
    ----------
    outcomes:
        One `JobOutcome` per job, any order (rejected jobs included).
    run_id, config, metrics, stats:
        Stored as given (see `RunTables`).
    platform, n_hosts:
        The platform and the hosts of it the run used (names, racks, cores per host).
    loops:
        The `LoopResult` of each app-driven job (`cosim.runner.SimResult.loops`; chunk
        tables included when recorded).
    technique:
        The DLS technique of the app-driven jobs (empty for rigid jobs).
    allocations:
        The run's allocation log (`cosim.runner.SimResult.allocations`). None rebuilds it
        from the outcomes (`allocations_from_outcomes`), which only works for runs without
        resizes.
    power:
        The run's `cosim.bls.power.PowerTotals` under a power cap (`power_tables`).
    columns:
        The outcomes' `cosim.output.columns.OutcomeColumns` when the caller has them (else
        made from `outcomes`).
    """
    loops = loops or {}
    cols = columns or OutcomeColumns.of(outcomes)
    outs = cols.outcomes
    imbalance: dict[int, float] = {}
    workers, chunks = [], []
    any_chunks = False
    if loops:
        pe_hosts = platform.pe_hosts()
        for o in outs:  # the loop tables exist only for app-driven jobs
            lr = loops.get(o.job.id)
            if lr is None or o.start is None or o.end is None:
                continue
            imb, w, c = _app_tables(o, lr, pe_hosts)
            imbalance[o.job.id] = imb
            workers.append(w)
            if c is not None:
                any_chunks = True
                chunks.append(c)
    alloc = (allocations_from_outcomes(outs) if allocations is None
             else _check_log(allocations))
    return RunTables(
        run_id=run_id, config=dict(config), metrics=dict(metrics), stats=dict(stats),
        n_hosts=n_hosts,
        host_cores=np.array([h.cores for h in platform.hosts[:n_hosts]], dtype=np.int32),
        host_names=tuple(h.name for h in platform.hosts[:n_hosts]),
        racks=np.array([h.rack for h in platform.hosts[:n_hosts]], dtype=np.int32),
        jobs=_jobs_table(cols, technique, imbalance),
        allocations=alloc,
        workers=np.concatenate(workers) if workers else np.zeros(0, dtype=WORKER_DTYPE),
        chunks=(np.concatenate(chunks) if chunks else np.zeros(0, dtype=CHUNK_DTYPE))
        if any_chunks else None,
        tuning=tuning_table(tuning),
        **dict(zip(("power", "power_series"), power_tables(outs, power), strict=True)),
    )


# -- step series ----------------------------------------------------------------------------

def _steps(up: np.ndarray, down: np.ndarray,
           weight: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Times of change and the total weight after each, for intervals [up, down) (weight 1
    each by default). Every interval bound is a time of the series, even where the changes
    cancel out."""
    t = np.concatenate([up, down]).astype(np.int64, copy=False)
    w = np.ones(len(up), np.int64) if weight is None else weight.astype(np.int64)
    d = np.concatenate([w, -w])
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    times, idx = np.unique(t, return_index=True)
    counts = np.cumsum(d)
    last = np.r_[idx[1:] - 1, len(t) - 1] if len(t) else idx
    return times.astype(np.int64), counts[last].astype(np.int64)


def busy_rows(allocations: np.ndarray) -> np.ndarray:
    """The rows of an allocation log during which the job computed: every role but
    ``yielded`` (an idle tail is held, not used)."""
    return allocations[allocations["role"] != YIELDED]


def busy_host_series(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(times, hosts)``: the hosts with at least one busy PE from each time on, from busy
    rows `b` of an allocation log (`busy_rows`); a step function as in `step_series`."""
    if not len(b) or not (b["core"] != 0).any():
        # Busy rows never share a PE, so rows that all hold core 0 never share a host: the
        # count is their hosts summed (the cheap path of every whole-host run).
        return _steps(b["start"], b["end"], b["hosts"])
    # A row holding every core ever used of its hosts (core 0 and the most PEs any row
    # reaches) shares them with no other row while it lasts: those rows add their hosts; the
    # others are swept (`_shared_hosts`); both series summed at every time of either.
    full = (b["core"] == 0) & (b["pes"] == int((b["core"] + b["pes"]).max()))
    if not full.any():
        return _shared_hosts(b)
    t1, v1 = _steps(b["start"][full], b["end"][full], b["hosts"][full])
    t2, v2 = _shared_hosts(b[~full])
    times = np.union1d(t1, t2)
    return times, _value_at(t1, v1, times) + _value_at(t2, v2, times)


def _value_at(times: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """A step series' values at the times `at` (0 before its first time)."""
    i = np.searchsorted(times, at, side="right") - 1
    return np.where(i >= 0, values[np.maximum(i, 0)] if len(values) else 0, 0)


def _shared_hosts(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`busy_host_series` of rows that may share hosts."""
    if not len(b):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    # Hosts may be shared (PE-level allocations): count each host once. A sweep over the
    # rows' starts and ends in time (ends first at one tick) keeps the rows holding each host;
    # a start turning hosts from 0 rows to some, or an end from some to 0, is a change: O(rows)
    # steps of O(their hosts) numpy work, never a row per host and interval.
    n = b["hosts"].astype(np.int64)
    first = b["host"].astype(np.int64)
    t = np.concatenate([b["start"], b["end"]]).astype(np.int64)
    d = np.concatenate([np.ones(len(b), np.int64), -np.ones(len(b), np.int64)])
    order = np.lexsort((d, t))
    rows = np.tile(np.arange(len(b)), 2)[order]
    held = np.zeros(int((first + n).max()), dtype=np.int32)  # rows holding each host
    times: list[int] = []
    values: list[int] = []
    busy = 0
    for tick, up, i in zip(t[order].tolist(), d[order].tolist(), rows.tolist()):
        lo, k = int(first[i]), int(n[i])
        span = held[lo:lo + k]
        if up > 0:
            turned = k - int(np.count_nonzero(span))
            span += 1
            busy += turned
        else:
            span -= 1
            turned = k - int(np.count_nonzero(span))
            busy -= turned
        if turned:
            if times and times[-1] == tick:
                values[-1] = busy
            else:
                times.append(tick)
                values.append(busy)
    return np.asarray(times, dtype=np.int64), np.asarray(values, dtype=np.int64)


def step_series(tables: RunTables) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{"busy_hosts", "running", "queued", "busy_pes": (times, values)}``: each value holds
    from its time until the next time (step functions; every series starts at its first
    change). busy_hosts counts the hosts on which some job computes (a busy row of the
    allocation log: every role but ``yielded``), so a host counts busy from its job's start
    to its yield or end, as utilization (Eq. 1) counts it, and a host shared by several jobs
    counts once; busy_pes counts the PEs of the busy rows; running counts jobs in [start,
    end); queued counts jobs in [submit, start), and dropped ones in [submit, drop) (rejected
    jobs never queue)."""
    b = busy_rows(tables.allocations)
    j = tables.jobs
    ran = j[j["start"] >= 0]
    dropped = j[j["status"] == b"dropped"]
    return {
        "busy_hosts": busy_host_series(b),
        "running": _steps(ran["start"], ran["end"]),
        "queued": _steps(np.concatenate((ran["submit"], dropped["submit"])),
                         np.concatenate((ran["start"], dropped["end"]))),
        "busy_pes": _steps(b["start"], b["end"], b["hosts"].astype(np.int64) * b["pes"]),
    }

"""The tables of one finished run: what ``results.h5``, the OTF2 trace and the plots are made of.

`RunTables` holds a run's outcome as flat numpy tables, in integer ticks (ns), built once by
`build_tables` from the job outcomes and (when recorded) the apps' chunk tables; the HDF5
writer stores it, the HDF5 reader gives it back, and the trace writer and the plots read only
it, so the three outputs cannot disagree. Tables: ``jobs`` (one row per job, id order),
``allocations`` (one row per job and host it ran on: the owner job, the interval and the busy
end — the host's yield tick or the job's end), ``workers`` (one row per PE of each app-driven
job: its rank, global PE index, host and "no more work" tick), ``chunks`` (one row per chunk
with its global PE, clipped to the job's end for killed jobs; None when not recorded).
`step_series` gives the utilization, running and queued counts over time as step functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cosim.core.clock import TICKS_PER_SECOND
from cosim.platform.allocation import job_pe_indices, spread_pes
from cosim.workload.jobs import JobOutcome

__all__ = ["JOB_DTYPE", "ALLOC_DTYPE", "WORKER_DTYPE", "CHUNK_DTYPE", "RunTables",
           "build_tables", "step_series"]

NO_TICK = -1  # start/end of a job that never ran

JOB_DTYPE = np.dtype([
    ("id", "<i8"), ("submit", "<i8"), ("start", "<i8"), ("end", "<i8"),
    ("walltime", "<i8"), ("runtime", "<i8"), ("hosts", "<i4"), ("pes", "<i4"),
    ("status", "S9"), ("category", "S32"), ("app", "S32"), ("technique", "S16"),
    ("wait_s", "<f8"), ("response_s", "<f8"), ("slowdown", "<f8"),
    ("yields", "<i4"), ("lends", "<i4"), ("borrows", "<i4"), ("imbalance", "<f8"),
])
"""One row per job. Ticks; -1 start/end when rejected; wait/response in seconds and slowdown
= response / run time (NaN when the job did not run); yields/lends/borrows: counts of hosts
(`JobOutcome`); imbalance: max / mean of the per-PE finish times from the loop start (NaN for
rigid jobs, or when the chunks were not simulated here)."""

ALLOC_DTYPE = np.dtype([
    ("job", "<i8"), ("host", "<i4"), ("pes", "<i4"), ("owner", "<i8"),
    ("start", "<i8"), ("end", "<i8"), ("busy_end", "<i8"),
])
"""One row per (job, host): the job's `pes` PEs are cores 0..pes-1 of `host` from `start` to
`end`; `owner` is the job owning the host (the job itself unless borrowed); `busy_end` is the
host's yield tick (all of its PEs out of work) or `end`. Sorted by (host, start, job)."""

WORKER_DTYPE = np.dtype([
    ("job", "<i8"), ("rank", "<i4"), ("pe", "<i4"), ("host", "<i4"),
    ("finish", "<i8"), ("done", "<i8"),
])
"""One row per PE of an app-driven job, by (job, rank). Rank 0 holds the master. finish: end
of its last chunk (the loop start if none); done: "no more work" received; both clipped to
the job's end."""

CHUNK_DTYPE = np.dtype([
    ("job", "<i8"), ("pe", "<i4"), ("rank", "<i4"), ("first", "<i8"), ("size", "<i8"),
    ("t_assign", "<i8"), ("t_start", "<i8"), ("t_end", "<i8"), ("step", "<i4"),
])
"""One row per chunk (`cosim.als.runtime.ChunkTable`) with its job and global PE index, in
(job, assignment) order; chunks of a killed job starting at or after its end are dropped and
the others end at the latest at its end."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RunTables:
    """A finished run as tables (see the module docstring).

    run_id: the run's name in ``results.h5``. config: the run's options (JSON-able scalars).
    metrics, stats: the summary's metrics and the simulation statistics. racks: the rack of
    each of the ``n_hosts`` hosts; host_names: their names.
    """

    run_id: str
    config: Mapping[str, Any]
    metrics: Mapping[str, Any]
    stats: Mapping[str, Any]
    n_hosts: int
    cores_per_host: int
    host_names: tuple[str, ...]
    racks: np.ndarray
    jobs: np.ndarray
    allocations: np.ndarray
    workers: np.ndarray
    chunks: np.ndarray | None = field(default=None)

    @property
    def horizon(self) -> int:
        """The last job end (0 when no job ran)."""
        ran = self.jobs["end"][self.jobs["start"] >= 0]
        return int(ran.max()) if len(ran) else 0


def _job_row(o: JobOutcome, technique: str, imbalance: float) -> tuple:
    j = o.job
    if o.start is None or o.end is None:
        wait = response = slowdown = float("nan")
        start = end = NO_TICK
    else:
        start, end = o.start, o.end
        wait = (start - j.submit) / TICKS_PER_SECOND
        response = (end - j.submit) / TICKS_PER_SECOND
        run = end - start
        slowdown = (end - j.submit) / run if run > 0 else float("nan")
    return (j.id, j.submit, start, end, j.walltime, j.runtime, len(o.hosts) or j.hosts,
            j.pes, o.status.encode(), j.category.encode()[:32], j.app.encode()[:32],
            technique.encode()[:16] if j.app != "rigid" else b"", wait, response, slowdown,
            len(o.yielded), len(o.lent), len(o.borrowed), imbalance)


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
) -> RunTables:
    """Tables of a run from its outcomes and, optionally, the `LoopResult` of each app-driven
    job (`cosim.runner.CosimResult.loops`; chunk tables included when recorded)."""
    loops = loops or {}
    pe_hosts = platform.pe_hosts()
    cores = platform.hosts[0].cores
    jobs, allocs, workers, chunks = [], [], [], []
    any_chunks = False
    for o in sorted(outcomes, key=lambda o: o.job.id):
        lr = loops.get(o.job.id)
        imbalance = float("nan")
        if o.start is not None and o.end is not None:
            yielded = dict(o.yielded)
            owners = dict(o.borrowed)
            for h, k in zip(o.hosts, spread_pes(o.job.pes, len(o.hosts)), strict=True):
                allocs.append((o.job.id, h, k, owners.get(h, o.job.id), o.start, o.end,
                               min(yielded.get(h, o.end), o.end)))
            if lr is not None:
                end = o.end
                pe_idx = np.asarray(job_pe_indices(pe_hosts, o.hosts, o.job.pes),
                                    dtype=np.int64)
                finish = np.minimum(np.asarray(lr.finish, dtype=np.int64), end)
                done = np.minimum(np.asarray(lr.done, dtype=np.int64), end)
                span = (finish - lr.start).astype(np.float64)
                if span.mean() > 0:
                    imbalance = float(span.max() / span.mean())
                w = np.zeros(len(pe_idx), dtype=WORKER_DTYPE)
                w["job"] = o.job.id
                w["rank"] = np.arange(len(pe_idx))
                w["pe"] = pe_idx
                w["host"] = pe_hosts[pe_idx]
                w["finish"] = finish
                w["done"] = done
                workers.append(w)
                c = lr.chunks
                if c is not None:
                    any_chunks = True
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
                    chunks.append(t)
        jobs.append(_job_row(o, technique, imbalance))
    alloc = np.array(allocs, dtype=ALLOC_DTYPE)
    alloc = alloc[np.lexsort((alloc["job"], alloc["start"], alloc["host"]))]
    return RunTables(
        run_id=run_id, config=dict(config), metrics=dict(metrics), stats=dict(stats),
        n_hosts=n_hosts, cores_per_host=cores,
        host_names=tuple(h.name for h in platform.hosts[:n_hosts]),
        racks=np.array([h.rack for h in platform.hosts[:n_hosts]], dtype=np.int32),
        jobs=np.array(jobs, dtype=JOB_DTYPE),
        allocations=alloc,
        workers=np.concatenate(workers) if workers else np.zeros(0, dtype=WORKER_DTYPE),
        chunks=(np.concatenate(chunks) if chunks else np.zeros(0, dtype=CHUNK_DTYPE))
        if any_chunks else None,
    )


def _steps(up: np.ndarray, down: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Times of change and the count after each, for intervals [up, down)."""
    t = np.concatenate([up, down])
    d = np.concatenate([np.ones(len(up), np.int64), -np.ones(len(down), np.int64)])
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    times, idx = np.unique(t, return_index=True)
    counts = np.cumsum(d)
    last = np.r_[idx[1:] - 1, len(t) - 1] if len(t) else idx
    return times.astype(np.int64), counts[last].astype(np.int64)


def step_series(tables: RunTables) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{"busy_hosts", "running", "queued": (times, values)}``: each value holds from its
    time until the next time (step functions; every series starts at its first change).
    busy_hosts counts host-time as utilization (Eq. 1) does: a job's hosts from its start to
    their busy end; running counts jobs in [start, end); queued counts jobs in [submit,
    start) (rejected jobs never queue)."""
    a = tables.allocations
    j = tables.jobs
    ran = j[j["start"] >= 0]
    return {
        "busy_hosts": _steps(a["start"], a["busy_end"]),
        "running": _steps(ran["start"], ran["end"]),
        "queued": _steps(ran["submit"], ran["start"]),
    }

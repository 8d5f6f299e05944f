"""A run's OTF2 trace for Vampir, made from its `RunTables` (DESIGN §9, docs/reference/otf2.md).

Rows: one process (LocationGroup + CPU_THREAD Location) per PE, created first in global PE
order (host by host, core by core: `RunTables.pe_offset`), so location id = group id = MPI rank, under a system tree
cluster -> rack -> node; then a ``batch system`` process with a ``scheduler`` row (ProgramBegin
at tick 0, ProgramEnd at the horizon) and a ``cluster metrics`` METRIC location carrying one
sample per change of utilization (busy hosts / hosts, a double), busy hosts, running and
queued jobs. Ticks are ns (timer resolution 1e9). PE rows come from the allocation log: each
row puts its job on its cores of its hosts over its interval, so a PE shows ``job J (app)``
regions at depth 0 (``jobs: <category>`` regions for runs of more than `JOB_REGIONS_MAX`
jobs, the job in the ``job_id`` attribute) and ``idle: unallocated`` elsewhere up to the
horizon; consecutive rows of one job on a PE form one region (a job region can thus be entered several times on one PE:
an owner's yielded tail before and after a borrower, a PE a shrink gave up and an expand gave
back). A shrink shows as the job's region ending on the PEs it released, an expand as a
region starting on the PEs it added, a malleable guest as its region on the cores of a
shared host. The job regions of rows run on another job's PEs (``borrowed`` under RCA,
``guest``) carry the ``owner_job`` attribute; a ``yielded`` row (the idle tail of a host its
job reported out of work, until the host is lent or the job ends) is the job's region with a
nested ``idle: yielded``. REGIONS groups ``jobs: <category>`` (the app when a job has none),
``application``, ``overhead`` and ``idle`` give Vampir its colours. Runs with resizes add a
``job PEs`` counter on each resized job's master PE row (the PEs the job holds: a sample at
its start, at every change, 0 at its end) and, at level ``full``, an instant region ``resize:
shrink`` or ``resize: expand`` (Enter and Leave at the tick of the change, attributes job_id
and pes, group ``malleability``) there; runs with resizes or hosts shared at PE level add a
``busy PEs`` counter on ``cluster metrics``; runs with the metric-aware tuner add its
checkpoints there (queue depth, short- and long-term utilization, BF, W). A run without them
gets none of these definitions, so its trace is what it was before the allocation log.
Level ``batch`` stops there (no nested region, no message); level ``full`` adds inside job
regions, per worker PE: ``scheduling overhead`` from the previous chunk end (the rank's start
for the first: the job start, or the expand that added its PE) to the chunk start and from
the last chunk end to the "no more work" answer, ``compute chunk`` (LOOP; Enter attributes
job_id, first_iteration, chunk_size) per chunk row, ``idle: wait for work`` from that answer to
the end of the job's busy rows on the PE (its yield, release or end); and the master-worker
messages as MpiSend/MpiRecv on one communicator over all PEs (rank = global PE index, tag =
job id mod 2**32): a request sent at the previous chunk end (or rank start) and received by the
master on the job's rank-0 PE at ``max(send, t_assign - overhead)`` (the master serves it when
its overhead for that chunk begins); the assignment sent at ``t_assign``, received at
``t_start``; the final request sent at the last chunk end and answered "no more work" at
``done - latency``, with the assignment latency of that worker (its ``t_start - t_assign``; 0
on the master's host; else the job's smallest known one), clipped to [last chunk end, done],
received at ``done``.
Not shown: the step boundaries of multi-step loops (a request of a new step is drawn from the
previous chunk end), and the final request of a killed job's worker that was never answered.
Events at one tick keep their causal order (a worker's send before the master's receive,
before its answer, before the worker's receive); the master's events are point events that
land in whatever region its PE shows then (a borrower's, once its host is lent).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
from otf2.enums import (
    GroupType,
    LocationGroupType,
    LocationType,
    MetricMode,
    MetricOccurrence,
    MetricType,
    Paradigm,
    RecorderKind,
    RegionRole,
    SystemTreeDomain,
    Type,
)

from cosim.als.runtime import Comm
from cosim.bls.alloclog import GUEST, YIELDED
from cosim.core.clock import TICKS_PER_SECOND
from cosim.errors import InputError
from cosim.output.otf2_writer import (
    Event,
    Otf2Writer,
    event_kind,
    make_enter,
    make_leave,
    make_recv,
    make_send,
)
from cosim.output.tables import RunTables, busy_rows, step_series

__all__ = ["LEVELS", "TraceCounts", "write_trace", "JOB_REGIONS_MAX"]

#: a region per job up to this many jobs that ran; beyond, a region per job category
JOB_REGIONS_MAX = 1000

LEVELS = ("batch", "full")
"""Trace levels: ``batch`` (job and idle regions, counters), ``full`` (plus chunks, overheads,
waits and master-worker messages)."""

_TAG_MASK = (1 << 32) - 1
_tick = itemgetter(0)
_tick_phase = itemgetter(0, 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceCounts:
    """What `write_trace` wrote.

    path: the trace directory (``path/traces.otf2`` is the anchor). pe_rows: PE locations;
    locations: all locations (PE rows, scheduler, cluster metrics). events: all events.
    job_regions: Enters of job regions. chunks: ``compute chunk`` Enters. messages: MpiSend
    records (each has one MpiRecv). metric_samples: samples on ``cluster metrics``.
    resizes: changes of a resized job's PEs shown (``job PEs`` samples between its start and
    end; at level ``full`` each is also a ``resize: ...`` instant region).
    """

    path: Path
    level: str
    pe_rows: int
    locations: int
    events: int
    job_regions: int
    chunks: int
    messages: int
    metric_samples: int
    resizes: int = 0


@dataclass(frozen=True, slots=True)
class _Row:
    """An allocation row as seen by one PE."""

    job: int
    owner: int
    start: int
    end: int
    role: int


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class _App:
    """One app-driven job as the trace needs it; per-rank lists are indexed by rank."""

    jid: int
    tag: int
    start: int
    end: int
    killed: bool
    pe_of: list[int]
    host_of: list[int]
    done: list[int]
    chunks: list[list[tuple[int, int, int, int, int]]]  # (first, size, t_assign, t_start, t_end)
    lat: list[int | None]  # assignment latency (t_start - t_assign) when the rank had a chunk
    far_lat: int  # the smallest latency of a rank off the master's host (0 if none known)
    rank_start: list[int]  # the rank's first request: the job start, or its PE's expand
    busy_end: list[int]  # the end of the job's busy rows on the rank's PE from rank_start


@dataclass(slots=True)
class _Seg:
    """A job region on one PE: [a, b), its job and owner, and the yielded parts inside it."""

    job: int
    owner: int
    a: int
    b: int
    yielded: list[tuple[int, int]]


def write_trace(
    path: str | os.PathLike[str],
    tables: RunTables,
    *,
    level: str = "full",
    comm: Comm | None = None,
) -> TraceCounts:
    """Write the OTF2 trace of a run into the directory `path` (see the module docstring).

    Parameters
    ----------
    path:
        The trace directory; written under a temporary sibling name and renamed into place,
        replacing an old trace there only once complete (`Otf2Writer`).
    tables:
        The run (`cosim.output.tables.build_tables`). Level ``full`` needs its chunk tables
        (``AlsConfig(record=True)``) when some job ran an app.
    level:
        ``"batch"`` or ``"full"`` (`LEVELS`).
    comm:
        The run's master-worker protocol (message sizes, master overhead per chunk); default
        `Comm()`, the run default.

    Returns
    -------
    TraceCounts
        What was written.

    Raises
    ------
    InputError
        Unknown level, level ``full`` without chunk tables, or an unwritable `path`.
    """
    if level not in LEVELS:
        raise InputError(f"unknown trace level {level!r}; known: {', '.join(LEVELS)}",
                         field="trace")
    full = level == "full"
    if full and tables.chunks is None and len(tables.workers):
        raise InputError("level 'full' needs the chunk tables of the run (record the apps' "
                         "chunks); use level 'batch'", field="trace")
    comm = comm or Comm()
    w = Otf2Writer(path, description=f"cosim run {tables.run_id} ({level})")
    try:
        b = _Builder(w, tables, full=full, comm=comm)
        b.build()
    except BaseException:
        w.abort()
        raise
    stats = w.close()
    return TraceCounts(path=stats.path, level=level, pe_rows=b.n_pes,
                       locations=stats.locations, events=stats.events,
                       job_regions=b.n_job_regions, chunks=b.n_chunks,
                       messages=b.n_messages, metric_samples=b.n_samples,
                       resizes=b.n_resizes)


class _Builder:
    """Definitions and events of one trace (one use)."""

    def __init__(self, w: Otf2Writer, tables: RunTables, *, full: bool, comm: Comm) -> None:
        self.w = w
        self.t = tables
        self.full = full
        self.comm = comm
        self.first = tables.pe_offset.tolist()  # global index of each host's core 0
        self.n_pes = tables.n_pes
        self.horizon = tables.horizon
        self.n_job_regions = self.n_chunks = self.n_messages = self.n_samples = 0
        self.n_resizes = 0
        j, a = tables.jobs, tables.allocations
        # what the run needs beyond a whole-host trace (module docstring)
        self.resized = j["id"][(j["start"] >= 0) & ((j["shrinks"] > 0) | (j["expands"] > 0))]
        self.pe_level = bool(len(self.resized) or (a["core"] > 0).any()
                             or (a["role"] == GUEST).any())

    # -- definitions -----------------------------------------------------------------------

    def _define(self) -> None:
        d = self.w.defs
        t = self.t
        root = d.system_tree_node("cluster", class_name="machine")
        d.system_tree_node_domain(root, SystemTreeDomain.MACHINE)
        racks = {}
        for r in sorted(set(t.racks.tolist())):
            racks[r] = d.system_tree_node(f"rack-{r}", class_name="rack", parent=root)
        nodes = []
        for h, name in enumerate(t.host_names):
            node = d.system_tree_node(name, class_name="node", parent=racks[int(t.racks[h])])
            d.system_tree_node_domain(node, SystemTreeDomain.SHARED_MEMORY)
            nodes.append(node)
        # PE groups and locations first, in global PE order: their ids are the MPI ranks
        groups = [d.location_group(f"{t.host_names[h]} PE{c}",
                                   location_group_type=LocationGroupType.PROCESS,
                                   system_tree_parent=nodes[h])
                  for h in range(t.n_hosts) for c in range(int(t.host_cores[h]))]
        batch = d.location_group("batch system", location_group_type=LocationGroupType.PROCESS,
                                 system_tree_parent=root)
        self.pe_locs = [d.location(g.name, type=LocationType.CPU_THREAD, group=g)
                        for g in groups]
        for loc in self.pe_locs:
            self.w.add_location(loc)  # index == global PE index
        self.sched = self.w.add_location(
            d.location("scheduler", type=LocationType.CPU_THREAD, group=batch))
        mloc = d.location("cluster metrics", type=LocationType.METRIC, group=batch)
        self.mloc = self.w.add_location(mloc)

        def region(name: str, role: Any, descr: str) -> Any:
            return d.region(name, description=descr, region_role=role, paradigm=Paradigm.USER)

        self.r_unalloc = region("idle: unallocated", RegionRole.CODE, "PE not allocated to a job")
        idle = [self.r_unalloc]
        if self.full:
            self.r_yielded = region("idle: yielded", RegionRole.CODE,
                                    "host yielded by its job (RCA), not lent to another job")
            idle.append(self.r_yielded)
            self.r_over = region("scheduling overhead", RegionRole.CODE,
                                 "worker waiting for the master's answer")
            self.r_chunk = region("compute chunk", RegionRole.LOOP,
                                  "a chunk of loop iterations")
            self.r_wait = region("idle: wait for work", RegionRole.CODE,
                                 "worker told 'no more work', host still busy")
            idle.append(self.r_wait)
        jobs = t.jobs[t.jobs["start"] >= 0]
        self.job_region: dict[int, Any] = {}
        by_cat: dict[str, list[Any]] = {}
        # a region per job, up to JOB_REGIONS_MAX jobs; beyond (a trace replay of months),
        # one per category (its app when it has none), the job in the job_id attribute:
        # Vampir's function views stay a few lines, not 28,000
        grouped = len(jobs) > JOB_REGIONS_MAX
        shared: dict[str, Any] = {}
        for j in jobs:
            app = j["app"].decode()
            cat = j["category"].decode() or app
            if grouped:
                r = shared.get(cat)
                if r is None:
                    r = shared[cat] = region(f"jobs: {cat}", RegionRole.FUNCTION,
                                             f"batch jobs of category {cat} (the job: its "
                                             "job_id attribute)")
                    by_cat.setdefault(cat, []).append(r)
            else:
                r = region(f"job {int(j['id'])} ({app})", RegionRole.FUNCTION,
                           f"batch job {int(j['id'])}, category {j['category'].decode() or '-'}")
                by_cat.setdefault(cat, []).append(r)
            self.job_region[int(j["id"])] = r
        for cat in sorted(by_cat):
            d.group(f"jobs: {cat}", group_type=GroupType.REGIONS, paradigm=Paradigm.USER,
                    members=by_cat[cat])
        if self.full:
            d.group("application", group_type=GroupType.REGIONS, paradigm=Paradigm.USER,
                    members=[self.r_chunk])
            d.group("overhead", group_type=GroupType.REGIONS, paradigm=Paradigm.USER,
                    members=[self.r_over])
        d.group("idle", group_type=GroupType.REGIONS, paradigm=Paradigm.USER, members=idle)
        if self.full and len(self.resized):
            self.r_shrink = region("resize: shrink", RegionRole.ARTIFICIAL,
                                   "the job's PEs decreased (instant, on its master PE)")
            self.r_expand = region("resize: expand", RegionRole.ARTIFICIAL,
                                   "the job's PEs increased (instant, on its master PE)")
            d.group("malleability", group_type=GroupType.REGIONS, paradigm=Paradigm.USER,
                    members=[self.r_shrink, self.r_expand])
        self.a_job = d.attribute("job_id", "batch job id", Type.UINT64)
        self.a_owner = d.attribute("owner_job", "job owning the lent host (RCA)", Type.UINT64)
        if self.full:
            self.a_first = d.attribute("first_iteration", "first iteration of the chunk",
                                       Type.UINT64)
            self.a_size = d.attribute("chunk_size", "iterations in the chunk", Type.UINT64)
            # rank -> location: the COMM_GROUP's members are indices into the (single, and
            # first) COMM_LOCATIONS group of its paradigm
            d.group("PEs", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI,
                    members=self.pe_locs)
            world = d.group("PEs (world)", group_type=GroupType.COMM_GROUP,
                            paradigm=Paradigm.MPI, members=list(range(self.n_pes)))
            self.world = d.comm("MPI_COMM_WORLD (simulated)", world)

        def member(name: str, vt: Any, unit: str, descr: str) -> Any:
            return d.metric_member(name, descr, MetricType.OTHER, MetricMode.ABSOLUTE_NEXT, vt,
                                   unit=unit)

        cls = d.metric_class(
            [member("utilization", Type.DOUBLE, "", "busy hosts / hosts"),
             member("busy hosts", Type.UINT64, "#", "hosts computing for a job"),
             member("running jobs", Type.UINT64, "#", "jobs started, not ended"),
             member("queued jobs", Type.UINT64, "#", "jobs submitted, not started")],
            MetricOccurrence.ASYNCHRONOUS, RecorderKind.ABSTRACT)
        self.metric = d.metric_instance(cls, mloc, scope=root)
        if self.pe_level:
            pe_cls = d.metric_class(
                [member("PE utilization", Type.DOUBLE, "", "busy PEs / PEs"),
                 member("busy PEs", Type.UINT64, "#", "PEs computing for a job")],
                MetricOccurrence.ASYNCHRONOUS, RecorderKind.ABSTRACT)
            self.pe_metric = d.metric_instance(pe_cls, mloc, scope=root)
        if len(t.tuning):
            tune_cls = d.metric_class(
                [member("queue depth", Type.DOUBLE, "min", "sum of the queued jobs' waits"),
                 member("utilization (short)", Type.DOUBLE, "", "busy hosts over the tuner's "
                        "short window (10 h)"),
                 member("utilization (long)", Type.DOUBLE, "", "busy hosts over the tuner's "
                        "long window (24 h)"),
                 member("BF", Type.DOUBLE, "", "balance factor set by the tuner"),
                 member("W", Type.UINT64, "#", "window set by the tuner")],
                MetricOccurrence.ASYNCHRONOUS, RecorderKind.ABSTRACT)
            self.tune_metric = d.metric_instance(tune_cls, mloc, scope=root)
        if len(t.power_series):
            power_cls = d.metric_class(
                [member("system power", Type.DOUBLE, "W", "the jobs' power caps and the idle "
                        "hosts' power under the power cap")],
                MetricOccurrence.ASYNCHRONOUS, RecorderKind.ABSTRACT)
            self.power_metric = d.metric_instance(power_cls, mloc, scope=root)
        if len(self.resized):
            self.job_pes = d.metric_class(
                [member("job PEs", Type.UINT64, "#", "PEs held by the resized job whose master "
                        "PE this is")], MetricOccurrence.ASYNCHRONOUS, RecorderKind.CPU)
            if self.full:
                self.a_pes = d.attribute("pes", "PEs the job holds after the change",
                                         Type.UINT64)

    # -- events ----------------------------------------------------------------------------

    def build(self) -> None:
        self._define()
        w = self.w
        w.program_begin(self.sched, 0, "cosim", [f"run {self.t.run_id}"])
        w.program_end(self.sched, self.horizon, 0)
        self._metrics()
        w.finish([self.sched, self.mloc])
        apps = self._apps() if self.full else {}
        master = self._master_events(apps) if self.full else {}
        on_pe: dict[int, list[tuple[_App, int]]] = {}
        for app in apps.values():
            for r, p in enumerate(app.pe_of):
                on_pe.setdefault(p, []).append((app, r))
        resizes = self._resizes(apps)
        a = self.t.allocations
        by_host: list[list[tuple[_Row, int, int]]] = [[] for _ in range(self.t.n_hosts)]
        for job, owner, start, end, role, h0, n, c0, k in zip(
                a["job"].tolist(), a["owner"].tolist(), a["start"].tolist(),
                a["end"].tolist(), a["role"].tolist(), a["host"].tolist(),
                a["hosts"].tolist(), a["core"].tolist(), a["pes"].tolist(), strict=True):
            r = _Row(job, owner, start, end, role)
            for h in range(h0, h0 + n):
                by_host[h].append((r, c0, c0 + k))
        for h in range(self.t.n_hosts):
            for c in range(int(self.t.host_cores[h])):
                pe = self.first[h] + c
                mine = [r for r, lo, hi in by_host[h] if lo <= c < hi]
                # worker streams are built here, one PE at a time, and written and closed
                # with it: memory (events, libotf2's buffers) stays bounded by one row
                streams = [(app.jid, app.rank_start[r], self._stream(app, r))
                           for app, r in on_pe.get(pe, ())]
                self._pe(pe, _segments(mine, pe), master.pop(pe, []), streams,
                         resizes.pop(pe, []))
                w.finish([pe])

    def _metrics(self) -> None:
        s = step_series(self.t)
        keys = ("busy_hosts", "running", "queued")
        times = np.unique(np.concatenate([[0, self.horizon]] + [s[k][0] for k in keys]))
        times = times[times <= self.horizon]
        cols = [_at(s[key], times) for key in keys]
        n = self.t.n_hosts
        last = None
        for k, tick in enumerate(times.tolist()):
            vals = (cols[0][k], cols[1][k], cols[2][k])
            # one sample per change; the last one gives the previous value its extent
            if vals == last and tick != self.horizon:
                continue
            last = vals
            self.w.metric(self.mloc, tick, self.metric, [vals[0] / n, *vals])
            self.n_samples += 1
        tuning = self.t.tuning
        for c in tuning[tuning["time"] <= self.horizon].tolist():  # the tuner's checkpoints
            self.w.metric(self.mloc, c[0], self.tune_metric, list(c[1:]))
            self.n_samples += 1
        power = self.t.power_series
        for tick, watts in power[power["time"] <= self.horizon].tolist():  # under a cap
            self.w.metric(self.mloc, tick, self.power_metric, [watts])
            self.n_samples += 1
        if not self.pe_level:
            return
        times = np.unique(np.concatenate([[0, self.horizon], s["busy_pes"][0]]))
        times = times[times <= self.horizon]
        n_pes = self.n_pes
        prev = None
        for tick, v in zip(times.tolist(), _at(s["busy_pes"], times), strict=True):
            if v == prev and tick != self.horizon:
                continue
            prev = v
            self.w.metric(self.mloc, tick, self.pe_metric, [v / n_pes, v])
            self.n_samples += 1

    def _resizes(self, apps: dict[int, _App]) -> dict[int, list[tuple[int, int, int, int]]]:
        """The resized jobs' changes of PEs on their master PEs: ``pe -> [(tick, job, PEs
        before, PEs after)]``, from the job's start (0 before) to its end (0 after). The
        ``job PEs`` samples are written here; `_pe` draws the instant regions."""
        out: dict[int, list[tuple[int, int, int, int]]] = {}
        if not len(self.resized):
            return out
        samples: dict[int, list[tuple[int, bool, int]]] = {}
        b = busy_rows(self.t.allocations)
        b = b[np.isin(b["job"], self.resized)]
        b = b[np.argsort(b["job"], kind="stable")]
        lo = np.searchsorted(b["job"], self.resized, side="left").tolist()
        hi = np.searchsorted(b["job"], self.resized, side="right").tolist()
        for jid, i, k in zip(self.resized.tolist(), lo, hi, strict=True):
            rows = b[i:k]
            if not len(rows):
                continue
            app = apps.get(jid)
            if app is not None:
                pe = app.pe_of[0]
            else:  # the master: the first PE of the start allocation
                first = rows[rows["start"] == rows["start"].min()]
                pe = min(self.first[h] + c for h, c in zip(
                    first["host"].tolist(), first["core"].tolist(), strict=True))
            times, pes = _pe_steps(rows)
            prev = 0
            for t, v in zip(times.tolist(), pes.tolist(), strict=True):
                if v == prev:
                    continue  # rows closed and reopened at one tick: no change
                samples.setdefault(pe, []).append((t, v != 0, v))
                if prev and v:  # a change between the start and the end
                    out.setdefault(pe, []).append((t, jid, prev, v))
                    self.n_resizes += 1
                prev = v
        for pe, items in samples.items():
            # a job ending where the next one starts on the same master PE: its 0 first
            for t, _, v in sorted(items):
                self.w.metric(pe, t, self.job_pes, [v])
        return out

    def _apps(self) -> dict[int, _App]:
        """The app-driven jobs' workers and chunks, by job id."""
        t = self.t
        wk, ch = t.workers, t.chunks
        jobs = {int(j["id"]): j for j in t.jobs}
        apps: dict[int, _App] = {}
        if not len(wk):
            return apps
        b = busy_rows(t.allocations)
        b = b[np.isin(b["job"], wk["job"])]
        b = b[np.argsort(b["job"], kind="stable")]
        cj = ch["job"]
        corder = np.argsort(cj, kind="stable")  # job order, assignment order inside a job
        cs = cj[corder]
        job_ids = np.unique(wk["job"])
        w_lo = np.searchsorted(wk["job"], job_ids, side="left").tolist()
        w_hi = np.searchsorted(wk["job"], job_ids, side="right").tolist()
        c_lo = np.searchsorted(cs, job_ids, side="left").tolist()
        c_hi = np.searchsorted(cs, job_ids, side="right").tolist()
        for k, jid in enumerate(job_ids.tolist()):
            j = jobs[jid]
            ww = wk[w_lo[k]:w_hi[k]]
            if ww["rank"].tolist() != list(range(len(ww))):
                raise ValueError(f"workers of job {jid}: ranks are not 0..{len(ww) - 1}")
            host_of = ww["host"].tolist()
            rows = ch[corder[c_lo[k]:c_hi[k]]]
            chunks: list[list[tuple[int, int, int, int, int]]] = [[] for _ in host_of]
            for r, *c in zip(rows["rank"].tolist(), rows["first"].tolist(),
                             rows["size"].tolist(), rows["t_assign"].tolist(),
                             rows["t_start"].tolist(), rows["t_end"].tolist(), strict=True):
                chunks[r].append(tuple(c))
            lat = [c[-1][3] - c[-1][2] if c else None for c in chunks]
            far = [v for v, h in zip(lat, host_of, strict=True)
                   if v is not None and h != host_of[0]]
            start, end = int(j["start"]), int(j["end"])
            pe_of, done = ww["pe"].tolist(), ww["done"].tolist()
            spans = _busy_spans(b[np.searchsorted(b["job"], jid, side="left"):
                                  np.searchsorted(b["job"], jid, side="right")], self.first)
            rank_start, busy_end = [], []
            for p, d, c in zip(pe_of, done, chunks, strict=True):
                a0, b0 = _span_of(spans.get(p, ()), c[0][2] if c else d, start)
                rank_start.append(a0)
                busy_end.append(min(b0, end))
            apps[jid] = _App(
                jid=jid, tag=jid & _TAG_MASK, start=start, end=end,
                killed=bool(j["status"] == b"killed"), pe_of=pe_of,
                host_of=host_of, done=done,
                chunks=chunks, lat=lat, far_lat=min(far) if far else 0,
                rank_start=rank_start, busy_end=busy_end)
        return apps

    def _answer(self, app: _App, r: int, prev: int) -> int | None:
        """Tick the master answers rank `r` "no more work" (None: never answered)."""
        done = app.done[r]
        if done < prev or (app.killed and done >= app.end):
            return None
        lat = app.lat[r]
        if lat is None:
            lat = 0 if app.host_of[r] == app.host_of[0] else app.far_lat
        return min(max(done - lat, prev), done)

    def _served(self, app: _App, r: int) -> list[tuple[int, Event]]:
        """The master's (tick, event) for rank `r`, in causal order: per chunk, the request
        received and the assignment sent; then the final request and its answer."""
        ovh = round(self.comm.overhead_s * TICKS_PER_SECOND)
        world, tag, p = self.world, app.tag, app.pe_of[r]
        req_b, asg_b = self.comm.request_bytes, self.comm.assign_bytes
        out = []
        prev = app.rank_start[r]
        for _, _, ta, _, te in app.chunks[r]:
            rt = max(prev, ta - ovh)
            out.append((rt, make_recv(rt, p, world, tag, req_b)))
            out.append((ta, make_send(ta, p, world, tag, asg_b)))
            prev = te
        s = self._answer(app, r, prev)
        if s is not None:
            out.append((s, make_recv(s, p, world, tag, req_b)))
            out.append((s, make_send(s, p, world, tag, asg_b)))
        return out

    def _master_events(self, apps: dict[int, _App]) -> dict[int, list[tuple]]:
        """The masters' events per master PE, as (tick, job, event) sorted by tick (stable:
        each worker's exchanges keep their order). The exchanges with the worker on the
        master's own PE (rank 0) are in that worker's stream instead (`_stream`), where they
        keep their causal order at equal ticks."""
        out: dict[int, list[tuple]] = {}
        for app in apps.values():
            items = out.setdefault(app.pe_of[0], [])
            for r in range(1, len(app.pe_of)):
                items.extend((t, app.jid, ev) for t, ev in self._served(app, r))
        for items in out.values():
            items.sort(key=_tick)
        return out

    def _stream(self, app: _App, r: int) -> list[tuple]:
        """Rank `r`'s events in causal order, as (tick, phase, event): phase 0 for what
        happens before the master acts at that tick, 1 the master's own events (rank 0
        only), 2 what happens after."""
        m = app.pe_of[0]
        world, tag, req_b, asg_b = self.world, app.tag, self.comm.request_bytes, \
            self.comm.assign_bytes
        r_over, r_chunk, r_wait = self.r_over, self.r_chunk, self.r_wait
        a_job, a_first, a_size, jid = self.a_job, self.a_first, self.a_size, app.jid
        # the master on this PE: its two events per exchange go right after the request
        served = iter(self._served(app, r) if r == 0 else ())
        items: list[tuple] = []
        add = items.append
        prev = app.rank_start[r]
        for first, size, _, ts, te in app.chunks[r]:
            if ts > prev:
                add((prev, 0, make_enter(prev, r_over)))
            add((prev, 0, make_send(prev, m, world, tag, req_b)))
            for t, ev in itertools.islice(served, 2):
                add((t, 1, ev))
            add((ts, 2, make_recv(ts, m, world, tag, asg_b)))
            if ts > prev:
                add((ts, 2, make_leave(ts, r_over)))
            add((ts, 2, make_enter(ts, r_chunk, ((a_job, jid), (a_first, first),
                                                 (a_size, size)))))
            add((te, 0, make_leave(te, r_chunk)))
            prev = te
        self.n_chunks += len(app.chunks[r])
        self.n_messages += 2 * len(app.chunks[r])
        bend = app.busy_end[r]
        done = app.done[r]
        if self._answer(app, r, prev) is not None:
            if done > prev:
                add((prev, 0, make_enter(prev, r_over)))
            add((prev, 0, make_send(prev, m, world, tag, req_b)))
            for t, ev in served:
                add((t, 1, ev))
            add((done, 2, make_recv(done, m, world, tag, asg_b)))
            if done > prev:
                add((done, 2, make_leave(done, r_over)))
            if bend > done:
                add((done, 2, make_enter(done, r_wait)))
                add((bend, 2, make_leave(bend, r_wait)))
            self.n_messages += 2
        elif bend > prev:  # cut off by a kill while waiting for an answer
            add((prev, 0, make_enter(prev, r_over)))
            add((bend, 2, make_leave(bend, r_over)))
        return items

    def _pe(self, pe: int, segs: list[_Seg], pending: list[tuple],
            streams: list[tuple[int, int, list[tuple]]],
            resizes: list[tuple[int, int, int, int]]) -> None:
        """All events of one PE row. `pending`: the masters' (tick, job, event) there;
        `streams`: (job, rank start, the worker's (tick, phase, event)) of each rank there;
        `resizes`: (tick, job, PEs before, PEs after) of the jobs whose master PE this is."""
        w = self.w
        placed: dict[int, list[list[tuple]]] = {}
        for job, t0, items in streams:
            # a rank's events go in the job's region that holds the rank's start
            seg = next((i for i, s in enumerate(segs) if s.job == job and s.a <= t0 < s.b),
                       None)
            if seg is None:  # its busy part is never shown here: keep its messages
                pending.extend((it[0], job, it[2]) for it in items
                               if event_kind(it[2]) in ("send", "recv"))
                pending.sort(key=_tick)
            else:
                placed.setdefault(seg, []).append(items)
        k = 0  # next pending item
        cursor = 0
        enter, leave, a_job, a_owner = w.enter, w.leave, self.a_job, self.a_owner
        region_of, unalloc, full = self.job_region, self.r_unalloc, self.full
        for i, seg in enumerate(segs):
            if k < len(pending):
                k = self._gap(pe, cursor, seg.a, pending, k)
            elif seg.a > cursor:  # (`_gap` without pending events)
                enter(pe, cursor, unalloc)
                leave(pe, seg.a, unalloc)
            job = seg.job
            enter(pe, seg.a, region_of[job], [(a_job, job)] if seg.owner == job else
                  [(a_job, job), (a_owner, seg.owner)])
            self.n_job_regions += 1
            if (i not in placed and not (full and (seg.yielded or resizes))
                    and (k == len(pending) or pending[k][0] > seg.b)):
                # nothing inside the region (the common case; the steps below would add
                # nothing)
                leave(pe, seg.b, region_of[job])
                cursor = seg.b
                continue
            body: list[tuple] = []
            for items in placed.get(i, ()):
                body.extend(items)
            if self.full:
                for ya, yb in seg.yielded:
                    body.append((ya, 2, make_enter(ya, self.r_yielded)))
                    body.append((yb, 2, make_leave(yb, self.r_yielded)))
            _monotone_phases(body)
            if self.full:
                for t, rj, before, after in resizes:
                    if rj == job and seg.a < t < seg.b:
                        region = self.r_shrink if after < before else self.r_expand
                        body.append((t, 2, make_enter(t, region, ((self.a_job, job),
                                                                   (self.a_pes, after)))))
                        body.append((t, 2, make_leave(t, region)))
            n = len(pending)
            while k < n and pending[k][0] < seg.b:
                body.append((pending[k][0], 1, pending[k][2]))
                k += 1
            # at seg.b, this job's master events close its region; the other jobs' stay for
            # what starts there
            e = k
            while e < n and pending[e][0] == seg.b:
                e += 1
            if e > k:
                body.extend((it[0], 1, it[2]) for it in pending[k:e] if it[1] == job)
                pending[k:e] = [it for it in pending[k:e] if it[1] != job]
            body.sort(key=_tick_phase)
            w.extend(pe, [it[2] for it in body])
            w.leave(pe, seg.b, self.job_region[job])
            cursor = seg.b
        k = self._gap(pe, cursor, max(self.horizon, cursor), pending, k)
        w.extend(pe, [it[2] for it in pending[k:]])

    def _gap(self, pe: int, a: int, b: int, pending: list[tuple], k: int) -> int:
        """``idle: unallocated`` on [a, b) (nothing if empty) with the pending events before b;
        returns the next pending index."""
        w = self.w
        if b > a:
            w.enter(pe, a, self.r_unalloc)
        while k < len(pending) and pending[k][0] < b:
            w.add(pe, pending[k][2])
            k += 1
        if b > a:
            w.leave(pe, b, self.r_unalloc)
        return k


def _monotone_phases(items: list[tuple]) -> None:
    """Raise each item's phase to the previous one's at the same tick, in place: sorting by
    (tick, phase) then keeps the items' own order, with the master's phase-1 items slotted
    between a worker's sends (0) and receives (2) when they are in that order."""
    prev_t = prev_k = None
    for i, it in enumerate(items):
        t, k = it[0], it[1]
        if t == prev_t and k < prev_k:
            items[i] = (t, prev_k, *it[2:])
        else:
            prev_k = k
        prev_t = t


def _segments(rows: list[_Row], pe: int) -> list[_Seg]:
    """The job regions of one PE from its allocation rows (module docstring): consecutive
    rows of one job make one region, its ``yielded`` rows nested ``idle: yielded`` parts;
    rows of zero length show nothing. ValueError if two rows overlap (two users of a PE)."""
    segs: list[_Seg] = []
    for r in sorted((r for r in rows if r.end > r.start), key=lambda r: (r.start, r.job)):
        last = segs[-1] if segs else None
        if last is not None and r.start < last.b:
            jobs = sorted({last.job, r.job})
            raise ValueError(f"allocation rows of jobs {jobs} overlap on PE {pe} at tick "
                             f"{r.start}")
        if last is not None and last.job == r.job and last.b == r.start:
            last.b = r.end
        else:
            last = _Seg(job=r.job, owner=r.owner, a=r.start, b=r.end, yielded=[])
            segs.append(last)
        if r.role == YIELDED:
            if last.yielded and last.yielded[-1][1] == r.start:
                last.yielded[-1] = (last.yielded[-1][0], r.end)
            else:
                last.yielded.append((r.start, r.end))
    return segs


def _at(series: tuple[np.ndarray, np.ndarray], times: np.ndarray) -> list[int]:
    """The values of a step series at `times` (0 before its first change)."""
    tt, vv = series
    if not len(tt):
        return [0] * len(times)
    i = np.searchsorted(tt, times, side="right") - 1
    return np.where(i >= 0, vv[np.maximum(i, 0)], 0).tolist()


def _pe_steps(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Times of change and the PEs held after each, for busy rows of one job."""
    t = np.concatenate([rows["start"], rows["end"]])
    w = rows["hosts"].astype(np.int64) * rows["pes"]
    times, inv = np.unique(t, return_inverse=True)
    delta = np.zeros(len(times), dtype=np.int64)
    np.add.at(delta, inv, np.concatenate([w, -w]))
    return times, np.cumsum(delta)


def _busy_spans(rows: np.ndarray, first: Sequence[int]) -> dict[int, list[tuple[int, int]]]:
    """Global PE -> the intervals during which the job computed there (its busy rows on the
    PE, touching ones merged), in time order; `first`: each host's first global PE."""
    per: dict[int, list[tuple[int, int]]] = {}
    for h0, n, c0, k, a, b in zip(rows["host"].tolist(), rows["hosts"].tolist(),
                                  rows["core"].tolist(), rows["pes"].tolist(),
                                  rows["start"].tolist(), rows["end"].tolist(), strict=True):
        for h in range(h0, h0 + n):
            for c in range(c0, c0 + k):
                per.setdefault(first[h] + c, []).append((a, b))
    out = {}
    for pe, ivs in per.items():
        ivs.sort()
        merged = [ivs[0]]
        for a, b in ivs[1:]:
            if a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        out[pe] = merged
    return out


def _span_of(spans: Any, t: int, start: int) -> tuple[int, int]:
    """The busy interval of a rank whose first activity is at tick `t`: the last one
    starting at or before `t` (else the first one); ``(start, start)`` when it has none (its
    host yielded at the job's start)."""
    best = None
    for a, b in spans:
        if a <= t or best is None:
            best = (a, b)
        if a > t:
            break
    return best if best is not None else (start, start)

"""The outcomes of a run in job-id order, gathered once as columns for every output.

`OutcomeColumns.of` sorts a run's outcomes by job id and reads, one pass per field, what the
output files and tables all need — ids, submission, wall and run times, PEs, the hosts asked
for and the hosts held, start and end ticks (with masks where a job has none), the counts of
RCA and resize events, the PEs a job started on, its PE-time and energy — as arrays, and the
statuses; each job's host list as text (`IndexSet.interval_text`) is made on first use and
kept. ``jobs.csv``, ``batsim_jobs.csv``, ``schedule.swf`` and the ``jobs`` table of
``results.h5`` each take it (or make it from the outcomes when the caller has none), so the
files of one run gather each column once; what only some runs have (the RCA and power
events themselves, values) they still read from the outcomes. The compiled trace replay
makes its columns from its own arrays (`OutcomeColumns.of_runs`: no pass over the outcomes
but to order them), and ``summary.json``'s metrics read their times and counts from them.
Ticks fit int64 (`cosim.core.clock.MAX_TICKS`); a PE-time may not, and is kept as a float
(the ``jobs`` table's ``pe_seconds``), rounded once from the exact integer.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Mapping, Sequence
import dataclasses
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np

from cosim.core.indexset import IndexSet, run_texts
from cosim.workload.jobs import Job, JobOutcome

__all__ = ["OutcomeColumns"]


def _ints(items: Sequence[object], name: str) -> np.ndarray:
    return np.fromiter(map(attrgetter(name), items), dtype=np.int64, count=len(items))


def _floats(items: Sequence[object], name: str) -> np.ndarray:
    return np.fromiter(map(attrgetter(name), items), dtype=np.float64, count=len(items))


def _ticks(values: list[int | None]) -> tuple[np.ndarray, np.ndarray]:
    """``(ticks, present)``: 0 where a value is None."""
    n = len(values)
    present = np.fromiter((v is not None for v in values), dtype=bool, count=n)
    ticks = np.fromiter((0 if v is None else v for v in values), dtype=np.int64, count=n)
    return ticks, present


def _beyond(outcomes: Sequence[JobOutcome]) -> str:
    """What `OutcomeColumns.of` says of outcomes whose values leave int64."""
    top = 2**63 - 1
    for o in sorted(outcomes, key=lambda o: o.job.id):
        j = o.job
        for name, v in (("id", j.id), ("submit", j.submit), ("walltime", j.walltime),
                        ("runtime", j.runtime), ("pes", j.pes), ("hosts", j.hosts),
                        ("start", o.start), ("end", o.end)):
            if v is not None and not -top - 1 <= v <= top:
                return (f"job {j.id}: {name} {v} does not fit a 64-bit integer (times are "
                        f"ticks of 1 ns: at most {top} ns, 292 years)")
    return "a value does not fit a 64-bit integer"  # pragma: no cover - found above


_RAN = frozenset(("completed", "killed"))


def _pe_ticks(pes: np.ndarray, run: np.ndarray) -> np.ndarray:
    """``pes * run`` as float64, each rounded once from the exact integer product (in int64
    where no product can leave it, else in Python ints)."""
    if not len(pes) or int(run.max()) <= (2**63 - 1) // max(int(pes.max()), 1):
        return (pes * run).astype(np.float64)
    return np.array([float(a * b) for a, b in zip(pes.tolist(), run.tolist(), strict=True)],
                    dtype=np.float64)


@dataclass(frozen=True, eq=False)
class OutcomeColumns:
    """Outcomes by job id as columns (module docstring). `hosts`: the hosts a job held PEs
    on (``len(JobOutcome.hosts)``, 0 when it never ran); `job_hosts`: those it asked for
    (`Job.hosts`); `start` and `end` hold 0 where `has_start` and `has_end` are False.
    `shrinks`, `expands` as the outcomes say; `yields`, `lends`, `borrows` the lengths of
    their `yielded`, `lent` and `borrowed`; `pes_start` their `pes_start`, or the job's
    `pes` where that is 0; `pe_ticks` (float64, rounded once) and `energy_j` (float64)."""

    outcomes: tuple[JobOutcome, ...]
    jobs: tuple[Job, ...]
    id: np.ndarray
    submit: np.ndarray
    walltime: np.ndarray
    runtime: np.ndarray
    pes: np.ndarray
    job_hosts: np.ndarray
    hosts: np.ndarray
    start: np.ndarray
    end: np.ndarray
    has_start: np.ndarray
    has_end: np.ndarray
    status: tuple[str, ...]
    shrinks: np.ndarray
    expands: np.ndarray
    yields: np.ndarray
    lends: np.ndarray
    borrows: np.ndarray
    pes_start: np.ndarray
    pe_ticks: np.ndarray
    energy_j: np.ndarray
    texts: list[str] | None = field(default=None, repr=False)  # `host_text`, made ahead

    @classmethod
    def of(cls, outcomes: Sequence[JobOutcome]) -> OutcomeColumns:
        """The columns of `outcomes` (any order; ids unique), sorted by job id. ValueError
        naming the first job with a time or count beyond int64 (ticks past 292 years: no
        trace cosim reads has them)."""
        try:
            return cls._of(outcomes)
        except OverflowError:
            raise ValueError(_beyond(outcomes)) from None

    @classmethod
    def _of(cls, outcomes: Sequence[JobOutcome]) -> OutcomeColumns:
        ordered = tuple(sorted(outcomes, key=lambda o: o.job.id))
        jobs = tuple(o.job for o in ordered)
        n = len(ordered)
        start, has_start = _ticks([o.start for o in ordered])
        end, has_end = _ticks([o.end for o in ordered])
        return cls(outcomes=ordered, jobs=jobs, id=_ints(jobs, "id"),
                   submit=_ints(jobs, "submit"), walltime=_ints(jobs, "walltime"),
                   runtime=_ints(jobs, "runtime"), pes=_ints(jobs, "pes"),
                   job_hosts=_ints(jobs, "hosts"),
                   hosts=np.fromiter((len(o.hosts) for o in ordered), dtype=np.int64,
                                     count=len(ordered)),
                   start=start, end=end, has_start=has_start, has_end=has_end,
                   status=tuple(o.status for o in ordered),
                   shrinks=_ints(ordered, "shrinks"), expands=_ints(ordered, "expands"),
                   **{name: np.fromiter(map(len, map(attrgetter(attr), ordered)), np.int64,
                                        count=n)
                      for name, attr in (("yields", "yielded"), ("lends", "lent"),
                                         ("borrows", "borrowed"))},
                   pes_start=np.fromiter((o.pes_start or o.job.pes for o in ordered),
                                         dtype=np.int64, count=n),
                   pe_ticks=_floats(ordered, "pe_ticks"), energy_j=_floats(ordered, "energy_j"))

    @classmethod
    def of_runs(cls, outcomes: Sequence[JobOutcome], *, job: Mapping[str, np.ndarray],
                start: np.ndarray, end: np.ndarray, status: np.ndarray, run_at: np.ndarray,
                run_n: np.ndarray, run_first: Sequence[int],
                run_count: Sequence[int]) -> OutcomeColumns:
        """The columns of `outcomes` (ids unique) from int64 arrays in their order: `job`,
        their jobs' ``id``, ``submit``, ``walltime``, ``runtime``, ``pes`` and ``hosts``;
        `start` and `end` ticks; `status` codes (0 completed, 1 killed, 2 rejected: start and
        end ignored); and the hosts of outcome k as the runs ``run_first[a:a + m]``,
        ``run_count[a:a + m]`` (maximal, ascending) with ``a, m = run_at[k], run_n[k]``;
        sorted by job id. The compiled replay's: what `of` would gather from the outcomes,
        read from the arrays they were made from (its jobs are rigid, on their own hosts:
        no RCA, resize or power event; each ran on its `pes`)."""
        by_id = np.argsort(job["id"], kind="stable")
        pick = by_id.tolist()
        ran = (status != 2)[by_id]
        n = len(pick)
        pes = job["pes"][by_id]
        names = ("completed", "killed", "rejected")
        pieces = run_texts(run_first, run_count)
        sums = np.concatenate(([0], np.cumsum(run_count, dtype=np.int64)))
        at = run_at[by_id]
        texts = [pieces[a] if m == 1 else " ".join(pieces[a:a + m])
                 for a, m in zip(at.tolist(), run_n[by_id].tolist(), strict=True)]
        held = sums[at + run_n[by_id]] - sums[at]
        ordered = tuple(outcomes[k] for k in pick)
        return cls(outcomes=ordered, jobs=tuple(o.job for o in ordered),
                   **{name: job[key][by_id] for name, key in (
                       ("id", "id"), ("submit", "submit"), ("walltime", "walltime"),
                       ("runtime", "runtime"), ("pes", "pes"), ("job_hosts", "hosts"))},
                   hosts=np.where(ran, held, 0), start=np.where(ran, start[by_id], 0),
                   end=np.where(ran, end[by_id], 0), has_start=ran, has_end=ran.copy(),
                   status=tuple(names[c] for c in status[by_id].tolist()),
                   **{name: np.zeros(n, dtype=np.int64)
                      for name in ("shrinks", "expands", "yields", "lends", "borrows")},
                   pes_start=pes.copy(),
                   pe_ticks=_pe_ticks(pes, np.where(ran, end[by_id] - start[by_id], 0)),
                   energy_j=np.zeros(n), texts=texts)

    def joined(self, other: OutcomeColumns) -> OutcomeColumns:
        """These outcomes and `other`'s (no job in both), sorted by job id."""
        if not len(other):
            return self
        order = np.argsort(np.concatenate((self.id, other.id)), kind="stable")
        pick = order.tolist()

        def cat(name: str) -> np.ndarray:
            return np.concatenate((getattr(self, name), getattr(other, name)))[order]

        def seq(a: Sequence, b: Sequence) -> tuple:
            both = (*a, *b)
            return tuple(both[i] for i in pick)

        return OutcomeColumns(
            outcomes=seq(self.outcomes, other.outcomes), jobs=seq(self.jobs, other.jobs),
            **{name: cat(name) for name in _ARRAYS},
            status=seq(self.status, other.status),
            texts=list(seq(self.host_text, other.host_text)))

    @functools.cached_property
    def ran(self) -> np.ndarray:
        """True where the job ran (completed or killed)."""
        return np.fromiter((s in _RAN for s in self.status), dtype=bool, count=len(self))

    @functools.cached_property
    def valued(self) -> np.ndarray:
        """The positions of the jobs that carry a value (`Job.value`), ascending."""
        has = map(operator.is_not, map(attrgetter("value"), self.jobs), itertools.repeat(None))
        return np.flatnonzero(np.fromiter(has, dtype=bool, count=len(self)))

    def __len__(self) -> int:
        return len(self.outcomes)

    @functools.cached_property
    def host_text(self) -> list[str]:
        """Each job's hosts as ranges, ``0-7 16-23`` (empty for none)."""
        if self.texts is not None:
            return self.texts
        return [IndexSet.of(o.hosts).interval_text() for o in self.outcomes]


#: The array fields of `OutcomeColumns`, in their order
_ARRAYS = tuple(f.name for f in dataclasses.fields(OutcomeColumns)
                if f.name not in ("outcomes", "jobs", "status", "texts"))

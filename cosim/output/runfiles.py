"""Files of a batch run: ``jobs.csv``, ``schedule.swf`` and ``summary.json``, each atomic.

Every file is written to a temporary name in the output directory and renamed into place, so
an interrupted run never leaves a partial file under the final name; ``summary.json`` is
written last and marks a complete run. ``jobs.csv`` has one row per job in id order:
``job_id,submit_s,start_s,end_s,hosts,pes,status,wait_s,walltime_s,runtime_s,category,app,
host_list,yielded,lent,borrowed,kind,shrinks,expands,pe_seconds`` (times in seconds, exact to
the nanosecond; start/end/wait empty for rejected jobs; ``hosts`` and ``host_list`` — ranges
such as ``0-7 16-23``, from the runs of the job's `IndexSet`, without a loop over its hosts —
count every host the job had PEs on, borrowed ones and those of its resizes included; ``pes``
is the job's reference PE count). The RCA columns show owner and user (`JobOutcome`), as
space-separated ``host@x`` items, empty when there are none: ``yielded`` — ``17@12.5``: host
17 reported out of work at 12.5 s; ``lent`` — ``17@20``: the job's host 17 first lent to
another job at 20 s; ``borrowed`` — ``17@3``: the job ran on host 17 while job 3 owned it.
The malleability columns come last, so the earlier ones keep their positions: ``kind``
(rigid, moldable, malleable, evolving), ``shrinks`` and ``expands`` (resize commands the job
obeyed) and ``pe_seconds`` (PE-time used, exact: PEs x seconds over its allocation as it
changed, yielded idle tails excluded). Then value- and power-aware scheduling: ``value`` (what
the job earned, empty for a job without a value), ``energy_j`` and ``power`` (under a power
cap: the energy of its sockets, and its segments as ``W@s`` items, ``115@0 60@12.5``: each
socket capped at 115 W from 0 s, at 60 W from 12.5 s; empty without a cap).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from cosim.core.files import atomic_open
from cosim.core.indexset import IndexSet
from cosim.output import textrows
from cosim.output.columns import OutcomeColumns
from cosim.workload.jobs import JobOutcome
from cosim.workload.swf_write import format_ticks
from cosim.workload.value import earned

__all__ = ["atomic_write", "write_jobs_csv", "write_summary", "host_ranges", "csv_field"]

JOBS_HEADER = ("job_id,submit_s,start_s,end_s,hosts,pes,status,wait_s,walltime_s,runtime_s,"
               "category,app,host_list,yielded,lent,borrowed,kind,shrinks,expands,pe_seconds,"
               "value,energy_j,power")


def atomic_write(path: str | os.PathLike[str], lines: Iterable[str]) -> None:
    """Write `lines` to `path` atomically (`cosim.core.files.atomic_open`)."""
    with atomic_open(path) as fh:
        fh.writelines(lines)


def host_ranges(hosts: Sequence[int]) -> str:
    """``(0, 1, 2, 5)`` -> ``"0-2 5"`` (hosts ascending): `IndexSet.interval_text`."""
    return IndexSet.of(hosts).interval_text()


def _at(pairs: Sequence[tuple[int, int]], ticks: bool) -> str:
    """``((17, t), ...)`` -> ``"17@t"`` items; `t` in seconds when `ticks`, else as is."""
    if ticks:
        return " ".join(f"{h}@{format_ticks(t)}" for h, t in pairs)
    return " ".join(f"{h}@{x}" for h, x in pairs)


def csv_field(text: str) -> str:
    """A text field of a CSV row, quoted (RFC 4180) when it holds a comma, quote or newline."""
    if "," in text or '"' in text or "\n" in text or "\r" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def _rows(cols: OutcomeColumns) -> Iterable[str]:
    """The file's text: its header, then a row per job in id order, a column at a time
    (`cosim.output.textrows`, from the run's `OutcomeColumns`)."""
    ordered, jobs = cols.outcomes, cols.jobs
    n = len(cols)
    no_start = ~cols.has_start
    # the RCA, value and power columns are empty for most jobs: formatted where they are not
    powered = np.flatnonzero(np.fromiter(map(bool, map(attrgetter("power"), ordered)),
                                         dtype=bool, count=n))
    columns = [
        textrows.int_array(cols.id), textrows.tick_array(cols.submit),
        textrows.tick_array(cols.start, no_start), textrows.tick_array(cols.end, ~cols.has_end),
        textrows.int_array(np.where(cols.hosts > 0, cols.hosts, cols.job_hosts)),
        textrows.int_array(cols.pes), list(cols.status),
        textrows.tick_array(cols.start - cols.submit, no_start),
        textrows.tick_array(cols.walltime), textrows.tick_array(cols.runtime),
        textrows.distinct(list(map(attrgetter("category"), jobs)), csv_field),
        textrows.distinct(list(map(attrgetter("app"), jobs)), csv_field), cols.host_text,
        textrows.sparse(n, np.flatnonzero(cols.yields), lambda i: _at(ordered[i].yielded, True)),
        textrows.sparse(n, np.flatnonzero(cols.lends), lambda i: _at(ordered[i].lent, True)),
        textrows.sparse(n, np.flatnonzero(cols.borrows),
                        lambda i: _at(ordered[i].borrowed, False)),
        list(map(attrgetter("kind"), jobs)), textrows.int_array(cols.shrinks),
        textrows.int_array(cols.expands), textrows.tick_attr(ordered, "pe_ticks"),
        textrows.sparse(n, cols.valued, lambda i: repr(earned(ordered[i]))),
        textrows.sparse(n, powered, lambda i: repr(ordered[i].energy_j)),
        textrows.sparse(n, powered, lambda i: _power(ordered[i].power)),
    ]
    return (JOBS_HEADER + "\n", textrows.rows(columns, ","))


def _power(segments: Sequence[tuple[int, int]]) -> str:
    """``((t, mW), ...)`` -> ``"115@0 60@12.5"``: watts per socket from t seconds on."""
    return " ".join(f"{mw / 1000:g}@{format_ticks(t)}" for t, mw in segments)


def write_jobs_csv(path: str | os.PathLike[str], outcomes: Sequence[JobOutcome],
                   columns: OutcomeColumns | None = None) -> None:
    """``jobs.csv``: one row per job (see the module docstring); `columns`: the outcomes'
    `OutcomeColumns` when the caller has them."""
    atomic_write(path, _rows(columns or OutcomeColumns.of(outcomes)))


def write_summary(path: str | os.PathLike[str], summary: dict[str, Any]) -> None:
    """``summary.json``: the run's configuration, metrics and statistics."""
    atomic_write(path, [json.dumps(summary, indent=1, sort_keys=False), "\n"])
